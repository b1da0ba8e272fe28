"""Block coordinate ascent for multi-label ranking: MLR-L1 (thesis ch. 4) and MLR-GL (ch. 5).

Notation: ``n`` samples, ``m`` labels, ``K`` the (n, n) kernel, ``Ysign`` of shape (n, m) with +1 (relevant),
-1 (irrelevant) and 0 (unknown).  Both methods learn ``f_k(x) = sum_i S_ik k(x_i, x)``; the signed coefficients
``S = Ysign * alpha`` (``alpha >= 0``, zero on unknown labels) are what the solvers store, with the training
scores ``F = K S`` kept up to date after every block update (O(n) per changed label).

**MLR-L1** (eq. 4.13, exact form, erratum E10 of the spec): the dual

    max_S  sum_ik Ysign_ik S_ik - 1/2 sum_k S_k' K S_k
    s.t.   sum_k S_ik = 0  (balance: sum of relevant alpha = sum of irrelevant alpha),
           S_ik in [0, C] (relevant), [-C, 0] (irrelevant), {0} (unknown).

Its primal is ``min_f 1/2 sum_k ||f_k||^2 + C sum_i phi_i(f(x_i))`` with the matching hinge
``phi_i = sum_{j <= min(a_i, b_i)} max(0, 2 - f_{r(j)} + f_{q(j)})``, ``r(j)`` the relevant label with the
j-th lowest score and ``q(j)`` the irrelevant label with the j-th highest one (the maximum of the linear
function of the dual over one block is attained by pairing them so); it certifies every solve.  The block of
sample ``i`` is the Euclidean projection of ``v = S_i + G_i / K_ii`` (``G_i = Ysign_i - F_i`` the block's
gradient) onto ``{box, sum = 0}``: Theorem 6 with its multiplier found exactly by walking the sorted
breakpoints of the piecewise linear balance function (Proposition 3's bracket is not needed, and the
bisection it brackets is replaced by the exact root: erratum E11).  ``half_factor=True`` is the thesis's
literal update (a 1/2 before the leave-one-out prediction), which solves the same problem for the kernel
``K/2 + Diag(K)/2`` (spec section 4.4).

**MLR-GL** (eqs. 5.4-5.17): sample ``i``'s pairs are weighted by ``gamma^i`` (relevant x irrelevant, columns in
the unit ball, non-negative); ``alpha^i`` is ``C gamma 1`` on relevant and ``C gamma' 1`` on irrelevant
labels.  The block update is Lemma 2's closed form with the approximation parameter ``eta`` (eq. 5.14), so the
iteration maximises

    D_eta = sum_i sum_{k relevant} alpha_ik - 1/2 sum_k S_k' K S_k + 1/2 sum_i K_ii ||alpha^i||^2
            - eta C^2 sum_i K_ii ||gamma^i||_F^2

(the thesis's dual (5.7) halved, whose own diagonal term ``K_ii ||alpha^i||^2`` the approximation replaces).
``D_eta`` is concave, and the iteration converges to its maximum, when ``2 eta >= a_i + b_i`` for every sample
(then ``D_eta`` is also a lower bound of the exact group-lasso dual).

Stopping: MLR-L1 stops when the largest KKT violation of a block (``max`` of ``G_ik`` over labels that may
increase minus ``min`` over labels that may decrease: the measure of LIBSVM's ``eps``) is at most ``tol``; MLR-GL
when the largest change of a dual variable in a sweep, times the mean of the kernel's diagonal (margin units,
as ``K_ii |delta alpha|`` is for MLR-L1's free variables), is.  Blocks already within ``tol`` are not
updated, so a sweep without an update ends the solve.
"""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from multikernel._ext import _mlr
from multikernel.solve.smo import KernelColumns

__all__ = [
    "RankingSolution",
    "solve_mlr",
    "project_balanced_box",
    "gl_block",
    "l1_objectives",
    "gl_approx_dual",
    "gl_primal",
    "kkt_violation",
    "pairless_samples",
]

