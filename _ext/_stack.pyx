# cython: language_level=3
"""Fused operations over a dense kernel stack ``K`` of shape (M, n_rows, n_cols).

One source serves float32 and float64 stacks (Cython fused types); the output is always float64 so the
SVM solver downstream works in double precision whatever the storage precision of the stack.

The ``*_gather`` variants read ``K[m, rows[a], cols[b]]`` through index arrays: a row/column subset of a
stack (a cross-validation fold) then costs no copy of the stack.
"""

import numpy as np

from cython cimport floating
from cython.parallel cimport prange

cimport _common  # MK_DISPATCH: AVX2 + FMA clones of the hot loops, chosen at load time

# The dot products are written in C so that ``omp simd`` may vectorize their float reductions (GCC does
# not reassociate a float sum on its own).  The float32 variant widens each element to double first:
# the stack's storage precision must not become the precision of the sums.
cdef extern from *:
    """
    MK_DISPATCH static double mk_dot_f64(const double *k, const double *v, Py_ssize_t n) {
        double s = 0.0;
        #pragma omp simd reduction(+:s)
        for (Py_ssize_t j = 0; j < n; ++j) s += k[j] * v[j];
        return s;
    }
    MK_DISPATCH static double mk_dot_f32(const float *k, const double *v, Py_ssize_t n) {
        double s = 0.0;
        #pragma omp simd reduction(+:s)
        for (Py_ssize_t j = 0; j < n; ++j) s += (double)k[j] * v[j];
        return s;
    }
    """
    double mk_dot_f64(const double *k, const double *v, Py_ssize_t n) nogil
    double mk_dot_f32(const float *k, const double *v, Py_ssize_t n) nogil

# Gathered dot products sum_b row[idx[b]] * vals[b]: the support's entries of one kernel row.
cdef extern from *:
    """
    MK_DISPATCH static double mk_gdot_f64(const double *row, const Py_ssize_t *idx, const double *vals,
                                     Py_ssize_t s) {
        double acc = 0.0;
        #pragma omp simd reduction(+:acc)
        for (Py_ssize_t b = 0; b < s; ++b) acc += row[idx[b]] * vals[b];
        return acc;
    }
    MK_DISPATCH static double mk_gdot_f32(const float *row, const Py_ssize_t *idx, const double *vals,
                                     Py_ssize_t s) {
        double acc = 0.0;
        #pragma omp simd reduction(+:acc)
        for (Py_ssize_t b = 0; b < s; ++b) acc += (double)row[idx[b]] * vals[b];
        return acc;
    }
    """
    double mk_gdot_f64(const double *row, const Py_ssize_t *idx, const double *vals, Py_ssize_t s) nogil
    double mk_gdot_f32(const float *row, const Py_ssize_t *idx, const double *vals, Py_ssize_t s) nogil

# out += w_a k_a for up to four kernel rows at once: ``out`` is loaded and stored once per four kernels
# instead of once per kernel; ``restrict`` tells the compiler the rows do not overlap ``out``.
cdef extern from *:
    """
    #define MK_AXPY4(NAME, T)                                                                   \
    MK_DISPATCH static void NAME(double *restrict out, const T *restrict k0, const T *restrict k1,    \
                            const T *restrict k2, const T *restrict k3, double w0, double w1,   \
                            double w2, double w3, int count, int init, Py_ssize_t n) {          \
        if (init) { for (Py_ssize_t j = 0; j < n; ++j) out[j] = 0.0; }                         \
        if (count == 4) {                                                                       \
            _Pragma("omp simd")                                                                 \
            for (Py_ssize_t j = 0; j < n; ++j)                                                  \
                out[j] += w0 * k0[j] + w1 * k1[j] + w2 * k2[j] + w3 * k3[j];                    \
        } else if (count == 3) {                                                                \
            _Pragma("omp simd")                                                                 \
            for (Py_ssize_t j = 0; j < n; ++j) out[j] += w0 * k0[j] + w1 * k1[j] + w2 * k2[j]; \
        } else if (count == 2) {                                                                \
            _Pragma("omp simd")                                                                 \
            for (Py_ssize_t j = 0; j < n; ++j) out[j] += w0 * k0[j] + w1 * k1[j];               \
        } else if (count == 1) {                                                                \
            _Pragma("omp simd")                                                                 \
            for (Py_ssize_t j = 0; j < n; ++j) out[j] += w0 * k0[j];                            \
        }                                                                                       \
    }
    MK_AXPY4(mk_axpy4_f32, float)
    MK_AXPY4(mk_axpy4_f64, double)
    """
    void mk_axpy4_f32(double *out, const float *k0, const float *k1, const float *k2, const float *k3,
                      double w0, double w1, double w2, double w3, int count, int init, Py_ssize_t n) nogil
    void mk_axpy4_f64(double *out, const double *k0, const double *k1, const double *k2,
                      const double *k3, double w0, double w1, double w2, double w3, int count, int init,
                      Py_ssize_t n) nogil

