"""MultiLabelRanker: consistency with the solvers, kernels, missing labels, thresholds, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_multilabel_classification
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV, KFold

import multikernel
from multikernel import create
from multikernel.ranking import MultiLabelRanker, example_auc, learn_thresholds, solve_mlr


@pytest.fixture(scope="module")
def data():
    X, Y = make_multilabel_classification(n_samples=90, n_features=6, n_classes=5, n_labels=2, random_state=0)
    X = (X - X.mean(0)) / X.std(0)
    Y[Y.sum(axis=1) == 0, 0] = 1
    return X[:70], Y[:70], X[70:], Y[70:]


def _rbf(A: np.ndarray, B: np.ndarray, gamma: float = 0.1) -> np.ndarray:
    return np.exp(-gamma * ((A[:, None] - B[None]) ** 2).sum(-1))


def test_top_level_name():
    assert multikernel.MultiLabelRanker is MultiLabelRanker


def test_features_precomputed_and_the_solver_agree(data):
    X, Y, Xt, _ = data
    est = MultiLabelRanker(kernels="rbf", kernel_params={"gamma": 0.1}, normalize="none", C=2.0,
                           inner_tol=1e-8).fit(X, Y)
    sol = solve_mlr(_rbf(X, X), np.where(Y > 0, 1.0, -1.0), 2.0, tol=1e-8)
    np.testing.assert_allclose(est.coef_, sol.coef, atol=1e-10)
    np.testing.assert_allclose(est.decision_function(Xt), _rbf(Xt, X) @ sol.coef, atol=1e-10)
    assert est.dual_gap_ <= 1e-6 and est.objective_ == pytest.approx(sol.primal_objective)
    pre = MultiLabelRanker(kernels="precomputed", normalize="none", C=2.0, inner_tol=1e-8).fit(_rbf(X, X), Y)
    np.testing.assert_allclose(pre.decision_function(_rbf(Xt, X)), est.decision_function(Xt), atol=1e-10)
    pred = est.predict(Xt)
    assert pred.shape == (len(Xt), Y.shape[1]) and set(np.unique(pred)) <= {0, 1}
    np.testing.assert_array_equal(est.classes_, np.arange(Y.shape[1]))


def test_sparse_labels_and_lazy_kernels_give_the_same_model(data):
    X, Y, Xt, _ = data
    dense = MultiLabelRanker(inner_tol=1e-8).fit(X, Y)
    sparse = MultiLabelRanker(inner_tol=1e-8).fit(X, sp.csr_matrix(Y))
    lazy = MultiLabelRanker(inner_tol=1e-8, kernel_backend="lazy", cache_size=0.01).fit(X, Y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_)
    np.testing.assert_allclose(lazy.coef_, dense.coef_, atol=1e-10)
    np.testing.assert_allclose(lazy.decision_function(Xt), dense.decision_function(Xt), atol=1e-10)


@pytest.mark.parametrize("method", ["mlr_l1", "mlr_gl"])
def test_unknown_labels_are_left_out_of_every_pair(data, method):
    X, Y, _, _ = data
    Yn = Y.astype(float)
    rng = np.random.default_rng(0)
    Yn[rng.random(Yn.shape) < 0.2] = np.nan
    Yn[3] = np.nan
    Yn[3, 1] = 1.0                                   # all but one label unknown: no pair
    est = MultiLabelRanker(method=method, kernels="rbf", kernel_params={"gamma": 0.1}, normalize="none",
                           inner_tol=1e-8).fit(X, Yn)
    Ysign = np.where(np.isnan(Yn), 0.0, np.where(Yn > 0, 1.0, -1.0))
    sol = solve_mlr(_rbf(X, X), Ysign, 1.0, loss=method[4:], tol=1e-8)
    np.testing.assert_allclose(est.coef_, sol.coef, atol=1e-10)
    assert np.all(est.coef_[np.isnan(Yn)] == 0.0)
    assert 3 in est.pairless_samples_ and np.all(est.coef_[3] == 0.0)


def test_documented_rules_for_degenerate_labels(data):
    X, Y, Xt, _ = data
    Y = Y.copy()
    Y[5] = 0                                         # a sample without a relevant label
    Y[:, 4] = 0                                      # a label never relevant in training
    est = MultiLabelRanker(kernels="rbf", normalize="none").fit(X, Y)
    assert 5 in est.pairless_samples_ and np.all(est.coef_[5] == 0.0)
    # only irrelevant coefficients (<= 0) and a positive kernel: the label scores <= 0 everywhere
    assert np.all(est.coef_[:, 4] <= 0.0)
    assert np.all(est.decision_function(Xt)[:, 4] <= 0.0)


def test_several_kernels_mk_mlr_average_and_gl(data):
    X, Y, Xt, _ = data
    builders = [create("kernel", "rbf", gamma=g) for g in (0.05, 0.5)] + [create("kernel", "linear")]
    mk = MultiLabelRanker(kernels=builders, tol=1e-5, inner_tol=1e-7).fit(X, Y)
    assert mk.weights_.sum() == pytest.approx(1.0) and np.all(mk.weights_ >= 0)
    assert mk.dual_gap_ <= 1e-5 and mk.results_ is not None
    assert mk.decision_function(Xt).shape == (len(Xt), Y.shape[1])
    lp = MultiLabelRanker(kernels=builders, regularizer=create("regularizer", "lp_ball", p=2.0), solver="bcd",
                          tol=1e-5, inner_tol=1e-7).fit(X, Y)
    assert np.linalg.norm(lp.weights_) == pytest.approx(1.0, rel=1e-6) and np.all(lp.weights_ > 0)
    avg = MultiLabelRanker(kernels=builders, regularizer="uniform", method="mlr_gl", inner_tol=1e-8).fit(X, Y)
    np.testing.assert_allclose(avg.weights_, 1 / 3)
    with pytest.raises(ValueError, match="regularizer='uniform'"):
        MultiLabelRanker(kernels=builders, method="mlr_gl").fit(X, Y)


def test_learn_thresholds_by_hand():
    scores = np.array([[3.0, 1.0, 0.0], [2.0, 2.5, -1.0], [0.5, 0.4, 0.3]])
    Ysign = np.array([[1.0, -1.0, -1.0], [1.0, 1.0, -1.0], [1.0, -1.0, 0.0]])
    # over all known labels, sorted: 3(+) 2.5(+) 2(+) 1(-) 0.5(+) 0.4(-) 0(-) -1(-): one mistake at best,
    # between 2 and 1 (gap 1) or between 0.5 and 0.4 (gap 0.1): the widest gap, t = 1.5
    assert learn_thresholds(scores, Ysign, "constant")["intercept"] == pytest.approx(1.5)
    assert learn_thresholds(scores, Ysign, 0.7) == {"rule": "fixed", "coef": pytest.approx(np.zeros(3)),
                                                    "intercept": 0.7}
    # too few samples for a linear rule (labels + 2): the constant one
    assert learn_thresholds(scores, Ysign, "linear")["rule"] == "constant"


def test_linear_threshold_recovers_separable_label_sets():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(200, 4))
    t = 0.3 * scores[:, 0] - 0.2                    # a linear threshold function of the scores
    Ysign = np.where(scores > t[:, None], 1.0, -1.0)
    keep = (Ysign > 0).any(1) & (Ysign < 0).any(1)
    rule = learn_thresholds(scores[keep], Ysign[keep], "linear")
    pred = scores[keep] > (scores[keep] @ rule["coef"] + rule["intercept"])[:, None]
    assert np.mean(pred == (Ysign[keep] > 0)) >= 0.98


def test_grid_search_with_unknown_labels(data):
    X, Y, _, _ = data
    Yn = Y.astype(float)
    Yn[np.random.default_rng(1).random(Yn.shape) < 0.1] = np.nan
    scorer = make_scorer(lambda y, s: example_auc(np.nan_to_num(y), s), response_method="decision_function")
    search = GridSearchCV(MultiLabelRanker(), {"C": [0.1, 1.0]}, scoring=scorer, cv=KFold(3)).fit(X, Yn)
    assert search.best_params_["C"] in (0.1, 1.0)


def test_bad_inputs(data):
    X, Y, _, _ = data
    with pytest.raises(ValueError, match=r"\(Y > 0\).astype\(int\)"):
        MultiLabelRanker().fit(X, np.where(Y > 0, 1, -1))
    with pytest.raises(ValueError, match="found 2"):
        MultiLabelRanker().fit(X, 2 * Y)
    with pytest.raises(ValueError, match="70 samples but Y has 69 rows"):
        MultiLabelRanker().fit(X, Y[:-1])
    with pytest.raises(ValueError, match="MultiLabelBinarizer"):
        MultiLabelRanker().fit(X, Y[:, 0])
    with pytest.raises(ValueError, match="at least two"):
        MultiLabelRanker().fit(X, Y[:, :1])
    with pytest.raises(ValueError, match="no training sample has both"):
        MultiLabelRanker().fit(X, np.ones_like(Y))
    with pytest.raises(ValueError, match="requires y"):
        MultiLabelRanker().fit(X, None)
    for params, match in [({"method": "rank"}, "method must be"), ({"C": 0}, "C must be"),
                          ({"eta": 0.5}, "eta must be"), ({"threshold": "median"}, "threshold must be"),
                          ({"tol": True}, "tol must be"), ({"regularizer": "l7"}, "regularizer must be"),
                          ({"max_sweeps": 0}, "max_sweeps must be")]:
        with pytest.raises(ValueError, match=match):
            MultiLabelRanker(**params).fit(X, Y)
    with pytest.raises(ValueError, match="kernels must be .* got 'gaussian'"):
        MultiLabelRanker(kernels="gaussian").fit(X, Y)


def test_missing_label_protocol():
    """Spec 5.2: remove round(f a) of each sample's a relevant labels, keep at least one, touch nothing else."""
    from multikernel.ranking import drop_positive_labels

    rng = np.random.default_rng(0)
    Y = (rng.random((300, 8)) < 0.4).astype(int)
    Y[:, 0] = 1
    for fraction in (0.2, 0.4, 0.6):
        out = drop_positive_labels(Y, fraction, random_state=1)
        a = Y.sum(axis=1)
        assert np.all(out <= Y)                                         # only relevant labels removed
        np.testing.assert_array_equal(a - out.sum(axis=1), np.minimum(np.round(fraction * a), a - 1))
        assert np.all(out.sum(axis=1) >= 1)
    np.testing.assert_array_equal(drop_positive_labels(Y, 0.4, random_state=3), drop_positive_labels(Y, 0.4, 3))
    with pytest.raises(ValueError, match="fraction"):
        drop_positive_labels(Y, 1.0)
