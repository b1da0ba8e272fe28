"""Pairs: drawing them from class labels, checking the pairs form, and the percentile targets l and u."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_array, check_random_state

__all__ = ["draw_pairs", "squared_distance_percentiles"]

# Above this many sample pairs the percentiles of l and u are taken on a random sample of pairs: 2e6
# squared distances estimate the 3rd and 97th percentiles to about 1e-4 in rank.
_MAX_PERCENTILE_PAIRS = 2_000_000


def _pair_from_rank(t: np.ndarray, cum: np.ndarray, first_partner: np.ndarray) -> np.ndarray:
    """Decode ranks ``t`` in an enumeration where sample ``i`` (sorted order) owns ``cum[i+1] - cum[i]`` pairs
    whose partners are ``first_partner[i], first_partner[i] + 1, ...``."""
    i = np.searchsorted(cum, t, side="right") - 1
    return np.column_stack([i, first_partner[i] + (t - cum[i])])


def draw_pairs(y, n_constraints: int | None = None, random_state=None) -> tuple[np.ndarray, np.ndarray]:
    """Draw similar and dissimilar pairs of samples from class labels.

    Pairs are drawn uniformly without replacement among the distinct unordered pairs of samples of the same
    class (similar) and of different classes (dissimilar), then shuffled together (the projections visit them
    in this order).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels (any type scikit-learn accepts), at least two classes.
    n_constraints : int, default=None
        Number of similar pairs, and also of dissimilar pairs, to draw (metric-learn's meaning). ``None``:
        ``20 * n_classes**2``, metric-learn's default. When fewer distinct pairs of a kind exist, all of them
        are taken.
    random_state : int, RandomState instance or None, default=None
        Seed of the draw.

    Returns
    -------
    pairs : ndarray of shape (n_pairs, 2), intp
        Row indices into ``y``, first index smaller than the second.
    pair_labels : ndarray of shape (n_pairs,)
        ``+1`` for similar, ``-1`` for dissimilar pairs.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be one label per sample (1-D); got shape {y.shape}.")
    classes, codes = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(
            f"the supervised form draws dissimilar pairs from different classes, but y has {len(classes)} class; "
            "pass labels of at least two classes, or use the pairs form fit(pairs, pair_labels)."
        )
    if n_constraints is None:
        n_constraints = 20 * len(classes) ** 2
    if isinstance(n_constraints, bool) or not isinstance(n_constraints, int | np.integer) or n_constraints < 1:
        raise ValueError(f"n_constraints must be a positive integer or None; got {n_constraints!r}.")
    rng = check_random_state(random_state)
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes)
    end = np.cumsum(counts)[codes[order]]  # one past the last sample of each sorted sample's class
    pos = np.arange(len(y))
    # similar partners of sorted sample i: i+1 .. end-1; dissimilar ones: end .. n-1 (the later classes)
    n_sim_i, n_dis_i = end - pos - 1, len(y) - end
    drawn = []
    for per_sample, first, label in ((n_sim_i, pos + 1, 1), (n_dis_i, end, -1)):
        cum = np.concatenate([[0], np.cumsum(per_sample)])
        k = min(int(n_constraints), int(cum[-1]))
        if k == 0:
            continue
        ranks = np.sort(rng.choice(int(cum[-1]), size=k, replace=False))
        sorted_pairs = _pair_from_rank(ranks, cum, first)
        drawn.append((order[sorted_pairs], np.full(k, label)))
    pairs = np.concatenate([p for p, _ in drawn])
    labels = np.concatenate([lab for _, lab in drawn])
    pairs.sort(axis=1)
    perm = rng.permutation(len(labels))
    return pairs[perm].astype(np.intp), labels[perm].astype(np.float64)


