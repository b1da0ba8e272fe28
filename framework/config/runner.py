"""Running a configuration: load data, split, fit each model, evaluate, and report.

Every run has a task kind (:class:`multikernel.core.tasks.TaskKind`, ``[task] kind``): the kind reads the data's
labels, splits the samples, fits an estimator by its calling convention and measures it, so that any registered
estimator of any kind runs here with no per-kind code.  A ``[[models]]`` entry is an MKL method (an
:class:`~multikernel.estimators.classifier.MKLClassifier` on the kernels of ``[kernels]``) or a task estimator by
name (``estimator = "iokl_ssl"``).

:func:`check_config` is what ``multikernel validate`` runs; :func:`run_config` (``multikernel run``) runs it
first and then fits, so both refuse the same configurations.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
from joblib import Parallel, delayed

from multikernel.config.checks import Axis, PartsChecker, check_data, check_kernels, grid_axes, make_builders
from multikernel.config.evaluation import evaluate_kind, grid_points, resolve_params
from multikernel.config.progress import Progress
from multikernel.config.schema import ModelConfig, RunConfig, config_to_dict, evaluate_value
from multikernel.config.summary import count_selected, sample_std
from multikernel.config.task_data import TaskData, load_task_data
from multikernel.core.registry import get_registry
from multikernel.core.tasks import TASK_KINDS, TaskEstimator, TaskKind, task_kind
from multikernel.core.validation import shown
from multikernel.errors import ConfigError, PluginError
from multikernel.estimators.classifier import MKLClassifier
from multikernel.solve.fit import build_parts

__all__ = ["run_config", "build_estimator", "check_config", "RunPlan", "ModelPlan", "SELECTION_THRESHOLD"]

SELECTION_THRESHOLD = 1e-5
"""A kernel counts as selected when its share ``mu_m / sum(mu)`` exceeds this (as in the experiment runner)."""

DEFAULT_KIND = "classification"
"""The task kind of a run whose ``[task]`` names none and whose models are MKL methods only."""

# What an estimator raises for parameters or data it refuses (scikit-learn's convention is ValueError).
_REFUSALS = (ValueError, TypeError, ArithmeticError, NotImplementedError, PluginError)


def build_estimator(config: RunConfig, model: ModelConfig, n_features: int, index: int = 0) -> MKLClassifier:
    """The estimator that an MKL method entry of ``[[models]]`` describes, for data with ``n_features``.

    Its kernels are the builders of ``[kernels]`` and its loss, regularizer and solver are instances (the
    method's parts with the entry's overrides, ``C`` set on the loss), so that every grid key
    (``loss__C``, ``regularizer__nu``, ...) is a nested parameter of the estimator.
    """
    try:
        parts = build_parts(model.method, model.loss, model.regularizer, model.solver, params={"C": model.C})
    except ValueError as exc:
        raise ConfigError(str(exc), f"models[{index}]") from exc
    kc = config.kernels
    return MKLClassifier(
        kernels=make_builders(kc, n_features), normalize=kc.normalize, standardize=config.preprocessing.standardize,
        method=model.method, C=None, loss=parts.loss, regularizer=parts.regularizer, solver=parts.solver,
        tol=config.solver.tol, max_iter=config.solver.max_iter, inner_tol=config.solver.inner_tol,
        stopping=config.solver.stopping, kernel_dtype=kc.dtype, kernel_backend=kc.backend,
        memory_budget=kc.memory_budget, n_jobs=config.evaluation.n_jobs, multiclass=model.multiclass or "ovr",
    )


def _estimator_key(key: str) -> str:
    """A grid key as a parameter of :func:`build_estimator`'s estimator: ``C`` lives on its loss."""
    return "loss__C" if key == "C" else key


