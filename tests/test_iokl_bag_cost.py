"""``bag_cost`` of multiple-instance IOKL: ``"bag"`` spreads ``C`` over a bag's units so that each bag counts once.

With the square hinge, ``k`` identical copies of an instance at cost ``C / k`` each are one instance at cost
``C`` (their slacks are equal, ``sum (C / k) xi^2 = C xi^2``), so a negative bag of ``k`` copies fitted with
``bag_cost="bag"`` is the same problem as that instance alone fitted with ``bag_cost="unit"``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from multikernel.iokl import IOKLMultipleInstanceClassifier

pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
              pytest.mark.filterwarnings("ignore:IOKL cutting plane stopped:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning")]


def _rbf(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * ((A[:, None] - B[None]) ** 2).sum(-1))


@settings(max_examples=15, deadline=None)
@given(n_pos=st.integers(2, 4), copies=st.lists(st.integers(1, 4), min_size=2, max_size=4),
       log_C=st.floats(-1, 2), seed=st.integers(0, 2**16))
def test_a_bag_of_copies_at_bag_cost_is_its_instance_at_unit_cost(n_pos, copies, log_C, seed):
    rng = np.random.default_rng(seed)
    P = rng.normal(loc=1.0, size=(n_pos, 2))  # singleton positive bags: one candidate, no search
    Q = rng.normal(loc=-1.0, size=(len(copies), 2))
    X_dup = np.vstack([P, np.repeat(Q, copies, axis=0)])
    bags_dup = np.r_[np.arange(n_pos), np.repeat(np.arange(n_pos, n_pos + len(copies)), copies)]
    X_one = np.vstack([P, Q])
    bags_one = np.arange(n_pos + len(copies))
    y = lambda bags: np.where(bags < n_pos, 1, 0)  # noqa: E731
    params = dict(C=10.0**log_C, tol=1e-8, max_iter=3, n_starts=0, kernels="precomputed")
    dup = IOKLMultipleInstanceClassifier(bag_cost="bag", **params).fit(_rbf(X_dup, X_dup)[None], y(bags_dup),
                                                                        bags_dup)
    one = IOKLMultipleInstanceClassifier(bag_cost="unit", **params).fit(_rbf(X_one, X_one)[None], y(bags_one),
                                                                         bags_one)
    T = rng.normal(size=(6, 2))
    f_dup = dup.decision_function_instances(_rbf(T, X_dup)[None])
    f_one = one.decision_function_instances(_rbf(T, X_one)[None])
    np.testing.assert_allclose(f_dup, f_one, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("level", ["bag", "instance"])
def test_each_bag_costs_C_in_all(level):
    rng = np.random.default_rng(0)
    bags = np.repeat(np.arange(5), [1, 3, 2, 4, 2])
    X = rng.normal(size=(len(bags), 2))
    y = np.where(bags < 2, 1, 0)
    est = IOKLMultipleInstanceClassifier(level=level, bag_cost="bag", C=3.0, max_iter=2)
    lists = [np.flatnonzero(bags == b) for b in range(5)]
    sb = np.where(np.arange(5) < 2, 1.0, -1.0)
    costs = est._unit_costs(lists, sb, len(bags))
    if level == "bag":  # one key per positive bag, then the negative bags' instances
        assert costs.shape == (2 + 8,)
        np.testing.assert_allclose(costs[:2], 3.0)
        np.testing.assert_allclose(costs[2:], np.repeat([1.5, 0.75, 1.5], [2, 4, 2]))
    else:
        for b in lists:
            assert costs[b].sum() == pytest.approx(3.0)
    unit = IOKLMultipleInstanceClassifier(level=level, bag_cost="unit", C=3.0)._unit_costs(lists, sb, len(bags))
    np.testing.assert_allclose(unit, 3.0)
    est.fit(X, y, bags)  # and a fit runs with them
    assert est.predict(X, bags).shape == (5,)
