"""Generated data of the tasks that need more than features and labels: bags, a second view, a real target.

Each generator returns ``(X, y, groups, privileged)`` (``groups`` the bag of each instance, ``privileged`` a second
view of the same samples; ``None`` where the data have none) and is named in configurations as a data source
(:data:`multikernel.config.task_data.TASK_GENERATORS`), its arguments in ``params``.  They are small and quick, for
the embedded examples of ``multikernel run --example`` and for trying an estimator.
"""

from __future__ import annotations

import numpy as np

__all__ = ["make_bags", "make_two_views", "make_friedman1", "EXAMPLE_GENERATORS"]

Generated = tuple[np.ndarray, np.ndarray, "np.ndarray | None", "np.ndarray | None"]


def make_bags(n_bags: int = 40, n_features: int = 5, min_size: int = 3, max_size: int = 8, separation: float = 3.0,
              random_state: int | None = None) -> Generated:
    """Multiple-instance data: ``n_bags`` bags (half positive) of ``min_size`` to ``max_size`` instances.

    Negative instances are standard Gaussians; each positive bag holds one to three instances drawn around a
    mean ``separation`` away from the origin along the first feature (the witnesses), the others negative.  Every
    instance carries its bag's label (1 positive, 0 negative) and its bag's id in ``groups``.
    """
    if n_bags < 4 or not 1 <= min_size <= max_size:
        raise ValueError(f"make_bags needs n_bags >= 4 and 1 <= min_size <= max_size; got n_bags={n_bags}, "
                         f"min_size={min_size}, max_size={max_size}")
    rng = np.random.default_rng(random_state)
    X, y, groups = [], [], []
    for b in range(n_bags):
        size = int(rng.integers(min_size, max_size + 1))
        bag = rng.normal(size=(size, n_features))
        positive = b % 2 == 1
        if positive:
            witnesses = rng.choice(size, size=min(size, int(rng.integers(1, 4))), replace=False)
            bag[witnesses, 0] += separation
        X.append(bag)
        y += [int(positive)] * size
        groups += [b] * size
    return np.vstack(X), np.array(y), np.array(groups, dtype=np.float64), None


def make_two_views(n_samples: int = 120, n_classes: int = 3, n_features: int = 8, n_privileged: int = 4,
                   noise: float = 1.5, privileged_noise: float = 0.3, random_state: int | None = None) -> Generated:
    """Two views of the same samples: class centres in a 2-D latent space seen through a random linear map with
    ``noise`` (the features) and through another with ``privileged_noise`` (the privileged view, cleaner).

    For metric learning with privileged information (the second view seen in training only) and for cross-modal
    learning (each view a modality).  Labels ``0 .. n_classes - 1``, in turn.
    """
    if n_samples < 2 * n_classes or n_classes < 2:
        raise ValueError(f"make_two_views needs n_classes >= 2 and two samples per class; got n_samples="
                         f"{n_samples}, n_classes={n_classes}")
    rng = np.random.default_rng(random_state)
    y = np.arange(n_samples) % n_classes
    angles = 2 * np.pi * np.arange(n_classes) / n_classes
    latent = np.c_[np.cos(angles), np.sin(angles)][y] * 2.0 + 0.5 * rng.normal(size=(n_samples, 2))
    X = latent @ rng.normal(size=(2, n_features)) + noise * rng.normal(size=(n_samples, n_features))
    Z = latent @ rng.normal(size=(2, n_privileged)) + privileged_noise * rng.normal(size=(n_samples, n_privileged))
    return X, y, None, Z


def make_friedman1(n_samples: int = 200, n_features: int = 10, noise: float = 1.0,
                   random_state: int | None = None) -> Generated:
    """Friedman's regression problem #1 (:func:`sklearn.datasets.make_friedman1`): a real target from five
    of the features through sines, squares and products, with Gaussian noise."""
    from sklearn.datasets import make_friedman1 as friedman

    X, y = friedman(n_samples=n_samples, n_features=n_features, noise=noise, random_state=random_state)
    return X, y, None, None


EXAMPLE_GENERATORS = {"bags": make_bags, "two_views": make_two_views, "friedman1": make_friedman1}
"""Generators of data with bags, a second view or a real target: ``name -> f(random_state=seed, **params)``."""
