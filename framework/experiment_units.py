"""The independent units of work of an experiment, each a pure function of its inputs.

A unit is one (data set, split, method) of the benchmark, one (noise ratio, method) of the noisy-kernel
experiment, or one parameter path.  Each unit draws its split, standardizes with the training statistics,
builds the training kernel stack once and the test x train cross kernels once (block by block, to bound the
memory), selects parameters by cross-validation on the training part (:mod:`multikernel.stackcv`), refits at
the selected point and tests.  Units run in worker processes; they return plain JSON-ready dicts.
"""

from __future__ import annotations

import inspect
import time
import traceback
import warnings
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold, train_test_split

from multikernel.config import KernelsConfig, PreprocessingConfig, SolverConfig
from multikernel.errors import ConfigError, PluginError
from multikernel.experiment_config import DatasetSpec, ExperimentSettings, MethodSpec, PathConfig, evaluate_value
from multikernel.interfaces import KernelBuilder
from multikernel.kernelset import KernelSet
from multikernel.registry import get_registry
from multikernel.stackcv import (
    FitOutcome,
    binary_targets,
    cross_validate,
    decision_values,
    fit_point,
    predict_labels,
    resolve_grid,
    select_best,
)

__all__ = ["UnitTask", "run_unit", "make_builders", "make_kernel_set", "split_data", "append_noise", "noise_columns"]


@attrs.define
class UnitTask:
    """Everything one unit needs (picklable, sent to a worker process).

    ``kind`` is ``"benchmark"``, ``"noisy"`` or ``"path"``; ``index`` the repeat, the ratio index or the path
    index; ``ratio`` the noise ratio of a noisy unit; ``path`` the path of a path unit.
    """

    key: str
    fingerprint: str
    kind: str
    dataset: DatasetSpec
    X: np.ndarray
    y: np.ndarray
    method: MethodSpec
    settings: ExperimentSettings
    preprocessing: PreprocessingConfig
    kernels: KernelsConfig
    solver: SolverConfig
    repeat: int = 0
    index: int = 0
    ratio: float = 0.0
    max_ratio: float = 0.0
    path: PathConfig | None = None


# --------------------------------------------------------------------------------------------------
# data and kernels
# --------------------------------------------------------------------------------------------------
def make_builders(kernels: KernelsConfig, n_features: int) -> list[KernelBuilder]:
    """The unfitted base kernel builders of ``kernels`` for data with ``n_features`` features."""
    if kernels.builders:
        from multikernel.runner import _builders  # the run config's expansion of explicit builder lists

        return _builders(kernels.builders, n_features)
    try:
        family = get_registry().get("family", kernels.family)
    except PluginError as exc:
        raise ConfigError(str(exc), "kernels.family") from exc
    try:
        return list(family(n_features, **kernels.family_params))
    except TypeError as exc:
        raise ConfigError(f"bad parameters for family {kernels.family!r}: {exc}", "kernels.family_params") from exc


def make_kernel_set(kernels: KernelsConfig, n_features: int) -> KernelSet:
    """An unfitted :class:`KernelSet` for ``kernels``; settings of ``[kernels]`` that the kernel set takes
    (``normalize``, ``dtype``, and storage options where the installed version has them) are passed on."""
    accepted = inspect.signature(KernelSet).parameters
    options = {k: v for k, v in attrs.asdict(kernels, recurse=False).items()
               if k in accepted and k != "builders" and v is not None}
    return KernelSet(make_builders(kernels, n_features), **options)


def noise_columns(n_features: int, ratio: float) -> int:
    """Number of random features appended at noise ratio ``ratio``: ``round(ratio * n_features)``."""
    return int(round(ratio * n_features))


