"""The toy generator of Kobayashi (2014), section 6.1.1 (rebuilt: the paper gives no code or noise level)."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from multikernel.core.validation import check_positive_integer, check_real

__all__ = ["make_toy_bilinear"]


def make_toy_bilinear(n_per_class: int = 100, size: int = 100, *, support: float = 0.3, noise: float = 0.15,
                      block: int = 5, random_state: int | np.random.RandomState | None = None,
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Two classes of binary ``size x size`` images, each class a rank-1 pattern plus block noise.

    Class ``k`` is the outer product ``u_k v_k'`` of two 0/1 indicator vectors with random supports of
    ``support * size`` entries (different supports for the two classes); every ``block x block`` tile of
    every image is, with probability ``noise``, replaced by salt (1) or pepper (0) at random.

    Parameters
    ----------
    n_per_class : int, default=100
    size : int, default=100
        Images are ``size x size``; ``size`` must be a multiple of ``block``.
    support : float, default=0.3
        Fraction of rows (and of columns) in the support of each class pattern, in (0, 1].
    noise : float, default=0.15
        Probability that a tile is overwritten by salt-and-pepper noise, in [0, 1].
    block : int, default=5
        Side of the noise tiles.
    random_state : int, RandomState instance or None

    Returns
    -------
    X : ndarray of shape (2 * n_per_class, size, size), float64 in {0, 1}
    y : ndarray of shape (2 * n_per_class,), labels -1 (class 0) and +1 (class 1)
    """
    n_per_class = check_positive_integer("n_per_class", n_per_class)
    size = check_positive_integer("size", size)
    block = check_positive_integer("block", block)
    support = check_real("support", support, low=0.0)
    noise = check_real("noise", noise, low=0.0, strict=False)
    if size % block:
        raise ValueError(f"size={size} must be a multiple of block={block}")
    if support > 1 or noise > 1:
        raise ValueError(f"support and noise must be at most 1; got support={support}, noise={noise}")
    rng = check_random_state(random_state)
    k = max(1, int(round(support * size)))
    patterns = []
    for _ in range(2):
        u = np.zeros(size)
        v = np.zeros(size)
        u[rng.choice(size, k, replace=False)] = 1
        v[rng.choice(size, k, replace=False)] = 1
        patterns.append(np.outer(u, v))
    n = 2 * n_per_class
    y = np.repeat([-1.0, 1.0], n_per_class)
    X = np.stack([patterns[int(label > 0)] for label in y])
    tiles = size // block
    hit = rng.random_sample((n, tiles, tiles)) < noise
    value = (rng.random_sample((n, tiles, tiles)) < 0.5).astype(float)
    mask = np.kron(hit, np.ones((block, block)))
    X = np.where(mask > 0, np.kron(value, np.ones((block, block))), X)
    return X, y
