"""Ranking measures on hand-computed examples, and their relations to scikit-learn's (spec 8, 9.25)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import average_precision_score, coverage_error, roc_auc_score

from multikernel.ranking.metrics import (
    coverage_mulan,
    example_auc,
    example_average_precision,
    label_average_precision,
    one_error,
    ranking_scores,
    recall_at_k,
)

# Three samples, three labels; sample 2 has a tie between a relevant and an irrelevant label.
Y = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 0]])
S = np.array([[0.9, 0.5, 0.1], [0.5, 0.7, 0.2], [0.3, 0.6, 0.6]])


def test_one_error_by_hand():
    # tops: label 0 (relevant); label 1 (relevant); labels 1 and 2 tied, 2 irrelevant: an error
    assert one_error(Y, S) == pytest.approx(1 / 3)
    assert one_error(sp.csr_matrix(Y), S) == pytest.approx(1 / 3)


def test_coverage_by_hand_and_the_two_conventions():
    # lowest relevant label at rank 1, 3, 3 (ties pessimistic): MULAN counts the labels beyond the first
    assert coverage_mulan(Y, S) == pytest.approx((0 + 2 + 2) / 3)
    assert coverage_error(Y, S) == pytest.approx((1 + 3 + 3) / 3)
    rng = np.random.default_rng(0)
    Yr = (rng.random((50, 6)) < 0.3).astype(int)
    Yr[0] = 0                                       # no relevant label: 0 in both conventions
    Sr = rng.integers(0, 4, size=(50, 6)).astype(float)
    has = Yr.any(axis=1)
    assert coverage_mulan(Yr, Sr) == pytest.approx((coverage_error(Yr, Sr) * 50 - has.sum()) / 50)


def test_example_auc_by_hand():
    # pairs ordered correctly: 2/2, 1/2, (0 + 1/2 for the tie)/2
    assert example_auc(Y, S) == pytest.approx((1.0 + 0.5 + 0.25) / 3)


def test_example_auc_is_the_mean_trapezoidal_roc_area():
    """Spec 9.25: pair counting equals the per-sample ROC area (scikit-learn), ties included."""
    rng = np.random.default_rng(1)
    Yr = (rng.random((80, 7)) < 0.35).astype(int)
    Sr = rng.integers(0, 5, size=(80, 7)).astype(float)
    keep = (Yr.sum(axis=1) > 0) & (Yr.sum(axis=1) < 7)
    expected = np.mean([roc_auc_score(Yr[i], Sr[i]) for i in np.flatnonzero(keep)])
    assert example_auc(Yr, Sr) == pytest.approx(expected, rel=1e-12)


def test_perfect_and_random_rankings():
    """Spec 9.25: a perfect ranking has AUC and AP 1; random scores have AUC 1/2 in expectation."""
    rng = np.random.default_rng(2)
    Yr = (rng.random((4000, 8)) < 0.3).astype(int)
    Yr[:, 0] = 1
    perfect = Yr + 0.1 * rng.random(Yr.shape)
    assert example_auc(Yr, perfect) == 1.0
    assert example_average_precision(Yr, perfect) == 1.0
    assert label_average_precision(Yr, perfect + rng.random(Yr.shape)) < 1.0
    assert example_auc(Yr, rng.random(Yr.shape)) == pytest.approx(0.5, abs=0.01)


def test_example_average_precision_by_hand():
    # sample 0: AP 1.  sample 1 (rel, irr, rel): P = 1, 1/2, 2/3 at R = 1/2, 1/2, 1 -> 11-point
    # (6 * 1 + 5 * 2/3) / 11 = 28/33, non-interpolated 1/2 + 1/3 = 5/6.  sample 2 (tie of rel and irr first):
    # P = 1/2, 2/3 at R = 1/2, 1 -> 11-point 2/3, non-interpolated 1/4 + 1/3 = 7/12
    assert example_average_precision(Y, S) == pytest.approx((1 + 28 / 33 + 2 / 3) / 3)
    assert example_average_precision(Y, S, interpolation=None) == pytest.approx((1 + 5 / 6 + 7 / 12) / 3)


def test_non_interpolated_ap_is_scikit_learns():
    rng = np.random.default_rng(3)
    Yr = (rng.random((60, 9)) < 0.3).astype(int)
    Yr[:, 0] = 1
    Sr = rng.integers(0, 6, size=(60, 9)).astype(float)
    per_sample = average_precision_score(Yr.T, Sr.T, average="macro")
    assert example_average_precision(Yr, Sr, interpolation=None) == pytest.approx(per_sample, rel=1e-12)
    assert label_average_precision(Yr[:, 1:], Sr[:, 1:], interpolation=None) == pytest.approx(
        average_precision_score(Yr[:, 1:], Sr[:, 1:], average="macro"), rel=1e-12)


def test_label_average_precision_by_hand():
    # label 0 ranks samples 0 (rel), 1, 2 (rel): 28/33 or 5/6; label 1 ranks its two relevant samples first: 1;
    # label 2 ranks an irrelevant sample first: P = 1/2 at R = 1 -> 1/2
    assert label_average_precision(Y, S) == pytest.approx((28 / 33 + 1 + 0.5) / 3)
    assert label_average_precision(Y, S, interpolation=None) == pytest.approx((5 / 6 + 1 + 0.5) / 3)


def test_recall_at_k_by_hand():
    # top-1: relevant (1/1), relevant (1/2), tie broken against the relevant label (0/2)
    assert recall_at_k(Y, S, 1) == pytest.approx(0.5)
    np.testing.assert_allclose(recall_at_k(Y, S, [1, 2, 3, 10]), [0.5, (1 + 0.5 + 0.5) / 3, 1.0, 1.0])


def test_ranking_scores_collects_everything():
    scores = ranking_scores(Y, S)
    assert scores["example_auc"] == pytest.approx(example_auc(Y, S))
    assert scores["coverage"] == pytest.approx(scores["coverage_sklearn"] - 1)
    assert set(scores) == {"example_auc", "example_ap", "label_map", "ranking_loss", "one_error", "coverage",
                           "coverage_sklearn", "lrap"}


def test_bad_inputs():
    with pytest.raises(ValueError, match="shape of Y_true"):
        one_error(Y, S[:, :2])
    with pytest.raises(ValueError, match="finite"):
        example_auc(Y, np.where(S > 0.8, np.nan, S))
    with pytest.raises(ValueError, match="unknown"):
        example_auc(np.where(Y > 0, np.nan, Y), S)
    with pytest.raises(ValueError, match="only 0"):
        example_auc(2 * Y, S)
    with pytest.raises(ValueError, match="interpolation"):
        example_average_precision(Y, S, interpolation="trapezoid")
    with pytest.raises(ValueError, match="positive integer"):
        recall_at_k(Y, S, 0)
    with pytest.raises(ValueError, match="undefined"):
        example_auc(np.ones((3, 3), dtype=int), S)
