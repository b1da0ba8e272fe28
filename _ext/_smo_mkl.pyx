# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""SMO for the lp-norm MKL dual (Vishwanathan, Sun, Theera-Ampornpunt and Varma, NIPS 2010).

For ``p > 1`` the kernel weights of lp-norm MKL are a closed-form function of ``alpha``, so the dual is a
smooth concave function of ``alpha`` alone::

    maximise  f(a) = 1'a - c N(q(a))^s    s.t.  0 <= a <= C,  y'a = 0,
    q_m(a) = (y*a)' K_m (y*a),            N(q) = ||q||_r = (sum_m q_m^r)^(1/r),  r = p/(p-1) >= 1.

``s = 1, c = 1/2`` is the library's lp-MKL (weights in the unit lp ball, ``mu_m = (q_m/N)^(r-1)``);
``s = 2, c = 1/(8 lambda)`` is the squared-norm regulariser ``lambda/2 ||d||_p^2`` of the SMO-MKL paper
(weights ``d_m = N (q_m/N)^(r-1) / (2 lambda)``).  The gradient is ``1 - y * sum_m theta_m u_m`` with
``u_m = K_m (y*a)`` and ``theta_m = 2 c s N^(s-1) (q_m/N)^(r-1)``: the SVM gradient of the combined kernel
``sum_m theta_m K_m``.

