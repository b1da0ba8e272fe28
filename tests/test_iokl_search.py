"""The most violated candidate (4.11) against enumeration, and the cutting-plane loop (Algorithm 3)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from multikernel import DenseStack, MKLProblem, create
from multikernel.iokl import IOStack, SimplexRidge
from multikernel.iokl.cutting_plane import cutting_plane
from multikernel.iokl.labels import KeyInstanceSet, LabelSet

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _kernel(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    alpha = rng.random(n)
    return X, K, alpha / alpha.sum()


def _brute_force(n: int, feasible, K: np.ndarray, alpha: np.ndarray) -> float:
    """max (alpha o y)' K (alpha o y) over all y in {-1, +1}^n that pass ``feasible``."""
    return max(float((alpha * y) @ K @ (alpha * y))
               for y in map(np.array, itertools.product([-1.0, 1.0], repeat=n)) if feasible(y))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_label_search_is_the_enumerated_maximum(seed):
    n = 11
    _, K, alpha = _kernel(n, seed)
    rng = np.random.default_rng(seed)
    # semi-supervised: 3 labelled, exactly 4 positives among the 8 unlabelled
    fixed = np.zeros(n)
    fixed[:3] = [1, -1, 1]
    ssl = LabelSet(n, fixed, [np.arange(3, n)], [4], [4])
    ref = _brute_force(n, lambda y: np.all(y[:3] == fixed[:3]) and np.sum(y[3:] > 0) == 4, K, alpha)
    # clustering: balance |sum y| <= 3
    clu = LabelSet(n, np.zeros(n), [np.arange(n)], [4], [7])
    ref_c = _brute_force(n, lambda y: abs(y.sum()) <= 3, K, alpha)
    # instance-level MIL: bags {0..3} and {4..7} positive (>= 1 and >= 2 positives), {8..10} negative
    fixed_m = np.r_[np.zeros(8), -np.ones(3)]
    mil = LabelSet(n, fixed_m, [np.arange(4), np.arange(4, 8)], [1, 2], [4, 4])
    ref_m = _brute_force(n, lambda y: np.all(y[8:] < 0) and np.sum(y[:4] > 0) >= 1 and np.sum(y[4:8] > 0) >= 2,
                         K, alpha)
    for cset, value in ((ssl, ref), (clu, ref_c), (mil, ref_m)):
        start = [cset.from_scores(rng.normal(size=n))]
        _, sign, found = cset.most_violated(K, alpha, start)
        assert found == pytest.approx(value, rel=1e-12)
        assert float((alpha * sign) @ K @ (alpha * sign)) == pytest.approx(value, rel=1e-12)
        # the sorting ascent: feasible, and never below its starting point
        _, s_asc, v_asc = cset.most_violated(K, alpha, start, enumerate_limit=0)
        assert v_asc <= value * (1 + 1e-12)
        assert v_asc >= float((alpha * start[0][1]) @ K @ (alpha * start[0][1])) - 1e-15
        assert any(np.array_equal(s_asc, s) for s in cset.enumerate()[1])


def test_key_instance_search_is_the_enumerated_maximum():
    N = 12
    _, K, _ = _kernel(N, 3)
    bags = [np.arange(0, 3), np.arange(3, 7), np.arange(7, 9), np.arange(9, 12)]
    cset = KeyInstanceSet(bags, np.array([1, 1, -1, 1]))
    assert cset.size() == 3 * 4 * 3 and cset.n_units == 3 + 2
    alpha = np.random.default_rng(3).random(cset.n_units)
    y = np.r_[np.ones(3), -np.ones(2)]
    best = -np.inf
    for keys in itertools.product(*(bags[i] for i in (0, 1, 3))):
        Ks = K[np.ix_(np.r_[keys, 7, 8], np.r_[keys, 7, 8])]
        best = max(best, float((alpha * y) @ Ks @ (alpha * y)))
    index, sign, value = cset.most_violated(K, alpha, [cset.from_scores(np.zeros(N))])
    assert value == pytest.approx(best, rel=1e-12)
    np.testing.assert_array_equal(sign, y)
    assert set(index[:3]) <= set(range(12)) and np.array_equal(index[3:], [7, 8])


def test_infeasible_constraints_are_errors():
    with pytest.raises(ValueError, match="no labelling satisfies"):
        LabelSet(5, np.zeros(5), [np.arange(5)], [6], [6])
    with pytest.raises(ValueError, match="partition the free"):
        LabelSet(5, np.r_[1.0, np.zeros(4)], [np.arange(5)], [1], [2])


def test_cutting_plane_reaches_the_optimum_over_all_candidates():
    """With the exact search, Algorithm 3 stops at the IOKL-HM optimum over every feasible label vector."""
    n = 9
    X, K, _ = _kernel(n, 4)
    fixed = np.zeros(n)
    fixed[:3] = [1, -1, -1]
    cset = LabelSet(n, fixed, [np.arange(3, n)], [3], [3])  # C(6, 3) = 20 candidates
    C = np.where(fixed != 0, 10.0, 1.0)
    inputs = DenseStack(np.array([K, X @ X.T]))
    start = cset.from_scores(X[:, 0])
    res = cutting_plane(inputs, cset, C, start, theta=None, tol=1e-6, mkl_max_iter=3000, cp_tol=1e-5,
                        max_iter=25, solver="projected_gradient")
    assert res.stop_reason in ("violation below cp_tol", "no new candidate")
    # The full problem: every feasible label vector as a group shared by both input kernels.
    index, sign = cset.enumerate()
    full = MKLProblem(stack=IOStack(inputs, index, sign, offset=1.0), y=None, loss=None, inner=SimplexRidge(C),
                      regularizer=create("regularizer", "group_l21", group_size=2), tol=1e-6, max_iter=3000)
    ref = create("solver", "projected_gradient").solve(full)
    # per-kernel candidate groups contain the shared ones, so the cutting plane can only go lower
    assert res.mkl.objective <= ref.objective * (1 - 1e-6) + 1e-6 * abs(ref.objective)
    assert res.history[-1]["violation"] <= 1e-5 or res.stop_reason == "no new candidate"


def test_cutting_plane_resumes_and_one_kernel_matches_all_candidates():
    n = 9
    X, K, _ = _kernel(n, 5)
    fixed = np.zeros(n)
    fixed[:2] = [1, -1]
    cset = LabelSet(n, fixed, [np.arange(2, n)], [3], [4])
    C = np.full(n, 5.0)
    inputs = DenseStack(K[None])
    start = cset.from_scores(X[:, 1])
    kw = dict(theta=None, tol=1e-7, mkl_max_iter=5000, cp_tol=1e-6)
    with pytest.warns(RuntimeWarning, match="max_iter=2"):
        part = cutting_plane(inputs, cset, C, start, max_iter=2, **kw)
    res = cutting_plane(inputs, cset, C, start, max_iter=30, warm=part, **kw)
    assert res.n_iter > part.n_iter and res.history[:2] == part.history
    index, sign = cset.enumerate()
    full = MKLProblem(stack=IOStack(inputs, index, sign, offset=1.0), y=None, loss=None, inner=SimplexRidge(C),
                      regularizer=create("regularizer", "group_l21"), tol=1e-8, max_iter=5000)
    ref = create("solver", "projected_gradient").solve(full)
    assert res.mkl.objective == pytest.approx(ref.objective, rel=1e-4)
