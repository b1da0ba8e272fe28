"""Bag-level (input ambiguity) IOKL: one key-instance choice per candidate group, shared by the input kernels.

With a key per input kernel, a positive training bag was represented by a sum over kernels evaluated at
different instances, which no single instance reproduces when a bag is predicted: on musk1 the training bag
accuracy fell to 0.83 and the 10-fold accuracy to 74%.  These tests pin the shared group search (against
enumeration) and the consistency between training and prediction.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from multikernel import create
from multikernel.iokl import IOKLMultipleInstanceClassifier
from multikernel.iokl.labels import KeyInstanceSet, LabelSet

pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
              pytest.mark.filterwarnings("ignore:IOKL cutting plane stopped:RuntimeWarning")]


def _kernels(N: int, seed: int) -> tuple[np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 3))
    D2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    return X, [np.exp(-0.5 * D2), 1.0 / (1.0 + np.sqrt(D2)), X @ X.T]


def _group_norm(Ks: list[np.ndarray], u: np.ndarray, offset: float) -> float:
    return float(np.linalg.norm([u @ K @ u + offset * u.sum() ** 2 for K in Ks]))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("offset", [0.0, 1.0])
def test_key_instance_group_search_is_the_enumerated_maximum(seed, offset):
    N = 12
    _, Ks = _kernels(N, seed)
    bags = [np.arange(0, 3), np.arange(3, 7), np.arange(7, 9), np.arange(9, 12)]
    cset = KeyInstanceSet(bags, np.array([1, 1, -1, 1]))
    assert cset.shared_across_kernels
    rng = np.random.default_rng(seed)
    alpha = rng.random(cset.n_units)
    alpha /= alpha.sum()
    y = np.r_[np.ones(3), -np.ones(2)]
    best = -np.inf
    for keys in itertools.product(*(bags[i] for i in (0, 1, 3))):
        u = np.zeros(N)
        np.add.at(u, np.r_[keys, 7, 8], alpha * y)
        best = max(best, _group_norm(Ks, u, offset))
    start = [cset.from_scores(rng.normal(size=N))]
    index, sign, q = cset.most_violated_group(Ks, alpha, start, offset=offset)
    assert np.linalg.norm(q) == pytest.approx(best, rel=1e-12)
    u = cset.lift(alpha, index, sign)[0]
    np.testing.assert_allclose(q, [u @ K @ u + offset * u.sum() ** 2 for K in Ks], rtol=1e-12)
    # the sorting ascent: feasible, below the maximum, and never below its start
    index_a, sign_a, q_a = cset.most_violated_group(Ks, alpha, start, enumerate_limit=0, offset=offset)
    assert np.linalg.norm(q_a) <= best * (1 + 1e-12)
    assert np.linalg.norm(q_a) >= _group_norm(Ks, cset.lift(alpha, *start[0])[0], offset) * (1 - 1e-12)
    assert any(np.array_equal(index_a, c) for c in cset.enumerate()[0])


def test_label_group_search_is_the_enumerated_maximum():
    n = 10
    _, Ks = _kernels(n, 7)
    rng = np.random.default_rng(7)
    alpha = rng.random(n)
    alpha /= alpha.sum()
    fixed = np.r_[1.0, -1.0, np.zeros(n - 2)]
    cset = LabelSet(n, fixed, [np.arange(2, n)], [3], [5])
    best = max(_group_norm(Ks, alpha * s, 0.5) for s in cset.enumerate()[1])
    _, sign, q = cset.most_violated_group(Ks, alpha, [cset.from_scores(rng.normal(size=n))], offset=0.5)
    assert np.linalg.norm(q) == pytest.approx(best, rel=1e-12)
    # one kernel: the group norm is (4.11) itself
    _, _, q1 = cset.most_violated_group(Ks[:1], alpha, [cset.from_scores(np.zeros(n))])
    _, _, v1 = cset.most_violated(Ks[0], alpha, [cset.from_scores(np.zeros(n))])
    assert q1[0] == pytest.approx(v1, rel=1e-12)


def _mil(n_bags: int = 20, seed: int = 4) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X, bags, labels = [], [], []
    for b in range(n_bags):
        k = int(rng.integers(3, 7))
        pts = rng.normal(size=(k, 3))
        if b % 2 == 0:
            pts[rng.integers(k)] += [2.5, 2.5, 0.0]
        X.append(pts)
        bags += [b] * k
        labels += [1 if b % 2 == 0 else -1] * k
    return np.vstack(X), np.array(labels), np.array(bags)


@pytest.mark.parametrize("theta", [None, 2.0])
def test_bag_level_groups_share_their_key_instances_and_predict_as_trained(theta):
    X, labels, bags = _mil()
    kernels = [create("kernel", "rbf"), create("kernel", "laplacian"), create("kernel", "inverse_distance")]
    # the relaxation's own classifier (no rounding: tests/test_iokl_mil_rounding.py covers the default)
    clf = IOKLMultipleInstanceClassifier(kernels=kernels, C=10.0, theta=theta, max_iter=8, offset=1.0,
                                         round_keys=False)
    clf.fit(X, labels, bags)
    assert clf.rounded_ is None and clf.keys_ is None
    res = clf.result_
    assert res.index.shape[0] >= 1
    for t in range(res.index.shape[0]):  # one key per positive bag for the whole group
        assert np.all(res.index[t] == res.index[t, 0]) and np.all(res.sign[t] == res.sign[t, 0])
    # A positive training bag's score is at least its training margin: sum_t f_t(key_t) + b, the value the
    # MKL problem constrained (each group its own key).
    inputs = clf.kernel_set_.fit_stack(X)
    beta = res.coefficients(inputs, per_group=True)
    F = np.array([sum(np.asarray(inputs.kernel(m)) @ beta[t, m] for m in range(inputs.n_kernels))
                  for t in range(len(beta))])
    scores = clf.decision_function(X, bags)
    positive = np.flatnonzero(np.unique(bags) % 2 == 0)
    for unit, b in enumerate(positive):
        trained = sum(F[t, res.index[t, 0, unit]] for t in range(len(beta))) + clf.intercept_
        assert scores[b] >= trained - 1e-10
    # A negative bag's instances were constrained through f = sum_t f_t itself; the mixture rule scores the bag
    # by sum_t max_x f_t(x), at least max_x f(x): it can call a training negative bag positive (why the default
    # rounds the relaxation), never a positive bag whose trained margin is positive negative.
    negative = np.flatnonzero(np.unique(bags) % 2 == 1)
    f = clf.decision_function_instances(X)
    lists = [np.flatnonzero(bags == b) for b in np.unique(bags)]
    for b in negative:
        assert scores[b] >= f[lists[b]].max() - 1e-10
    predicted = clf.predict(X, bags)
    assert np.all(predicted[positive] == 1)
    assert np.mean(predicted[negative] == -1) >= 0.8


@pytest.mark.parametrize("backend", ["dense", "memmap", "lazy"])
@pytest.mark.parametrize("mixed", [False, True])
def test_input_output_combination_with_a_shared_block_matches_the_explicit_sum(backend, mixed, tmp_path):
    """``IOStack.combine`` (copied shared block, memory-map view, lazy view; uniform and mixed shared signs;
    the cache handed on by ``with_group``) equals ``sum_k w_k kernel(k)``."""
    from multikernel.iokl import IOStack
    from multikernel.stack.kernelset import KernelSet

    rng = np.random.default_rng(5)
    X = rng.normal(size=(14, 3))
    kernels = [create("kernel", "rbf"), create("kernel", "laplacian"), create("kernel", "inverse_distance")]
    inputs = KernelSet(kernels, backend=backend, memmap_dir=str(tmp_path)).fit_stack(X)
    shared = np.arange(5, 14)
    shared_sign = np.where(np.arange(9) % 3 == 0, 1.0, -1.0) if mixed else -np.ones(9)
    index = np.array([np.r_[[0, 3, 4], shared], np.r_[[1, 2, 4], shared]])
    sign = np.tile(np.r_[np.ones(3), shared_sign], (2, 1))
    stack = IOStack(inputs, index, sign, offset=0.7)
    for grown in (stack, stack.with_group(np.r_[[2, 3, 4], shared], sign[0])):
        w = rng.random(grown.n_kernels)
        w[1] = 0.0
        expected = sum(w[k] * grown.kernel(k) for k in range(grown.n_kernels))
        for _ in range(2):  # the second call reads the cached shared block
            np.testing.assert_allclose(grown.combine(w), expected, rtol=1e-12, atol=1e-12)
    assert stack.with_group(np.r_[[2, 3, 4], shared], sign[0])._shared is stack._shared


@pytest.mark.parametrize("backend", ["dense", "lazy"])
def test_input_output_quad_forms_match_the_explicit_kernels(backend):
    """Batched forms (one product per input kernel), shared and per-kernel groups, sparse ``v``."""
    from multikernel.iokl import IOStack
    from multikernel.stack.kernelset import KernelSet

    rng = np.random.default_rng(6)
    X = rng.normal(size=(16, 3))
    inputs = KernelSet([create("kernel", "rbf"), create("kernel", "laplacian")], backend=backend).fit_stack(X)
    # output ambiguity, a candidate per kernel; then input ambiguity with shared groups
    Y = rng.choice([-1.0, 1.0], size=(3, 2, 16))
    keys = np.array([np.r_[[0, 4], np.arange(8, 16)], np.r_[[1, 5], np.arange(8, 16)],
                     np.r_[[2, 7], np.arange(8, 16)]])
    stacks = [IOStack(inputs, np.tile(np.arange(16), (3, 2, 1)), Y, offset=0.4),
              IOStack(inputs, keys, np.tile(np.r_[1.0, 1.0, -np.ones(8)], (3, 1)), offset=0.4)]
    for stack in stacks:
        v = rng.random(stack.n_rows)
        v[::3] = 0.0
        expected = np.array([v @ stack.kernel(k) @ v for k in range(stack.n_kernels)])
        np.testing.assert_allclose(stack.quad_forms(v), expected, rtol=1e-12)
        some = np.array([5, 0, 3])
        np.testing.assert_allclose(stack.quad_forms(v, some), expected[some], rtol=1e-12)


def test_loose_early_solves_end_at_tol():
    """The cutting plane's MKL tolerance only tightens, and a stop that trusts the solve is made at ``tol``."""
    from multikernel import DenseStack
    from multikernel.iokl.cutting_plane import cutting_plane

    X, Ks = _kernels(10, 8)
    fixed = np.r_[1.0, -1.0, np.zeros(8)]
    cset = LabelSet(10, fixed, [np.arange(2, 10)], [4], [4])
    res = cutting_plane(DenseStack(np.array(Ks[:2])), cset, np.full(10, 5.0), cset.from_scores(X[:, 0]),
                        tol=1e-4, cp_tol=1e-4, max_iter=30, mkl_max_iter=3000)
    tols = [h["mkl_tol"] for h in res.history]
    assert tols[0] == 1e-2 and all(b <= a for a, b in zip(tols, tols[1:], strict=False))
    if res.stop_reason in ("no new candidate", "objective change below cp_tol"):
        assert tols[-1] == 1e-4 and res.mkl.dual_gap <= 1e-4
    else:
        assert res.history[-1]["violation"] <= 1e-4