# v' K v over the rows in ``support`` of one kernel K (n x n, row-major), v zero off the support: four
# rows per pass share each load of v and keep four independent sums in flight.
cdef extern from *:
    """
    #define MK_QROWS(NAME, T)                                                                   \
    MK_DISPATCH static double NAME(const T *K, Py_ssize_t n, const Py_ssize_t *support,         \
                                   Py_ssize_t s, const double *v) {                             \
        double acc = 0.0;                                                                       \
        Py_ssize_t a = 0;                                                                       \
        for (; a + 4 <= s; a += 4) {                                                            \
            const T *r0 = K + support[a] * n, *r1 = K + support[a + 1] * n;                     \
            const T *r2 = K + support[a + 2] * n, *r3 = K + support[a + 3] * n;                 \
            double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;                                      \
            _Pragma("omp simd reduction(+:s0,s1,s2,s3)")                                        \
            for (Py_ssize_t j = 0; j < n; ++j) {                                                \
                double vj = v[j];                                                               \
                s0 += (double)r0[j] * vj; s1 += (double)r1[j] * vj;                             \
                s2 += (double)r2[j] * vj; s3 += (double)r3[j] * vj;                             \
            }                                                                                   \
            acc += v[support[a]] * s0 + v[support[a + 1]] * s1 + v[support[a + 2]] * s2         \
                   + v[support[a + 3]] * s3;                                                    \
        }                                                                                       \
        for (; a < s; ++a) {                                                                    \
            const T *r = K + support[a] * n;                                                    \
            double s0 = 0.0;                                                                    \
            _Pragma("omp simd reduction(+:s0)")                                                 \
            for (Py_ssize_t j = 0; j < n; ++j) s0 += (double)r[j] * v[j];                       \
            acc += v[support[a]] * s0;                                                          \
        }                                                                                       \
        return acc;                                                                             \
    }
    MK_QROWS(mk_qrows_f32, float)
    MK_QROWS(mk_qrows_f64, double)

    /* The same for an exactly symmetric K from its upper triangle only (half the bytes): with
       u_i = sum_{j >= i} K_ij v_j, v'Kv = sum_i v_i (2 u_i - K_ii v_i).  Four rows (ascending) read
       from the first one's diagonal; the few entries left of a later row's diagonal are taken back. */
    #define MK_QROWS_UPPER(NAME, T)                                                             \
    MK_DISPATCH static double NAME(const T *K, Py_ssize_t n, const Py_ssize_t *support,         \
                                   Py_ssize_t s, const double *v) {                             \
        double acc = 0.0;                                                                       \
        Py_ssize_t a = 0;                                                                       \
        for (; a + 4 <= s; a += 4) {                                                            \
            Py_ssize_t i[4] = {support[a], support[a + 1], support[a + 2], support[a + 3]};     \
            const T *r0 = K + i[0] * n, *r1 = K + i[1] * n, *r2 = K + i[2] * n, *r3 = K + i[3] * n; \
            Py_ssize_t c = i[0];                                                                \
            double u[4] = {0.0, 0.0, 0.0, 0.0};                                                 \
            double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;                                      \
            _Pragma("omp simd reduction(+:s0,s1,s2,s3)")                                        \
            for (Py_ssize_t j = c; j < n; ++j) {                                                \
                double vj = v[j];                                                               \
                s0 += (double)r0[j] * vj; s1 += (double)r1[j] * vj;                             \
                s2 += (double)r2[j] * vj; s3 += (double)r3[j] * vj;                             \
            }                                                                                   \
            u[0] = s0; u[1] = s1; u[2] = s2; u[3] = s3;                                         \
            const T *rows[4] = {r0, r1, r2, r3};                                                \
            for (int b = 0; b < 4; ++b) {                                                       \
                for (Py_ssize_t j = c; j < i[b]; ++j) u[b] -= (double)rows[b][j] * v[j];        \
                double vi = v[i[b]];                                                            \
                acc += vi * (2.0 * u[b] - (double)rows[b][i[b]] * vi);                          \
            }                                                                                   \
        }                                                                                       \
        for (; a < s; ++a) {                                                                    \
            Py_ssize_t i = support[a];                                                          \
            const T *r = K + i * n;                                                             \
            double s0 = 0.0;                                                                    \
            _Pragma("omp simd reduction(+:s0)")                                                 \
            for (Py_ssize_t j = i; j < n; ++j) s0 += (double)r[j] * v[j];                       \
            acc += v[i] * (2.0 * s0 - (double)r[i] * v[i]);                                     \
        }                                                                                       \
        return acc;                                                                             \
    }
    MK_QROWS_UPPER(mk_qrows_upper_f32, float)
    MK_QROWS_UPPER(mk_qrows_upper_f64, double)
    """
    double mk_qrows_f32(const float *K, Py_ssize_t n, const Py_ssize_t *support, Py_ssize_t s,
                        const double *v) nogil
    double mk_qrows_f64(const double *K, Py_ssize_t n, const Py_ssize_t *support, Py_ssize_t s,
                        const double *v) nogil
    double mk_qrows_upper_f32(const float *K, Py_ssize_t n, const Py_ssize_t *support, Py_ssize_t s,
                              const double *v) nogil
    double mk_qrows_upper_f64(const double *K, Py_ssize_t n, const Py_ssize_t *support, Py_ssize_t s,
                              const double *v) nogil

