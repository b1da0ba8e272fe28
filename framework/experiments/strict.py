"""Strict validation: the result-deciding parts of a configuration that it leaves to a default.

A published number must not change when a default of the library changes (a method preset's solver, an
estimator's default, a generator's size).  :func:`unpinned` lists every part of a run or experiment
configuration that decides its results and that the file does not give, with the value it takes today;
``multikernel validate --strict`` reports them (exit 2) so that a committed configuration can pin them.

What decides a result, and is therefore reported when left out:

* **the protocol**: ``seed``, ``repeats``, ``test_fraction`` (where a split uses it), ``cv_folds`` (where a grid
  has several points), ``warm_start`` and ``warm_order`` (likewise), ``selection_threshold`` (the count of
  selected kernels), ``[task]``'s ``folds``, the kind's settings (``missing``, ``labeled``, ``neighbors``) and
  ``select_by`` (where a grid is searched), the noisy-kernel ``ratios`` and ``repeat``, a path's ``repeat``;
* **the data**: ``[preprocessing] standardize`` and every parameter of a generator (its seed is the
  experiment's ``seed``);
* **the kernels**: ``family`` or ``builders``, every parameter of the family or of each builder, ``normalize``
  and ``dtype``;
* **the fit**: every setting of ``[solver]`` (``tol``, ``max_iter``, ``inner_tol``, ``stopping``, ...);
* **each method or model**: its ``loss``, ``regularizer`` and ``solver`` by name (a method preset may change
  them) and every parameter of each (``C`` included), in the part's ``params``, in a grid or in a path;
* **each task estimator**: every parameter except those that only change speed, memory or output
  (:data:`NOT_DECIDING`), in its ``params`` or ``grid``; a kernel, loss, regularizer or solver given as a table
  has each of its parameters checked the same way.

A parameter whose default is ``None`` (a value derived at fit time, which TOML cannot write) is not reported,
except ``C``, the parts and seeds (``random_state``), whose ``None`` means a preset's value or no seed.  A part
given by name in an estimator's ``params`` (an IOKL ``solver``, which takes names only) is pinned by its name,
except an unseeded one: its ``random_state`` is reported.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from multikernel.config.examples import EXAMPLES_DIR, load_example
from multikernel.config.generators import BENCHMARK_GENERATORS, TASK_GENERATORS, generator_parameters
from multikernel.config.schema import EvaluationConfig, KernelsConfig, ModelConfig, PreprocessingConfig, read_toml
from multikernel.core.registry import get_registry
from multikernel.core.tasks import task_kind
from multikernel.errors import ConfigError, PluginError
from multikernel.experiments.config import (
    ExperimentSettings,
    NoisyKernelsConfig,
    PathConfig,
    TaskSettings,
    is_experiment_config,
)
from multikernel.solve.fit import SolveSettings

__all__ = ["Unpinned", "unpinned", "check_strict", "strict_source", "NOT_DECIDING"]

NOT_DECIDING = frozenset({"verbose", "n_jobs", "cache_size", "kernel_backend", "memory_budget", "copy_x",
                          "validate", "accept_sparse", "check_inverse", "feature_names_out"})
"""Estimator parameters that change speed, memory, logging or input checks, never a result."""

#: Parameters reported even when their default is None: None there is a preset's value, or no seed.
_NONE_DECIDES = frozenset({"C", "loss", "regularizer", "solver", "random_state"})
_PARTS = ("loss", "regularizer", "solver")
_EXPERIMENT, _TASK = ExperimentSettings(), TaskSettings(kind="")
#: The example that is the embedded default run (multikernel.config.schema.default_config).
DEFAULT_EXAMPLE = "soft_margin"


@attrs.frozen
class Unpinned:
    """A result-deciding part left to a default: where to pin it and the value it takes today."""

    path: str
    default: Any

    def __str__(self) -> str:
        return f"{self.path} (default today: {self.default!r})"


def _decides(name: str, default: Any) -> bool:
    return name not in NOT_DECIDING and (default is not None or name in _NONE_DECIDES) \
        and default is not inspect.Parameter.empty


class _Finder:
    """Collects the unpinned parts of one configuration (``data``: the parsed TOML, before defaults)."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data
        self.found: list[Unpinned] = []
        self.registry = get_registry()

    def need(self, table: Mapping[str, Any], key: str, path: str, default: Any) -> None:
        if key not in table:
            self.found.append(Unpinned(path, default))

    # -- shared tables ----------------------------------------------------------------------------------
    def preprocessing(self) -> None:
        self.need(self.data.get("preprocessing", {}), "standardize", "preprocessing.standardize",
                  PreprocessingConfig().standardize)

    def solver_settings(self) -> None:
        table = self.data.get("solver", {})
        for a in attrs.fields(SolveSettings):
            self.need(table, a.name, f"solver.{a.name}", a.default)

    def kernels(self, default_family: str) -> None:
        table = self.data.get("kernels", {})
        defaults = KernelsConfig()
        for key in ("normalize", "dtype"):
            self.need(table, key, f"kernels.{key}", getattr(defaults, key))
        if table.get("builders"):
            for i, spec in enumerate(table["builders"]):
                self.builder(spec.get("name"), spec.get("params", {}), f"kernels.builders[{i}].params")
            return
        self.need(table, "family", "kernels.family", default_family)
        self.family(table.get("family", default_family), table.get("family_params", {}), "kernels.family_params")

    def family(self, name: str, given: Mapping[str, Any], path: str) -> None:
        try:
            family = self.registry.get("family", name)
        except PluginError:
            return  # the ordinary checks name an unknown family
        params = list(inspect.signature(family).parameters.values())[1:]  # after n_features
        for p in params:
            if _decides(p.name, p.default):
                self.need(given, p.name, f"{path}.{p.name}", p.default)

    def builder(self, name: str | None, given: Mapping[str, Any], path: str) -> None:
        try:
            builder = self.registry.create("kernel", str(name))
        except (PluginError, TypeError, ValueError):
            return
        for key, default in builder.get_params(deep=False).items():
            if key != "columns" and _decides(key, default):
                self.need(given, key, f"{path}.{key}", default)

    def part(self, kind: str, name: str, preset: Mapping[str, Any], given: Iterable[str], path: str,
             only: frozenset[str] | None = None) -> None:
        """Every parameter of the part ``name`` (those in ``only``): given in ``given`` (the part's table, a grid,
        a path)."""
        try:
            part = self.registry.create(kind, name, **preset)
        except (PluginError, TypeError, ValueError):
            return
        given = set(given)
        for key, default in part.get_params(deep=False).items():
            if _decides(key, default) and key not in given and (only is None or key in only):
                self.found.append(Unpinned(f"{path}.{key}", default))

    # -- methods and models -----------------------------------------------------------------------------
    def method_entry(self, entry: Mapping[str, Any], path: str, grid_keys: Iterable[str]) -> None:
        """A ``[[methods]]`` or ``[[models]]`` entry: each part named, each part's parameters given (in the part's
        ``params``, or as ``<part>__<name>`` or ``C`` in ``grid_keys``)."""
        try:
            spec = self.registry.get("method", entry.get("method", "l1mkl"))
        except PluginError:
            return
        grid_keys = set(grid_keys)
        for kind in _PARTS:
            table = entry.get(kind)
            preset_name = getattr(spec, kind)
            if not isinstance(table, Mapping) or "name" not in table:
                self.found.append(Unpinned(f"{path}.{kind}.name", preset_name))
                table = table if isinstance(table, Mapping) else {}
            name = table.get("name", preset_name)
            # A part's table replaces the preset's part: the preset's parameters apply only without one.
            preset = getattr(spec, f"{kind}_params") if not table else {}
            given = set(table.get("params", {})) | {k.partition("__")[2] for k in grid_keys
                                                    if k.startswith(f"{kind}__")}
            if kind == "loss" and "C" in grid_keys:
                given.add("C")
            self.part(kind, name, preset, given, f"{path}.{kind}.params")

    # -- estimators -------------------------------------------------------------------------------------
    def estimator(self, entry: Mapping[str, Any], path: str) -> None:
        try:
            spec = self.registry.get("estimator", entry.get("name", ""))
        except PluginError:
            return
        accepted = spec.parameters()
        if accepted is None:
            return
        signature = inspect.signature(spec.factory).parameters
        params, grid = entry.get("params", {}), entry.get("grid", {})
        for key in accepted:
            default = spec.params.get(key, signature[key].default if key in signature else None)
            if _decides(key, default) and key not in params and key not in grid:
                if default is None and "method" in accepted:  # an MKL estimator: None is the method preset's
                    default = self.preset_value(params.get("method", spec.params.get("method")), key)
                self.found.append(Unpinned(f"{path}.params.{key}", default))
        for key in ("kernels", *_PARTS):  # tables inside: each plugin's parameters
            for where, value in [(f"{path}.params.{key}", params.get(key))] + [
                    (f"{path}.grid.{key}[{j}]", v) for j, v in enumerate(grid.get(key, []))]:
                self.tables(key, value, where)

    def preset_value(self, method: Any, key: str) -> Any:
        """What ``None`` means for an MKL estimator's ``key``: the method preset's part name, or its loss's ``C``."""
        try:
            spec = self.registry.get("method", str(method))
        except PluginError:
            return None
        if key in _PARTS:
            return getattr(spec, key)
        if key == "C":
            return self.registry.create("loss", spec.loss, **spec.loss_params).get_params().get("C")
        return None

    def tables(self, key: str, value: Any, path: str) -> None:
        if key == "kernels" and isinstance(value, list):
            for j, table in enumerate(value):
                if isinstance(table, Mapping) and "name" in table:
                    self.builder(table["name"], _options(table), f"{path}[{j}]")
        elif key in _PARTS and isinstance(value, Mapping) and "name" in value:
            self.part(key, value["name"], {}, _options(value), path)
        elif key in _PARTS and isinstance(value, str):
            # A part by name keeps its own defaults, but an unseeded one (ML-MKL-SA's sampling) decides a result
            # at random: its seed goes in a table, { name = ..., random_state = 0 }.
            self.part(key, value, {}, (), path, only=frozenset({"random_state"}))

    # -- whole configurations ---------------------------------------------------------------------------
    def datasets(self, generators: Mapping[str, Any]) -> None:
        for i, ds in enumerate(self.data.get("datasets", [])):
            source = ds.get("source")
            if source in generators:
                for key, default in generator_parameters(generators[source]).items():
                    self.need(ds.get("params", {}), key, f"datasets[{i}].params.{key}", default)

    def benchmark_experiment(self) -> None:
        ex = self.data.get("experiment", {})
        methods = self.data.get("methods", [])
        paths = self.data.get("paths", [])
        noisy = self.data.get("noisy_kernels")
        benchmark = ex.get("benchmark", True)
        searched = any(_points(m.get("grid", {})) > 1 for m in methods)
        used = {d["name"] for d in self.data.get("datasets", [])} if benchmark else set()
        used |= {p.get("dataset") for p in paths} | ({noisy.get("dataset")} if noisy else set())
        needs = {"seed": True, "repeats": benchmark, "cv_folds": searched, "warm_start": searched or bool(paths),
                 "warm_order": searched and ex.get("warm_start", True),
                 "selection_threshold": benchmark or noisy is not None,
                 "test_fraction": any("train_size" not in d for d in self.data.get("datasets", [])
                                      if d.get("name") in used)}
        for key, needed in needs.items():
            if needed:
                self.need(ex, key, f"experiment.{key}", getattr(_EXPERIMENT, key))
        self.datasets(BENCHMARK_GENERATORS)
        self.preprocessing()
        self.kernels("simplemkl")
        self.solver_settings()
        if noisy is not None:
            defaults = NoisyKernelsConfig(dataset="")
            self.need(noisy, "ratios", "noisy_kernels.ratios", defaults.ratios)
            self.need(noisy, "repeat", "noisy_kernels.repeat", defaults.repeat)
        for i, p in enumerate(paths):
            self.need(p, "repeat", f"paths[{i}].repeat", PathConfig(dataset="", method="", param="", values=[]).repeat)
        for i, m in enumerate(methods):
            label = m.get("label") or m.get("method")
            keys = set(m.get("grid", {}))
            for p in paths:
                if p.get("method") == label:
                    keys |= {p.get("param", "")} | set(p.get("fixed", {}))
            self.method_entry(m, f"methods[{i}]", keys)

    def task_experiment(self) -> None:
        ex, task = self.data.get("experiment", {}), self.data.get("task", {})
        try:
            kind = task_kind(task.get("kind", ""))
        except PluginError:
            return
        estimators = self.data.get("estimators", [])
        searched = any(_points(e.get("grid", {})) > 1 for e in estimators)
        self.need(ex, "seed", "experiment.seed", _EXPERIMENT.seed)
        self.need(ex, "repeats", "experiment.repeats", _EXPERIMENT.repeats)
        if searched:
            self.need(ex, "cv_folds", "experiment.cv_folds", _EXPERIMENT.cv_folds)
            self.need(task, "select_by", "task.select_by", kind.measures[0][0])
        if kind.has_folds:
            self.need(task, "folds", "task.folds", _TASK.folds)
            if task.get("folds", 0) < 2 and any("train_size" not in d for d in self.data.get("datasets", [])):
                self.need(ex, "test_fraction", "experiment.test_fraction", _EXPERIMENT.test_fraction)
        for key in sorted(kind.task_settings):
            self.need(task, key, f"task.{key}", getattr(_TASK, key))
        self.datasets(TASK_GENERATORS)
        self.preprocessing()
        for i, e in enumerate(estimators):
            self.estimator(e, f"estimators[{i}]")

    def run_config(self) -> None:
        ev = self.data.get("evaluation", {})
        defaults = EvaluationConfig()
        grid = ev.get("grid", {})
        for key in ("seed", "repeats", "test_fraction"):
            self.need(ev, key, f"evaluation.{key}", getattr(defaults, key))
        if _points(grid) > 1:
            self.need(ev, "cv_folds", "evaluation.cv_folds", defaults.cv_folds)
        self.need(self.data.get("data", {}), "source", "data.source", "breast_cancer")
        self.preprocessing()
        self.kernels(KernelsConfig().family or "rbf_poly")
        self.solver_settings()
        data_table = self.data.get("data", {})
        if data_table.get("source") in TASK_GENERATORS:
            for key, default in generator_parameters(TASK_GENERATORS[data_table["source"]]).items():
                self.need(data_table.get("params", {}), key, f"data.params.{key}", default)
        model = ModelConfig()
        for i, m in enumerate(self.data.get("models", [{}])):
            if "estimator" in m:  # a task estimator: its parameters, as in a task experiment's [[estimators]]
                self.estimator({"name": m["estimator"], "params": m.get("params") or {},
                                "grid": {**grid, **(m.get("grid") or {})}}, f"models[{i}]")
                continue
            self.need(m, "method", f"models[{i}].method", model.method)
            keys = set(grid) | set(m.get("grid") or {})
            if "C" not in keys:  # a model's C is its own key (set on its loss)
                self.need(m, "C", f"models[{i}].C", model.C)
            self.method_entry(m, f"models[{i}]", keys | {"C"})


