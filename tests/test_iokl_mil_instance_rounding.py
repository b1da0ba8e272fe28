"""Instance-level IOKL (MIL-CPB) rounds its relaxation by the ranking of the relaxed scores, not their sign.

The relaxation mixes labellings that the label search (4.11) takes close to the negative class, and the mixture
scores every instance below its bias (musk1: every training instance between -0.17 and -0.13), while it still
ranks the instances of a positive bag.  The rounding labels positive the instances of a positive bag that score
above every instance of a negative bag (at least ``max(1, ceil(portion |B|))`` of them): a rule of the ranking
alone, which a constant added to the scores does not change.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from _iokl_testing import drawn_bags
from hypothesis import given
from hypothesis import strategies as st
from sklearn.preprocessing import StandardScaler

from multikernel.iokl import IOKLMultipleInstanceClassifier
from multikernel.iokl.labels import LabelSet

pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
              pytest.mark.filterwarnings("ignore:IOKL cutting plane stopped:RuntimeWarning")]


@st.composite
def mil_label_sets(draw):
    """Positive bags of 1-4 instances with a drawn lower bound, 1-5 fixed negatives, in shuffled positions, and
    scores drawn with ties (a few values) or without."""
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    n_neg = draw(st.integers(1, 5))
    n = sum(sizes) + n_neg
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    order = rng.permutation(n)
    groups, lo = [], 0
    for size in sizes:
        groups.append(order[lo:lo + size])
        lo += size
    fixed = np.zeros(n)
    fixed[order[lo:]] = -1.0
    low = [draw(st.integers(1, len(g))) for g in groups]
    if draw(st.booleans()):
        scores = rng.choice([-1.0, -0.5, 0.0, 0.5], size=n)
    else:
        scores = rng.normal(size=n) * 10.0 ** draw(st.integers(-3, 1)) + draw(st.floats(-5, 5))
    return LabelSet(n, fixed, groups, low, [len(g) for g in groups]), scores


@given(problem=mil_label_sets(), shift=st.floats(-100, 100))
def test_rounding_is_the_best_feasible_agreement_with_the_scores_above_the_negatives(problem, shift):
    cset, s = problem
    _, sign = cset.from_scores_above_negatives(s)
    # the enumerated feasible labelling that agrees best with the scores measured from the best negative's
    index, signs = cset.enumerate()
    agreement = signs @ (s - s[cset.fixed < 0].max())
    assert sign @ (s - s[cset.fixed < 0].max()) == pytest.approx(agreement.max(), abs=1e-9)
    assert any(np.array_equal(sign, row) for row in signs)  # feasible
    for g, lo in zip(cset.groups, cset.low, strict=True):
        top = s[g] > s[cset.fixed < 0].max()
        assert np.all(sign[g][top] == 1)  # above every negative: positive
        if np.any(sign[g][~top] > 0):  # below: only to reach the lower bound, and then exactly it
            assert np.count_nonzero(sign[g] > 0) == lo
    # a rule of the ranking: a constant added to the scores changes nothing
    np.testing.assert_array_equal(cset.from_scores_above_negatives(s + shift)[1], sign)


def test_without_fixed_negatives_the_rounding_is_the_sign_rule():
    cset = LabelSet(4, np.zeros(4), [np.arange(4)], [1], [3])
    s = np.array([0.3, -0.2, 0.1, -0.4])
    np.testing.assert_array_equal(cset.from_scores_above_negatives(s)[1], cset.from_scores(s)[1])


@pytest.mark.parametrize("portion", [0.0, 0.5])
def test_instance_level_rounding_keeps_the_relaxed_ranking_above_the_negatives(portion):
    """The rounded labels: in each positive bag the instances that the relaxed classifier scores above every
    instance of a negative bag, at least max(1, ceil(portion |B|)) of them and those it scores highest; the final
    classifier solves that labelling."""
    X, y, bags = drawn_bags(n_bags=12, seed=0)
    X = StandardScaler().fit_transform(X)
    clf = IOKLMultipleInstanceClassifier(level="instance", portion=portion, max_iter=5).fit(X, y, bags)
    relaxed = IOKLMultipleInstanceClassifier(level="instance", portion=portion, round_keys=False, max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        relaxed.fit(X, y, bags)
    f = relaxed.decision_function_instances(X)
    sign = clf.rounded_.sign.reshape(-1, len(X))[0]
    assert np.all(sign[y < 0] == -1)
    threshold = f[y < 0].max()
    for b in np.unique(bags[y > 0]):
        idx = np.flatnonzero(bags == b)
        k = int(np.clip(np.count_nonzero(f[idx] > threshold), max(1, math.ceil(portion * len(idx))), len(idx)))
        assert set(idx[sign[idx] > 0]) == set(idx[np.argsort(-f[idx], kind="stable")[:k]])
    # the final classifier is the rounded solve's, and it separates these training bags
    np.testing.assert_allclose(clf.intercept_, clf.rounded_.bias(clf.offset))
    assert len(np.unique(clf.predict(X, bags))) == 2


def test_a_rounded_fit_that_predicts_one_class_warns_and_names_the_cause():
    """A tiny C leaves the rounded SVM nearly constant, on the side of the many negative instances."""
    X, y, bags = drawn_bags(n_bags=12, seed=0)
    X = StandardScaler().fit_transform(X)
    with pytest.warns(UserWarning, match=r"predicts every training bag as -1: the SVM of the rounded instance "
                                         r"labels .*above every instance of a negative bag.*larger C"):
        clf = IOKLMultipleInstanceClassifier(level="instance", C=1e-3, max_iter=3).fit(X, y, bags)
    assert len(np.unique(clf.predict(X, bags))) == 1


@pytest.mark.parametrize(("level", "resolved"), [("bag", "bag"), ("instance", "unit")])
def test_the_default_bag_cost_is_per_bag_at_the_bag_level_and_per_instance_at_the_instance_level(level, resolved):
    """MIL-CPB is an SVM over the instances with one cost each; the bag level shares C over a negative bag."""
    lists = [np.array([0, 1, 2]), np.array([3]), np.array([4, 5])]
    sb = np.array([1.0, -1.0, -1.0])
    default = IOKLMultipleInstanceClassifier(level=level, C=3.0)._unit_costs(lists, sb, 6)
    explicit = IOKLMultipleInstanceClassifier(level=level, C=3.0, bag_cost=resolved)._unit_costs(lists, sb, 6)
    other = IOKLMultipleInstanceClassifier(level=level, C=3.0, bag_cost={"bag": "unit", "unit": "bag"}[resolved])
    np.testing.assert_array_equal(default, explicit)
    assert not np.array_equal(default, other._unit_costs(lists, sb, 6))
    with pytest.raises(ValueError, match="bag_cost"):
        IOKLMultipleInstanceClassifier(level=level, bag_cost="instance").fit(np.zeros((6, 1)), np.r_[1, 1, 1, 0, 0, 0],
                                                                             [0, 0, 0, 1, 2, 2])