from multikernel._threads import PARALLEL_MIN_WORK, max_threads

cdef int _MAX_THREADS = max_threads()
cdef Py_ssize_t _PARALLEL_MIN_WORK = PARALLEL_MIN_WORK


cdef inline int _threads(Py_ssize_t work) noexcept nogil:
    return 1 if work < _PARALLEL_MIN_WORK else _MAX_THREADS

cdef inline void _axpy_indexed(double *out, const floating *base, Py_ssize_t stride, const Py_ssize_t *idx,
                               Py_ssize_t count_total, const double *coef, bint init,
                               Py_ssize_t n) noexcept nogil:
    """``out (+)= sum_a coef[idx[a]] * base[idx[a] * stride : + n]``, four rows per pass (``MK_AXPY4``).

    One loop for the combination (rows of several kernels, weighted) and the products (several rows of one
    kernel, weighted by ``v``): both are a weighted sum of indexed rows of the stack.
    """
    cdef Py_ssize_t a, i0, i1, i2, i3
    cdef int count
    for a in range(0, count_total, 4):
        count = <int> min(4, count_total - a)
        i0 = idx[a]
        i1 = idx[a + 1] if count > 1 else i0
        i2 = idx[a + 2] if count > 2 else i0
        i3 = idx[a + 3] if count > 3 else i0
        if floating is float:
            mk_axpy4_f32(out, base + i0 * stride, base + i1 * stride, base + i2 * stride, base + i3 * stride,
                         coef[i0], coef[i1], coef[i2], coef[i3], count, init and a == 0, n)
        else:
            mk_axpy4_f64(out, base + i0 * stride, base + i1 * stride, base + i2 * stride, base + i3 * stride,
                         coef[i0], coef[i1], coef[i2], coef[i3], count, init and a == 0, n)



def combine_dense(const floating[:, :, ::1] K, const double[::1] weights,
                  const Py_ssize_t[::1] active, double[:, ::1] out, bint accumulate=False,
                  bint symmetric=False):
    """out[:] = sum_{m in active} weights[m] * K[m] (rows in parallel, the GIL released); with
    ``accumulate``, ``out +=`` that sum.

    Row-major over ``out``: one output row stays in cache while the active kernels' rows stream past
    it, four kernels per pass, so the stack is read exactly once.  With ``symmetric`` (every kernel is
    exactly symmetric) only the upper triangle is read and summed, and mirrored: half the bytes.
    """
    cdef Py_ssize_t n_rows = K.shape[1], n_cols = K.shape[2], n_active = active.shape[0]
    cdef Py_ssize_t i, j, c0
    cdef int nt = _threads(n_rows * n_cols * max(n_active, 1))
    if n_rows == 0 or n_cols == 0:
        return
    with nogil:
        for i in prange(n_rows, schedule="dynamic", chunksize=16, num_threads=nt):
            c0 = i if symmetric else 0
            if n_active == 0:
                if not accumulate:
                    for j in range(c0, n_cols):
                        out[i, j] = 0.0
                continue
            _axpy_indexed(&out[i, c0], &K[0, i, c0], n_rows * n_cols, &active[0], n_active, &weights[0],
                          not accumulate, n_cols - c0)
        if symmetric:
            for i in prange(n_rows, schedule="static", num_threads=nt):
                for j in range(i):
                    out[i, j] = out[j, i]


def combine_rows(const floating[:, :, ::1] K, const double[::1] weights, const Py_ssize_t[::1] active,
                 const Py_ssize_t[::1] idx, double[:, ::1] out):
    """out[r] = sum_{m in active} weights[m] * K[m, idx[r]]: whole rows of the combined kernel (its columns,
    for symmetric kernels), without forming the rest of it.

    The same kernel order and grouping as :func:`combine_dense`, so a row equals the combined kernel's row
    to the last bit.  Rows in parallel, four kernels per pass over each output row.
    """
    cdef Py_ssize_t n_idx = idx.shape[0], n_cols = K.shape[2], n_active = active.shape[0]
    cdef Py_ssize_t r, i, j
    cdef int nt = _threads(n_idx * n_cols * max(n_active, 1))
    if n_idx == 0 or n_cols == 0:
        return
    with nogil:
        for r in prange(n_idx, schedule="dynamic", chunksize=4, num_threads=nt):
            i = idx[r]
            if n_active == 0:
                for j in range(n_cols):
                    out[r, j] = 0.0
                continue
            _axpy_indexed(&out[r, 0], &K[0, i, 0], K.shape[1] * n_cols, &active[0], n_active, &weights[0],
                          True, n_cols)


