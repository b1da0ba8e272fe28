# cython: language_level=3
"""What the compiled loops share: cimported by every extension that needs it (``from _common cimport ...``).

A ``.pxd`` with inline functions and C macros only: it is compiled into each module that cimports it and has no
module of its own to import at run time.

* ``MK_DISPATCH`` (C macro): AVX2 + FMA clones of a hot loop, chosen at load time on x86-64 CPUs that have them;
* ``prefetch``: a software prefetch of one cache line;
* ``TAU`` and the bound tests ``in_up`` / ``in_low`` of the SMO variants (``_smo``, ``_smo_mkl``, ``_crossmodal``);
* ``signal_pending``: the Ctrl-C check of the nogil loops;
* ``Slots``: the bookkeeping of a least-recently-used cache of kernel rows (``_smo``, ``_smo_mkl``);
* ``project_box_sum``: the Euclidean projection on ``{lo <= x <= hi, sum(x) = target}`` (``_mlr``, ``_box``).
"""

from cpython.exc cimport PyErr_Clear
from libc.math cimport INFINITY, fmax, fmin


cdef extern from *:
    """
    /* The portable build targets SSE2, which halves the throughput of bandwidth-bound loops: functions marked
       MK_DISPATCH get an AVX2 + FMA clone too, chosen at load time (GCC >= 11 on x86-64 Linux). */
    #ifndef MK_DISPATCH
    #if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) && __GNUC__ >= 11) && !defined(__clang__)
    #define MK_DISPATCH __attribute__((target_clones("arch=x86-64-v3", "default")))
    #else
    #define MK_DISPATCH
    #endif
    #endif
    /* libsvm's tau: the curvature a pair step assumes where the true curvature is not positive. */
    #define MK_TAU 1e-12
    /* Ask for the cache line holding p (read, keep in every cache level): for short or strided streams, which
       the hardware prefetchers do not ramp up on. */
    static inline void mk_prefetch(const void *p) { __builtin_prefetch(p, 0, 3); }
    """
    const double TAU "MK_TAU"
    void prefetch "mk_prefetch" (const void *p) noexcept nogil


# --------------------------------------------------------------------------------------------------
# Bounds of the SMO variants: may a variable move along +c (I_up) or -c (I_low)?  ``c`` is +-1 (a label, or
# the sign of the equality constraint); the box is [lo, up].
# --------------------------------------------------------------------------------------------------
cdef inline bint in_up(double c, double a, double lo, double up) noexcept nogil:
    return (c > 0 and a < up) or (c < 0 and a > lo)


cdef inline bint in_low(double c, double a, double lo, double up) noexcept nogil:
    return (c < 0 and a < up) or (c > 0 and a > lo)


# --------------------------------------------------------------------------------------------------
# Ctrl-C in nogil loops
# --------------------------------------------------------------------------------------------------
# Declared without an exception clause: the -1 is read here, not propagated from a noexcept function.
cdef extern from "Python.h":
    int _check_signals "PyErr_CheckSignals" ()


cdef inline bint signal_pending() noexcept nogil:
    """Whether a signal handler raised (Ctrl-C): long solves stop and report instead of ignoring it.

    The handler's exception is cleared here; the solver raises KeyboardInterrupt once it has stopped.
    """
    cdef bint raised
    with gil:
        raised = _check_signals() != 0
        if raised:
            PyErr_Clear()
    return raised


# --------------------------------------------------------------------------------------------------
# Row caches: which slot holds which row, and which slot to give up next
# --------------------------------------------------------------------------------------------------
ctypedef struct Slots:
    Py_ssize_t n_slots
    Py_ssize_t* slot_of     # row -> slot, -1 when absent
    Py_ssize_t* owner       # slot -> row, -1 when empty
    long long* stamp        # last use of each slot
    long long clock         # advanced by the cache at each access
    long long misses        # slots given up (rows fetched)


cdef inline Py_ssize_t slots_evict(Slots* S, Py_ssize_t pin) noexcept nogil:
    """Empty the least recently used slot (the first of equal stamps), other than the one holding row ``pin``
    (``-1``: any), and return it; counts a miss.  A linear scan: a miss costs a kernel row anyway."""
    cdef Py_ssize_t slot = -1, k
    cdef long long oldest = 0
    for k in range(S.n_slots):
        if pin >= 0 and S.owner[k] == pin:
            continue
        if slot < 0 or S.stamp[k] < oldest:
            slot = k
            oldest = S.stamp[k]
    if S.owner[slot] >= 0:
        S.slot_of[S.owner[slot]] = -1
        S.owner[slot] = -1
    S.misses += 1
    return slot


