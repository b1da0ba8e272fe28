"""Model selection on a precomputed kernel stack: k-fold cross-validation over a grid, without recomputing
kernels.

A fold is a row/column subset of the training stack (``stack.subset``: a view where the backend offers
one), so each fold's kernels come from the one training stack, whatever the grid size.  Outer solvers are
called directly (:class:`~multikernel.interfaces.MKLProblem`), which lets consecutive grid points pass the
previous solution as ``warm_start``.  The grid is walked as a snake: ``C`` increasing for the first value of
the other parameters, decreasing for the next, and so on, so consecutive points differ in one step of one
parameter.  When a step changes a regularizer parameter, the previous weights are projected onto the new
domain (the regularizer's ``project``) so that the warm start is feasible; a regularizer without a
projection starts that point cold.  The solvers stop on their tolerance either way, so a warm start changes
the cost, not the tolerance of the answer.

Selection follows :class:`sklearn.model_selection.GridSearchCV`: the highest mean fold accuracy, ties going
to the first point in :class:`~sklearn.model_selection.ParameterGrid` order.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import attrs
import numpy as np
from sklearn.base import clone
from sklearn.model_selection import ParameterGrid

from multikernel.capabilities import check_compatible
from multikernel.config import SolverConfig
from multikernel.errors import ConfigError, PluginError
from multikernel.experiment_config import MethodSpec, evaluate_value
from multikernel.interfaces import Component, MKLProblem, MKLResult
from multikernel.registry import get_registry
from multikernel.stack import DenseStack, KernelStack

__all__ = [
    "FitOutcome",
    "UnknownParameterError",
    "check_method",
    "make_parts",
    "resolve_grid",
    "warm_chains",
    "fit_point",
    "decision_values",
    "predict_labels",
    "cross_validate",
    "cross_validate_methods",
    "select_best",
    "subset_stack",
    "binary_targets",
]


@attrs.define
class FitOutcome:
    """The outer-solver results of one fit, one :class:`MKLResult` per binary (one-vs-rest) problem."""

    results: list[MKLResult]
    fit_time: float
    params: dict[str, Any] = attrs.Factory(dict)

    @property
    def weights(self) -> np.ndarray:
        """Kernel weights, shape (n_problems, M)."""
        return np.array([r.weights for r in self.results])

    @property
    def n_iter(self) -> int:
        return int(max(r.n_iter for r in self.results))

    @property
    def dual_gap(self) -> float:
        return float(max(r.dual_gap for r in self.results))

    @property
    def objective(self) -> float:
        return float(sum(r.objective for r in self.results))

    @property
    def converged(self) -> bool:
        return all(bool(r.converged) for r in self.results)


# --------------------------------------------------------------------------------------------------
# parts and grids
# --------------------------------------------------------------------------------------------------
class UnknownParameterError(ValueError):
    """A grid key naming a parameter the method's part does not have; ``key`` is the grid key."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


def _create(kind: str, override: Any, default_name: str, default_params: dict[str, Any]) -> Component:
    registry = get_registry()
    if override is None:
        return registry.create(kind, default_name, **default_params)
    return registry.create(kind, override.name, **override.params)


def make_parts(spec: MethodSpec, params: dict[str, Any]) -> tuple[Component, Component, Component]:
    """The loss, regularizer and solver of ``spec`` with the grid point ``params`` applied.

    ``C`` is set on the loss (as :class:`~multikernel.MKLClassifier` does); ``part__name`` on that part.

    Raises
    ------
    PluginError
        For unknown plugin names or a solver the regularizer cannot serve
        (:class:`~multikernel.capabilities.IncompatiblePartsError`); :class:`UnknownParameterError` for a
        parameter the part does not have.
    """
    method = get_registry().get("method", spec.method)
    parts = {
        "loss": _create("loss", spec.loss, method.loss, method.loss_params),
        "regularizer": _create("regularizer", spec.regularizer, method.regularizer, method.regularizer_params),
        "solver": _create("solver", spec.solver, method.solver, method.solver_params),
    }
    for key, value in params.items():
        part, _, name = key.partition("__")
        if key == "C":
            part, name = "loss", "C"
        target = parts[part]
        if name not in target.get_params(deep=False):
            raise UnknownParameterError(
                f"{name!r} is not a parameter of {part} {target.name!r} (method {spec.method!r}); its "
                f"parameters: {', '.join(sorted(target.get_params(deep=False))) or '(none)'}", key)
        target.set_params(**{name: value})
    check_compatible(parts["regularizer"], parts["solver"])
    return parts["loss"], parts["regularizer"], parts["solver"]


def resolve_grid(grid: dict[str, list[Any]], n_kernels: int) -> list[dict[str, Any]]:
    """The grid points in :class:`~sklearn.model_selection.ParameterGrid` order, expressions in ``M``
    evaluated for ``n_kernels`` kernels.  An empty grid is one point: the method's defaults."""
    resolved = {k: [evaluate_value(v, n_kernels) for v in values] for k, values in grid.items()}
    return list(ParameterGrid(resolved)) if resolved else [{}]


