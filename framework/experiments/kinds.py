"""The two figure experiments of the soft margin MKL paper as functions on arrays.

:func:`noisy_kernel_curve` (accuracy versus the number of random features appended) and
:func:`parameter_path` (kernel weights and accuracy along one parameter, e.g. SM1MKL's bridge from the
average kernel to L1-MKL) run the same units as ``[noisy_kernels]`` and ``[[paths]]`` of an experiment
configuration, without an output folder; :func:`multikernel.experiments.report.make_figures` or the
``plot_*`` helpers here draw them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from multikernel.config.schema import KernelsConfig, PreprocessingConfig, SolverConfig, structure
from multikernel.experiments.config import (
    DEFAULT_RATIOS,
    DatasetSpec,
    ExperimentSettings,
    MethodSpec,
    PathConfig,
)
from multikernel.experiments.report import summarize_noisy
from multikernel.experiments.units import Member, UnitTask, run_unit

__all__ = ["noisy_kernel_curve", "parameter_path", "plot_noisy_kernel_curve", "plot_parameter_path"]


def _method(spec: MethodSpec | dict[str, Any] | str) -> MethodSpec:
    if isinstance(spec, MethodSpec):
        return spec
    if isinstance(spec, str):
        return MethodSpec(method=spec)
    return structure(MethodSpec, spec, "method")


def _common(kernels: KernelsConfig | dict[str, Any] | None, solver: SolverConfig | dict[str, Any] | None,
            settings: dict[str, Any]) -> dict[str, Any]:
    kc = kernels if isinstance(kernels, KernelsConfig) else structure(
        KernelsConfig, kernels or {"family": "simplemkl"}, "kernels")
    sc = solver if isinstance(solver, SolverConfig) else structure(SolverConfig, solver or {}, "solver")
    return {"kernels": kc, "solver": sc, "settings": structure(ExperimentSettings, settings, "experiment")}


def _raise_errors(records: list[dict[str, Any]]) -> None:
    failed = [r for r in records if "error" in r]
    if failed:
        raise RuntimeError(f"{failed[0]['key']}: {failed[0]['error']}\n{failed[0].get('traceback', '')}")


def noisy_kernel_curve(X: np.ndarray, y: np.ndarray, methods: Sequence[MethodSpec | dict[str, Any] | str],
                       ratios: Sequence[float] = tuple(DEFAULT_RATIOS), *,
                       kernels: KernelsConfig | dict[str, Any] | None = None,
                       solver: SolverConfig | dict[str, Any] | None = None, standardize: bool = True,
                       test_fraction: float = 0.3, cv_folds: int = 5, seed: int = 0, repeat: int = 0,
                       warm_start: bool = True) -> dict[str, Any]:
    """Test accuracy of each method on split ``repeat`` of ``(X, y)`` with ``round(r d)`` random features
    appended, for each ratio ``r`` (parameters chosen by ``cv_folds``-fold CV on the training part).

    ``methods`` are method names, :class:`~multikernel.experiments.config.MethodSpec` or dicts like a
    ``[[methods]]`` entry (``{"method": "sm1mkl", "grid": {"C": [1, 10], "regularizer__nu": [0.5]}}``).

    Returns
    -------
    dict
        ``{"ratios", "methods", "rows": [{"ratio", "n_noise_features", "n_kernels", "methods": {label:
        {"accuracy" (%), "best_params", "n_selected", "fit_time", "dual_gap"}}}], "records": [...]}``
    """
    specs = [_method(m) for m in methods]
    common = _common(kernels, solver, {"test_fraction": test_fraction, "cv_folds": cv_folds, "seed": seed,
                                       "warm_start": warm_start})
    data = DatasetSpec(name="data", source="arrays")
    records: list[dict[str, Any]] = []
    for i, ratio in enumerate(ratios):
        members = [Member(key=f"noisy/{ratio:g}/{m.display_name}", fingerprint="", method=m) for m in specs]
        task = UnitTask(kind="noisy", dataset=data, X=np.asarray(X, dtype=np.float64), y=np.asarray(y),
                        members=members, preprocessing=PreprocessingConfig(standardize=standardize), repeat=repeat,
                        index=i, ratio=float(ratio), max_ratio=float(max(ratios)), **common)
        records += run_unit(task)
    _raise_errors(records)
    out = summarize_noisy(records, list(ratios), [m.display_name for m in specs],
                          common["settings"].selection_threshold)
    out["records"] = records
    return out


def parameter_path(X: np.ndarray, y: np.ndarray, method: MethodSpec | dict[str, Any] | str, param: str,
                   values: Sequence[Any], *, fixed: dict[str, Any] | None = None,
                   kernels: KernelsConfig | dict[str, Any] | None = None,
                   solver: SolverConfig | dict[str, Any] | None = None, standardize: bool = True,
                   test_fraction: float = 0.3, seed: int = 0, repeat: int = 0) -> dict[str, Any]:
    """Refit ``method`` on the training part of split ``repeat`` for each value of ``param``.

    ``values`` may be expressions in ``M`` (``"1/M"``); ``fixed`` sets the method's other parameters.  For
    SM1MKL's bridge: ``parameter_path(X, y, "sm1mkl", "regularizer__theta", ["1/M", "4/M", 1], fixed={"C": 10})``.

    Returns
    -------
    dict
        ``{"n_kernels", "param", "fixed", "kernel_names", "points": [{"value", "weights", "accuracy",
        "fit_time", "n_iter", "dual_gap", "objective", "converged"}], ...}``
    """
    spec = _method(method)
    path = structure(PathConfig, {"dataset": "data", "method": spec.display_name, "param": param,
                                  "values": list(values), "fixed": dict(fixed or {}), "repeat": repeat}, "path")
    common = _common(kernels, solver, {"test_fraction": test_fraction, "seed": seed})
    task = UnitTask(kind="path", dataset=DatasetSpec(name="data", source="arrays"), X=np.asarray(X, dtype=np.float64),
                    y=np.asarray(y), members=[Member(key=f"path/{param}", fingerprint="", method=spec)],
                    preprocessing=PreprocessingConfig(standardize=standardize), path=path, **common)
    records = run_unit(task)
    _raise_errors(records)
    return records[0]


def plot_noisy_kernel_curve(curve: dict[str, Any], ax: Any = None) -> Any:
    """Accuracy versus noise ratio, one line per method, on ``ax`` (a new figure when ``None``)."""
    if ax is None:
        from matplotlib.figure import Figure

        ax = Figure(figsize=(6, 4)).add_subplot()
    for m in curve["methods"]:
        pts = [(row["ratio"], row["methods"][m]["accuracy"]) for row in curve["rows"] if m in row["methods"]]
        ax.plot(*zip(*pts, strict=True), marker="o", label=m)
    ax.set_xlabel("noise ratio r")
    ax.set_ylabel("test accuracy (%)")
    ax.legend(fontsize="small")
    return ax


def plot_parameter_path(path: dict[str, Any], ax: Any = None) -> Any:
    """Every kernel weight against the path parameter on ``ax`` (a new figure when ``None``)."""
    if ax is None:
        from matplotlib.figure import Figure

        ax = Figure(figsize=(7, 4.5)).add_subplot()
    values = [pt["value"] for pt in path["points"]]
    W = np.array([np.atleast_2d(pt["weights"]).mean(axis=0) for pt in path["points"]])
    ax.plot(values, W, lw=0.8)
    ax.set_xlabel(path["param"])
    ax.set_ylabel("kernel weight")
    return ax
