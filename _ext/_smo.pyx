# cython: language_level=3
"""SMO core for box-constrained convex QPs with zero, one or two equality constraints.

Problem (all vectors of length n, K symmetric)::

    minimise  1/2 a'Qa + p'a   s.t.  lo <= a <= up,   Q_kj = s_k s_j K_kj + D_k [k == j]

and, depending on ``mode``:

* mode 0: no equality constraint (one variable per step, greedy second-order choice);
* mode 1: one equality ``c'a = delta`` with ``c_k = +-1`` (pairs, WSS3 of Fan, Chen and Lin 2005);
* mode 2: ``y'a = delta`` and ``1'a = s`` (pairs inside the same class ``grp``, as libsvm's nu solver).

The entry point :func:`solve` takes the kernel (a dense matrix or a row provider), the starting point,
the problem's per-variable data (:class:`QP`) and the run options (the ``Options`` struct).  One loop,
:func:`_solve`, runs every mode; a mode supplies its working-set selection and its step.

Internally the gradient is stored as ``F_k = -c_k G_k`` (``c = 1`` in modes 0 and 2), so that the
working-set rules read the same for every mode, and ``w_k = c_k s_k`` folds both signs into one factor.
The kernel is read one full row at a time, either straight from the caller's dense matrix (row ``i`` of a
symmetric matrix is contiguous in both C and F order, so nothing is ever copied) or from a bounded LRU
cache of rows filled by a Python column provider.  Shrinking keeps a sorted list of active indices
instead of permuting arrays, so that row accesses stay monotone (cache- and prefetch-friendly).

A solve can also stop on a stall (``stall_window`` steps without halving the best KKT gap): pair steps
converge slowly on a nearly singular face of free variables, and the caller (``multikernel.solve.smo``)
then takes Newton steps on that face and restarts.
"""

from cpython.ref cimport PyObject
from cython cimport floating
from cython.parallel cimport prange
from libc.math cimport INFINITY, fabs, isfinite
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from _common cimport TAU, Slots, in_low, in_up, signal_pending, slots_evict, slots_put

import numpy as np

cdef enum:
    ST_UP = 1        # the variable may move along +c (I_up of libsvm)
    ST_LOW = 2       # the variable may move along -c (I_low)
    ST_BOUND = 4     # the variable sits at a bound (its contribution lives in Fbar)

cdef Py_ssize_t CHUNK = 512      # rows of the gradient one thread owns in the parallel loops
# Below this many multiply-adds a parallel region costs more than it saves: thread wake-up is slow,
# and very slow on a loaded machine (measured on a shared 2-core machine, where 2 threads made a
# 30-solve warm-started sequence at n = 5000 ~50% slower), so moderate gradient builds stay sequential.
cdef Py_ssize_t PARALLEL_MIN_WORK = 32000000
# Steps between two shrinking passes (libsvm uses min(n, 1000)).
cdef Py_ssize_t SHRINK_EVERY = 1000
cdef long long SIGNAL_EVERY = 16384  # iterations between two checks for Ctrl-C (takes the GIL briefly)


ctypedef struct RowCache:
    Py_ssize_t n
    Py_ssize_t n_slots
    double* data                 # n_slots rows of length n
    Slots slots                  # which slot holds which row (least recently used evicted first)
    PyObject* owner              # the _Provider (borrowed): _fill(row, slot), _fill_many(rows, slots)
    int error
    # speculative blocks: a miss also computes up to block - 1 uncached rows of the solver's active list
    const Py_ssize_t* act        # the active list (NULL: no speculation)
    const Py_ssize_t* n_act      # its current length
    Py_ssize_t cursor            # where the next block starts in the active list
    Py_ssize_t block
    Py_ssize_t* spec             # buffer of block indices


ctypedef struct Options:
    # How the solver runs (what it solves is the QP object of ``solve``).
    double tol            # stop when the maximal KKT violation is below tol
    long long max_iter    # iteration limit; < 0 for none
    bint shrinking
    bint warm             # alpha is a warm start (shrink at once)
    long long stall_window  # report a stall after this many steps without halving the best gap; 0: never


ctypedef struct Problem:
    Py_ssize_t n
    int mode
    double* alpha
    double* F          # -c * gradient
    double* Fbar       # -c * sum over bound variables of alpha_j Q_:j (for gradient reconstruction)
    double* Fp         # -c * p
    double* QD         # diagonal of Q
    double* D          # ridge added to the diagonal
    double* lo
    double* up
    double* c          # equality signs (+-1; 1 in modes 0 and 2)
    double* s          # kernel signs
    double* w          # c * s
    int* grp           # class (0/1) in mode 2, 0 otherwise
    unsigned char* st
    Py_ssize_t* act    # sorted active indices, first A entries
    Py_ssize_t A
    # Work copies of what the hot loops read, in active-position order (position t holds variable
    # act[t]), so that those loops run over contiguous memory.  F is authoritative in wF between
    # _sync_in and _sync_out; st, QD, w, grp are mirrors.
    double* wF
    double* wQD
    double* ww
    int* wgrp
    unsigned char* wst
    Py_ssize_t* keep   # after _shrink: old active position of each new active position
    Options opt
    int unit_w         # w == 1 everywhere (C-SVC): skip the w factor in the hot loops
    # outputs
    long long n_iter
    long long sum_active   # sum over iterations of the active size (diagnostics)
    long long ac_miss      # active-row cache misses (diagnostics)
    int neg_curv
    int hit_max_iter
    int interrupted    # Ctrl-C seen (checked every SIGNAL_EVERY iterations, main thread only)
    int unbounded      # a direction of non-positive curvature with no bound in the way
    int stalled        # stall_window steps passed without halving the best KKT gap
    long long plateau  # the longest run of steps without halving the best gap (diagnostics)
    int error


cdef inline bint _must_stop(Problem* P) noexcept nogil:
    """Iteration limit or Ctrl-C (checked every SIGNAL_EVERY iterations): records which, for the caller."""
    if P.opt.max_iter >= 0 and P.n_iter >= P.opt.max_iter:
        P.hit_max_iter = 1
        return True
    if P.n_iter > 0 and P.n_iter % SIGNAL_EVERY == 0 and signal_pending():
        P.interrupted = 1
        return True
    return False


cdef inline unsigned char _status(double a, double lo, double up, double c) noexcept nogil:
    cdef unsigned char r = 0
    if in_up(c, a, lo, up):
        r |= ST_UP
    if in_low(c, a, lo, up):
        r |= ST_LOW
    if a <= lo or a >= up:
        r |= ST_BOUND
    return r


cdef inline double _bound_part(double a, unsigned char st) noexcept nogil:
    # the part of alpha accounted for in Fbar: bound variables only (zero bounds contribute nothing)
    return a if st & ST_BOUND else 0.0


cdef int _cache_speculate(RowCache* C, Py_ssize_t i) noexcept nogil:
    """Fetch row i with the next uncached rows of the active list, in one provider call.

    A provider pays a fixed cost per call (Python, input validation) that dwarfs the work of one column:
    computing a block of columns costs little more than one.  The rows a solve needs are those of the
    active list, which the cursor sweeps block by block; a block is at most 1/8 of the cache, so that
    speculation never evicts much of it.
    """
    cdef Py_ssize_t m = 1, scanned = 0, A = C.n_act[0], k
    C.spec[0] = i
    while m < C.block and scanned < A:
        if C.cursor >= A:
            C.cursor = 0
        k = C.act[C.cursor]
        C.cursor += 1
        scanned += 1
        if k != i and C.slots.slot_of[k] < 0:
            C.spec[m] = k
            m += 1
    return _cache_prefetch(C, C.spec, m)