def append_noise(X: np.ndarray, ratio: float, max_ratio: float, seed: int) -> np.ndarray:
    """``X`` with ``round(ratio d)`` standard-normal columns appended.

    The noise matrix is drawn once for ``max_ratio`` from ``seed`` and its first columns are used, so the
    noise at a smaller ratio is part of the noise at a larger one (nested, a smoother curve).
    """
    rng = np.random.default_rng([seed, 7919])  # a stream separate from the splits' seeds
    noise = rng.standard_normal((X.shape[0], noise_columns(X.shape[1], max_ratio)))
    return np.hstack([X, noise[:, :noise_columns(X.shape[1], ratio)]])


def split_data(X: np.ndarray, y: np.ndarray, dataset: DatasetSpec, settings: ExperimentSettings, repeat: int,
               standardize: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stratified split ``repeat`` (seed ``seed + repeat``), standardized with the training statistics."""
    size = {"train_size": dataset.train_size} if dataset.train_size else {"test_size": settings.test_fraction}
    Xtr, Xte, ytr, yte = train_test_split(X, y, stratify=y, random_state=settings.seed + repeat, **size)
    if standardize:
        mean, scale = Xtr.mean(axis=0), Xtr.std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)  # constant columns stay constant instead of NaN
        Xtr, Xte = (Xtr - mean) / scale, (Xte - mean) / scale
    return Xtr, Xte, ytr, yte


def _test_decisions(kernel_set: KernelSet, X_test: np.ndarray, n_train: int, outcomes: Sequence[FitOutcome],
                    block_mb: float) -> list[np.ndarray]:
    """Decision values of every outcome on ``X_test``; each block of cross kernels is computed once."""
    bytes_per_row = len(kernel_set.builders) * n_train * np.dtype(kernel_set.dtype).itemsize
    rows = max(1, int(block_mb * 2**20 // max(bytes_per_row, 1)))
    parts: list[list[np.ndarray]] = [[] for _ in outcomes]
    for start in range(0, len(X_test), rows):
        cross = kernel_set.cross_stack(X_test[start:start + rows])
        for k, outcome in enumerate(outcomes):
            parts[k].append(decision_values(cross, outcome))
    return [np.vstack(p) for p in parts]


def _summary(outcome: FitOutcome) -> dict[str, Any]:
    weights = outcome.weights
    return {
        "weights": (weights[0] if len(weights) == 1 else weights).tolist(),
        "fit_time": outcome.fit_time, "n_iter": outcome.n_iter, "dual_gap": outcome.dual_gap,
        "objective": outcome.objective, "converged": outcome.converged,
    }


# --------------------------------------------------------------------------------------------------
# the units
# --------------------------------------------------------------------------------------------------
def _select_and_test(task: UnitTask, X: np.ndarray) -> dict[str, Any]:
    """Benchmark and noisy units: split, kernels, CV over the grid, refit at the best point, test."""
    s = task.settings
    classes = np.unique(task.y)
    Xtr, Xte, ytr, yte = split_data(X, task.y, task.dataset, s, task.repeat, task.preprocessing.standardize)
    t0 = time.perf_counter()
    kernel_set = make_kernel_set(task.kernels, X.shape[1])
    stack = kernel_set.fit_stack(Xtr)
    kernel_time = time.perf_counter() - t0
    M = stack.n_kernels
    points = resolve_grid(task.method.grid, M)
    out: dict[str, Any] = {"n_kernels": M, "n_features": int(X.shape[1]), "n_train": len(ytr),
                           "n_test": len(yte), "grid": points}
    best = 0
    if s.cv_folds >= 2 and len(points) > 1:
        folds = list(StratifiedKFold(s.cv_folds, shuffle=True, random_state=s.seed + task.repeat)
                     .split(np.zeros(len(ytr)), ytr))
        scores, info = cross_validate(stack, ytr, classes, folds, task.method, points, task.solver,
                                      warm_start=s.warm_start)
        best = select_best(scores)
        out.update(info, cv_scores=scores.tolist(), cv_mean=scores.mean(axis=1).tolist())
    cpu0 = time.process_time()
    outcome = fit_point(stack, binary_targets(ytr, classes), task.method, points[best], task.solver)
    out["fit_cpu_time"] = time.process_time() - cpu0
    t1 = time.perf_counter()
    (scores_test,) = _test_decisions(kernel_set, Xte, len(ytr), [outcome], s.cross_block_mb)
    kernel_time += time.perf_counter() - t1
    out.update(_summary(outcome), best_params=points[best], kernel_time=kernel_time,
               accuracy=float(np.mean(predict_labels(scores_test, classes) == yte)))
    return out


def _path(task: UnitTask) -> dict[str, Any]:
    """A parameter path: refit at each value (warm-started along C only), test every model."""
    p = task.path
    assert p is not None
    classes = np.unique(task.y)
    Xtr, Xte, ytr, yte = split_data(task.X, task.y, task.dataset, task.settings, p.repeat,
                                    task.preprocessing.standardize)
    kernel_set = make_kernel_set(task.kernels, task.X.shape[1])
    stack = kernel_set.fit_stack(Xtr)
    M = stack.n_kernels
    fixed = {k: evaluate_value(v, M) for k, v in p.fixed.items()}
    values = [evaluate_value(v, M) for v in p.values]
    targets = binary_targets(ytr, classes)
    outcomes: list[FitOutcome] = []
    previous = None
    for value in values:
        outcome = fit_point(stack, targets, task.method, {**fixed, p.param: value}, task.solver,
                            warm=previous if (task.settings.warm_start and p.param == "C") else None)
        outcomes.append(outcome)
        previous = outcome
    decisions = _test_decisions(kernel_set, Xte, len(ytr), outcomes, task.settings.cross_block_mb)
    points = [{**_summary(o), "value": v, "accuracy": float(np.mean(predict_labels(d, classes) == yte))}
              for v, o, d in zip(values, outcomes, decisions, strict=True)]
    return {"n_kernels": M, "n_features": int(task.X.shape[1]), "n_train": len(ytr), "n_test": len(yte),
            "param": p.param, "fixed": fixed, "points": points, "kernel_names": kernel_set.describe()}


def run_unit(task: UnitTask) -> dict[str, Any]:
    """Run one unit; return its record (with ``error`` set instead of results when it failed).

    Convergence warnings of the outer solvers are counted in the record instead of flooding the console
    (a grid search makes hundreds of fits); other warnings are kept as distinct messages.
    """
    start = time.perf_counter()
    record: dict[str, Any] = {"key": task.key, "fingerprint": task.fingerprint, "kind": task.kind,
                              "dataset": task.dataset.name, "method": task.method.display_name,
                              "index": task.index}
    if task.kind == "benchmark":
        record["repeat"] = task.repeat
    elif task.kind == "noisy":
        record.update(ratio=task.ratio, repeat=task.repeat,
                      n_noise_features=noise_columns(task.X.shape[1], task.ratio))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if task.kind == "path":
                record.update(_path(task))
            else:
                X = task.X
                if task.kind == "noisy":
                    X = append_noise(task.X, task.ratio, task.max_ratio, task.settings.seed)
                record.update(_select_and_test(task, X))
        except Exception as exc:  # one failing unit must not lose the others; the record says why
            record["error"] = f"{type(exc).__name__}: {exc}"
            record["traceback"] = traceback.format_exc(limit=8)
    # The outer solvers turn Ctrl-C into a best-so-far result with a warning (right for one interactive fit);
    # a unit cut short that way must not be recorded as finished, so the interrupt goes on.
    if any("interrupted" in str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)):
        raise KeyboardInterrupt
    record["convergence_warnings"] = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    others = {f"{w.category.__name__}: {w.message}" for w in caught if not issubclass(w.category, ConvergenceWarning)}
    record["other_warnings"] = sorted(others)[:5]
    record["unit_time"] = time.perf_counter() - start
    return record
