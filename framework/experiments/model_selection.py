"""Model selection on a precomputed kernel stack: k-fold cross-validation over a grid, without recomputing
kernels.

A fold is a row/column subset of the training stack (``stack.subset``: a view where the backend offers
one), so each fold's kernels come from the one training stack, whatever the grid size.  Each grid point is
fitted by the fit core (:func:`multikernel.solve.fit.fit_mkl`), which lets consecutive grid points pass the
previous fit as ``warm``.  The grid is walked as a snake: ``C`` increasing for the first value of
the other parameters, decreasing for the next, and so on, so consecutive points differ in one step of one
parameter.  When a step changes a regularizer parameter, the solvers project the previous weights onto the
new domain (the regularizer's ``project``) so that the warm start is feasible; a regularizer without a
projection starts that point from its initial weights.  The solvers stop on their tolerance either way, so a
warm start changes the cost, not the tolerance of the answer.

Selection follows :class:`sklearn.model_selection.GridSearchCV`: the highest mean fold accuracy, ties going
to the first point in :class:`~sklearn.model_selection.ParameterGrid` order.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
from sklearn.model_selection import ParameterGrid

from multikernel.experiments.config import MethodSpec, evaluate_value
from multikernel.experiments.equivalent import problem_key
from multikernel.solve.fit import (
    FittedMKL,
    Parts,
    SolveSettings,
    Targets,
    build_parts,
    encode_targets,
    fit_mkl,
)
from multikernel.solve.grid_path import select_best, walk_path, warm_chains
from multikernel.stack.storage import KernelStack
from multikernel.stack.subsets import subset_stack

__all__ = [
    "method_parts",
    "resolve_grid",
    "warm_chains",
    "fit_point",
    "cross_validate",
    "cross_validate_methods",
    "fits_per_fold",
    "select_best",
    "subset_stack",
]


def method_parts(spec: MethodSpec, params: dict[str, Any]) -> Parts:
    """The parts of a ``[[methods]]`` entry at the grid point ``params`` (:func:`multikernel.solve.fit.build_parts`)."""
    return build_parts(spec.method, spec.loss, spec.regularizer, spec.solver, params)


def resolve_grid(grid: dict[str, list[Any]], n_kernels: int) -> list[dict[str, Any]]:
    """The grid points in :class:`~sklearn.model_selection.ParameterGrid` order, expressions in ``M``
    evaluated for ``n_kernels`` kernels.  An empty grid is one point: the method's defaults."""
    resolved = {k: [evaluate_value(v, n_kernels) for v in values] for k, values in grid.items()}
    return list(ParameterGrid(resolved)) if resolved else [{}]


# --------------------------------------------------------------------------------------------------
# fitting on stacks
# --------------------------------------------------------------------------------------------------
def fit_point(stack: KernelStack, targets: Targets, spec: MethodSpec, params: dict[str, Any],
              settings: SolveSettings, warm: FittedMKL | None = None) -> FittedMKL:
    """Fit ``spec`` at the grid point ``params`` on a training stack, warm-started from ``warm``."""
    return fit_mkl(stack, targets, method_parts(spec, params), settings, warm=warm, params=params)


def cross_validate(stack: KernelStack, y: np.ndarray, folds: Sequence[tuple[np.ndarray, np.ndarray]],
                   spec: MethodSpec, points: Sequence[dict[str, Any]], settings: SolveSettings,
                   warm_start: bool = True, share: bool = True, warm_order: str = "C"
                   ) -> tuple[np.ndarray, dict[str, Any]]:
    """Fold accuracies of every grid point, shape (n_points, n_folds), and bookkeeping.

    ``folds`` are (train, validation) index pairs into the rows of the square training ``stack``; ``y`` the
    training labels.  Each fold's sub-stacks are taken once and serve every grid point.
    """
    return cross_validate_methods(stack, y, folds, [(spec, points)], settings, warm_start, share=share,
                                  warm_order=warm_order)[0]


