"""PWMK against scikit-learn's cross-validated SVC on each kernel, FHeuristic against the alignment's definition."""

from __future__ import annotations

import numpy as np
import pytest
from _mkl_testing import make_problem, mkl_problems
from hypothesis import given
from sklearn.model_selection import cross_val_score
from sklearn.svm import SVC

from multikernel import MKLClassifier, create
from multikernel.core.interfaces import MKLProblem
from multikernel.plugins.heuristics import fheuristic_weights, kernel_accuracies
from multikernel.stack.storage import DenseStack


def _problem(Ks, y, C=1.0):
    return MKLProblem(stack=DenseStack(Ks), y=y, loss=create("loss", "csvc", C=C),
                      regularizer=create("regularizer", "simplex"))


@given(mkl_problems(n=(6, 30), kernels=(1, 5)))
def test_fheuristic_weights_are_the_clipped_alignments(d):
    a = np.array([np.sum(K * np.outer(d.y, d.y)) / (np.linalg.norm(K) * len(d.y)) for K in d.Ks])
    expected = np.where(a > 1e-10, a, 0.0)
    np.testing.assert_allclose(fheuristic_weights(DenseStack(d.Ks), d.y), expected / expected.sum(), atol=1e-10)


@pytest.mark.parametrize("C", [0.1, 2.0])
def test_pwmk_accuracies_are_scikit_learns_cross_validation(C):
    d = make_problem(n=45, positives=20, kinds=["rbf", "poly", "linear", "rbf"], seed=11)
    ours = kernel_accuracies(_problem(d.Ks, d.y, C), d.y, cv=3, tol=1e-7)
    ref = [cross_val_score(SVC(kernel="precomputed", C=C, tol=1e-7), K, d.y, cv=3).mean() for K in d.Ks]
    np.testing.assert_allclose(ours, ref, atol=1e-12)


def test_pwmk_weights_delta_and_the_classifier():
    d = make_problem(n=45, positives=20, kinds=["rbf", "poly", "linear", "low_rank"], seed=2)
    acc = kernel_accuracies(_problem(d.Ks, d.y), d.y, cv=3, tol=1e-3)
    for delta in (0.0, 0.5, 1.0):
        clf = MKLClassifier(kernels="precomputed", method="pwmk", C=1.0,
                            solver=create("solver", "pwmk", delta=delta)).fit(d.Ks, d.y)
        shifted = acc - delta * acc.min()
        np.testing.assert_allclose(clf.weights_, shifted / shifted.sum(), atol=1e-12)
    assert clf.weights_[np.argmin(acc)] == 0.0  # delta = 1: the worst kernel drops out


def test_pwmk_parameters_are_checked():
    d = make_problem(n=20, positives=4, kinds=["rbf"], seed=1)
    for params, message in (({"delta": 1.5}, "delta must be"), ({"cv": 1}, "cv must be an integer"),
                            ({"cv": 5}, "the smaller class has 4"), ({"inner_tol": 0}, "inner_tol must be")):
        with pytest.raises(ValueError, match=message):
            MKLClassifier(kernels="precomputed", method="pwmk", solver=create("solver", "pwmk", **params)
                          ).fit(d.Ks, d.y)


def test_shared_weights_are_refused_with_the_remedy():
    d = make_problem(n=30, positives=10, kinds=["rbf", "poly"], seed=0)
    y = np.repeat([0, 1, 2], 10)
    with pytest.raises(ValueError, match="one against the rest"):
        MKLClassifier(kernels="precomputed", method="fheuristic", multiclass="shared").fit(d.Ks, y)
    clf = MKLClassifier(kernels="precomputed", method="fheuristic").fit(d.Ks, y)
    assert clf.weights_.shape == (3, 2)
