"""The rankers as library estimators: ranking score, save/load, progress and Ctrl-C, bad input."""

import pickle
import warnings

import numpy as np
import pytest
from _model_files import assert_damaged_files_refused, round_trip
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.calibration import CalibratedClassifierCV
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.metrics import label_ranking_loss
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from multikernel import create
from multikernel.errors import FitInterruptedWarning
from multikernel.ranking import MLkNN, MultiLabelRanker, OneVsRestRanker
from multikernel.ranking import estimator as est_module
from multikernel.ranking import solver as solver_module
from multikernel.ranking.metrics import known_ranking_loss


def _data(n=40, m=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    W = rng.normal(size=(3, m))
    Y = (X @ W + 0.3 * rng.normal(size=(n, m)) > 0).astype(float)
    Y[0] = [1, 0] * (m // 2)
    return X, Y


# ---------------------------------------------------------------------------------------------------------
# score: the ranking loss over known labels
# ---------------------------------------------------------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 12), m=st.integers(2, 6), levels=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_known_ranking_loss_is_sklearns_on_complete_labels(n, m, levels, seed):
    """Ties included (few score levels make many): the same value as label_ranking_loss."""
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, m)) < 0.5).astype(int)
    scores = rng.integers(0, levels, size=(n, m)).astype(float)
    assert known_ranking_loss(Y, scores) == pytest.approx(label_ranking_loss(Y, scores), abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 10), m=st.integers(2, 6), seed=st.integers(0, 2**16))
def test_known_ranking_loss_ignores_unknown_labels(n, m, seed):
    """Each sample's loss is scikit-learn's on its known labels alone (unknown entries enter no pair)."""
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, m)) < 0.5).astype(float)
    Y[rng.random((n, m)) < 0.3] = np.nan
    scores = rng.integers(0, 3, size=(n, m)).astype(float)
    per_sample = []
    for i in range(n):
        known = ~np.isnan(Y[i])
        if known.sum() < 2 or Y[i, known].min() == Y[i, known].max():
            per_sample.append(0.0)
        else:
            per_sample.append(label_ranking_loss(Y[i, known][None].astype(int), scores[i, known][None]))
    assert known_ranking_loss(Y, scores) == pytest.approx(np.mean(per_sample), abs=1e-12)


@pytest.mark.parametrize("make", [lambda: MultiLabelRanker(), lambda: OneVsRestRanker(), lambda: MLkNN(k=3)])
def test_score_is_one_minus_the_ranking_loss_and_takes_unknown_labels(make):
    X, Y = _data()
    Yn = Y.copy()
    Yn[np.random.default_rng(1).random(Y.shape) < 0.2] = np.nan
    est = make().fit(X, Yn)
    assert est.score(X, Yn) == pytest.approx(1.0 - known_ranking_loss(Yn, est.decision_function(X)))
    # the default scoring of a grid search: the ranking score, NaN labels and all
    search = GridSearchCV(make(), {}, cv=KFold(3)).fit(X, Yn)
    assert 0.0 <= search.best_score_ <= 1.0


# ---------------------------------------------------------------------------------------------------------
# parameters
# ---------------------------------------------------------------------------------------------------------
def test_regularizer_instance_is_a_nested_parameter():
    X, Y = _data()
    builders = [create("kernel", "rbf", gamma=g) for g in (0.1, 1.0)]
    est = MultiLabelRanker(kernels=builders, regularizer=create("regularizer", "lp_ball", p=2.0), solver="bcd")
    assert est.get_params()["regularizer__p"] == 2.0
    est.set_params(regularizer__p=3.0).fit(X, Y)
    assert np.sum(est.weights_ ** 3) == pytest.approx(1.0, rel=1e-6)


def test_tol_is_the_certified_gap_with_one_kernel():
    """A loose inner tolerance is tightened until the certified primal-dual gap is within tol."""
    X, Y = _data()
    est = MultiLabelRanker(inner_tol=0.5, tol=1e-6).fit(X, Y)
    assert est.dual_gap_ <= 1e-6
    loose = MultiLabelRanker(inner_tol=0.5, tol=0.9).fit(X, Y)
    assert loose.dual_gap_ <= 0.9 and loose.n_iter_ <= est.n_iter_


