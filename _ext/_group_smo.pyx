# cython: language_level=3
"""SMO for the C-SVC dual with shared slacks: groups of samples whose dual variables share one cap.

    min  1/2 alpha' (y y' o K) alpha - 1' alpha
    s.t. y' alpha = 0,  alpha >= 0,
         alpha_i <= C                        for a sample of no group,
         sum_{i in g} alpha_i <= C           for every group g (one slack per group in the primal).

This is the dual of MI-SVM (Andrews et al. 2003), where every negative bag has one slack shared by its
instances.  The step is libsvm's pair step; a group's variables may rise while the group has room, and a
saturated group moves weight between its own members (a second kind of pair).  Optimality is the
Karush-Kuhn-Tucker conditions of both kinds of pair: the pair violation over the samples that may move, and
inside every group the largest gradient among its non-zero members minus the smallest among all of them.
"""

import numpy as np

from libc.math cimport INFINITY, fmin

from _common cimport TAU, signal_pending

cdef Py_ssize_t SIGNAL_EVERY = 4096


cdef inline bint _can_rise(Py_ssize_t t, const Py_ssize_t[::1] group, double[::1] alpha, double[::1] room,
                           double C) noexcept nogil:
    if group[t] < 0:
        return alpha[t] < C
    return room[group[t]] > 0.0


cdef inline void _step(Py_ssize_t i, Py_ssize_t j, const double[:, ::1] K, const double[::1] y,
                       const Py_ssize_t[::1] group, double C, double[::1] alpha, double[::1] room,
                       double[::1] G) noexcept nogil:
    """Move alpha_i by +y_i tau and alpha_j by -y_j tau (which keeps y'alpha), tau the clipped Newton step."""
    cdef Py_ssize_t n = alpha.shape[0], k
    cdef Py_ssize_t gi = group[i], gj = group[j]
    cdef bint same = gi >= 0 and gi == gj
    cdef double a = K[i, i] + K[j, j] - 2.0 * K[i, j]
    if a <= 0.0:
        a = TAU
    cdef double tau = -(y[i] * G[i] - y[j] * G[j]) / a
    # i moves along +y_i: up when y_i > 0, bounded by its cap (the group's room; none against a member of the
    # same group, whose fall frees what i takes); down when y_i < 0, bounded by alpha_i
    if y[i] > 0:
        if gi < 0:
            tau = fmin(tau, C - alpha[i])
        elif not same:
            tau = fmin(tau, room[gi])
    else:
        tau = fmin(tau, alpha[i])
    if y[j] > 0:
        tau = fmin(tau, alpha[j])
    else:
        if gj < 0:
            tau = fmin(tau, C - alpha[j])
        elif not same:
            tau = fmin(tau, room[gj])
    if tau <= 0.0:
        return
    alpha[i] += y[i] * tau
    alpha[j] -= y[j] * tau
    if gi >= 0:
        room[gi] -= y[i] * tau
    if gj >= 0:
        room[gj] += y[j] * tau
    # snap to the bounds the clipping reached (rounding would leave 1e-17 above or below them)
    cdef double eps = 1e-12 * C
    _snap(i, group, C, eps, alpha, room)
    _snap(j, group, C, eps, alpha, room)
    for k in range(n):
        G[k] += y[k] * tau * (K[k, i] - K[k, j])


cdef inline void _snap(Py_ssize_t k, const Py_ssize_t[::1] group, double C, double eps, double[::1] alpha,
                       double[::1] room) noexcept nogil:
    cdef Py_ssize_t g = group[k]
    if alpha[k] < eps:
        if g >= 0:
            room[g] += alpha[k]
        alpha[k] = 0.0
    elif g < 0 and alpha[k] > C - eps:
        alpha[k] = C
    if g >= 0 and room[g] < eps:
        room[g] = 0.0


