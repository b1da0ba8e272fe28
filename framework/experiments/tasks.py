"""Task units of an experiment: task estimators (``[[estimators]]``) compared by name on one task kind.

An experiment configuration with a ``[task]`` table runs through the same runner as the MKL benchmark
(:mod:`multikernel.experiments.runner`: planning, fingerprints, ``units.jsonl``, resuming, parallel units,
``results.md`` / ``results.json``).  What differs per task kind is the kind's own plugin
(:class:`multikernel.core.tasks.TaskKind`: its data checks, splits, calling convention and measures); this module
keeps no per-kind code and owns

* the evaluation splits of a repeat (:func:`evaluation_splits`, the kind's ``splits``);
* one evaluation (:func:`evaluate`): standardize, then the kind's ``evaluate`` (fit by its calling convention,
  its measures on the test part);
* the checks of ``multikernel validate`` (:func:`check_task_experiment`): data suited to the kind, registered
  estimator names of the kind, parameters the estimator takes, and a *probe fit* of every estimator with its
  parameters and with each grid value on a few samples of the data (estimators follow scikit-learn in checking
  their parameters in ``fit``, so fitting is the one way to hear from them);
* a unit (:func:`run_task_unit`): one (data set, setting, repeat, fold) with every estimator; grid points chosen
  by ``experiment.cv_folds``-fold cross-validation on the training part, by the kind's selection measure.

Features are standardized with the training part's statistics when ``[preprocessing] standardize`` (all
samples for the transductive kinds ``ssl`` and ``clustering``; never for matrix samples).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from multikernel.config.evaluation import evaluate_kind, grid_points, resolve_params
from multikernel.config.summary import sample_std
from multikernel.config.task_data import TaskData, load_task_data
from multikernel.core.registry import get_registry
from multikernel.core.tasks import TaskEstimator, task_kind
from multikernel.errors import ConfigError, PluginError
from multikernel.experiments.config import (
    DatasetSpec,
    EstimatorSpec,
    ExperimentConfig,
    ExperimentSettings,
    TaskSettings,
    dataset_fields,
)
from multikernel.experiments.units import Member, Recorder, UnitTask
from multikernel.plugins.task_kinds import clustering_accuracy

__all__ = [
    "clustering_accuracy",
    "evaluation_splits",
    "evaluate",
    "resolve_params",
    "check_task_experiment",
    "run_task_unit",
    "summarize_tasks",
]

_REFUSALS = (ValueError, TypeError, ArithmeticError, NotImplementedError)


# --------------------------------------------------------------------------------------------------
# measures and parameters
# --------------------------------------------------------------------------------------------------
def selection_measure(task: TaskSettings) -> tuple[str, bool]:
    """The measure that chooses grid points, and whether higher is better."""
    kind = task_kind(task.kind)
    name = task.select_by or kind.measures[0][0]
    return name, dict(kind.measures)[name]


# --------------------------------------------------------------------------------------------------
# splits
# --------------------------------------------------------------------------------------------------
def evaluation_splits(task: TaskSettings, data: TaskData, dataset: DatasetSpec, settings: ExperimentSettings,
                      repeat: int, setting: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (train, test) sample indices of repeat ``repeat`` (seed ``experiment.seed + repeat``): the task kind's
    ``splits`` (``task.folds`` folds, or one split with ``train_size`` / ``test_fraction`` when ``folds = 0``;
    ``ssl`` draws the ``setting`` labelled samples; ``clustering`` uses every sample)."""
    return task_kind(task.kind).splits(task, data, dataset, settings, repeat, setting)


# --------------------------------------------------------------------------------------------------
# one evaluation
# --------------------------------------------------------------------------------------------------
def evaluate(kind: str, estimator: Any, data: TaskData, train: np.ndarray, test: np.ndarray, *,
             standardize: bool = True, setting: Any = None, neighbors: int = 3, seed: int = 0) -> dict[str, float]:
    """Fit ``estimator`` on the training samples by the kind's convention and measure it on the test samples.

    ``setting`` is the data set's setting (the fraction of missing labels of a ranking task, ...).  For ``ssl``,
    ``train`` are the labelled samples and every other sample is given unlabelled (the test samples are scored
    transductively); for ``clustering`` every sample is clustered.
    """
    return evaluate_kind(task_kind(kind), estimator, data, train, test, standardize=standardize, setting=setting,
                         neighbors=neighbors, seed=seed)


