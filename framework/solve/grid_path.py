"""Warm-started walks over a parameter grid, and the grid search's choice of a point.

A grid (``C`` and a regularizer's parameters) is fitted fastest as a path: each point starts from the fit of
a neighbouring one (:func:`multikernel.solve.fit.fit_mkl`'s ``warm``).  :func:`warm_chains` orders the points
so that consecutive ones differ in one step of one parameter, :func:`walk_path` fits them in that order, and
:func:`select_best` picks the point as :class:`~sklearn.model_selection.GridSearchCV` does.  The solvers stop
on their certified gap either way, so a warm start changes the cost of a fit, not the tolerance of its answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from multikernel.solve.fit import FittedMKL

__all__ = ["warm_chains", "walk_path", "select_best"]


def warm_chains(points: Sequence[dict[str, Any]], order: str = "C") -> list[list[int]]:
    """The order in which grid points are fitted, as one chain (a list of index lists, for callers that
    start each chain cold).

    ``order="C"``: points are grouped by every parameter except ``C`` (groups in grid order); ``C`` runs up in
    the first group, down in the second, and so on (a snake), so consecutive points differ in one step.
    ``order="parameters"``: grouped by ``C`` (increasing), the other parameters inside each group in grid
    order, reversed in every second group; with one other parameter (a method's theta, nu, p or v) this is the
    same snake with the roles swapped.  Along a run of constant ``C`` the previous dual variables stay
    feasible and the weights move along the method's regularization path; a step of ``C`` changes both.
    """
    if order not in ("C", "parameters"):
        raise ValueError(f"order must be 'C' or 'parameters'; got {order!r}")
    groups: dict[tuple, list[int]] = {}
    for i, p in enumerate(points):
        key = (tuple(sorted((k, repr(v)) for k, v in p.items() if k != "C")) if order == "C"
               else (p.get("C", 0.0),))
        groups.setdefault(key, []).append(i)
    ranked_groups = list(groups.values()) if order == "C" else [groups[k] for k in sorted(groups)]
    chain: list[int] = []
    for g, idx in enumerate(ranked_groups):
        ranked = sorted(idx, key=lambda i: points[i].get("C", 0.0)) if order == "C" else idx
        chain += ranked if g % 2 == 0 else ranked[::-1]
    return [chain]


def walk_path(points: Sequence[dict[str, Any]], fit_at: Callable[[int, FittedMKL | None], FittedMKL],
              order: str = "C", warm_start: bool = True) -> Iterator[tuple[int, FittedMKL]]:
    """Fit every grid point along :func:`warm_chains`, yielding ``(index, fit)`` in the walk's order.

    ``fit_at(i, previous)`` fits ``points[i]`` started from ``previous``, the fit of the point before it in
    its chain (``None`` at a chain's start, or everywhere without ``warm_start``).
    """
    for chain in warm_chains(points, order):
        previous: FittedMKL | None = None
        for i in chain:
            fitted = fit_at(i, previous if warm_start else None)
            yield i, fitted
            previous = fitted


def select_best(scores: np.ndarray) -> int:
    """Index of the grid point with the highest mean fold score; the first such point on ties
    (as :class:`~sklearn.model_selection.GridSearchCV`)."""
    means = np.mean(scores, axis=1)
    return int(np.flatnonzero(means == means.max())[0])
