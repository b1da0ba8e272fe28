"""Multi-label and multi-class MKL with shared weights: ML-MKL-SA against the sum form and cvxpy, its special
cases (one block is binary L1-MKL), its contract (seeded, max_iter and Ctrl-C with the certified gap, domains
and tasks it cannot handle), and the estimator's checks of an indicator matrix."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from test_fitcore import _kernels, _shared_reference

from multikernel import MKLClassifier
from multikernel.core.capabilities import IncompatiblePartsError
from multikernel.core.interfaces import InnerProblem, InnerSolution, MKLProblem
from multikernel.errors import FitInterruptedWarning
from multikernel.plugins.ml_mkl_sa import MLMKLSA
from multikernel.solve.fit import SolveSettings, build_parts, encode_targets, fit_mkl
from multikernel.stack.storage import DenseStack

TOL = 1e-3


def _multilabel(seed: int, n: int = 30, labels: int = 4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    Y = (X @ rng.normal(size=(3, labels)) + 0.5 * rng.normal(size=(n, labels)) > 0).astype(int)
    Y[0], Y[1] = 1, 0  # every label column has both values
    return X, Y


def _fit(method, Ks, Y, tol, solver=None, **params):
    parts = build_parts(method, solver=solver, params=params)
    return fit_mkl(DenseStack(Ks), encode_targets(Y), parts, SolveSettings(tol=tol, inner_tol=1e-8, max_iter=2000),
                   shared=True).results[0]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("gradient", ["aggregated", "sampled"])
def test_sa_reaches_the_sum_form_optimum_certified(seed, gradient):
    X, Y = _multilabel(seed)
    Ks = _kernels(X)
    sa = _fit("ml_mkl_sa", Ks, Y, TOL, C=1.0, solver__random_state=seed, solver__gradient=gradient)
    level = _fit("l1mkl", Ks, Y, 1e-7, C=1.0)
    ref = _shared_reference(Ks, encode_targets(Y).blocks, build_parts("l1mkl").regularizer, C=1.0)
    assert sa.converged and sa.dual_gap <= TOL
    assert level.objective == pytest.approx(ref, rel=1e-5)
    # certified: the reported objective is an upper bound within tol of the optimum, the lower bound below it
    assert ref * (1 - 1e-6) <= sa.objective <= ref * (1 + TOL)
    assert sa.lower_bound <= ref * (1 + 1e-6)
    np.testing.assert_allclose(sa.weights.sum(), 1.0)
    assert (sa.weights >= 0).all() and sa.coef.shape == (Y.shape[1], len(Y))


def test_sa_with_a_penalty_on_the_simplex_matches_the_sum_form():
    """simplex_l2 (SM2MKL's regularizer): the penalty's gradient enters the exponentiated step."""
    X, Y = _multilabel(2)
    Ks = _kernels(X)
    sa = _fit("sm2mkl", Ks, Y, TOL, solver="ml_mkl_sa", C=1.0, regularizer__theta=0.5, solver__random_state=0)
    level = _fit("sm2mkl", Ks, Y, 1e-7, C=1.0, regularizer__theta=0.5)
    assert sa.dual_gap <= TOL
    assert level.objective * (1 - 1e-6) <= sa.objective <= level.objective * (1 + TOL)


def test_one_block_is_binary_l1mkl():
    """m = 1: the sum form is binary L1-MKL, and SA is deterministic exponentiated-gradient MKL (gamma = 1)."""
    X, Y = _multilabel(3, labels=1)
    Ks = _kernels(X)
    y = np.where(Y[:, 0] > 0, 1.0, -1.0)
    sa = _fit("ml_mkl_sa", Ks, Y[:, 0], 1e-4, C=1.0, solver__random_state=0)
    sa_other_seed = _fit("ml_mkl_sa", Ks, Y[:, 0], 1e-4, C=1.0, solver__random_state=1)
    ref = _shared_reference(Ks, y[None, :], build_parts("l1mkl").regularizer, C=1.0)
    assert sa.dual_gap <= 1e-4
    assert ref * (1 - 1e-6) <= sa.objective <= ref * (1 + 1e-4)
    assert sa.objective == sa_other_seed.objective  # nothing to sample with one block


def test_seeded_and_interruptible_and_max_iter_states_the_gap():
    X, Y = _multilabel(4, labels=5)
    Ks = _kernels(X)
    a = _fit("ml_mkl_sa", Ks, Y, 1e-4, C=1.0, solver__random_state=7)
    b = _fit("ml_mkl_sa", Ks, Y, 1e-4, C=1.0, solver__random_state=7)
    np.testing.assert_array_equal(a.weights, b.weights)
    # max_iter and n_iter count certified rounds; the history says how many epochs of sampled solves they took
    assert a.n_iter == b.n_iter and a.history[-1]["round"] == a.n_iter
    assert a.history[-1]["svm_solves"] == 5 * (a.history[-1]["epoch"] + a.n_iter)
    parts = build_parts("ml_mkl_sa", params={"solver__random_state": 0})
    with pytest.warns(ConvergenceWarning, match=r"max_iter=2 with a relative duality gap of"):
        r = fit_mkl(DenseStack(Ks), encode_targets(Y), parts, SolveSettings(tol=1e-9, max_iter=2), shared=True)
    assert r.results[0].n_iter == 2 and not r.converged and np.isfinite(r.dual_gap).all()

    calls = []

    def interrupt(entry):
        calls.append(entry)
        if len(calls) == 3:
            raise KeyboardInterrupt

    with pytest.warns(FitInterruptedWarning, match="certified relative duality gap"):
        r = fit_mkl(DenseStack(Ks), encode_targets(Y), parts, SolveSettings(tol=1e-9, max_iter=50), shared=True,
                    callback=interrupt)
    assert r.results[0].interrupted and np.isfinite(r.results[0].dual_gap)


@pytest.mark.parametrize("batch, certify_every", [(1, 1.0), (3, 0.25), (8, 2.0)])
def test_sa_batches_and_rounds_reach_the_sum_form_optimum(batch, certify_every):
    """One label per step (the thesis's), a batch of several, and all of them (a batch larger than T is all T):
    every setting ends at the certified sum-form optimum."""
    X, Y = _multilabel(8, labels=6)
    Ks = _kernels(X)
    sa = _fit("ml_mkl_sa", Ks, Y, TOL, C=1.0, solver__random_state=0, solver__batch=batch,
              solver__certify_every=certify_every)
    ref = _shared_reference(Ks, encode_targets(Y).blocks, build_parts("l1mkl").regularizer, C=1.0)
    assert sa.converged and sa.dual_gap <= TOL
    assert ref * (1 - 1e-6) <= sa.objective <= ref * (1 + TOL)


def test_sa_batch_estimate_is_unbiased():
    """Each block is in a batch of b out of T with probability b/T: averaged over all batches, both estimates
    are the sum of the new forms; before every block was solved, SAGA's table is empty: the thesis's estimate."""
    from itertools import combinations

    rng = np.random.default_rng(1)
    T, b, M = 5, 2, 3
    old, new = rng.random((T, M)), rng.random((T, M))
    seen = np.ones(T, dtype=bool)
    batches = [np.array(c) for c in combinations(range(T), b)]
    for gradient in ("sampled", "aggregated"):
        sa = MLMKLSA(gradient=gradient)
        mean = np.mean([sa._estimate(old, seen, c, new[c]) for c in batches], axis=0)
        np.testing.assert_allclose(mean, new.sum(axis=0))
    seen[3] = False
    est = MLMKLSA()._estimate(old, seen, np.array([0, 1]), new[[0, 1]])
    np.testing.assert_allclose(est, T / b * new[[0, 1]].sum(axis=0))


def test_sa_gradient_estimates_are_unbiased():
    """Proposition 1: over the uniform draw of the block, both estimates average to the full gradient."""
    rng = np.random.default_rng(0)
    forms_old, forms_new = rng.random((4, 3)), rng.random((4, 3))
    T = len(forms_old)
    full = -0.5 * forms_new.sum(axis=0)
    sampled = np.mean([-0.5 * T * forms_new[a] for a in range(T)], axis=0)
    aggregated = np.mean([-0.5 * (forms_old.sum(axis=0) + T * (forms_new[a] - forms_old[a])) for a in range(T)],
                         axis=0)
    np.testing.assert_allclose(sampled, full)
    np.testing.assert_allclose(aggregated, full)


def test_domains_and_tasks_sa_cannot_handle_are_refused():
    with pytest.raises(IncompatiblePartsError, match="simplex"):
        build_parts("ml_mkl_sa", regularizer="box_simplex")

    class Coupled(InnerProblem):
        def solve(self, K, alpha0, tol):  # pragma: no cover - never reached
            return InnerSolution(np.zeros(2), np.zeros(2), 0.0, 0.0, 0.0)

        def linear_term(self, alpha):  # pragma: no cover
            return 0.0

        @property
        def alpha_shape(self):
            return (2,)

    problem = MKLProblem(stack=DenseStack(np.ones((2, 2, 2))), y=None, loss=None,
                         regularizer=build_parts("l1mkl").regularizer, inner=Coupled())
    with pytest.raises(ValueError, match="needs independent blocks it can sample .*Coupled does not offer it"):
        MLMKLSA().solve(problem)
    for bad, match in [({"eta": 0.0}, "eta"), ({"step": "fast"}, "step"), ({"certify_every": 0}, "certify_every"),
                       ({"gradient": "exact"}, "gradient"), ({"batch": 0}, "batch"), ({"batch": "all"}, "batch"),
                       ({"certify_every": float("inf")}, "certify_every"), ({"suffix": 0.0}, "suffix"),
                       ({"suffix": 1.5}, "suffix"), ({"suffix": True}, "suffix")]:
        separable = MKLProblem(stack=DenseStack(np.stack([np.eye(2), np.ones((2, 2))])),
                               y=np.array([[1.0, -1.0], [-1.0, 1.0]]), loss=build_parts("l1mkl").loss,
                               regularizer=build_parts("l1mkl").regularizer)
        with pytest.raises(ValueError, match=match):
            MLMKLSA(**bad).solve(separable)


# --------------------------------------------------------------------------------------------------
# the estimator
# --------------------------------------------------------------------------------------------------
def test_estimator_ranks_labels_with_sa_and_the_sum_form():
    X, Y = _multilabel(5, n=60, labels=3)
    Ks = np.moveaxis(_kernels(X), 0, 2)  # scikit-learn's precomputed layout (n, n, M)
    common = dict(kernels="precomputed", multiclass="shared", tol=TOL, inner_tol=1e-6, max_iter=500)
    sa = MKLClassifier(method="ml_mkl_sa", solver=MLMKLSA(random_state=0), **common).fit(Ks, Y)
    total = MKLClassifier(method="l1mkl", **common).fit(Ks, Y)
    assert sa.target_type_ == "multilabel" and sa.weights_.shape == (Ks.shape[2],)
    assert sa.objective_ == pytest.approx(total.objective_, rel=2 * TOL)
    scores = sa.decision_function(Ks)
    assert scores.shape == Y.shape
    np.testing.assert_array_equal(sa.predict(Ks), (scores > 0).astype(int))
    # ranking scores: each label's positives above its negatives on the training data, mostly
    from sklearn.metrics import roc_auc_score

    assert min(roc_auc_score(Y[:, j], scores[:, j]) for j in range(Y.shape[1])) > 0.8


def test_sa_with_one_vs_rest_is_refused_but_binary_is_fine():
    X, Y = _multilabel(6, labels=3)
    Ks = np.moveaxis(_kernels(X), 0, 2)
    with pytest.raises(ValueError, match="multiclass='shared'"):
        MKLClassifier(kernels="precomputed", method="ml_mkl_sa").fit(Ks, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = MKLClassifier(kernels="precomputed", method="ml_mkl_sa", max_iter=5).fit(Ks, Y[:, 0])
    assert clf.decision_function(Ks).shape == (len(Y),)


@pytest.mark.parametrize("Y, match", [
    (np.array([[1, 0], [2, 1], [0, 0], [1, 1]]), "0 and 1"),
    (np.array([[0.5, 0], [1, 1], [0, 0], [1, 1]]), "0 and 1"),
    (np.array([[0, 0], [0, 1], [0, 0], [0, 1]]), "label column 0 has a single value"),
    (np.array([[1, 0], [1, 1], [1, 0], [1, 1]]), "label column 0 has a single value"),
    (np.array([[1, 0], [0, 1], [1, 1], [0, 0]]), "label column 1 has a single value|inconsistent numbers"),
])
def test_bad_indicator_matrices_are_refused(Y, match):
    X = np.random.default_rng(0).normal(size=(4, 2))
    if match.endswith("inconsistent numbers"):
        X, match = X[:3], "inconsistent numbers of samples"
    for method in ("ml_mkl_sa", "l1mkl"):
        with pytest.raises(ValueError, match=match):
            MKLClassifier(method=method, multiclass="shared").fit(X, Y)


def test_precomputed_row_mismatch_is_refused():
    X, Y = _multilabel(7, labels=2)
    Ks = np.moveaxis(_kernels(X), 0, 2)
    with pytest.raises(ValueError, match=r"samples|rows"):
        MKLClassifier(kernels="precomputed", method="ml_mkl_sa", multiclass="shared").fit(Ks, Y[:-1])


def test_multiclass_shared_weights_with_sa():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    sa = MKLClassifier(method="ml_mkl_sa", multiclass="shared", standardize=True, tol=1e-2,
                       solver=MLMKLSA(random_state=0)).fit(X, y)
    assert sa.target_type_ == "multiclass" and sa.decision_function(X).shape == (len(y), 3)
    assert sa.dual_gap_ <= 1e-2 and sa.score(X, y) > 0.9
