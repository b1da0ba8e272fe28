"""The metric learners as estimators: scikit-learn conformance, metric-learn's interface, pair drawing, errors."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from multikernel import ITML, ITMLS, ITML_Supervised, ITMLPlus, ITMLPlus_Supervised, ITMLS_Supervised
from multikernel.metric import draw_pairs


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 30)
    X = rng.normal(size=(90, 4)) + np.array([[0, 0, 0, 0], [2, 0, 0, 0], [0, 2, 0, 0]])[y]
    X[:, 3] *= 5.0  # a noisy, large feature the metric should shrink
    Z = np.eye(3)[y] + 0.1 * rng.normal(size=(90, 3))  # privileged: nearly the label
    return X, y, Z


def _pairs(X, y, seed=0, n=60):
    idx, lab = draw_pairs(y, n, random_state=seed)
    return idx, lab, np.stack([X[idx[:, 0]], X[idx[:, 1]]], axis=1)


@parametrize_with_checks(
    [ITML_Supervised(max_iter=30), ITMLPlus_Supervised(max_iter=30), ITMLS_Supervised(max_iter=30)]
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (ConvergenceWarning, UserWarning))
        check(estimator)


# ----------------------------------------------------------------------------------------------------------
# metric-learn's interface
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [ITML, ITMLPlus, ITMLS])
def test_pairs_api(cls, blobs):
    X, y, Z = blobs
    idx, lab, P3 = _pairs(X, y)
    kw = {} if cls is ITML else {"pairs_privileged": np.stack([Z[idx[:, 0]], Z[idx[:, 1]]], axis=1)}
    est = cls(random_state=0).fit(P3, lab, **kw)
    M, L = est.get_mahalanobis_matrix(), est.components_
    np.testing.assert_allclose(L.T @ L, M, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.transform(X), X @ L.T)
    diff = P3[:, 0] - P3[:, 1]
    d2 = np.einsum("ij,jk,ik->i", diff, M, diff)
    np.testing.assert_allclose(est.pair_distance(P3, squared=True), d2, rtol=1e-10)
    np.testing.assert_allclose(est.pair_distance(P3), np.sqrt(d2), rtol=1e-10)
    np.testing.assert_allclose(est.pair_score(P3), -np.sqrt(d2), rtol=1e-10)
    np.testing.assert_allclose(est.score_pairs(P3), np.sqrt(d2), rtol=1e-10)
    np.testing.assert_allclose(est.decision_function(P3), -np.sqrt(d2), rtol=1e-10)
    assert est.score(P3, lab) == pytest.approx(roc_auc_score(lab, -d2))
    metric = est.get_metric()
    assert metric(X[0], X[1]) == pytest.approx(np.sqrt((X[0] - X[1]) @ M @ (X[0] - X[1])))
    # the threshold is the most accurate cut of the training distances
    acc = np.mean(est.predict(P3) == lab)
    d = np.sqrt(d2)
    best = max(np.mean(np.where(d <= t, 1, -1) == lab) for t in np.concatenate([[-1.0], d]))
    assert acc == pytest.approx(best)
    assert est.set_threshold(0.0).predict(P3).tolist() == [-1] * len(lab)


def test_preprocessor_and_index_pairs(blobs):
    X, y, Z = blobs
    idx, lab, P3 = _pairs(X, y)
    a = ITML().fit(P3, lab)
    b = ITML(preprocessor=X).fit(idx, lab)
    np.testing.assert_array_equal(a.get_mahalanobis_matrix(), b.get_mahalanobis_matrix())
    np.testing.assert_allclose(b.pair_distance(idx), a.pair_distance(P3))
    Zp = np.stack([Z[idx[:, 0]], Z[idx[:, 1]]], axis=1)
    c = ITMLPlus().fit(P3, lab, pairs_privileged=Zp)
    d = ITMLPlus(preprocessor=X).fit(idx, lab, pairs_privileged=Zp)
    np.testing.assert_allclose(c.get_mahalanobis_matrix(), d.get_mahalanobis_matrix(), rtol=1e-12)


@pytest.mark.parametrize(("sup", "pairs_cls"), [(ITML_Supervised, ITML), (ITMLPlus_Supervised, ITMLPlus),
                                               (ITMLS_Supervised, ITMLS)])
def test_supervised_form_is_pairs_form_on_drawn_pairs(sup, pairs_cls, blobs):
    X, y, Z = blobs
    priv = {} if sup is ITML_Supervised else {"X_privileged": Z}
    est = sup(n_constraints=50, random_state=3).fit(X, y, **priv)
    idx, lab = draw_pairs(y, 50, random_state=3)
    P3 = np.stack([X[idx[:, 0]], X[idx[:, 1]]], axis=1)
    ppriv = {} if sup is ITML_Supervised else {"pairs_privileged": np.stack([Z[idx[:, 0]], Z[idx[:, 1]]], axis=1)}
    ref = pairs_cls().fit(P3, lab, bounds=est.bounds_, **ppriv)
    np.testing.assert_allclose(est.get_mahalanobis_matrix(), ref.get_mahalanobis_matrix(), rtol=1e-12)
    # default targets: the 3rd and 97th percentiles of all squared training distances
    D = ((X[:, None] - X[None]) ** 2).sum(-1)[np.triu_indices(len(X), 1)]
    np.testing.assert_allclose(est.bounds_, np.percentile(D, [3, 97]), rtol=1e-12)


def test_pipeline_with_knn_and_privileged_routing(blobs):
    X, y, Z = blobs
    pipe = make_pipeline(ITMLPlus_Supervised(random_state=0), KNeighborsClassifier(3))
    pipe.fit(X, y, itmlplus_supervised__X_privileged=Z)
    est = pipe[0]
    assert est.n_privileged_pairs_ > 0
    manual = KNeighborsClassifier(3).fit(est.transform(X), y)
    np.testing.assert_array_equal(pipe.predict(X), manual.predict(est.transform(X)))
    knn = KNeighborsClassifier(3, metric=est.get_metric(), algorithm="brute").fit(X[:30], y[:30])
    np.testing.assert_array_equal(knn.predict(X[30:40]), manual.fit(est.transform(X[:30]), y[:30]).predict(
        est.transform(X[30:40])))
    # the metric learnt with privileged data shrinks the noisy feature relative to the Euclidean metric
    M = est.get_mahalanobis_matrix()
    assert M[3, 3] < M[0, 0] and M[3, 3] < 1.0
    assert pickle.loads(pickle.dumps(est)).get_mahalanobis_matrix().tolist() == M.tolist()
    assert clone(est).get_params() == est.get_params()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_partial_privileged_rows(blobs):
    X, y, Z = blobs
    Zp = Z.copy()
    Zp[::2] = np.nan  # half the samples without privileged data: a pair has it when both samples do
    est = ITMLPlus_Supervised(n_constraints=100, random_state=1).fit(X, y, X_privileged=Zp)
    idx, _ = draw_pairs(y, 100, random_state=1)
    assert est.n_privileged_pairs_ == int(np.sum((idx % 2 == 1).all(axis=1)))
    none = ITMLPlus_Supervised(n_constraints=100, random_state=1).fit(X, y, X_privileged=np.full_like(Z, np.nan))
    itml = ITML_Supervised(n_constraints=100, random_state=1).fit(X, y)
    np.testing.assert_array_equal(none.get_mahalanobis_matrix(), itml.get_mahalanobis_matrix())


def test_itmls_removes_the_requested_fraction(blobs):
    X, y, Z = blobs
    idx, lab, P3 = _pairs(X, y, n=50)
    Zp = np.stack([Z[idx[:, 0]], Z[idx[:, 1]]], axis=1)
    est = ITMLS(outlier_fraction=0.2).fit(P3, lab, pairs_privileged=Zp)
    assert est.n_removed_pairs_ == int(0.2 * (lab > 0).sum()) + int(0.2 * (lab < 0).sum())
    keep_all = ITMLS(outlier_fraction=0.0).fit(P3, lab, pairs_privileged=Zp)
    np.testing.assert_array_equal(keep_all.get_mahalanobis_matrix(), ITML().fit(P3, lab).get_mahalanobis_matrix())


# ----------------------------------------------------------------------------------------------------------
# Pair drawing
# ----------------------------------------------------------------------------------------------------------


def test_draw_pairs():
    y = np.array(["a"] * 5 + ["b"] * 4 + ["c"] * 3)
    idx, lab = draw_pairs(y, 7, random_state=0)
    assert (lab == 1).sum() == 7 and (lab == -1).sum() == 7
    assert np.all(idx[:, 0] < idx[:, 1])
    assert len({tuple(p) for p in idx}) == len(idx)
    np.testing.assert_array_equal(lab, np.where(y[idx[:, 0]] == y[idx[:, 1]], 1, -1))
    idx, lab = draw_pairs(y, 10_000, random_state=0)  # more than exist: all of them
    assert (lab == 1).sum() == 10 + 6 + 3 and (lab == -1).sum() == 66 - 19
    assert len({tuple(p) for p in idx}) == 66
    a, _ = draw_pairs(y, 7, random_state=5)
    b, _ = draw_pairs(y, 7, random_state=5)
    np.testing.assert_array_equal(a, b)
    _, lab = draw_pairs(np.repeat([0, 1], 10))
    assert len(lab) == 2 * 20 * 2**2 or len(lab) == 2 * 45 + 20  # default 20 n_classes^2 each, capped


# ----------------------------------------------------------------------------------------------------------
# Errors and warnings
# ----------------------------------------------------------------------------------------------------------


def test_privileged_view_with_other_number_of_rows(blobs):
    X, y, Z = blobs
    with pytest.raises(ValueError, match="X_privileged has 89 rows but X has 90"):
        ITMLPlus_Supervised().fit(X, y, X_privileged=Z[:-1])
    idx, lab, P3 = _pairs(X, y)
    with pytest.raises(ValueError, match="pairs_privileged has 119 pairs but pairs has 120"):
        ITMLPlus().fit(P3, lab, pairs_privileged=np.stack([Z[idx[:-1, 0]], Z[idx[:-1, 1]]], axis=1))


def test_pairs_indexing_outside_x(blobs):
    X, y, _ = blobs
    idx, lab, _ = _pairs(X, y)
    idx[4, 1] = 90
    with pytest.raises(ValueError, match=r"pairs\[4\] = .* indexes outside the preprocessor's 90 rows"):
        ITML(preprocessor=X).fit(idx, lab)
    with pytest.raises(ValueError, match="no preprocessor"):
        ITML().fit(idx, lab)


def test_single_class(blobs):
    X, _, _ = blobs
    with pytest.raises(ValueError, match="1 class"):
        ITML_Supervised().fit(X, np.zeros(len(X)))


def test_constant_feature_makes_covariance_prior_singular(blobs):
    X, y, Z = blobs
    Xc = X.copy()
    Xc[:, 2] = 1.5
    with pytest.raises(ValueError, match=r"feature\(s\) \[2\] are constant"):
        ITML_Supervised(prior="covariance").fit(Xc, y)
    Zc = Z.copy()
    Zc[:, 0] = 0.0
    with pytest.raises(ValueError, match="prior_privileged='covariance'.*constant"):
        ITMLPlus_Supervised(prior_privileged="covariance").fit(X, y, X_privileged=Zc)
    # non-constant features: the inverse covariance, returned as is when every constraint holds
    est = ITML_Supervised(prior="covariance").fit(X, y, bounds=(1e6, 1e-6))
    np.testing.assert_allclose(est.get_mahalanobis_matrix(), np.linalg.inv(np.cov(X, rowvar=False)), rtol=1e-12)


def test_bad_priors_and_parameters(blobs):
    X, y, _ = blobs
    with pytest.raises(ValueError, match="positive definite"):
        ITML_Supervised(prior=np.diag([1.0, 1.0, 0.0, 1.0])).fit(X, y)
    with pytest.raises(ValueError, match=r"shape \(4, 4\)"):
        ITML_Supervised(prior=np.eye(3)).fit(X, y)
    with pytest.raises(ValueError, match="prior must be one of 'identity', 'covariance' or an array; got 'random'"):
        ITML_Supervised(prior="random").fit(X, y)
    for bad in [0.0, -1.0, np.inf, "1"]:
        with pytest.raises(ValueError, match="gamma must be a positive finite number"):
            ITML_Supervised(gamma=bad).fit(X, y)
    with pytest.raises(ValueError, match="lam must be"):
        ITMLPlus_Supervised(lam=0).fit(X, y)
    with pytest.raises(ValueError, match="max_iter must be a positive integer"):
        ITML_Supervised(max_iter=2.5).fit(X, y)
    with pytest.raises(ValueError, match="percentiles must satisfy"):
        ITML_Supervised(percentiles=(97, 3)).fit(X, y)
    with pytest.raises(ValueError, match="bounds must be two positive numbers"):
        ITML_Supervised().fit(X, y, bounds=(0.0, 1.0))
    with pytest.raises(ValueError, match="outlier_fraction"):
        ITMLS_Supervised(outlier_fraction=1.0).fit(X, y)
    with pytest.raises(ValueError, match="n_constraints"):
        ITML_Supervised(n_constraints=0).fit(X, y)


def test_bad_pairs(blobs):
    X, y, Z = blobs
    idx, lab, P3 = _pairs(X, y)
    with pytest.raises(ValueError, match=r"pair labels must be \+1 \(similar\) or -1"):
        ITML().fit(P3, (lab > 0).astype(int))
    with pytest.raises(ValueError, match=r"shape \(n_pairs, 2, n_features\)"):
        ITML().fit(P3[:, :1], lab)
    with pytest.raises(ValueError, match="one entry per pair"):
        ITML().fit(P3, lab[:-1])
    Zp = np.stack([Z[idx[:, 0]], Z[idx[:, 1]]], axis=1)
    Zp[3, 0, 1] = np.nan
    with pytest.raises(ValueError, match="some but not all values missing"):
        ITMLPlus().fit(P3, lab, pairs_privileged=Zp)
    fitted = ITML().fit(P3, lab)
    with pytest.raises(ValueError, match="pairs have 3 features, but ITML was fitted with 4"):
        fitted.pair_distance(P3[:, :, :3])


def test_identical_samples_warn(blobs):
    X, y, Z = blobs
    idx, lab, P3 = _pairs(X, y)
    P3 = P3.copy()
    P3[0, 1] = P3[0, 0]
    with pytest.warns(UserWarning, match="1 pair\\(s\\) join identical samples"):
        ITML().fit(P3, lab)
    Zp = np.stack([Z[idx[:, 0]], Z[idx[:, 0]]], axis=1)  # every privileged pair identical
    with pytest.warns(UserWarning, match="identical privileged samples"):
        est = ITMLPlus().fit(P3[1:], lab[1:], pairs_privileged=Zp[1:])
    assert est.n_privileged_pairs_ == 0


def test_max_iter_warning(blobs):
    X, y, _ = blobs
    with pytest.warns(ConvergenceWarning, match="stopped after max_iter=2 sweeps"):
        est = ITML_Supervised(max_iter=2, tol=1e-12).fit(X, y)
    assert est.n_iter_ == 2
