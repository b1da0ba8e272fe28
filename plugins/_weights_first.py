"""What the methods that choose the kernel weights first and then fit one SVM share.

MKLpy's kernel-combination methods (CKA, ALIGNF, PWMK, FHeuristic, GRAM, R-MKL, MEMO) and EasyMKL do not
minimise the MKL objective ``Omega(mu) + J(mu)``: each computes weights from its own criterion (an
alignment, per-kernel accuracies, a radius-margin ratio, ...), and the classifier is the loss's SVM on the
combined kernel at those weights.  :class:`WeightsThenSVM` is that two-stage solver; a method writes only
:meth:`WeightsThenSVM.weights`.  The SVM runs through the shared outer loop on the single point
``{weights}``, whose certificate is the inner solve's own gap.

:func:`simplex_descent` is the weight search of the iterative methods (GRAM, R-MKL, MEMO): exponentiated
gradient steps over the simplex with an Armijo backtracking line search, stopped by the Frank-Wolfe gap
``mu'g - min_m g_m`` where the objective is convex (a certified bound on ``f(mu) - min f``), by the change of
the objective over the last steps where it is not.
"""

from __future__ import annotations

import abc
import numbers
import warnings
from collections.abc import Callable

import attrs
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from multikernel.core.capabilities import Capability
from multikernel.core.interfaces import InnerCapability, MKLProblem, MKLResult, Regularizer
from multikernel.solve.outer import Evaluator, Iterate, OuterSolver, Stalled

__all__ = ["CHANGE_WINDOW", "FixedWeights", "SearchResult", "SimplexSearch", "WeightsThenSVM", "binary_target",
           "on_simplex", "simplex_descent"]


class FixedWeights(Regularizer):
    """The single point ``mu = weights``: a fixed combination (the weights EasyMKL chose).

    Not registered: :class:`WeightsThenSVM` uses it to solve the SVM at its weights through the shared outer
    loop, whose certificate on a single-point domain is the inner solve's own gap.
    """

    name = "fixed_weights"
    domain = "point"

    def __init__(self, weights: np.ndarray | None = None) -> None:
        self.weights = weights

    def check(self, n_kernels: int) -> None:
        w = np.asarray(self.weights, dtype=np.float64)
        if w.shape != (n_kernels,) or not (np.isfinite(w).all() and (w >= 0).all() and w.sum() > 0):
            raise ValueError(f"fixed weights must be {n_kernels} finite non-negative numbers, not all zero")

    def initial(self, n_kernels: int) -> np.ndarray:
        return np.asarray(self.weights, dtype=np.float64).copy()

    def dual_bound(self, g: np.ndarray) -> float:
        return float(np.asarray(self.weights, dtype=np.float64) @ g)

    def closed_form_update(self, mu: np.ndarray, q: np.ndarray) -> np.ndarray:
        return self.initial(len(mu))

    def project(self, v: np.ndarray) -> np.ndarray:
        return self.initial(len(v))