def _options(table: Mapping[str, Any]) -> set[str]:
    """The parameter names a plugin table gives (``{name, <params>}`` or ``{name, params = {...}}``)."""
    if set(table) == {"name", "params"} and isinstance(table["params"], Mapping):
        return set(table["params"])
    return set(table) - {"name"}


def _points(grid: Mapping[str, Any]) -> int:
    n = 1
    for values in grid.values():
        n *= len(values) if isinstance(values, list) else 1
    return n


def unpinned(data: Mapping[str, Any]) -> list[Unpinned]:
    """The result-deciding parts that the configuration ``data`` (a parsed TOML file: a run or an experiment
    configuration) leaves to a default, in the order of the file's tables."""
    finder = _Finder(data)
    if not is_experiment_config(dict(data)):
        finder.run_config()
    elif "task" in data or "estimators" in data:
        finder.task_experiment()
    else:
        finder.benchmark_experiment()
    return finder.found


def check_strict(data: Mapping[str, Any]) -> None:
    """Raise :class:`~multikernel.errors.ConfigError` listing every result-deciding part ``data`` leaves to a
    default (at the key path of the first), so that a change of a default cannot change its results.

    Raises
    ------
    ConfigError
        When :func:`unpinned` finds anything; the message lists each key path with today's default.
    """
    found = unpinned(data)
    if found:
        listing = "\n  ".join(str(u) for u in found)
        raise ConfigError(f"{len(found)} result-deciding part(s) left to a default (--strict); pin them in the file "
                          f"(a method's parts as tables: solver = {{ name = ..., params = {{ ... }} }}):\n  {listing}",
                          found[0].path)


def strict_source(path: str | Path | None, example: str | None = None) -> dict[str, Any]:
    """The parsed TOML of the configuration file ``path``, of the embedded example ``example``, or of the
    embedded default run without either, as :func:`check_strict` reads it: what the file gives, before any
    default is filled in."""
    if path is not None:
        return read_toml(Path(path))
    load_example(example or DEFAULT_EXAMPLE)  # an unknown name: the error listing the examples
    return read_toml(EXAMPLES_DIR / f"{example or DEFAULT_EXAMPLE}.toml")