def test_mlknn_on_scaled_input_has_the_same_neighbours():
    X, Y = _data()
    ref = MLkNN(k=3).fit(X, Y).decision_function(X)
    for scale in (1e-300, 1e300):
        est = MLkNN(k=3).fit(X * scale, Y)
        np.testing.assert_allclose(est.decision_function(X * scale), ref)


def test_complex_labels_are_refused():
    X, Y = _data()
    with pytest.raises(ValueError, match="complex"):
        MultiLabelRanker().fit(X, Y + 1j)
    with pytest.raises(ValueError, match="complex"):
        MLkNN(k=3).fit(X, Y.astype(complex))


def test_platt_scores_are_calibrated_classifier_cv_probabilities():
    X, Y = _data()
    est = OneVsRestRanker(kernels="linear", normalize="none", platt=True).fit(X, Y)
    K = X @ X.T
    for k in range(Y.shape[1]):
        cal = CalibratedClassifierCV(SVC(kernel="precomputed"), method="sigmoid", cv=5, ensemble=False)
        cal.fit(K, Y[:, k].astype(int))
        np.testing.assert_allclose(est.decision_function(X)[:, k], cal.predict_proba(K)[:, 1], atol=1e-10)


# ---------------------------------------------------------------------------------------------------------
# progress and Ctrl-C
# ---------------------------------------------------------------------------------------------------------
def _interrupt_after(monkeypatch, module, name, calls):
    original = getattr(module, name)
    count = {"n": 0}

    def step(*args, **kwargs):
        count["n"] += 1
        if count["n"] > calls:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, step)


def test_ctrl_c_keeps_the_last_completed_sweep(monkeypatch):
    X, Y = _data()
    _interrupt_after(monkeypatch, solver_module._mlr, "sweep", 3)
    with pytest.warns(FitInterruptedWarning, match="MultiLabelRanker.fit was interrupted"):
        est = MultiLabelRanker(inner_tol=1e-12, max_sweeps=10**5).fit(X, Y)
    assert est.interrupted_ and est.n_iter_ == 3
    assert est.dual_gap_ > 0 and np.isfinite(est.objective_)
    assert est.decision_function(X).shape == Y.shape and est.predict(X).shape == Y.shape


def test_ctrl_c_in_mk_mlr_keeps_the_best_certified_iterate(monkeypatch):
    X, Y = _data()
    builders = [create("kernel", "rbf", gamma=g) for g in (0.1, 1.0)]
    _interrupt_after(monkeypatch, est_module.RankingInner, "solve", 3)
    with pytest.warns(FitInterruptedWarning):
        est = MultiLabelRanker(kernels=builders, tol=1e-9, inner_tol=1e-8).fit(X, Y)
    assert est.interrupted_ and np.isfinite(est.dual_gap_)
    assert est.predict(X).shape == Y.shape


def test_verbose_shows_the_iterations(capsys):
    X, Y = _data()
    builders = [create("kernel", "rbf", gamma=g) for g in (0.1, 1.0)]
    MultiLabelRanker(verbose=1).fit(X, Y)
    MultiLabelRanker(kernels=builders, verbose=1).fit(X, Y)
    OneVsRestRanker(verbose=1).fit(X, Y)
    err = capsys.readouterr().err
    assert "MultiLabelRanker: mlr_l1: 1, violation" in err and "gap" in err and "OneVsRestRanker: labels" in err
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MultiLabelRanker().fit(X, Y)
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------------------------------------------------
# save / load
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: MultiLabelRanker(),
    lambda: MultiLabelRanker(method="mlr_gl", threshold="constant"),
    lambda: MultiLabelRanker(kernels=[create("kernel", "rbf", gamma=g) for g in (0.1, 1.0)]),
    lambda: OneVsRestRanker(),
    lambda: OneVsRestRanker(platt=True, kernels="rbf_poly"),
    lambda: MLkNN(k=3),
], ids=["mlr_l1", "mlr_gl", "mk_mlr", "ovr", "ovr_platt", "mlknn"])
def test_round_trip_and_damaged_files(tmp_path, make):
    X, Y = _data()
    Yn = Y.copy()
    Yn[:5, 1] = np.nan
    est = make().fit(X, Yn)
    Xt = _data(seed=5)[0]
    loaded = round_trip(est, tmp_path / "m.npz", {"decision_function": (Xt,), "predict": (Xt,)})
    assert loaded.score(X, Yn) == est.score(X, Yn)
    assert_damaged_files_refused(tmp_path / "m.npz", type(est), tmp_path)


