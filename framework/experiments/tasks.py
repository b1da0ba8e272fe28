"""Task units of an experiment: task estimators (``[[estimators]]``) compared by name on one task kind.

An experiment configuration with a ``[task]`` table runs through the same runner as the MKL benchmark
(:mod:`multikernel.experiments.runner`: planning, fingerprints, ``units.jsonl``, resuming, parallel units,
``results.md`` / ``results.json``); this module owns what differs per task kind
(:data:`multikernel.core.tasks.TASK_KINDS`):

* the evaluation splits of a repeat (:func:`evaluation_splits`): k-fold over the samples (over the bags for
  ``mil``) or one random split; ``ssl`` draws the labelled samples; ``clustering`` uses every sample;
* one evaluation (:func:`evaluate`): fit on the training part following the kind's calling convention and
  return the kind's measures (:data:`MEASURES`) on the test part;
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

import inspect
import time
import warnings
from collections.abc import Sequence
from itertools import product
from typing import Any

import attrs
import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
from sklearn.model_selection import KFold, ShuffleSplit, StratifiedKFold, StratifiedShuffleSplit
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler

from multikernel.config.task_data import TaskData, load_task_data
from multikernel.core.registry import get_registry
from multikernel.core.tasks import TASK_KINDS, TaskEstimator
from multikernel.errors import ConfigError, PluginError
from multikernel.experiments.config import (
    DatasetSpec,
    EstimatorSpec,
    ExperimentConfig,
    ExperimentSettings,
    TaskSettings,
)
from multikernel.experiments.report import sample_std
from multikernel.experiments.units import Member, Recorder, UnitTask
from multikernel.ranking.labels import drop_positive_labels
from multikernel.ranking.metrics import ranking_scores

__all__ = [
    "MEASURES",
    "clustering_accuracy",
    "evaluation_splits",
    "evaluate",
    "resolve_params",
    "check_task_experiment",
    "run_task_unit",
    "summarize_tasks",
]

MEASURES: dict[str, tuple[tuple[str, bool], ...]] = {
    "multilabel_ranking": (("example_auc", True), ("example_ap", True), ("label_map", True), ("ranking_loss", False),
                           ("one_error", False), ("coverage", False), ("lrap", True), ("coverage_sklearn", False)),
    "ssl": (("accuracy", True),),
    "mil": (("accuracy", True),),
    "clustering": (("accuracy", True), ("nmi", True), ("ari", True)),
    "classification": (("accuracy", True),),
    "bilinear": (("accuracy", True),),
    "metric": (("accuracy", True),),
    "crossmodal": (("rank1", True), ("rank1_a_to_b", True), ("rank1_b_to_a", True)),
}
"""The measures of each kind, as (name, higher is better); the first one selects grid points by default."""

_REFUSALS = (ValueError, TypeError, ArithmeticError, NotImplementedError)
_PROBE_SAMPLES = 40


# --------------------------------------------------------------------------------------------------
# measures and parameters
# --------------------------------------------------------------------------------------------------
def clustering_accuracy(y_true: Any, labels: Any) -> float:
    """The fraction of samples in agreement under the best one-to-one matching of clusters to classes
    (Hungarian algorithm on the contingency table); clusters left unmatched count as errors."""
    y_true, labels = np.asarray(y_true), np.asarray(labels)
    classes, yi = np.unique(y_true, return_inverse=True)
    clusters, ci = np.unique(labels, return_inverse=True)
    table = np.zeros((len(clusters), len(classes)))
    np.add.at(table, (ci, yi), 1)
    rows, cols = linear_sum_assignment(-table)
    return float(table[rows, cols].sum() / len(y_true))


def selection_measure(task: TaskSettings) -> tuple[str, bool]:
    """The measure that chooses grid points, and whether higher is better."""
    measures = dict(MEASURES[task.kind])
    name = task.select_by or MEASURES[task.kind][0][0]
    return name, measures[name]


def resolve_params(params: dict[str, Any]) -> dict[str, Any]:
    """Configuration values as the estimator takes them: a ``kernels`` list of kernel tables (``{name = "rbf",
    gamma_scale = 0.25}``) becomes a list of registered kernel builders."""
    out = dict(params)
    kernels = out.get("kernels")
    if isinstance(kernels, list) and kernels and all(isinstance(k, dict) for k in kernels):
        registry = get_registry()
        built = []
        for k in kernels:
            if "name" not in k:
                raise ValueError(f"a kernel table needs a 'name' (a registered kernel); got {k!r}")
            built.append(registry.create("kernel", k["name"], **{a: v for a, v in k.items() if a != "name"}))
        out["kernels"] = built
    return out


def _grid_points(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in product(*(grid[k] for k in keys))]


# --------------------------------------------------------------------------------------------------
# splits
# --------------------------------------------------------------------------------------------------
def _bag_table(data: TaskData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bag ids (sorted), each instance's bag index, and each bag's label."""
    assert data.groups is not None
    bags, inverse = np.unique(data.groups, return_inverse=True)
    labels = np.empty(len(bags), dtype=data.y.dtype)
    labels[inverse] = data.y
    return bags, inverse, labels


