"""Algorithm 3 of Xu's thesis: the cutting-plane loop of input-output kernel learning.

Each iteration solves the group-sparse MKL problem (IOKL-HM or IOKL-SM) over the current candidate groups
with a core outer solver (certified duality gap), then adds one group: for every input kernel ``K_m`` the
candidate maximising ``alpha' (K_m o y y') alpha`` (4.11) (output ambiguity: each input kernel has its own
candidate set, as in the thesis), or, when the candidate set says ``shared_across_kernels`` (input ambiguity:
a key instance represents its bag whatever the kernel), the one candidate with the largest group norm
``||(alpha' K^IO_{m} alpha)_m||_2``, the most violated constraint of the group-sparse dual (4.4).

Stopping rule (the thesis leaves it open, spec section 3.5).  At the current ``alpha`` the enlarged problem
has the certified lower bound ``L(alpha) - dual_bound(q/2)`` over the old groups and the new one; its
optimum lies between that bound and the current objective.  The loop stops when the relative difference
(the *violation*) is below ``cp_tol``: adding the candidate found cannot lower the objective by more.  When
the search is exact (enumeration) the new group maximises every ``q_m``, hence every group norm, and the
certificate covers all candidates; otherwise (the sorting ascent from the classifier's labels, the strongest
group and :data:`N_STARTS` random candidates) it covers the candidates the search reached.  It also stops
when the search returns a group already in the set, when
the objective changed by at most ``cp_tol`` (relative) since the previous iteration (the "small relative
objective change" of the spec, which the thesis's experiments with a large candidate space need: the
violation of the sorting search does not always fall below ``cp_tol``), or after ``max_iter`` iterations;
``stop_reason`` says which.

Precision of the MKL solves.  The violation is a certificate at any ``alpha``, so the early solves are loose:
each asks for a relative gap of a tenth of the last violation (between ``tol`` and 1e-2).  The two rules
that trust the solve (no new candidate, small objective change) re-solve the set at ``tol`` before stopping.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from multikernel.core.interfaces import MKLProblem, MKLResult
from multikernel.core.registry import get_registry
from multikernel.iokl.inner import SimplexRidge
from multikernel.iokl.labels import CandidateSet
from multikernel.iokl.stack import IOStack
from multikernel.stack.storage import KernelStack

__all__ = ["DEFAULT_SOLVER", "N_STARTS", "CuttingPlaneResult", "cutting_plane", "solve_candidates"]

N_STARTS = 20
"""Random starts of the most violated candidate search at every cutting-plane iteration.