def test_round_trip_precomputed(tmp_path):
    X, Y = _data()
    Ks = np.stack([X @ X.T, np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))], axis=-1)
    for est in (MultiLabelRanker(kernels="precomputed"), OneVsRestRanker(kernels="precomputed")):
        est.fit(Ks, Y)
        round_trip(est, tmp_path / "p.npz", {"decision_function": (Ks[:7],)})


# ---------------------------------------------------------------------------------------------------------
# scikit-learn conformance
# ---------------------------------------------------------------------------------------------------------
#: scikit-learn's checks give a multi-output-only estimator one target column, (n, 1), of class labels; a ranker
#: orders at least two labels of a 0/1 indicator matrix, so these checks stop at the label check.  Their
#: substance is checked with label matrices below (test_ranker_api_with_label_matrices).
_ONE_TARGET_COLUMN = (
    "check_classifier_data_not_an_array", "check_classifiers_train", "check_dict_unchanged",
    "check_dont_overwrite_parameters", "check_dtype_object", "check_estimators_dtypes",
    "check_estimators_fit_returns_self", "check_estimators_nan_inf", "check_estimators_overwrite_params",
    "check_estimators_pickle", "check_f_contiguous_array_estimator", "check_fit2d_1feature", "check_fit2d_1sample",
    "check_fit2d_predict1d", "check_fit_check_is_fitted", "check_fit_idempotent", "check_fit_score_takes_y",
    "check_methods_sample_order_invariance", "check_methods_subset_invariance", "check_n_features_in",
    "check_n_features_in_after_fitting", "check_pipeline_consistency",
    "check_readonly_memmap_input", "check_positive_only_tag_during_fit", "check_classifiers_one_label",
    "check_classifiers_classes", "check_classifiers_regression_target",
)


def _expected_failures(estimator):
    reasons = dict.fromkeys(_ONE_TARGET_COLUMN, "needs a label matrix of at least two columns; the check gives "
                                                 "one column of class labels")
    if isinstance(estimator, MultiLabelRanker):
        reasons["check_non_transformer_estimators_n_iter"] = reasons["check_fit_idempotent"]
    if not isinstance(estimator, OneVsRestRanker):
        reasons["check_classifier_multioutput"] = ("a ranker's scores are not margins at 0: labels are predicted "
                                                   "above a learnt threshold (MLR) or a posterior of 1/2 (ML-kNN)")
    return reasons


@parametrize_with_checks([MultiLabelRanker(max_sweeps=200), OneVsRestRanker(), MLkNN(k=3)],
                         expected_failed_checks=_expected_failures)
def test_sklearn_conformance(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


@pytest.mark.parametrize("make", [lambda: MultiLabelRanker(), lambda: OneVsRestRanker(), lambda: MLkNN(k=3)],
                         ids=["mlr", "ovr", "mlknn"])
def test_ranker_api_with_label_matrices(make):
    """What the checks above cannot run, with label matrices: fit returns self and leaves the parameters, a refit
    and pickling give the same scores, the order of the test samples does not matter, the feature count is
    checked, and an unfitted ranker raises NotFittedError."""
    X, Y = _data()
    est = make()
    with pytest.raises(NotFittedError):
        est.decision_function(X)
    params = est.get_params()
    assert est.fit(X, Y) is est and est.get_params() == params and est.n_features_in_ == X.shape[1]
    scores = est.decision_function(X)
    np.testing.assert_allclose(make().fit(X, Y).decision_function(X), scores)
    np.testing.assert_allclose(pickle.loads(pickle.dumps(est)).decision_function(X), scores)
    order = np.random.default_rng(0).permutation(len(X))
    np.testing.assert_allclose(est.decision_function(X[order]), scores[order], atol=1e-12)
    with pytest.raises(ValueError, match="features"):
        est.decision_function(X[:, :2])