def test_mil_baselines_use_the_average_input_kernel():
    """SIL-SVM and the MI-kernel SVM against scikit-learn's SVC on the explicitly averaged kernels."""
    from sklearn.svm import SVC

    from multikernel.iokl.baselines import SILSVM, MIKernelSVM
    from multikernel.stack.kernelset import KernelSet

    X, labels, bags = _mil(12, seed=9)
    kernels = [create("kernel", "rbf"), create("kernel", "laplacian")]
    ks = KernelSet([create("kernel", "rbf"), create("kernel", "laplacian")])
    stack = ks.fit_stack(X)
    K = (np.asarray(stack.kernel(0)) + np.asarray(stack.kernel(1))) / 2
    lists = [np.flatnonzero(bags == b) for b in np.unique(bags)]
    sil = SILSVM(kernels=kernels, C=3.0).fit(X, labels, bags)
    ref = SVC(kernel="precomputed", C=3.0).fit(K, labels).decision_function(K)
    np.testing.assert_allclose(sil.decision_function(X, bags), [ref[b].max() for b in lists], rtol=1e-6, atol=1e-8)
    S = np.zeros((len(lists), len(X)))
    for i, b in enumerate(lists):
        S[i, b] = 1.0 / len(b)
    yb = np.array([labels[b][0] for b in lists])
    mik = MIKernelSVM(kernels=kernels, C=3.0).fit(X, labels, bags)
    ref = SVC(kernel="precomputed", C=3.0).fit(S @ K @ S.T, yb).decision_function(S @ K @ S.T)
    np.testing.assert_allclose(mik.decision_function(X, bags), ref, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("theta", [None, 2.0])
def test_default_fit_certifies_every_mkl_solve_where_candidates_nearly_tie(theta):
    """Candidates that differ in a few key instances give nearly equal groups, where the thesis's Algorithm 5
    (``solver="bcd"``) moves weight between them by a factor close to 1 per
    iteration: here 116 iterations for one solve, and on musk1 / elephant 200 (the cap) with gaps up to
    1.3e-2 > tol.  The default solver certifies every solve of the cutting plane within its tolerance, in a
    few iterations."""
    from _iokl_testing import drawn_bags
    from sklearn.preprocessing import StandardScaler

    X, y, bags = drawn_bags(n_bags=24, seed=1)
    X = StandardScaler().fit_transform(X)
    clf = IOKLMultipleInstanceClassifier(C=1.0, theta=theta, max_iter=5).fit(X, y, bags)
    history = clf.result_.history
    assert len(history) >= 2  # a second candidate group was added and solved
    for entry in history:
        assert entry["mkl_gap"] <= entry["mkl_tol"]
        assert entry["mkl_iter"] <= 20
    # Algorithm 5 reaches the same certified optimum for the final candidate set (the problem is convex)
    from multikernel.iokl import solve_candidates

    bcd = solve_candidates(clf.kernel_set_.fit_stack(X), clf.result_.index, clf.result_.sign,
                           np.full(clf.result_.index.shape[-1], 1.0), theta=theta, offset=clf.offset,
                           solver="bcd", tol=1e-6, mkl_max_iter=2000)
    default = solve_candidates(clf.kernel_set_.fit_stack(X), clf.result_.index, clf.result_.sign,
                               np.full(clf.result_.index.shape[-1], 1.0), theta=theta, offset=clf.offset,
                               tol=1e-6)
    assert default.mkl.objective == pytest.approx(bcd.mkl.objective, rel=1e-5)
