"""Problems shared by the IOKL tests."""

from __future__ import annotations

import numpy as np


def drawn_bags(n_bags: int = 18, seed: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bags of 2-5 instances, bag ids that are neither contiguous nor sorted in the file, and a positive bag's
    witness shifted by +2 (an overlap that makes the C grid matter)."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(np.arange(100, 100 + 7 * n_bags, 7))
    X, groups, y = [], [], []
    for k, bag in enumerate(ids):
        m = int(rng.integers(2, 6))
        pts = rng.normal(size=(m, 2))
        label = 1 if k % 2 == 0 else -1
        if label > 0:
            pts[rng.integers(m)] += 2.0
        X.append(pts)
        groups += [bag] * m
        y += [label] * m
    order = rng.permutation(len(groups))  # instances of a bag are not contiguous
    return np.vstack(X)[order], np.array(y)[order], np.array(groups)[order]
