"""The independent units of work of an experiment, each a pure function of its inputs.

A unit is one (data set, split, method) of the benchmark, one (noise ratio, method) of the noisy-kernel
experiment, or one parameter path.  Each unit draws its split, builds the training kernel stack once (features
standardized with the training statistics by the kernel set) and the test x train cross kernels once (block
by block, to bound the memory), selects parameters by cross-validation on the training part
(:mod:`multikernel.experiments.model_selection`), refits at the selected point through the fit core and tests.
Units run in worker processes; they return plain JSON-ready dicts.
"""

from __future__ import annotations

import functools
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

from multikernel.config.checks import make_builders  # the one expansion of [kernels], shared with runs
from multikernel.config.schema import KernelsConfig, PreprocessingConfig, SolverConfig
from multikernel.config.task_data import TaskData
from multikernel.errors import FitInterruptedWarning
from multikernel.experiments.config import (
    DatasetSpec,
    EstimatorSpec,
    ExperimentSettings,
    MethodSpec,
    PathConfig,
    TaskSettings,
    evaluate_value,
)
from multikernel.experiments.model_selection import cross_validate_methods, fit_point, resolve_grid, select_best
from multikernel.solve.fit import FittedMKL, encode_targets
from multikernel.stack.kernelset import KernelSet

__all__ = [
    "UnitTask", "Member", "run_unit", "unit_stub", "make_builders", "make_kernel_set", "split_data",
    "append_noise", "noise_columns", "Recorder",
]


@attrs.define
class Member:
    """One unit of a task: its key, fingerprint and method (the resume log has one line per member)."""

    key: str
    fingerprint: str
    method: MethodSpec | EstimatorSpec


@attrs.define
class UnitTask:
    """The unfinished units of one split (picklable, sent to a worker process).

    The units of a split share its kernels: the training stack is built once and the test x train cross
    kernels are computed once for all of them.  ``kind`` is ``"benchmark"``, ``"noisy"`` or ``"path"``;
    ``index`` the repeat, the ratio index or the path index; ``ratio`` the noise ratio of a noisy split;
    ``path`` the path of a path unit (then ``members`` has one entry).  ``"task"`` units
    (:mod:`multikernel.experiments.tasks`) carry the ``[task]`` settings, the task data and the setting (a
    missing-label fraction, a number of labelled samples); ``index`` is then the evaluation fold.
    """

    kind: str
    dataset: DatasetSpec
    X: np.ndarray
    y: np.ndarray
    members: list[Member]
    settings: ExperimentSettings
    preprocessing: PreprocessingConfig
    kernels: KernelsConfig
    solver: SolverConfig
    repeat: int = 0
    index: int = 0
    ratio: float = 0.0
    max_ratio: float = 0.0
    path: PathConfig | None = None
    task: TaskSettings | None = None
    data: TaskData | None = None
    setting: Any = None


# --------------------------------------------------------------------------------------------------
# data and kernels
# --------------------------------------------------------------------------------------------------
def make_kernel_set(kernels: KernelsConfig, n_features: int, standardize: bool = False) -> KernelSet:
    """An unfitted :class:`KernelSet` for ``kernels`` (standardizing the features when asked); settings of
    ``[kernels]`` that the kernel set takes (``normalize``, ``dtype``, storage options) are passed on."""
    accepted = inspect.signature(KernelSet).parameters
    options = {k: v for k, v in attrs.asdict(kernels, recurse=False).items()
               if k in accepted and k != "builders" and v is not None}
    return KernelSet(make_builders(kernels, n_features), standardize=standardize, **options)


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


