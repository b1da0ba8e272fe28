"""Settings that silently decide an IOKL fit: the labelled ratio as the balance constraint, a one-class
collapse of instance-level MIL, a baseline's alternation capped by max_iter; and the special case linking
IOKL-SM to IOKL-HM (a huge theta)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _iokl_testing import drawn_bags
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from multikernel.iokl import IOKLMultipleInstanceClassifier, IOKLSemiSupervisedClassifier
from multikernel.iokl.baselines import MISVM, miSVM

pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
              pytest.mark.filterwarnings("ignore:IOKL cutting plane stopped:RuntimeWarning")]


def _ssl(n_pos_labelled: int, n_neg_labelled: int, seed: int = 0):
    X, y = make_blobs(80, centers=[[-2, 0], [2, 0]], cluster_std=1.0, random_state=seed)
    rng = np.random.default_rng(seed)
    lab = np.r_[rng.choice(np.flatnonzero(y == 1), n_pos_labelled, replace=False),
                rng.choice(np.flatnonzero(y == 0), n_neg_labelled, replace=False)]
    yy = np.full(len(y), -1)
    yy[lab] = y[lab]
    return X, y, yy


def test_an_imbalanced_labelled_ratio_left_as_the_balance_constraint_warns():
    X, y, yy = _ssl(1, 9)
    with pytest.warns(UserWarning, match=r"positive_fraction was left to the labelled ratio 0.1 \(1 of 10"):
        IOKLSemiSupervisedClassifier(max_iter=3).fit(X, yy)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        IOKLSemiSupervisedClassifier(max_iter=3, positive_fraction=0.5).fit(X, yy)  # given: no warning
        IOKLSemiSupervisedClassifier(max_iter=3).fit(*_ssl(4, 5)[::2])  # 4 of 9: near balanced, no warning


@pytest.mark.parametrize("C_unlabeled", [0.1, 1.0])
def test_a_huge_theta_is_the_hard_margin(C_unlabeled):
    """theta / T >= 1 leaves every group norm uncapped: IOKL-SM (4.8) is IOKL-HM (4.4), the thesis's case."""
    X, y, yy = _ssl(3, 3, seed=2)
    kw = dict(max_iter=6, C_unlabeled=C_unlabeled, tol=1e-6)
    hm = IOKLSemiSupervisedClassifier(**kw).fit(X, yy)
    sm = IOKLSemiSupervisedClassifier(theta=1e6, **kw).fit(X, yy)
    assert hm.result_.n_iter >= 2 and hm.weights_.shape[0] >= 2  # groups were added: a cap could act
    assert sm.objective_ == pytest.approx(hm.objective_, rel=1e-6)
    np.testing.assert_array_equal(sm.transduction_, hm.transduction_)
    # a cap that binds restricts the weights: never below the hard margin
    capped = IOKLSemiSupervisedClassifier(theta=1.0, **kw).fit(X, yy)
    assert capped.objective_ >= hm.objective_ - 1e-6 * abs(hm.objective_)


def test_instance_level_collapse_to_one_class_warns_and_names_the_cause():
    X, y, bags = drawn_bags(n_bags=12, seed=0)
    X = StandardScaler().fit_transform(X)
    with pytest.warns(UserWarning, match="predicts every training bag as .*round_keys=True.*level='bag'"):
        clf = IOKLMultipleInstanceClassifier(level="instance", round_keys=False, max_iter=5).fit(X, y, bags)
    assert len(np.unique(clf.predict(X, bags))) == 1
    with warnings.catch_warnings():  # rounded (the default), and the bag level, separate the same bags: no warning
        warnings.simplefilter("error", UserWarning)
        rounded = IOKLMultipleInstanceClassifier(level="instance", max_iter=5).fit(X, y, bags)
        bag = IOKLMultipleInstanceClassifier(max_iter=5).fit(X, y, bags)
    assert len(np.unique(rounded.predict(X, bags))) == 2
    assert len(np.unique(bag.predict(X, bags))) == 2


@pytest.mark.parametrize(("cls", "what"), [(MISVM, "witnesses"), (miSVM, "instance labels")])
def test_mil_baselines_stop_on_their_criterion_and_warn_when_capped(cls, what):
    X, y, bags = drawn_bags(n_bags=16, seed=1)
    X = StandardScaler().fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        done = cls(C=10.0).fit(X, y, bags)  # converges well within max_iter=50: no warning
    assert 2 <= done.n_iter_ < 50  # the criterion held after a change: one fit fewer is capped
    with pytest.warns(ConvergenceWarning, match=f"max_iter=1 with the {what} still changing"):
        capped = cls(C=10.0, max_iter=1).fit(X, y, bags)
    assert capped.n_iter_ == 1 and capped.predict(X, bags).shape == (len(np.unique(bags)),)
    with pytest.raises(ValueError, match="max_iter must be a positive integer"):
        cls(max_iter=0).fit(X, y, bags)