Finding the most violated candidate (4.11) maximises a convex function over a combinatorial set; the
sorting ascent climbs to the fixed point nearest its start.  Started only from the current solution (its
labels, its strongest group) it returns the group the solution already has, and Algorithm 3 stops at its
first group: on musk1 (C = 10, the thesis's four kernels) the loop ended after one group with a violation
of 9e-5, while ascents from random key choices reached group norms 4.4 times the current one (0.031 against
0.0071); with 20 random starts the loop adds 4-7 groups and halves the objective.  An ascent costs a few
products with the rows of the ambiguous instances, so 20 starts add little to an iteration.
"""

DEFAULT_SOLVER = "projected_gradient"
"""The outer solver of every IOKL fit unless told otherwise.

Not the thesis's Algorithm 5 (``"bcd"``, still available): candidates that differ in a few labels give
groups of nearly equal input-output kernels, where the multiplicative group update moves weight between
them by a factor close to 1 per iteration.  Bag-level IOKL-SM on musk1 and elephant (the thesis's kernels,
C = 10, theta = 2) stopped MKL solves at 200 iterations with gaps up to 1.3e-2 (tolerance 1e-3) with
``bcd``; projected gradient reached every tolerance, in 0.5 s against 3.7 s (musk1) and 6.5 s against
39.6 s (elephant); SSL on g241c (n = 500, 10 labels) 1.0 s against 6.4 s.  See docs/methods/iokl.md.
"""


@attrs.define(slots=False)
class CuttingPlaneResult:
    """The state of a cutting-plane fit: enough to predict and to resume.

    Attributes
    ----------
    index, sign : ndarray of shape (T, M, U)
        The candidate groups.
    weights : ndarray of shape (T * M,)
        The kernel weights ``d_{m,t}`` (group-major).
    alpha : ndarray of shape (U,)
        The dual variables of the last MKL solve.
    mkl : MKLResult
        The last MKL solve (its objective and certified duality gap for the final candidate set).
    history : list of dict
        Per iteration: candidates, objective, certified gap, violation, timings.
    pending : tuple of ndarray, optional
        The group found by the last search and not yet solved (``max_iter`` or an interruption stopped the
        loop first); a resumed loop starts by adding it.
    stop_reason : str
        ``"violation below cp_tol"``, ``"no new candidate"``, ``"objective change below cp_tol"``,
        ``"max_iter"``, ``"interrupted"``, or ``"fixed candidates"`` (:func:`solve_candidates`: no search).
    """

    index: np.ndarray
    sign: np.ndarray
    weights: np.ndarray
    alpha: np.ndarray
    mkl: MKLResult
    history: list[dict[str, Any]]
    stop_reason: str
    pending: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def n_iter(self) -> int:
        return len(self.history)

    def coefficients(self, inputs: KernelStack, per_group: bool = False) -> np.ndarray:
        """Per input kernel, the expansion coefficients on the N training instances: shape (M, N).

        ``f(x) = sum_m K_m(x, X) beta_m + b`` (the thesis's final classifier, section 3.5 of the spec).  With
        ``per_group``, the coefficients of each candidate group apart, shape (T, M, N): the classifier of
        group ``t`` is ``f_t(x) = sum_m K_m(x, X) beta_{t,m}`` and ``f = sum_t f_t``.
        """
        stack = IOStack(inputs, self.index, self.sign)
        W = self.weights.reshape(stack.n_candidates, stack.n_inputs)
        beta = np.zeros((stack.n_candidates, stack.n_inputs, inputs.n_rows))
        for t, m in zip(*np.nonzero(W), strict=True):
            beta[t, m] = W[t, m] * stack.lift(self.alpha, t, m)
        return beta if per_group else beta.sum(axis=0)

    def bias(self, offset: float) -> float:
        """The bias ``offset * sum_{t,m} d_{t,m} sum_u alpha_u s_{t,m,u}`` of the absorbed constant feature."""
        T, M, _ = self.sign.shape
        return float(offset * np.sum(self.weights.reshape(T, M) * (self.sign @ self.alpha)))


def _generator(random_state: int | np.random.Generator | np.random.RandomState | None) -> np.random.Generator:
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**31))
    if random_state is None or isinstance(random_state, int | np.integer | np.random.Generator):
        return np.random.default_rng(random_state)
    raise ValueError(f"random_state must be None, an integer, a numpy Generator or RandomState; got {random_state!r}")


def _regularizer(M: int, T: int, theta: float | None):
    if theta is None:
        return get_registry().create("regularizer", "group_l21", group_size=M)
    return get_registry().create("regularizer", "group_box_l21", group_size=M, theta=theta / T)


def _solve(stack: IOStack, inner: SimplexRidge, theta: float | None, solver: str, tol: float, max_iter: int,
           warm: MKLResult | None) -> tuple[MKLProblem, MKLResult]:
    """One group-sparse MKL solve over the groups of ``stack`` (IOKL-HM, or IOKL-SM with ``theta / T``)."""
    reg = _regularizer(stack.n_inputs, stack.n_candidates, theta)
    problem = MKLProblem(stack=stack, y=None, loss=None, inner=inner, regularizer=reg, tol=tol, max_iter=max_iter,
                         inner_tol=min(1e-3, tol), warm_start=warm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return problem, get_registry().create("solver", solver).solve(problem)


def _check_theta(theta: float | None) -> None:
    if theta is not None and not (float(theta) >= 1.0):
        raise ValueError(f"theta is the cap in units of 1/T and must be >= 1 (1 forces equal group norms); "
                         f"got {theta!r}. Use theta=None for the hard margin IOKL-HM")


def solve_candidates(
    inputs: KernelStack,
    index: np.ndarray,
    sign: np.ndarray,
    C: np.ndarray,
    *,
    theta: float | None = None,
    offset: float = 1.0,
    solver: str = DEFAULT_SOLVER,
    tol: float = 1e-3,
    mkl_max_iter: int = 200,
    warm: MKLResult | None = None,
    solved: CuttingPlaneResult | None = None,
) -> CuttingPlaneResult:
    """The group-sparse MKL problem over a fixed candidate set, without a search (step 3 of Algorithm 3 alone).

    Used to round the relaxation of bag-level MIL: one key instance per positive bag, chosen by the relaxed
    classifier, solved as a single candidate group (then IOKL-HM and IOKL-SM coincide: one group meets any
    cap ``theta >= 1``).

    Parameters
    ----------
    inputs : KernelStack
        The ``M`` input kernels.
    index, sign : ndarray of shape (T, U) or (T, M, U)
        The candidate groups (see :class:`~multikernel.iokl.stack.IOStack`).
    C : ndarray of shape (U,)
        Per-unit costs of the square hinge loss.
    theta, offset, solver, tol, mkl_max_iter
        As for :func:`cutting_plane`.
    warm : MKLResult, optional
        A previous solve over the same units; its ``alpha`` (and its weights, when their number matches)
        start the solver.
    solved : CuttingPlaneResult, optional
        A result of :func:`cutting_plane` (or of this function) run with the same ``inputs``, ``C``,
        ``theta``, ``offset`` and ``solver``.  When its candidate set is exactly ``index, sign`` and its last
        solve already has a certified gap within ``tol``, that solve is this problem's and is returned
        without solving again (the rounding of bag-level MIL often chooses the keys of the only group).

    Returns
    -------
    CuttingPlaneResult
        With one history entry and ``stop_reason == "fixed candidates"``.
    """
    _check_theta(theta)
    stack = IOStack(inputs, index, sign, offset)
    if (solved is not None and solved.index.shape == stack.index.shape
            and np.array_equal(solved.index, stack.index) and np.array_equal(solved.sign, stack.sign)
            and solved.mkl.dual_gap <= tol):
        res = solved.mkl
        entry = {"iteration": 1, "n_candidates": stack.n_candidates, "objective": res.objective,
                 "mkl_gap": res.dual_gap, "mkl_tol": tol, "mkl_iter": 0, "violation": float("nan"),
                 "time_mkl": 0.0, "time_search": 0.0, "time_quad_forms": 0.0, "reused": True}
        return CuttingPlaneResult(index=stack.index, sign=stack.sign, weights=res.weights, alpha=res.alpha,
                                  mkl=res, history=[entry], stop_reason="fixed candidates")
    if warm is not None and len(warm.weights) != stack.n_kernels:
        # Only alpha carries over; the weights restart from the solver's feasible initial point.
        warm = attrs.evolve(warm, weights=_regularizer(stack.n_inputs, stack.n_candidates, theta).initial(
            stack.n_kernels))
    t0 = time.perf_counter()
    _, res = _solve(stack, SimplexRidge(C), theta, solver, tol, mkl_max_iter, warm)
    entry = {"iteration": 1, "n_candidates": stack.n_candidates, "objective": res.objective,
             "mkl_gap": res.dual_gap, "mkl_tol": tol, "mkl_iter": res.n_iter, "violation": float("nan"),
             "time_mkl": time.perf_counter() - t0, "time_search": 0.0, "time_quad_forms": 0.0}
    return CuttingPlaneResult(index=stack.index, sign=stack.sign, weights=res.weights, alpha=res.alpha, mkl=res,
                              history=[entry], stop_reason="fixed candidates")


def cutting_plane(
    inputs: KernelStack,
    candidates: CandidateSet,
    C: np.ndarray,
    initial: tuple[np.ndarray, np.ndarray],
    *,
    theta: float | None = None,
    offset: float = 1.0,
    solver: str = DEFAULT_SOLVER,
    tol: float = 1e-3,
    mkl_max_iter: int = 200,
    max_iter: int = 30,
    cp_tol: float = 1e-3,
    enumerate_limit: int = 4096,
    n_starts: int = N_STARTS,
    random_state: int | np.random.Generator | np.random.RandomState | None = 0,
    warm: CuttingPlaneResult | None = None,
    callback: Callable[[dict[str, Any]], None] | None = None,
) -> CuttingPlaneResult:
    """Run Algorithm 3 from ``initial`` (or resume from ``warm``).

    Parameters
    ----------
    inputs : KernelStack
        The ``M`` input kernels over the ``N`` training instances.
    candidates : CandidateSet
        The feasible candidates and their search.
    C : ndarray of shape (U,)
        Per-unit costs of the square hinge loss.
    initial : (index, sign)
        The first candidate, shared by all input kernels (ignored when resuming).
    theta : float, optional
        IOKL-SM's cap in units of ``1/T`` (``theta_abs = theta / T`` at each iteration, as in the thesis's
        experiments, so ``theta >= 1``); ``None`` for IOKL-HM.
    offset : float, default=1
        Constant added to the input kernels: the absorbed bias.
    solver : str, default=DEFAULT_SOLVER
        A registered outer solver that can use the group regularizers (``projected_gradient``, ``bcd``:
        the thesis's Algorithm 5, slow where candidates nearly tie, see :data:`DEFAULT_SOLVER`).
    tol : float, default=1e-3
        Certified relative duality gap of each MKL solve.
    mkl_max_iter, max_iter : int
        Outer iterations of each MKL solve; cutting-plane iterations.
    cp_tol : float, default=1e-3
        Stop when the candidate found cannot lower the objective by more than this (relative).
    enumerate_limit : int, default=4096
        Exact search by enumeration when the feasible set is at most this large, sorting ascent otherwise.
    n_starts : int, default=N_STARTS
        Random feasible candidates from which the sorting ascent also starts, at every iteration (besides the
        classifier's labels and the strongest group); 0 keeps those two only.  See :data:`N_STARTS`.
    random_state : int, Generator, RandomState or None, default=0
        Seed of the random starts.
    warm : CuttingPlaneResult, optional
        A previous result on the same data: the loop continues from its groups, weights and ``alpha``.
    callback : callable, optional
        Called with each iteration's history entry.
    """
    _check_theta(theta)
    if not (isinstance(n_starts, int | np.integer) and n_starts >= 0):
        raise ValueError(f"n_starts must be a non-negative integer (random starts of the search); got {n_starts!r}")
    rng = _generator(random_state)
    M = inputs.n_kernels
    inner = SimplexRidge(C)
    if warm is not None:
        stack = IOStack(inputs, warm.index, warm.sign, offset)
        mkl_warm: MKLResult | None = warm.mkl
        if warm.pending is not None:
            stack = stack.with_group(*warm.pending)
            mkl_warm = attrs.evolve(warm.mkl, weights=np.r_[warm.weights, np.zeros(M)])
        history = list(warm.history)
    else:
        stack = IOStack(inputs, np.asarray(initial[0])[None], np.asarray(initial[1])[None], offset)
        mkl_warm, history = None, []
    kernels = [np.asarray(inputs.kernel(m), dtype=np.float64) for m in range(M)]
    stop, res = "max_iter", None
    # The MKL solves of early iterations need not be precise: the violation certificate holds at any alpha
    # (it compares the solve's primal objective, an upper bound, with a certified lower bound), so each
    # solve is asked for a tenth of the last violation, never looser than 1e-2 nor tighter than tol.
    mkl_tol = max(tol, min(1e-2, 0.1 * history[-1]["violation"])) if history else max(tol, 1e-2)
    try:
        for _ in range(max_iter):
            T = stack.n_candidates
            t0 = time.perf_counter()
            problem, res = _solve(stack, inner, theta, solver, mkl_tol, mkl_max_iter, mkl_warm)
            t_mkl = time.perf_counter() - t0
            weights, alpha = res.weights, res.alpha
            # The most violated group, searched from the classifier's own labels and from the strongest group.
            t0 = time.perf_counter()
            W = weights.reshape(T, M)
            betas = [sum(W[t, m] * stack.lift(alpha, t, m) for t in range(T)) for m in range(M)]
            if candidates.shared_across_kernels:
                # one candidate for the whole group: the group norm of its quad forms is the violation
                # the classifier's scores, on the instances that decide a candidate only (MIL: positive bags)
                rows = candidates.scored_instances()
                if rows is None:
                    scores = sum(kernels[m] @ betas[m] + offset * betas[m].sum() for m in range(M))
                else:
                    scores = np.zeros(inputs.n_rows)
                    Kr = candidates.scored_rows(kernels)
                    scores[rows] = sum(Kr[m] @ betas[m] + offset * betas[m].sum() for m in range(M))
                strongest = int(np.argmax(np.linalg.norm(W, axis=1)))
                starts = [candidates.from_scores(scores), (stack.index[strongest, 0], stack.sign[strongest, 0]),
                          *candidates.random_candidates(n_starts, rng)]
                idx, sgn, q_new = candidates.most_violated_group(kernels, alpha, starts, enumerate_limit,
                                                                 offset=offset)
                new_index, new_sign = [idx] * M, [sgn] * M
            else:
                new_index, new_sign, q_new = [], [], np.empty(M)
                for m in range(M):
                    scores = kernels[m] @ betas[m] + offset * betas[m].sum()
                    strongest = int(np.argmax(W[:, m]))
                    starts = [candidates.from_scores(scores), (stack.index[strongest, m], stack.sign[strongest, m]),
                              *candidates.random_candidates(n_starts, rng)]
                    idx, sgn, q_new[m] = candidates.most_violated(kernels[m], alpha, starts, enumerate_limit,
                                                                   offset=offset)
                    new_index.append(idx)
                    new_sign.append(sgn)
            t_search = time.perf_counter() - t0
            t0 = time.perf_counter()
            q_all = np.r_[problem.quad_forms(alpha), q_new]
            t_quad = time.perf_counter() - t0
            bigger = _regularizer(M, T + 1, theta)
            lower = inner.linear_term(alpha) - bigger.dual_bound(0.5 * q_all)
            violation = max(res.objective - lower, 0.0) / max(abs(res.objective), 1e-12)
            new_index, new_sign = np.array(new_index), np.array(new_sign)
            duplicate = bool(np.any(np.all((stack.index == new_index) & (stack.sign == new_sign), axis=(1, 2))))
            entry = {"iteration": len(history) + 1, "n_candidates": T, "objective": res.objective,
                     "mkl_gap": res.dual_gap, "mkl_tol": mkl_tol, "mkl_iter": res.n_iter, "violation": violation,
                     "time_mkl": t_mkl, "time_search": t_search, "time_quad_forms": t_quad}
            history.append(entry)
            if callback is not None:
                callback(entry)
            if violation <= cp_tol:
                stop = "violation below cp_tol"
                break
            before = [h["objective"] for h in history if h["n_candidates"] < T]  # not a re-solve of this set
            settled = duplicate or (bool(before) and abs(before[-1] - res.objective) <= cp_tol * abs(res.objective))
            if settled and mkl_tol > tol:
                # the other two rules trust alpha and the objective: re-solve this set at tol first
                mkl_tol, mkl_warm = tol, res
                continue
            if duplicate:
                stop = "no new candidate"
                break
            if settled:
                stop = "objective change below cp_tol"
                break
            stack = stack.with_group(new_index, new_sign)
            # Warm start: the old weights (the new group at zero, revived by the solver) and alpha.
            mkl_warm = attrs.evolve(res, weights=np.r_[weights, np.zeros(M)])
            mkl_tol = max(tol, min(mkl_tol, 0.1 * violation))
    except KeyboardInterrupt:
        stop = "interrupted"
        warnings.warn(f"IOKL cutting plane interrupted after {len(history)} iterations; returning the last "
                      f"solved candidate set", RuntimeWarning, stacklevel=2)
        if res is None:
            raise
    if res is None:  # resumed with max_iter=0
        return warm  # type: ignore[return-value]
    pending = None
    if stack.n_candidates * M != len(res.weights):
        pending = (stack.index[-1], stack.sign[-1])
        stack = IOStack(inputs, stack.index[:-1], stack.sign[:-1], offset)
    if stop == "max_iter":
        warnings.warn(f"IOKL cutting plane stopped at max_iter={max_iter} with a violation of "
                      f"{history[-1]['violation']:.3g} (cp_tol={cp_tol:g})", RuntimeWarning, stacklevel=2)
    return CuttingPlaneResult(index=stack.index, sign=stack.sign, weights=res.weights, alpha=res.alpha,
                              mkl=res, history=history, stop_reason=stop, pending=pending)