# --------------------------------------------------------------------------------------------------
# the protocol as the task kinds read it
# --------------------------------------------------------------------------------------------------
@attrs.define
class RunTask:
    """``[task]`` and ``[evaluation]`` as a task kind reads them (the attributes of an experiment's task)."""

    kind: str
    folds: int = 0
    missing: list[float] = attrs.Factory(lambda: [0.0])
    labeled: list[int] = attrs.Factory(lambda: [10])
    neighbors: int = 3
    select_by: str | None = None


@attrs.define
class RunProtocol:
    """The seed, held-out fraction and selection folds of a run, as a task kind reads them."""

    seed: int
    test_fraction: float
    cv_folds: int


@attrs.define
class RunDataset:
    """The data set entry a task kind reads (a run has no fixed training size)."""

    train_size: int | None = None


@attrs.define
class ModelPlan:
    """One ``[[models]]`` entry ready to fit: a factory of unfitted estimators at grid points.

    ``points`` are the grid points in the estimator's parameters and ``shown`` the same points with the
    configuration's keys; ``outside`` is whether the run standardizes the data for the estimator (one that takes
    a ``standardize`` parameter does it itself, fitted with it and saved with it).
    """

    label: str
    name: str
    C: Any
    points: list[dict[str, Any]]
    shown: list[dict[str, Any]]
    factory: Callable[[dict[str, Any]], Any]
    outside: bool


