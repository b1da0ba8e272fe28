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
Chen and Lin (2005) with the curvature of the combined kernel at the current weights (its diagonal formed
again only once the weights have drifted by 1 % in l1; the exact curvature
adds a non-negative term from the change of the weights, which the Newton step accounts for).  Each step
updates the ``M x n`` array ``U = [u_m]``, the ``q_m`` and the combined gradient in O(M |active|), reading
two rows of every kernel: in place from the library's (M, n, n) layout, or from a cache of rows filled on
demand for a stack that is not held in memory.  Shrinking (see :func:`solve`) keeps the active set small.

The Python side (:mod:`multikernel.plugins.smo_mkl`) turns the state into certified bounds.
"""

from cpython.exc cimport PyErr_Clear
from cpython.ref cimport PyObject
from cython cimport floating
from libc.math cimport INFINITY, fabs, pow, sqrt
from libc.stdlib cimport free, malloc

from _common cimport TAU, Slots, in_low, in_up, prefetch, signal_pending, slots_evict, slots_put

import numpy as np

cdef Py_ssize_t PREFETCH_AHEAD = 8      # kernels ahead whose rows a step asks the memory for (see _prefetch_row)


cdef inline void _prefetch_row(const floating* p, Py_ssize_t n) noexcept nogil:
    """Ask for the cache lines of one kernel's row.  A step reads one short row (n entries) of every kernel,
    the kernels n^2 entries apart: too short a stream for the hardware prefetchers to ramp up on, so each
    row's lines are requested PREFETCH_AHEAD kernels before they are used."""
    cdef Py_ssize_t k = 0, step = 64 // sizeof(floating)
    while k < n:
        prefetch(p + k)
        k += step


cdef double SIGNAL_WORK = 2e8           # multiply-adds between two checks for Ctrl-C
cdef double KDIAG_DRIFT = 1e-2          # relative l1 change of theta that makes a step refresh the combined diagonal

cdef double _norm_weights(const double* q, Py_ssize_t M, double r, double* w) noexcept nogil:
    """``N = ||q_+||_r`` and ``w_m = (q_m/N)^(r-1)`` (computed relative to the largest ``q_m``).

    For ``q = 0`` the weights are those of equal forms, ``M^(-(r-1)/r)``: any value is consistent there
    (every ``u_m`` is zero), and this one gives the pair selection a sensible combined kernel.
    """
    cdef Py_ssize_t m
    cdef double top = 0.0, acc = 0.0, x, v
    for m in range(M):
        if q[m] > top:
            top = q[m]
    if top <= 0.0:
        x = pow(<double>M, -(r - 1.0) / r)
        for m in range(M):
            w[m] = x
        return 0.0
    if r == 1.0:
        for m in range(M):
            w[m] = 1.0
            if q[m] > 0.0:
                acc += q[m]
        return acc
    # One pow per kernel (none at r = 2, p = 2): v_m = (q_m/top)^(r-1), sum (q_m/top)^r = sum v_m q_m/top and
    # (q_m/N)^(r-1) = v_m (top/N)^(r-1) = v_m acc^(-(r-1)/r).  This runs several times per SMO step.
    for m in range(M):
        if q[m] > 0.0:
            x = q[m] / top
            v = x if r == 2.0 else pow(x, r - 1.0)
            w[m] = v
            acc += v * x
        else:
            w[m] = 0.0
    if r == 2.0:
        x = sqrt(acc)
        v = 1.0 / x
    else:
        x = pow(acc, 1.0 / r)
        v = x / acc           # acc^(1/r - 1) = acc^(-(r-1)/r)
    for m in range(M):
        w[m] *= v
    return top * x


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
        elif fabs(tn - t) <= 1e-10 * tn:
            # Newton converges quadratically: after a step this small the point is exact to rounding, and
            # evaluating phi' there once more would not move it.
            return tn
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


ctypedef struct _Rows:
    # Where the rows of every kernel at one index l live: ``base + l * lstride`` (a dense stack) or a slot
    # of the cache (``cached``); the rows of two kernels are ``kstride`` elements apart.
    Py_ssize_t M, n, kstride, lstride
    int cached
    Slots slots                         # which slot holds which index (arrays owned by ``fetch``)
    PyObject* fetch                     # fetch(l, slot) -> bool fills the slot (cached mode)