# --------------------------------------------------------------------------------------------------
# checks (multikernel validate, and run/experiment before fitting)
# --------------------------------------------------------------------------------------------------
class _Prober:
    """Probe fits of estimators on a few samples of each data set: one per distinct parameter set."""

    def __init__(self, task: TaskSettings, data: dict[str, TaskData], standardize: bool) -> None:
        self.task = task
        self.kind = task_kind(task.kind)
        self.probes = {name: self.kind.probe(d) for name, d in data.items()}
        self.standardize = standardize
        self._seen: dict[str, Exception | None] = {}

    def attempt(self, entry: TaskEstimator, params: dict[str, Any]) -> Exception | None:
        key = repr((entry.name, sorted(params.items(), key=repr)))
        if key not in self._seen:
            self._seen[key] = None
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # a fit on a few samples need not converge
                    for small, train, test in self.probes.values():
                        evaluate(self.task.kind, entry.create(**resolve_params(params)), small, train, test,
                                 standardize=self.standardize, setting=self.kind.probe_setting(self.task),
                                 neighbors=min(self.task.neighbors, len(train)))
            except _REFUSALS as exc:
                self._seen[key] = exc
            except PluginError as exc:  # an unknown kernel name inside a kernels table
                self._seen[key] = exc
        return self._seen[key]


def _estimator_entry(spec: EstimatorSpec, kind: str, path: str) -> TaskEstimator:
    registry = get_registry()
    try:
        entry = registry.get("estimator", spec.name)
    except PluginError as exc:
        raise ConfigError(str(exc), f"{path}.name") from exc
    if kind not in entry.tasks:
        same = [p.name for p in registry.plugins("estimator") if kind in p.obj.tasks]
        raise ConfigError(f"{spec.name!r} is a {entry.task} estimator; this experiment's task is {kind} "
                          f"(its estimators: {', '.join(same) or '(none)'})", f"{path}.name")
    accepted = entry.parameters()
    if accepted is not None:
        for table in ("params", "grid"):
            for key in getattr(spec, table):
                if key not in accepted:
                    raise ConfigError(f"{key!r} is not a parameter of the estimator {spec.name!r}; its parameters: "
                                      f"{', '.join(accepted) or '(none)'}", f"{path}.{table}.{key}")
    return entry


def check_task_experiment(config: ExperimentConfig) -> dict[str, TaskData]:
    """Check a task experiment short of running it; return the loaded data ``{name: TaskData}``.

    What ``multikernel validate`` and ``multikernel experiment`` (with or without ``--dry-run``) run before
    anything is fitted: so a configuration that validates does not fail on its settings later.

    Raises
    ------
    ConfigError
        At the key path at fault: a data set's source (data unsuited to the kind), an estimator's name (unknown,
        with the closest registered name; or of another kind), a parameter or grid key the estimator does not
        take, its ``params`` (the estimator refuses them), a grid value (refused with the ``params``).
    """
    task = config.task
    assert task is not None
    ex = config.experiment
    data: dict[str, TaskData] = {}
    for i, ds in enumerate(config.datasets):
        path = f"datasets[{i}]"
        data[ds.name] = load_task_data(ds.source, format=ds.format, params=ds.params, features=ds.features,
                                       privileged=ds.privileged, classes=ds.classes, positive=ds.positive,
                                       shape=ds.shape, seed=ex.seed, path=path)
        searched = any(len(grid_points(e.grid)) > 1 for e in config.estimators)
        task_kind(task.kind).check(data[ds.name], ds.source, task, ex, path, searched)
    measures = task_kind(task.kind).measures
    if task.select_by is not None and task.select_by not in dict(measures):
        raise ConfigError(f"{task.select_by!r} is not a measure of {task.kind} tasks; measures: "
                          f"{', '.join(m for m, _ in measures)}", "task.select_by")
    prober = _Prober(task, data, config.preprocessing.standardize)
    for i, spec in enumerate(config.estimators):
        path = f"estimators[{i}]"
        entry = _estimator_entry(spec, task.kind, path)
        exc = prober.attempt(entry, spec.params)
        if exc is not None:
            raise ConfigError(f"estimator {spec.name!r} refuses its parameters: {exc}", f"{path}.params") from exc
        for key, values in spec.grid.items():
            for j, value in enumerate(values):
                exc = prober.attempt(entry, {**spec.params, key: value})
                if exc is not None:
                    raise ConfigError(f"estimator {spec.name!r} refuses {key}={value!r}: {exc}",
                                      f"{path}.grid.{key}[{j}]") from exc
    return data


