# cython: language_level=3
"""Pairwise distances and element-wise kernel maps that BLAS cannot do, parallel over rows.

Features are float64; kernel outputs are float32 or float64 (Cython fused type), so a builder can write
straight into a slice of a float32 stack without a float64 temporary.

Symmetric variants (``B is A``) compute the upper triangle only and mirror it: half the work for every
train x train kernel.
"""

from cython cimport floating
from cython.parallel cimport prange
from libc.math cimport exp, pow, sqrt

# The chi-square and intersection inner loops are written in C so that ``omp simd`` can vectorize their
# float reductions (GCC will not reassociate a float sum on its own without -ffast-math).  ``fmax(x + y,
# tiny)`` replaces the usual ``if x + y > 0`` branch: for non-negative features x + y == 0 implies
# x - y == 0, so the term is 0 / tiny = 0 exactly, and the loop stays branch-free.
cdef extern from *:
    """
    #include <float.h>
    static inline double mk_chi2_row(const double *a, const double *b, Py_ssize_t d) {
        double s = 0.0;
        #pragma omp simd reduction(+:s)
        for (Py_ssize_t k = 0; k < d; ++k) {
            double num = a[k] - b[k];
            double den = a[k] + b[k];
            s += num * num / (den > DBL_MIN ? den : DBL_MIN);
        }
        return s;
    }
    static inline double mk_min_row(const double *a, const double *b, Py_ssize_t d) {
        double s = 0.0;
        #pragma omp simd reduction(+:s)
        for (Py_ssize_t k = 0; k < d; ++k) {
            s += a[k] < b[k] ? a[k] : b[k];
        }
        return s;
    }
    """
    double mk_chi2_row(const double *a, const double *b, Py_ssize_t d) nogil
    double mk_min_row(const double *a, const double *b, Py_ssize_t d) nogil

# One row of squared distances from the Gram matrix, in place.  In C with ``restrict`` so that the
# compiler knows the row and the norms do not overlap and vectorises the loop (through Cython memoryview
# indexing it stayed scalar: 3-5x slower than a numpy pass).
cdef extern from *:
    """
    static inline void mk_sqdist_row(double *restrict g, const double *restrict nb, double na_i,
                                     double scale, Py_ssize_t m) {
        #pragma omp simd
        for (Py_ssize_t j = 0; j < m; ++j) {
            double v = na_i + nb[j] - 2.0 * g[j];
            double noise = 8.0 * DBL_EPSILON * (na_i + nb[j]);
            g[j] = v > noise ? scale * v : 0.0;
        }
    }
    """
    void mk_sqdist_row(double *g, const double *nb, double na_i, double scale, Py_ssize_t m) nogil


# Element-wise maps from a base matrix (a distance or a Gram) to a kernel.  The codes are shared with
# the Python builders (multikernel.plugins.kernels).

from multikernel._threads import PARALLEL_MIN_WORK, max_threads

cdef int _MAX_THREADS = max_threads()
cdef Py_ssize_t _PARALLEL_MIN_WORK = PARALLEL_MIN_WORK


cdef inline int _threads(Py_ssize_t work) noexcept nogil:
    return 1 if work < _PARALLEL_MIN_WORK else _MAX_THREADS


cdef enum:
    MAP_SCALE = 0       # a * x + b                    (linear: a=1, b=0)
    MAP_EXP = 1         # exp(-a * x)                  (Gaussian on D^2, exponential chi2, modified chi2)
    MAP_EXP_SQRT = 2    # exp(-a * sqrt(x))            (Laplacian on D^2)
    MAP_INV = 3         # 1 / (a * x + 1)              (inverse square distance on D^2)
    MAP_INV_SQRT = 4    # 1 / (a * sqrt(x) + 1)        (inverse distance on D^2)
    MAP_POW = 5         # (a * x + b) ** c             (polynomial on the Gram)

MAPS = {"scale": MAP_SCALE, "exp": MAP_EXP, "exp_sqrt": MAP_EXP_SQRT, "inv": MAP_INV,
        "inv_sqrt": MAP_INV_SQRT, "pow": MAP_POW}


cdef inline double _ipow(double x, int d) noexcept nogil:
    # Integer powers by repeated squaring: exact for the small degrees of polynomial kernels, and far
    # cheaper than pow().
    cdef double r = 1.0
    while d > 0:
        if d & 1:
            r *= x
        x *= x
        d >>= 1
    return r


cdef inline double _map(double x, int kind, double a, double b, double c, int ic) noexcept nogil:
    if kind == MAP_SCALE:
        return a * x + b
    if kind == MAP_EXP:
        return exp(-a * x)
    if kind == MAP_EXP_SQRT:
        return exp(-a * sqrt(x))
    if kind == MAP_INV:
        return 1.0 / (a * x + 1.0)
    if kind == MAP_INV_SQRT:
        return 1.0 / (a * sqrt(x) + 1.0)
    if ic >= 0:
        return _ipow(a * x + b, ic)
    return pow(a * x + b, c)


