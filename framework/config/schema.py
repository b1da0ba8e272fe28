"""Declarative run configurations: TOML files or plain dicts turned into validated attrs classes.

Every error raised while reading a configuration is a :class:`~multikernel.errors.ConfigError` whose
message starts with the dotted key path of the offending entry and says what is allowed.

This module also holds what run and experiment configurations share (:mod:`multikernel.experiments.config`
builds on it): the dict-to-attrs machinery (:func:`structure`), the value validators, the relative-path rule
(:func:`resolve_path`) and the grid rules (:data:`PARAM_PATTERN`, :func:`evaluate_value`, :func:`check_grid`).
What parsing cannot see (plugin names, kernel parameters, grid points, the data) is checked by
:mod:`multikernel.config.checks`.
"""

from __future__ import annotations

import ast
import numbers
import operator
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import attrs
import tomli_w

from multikernel.config.datasets import BUILTIN_LOADERS
from multikernel.config.task_data import TASK_GENERATORS
from multikernel.core.validation import positive, positive_integer
from multikernel.errors import ConfigError
from multikernel.solve.fit import SolveSettings as SolverConfig  # [solver]: the fit core's settings, one class

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "RunConfig",
    "DataConfig",
    "PreprocessingConfig",
    "KernelSpec",
    "KernelsConfig",
    "PartConfig",
    "MethodParts",
    "ModelConfig",
    "SolverConfig",
    "EvaluationConfig",
    "TaskConfig",
    "load_config",
    "config_from_dict",
    "config_to_dict",
    "config_to_toml",
    "default_config",
    "read_toml",
    "structure",
    "drop_none",
    "resolve_path",
    "check_kernels_choice",
    "check_entries",
    "PARAM_PATTERN",
    "evaluate_value",
    "check_grid",
    "positive",
    "positive_integer",
    "fraction",
    "non_negative",
    "valid_folds",
    "valid_n_jobs",
]


# --------------------------------------------------------------------------------------------------
# value validators (attrs validators: they raise ValueError, turned into ConfigError with the key path)
# --------------------------------------------------------------------------------------------------
def fraction(instance: Any, attribute: attrs.Attribute, value: float) -> None:
    """A number strictly between 0 and 1."""
    if not 0.0 < value < 1.0:
        raise ValueError(f"must be strictly between 0 and 1; got {value!r}")


def non_negative(instance: Any, attribute: attrs.Attribute, value: int) -> None:
    """0 or more."""
    if value < 0:
        raise ValueError(f"must be 0 or more; got {value!r}")


def valid_folds(instance: Any, attribute: attrs.Attribute, value: int) -> None:
    """0 (no cross-validation) or at least 2 folds."""
    if value == 1 or value < 0:
        raise ValueError(f"must be 0 (no cross-validation: every grid key then has one value) or at least 2; "
                         f"got {value!r}")


def valid_eval_folds(instance: Any, attribute: attrs.Attribute, value: int) -> None:
    """0 (one held-out split per repeat) or at least 2 evaluation folds."""
    if value == 1 or value < 0:
        raise ValueError(f"must be 0 (one held-out split per repeat, test_fraction) or at least 2 folds; "
                         f"got {value!r}")


def missing_fraction(instance: Any, attribute: attrs.Attribute, value: float) -> None:
    """A fraction in [0, 1)."""
    if not 0.0 <= value < 1.0:
        raise ValueError(f"must lie in [0, 1); got {value!r}")


def valid_n_jobs(instance: Any, attribute: attrs.Attribute, value: int | None) -> None:
    """``None``, a positive number of jobs, or a negative one counted from the cores as joblib does."""
    if value == 0:
        raise ValueError("must be a positive number of parallel jobs, or negative as in joblib (-1: every "
                         "core, -2: all but one); 0 would run nothing")


@attrs.define
class DataConfig:
    """Where the samples come from.

    ``source`` is a built-in data set name (``breast_cancer``, ``wine``, ``iris``, ``digits``), a generator
    (its arguments in ``params``), or a path to a CSV file (the label in the last column or the column
    ``label``; a 0/1 label matrix in columns named ``label:<name>``; the bag of each instance in a column
    ``bag``) or to a LIBSVM/SVMlight file. ``format`` forces the file format; ``auto`` decides by the file
    extension (``.csv`` is CSV, anything else LIBSVM).  ``classes`` keeps the samples of these classes,
    ``positive`` turns the labels into 1 (these classes) and 0; ``features`` and ``privileged`` select CSV
    columns by name prefix for the features and for a second (privileged) view
    (:func:`multikernel.config.task_data.load_task_data` reads them, as for experiments).
    """

    source: str = "breast_cancer"
    format: Literal["auto", "csv", "libsvm"] = "auto"
    params: Union[dict[str, Any], None] = None  # noqa: UP007 (inspected at run time)
    classes: Union[list[Any], None] = None  # noqa: UP007
    positive: Union[list[Any], None] = None  # noqa: UP007
    features: Union[list[str], None] = None  # noqa: UP007
    privileged: Union[list[str], None] = None  # noqa: UP007


