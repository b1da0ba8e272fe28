# cython: language_level=3
"""The projection on a box with a fixed sum, for Python callers (the compiled loops call it inline)."""

import numpy as np

from libc.math cimport NAN

from _common cimport project_box_sum


def project(const double[::1] v, const double[::1] lo, const double[::1] hi, double target):
    """``clip(v + lam, lo, hi)`` with ``sum = target``: the Euclidean projection of ``v`` on ``{lo <= x <= hi,
    sum(x) = target}`` (``lo`` where ``sum(lo) >= target``, ``hi`` where ``sum(hi) <= target``).

    Parameters
    ----------
    v, lo, hi : ndarray of shape (m,), float64, contiguous
    target : float

    Returns
    -------
    ndarray of shape (m,)
    """
    cdef Py_ssize_t m = v.shape[0]
    if lo.shape[0] != m or hi.shape[0] != m:
        raise ValueError(f"v, lo and hi must have the same length; got {m}, {lo.shape[0]} and {hi.shape[0]}")
    out = np.empty(m)
    if m == 0:
        return out
    work = np.empty((2, m))
    live = np.empty(m, dtype=np.intp)
    cdef double[::1] o = out
    cdef double[:, ::1] w = work
    cdef Py_ssize_t[::1] idx = live
    with nogil:
        project_box_sum(&v[0], &lo[0], &hi[0], m, target, &o[0], &w[0, 0], &w[1, 0], &idx[0], NAN)
    return out