@attrs.define
class RunPlan:
    """A checked run: its task kind, protocol, data and models (what :func:`check_config` returns)."""

    kind: TaskKind
    task: RunTask
    protocol: RunProtocol
    data: TaskData
    models: list[ModelPlan]
    n_kernels: int | None
    measure: str
    higher: bool
    standardize: bool
    repeats: int
    n_jobs: int | None

    @property
    def setting(self) -> Any:
        """The one setting of the kind a run evaluates at (a missing fraction, a number of labelled samples)."""
        return self.kind.settings(self.task)[0]

    def splits(self, repeat: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """The (train, test) samples of ``repeat``: the kind's split (``evaluation.folds`` folds, or one)."""
        return self.kind.splits(self.task, self.data, RunDataset(), self.protocol, repeat, self.setting)


def _message(exc: ConfigError) -> str:
    return str(exc).removeprefix(f"{exc.path}: ") if exc.path else str(exc)


def _repath(exc: ConfigError) -> ConfigError:
    """A task kind's error with the key paths of an experiment ([task] lists, [experiment]) as a run's keys."""
    path = exc.path
    for old, new in (("task.folds", "evaluation.folds"), ("experiment.cv_folds", "evaluation.cv_folds")):
        path = new if path == old else path
    for key in ("labeled", "missing"):
        if path.startswith(f"task.{key}["):
            path = f"task.{key}"
    return exc if path == exc.path else ConfigError(_message(exc), path)


# --------------------------------------------------------------------------------------------------
# checks
# --------------------------------------------------------------------------------------------------
def _entries(config: RunConfig) -> tuple[str, list[TaskEstimator | None]]:
    """The run's task kind and each model's task estimator (``None`` for an MKL method)."""
    registry = get_registry()
    methods, estimators = set(registry.names("method")), set(registry.names("estimator"))
    entries: list[TaskEstimator | None] = []
    for i, model in enumerate(config.models):
        path = f"models[{i}]"
        if model.estimator is None:
            if model.method not in methods:
                if model.method in estimators:
                    kind = registry.get("estimator", model.method).task
                    raise ConfigError(f"{model.method!r} is a task estimator ({kind}), not an MKL method; write "
                                      f"estimator = {model.method!r} in this [[models]] entry", f"{path}.method")
                try:
                    registry.get("method", model.method)
                except PluginError as exc:
                    raise ConfigError(f"{exc} (task estimators, listed by `multikernel plugins`, run with "
                                      f"estimator = NAME)", f"{path}.method") from exc
            entries.append(None)
            continue
        try:
            entries.append(registry.get("estimator", model.estimator))
        except PluginError as exc:
            hint = (f"; {model.estimator!r} is an MKL method: write method = {model.estimator!r}"
                    if model.estimator in methods else "")
            raise ConfigError(f"{exc}{hint}", f"{path}.estimator") from exc
    given = config.task.kind if config.task is not None else None
    kind = given or next((e.task for e in entries if e is not None), DEFAULT_KIND)
    if kind not in TASK_KINDS:
        try:
            task_kind(kind)
        except PluginError as exc:
            raise ConfigError(str(exc), "task.kind") from exc
    for i, entry in enumerate(entries):
        if entry is not None and entry.task != kind:
            same = [p.name for p in registry.plugins("estimator") if p.obj.task == kind]
            where = "[task] kind" if given else f"the first estimator's ({kind})"
            raise ConfigError(f"{entry.name!r} is a {entry.task} estimator; this run's task is {kind}, from "
                              f"{where} (its estimators: {', '.join(same) or '(none)'})", f"models[{i}].estimator")
    return kind, entries


def _task(config: RunConfig, kind: TaskKind, kind_name: str) -> RunTask:
    """The run's [task] settings, each one checked to apply to the kind."""
    tc = config.task
    task = RunTask(kind=kind_name, folds=config.evaluation.folds)
    if tc is None:
        return task
    for key in ("missing", "labeled", "neighbors"):
        value = getattr(tc, key)
        if value is None:
            continue
        if key not in kind.task_settings:
            users = [n for n in TASK_KINDS if key in task_kind(n).task_settings]
            raise ConfigError(f"a setting of {' and '.join(users) or 'no'} tasks; this run's task is {kind_name}",
                              f"task.{key}")
        setattr(task, key, [value] if key in ("missing", "labeled") else value)
    if tc.select_by is not None:
        if tc.select_by not in dict(kind.measures):
            raise ConfigError(f"{tc.select_by!r} is not a measure of {kind_name} tasks; measures: "
                              f"{', '.join(m for m, _ in kind.measures)}", "task.select_by")
        task.select_by = tc.select_by
    return task


def _load(config: RunConfig) -> TaskData:
    d = config.data
    return load_task_data(d.source, format=d.format, params=d.params, features=d.features or (),
                          privileged=d.privileged or (), classes=d.classes or (), positive=d.positive or (),
                          seed=config.evaluation.seed, path="data")


def _suits(kind: TaskKind, data: TaskData) -> bool:
    """Whether the data have what the kind declares it reads (labels, samples, bags, a second view)."""
    labels_ok = {"matrix": data.y.ndim == 2, "none": True}.get(kind.labels, data.y.ndim == 1)
    samples_ok = data.X.ndim == (3 if kind.samples == "matrices" else 2)
    bags_ok = (data.groups is not None) if kind.bags == "required" else (kind.bags == "optional"
                                                                        or data.groups is None)
    view_ok = (data.privileged is not None) if kind.privileged == "required" else (kind.privileged == "optional"
                                                                                  or data.privileged is None)
    return labels_ok and samples_ok and bags_ok and view_ok


def _check_data_suits(kind: TaskKind, data: TaskData, task: RunTask, protocol: RunProtocol, source: str,
                      searched: bool, suggest: bool) -> None:
    """The kind's checks of the data; when the data do not suit the kind and ``suggest`` (the kind is not the one
    of an estimator the configuration names), the kinds they suit are named."""
    try:
        kind.check(data, source, task, protocol, "data", searched)
    except ConfigError as exc:
        if suggest and not _suits(kind, data):
            fits = [n for n in TASK_KINDS if _suits(task_kind(n), data)]
            if fits:
                raise ConfigError(f"{_message(exc)}; kinds for such data: {', '.join(fits)} (set [task] kind)",
                                  exc.path) from exc
        raise _repath(exc) from exc


def _check_splits(plan: RunPlan, searched: bool) -> None:
    """Every split of the run can be drawn, and every training part can be split into ``cv_folds`` selection
    folds when a grid is searched (the splits themselves are drawn: they are cheap, and exactly the run's)."""
    where = "evaluation.folds" if plan.task.folds else "evaluation.test_fraction"
    for r in range(plan.repeats):
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # scikit-learn warns of a class too small for the folds
            try:
                splits = plan.splits(r)
            except (ValueError, UserWarning) as exc:
                raise ConfigError(f"cannot draw the split of repeat {r}: {exc}", where) from exc
            if not searched:
                continue
            for f, (train, _) in enumerate(splits):
                try:
                    plan.kind.selection_folds(plan.data, train, plan.protocol.cv_folds, plan.protocol.seed + r)
                except (ValueError, UserWarning) as exc:
                    split = f"split {r}" + (f", fold {f}" if len(splits) > 1 else "")
                    raise ConfigError(f"cannot draw {plan.protocol.cv_folds} selection folds of the training part "
                                      f"of {split}: {exc}", "evaluation.cv_folds") from exc


def _model_grid(config: RunConfig, model: ModelConfig) -> dict[str, list[Any]]:
    return {**config.evaluation.grid, **(model.grid or {})}


def _grid_path(config: RunConfig, model: ModelConfig, index: int, key: str) -> str:
    return f"models[{index}].grid.{key}" if key in (model.grid or {}) else f"evaluation.grid.{key}"


def _mkl_plan(config: RunConfig, model: ModelConfig, i: int, n_features: int, n_kernels: int) -> ModelPlan:
    resolved = {k: [evaluate_value(v, n_kernels) for v in vs] for k, vs in _model_grid(config, model).items()}
    shown_points = grid_points(resolved)

    def factory(point: dict[str, Any]) -> Any:
        est = build_estimator(config, model, n_features, i)
        return est.set_params(**{_estimator_key(k): v for k, v in point.items()})

    return ModelPlan(model.display_name, model.method, model.C, shown_points, shown_points, factory, outside=False)


def _estimator_plan(config: RunConfig, model: ModelConfig, entry: TaskEstimator, i: int) -> ModelPlan:
    path = f"models[{i}]"
    params = dict(model.params or {})
    grid = _model_grid(config, model)
    accepted = entry.parameters()
    if accepted is not None:
        for key in params:
            if key not in accepted:
                raise ConfigError(f"{key!r} is not a parameter of the estimator {entry.name!r}; its parameters: "
                                  f"{', '.join(accepted) or '(none)'}", f"{path}.params.{key}")
        for key in grid:
            if key not in accepted:
                raise ConfigError(f"{key!r} is not a parameter of the estimator {entry.name!r}; its parameters: "
                                  f"{', '.join(accepted) or '(none)'}", _grid_path(config, model, i, key))
    # An estimator that standardizes does it itself (and its saved model then takes raw features).
    inside = accepted is not None and "standardize" in accepted and "standardize" not in {**params, **grid}
    if inside:
        params["standardize"] = config.preprocessing.standardize

    def factory(point: dict[str, Any]) -> Any:
        return entry.create(**resolve_params({**params, **point}))

    points = grid_points(grid)
    return ModelPlan(model.display_name, entry.name, params.get("C"), points, points, factory, outside=not inside)


def _probe_fit(plan: RunPlan, model: ModelPlan, point: dict[str, Any], max_iter: int | None, probe: tuple[Any, ...],
               **change: Any) -> Exception | None:
    """Fit ``model`` at ``point`` on the probe samples by the kind's convention; what it refuses, if anything.
    ``max_iter`` (MKL methods: a few outer iterations) and ``change`` are set on the estimator."""
    small, train, test = probe
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a fit on a few samples need not converge
            est = model.factory(point)
            if max_iter is not None:
                est.set_params(max_iter=max_iter, **change)
            evaluate_kind(plan.kind, est, small, train, test, standardize=plan.standardize and model.outside,
                          setting=plan.kind.probe_setting(plan.task), neighbors=min(plan.task.neighbors, len(train)))
    except ConfigError:
        raise
    except _REFUSALS as exc:
        return exc
    return None


def _probe(plan: RunPlan, config: RunConfig, entries: list[TaskEstimator | None]) -> None:
    """Fit every model on a few samples of the data by the kind's convention (estimators check their
    parameters, and whether they can learn from such data, in ``fit``): an estimator at its parameters and at each
    grid value, an MKL method at its first grid point for a few outer iterations (its parts are checked at every
    grid point by :class:`~multikernel.config.checks.PartsChecker`)."""
    probe = plan.kind.probe(plan.data)
    for i, (model, mp, entry) in enumerate(zip(config.models, plan.models, entries, strict=True)):
        trials: list[tuple[dict[str, Any], str]] = [(mp.points[0], f"models[{i}]")]
        max_iter = min(config.solver.max_iter, 3) if entry is None else None
        if entry is not None:
            trials = [({}, f"models[{i}]" + (".params" if model.params else ""))]
            trials += [({key: v}, f"{_grid_path(config, model, i, key)}[{j}]")
                       for key, values in _model_grid(config, model).items() for j, v in enumerate(values)]
        for point, where in trials:
            exc = _probe_fit(plan, mp, point, max_iter, probe)
            if exc is None:
                continue
            # An MKL method that fits with one weight vector shared by the classes or labels: the entry's multiclass.
            if entry is None and model.multiclass != "shared" and _probe_fit(
                    plan, mp, point, max_iter, probe, multiclass="shared") is None:
                where = f"models[{i}].multiclass"
            what = f"model {mp.label!r}" + (f" at {_shown_point(point)}" if point and entry is not None else "")
            raise ConfigError(f"{what} fails a fit on a few samples of the data ({plan.task.kind} task): {exc}",
                              where) from exc


def _shown_point(point: dict[str, Any]) -> str:
    return ", ".join(f"{k}={shown(v)!r}" for k, v in point.items())


def check_config(config: RunConfig) -> RunPlan:
    """Check everything a run needs short of fitting the data, as the run itself will do it.

    The task kind resolves and its settings apply; the data load and suit the kind (its labels, samples, bags,
    views, classes); each split can be drawn; for MKL methods the kernels expand, every builder accepts its
    parameters, and every model's parts build and run (a probe fit on 4 samples) at every grid point, with
    ``M`` the number of kernels (see :mod:`multikernel.config.checks`); every estimator takes its parameters;
    and every model is fitted on a few samples of the data by the kind's convention (a probe fit).

    Returns
    -------
    RunPlan
        The loaded data, the kind and the models ready to fit.

    Raises
    ------
    ConfigError
        Naming the key path of the entry at fault.
    """
    kind_name, entries = _entries(config)
    kind = task_kind(kind_name)
    task = _task(config, kind, kind_name)
    ev = config.evaluation
    if task.folds and not kind.has_folds:
        raise ConfigError(f"{kind_name} tasks have no evaluation folds ({kind.no_folds_reason}); use folds = 0",
                          "evaluation.folds")
    searched = any(len(v) > 1 for m in config.models for v in _model_grid(config, m).values())
    if searched and not kind.can_select:
        raise ConfigError(f"{kind_name} tasks have no labels to choose parameters by; give each grid key one value",
                          "evaluation.cv_folds")
    try:
        kind.check_task(task)
    except ConfigError as exc:
        raise _repath(exc) from exc
    protocol = RunProtocol(seed=ev.seed, test_fraction=ev.test_fraction, cv_folds=ev.cv_folds)
    data = _load(config)
    _check_data_suits(kind, data, task, protocol, config.data.source, searched,
                      suggest=all(e is None for e in entries))
    mkl = [i for i, e in enumerate(entries) if e is None]
    n_kernels = None
    if mkl:
        check_data(data.X, data.y, config.data.source, "data.source")
        n_kernels = len(check_kernels(config.kernels, data.X, config.preprocessing.standardize))
    measure = task.select_by or kind.measures[0][0]
    plan = RunPlan(kind=kind, task=task, protocol=protocol, data=data, models=[], n_kernels=n_kernels,
                   measure=measure, higher=dict(kind.measures)[measure], standardize=config.preprocessing.standardize,
                   repeats=ev.repeats, n_jobs=ev.n_jobs)
    _check_splits(plan, searched)
    checker = PartsChecker(config.solver)
    for i, (model, entry) in enumerate(zip(config.models, entries, strict=True)):
        if entry is not None:
            plan.models.append(_estimator_plan(config, model, entry, i))
            continue
        assert n_kernels is not None
        grid = _model_grid(config, model)
        # The model's own C, unless a grid sets C.
        own = [] if "C" in grid else [Axis("C", f"models[{i}].C", ((model.C, f"models[{i}].C"),))]
        axes = grid_axes(config.evaluation.grid, "evaluation.grid") + grid_axes(model.grid or {},
                                                                                 f"models[{i}].grid")
        checker.check(model, own + axes, n_kernels, f"models[{i}]", "evaluation.grid",
                      label=model.display_name if grid else None)
        plan.models.append(_mkl_plan(config, model, i, data.X.shape[1], n_kernels))
    _probe(plan, config, entries)
    return plan


# --------------------------------------------------------------------------------------------------
# fitting
# --------------------------------------------------------------------------------------------------
def fit_and_measure(plan: RunPlan, model: ModelPlan, point: dict[str, Any], train: np.ndarray, test: np.ndarray,
                    seed: int) -> tuple[Any, dict[str, float]]:
    """A new estimator of ``model`` at ``point`` fitted on ``train`` by the kind's convention; its measures on
    ``test``.  Every fit of a run (model selection and evaluation) goes through here."""
    est = model.factory(point)
    return est, evaluate_kind(plan.kind, est, plan.data, train, test, standardize=plan.standardize and model.outside,
                              setting=plan.setting, neighbors=plan.task.neighbors, seed=seed)


def _select(plan: RunPlan, model: ModelPlan, train: np.ndarray, seed: int) -> tuple[int, list[list[float]]]:
    """The grid point of ``model`` with the best mean selection measure over the selection folds of ``train``
    (the first on ties), and the scores (points x folds)."""
    folds = plan.kind.selection_folds(plan.data, train, plan.protocol.cv_folds, seed)
    pairs = [(p, tr, te) for p in range(len(model.points)) for tr, te in folds]
    scores = Parallel(n_jobs=plan.n_jobs)(
        delayed(lambda p, tr, te: fit_and_measure(plan, model, model.points[p], tr, te, seed)[1][plan.measure])(
            p, tr, te) for p, tr, te in pairs)
    table = np.asarray(scores, dtype=np.float64).reshape(len(model.points), len(folds))
    mean = table.mean(axis=1)
    return int(np.nanargmax(mean) if plan.higher else np.nanargmin(mean)), table.tolist()


def _diagnostics(est: Any) -> dict[str, Any]:
    """What an MKL-type estimator reports beyond the task's measures: iterations, certified gap, kernel weights."""
    out: dict[str, Any] = {}
    for attr, key in (("n_iter_", "n_iter"), ("dual_gap_", "dual_gap")):
        value = getattr(est, attr, None)
        if value is not None:
            out[key] = np.asarray(value).tolist()
    weights = getattr(est, "weights_", None)
    if weights is not None and np.ndim(weights) in (1, 2):
        w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        out["weights"] = w.tolist()
        out["n_selected"] = count_selected(w, SELECTION_THRESHOLD)
    return out


def run_config(config: RunConfig, progress: bool | None = None) -> dict[str, Any]:
    """Fit and evaluate every model of ``config``; return a JSON-serialisable report.

    Runs :func:`check_config` first.  Each repeat splits the samples as the task kind does (seed
    ``evaluation.seed + repeat``): ``evaluation.test_fraction`` held out, or ``evaluation.folds`` folds; a grid
    with several values is searched by ``cv_folds``-fold cross-validation on the training part only, by the
    kind's selection measure (one value per key is simply applied).  ``progress``: ``False`` for silence,
    otherwise a bar on a terminal and one line per finished fit on stderr when it is not one (a log file, CI).
    The estimators fitted on the first split are under the key ``"_estimators"``.
    """
    start = time.perf_counter()
    plan = check_config(config)
    measures = [m for m, _ in plan.kind.measures]
    report_models = [{"label": m.label, "method": m.name, "C": m.C, "repeats": []} for m in plan.models]
    fitted: list[Any] = [None] * len(plan.models)
    n_splits = len(plan.splits(0))
    with Progress(plan.repeats * n_splits * len(plan.models), "fitting", "fit", show=progress) as bar:
        for r in range(plan.repeats):
            seed = plan.protocol.seed + r
            for f, (train, test) in enumerate(plan.splits(r)):
                for i, model in enumerate(plan.models):
                    t0 = time.perf_counter()
                    best, cv_scores = _select(plan, model, train, seed) if len(model.points) > 1 else (0, None)
                    est, result = fit_and_measure(plan, model, model.points[best], train, test, seed)
                    elapsed = time.perf_counter() - t0
                    record = {"repeat": r, **({"fold": f} if n_splits > 1 else {}),
                              **{m: float(result[m]) for m in measures}, "fit_time": elapsed,
                              **_diagnostics(est), "best_params": _plain(model.shown[best])}
                    if cv_scores is not None:
                        record["cv_scores"] = cv_scores
                    report_models[i]["repeats"].append(record)
                    if r == 0 and f == 0:
                        fitted[i] = est
                    where = f"repeat {r + 1}/{plan.repeats}" + (f" fold {f + 1}/{n_splits}" if n_splits > 1 else "")
                    bar.done(f"{where} {model.label}: {measures[0]} {result[measures[0]]:.4f}, {elapsed:.2f} s")
    for entry, est in zip(report_models, fitted, strict=True):
        reps = entry["repeats"]
        for m in measures:
            values = np.array([rep[m] for rep in reps])
            entry[f"{m}_mean"] = float(values.mean())
            entry[f"{m}_std"] = sample_std(values)
        entry["fit_time_mean"] = float(np.mean([rep["fit_time"] for rep in reps]))
        if "n_selected" in reps[0]:
            entry["n_selected_mean"] = float(np.mean([rep["n_selected"] for rep in reps]))
            names = getattr(est, "kernel_names_", None)
            w = np.atleast_2d(reps[0]["weights"]).mean(axis=0)
            order = np.argsort(-w)[:5]
            entry["top_kernels"] = ([{"kernel": names[k], "weight": float(w[k])} for k in order if w[k] > 0]
                                    if names is not None and len(names) == len(w) else [])
    y = plan.data.y
    return {
        "config": config_to_dict(config),
        "task": {"kind": plan.task.kind, "description": plan.kind.description, "measures": measures,
                 "select_by": plan.measure},
        "data": {"source": config.data.source, "n_samples": plan.data.n_samples,
                 "n_features": int(np.prod(plan.data.X.shape[1:])),
                 "n_classes": int(len(np.unique(y))) if plan.kind.labels == "classes" and y.ndim == 1 else None,
                 "n_labels": int(y.shape[1]) if y.ndim == 2 else None, "n_kernels": plan.n_kernels},
        "models": report_models,
        "total_time": time.perf_counter() - start,
        "_estimators": fitted,
    }


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value if isinstance(value, (int, float, str, bool, list, type(None))) else repr(value)