@attrs.define
class TaskConfig:
    """The ``[task]`` table of a run: the task kind and its settings.

    ``kind`` is a registered task kind (:data:`multikernel.core.tasks.TASK_KINDS`); without it, the kind of
    the ``[[models]]`` estimators, or ``"classification"``.  ``missing`` (``multilabel_ranking``: the fraction
    of each training sample's relevant labels removed), ``labeled`` (``ssl``: the number of labelled
    samples drawn per repeat) and ``neighbors`` (``metric``: the k of the k-NN accuracy) apply to the kinds
    that use them; ``select_by`` is the measure that chooses grid points (the kind's first by default).
    """

    kind: Union[str, None] = None  # noqa: UP007
    missing: Union[float, None] = attrs.field(default=None,  # noqa: UP007
                                              validator=attrs.validators.optional(missing_fraction))
    labeled: Union[int, None] = attrs.field(default=None,  # noqa: UP007
                                            validator=attrs.validators.optional(positive_integer))
    neighbors: Union[int, None] = attrs.field(default=None,  # noqa: UP007
                                              validator=attrs.validators.optional(positive_integer))
    select_by: Union[str, None] = None  # noqa: UP007




@attrs.define
class PreprocessingConfig:
    """Per-feature standardization, fitted on the training part only."""

    standardize: bool = True


@attrs.define
class KernelSpec:
    """One kernel builder: a registered builder name, its parameters, and the feature subset.

    ``columns`` is ``"all"``, ``"each"`` (one kernel per single feature), or a list of column indices.
    """

    name: str
    params: dict[str, Any] = attrs.Factory(dict)
    columns: Union[Literal["all", "each"], list[int]] = "all"  # noqa: UP007 (inspected at run time)


@attrs.define
class KernelsConfig:
    """The base kernels: a named family, or an explicit list of builders (not both)."""

    family: Union[str, None] = "rbf_poly"  # noqa: UP007
    family_params: dict[str, Any] = attrs.Factory(dict)
    builders: list[KernelSpec] = attrs.Factory(list)
    normalize: Literal["none", "trace", "unit_diagonal", "center"] = "trace"
    dtype: Literal["float64", "float32"] = "float64"
    backend: Literal["dense", "memmap", "lazy", "factored", "auto"] = "dense"
    memory_budget: Union[str, int, None] = None  # noqa: UP007


@attrs.define
class PartConfig:
    """A plugin by name with its parameters (used to override a method's loss, regularizer or solver)."""

    name: str
    params: dict[str, Any] = attrs.Factory(dict)


@attrs.define(kw_only=True)
class MethodParts:
    """A report label and optional overrides of a method's loss, regularizer and solver.

    Shared by ``[[models]]`` entries of run configs and ``[[methods]]`` entries of experiment configs;
    subclasses add the ``method`` name.
    """

    label: Union[str, None] = None  # noqa: UP007
    loss: Union[PartConfig, None] = None  # noqa: UP007
    regularizer: Union[PartConfig, None] = None  # noqa: UP007
    solver: Union[PartConfig, None] = None  # noqa: UP007

    @property
    def display_name(self) -> str:
        """``label``, or the method name."""
        return self.label or self.method  # type: ignore[attr-defined]


@attrs.define(kw_only=True)
class ModelConfig(MethodParts):
    """One model to fit: an MKL method with its C, ``multiclass`` and optional overrides of its parts, or a
    registered task estimator (``estimator``) with its ``params``.

    ``label`` names the model in reports (defaults to the method or estimator name).  ``grid`` maps
    parameters to lists of values searched by cross-validation for this model only (MKL methods: the keys of
    ``evaluation.grid``; estimators: any parameter of the estimator).
    """

    method: str = "l1mkl"
    C: float = attrs.field(default=1.0, validator=positive)
    multiclass: Union[Literal["ovr", "shared"], None] = None  # noqa: UP007
    estimator: Union[str, None] = None  # noqa: UP007
    params: Union[dict[str, Any], None] = None  # noqa: UP007
    grid: Union[dict[str, list[Any]], None] = None  # noqa: UP007

    @property
    def display_name(self) -> str:
        """``label``, or the estimator's or the method's name."""
        return self.label or self.estimator or self.method