def products_dense(const floating[:, :, ::1] K, const double[::1] v, const Py_ssize_t[::1] rows,
                   const Py_ssize_t[::1] kernels, double[:, ::1] out):
    """out[t] = sum_{j in rows} v[j] * K[m, j] for m = kernels[t]: the products ``K_m v`` of a symmetric
    stack for a ``v`` that is zero off ``rows``, reading only those rows (whole, contiguous).

    From them the quadratic forms are ``v'K_m v = v'out[t]`` and, for any weights, the combined kernel's
    product ``K(mu) v = sum_t mu_m out[t]`` without reading the stack again.  Kernels in parallel; four rows
    per pass over each output vector, which stays in cache.
    """
    cdef Py_ssize_t T = kernels.shape[0], n = K.shape[2], s = rows.shape[0]
    cdef Py_ssize_t t, j, m
    cdef int nt = _threads(T * s * n)
    if n == 0:
        return
    with nogil:
        for t in prange(T, schedule="dynamic", num_threads=nt):
            m = kernels[t]
            if s == 0:
                for j in range(n):
                    out[t, j] = 0.0
                continue
            _axpy_indexed(&out[t, 0], &K[m, 0, 0], n, &rows[0], s, &v[0], True, n)


def combine_gather(const floating[:, :, ::1] K, const double[::1] weights, const Py_ssize_t[::1] active,
                   const Py_ssize_t[::1] rows, const Py_ssize_t[::1] cols, double[:, ::1] out,
                   bint accumulate=False):
    """out[a, b] = sum_{m in active} weights[m] * K[m, rows[a], cols[b]] (``+=`` with ``accumulate``)."""
    cdef Py_ssize_t n_rows = rows.shape[0], n_cols = cols.shape[0], n_active = active.shape[0]
    cdef Py_ssize_t i, j, a, m, r
    cdef double w
    cdef int nt = _threads(n_rows * n_cols * max(n_active, 1))
    with nogil:
        for i in prange(n_rows, schedule="dynamic", chunksize=16, num_threads=nt):
            if not accumulate:
                for j in range(n_cols):
                    out[i, j] = 0.0
            r = rows[i]
            for a in range(n_active):
                m = active[a]
                w = weights[m]
                for j in range(n_cols):
                    out[i, j] += w * K[m, r, cols[j]]


cdef inline double _row_dot(const floating[:, :, ::1] K, Py_ssize_t m, Py_ssize_t i, const double *v,
                            Py_ssize_t n) noexcept nogil:
    if floating is float:
        return mk_dot_f32(&K[m, i, 0], v, n)
    else:
        return mk_dot_f64(&K[m, i, 0], v, n)


cdef inline double _row_gdot(const floating[:, :, ::1] K, Py_ssize_t m, Py_ssize_t i,
                             const Py_ssize_t *idx, const double *vals, Py_ssize_t s) noexcept nogil:
    if floating is float:
        return mk_gdot_f32(&K[m, i, 0], idx, vals, s)
    else:
        return mk_gdot_f64(&K[m, i, 0], idx, vals, s)


def quad_forms_dense(const floating[:, :, ::1] K, const double[::1] v,
                     const Py_ssize_t[::1] support, const Py_ssize_t[::1] kernels, double[::1] out,
                     bint symmetric=False):
    """out[t] = v' K[m] v for m = kernels[t], reading only the rows in ``support`` (the non-zeros of v).

    A sparse support (under a quarter of the columns) reads only the support x support entries, by
    gathered dot products.  A denser one reads the support rows whole, as contiguous vectorised dot
    products with ``v`` (zero off the support): gathers cost about four times as much per entry, so this
    is faster although it reads more; with ``symmetric`` (every kernel exactly symmetric, ``support``
    ascending) only their upper triangles.  Kernels are processed in parallel.
    """
    cdef Py_ssize_t T = kernels.shape[0], n = K.shape[2], s = support.shape[0]
    cdef Py_ssize_t m, t, a
    cdef double acc
    cdef bint contiguous = 4 * s >= n
    cdef int nt = _threads(T * s * s)
    if n == 0 or s == 0:
        out[:] = 0.0
        return
    cdef double[::1] vals = np.ascontiguousarray(np.asarray(v)[np.asarray(support)])
    with nogil:
        for t in prange(T, schedule="dynamic", num_threads=nt):
            m = kernels[t]
            if contiguous and symmetric:
                if floating is float:
                    out[t] = mk_qrows_upper_f32(&K[m, 0, 0], n, &support[0], s, &v[0])
                else:
                    out[t] = mk_qrows_upper_f64(&K[m, 0, 0], n, &support[0], s, &v[0])
                continue
            if contiguous:
                if floating is float:
                    out[t] = mk_qrows_f32(&K[m, 0, 0], n, &support[0], s, &v[0])
                else:
                    out[t] = mk_qrows_f64(&K[m, 0, 0], n, &support[0], s, &v[0])
                continue
            acc = 0.0
            for a in range(s):
                acc = acc + vals[a] * _row_gdot(K, m, support[a], &support[0], &vals[0], s)
            out[t] = acc