def solve_group_svm(const double[:, ::1] K, const double[::1] y, const Py_ssize_t[::1] group, Py_ssize_t n_groups,
                    double C, double tol, Py_ssize_t max_iter):
    """Solve the dual above from ``alpha = 0``.

    Parameters
    ----------
    K : ndarray of shape (n, n), float64, C-contiguous
        The kernel (symmetric, positive semi-definite).
    y : ndarray of shape (n,)
        Labels in {-1, +1}; the members of one group share their label.
    group : ndarray of shape (n,), intp
        The group of each sample, ``0 <= group < n_groups``, or ``-1`` for a sample with a cap of its own.
    n_groups : int
    C : float
        Every cap.
    tol : float
        Stop when both kinds of violation are below ``tol`` (libsvm's ``eps``).
    max_iter : int
        Largest number of pair steps.

    Returns
    -------
    alpha : ndarray of shape (n,)
    b : float
        The bias: ``f(x) = sum_i alpha_i y_i k(x_i, x) + b``.
    n_iter : int
    violation : float
        The largest violation at the end (below ``tol`` unless ``max_iter`` or Ctrl-C stopped the solve).
    interrupted : bool
    """
    cdef Py_ssize_t n = y.shape[0], t, g, i, j, it = 0, best_g
    alpha_ = np.zeros(n)
    room_ = np.full(max(n_groups, 1), C)
    G_ = np.full(n, -1.0)
    gmax_ = np.empty(max(n_groups, 1))
    gmin_ = np.empty(max(n_groups, 1))
    amax_ = np.empty(max(n_groups, 1), dtype=np.intp)
    amin_ = np.empty(max(n_groups, 1), dtype=np.intp)
    cdef double[::1] alpha = alpha_, room = room_, G = G_, gmax = gmax_, gmin = gmin_
    cdef Py_ssize_t[::1] amax = amax_, amin = amin_
    cdef double m, M, v, bij, aij, score, best, pair_viol = INFINITY, group_viol = INFINITY
    cdef bint interrupted = False
    with nogil:
        while True:
            # the pair violation (libsvm's second-order working set: i the most violating, j the best partner)
            m = -INFINITY
            i = -1
            for t in range(n):
                if (_can_rise(t, group, alpha, room, C) if y[t] > 0 else alpha[t] > 0.0):
                    v = -y[t] * G[t]
                    if v > m:
                        m = v
                        i = t
            M = INFINITY
            j = -1
            best = INFINITY
            for t in range(n):
                if (alpha[t] > 0.0 if y[t] > 0 else _can_rise(t, group, alpha, room, C)):
                    v = -y[t] * G[t]
                    if v < M:
                        M = v
                    if i >= 0 and v < m:
                        bij = m - v
                        aij = K[i, i] + K[t, t] - 2.0 * K[i, t]
                        if aij <= 0.0:
                            aij = TAU
                        score = -bij * bij / aij
                        if score < best:
                            best = score
                            j = t
            pair_viol = m - M if i >= 0 and M < INFINITY else 0.0
            # inside each group: move weight from its member of largest gradient to its member of smallest
            group_viol = 0.0
            best_g = -1
            if n_groups > 0:
                for g in range(n_groups):
                    gmax[g] = -INFINITY
                    gmin[g] = INFINITY
                for t in range(n):
                    g = group[t]
                    if g >= 0:
                        if alpha[t] > 0.0 and G[t] > gmax[g]:
                            gmax[g] = G[t]
                            amax[g] = t
                        if G[t] < gmin[g]:
                            gmin[g] = G[t]
                            amin[g] = t
                for g in range(n_groups):
                    if gmax[g] - gmin[g] > group_viol:
                        group_viol = gmax[g] - gmin[g]
                        best_g = g
            if (pair_viol < tol and group_viol < tol) or it >= max_iter:
                break
            if it > 0 and it % SIGNAL_EVERY == 0 and signal_pending():
                interrupted = True
                break
            if pair_viol >= group_viol and j >= 0:
                _step(i, j, K, y, group, C, alpha, room, G)
            else:
                # the falling member amax, the rising amin: in _step's terms i moves along +y, j along -y
                if y[amin[best_g]] > 0:
                    _step(amin[best_g], amax[best_g], K, y, group, C, alpha, room, G)
                else:
                    _step(amax[best_g], amin[best_g], K, y, group, C, alpha, room, G)
            it += 1
    # the bias: the mean of -y G over the free variables (on the margin), else the middle of its feasible range
    grouped = np.asarray(group) >= 0
    free = (alpha_ > 0) & np.where(grouped, room_[np.maximum(np.asarray(group), 0)] > 0, alpha_ < C)
    if free.any():
        b = float(np.mean(-np.asarray(y)[free] * G_[free]))
    else:
        b = 0.5 * (m + M) if np.isfinite(m + M) else 0.0
    return alpha_, b, it, max(pair_viol, group_viol), interrupted