cdef const double* _cache_get(RowCache* C, Py_ssize_t i) noexcept nogil:
    cdef Py_ssize_t slot = C.slots.slot_of[i]
    C.slots.clock += 1
    if slot >= 0:
        C.slots.stamp[slot] = C.slots.clock
        return C.data + slot * C.n
    if C.act != NULL and C.block >= 2:
        if _cache_speculate(C, i) < 0:
            return NULL
        slot = C.slots.slot_of[i]
        if slot >= 0:
            return C.data + slot * C.n
    slot = slots_evict(&C.slots, -1)
    with gil:
        try:
            (<object>C.owner)._fill(i, slot)
        except BaseException:
            C.error = 1
            return NULL
    slots_put(&C.slots, i, slot)
    return C.data + slot * C.n


cdef int _cache_prefetch(RowCache* C, const Py_ssize_t* idx, Py_ssize_t m) noexcept nogil:
    """Bring the distinct rows idx[0:m] (m <= n_slots / 2) into the cache with one provider call.

    A provider computes a block of columns much faster than the same columns one by one (one pass of
    vectorised work instead of m Python calls): this serves the gradient builds, which read every row of
    the support.  The rows already present are marked as used first, so that no row of the block is
    evicted by another.
    """
    cdef Py_ssize_t r, slot, n_missing = 0
    cdef Py_ssize_t* buf
    C.slots.clock += 1
    for r in range(m):
        slot = C.slots.slot_of[idx[r]]
        if slot >= 0:
            C.slots.stamp[slot] = C.slots.clock
        else:
            n_missing += 1
    if n_missing < 2:
        return 0    # _cache_get serves a single row as well
    buf = <Py_ssize_t*> malloc(2 * m * sizeof(Py_ssize_t))
    if buf == NULL:
        return -1
    n_missing = 0
    for r in range(m):
        if C.slots.slot_of[idx[r]] < 0:
            slot = slots_evict(&C.slots, -1)
            slots_put(&C.slots, idx[r], slot)
            buf[n_missing] = idx[r]
            buf[m + n_missing] = slot
            n_missing += 1
    with gil:
        try:
            (<object>C.owner)._fill_many(np.array(<Py_ssize_t[:n_missing]> buf),
                                         np.array(<Py_ssize_t[:n_missing]> (buf + m)))
        except BaseException:
            C.error = 1
            for r in range(n_missing):
                # the slots hold no valid row
                C.slots.slot_of[buf[r]] = -1
                C.slots.owner[buf[m + r]] = -1
            free(buf)
            return -1
    free(buf)
    return 0


cdef inline const floating* _row(const floating* Kb, RowCache* C, Py_ssize_t n,
                                 Py_ssize_t i) noexcept nogil:
    if Kb != NULL:
        return Kb + i * n
    # only reached with floating == double (the provider path)
    return <const floating*> _cache_get(C, i)


cdef void _add_rows_parallel(Problem* P, const floating* Kb, const Py_ssize_t* idx, const double* coef,
                             Py_ssize_t m, double* out, const Py_ssize_t* targets,
                             Py_ssize_t n_targets) noexcept nogil:
    """out[k] -= w_k * sum_r coef[r] K[idx[r], k] for k in targets (all k when targets is NULL).

    Threads own disjoint chunks of targets and sum over rows in a fixed order: deterministic.
    """
    cdef Py_ssize_t n = P.n, nt = n if targets == NULL else n_targets
    cdef Py_ssize_t n_chunks = (nt + CHUNK - 1) // CHUNK, ch, t, t0, t1, r, k
    cdef const floating* Kr
    cdef double cr
    for ch in prange(n_chunks, schedule="static"):
        t0 = ch * CHUNK
        t1 = t0 + CHUNK
        if t1 > nt:
            t1 = nt
        for r in range(m):
            Kr = Kb + idx[r] * n
            cr = coef[r]
            if targets == NULL:
                for t in range(t0, t1):
                    out[t] -= P.w[t] * cr * Kr[t]
            else:
                for t in range(t0, t1):
                    k = targets[t]
                    out[k] -= P.w[k] * cr * Kr[k]


