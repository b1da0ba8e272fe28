"""Running a configuration: load data, split, fit each model, evaluate, and report."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split
from tqdm.auto import tqdm

from multikernel.config.datasets import load_data
from multikernel.config.schema import KernelSpec, ModelConfig, RunConfig, config_to_dict
from multikernel.core.interfaces import KernelBuilder
from multikernel.core.registry import get_registry
from multikernel.errors import ConfigError, PluginError
from multikernel.estimators.classifier import MKLClassifier
from multikernel.experiments.report import count_selected

__all__ = ["run_config", "build_estimator", "check_config", "SELECTION_THRESHOLD"]

SELECTION_THRESHOLD = 1e-5
"""A kernel counts as selected when its share ``mu_m / sum(mu)`` exceeds this (as in the experiment runner)."""


def _builders(specs: list[KernelSpec], n_features: int) -> list[KernelBuilder]:
    registry = get_registry()
    out: list[KernelBuilder] = []
    for i, spec in enumerate(specs):
        path = f"kernels.builders[{i}]"
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
                out.append(registry.create("kernel", spec.name, **spec.params, columns=cols))
            except PluginError as exc:
                raise ConfigError(str(exc), path) from exc
    return out


def _part(part: Any, kind: str, path: str) -> Any:
    if part is None:
        return None
    try:
        return get_registry().create(kind, part.name, **part.params)
    except PluginError as exc:
        raise ConfigError(str(exc), path) from exc


def build_estimator(config: RunConfig, model: ModelConfig, n_features: int, index: int = 0) -> MKLClassifier:
    """The estimator that a ``[[models]]`` entry of ``config`` describes, for data with ``n_features``."""
    path = f"models[{index}]"
    registry = get_registry()
    try:
        registry.get("method", model.method)
    except PluginError as exc:
        raise ConfigError(str(exc), f"{path}.method") from exc
    kc = config.kernels
    if kc.builders:
        kernels: Any = _builders(kc.builders, n_features)
    else:
        try:
            registry.get("family", kc.family)
        except PluginError as exc:
            raise ConfigError(str(exc), "kernels.family") from exc
        kernels = kc.family
    return MKLClassifier(
        kernels=kernels, kernel_params=dict(kc.family_params) or None, normalize=kc.normalize,
        standardize=config.preprocessing.standardize, method=model.method, C=model.C,
        loss=_part(model.loss, "loss", f"{path}.loss"),
        regularizer=_part(model.regularizer, "regularizer", f"{path}.regularizer"),
        solver=_part(model.solver, "solver", f"{path}.solver"),
        tol=config.solver.tol, max_iter=config.solver.max_iter, inner_tol=config.solver.inner_tol,
        stopping=config.solver.stopping, kernel_dtype=kc.dtype, kernel_backend=kc.backend,
        memory_budget=kc.memory_budget, n_jobs=config.evaluation.n_jobs,
    )


def check_config(config: RunConfig) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Check everything a run needs short of fitting: the data loads, every plugin name resolves.

    Returns the loaded ``(X, y, feature_names)``.
    """
    X, y, names = load_data(config.data.source, config.data.format)
    if not np.all(np.isfinite(X)):
        raise ConfigError(f"the data in {config.data.source!r} contain NaN or infinite feature values; "
                          f"impute or drop them first", "data.source")
    if len(np.unique(y)) < 2:
        raise ConfigError(f"the labels in {config.data.source!r} have a single class", "data.source")
    for i, model in enumerate(config.models):
        est = build_estimator(config, model, X.shape[1], i)
        for key in config.evaluation.grid:
            if key not in est.get_params(deep=True):
                raise ConfigError(f"{key!r} is not a parameter of model {model.display_name!r}; parameters "
                                  f"include C, regularizer__<name> (when a regularizer is given)",
                                  f"evaluation.grid.{key}")
    return X, y, names


def run_config(config: RunConfig, progress: bool | None = None) -> dict[str, Any]:
    """Fit and evaluate every model of ``config``; return a JSON-serialisable report.

    Each repeat draws a stratified train/test split (``evaluation.test_fraction``, seeded by
    ``evaluation.seed + repeat``); with ``cv_folds >= 2`` and a ``grid``, hyper-parameters are chosen by
    cross-validation on the training part only.  ``progress=None`` shows a bar only on a terminal.
    """
    start = time.perf_counter()
    X, y, feature_names = check_config(config)
    ev = config.evaluation
    models = config.models
    report_models = [{"label": m.display_name, "method": m.method, "C": m.C, "repeats": []} for m in models]
    fitted: list[MKLClassifier | None] = [None] * len(models)
    bar = tqdm(total=ev.repeats * len(models), desc="fitting", unit="fit",
               disable=(not progress) if progress is not None else None)
    n_kernels = 0
    try:
        for r in range(ev.repeats):
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=ev.test_fraction, random_state=ev.seed + r,
                                                  stratify=y)
            for i, model in enumerate(models):
                bar.set_postfix_str(f"repeat {r + 1}/{ev.repeats} {model.display_name}")
                est = build_estimator(config, model, X.shape[1], i)
                t0 = time.perf_counter()
                best_params: dict[str, Any] = {}
                if ev.cv_folds >= 2 and ev.grid:
                    search = GridSearchCV(est, ev.grid, cv=StratifiedKFold(ev.cv_folds, shuffle=True,
                                                                           random_state=ev.seed + r),
                                          n_jobs=ev.n_jobs, error_score="raise")
                    search.fit(Xtr, ytr)
                    est, best_params = search.best_estimator_, search.best_params_
                else:
                    est.fit(Xtr, ytr)
                elapsed = time.perf_counter() - t0
                n_kernels = len(est.kernel_names_)
                weights = np.atleast_2d(est.weights_)
                report_models[i]["repeats"].append({
                    "repeat": r, "accuracy": float(est.score(Xte, yte)), "fit_time": elapsed,
                    "n_iter": np.asarray(est.n_iter_).tolist(), "dual_gap": np.asarray(est.dual_gap_).tolist(),
                    "n_selected": count_selected(weights, SELECTION_THRESHOLD),
                    "weights": weights.tolist(), "best_params": _plain(best_params),
                })
                if r == 0:
                    fitted[i] = est
                bar.update()
    finally:
        bar.close()
    for entry, est in zip(report_models, fitted, strict=True):
        accs = np.array([rep["accuracy"] for rep in entry["repeats"]])
        entry["accuracy_mean"] = float(accs.mean())
        entry["accuracy_std"] = float(accs.std())
        entry["fit_time_mean"] = float(np.mean([rep["fit_time"] for rep in entry["repeats"]]))
        entry["n_selected_mean"] = float(np.mean([rep["n_selected"] for rep in entry["repeats"]]))
        w = np.atleast_2d(entry["repeats"][0]["weights"]).mean(axis=0)
        order = np.argsort(-w)[:5]
        entry["top_kernels"] = [{"kernel": est.kernel_names_[k], "weight": float(w[k])} for k in order if w[k] > 0]
    return {
        "config": config_to_dict(config),
        "data": {"source": config.data.source, "n_samples": int(X.shape[0]), "n_features": int(X.shape[1]),
                 "n_classes": int(len(np.unique(y))), "n_kernels": n_kernels},
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