LOSSES = ("l1", "gl")
_THRESHOLD_FRACTION = 0.3


@attrs.define(slots=False)
class RankingSolution:
    """Outcome of :func:`solve_mlr`.

    Attributes
    ----------
    coef : ndarray of shape (n, m)
        Signed coefficients ``S``: ``f_k(x) = sum_i coef[i, k] k(x_i, x)``.
    scores : ndarray of shape (n, m)
        Training scores ``K coef``.
    dual_objective, primal_objective : float
        MLR-L1: the dual and primal objectives above (their difference certifies the solve).  MLR-GL: the
        approximated dual ``D_eta`` that the iteration maximises, and the exact group-lasso primal (5.4) at
        ``f = K coef`` (halved as the dual; an upper bound of the exact problem's optimum).
    violation : float
        The stopping measure at the returned point.
    n_sweeps : int
        Passes over the samples.
    converged : bool
    gamma_sq : ndarray of shape (n,) or None
        MLR-GL: ``||gamma^i||_F^2`` of each block (enters ``D_eta``).
    """

    coef: np.ndarray
    scores: np.ndarray
    dual_objective: float
    primal_objective: float
    violation: float
    n_sweeps: int
    converged: bool
    gamma_sq: np.ndarray | None = None

    @property
    def alpha(self) -> np.ndarray:
        """The dual variables ``alpha = |coef|`` (shape (n, m))."""
        return np.abs(self.coef)