cdef int _add_rows(Problem* P, const floating* Kb, RowCache* C, const Py_ssize_t* idx, const double* coef,
                   Py_ssize_t m, double* out, const Py_ssize_t* targets, Py_ssize_t n_targets) noexcept nogil:
    """Same as _add_rows_parallel; sequential through the row cache for the provider path, whose rows
    are fetched by blocks of half the cache."""
    cdef Py_ssize_t r, t, k, n = P.n
    cdef Py_ssize_t chunk = 1 if C == NULL else (C.n_slots // 2 if C.n_slots >= 2 else 1)
    cdef const floating* Kr
    cdef double cr
    cdef Py_ssize_t nt = n if targets == NULL else n_targets, r0 = 0
    cdef const floating* K0
    cdef const floating* K1
    cdef const floating* K2
    cdef const floating* K3
    cdef double c0, c1, c2, c3
    if Kb != NULL and m * nt >= PARALLEL_MIN_WORK:
        _add_rows_parallel(P, Kb, idx, coef, m, out, targets, n_targets)
        return 0
    if Kb != NULL:
        # four rows per sweep: the output and w are read and written a quarter as often
        while r0 + 4 <= m:
            K0 = Kb + idx[r0] * n
            K1 = Kb + idx[r0 + 1] * n
            K2 = Kb + idx[r0 + 2] * n
            K3 = Kb + idx[r0 + 3] * n
            c0 = coef[r0]
            c1 = coef[r0 + 1]
            c2 = coef[r0 + 2]
            c3 = coef[r0 + 3]
            if targets == NULL:
                for k in range(n):
                    out[k] -= P.w[k] * (c0 * K0[k] + c1 * K1[k] + c2 * K2[k] + c3 * K3[k])
            else:
                for t in range(n_targets):
                    k = targets[t]
                    out[k] -= P.w[k] * (c0 * K0[k] + c1 * K1[k] + c2 * K2[k] + c3 * K3[k])
            r0 += 4
    for r in range(r0, m):
        if Kb == NULL and (r - r0) % chunk == 0:
            if _cache_prefetch(C, idx + r, chunk if r + chunk <= m else m - r) < 0:
                return -1
        Kr = _row(Kb, C, n, idx[r])
        if Kr == NULL:
            return -1
        cr = coef[r]
        if targets == NULL:
            for k in range(n):
                out[k] -= P.w[k] * cr * Kr[k]
        else:
            for t in range(n_targets):
                k = targets[t]
                out[k] -= P.w[k] * cr * Kr[k]
    return 0


cdef int _init_gradient(Problem* P, const floating* Kb, RowCache* C) noexcept nogil:
    """F = Fp - c*(Q alpha) and Fbar from the bound part, touching only rows of non-zero alpha.

    Fbar (the bound variables' part) is built first and F starts from it, so that every kernel row
    is read once: after a warm start most of the support is often at a bound.
    """
    cdef Py_ssize_t n = P.n, k, m_free = 0, m_bound = 0
    # one work buffer: two index lists, then their two coefficient lists (8-byte items: aligned)
    cdef Py_ssize_t* idx_free = <Py_ssize_t*> malloc(2 * n * (sizeof(Py_ssize_t) + sizeof(double)))
    cdef Py_ssize_t* idx_bound = idx_free + n
    cdef double* c_free = <double*> (idx_free + 2 * n)
    cdef double* c_bound = c_free + n
    cdef int rc = 0
    if idx_free == NULL:
        return -1
    for k in range(n):
        P.Fbar[k] = 0.0
        P.st[k] = _status(P.alpha[k], P.lo[k], P.up[k], P.c[k])
        if P.alpha[k] != 0.0 and (P.st[k] & ST_BOUND):
            idx_bound[m_bound] = k
            c_bound[m_bound] = P.s[k] * P.alpha[k]
            m_bound += 1
            # the ridge is diagonal: add it here instead of in the row loop
            P.Fbar[k] -= P.c[k] * P.D[k] * P.alpha[k]
    rc = _add_rows(P, Kb, C, idx_bound, c_bound, m_bound, P.Fbar, NULL, 0)
    for k in range(n):
        P.F[k] = P.Fp[k] + P.Fbar[k]
        if P.alpha[k] != 0.0 and not (P.st[k] & ST_BOUND):
            idx_free[m_free] = k
            c_free[m_free] = P.s[k] * P.alpha[k]
            m_free += 1
            P.F[k] -= P.c[k] * P.D[k] * P.alpha[k]
    if rc == 0:
        rc = _add_rows(P, Kb, C, idx_free, c_free, m_free, P.F, NULL, 0)
    free(idx_free)
    return rc


cdef int _reconstruct(Problem* P, const floating* Kb, RowCache* C) noexcept nogil:
    """Recompute F on the inactive variables from Fbar and the free (hence active) variables."""
    cdef Py_ssize_t n = P.n, k, t, m_free = 0, n_inact = 0
    cdef Py_ssize_t* free_idx
    cdef Py_ssize_t* inact
    cdef double* coef
    cdef unsigned char* is_act
    cdef int rc = 0
    if P.A == n:
        return 0
    # one work buffer: two index lists, the coefficients, then the flags (8-byte items first: aligned)
    free_idx = <Py_ssize_t*> malloc(n * (2 * sizeof(Py_ssize_t) + sizeof(double) + 1))
    if free_idx == NULL:
        return -1
    inact = free_idx + n
    coef = <double*> (free_idx + 2 * n)
    is_act = <unsigned char*> (coef + n)
    for k in range(n):
        is_act[k] = 0
    for t in range(P.A):
        k = P.act[t]
        is_act[k] = 1
        if not (P.st[k] & ST_BOUND):
            free_idx[m_free] = k
            coef[m_free] = P.s[k] * P.alpha[k]
            m_free += 1
    for k in range(n):
        if not is_act[k]:
            inact[n_inact] = k
            n_inact += 1
            P.F[k] = P.Fbar[k] + P.Fp[k]
    rc = _add_rows(P, Kb, C, free_idx, coef, m_free, P.F, inact, n_inact)
    free(free_idx)
    return rc


cdef void _unshrink_list(Problem* P) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(P.n):
        P.act[k] = k
    P.A = P.n


cdef inline double _assign(Problem* P, Py_ssize_t k, double value) noexcept nogil:
    """Set alpha_k and its status; return the change of its bound part (what Fbar must absorb)."""
    cdef double old_part = _bound_part(P.alpha[k], P.st[k])
    P.alpha[k] = value
    P.st[k] = _status(value, P.lo[k], P.up[k], P.c[k])
    return _bound_part(value, P.st[k]) - old_part


cdef int _fbar_update(Problem* P, const floating* Kb, RowCache* C, Py_ssize_t k, double delta) noexcept nogil:
    """Fbar -= c*(Q e_k)*delta, the bookkeeping that makes gradient reconstruction possible."""
    cdef const floating* Kk
    cdef Py_ssize_t m, n = P.n
    cdef double cd
    if delta == 0.0:
        return 0
    Kk = _row(Kb, C, n, k)
    if Kk == NULL:
        return -1
    cd = P.s[k] * delta
    for m in range(n):
        P.Fbar[m] -= P.w[m] * cd * Kk[m]
    P.Fbar[k] -= P.c[k] * P.D[k] * delta
    return 0


# --------------------------------------------------------------------------------------------------
# Active-row cache: rows restricted to the active set, stored contiguously.
#
# Once shrinking has removed most variables, a full kernel row is read with holes: the active entries
# are spread over the whole row, so nearly every cache line is still fetched from memory.  Copying the
# active part of the rows in use into a small LRU cache turns these reads into short contiguous ones.
# The cache is bounded (cache_size) and rebuilt whenever the active set changes.
# --------------------------------------------------------------------------------------------------
ctypedef struct ACache:
    void* data
    Py_ssize_t capacity      # elements that fit in data
    Py_ssize_t stride        # active size at layout time
    Py_ssize_t n_slots
    Py_ssize_t n_used
    Py_ssize_t* slot_of      # row -> slot or -1 (n entries)
    Py_ssize_t* row_of       # slot -> row (n entries)
    Py_ssize_t* prv          # LRU list over slots, sentinel at index n
    Py_ssize_t* nxt
    int enabled


cdef void _ac_layout(ACache* AC, Py_ssize_t n, Py_ssize_t A) noexcept nogil:
    """Slots of A entries (the active size) in the buffer; the cache serves only while A < n."""
    AC.stride = A if A > 0 else 1
    AC.n_slots = AC.capacity // AC.stride
    if AC.n_slots > n:
        AC.n_slots = n
    # at most three rows are held at once (two i rows in mode 2, plus j)
    AC.enabled = A < n and AC.n_slots >= 4


cdef void _ac_reset(ACache* AC, Py_ssize_t n, Py_ssize_t A) noexcept nogil:
    cdef Py_ssize_t t
    for t in range(AC.n_used):
        AC.slot_of[AC.row_of[t]] = -1
    AC.n_used = 0
    _ac_layout(AC, n, A)
    AC.prv[n] = n
    AC.nxt[n] = n


cdef void _ac_compact(ACache* AC, floating* data, Py_ssize_t n, const Py_ssize_t* keep,
                      Py_ssize_t A) noexcept nogil:
    """Restrict every cached row to the kept positions and lay the rows out with the new stride.

    Slots are processed in increasing order and keep[t] >= t, so every write lands at or before the
    read it comes from, and never on data still to be read: the compaction is safe in place.
    """
    cdef Py_ssize_t s, t, old = AC.stride
    cdef floating* src
    cdef floating* dst
    if not AC.enabled:
        _ac_reset(AC, n, A)
        return
    for s in range(AC.n_used):
        src = data + s * old
        dst = data + s * A
        for t in range(A):
            dst[t] = src[keep[t]]
    _ac_layout(AC, n, A)


cdef inline void _ac_unlink(ACache* AC, Py_ssize_t s) noexcept nogil:
    AC.nxt[AC.prv[s]] = AC.nxt[s]
    AC.prv[AC.nxt[s]] = AC.prv[s]


cdef inline void _ac_push(ACache* AC, Py_ssize_t n, Py_ssize_t s) noexcept nogil:
    # most recently used sits just before the sentinel; the least recently used just after it
    AC.prv[s] = AC.prv[n]
    AC.nxt[s] = n
    AC.nxt[AC.prv[n]] = s
    AC.prv[n] = s


cdef const floating* _ac_get(Problem* P, ACache* AC, const floating* Kb, RowCache* C,
                            Py_ssize_t i) noexcept nogil:
    cdef Py_ssize_t n = P.n, s = AC.slot_of[i], t
    cdef floating* d
    cdef const floating* full
    if s >= 0:
        _ac_unlink(AC, s)
        _ac_push(AC, n, s)
        return (<floating*> AC.data) + s * AC.stride
    full = _row(Kb, C, n, i)
    if full == NULL:
        return NULL
    P.ac_miss += 1
    if AC.n_used < AC.n_slots:
        s = AC.n_used
        AC.n_used += 1
    else:
        s = AC.nxt[n]
        _ac_unlink(AC, s)
        AC.slot_of[AC.row_of[s]] = -1
    d = (<floating*> AC.data) + s * AC.stride
    for t in range(P.A):
        d[t] = full[P.act[t]]
    AC.row_of[s] = i
    AC.slot_of[i] = s
    _ac_push(AC, n, s)
    return d


cdef inline bint _compact(Problem* P, ACache* AC) noexcept nogil:
    return P.A < P.n and AC.enabled


cdef inline bint _direct(Problem* P, ACache* AC) noexcept nogil:
    """Whether rows from _arow are indexed by active position (else by act[position])."""
    return P.A == P.n or AC.enabled


cdef inline const floating* _arow(Problem* P, ACache* AC, const floating* Kb, RowCache* C,
                                  Py_ssize_t i) noexcept nogil:
    """Row i as the hot loops read it: compact (indexed by active position) or full (by index)."""
    if _compact(P, AC):
        return _ac_get(P, AC, Kb, C, i)
    return _row(Kb, C, P.n, i)


cdef void _extremes(Problem* P, double* m_up, double* m_low) noexcept nogil:
    """Per group: m_up = max F over I_up, m_low = min F over I_low (active set only)."""
    cdef Py_ssize_t t, k
    cdef int g
    cdef double f
    m_up[0] = m_up[1] = -INFINITY
    m_low[0] = m_low[1] = INFINITY
    for t in range(P.A):
        k = P.act[t]
        g = P.grp[k]
        f = P.F[k]
        if P.st[k] & ST_UP and f > m_up[g]:
            m_up[g] = f
        if P.st[k] & ST_LOW and f < m_low[g]:
            m_low[g] = f


cdef double _gap(Problem* P, double* m_up, double* m_low) noexcept nogil:
    """Maximal KKT violation: m - M per group for pair modes; max single violation in mode 0."""
    cdef double g0, g1
    if P.mode == 0:
        g0 = m_up[0] if m_up[0] > 0 else 0.0
        g1 = -m_low[0] if -m_low[0] > g0 else g0
        return g1
    g0 = m_up[0] - m_low[0]
    g1 = m_up[1] - m_low[1]
    if P.mode == 1:
        g1 = -INFINITY
    if g1 > g0:
        g0 = g1
    return g0 if g0 > 0 else 0.0


cdef void _shrink(Problem* P, double* m_up, double* m_low) noexcept nogil:
    """Drop from the active set the bound variables that cannot enter a violating working set."""
    cdef Py_ssize_t t, k, A = 0
    cdef int g
    cdef unsigned char st
    cdef double f, hi, lo_, v = _gap(P, m_up, m_low)
    cdef bint keep
    for t in range(P.A):
        k = P.act[t]
        st = P.st[k]
        f = P.F[k]
        g = P.grp[k]
        if P.mode == 0:
            # no pairing: a bound variable is safe once its gradient points outwards by more than
            # the largest violation left
            hi = v
            lo_ = -v
        else:
            hi = m_up[g]
            lo_ = m_low[g]
        if (st & ST_UP) and (st & ST_LOW):
            keep = True
        elif st & ST_LOW:
            keep = not (f > hi)
        elif st & ST_UP:
            keep = not (f < lo_)
        else:
            keep = False
        if keep:
            P.act[A] = k
            P.keep[A] = t      # old position of the variable now at position A (for the row cache)
            A += 1
    P.A = A


cdef void _sync_in(Problem* P) noexcept nogil:
    cdef Py_ssize_t t, k
    for t in range(P.A):
        k = P.act[t]
        P.wF[t] = P.F[k]
        P.wQD[t] = P.QD[k]
        P.ww[t] = P.w[k]
        P.wgrp[t] = P.grp[k]
        P.wst[t] = P.st[k]


cdef void _sync_out(Problem* P) noexcept nogil:
    cdef Py_ssize_t t
    for t in range(P.A):
        P.F[P.act[t]] = P.wF[t]


cdef int _maintain(Problem* P, ACache* AC, const floating* Kb, RowCache* C, int* unshrunk) noexcept nogil:
    """Periodic shrinking; the first time the gap gets within 10 tol, unshrink once (exact gradient)."""
    cdef double m_up[2]
    cdef double m_low[2]
    cdef Py_ssize_t A0 = P.A
    cdef bint changed = False
    _sync_out(P)
    _extremes(P, m_up, m_low)
    if not unshrunk[0] and _gap(P, m_up, m_low) <= 10.0 * P.opt.tol:
        unshrunk[0] = 1
        if _reconstruct(P, Kb, C) < 0:
            return -1
        _unshrink_list(P)
        changed = True
        _extremes(P, m_up, m_low)
    _shrink(P, m_up, m_low)
    if changed:
        _ac_reset(AC, P.n, P.A)
    elif P.A != A0:
        # the new active set is a subset of the old one: compact the cached rows instead of
        # dropping them (refetching a row from the full kernel costs a pass over scattered memory)
        _ac_compact(AC, <floating*> AC.data, P.n, P.keep, P.A)
    _sync_in(P)
    return 0


cdef void _extremes_low(Problem* P, double* m_low) noexcept nogil:
    cdef Py_ssize_t t
    m_low[0] = m_low[1] = INFINITY
    for t in range(P.A):
        if P.wst[t] & ST_LOW and P.wF[t] < m_low[P.wgrp[t]]:
            m_low[P.wgrp[t]] = P.wF[t]


cdef void _select_i(Problem* P, Py_ssize_t* ig, double* Fi) noexcept nogil:
    """Per group, the position of the largest F over I_up (the first member of the working pair)."""
    cdef Py_ssize_t t
    cdef int g
    ig[0] = ig[1] = -1
    Fi[0] = Fi[1] = -INFINITY
    for t in range(P.A):
        if P.wst[t] & ST_UP:
            g = P.wgrp[t]
            if P.wF[t] >= Fi[g]:
                Fi[g] = P.wF[t]
                ig[g] = t


cdef int _unshrink_all(Problem* P, ACache* AC, const floating* Kb, RowCache* C) noexcept nogil:
    _sync_out(P)
    if _reconstruct(P, Kb, C) < 0:
        return -1
    _unshrink_list(P)
    _ac_reset(AC, P.n, P.n)
    _sync_in(P)
    return 0
# --------------------------------------------------------------------------------------------------
# The hot scans over the active set.
#
# A row returned by _arow is read in one of three ways, fixed for a whole scan: by active position with
# w == 1 (the C-SVC), by active position with the factor w, or gathered through act[] from a full row.
# The way is a compile-time tag (a fused type): each scan is compiled once per way, with no per-entry
# branch; _access picks the way at run time and the caller passes the matching tag.
# --------------------------------------------------------------------------------------------------
cdef enum:
    ROW_UNIT = 0     # compact row, w == 1
    ROW_DIRECT = 1   # compact row
    ROW_GATHER = 2   # full row, entry act[t] for position t

ctypedef struct _UnitTag:
    char unused
ctypedef struct _DirectTag:
    char unused
ctypedef struct _GatherTag:
    char unused
ctypedef _UnitTag* UnitRows
ctypedef _DirectTag* DirectRows
ctypedef _GatherTag* GatherRows

ctypedef fused Way:
    UnitRows
    DirectRows
    GatherRows


cdef inline int _access(Problem* P, ACache* AC) noexcept nogil:
    if not _direct(P, AC):
        return ROW_GATHER
    return ROW_UNIT if P.unit_w else ROW_DIRECT


cdef inline double _kw(Way way, const floating* Kr, Py_ssize_t t, const Py_ssize_t* act,
                       const double* w, double wi) noexcept nogil:
    """w_i w_t K[i, var(t)]: the off-diagonal entry of Q (up to the c signs) for row i."""
    if Way is UnitRows:
        return Kr[t]
    elif Way is DirectRows:
        return wi * w[t] * Kr[t]
    else:
        return wi * w[t] * Kr[act[t]]


cdef inline double _dk(Way way, const floating* Ki, const floating* Kj, double ci, double cj,
                       Py_ssize_t t, const Py_ssize_t* act, const double* w) noexcept nogil:
    """The change of F at position t after a step with row coefficients ci (row i) and cj (row j)."""
    if Way is UnitRows:
        return ci * Ki[t] + cj * Kj[t]
    elif Way is DirectRows:
        return w[t] * (ci * Ki[t] + cj * Kj[t])
    else:
        return w[t] * (ci * Ki[act[t]] + cj * Kj[act[t]])


ctypedef struct Scan:
    # The work arrays a hot scan reads, in active-position order.  A scan copies them into a local
    # struct, which the compiler keeps in registers: read through P, they would be reloaded after every
    # store (extensions build without strict aliasing).
    Py_ssize_t* act
    double* F
    double* QD
    double* w
    unsigned char* st
    int* grp


cdef inline Scan _scan(Problem* P) noexcept nogil:
    cdef Scan v
    v.act, v.F, v.QD, v.w, v.st, v.grp = P.act, P.wF, P.wQD, P.ww, P.wst, P.wgrp
    return v


# The mode-1 scans are written without data-dependent branches except the rarely taken "new best" one:
# which variables are in I_up / I_low and the sign of d are close to random, and mispredicted branches,
# not arithmetic, dominated these loops.  Masked values become neutral elements instead (+inf for a
# minimum, 0 for the gain).  Four running bests (positions t = u mod 4), merged at the end, keep the
# compare-and-select chains independent, so that the loops are bound by throughput, not latency.

ctypedef struct JAcc:
    double bn       # best d^2 ...
    double bd       # ... over its quad
    double ml       # min F over I_low
    double neg      # most negative curvature met
    Py_ssize_t bj   # position of the best


cdef inline void _jstep(JAcc* a, Py_ssize_t t, double f, unsigned char st, double qd, double kv,
                        double qi, double Fi) noexcept nogil:
    """One candidate j of _select_j (kv = w_i w_j K_ij)."""
    cdef bint low = (st & ST_LOW) != 0
    cdef double fm = f if low else INFINITY
    cdef double quad = qi + qd - 2.0 * kv
    cdef double d = Fi - f
    a.ml = fm if fm < a.ml else a.ml
    a.neg = quad if quad < a.neg else a.neg
    quad = quad if quad > 0 else TAU
    d = d if (low and d > 0) else 0.0
    # d^2/quad > bn/bd, compared without dividing
    if d * d * a.bd > a.bn * quad:
        a.bn = d * d
        a.bd = quad
        a.bj = t


cdef inline Py_ssize_t _select_j(Problem* P, const floating* Kr, Py_ssize_t i, double Fi, Way way,
                                 double* m_low) noexcept nogil:
    """Mode 1 j-selection: the I_low member maximising d^2/quad with d = F_i - F_j > 0 (WSS3).

    Also returns in m_low[0] the minimum of F over I_low (for the stopping test), and records negative
    curvature.
    """
    cdef Py_ssize_t t, u, j = -1, A = P.A, A4 = P.A - P.A % 4
    cdef Scan v = _scan(P)
    cdef double qi = v.QD[i], wi = v.w[i]
    cdef JAcc a[4]
    for u in range(4):
        a[u].bn = 0.0
        a[u].bd = 1.0
        a[u].ml = INFINITY
        a[u].neg = 0.0
        a[u].bj = -1
    for t in range(0, A4, 4):
        _jstep(&a[0], t, v.F[t], v.st[t], v.QD[t], _kw(way, Kr, t, v.act, v.w, wi), qi, Fi)
        _jstep(&a[1], t + 1, v.F[t + 1], v.st[t + 1], v.QD[t + 1], _kw(way, Kr, t + 1, v.act, v.w, wi), qi, Fi)
        _jstep(&a[2], t + 2, v.F[t + 2], v.st[t + 2], v.QD[t + 2], _kw(way, Kr, t + 2, v.act, v.w, wi), qi, Fi)
        _jstep(&a[3], t + 3, v.F[t + 3], v.st[t + 3], v.QD[t + 3], _kw(way, Kr, t + 3, v.act, v.w, wi), qi, Fi)
    for t in range(A4, A):
        _jstep(&a[0], t, v.F[t], v.st[t], v.QD[t], _kw(way, Kr, t, v.act, v.w, wi), qi, Fi)
    for u in range(1, 4):
        a[0].ml = a[u].ml if a[u].ml < a[0].ml else a[0].ml
        a[0].neg = a[u].neg if a[u].neg < a[0].neg else a[0].neg
    # the best ratio, ties to the smallest position
    for u in range(4):
        if a[u].bj >= 0 and (j < 0 or a[u].bn * a[0].bd > a[0].bn * a[u].bd
                             or (a[u].bn * a[0].bd == a[0].bn * a[u].bd and a[u].bj < j)):
            a[0].bn = a[u].bn
            a[0].bd = a[u].bd
            j = a[u].bj
    if a[0].neg < -1e-6 * (fabs(qi) + 1e-300):
        P.neg_curv = 1
    m_low[0] = a[0].ml
    m_low[1] = INFINITY
    return j


ctypedef struct IAcc:
    double mx
    Py_ssize_t mi


cdef inline void _istep(IAcc* a, Py_ssize_t t, double* F, const unsigned char* wst, double dF) noexcept nogil:
    cdef double f = F[t] - dF
    cdef double v
    F[t] = f
    v = f if (wst[t] & ST_UP) else -INFINITY
    if v > a.mx:
        a.mx = v
        a.mi = t


cdef inline Py_ssize_t _update_one(Problem* P, const floating* Ki, const floating* Kj, double ci, double cj,
                                   Way way, double* Fi_out) noexcept nogil:
    """Mode 1 gradient update fused with the choice of the next i (largest F over I_up)."""
    cdef Py_ssize_t t, u, i = -1, A = P.A, A4 = P.A - P.A % 4
    cdef Scan v = _scan(P)
    cdef double Fi = -INFINITY
    cdef IAcc a[4]
    for u in range(4):
        a[u].mx = -INFINITY
        a[u].mi = -1
    for t in range(0, A4, 4):
        _istep(&a[0], t, v.F, v.st, _dk(way, Ki, Kj, ci, cj, t, v.act, v.w))
        _istep(&a[1], t + 1, v.F, v.st, _dk(way, Ki, Kj, ci, cj, t + 1, v.act, v.w))
        _istep(&a[2], t + 2, v.F, v.st, _dk(way, Ki, Kj, ci, cj, t + 2, v.act, v.w))
        _istep(&a[3], t + 3, v.F, v.st, _dk(way, Ki, Kj, ci, cj, t + 3, v.act, v.w))
    for t in range(A4, A):
        _istep(&a[0], t, v.F, v.st, _dk(way, Ki, Kj, ci, cj, t, v.act, v.w))
    for u in range(4):
        if a[u].mi >= 0 and (i < 0 or a[u].mx > Fi or (a[u].mx == Fi and a[u].mi < i)):
            Fi = a[u].mx
            i = a[u].mi
    Fi_out[0] = Fi
    return i


cdef inline void _update_groups(Problem* P, const floating* Ki, const floating* Kj, double ci, double cj,
                                Way way, Py_ssize_t* ig, double* Fi) noexcept nogil:
    """Mode 2 gradient update fused with the choice of the next i of each class."""
    cdef Py_ssize_t t
    cdef int g
    cdef double f
    cdef Scan v = _scan(P)
    for t in range(P.A):
        f = v.F[t] - _dk(way, Ki, Kj, ci, cj, t, v.act, v.w)
        v.F[t] = f
        if v.st[t] & ST_UP:
            g = v.grp[t]
            if f >= Fi[g]:
                Fi[g] = f
                ig[g] = t


# --------------------------------------------------------------------------------------------------
# The SMO loop: one implementation for every mode.  A mode supplies the working-set selection (which
# also returns the KKT gap) and the step; both communicate through a WorkingSet that also carries what a
# step leaves for the next selection pass (the pending gradient update of mode 0, the next i of the
# pair modes, both computed in the step's own pass over the active set).
# --------------------------------------------------------------------------------------------------
ctypedef struct WorkingSet:
    Py_ssize_t i           # position of the (first) variable; -1: no violating working set
    Py_ssize_t j           # pair modes: position of the second variable
    Py_ssize_t ig[2]       # pair modes: candidate i per class (mode 1 uses class 0)
    double Fi[2]           # ... and its F
    const void* Krow[2]    # pair modes: rows of the candidates i (floating*)
    const void* Ki         # mode 0: the row of the last step, pending
    double ci              # mode 0: its coefficient
    int pending            # the last step left work for the next selection


cdef inline void _pending_update(Problem* P, ACache* AC, const floating* Ki, double ci) noexcept nogil:
    """Mode 0: F -= w * ci * K_i over the active set (the update a step leaves for the next pass)."""
    cdef Py_ssize_t t
    cdef bint direct = _direct(P, AC)
    cdef Scan v = _scan(P)
    for t in range(P.A):
        v.F[t] -= v.w[t] * ci * Ki[t if direct else v.act[t]]


cdef void _settle(Problem* P, ACache* AC, WorkingSet* W, const floating* Kb) noexcept nogil:
    """Make F exact on the active set and drop the state carried between iterations.

    Needed before shrinking (it reads F and moves positions) and after the last step.  ``Kb`` only
    selects the fused type.
    """
    if W.pending and P.mode == 0:
        _pending_update(P, AC, <const floating*> W.Ki, W.ci)
    W.pending = 0


cdef double _select_single(Problem* P, ACache* AC, WorkingSet* W, const floating* Kb) noexcept nogil:
    """Mode 0: the variable whose exact, clipped line minimisation decreases the objective most.

    The same pass applies the pending gradient update of the last step.  Returns the KKT gap.
    """
    cdef Py_ssize_t t, k, i = -1
    cdef double m_up[2]
    cdef double m_low[2]
    cdef double best = 0.0, f, qd, step, gain, lim
    cdef const floating* Ki = <const floating*> W.Ki
    cdef double ci = W.ci
    cdef bint first = not W.pending, direct = _direct(P, AC)
    cdef unsigned char st
    cdef Scan v = _scan(P)
    m_up[0] = m_up[1] = -INFINITY
    m_low[0] = m_low[1] = INFINITY
    for t in range(P.A):
        if not first:
            v.F[t] -= v.w[t] * ci * Ki[t if direct else v.act[t]]
        st = v.st[t]
        f = v.F[t]
        k = v.act[t]
        if (st & ST_UP) and f > 0:
            if f > m_up[0]:
                m_up[0] = f
            lim = P.up[k] - P.alpha[k]
        elif (st & ST_LOW) and f < 0:
            if f < m_low[0]:
                m_low[0] = f
            lim = P.lo[k] - P.alpha[k]
        else:
            continue
        qd = v.QD[t]
        if qd <= 0:
            if qd < 0:
                P.neg_curv = 1
            qd = TAU
        step = f / qd
        if fabs(step) > fabs(lim):
            step = lim
        gain = step * (f - 0.5 * qd * step)
        if gain > best:
            best = gain
            i = t
    W.pending = 0
    W.i = i
    return _gap(P, m_up, m_low)


cdef int _step_single(Problem* P, ACache* AC, const floating* Kb, RowCache* C, WorkingSet* W) noexcept nogil:
    """Mode 0: move variable W.i to the minimum along its axis; the gradient update is left pending."""
    cdef Py_ssize_t i = W.i, io = P.act[i]
    cdef double f = P.wF[i], qd = P.wQD[i], step, lim, ai_new, db
    cdef const floating* Ki
    if f > 0:
        lim = P.up[io] - P.alpha[io]
    else:
        lim = P.lo[io] - P.alpha[io]
    if qd <= 0:
        if not isfinite(lim):
            P.unbounded = 1    # the objective decreases without end along this axis
            return 0
        qd = TAU
    step = f / qd
    if f > 0:
        ai_new = P.up[io] if step >= lim else P.alpha[io] + step
    else:
        ai_new = P.lo[io] if step <= lim else P.alpha[io] + step
    step = ai_new - P.alpha[io]
    Ki = _arow(P, AC, Kb, C, io)
    if Ki == NULL:
        return -1
    db = _assign(P, io, ai_new)
    P.wst[i] = P.st[io]
    P.wF[i] -= P.D[io] * step
    W.Ki = <const void*> Ki
    W.ci = P.s[io] * step     # applied to F in the next pass
    W.pending = 1
    return _fbar_update(P, Kb, C, io, db)


cdef int _select_pair(Problem* P, ACache* AC, const floating* Kb, RowCache* C, WorkingSet* W,
                      double* gap) noexcept nogil:
    """Modes 1 and 2: i maximises F over I_up (per class in mode 2), j by the second-order rule.

    Candidates j are compared as d^2/quad without dividing (bnum/bden is the best ratio so far).
    """
    cdef Py_ssize_t t, r, j = -1
    cdef int g, access
    cdef double wi[2]
    cdef double qi[2]
    cdef double m_low[2]
    cdef double f, d, dd, quad, bnum = 0.0, bden = 1.0
    cdef const floating* Kr
    cdef const floating* Kg[2]
    cdef bint direct
    cdef unsigned char st
    cdef Scan v = _scan(P)
    if not W.pending:
        _select_i(P, W.ig, W.Fi)
    W.pending = 0
    direct = _direct(P, AC)
    for g in range(2):
        if W.ig[g] >= 0:
            Kr = _arow(P, AC, Kb, C, v.act[W.ig[g]])
            if Kr == NULL:
                return -1
            W.Krow[g] = <const void*> Kr
            Kg[g] = Kr
            wi[g] = v.w[W.ig[g]]
            qi[g] = v.QD[W.ig[g]]
    m_low[0] = m_low[1] = INFINITY
    if P.mode == 1:
        Kr = <const floating*> W.Krow[0]
        access = _access(P, AC)
        if W.ig[0] < 0:
            _extremes_low(P, m_low)
        elif access == ROW_UNIT:
            j = _select_j(P, Kr, W.ig[0], W.Fi[0], <UnitRows> NULL, m_low)
        elif access == ROW_DIRECT:
            j = _select_j(P, Kr, W.ig[0], W.Fi[0], <DirectRows> NULL, m_low)
        else:
            j = _select_j(P, Kr, W.ig[0], W.Fi[0], <GatherRows> NULL, m_low)
    else:
        for t in range(P.A):
            st = v.st[t]
            if st & ST_LOW:
                g = v.grp[t]
                f = v.F[t]
                if f < m_low[g]:
                    m_low[g] = f
                d = W.Fi[g] - f
                if d > 0:
                    r = t if direct else v.act[t]
                    quad = qi[g] + v.QD[t] - 2.0 * wi[g] * v.w[t] * Kg[g][r]
                    if quad <= 0:
                        if quad < -1e-6 * (fabs(qi[g]) + fabs(v.QD[t])):
                            P.neg_curv = 1
                        quad = TAU
                    dd = d * d
                    if dd * bden >= bnum * quad:
                        bnum = dd
                        bden = quad
                        j = t
    W.j = j
    W.i = -1 if j < 0 else W.ig[P.wgrp[j]]
    gap[0] = _gap(P, W.Fi, m_low)
    return 0


cdef int _step_pair(Problem* P, ACache* AC, const floating* Kb, RowCache* C, WorkingSet* W) noexcept nogil:
    """Modes 1 and 2: the exact step along d_i = c_i, d_j = -c_j (keeps every equality constraint),
    clipped to the box; the gradient update chooses the next i in the same pass."""
    cdef Py_ssize_t i = W.i, j = W.j, io = P.act[i], jo = P.act[j]
    cdef int g = P.wgrp[j], access
    cdef double quad, tau, room_i, room_j, ai_new, aj_new, ci, cj, dbi, dbj
    cdef const floating* Ki
    cdef const floating* Kj
    cdef double* w = P.ww
    cdef double kij = (<const floating*> W.Krow[g])[j if _direct(P, AC) else jo]
    quad = P.wQD[i] + P.wQD[j] - 2.0 * w[i] * w[j] * kij
    room_i = (P.up[io] - P.alpha[io]) if P.c[io] > 0 else (P.alpha[io] - P.lo[io])
    room_j = (P.alpha[jo] - P.lo[jo]) if P.c[jo] > 0 else (P.up[jo] - P.alpha[jo])
    if quad <= 0:
        if not isfinite(room_i) and not isfinite(room_j):
            P.unbounded = 1    # the objective decreases without end along this pair's direction
            return 0
        quad = TAU
    tau = (P.wF[i] - P.wF[j]) / quad
    # land exactly on the bound that limits the step so that statuses are exact
    if tau >= room_i or tau >= room_j:
        if room_i <= room_j:
            tau = room_i
            ai_new = P.up[io] if P.c[io] > 0 else P.lo[io]
            aj_new = P.alpha[jo] - P.c[jo] * tau
            if room_i == room_j:
                aj_new = P.lo[jo] if P.c[jo] > 0 else P.up[jo]
        else:
            tau = room_j
            aj_new = P.lo[jo] if P.c[jo] > 0 else P.up[jo]
            ai_new = P.alpha[io] + P.c[io] * tau
    else:
        ai_new = P.alpha[io] + P.c[io] * tau
        aj_new = P.alpha[jo] - P.c[jo] * tau
    Kj = _arow(P, AC, Kb, C, jo)
    if Kj == NULL:
        return -1
    Ki = _arow(P, AC, Kb, C, io)   # a cache may have evicted row i while fetching row j
    if Ki == NULL:
        return -1
    ci = w[i] * tau
    cj = -w[j] * tau
    dbi = _assign(P, io, ai_new)
    dbj = _assign(P, jo, aj_new)
    P.wst[i] = P.st[io]
    P.wst[j] = P.st[jo]
    P.wF[i] -= P.D[io] * tau
    P.wF[j] += P.D[jo] * tau
    W.ig[0] = W.ig[1] = -1
    W.Fi[0] = W.Fi[1] = -INFINITY
    access = _access(P, AC)
    if P.mode == 1:
        if access == ROW_UNIT:
            W.ig[0] = _update_one(P, Ki, Kj, ci, cj, <UnitRows> NULL, W.Fi)
        elif access == ROW_DIRECT:
            W.ig[0] = _update_one(P, Ki, Kj, ci, cj, <DirectRows> NULL, W.Fi)
        else:
            W.ig[0] = _update_one(P, Ki, Kj, ci, cj, <GatherRows> NULL, W.Fi)
    elif access == ROW_UNIT:
        _update_groups(P, Ki, Kj, ci, cj, <UnitRows> NULL, W.ig, W.Fi)
    elif access == ROW_DIRECT:
        _update_groups(P, Ki, Kj, ci, cj, <DirectRows> NULL, W.ig, W.Fi)
    else:
        _update_groups(P, Ki, Kj, ci, cj, <GatherRows> NULL, W.ig, W.Fi)
    W.pending = 1
    if _fbar_update(P, Kb, C, io, dbi) < 0:
        return -1
    return _fbar_update(P, Kb, C, jo, dbj)


cdef int _solve(Problem* P, ACache* AC, const floating* Kb, RowCache* C) noexcept nogil:
    """The SMO iterations of every mode: stop checks, periodic shrinking, selection, step.

    Loops run over active positions t (variable act[t]).  Ends on a KKT gap below tol on the full set,
    no violating working set, the iteration limit, Ctrl-C, or an unbounded direction.
    """
    cdef Py_ssize_t n = P.n
    cdef Py_ssize_t every = n if n < SHRINK_EVERY else SHRINK_EVERY
    cdef int unshrunk = 0, just_unshrunk = 0, rc
    cdef double gap = 0.0, best_gap = INFINITY
    cdef long long progress_at = P.n_iter
    cdef WorkingSet W
    W.pending = 0
    W.ig[0] = W.ig[1] = -1
    # a warm start has an exact gradient near the optimum: shrink at once instead of after
    # min(n, 1000) full-size iterations
    cdef Py_ssize_t counter = 1 if P.opt.warm else every
    while not _must_stop(P):
        if P.opt.shrinking and not just_unshrunk:
            counter -= 1
            if counter == 0:
                counter = every
                _settle(P, AC, &W, Kb)    # shrinking reads F and moves positions
                if _maintain(P, AC, Kb, C, &unshrunk) < 0:
                    return -1
        if P.mode == 0:
            gap = _select_single(P, AC, &W, Kb)
        elif _select_pair(P, AC, Kb, C, &W, &gap) < 0:
            return -1
        if gap < P.opt.tol or W.i < 0:
            if P.A < n:
                # check optimality on the full set before shrinking again (else shrink/unshrink cycles)
                if _unshrink_all(P, AC, Kb, C) < 0:
                    return -1
                counter = 1
                just_unshrunk = 1
                continue
            break
        just_unshrunk = 0
        # Stall detection.  Pair steps converge linearly at a rate set by the conditioning of Q on the face
        # of free variables: on a nearly singular face (rank-deficient or duplicated kernels, large C) the
        # gap can stay flat for millions of steps.  The caller then polishes on the face and restarts.
        if gap <= 0.5 * best_gap:
            best_gap = gap
            progress_at = P.n_iter
        elif P.n_iter - progress_at > P.plateau:
            P.plateau = P.n_iter - progress_at
            if P.opt.stall_window > 0 and P.plateau >= P.opt.stall_window:
                P.stalled = 1
                break
        rc = _step_single(P, AC, Kb, C, &W) if P.mode == 0 else _step_pair(P, AC, Kb, C, &W)
        if rc < 0:
            return -1
        if P.unbounded:
            break
        P.sum_active += P.A
        P.n_iter += 1
    _settle(P, AC, &W, Kb)
    return 0


cdef void _given_gradient(Problem* P) noexcept nogil:
    """The statuses of a start whose F and Fbar the caller gave (see ``solve``'s ``initial``)."""
    cdef Py_ssize_t k
    for k in range(P.n):
        P.st[k] = _status(P.alpha[k], P.lo[k], P.up[k], P.c[k])


cdef int _run(Problem* P, ACache* AC, const floating* Kb, RowCache* C, bint given) noexcept nogil:
    cdef int rc = 0
    _unshrink_list(P)    # the active list is read from the start (the row cache's speculative blocks)
    if given:
        _given_gradient(P)
    else:
        rc = _init_gradient(P, Kb, C)
    if rc < 0:
        return rc
    _ac_reset(AC, P.n, P.n)
    _sync_in(P)
    rc = _solve(P, AC, Kb, C)
    _sync_out(P)
    if rc < 0:
        return rc
    # the final gradient must be exact on every variable (objective, multipliers, KKT report)
    rc = _reconstruct(P, Kb, C)
    _unshrink_list(P)
    return rc


cdef class _Provider:
    """Python-side owner of the row cache: the slots and the callbacks ``column(i, out)`` (one column into
    ``out``) and ``columns(rows, out)`` (a block of columns into the rows of ``out``)."""

    cdef object column
    cdef object columns
    cdef object data
    cdef object exc
    cdef RowCache cache
    cdef Py_ssize_t[::1] slot_of
    cdef Py_ssize_t[::1] row_of
    cdef long long[::1] stamp
    cdef Py_ssize_t[::1] spec

    def __init__(self, column, columns, Py_ssize_t n, Py_ssize_t n_slots):
        cdef double[:, ::1] data
        self.column = column
        self.columns = columns
        self.exc = None
        n_slots = max(2, min(n_slots, n))
        self.data = np.empty((n_slots, n), dtype=np.float64)
        data = self.data
        self.slot_of = np.full(n, -1, dtype=np.intp)
        self.row_of = np.full(n_slots, -1, dtype=np.intp)
        self.stamp = np.zeros(n_slots, dtype=np.int64)
        self.cache.n = n
        self.cache.n_slots = n_slots
        self.cache.data = &data[0, 0]
        self.cache.slots.n_slots = n_slots
        self.cache.slots.slot_of = &self.slot_of[0]
        self.cache.slots.owner = &self.row_of[0]
        self.cache.slots.stamp = &self.stamp[0]
        self.cache.slots.clock = 0
        self.cache.slots.misses = 0
        # borrowed: the cache lives inside this object (a stored bound method would make a reference
        # cycle, and every solve's cache would wait for the cyclic garbage collector)
        self.cache.owner = <PyObject*> self
        self.cache.error = 0
        self.cache.block = min(16, n_slots // 8)
        self.spec = np.empty(max(self.cache.block, 1), dtype=np.intp)
        self.cache.spec = &self.spec[0]
        self.cache.act = NULL    # set by solve for the duration of a run

    def _fill(self, Py_ssize_t i, Py_ssize_t slot):
        out = self.data[slot]
        try:
            self.column(i, out)
        except BaseException as exc:
            self.exc = exc
            raise

    def _fill_many(self, rows, slots):
        block = np.empty((len(rows), self.data.shape[1]), dtype=np.float64)
        try:
            self.columns(rows, block)
        except BaseException as exc:
            self.exc = exc
            raise
        self.data[slots] = block

    @property
    def n_miss(self):
        return self.cache.slots.misses


cdef class QP:
    """The per-variable data of one problem, as the core reads it (see the module docstring).

    Every array has length n: ``p`` linear term, ``lower``/``upper`` bounds, ``c`` equality signs (+-1),
    ``s`` kernel signs, ``ridge`` the diagonal ``D``, ``diag`` the diagonal of ``Q`` (``K_kk + D_k``),
    ``group`` the class (0/1) in mode 2.  ``mode`` is 0, 1 or 2.
    """

    cdef readonly int mode
    cdef readonly Py_ssize_t n
    cdef const double[::1] p, lo, up, c, s, D, QD
    cdef const int[::1] grp

    def __init__(self, int mode, *, const double[::1] p, const double[::1] lower, const double[::1] upper,
                 const double[::1] c, const double[::1] s, const double[::1] ridge, const double[::1] diag,
                 const int[::1] group):
        if mode not in (0, 1, 2):
            raise ValueError(f"mode must be 0, 1 or 2; got {mode}")
        self.n = p.shape[0]
        for name, arr in (("lower", lower), ("upper", upper), ("c", c), ("s", s), ("ridge", ridge),
                          ("diag", diag), ("group", group)):
            if arr.shape[0] != self.n:
                raise ValueError(f"{name} has length {arr.shape[0]}; expected {self.n}")
        self.mode = mode
        self.p, self.lo, self.up, self.c, self.s, self.D, self.QD = p, lower, upper, c, s, ridge, diag
        self.grp = group


def solve(kernel, double[::1] alpha, QP qp, Options options, unsigned char[::1] active_cache,
          initial=None):
    """Run the solver in place on ``alpha`` (already feasible) for the problem ``qp``.

    ``kernel`` is a C-contiguous float32/float64 square matrix, or a ``_Provider`` that serves its rows.
    ``options`` fills the C struct ``Options`` (a mapping with ``tol``, ``max_iter`` (< 0: no limit),
    ``shrinking``, ``warm``, whether ``alpha`` is a warm start, and ``stall_window``, the number of steps
    without halving the best KKT gap after which the solve stops with ``stalled`` set; 0 for never).
    ``active_cache`` is the (reusable) byte buffer of the cache of active-set rows used once shrinking has
    started; its size bounds that cache.  Returns a dict with the full gradient ``G``, ``n_iter``,
    ``hit_max_iter``, ``neg_curv``, ``unbounded``, ``stalled`` and diagnostics.

    ``initial``, when given, is ``(G, Gbar)``: the gradient ``Q alpha + p`` at the start and its part
    ``sum over the variables at a bound of alpha_j Q[:, j]`` (ridge included), computed by the caller (from
    products it already has: an outer MKL loop's ``K(mu) v``), so that no kernel row is read to start.
    """
    cdef Py_ssize_t n = alpha.shape[0], k
    cdef Problem P
    cdef const double[:, ::1] K64
    cdef const float[:, ::1] K32
    cdef _Provider provider = kernel if isinstance(kernel, _Provider) else None
    cdef RowCache* C = NULL
    cdef ACache AC
    cdef int rc = 0
    if qp.n != n:
        raise ValueError(f"alpha has length {n}; the problem has {qp.n} variables")
    # O(n) work arrays, grouped by type
    work = np.empty((7, n), dtype=np.float64)      # F, Fbar, Fp, w, wF, wQD, ww
    index = np.empty((6, n + 1), dtype=np.intp)    # act, keep, active-cache slot_of, row_of, prv, nxt
    flags = np.empty((2, n), dtype=np.uint8)       # st, wst
    wgrp = np.empty(n, dtype=np.intc)
    cdef double[:, ::1] dv = work
    cdef Py_ssize_t[:, ::1] iv = index
    cdef unsigned char[:, ::1] fv = flags
    cdef int[::1] gv = wgrp
    memset(&AC, 0, sizeof(AC))
    AC.data = <void*> &active_cache[0]
    # the buffer comes from numpy, aligned for doubles
    AC.capacity = active_cache.shape[0] // (4 if (provider is None and kernel.dtype == np.float32) else 8)
    AC.stride = 1
    AC.slot_of = &iv[2, 0]
    AC.row_of = &iv[3, 0]
    AC.prv = &iv[4, 0]
    AC.nxt = &iv[5, 0]
    for k in range(n):
        AC.slot_of[k] = -1
    memset(&P, 0, sizeof(P))
    P.n = n
    P.A = n
    P.mode = qp.mode
    P.opt = options
    P.alpha = &alpha[0]
    P.F, P.Fbar, P.Fp, P.w = &dv[0, 0], &dv[1, 0], &dv[2, 0], &dv[3, 0]
    P.wF, P.wQD, P.ww = &dv[4, 0], &dv[5, 0], &dv[6, 0]
    P.act, P.keep = &iv[0, 0], &iv[1, 0]
    P.st, P.wst = &fv[0, 0], &fv[1, 0]
    P.wgrp = &gv[0]
    P.QD = <double*> &qp.QD[0]
    P.D = <double*> &qp.D[0]
    P.lo = <double*> &qp.lo[0]
    P.up = <double*> &qp.up[0]
    P.c = <double*> &qp.c[0]
    P.s = <double*> &qp.s[0]
    P.grp = <int*> &qp.grp[0]
    P.unit_w = True
    for k in range(n):
        P.Fp[k] = -qp.c[k] * qp.p[k]
        P.w[k] = qp.c[k] * qp.s[k]
        if P.w[k] != 1.0:
            P.unit_w = False
    cdef bint given = initial is not None
    if given:
        work[0] = -np.asarray(qp.c) * np.asarray(initial[0], dtype=np.float64)
        work[1] = -np.asarray(qp.c) * np.asarray(initial[1], dtype=np.float64)
    if provider is not None:
        C = &provider.cache
        C.act = P.act
        C.n_act = &P.A
        C.cursor = 0
        with nogil:
            rc = _run[double](&P, &AC, <const double*> NULL, C, given)
        C.act = NULL
        if rc < 0:
            if provider.exc is not None:
                raise provider.exc
            raise RuntimeError("the column provider failed")
    elif kernel.dtype == np.float32:
        K32 = kernel
        with nogil:
            rc = _run[float](&P, &AC, &K32[0, 0], C, given)
    else:
        K64 = kernel
        with nogil:
            rc = _run[double](&P, &AC, &K64[0, 0], C, given)
    if rc < 0:
        raise MemoryError("the SMO solver could not allocate its O(n) work arrays")
    if P.interrupted:
        raise KeyboardInterrupt(f"SMO solve interrupted after {P.n_iter} iterations")
    G = -np.asarray(qp.c) * work[0]
    return {"G": G, "n_iter": int(P.n_iter), "hit_max_iter": bool(P.hit_max_iter),
            "neg_curv": bool(P.neg_curv), "unbounded": bool(P.unbounded),
            "stalled": bool(P.stalled), "plateau": int(P.plateau),
            "mean_active": P.sum_active / max(P.n_iter, 1), "active_cache_misses": int(P.ac_miss)}
