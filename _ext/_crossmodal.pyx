# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Class-wise block SMO of Kobayashi (IJCV 2014), section 5.2.1, for the cross-modal sub-problem (52).

One modality, ``n`` samples, ``w`` classes, kernel ``K`` (``n x n``), learnt ``S`` (``w x w``, PSD)::

    maximise   sum_{i,c} alpha_ic - 1/2 tr(S A' K A),   A_ic = y_ic alpha_ic
    subject to 0 <= alpha_ic <= C,   sum_i y_ic alpha_ic = 0 for every class c.

With the other blocks fixed, block ``c`` is a C-SVC dual with kernel ``S_cc K`` and the linear term
``p_i = y_ic sum_{d != c} S_cd (K A)_id - 1`` (eqs. 54-56).  The solver keeps ``F = K A`` (``n x w``), so the
gradient of the minimised objective of block ``c`` is ``g_i = y_ic (F S)_ic - 1`` for every block at O(n w)
cost; it picks the block with the largest KKT gap (eq. 57, libsvm's ``m(alpha) - M(alpha)``), solves it by
SMO with the second-order working-set selection of Fan, Chen and Lin (2005), updating ``F[:, c]`` with the
two kernel rows each step reads anyway, and stops when every block's gap is below ``tol``.

``K`` is float32 or float64 (fused), C-contiguous and symmetric (row ``i`` is column ``i``); the loops run
without the GIL.
"""

from cython cimport floating
from libc.math cimport INFINITY
from libc.stdlib cimport free, malloc

from _common cimport TAU, in_low, in_up  # TAU: a block with S_cc = 0 is a linear program


cdef void _block_gradient(const double[:, ::1] F, const double[:, ::1] S, const double[:, ::1] Y,
                          Py_ssize_t c, double* g) noexcept nogil:
    cdef Py_ssize_t i, d, n = F.shape[0], w = F.shape[1]
    cdef double s
    for i in range(n):
        s = 0.0
        for d in range(w):
            s = s + F[i, d] * S[d, c]
        g[i] = Y[i, c] * s - 1.0


cdef double _block_gap(const double* g, const double[:, ::1] alpha, const double[:, ::1] Y, Py_ssize_t c,
                       double C) noexcept nogil:
    """``max_{I_up} -y g - min_{I_low} -y g`` (eq. 57); 0 when one side is empty."""
    cdef Py_ssize_t i, n = alpha.shape[0]
    cdef double m_up = -INFINITY, m_low = INFINITY, v
    for i in range(n):
        v = -Y[i, c] * g[i]
        if in_up(Y[i, c], alpha[i, c], 0.0, C) and v > m_up:
            m_up = v
        if in_low(Y[i, c], alpha[i, c], 0.0, C) and v < m_low:
            m_low = v
    if m_up == -INFINITY or m_low == INFINITY:
        return 0.0
    return m_up - m_low


cdef long _solve_block(const floating[:, ::1] K, double[:, ::1] alpha, double[:, ::1] F,
                       const double[:, ::1] Y, double s, Py_ssize_t c, double C, double tol, long budget,
                       double* g) noexcept nogil:
    """SMO on block ``c`` (gradient ``g`` on entry, kept up to date); returns the number of steps."""
    cdef Py_ssize_t n = alpha.shape[0], t, i, j
    cdef long steps = 0
    cdef double g_max, g_max2, v, b, quad, obj, obj_min, yi, yj, ai, aj, old_i, old_j, delta, diff, total
    cdef double kii, dF, di, dj
    while steps < budget:
        # i: the most violating index of I_up
        g_max = -INFINITY
        i = -1
        for t in range(n):
            if in_up(Y[t, c], alpha[t, c], 0.0, C):
                v = -Y[t, c] * g[t]
                if v >= g_max:
                    g_max = v
                    i = t
        if i < 0:
            break
        # j: the second-order choice within I_low (Fan, Chen and Lin 2005, WSS 2)
        kii = K[i, i]
        g_max2 = -INFINITY
        j = -1
        obj_min = INFINITY
        for t in range(n):
            if in_low(Y[t, c], alpha[t, c], 0.0, C):
                v = Y[t, c] * g[t]
                if v >= g_max2:
                    g_max2 = v
                b = g_max + v
                if b > 0:
                    quad = s * (kii + K[t, t] - 2.0 * K[i, t])
                    if quad <= 0:
                        quad = TAU
                    obj = -b * b / quad
                    if obj <= obj_min:
                        obj_min = obj
                        j = t
        if g_max + g_max2 < tol or j < 0:
            break
        yi = Y[i, c]
        yj = Y[j, c]
        old_i = alpha[i, c]
        old_j = alpha[j, c]
        quad = s * (kii + K[j, j] - 2.0 * K[i, j])
        if quad <= 0:
            quad = TAU
        ai = old_i
        aj = old_j
        if yi != yj:  # libsvm's two-variable step, clipped to the box along the constraint line
            delta = (-g[i] - g[j]) / quad
            diff = ai - aj
            ai = ai + delta
            aj = aj + delta
            if diff > 0:
                if aj < 0:
                    aj = 0.0
                    ai = diff
            else:
                if ai < 0:
                    ai = 0.0
                    aj = -diff
            if diff > 0:
                if ai > C:
                    ai = C
                    aj = C - diff
            else:
                if aj > C:
                    aj = C
                    ai = C + diff
        else:
            delta = (g[i] - g[j]) / quad
            total = ai + aj
            ai = ai - delta
            aj = aj + delta
            if total > C:
                if ai > C:
                    ai = C
                    aj = total - C
            else:
                if aj < 0:
                    aj = 0.0
                    ai = total
            if total > C:
                if aj > C:
                    aj = C
                    ai = total - C
            else:
                if ai < 0:
                    ai = 0.0
                    aj = total
        alpha[i, c] = ai
        alpha[j, c] = aj
        di = yi * (ai - old_i)
        dj = yj * (aj - old_j)
        # F[:, c] += K[:, i] di + K[:, j] dj, and the block gradient moves by y S_cc dF
        for t in range(n):
            dF = K[i, t] * di + K[j, t] * dj
            F[t, c] = F[t, c] + dF
            g[t] = g[t] + Y[t, c] * s * dF
        steps += 1
    return steps


def block_smo(const floating[:, ::1] K, const double[:, ::1] Y, const double[:, ::1] S, double[:, ::1] alpha,
              double[:, ::1] F, double C, double tol, long max_iter):
    """Solve sub-problem (52) of one modality in place (``alpha`` and ``F = K A``, both ``(n, w)``).

    ``alpha`` must be feasible on entry (zeros are) and ``F`` must equal ``K (Y * alpha)``.  Returns a dict:
    ``n_iter`` (SMO steps), ``n_blocks`` (block solves), ``gaps`` (the final KKT gap of every block, at least 0)
    and ``hit_max_iter``.
    """
    cdef Py_ssize_t n = K.shape[0], w = S.shape[0], c, best
    if K.shape[1] != n or Y.shape[0] != n or alpha.shape[0] != n or F.shape[0] != n:
        raise ValueError("K, Y, alpha and F must have n rows (K square)")
    if S.shape[1] != w or Y.shape[1] != w or alpha.shape[1] != w or F.shape[1] != w:
        raise ValueError("S must be (w, w) and Y, alpha, F (n, w)")
    cdef double* g = <double*> malloc((n + w) * sizeof(double))
    if g == NULL:
        raise MemoryError()
    cdef double* gaps = g + n
    cdef long total = 0, n_blocks = 0, steps
    cdef double worst
    cdef bint hit = False
    try:
        with nogil:
            while True:
                best = -1
                worst = tol
                for c in range(w):
                    _block_gradient(F, S, Y, c, g)
                    gaps[c] = _block_gap(g, alpha, Y, c, C)
                    if gaps[c] >= worst:
                        worst = gaps[c]
                        best = c
                if best < 0:
                    break
                if total >= max_iter:
                    hit = True
                    break
                _block_gradient(F, S, Y, best, g)
                # One block's solve takes at most 10 n steps before the blocks' gaps are compared again: on a float32
                # kernel a block's gap can hover above tol (rounding noise), and an unbounded solve of that block
                # spent the whole max_iter there while two other blocks kept gaps of 2.
                steps = _solve_block(K, alpha, F, Y, S[best, best], best, C, tol,
                                     min(max_iter - total, 10 * n), g)
                # a block that cannot move still costs a step, so that max_iter always ends the loop
                total += steps if steps > 0 else 1
                n_blocks += 1
        # m - M is negative where a block's KKT conditions hold with room to spare: its gap is then 0
        return {"n_iter": int(total), "n_blocks": int(n_blocks), "gaps": [max(gaps[c], 0.0) for c in range(w)],
                "hit_max_iter": bool(hit)}
    finally:
        free(g)
