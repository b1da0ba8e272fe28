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

__all__ = ["resolve_params", "plugin_table", "PART_PARAMETERS", "grid_points", "standardized", "evaluate_kind"]


#: Estimator parameters that name a part of an MKL method: a table there (``{name = "ml_mkl_sa", random_state =
#: 0}``) becomes the registered plugin.
PART_PARAMETERS = ("loss", "regularizer", "solver")


def plugin_table(table: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The plugin name and parameters of a table: ``{name = ..., <parameter> = ...}``, or ``{name = ..., params =
    {...}}`` as in ``[[methods]]`` entries."""
    if "name" not in table:
        raise ValueError(f"a plugin table needs a 'name' (a registered plugin); got {table!r}")
    if set(table) == {"name", "params"} and isinstance(table["params"], dict):
        return table["name"], dict(table["params"])
    return table["name"], {a: v for a, v in table.items() if a != "name"}


def resolve_params(params: dict[str, Any]) -> dict[str, Any]:
    """Configuration values as the estimator takes them: a ``kernels`` list of kernel tables (``{name = "rbf",
    gamma_scale = 0.25}``) becomes a list of registered kernel builders, and a ``loss``, ``regularizer`` or
    ``solver`` table the registered part."""
    out = dict(params)
    registry = get_registry()
    kernels = out.get("kernels")
    if isinstance(kernels, list) and kernels and all(isinstance(k, dict) for k in kernels):
        out["kernels"] = [registry.create("kernel", name, **options) for name, options in map(plugin_table, kernels)]
    for kind in PART_PARAMETERS:
        if isinstance(out.get(kind), dict):
            name, options = plugin_table(out[kind])
            out[kind] = registry.create(kind, name, **options)
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
