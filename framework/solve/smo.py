"""The SMO solver family: one Cython core for every inner quadratic program of the library.

The general problem is

    minimise  1/2 alpha' Q alpha + p' alpha
    subject to  lower <= alpha <= upper,   optionally  y' alpha = y_sum   and/or   1' alpha = total,

with ``Q = (y y') o K + diag(ridge)`` (``signed=True``) or ``Q = K + diag(ridge)``.  :func:`solve_qp`
solves it with sequential minimal optimisation: second-order working-set selection (Fan, Chen and Lin,
2005), shrinking with gradient reconstruction, and a warm start that only touches the kernel rows of the
non-zero entries of the starting point.  When the pair steps stall (a nearly singular face of free variables:
rank-deficient or duplicated kernels at large C), the solve polishes with Newton steps on that face and restarts
(:func:`_polish`).  :func:`multikernel.solve.svm.solve_inner` is the entry point of the
MKL inner problems (the SVM forms and any other data of this shape), with both objectives.

Termination is guaranteed: by default a solve stops after :func:`default_max_iter` steps (libsvm's rule)
with a ``ConvergenceWarning``; non-positive curvature is floored (the tau rule), and a direction of
negative curvature that no bound stops (an indefinite kernel with infinite upper bounds) ends the solve
with a ``ValueError``: the problem is unbounded below.
"""

from __future__ import annotations

import math
import threading
import warnings
from collections.abc import Sequence

import attrs
import numpy as np
from scipy.sparse.linalg import LinearOperator, minres
from sklearn.exceptions import ConvergenceWarning

from multikernel._ext import _box, _smo, _stack
from multikernel.core.interfaces import KernelColumns
from multikernel.core.validation import check_positive_real

__all__ = ["QPResult", "KernelColumns", "StackColumns", "solve_qp", "as_symmetric_rows", "check_cache_size",
           "default_max_iter", "fill_to_sum"]

_NEG_CURVATURE_WARNING = (
    "the kernel is not positive semi-definite (negative curvature met during SMO); the solver used "
    "a curvature floor and returns a stationary point, which need not be the global optimum"
)


@attrs.define(slots=False)
class QPResult:
    """Outcome of :func:`solve_qp`.

    Attributes
    ----------
    alpha : ndarray of shape (n,)
        The solution, feasible to rounding.
    objective : float
        ``1/2 alpha' Q alpha + p' alpha`` at ``alpha`` (the minimised objective).
    gradient : ndarray of shape (n,)
        ``Q alpha + p``.
    bias : float
        Multiplier ``b`` of ``y' alpha = y_sum`` (0 when that constraint is absent).  For the C-SVC dual
        this is the offset of the decision function ``f(x) = sum_i alpha_i y_i k(x, x_i) + b``.
    rho : float
        ``-`` the multiplier of ``1' alpha = total`` (0 when absent): on the free variables
        ``gradient + b y - rho = 0``.
    kkt_violation : float
        The maximal KKT violation at ``alpha``: ``max over I_up of -c G - min over I_low of -c G`` (per
        class, with ``c`` the sign of the equality constraint) when there are equality constraints, and
        the largest projected-gradient entry otherwise.  The solver stops when it is below ``tol``.
    n_iter : int
        Number of SMO steps.
    converged : bool
        False when ``max_iter`` stopped the solver first.
    stats : dict
        Diagnostics: mean active-set size over the steps, misses of the active-row cache, the longest run of
        steps without halving the best KKT gap (``plateau``) and the number of polishes on the face of free
        variables that ended a stall (``polish_steps``).
    """

    alpha: np.ndarray
    objective: float
    gradient: np.ndarray
    bias: float
    rho: float
    kkt_violation: float
    n_iter: int
    converged: bool
    stats: dict = attrs.Factory(dict)


class StackColumns(KernelColumns):
    """Columns of ``sum_m weights[m] K_m`` computed on demand from a stack of kernels.

    Parameters
    ----------
    kernels : ndarray of shape (M, n, n) or sequence of M arrays of shape (n, n)
        Symmetric base kernels (float32 or float64; memory-mapped arrays work too).
    weights : array-like of shape (M,)
        Combination weights; kernels with a zero weight are never read.
    cache_size : float, default=200
        Megabytes of columns :func:`solve_qp` may cache.
    """

    def __init__(self, kernels: np.ndarray | Sequence[np.ndarray], weights: np.ndarray,
                 cache_size: float = 200.0) -> None:
        self.kernels = kernels
        self.cache_size = cache_size
        self.weights = np.asarray(weights, dtype=np.float64)
        if self.weights.shape != (len(kernels),):
            raise ValueError(f"expected {len(kernels)} weights, got shape {self.weights.shape}")
        self._active = np.flatnonzero(self.weights).astype(np.intp)
        self.n = int(kernels[0].shape[0])
        # one 3-D C-ordered array (a DenseStack's data, or a memory map of one) goes through the stack's
        # fused, threaded row combination, the one CombinedColumns uses; a list of kernels takes numpy's
        self._fused = (isinstance(kernels, np.ndarray) and kernels.ndim == 3 and kernels.flags.c_contiguous
                       and kernels.dtype in (np.float32, np.float64))

    def column(self, i: int, out: np.ndarray) -> None:
        self.columns([i], out[None])

    def columns(self, idx: np.ndarray, out: np.ndarray) -> None:
        if self._fused and out.dtype == np.float64 and out.flags.c_contiguous:
            _stack.combine_rows(self.kernels, self.weights, self._active, np.ascontiguousarray(idx, dtype=np.intp),
                                out)
            return
        out[...] = 0.0
        for m in self._active:
            # row i of a symmetric C-ordered kernel is its column i, and contiguous
            out += self.weights[m] * self.kernels[m][idx]

    def diagonal(self) -> np.ndarray:
        d = np.zeros(self.n)
        for m in self._active:
            d += self.weights[m] * np.diagonal(self.kernels[m])
        return d