def squared_distance_percentiles(X: np.ndarray, percentiles, random_state=None) -> np.ndarray:
    """Percentiles of the squared Euclidean distances between all pairs of distinct rows of ``X``.

    The ITML targets: ``l`` (similar pairs) and ``u`` (dissimilar pairs) are the 3rd and 97th percentiles
    (Xu 2014, section 5.5.1, following Davis et al.). Duplicated rows count once. Above two million pairs, a
    uniform random sample of two million pairs is used.
    """
    X = np.unique(np.asarray(X, dtype=np.float64), axis=0)
    n = X.shape[0]
    if n < 2:
        raise ValueError("the targets l and u need at least two distinct samples; pass bounds=(l, u).")
    n_pairs = n * (n - 1) // 2
    sq = np.einsum("ij,ij->i", X, X)
    if n_pairs <= _MAX_PERCENTILE_PAIRS:
        i, j = np.triu_indices(n, k=1)
    else:
        rng = check_random_state(random_state)
        i = rng.randint(0, n, size=_MAX_PERCENTILE_PAIRS)
        j = (i + rng.randint(1, n, size=_MAX_PERCENTILE_PAIRS)) % n  # j != i
    if n_pairs <= _MAX_PERCENTILE_PAIRS:  # n <= 2000: the Gram matrix is at most 32 MB
        d = np.maximum(sq[i] + sq[j] - 2.0 * (X @ X.T)[i, j], 0.0)
    else:  # sampled pairs, by blocks: no n x n matrix
        d = np.empty(len(i))
        for s in range(0, len(i), 65536):
            diff = X[i[s : s + 65536]] - X[j[s : s + 65536]]
            d[s : s + 65536] = np.einsum("ij,ij->i", diff, diff)
    return np.percentile(d, percentiles)


def as_pairs(pairs, preprocessor=None, *, name: str = "pairs") -> tuple[np.ndarray, np.ndarray]:
    """Rows and index pairs from metric-learn's two pair formats.

    ``pairs`` is either an array of shape (n_pairs, 2, n_features), or, with an array ``preprocessor`` of
    shape (n_samples, n_features), integer indices of shape (n_pairs, 2) into its rows.

    Returns
    -------
    X : ndarray of shape (n_rows, n_features), float64
    index : ndarray of shape (n_pairs, 2), intp
    """
    if preprocessor is not None:
        if callable(preprocessor):
            raise TypeError("only an array preprocessor (the samples that index pairs point to) is supported.")
        X = check_array(preprocessor, dtype=np.float64, input_name="preprocessor")
        idx = np.asarray(pairs)
        if idx.ndim != 2 or idx.shape[1] != 2 or not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(
                f"with a preprocessor, {name} must be integer row indices of shape (n_pairs, 2); "
                f"got shape {idx.shape} and dtype {idx.dtype}."
            )
        if idx.shape[0] == 0:
            raise ValueError(f"{name} is empty; pass at least one pair.")
        bad = np.flatnonzero((idx < 0).any(axis=1) | (idx >= X.shape[0]).any(axis=1))
        if bad.size:
            raise ValueError(
                f"{name}[{bad[0]}] = {tuple(int(t) for t in idx[bad[0]])} indexes outside the preprocessor's "
                f"{X.shape[0]} rows ({bad.size} such pairs); indices must lie in [0, {X.shape[0]})."
            )
        return X, idx.astype(np.intp)
    arr = np.asarray(pairs)
    if arr.ndim == 2 and arr.shape[1:] == (2,) and np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} are indices of shape (n_pairs, 2) but the estimator has no preprocessor; "
                         "set preprocessor=X (the samples they index) or pass pairs of shape (n_pairs, 2, n_features).")
    if arr.ndim != 3 or arr.shape[1] != 2:
        raise ValueError(
            f"{name} must have shape (n_pairs, 2, n_features), or (n_pairs, 2) indices with a preprocessor; "
            f"got shape {arr.shape}."
        )
    m, _, d = arr.shape
    if m == 0:
        raise ValueError(f"{name} is empty; pass at least one pair.")
    X = check_array(arr.reshape(2 * m, d), dtype=np.float64, input_name=name)
    return X, np.arange(2 * m, dtype=np.intp).reshape(m, 2)


def check_pair_labels(pair_labels, n_pairs: int) -> np.ndarray:
    """Pair labels as float64 ``+1`` (similar) / ``-1`` (dissimilar), one per pair."""
    y = np.asarray(pair_labels)
    if y.ndim != 1 or y.shape[0] != n_pairs:
        raise ValueError(f"pair_labels must have one entry per pair ({n_pairs}); got shape {y.shape}.")
    values = set(np.unique(y).tolist())
    if not values <= {-1, 1}:
        raise ValueError(
            f"pair labels must be +1 (similar) or -1 (dissimilar), as metric-learn's; got values {sorted(values)}."
        )
    return y.astype(np.float64)
