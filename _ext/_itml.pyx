# cython: language_level=3
"""Cyclic Bregman projections of ITML, ITML+ and partial ITML+ (float64, no Python per constraint).

One routine serves the three methods: each pair is projected either by the ITML step (Davis et al. 2007,
Algorithm 1: the main metric ``M`` and the pair's slack ``xi``) or, when it has privileged data, by the
ITML+ step (Xu 2014, Proposition 11 and Lemma 5.5: ``M``, the privileged metric ``P`` and ``xi`` coupled).

Conventions shared by both steps (see ``docs/methods/itml.md``):

* ``y[k] = +1`` for a similar pair (``d_M <= xi``), ``-1`` for a dissimilar one (``d_M >= xi``);
* ``nu[k] >= 0`` is the cumulative multiplier of the pair's inequality (metric-learn's and the reference
  MATLAB code's ``lambda``); ``beta[k]`` is the cumulative multiplier of the equality ``xi = d_P`` (free);
* after any number of projections the state is the minimiser of the Lagrangian at (``nu``, ``beta``):
  ``M^-1 = M0^-1 + sum_k nu_k y_k A_k``, ``lam P^-1 = lam P0^-1 - sum_k beta_k B_k``,
  ``gamma / xi_k = gamma / xi0_k - nu_k y_k + beta_k``.

``M`` and ``P`` are read and written through their upper triangles only, in one pass per projection: the
rank-one update of a projection is applied during the next projection's product ``M v``. The lower triangles
are filled in once at the end.
"""

import numpy as np

cimport numpy as cnp
from cpython.exc cimport PyErr_CheckSignals
from libc.math cimport fabs, sqrt

cimport _common  # MK_DISPATCH

cnp.import_array()

# The two O(h^2) passes of a projection, written in C so that ``omp simd`` can vectorise the float reduction
# (GCC does not reassociate a float sum on its own), with AVX2/FMA clones chosen at load time (MK_DISPATCH).
cdef extern from *:
    """
    /* u = M v and return v'M v, reading the upper triangle of the row-major h x h matrix M once. */
    MK_DISPATCH static double itml_symv_upper(const double *restrict M, const double *restrict v,
                                                double *restrict u, Py_ssize_t h) {
        for (Py_ssize_t i = 0; i < h; ++i) u[i] = 0.0;
        for (Py_ssize_t i = 0; i < h; ++i) {
            const double *restrict row = M + i * h;
            const double vi = v[i];
            double s = row[i] * vi;
            #pragma omp simd reduction(+:s)
            for (Py_ssize_t j = i + 1; j < h; ++j) {
                s += row[j] * v[j];
                u[j] += row[j] * vi;
            }
            u[i] += s;
        }
        double r = 0.0;
        #pragma omp simd reduction(+:r)
        for (Py_ssize_t i = 0; i < h; ++i) r += u[i] * v[i];
        return r;
    }
    /* The previous projection's update and this one's product in one pass over the triangle:
       M += c p p' (upper triangle), then u = M v and return v'M v. Each projection then reads and writes M
       once instead of reading it (u = M v) and reading and writing it again (the update). */
    MK_DISPATCH static double itml_syr_symv_upper(double *restrict M, const double *restrict p, double c,
                                                    const double *restrict v, double *restrict u,
                                                    Py_ssize_t h) {
        for (Py_ssize_t i = 0; i < h; ++i) u[i] = 0.0;
        for (Py_ssize_t i = 0; i < h; ++i) {
            double *restrict row = M + i * h;
            const double vi = v[i], ci = c * p[i];
            row[i] += ci * p[i];
            double s = row[i] * vi;
            #pragma omp simd reduction(+:s)
            for (Py_ssize_t j = i + 1; j < h; ++j) {
                const double mij = row[j] + ci * p[j];
                row[j] = mij;
                s += mij * v[j];
                u[j] += mij * vi;
            }
            u[i] += s;
        }
        double r = 0.0;
        #pragma omp simd reduction(+:r)
        for (Py_ssize_t i = 0; i < h; ++i) r += u[i] * v[i];
        return r;
    }
    /* Upper triangle of M += c u u'. */
    MK_DISPATCH static void itml_syr_upper(double *restrict M, const double *restrict u, double c,
                                             Py_ssize_t h) {
        for (Py_ssize_t i = 0; i < h; ++i) {
            double *restrict row = M + i * h;
            const double ci = c * u[i];
            #pragma omp simd
            for (Py_ssize_t j = i; j < h; ++j) row[j] += ci * u[j];
        }
    }
    """
    double itml_symv_upper(const double *M, const double *v, double *u, Py_ssize_t h) nogil
    double itml_syr_symv_upper(double *M, const double *p, double c, const double *v, double *u, Py_ssize_t h) nogil
    void itml_syr_upper(double *M, const double *u, double c, Py_ssize_t h) nogil