def cross_validate_methods(stack: KernelStack, y: np.ndarray, folds: Sequence[tuple[np.ndarray, np.ndarray]],
                           methods: Sequence[tuple[MethodSpec, Sequence[dict[str, Any]]]],
                           settings: SolveSettings, warm_start: bool = True,
                           guards: Sequence[Callable[[], AbstractContextManager]] | None = None,
                           share: bool = True, warm_order: str = "C") -> list[tuple[np.ndarray, dict[str, Any]]]:
    """:func:`cross_validate` for several (method, grid points) pairs on the same folds.

    The folds are the outer loop, so each fold's sub-stacks (a contiguous copy for in-memory stacks) are
    taken once for all the methods and only one fold's copy is alive at a time.  ``guards`` (one per
    method) make the context each method's work of a fold runs in; a guard that swallows an exception
    marks its method as failed, and its remaining folds are skipped (its scores are then incomplete).  A
    method's own ``warm_order`` (:class:`~multikernel.experiments.config.MethodSpec`) overrides ``warm_order``.

    With ``share``, grid points that are the same problem (:func:`multikernel.experiments.equivalent.problem_key`:
    SGMKL at ``v = 1``, Lp-MKL at ``p = 1`` and SimpleMKL are all L1-MKL) are fitted once per fold, by the first
    method that meets them, and that certified fit serves the others (counted in ``cv_shared_fits``).
    """
    results = [(np.full((len(points), len(folds)), np.nan),
                {"cv_time": 0.0, "cv_fits": 0, "cv_shared_fits": 0, "cv_outer_iterations": 0, "cv_gap_max": 0.0})
               for _, points in methods]
    guards = list(guards) if guards is not None else [contextlib.nullcontext] * len(methods)
    failed = [False] * len(methods)
    targets = encode_targets(y)
    for f, (train, val) in enumerate(folds):
        if all(failed):
            break
        fold_train = subset_stack(stack, train, train)
        fold_val = subset_stack(stack, val, train)
        shared: dict[tuple, FittedMKL] | None = {} if share else None  # this fold's fits by problem
        for j, ((spec, points), (scores, info)) in enumerate(zip(methods, results, strict=True)):
            if failed[j]:
                continue
            failed[j] = True  # until this fold's work has finished
            with guards[j]():
                _cross_validate_fold(fold_train, fold_val, targets.subset(train), y[val], f, spec, points,
                                     settings, warm_start, scores, info, shared, spec.warm_order or warm_order)
                failed[j] = False
    return results


def shared_problem(spec: MethodSpec, params: dict[str, Any], n_kernels: int) -> tuple | None:
    """The key under which a fold shares the fit of this grid point with other methods' equivalent points
    (:func:`multikernel.experiments.equivalent.problem_key`), ``None`` if it shares nothing."""
    return problem_key(method_parts(spec, params), n_kernels)


def fits_per_fold(methods: Sequence[tuple[MethodSpec, Sequence[dict[str, Any]]]], n_kernels: int) -> int:
    """How many fits :func:`cross_validate_methods` makes per fold with ``share``: each distinct shared problem
    once, and every point that shares nothing."""
    keys = [shared_problem(spec, point, n_kernels) for spec, points in methods for point in points]
    return sum(key is None for key in keys) + len({key for key in keys if key is not None})


def _cross_validate_fold(fold_train: KernelStack, fold_val: KernelStack, targets: Targets, y_val: np.ndarray,
                         f: int, spec: MethodSpec, points: Sequence[dict[str, Any]], settings: SolveSettings,
                         warm_start: bool, scores: np.ndarray, info: dict[str, Any],
                         shared: dict[tuple, FittedMKL] | None = None, warm_order: str = "C") -> None:
    """One fold of one method: every grid point along its warm-start chains; a point whose problem is in
    ``shared`` (fitted by another method on this fold) takes that fit."""
    start = time.perf_counter()

    def fit_at(i: int, previous: FittedMKL | None) -> FittedMKL:
        key = shared_problem(spec, points[i], fold_train.n_kernels) if shared is not None else None
        fitted = shared.get(key) if key is not None else None
        if fitted is not None:
            info["cv_shared_fits"] += 1
            return fitted
        fitted = fit_point(fold_train, targets, spec, points[i], settings, warm=previous)
        if key is not None:
            shared[key] = fitted  # type: ignore[index]
        info["cv_fits"] += 1
        info["cv_outer_iterations"] += int(fitted.n_iter.sum())
        return fitted

    for i, fitted in walk_path(points, fit_at, warm_order, warm_start):
        scores[i, f] = float(np.mean(fitted.predict(fold_val) == y_val))
        info["cv_gap_max"] = max(info["cv_gap_max"], float(fitted.dual_gap.max()))
    info["cv_time"] += time.perf_counter() - start
