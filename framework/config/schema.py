"""Declarative run configurations: TOML files or plain dicts turned into validated attrs classes.

Every error raised while reading a configuration is a :class:`~multikernel.errors.ConfigError` whose
message starts with the dotted key path of the offending entry and says what is allowed.
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import attrs
import tomli_w

from multikernel.errors import ConfigError

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
    "ModelConfig",
    "SolverConfig",
    "EvaluationConfig",
    "load_config",
    "config_from_dict",
    "config_to_dict",
    "config_to_toml",
    "default_config",
]

BUILTIN_DATASETS = ("breast_cancer", "wine", "iris", "digits")


def _positive(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"must be positive; got {value!r}")


def _fraction(instance: Any, attribute: attrs.Attribute, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"must be strictly between 0 and 1; got {value!r}")


def _check_models(value: list) -> None:
    if not value:
        raise ValueError("at least one [[models]] entry is needed")


def _check_folds(value: int) -> None:
    if value == 1 or value < 0:
        raise ValueError(f"must be 0 (no cross-validation) or at least 2; got {value!r}")


@attrs.define
class DataConfig:
    """Where the samples come from.

    ``source`` is a built-in data set name (``breast_cancer``, ``wine``, ``iris``, ``digits``) or a path
    to a CSV file (header row; the label in the last column, or in columns named ``label:*``) or to a
    LIBSVM/SVMlight file. ``format`` forces the file format; ``auto`` decides by the file extension
    (``.csv`` is CSV, anything else LIBSVM).
    """

    source: str = "breast_cancer"
    format: Literal["auto", "csv", "libsvm"] = "auto"


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
    backend: Literal["dense", "memmap", "lazy", "auto"] = "dense"
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
    """One model to fit: a method, its C, and optional overrides of its parts.

    ``label`` names the model in reports (defaults to the method name).
    """

    method: str = "l1mkl"
    C: float = attrs.field(default=1.0, validator=_positive)


@attrs.define
class SolverConfig:
    """Settings of the outer loop shared by every model."""

    tol: float = attrs.field(default=1e-3, validator=_positive)
    max_iter: int = attrs.field(default=200, validator=_positive)
    inner_tol: float = attrs.field(default=1e-3, validator=_positive)
    stopping: Literal["gap", "relative_change"] = "gap"


@attrs.define
class EvaluationConfig:
    """How models are evaluated: repeated stratified splits, and optional grid search by CV.

    ``grid`` maps estimator parameter names (``C``, ``regularizer__theta``, ...) to lists of values;
    it is searched by ``cv_folds``-fold cross-validation on the training part when ``cv_folds >= 2``.
    """

    test_fraction: float = attrs.field(default=0.3, validator=_fraction)
    repeats: int = attrs.field(default=1, validator=_positive)
    seed: int = 0
    cv_folds: int = attrs.field(default=0, validator=lambda i, a, v: _check_folds(v))
    grid: dict[str, list[Any]] = attrs.Factory(dict)
    n_jobs: Union[int, None] = None  # noqa: UP007


@attrs.define
class RunConfig:
    """A complete run: data, preprocessing, kernels, models, solver settings and evaluation."""

    data: DataConfig = attrs.Factory(DataConfig)
    preprocessing: PreprocessingConfig = attrs.Factory(PreprocessingConfig)
    kernels: KernelsConfig = attrs.Factory(KernelsConfig)
    models: list[ModelConfig] = attrs.field(factory=lambda: [ModelConfig()], validator=lambda i, a, v: _check_models(v))
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
        return _structure(tp, value, path)
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
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"got {value!r}; expected a string", path)
        return value
    raise ConfigError(f"unsupported type {tp!r}", path)  # pragma: no cover


def _structure(cls: type, data: Any, path: str) -> Any:
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


def config_from_dict(data: dict[str, Any]) -> RunConfig:
    """Validate a plain dict (the parsed TOML) and return a :class:`RunConfig`.

    A single ``[model]`` table is accepted as shorthand for a one-entry ``[[models]]`` list.
    """
    data = dict(data)
    if "model" in data:
        if "models" in data:
            raise ConfigError("give either [model] or [[models]], not both", "model")
        data["models"] = [data.pop("model")]
    config = _structure(RunConfig, data, "")
    _check_kernels(config.kernels)
    return config


def _check_kernels(kernels: KernelsConfig) -> None:
    if kernels.builders and kernels.family:
        # An explicit builder list replaces the family; keep the family key out of the way.
        kernels.family = None
    if not kernels.builders and not kernels.family:
        raise ConfigError("give a kernel 'family' or a non-empty list of [[kernels.builders]]", "kernels")


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
    """Read and validate a TOML configuration file."""
    return config_from_dict(read_toml(path))


def config_to_dict(config: RunConfig) -> dict[str, Any]:
    """The configuration as a plain dict (``None`` values dropped, as TOML has no null)."""
    return _drop_none(attrs.asdict(config))


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def config_to_toml(config: RunConfig) -> str:
    """The configuration as TOML text; ``config_from_dict(tomllib.loads(text))`` gives it back."""
    return tomli_w.dumps(config_to_dict(config))


def default_config() -> RunConfig:
    """The embedded default run of ``multikernel run`` (``multikernel/config/data/default.toml``)."""
    return load_config(Path(__file__).parent / "data" / "default.toml")