def quad_forms_gather(const floating[:, :, ::1] K, const double[::1] vals,
                      const Py_ssize_t[::1] rows, const Py_ssize_t[::1] cols, double[::1] out):
    """out[m] = sum_{a,b} vals[a] vals[b] K[m, rows[a], cols[b]] (the quadratic form of a subset)."""
    cdef Py_ssize_t M = K.shape[0], s = vals.shape[0]
    cdef Py_ssize_t m, a
    cdef double acc
    cdef int nt = _threads(M * s * s)
    if s == 0:
        out[:] = 0.0
        return
    with nogil:
        for m in prange(M, schedule="dynamic", num_threads=nt):
            acc = 0.0
            for a in range(s):
                acc = acc + vals[a] * _row_gdot(K, m, rows[a], &cols[0], &vals[0], s)
            out[m] = acc


def diag_gather(const floating[:, :, ::1] K, const Py_ssize_t[::1] rows, const Py_ssize_t[::1] cols,
                double[:, ::1] out):
    """out[m, a] = K[m, rows[a], cols[a]]: the diagonal of every kernel of a subset, as float64."""
    cdef Py_ssize_t M = K.shape[0], s = rows.shape[0], m, a
    with nogil:
        for m in prange(M, schedule="dynamic", chunksize=16, num_threads=_threads(M * s * 64)):
            for a in range(s):
                out[m, a] = K[m, rows[a], cols[a]]


def bilinear(const double[:, ::1] K, const double[::1] u, const double[::1] v):
    """``u' K v`` for one float64 block (the lazy stack's quadratic forms).

    A BLAS matrix-vector product would wake OpenBLAS's thread pool for a millisecond of work; this loop
    stays on the calling thread unless the block is large.
    """
    cdef Py_ssize_t n = K.shape[0], m = K.shape[1], i
    cdef double acc = 0.0
    cdef int nt = _threads(n * m)
    if n == 0 or m == 0:
        return 0.0
    with nogil:
        for i in prange(n, schedule="dynamic", chunksize=16, num_threads=nt):
            acc += u[i] * mk_dot_f64(&K[i, 0], &v[0], m)
    return acc


def axpy(double[:, ::1] out, const double[:, ::1] K, double w):
    """``out += w * K`` in one pass (the lazy stack's accumulation of a computed block)."""
    cdef Py_ssize_t n = K.shape[0], m = K.shape[1], i
    cdef int nt = _threads(n * m)
    if n == 0 or m == 0:
        return
    with nogil:
        for i in prange(n, schedule="dynamic", chunksize=16, num_threads=nt):
            mk_axpy4_f64(&out[i, 0], &K[i, 0], &K[i, 0], &K[i, 0], &K[i, 0], w, 0.0, 0.0, 0.0, 1, 0, m)



