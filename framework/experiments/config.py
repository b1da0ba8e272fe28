"""Experiment configurations: data sets x methods (each with its own grid) x repeats, as TOML or a dict.

The tables ``[preprocessing]``, ``[kernels]`` and ``[solver]`` are the ones of a run configuration
(:mod:`multikernel.config.schema`) and are validated by the same machinery: every error is a
:class:`~multikernel.errors.ConfigError` whose message starts with the key path of the offending entry.

Grid values are numbers or small arithmetic expressions in ``M``, the number of base kernels of the data set
(``"1/M"``, ``"2/M"``, ``"32/31"``); they are resolved per data set, once the kernels are known.
"""

from __future__ import annotations

import ast
import operator
import re
from pathlib import Path
from typing import Any, Literal, Union

import attrs

from multikernel.config.datasets import BUILTIN_LOADERS, GENERATORS
from multikernel.config.schema import (
    KernelsConfig,
    MethodParts,
    PreprocessingConfig,
    SolverConfig,
    _check_kernels,
    _drop_none,
    _structure,
    read_toml,
)
from multikernel.errors import ConfigError

__all__ = [
    "ExperimentConfig",
    "ExperimentSettings",
    "DatasetSpec",
    "MethodSpec",
    "NoisyKernelsConfig",
    "PathConfig",
    "load_experiment_config",
    "experiment_config_from_dict",
    "experiment_config_to_dict",
    "evaluate_value",
    "PARAM_PATTERN",
]

# A grid key: ``C`` (the SVM cost, set on the loss) or ``<part>__<parameter>`` of the loss, regularizer or solver.
PARAM_PATTERN = re.compile(r"^(C|(loss|regularizer|solver)__[A-Za-z_][A-Za-z0-9_]*)$")
DEFAULT_RATIOS = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2]


def _positive(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"must be positive; got {value!r}")


def _fraction(instance: Any, attribute: attrs.Attribute, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"must be strictly between 0 and 1; got {value!r}")


def _folds(instance: Any, attribute: attrs.Attribute, value: int) -> None:
    if value == 1 or value < 0:
        raise ValueError(f"must be 0 (no model selection: every grid must have one value) or at least 2; "
                         f"got {value!r}")


def _non_negative(instance: Any, attribute: attrs.Attribute, value: int) -> None:
    if value < 0:
        raise ValueError(f"must be 0 or more; got {value!r}")


@attrs.define
class ExperimentSettings:
    """The ``[experiment]`` table: protocol and bookkeeping shared by every data set and method.

    ``output`` is relative to the configuration file's folder.  ``selection_threshold`` defines a
    "selected" kernel: its share ``mu_m / sum(mu)`` exceeds the threshold (shares make the count
    comparable between domains, e.g. the simplex and the l2 ball).  ``cross_block_mb`` bounds the memory
    of one block of test x train cross kernels (they are computed block by block).
    """

    name: str = "experiment"
    output: str = "results"
    benchmark: bool = True
    repeats: int = attrs.field(default=10, validator=_positive)
    test_fraction: float = attrs.field(default=0.3, validator=_fraction)
    cv_folds: int = attrs.field(default=5, validator=_folds)
    seed: int = 0
    n_jobs: Union[int, None] = None  # noqa: UP007 (inspected at run time)
    selection_threshold: float = attrs.field(default=1e-5, validator=_positive)
    warm_start: bool = True
    cross_block_mb: float = attrs.field(default=256.0, validator=_positive)


@attrs.define
class DatasetSpec:
    """One ``[[datasets]]`` entry.

    ``source`` is a built-in data set (``breast_cancer``, ...), a generator (``ringnorm``; its arguments in
    ``params``), or a CSV/LIBSVM file path relative to the configuration file.  ``train_size`` (a number of
    samples) replaces ``test_fraction`` for this data set, as in the IDA benchmark's fixed training sizes.
    """

    name: str
    source: str
    format: Literal["auto", "csv", "libsvm"] = "auto"
    params: dict[str, Any] = attrs.Factory(dict)
    train_size: Union[int, None] = attrs.field(default=None, validator=_positive)  # noqa: UP007


@attrs.define(kw_only=True)
class MethodSpec(MethodParts):
    """One ``[[methods]]`` entry: a registered method, optional part overrides and its own grid.

    ``grid`` maps ``C`` and ``loss__*``/``regularizer__*``/``solver__*`` parameters to lists of values.
    """

    method: str
    grid: dict[str, list[Any]] = attrs.Factory(dict)


@attrs.define
class NoisyKernelsConfig:
    """The ``[noisy_kernels]`` experiment: split ``repeat`` of ``dataset`` with ``round(r d)`` random
    standard-normal features appended, for each ratio ``r``; ``methods`` are labels (all when empty)."""

    dataset: str
    ratios: list[float] = attrs.Factory(lambda: list(DEFAULT_RATIOS))
    methods: list[str] = attrs.Factory(list)
    repeat: int = attrs.field(default=0, validator=_non_negative)


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
    repeat: int = attrs.field(default=0, validator=_non_negative)


@attrs.define
class ExperimentConfig:
    """A complete experiment: protocol, data sets, kernels, methods and the optional figure experiments."""

    datasets: list[DatasetSpec]
    methods: list[MethodSpec]
    experiment: ExperimentSettings = attrs.Factory(ExperimentSettings)
    preprocessing: PreprocessingConfig = attrs.Factory(PreprocessingConfig)
    kernels: KernelsConfig = attrs.Factory(lambda: KernelsConfig(family="simplemkl"))
    solver: SolverConfig = attrs.Factory(SolverConfig)
    noisy_kernels: Union[NoisyKernelsConfig, None] = None  # noqa: UP007
    paths: list[PathConfig] = attrs.Factory(list)

    def method(self, label: str) -> MethodSpec:
        """The ``[[methods]]`` entry labelled ``label``."""
        return next(m for m in self.methods if m.display_name == label)

    def dataset(self, name: str) -> DatasetSpec:
        """The ``[[datasets]]`` entry named ``name``."""
        return next(d for d in self.datasets if d.name == name)