cdef floating* _row(floating* base, _Rows* R, Py_ssize_t l, Py_ssize_t pin, int* failed) noexcept nogil:
    """The rows ``K_m[l, :]`` of every kernel (``kstride`` apart); a cache miss evicts the least recently
    used slot other than the one holding ``pin`` and asks ``fetch`` (with the GIL) to fill it."""
    cdef Py_ssize_t slot
    cdef bint ok
    if not R.cached:
        return base + l * R.lstride
    R.slots.clock += 1
    slot = R.slots.slot_of[l]
    if slot < 0:
        slot = slots_evict(&R.slots, pin)
        with gil:
            ok = bool((<object> R.fetch)(l, slot))
        if not ok:
            failed[0] = 1
            return NULL
        slots_put(&R.slots, l, slot)
    else:
        R.slots.stamp[slot] = R.slots.clock
    return base + slot * R.M * R.n


cdef inline double _combine(const double* q, Py_ssize_t M, Py_ssize_t n, double r, double c, int s,
                            double* w, double* theta, const double* U, const double* diag,
                            const Py_ssize_t* idx, Py_ssize_t count, double* F, double* kdiag) noexcept nogil:
    """The weights at ``q`` (``N``, ``w``, ``theta``) and, on the indices ``idx[:count]``, the gradient's
    kernel part ``F = sum_m theta_m U[m]`` and the combined diagonal ``kdiag = sum_m theta_m diag[m]``;
    returns ``N``."""
    cdef Py_ssize_t m, a, k
    cdef double N = _norm_weights(q, M, r, w), th
    _set_theta(theta, w, N, M, c, s)
    for a in range(count):
        k = idx[a]
        F[k] = 0.0
        kdiag[k] = 0.0
    for m in range(M):
        th = theta[m]
        for a in range(count):
            k = idx[a]
            F[k] += th * U[m * n + k]
            kdiag[k] += th * diag[m * n + k]
    return N


cdef int _reconstruct(floating* base, _Rows* R, const double* y, const double* C, const double* alpha,
                      double* U, const double* Ubar, const Py_ssize_t* idx, Py_ssize_t count) noexcept nogil:
    """``U`` on the shrunk indices ``idx[:count]`` from the bound part ``Ubar`` (the ``alpha = C`` terms,
    kept up to date) and the rows of the free variables: libsvm's gradient reconstruction.  0 on success."""
    cdef Py_ssize_t M = R.M, n = R.n, m, a, k, l
    cdef floating* Rl
    cdef double coef
    cdef int failed = 0
    for m in range(M):
        for a in range(count):
            k = idx[a]
            U[m * n + k] = Ubar[m * n + k]
    for l in range(n):
        if not (alpha[l] > 0.0 and alpha[l] < C[l]):
            continue
        Rl = _row(base, R, l, -1, &failed)
        if failed:
            return 1
        coef = y[l] * alpha[l]
        for m in range(M):
            for a in range(count):
                k = idx[a]
                U[m * n + k] += coef * Rl[m * R.kstride + k]
    return 0


cdef inline Py_ssize_t _unshrink(floating* base, _Rows* R, const double* y, const double* C,
                                 const double* alpha, double* U, const double* Ubar, unsigned char* active,
                                 Py_ssize_t* act, Py_ssize_t* rest, bint reset, const double* q, double r, double c,
                                 int s, double* w, double* theta, const double* diag, double* F,
                                 double* kdiag) noexcept nogil:
    """``U``, ``F`` and the combined diagonal rebuilt on the shrunk indices (:func:`_reconstruct`), and with
    ``reset`` every variable made active again (``act`` the identity).  Returns the number of indices
    rebuilt, or -1 when the row cache failed."""
    cdef Py_ssize_t k, nr = 0
    for k in range(R.n):
        if not active[k]:
            rest[nr] = k
            nr += 1
        if reset:
            active[k] = 1
            act[k] = k
    if _reconstruct(base, R, y, C, alpha, U, Ubar, rest, nr):
        return -1
    _combine(q, R.M, R.n, r, c, s, w, theta, U, diag, rest, nr, F, kdiag)
    return nr