# The checks of a user's training kernels in one read (see check_square_stack), at the speed of that read:
# the rows are streamed whole in panels (vectorized max and sum reductions; a NaN or infinity turns the sum
# of a * 0 into NaN, so finiteness needs no branch per entry), and each panel is compared with the mirrored
# blocks of the panels above it while those are still in cache, 4 x 4 blocks transposed in registers.
cdef extern from *:
    """
    #include <string.h>
    #include <math.h>
    #if defined(__GNUC__) || defined(__clang__)
    #define MK_INLINE __attribute__((always_inline)) static inline
    #else
    #define MK_INLINE static inline
    #endif
    /* Rows of a square kernel swept whole (the stream the prefetchers follow): per kernel the largest
       |K_ij|, the largest |K_ij| - dpos_i dpos_j (the Cauchy-Schwarz bound, see check_square_stack), and
       sum K_ij * 0, which is NaN as soon as one entry is NaN or infinite; with ``o``, the same loop adds
       w K to the combination.  With ``upper``, the maxima and the combination cover the upper triangle
       (the diagonal included) and the entries below it are only checked to be finite: for a kernel that
       the mirrored blocks show to be exactly symmetric, nothing else is needed. */
    #define MK_CHECK_ROWS(NAME, T)                                                              \
    MK_INLINE void NAME(const T *K, Py_ssize_t n, Py_ssize_t r0, Py_ssize_t r1,                 \
                        const double *restrict dpos, double *acc, double *o, double w,          \
                        int upper) {                                                            \
        double mx = acc[0], ex = acc[1], z = acc[2];                                            \
        for (Py_ssize_t i = r0; i < r1; ++i) {                                                  \
            const T *restrict r = K + i * n;                                                    \
            double di = dpos[i], m = 0.0, e = -1.0, zz = 0.0;                                   \
            Py_ssize_t j0 = upper ? i : 0;                                                      \
            /* below the diagonal of an upper sweep: only whether the entries are finite */    \
            _Pragma("omp simd reduction(+:zz)")                                                 \
            for (Py_ssize_t j = 0; j < j0; ++j) zz += (double)r[j] * 0.0;                       \
            if (o != NULL) {                                                                    \
                double *restrict orow = o + i * n;                                              \
                _Pragma("omp simd reduction(max:m,e) reduction(+:zz)")                          \
                for (Py_ssize_t j = j0; j < n; ++j) {                                           \
                    double a = (double)r[j], aa = a < 0 ? -a : a, d = aa - di * dpos[j];        \
                    zz += a * 0.0; m = aa > m ? aa : m; e = d > e ? d : e;                      \
                    orow[j] += w * a;                                                           \
                }                                                                               \
            } else {                                                                            \
                _Pragma("omp simd reduction(max:m,e) reduction(+:zz)")                          \
                for (Py_ssize_t j = j0; j < n; ++j) {                                           \
                    double a = (double)r[j], aa = a < 0 ? -a : a, d = aa - di * dpos[j];        \
                    zz += a * 0.0; m = aa > m ? aa : m; e = d > e ? d : e;                      \
                }                                                                               \
            }                                                                                   \
            z += zz; mx = m > mx ? m : mx; ex = e > ex ? e : ex;                                \
        }                                                                                       \
        acc[0] = mx; acc[1] = ex; acc[2] = z;                                                   \
    }
    /* max |A - B'| for A = K[r0:r0+h, c0:c0+len] and its mirror B = K[c0:c0+len, r0:r0+h], both read
       by rows; where the compiler has vector extensions, by 4 x 4 blocks of B transposed in registers
       (the edges, and other compilers, element by element). */
    #if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
    typedef double mk_v4d __attribute__((vector_size(32)));
    typedef float mk_v4f __attribute__((vector_size(16)));
    typedef long long mk_v4i __attribute__((vector_size(32)));
    MK_INLINE mk_v4d mk_ld4_f64(const double *p) { mk_v4d v; memcpy(&v, p, sizeof v); return v; }
    MK_INLINE mk_v4d mk_ld4_f32(const float *p) { mk_v4f v; memcpy(&v, p, sizeof v); return __builtin_convertvector(v, mk_v4d); }
    MK_INLINE mk_v4d mk_absdiff4(mk_v4d x, mk_v4d y) {
        mk_v4i bits = (mk_v4i)(x - y) & (mk_v4i){0x7fffffffffffffffLL, 0x7fffffffffffffffLL,
                                                 0x7fffffffffffffffLL, 0x7fffffffffffffffLL};
        return (mk_v4d)bits;
    }
    MK_INLINE mk_v4d mk_max4(mk_v4d x, mk_v4d y) { mk_v4i gt = x > y; return (mk_v4d)(((mk_v4i)x & gt) | ((mk_v4i)y & ~gt)); }
    #define MK_ASYM_BLOCKS(T)                                                                   \
        Py_ssize_t h4 = h & ~(Py_ssize_t)3, l4 = len & ~(Py_ssize_t)3;                          \
        mk_v4d vs = {0.0, 0.0, 0.0, 0.0};                                                       \
        for (Py_ssize_t r = 0; r < h4; r += 4) {                                                \
            const T *a = K + (r0 + r) * n + c0;                                                 \
            for (Py_ssize_t c = 0; c < l4; c += 4) {                                            \
                const T *b = K + (c0 + c) * n + r0 + r;                                         \
                mk_v4d x0 = mk_ld4_##T(a + c), x1 = mk_ld4_##T(a + n + c);                      \
                mk_v4d x2 = mk_ld4_##T(a + 2 * n + c), x3 = mk_ld4_##T(a + 3 * n + c);          \
                mk_v4d y0 = mk_ld4_##T(b), y1 = mk_ld4_##T(b + n);                              \
                mk_v4d y2 = mk_ld4_##T(b + 2 * n), y3 = mk_ld4_##T(b + 3 * n);                  \
                mk_v4d t0 = __builtin_shufflevector(y0, y1, 0, 4, 2, 6);                        \
                mk_v4d t1 = __builtin_shufflevector(y0, y1, 1, 5, 3, 7);                        \
                mk_v4d t2 = __builtin_shufflevector(y2, y3, 0, 4, 2, 6);                        \
                mk_v4d t3 = __builtin_shufflevector(y2, y3, 1, 5, 3, 7);                        \
                mk_v4d d = mk_max4(mk_absdiff4(x0, __builtin_shufflevector(t0, t2, 0, 1, 4, 5)),   \
                                   mk_absdiff4(x1, __builtin_shufflevector(t1, t3, 0, 1, 4, 5)));  \
                d = mk_max4(d, mk_absdiff4(x2, __builtin_shufflevector(t0, t2, 2, 3, 6, 7)));   \
                d = mk_max4(d, mk_absdiff4(x3, __builtin_shufflevector(t1, t3, 2, 3, 6, 7)));   \
                vs = mk_max4(vs, d);                                                            \
            }                                                                                   \
        }                                                                                       \
        for (int l = 0; l < 4; ++l) s = vs[l] > s ? vs[l] : s;
    #else
    #define MK_ASYM_BLOCKS(T) Py_ssize_t h4 = 0, l4 = 0;
    #endif
    #define mk_ld4_float mk_ld4_f32
    #define mk_ld4_double mk_ld4_f64
    #define MK_CHECK_ASYM(NAME, T)                                                              \
    MK_INLINE double NAME(const T *K, Py_ssize_t n, Py_ssize_t r0, Py_ssize_t h, Py_ssize_t c0, \
                          Py_ssize_t len, double s) {                                           \
        MK_ASYM_BLOCKS(T)                                                                       \
        for (Py_ssize_t r = 0; r < h; ++r) {                                                    \
            for (Py_ssize_t c = (r < h4 ? l4 : 0); c < len; ++c) {                              \
                double d = (double)K[(r0 + r) * n + c0 + c] - (double)K[(c0 + c) * n + r0 + r]; \
                d = d < 0 ? -d : d;                                                             \
                s = d > s ? d : s;                                                              \
            }                                                                                   \
        }                                                                                       \
        return s;                                                                               \
    }
    /* Panels of MK_PANEL rows in order: the rows' checks, then each panel's block against the
       mirrored blocks of the panels above it (still in cache), so every entry comes from memory once. */
    #define MK_PANEL 32
    #define MK_CHECK(NAME, T)                                                                   \
    MK_CHECK_ROWS(NAME##_rows, T)                                                               \
    MK_CHECK_ASYM(NAME##_asym, T)                                                               \
    MK_DISPATCH static void NAME(const T *K, Py_ssize_t n, const double *dpos, double tiny,     \
                                 double *maxabs, double *asym, int *finite, long long *mi,      \
                                 long long *mj, double *o, double w, int upper) {               \
        double acc[3] = {0.0, -1.0, 0.0}, asy = 0.0;                                            \
        for (Py_ssize_t a = 0; a < n; a += MK_PANEL) {                                          \
            Py_ssize_t h = a + MK_PANEL < n ? MK_PANEL : n - a;                                 \
            NAME##_rows(K, n, a, a + h, dpos, acc, o, w, upper);                                \
            for (Py_ssize_t c = 0; c <= a; c += MK_PANEL)                                       \
                asy = NAME##_asym(K, n, a, h, c, c + MK_PANEL < n ? MK_PANEL : n - c, asy);     \
        }                                                                                       \
        *mi = -1; *mj = -1;                                                                     \
        if (acc[1] > tiny) { /* a second look (rare) for the first offending pair, row by row */ \
            for (Py_ssize_t i = 0; i < n && *mi < 0; ++i) {                                     \
                double di = dpos[i];                                                            \
                for (Py_ssize_t j = 0; j < n; ++j) {                                            \
                    double a = (double)K[i * n + j], aa = a < 0 ? -a : a;                       \
                    if (aa - di * dpos[j] > tiny) { *mi = i; *mj = j; break; }                  \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
        *maxabs = acc[0]; *asym = asy; *finite = (acc[2] == 0.0);                               \
    }
    MK_CHECK(mk_check_f32, float)
    MK_CHECK(mk_check_f64, double)
    """
    void mk_check_f32(const float *K, Py_ssize_t n, const double *dpos, double tiny, double *maxabs,
                      double *asym, int *finite, long long *mi, long long *mj, double *o, double w,
                      int upper) nogil
    void mk_check_f64(const double *K, Py_ssize_t n, const double *dpos, double tiny, double *maxabs,
                      double *asym, int *finite, long long *mi, long long *mj, double *o, double w,
                      int upper) nogil