def elementwise_map(const double[:, ::1] base, int kind, double a, double b, double c,
                    floating[:, ::1] out):
    """``out[i, j] = f(base[i, j])`` for one of the ``MAP_*`` maps (rows in parallel).

    ``c`` is the exponent of ``MAP_POW``; integer exponents use exact repeated squaring.
    ``out`` may be ``base`` itself for float64.
    """
    cdef Py_ssize_t n = base.shape[0], m = base.shape[1], i, j
    cdef int ic = -1
    cdef int nt = _threads(n * m * 4)
    if kind == MAP_POW and c == <int> c and c >= 0:
        ic = <int> c
    with nogil:
        for i in prange(n, schedule="dynamic", chunksize=16, num_threads=nt):
            for j in range(m):
                out[i, j] = <floating> _map(base[i, j], kind, a, b, c, ic)


def sqdist_from_gram(double[:, ::1] G, const double[::1] na, const double[::1] nb, bint symmetric,
                     double scale=1.0):
    """In place: ``G[i, j] <- scale * max(na[i] + nb[j] - 2 G[i, j], 0)``.

    ``G`` is the Gram matrix ``A B'`` and ``na``, ``nb`` the squared row norms.  The expansion loses
    about ``eps * (na + nb)`` to cancellation, so values below that noise level (equal points give
    +-1e-16 instead of 0, whose square root would be 1e-8) are set to 0.  With ``symmetric`` (``B`` is ``A``) the diagonal
    is set to exactly 0: a point is at distance 0 from itself.  ``scale`` (for example ``-gamma``)
    saves the caller a pass over the matrix.
    """
    cdef Py_ssize_t n = G.shape[0], m = G.shape[1], i
    cdef int nt = _threads(n * m)
    if n == 0 or m == 0:
        return
    with nogil:
        for i in prange(n, schedule="dynamic", chunksize=16, num_threads=nt):
            mk_sqdist_row(&G[i, 0], &nb[0], na[i], scale, m)
            if symmetric:
                G[i, i] = 0.0


def chi2_distances(const double[:, ::1] A, const double[:, ::1] B, bint symmetric, double[:, ::1] out):
    """``out[i, j] = sum_k (A[i,k] - B[j,k])^2 / (A[i,k] + B[j,k])`` for non-negative features.

    Terms with ``A[i,k] + B[j,k] == 0`` are 0.  With ``symmetric`` (``B`` is ``A``) only the upper
    triangle is computed and mirrored.
    """
    cdef Py_ssize_t n = A.shape[0], m = B.shape[0], d = A.shape[1], i, j
    cdef int nt = _threads(n * m * d)
    with nogil:
        if symmetric:
            # Dynamic schedule: row i has n - i entries, so a static split would load one thread twice.
            for i in prange(n, schedule="dynamic", chunksize=8, num_threads=nt):
                out[i, i] = 0.0
                for j in range(i + 1, m):
                    out[i, j] = mk_chi2_row(&A[i, 0], &B[j, 0], d)
                    out[j, i] = out[i, j]
        else:
            for i in prange(n, schedule="dynamic", chunksize=16, num_threads=nt):
                for j in range(m):
                    out[i, j] = mk_chi2_row(&A[i, 0], &B[j, 0], d)


def intersection(const double[:, ::1] A, const double[:, ::1] B, bint symmetric, double[:, ::1] out):
    """Histogram intersection ``out[i, j] = sum_k min(A[i,k], B[j,k])``."""
    cdef Py_ssize_t n = A.shape[0], m = B.shape[0], d = A.shape[1], i, j
    cdef int nt = _threads(n * m * d)
    with nogil:
        if symmetric:
            for i in prange(n, schedule="dynamic", chunksize=8, num_threads=nt):
                for j in range(i, m):
                    out[i, j] = mk_min_row(&A[i, 0], &B[j, 0], d)
                    out[j, i] = out[i, j]
        else:
            for i in prange(n, schedule="dynamic", chunksize=16, num_threads=nt):
                for j in range(m):
                    out[i, j] = mk_min_row(&A[i, 0], &B[j, 0], d)


def chi2_exp_symmetric(const double[:, ::1] A, double gamma, floating[:, ::1] out):
    """Fused train x train exponential chi-square kernel ``exp(-gamma D_chi2)`` (upper triangle, mirrored).

    One pass and no float64 temporary: the distance of a pair goes straight through ``exp`` into ``out``.
    """
    cdef Py_ssize_t n = A.shape[0], d = A.shape[1], i, j
    cdef double v
    cdef int nt = _threads(n * n * d // 2)
    with nogil:
        for i in prange(n, schedule="dynamic", chunksize=8, num_threads=nt):
            out[i, i] = 1.0
            for j in range(i + 1, n):
                v = exp(-gamma * mk_chi2_row(&A[i, 0], &A[j, 0], d))
                out[i, j] = <floating> v
                out[j, i] = <floating> v


def chi2_sum_offdiag(const double[:, ::1] A):
    """``sum_{i<j} D_chi2(a_i, a_j)`` without storing the matrix (for the mean-distance bandwidth)."""
    cdef Py_ssize_t n = A.shape[0], d = A.shape[1], i, j
    cdef double total = 0.0
    cdef int nt = _threads(n * n * d // 2)
    with nogil:
        for i in prange(n, schedule="dynamic", chunksize=8, num_threads=nt):
            for j in range(i + 1, n):
                total += mk_chi2_row(&A[i, 0], &A[j, 0], d)
    return total