def warm_chains(points: Sequence[dict[str, Any]]) -> list[list[int]]:
    """The order in which grid points are fitted, as one chain (a list of index lists, for callers that
    start each chain cold).

    Points are grouped by every parameter except ``C`` (groups in grid order); ``C`` runs up in the first
    group, down in the second, and so on (a snake), so consecutive points differ in one step.
    """
    groups: dict[tuple, list[int]] = {}
    for i, p in enumerate(points):
        key = tuple(sorted((k, repr(v)) for k, v in p.items() if k != "C"))
        groups.setdefault(key, []).append(i)
    order: list[int] = []
    for g, idx in enumerate(groups.values()):
        ranked = sorted(idx, key=lambda i: points[i].get("C", 0.0))
        order += ranked if g % 2 == 0 else ranked[::-1]
    return [order]


def check_method(spec: MethodSpec, points: Sequence[dict[str, Any]], n_kernels: int, path: str) -> None:
    """Build the parts of every grid point and check each regularizer for ``n_kernels`` kernels.

    Raises
    ------
    ConfigError
        With the key path of the method or grid entry at fault.
    """
    try:
        get_registry().get("method", spec.method)
    except PluginError as exc:
        raise ConfigError(str(exc), f"{path}.method") from exc
    for point in points:
        try:
            _, regularizer, _ = make_parts(spec, point)
        except PluginError as exc:
            raise ConfigError(str(exc), path) from exc
        except UnknownParameterError as exc:
            raise ConfigError(str(exc), f"{path}.grid.{exc.key}") from exc
        except ValueError as exc:  # a parameter value the part refuses when it is set
            raise ConfigError(str(exc), f"{path}.grid") from exc
        try:
            regularizer.check(n_kernels)
        except ValueError as exc:
            shown = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v!r}" for k, v in point.items())
            raise ConfigError(f"grid point ({shown}) is infeasible for M={n_kernels} kernels: {exc}",
                              f"{path}.grid") from exc


# --------------------------------------------------------------------------------------------------
# fitting and predicting on stacks
# --------------------------------------------------------------------------------------------------
def binary_targets(y: np.ndarray, classes: np.ndarray) -> list[np.ndarray]:
    """One {-1, +1} target per binary problem: one for two classes, one-vs-rest otherwise."""
    idx = np.searchsorted(classes, y)
    if len(classes) == 2:
        return [np.where(idx == 1, 1.0, -1.0)]
    return [np.where(idx == k, 1.0, -1.0) for k in range(len(classes))]


def fit_point(stack: KernelStack, targets: Sequence[np.ndarray], spec: MethodSpec, params: dict[str, Any],
              solver_config: SolverConfig, warm: FitOutcome | None = None) -> FitOutcome:
    """Fit ``spec`` at the grid point ``params`` on a training stack: one outer solve per target."""
    loss, regularizer, solver = make_parts(spec, params)
    start = time.perf_counter()
    starts = _feasible_starts(warm, params, regularizer, stack.n_kernels, len(targets))
    results = []
    for y, warm_start in zip(targets, starts, strict=True):
        problem = MKLProblem(stack=stack, y=y, loss=clone(loss), regularizer=clone(regularizer),
                             tol=solver_config.tol, max_iter=solver_config.max_iter,
                             inner_tol=solver_config.inner_tol, stopping=solver_config.stopping,
                             warm_start=warm_start)
        results.append(clone(solver).solve(problem))
    return FitOutcome(results=results, fit_time=time.perf_counter() - start, params=dict(params))


def _feasible_starts(warm: FitOutcome | None, params: dict[str, Any], regularizer: Component, n_kernels: int,
                     n_problems: int) -> list[MKLResult | None]:
    """The warm starts of a fit at ``params``: the previous results, with their weights projected onto the
    new domain when a regularizer parameter changed (cold starts when the regularizer has no projection)."""
    if warm is None:
        return [None] * n_problems
    changed = {k for k in set(params) | set(warm.params)
               if k.startswith("regularizer__") and repr(params.get(k)) != repr(warm.params.get(k))}
    if not changed:
        return list(warm.results)
    try:
        regularizer.check(n_kernels)
        return [attrs.evolve(r, weights=np.asarray(regularizer.project(r.weights), dtype=np.float64))
                for r in warm.results]
    except NotImplementedError:
        return [None] * n_problems


def decision_values(cross: KernelStack, outcome: FitOutcome) -> np.ndarray:
    """Decision values on the rows of a cross stack (rows x training columns): shape (n_rows, n_problems)."""
    return np.column_stack([cross.combine(r.weights) @ r.coef + r.bias for r in outcome.results])


