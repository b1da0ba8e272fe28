"""One evaluation of an estimator of any task kind: standardize, fit by the kind's convention, measure.

What ``multikernel run`` and the task experiments share, with no per-kind code: the task kind
(:class:`multikernel.core.tasks.TaskKind`) says how its estimators are fitted and measured; this module adds the
standardization the configuration asks for (:func:`standardized`), the grid points of a ``{key: [values]}``
table (:func:`grid_points`) and configuration values as estimators take them (:func:`resolve_params`).
"""

from __future__ import annotations

from itertools import product
from typing import Any

import numpy as np
from sklearn.preprocessing import StandardScaler

from multikernel.config.task_data import TaskData
from multikernel.core.registry import get_registry
from multikernel.core.tasks import TaskKind

__all__ = ["resolve_params", "grid_points", "standardized", "evaluate_kind"]


def resolve_params(params: dict[str, Any]) -> dict[str, Any]:
    """Configuration values as the estimator takes them: a ``kernels`` list of kernel tables (``{name = "rbf",
    gamma_scale = 0.25}``) becomes a list of registered kernel builders."""
    out = dict(params)
    kernels = out.get("kernels")
    if isinstance(kernels, list) and kernels and all(isinstance(k, dict) for k in kernels):
        registry = get_registry()
        built = []
        for k in kernels:
            if "name" not in k:
                raise ValueError(f"a kernel table needs a 'name' (a registered kernel); got {k!r}")
            built.append(registry.create("kernel", k["name"], **{a: v for a, v in k.items() if a != "name"}))
        out["kernels"] = built
    return out


def grid_points(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of a ``{key: [values]}`` grid, the last key varying fastest (``[{}]`` for no grid)."""
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in product(*(grid[k] for k in keys))]


def standardized(kind: TaskKind, data: TaskData, train: np.ndarray, standardize: bool) -> TaskData:
    """``data`` with its feature vectors (and privileged view) standardized by the statistics of the samples the
    fit sees: every sample for a transductive kind, the training samples otherwise; matrix samples as they are."""
    if not standardize:
        return data
    rows = np.arange(data.n_samples) if kind.transductive else train

    def scaled(Z: np.ndarray | None) -> np.ndarray | None:
        if Z is None or Z.ndim != 2:
            return Z
        return StandardScaler().fit(Z[rows]).transform(Z)

    return TaskData(scaled(data.X), data.y, data.groups, scaled(data.privileged))


def evaluate_kind(kind: TaskKind, estimator: Any, data: TaskData, train: np.ndarray, test: np.ndarray, *,
                  standardize: bool = True, setting: Any = None, neighbors: int = 3, seed: int = 0
                  ) -> dict[str, float]:
    """Fit ``estimator`` on the training samples by the kind's convention and measure it on the test samples
    (the kind's :meth:`~multikernel.core.tasks.TaskKind.evaluate`, on data standardized as asked)."""
    return kind.evaluate(estimator, standardized(kind, data, train, standardize), train, test, setting=setting,
                         neighbors=neighbors, seed=seed)