cdef inline void slots_put(Slots* S, Py_ssize_t row, Py_ssize_t slot) noexcept nogil:
    """Record that ``slot`` holds ``row``, used now."""
    S.owner[slot] = row
    S.slot_of[row] = slot
    S.stamp[slot] = S.clock


# --------------------------------------------------------------------------------------------------
# Projection on a box with a fixed sum
# --------------------------------------------------------------------------------------------------
cdef inline double _clip(double x, double lo, double hi) noexcept nogil:
    return lo if x < lo else (hi if x > hi else x)


cdef inline double _inside(const double* s, const double* e, Py_ssize_t k, double L, double R) noexcept nogil:
    """A breakpoint of the undetermined coordinate ``k`` strictly inside ``(L, R)`` (one of the two is)."""
    return s[k] if s[k] > L else e[k]


cdef inline void project_box_sum(const double* v, const double* lo, const double* hi, Py_ssize_t m, double target,
                                 double* out, double* s, double* e, Py_ssize_t* live, double guess) noexcept nogil:
    """``out = clip(v + lam, lo, hi)`` with ``sum(out) = target``: the Euclidean projection of ``v`` on the box
    ``[lo, hi]`` cut by the hyperplane (``out = lo`` where ``sum lo >= target``, ``hi`` where ``sum hi <= target``).

    ``phi(lam) = sum_k clip(v_k + lam, lo_k, hi_k)`` is continuous, non-decreasing and piecewise linear with the
    breakpoints ``s_k = lo_k - v_k <= e_k = hi_k - v_k``.  The root of ``phi = target`` is bracketed by ``(L, R)``;
    a pivot breakpoint inside (median of three) shrinks the bracket.  A coordinate with no breakpoint left inside
    the bracket contributes a constant (``hi_k`` or ``lo_k``) or ``v_k + lam`` on the whole bracket, so it leaves
    the list ``live`` for three running sums; when no breakpoint is left inside, ``phi`` is linear on the bracket
    and the root is its exact zero.  Expected O(m) where sorting the 2m breakpoints costs O(m log m).  Each
    iteration removes at least the pivot from the open bracket: at most 2m iterations.

    ``guess`` (NaN: none) is the first pivot: any number is valid, one near the root removes most coordinates at
    once.  ``s``, ``e`` (m doubles) and ``live`` (m indices) are work space.
    """
    cdef Py_ssize_t k, w, u = 0, c
    cdef double sum_lo = 0.0, sum_hi = 0.0, L = -INFINITY, R = INFINITY
    cdef double fixed = 0.0, off = 0.0, cnt = 0.0, lam, p, pa, pb, pc, phi
    for k in range(m):
        sum_lo += lo[k]
        sum_hi += hi[k]
        s[k] = lo[k] - v[k]
        e[k] = hi[k] - v[k]
        if s[k] == -INFINITY and e[k] == INFINITY:  # unbounded both ways: v_k + lam everywhere
            cnt += 1.0
            off += v[k]
        else:  # a live coordinate has a finite breakpoint inside the bracket: every pivot is finite
            live[u] = k
            u += 1
    if sum_lo >= target:
        for k in range(m):
            out[k] = lo[k]
        return
    if sum_hi <= target:
        for k in range(m):
            out[k] = hi[k]
        return
    cdef bint first = guess == guess  # a NaN guess: none
    while u > 0:
        if first:
            p = guess
            first = False
        else:
            pa = _inside(s, e, live[0], L, R)
            pb = _inside(s, e, live[u // 2], L, R)
            pc = _inside(s, e, live[u - 1], L, R)
            p = fmax(fmin(pa, pb), fmin(fmax(pa, pb), pc))  # median of three
        phi = fixed + cnt * p + off
        for w in range(u):
            k = live[w]
            phi += _clip(v[k] + p, lo[k], hi[k])
        if phi == target:
            L = p
            R = p
            break
        if phi > target:
            R = p
        else:
            L = p
        c = 0
        for w in range(u):
            k = live[w]
            if e[k] <= L:
                fixed += hi[k]
            elif s[k] >= R:
                fixed += lo[k]
            elif s[k] <= L and e[k] >= R:
                cnt += 1.0
                off += v[k]
            else:
                live[c] = k
                c += 1
        u = c
    if L == R:
        lam = L
    elif cnt > 0.0:
        lam = fmin(fmax(-(fixed + off - target) / cnt, L), R)  # rounding cannot leave the bracket
    else:  # phi constant on the bracket: only rounding gets here
        lam = R if R < INFINITY else L
    for k in range(m):
        out[k] = _clip(v[k] + lam, lo[k], hi[k])
