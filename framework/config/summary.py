"""Summaries of fitted models that a run report and an experiment report both give."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["count_selected", "sample_std"]


def count_selected(weights: Any, threshold: float) -> int:
    """Kernels whose share ``mu_m / sum(mu)`` exceeds ``threshold`` (in any one-vs-rest problem)."""
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    totals = w.sum(axis=1, keepdims=True)
    shares = np.divide(w, totals, out=np.zeros_like(w), where=totals > 0)
    return int(np.count_nonzero(np.any(shares > threshold, axis=0)))


def sample_std(values: Sequence[float]) -> float:
    """The standard deviation over repeats: ``ddof=1`` (MATLAB's ``std``), 0 for a single value."""
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
