# cython: language_level=3
"""Fused operations over a dense kernel stack ``K`` of shape (M, n_rows, n_cols).

One source serves float32 and float64 stacks (Cython fused types); the output is always float64 so the
SVM solver downstream works in double precision whatever the storage precision of the stack.
"""

from cython cimport floating
from cython.parallel cimport prange


def combine_dense(const floating[:, :, ::1] K, const double[::1] weights,
                  const Py_ssize_t[::1] active, double[:, ::1] out):
    """out[:] = sum_{m in active} weights[m] * K[m] (rows in parallel, the GIL released)."""
    cdef Py_ssize_t n_rows = K.shape[1], n_cols = K.shape[2], n_active = active.shape[0]
    cdef Py_ssize_t i, j, a, m
    cdef double w
    with nogil:
        for i in prange(n_rows, schedule="static"):
            for j in range(n_cols):
                out[i, j] = 0.0
            for a in range(n_active):
                m = active[a]
                w = weights[m]
                for j in range(n_cols):
                    out[i, j] += w * K[m, i, j]


def quad_forms_dense(const floating[:, :, ::1] K, const double[::1] v,
                     const Py_ssize_t[::1] support, double[::1] out):
    """out[m] = v' K[m] v, touching only rows and columns in ``support`` (the non-zeros of v)."""
    cdef Py_ssize_t M = K.shape[0], s = support.shape[0]
    cdef Py_ssize_t m, a, b, i
    cdef double acc, row
    with nogil:
        for m in prange(M, schedule="static"):
            acc = 0.0
            for a in range(s):
                i = support[a]
                row = 0.0
                for b in range(s):
                    row = row + K[m, i, support[b]] * v[support[b]]
                acc = acc + v[i] * row
            out[m] = acc
