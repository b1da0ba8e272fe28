"""What parsing a configuration cannot see: plugin names, kernel parameters, grid points, the data.

``multikernel validate``, ``multikernel run`` and ``multikernel experiment`` (with or without ``--dry-run``)
call these same functions before anything is fitted (:func:`multikernel.config.runner.check_config`,
:func:`multikernel.experiments.runner.check_experiment`), so a configuration that validates does not fail on its
settings later.  They build everything through the code path of a fit:

* the kernels: the family or builder list expanded by :func:`make_builders` (which the run uses too), then
  every builder fitted through :class:`~multikernel.stack.kernelset.KernelSet` on a few rows of the data, so each
  builder's own parameter checks run (a negative bandwidth, a degree of 2.5, a column out of range);
* the parts: for every model or method at every grid point, :func:`multikernel.solve.fit.build_parts` (the
  one constructor of the fit core, with its plugin and compatibility checks), the regularizer's domain
  check for the data's number of kernels, and a *probe fit* of one outer iteration on a 4-sample problem
  with that many kernels.  Parts follow scikit-learn in validating their parameters where they use them
  (``C`` in the loss's solve, a solver's settings and its domain needs in its ``solve``), so running them
  is the one way to hear from them without fitting the real data;
* the data: finite features and class labels, checked by the fit core's own target encoding.

Every failure is a :class:`~multikernel.errors.ConfigError` naming the key path at fault: the smallest
part of the configuration that fails on its own (a grid value, a part override, the method).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import product
from pathlib import Path
from typing import Any

import attrs
import numpy as np
from sklearn.base import clone
from sklearn.utils.multiclass import type_of_target

from multikernel.config.schema import KernelsConfig, MethodParts, SolverConfig, evaluate_value
from multikernel.core.interfaces import KernelBuilder
from multikernel.core.registry import get_registry
from multikernel.errors import ConfigError, PluginError
from multikernel.solve.fit import SolveSettings, build_parts, encode_targets, fit_mkl
from multikernel.stack.kernelset import KernelSet
from multikernel.stack.storage import DenseStack

__all__ = [
    "make_builders",
    "check_kernels",
    "check_data",
    "Axis",
    "grid_axes",
    "PartsChecker",
    "prepare_output",
]

# What a plugin raises for parameters it refuses (scikit-learn's convention is ValueError; a value of the
# wrong type usually surfaces as TypeError, an absurd one as an arithmetic error).
_REFUSALS = (ValueError, TypeError, ArithmeticError, NotImplementedError)


# --------------------------------------------------------------------------------------------------
# kernels
# --------------------------------------------------------------------------------------------------
def _unknown_parameters(func: Callable[..., Any], given: Iterable[str], skip: int, what: str, path: str) -> None:
    """A :class:`ConfigError` at ``path.<key>`` for a key ``func`` does not take, listing those it takes
    (the first ``skip`` positional parameters are supplied by the library, not by the configuration)."""
    params = list(inspect.signature(func).parameters.values())[skip:]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    names = [p.name for p in params if p.kind is not inspect.Parameter.VAR_POSITIONAL]
    for key in given:
        if key not in names:
            raise ConfigError(f"{key!r} is not a parameter of {what}; its parameters: "
                              f"{', '.join(names) or '(none)'}", f"{path}.{key}")


def _expand(kernels: KernelsConfig, n_features: int) -> list[tuple[KernelBuilder, str]]:
    """The unfitted builders of ``[kernels]``, each with the key path of the entry that made it."""
    registry = get_registry()
    if not kernels.builders:
        try:
            family = registry.get("family", kernels.family)
        except PluginError as exc:
            raise ConfigError(str(exc), "kernels.family") from exc
        _unknown_parameters(family, kernels.family_params, 1, f"kernel family {kernels.family!r}",
                            "kernels.family_params")
        try:
            made = list(family(n_features, **kernels.family_params))
        except _REFUSALS as exc:
            raise ConfigError(f"kernel family {kernels.family!r}: {exc}", "kernels.family_params") from exc
        return [(b, "kernels.family_params") for b in made]
    out: list[tuple[KernelBuilder, str]] = []
    for i, spec in enumerate(kernels.builders):
        path = f"kernels.builders[{i}]"
        try:
            cls = registry.get("kernel", spec.name)
        except PluginError as exc:
            raise ConfigError(str(exc), f"{path}.name") from exc
        if "columns" in spec.params:
            raise ConfigError("give the feature subset as the entry's 'columns' key, not as a parameter",
                              f"{path}.params.columns")
        _unknown_parameters(cls.__init__, spec.params, 1, f"kernel {spec.name!r}", f"{path}.params")
        if spec.columns == "all":
            subsets: list[Any] = [None]
        elif spec.columns == "each":
            subsets = [[j] for j in range(n_features)]
        else:
            bad = [c for c in spec.columns if not -n_features <= c < n_features]
            if bad:
                raise ConfigError(f"column(s) {bad} out of range for {n_features} features", f"{path}.columns")
            subsets = [list(spec.columns)]
        for cols in subsets:
            try:
                out.append((cls(**spec.params, columns=cols), f"{path}.params"))
            except _REFUSALS as exc:
                raise ConfigError(f"kernel {spec.name!r}: {exc}", f"{path}.params") from exc
    return out


def make_builders(kernels: KernelsConfig, n_features: int) -> list[KernelBuilder]:
    """The unfitted base kernel builders of ``[kernels]`` for data with ``n_features`` features.

    Raises
    ------
    ConfigError
        For an unknown family or builder name, a parameter it does not take, or columns out of range.
    """
    return [b for b, _ in _expand(kernels, n_features)]


def _probe_rows(X: np.ndarray, n: int = 32) -> np.ndarray:
    """A few rows of ``X`` that include each column's smallest and largest value, so that a builder's
    checks of the value range (non-negative histograms) see the data's extremes."""
    if len(X) == 0:
        return X
    rows = np.concatenate([np.arange(min(len(X), n)), X.argmin(axis=0), X.argmax(axis=0)])
    return X[np.unique(rows)]