def predict_labels(scores: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Class labels from :func:`decision_values` (sign for two classes, argmax one-vs-rest otherwise)."""
    if scores.shape[1] == 1:
        return classes[(scores[:, 0] > 0).astype(int)]
    return classes[np.argmax(scores, axis=1)]


def subset_stack(stack: KernelStack, rows: np.ndarray, cols: np.ndarray) -> KernelStack:
    """``stack`` restricted to ``rows`` x ``cols``, for the fits of a whole grid.

    An in-memory dense stack gives a contiguous copy (at most the stack's own size; it streams several
    times faster than a view), a memory map or a lazy stack the backend's view, which keeps their memory
    bound; any other stack a copy.
    """
    subset = getattr(stack, "subset", None)
    if subset is not None:
        try:
            view = subset(rows, cols)
        except NotImplementedError:
            pass
        else:
            if type(view) is DenseStack and not isinstance(view.data, np.memmap):
                return view.materialize()
            return view
    return DenseStack(np.stack([np.asarray(stack.kernel(m))[np.ix_(rows, cols)] for m in range(stack.n_kernels)]))


def cross_validate(stack: KernelStack, y: np.ndarray, classes: np.ndarray,
                   folds: Sequence[tuple[np.ndarray, np.ndarray]], spec: MethodSpec,
                   points: Sequence[dict[str, Any]], solver_config: SolverConfig,
                   warm_start: bool = True) -> tuple[np.ndarray, dict[str, Any]]:
    """Fold accuracies of every grid point, shape (n_points, n_folds), and bookkeeping.

    ``folds`` are (train, validation) index pairs into the rows of the square training ``stack``.  Each
    fold's sub-stacks are taken once and serve every grid point.
    """
    return cross_validate_methods(stack, y, classes, folds, [(spec, points)], solver_config, warm_start)[0]


def cross_validate_methods(stack: KernelStack, y: np.ndarray, classes: np.ndarray,
                           folds: Sequence[tuple[np.ndarray, np.ndarray]],
                           methods: Sequence[tuple[MethodSpec, Sequence[dict[str, Any]]]],
                           solver_config: SolverConfig, warm_start: bool = True,
                           guards: Sequence[Callable[[], AbstractContextManager]] | None = None
                           ) -> list[tuple[np.ndarray, dict[str, Any]]]:
    """:func:`cross_validate` for several (method, grid points) pairs on the same folds.

    The folds are the outer loop, so each fold's sub-stacks (a contiguous copy for in-memory stacks) are
    taken once for all the methods and only one fold's copy is alive at a time.  ``guards`` (one per
    method) make the context each method's work of a fold runs in; a guard that swallows an exception
    marks its method as failed, and its remaining folds are skipped (its scores are then incomplete).
    """
    results = [(np.full((len(points), len(folds)), np.nan),
                {"cv_time": 0.0, "cv_fits": 0, "cv_outer_iterations": 0}) for _, points in methods]
    guards = list(guards) if guards is not None else [contextlib.nullcontext] * len(methods)
    failed = [False] * len(methods)
    for f, (train, val) in enumerate(folds):
        if all(failed):
            break
        fold_train = subset_stack(stack, train, train)
        fold_val = subset_stack(stack, val, train)
        targets = binary_targets(y[train], classes)
        for j, ((spec, points), (scores, info)) in enumerate(zip(methods, results, strict=True)):
            if failed[j]:
                continue
            failed[j] = True  # until this fold's work has finished
            with guards[j]():
                _cross_validate_fold(fold_train, fold_val, y[val], targets, classes, f, spec, points,
                                     solver_config, warm_start, scores, info)
                failed[j] = False
    return results


def _cross_validate_fold(fold_train: KernelStack, fold_val: KernelStack, y_val: np.ndarray,
                         targets: list[np.ndarray], classes: np.ndarray, f: int, spec: MethodSpec,
                         points: Sequence[dict[str, Any]], solver_config: SolverConfig, warm_start: bool,
                         scores: np.ndarray, info: dict[str, Any]) -> None:
    """One fold of one method: every grid point along its warm-start chains."""
    start = time.perf_counter()
    for chain in warm_chains(points):
        previous: FitOutcome | None = None
        for i in chain:
            outcome = fit_point(fold_train, targets, spec, points[i], solver_config,
                                warm=previous if warm_start else None)
            predicted = predict_labels(decision_values(fold_val, outcome), classes)
            scores[i, f] = float(np.mean(predicted == y_val))
            previous = outcome
            info["cv_fits"] += 1
            info["cv_outer_iterations"] += sum(r.n_iter for r in outcome.results)
    info["cv_time"] += time.perf_counter() - start


def select_best(scores: np.ndarray) -> int:
    """Index of the grid point with the highest mean fold score; the first such point on ties
    (as :class:`~sklearn.model_selection.GridSearchCV`)."""
    means = np.mean(scores, axis=1)
    return int(np.flatnonzero(means == means.max())[0])
