# cython: language_level=3
"""One sweep of the multi-label ranking block coordinate ascent (MLR-L1 and MLR-GL).

The same steps as the numpy reference ``multikernel.ranking.solver._numpy_sweep`` (see that module for the
mathematics): for each sample of ``order``, the block's step from the scores ``F = K S`` kept up to date,
then ``F[:, k] += K[:, i] * delta_k`` over the labels whose coefficient changed (``F`` is stored transposed).  Only a changed block reads
its kernel row: from the dense kernel (float32 or float64, C order; row ``i`` is column ``i`` since the kernel
is symmetric) or, for a lazy kernel, from the Python callable ``rows(i)`` (an LRU cache of rows).

MLR-L1's step projects ``v = S_i + G_i / K_ii`` on ``{box, sum = 0}`` (``_common.project_box_sum``): the root of
the piecewise linear ``sum_k clip(v_k + lam, lo_k, hi_k)`` is found by shrinking a bracket of breakpoints
(expected O(m); the numpy reference sorts them).  MLR-GL's step is Lemma 2's closed form (O(a b)).
"""

from cython cimport floating
from libc.math cimport NAN, fabs, sqrt
from libc.stdlib cimport free, malloc

cimport _common  # MK_DISPATCH
from _common cimport project_box_sum

import numpy as np


# The update of the scores, in C so that the compiler knows the rows do not overlap (``restrict``) and clones it
# for AVX2 (MK_DISPATCH).  Without contraction into FMAs: every entry gets the same single product and sum as the
# numpy reference's axpy, whatever the CPU.
cdef extern from *:
    """
    #define MK_ADD_OUTER(NAME, T)                                                                           \
    MK_DISPATCH __attribute__((optimize("fp-contract=off")))                                               \
    static void NAME(double *restrict F0, double *restrict F1, double *restrict F2, double *restrict F3,   \
                     const T *restrict col, double d0, double d1, double d2, double d3, int count,          \
                     Py_ssize_t n) {                                                                        \
        if (count == 4) {                                                                                   \
            _Pragma("omp simd")                                                                             \
            for (Py_ssize_t j = 0; j < n; ++j) {                                                            \
                const double c = col[j];                                                                    \
                F0[j] += d0 * c; F1[j] += d1 * c; F2[j] += d2 * c; F3[j] += d3 * c;                         \
            }                                                                                               \
        } else {                                                                                            \
            _Pragma("omp simd")                                                                             \
            for (Py_ssize_t j = 0; j < n; ++j) F0[j] += d0 * (double)col[j];                                \
        }                                                                                                   \
    }
    MK_ADD_OUTER(mk_add_outer_f32, float)
    MK_ADD_OUTER(mk_add_outer_f64, double)
    """
    void mk_add_outer_f32(double *F0, double *F1, double *F2, double *F3, const float *col, double d0, double d1,
                          double d2, double d3, int count, Py_ssize_t n) nogil
    void mk_add_outer_f64(double *F0, double *F1, double *F2, double *F3, const double *col, double d0,
                          double d1, double d2, double d3, int count, Py_ssize_t n) nogil


cdef void _add_outer(double* Ft, Py_ssize_t n, const floating* col, const Py_ssize_t* nz, const double* delta,
                     Py_ssize_t n_nz) noexcept nogil:
    """``Ft[k, :] += delta_k * col`` for the changed labels ``k`` (Ft is (m, n), C order: contiguous axpys).

    Four labels at a time: each kernel value is loaded once for four rows (the update is bound by memory
    traffic); every entry gets the same single product and sum as one axpy per label, so the result is the same.
    """
    cdef Py_ssize_t t = 0
    cdef int count
    while t < n_nz:
        count = 4 if t + 4 <= n_nz else 1
        if floating is float:
            mk_add_outer_f32(Ft + nz[t] * n, Ft + nz[t + 1] * n if count == 4 else NULL,
                             Ft + nz[t + 2] * n if count == 4 else NULL, Ft + nz[t + 3] * n if count == 4 else NULL,
                             col, delta[t], delta[t + 1] if count == 4 else 0.0,
                             delta[t + 2] if count == 4 else 0.0, delta[t + 3] if count == 4 else 0.0, count, n)
        else:
            mk_add_outer_f64(Ft + nz[t] * n, Ft + nz[t + 1] * n if count == 4 else NULL,
                             Ft + nz[t + 2] * n if count == 4 else NULL, Ft + nz[t + 3] * n if count == 4 else NULL,
                             col, delta[t], delta[t + 1] if count == 4 else 0.0,
                             delta[t + 2] if count == 4 else 0.0, delta[t + 3] if count == 4 else 0.0, count, n)
        t += count