def check_kernels(kernels: KernelsConfig, X: np.ndarray, standardize: bool) -> list[KernelBuilder]:
    """Expand ``[kernels]`` for ``X`` and fit every builder on a few of its rows (standardized first when
    the run standardizes), as the fit does; return the unfitted builders (their number is ``M``).

    Raises
    ------
    ConfigError
        At the family or builder entry whose parameters the builder refuses.
    """
    made = _expand(kernels, X.shape[1])
    rows = _probe_rows(X)

    def fit(builders: list[KernelBuilder]) -> None:
        # Normalization is left out: on a few rows it could fail where the whole data would not.
        KernelSet([clone(b) for b in builders], normalize="none", dtype=kernels.dtype,
                  standardize=standardize).fit_stack(rows)

    try:
        fit([b for b, _ in made])
    except _REFUSALS:
        for b, path in made:  # the first builder that fails on its own names the entry
            try:
                fit([b])
            except _REFUSALS as exc:
                message = str(exc).removeprefix(f"{b.name}: ")  # the builder's messages may name it already
                raise ConfigError(f"kernel {b.describe()}: {message}", path) from exc
        raise
    return [b for b, _ in made]


# --------------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------------
def check_data(X: np.ndarray, y: np.ndarray, source: str, path: str) -> None:
    """Finite features, and labels the fit core can encode as classes (integers or strings; not 0.5).

    Raises
    ------
    ConfigError
        At ``path`` (the data source entry).
    """
    if not np.all(np.isfinite(X)):
        raise ConfigError(f"the data in {source!r} contain NaN or infinite feature values; impute or drop "
                          f"them first", path)
    try:
        encode_targets(y)  # the fit core's own check of the targets
    except ValueError as exc:
        detail = str(exc)
        if type_of_target(y) == "continuous":
            values = np.asarray(y, dtype=np.float64)
            detail = (f"found the non-integer label {float(values[values != np.round(values)][0])!r} (class "
                      f"labels are integers or strings)")
        raise ConfigError(f"the labels in {source!r} are not class labels: {detail}", path) from exc


# --------------------------------------------------------------------------------------------------
# parts at grid points
# --------------------------------------------------------------------------------------------------
@attrs.frozen
class Axis:
    """One parameter of a grid: its key, the key path of its entry, and its values with their key paths."""

    key: str
    path: str
    values: tuple[tuple[Any, str], ...]


def grid_axes(grid: Mapping[str, Sequence[Any]], path: str) -> list[Axis]:
    """The axes of a ``{key: [values]}`` grid found at ``path``."""
    return [Axis(k, f"{path}.{k}", tuple((v, f"{path}.{k}[{j}]") for j, v in enumerate(vs)))
            for k, vs in grid.items()]


def _show(point: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v!r}" for k, v in point.items())