@attrs.define
class EvaluationConfig:
    """How models are evaluated: repeated splits (or ``folds``-fold cross-validation), and optional grid
    search by CV.

    Each repeat holds out ``test_fraction`` of the samples (split as the task kind splits: stratified by
    class, whole bags, ...), or with ``folds >= 2`` evaluates on each of ``folds`` folds.  ``grid`` maps ``C``
    and ``loss__<name>``, ``regularizer__<name>``, ``solver__<name>`` (a parameter of that part of each model's
    method; for a task estimator, its parameter) to lists of values, numbers or expressions in ``M``
    (``"1/M"``); it is searched by ``cv_folds``-fold cross-validation on the training part, by the task's
    selection measure.  With ``cv_folds = 0`` every key has one value, which is simply applied.
    """

    test_fraction: float = attrs.field(default=0.3, validator=fraction)
    repeats: int = attrs.field(default=1, validator=positive_integer)
    seed: int = 0
    cv_folds: int = attrs.field(default=0, validator=valid_folds)
    grid: dict[str, list[Any]] = attrs.Factory(dict)
    n_jobs: Union[int, None] = attrs.field(default=None, validator=valid_n_jobs)  # noqa: UP007
    folds: int = attrs.field(default=0, validator=valid_eval_folds)


@attrs.define
class RunConfig:
    """A complete run: data, task, preprocessing, kernels, models, solver settings and evaluation."""

    data: DataConfig = attrs.Factory(DataConfig)
    task: Union[TaskConfig, None] = None  # noqa: UP007
    preprocessing: PreprocessingConfig = attrs.Factory(PreprocessingConfig)
    kernels: KernelsConfig = attrs.Factory(KernelsConfig)
    models: list[ModelConfig] = attrs.Factory(lambda: [ModelConfig()])
    solver: SolverConfig = attrs.Factory(SolverConfig)
    evaluation: EvaluationConfig = attrs.Factory(EvaluationConfig)


# --------------------------------------------------------------------------------------------------
# dict -> attrs, with key paths in every error
# --------------------------------------------------------------------------------------------------
def _type_name(tp: Any) -> str:
    if tp is Any:
        return "values"
    origin = get_origin(tp)
    if origin is Literal:
        return " or ".join(repr(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in get_args(tp) if a is not type(None))
    if origin is list:
        return f"a list ({_type_name(get_args(tp)[0])})"
    if origin is dict:
        return "a table"
    if attrs.has(tp):
        return "a table"
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false"}.get(tp, str(tp))


def _convert(value: Any, tp: Any, path: str) -> Any:
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin is Literal:
        if value not in get_args(tp):
            raise ConfigError(f"got {value!r}; allowed: {_type_name(tp)}", path)
        return value
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        if value is None and type(None) in args:
            return None
        candidates = [a for a in args if a is not type(None)]
        if len(candidates) == 1:
            return _convert(value, candidates[0], path)
        for arg in candidates:
            try:
                return _convert(value, arg, path)
            except ConfigError:
                continue
        raise ConfigError(f"got {value!r}; expected {_type_name(tp)}", path)
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"got {value!r}; expected {_type_name(tp)}", path)
        (item,) = get_args(tp)
        return [_convert(v, item, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"got {value!r}; expected a table", path)
        _, vt = get_args(tp)
        return {str(k): _convert(v, vt, f"{path}.{k}") for k, v in value.items()}
    if attrs.has(tp):
        return structure(tp, value, path)
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"got {value!r}; expected true or false", path)
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"got {value!r}; expected an integer", path)
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"got {value!r}; expected a number", path)
        return value  # an integer stays one: `C = 8` is reported as 8, not 8.0
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"got {value!r}; expected a string", path)
        return value
    raise ConfigError(f"unsupported type {tp!r}", path)  # pragma: no cover