def check_square_stack(const floating[:, :, ::1] K, const double[:, ::1] dpos, const double[::1] scale,
                       int[::1] finite, long long[:, ::1] minor, double[::1] maxabs, double[::1] asym,
                       double[:, :, ::1] combined=None, const double[::1] weights=None, bint upper=False):
    """One read of a C-contiguous stack of square kernels for every check of precomputed training kernels.

    Per kernel ``m`` (in parallel): ``finite[m]`` whether every entry is finite, ``maxabs[m]`` the largest
    absolute entry, ``asym[m]`` the largest ``|K_ij - K_ji|`` (0 for an exactly symmetric kernel) and
    ``minor[m]`` a pair ``(i, j)`` with ``|K_ij| > dpos_i dpos_j + 1e-8 scale_m`` (-1 when none), where
    ``dpos`` holds the square roots of the diagonals clipped at 0, with the caller's relative slack
    (``sqrt(1 + 5e-7)``): every positive semi-definite matrix satisfies ``K_ij^2 <= K_ii K_jj``
    (Cauchy-Schwarz), and the product ``dpos_i dpos_j`` is the same for ``(i, j)`` and ``(j, i)``.  (Comparing ``|K_ij|`` with
    a product of square roots, not ``K_ij^2`` with ``K_ii K_jj``: the squares of the tiny entries of a
    narrow Gaussian kernel underflow to subnormal numbers, whose arithmetic made the check 30-50 times
    slower than a read of the stack.)  The kernel is read once, by whole rows in panels of 32 (a sequential
    stream; tiles made the hardware prefetchers give up); each panel is compared with the mirrored blocks
    of the panels above it while those are still in cache, so ``K_ij`` and ``K_ji`` meet without a second
    read from memory.  ``minor`` is the first offending pair in row-major order (looked for only when the
    read found one).

    With ``combined`` (zeros of shape (B, n, n)) and ``weights``, the same read also adds ``weights[m] * K[m]``
    to ``combined[b]`` for the ``b``-th of ``B`` contiguous groups of kernels (a group per thread, up to
    ``B`` threads): ``combined.sum(0)`` is then the combination at these weights, and the stack need not be
    read again to form it.  The groups do not depend on the number of threads, so neither do the sums.

    With ``upper``, ``maxabs``, ``minor``'s test and the combination cover the upper triangles only (the
    diagonal included; the entries below are checked to be finite and against their mirrors): exact for
    the kernels found exactly symmetric (``asym[m] == 0``), about half the arithmetic.  The caller checks
    the others again without it, and mirrors the combination (only valid when every kernel is symmetric).
    """
    cdef Py_ssize_t M = K.shape[0], n = K.shape[1], m
    cdef double tiny
    cdef double *o
    cdef int nt = _threads(M * n * n)
    cdef bint acc = combined is not None
    cdef Py_ssize_t B = combined.shape[0] if acc else 0, b
    if acc and (B < 1 or weights is None or weights.shape[0] != M):
        raise ValueError("combined needs at least one (n, n) buffer, and weights one weight per kernel")
    if n == 0:
        finite[:] = 1
        maxabs[:] = 0.0
        asym[:] = 0.0
        minor[:, :] = -1
        return
    if acc:
        with nogil:
            for b in prange(B, schedule="static", num_threads=min(nt, B)):
                o = &combined[b, 0, 0]
                for m in range(b * M // B, (b + 1) * M // B):
                    tiny = 1e-8 * scale[m]
                    if floating is float:
                        mk_check_f32(&K[m, 0, 0], n, &dpos[m, 0], tiny, &maxabs[m], &asym[m], &finite[m],
                                     &minor[m, 0], &minor[m, 1], o, weights[m], upper)
                    else:
                        mk_check_f64(&K[m, 0, 0], n, &dpos[m, 0], tiny, &maxabs[m], &asym[m], &finite[m],
                                     &minor[m, 0], &minor[m, 1], o, weights[m], upper)
        return
    with nogil:
        for m in prange(M, schedule="dynamic", num_threads=nt):
            tiny = 1e-8 * scale[m]
            if floating is float:
                mk_check_f32(&K[m, 0, 0], n, &dpos[m, 0], tiny, &maxabs[m], &asym[m], &finite[m],
                             &minor[m, 0], &minor[m, 1], NULL, 0.0, upper)
            else:
                mk_check_f64(&K[m, 0, 0], n, &dpos[m, 0], tiny, &maxabs[m], &asym[m], &finite[m],
                             &minor[m, 0], &minor[m, 1], NULL, 0.0, upper)



def factor_dots(const floating[:, ::1] F, const double[::1] w, const Py_ssize_t[::1] rows, double[::1] out):
    """``out = sum_{a in rows} w[a] * F[a, :]``: ``F'w`` over the support ``rows`` of ``w``, summed in float64.

    The factored stack's quadratic forms ``||L_m'w||^2`` read its factors once through this, in their storage
    precision (a float32 factor is not copied to float64 first).
    """
    cdef Py_ssize_t R = F.shape[1], count = rows.shape[0], c
    if R == 0:
        return
    if count == 0:
        for c in range(R):
            out[c] = 0.0
        return
    with nogil:
        _axpy_indexed(&out[0], &F[0, 0], R, &rows[0], count, &w[0], True, R)


def add_upper_symmetric(double[:, ::1] out, const double[::1, :] upper):
    """``out += U + triu(U, 1)'`` for the upper triangle ``U`` of a symmetric matrix (a BLAS ``syrk`` result,
    column-major): the whole symmetric matrix added in one pass, without forming it."""
    cdef Py_ssize_t n = out.shape[0], i, j
    cdef int nt = _threads(n * n)
    with nogil:
        for j in prange(n, schedule="static", num_threads=nt):
            for i in range(j + 1):
                out[i, j] += upper[i, j]
            for i in range(j + 1, n):
                out[i, j] += upper[j, i]