def check_cache_size(cache_size: float) -> float:
    """``cache_size`` as a float, or a ``ValueError``: megabytes of kernel columns, positive and finite."""
    return check_positive_real("cache_size (megabytes of kernel columns)", cache_size)


def as_symmetric_rows(K: np.ndarray) -> np.ndarray:
    """A C-contiguous float32/float64 view of the symmetric matrix ``K`` whose rows are its rows.

    A C-ordered array is returned as is; an F-ordered one as its transpose (the same matrix, since ``K``
    is symmetric), so neither is copied.  Any other layout or dtype is converted (one copy).
    """
    K = np.asarray(K)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"the kernel must be a square matrix; got shape {K.shape}")
    if K.dtype not in (np.float32, np.float64):
        K = K.astype(np.float64)
    if K.flags.c_contiguous:
        return K
    if K.flags.f_contiguous:
        return K.T
    return np.ascontiguousarray(K)


_SCRATCH = threading.local()


def _scratch(nbytes: int) -> np.ndarray:
    """A per-thread byte buffer of at least ``nbytes``, reused across solves.

    Fresh large allocations are mapped lazily by the OS, so touching them costs page faults on every
    solve; an outer MKL loop calls the solver many times with the same size.
    """
    buf = getattr(_SCRATCH, "buf", None)
    if buf is None or buf.nbytes < max(nbytes, 8):
        # float64 storage keeps the buffer aligned for doubles
        buf = np.empty(max(nbytes, 8) // 8 + 1, dtype=np.float64).view(np.uint8)
        _SCRATCH.buf = buf
    return buf[: max(nbytes, 8)]


def _vector(value: float | np.ndarray | None, n: int, name: str, default: float) -> np.ndarray:
    if value is None:
        value = default
    out = np.array(np.broadcast_to(np.asarray(value, dtype=np.float64), (n,)), dtype=np.float64)
    if np.isnan(out).any():
        raise ValueError(f"{name} contains NaN")
    return out


def fill_to_sum(beta: np.ndarray, lb: np.ndarray, ub: np.ndarray, target: float) -> None:
    """Move ``beta`` (within [lb, ub]) until ``sum(beta) = target``, in index order (sparse changes)."""
    r = target - beta.sum()
    if r == 0.0:
        return
    room = (ub - beta) if r > 0 else (beta - lb)
    cum = np.cumsum(room)
    # the first indices absorb the residual; everything after them is untouched
    k = int(np.searchsorted(cum, abs(r)))
    sign = 1.0 if r > 0 else -1.0
    if k > 0:
        beta[:k] += sign * room[:k]
    if k < len(beta):
        beta[k] += sign * (abs(r) - (cum[k - 1] if k > 0 else 0.0))
        beta[k] = min(max(beta[k], lb[k]), ub[k])


def _project(x0: np.ndarray, lb: np.ndarray, ub: np.ndarray, target: float) -> np.ndarray:
    """Euclidean projection of ``x0`` on ``{lb <= x <= ub, sum(x) = target}``; rounding's residual filled."""
    x = _box.project(np.ascontiguousarray(x0, dtype=np.float64), np.ascontiguousarray(lb, dtype=np.float64),
                     np.ascontiguousarray(ub, dtype=np.float64), float(target))
    fill_to_sum(x, lb, ub, target)
    return x


def _feasible_start(alpha0: np.ndarray | None, lo: np.ndarray, up: np.ndarray, c: np.ndarray,
                    groups: list[np.ndarray], targets: list[float]) -> np.ndarray:
    """A feasible point: the projection of ``alpha0`` (warm start) or a sparse point (cold start).

    In ``beta = c * alpha`` coordinates every equality constraint reads ``sum over a group = target``.
    """
    lb = np.where(c > 0, lo, -up)
    ub = np.where(c > 0, up, -lo)
    if alpha0 is None:
        beta = np.clip(0.0, lb, ub)
    else:
        beta = np.clip(c * alpha0, lb, ub)
    for idx, target in zip(groups, targets, strict=True):
        b, lbg, ubg = beta[idx], lb[idx], ub[idx]
        scale = max(1.0, abs(target), float(np.abs(b).sum()))
        if alpha0 is not None and abs(b.sum() - target) > 1e-12 * scale:
            b = _project(c[idx] * alpha0[idx], lbg, ubg, target)
        else:
            fill_to_sum(b, lbg, ubg, target)
        beta[idx] = b
    return c * beta


def _check_sum(lb: np.ndarray, ub: np.ndarray, target: float, what: str) -> None:
    low, high = float(lb.sum()), float(ub.sum())
    slack = 1e-12 * max(1.0, abs(target), abs(low), abs(high) if math.isfinite(high) else 0.0)
    if not (low - slack <= target <= high + slack):
        raise ValueError(f"infeasible problem: {what} = {target:g} is impossible within the bounds, "
                         f"which allow values in [{low:g}, {high:g}]")


def _extremes(F: np.ndarray, alpha: np.ndarray, lo: np.ndarray, up: np.ndarray,
              c: np.ndarray) -> tuple[float, float]:
    """``max F`` over the variables that may move along ``+c`` and ``min F`` over those along ``-c``."""
    can_up = np.where(c > 0, alpha < up, alpha > lo)
    can_low = np.where(c > 0, alpha > lo, alpha < up)
    m_up = float(F[can_up].max()) if can_up.any() else -math.inf
    m_low = float(F[can_low].min()) if can_low.any() else math.inf
    return m_up, m_low


def _multiplier(F: np.ndarray, alpha: np.ndarray, lo: np.ndarray, up: np.ndarray,
                c: np.ndarray) -> float:
    """The equality multiplier: mean of ``F = -c G`` over free variables, else the middle of its range."""
    free = (alpha > lo) & (alpha < up)
    if free.any():
        return float(F[free].mean())
    m_up, m_low = _extremes(F, alpha, lo, up, c)
    if math.isfinite(m_up) and math.isfinite(m_low):
        return 0.5 * (m_up + m_low)
    if math.isfinite(m_up):
        return m_up
    return m_low if math.isfinite(m_low) else 0.0


def _violation(F: np.ndarray, alpha: np.ndarray, lo: np.ndarray, up: np.ndarray, c: np.ndarray,
               paired: bool) -> float:
    m_up, m_low = _extremes(F, alpha, lo, up, c)
    if paired:
        return max(m_up - m_low, 0.0)
    return max(m_up, -m_low, 0.0)


def default_max_iter(n: int) -> int:
    """The iteration limit of a solve of ``n`` variables when the caller gives none: libsvm's rule.

    ``max(10_000_000, 100 n)`` steps: far beyond what a convex problem on a symmetric positive
    semi-definite kernel needs (typically a few times ``n``), so that only a kernel that breaks the
    solver's assumptions (not symmetric, for which SMO can cycle) or an extremely ill-conditioned problem
    reaches it, and then the solve ends with a ``ConvergenceWarning`` instead of running forever.
    """
    return max(10_000_000, 100 * int(n))


_MAX_ITER_ADVICE = (
    "This happens when the kernel is not symmetric (the method can then cycle) or when the problem is "
    "extremely ill-conditioned (huge C or kernel values).  Check precomputed kernels with "
    "multikernel.stack.storage.check_kernel_matrices (it symmetrizes them), normalize the kernels, or pass a "
    "larger max_iter or a larger tol."
)

_UNBOUNDED_ERROR = (
    "the quadratic program is unbounded below: Q is not positive semi-definite (the kernel is indefinite) "
    "and a direction of negative curvature meets no bound (infinite upper bounds).  Use a positive "
    "semi-definite kernel (multikernel.stack.storage.check_kernel_matrices reports some indefinite ones), a "
    "larger ridge, or finite upper bounds."
)


# Polishing on the face of free variables.
#
# SMO's pair steps converge linearly at a rate set by the conditioning of Q restricted to the free variables
# (under the equality constraints).  On a nearly singular face (rank-deficient or duplicated kernels, large C)
# the KKT gap can stay flat for millions of steps although the gradient is exact: measured on a rank-10-of-16
# kernel at C = 100, the gap sat at 5e-7 for 10^6 steps, with face eigenvalues from 5e-8 to 2.3 (and libsvm
# stalls the same way at 3e-6).  The Cython core reports such a stall (``stall_window`` steps without halving
# its best gap); the solve then polishes on the face (:func:`_polish`) and restarts SMO from there.
_POLISH_MAX_FREE = 4096      # free variables beyond which the face block (f x f doubles) is not formed
_POLISH_DENSE = 300          # faces up to this size are solved by an eigendecomposition, larger ones by MINRES
_POLISH_MAX_STEPS = 30       # Newton steps of one polish (each one ends on the face's optimum or on a bound)
_POLISH_MAX_ROUNDS = 20      # polishes per solve; then SMO runs on without stall detection
_POLISH_MAX_MINRES = 500     # MINRES iterations per Newton step (each costs one f x f product)
# Problems up to this size polish over every variable (an active-set walk across faces, up to 4 n more steps,
# each an eigendecomposition of at most n x n: below 0.5 s per polish); larger ones polish the free face only.
_POLISH_RELEASE_MAX = 100


def _stall_window(n: int) -> int:
    """Steps without halving the best KKT gap that count as a stall.

    Ordinary solves were measured to plateau for at most ~7 n steps (RBF kernels, n <= 2000, C up to 1e4); a
    false alarm costs one polish, which never increases the objective.
    """
    return max(10_000, 10 * n)


def _face_kernel(Kd: np.ndarray | None, provider: KernelColumns | None, free: np.ndarray) -> np.ndarray:
    """``K[free][:, free]`` in float64, from the dense kernel or block by block from the column provider."""
    if Kd is not None:
        return np.asarray(Kd[np.ix_(free, free)], dtype=np.float64)
    n = int(provider.n)
    out = np.empty((len(free), len(free)))
    block = max(1, (64 * 2**20) // (8 * n))
    for start in range(0, len(free), block):
        rows = free[start:start + block]
        buf = np.empty((len(rows), n))
        provider.columns(rows, buf)
        out[start:start + len(rows)] = buf[:, free]
    return out


def _minres(H: LinearOperator, b: np.ndarray, rtol: float, maxiter: int) -> np.ndarray:
    try:
        return minres(H, b, rtol=rtol, maxiter=maxiter)[0]
    except TypeError:  # scipy < 1.12 names it tol
        return minres(H, b, tol=rtol, maxiter=maxiter)[0]


def _face_projector(c: np.ndarray, grp: np.ndarray, mode: int) -> np.ndarray:
    """The orthogonal projector on the directions that keep the equality constraints (on the given face)."""
    f = len(c)
    P = np.eye(f)
    if mode == 1:
        P -= np.outer(c, c) / f
    elif mode == 2:
        for g in (0, 1):
            v = (grp == g).astype(np.float64)
            if v.any():
                P -= np.outer(v, v) / v.sum()
    return P


def _newton_direction(Q: np.ndarray, g: np.ndarray, P: np.ndarray, tol: float) -> np.ndarray:
    """A descent direction minimising ``g'd + 1/2 d'Qd`` over ``d = P d``: the Newton step of the face.

    On the range of ``H = P Q P`` it is ``-H^+ P g``.  When the projected gradient has a component above tol in
    the null space of ``H`` (zero curvature: the face is unbounded below there until a bound stops it), the
    direction is that component instead, so that the line search slides to a bound.  Small faces use an
    eigendecomposition, large ones MINRES (range part only).
    """
    b = -(P @ g)
    if len(g) <= _POLISH_DENSE:
        w, V = np.linalg.eigh(P @ Q @ P)
        coef = V.T @ b
        rng = w > 1e-12 * max(float(np.abs(w).max()), np.finfo(float).tiny)
        null = V[:, ~rng] @ coef[~rng]
        # An eigenvector is accurate to eps ||H|| / gap: that much of the range part of b leaks into the null
        # part.  A "flat direction" below that floor is rounding, and a slide along it (tiny slope, huge step)
        # breaks the equality constraints (y'alpha = 4e-4 at C = 1e4 on a rank-deficient stack).
        floor = 0.0
        if rng.any():
            floor = 10.0 * np.finfo(float).eps * float(np.linalg.norm(b)) * float(w.max() / w[rng].min())
        if np.abs(null).max(initial=0.0) > max(0.1 * tol, floor):
            # no Newton step reaches a face gradient below tol: first slide along the flat directions to a bound
            return P @ null
        return P @ (V[:, rng] @ (coef[rng] / w[rng]))
    H = LinearOperator(Q.shape, matvec=lambda v: P @ (Q @ (P @ np.ravel(v))), dtype=np.float64)
    norm_b = float(np.linalg.norm(b))
    if norm_b == 0.0:
        return np.zeros_like(g)
    # the face gradient left after the step is the residual: aim well below tol
    d = _minres(H, b, rtol=min(1e-3, 0.01 * tol / norm_b), maxiter=min(10 * len(g), _POLISH_MAX_MINRES))
    return P @ d


def _polish(Kd: np.ndarray | None, provider: KernelColumns | None, alpha: np.ndarray, G: np.ndarray,
            s: np.ndarray, D: np.ndarray, lo: np.ndarray, up: np.ndarray, c: np.ndarray, grp: np.ndarray,
            mode: int, tol: float) -> np.ndarray | None:
    """Newton steps on the face of free variables, each line-searched within the box; None if none helps.

    With the bound variables fixed, a step minimises the objective over the free ones under the equality
    constraints (:func:`_newton_direction`), taken to its exact line minimum or to the first bound on the way.
    A step stopped by a bound fixes that variable and the next step solves the smaller face: a primal
    active-set method.  On problems of up to ``_POLISH_RELEASE_MAX`` variables it also releases, at each face
    optimum, the bound variable whose KKT condition is violated most (against the face's equality multipliers),
    so that a polish walks across faces to the optimum itself (at most ``_POLISH_MAX_STEPS + 4 n`` steps): at
    large C on rank-deficient kernels SMO crawls from face to face as slowly as it crawls within one.  On larger
    problems the first full step ends the polish, and variables that should leave their bounds are SMO's to find
    when it restarts.  The objective never increases and the point stays feasible to rounding.
    """
    n = len(alpha)
    is_free = (alpha > lo) & (alpha < up)
    n_free = int(is_free.sum())
    if n_free == 0 or n_free > _POLISH_MAX_FREE:
        return None
    release = n <= _POLISH_RELEASE_MAX
    U = np.arange(n) if release else np.flatnonzero(is_free)  # the variables the polish may move
    f = len(U)
    Q = _face_kernel(Kd, provider, U)
    Q *= np.outer(s[U], s[U])
    Q[np.diag_indices(f)] += D[U]
    a, g = alpha[U].copy(), G[U].copy()
    lof, upf, cf, gf = lo[U], up[U], c[U], grp[U]
    on = is_free[U].copy()
    decrease = 0.0
    for _ in range(_POLISH_MAX_STEPS + (4 * n if release else 0)):
        idx = np.flatnonzero(on)
        d = np.zeros(f)
        if len(idx) >= (2 if mode == 1 else 1):
            d[idx] = _newton_direction(Q[np.ix_(idx, idx)], g[idx], _face_projector(cf[idx], gf[idx], mode), tol)
        slope = float(g @ d)
        if not (slope < 0.0):
            k = _most_violated(a, g, lof, upf, cf, gf, on, mode, tol) if release else -1
            if k < 0:
                break
            on[k] = True  # the face optimum: free the bound variable that should move, and solve the new face
            continue
        Qd = Q @ d
        curv = float(d @ Qd)
        with np.errstate(divide="ignore", invalid="ignore"):
            room = np.where(d > 0, (upf - a) / d, np.where(d < 0, (lof - a) / d, np.inf))
        k = int(np.argmin(room))
        t_max = float(room[k])
        t = min(t_max, -slope / curv) if curv > 0 else t_max
        if not (0.0 < t < math.inf) or not (t * slope + 0.5 * t * t * curv < 0.0):
            break
        decrease += t * slope + 0.5 * t * t * curv
        a += t * d
        g += t * Qd
        if t < t_max:
            if not release:
                break
            continue
        # land exactly on the bound that stopped the step; that variable leaves the face
        bound = upf[k] if d[k] > 0 else lof[k]
        g += Q[:, k] * (bound - a[k])
        a[k] = bound
        on[k] = False
    if not (decrease < 0.0):
        return None
    new = alpha.copy()
    new[U] = np.clip(a, lof, upf)
    if not _keeps_equalities(new[U] - alpha[U], cf, gf, mode, float(np.abs(new[U]).max(initial=0.0))):
        return None
    return new


def _most_violated(a: np.ndarray, g: np.ndarray, lo: np.ndarray, up: np.ndarray, c: np.ndarray, grp: np.ndarray,
                   on: np.ndarray, mode: int, tol: float) -> int:
    """The variable off the face (``~on``) whose KKT condition is violated most, by more than ``tol / 2``, at a
    face optimum; -1 if none.

    In ``F = -c g`` the free variables of an equality's group share one value ``b`` (0 without equalities) at
    the face optimum; a variable that may move along ``+c`` violates its condition by ``F_k - b``, one that may
    move along ``-c`` by ``b - F_k`` (the two terms of SMO's gap ``max F_up - min F_low``).
    """
    F = -c * g
    b = np.zeros(len(a))
    if mode:
        groups = [np.ones(len(a), dtype=bool)] if mode == 1 else [grp == 0, grp == 1]
        for member in groups:
            face = member & on
            if face.any():
                b[member] = float(np.mean(F[face]))
            else:  # no free variable: the middle of the group's range of multipliers
                m_up, m_low = _extremes(F[member], a[member], lo[member], up[member], c[member])
                b[member] = 0.5 * (m_up + m_low) if np.isfinite(m_up) and np.isfinite(m_low) else 0.0
    can_up = np.where(c > 0, a < up, a > lo)
    can_low = np.where(c > 0, a > lo, a < up)
    viol = np.maximum(np.where(can_up, F - b, -np.inf), np.where(can_low, b - F, -np.inf))
    viol[on] = -np.inf
    k = int(np.argmax(viol))
    return k if viol[k] > 0.5 * tol else -1


def _keeps_equalities(delta: np.ndarray, c: np.ndarray, grp: np.ndarray, mode: int, scale: float) -> bool:
    """Whether a polish step ``delta`` keeps the equality constraints to rounding (a guard: every step is
    projected on them, but a long step along a direction at rounding level would not be)."""
    if mode == 0:
        return True
    slack = 64.0 * np.finfo(float).eps * len(delta) * max(scale, 1.0)
    if mode == 1:
        return abs(float(c @ delta)) <= slack
    return all(abs(float(delta[grp == g].sum())) <= slack for g in (0, 1))


def _solve_polished(kernel: object, Kd: np.ndarray | None, provider: KernelColumns | None, alpha: np.ndarray,
                    qp: object, scratch: np.ndarray, *, s: np.ndarray, D: np.ndarray, lo: np.ndarray,
                    up: np.ndarray, c: np.ndarray, grp: np.ndarray, mode: int, tol: float, max_iter: int,
                    shrinking: bool, warm: bool, initial: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
    """The Cython core, restarted after a polishing step whenever it reports a stall (see :func:`_polish`).

    ``alpha`` is updated in place.  ``initial`` (the starting gradient, see :func:`_given_gradient`) serves the
    first run only: a polish moves ``alpha``.  Returns the core's last output with the counts summed over the runs.
    """
    window = _stall_window(len(alpha))
    n_iter = polished = misses = plateau = 0
    active_steps = 0.0
    neg_curv = False
    try:
        while True:
            options = {"tol": tol, "max_iter": max_iter if max_iter < 0 else max_iter - n_iter,
                       "shrinking": shrinking, "warm": warm, "stall_window": window}
            out = _smo.solve(kernel, alpha, qp, options, scratch, initial)
            initial = None
            n_iter += out["n_iter"]
            active_steps += out["mean_active"] * out["n_iter"]
            misses += out["active_cache_misses"]
            plateau = max(plateau, out["plateau"])
            neg_curv = neg_curv or out["neg_curv"]
            if not out["stalled"] or out["unbounded"]:
                break
            # a non-convex face has no Newton step to take: SMO runs on as before
            new = None if neg_curv else _polish(Kd, provider, alpha, out["G"], s, D, lo, up, c, grp, mode, tol)
            if new is None:
                window = 0
            else:
                alpha[:] = new
                polished += 1
                if polished >= _POLISH_MAX_ROUNDS:
                    window = 0
            warm = True
    except KeyboardInterrupt as exc:
        # Ctrl-C met in the core (which says after how many of its steps) or while polishing
        if exc.args:
            raise
        raise KeyboardInterrupt(f"SMO solve interrupted after {n_iter} iterations (while polishing)") from None
    out.update(n_iter=n_iter, neg_curv=neg_curv, mean_active=active_steps / max(n_iter, 1),
               active_cache_misses=misses, plateau=plateau, polish_steps=polished)
    return out


def _given_gradient(provider: KernelColumns, alpha: np.ndarray, alpha0: np.ndarray, s: np.ndarray,
                    p: np.ndarray, lo: np.ndarray, up: np.ndarray, D: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray] | None:
    """The starting gradient ``(G, Gbar)`` from the products a provider already holds (``warm_products``),
    or ``None`` when it holds none for this start.

    A provider may know ``K v_bound`` and ``K v_free`` for ``v = s * alpha0`` split by the variables at a
    bound (an outer MKL loop has them from the quadratic forms of the previous solve, for any new weights):
    then ``G = S K v + D alpha + p`` and ``Gbar = S K v_bound + D alpha_bound`` need no kernel row.  They are
    used only when they are exactly for this start: the same ``alpha`` (not moved by the projection on the
    feasible set), the same signs and the same variables at a bound, else the solver reads the rows.
    """
    products = getattr(provider, "warm_products", None)
    if products is None or not np.array_equal(alpha, alpha0):
        return None
    given = products()
    if given is None:
        return None
    alpha_p, coef_p, bound_p, Kv_bound, Kv_free = given
    bound = (alpha <= lo) | (alpha >= up)
    if not (np.array_equal(alpha_p, alpha) and np.array_equal(coef_p, s * alpha)
            and np.array_equal(bound_p, bound)):
        return None
    ridge = D * alpha
    Gbar = s * Kv_bound + np.where(bound, ridge, 0.0)
    G = Gbar + s * Kv_free + np.where(bound, 0.0, ridge) + p
    return G, Gbar


def solve_qp(
    K: np.ndarray | KernelColumns,
    y: np.ndarray | None = None,
    *,
    p: float | np.ndarray | None = None,
    lower: float | np.ndarray = 0.0,
    upper: float | np.ndarray = np.inf,
    ridge: float | np.ndarray | None = None,
    signed: bool = True,
    y_sum: float | None = None,
    total: float | None = None,
    alpha0: np.ndarray | None = None,
    tol: float = 1e-3,
    max_iter: int | None = None,
    shrinking: bool = True,
    cache_size: float | None = None,
    active_cache: float = 16.0,
) -> QPResult:
    """Solve a box-constrained convex QP with at most two equality constraints by SMO.

    Minimise ``1/2 alpha' Q alpha + p' alpha`` subject to ``lower <= alpha <= upper`` and the optional
    equalities ``y' alpha = y_sum`` and ``1' alpha = total``, where ``Q = (y y') o K + diag(ridge)`` when
    ``signed`` and labels are given, else ``Q = K + diag(ridge)``.

    Parameters
    ----------
    K : ndarray of shape (n, n) or KernelColumns
        Symmetric kernel, float32 or float64, C- or F-ordered (used in place, never copied; other
        layouts are converted once).  Its entries must be finite.  A :class:`KernelColumns` serves
        kernels too large to combine densely, through a column cache of ``cache_size`` megabytes.
    y : ndarray of shape (n,), optional
        Labels in {-1, +1}; needed when ``signed`` or ``y_sum`` is used.
    p : float or ndarray of shape (n,), optional
        Linear term (default 0).
    lower, upper : float or ndarray of shape (n,)
        Bounds; ``lower`` must be finite.  ``upper`` may be ``inf`` for variables with a positive ridge
        or when ``total`` (with finite lower bounds) caps them.
    ridge : float or ndarray of shape (n,), optional
        Non-negative diagonal added to ``Q`` (for example ``1/C`` for the square hinge loss).
    signed : bool, default=True
        Whether ``Q`` carries the label signs ``y_i y_j``.
    y_sum, total : float, optional
        Right-hand sides of the equality constraints ``y' alpha`` and ``1' alpha``.  With both, working
        pairs are taken inside one class, as in the nu-SVM solver of libsvm.
    alpha0 : ndarray of shape (n,), optional
        Warm start.  It is projected on the feasible set when it is not feasible.  Only the kernel rows
        of its non-zero entries are read to build the initial gradient.
    tol : float, default=1e-3
        Stop when the maximal KKT violation (see :attr:`QPResult.kkt_violation`) is below ``tol``.
    max_iter : int, optional
        Maximal number of SMO steps (a positive integer); by default :func:`default_max_iter` of ``n``
        (libsvm's rule, ``max(10**7, 100 n)``).  Hitting it issues a ``ConvergenceWarning`` that says why
        it can happen and what to do.  ``-1`` removes the limit (then only Ctrl-C stops a solve that
        cannot converge, for example on a non-symmetric kernel).
    shrinking : bool, default=True
        Temporarily drop bound variables that cannot enter a working set.
    cache_size : float, optional
        Megabytes of kernel columns cached for a :class:`KernelColumns` (at least two columns); by
        default the provider's own ``cache_size`` (200 for the built-in providers).
    active_cache : float, default=16
        Megabytes of kernel rows restricted to the active set, kept once shrinking has started (they
        are read contiguously instead of with holes); never more than 1/8 of the kernel's own size, nor
        than ``cache_size`` for a :class:`KernelColumns`.  0 disables it.

    Returns
    -------
    QPResult

    Raises
    ------
    ValueError
        For inconsistent shapes, labels outside {-1, +1}, bounds with ``lower > upper``, an empty
        feasible set (for example ``total`` larger than the sum of the upper bounds), or a problem that is
        unbounded below (an indefinite kernel with infinite upper bounds).

    Warns
    -----
    RuntimeWarning
        When negative curvature shows that ``Q`` is not positive semi-definite.
    ConvergenceWarning
        When the iteration limit is reached.
    """
    provider = None
    if isinstance(K, KernelColumns):
        n = int(K.n)
        diag = np.asarray(K.diagonal(), dtype=np.float64)
        provider = K
        Kd = None
    else:
        Kd = as_symmetric_rows(K)
        n = Kd.shape[0]
        diag = np.asarray(np.diagonal(Kd), dtype=np.float64)
    if n == 0:
        raise ValueError("the kernel is empty")
    if not np.isfinite(diag).all():
        raise ValueError("the kernel has non-finite diagonal entries")

    if y is not None:
        y = np.asarray(y, dtype=np.float64).ravel()
        if y.shape != (n,):
            raise ValueError(f"y has shape {y.shape}; expected ({n},)")
        if not np.isin(y, (-1.0, 1.0)).all():
            raise ValueError("labels must be -1 or +1")
    if y_sum is not None and y is None:
        raise ValueError("y_sum needs labels y")
    s = y if (signed and y is not None) else np.ones(n)
    pv = _vector(p, n, "p", 0.0)
    lo = _vector(lower, n, "lower", 0.0)
    up = _vector(upper, n, "upper", math.inf)
    D = _vector(ridge, n, "ridge", 0.0)
    if not np.isfinite(lo).all():
        raise ValueError("lower bounds must be finite")
    if (lo > up).any():
        raise ValueError("every lower bound must be <= the matching upper bound")
    if not np.isfinite(D).all() or (D < 0).any():
        raise ValueError("the ridge must be finite and non-negative")
    if not np.isfinite(pv).all():
        raise ValueError("p must be finite")
    if not (tol > 0):
        raise ValueError(f"tol must be positive; got {tol!r}")
    if np.isinf(up).any():
        # 1'alpha = total with finite lower bounds caps every variable
        if total is None and (D[np.isinf(up)] <= 0).any():
            raise ValueError("an infinite upper bound needs a positive ridge on that variable or the "
                             "constraint 1'alpha = total (otherwise the problem can be unbounded)")

    ones = np.ones(n)
    if y_sum is None and total is None:
        mode, c, grp = 0, ones, np.zeros(n, dtype=np.intc)
        groups, targets = [], []
    elif total is None or y_sum is None:
        mode = 1
        c = y if y_sum is not None else ones
        grp = np.zeros(n, dtype=np.intc)
        groups, targets = [np.arange(n)], [float(y_sum if y_sum is not None else total)]
        what = "y'alpha" if y_sum is not None else "1'alpha"
        _check_sum(np.where(c > 0, lo, -up), np.where(c > 0, up, -lo), targets[0], what)
    else:
        if y is None:
            raise ValueError("two equality constraints need labels y")
        mode, c = 2, ones
        grp = (y < 0).astype(np.intc)
        groups = [np.flatnonzero(y > 0), np.flatnonzero(y < 0)]
        targets = [0.5 * (total + y_sum), 0.5 * (total - y_sum)]
        for idx, target, name in zip(groups, targets, ("positive", "negative"), strict=True):
            _check_sum(lo[idx], up[idx], target, f"the sum of alpha over the {name} class "
                       f"((total {'+' if name == 'positive' else '-'} y_sum)/2)")

    if alpha0 is not None:
        alpha0 = np.asarray(alpha0, dtype=np.float64).ravel()
        if alpha0.shape != (n,):
            raise ValueError(f"alpha0 has shape {alpha0.shape}; expected ({n},)")
        if not np.isfinite(alpha0).all():
            raise ValueError("alpha0 must be finite")
    alpha = _feasible_start(alpha0, lo, up, c, groups, targets)

    QD = diag + D
    if max_iter is None:
        max_iter = default_max_iter(n)
    elif not (isinstance(max_iter, int | np.integer) and (max_iter >= 1 or max_iter == -1)):
        raise ValueError(f"max_iter must be a positive integer, -1 (no limit) or None (the default limit); "
                         f"got {max_iter!r}")
    # the active-row cache never needs more than a fraction of the kernel's own size
    elsize = 4 if (Kd is not None and Kd.dtype == np.float32) else 8
    active_bytes = int(min(active_cache * 2**20, n * n * elsize / 8))
    if provider is not None:
        megabytes = check_cache_size(getattr(provider, "cache_size", 200.0) if cache_size is None else cache_size)
        kernel = _smo._Provider(provider.column, provider.columns, n, int(megabytes * 2**20 // (8 * n)))
        # a kernel served by columns is one whose memory must stay within its cache
        active_bytes = min(active_bytes, int(megabytes * 2**20))
    else:
        kernel = Kd
    qp = _smo.QP(mode, p=pv, lower=lo, upper=up, c=c, s=s, ridge=D, diag=QD, group=grp)
    initial = None
    if provider is not None and alpha0 is not None:
        initial = _given_gradient(provider, alpha, alpha0, s, pv, lo, up, D)
    out = _solve_polished(kernel, Kd, provider, alpha, qp, _scratch(active_bytes), s=s, D=D, lo=lo, up=up, c=c,
                          grp=grp, mode=mode, tol=float(tol), max_iter=int(max_iter), shrinking=bool(shrinking),
                          warm=alpha0 is not None, initial=initial)
    if out["unbounded"]:
        raise ValueError(_UNBOUNDED_ERROR)
    G = out["G"]
    if not np.isfinite(G).all():
        raise ValueError("the kernel or the linear term contains non-finite values")
    if out["neg_curv"] or (QD < 0).any():
        warnings.warn(_NEG_CURVATURE_WARNING, RuntimeWarning, stacklevel=2)
    F = -c * G
    bias = rho = 0.0
    if mode == 1:
        nu = _multiplier(F, alpha, lo, up, c)
        if y_sum is not None:
            bias = nu
        else:
            rho = -nu
    elif mode == 2:
        nus = [_multiplier(F[idx], alpha[idx], lo[idx], up[idx], c[idx]) if len(idx) else 0.0
               for idx in groups]
        bias = 0.5 * (nus[0] - nus[1])
        rho = -0.5 * (nus[0] + nus[1])
    if mode == 2:
        viol = max(_violation(F[idx], alpha[idx], lo[idx], up[idx], c[idx], True) if len(idx) else 0.0
                   for idx in groups)
    else:
        viol = _violation(F, alpha, lo, up, c, mode == 1)
    if out["hit_max_iter"]:
        warnings.warn(f"SMO stopped at its iteration limit (max_iter={max_iter}) with a KKT violation of "
                      f"{viol:.3g}, above tol={tol:g}.  {_MAX_ITER_ADVICE}", ConvergenceWarning, stacklevel=2)
    objective = 0.5 * float(alpha @ (G + pv))
    return QPResult(alpha=alpha, objective=objective, gradient=G, bias=float(bias), rho=float(rho),
                    kkt_violation=float(viol), n_iter=int(out["n_iter"]),
                    converged=not out["hit_max_iter"],
                    stats={"mean_active": float(out["mean_active"]),
                           "active_cache_misses": int(out["active_cache_misses"]),
                           "plateau": int(out["plateau"]), "polish_steps": int(out["polish_steps"])})