def structure(cls: type, data: Any, path: str) -> Any:
    """Build the attrs class ``cls`` from the dict ``data`` (a parsed TOML table), checking every key and
    value; ``path`` is the key path of ``data`` (``""`` at the top level).

    Raises
    ------
    ConfigError
        Naming the key path of the first unknown, missing, mistyped or invalid entry.
    """
    where = path or "(top level)"
    if not isinstance(data, dict):
        raise ConfigError(f"expected a table, got {data!r}", where)
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in attrs.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(f"unknown key(s) {', '.join(map(repr, unknown))}; allowed keys: "
                          f"{', '.join(fields)}", where)
    kwargs = {}
    for name, value in data.items():
        kwargs[name] = _convert(value, hints[name], f"{path}.{name}" if path else name)
    missing = [n for n, f in fields.items() if f.default is attrs.NOTHING and n not in kwargs]
    if missing:
        raise ConfigError(f"missing required key(s) {', '.join(map(repr, missing))}", where)
    try:
        return cls(**kwargs)
    except ValueError as exc:
        key = _failing_key(exc, cls, kwargs)
        raise ConfigError(str(exc), f"{path}.{key}" if path and key else (key or where)) from exc


def _failing_key(exc: ValueError, cls: type, kwargs: dict[str, Any]) -> str:
    """Find which field's validator raised, by re-running the validators one by one."""
    for f in attrs.fields(cls):
        if f.validator is not None and f.name in kwargs:
            try:
                f.validator(None, f, kwargs[f.name])
            except ValueError:
                return f.name
    return ""


def config_from_dict(data: dict[str, Any], base_dir: str | Path | None = None) -> RunConfig:
    """Validate a plain dict (the parsed TOML) and return a :class:`RunConfig`.

    A single ``[model]`` table is accepted as shorthand for a one-entry ``[[models]]`` list.  A relative
    ``data.source`` file path is resolved against ``base_dir`` (the configuration file's folder; the current
    directory when ``None``) and stored as an absolute path.
    """
    data = dict(data)
    if "model" in data:
        if "models" in data:
            raise ConfigError("give either [model] or [[models]], not both", "model")
        data["models"] = [data.pop("model")]
    config = structure(RunConfig, data, "")
    check_entries([m.display_name for m in config.models], "models", "label", "model label")
    check_kernels_choice(config.kernels)
    check_grid(config.evaluation.grid, "evaluation.grid", config.evaluation.cv_folds, "evaluation.cv_folds")
    for i, (given, model) in enumerate(zip(data.get("models", [{}]), config.models, strict=True)):
        _check_model(given, model, config.evaluation, f"models[{i}]")
    source = config.data.source
    if config.data.params is not None and source not in TASK_GENERATORS:
        raise ConfigError(f"params are for generated data sets ({', '.join(TASK_GENERATORS)}); {source!r} is not "
                          f"one", "data.params")
    if source not in BUILTIN_LOADERS and source not in TASK_GENERATORS:
        config.data.source = resolve_path(source, base_dir)
    return config


#: The keys of a [[models]] entry that describe an MKL method (an estimator entry takes its parameters in params).
_METHOD_KEYS = ("method", "C", "multiclass", "loss", "regularizer", "solver")


def _check_model(given: dict[str, Any], model: ModelConfig, evaluation: EvaluationConfig, path: str) -> None:
    """A [[models]] entry is an MKL method or a task estimator, and its own grid is searchable."""
    if model.estimator is not None:
        for key in _METHOD_KEYS:
            if key in given:
                raise ConfigError(f"a key of MKL method models; an estimator ({model.estimator!r}) takes its "
                                  f"parameters in params, e.g. params = {{ C = 10 }}", f"{path}.{key}")
    elif model.params is not None:
        raise ConfigError("params are the parameters of a task estimator (estimator = NAME); an MKL method takes "
                          "C, multiclass and loss/regularizer/solver overrides", f"{path}.params")
    grid = model.grid or {}
    for key, values in grid.items():
        where = f"{path}.grid.{key}"
        if model.estimator is None:
            check_grid_key(key, where)
            check_grid_values(values, where)
        elif not values:
            raise ConfigError("needs at least one value", where)
        if evaluation.cv_folds == 0 and len(values) > 1:
            raise ConfigError(f"{len(values)} values but no cross-validation to choose among them; set "
                              f"evaluation.cv_folds >= 2, or give one value", where)
        if key in evaluation.grid:
            raise ConfigError(f"{key!r} is also a key of evaluation.grid; give it in one place", where)
        if key in (model.params or {}):
            raise ConfigError(f"{key!r} is both a parameter and a grid key; give it in one place", where)


def resolve_path(path: str, base_dir: str | Path | None) -> str:
    """A path written in a configuration, as an absolute path: relative paths are relative to the
    configuration file's folder ``base_dir`` (the current directory when ``None``), as TOML tools do."""
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    return str((base / Path(path).expanduser()).resolve())