def split_data(X: np.ndarray, y: np.ndarray, dataset: DatasetSpec, settings: ExperimentSettings, repeat: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stratified split ``repeat`` (seed ``seed + repeat``)."""
    size = {"train_size": dataset.train_size} if dataset.train_size else {"test_size": settings.test_fraction}
    return train_test_split(X, y, stratify=y, random_state=settings.seed + repeat, **size)


def _test_decisions(kernel_set: KernelSet, X_test: np.ndarray, n_train: int, fits: Sequence[FittedMKL],
                    block_mb: float) -> list[np.ndarray]:
    """Decision values of every fit on ``X_test``; each block of cross kernels is computed once."""
    bytes_per_row = len(kernel_set.builders) * n_train * np.dtype(kernel_set.dtype).itemsize
    rows = max(1, int(block_mb * 2**20 // max(bytes_per_row, 1)))
    parts: list[list[np.ndarray]] = [[] for _ in fits]
    for start in range(0, len(X_test), rows):
        cross = kernel_set.cross_stack(X_test[start:start + rows])
        for k, fitted in enumerate(fits):
            parts[k].append(fitted.decision_function(cross))
    return [np.vstack(p) for p in parts]


def _accuracy(fitted: FittedMKL, scores: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(fitted.targets.decode(scores) == y))


def _summary(fitted: FittedMKL) -> dict[str, Any]:
    weights = fitted.weights
    return {
        "weights": (weights[0] if len(weights) == 1 else weights).tolist(),
        "fit_time": fitted.fit_time, "n_iter": int(fitted.n_iter.max()), "dual_gap": float(fitted.dual_gap.max()),
        "objective": float(fitted.objective.sum()), "converged": fitted.converged,
    }


# --------------------------------------------------------------------------------------------------
# the units
# --------------------------------------------------------------------------------------------------
class Recorder:
    """Runs one member's work, catching its failure and its warnings into the member's record.

    Convergence warnings of the outer solvers are counted instead of flooding the console (a grid search
    makes hundreds of fits); other warnings are kept as distinct messages.
    """

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        self.caught: list[warnings.WarningMessage] = []

    def __enter__(self) -> Recorder:
        self._context = warnings.catch_warnings(record=True)
        self.caught = self._context.__enter__()
        warnings.simplefilter("always")
        self._start, self._cpu_start = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        self._context.__exit__(None, None, None)
        rec = self.record
        rec["unit_time"] = rec.get("unit_time", 0.0) + time.perf_counter() - self._start
        # CPU seconds as well: on a loaded machine wall time counts the other users too (a unit runs
        # single-threaded in its worker process, so its process time is its own).
        rec["unit_cpu_time"] = rec.get("unit_cpu_time", 0.0) + time.process_time() - self._cpu_start
        # The outer solvers turn Ctrl-C into a best-so-far result with a warning (right for one interactive
        # fit); a unit cut short that way must not be recorded as finished, so the interrupt goes on.
        if any(issubclass(w.category, FitInterruptedWarning) for w in self.caught):
            raise KeyboardInterrupt
        rec["convergence_warnings"] = rec.get("convergence_warnings", 0) + sum(
            issubclass(w.category, ConvergenceWarning) for w in self.caught)
        others = {f"{w.category.__name__}: {w.message}" for w in self.caught
                  if not issubclass(w.category, ConvergenceWarning)}
        rec["other_warnings"] = sorted(set(rec.get("other_warnings", [])) | others)[:5]
        if exc is not None and isinstance(exc, Exception):
            # One failing unit must not lose the others; its record says why.
            rec.setdefault("error", f"{type(exc).__name__}: {exc}")
            rec.setdefault("traceback", "".join(traceback.format_exception(exc, limit=8)))
            return True
        return False


def _select_and_test(task: UnitTask, X: np.ndarray, records: list[dict[str, Any]]) -> None:
    """Benchmark and noisy splits: kernels once; per member CV over its grid and a refit; one test pass."""
    s = task.settings
    Xtr, Xte, ytr, yte = split_data(X, task.y, task.dataset, s, task.repeat)
    t0 = time.perf_counter()
    kernel_set = make_kernel_set(task.kernels, X.shape[1], task.preprocessing.standardize)
    stack = kernel_set.fit_stack(Xtr)
    kernel_time = time.perf_counter() - t0
    M = stack.n_kernels
    folds = (list(StratifiedKFold(s.cv_folds, shuffle=True, random_state=s.seed + task.repeat)
                  .split(np.zeros(len(ytr)), ytr)) if s.cv_folds >= 2 else [])
    grids: dict[int, list[dict[str, Any]]] = {}
    for k, (member, rec) in enumerate(zip(task.members, records, strict=True)):
        with Recorder(rec):
            grids[k] = resolve_grid(member.method.grid, M)
            rec.update(n_kernels=M, n_features=int(X.shape[1]), n_train=len(ytr), n_test=len(yte),
                       grid=grids[k], kernel_time=kernel_time)
    # Folds outside, methods inside: a fold's sub-stacks are taken once for every method.
    searched = [k for k, points in grids.items() if folds and len(points) > 1]
    cv_solver = task.solver if s.cv_tol is None else attrs.evolve(task.solver, tol=s.cv_tol)
    results = cross_validate_methods(stack, ytr, folds,
                                     [(task.members[k].method, grids[k]) for k in searched], cv_solver,
                                     warm_start=s.warm_start, warm_order=s.warm_order,
                                     guards=[functools.partial(Recorder, records[k]) for k in searched])
    for k, (scores, info) in zip(searched, results, strict=True):
        if "error" not in records[k]:
            records[k].update(info, cv_scores=scores.tolist(), cv_mean=scores.mean(axis=1).tolist())
    targets = encode_targets(ytr)
    outcomes: dict[int, FittedMKL] = {}
    for k, points in grids.items():
        rec = records[k]
        if "error" in rec:
            continue
        with Recorder(rec):
            best = select_best(np.array(rec["cv_scores"])) if k in searched else 0
            cpu0 = time.process_time()
            outcomes[k] = fit_point(stack, targets, task.members[k].method, points[best], task.solver)
            rec.update(_summary(outcomes[k]), best_params=points[best], fit_cpu_time=time.process_time() - cpu0)
    t1 = time.perf_counter()
    decisions = _test_decisions(kernel_set, Xte, len(ytr), list(outcomes.values()), s.cross_block_mb)
    test_kernel_time = time.perf_counter() - t1
    for (k, fitted), d in zip(outcomes.items(), decisions, strict=True):
        records[k].update(accuracy=_accuracy(fitted, d, yte), test_kernel_time=test_kernel_time)


def _path(task: UnitTask, record: dict[str, Any]) -> None:
    """A parameter path: refit at each value (each warm-started from the previous one), test every model."""
    p = task.path
    assert p is not None
    method = task.members[0].method
    Xtr, Xte, ytr, yte = split_data(task.X, task.y, task.dataset, task.settings, p.repeat)
    kernel_set = make_kernel_set(task.kernels, task.X.shape[1], task.preprocessing.standardize)
    stack = kernel_set.fit_stack(Xtr)
    M = stack.n_kernels
    fixed = {k: evaluate_value(v, M) for k, v in p.fixed.items()}
    values = [evaluate_value(v, M) for v in p.values]
    targets = encode_targets(ytr)
    outcomes: list[FittedMKL] = []
    previous = None
    for value in values:
        outcome = fit_point(stack, targets, method, {**fixed, p.param: value}, task.solver,
                            warm=previous if task.settings.warm_start else None)
        outcomes.append(outcome)
        previous = outcome
    decisions = _test_decisions(kernel_set, Xte, len(ytr), outcomes, task.settings.cross_block_mb)
    points = [{**_summary(o), "value": v, "accuracy": _accuracy(o, d, yte)}
              for v, o, d in zip(values, outcomes, decisions, strict=True)]
    record.update(n_kernels=M, n_features=int(task.X.shape[1]), n_train=len(ytr), n_test=len(yte), param=p.param,
                  fixed=fixed, points=points, kernel_names=kernel_set.describe())


def run_unit(task: UnitTask) -> list[dict[str, Any]]:
    """Run the units of one split; return one record per member (``error`` set when it failed).

    A failure of the shared part (split, kernels, test kernels) is recorded in every member still without
    an error.  The time of the shared part is split evenly among the members' ``unit_time`` (wall) and
    ``unit_cpu_time`` (CPU seconds).
    """
    records: list[dict[str, Any]] = []
    for m in task.members:
        rec: dict[str, Any] = {"key": m.key, "fingerprint": m.fingerprint, "kind": task.kind,
                               "dataset": task.dataset.name, "method": m.method.display_name, "index": task.index}
        if task.kind == "benchmark":
            rec["repeat"] = task.repeat
        elif task.kind == "noisy":
            rec.update(ratio=task.ratio, repeat=task.repeat,
                       n_noise_features=noise_columns(task.X.shape[1], task.ratio))
        records.append(rec)
    start, cpu_start = time.perf_counter(), time.process_time()
    shared: dict[str, Any] = {}
    with Recorder(shared):
        if task.kind == "path":
            _path(task, records[0])
        else:
            X = task.X
            if task.kind == "noisy":
                X = append_noise(task.X, task.ratio, task.max_ratio, task.settings.seed)
            _select_and_test(task, X, records)
    own = sum(r.get("unit_time", 0.0) for r in records)
    own_cpu = sum(r.get("unit_cpu_time", 0.0) for r in records)
    shared_cpu = max(time.process_time() - cpu_start - own_cpu, 0.0) / len(records)
    for rec in records:
        rec["unit_cpu_time"] = rec.get("unit_cpu_time", 0.0) + shared_cpu
        rec["unit_time"] = rec.get("unit_time", 0.0) + max(time.perf_counter() - start - own, 0.0) / len(records)
        rec["convergence_warnings"] = rec.get("convergence_warnings", 0) + shared.get("convergence_warnings", 0)
        rec["other_warnings"] = sorted(set(rec.get("other_warnings", [])) | set(shared.get("other_warnings", [])))
        if "error" in shared:
            rec.setdefault("error", shared["error"])
            rec.setdefault("traceback", shared["traceback"])
        elif "accuracy" not in rec and "points" not in rec:
            rec.setdefault("error", "no result (an earlier step of this unit failed)")
    return records


def unit_stub(task: UnitTask) -> UnitTask:
    """``task`` without its data rows (the runner sends the rows separately, once per data set)."""
    return attrs.evolve(task, X=task.X[:0], y=task.y[:0])