# --------------------------------------------------------------------------------------------------
# grid values: numbers or arithmetic in M
# --------------------------------------------------------------------------------------------------
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos}


def evaluate_value(value: Any, n_kernels: int | None = None) -> Any:
    """A grid value as used: numbers as they are, strings as arithmetic in ``M`` (``"1/M"``, ``"32/31"``,
    ``"inf"``).  With ``n_kernels=None`` only the syntax is checked (``M`` evaluates to 1).

    Raises
    ------
    ValueError
        For anything but numbers, ``M``, ``inf``, ``+ - * / **`` and parentheses.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"got {value!r}; expected a number or an expression in M such as '1/M'")
    if not isinstance(value, str):
        return value
    try:
        tree = ast.parse(value.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"cannot read {value!r}; expected a number or an expression in M such as '1/M'") from None
    names = {"M": float(n_kernels if n_kernels is not None else 1), "inf": float("inf")}

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(
                node.value, bool):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id in names:
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.operand))
        raise ValueError(f"{value!r}: only numbers, M (the number of kernels), inf and + - * / ** are allowed")

    try:
        return walk(tree)
    except ZeroDivisionError:
        raise ValueError(f"{value!r} divides by zero") from None


# --------------------------------------------------------------------------------------------------
# loading and checks
# --------------------------------------------------------------------------------------------------
def experiment_config_from_dict(data: dict[str, Any], base_dir: str | Path | None = None) -> ExperimentConfig:
    """Validate a plain dict (the parsed TOML) and return an :class:`ExperimentConfig`.

    Relative file paths (data set files, ``experiment.output``) are resolved against ``base_dir`` (the
    current directory when ``None``) and stored as absolute paths.
    """
    config = _structure(ExperimentConfig, dict(data), "")
    _check_kernels(config.kernels)
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    _check_settings(config)
    _check_datasets(config, base)
    _check_methods(config)
    _check_figures(config)
    config.experiment.output = str((base / config.experiment.output).resolve())
    return config


def _check_settings(config: ExperimentConfig) -> None:
    ex = config.experiment
    if not ex.benchmark and config.noisy_kernels is None and not config.paths:
        raise ConfigError("nothing to run: benchmark = false and no [noisy_kernels] or [[paths]]",
                          "experiment.benchmark")


def _check_datasets(config: ExperimentConfig, base: Path) -> None:
    if not config.datasets:
        raise ConfigError("at least one [[datasets]] entry is needed", "datasets")
    seen: set[str] = set()
    for i, ds in enumerate(config.datasets):
        path = f"datasets[{i}]"
        if ds.name in seen:
            raise ConfigError(f"duplicate data set name {ds.name!r}", f"{path}.name")
        seen.add(ds.name)
        if ds.source in GENERATORS:
            continue
        if ds.params:
            raise ConfigError(f"params are for generated data sets ({', '.join(GENERATORS)}); {ds.source!r} is "
                              f"not one", f"{path}.params")
        if ds.source in BUILTIN_LOADERS:
            continue
        file = (base / ds.source).resolve()
        if not file.is_file():
            raise ConfigError(f"{ds.source!r} is neither a built-in data set ({', '.join(BUILTIN_LOADERS)}), a "
                              f"generator ({', '.join(GENERATORS)}) nor an existing file (looked for {file})",
                              f"{path}.source")
        ds.source = str(file)


def _check_grid_key(key: str, path: str) -> None:
    if not PARAM_PATTERN.match(key):
        raise ConfigError(f"{key!r} is not a parameter name; use C, or loss__<name>, regularizer__<name>, "
                          f"solver__<name> (for example regularizer__theta)", path)


def _check_values(values: list[Any], path: str) -> None:
    if not values:
        raise ConfigError("needs at least one value", path)
    for j, v in enumerate(values):
        try:
            evaluate_value(v)
        except ValueError as exc:
            raise ConfigError(str(exc), f"{path}[{j}]") from None


def _check_methods(config: ExperimentConfig) -> None:
    if not config.methods:
        raise ConfigError("at least one [[methods]] entry is needed", "methods")
    seen: set[str] = set()
    for i, m in enumerate(config.methods):
        path = f"methods[{i}]"
        if m.display_name in seen:
            raise ConfigError(f"duplicate method label {m.display_name!r}; give each entry its own label",
                              f"{path}.label")
        seen.add(m.display_name)
        for key, values in m.grid.items():
            _check_grid_key(key, f"{path}.grid.{key}")
            _check_values(values, f"{path}.grid.{key}")
            if config.experiment.cv_folds == 0 and len(values) > 1:
                raise ConfigError("several values need model selection; set experiment.cv_folds >= 2",
                                  f"{path}.grid.{key}")


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
        _check_grid_key(p.param, f"{path}.param")
        _check_values(p.values, f"{path}.values")
        for key, value in p.fixed.items():
            _check_grid_key(key, f"{path}.fixed.{key}")
            _check_values([value], f"{path}.fixed.{key}")


def load_experiment_config(path: str | Path) -> ExperimentConfig:
    """Read and validate an experiment TOML file; relative paths in it are relative to its folder."""
    path = Path(path)
    return experiment_config_from_dict(read_toml(path), base_dir=path.resolve().parent)


def experiment_config_to_dict(config: ExperimentConfig) -> dict[str, Any]:
    """The configuration as a plain dict (``None`` values dropped; paths as resolved at load time)."""
    return _drop_none(attrs.asdict(config))