cdef inline void _diff(const double[:, ::1] X, Py_ssize_t i, Py_ssize_t j, double *out) noexcept nogil:
    cdef Py_ssize_t f
    for f in range(X.shape[1]):
        out[f] = X[i, f] - X[j, f]


cdef inline double _product(double[:, ::1] A, const double *pend, double *c, const double *v, double *u,
                            Py_ssize_t h) noexcept nogil:
    """``u = A v``, returning ``v'A v``, after the pending update ``A += c pend pend'`` (then cleared)."""
    cdef double cc = c[0]
    if cc != 0.0:
        c[0] = 0.0
        return itml_syr_symv_upper(&A[0, 0], pend, cc, v, u, h)
    return itml_symv_upper(&A[0, 0], v, u, h)


cdef void _mirror_upper(double[:, ::1] A) noexcept nogil:
    cdef Py_ssize_t i, j
    for i in range(A.shape[0]):
        for j in range(i):
            A[i, j] = A[j, i]


def bregman_projections(
    const double[:, ::1] X,
    const double[:, ::1] Z,
    const cnp.intp_t[:, ::1] pairs,
    const double[::1] y,
    const unsigned char[::1] privileged,
    double[::1] xi,
    double[:, ::1] M,
    double[:, ::1] P,
    double[::1] nu,
    double[::1] beta,
    double gamma,
    double lam,
    bint dual_correction,
    double tol,
    Py_ssize_t max_iter,
):
    """Sweep the pairs in order until the duals settle; update the state in place.

    Parameters
    ----------
    X : ndarray of shape (n, h)
        Main-view samples; pair ``k`` is ``X[pairs[k, 0]] - X[pairs[k, 1]]``.
    Z : ndarray of shape (n, g)
        Privileged-view samples (``g = 0`` when no pair is privileged).
    pairs : ndarray of shape (m, 2), intp
        Row indices into ``X`` and ``Z``; every difference is non-zero (checked by the caller).
    y : ndarray of shape (m,)
        +1 for similar, -1 for dissimilar pairs.
    privileged : ndarray of shape (m,), uint8
        1: ITML+ step (Proposition 11); 0: ITML step (Davis et al., Algorithm 1).
    xi, M, P, nu, beta : ndarrays, modified in place
        The state: slacks, main metric (h, h), privileged metric (g, g), cumulative duals. ``M`` and ``P``
        are symmetric on input and on output. Start from ``xi = xi0``, ``M = M0``, ``P = P0``,
        ``nu = beta = 0``; a later call continues where an earlier one stopped.
    gamma, lam : float
        Weight of the slack loss and of the privileged LogDet term (``lam`` unused without privileged pairs).
    dual_correction : bool
        True: Bregman's method with corrections (the step of an inequality may give back its multiplier,
        ``nu_k >= 0``), which converges to the minimiser. False: Algorithm 6 as printed, ``alpha =
        max{0, .}`` for privileged pairs (ITML steps always keep the correction, as Davis et al.).
    tol : float
        Stop when ``||d_new - d_old||_1 / (||d_new||_2 + ||d_old||_2) < tol`` after a sweep, ``d`` the vector of
        all cumulative duals (``nu``, and ``beta`` of privileged pairs), or when every dual is still zero
        after a sweep (no constraint was ever violated: the prior is the solution).
    max_iter : int
        Maximum number of sweeps.

    Returns
    -------
    n_sweeps : int
    conv : float
        The last value of the stopping criterion (0.0 when no dual ever moved).
    """
    cdef Py_ssize_t m = pairs.shape[0], h = X.shape[1], g = Z.shape[1]
    if y.shape[0] != m or privileged.shape[0] != m or xi.shape[0] != m or nu.shape[0] != m or beta.shape[0] != m:
        raise ValueError("per-pair arrays must all have one entry per pair")
    if M.shape[0] != h or M.shape[1] != h or P.shape[0] != g or P.shape[1] != g or Z.shape[0] != X.shape[0] and g:
        raise ValueError("M must be (h, h) and P (g, g) for X (n, h) and Z (n, g)")
    cdef Py_ssize_t k0
    for k0 in range(m):
        if pairs[k0, 0] < 0 or pairs[k0, 0] >= X.shape[0] or pairs[k0, 1] < 0 or pairs[k0, 1] >= X.shape[0]:
            raise ValueError(f"pair {k0} indexes outside the {X.shape[0]} samples")
        if privileged[k0] and g == 0:
            raise ValueError(f"pair {k0} is marked privileged but Z has no columns")
    cdef double[::1] v = np.empty(h), w = np.empty(max(g, 1))
    # two product buffers per metric: this projection's u = M v, and the previous one's, whose rank-one update
    # of M is still pending (applied by the next product, fused into its pass over M)
    cdef double[::1] ubuf = np.empty(2 * h), qbuf = np.empty(2 * max(g, 1))
    cdef double *u = &ubuf[0]
    cdef double *u_pend = &ubuf[h]
    cdef double *q = &qbuf[0]
    cdef double *q_pend = &qbuf[max(g, 1)]
    cdef double *tmp
    cdef double c_m = 0.0, c_p = 0.0
    cdef double[::1] nu_old = np.array(nu, copy=True), beta_old = np.array(beta, copy=True)
    cdef Py_ssize_t sweep = 0, k
    cdef double r, s, x, yk, a, a_star, lower, b, diff, norm_new, norm_old, conv = np.inf
    cdef double lg = lam + gamma, gp = gamma / (gamma + 1.0)
    with nogil:
        while sweep < max_iter:
            for k in range(m):
                yk = y[k]
                x = xi[k]
                _diff(X, pairs[k, 0], pairs[k, 1], &v[0])
                r = _product(M, u_pend, &c_m, &v[0], u, h)
                if not r > 0.0:  # only after an underflow: the caller rejects zero differences
                    continue
                if privileged[k]:
                    _diff(Z, pairs[k, 0], pairs[k, 1], &w[0])
                    s = _product(P, q_pend, &c_p, &w[0], q, g)
                    if not s > 0.0:
                        continue
                    # (5.23) before clipping, then (5.24) at the clipped alpha
                    a_star = yk * (gamma / x + lam / s - lg / r) / (lg + 1.0)
                    lower = -nu[k] if dual_correction else 0.0
                    a = a_star if a_star > lower else lower
                    b = lam / lg * (gamma / s - gamma / x + yk * a)
                    nu[k] += a
                    beta[k] += b
                    if b != 0.0:  # (5.12), pending
                        c_p = b / (lam - b * s)
                        tmp = q_pend
                        q_pend = q
                        q = tmp
                    xi[k] = lam * s / (lam - s * b)  # (5.13)
                else:
                    # Davis et al.: projection onto d_M = xi with the slack, or give back the multiplier
                    a_star = yk * gp * (1.0 / x - 1.0 / r)
                    a = a_star if a_star > -nu[k] else -nu[k]
                    nu[k] += a
                    xi[k] = 1.0 / (1.0 / x - yk * a / gamma)
                if a != 0.0:  # (5.11) / Davis et al.'s update of M, pending
                    c_m = -yk * a / (1.0 + yk * a * r)
                    tmp = u_pend
                    u_pend = u
                    u = tmp
            sweep += 1
            diff = 0.0
            norm_new = 0.0
            norm_old = 0.0
            for k in range(m):
                diff += fabs(nu[k] - nu_old[k]) + fabs(beta[k] - beta_old[k])
                norm_new += nu[k] * nu[k] + beta[k] * beta[k]
                norm_old += nu_old[k] * nu_old[k] + beta_old[k] * beta_old[k]
                nu_old[k] = nu[k]
                beta_old[k] = beta[k]
            if norm_new == 0.0:  # nothing was ever violated: the prior is the solution
                conv = 0.0
                break
            conv = diff / (sqrt(norm_new) + sqrt(norm_old))
            if conv < tol:
                break
            with gil:
                PyErr_CheckSignals()  # Ctrl-C stops a long fit (the pending updates are lost with the fit)
        if c_m != 0.0:
            itml_syr_upper(&M[0, 0], u_pend, c_m, h)
        if c_p != 0.0:
            itml_syr_upper(&P[0, 0], q_pend, c_p, g)
        _mirror_upper(M)
        _mirror_upper(P)
    return sweep, conv
