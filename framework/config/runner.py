"""Running a configuration: load data, split, fit each model, evaluate, and report.

:func:`check_config` is what ``multikernel validate`` runs; :func:`run_config` (``multikernel run``) runs it
first and then fits, so both refuse the same configurations.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split

from multikernel.config.checks import Axis, PartsChecker, check_data, check_kernels, grid_axes, make_builders
from multikernel.config.datasets import load_data
from multikernel.config.progress import Progress
from multikernel.config.schema import EvaluationConfig, ModelConfig, RunConfig, config_to_dict, evaluate_value
from multikernel.config.summary import count_selected, sample_std
from multikernel.errors import ConfigError
from multikernel.estimators.classifier import MKLClassifier
from multikernel.solve.fit import build_parts

__all__ = ["run_config", "build_estimator", "check_config", "SELECTION_THRESHOLD"]

SELECTION_THRESHOLD = 1e-5
"""A kernel counts as selected when its share ``mu_m / sum(mu)`` exceeds this (as in the experiment runner)."""


def build_estimator(config: RunConfig, model: ModelConfig, n_features: int, index: int = 0) -> MKLClassifier:
    """The estimator that a ``[[models]]`` entry of ``config`` describes, for data with ``n_features``.

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
        memory_budget=kc.memory_budget, n_jobs=config.evaluation.n_jobs,
    )


def _estimator_key(key: str) -> str:
    """A grid key as a parameter of :func:`build_estimator`'s estimator: ``C`` lives on its loss."""
    return "loss__C" if key == "C" else key


def _split(X: np.ndarray, y: np.ndarray, ev: EvaluationConfig, repeat: int) -> list[np.ndarray]:
    """Split ``repeat``: stratified, ``test_fraction`` held out, seed ``seed + repeat``."""
    return train_test_split(X, y, test_size=ev.test_fraction, random_state=ev.seed + repeat, stratify=y)


def _check_splits(y: np.ndarray, ev: EvaluationConfig) -> None:
    """Every split of the run can be drawn, and every training part has ``cv_folds`` samples of each class
    (the splits themselves are drawn: they are cheap, and exactly the run's)."""
    rows = np.arange(len(y))
    for r in range(ev.repeats):
        try:
            _, _, y_train, _ = _split(rows, y, ev, r)
        except ValueError as exc:
            raise ConfigError(f"cannot draw a stratified split of the data: {exc}", "evaluation.test_fraction") from exc
        if ev.cv_folds >= 2 and any(len(v) > 1 for v in ev.grid.values()):
            smallest = np.unique(y_train, return_counts=True)[1].min()
            if smallest < ev.cv_folds:
                raise ConfigError(f"a class has {smallest} training samples in split {r}, fewer than the "
                                  f"{ev.cv_folds} folds", "evaluation.cv_folds")


def check_config(config: RunConfig) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Check everything a run needs short of fitting the data, as the run itself will do it.

    The data loads and has class labels; the kernels expand and every builder accepts its parameters; each
    split can be drawn; every model's parts build and run (a probe fit on 4 samples) at every grid point,
    with ``M`` the number of kernels (see :mod:`multikernel.config.checks`).

    Returns
    -------
    X, y, feature_names
        The loaded data.

    Raises
    ------
    ConfigError
        Naming the key path of the entry at fault.
    """
    X, y, names = load_data(config.data.source, config.data.format)
    check_data(X, y, config.data.source, "data.source")
    n_kernels = len(check_kernels(config.kernels, X, config.preprocessing.standardize))
    _check_splits(y, config.evaluation)
    checker = PartsChecker(config.solver)
    grid = grid_axes(config.evaluation.grid, "evaluation.grid")
    for i, model in enumerate(config.models):
        # The model's own C, unless the grid sets C.
        own = [] if "C" in config.evaluation.grid else [Axis("C", f"models[{i}].C", ((model.C, f"models[{i}].C"),))]
        checker.check(model, own + grid, n_kernels, f"models[{i}]", "evaluation.grid",
                      label=model.display_name if config.evaluation.grid else None)
    return X, y, names


def run_config(config: RunConfig, progress: bool | None = None) -> dict[str, Any]:
    """Fit and evaluate every model of ``config``; return a JSON-serialisable report.

    Runs :func:`check_config` first.  Each repeat draws a stratified train/test split
    (``evaluation.test_fraction``, seeded by ``evaluation.seed + repeat``); a grid with several values is
    searched by ``cv_folds``-fold cross-validation on the training part only (one value per key is simply
    applied).  ``progress``: ``False`` for silence, otherwise a bar on a terminal and one line per finished
    fit on stderr when it is not one (a log file, CI).
    """
    start = time.perf_counter()
    X, y, feature_names = check_config(config)
    ev = config.evaluation
    models = config.models
    n_kernels = len(make_builders(config.kernels, X.shape[1]))
    grid = {_estimator_key(k): [evaluate_value(v, n_kernels) for v in values] for k, values in ev.grid.items()}
    config_keys = dict(zip(grid, ev.grid, strict=True))
    search = any(len(values) > 1 for values in grid.values())
    report_models = [{"label": m.display_name, "method": m.method, "C": m.C, "repeats": []} for m in models]
    fitted: list[MKLClassifier | None] = [None] * len(models)
    with Progress(ev.repeats * len(models), "fitting", "fit", show=progress) as bar:
        for r in range(ev.repeats):
            Xtr, Xte, ytr, yte = _split(X, y, ev, r)
            for i, model in enumerate(models):
                est = build_estimator(config, model, X.shape[1], i)
                t0 = time.perf_counter()
                best_params: dict[str, Any] = {}
                if search:
                    cv = StratifiedKFold(ev.cv_folds, shuffle=True, random_state=ev.seed + r)
                    searcher = GridSearchCV(est, grid, cv=cv, n_jobs=ev.n_jobs, error_score="raise").fit(Xtr, ytr)
                    est, best_params = searcher.best_estimator_, searcher.best_params_
                else:
                    best_params = {k: values[0] for k, values in grid.items()}
                    est.set_params(**best_params).fit(Xtr, ytr)
                elapsed = time.perf_counter() - t0
                accuracy = float(est.score(Xte, yte))
                weights = np.atleast_2d(est.weights_)
                report_models[i]["repeats"].append({
                    "repeat": r, "accuracy": accuracy, "fit_time": elapsed,
                    "n_iter": np.asarray(est.n_iter_).tolist(), "dual_gap": np.asarray(est.dual_gap_).tolist(),
                    "n_selected": count_selected(weights, SELECTION_THRESHOLD),
                    "weights": weights.tolist(),
                    "best_params": _plain({config_keys[k]: v for k, v in best_params.items()}),
                })
                if r == 0:
                    fitted[i] = est
                bar.done(f"repeat {r + 1}/{ev.repeats} {model.display_name}: accuracy {accuracy:.4f}, "
                         f"{elapsed:.2f} s")
    for entry, est in zip(report_models, fitted, strict=True):
        accs = np.array([rep["accuracy"] for rep in entry["repeats"]])
        entry["accuracy_mean"] = float(accs.mean())
        entry["accuracy_std"] = sample_std(accs)
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