One step moves a pair ``(i, j)`` along ``d = y_i e_i - y_j e_j``, which keeps ``y'a = 0``.  Along it
``q_m(t) = q_m + 2 t g_m + t^2 h_m`` with ``g_m = u_m[i] - u_m[j]`` and ``h_m = K_m[ii] + K_m[jj] -
2 K_m[ij]``, so the objective along the pair costs O(M) to evaluate with its first two derivatives; it is
not quadratic, and a safeguarded one-dimensional Newton method (bisection whenever a Newton point leaves
the bracket of the root of ``phi'``) finds the step.  The pair is chosen by the second-order rule of Fan,
Chen and Lin (2005) with the curvature of the combined kernel at the current weights (the exact curvature
adds a non-negative term from the change of the weights, which the Newton step accounts for).  Each step
updates the ``M x n`` array ``U = [u_m]``, the ``q_m`` and the combined gradient in O(M n), reading two rows
of every kernel; the stack is the library's (M, n, n) layout, so those rows are contiguous.

The Python side (:mod:`multikernel.plugins.smo_mkl`) turns the state into certified bounds.
"""

from cython cimport floating
from libc.math cimport INFINITY, fabs, pow
from libc.stdlib cimport free, malloc

from _signals cimport signal_pending

import numpy as np

cdef double TAU = 1e-12                 # curvature floor of the pair selection (libsvm's tau)
cdef double SIGNAL_WORK = 2e8           # multiply-adds between two checks for Ctrl-C

cdef double _norm_weights(const double* q, Py_ssize_t M, double r, double* w) noexcept nogil:
    """``N = ||q_+||_r`` and ``w_m = (q_m/N)^(r-1)`` (computed relative to the largest ``q_m``).

    For ``q = 0`` the weights are those of equal forms, ``M^(-(r-1)/r)``: any value is consistent there
    (every ``u_m`` is zero), and this one gives the pair selection a sensible combined kernel.
    """
    cdef Py_ssize_t m
    cdef double top = 0.0, acc = 0.0, N, x
    for m in range(M):
        if q[m] > top:
            top = q[m]
    if top <= 0.0:
        x = pow(<double>M, -(r - 1.0) / r)
        for m in range(M):
            w[m] = x
        return 0.0
    for m in range(M):
        if q[m] > 0.0:
            acc += pow(q[m] / top, r)
    N = top * pow(acc, 1.0 / r)
    for m in range(M):
        w[m] = pow(q[m] / N, r - 1.0) if q[m] > 0.0 else (1.0 if r == 1.0 else 0.0)
    return N


cdef void _pair_derivatives(double t, const double* q, const double* g, const double* h, Py_ssize_t M,
                            double r, double c, int s, double lin, double* qt, double* w,
                            double* d1, double* d2) noexcept nogil:
    """``phi'(t)`` and ``phi''(t)`` of ``phi(t) = f(a + t d)`` (see the module docstring).

    ``N'' = sum w_m q_m'' + (r-1) [sum w_m q_m'^2 / q_m - N'^2 / N]``; by Cauchy-Schwarz
    ``q_m'^2 <= 4 q_m h_m``, which bounds the ratio where ``q_m`` vanishes (0/0 in floating point).
    """
    cdef Py_ssize_t m
    cdef double N, N1 = 0.0, N2 = 0.0, bracket = 0.0, dq, ratio, hn
    for m in range(M):
        qt[m] = q[m] + t * (2.0 * g[m] + t * h[m])
        if qt[m] < 0.0:
            qt[m] = 0.0
    N = _norm_weights(qt, M, r, w)
    if N <= 0.0:
        # Every q_m(t) vanishes: then q(t') = (t'-t)^2 h near t, N' = 0 and N'' = 2 ||h||_r.
        if s == 1:
            hn = _norm_weights(h, M, r, w)
            d1[0] = lin
            d2[0] = -c * 2.0 * hn
        else:
            d1[0] = lin
            d2[0] = 0.0
        return
    for m in range(M):
        dq = 2.0 * (g[m] + t * h[m])
        N1 += w[m] * dq
        N2 += w[m] * 2.0 * h[m]
        if qt[m] > 0.0 and w[m] > 0.0:
            ratio = dq * dq / qt[m]
            if ratio > 4.0 * h[m]:
                ratio = 4.0 * h[m]
            bracket += w[m] * ratio
    if r > 1.0:
        N2 += (r - 1.0) * (bracket - N1 * N1 / N)
    if s == 1:
        d1[0] = lin - c * N1
        d2[0] = -c * N2
    else:
        d1[0] = lin - 2.0 * c * N * N1
        d2[0] = -2.0 * c * (N1 * N1 + N * N2)


cdef double _pair_step(double tmax, const double* q, const double* g, const double* h, Py_ssize_t M,
                       double r, double c, int s, double lin, double* qt, double* w,
                       int* newton_iter) noexcept nogil:
    """The maximiser of the concave ``phi`` on ``[0, tmax]`` (``phi'(0) > 0``): safeguarded Newton.

    The bracket ``[a, b]`` always holds the root of ``phi'`` (``phi'(a) > 0``, ``phi'(b) <= 0``); a Newton
    point outside it, or a non-negative curvature, is replaced by the bisection point.
    """
    cdef double d1, d2, a = 0.0, b = tmax, t = 0.0, tn, step
    cdef int k
    newton_iter[0] = 0
    _pair_derivatives(tmax, q, g, h, M, r, c, s, lin, qt, w, &d1, &d2)
    if d1 >= 0.0:
        return tmax
    _pair_derivatives(0.0, q, g, h, M, r, c, s, lin, qt, w, &d1, &d2)
    if d1 <= 0.0:
        return 0.0
    for k in range(100):
        tn = t - d1 / d2 if d2 < 0.0 else -1.0
        if not (tn > a and tn < b):
            tn = 0.5 * (a + b)
        step = fabs(tn - t)
        t = tn
        _pair_derivatives(t, q, g, h, M, r, c, s, lin, qt, w, &d1, &d2)
        newton_iter[0] += 1
        if d1 > 0.0:
            a = t
        elif d1 < 0.0:
            b = t
        else:
            break
        if step <= 1e-14 * t or b - a <= 1e-15 * b:
            break
    return t


cdef inline void _set_theta(double* theta, const double* w, double N, Py_ssize_t M, double c,
                            int s) noexcept nogil:
    """``theta_m = 2 c s N^(s-1) w_m``: the weights of the combined kernel in the gradient."""
    cdef double scale = 2.0 * c * s * (pow(N, s - 1.0) if s > 1 else 1.0)
    cdef Py_ssize_t m
    for m in range(M):
        theta[m] = scale * w[m]


def pair_step(double tmax, double[::1] q, double[::1] g, double[::1] h, double r, double c, int s,
              double lin):
    """The Newton step of one pair, exposed for tests: ``(t, newton_iterations)``.

    ``phi(t) = lin t - c ||q + 2 t g + t^2 h||_r^s`` maximised on ``[0, tmax]``, ``phi'(0) > 0``.
    """
    cdef Py_ssize_t M = q.shape[0]
    if g.shape[0] != M or h.shape[0] != M:
        raise ValueError("q, g and h must have the same length")
    cdef double[::1] qt = np.empty(M), w = np.empty(M)
    cdef int it = 0
    cdef double t = _pair_step(tmax, &q[0], &g[0], &h[0], M, r, c, s, lin, &qt[0], &w[0], &it)
    return t, it


def solve(floating[:, :, ::1] K, double[::1] y, double[::1] C, double[::1] alpha, double[:, ::1] U,
          double[::1] q, double[::1] F, double r, double c, int s, double eps, long long max_iter):
    """Run SMO steps until the maximal KKT violation is at most ``eps`` or ``max_iter`` steps.

    Parameters
    ----------
    K : (M, n, n) float32 or float64, C-contiguous
        The kernels (symmetric).
    y, C : (n,)
        Labels in {-1, +1} and the upper bounds of ``alpha``.
    alpha : (n,)
        Feasible start; updated in place.
    U : (M, n)
        ``U[m] = K_m (y * alpha)`` on entry; updated in place.
    q, F : (M,), (n,)
        Outputs: the quadratic forms ``q_m`` and ``F = sum_m theta_m U[m]`` at the final ``alpha``.
    r, c, s : the objective (module docstring).
    eps : float
        KKT tolerance: ``max_{I_up} (y_k - F_k) - min_{I_low} (y_k - F_k) <= eps`` ends the solve.
    max_iter : int
        Step limit of this call.

    Returns
    -------
    (n_iter, violation, converged, interrupted, newton_iterations)
    """
    cdef Py_ssize_t M = K.shape[0], n = K.shape[1]
    if K.shape[2] != n or y.shape[0] != n or C.shape[0] != n or alpha.shape[0] != n or F.shape[0] != n:
        raise ValueError("inconsistent shapes")
    if U.shape[0] != M or U.shape[1] != n or q.shape[0] != M:
        raise ValueError("U must have shape (M, n) and q shape (M,)")
    cdef double* w = <double*> malloc(M * sizeof(double))
    cdef double* theta = <double*> malloc(M * sizeof(double))
    cdef double* g = <double*> malloc(M * sizeof(double))
    cdef double* h = <double*> malloc(M * sizeof(double))
    cdef double* qt = <double*> malloc(M * sizeof(double))
    cdef double* wt = <double*> malloc(M * sizeof(double))
    cdef double* krow = <double*> malloc(n * sizeof(double))
    cdef double* kdiag = <double*> malloc(n * sizeof(double))
    cdef double* diag = <double*> malloc(M * n * sizeof(double))
    if not (w and theta and g and h and qt and wt and krow and kdiag and diag):
        free(w); free(theta); free(g); free(h); free(qt); free(wt); free(krow); free(kdiag); free(diag)
        raise MemoryError()
    cdef Py_ssize_t m, k, i, j
    cdef long long it = 0, newton_total = 0
    cdef int newton_it = 0, converged = 0, interrupted = 0
    cdef double N, vmax, vmin, v, b, a_ij, score, best, t, tmax, lin
    cdef double work = 0.0, step_work = 4.0 * M * n + 1.0
    cdef double violation = INFINITY

    with nogil:
        for m in range(M):
            for k in range(n):
                diag[m * n + k] = K[m, k, k]
        # q_m = coef' u_m at the start (exact for the U given).
        for m in range(M):
            q[m] = 0.0
            for k in range(n):
                q[m] += y[k] * alpha[k] * U[m, k]
        N = _norm_weights(&q[0], M, r, w)
        _set_theta(theta, w, N, M, c, s)
        # The gradient's kernel part F and the combined kernel's diagonal; after each step they are formed
        # in the same pass that updates U.
        for k in range(n):
            F[k] = 0.0
            kdiag[k] = 0.0
        for m in range(M):
            for k in range(n):
                F[k] += theta[m] * U[m, k]
                kdiag[k] += theta[m] * diag[m * n + k]
        while True:
            # Working set: i the most violating index of I_up (libsvm's rule in the maximisation form).
            vmax = -INFINITY
            vmin = INFINITY
            i = -1
            for k in range(n):
                v = y[k] - F[k]
                if (y[k] > 0 and alpha[k] < C[k]) or (y[k] < 0 and alpha[k] > 0):
                    if v > vmax:
                        vmax = v
                        i = k
                if (y[k] < 0 and alpha[k] < C[k]) or (y[k] > 0 and alpha[k] > 0):
                    if v < vmin:
                        vmin = v
            violation = vmax - vmin
            if violation <= eps or i < 0:
                converged = 1
                break
            if it >= max_iter:
                break
            if work >= SIGNAL_WORK:
                work = 0.0
                if signal_pending():
                    interrupted = 1
                    break
            # Row i of the combined kernel sum_m theta_m K_m.
            for k in range(n):
                krow[k] = 0.0
            for m in range(M):
                for k in range(n):
                    krow[k] += theta[m] * K[m, i, k]
            j = -1
            best = INFINITY
            for k in range(n):
                if not ((y[k] < 0 and alpha[k] < C[k]) or (y[k] > 0 and alpha[k] > 0)):
                    continue
                v = y[k] - F[k]
                b = vmax - v
                if b <= 0.0:
                    continue
                a_ij = kdiag[i] + kdiag[k] - 2.0 * krow[k]
                if a_ij <= 0.0:
                    a_ij = TAU
                score = -b * b / a_ij
                if score < best:
                    best = score
                    j = k
            if j < 0:
                converged = 1
                break
            # The step along y_i e_i - y_j e_j: coef = y*alpha moves by t (e_i - e_j).
            tmax = C[i] - alpha[i] if y[i] > 0 else alpha[i]
            if y[j] > 0:
                if alpha[j] < tmax:
                    tmax = alpha[j]
            elif C[j] - alpha[j] < tmax:
                tmax = C[j] - alpha[j]
            for m in range(M):
                g[m] = U[m, i] - U[m, j]
                h[m] = K[m, i, i] + K[m, j, j] - 2.0 * K[m, i, j]
                if h[m] < 0.0:
                    h[m] = 0.0
            lin = y[i] - y[j]
            t = _pair_step(tmax, &q[0], g, h, M, r, c, s, lin, qt, wt, &newton_it)
            newton_total += newton_it
            it += 1
            work += step_work
            if t <= 0.0:
                # No progress along the best pair (violation within rounding): stop as converged.
                converged = 1
                break
            if t >= tmax:
                t = tmax
            alpha[i] += t * y[i]
            alpha[j] -= t * y[j]
            # Snap the bound that stopped the step (no rounding residue off the bound).
            if t == tmax:
                if y[i] > 0 and C[i] - alpha[i] <= 1e-12 * C[i]:
                    alpha[i] = C[i]
                elif y[i] < 0 and alpha[i] <= 1e-12 * C[i]:
                    alpha[i] = 0.0
                if y[j] > 0 and alpha[j] <= 1e-12 * C[j]:
                    alpha[j] = 0.0
                elif y[j] < 0 and C[j] - alpha[j] <= 1e-12 * C[j]:
                    alpha[j] = C[j]
            # q(t) is exact from g and h, so the new weights are known before U is updated.
            for m in range(M):
                q[m] = q[m] + t * (2.0 * g[m] + t * h[m])
                if q[m] < 0.0:
                    q[m] = 0.0
            N = _norm_weights(&q[0], M, r, w)
            _set_theta(theta, w, N, M, c, s)
            for k in range(n):
                F[k] = 0.0
                kdiag[k] = 0.0
            for m in range(M):
                for k in range(n):
                    U[m, k] += t * (K[m, i, k] - K[m, j, k])
                    F[k] += theta[m] * U[m, k]
                    kdiag[k] += theta[m] * diag[m * n + k]
        # Exact q_m = coef' u_m at the end (removes the rounding of the incremental updates).
        for m in range(M):
            q[m] = 0.0
            for k in range(n):
                q[m] += y[k] * alpha[k] * U[m, k]
    free(w); free(theta); free(g); free(h); free(qt); free(wt); free(krow); free(kdiag); free(diag)
    return int(it), float(violation), bool(converged), bool(interrupted), int(newton_total)