def settings_of(task: TaskSettings) -> list[Any]:
    """The settings a data set is run at (the kind's: missing fractions, numbers of labelled samples, or one)."""
    return task_kind(task.kind).settings(task)


def setting_name(task: TaskSettings, setting: Any) -> str:
    """How a setting appears in unit keys and reports."""
    return task_kind(task.kind).setting_name(task, setting)


# --------------------------------------------------------------------------------------------------
# units
# --------------------------------------------------------------------------------------------------
def plan_task_units(config: ExperimentConfig, data: dict[str, TaskData],
                    fingerprint: Any) -> list[UnitTask]:
    """One :class:`UnitTask` per (data set, setting, repeat, fold) with a member per estimator.

    ``fingerprint(parts, X, y)`` is the runner's fingerprint of a unit's inputs.
    """
    task, ex = config.task, config.experiment
    assert task is not None
    out: list[UnitTask] = []
    # The unit's own setting enters its fingerprint, not the list of settings: adding a missing fraction or a
    # number of labelled samples keeps the finished units of the others.
    protocol = {"seed": ex.seed, "test_fraction": ex.test_fraction, "cv_folds": ex.cv_folds,
                "preprocessing": attrs.asdict(config.preprocessing),
                "task": {k: v for k, v in attrs.asdict(task).items() if k not in ("missing", "labeled")}}
    for ds in config.datasets:
        d = data[ds.name]
        extra = d.X if d.groups is None else np.hstack([d.X.reshape(len(d.X), -1), np.unique(
            d.groups, return_inverse=True)[1][:, None]])
        for setting in settings_of(task):
            for r in range(ex.repeats):
                for fold in range(task_kind(task.kind).n_folds(task)):
                    prefix = f"task/{ds.name}/{setting_name(task, setting)}/{r}/{fold}"
                    base = {"dataset": dataset_fields(ds), "protocol": protocol, "setting": setting, "repeat": r,
                            "fold": fold}
                    members = [Member(key=f"{prefix}/{e.display_name}", method=e,  # type: ignore[arg-type]
                                      fingerprint=fingerprint({**base, "estimator": attrs.asdict(e)}, extra, d.y))
                               for e in config.estimators]
                    out.append(UnitTask(kind="task", dataset=ds, X=d.X, y=d.y, members=members, settings=ex,
                                        preprocessing=config.preprocessing, kernels=config.kernels,
                                        solver=config.solver, repeat=r, index=fold, task=task, data=d,
                                        setting=setting))
    return out


def _cv_scores(task: TaskSettings, entry: TaskEstimator, spec: EstimatorSpec, points: Sequence[dict[str, Any]],
               data: TaskData, train: np.ndarray, settings: ExperimentSettings, standardize: bool, seed: int,
               setting: Any) -> np.ndarray:
    """The selection measure of every grid point on every inner fold of the training part (points x folds)."""
    measure, _ = selection_measure(task)
    folds = task_kind(task.kind).selection_folds(data, train, settings.cv_folds, seed)
    scores = np.empty((len(points), len(folds)))
    for p, point in enumerate(points):
        for f, (tr, te) in enumerate(folds):
            est = entry.create(**resolve_params({**spec.params, **point}))
            scores[p, f] = evaluate(task.kind, est, data, tr, te, standardize=standardize, setting=setting,
                                    neighbors=task.neighbors, seed=seed)[measure]
    return scores