class PartsChecker:
    """Checks methods with their part overrides at grid points, for a number of kernels ``M``.

    Each distinct (method, overrides, grid point) is probed once; the domain check is repeated for every
    ``M`` (it is the one check that depends on it).

    Parameters
    ----------
    solver : SolverConfig
        The ``[solver]`` settings of the runs (``inner_tol`` and ``stopping`` are used by the probe).
    """

    def __init__(self, solver: SolverConfig) -> None:
        # One outer iteration at a tolerance no probe meets, so that the first weight update runs too.
        self._settings = SolveSettings(tol=1e-12, max_iter=1, inner_tol=solver.inner_tol, stopping=solver.stopping)
        self._probed: set[str] = set()
        self._stacks: dict[int, DenseStack] = {}
        self._targets = encode_targets(np.array([0, 0, 1, 1]))

    def _stack(self, n_kernels: int) -> DenseStack:
        """``M`` distinct positive definite 4 x 4 kernels (a fixed seed: the probe is deterministic)."""
        if n_kernels not in self._stacks:
            A = np.random.default_rng(0).standard_normal((n_kernels, 4, 2))
            self._stacks[n_kernels] = DenseStack(np.einsum("mij,mkj->mik", A, A) + np.eye(4))
        return self._stacks[n_kernels]

    def _attempt(self, spec: MethodParts, kinds: Sequence[str], point: Mapping[str, Any],
                 n_kernels: int) -> Exception | None:
        """Build ``spec`` with the overrides ``kinds`` and the parameters ``point`` and probe it; the
        failure, if any."""
        overrides = {kind: getattr(spec, kind) for kind in kinds}
        try:
            parts = build_parts(spec.method, params=point, **overrides)  # type: ignore[attr-defined]
            try:
                parts.regularizer.check(n_kernels)
            except _REFUSALS as exc:
                raise ValueError(f"infeasible for M={n_kernels} kernels: {exc}") from exc
            key = repr((spec.method, sorted(overrides.items(), key=repr), sorted(point.items())))  # type: ignore[attr-defined]
            if key not in self._probed:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # one iteration does not converge, and need not
                    fit_mkl(self._stack(n_kernels), self._targets, parts, self._settings)
                self._probed.add(key)
        except _REFUSALS as exc:
            return exc
        return None

    def check(self, spec: MethodParts, axes: Sequence[Axis], n_kernels: int, path: str, grid_path: str,
              label: str | None = None) -> int:
        """Check ``spec`` (a ``[[models]]`` or ``[[methods]]`` entry at ``path``) at every point of ``axes``.

        Values are resolved for ``n_kernels`` kernels (``"1/M"``).  Returns the number of grid points.

        Raises
        ------
        ConfigError
            At the smallest entry at fault: the key's path (a parameter the part does not have), a value's
            path (the point works with another value of that key, or without the key), ``grid_path``
            (values that fail only together); when no point works, ``path.method`` (the method itself),
            ``path.<part>`` (an override the points work without) or ``path`` (the overrides together).
        """
        given = [kind for kind in ("loss", "regularizer", "solver") if getattr(spec, kind) is not None]
        resolved = [[evaluate_value(v, n_kernels) for v, _ in a.values] for a in axes]

        def at(index: Sequence[int]) -> dict[str, Any]:
            return {a.key: values[j] for a, values, j in zip(axes, resolved, index, strict=True)}

        # Points by their value indices (NaN values cannot be found again by comparison).
        combos = list(product(*(range(len(values)) for values in resolved)))
        failures = [(c, exc) for c in combos if (exc := self._attempt(spec, given, at(c), n_kernels)) is not None]
        if not failures:
            return len(combos)
        combo, exc = failures[0]
        point = at(combo)
        prefix = f"model {label!r}: " if label else ""
        try:
            get_registry().get("method", spec.method)  # type: ignore[attr-defined]
        except PluginError as err:
            raise ConfigError(str(err), f"{path}.method") from err
        key = getattr(exc, "key", None)  # fitcore.UnknownParameterError: a parameter the part does not have
        if key in point:
            raise ConfigError(f"{prefix}{exc}", next(a.path for a in axes if a.key == key)) from exc
        for i, axis in enumerate(axes):
            others = [at((*combo[:i], j, *combo[i + 1:])) for j in range(len(resolved[i])) if j != combo[i]]
            without = {k: v for k, v in point.items() if k != axis.key}
            if any(self._attempt(spec, given, pt, n_kernels) is None for pt in [*others, without]):
                raise ConfigError(f"{prefix}{exc}", axis.values[combo[i]][1]) from exc
        if len(failures) < len(combos):
            raise ConfigError(f"{prefix}grid point ({_show(point)}) fails: {exc}", grid_path) from exc
        if self._attempt(spec, [], point, n_kernels) is not None:
            raise ConfigError(f"{prefix}{exc}", f"{path}.method") from exc
        for kind in given:
            if self._attempt(spec, [k for k in given if k != kind], point, n_kernels) is None:
                raise ConfigError(f"{prefix}{exc}", f"{path}.{kind}") from exc
        raise ConfigError(f"{prefix}{exc}", path) from exc


# --------------------------------------------------------------------------------------------------
# outputs
# --------------------------------------------------------------------------------------------------
def prepare_output(path: str | Path | None, option: str) -> None:
    """Make sure a file can be written at ``path`` before anything is fitted: its parent folders are
    created (as ``mkdir -p`` would); ``None`` and ``"-"`` (stdout) need nothing.

    Raises
    ------
    ConfigError
        At ``option`` (the command-line option) when ``path`` is a folder or its folder cannot be created.
    """
    if path is None or str(path) == "-":
        return
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"{str(target)!r} is a folder; give a file name", option)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the folder of {str(target)!r}: {exc}", option) from exc
