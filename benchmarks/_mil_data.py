"""The folds and bags that the MIL benchmarks share with the misvm package (imported by the bench_* scripts).

10-fold bag-stratified cross-validation (``StratifiedKFold(10, shuffle=True, random_state=seed)`` over the bags),
features standardised on the training fold's instances.  misvm takes a list of bags and bag labels in {-1, +1}.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mil"

try:
    import misvm
except ImportError:  # the peer is optional: the scripts then run the library alone
    misvm = None


def mil_folds(path: Path, seed: int, n_folds: int = 10) -> Iterator[tuple[np.ndarray, ...]]:
    """``(X_train, bags_train, y_train, X_test, bags_test, y_test_bags)`` per fold of the MIL CSV at ``path``.

    ``y_train`` has one label per training instance; ``y_test_bags`` one per test bag, in the order of
    ``np.unique(bags_test)``.
    """
    data = pd.read_csv(path)
    X = data.filter(like="x").to_numpy(dtype=np.float64)
    ids = data["bag"].to_numpy()
    uniq = np.unique(ids)
    yb = data.groupby("bag")["label"].first().loc[uniq].to_numpy()
    for tr, te in StratifiedKFold(n_folds, shuffle=True, random_state=seed).split(uniq, yb):
        itr, ite = np.isin(ids, uniq[tr]), np.isin(ids, uniq[te])
        scaler = StandardScaler().fit(X[itr])
        yield (scaler.transform(X[itr]), ids[itr], data["label"].to_numpy()[itr],
               scaler.transform(X[ite]), ids[ite], yb[te])


def as_bags(X: np.ndarray, ids: np.ndarray) -> list[np.ndarray]:
    """The instances of each bag, in the order of ``np.unique(ids)`` (misvm's input)."""
    return [X[ids == b] for b in np.unique(ids)]


def bag_labels(y: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """One label per bag in {-1, +1}, in the order of ``np.unique(ids)``."""
    yb = pd.Series(y).groupby(ids).first().to_numpy()
    return np.where(yb > 0, 1.0, -1.0)