def _folds(kind: str, data: TaskData, rows: np.ndarray, k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``k``-fold cross-validation of the samples ``rows`` (whole bags for ``mil``; stratified for class labels)."""
    if kind == "mil":
        _, inverse, labels = _bag_table(data)
        bags = np.unique(inverse[rows])
        cv = StratifiedKFold(k, shuffle=True, random_state=seed)
        return [(rows[np.isin(inverse[rows], bags[tr])], rows[np.isin(inverse[rows], bags[te])])
                for tr, te in cv.split(bags, labels[bags])]
    if data.y.ndim == 1 and kind != "clustering":
        cv: Any = StratifiedKFold(k, shuffle=True, random_state=seed)
        return [(rows[tr], rows[te]) for tr, te in cv.split(rows, data.y[rows])]
    return [(rows[tr], rows[te]) for tr, te in KFold(k, shuffle=True, random_state=seed).split(rows)]


def _labeled(data: TaskData, n_labeled: int, seed: int) -> np.ndarray:
    """``n_labeled`` random samples, at least one of each class (as the benchmark's splits)."""
    rng = np.random.default_rng(seed)
    classes = np.unique(data.y)
    if n_labeled < len(classes) or n_labeled >= len(data.y):
        raise ValueError(f"{n_labeled} labelled samples: need at least one per class ({len(classes)}) and an "
                         f"unlabelled one ({len(data.y)} samples)")
    first = np.array([rng.choice(np.flatnonzero(data.y == c)) for c in classes])
    rest = np.setdiff1d(np.arange(len(data.y)), first)
    return np.sort(np.r_[first, rng.choice(rest, n_labeled - len(first), replace=False)])


def evaluation_splits(task: TaskSettings, data: TaskData, dataset: DatasetSpec, settings: ExperimentSettings,
                      repeat: int, setting: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (train, test) sample indices of repeat ``repeat`` (seed ``experiment.seed + repeat``).

    ``ssl``: the ``setting`` labelled samples and the others; ``clustering``: every sample twice; otherwise
    ``task.folds`` folds, or one split with ``train_size`` / ``test_fraction`` when ``folds = 0``.
    """
    seed = settings.seed + repeat
    everything = np.arange(data.n_samples)
    if task.kind == "clustering":
        return [(everything, everything)]
    if task.kind == "ssl":
        labeled = _labeled(data, int(setting), seed)
        return [(labeled, np.setdiff1d(everything, labeled))]
    if task.folds >= 2:
        return _folds(task.kind, data, everything, task.folds, seed)
    size = {"train_size": dataset.train_size} if dataset.train_size else {"test_size": settings.test_fraction}
    if task.kind == "mil":
        _, inverse, labels = _bag_table(data)
        tr, te = next(StratifiedShuffleSplit(1, random_state=seed, **size).split(labels, labels))
        return [(np.flatnonzero(np.isin(inverse, tr)), np.flatnonzero(np.isin(inverse, te)))]
    splitter: Any = (StratifiedShuffleSplit if data.y.ndim == 1 else ShuffleSplit)(1, random_state=seed, **size)
    return [next(splitter.split(everything, data.y if data.y.ndim == 1 else None))]


# --------------------------------------------------------------------------------------------------
# one evaluation
# --------------------------------------------------------------------------------------------------
def _scaled(X: np.ndarray, fit_rows: np.ndarray, standardize: bool) -> np.ndarray:
    if not standardize or X.ndim != 2:
        return X
    return StandardScaler().fit(X[fit_rows]).transform(X)


def evaluate(kind: str, estimator: Any, data: TaskData, train: np.ndarray, test: np.ndarray, *,
             standardize: bool = True, missing: float = 0.0, neighbors: int = 3, seed: int = 0) -> dict[str, float]:
    """Fit ``estimator`` on the training samples by the kind's convention and measure it on the test samples.

    For ``ssl``, ``train`` are the labelled samples and every other sample is given unlabelled (the test
    samples are scored transductively); for ``clustering`` every sample is clustered.
    """
    transductive = kind in ("ssl", "clustering")
    X = _scaled(data.X, np.arange(data.n_samples) if transductive else train, standardize)
    if kind == "multilabel_ranking":
        Y = data.y[train]
        if missing > 0:
            Y = drop_positive_labels(Y, missing, random_state=seed)
        estimator.fit(X[train], Y)
        return ranking_scores(data.y[test], estimator.decision_function(X[test]))
    if kind == "ssl":
        classes, codes = np.unique(data.y, return_inverse=True)
        given = np.full(data.n_samples, -1, dtype=np.int64)
        given[train] = codes[train]
        estimator.fit(X, given)
        # The transductive labels when the estimator gives them for every test sample (SelfTrainingClassifier's
        # transduction_ keeps -1 for the samples it never labelled): else its inductive predictions.
        found = getattr(estimator, "transduction_", None)
        found = None if found is None else np.asarray(found)[test]
        predicted = found if found is not None and not np.any(found == -1) else estimator.predict(X[test])
        return {"accuracy": float(np.mean(np.asarray(predicted) == codes[test]))}
    if kind == "mil":
        estimator.fit(X[train], data.y[train], data.groups[train])
        _, _, labels = _bag_table(TaskData(data.X[test], data.y[test], data.groups[test]))
        return {"accuracy": float(np.mean(estimator.predict(X[test], data.groups[test]) == labels))}
    if kind == "clustering":
        found = estimator.fit_predict(X)
        return {"accuracy": clustering_accuracy(data.y, found),
                "nmi": float(normalized_mutual_info_score(data.y, found)),
                "ari": float(adjusted_rand_score(data.y, found))}
    if kind in ("classification", "bilinear"):
        estimator.fit(X[train], data.y[train])
        return {"accuracy": float(np.mean(estimator.predict(X[test]) == data.y[test]))}
    if kind == "crossmodal":
        return _crossmodal_scores(estimator, X, _scaled(data.privileged, train, standardize), data.y, train, test)
    if kind == "metric":
        extra = {}
        if data.privileged is not None and "X_privileged" in inspect.signature(estimator.fit).parameters:
            extra["X_privileged"] = _scaled(data.privileged, train, standardize)[train]
        estimator.fit(X[train], data.y[train], **extra)
        knn = KNeighborsClassifier(neighbors).fit(estimator.transform(X[train]), data.y[train])
        return {"accuracy": float(knn.score(estimator.transform(X[test]), data.y[test]))}
    raise ValueError(f"unknown task kind {kind!r}")  # pragma: no cover (configurations are checked)


def _crossmodal_scores(estimator: Any, Xa: np.ndarray, Xb: np.ndarray, y: np.ndarray, train: np.ndarray,
                       test: np.ndarray) -> dict[str, float]:
    """Unpaired cross-modal learning as in Kobayashi 2014 (sec. 5.2): the samples of each part are split in two
    halves (alternately within each class), the first seen only in modality a, the second only in modality b; the
    test probes of one modality retrieve the test gallery of the other (rank-1: the nearest is of its class)."""
    from multikernel.bilinear.crossmodal import retrieval_ranks  # the task package, loaded when asked for

    def halves(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # alternately within each class, so that both modalities see every class of the part
        a = np.concatenate([rows[y[rows] == c][0::2] for c in np.unique(y[rows])])
        return np.sort(a), np.setdiff1d(rows, a)

    (tr_a, tr_b), (te_a, te_b) = halves(train), halves(test)
    if not len(te_a) or not len(te_b):
        raise ValueError(f"{len(test)} test sample(s): too few to give both modalities a test half")
    estimator.fit(Xa[tr_a], y[tr_a], Xb[tr_b], y[tr_b])
    za, zb = estimator.transform(Xa[te_a], "a"), estimator.transform(Xb[te_b], "b")
    a_to_b = float(np.mean(retrieval_ranks(za, y[te_a], zb, y[te_b]) == 1))
    b_to_a = float(np.mean(retrieval_ranks(zb, y[te_b], za, y[te_a]) == 1))
    return {"rank1": 0.5 * (a_to_b + b_to_a), "rank1_a_to_b": a_to_b, "rank1_b_to_a": b_to_a}


# --------------------------------------------------------------------------------------------------
# checks (multikernel validate, and run/experiment before fitting)
# --------------------------------------------------------------------------------------------------
def _check_kind(kind: str, data: TaskData, ds: DatasetSpec, task: TaskSettings, settings: ExperimentSettings,
                path: str, searched: bool = False) -> None:
    """The data suit the task kind; else a :class:`ConfigError` at ``path`` (the data set entry)."""
    where = f"{path}.source"
    y = data.y
    if kind == "multilabel_ranking":
        if y.ndim != 2 or y.shape[1] < 2:
            raise ConfigError(f"a multilabel_ranking task needs a label matrix (CSV columns label:<name>, two or "
                              f"more); {ds.source!r} has one label per sample", where)
        if not np.all(np.isin(y, (0, 1))):
            raise ConfigError("the label matrix must hold 0 and 1 only", where)
        return
    if y.ndim != 1:
        raise ConfigError(f"a {kind} task needs one label per sample; {ds.source!r} has a label matrix", where)
    if kind == "bilinear" and data.X.ndim != 3:
        raise ConfigError(f"a bilinear task needs matrix samples of shape (n, p, q); {ds.source!r} gives vectors",
                          where)
    if kind != "bilinear" and data.X.ndim != 2:
        raise ConfigError(f"a {kind} task needs feature vectors; {ds.source!r} gives shape {data.X.shape}", where)
    if data.privileged is not None and kind not in ("metric", "crossmodal"):
        raise ConfigError("a privileged view is used by metric tasks (and as modality b by crossmodal tasks) only",
                          f"{path}.privileged")
    if kind == "crossmodal" and data.privileged is None:
        raise ConfigError("a crossmodal task needs a second modality: give 'features' (column prefixes of modality "
                          "a) and 'privileged' (those of modality b)", f"{path}.privileged")
    if kind == "mil":
        if data.groups is None:
            raise ConfigError(f"a mil task needs bags: a CSV column 'bag' (the bag of each instance); "
                              f"{ds.source!r} has none", where)
        for bag in np.unique(data.groups):
            if len(np.unique(y[data.groups == bag])) != 1:
                raise ConfigError(f"bag {bag!r} has instances with different labels; an instance's label is its "
                                  f"bag's", where)
        counts = np.unique(_bag_table(data)[2], return_counts=True)[1]
    else:
        if data.groups is not None:
            raise ConfigError(f"{ds.source!r} has bags (a 'bag' column); only mil tasks use them", where)
        counts = np.unique(y, return_counts=True)[1]
    if len(counts) < 2:
        raise ConfigError(f"{ds.source!r} has a single class; a {kind} task needs two or more", where)
    if kind in ("ssl", "mil") and len(counts) != 2:
        raise ConfigError(f"a {kind} task is binary; {ds.source!r} has {len(counts)} classes (select two with "
                          f"'classes' or binarize with 'positive')", where)
    if kind == "ssl":
        for j, n in enumerate(task.labeled):
            if not len(counts) <= n < data.n_samples:
                raise ConfigError(f"{n} labelled samples of {data.n_samples}: need at least one per class and an "
                                  f"unlabelled sample", f"task.labeled[{j}]")
            if searched and n <= len(counts):
                raise ConfigError(f"{n} labelled samples, one of each class: no cross-validation can choose grid "
                                  f"points; label at least {len(counts) + 1}, or give each estimator one value",
                                  f"task.labeled[{j}]")
    elif kind != "clustering":
        need = max(task.folds, settings.cv_folds)
        if need >= 2 and counts.min() < need:
            unit = "bags" if kind == "mil" else "samples"
            raise ConfigError(f"{ds.source!r} has a class with {counts.min()} {unit}, fewer than the {need} folds",
                              "task.folds" if task.folds >= settings.cv_folds else "experiment.cv_folds")


def _probe_data(kind: str, data: TaskData) -> tuple[TaskData, np.ndarray, np.ndarray]:
    """A few samples of ``data`` (each class, each bag kept whole) and a train/test split of them."""
    rng = np.random.default_rng(0)
    if kind == "mil":
        bags, inverse, labels = _bag_table(data)
        sizes = np.bincount(inverse)
        # the three smallest bags of each class: a probe fit of a cutting-plane learner stays quick
        chosen = np.concatenate([sorted(np.flatnonzero(labels == c), key=lambda b: (sizes[b], b))[:3]
                                 for c in np.unique(labels)])
        rows = np.flatnonzero(np.isin(inverse, chosen))
        small = TaskData(data.X[rows], data.y[rows], data.groups[rows])
        sb = np.unique(small.groups)
        test_bags = [b for c in np.unique(labels) for b in sb[labels[np.searchsorted(bags, sb)] == c][-1:]]
        test = np.flatnonzero(np.isin(small.groups, test_bags))
        return small, np.setdiff1d(np.arange(len(rows)), test), test
    n = data.n_samples
    if data.y.ndim == 1:
        per = max(2, _PROBE_SAMPLES // max(len(np.unique(data.y)), 1))
        rows = np.sort(np.concatenate([rng.permutation(np.flatnonzero(data.y == c))[:per]
                                       for c in np.unique(data.y)]))
    else:
        rows = np.sort(rng.permutation(n)[:_PROBE_SAMPLES])
    small = TaskData(data.X[rows], data.y[rows], None, None if data.privileged is None else data.privileged[rows])
    m = len(rows)
    if kind == "clustering":
        return small, np.arange(m), np.arange(m)
    if kind == "crossmodal":
        # the last two samples of each class tested (one per modality): both keep every class in training
        lasts = np.concatenate([np.flatnonzero(small.y == c)[-2:] for c in np.unique(small.y)])
        return small, np.setdiff1d(np.arange(m), lasts), lasts
    if data.y.ndim == 1:
        # the first sample of each class labelled/trained, so that every class is in the training part
        firsts = np.array([np.flatnonzero(small.y == c)[0] for c in np.unique(small.y)])
        train = np.union1d(firsts, np.arange(0, m, 2))
    else:
        train = np.arange(0, m, 2) if kind != "multilabel_ranking" else np.arange(m * 3 // 4)
    return small, train, np.setdiff1d(np.arange(m), train)


class _Prober:
    """Probe fits of estimators on a few samples of each data set: one per distinct parameter set."""

    def __init__(self, task: TaskSettings, data: dict[str, TaskData], standardize: bool) -> None:
        self.task = task
        self.probes = {name: _probe_data(task.kind, d) for name, d in data.items()}
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
                                 standardize=self.standardize, missing=max(self.task.missing),
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
    if entry.task != kind:
        same = [p.name for p in registry.plugins("estimator") if p.obj.task == kind]
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
                                       seed=ex.seed, path=path)
        searched = any(len(_grid_points(e.grid)) > 1 for e in config.estimators)
        _check_kind(task.kind, data[ds.name], ds, task, ex, path, searched)
    if task.select_by is not None and task.select_by not in dict(MEASURES[task.kind]):
        raise ConfigError(f"{task.select_by!r} is not a measure of {task.kind} tasks; measures: "
                          f"{', '.join(m for m, _ in MEASURES[task.kind])}", "task.select_by")
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
    """The settings a data set is run at: the missing fractions, the numbers of labelled samples, or one."""
    if task.kind == "multilabel_ranking":
        return list(task.missing)
    if task.kind == "ssl":
        return list(task.labeled)
    return [None]


def setting_name(task: TaskSettings, setting: Any) -> str:
    """How a setting appears in unit keys and reports."""
    if task.kind == "multilabel_ranking":
        return f"missing={setting:g}"
    if task.kind == "ssl":
        return f"labeled={setting}"
    return "-"


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
                n_folds = task.folds if task.folds >= 2 and task.kind not in ("ssl", "clustering") else 1
                for fold in range(n_folds):
                    prefix = f"task/{ds.name}/{setting_name(task, setting)}/{r}/{fold}"
                    base = {"dataset": attrs.asdict(ds), "protocol": protocol, "setting": setting, "repeat": r,
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
    if task.kind == "ssl":
        # Hide one fold of the labelled samples at a time (every other sample stays unlabelled).  A class with a
        # single labelled sample keeps it labelled in every fold: the random draw guarantees only one per class.
        classes, counts = np.unique(data.y[train], return_counts=True)
        kept = np.isin(data.y[train], classes[counts < 2])
        movable = train[~kept]
        if len(movable) == 0:
            raise ValueError(f"{len(train)} labelled samples, one of each class: no cross-validation can choose a "
                             f"grid point (label more samples, or give the estimator one value)")
        inner = StratifiedKFold(min(settings.cv_folds, int(counts[counts >= 2].min())), shuffle=True,
                                random_state=seed)
        folds = [(np.sort(np.r_[train[kept], movable[a]]), movable[b])
                 for a, b in inner.split(movable, data.y[movable])]
    else:
        folds = _folds(task.kind, data, train, settings.cv_folds, seed)
    scores = np.empty((len(points), len(folds)))
    for p, point in enumerate(points):
        for f, (tr, te) in enumerate(folds):
            est = entry.create(**resolve_params({**spec.params, **point}))
            scores[p, f] = evaluate(task.kind, est, data, tr, te, standardize=standardize,
                                    missing=_missing(setting, task), neighbors=task.neighbors, seed=seed)[measure]
    return scores


def _missing(setting: Any, task: TaskSettings) -> float:
    return float(setting) if task.kind == "multilabel_ranking" else 0.0


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
            points = _grid_points(spec.grid)
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
                              missing=_missing(unit.setting, task), neighbors=task.neighbors, seed=seed)
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
    measures = [m for m, _ in MEASURES[task.kind]]
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
    return {"kind": task.kind, "description": TASK_KINDS[task.kind], "measures": measures, "estimators": labels,
            "select_by": selection_measure(task)[0], "table": table}