# --------------------------------------------------------------------------------------------------
# Block updates (the numpy reference; _ext/_mlr.pyx implements the same steps)
# --------------------------------------------------------------------------------------------------
def project_balanced_box(v: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Euclidean projection of ``v`` onto ``{s : lo <= s <= hi, sum(s) = 0}`` (needs ``sum lo <= 0 <= sum hi``).

    ``s = clip(v + lam, lo, hi)`` with ``phi(lam) = sum(s)`` non-decreasing and piecewise linear; its root lies
    between two consecutive breakpoints ``lo_k - v_k`` / ``hi_k - v_k`` and is found by sorting them.
    """
    v, lo, hi = (np.asarray(a, dtype=np.float64) for a in (v, lo, hi))
    if lo.sum() >= 0.0 or hi.sum() <= 0.0:  # a block without (relevant, irrelevant) pairs
        return np.clip(np.zeros_like(v), lo, hi)
    bp = np.sort(np.concatenate([lo - v, hi - v]))
    phi = np.clip(v[None, :] + bp[:, None], lo, hi).sum(axis=1)
    j = int(np.searchsorted(phi, 0.0, side="left"))  # first breakpoint with phi >= 0 (j >= 1: phi[0] = sum lo)
    if phi[j] == 0.0:
        lam = bp[j]
    else:
        lam = bp[j - 1] + (0.0 - phi[j - 1]) * (bp[j] - bp[j - 1]) / (phi[j] - phi[j - 1])
    return np.clip(v + lam, lo, hi)


def gl_block(g: np.ndarray, ysign: np.ndarray, kii: float, C: float, eta: float) -> tuple[np.ndarray, float]:
    """Lemma 2: the MLR-GL block from the leave-one-out scores ``g`` (raw, ``sum_{j != i} S_jk K_ji``).

    Returns the new signed block ``s`` and ``||gamma||_F^2``.  ``H_kl = (1 - g_k + g_l)/2`` for relevant ``k`` and
    irrelevant ``l``; column ``l`` of gamma is ``max(H_:l, 0) / max(||max(H_:l, 0)||, C K_ii eta)``.
    """
    rel, irr = np.flatnonzero(ysign > 0), np.flatnonzero(ysign < 0)
    s = np.zeros_like(g, dtype=np.float64)
    if len(rel) == 0 or len(irr) == 0:
        return s, 0.0
    H = np.maximum(0.5 * (1.0 - g[rel][:, None] + g[irr][None, :]), 0.0)
    gamma = H / np.maximum(np.linalg.norm(H, axis=0), C * kii * eta)[None, :]
    s[rel] = C * gamma.sum(axis=1)
    s[irr] = -C * gamma.sum(axis=0)
    return s, float(np.sum(gamma**2))


def _bounds(ysign_i: np.ndarray, C: float) -> tuple[np.ndarray, np.ndarray]:
    return np.where(ysign_i < 0, -C, 0.0), np.where(ysign_i > 0, C, 0.0)


def _block_violation(G: np.ndarray, s: np.ndarray, lo: np.ndarray, hi: np.ndarray, observed: np.ndarray) -> float:
    up = observed & (s < hi)
    down = observed & (s > lo)
    if not up.any() or not down.any():
        return 0.0
    return max(0.0, float(G[up].max() - G[down].min()))


def pairless_samples(Ysign: np.ndarray) -> np.ndarray:
    """Boolean mask of the samples without a (relevant, irrelevant) pair: their coefficients stay 0."""
    return ~((Ysign > 0).any(axis=1) & (Ysign < 0).any(axis=1))


# --------------------------------------------------------------------------------------------------
# Objectives and measures
# --------------------------------------------------------------------------------------------------
def _effective_scores(F: np.ndarray, S: np.ndarray, diag: np.ndarray, half_factor: bool) -> np.ndarray:
    """Training scores for the kernel actually solved: ``K S``, or ``(K/2 + Diag(K)/2) S`` (thesis-literal)."""
    return 0.5 * (F + diag[:, None] * S) if half_factor else F


def _matching_hinge(F: np.ndarray, Ysign: np.ndarray) -> np.ndarray:
    """``phi_i = sum_j max(0, 2 - f_r(j) + f_q(j))`` per sample (see the module docstring)."""
    rel = np.sort(np.where(Ysign > 0, F, np.inf), axis=1)            # relevant scores, ascending
    irr = -np.sort(np.where(Ysign < 0, -F, np.inf), axis=1)           # irrelevant scores, descending
    n_pairs = np.minimum((Ysign > 0).sum(axis=1), (Ysign < 0).sum(axis=1))
    j = np.arange(F.shape[1])[None, :]
    terms = np.where(j < n_pairs[:, None], np.maximum(0.0, 2.0 - np.where(np.isfinite(rel), rel, 0.0)
                                                      + np.where(np.isfinite(irr), irr, 0.0)), 0.0)
    return terms.sum(axis=1)


def l1_objectives(F: np.ndarray, S: np.ndarray, Ysign: np.ndarray, C: float) -> tuple[float, float]:
    """MLR-L1 (dual, primal) objectives from the scores ``F = K S`` and the coefficients ``S``."""
    quad = float(np.sum(S * F))
    dual = float(np.sum(Ysign * S)) - 0.5 * quad
    primal = 0.5 * quad + C * float(_matching_hinge(F, Ysign).sum())
    return dual, primal


def gl_approx_dual(F: np.ndarray, S: np.ndarray, Ysign: np.ndarray, diag: np.ndarray, gamma_sq: np.ndarray,
                   C: float, eta: float) -> float:
    """``D_eta`` (module docstring): what the MLR-GL iteration maximises."""
    relevant_sum = float(np.sum(np.where(Ysign > 0, S, 0.0)))
    return (relevant_sum - 0.5 * float(np.sum(S * F)) + 0.5 * float(diag @ np.sum(S * S, axis=1))
            - eta * C * C * float(diag @ gamma_sq))


def gl_primal(F: np.ndarray, S: np.ndarray | None, Ysign: np.ndarray, C: float, chunk: int = 256) -> float:
    """The exact MLR-GL primal (5.4), halved as the dual.

    ``1/2 sum_k ||f_k||^2 + C sum_i sum_{l irrelevant} ||(hinge(f_k - f_l))_{k relevant}||_2``, ``hinge(z) =
    max(0, 1 - z)``; ``F`` are the scores ``f_k(x_i)``; with ``S`` the norm term is
    ``1/2 sum S * F`` (``f = K S``), without it only the loss is returned.
    """
    loss = 0.0
    for start in range(0, len(F), chunk):
        f, y = F[start:start + chunk], Ysign[start:start + chunk]
        hinge = np.maximum(0.0, 1.0 - f[:, :, None] + f[:, None, :])           # [i, k, l]: pair (k relevant, l)
        pair = (y > 0)[:, :, None] & (y < 0)[:, None, :]
        loss += float(np.sqrt(np.sum(np.where(pair, hinge, 0.0) ** 2, axis=1)).sum())
    return C * loss + (0.0 if S is None else 0.5 * float(np.sum(S * F)))


def kkt_violation(F: np.ndarray, S: np.ndarray, Ysign: np.ndarray, C: float, diag: np.ndarray,
                  half_factor: bool = False) -> float:
    """The largest MLR-L1 block KKT violation (LIBSVM's measure, per block) at ``S`` with scores ``F = K S``."""
    G = Ysign - _effective_scores(F, S, diag, half_factor)
    lo, hi = np.where(Ysign < 0, -C, 0.0), np.where(Ysign > 0, C, 0.0)
    observed = Ysign != 0
    up = observed & (S < hi)
    down = observed & (S > lo)
    top = np.where(up, G, -np.inf).max(axis=1)
    bottom = np.where(down, G, np.inf).min(axis=1)
    viol = np.where(np.isfinite(top) & np.isfinite(bottom), top - bottom, 0.0)
    return float(max(0.0, viol.max(initial=0.0)))


# --------------------------------------------------------------------------------------------------
# Kernel access
# --------------------------------------------------------------------------------------------------
class _RowCache:
    """Rows of a column-served kernel in a bounded least-recently-used cache (the lazy path)."""

    def __init__(self, columns: KernelColumns, cache_size: float) -> None:
        self.columns = columns
        self.n = int(columns.n)
        self.capacity = max(2, int(cache_size * 2**20 // (8 * self.n)))
        self.rows: OrderedDict[int, np.ndarray] = OrderedDict()
        self.misses = 0

    def __call__(self, i: int) -> np.ndarray:
        row = self.rows.get(i)
        if row is not None:
            self.rows.move_to_end(i)
            return row
        self.misses += 1
        row = self.rows.popitem(last=False)[1] if len(self.rows) >= self.capacity else np.empty(self.n)
        self.columns.column(i, row)
        self.rows[i] = row
        return row


def _initial_scores(K: np.ndarray | None, rows: _RowCache | None, S: np.ndarray) -> np.ndarray:
    """``K S`` (a warm start's scores); a column-served kernel gives the rows of the support by blocks.

    A block of rows costs one pass of a lazy stack's builders (``KernelColumns.columns``) where single rows cost
    one each; MK-MLR warm-starts every inner solve, so this runs once per outer iteration.  The blocks bypass
    the row cache (whose rows the sweeps choose) and take a quarter of its memory.
    """
    if K is not None:
        return np.asarray(K @ S, dtype=np.float64)
    F = np.zeros_like(S)
    support = np.flatnonzero(np.any(S != 0, axis=1))
    n = S.shape[0]
    step = max(1, min(len(support), rows.capacity // 4))  # a quarter of the cache's memory
    block = np.empty((step, n))
    for start in range(0, len(support), step):
        idx = support[start:start + step]
        rows.columns.columns(idx, block[:len(idx)])
        F += block[:len(idx)].T @ S[idx]  # symmetric kernel: column i is row i
    return F


# --------------------------------------------------------------------------------------------------
# The solver
# --------------------------------------------------------------------------------------------------
def _check_inputs(K: Any, Ysign: np.ndarray, C: float, loss: str, eta: float | None, tol: float,
                  max_sweeps: int) -> tuple[np.ndarray | None, int, float | None]:
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}; got {loss!r}")
    if not (isinstance(C, (int, float, np.floating)) and math.isfinite(C) and C > 0):
        raise ValueError(f"C must be a positive finite number; got {C!r}")
    if not (tol > 0):
        raise ValueError(f"tol must be positive; got {tol!r}")
    if not (isinstance(max_sweeps, (int, np.integer)) and max_sweeps >= 1):
        raise ValueError(f"max_sweeps must be a positive integer; got {max_sweeps!r}")
    if Ysign.ndim != 2 or not np.isin(Ysign, (-1.0, 0.0, 1.0)).all():
        raise ValueError("Ysign must be an (n, m) array of +1 (relevant), -1 (irrelevant) and 0 (unknown); "
                         "multikernel.ranking.signed_labels makes it from a 0/1/NaN label matrix")
    n = Ysign.shape[0]
    if isinstance(K, KernelColumns):
        if int(K.n) != n:
            raise ValueError(f"the kernel has {K.n} columns but Ysign has {n} rows")
        Kd = None
    else:
        Kd = np.asarray(K)
        if Kd.shape != (n, n):
            raise ValueError(f"K must be the ({n}, {n}) training kernel; got shape {Kd.shape}")
        if Kd.dtype not in (np.float32, np.float64):
            Kd = Kd.astype(np.float64)
        if not Kd.flags.c_contiguous:
            Kd = np.ascontiguousarray(Kd)
    if loss == "gl":
        if eta is None:
            counts = np.count_nonzero(Ysign, axis=1)
            eta = max(1.0, 0.5 * float(counts.max(initial=2)))
        elif not (math.isfinite(eta) and eta >= 1.0):
            raise ValueError(f"eta must be a finite number >= 1 (the approximation (5.14) holds for eta in "
                             f"[1, m/2]); got {eta!r}")
        eta = float(eta)
    return Kd, n, eta


def solve_mlr(
    K: np.ndarray | KernelColumns,
    Ysign: np.ndarray,
    C: float = 1.0,
    *,
    loss: str = "l1",
    eta: float | None = None,
    coef0: np.ndarray | None = None,
    tol: float = 1e-3,
    max_sweeps: int = 1000,
    half_factor: bool = False,
    shuffle: bool = True,
    random_state: int | np.random.Generator | None = 0,
    backend: str = "cython",
    cache_size: float = 200.0,
    callback: Callable[[int, float, Callable[[], RankingSolution]], None] | None = None,
) -> RankingSolution:
    """Solve MLR-L1 or MLR-GL on one kernel by block coordinate ascent.

    Parameters
    ----------
    K : ndarray of shape (n, n) or KernelColumns
        Symmetric positive semi-definite training kernel (float32 or float64), or a kernel served one column
        at a time (:class:`multikernel.solve.smo.KernelColumns`: a lazy kernel, kept in an LRU cache of
        ``cache_size`` MB).
    Ysign : ndarray of shape (n, m)
        +1 relevant, -1 irrelevant, 0 unknown (:func:`multikernel.ranking.signed_labels`).
    C : float
        Box bound of the dual variables (the weight of the ranking loss).
    loss : {"l1", "gl"}
        MLR-L1 or MLR-GL.
    eta : float, optional
        MLR-GL's approximation parameter (>= 1); default ``max_i (a_i + b_i) / 2`` (concavity, see above).
    coef0 : ndarray of shape (n, m), optional
        Warm start (signed coefficients of a previous solve); MLR-L1 projects each block on its feasible
        set, MLR-GL recomputes every block in the first sweep.
    tol : float
        Stopping tolerance (module docstring).
    max_sweeps : int
        Maximum passes over the samples (a ``ConvergenceWarning`` when reached).
    half_factor : bool, default=False
        MLR-L1 only: the thesis's literal update (erratum E10), optimal for ``K/2 + Diag(K)/2``.
    shuffle : bool, default=True
        Visit the samples in a new random order each sweep (as Hsieh et al.'s dual coordinate descent).
    random_state : int, Generator or None
        Seed of the visiting orders.
    backend : {"cython", "numpy"}
        The compiled sweep (``_ext/_mlr.pyx``) or the numpy reference (same steps, for tests).
    cache_size : float
        Megabytes of kernel rows cached for a :class:`~multikernel.solve.smo.KernelColumns` kernel.
    callback : callable, optional
        Called after every sweep as ``callback(n_sweeps, violation, snapshot)``; ``snapshot()`` returns the
        :class:`RankingSolution` of the current (feasible) iterate, with copies of its arrays: what an estimator
        keeps when the user interrupts the solve.

    Returns
    -------
    RankingSolution
    """
    Ysign = np.ascontiguousarray(Ysign, dtype=np.float64)
    Kd, n, eta = _check_inputs(K, Ysign, C, loss, eta, tol, max_sweeps)
    if backend not in ("cython", "numpy"):
        raise ValueError(f"backend must be 'cython' or 'numpy'; got {backend!r}")
    if half_factor and loss != "l1":
        raise ValueError("half_factor is the thesis-literal MLR-L1 update; MLR-GL has no such variant")
    C = float(C)
    rows = None if Kd is not None else _RowCache(K, cache_size)  # type: ignore[arg-type]
    diag = np.array(np.diagonal(Kd), dtype=np.float64) if Kd is not None else np.asarray(K.diagonal(), float)
    if not np.isfinite(diag).all() or (diag < -1e-12 * max(1.0, np.abs(diag).max())).any():
        raise ValueError("the kernel's diagonal must be finite and non-negative (a positive semi-definite kernel)")
    # A zero diagonal entry means a zero column (PSD): that block's problem is linear in S_i, with gradient
    # Ysign_i; MLR-L1's step then projects 2 C Ysign_i (the minimum-norm maximiser) and MLR-GL's closed form
    # takes the floored diagonal (its columns of gamma reach the unit sphere).
    top = float(diag.max(initial=0.0))
    step_diag = np.maximum(diag, 1e-12 * (top if top > 0.0 else 1.0))
    viol_scale = float(diag.mean()) if diag.mean() > 0.0 else 1.0
    pairless = pairless_samples(Ysign)
    lo_all, hi_all = np.where(Ysign < 0, -C, 0.0), np.where(Ysign > 0, C, 0.0)

    S = np.zeros_like(Ysign)
    force_first = False
    if coef0 is not None:
        S = np.array(coef0, dtype=np.float64)
        if S.shape != Ysign.shape or not np.isfinite(S).all():
            raise ValueError(f"coef0 must be a finite array of shape {Ysign.shape}")
        S[pairless] = 0.0
        if loss == "l1":
            for i in np.flatnonzero(~pairless):
                S[i] = project_balanced_box(S[i], lo_all[i], hi_all[i])
        else:
            S *= Ysign != 0
            force_first = True
    # The scores are stored transposed, (m, n): a block update adds a contiguous row per changed label.
    Ft = np.ascontiguousarray(_initial_scores(Kd, rows, S).T)
    F = Ft.T
    gamma_sq = np.zeros(n) if loss == "gl" else None

    rng = np.random.default_rng(random_state)
    h = 0.5 if half_factor else 1.0
    converged = False
    n_sweeps, viol = 0, math.inf
    for n_sweeps in range(1, max_sweeps + 1):  # noqa: B007 (n_sweeps is reported)
        order = rng.permutation(n) if shuffle else np.arange(n)
        order = order[~pairless[order]].astype(np.intp)
        force = force_first and n_sweeps == 1
        # Only blocks violating by more than a fraction of the previous sweep's largest violation are updated:
        # the work goes to the blocks that gain most (an approximation of greedy selection at the cost of a
        # cyclic sweep; it halves the number of updates on RBF problems).  After a sweep without an update the
        # threshold drops by that fraction again, down to tol, so the stopping rule is unchanged.
        threshold = max(tol, _THRESHOLD_FRACTION * viol) if math.isfinite(viol) else tol
        if backend == "numpy":
            viol, n_updates = _numpy_sweep(Kd, rows, S, F, Ysign, diag, step_diag, C, h, eta, viol_scale, order,
                                           threshold, force, loss, gamma_sq)
        else:
            viol, n_updates = _mlr.sweep(Kd, rows, S, Ft, Ysign, diag, step_diag, C, h, eta or 0.0, viol_scale,
                                         order, threshold, force, loss == "gl",
                                         gamma_sq if gamma_sq is not None else np.zeros(0))
        if n_updates == 0 and viol <= tol:
            converged = True
            break
        if callback is not None:
            state = (S, F, n_sweeps, viol)
            callback(n_sweeps, viol, lambda state=state: _solution(
                state[0].copy(), np.array(state[1]), Ysign, diag, C, loss, eta, half_factor,
                None if gamma_sq is None else gamma_sq.copy(), state[3], state[2], False))
    if not converged:
        warnings.warn(f"the MLR-{loss.upper()} solver stopped at max_sweeps={max_sweeps} with a violation of "
                      f"{viol:.3g} > tol={tol:g}; increase max_sweeps or tol", ConvergenceWarning, stacklevel=2)
    return _solution(S, np.ascontiguousarray(F), Ysign, diag, C, loss, eta, half_factor, gamma_sq, viol, n_sweeps,
                     converged)


def _solution(S: np.ndarray, F: np.ndarray, Ysign: np.ndarray, diag: np.ndarray, C: float, loss: str,
              eta: float | None, half_factor: bool, gamma_sq: np.ndarray | None, viol: float, n_sweeps: int,
              converged: bool) -> RankingSolution:
    """The solution at coefficients ``S`` with scores ``F = K S``: objectives and the stopping measure."""
    Feff = _effective_scores(F, S, diag, half_factor)
    if loss == "l1":
        dual, primal = l1_objectives(Feff, S, Ysign, C)
        violation = kkt_violation(F, S, Ysign, C, diag, half_factor)
    else:
        dual = gl_approx_dual(F, S, Ysign, diag, gamma_sq, C, eta)  # type: ignore[arg-type]
        primal = gl_primal(F, S, Ysign, C)
        violation = viol
    return RankingSolution(coef=S, scores=F, dual_objective=dual, primal_objective=primal, violation=violation,
                           n_sweeps=n_sweeps, converged=converged, gamma_sq=gamma_sq)


def _numpy_sweep(Kd, rows, S, F, Ysign, diag, step_diag, C, h, eta, viol_scale, order, tol, force, loss, gamma_sq):
    """One pass of block updates in ``order`` (numpy reference).  Returns (largest violation, #updates)."""
    max_viol, n_updates = 0.0, 0
    for i in order:
        y = Ysign[i]
        observed = y != 0
        if loss == "l1":
            lo, hi = _bounds(y, C)
            G = y - (h * F[i] + (1.0 - h) * diag[i] * S[i])
            viol = _block_violation(G, S[i], lo, hi, observed)
            max_viol = max(max_viol, viol)
            if viol <= tol and not force:
                continue
            zero_column = step_diag[i] > diag[i]  # see solve_mlr
            new = project_balanced_box(2.0 * C * y if zero_column else S[i] + G / step_diag[i], lo, hi)
            new[~observed] = 0.0
        else:
            g = F[i] - diag[i] * S[i]
            new, gsq = gl_block(g, y, step_diag[i], C, eta)
            viol = viol_scale * float(np.abs(new - S[i]).max())
            max_viol = max(max_viol, viol)
            if viol <= tol and not force:
                continue
            gamma_sq[i] = gsq
        delta = new - S[i]
        changed = np.flatnonzero(delta)
        if changed.size == 0:
            continue
        column = Kd[i] if Kd is not None else rows(int(i))
        F[:, changed] += np.outer(column, delta[changed])
        S[i] = new
        n_updates += 1
    return max_viol, n_updates