def binary_target(problem: MKLProblem, method: str) -> np.ndarray:
    """The one block of targets in {-1, +1} of ``problem``, or a ``ValueError`` naming ``method``.

    These methods separate two classes; a multi-class fit reaches them one class against the rest
    (``multiclass="ovr"``, the default), each with its own weights.
    """
    if InnerCapability.LABELLED_BLOCKS not in problem.inner.capabilities():
        raise ValueError(f"{method} needs class targets in {{-1, +1}}: it has no form for a problem that brings "
                         "its own inner problem")
    y = np.asarray(problem.y, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError(f"{method} chooses the weights of one binary problem; fit several classes one against "
                         f"the rest (multiclass='ovr'), not with shared weights ({y.shape[0]} blocks given)")
    if not ((y == 1).any() and (y == -1).any()):
        raise ValueError(f"{method} needs both classes among the training targets")
    return y


def on_simplex(scores: np.ndarray, method: str, floor: float = 0.0) -> np.ndarray:
    """``scores`` above ``floor`` (the others at 0) scaled to sum 1: the combined kernel then has the scale of the
    average kernel, so ``C`` means what it means for ``average``.  A ``ValueError`` when none is above."""
    scores = np.asarray(scores, dtype=np.float64)
    if not np.isfinite(scores).all():
        raise ValueError(f"{method} computed non-finite kernel scores; check the kernels for infinite or "
                         "not-a-number entries")
    scores = np.where(scores > floor, scores, 0.0)
    total = scores.sum()
    if not total > 0:
        raise ValueError(f"{method} scored no kernel above 0 (no kernel agrees with the labels by its criterion); "
                         "use other kernels or another method")
    return scores / total


class WeightsThenSVM(OuterSolver):
    """Weights from :meth:`weights`, then the loss's SVM on the combined kernel, solved until its own
    certified gap meets ``tol``.

    ``n_iter`` of the result counts the weight search's steps and the SVM's iterations.
    """

    requires = frozenset({Capability.SIMPLEX})
    requires_inner = frozenset({InnerCapability.LABELLED_BLOCKS})

    @abc.abstractmethod
    def weights(self, problem: MKLProblem) -> tuple[np.ndarray, int]:
        """The kernel weights (on the simplex) and the number of steps taken to find them."""

    def solve(self, problem: MKLProblem) -> MKLResult:
        self.check_parts(problem)
        self.check(problem)
        weights, steps = self.weights(problem)
        # A single-point domain takes no step and certifies with the inner gap (a warm start keeps its
        # alpha; its weights are replaced by the point).  FixedWeights offers none of the capabilities the
        # problem's regularizer was checked for, hence _run and not solve.
        result = self._run(attrs.evolve(problem, regularizer=FixedWeights(weights)))
        return attrs.evolve(result, n_iter=result.n_iter + steps)

    def step(self, evaluate: Evaluator, it: Iterate) -> Iterate | Stalled:  # pragma: no cover - never called
        return Stalled("the weights are fixed")


@attrs.define
class SearchResult:
    """The outcome of :func:`simplex_descent`: the weights, the objective there, the last value of the stopping
    measure, the number of steps and whether the measure met the tolerance."""

    mu: np.ndarray
    value: float
    measure: float
    n_iter: int
    converged: bool


#: Steps over which :func:`simplex_descent` measures the change of a search that has no certificate.
CHANGE_WINDOW = 10


def simplex_descent(evaluate: Callable[[np.ndarray], tuple[float, np.ndarray]], mu0: np.ndarray, *, tol: float,
                    max_iter: int, certified: bool, relative: bool, method: str) -> SearchResult:
    """Minimise ``f`` over the unit simplex by exponentiated gradient steps with Armijo backtracking.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(mu) -> (f(mu), g)`` with ``g`` a (sub)gradient of ``f`` at ``mu``.
    mu0 : ndarray of shape (M,)
        Start, with positive entries summing to 1.
    tol : float
        The tolerance of the stopping measure, relative to ``|f(mu)|`` when ``relative``.
    max_iter : int
        Most steps; reaching it warns (``ConvergenceWarning``) with the measure reached.
    certified : bool
        For a convex ``f``: stop at a Frank-Wolfe gap ``mu'g - min_m g_m <= tol``, which bounds
        ``f(mu) - min f`` for any subgradient.  Otherwise (no certificate: a quasi-convex or non-convex ``f``,
        whose subgradient at a kink says nothing of stationarity) stop when ``f`` fell by at most ``tol`` over
        the last :data:`CHANGE_WINDOW` steps.
    relative : bool
        Whether ``tol`` is relative to ``|f(mu)|``.
    method : str
        Named in the warnings.
    """
    mu = np.asarray(mu0, dtype=np.float64)
    f, g = evaluate(mu)
    values = [f]
    eta = 1.0
    what = "Frank-Wolfe gap" if certified else f"change over {CHANGE_WINDOW} steps"
    measure = np.inf
    for it in range(max_iter + 1):
        scale = max(abs(f), 1e-300) if relative else 1.0
        if certified:
            measure = float(mu @ g - g.min()) / scale
        elif len(values) > CHANGE_WINDOW:
            measure = (values[-CHANGE_WINDOW - 1] - f) / scale
        if measure <= tol:
            return SearchResult(mu, f, measure, it, True)
        if it == max_iter:
            break
        # The gradient scaled to [0, 1] makes the step size dimensionless: eta = 1 shrinks the worst kernel's
        # weight by e relative to the best one's; the size doubles after a step accepted at the first trial.
        spread = float(g.max() - g.min())
        if not spread > 0:  # every kernel's derivative is the same: no direction in the simplex moves f
            return SearchResult(mu, f, 0.0, it, True)
        with np.errstate(divide="ignore"):
            log_mu = np.log(mu)
        backtracked = False
        for _ in range(60):
            z = log_mu - eta * (g - g.min()) / spread
            # weights stay above 1e-12 of the largest, so that a kernel the search left can come back in a few
            # steps when its gradient turns favourable (a multiplicative update never revives a weight of 0)
            trial = np.maximum(np.exp(z - z.max()), 1e-12)
            trial /= trial.sum()
            f_new, g_new = evaluate(trial)
            if f_new <= f + 1e-4 * float(g @ (trial - mu)):
                break
            eta /= 2.0
            backtracked = True
        else:
            warnings.warn(f"{method}: the weight search stalled (no step lowers its objective) at {what} "
                          f"{measure:.2e} for tol {tol:g}; the weights reached are used", ConvergenceWarning,
                          stacklevel=3)
            return SearchResult(mu, f, measure, it, False)
        mu, f, g = trial, f_new, g_new
        values.append(f)
        if not backtracked:  # a step size that needed no backtracking may be too small: try twice as large
            eta *= 2.0
    warnings.warn(f"{method}: the weight search reached max_iter = {max_iter} at {what} {measure:.2e} for tol "
                  f"{tol:g}; raise max_iter (or tol) for a finer optimum", ConvergenceWarning, stacklevel=3)
    return SearchResult(mu, f, measure, max_iter, False)


class SimplexSearch(WeightsThenSVM):
    """An iterative weight search over the simplex (:func:`simplex_descent`) on an objective whose value and
    gradient come from SMO solves on the combined kernel; ``tol`` and ``max_iter`` are the problem's."""

    #: whether the objective is convex, so that the Frank-Wolfe gap certifies the weights (else: change rule)
    certified: bool = True
    #: whether ``tol`` is relative to the objective
    relative: bool = True

    def __init__(self, qp_tol: float = 1e-7) -> None:
        self.qp_tol = qp_tol

    def check(self, problem: MKLProblem) -> None:
        if not (isinstance(self.qp_tol, numbers.Real) and 0 < self.qp_tol < 1):
            raise ValueError(f"{self.name}'s qp_tol must be in (0, 1); got {self.qp_tol!r}")

    @abc.abstractmethod
    def objective(self, problem: MKLProblem, y: np.ndarray) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
        """``evaluate(mu) -> (f(mu), gradient)`` of the objective to minimise over the simplex."""

    def weights(self, problem: MKLProblem) -> tuple[np.ndarray, int]:
        y = binary_target(problem, self.name)
        problem.stack._check_square(self.name)
        evaluate = self.objective(problem, y)
        M = problem.stack.n_kernels
        found = simplex_descent(evaluate, np.full(M, 1.0 / M), tol=problem.tol, max_iter=problem.max_iter,
                                certified=self.certified, relative=self.relative,
                                method=self.name)
        return found.mu, found.n_iter
