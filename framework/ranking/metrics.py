"""Multi-label ranking measures that scikit-learn lacks (spec section 8 and the usual multi-label ones).

scikit-learn already has ``label_ranking_loss``, ``coverage_error`` and ``label_ranking_average_precision_score``
(use them); this module adds

* :func:`one_error` -- fraction of samples whose top-ranked label is irrelevant;
* :func:`coverage_mulan` -- coverage in the MULAN convention (how many labels *beyond the first* must be
  retrieved to cover all relevant ones): scikit-learn's ``coverage_error`` minus one;
* :func:`example_auc` -- the thesis's *image-based AUC-ROC* (section 8.1): per sample, the area under the ROC
  curve of its label ranking, averaged over samples;
* :func:`example_average_precision` -- the thesis's image-based AP: per sample, PASCAL VOC 2007's 11-point
  interpolated average precision (or the non-interpolated one), averaged over samples;
* :func:`label_average_precision` -- the thesis's *category-based MAP* (section 8.2): per label, the average
  precision of the ranking of the samples, averaged over labels;
* :func:`recall_at_k` -- per sample, the fraction of its relevant labels among its ``k`` top-ranked ones;
* :func:`known_ranking_loss` -- scikit-learn's ``label_ranking_loss`` over the known labels only, for label
  matrices with unknown (``NaN``) entries (the rankers' ``score`` is one minus it).

Every function takes ``Y_true`` (n_samples, n_labels) of 0/1 (dense or sparse) and ``scores`` of the same shape
(higher = more relevant; ``decision_function`` of any ranker), and returns a fraction (multiply by 100 for the
thesis's percentages).  Ties in the scores count against the ranker (as in scikit-learn's ``coverage_error`` and
``label_ranking_loss``), except in the AUC, where a tied (relevant, irrelevant) pair counts one half (the area
under the ROC curve with tied scores as one threshold), and in the average precisions, where tied scores form
one threshold (as in scikit-learn's ``average_precision_score``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.stats import rankdata
from sklearn.metrics import coverage_error, label_ranking_average_precision_score, label_ranking_loss

from multikernel.ranking.labels import check_label_matrix

__all__ = [
    "one_error",
    "coverage_mulan",
    "example_auc",
    "example_average_precision",
    "label_average_precision",
    "recall_at_k",
    "known_ranking_loss",
    "ranking_scores",
]

INTERPOLATIONS = ("voc07_11pt", None)


def _check(Y_true: Any, scores: Any) -> tuple[np.ndarray, np.ndarray]:
    Y = check_label_matrix(Y_true, allow_missing=False, what="Y_true")
    S = np.asarray(scores, dtype=np.float64)
    if S.shape != Y.shape:
        raise ValueError(f"scores must have the shape of Y_true {Y.shape}; got {S.shape}")
    if not np.isfinite(S).all():
        raise ValueError("scores must be finite")
    return Y > 0, S


def one_error(Y_true: Any, scores: Any) -> float:
    """Fraction of samples whose top-ranked label is not relevant (lower is better).

    A tie at the top counts as an error when any of the tied labels is irrelevant.  Samples without a relevant
    label always count as errors (MULAN's convention).
    """
    Y, S = _check(Y_true, scores)
    top = S == S.max(axis=1, keepdims=True)
    return float(np.mean(np.any(top & ~Y, axis=1)))


def coverage_mulan(Y_true: Any, scores: Any) -> float:
    """MULAN's coverage: the mean of (the rank of the lowest-ranked relevant label) - 1 (lower is better).

    It is ``sklearn.metrics.coverage_error - 1`` on samples with a relevant label; samples without one count 0
    (as in both libraries).  Ranks of tied scores are the largest (pessimistic, as scikit-learn's).
    """
    Y, S = _check(Y_true, scores)
    lowest = np.where(Y, S, np.inf).min(axis=1, keepdims=True)
    depth = np.sum(S >= lowest, axis=1) - 1
    return float(np.mean(np.where(Y.any(axis=1), depth, 0)))


def example_auc(Y_true: Any, scores: Any) -> float:
    """The thesis's image-based AUC-ROC: each sample's area under the ROC curve of its labels, averaged.

    Equal to the fraction of (relevant, irrelevant) label pairs ordered correctly, ties counting one half.
    Samples without a relevant or without an irrelevant label have no ROC curve and are skipped (spec 8.1).
    """
    Y, S = _check(Y_true, scores)
    a, b = Y.sum(axis=1), (~Y).sum(axis=1)
    keep = (a > 0) & (b > 0)
    if not keep.any():
        raise ValueError("no sample has both a relevant and an irrelevant label: the AUC is undefined")
    ranks = rankdata(S[keep], axis=1, method="average")
    a, b = a[keep], b[keep]
    auc = (np.sum(np.where(Y[keep], ranks, 0.0), axis=1) - a * (a + 1) / 2.0) / (a * b)
    return float(auc.mean())


def _average_precision(y: np.ndarray, s: np.ndarray, interpolation: str | None) -> float:
    """Average precision of the ranking ``s`` of items with relevance ``y`` (at least one relevant item)."""
    order = np.argsort(-s, kind="mergesort")
    y, s = y[order], s[order]
    last = np.r_[np.flatnonzero(np.diff(s) != 0.0), len(s) - 1]      # end of each group of tied scores
    tp = np.cumsum(y)[last]
    precision = tp / (last + 1.0)
    recall = tp / tp[-1]
    if interpolation is None:  # scikit-learn's step-wise sum
        return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))
    levels = np.linspace(0.0, 1.0, 11)
    # PASCAL VOC 2007: p_interp(r) = max precision at a recall >= r (0 if none)
    suffix_max = np.maximum.accumulate(precision[::-1])[::-1]
    idx = np.searchsorted(recall, levels - 1e-12, side="left")       # first threshold with recall >= r
    return float(np.mean(np.where(idx < len(recall), suffix_max[np.minimum(idx, len(recall) - 1)], 0.0)))


def _check_interpolation(interpolation: str | None) -> None:
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"interpolation must be 'voc07_11pt' or None; got {interpolation!r}")


def example_average_precision(Y_true: Any, scores: Any, interpolation: str | None = "voc07_11pt") -> float:
    """The thesis's image-based AP: each sample's average precision of its label ranking, averaged.

    Parameters
    ----------
    interpolation : {"voc07_11pt", None}
        ``"voc07_11pt"``: the mean of the interpolated precision ``max_{recall >= r} precision`` at the 11
        recall levels 0, 0.1, ..., 1 (PASCAL VOC 2007, the thesis's "AP following PASCAL VOC"); ``None``: the
        non-interpolated average precision of ``sklearn.metrics.average_precision_score``.

    Samples without a relevant label are skipped.
    """
    _check_interpolation(interpolation)
    Y, S = _check(Y_true, scores)
    keep = np.flatnonzero(Y.any(axis=1))
    if len(keep) == 0:
        raise ValueError("no sample has a relevant label: the average precision is undefined")
    return float(np.mean([_average_precision(Y[i], S[i], interpolation) for i in keep]))


def label_average_precision(Y_true: Any, scores: Any, interpolation: str | None = "voc07_11pt") -> float:
    """The thesis's category-based MAP: per label, the average precision of the samples ranked by its scores.

    ``interpolation`` as in :func:`example_average_precision` (``None`` gives scikit-learn's
    ``average_precision_score(Y_true, scores, average="macro")``).  Labels without a relevant sample are skipped.
    """
    _check_interpolation(interpolation)
    Y, S = _check(Y_true, scores)
    keep = np.flatnonzero(Y.any(axis=0))
    if len(keep) == 0:
        raise ValueError("no label has a relevant sample: the mean average precision is undefined")
    return float(np.mean([_average_precision(Y[:, k], S[:, k], interpolation) for k in keep]))


def recall_at_k(Y_true: Any, scores: Any, k: int | Sequence[int]) -> float | np.ndarray:
    """Mean fraction of each sample's relevant labels found among its ``k`` top-ranked labels.

    Labels tied with the ``k``-th score are ranked irrelevant first.  Samples without a relevant label are
    skipped.  With a sequence of ``k`` the result is an array (a recall curve, as the thesis's Fig. 6.1).
    """
    Y, S = _check(Y_true, scores)
    ks = np.atleast_1d(np.asarray(k))
    if ks.dtype.kind not in "iu" or (ks < 1).any():
        raise ValueError(f"k must be a positive integer or a sequence of them; got {k!r}")
    keep = Y.any(axis=1)
    if not keep.any():
        raise ValueError("no sample has a relevant label: the recall is undefined")
    Y, S = Y[keep], S[keep]
    order = np.lexsort((Y, -S), axis=1)          # by score, descending; ties: irrelevant first
    found = np.cumsum(np.take_along_axis(Y, order, axis=1), axis=1)
    at = np.minimum(ks, Y.shape[1]) - 1
    recall = (found[:, at] / Y.sum(axis=1, keepdims=True)).mean(axis=0)
    return float(recall[0]) if np.ndim(k) == 0 else recall


def known_ranking_loss(Y_true: Any, scores: Any) -> float:
    """``sklearn.metrics.label_ranking_loss`` over the known labels: ``NaN`` entries of ``Y_true`` are ignored.

    Per sample, the fraction of its (relevant, irrelevant) pairs of known labels whose relevant label does not
    score strictly above the irrelevant one (a tie counts as a mis-ordered pair, as in scikit-learn); a sample
    without such a pair counts 0, and the mean is over all samples (scikit-learn's conventions, so that on
    complete labels both functions agree).

    Parameters
    ----------
    Y_true : array-like of shape (n_samples, n_labels)
        1 relevant, 0 irrelevant, ``NaN`` unknown.
    scores : array-like of shape (n_samples, n_labels)

    Returns
    -------
    float
        In [0, 1]; lower is better.
    """
    Y = check_label_matrix(Y_true, what="Y_true")
    S = np.asarray(scores, dtype=np.float64)
    if S.shape != Y.shape:
        raise ValueError(f"scores must have the shape of Y_true {Y.shape}; got {S.shape}")
    if not np.isfinite(S).all():
        raise ValueError("scores must be finite")
    relevant, irrelevant = Y == 1, Y == 0
    # bad[i, k, l]: relevant k does not score above irrelevant l (n x m x m, by blocks of samples)
    loss = np.zeros(len(Y))
    step = max(1, 2**22 // max(1, Y.shape[1] ** 2))
    for start in range(0, len(Y), step):
        s, r, q = S[start:start + step], relevant[start:start + step], irrelevant[start:start + step]
        bad = (s[:, :, None] <= s[:, None, :]) & r[:, :, None] & q[:, None, :]
        pairs = r.sum(axis=1) * q.sum(axis=1)
        loss[start:start + step] = np.where(pairs > 0, bad.sum(axis=(1, 2)) / np.maximum(pairs, 1), 0.0)
    return float(loss.mean())


def ranking_scores(Y_true: Any, scores: Any) -> dict[str, float]:
    """Every ranking measure of the experiments at once (fractions; lower is better for the losses).

    Keys: ``example_auc``, ``example_ap`` (11-point), ``label_map`` (11-point), ``ranking_loss``,
    ``one_error``, ``coverage`` (MULAN), ``coverage_sklearn`` (``coverage_error``), ``lrap`` (scikit-learn's label
    ranking average precision).
    """
    Y, S = _check(Y_true, scores)
    Yi = Y.astype(np.int64)
    return {
        "example_auc": example_auc(Yi, S),
        "example_ap": example_average_precision(Yi, S),
        "label_map": label_average_precision(Yi, S),
        "ranking_loss": float(label_ranking_loss(Yi, S)),
        "one_error": one_error(Yi, S),
        "coverage": coverage_mulan(Yi, S),
        "lrap": float(label_ranking_average_precision_score(Yi, S)),
        "coverage_sklearn": float(coverage_error(Yi, S)),
    }
