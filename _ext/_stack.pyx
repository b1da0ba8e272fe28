# cython: language_level=3
"""Fused operations over a dense kernel stack ``K`` of shape (M, n_rows, n_cols).

One source serves float32 and float64 stacks (Cython fused types); the output is always float64 so the
SVM solver downstream works in double precision whatever the storage precision of the stack.

The ``*_gather`` variants read ``K[m, rows[a], cols[b]]`` through index arrays: a row/column subset of a
stack (a cross-validation fold) then costs no copy of the stack.
"""

from cython cimport floating
from cython.parallel cimport prange

# The dot products are written in C so that ``omp simd`` may vectorize their float reductions (GCC does
# not reassociate a float sum on its own).  The float32 variant widens each element to double first:
# the stack's storage precision must not become the precision of the sums.
cdef extern from *:
    """
    static inline double mk_dot_f64(const double *k, const double *v, Py_ssize_t n) {
        double s = 0.0;
        #pragma omp simd reduction(+:s)
        for (Py_ssize_t j = 0; j < n; ++j) s += k[j] * v[j];
        return s;
    }
    static inline double mk_dot_f32(const float *k, const double *v, Py_ssize_t n) {
        double s = 0.0;
        #pragma omp simd reduction(+:s)
        for (Py_ssize_t j = 0; j < n; ++j) s += (double)k[j] * v[j];
        return s;
    }
    """
    double mk_dot_f64(const double *k, const double *v, Py_ssize_t n) nogil
    double mk_dot_f32(const float *k, const double *v, Py_ssize_t n) nogil


def combine_dense(const floating[:, :, ::1] K, const double[::1] weights,
                  const Py_ssize_t[::1] active, double[:, ::1] out):
    """out[:] = sum_{m in active} weights[m] * K[m] (rows in parallel, the GIL released).

    Row-major over ``out``: one output row stays in cache while the active kernels' rows stream past
    it, so the stack is read exactly once and ``out`` written once.
    """
    cdef Py_ssize_t n_rows = K.shape[1], n_cols = K.shape[2], n_active = active.shape[0]
    cdef Py_ssize_t i, j, a, m
    cdef double w
    with nogil:
        for i in prange(n_rows, schedule="static"):
            if n_active == 0:
                for j in range(n_cols):
                    out[i, j] = 0.0
                continue
            m = active[0]
            w = weights[m]
            for j in range(n_cols):
                out[i, j] = w * K[m, i, j]
            for a in range(1, n_active):
                m = active[a]
                w = weights[m]
                for j in range(n_cols):
                    out[i, j] += w * K[m, i, j]


def combine_gather(const floating[:, :, ::1] K, const double[::1] weights, const Py_ssize_t[::1] active,
                   const Py_ssize_t[::1] rows, const Py_ssize_t[::1] cols, double[:, ::1] out):
    """out[a, b] = sum_{m in active} weights[m] * K[m, rows[a], cols[b]]."""
    cdef Py_ssize_t n_rows = rows.shape[0], n_cols = cols.shape[0], n_active = active.shape[0]
    cdef Py_ssize_t i, j, a, m, r
    cdef double w
    with nogil:
        for i in prange(n_rows, schedule="static"):
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


def quad_forms_dense(const floating[:, :, ::1] K, const double[::1] v,
                     const Py_ssize_t[::1] support, double[::1] out):
    """out[m] = v' K[m] v, reading only the rows in ``support`` (the non-zeros of v).

    Only the support x support entries are read (a kernel's other entries are never touched, even if
    not finite).  When v has no zero the rows are read as contiguous, vectorised dot products instead
    of gathers.  Kernels are processed in parallel.
    """
    cdef Py_ssize_t M = K.shape[0], n = K.shape[2], s = support.shape[0]
    cdef Py_ssize_t m, a, b, i
    cdef double acc, row
    cdef bint contiguous = s == n
    if n == 0 or s == 0:
        out[:] = 0.0
        return
    with nogil:
        for m in prange(M, schedule="dynamic"):
            acc = 0.0
            for a in range(s):
                i = support[a]
                if contiguous:
                    row = _row_dot(K, m, i, &v[0], n)
                else:
                    row = 0.0
                    for b in range(s):
                        row = row + K[m, i, support[b]] * v[support[b]]
                acc = acc + v[i] * row
            out[m] = acc


def quad_forms_gather(const floating[:, :, ::1] K, const double[::1] vals,
                      const Py_ssize_t[::1] rows, const Py_ssize_t[::1] cols, double[::1] out):
    """out[m] = sum_{a,b} vals[a] vals[b] K[m, rows[a], cols[b]] (the quadratic form of a subset)."""
    cdef Py_ssize_t M = K.shape[0], s = vals.shape[0]
    cdef Py_ssize_t m, a, b, r
    cdef double acc, row
    with nogil:
        for m in prange(M, schedule="dynamic"):
            acc = 0.0
            for a in range(s):
                r = rows[a]
                row = 0.0
                for b in range(s):
                    row = row + K[m, r, cols[b]] * vals[b]
                acc = acc + vals[a] * row
            out[m] = acc


def diag_gather(const floating[:, :, ::1] K, const Py_ssize_t[::1] rows, const Py_ssize_t[::1] cols,
                double[:, ::1] out):
    """out[m, a] = K[m, rows[a], cols[a]]: the diagonal of every kernel of a subset, as float64."""
    cdef Py_ssize_t M = K.shape[0], s = rows.shape[0], m, a
    with nogil:
        for m in prange(M, schedule="static"):
            for a in range(s):
                out[m, a] = K[m, rows[a], cols[a]]