cdef inline Py_ssize_t _shrinkable(double v, double y, double a, double C, double vmin,
                                   double vmax) noexcept nogil:
    """1 if a variable at a bound satisfies its KKT condition strictly at the extremes ``vmin``, ``vmax``."""
    if in_up(y, a, 0.0, C):
        return not in_low(y, a, 0.0, C) and v < vmin
    return v > vmax


def solve(floating[:, :, ::1] K, double[:, ::1] diag, double[::1] y, double[::1] C, double[::1] alpha,
          double[:, ::1] U, double[:, ::1] Ubar, double[::1] q, double[::1] F, unsigned char[::1] active,
          double r, double c, int s, double eps, long long max_iter, bint shrinking=True, object fetch=None):
    """Run SMO steps until the maximal KKT violation is at most ``eps`` or ``max_iter`` steps.

    Shrinking (Joachims 1999; libsvm's rule, Fan, Chen and Lin 2005): every ``min(n, 1000)`` steps the
    variables at a bound whose KKT condition holds with the current extreme violations leave the active set;
    the steps then select pairs, update ``U``, the gradient and the combined diagonal on the active indices
    only (``O(M |active|)`` per step).  ``U`` on the shrunk indices is rebuilt from ``Ubar`` (the terms of the
    variables at their upper bound, updated when one enters or leaves it) and the rows of the free
    variables -- once when the violation first falls below ``10 eps``, whenever the active set satisfies
    ``eps`` (the solve stops only if every variable does) and before returning, so the caller always gets
    the exact ``U`` and ``F`` of every index.

    Parameters
    ----------
    K : float32 or float64, C-contiguous
        ``fetch=None``: the kernels, shape (M, n, n) (symmetric).  Otherwise the row cache, shape
        (n_slots, M, n) with ``n_slots >= 2``: ``fetch(l, slot)`` stores the rows ``K_m[l, :]`` of every
        kernel in ``K[slot]`` and returns True (False stops the solve: the caller raises its error); its
        attributes ``slot_of`` ((n,) intp, -1 where not cached), ``owner`` and ``stamp`` ((n_slots,) intp and
        int64) and ``clock`` are the cache's least-recently-used bookkeeping, kept between calls.
    diag : (M, n)
        The kernels' diagonals.
    y, C : (n,)
        Labels in {-1, +1} and the upper bounds of ``alpha``.
    alpha : (n,)
        Feasible start; updated in place.
    U, Ubar : (M, n)
        ``U[m] = K_m (y * alpha)`` and ``Ubar[m] = K_m (y * alpha * [alpha == C])`` on entry; updated
        (``Ubar`` only with ``shrinking``, the only use of it: otherwise it is neither read nor written).
    q, F : (M,), (n,)
        Outputs: the quadratic forms ``q_m`` and ``F = sum_m theta_m U[m]`` at the final ``alpha``.
    active : (n,) uint8
        The active set (1: active), kept between calls; updated.
    r, c, s : the objective (module docstring).
    eps : float
        KKT tolerance: ``max_{I_up} (y_k - F_k) - min_{I_low} (y_k - F_k) <= eps`` ends the solve.
    max_iter : int
        Step limit of this call.
    shrinking : bool
        Shrink the active set (False: every step works on all indices).

    Returns
    -------
    (n_iter, violation, converged, interrupted, newton_iterations, cache_misses, failed)
        ``violation`` is that of the active set when the step limit ends the call.
    """
    cdef bint cached = fetch is not None
    cdef Py_ssize_t M = U.shape[0], n = U.shape[1]
    if y.shape[0] != n or C.shape[0] != n or alpha.shape[0] != n or F.shape[0] != n or active.shape[0] != n:
        raise ValueError("inconsistent shapes")
    if Ubar.shape[0] != M or Ubar.shape[1] != n or q.shape[0] != M or diag.shape[0] != M or diag.shape[1] != n:
        raise ValueError("Ubar and diag must have the shape (M, n) of U, and q the shape (M,)")
    if cached:
        if K.shape[0] < 2 or K.shape[1] != M or K.shape[2] != n:
            raise ValueError("the row cache must have shape (n_slots >= 2, M, n)")
    elif K.shape[0] != M or K.shape[1] != n or K.shape[2] != n:
        raise ValueError("K must have shape (M, n, n)")
    cdef _Rows R
    R.M, R.n, R.cached, R.slots.clock, R.slots.misses = M, n, cached, 0, 0
    R.kstride = n if cached else n * n
    R.lstride = n
    R.slots.n_slots = K.shape[0] if cached else 0
    R.fetch = <PyObject*> fetch
    # The cache's bookkeeping lives in the fetch object, so that its rows serve every call of a fit.
    cdef Py_ssize_t[::1] slot_of = fetch.slot_of if cached else np.full(n, -1, dtype=np.intp)
    cdef Py_ssize_t[::1] owner = fetch.owner if cached else np.full(1, -1, dtype=np.intp)
    cdef long long[::1] stamp = fetch.stamp if cached else np.zeros(1, dtype=np.int64)
    if cached:
        if slot_of.shape[0] != n or owner.shape[0] != R.slots.n_slots or stamp.shape[0] != R.slots.n_slots:
            raise ValueError("the cache's slot_of must have length n, and owner and stamp one entry per slot")
        R.slots.clock = fetch.clock
    R.slots.slot_of, R.slots.owner, R.slots.stamp = &slot_of[0], &owner[0], &stamp[0]
    cdef double* w = <double*> malloc(M * sizeof(double))
    cdef double* theta = <double*> malloc(M * sizeof(double))
    cdef double* g = <double*> malloc(M * sizeof(double))
    cdef double* h = <double*> malloc(M * sizeof(double))
    cdef double* qt = <double*> malloc(M * sizeof(double))
    cdef double* wt = <double*> malloc(M * sizeof(double))
    cdef double* krow = <double*> malloc(n * sizeof(double))
    cdef double* kdiag = <double*> malloc(n * sizeof(double))
    cdef double* theta_d = <double*> malloc(M * sizeof(double))  # theta when kdiag was last formed
    cdef Py_ssize_t* act = <Py_ssize_t*> malloc(n * sizeof(Py_ssize_t))
    cdef Py_ssize_t* rest = <Py_ssize_t*> malloc(n * sizeof(Py_ssize_t))
    if not (w and theta and g and h and qt and wt and krow and kdiag and theta_d and act and rest):
        free(w); free(theta); free(g); free(h); free(qt); free(wt); free(krow); free(kdiag); free(theta_d)
        free(act); free(rest)
        raise MemoryError()
    cdef floating* base = &K[0, 0, 0]
    cdef floating* Ri
    cdef floating* Rj
    cdef floating* Rl
    cdef double* Up = &U[0, 0]
    cdef double* Ub = &Ubar[0, 0]
    cdef double* dg = &diag[0, 0]
    cdef Py_ssize_t m, k, a, i, j, na = 0, nr = 0, l, ks = R.kstride, n_free
    cdef long long steps_left
    cdef Py_ssize_t shrink_every = n if n < 1000 else 1000
    cdef long long it = 0, newton_total = 0, since_shrink = shrink_every  # a shrink pass first
    cdef int newton_it = 0, converged = 0, interrupted = 0, failed = 0, unshrunk = 0, sign
    cdef double N, vmax, vmin, v, b, a_ij, score, best, t, tmax, lin, th, dl, drift, total
    cdef bint new_diag
    cdef double work = 0.0
    cdef double violation = INFINITY
    cdef bint up_i, up_j

    with nogil:
        for k in range(n):
            if active[k] or not shrinking:
                act[na] = k
                na += 1
        # q_m = coef' u_m at the start (exact for the U given), and F, kdiag on every index (U is complete).
        for m in range(M):
            q[m] = 0.0
            for k in range(n):
                q[m] += y[k] * alpha[k] * Up[m * n + k]
        for k in range(n):
            rest[k] = k
        N = _combine(&q[0], M, n, r, c, s, w, theta, Up, dg, rest, n, &F[0], kdiag)
        for m in range(M):
            theta_d[m] = theta[m]
        while True:
            # Working set: i the most violating index of I_up (libsvm's rule in the maximisation form).
            vmax = -INFINITY
            vmin = INFINITY
            i = -1
            for a in range(na):
                k = a if na == n else act[a]
                v = y[k] - F[k]
                if in_up(y[k], alpha[k], 0.0, C[k]) and v > vmax:
                    vmax = v
                    i = k
                if in_low(y[k], alpha[k], 0.0, C[k]) and v < vmin:
                    vmin = v
            violation = vmax - vmin
            if violation <= eps or i < 0 or (shrinking and not unshrunk and violation <= 10.0 * eps):
                if na < n:
                    # The active set is (nearly) optimal: check every variable, with exact U (libsvm
                    # unshrinks once below 10 eps, and before it stops).
                    unshrunk = unshrunk or violation <= 10.0 * eps
                    nr = _unshrink(base, &R, &y[0], &C[0], &alpha[0], Up, Ub, &active[0], act, rest, True, &q[0],
                                   r, c, s, w, theta, dg, &F[0], kdiag)
                    if nr < 0:
                        failed = 1
                        break
                    na = n
                    work += 2.0 * M * nr
                    continue
                if violation <= eps or i < 0:
                    converged = 1
                    break
                unshrunk = 1
            if it >= max_iter:
                break
            if work >= SIGNAL_WORK:
                work = 0.0
                if signal_pending():
                    interrupted = 1
                    break
            if shrinking and since_shrink >= shrink_every:
                # Variables at a bound that cannot be part of a violating pair at the current extremes.
                since_shrink = 0
                nr = 0
                n_free = 0
                for k in range(n):
                    n_free += alpha[k] > 0.0 and alpha[k] < C[k]
                for a in range(na):
                    k = act[a]
                    rest[a] = _shrinkable(y[k] - F[k], y[k], alpha[k], C[k], vmin, vmax)
                    nr += rest[a]
                # Shrink only when the steps it saves (3 M reads per shrunk index and step, until the next
                # pass or the end of the call) outweigh the rebuild of U, which reads the rows of every free
                # variable (with most points free, as at large C, it never pays).
                steps_left = max_iter - it if max_iter - it < shrink_every else shrink_every
                if 3.0 * nr * steps_left > <double> n_free * n:
                    l = 0
                    for a in range(na):
                        k = act[a]
                        if rest[a]:
                            active[k] = 0
                        else:
                            act[l] = k
                            l += 1
                    na = l
            # Row i of the combined kernel sum_m theta_m K_m, on the active indices.
            Ri = _row(base, &R, i, -1, &failed)
            if failed:
                break
            for a in range(na):
                krow[act[a]] = 0.0
            for m in range(M):
                th = theta[m]
                if m + PREFETCH_AHEAD < M:
                    _prefetch_row(Ri + (m + PREFETCH_AHEAD) * ks, n)
                if na == n:  # contiguous (vectorised) when nothing is shrunk
                    for k in range(n):
                        krow[k] += th * Ri[m * ks + k]
                else:
                    for a in range(na):
                        k = act[a]
                        krow[k] += th * Ri[m * ks + k]
            j = -1
            best = INFINITY
            for a in range(na):
                k = a if na == n else act[a]
                if not in_low(y[k], alpha[k], 0.0, C[k]):
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
                if na < n:
                    violation = 0.0  # unshrink and check every variable
                    unshrunk = 1
                    since_shrink = 0
                    if _unshrink(base, &R, &y[0], &C[0], &alpha[0], Up, Ub, &active[0], act, rest, True, &q[0],
                                 r, c, s, w, theta, dg, &F[0], kdiag) < 0:
                        failed = 1
                        break
                    na = n
                    continue
                converged = 1
                break
            Rj = _row(base, &R, j, i, &failed)
            if failed:
                break
            # The step along y_i e_i - y_j e_j: coef = y*alpha moves by t (e_i - e_j).
            tmax = C[i] - alpha[i] if y[i] > 0 else alpha[i]
            if y[j] > 0:
                if alpha[j] < tmax:
                    tmax = alpha[j]
            elif C[j] - alpha[j] < tmax:
                tmax = C[j] - alpha[j]
            for m in range(M):
                g[m] = Up[m * n + i] - Up[m * n + j]
                h[m] = dg[m * n + i] + dg[m * n + j] - 2.0 * Ri[m * ks + j]
                if h[m] < 0.0:
                    h[m] = 0.0
            lin = y[i] - y[j]
            t = _pair_step(tmax, &q[0], g, h, M, r, c, s, lin, qt, wt, &newton_it)
            newton_total += newton_it
            it += 1
            since_shrink += 1
            work += 3.0 * M * na + 1.0
            if t <= 0.0:
                # No progress along the best pair (violation within rounding): stop as converged.
                converged = 1
                break
            if t >= tmax:
                t = tmax
            up_i = alpha[i] >= C[i]
            up_j = alpha[j] >= C[j]
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
            # Ubar holds the terms of the variables at C, on every index (for the reconstruction, so only
            # when shrinking: at large C variables enter and leave the bound often, M n each time).
            for l in range(2 if shrinking else 0):
                k = i if l == 0 else j
                sign = (alpha[k] >= C[k]) - (up_i if l == 0 else up_j)
                if sign != 0:
                    Rl = Ri if l == 0 else Rj
                    dl = sign * y[k] * C[k]
                    for m in range(M):
                        for a in range(n):
                            Ub[m * n + a] += dl * Rl[m * ks + a]
                    work += M * n
            # q(t) is exact from g and h, so the new weights are known before U is updated.
            for m in range(M):
                q[m] = q[m] + t * (2.0 * g[m] + t * h[m])
                if q[m] < 0.0:
                    q[m] = 0.0
            # U, then F at the new weights, in one pass over the active indices.  The combined diagonal
            # only serves the pair selection's curvature estimate, so it is formed again (one more read
            # of the M x n diagonals) only once theta has drifted by KDIAG_DRIFT since it was formed.
            N = _norm_weights(&q[0], M, r, w)
            _set_theta(theta, w, N, M, c, s)
            drift = 0.0
            total = 0.0
            for m in range(M):
                drift += fabs(theta[m] - theta_d[m])
                total += theta_d[m]
            new_diag = drift > KDIAG_DRIFT * total
            if new_diag:
                for m in range(M):
                    theta_d[m] = theta[m]
            for a in range(na):
                k = act[a]
                F[k] = 0.0
                if new_diag:
                    kdiag[k] = 0.0
            for m in range(M):
                th = theta[m]
                if m + PREFETCH_AHEAD < M:
                    _prefetch_row(Ri + (m + PREFETCH_AHEAD) * ks, n)
                    _prefetch_row(Rj + (m + PREFETCH_AHEAD) * ks, n)
                if na == n and new_diag:
                    for k in range(n):
                        Up[m * n + k] += t * (Ri[m * ks + k] - Rj[m * ks + k])
                        F[k] += th * Up[m * n + k]
                        kdiag[k] += th * dg[m * n + k]
                elif na == n:
                    for k in range(n):
                        Up[m * n + k] += t * (Ri[m * ks + k] - Rj[m * ks + k])
                        F[k] += th * Up[m * n + k]
                else:
                    for a in range(na):
                        k = act[a]
                        Up[m * n + k] += t * (Ri[m * ks + k] - Rj[m * ks + k])
                        F[k] += th * Up[m * n + k]
                        if new_diag:
                            kdiag[k] += th * dg[m * n + k]
        if na < n and not failed:
            # The caller certifies from U and F on every index: rebuild them on the shrunk ones (the active
            # set itself is kept for the next call).
            if _unshrink(base, &R, &y[0], &C[0], &alpha[0], Up, Ub, &active[0], act, rest, False, &q[0], r, c, s,
                         w, theta, dg, &F[0], kdiag) < 0:
                failed = 1
        # Exact q_m = coef' u_m at the end (removes the rounding of the incremental updates).
        for m in range(M):
            q[m] = 0.0
            for k in range(n):
                q[m] += y[k] * alpha[k] * Up[m * n + k]
    free(w); free(theta); free(g); free(h); free(qt); free(wt); free(krow); free(kdiag); free(theta_d)
    free(act); free(rest)
    if cached:
        fetch.clock = R.slots.clock
    return (int(it), float(violation), bool(converged), bool(interrupted), int(newton_total), int(R.slots.misses),
            bool(failed))