def run_task_unit(unit: UnitTask) -> list[dict[str, Any]]:
    """Run every estimator of one (data set, setting, repeat, fold); one record per member."""
    task, data = unit.task, unit.data
    assert task is not None and data is not None
    s = unit.settings
    records: list[dict[str, Any]] = []
    standardize = unit.preprocessing.standardize
    seed = s.seed + unit.repeat
    measure, higher = selection_measure(task)
    splits: list[tuple[np.ndarray, np.ndarray]] = []
    shared: dict[str, Any] = {}
    with Recorder(shared):
        splits = evaluation_splits(task, data, unit.dataset, s, unit.repeat, unit.setting)
    registry = get_registry()
    for m in unit.members:
        spec: EstimatorSpec = m.method  # type: ignore[assignment]
        rec: dict[str, Any] = {"key": m.key, "fingerprint": m.fingerprint, "kind": "task", "task": task.kind,
                               "dataset": unit.dataset.name, "method": spec.display_name, "estimator": spec.name,
                               "setting": unit.setting, "repeat": unit.repeat, "fold": unit.index,
                               "index": unit.index}
        records.append(rec)
        if "error" in shared:
            rec.update(error=shared["error"], traceback=shared.get("traceback", ""))
            continue
        train, test = splits[unit.index]
        with Recorder(rec):
            entry = registry.get("estimator", spec.name)
            points = grid_points(spec.grid)
            best = 0
            if len(points) > 1:
                t0 = time.perf_counter()
                scores = _cv_scores(task, entry, spec, points, data, train, s, standardize, seed, unit.setting)
                mean = scores.mean(axis=1)
                best = int(np.argmax(mean) if higher else np.argmin(mean))  # the first best point on ties
                rec.update(cv_scores=scores.tolist(), cv_mean=mean.tolist(), cv_time=time.perf_counter() - t0)
            estimator = entry.create(**resolve_params({**spec.params, **points[best]}))
            t0 = time.perf_counter()
            result = evaluate(task.kind, estimator, data, train, test, standardize=standardize,
                              setting=unit.setting, neighbors=task.neighbors, seed=seed)
            rec.update(result, best_params=points[best], fit_time=time.perf_counter() - t0, n_train=len(train),
                       n_test=len(test), selected_by=measure)
            for attr in ("stop_reason_", "n_iter_", "dual_gap_"):
                value = getattr(estimator, attr, None)
                if isinstance(value, (int, float, str, np.generic)):
                    rec[attr.rstrip("_")] = value.item() if isinstance(value, np.generic) else value
    for rec in records:
        rec.setdefault("unit_time", 0.0)
        if "error" not in rec and measure not in rec:
            rec["error"] = "no result (an earlier step of this unit failed)"
    return records


# --------------------------------------------------------------------------------------------------
# summary
# --------------------------------------------------------------------------------------------------
def summarize_tasks(records: Sequence[dict[str, Any]], config: ExperimentConfig) -> dict[str, Any]:
    """Per data set, setting and estimator: each measure's mean and sample standard deviation over the units
    (repeats x folds), the fit time, and the parameters chosen."""
    task = config.task
    assert task is not None
    kind = task_kind(task.kind)
    measures = [m for m, _ in kind.measures]
    labels = [e.display_name for e in config.estimators]
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for ds in config.datasets:
        rows: dict[str, dict[str, Any]] = {}
        for setting in settings_of(task):
            row: dict[str, Any] = {}
            for label in labels:
                recs = [r for r in records if r["dataset"] == ds.name and r["method"] == label
                        and r.get("setting") == setting]
                if not recs:
                    continue
                cell: dict[str, Any] = {"units": len(recs)}
                for m in measures:
                    values = [float(r[m]) for r in recs]
                    cell[m] = float(np.mean(values))
                    cell[f"{m}_std"] = sample_std(values)
                cell["fit_time_mean"] = float(np.mean([r["fit_time"] for r in recs]))
                cell["best_params"] = [r["best_params"] for r in recs]
                row[label] = cell
            rows[setting_name(task, setting)] = row
        table[ds.name] = rows
    return {"kind": task.kind, "description": kind.description, "measures": measures, "estimators": labels,
            "select_by": selection_measure(task)[0], "table": table}
