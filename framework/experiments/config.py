"""Experiment configurations: data sets x methods (each with its own grid) x repeats, as TOML or a dict.

The tables ``[preprocessing]``, ``[kernels]`` and ``[solver]`` are the ones of a run configuration
(:mod:`multikernel.config.schema`) and are validated by the same machinery: every error is a
:class:`~multikernel.errors.ConfigError` whose message starts with the key path of the offending entry.

Grid values are numbers or small arithmetic expressions in ``M``, the number of base kernels of the data set
(``"1/M"``, ``"2/M"``, ``"32/31"``); they are resolved per data set, once the kernels are known.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Literal, Union

import attrs

from multikernel.config.datasets import BUILTIN_LOADERS, GENERATORS
from multikernel.config.generators import TASK_GENERATORS
from multikernel.config.schema import (
    PARAM_PATTERN,
    KernelsConfig,
    MethodParts,
    PreprocessingConfig,
    SolverConfig,
    check_entries,
    check_grid,
    check_grid_key,
    check_grid_values,
    check_kernels_choice,
    drop_none,
    evaluate_value,
    fraction,
    non_negative,
    positive,
    positive_integer,
    read_toml,
    resolve_path,
    structure,
    valid_folds,
    valid_n_jobs,
)
from multikernel.core.tasks import TASK_KINDS, task_kind
from multikernel.engine import check_engine
from multikernel.errors import ConfigError

__all__ = [
    "ExperimentConfig",
    "ExperimentSettings",
    "DatasetSpec",
    "MethodSpec",
    "NoisyKernelsConfig",
    "PathConfig",
    "TaskSettings",
    "EstimatorSpec",
    "load_experiment_config",
    "experiment_config_from_dict",
    "experiment_config_to_dict",
    "is_experiment_config",
    "dataset_fields",
    "evaluate_value",
    "PARAM_PATTERN",
]

DEFAULT_RATIOS = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2]
EXPERIMENT_KEYS = ("experiment", "datasets", "methods", "noisy_kernels", "paths", "estimators")
"""Top-level keys that only experiment configurations have (run configurations have none of them; ``[task]`` is
in both)."""


@attrs.define
class ExperimentSettings:
    """The ``[experiment]`` table: protocol and bookkeeping shared by every data set and method.

    ``output`` is relative to the configuration file's folder.  ``selection_threshold`` defines a
    "selected" kernel: its share ``mu_m / sum(mu)`` exceeds the threshold (shares make the count
    comparable between domains, e.g. the simplex and the l2 ball).  ``cross_block_mb`` bounds the memory
    of one block of test x train cross kernels (they are computed block by block).  ``engine`` is where the
    units run: ``"local"`` (``n_jobs`` processes here) or ``"dask"`` (the workers of the Dask scheduler at
    ``scheduler``, e.g. ``"tcp://head-node:8786"``; see :mod:`multikernel.engine`).  ``cv_tol`` is the
    tolerance of the cross-validation fits (``[solver] tol`` when unset): model selection compares fold
    accuracies, so it can stop at a looser certified gap than the refit at the selected point.  ``warm_order``
    is the order of the warm-started walk over a grid (:func:`multikernel.experiments.model_selection.warm_chains`):
    ``"C"`` (``C`` inside, the other parameters outside) or ``"parameters"`` (the other parameters inside, ``C``
    outside).
    """

    name: str = "experiment"
    output: str = "results"
    benchmark: bool = True
    repeats: int = attrs.field(default=10, validator=positive_integer)
    test_fraction: float = attrs.field(default=0.3, validator=fraction)
    cv_folds: int = attrs.field(default=5, validator=valid_folds)
    seed: int = 0
    n_jobs: Union[int, None] = attrs.field(default=None, validator=valid_n_jobs)  # noqa: UP007 (inspected at run time)
    selection_threshold: float = attrs.field(default=1e-5, validator=positive)
    warm_start: bool = True
    cross_block_mb: float = attrs.field(default=256.0, validator=positive)
    engine: str = "local"
    scheduler: Union[str, None] = None  # noqa: UP007
    cv_tol: Union[float, None] = attrs.field(default=None, validator=attrs.validators.optional(positive))  # noqa: UP007
    warm_order: str = attrs.field(default="C", validator=attrs.validators.in_(("C", "parameters")))


@attrs.define
class DatasetSpec:
    """One ``[[datasets]]`` entry.

    ``source`` is a built-in data set (``breast_cancer``, ...), a generator (``ringnorm``; its arguments in
    ``params``), or a CSV/LIBSVM file path relative to the configuration file.  ``train_size`` (a number of
    samples) replaces ``test_fraction`` for this data set, as in the IDA benchmark's fixed training sizes.

    Task experiments (with a ``[task]`` table) also take ``classes`` (keep these classes), ``positive`` (labels
    become 1 for these classes, 0 for the others), for CSV files ``features`` / ``privileged`` (column-name
    prefixes of the features and of the privileged view), and ``shape`` (``[rows, columns]``: each sample's
    features as a matrix, for matrix-sample tasks such as ``bilinear``): see :mod:`multikernel.config.task_data`.
    A generator's ``params`` are checked against its parameters (:mod:`multikernel.config.generators`).
    """

    name: str
    source: str
    format: Literal["auto", "csv", "libsvm"] = "auto"
    params: dict[str, Any] = attrs.Factory(dict)
    train_size: Union[int, None] = attrs.field(default=None, validator=positive_integer)  # noqa: UP007
    classes: list[Any] = attrs.Factory(list)
    positive: list[Any] = attrs.Factory(list)
    features: list[str] = attrs.Factory(list)
    privileged: list[str] = attrs.Factory(list)
    shape: list[int] = attrs.Factory(list)


def dataset_fields(ds: DatasetSpec) -> dict[str, Any]:
    """A data set's fields for the fingerprints of its units; ``shape`` only when set, so that the units of data
    sets without it keep their fingerprints."""
    return attrs.asdict(ds, filter=lambda a, v: not (a.name == "shape" and not v))


def _fractions(instance: Any, attribute: Any, values: list[float]) -> None:
    for v in values:
        if not 0.0 <= v < 1.0:
            raise ValueError(f"fractions lie in [0, 1); got {v!r}")


@attrs.define
class TaskSettings:
    """The ``[task]`` table of an experiment comparing task estimators (``[[estimators]]``) by name.

    ``kind`` is a task kind (:data:`multikernel.core.tasks.TASK_KINDS`).  Each repeat evaluates on ``folds``
    folds (k-fold cross-validation over the samples, over the bags for ``mil``), or with ``folds = 0`` on one
    random split (``experiment.test_fraction`` or the data set's ``train_size``); ``ssl`` draws ``labeled``
    labelled samples per repeat (at least one per class) and scores the others; ``clustering`` clusters all
    samples.  ``missing`` (``multilabel_ranking``): fractions of each training sample's relevant labels removed
    (at least one kept; test labels complete), one setting each.  ``neighbors``: the k of the k-NN accuracy of
    ``metric``.  ``select_by``: the measure that chooses grid points (default: the kind's first measure).
    """

    kind: str
    folds: int = attrs.field(default=0, validator=non_negative)
    missing: list[float] = attrs.field(default=attrs.Factory(lambda: [0.0]), validator=_fractions)
    labeled: list[int] = attrs.Factory(lambda: [10])
    neighbors: int = attrs.field(default=3, validator=positive_integer)
    select_by: Union[str, None] = None  # noqa: UP007


@attrs.define
class EstimatorSpec:
    """One ``[[estimators]]`` entry: a registered task estimator by ``name``, its parameters and its own grid.

    ``params`` override the estimator's defaults; ``grid`` maps parameter names to lists of values chosen by
    ``experiment.cv_folds``-fold cross-validation on the training part.  A ``kernels`` value may be a list of
    kernel tables (``[{name = "rbf", gamma_scale = 0.25}, {name = "linear"}]``): registered kernel builders.
    """

    name: str
    label: Union[str, None] = None  # noqa: UP007
    params: dict[str, Any] = attrs.Factory(dict)
    grid: dict[str, list[Any]] = attrs.Factory(dict)

    @property
    def display_name(self) -> str:
        """``label``, or the estimator name."""
        return self.label or self.name


@attrs.define(kw_only=True)
class MethodSpec(MethodParts):
    """One ``[[methods]]`` entry: a registered method, optional part overrides and its own grid.

    ``grid`` maps ``C`` and ``loss__*``/``regularizer__*``/``solver__*`` parameters to lists of values;
    ``warm_order`` overrides ``[experiment] warm_order`` for this method's grid.
    """

    method: str
    grid: dict[str, list[Any]] = attrs.Factory(dict)
    warm_order: Union[str, None] = attrs.field(  # noqa: UP007
        default=None, validator=attrs.validators.optional(attrs.validators.in_(("C", "parameters"))))


@attrs.define
class NoisyKernelsConfig:
    """The ``[noisy_kernels]`` experiment: split ``repeat`` of ``dataset`` with ``round(r d)`` random
    standard-normal features appended, for each ratio ``r``; ``methods`` are labels (all when empty)."""

    dataset: str
    ratios: list[float] = attrs.Factory(lambda: list(DEFAULT_RATIOS))
    methods: list[str] = attrs.Factory(list)
    repeat: int = attrs.field(default=0, validator=non_negative)


@attrs.define
class PathConfig:
    """One ``[[paths]]`` entry: refit ``method`` (a label) on split ``repeat`` of ``dataset`` for each value of
    ``param``; ``fixed`` sets the method's other parameters (the method's defaults otherwise)."""

    dataset: str
    method: str
    param: str
    values: list[Any]
    fixed: dict[str, Any] = attrs.Factory(dict)
    label: Union[str, None] = None  # noqa: UP007
    repeat: int = attrs.field(default=0, validator=non_negative)


@attrs.define
class ExperimentConfig:
    """A complete experiment: protocol, data sets, kernels, methods and the optional figure experiments."""

    datasets: list[DatasetSpec]
    methods: list[MethodSpec] = attrs.Factory(list)
    experiment: ExperimentSettings = attrs.Factory(ExperimentSettings)
    preprocessing: PreprocessingConfig = attrs.Factory(PreprocessingConfig)
    kernels: KernelsConfig = attrs.Factory(lambda: KernelsConfig(family="simplemkl"))
    solver: SolverConfig = attrs.Factory(SolverConfig)
    noisy_kernels: Union[NoisyKernelsConfig, None] = None  # noqa: UP007
    paths: list[PathConfig] = attrs.Factory(list)
    task: Union[TaskSettings, None] = None  # noqa: UP007
    estimators: list[EstimatorSpec] = attrs.Factory(list)

    def method(self, label: str) -> MethodSpec:
        """The ``[[methods]]`` entry labelled ``label``."""
        return next(m for m in self.methods if m.display_name == label)

    def dataset(self, name: str) -> DatasetSpec:
        """The ``[[datasets]]`` entry named ``name``."""
        return next(d for d in self.datasets if d.name == name)


# --------------------------------------------------------------------------------------------------
# loading and checks
# --------------------------------------------------------------------------------------------------
def experiment_config_from_dict(data: dict[str, Any], base_dir: str | Path | None = None) -> ExperimentConfig:
    """Validate a plain dict (the parsed TOML) and return an :class:`ExperimentConfig`.

    Relative file paths (data set files, ``experiment.output``) are resolved against ``base_dir`` (the
    current directory when ``None``) and stored as absolute paths.
    """
    config = structure(ExperimentConfig, dict(data), "")
    check_kernels_choice(config.kernels)
    _check_datasets(config, base_dir)
    if "task" in data or "estimators" in data:
        _check_task(config, data)
    else:
        _check_settings(config)
        _check_methods(config)
        _check_figures(config)
    config.experiment.output = resolve_path(config.experiment.output, base_dir)
    return config


def is_experiment_config(data: dict[str, Any]) -> bool:
    """Whether a parsed TOML file is an experiment configuration (it has ``[[datasets]]``, ``[[methods]]``,
    ``[experiment]``, ...) rather than a run configuration."""
    return any(key in data for key in EXPERIMENT_KEYS)


def _check_settings(config: ExperimentConfig) -> None:
    ex = config.experiment
    if not ex.benchmark and config.noisy_kernels is None and not config.paths:
        raise ConfigError("nothing to run: benchmark = false and no [noisy_kernels] or [[paths]]",
                          "experiment.benchmark")
    check_engine(ex.engine, ex.scheduler)


def _check_datasets(config: ExperimentConfig, base_dir: str | Path | None) -> None:
    check_entries([ds.name for ds in config.datasets], "datasets", "name", "data set name")
    for i, ds in enumerate(config.datasets):
        path = f"datasets[{i}]"
        generators = TASK_GENERATORS if config.task is not None else GENERATORS
        if config.task is None:
            for key in ("classes", "positive", "features", "privileged", "shape"):
                if getattr(ds, key):
                    raise ConfigError("a key of task experiments (with a [task] table); benchmark data sets take "
                                      "their classes as they are", f"{path}.{key}")
        if ds.source in generators:
            continue
        if ds.params:
            raise ConfigError(f"params are for generated data sets ({', '.join(generators)}); {ds.source!r} is "
                              f"not one", f"{path}.params")
        if ds.source in BUILTIN_LOADERS:
            continue
        file = Path(resolve_path(ds.source, base_dir))
        if not file.is_file():
            raise ConfigError(f"{ds.source!r} is neither a built-in data set ({', '.join(BUILTIN_LOADERS)}), a "
                              f"generator ({', '.join(generators)}) nor an existing file (looked for {file})",
                              f"{path}.source")
        ds.source = str(file)


#: [task] keys that only some task kinds use (a kind lists those it uses in ``TaskKind.task_settings``).
_KIND_SETTINGS = ("labeled", "missing", "neighbors")


def _check_task(config: ExperimentConfig, data: dict[str, Any]) -> None:
    """A task experiment: a [task] table, [[estimators]] (names checked against the registry later, with the
    data), and none of the MKL benchmark's tables."""
    if config.task is None:
        raise ConfigError("[[estimators]] compare task estimators: add a [task] table with the task kind "
                          f"(kind = one of {', '.join(TASK_KINDS)})", "task")
    task = config.task
    if task.kind not in TASK_KINDS:
        close = difflib.get_close_matches(task.kind, list(TASK_KINDS), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"unknown task kind {task.kind!r}.{hint} Kinds: {', '.join(TASK_KINDS)}", "task.kind")
    for key in ("methods", "noisy_kernels", "paths", "kernels", "solver"):
        if key in data:
            raise ConfigError(f"a task experiment compares [[estimators]] by name; [{key}] belongs to MKL benchmark "
                              f"experiments (give an estimator's kernels and solver as its params)", key)
    check_entries([e.display_name for e in config.estimators], "estimators", "label", "estimator label")
    kind = task_kind(task.kind)
    if not task.missing:
        raise ConfigError("needs at least one fraction (0 for complete labels)", "task.missing")
    given = dict(data.get("task", {}))
    if task.missing != [0.0]:
        given.setdefault("missing", task.missing)
    for key in _KIND_SETTINGS:
        if key in given and key not in kind.task_settings:
            users = [name for name in TASK_KINDS if key in task_kind(name).task_settings]
            raise ConfigError(f"a setting of {' and '.join(users) or 'no'} tasks; this task is {task.kind}",
                              f"task.{key}")
    if task.folds and not kind.has_folds:
        raise ConfigError(f"{task.kind} tasks have no evaluation folds ({kind.no_folds_reason}); drop folds",
                          "task.folds")
    kind.check_task(task)
    if task.folds == 1:
        raise ConfigError("folds = 1 leaves no test fold; use 0 (one random split per repeat) or >= 2",
                          "task.folds")
    cv = config.experiment.cv_folds
    for i, e in enumerate(config.estimators):
        for key, values in e.grid.items():
            path = f"estimators[{i}].grid.{key}"
            if not values:
                raise ConfigError("needs at least one value", path)
            if len(values) > 1 and (cv == 0 or not kind.can_select):
                why = (f"{task.kind} tasks have no labels to choose parameters by" if not kind.can_select else
                       "no cross-validation to choose among them; set experiment.cv_folds >= 2")
                raise ConfigError(f"{len(values)} values but {why}; give one value", path)
            if key in e.params:
                raise ConfigError(f"{key!r} is both a parameter and a grid key; give it in one place", path)


def _check_methods(config: ExperimentConfig) -> None:
    check_entries([m.display_name for m in config.methods], "methods", "label", "method label")
    for i, m in enumerate(config.methods):
        check_grid(m.grid, f"methods[{i}].grid", config.experiment.cv_folds, "experiment.cv_folds")


def _check_figures(config: ExperimentConfig) -> None:
    names = {d.name for d in config.datasets}
    labels = [m.display_name for m in config.methods]
    noisy = config.noisy_kernels
    if noisy is not None:
        if noisy.dataset not in names:
            raise ConfigError(f"unknown data set {noisy.dataset!r}; [[datasets]] names: {', '.join(sorted(names))}",
                              "noisy_kernels.dataset")
        for j, label in enumerate(noisy.methods):
            if label not in labels:
                raise ConfigError(f"unknown method label {label!r}; labels: {', '.join(labels)}",
                                  f"noisy_kernels.methods[{j}]")
        if not noisy.ratios:
            raise ConfigError("needs at least one ratio", "noisy_kernels.ratios")
        for j, r in enumerate(noisy.ratios):
            if r < 0:
                raise ConfigError(f"must be 0 or more; got {r!r}", f"noisy_kernels.ratios[{j}]")
    for i, p in enumerate(config.paths):
        path = f"paths[{i}]"
        if p.dataset not in names:
            raise ConfigError(f"unknown data set {p.dataset!r}; [[datasets]] names: {', '.join(sorted(names))}",
                              f"{path}.dataset")
        if p.method not in labels:
            raise ConfigError(f"unknown method label {p.method!r}; labels: {', '.join(labels)}", f"{path}.method")
        check_grid_key(p.param, f"{path}.param")
        check_grid_values(p.values, f"{path}.values")
        for key, value in p.fixed.items():
            check_grid_key(key, f"{path}.fixed.{key}")
            check_grid_values([value], f"{path}.fixed.{key}")


def load_experiment_config(path: str | Path) -> ExperimentConfig:
    """Read and validate an experiment TOML file; relative paths in it are relative to its folder."""
    path = Path(path)
    return experiment_config_from_dict(read_toml(path), base_dir=path.resolve().parent)


def experiment_config_to_dict(config: ExperimentConfig) -> dict[str, Any]:
    """The configuration as a plain dict (``None`` values dropped; paths as resolved at load time)."""
    out = drop_none(attrs.asdict(config))
    if config.task is not None:  # the MKL benchmark's tables do not apply (and a task config refuses them)
        for key in ("methods", "noisy_kernels", "paths", "kernels", "solver"):
            out.pop(key, None)
    else:
        out.pop("estimators", None)
    return out