cdef tuple _sweep(const floating[:, ::1] K, object rows, double[:, ::1] S, double[:, ::1] Ft,
                  const double[:, ::1] Y, const double[::1] diag, const double[::1] step_diag, double C, double h,
                  double eta, double viol_scale, const Py_ssize_t[::1] order, double tol, bint force, bint gl,
                  double[::1] gamma_sq):
    cdef Py_ssize_t n = S.shape[0], m = S.shape[1]  # S is (n, m), Ft is (m, n)
    cdef Py_ssize_t t, i, k, r, c, a, b, mo, n_nz, n_updates = 0
    cdef bint lazy = rows is not None
    cdef double max_viol = 0.0, viol, top, bottom, g_r, hk, norm2, denom, colsum, gsq, kii, y, s_ik, gk, dii
    cdef double* buf = <double*> malloc(9 * m * sizeof(double))
    cdef Py_ssize_t* ibuf = <Py_ssize_t*> malloc(5 * m * sizeof(Py_ssize_t))
    cdef double[::1] lazy_row
    cdef const double* row_d
    if buf == NULL or ibuf == NULL:
        free(buf)
        free(ibuf)
        raise MemoryError()
    cdef double* G = buf
    cdef double* v = buf + m
    cdef double* lo = buf + 2 * m
    cdef double* hi = buf + 3 * m
    cdef double* new = buf + 4 * m
    cdef double* starts = buf + 5 * m
    cdef double* ends = buf + 6 * m
    cdef double* delta = buf + 7 * m
    cdef double* g = buf + 8 * m
    cdef Py_ssize_t* obs = ibuf            # observed labels of the block (compact position -> label)
    cdef Py_ssize_t* nz = ibuf + m         # labels whose coefficient changed
    cdef Py_ssize_t* rel = ibuf + 2 * m    # compact positions of the relevant labels
    cdef Py_ssize_t* irr = ibuf + 3 * m    # compact positions of the irrelevant labels
    cdef Py_ssize_t* live = ibuf + 4 * m   # the projection's undetermined labels
    try:
        for t in range(order.shape[0]):
            i = order[t]
            kii = step_diag[i]
            if not gl:
                # One pass over the labels: the observed ones, their gradient, bounds and the block's violation
                # (every block is visited each sweep, most without an update: this pass is the visit's cost).
                mo = 0
                a = 0
                top = -1e300
                bottom = 1e300
                dii = (1.0 - h) * diag[i]
                for k in range(m):
                    y = Y[i, k]
                    if y == 0.0:
                        continue
                    s_ik = S[i, k]
                    gk = y - (h * Ft[k, i] + dii * s_ik)
                    obs[mo] = k
                    G[mo] = gk
                    if y > 0.0:
                        lo[mo] = 0.0
                        hi[mo] = C
                        a += 1
                    else:
                        lo[mo] = -C
                        hi[mo] = 0.0
                    if s_ik < hi[mo] and gk > top:
                        top = gk
                    if s_ik > lo[mo] and gk < bottom:
                        bottom = gk
                    mo += 1
                if a == 0 or a == mo:
                    continue
                viol = top - bottom if (top > -1e300 and bottom < 1e300 and top > bottom) else 0.0
                if viol > max_viol:
                    max_viol = viol
                if viol <= tol and not force:
                    continue
                # A zero diagonal (floored in step_diag) is a zero kernel column: the block's problem is linear in
                # S_i with gradient Ysign_i, and projecting 2 C Ysign_i gives its minimum-norm solution.
                for r in range(mo):
                    v[r] = 2.0 * C * Y[i, obs[r]] if step_diag[i] > diag[i] else S[i, obs[r]] + G[r] / kii
                project_box_sum(v, lo, hi, mo, 0.0, new, starts, ends, live,
                                NAN if step_diag[i] > diag[i] or viol <= 0.0 else -0.5 * (top + bottom) / kii)
            else:
                mo = 0
                a = 0
                b = 0
                for k in range(m):
                    if Y[i, k] != 0.0:
                        obs[mo] = k
                        if Y[i, k] > 0.0:
                            rel[a] = mo
                            a += 1
                        else:
                            irr[b] = mo
                            b += 1
                        mo += 1
                if a == 0 or b == 0:
                    continue
                for r in range(mo):
                    k = obs[r]
                    g[r] = Ft[k, i] - diag[i] * S[i, k]
                    new[r] = 0.0
                gsq = 0.0
                for c in range(b):
                    g_r = g[irr[c]]
                    norm2 = 0.0
                    for r in range(a):
                        hk = 0.5 * (1.0 - g[rel[r]] + g_r)
                        if hk > 0.0:
                            norm2 += hk * hk
                    norm2 = sqrt(norm2)
                    if norm2 > C * kii * eta:
                        denom = norm2
                    else:
                        denom = C * kii * eta
                    colsum = 0.0
                    for r in range(a):
                        hk = 0.5 * (1.0 - g[rel[r]] + g_r)
                        if hk > 0.0:
                            hk = hk / denom
                            new[rel[r]] += C * hk
                            colsum += hk
                            gsq += hk * hk
                    new[irr[c]] = -C * colsum
                viol = 0.0
                for r in range(mo):
                    top = fabs(new[r] - S[i, obs[r]])
                    if top > viol:
                        viol = top
                viol *= viol_scale
                if viol > max_viol:
                    max_viol = viol
                if viol <= tol and not force:
                    continue
                gamma_sq[i] = gsq
            n_nz = 0
            for r in range(mo):
                k = obs[r]
                if new[r] != S[i, k]:
                    nz[n_nz] = k
                    delta[n_nz] = new[r] - S[i, k]
                    n_nz += 1
                    S[i, k] = new[r]
            if n_nz == 0:
                continue
            if lazy:
                lazy_row = rows(i)
                row_d = &lazy_row[0]
                _add_outer(&Ft[0, 0], n, row_d, nz, delta, n_nz)
            else:
                _add_outer(&Ft[0, 0], n, &K[i, 0], nz, delta, n_nz)
            n_updates += 1
    finally:
        free(buf)
        free(ibuf)
    return max_viol, n_updates