def check_entries(names: list[str], path: str, key: str, what: str) -> None:
    """An array of tables at ``path`` has at least one entry, and no two with the same name (``key``)."""
    if not names:
        raise ConfigError(f"at least one [[{path}]] entry is needed", path)
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise ConfigError(f"duplicate {what} {name!r}; give each entry its own {key}", f"{path}[{i}].{key}")
        seen.add(name)


def check_kernels_choice(kernels: KernelsConfig) -> None:
    """A family or a builder list: an explicit list replaces the family (set to ``None``)."""
    if kernels.builders and kernels.family:
        kernels.family = None
    if not kernels.builders and not kernels.family:
        raise ConfigError("give a kernel 'family' or a non-empty list of [[kernels.builders]]", "kernels")


# --------------------------------------------------------------------------------------------------
# grids: keys, values (numbers or arithmetic in M) and the cross-validation they need
# --------------------------------------------------------------------------------------------------
PARAM_PATTERN = re.compile(r"^(C|(loss|regularizer|solver)__[A-Za-z_][A-Za-z0-9_]*)$")
"""A grid key: ``C`` (the SVM cost, set on the loss) or ``<part>__<parameter>`` of the loss, regularizer or
solver."""

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
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
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
    except OverflowError:
        raise ValueError(f"{value!r} is too large") from None


def check_grid_key(key: str, path: str) -> None:
    """``key`` is ``C`` or ``<part>__<name>``; else a :class:`ConfigError` at ``path``."""
    if not PARAM_PATTERN.match(key):
        raise ConfigError(f"{key!r} is not a parameter name; use C, or loss__<name>, regularizer__<name>, "
                          f"solver__<name> (for example regularizer__theta)", path)


def check_grid_values(values: list[Any], path: str) -> None:
    """At least one value, each a number or an expression in ``M``; else a :class:`ConfigError`."""
    if not values:
        raise ConfigError("needs at least one value", path)
    for j, v in enumerate(values):
        try:
            evaluate_value(v)
        except ValueError as exc:
            raise ConfigError(str(exc), f"{path}[{j}]") from None


def check_grid(grid: dict[str, list[Any]], path: str, folds: int, folds_path: str) -> None:
    """The syntax of a grid, and the cross-validation it needs: with ``folds = 0`` nothing selects among
    several values, so every key must have one (a grid is never silently ignored)."""
    for key, values in grid.items():
        check_grid_key(key, f"{path}.{key}")
        check_grid_values(values, f"{path}.{key}")
        if folds == 0 and len(values) > 1:
            raise ConfigError(f"{len(values)} values but no cross-validation to choose among them; set "
                              f"{folds_path} >= 2, or give one value", f"{path}.{key}")


# --------------------------------------------------------------------------------------------------
# files
# --------------------------------------------------------------------------------------------------
def read_toml(path: str | Path) -> dict[str, Any]:
    """Parse a TOML file; a missing, unreadable or malformed file is a :class:`ConfigError`."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"configuration file {str(path)!r} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file {str(path)!r}: {exc}") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc


def load_config(path: str | Path) -> RunConfig:
    """Read and validate a TOML configuration file; relative paths in it are relative to its folder."""
    return config_from_dict(read_toml(path), base_dir=Path(path).resolve().parent)


def config_to_dict(config: RunConfig) -> dict[str, Any]:
    """The configuration as a plain dict (``None`` values dropped, as TOML has no null; an estimator entry of
    ``[[models]]`` without the method keys, which do not apply to it)."""
    out = drop_none(attrs.asdict(config))
    for model in out["models"]:
        if "estimator" in model:
            for key in _METHOD_KEYS:
                model.pop(key, None)
    return out


def drop_none(value: Any) -> Any:
    """``value`` with the ``None`` entries of its dicts dropped, recursively (TOML has no null)."""
    if isinstance(value, dict):
        return {k: drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_none(v) for v in value]
    return value


def config_to_toml(config: RunConfig) -> str:
    """The configuration as TOML text; ``config_from_dict(tomllib.loads(text))`` gives it back."""
    return tomli_w.dumps(config_to_dict(config))


def default_config() -> RunConfig:
    """The embedded default run of ``multikernel run``: the example ``soft_margin``
    (``multikernel/config/data/examples/soft_margin.toml``)."""
    return load_config(Path(__file__).parent / "data" / "examples" / "soft_margin.toml")