def sweep(K, rows, double[:, ::1] S, double[:, ::1] Ft, const double[:, ::1] Y, const double[::1] diag,
          const double[::1] step_diag, double C, double h, double eta, double viol_scale, const Py_ssize_t[::1] order,
          double tol,
          bint force, bint gl, double[::1] gamma_sq):
    """One sweep in ``order``; ``K`` a C-ordered float32/float64 kernel, or ``None`` with ``rows(i)`` giving row i.

    ``S`` (n, m) are the coefficients and ``Ft`` (m, n) the transposed scores ``(K S)'``: each label's scores are
    contiguous, so that a block update adds one contiguous row per changed label.  Updates ``S``, ``Ft`` (and ``gamma_sq`` for MLR-GL) in place; returns (largest violation, number of updates).
    """
    if K is None:
        return _sweep[double](np.zeros((1, 1)), rows, S, Ft, Y, diag, step_diag, C, h, eta, viol_scale, order, tol, force,
                              gl, gamma_sq)
    if K.dtype == np.float32:
        return _sweep[float](K, None, S, Ft, Y, diag, step_diag, C, h, eta, viol_scale, order, tol, force, gl,
                             gamma_sq)
    return _sweep[double](K, None, S, Ft, Y, diag, step_diag, C, h, eta, viol_scale, order, tol, force, gl,
                              gamma_sq)
