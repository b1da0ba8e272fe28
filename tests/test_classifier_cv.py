"""MKLClassifierCV against GridSearchCV over MKLClassifier on the same folds (same choice, same scores, same final
model), its warm-started fold fits against cold fits on drawn problems (same certified optimum), scikit-learn
conformance, and its errors on bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _mkl_testing import make_problem
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold
from sklearn.utils.estimator_checks import parametrize_with_checks

from multikernel import MKLClassifier, MKLClassifierCV, create
from multikernel.solve.fit import UnknownParameterError


def _cancer(n: int = 120) -> tuple[np.ndarray, np.ndarray]:
    X, y = load_breast_cancer(return_X_y=True)
    rows = np.random.default_rng(0).permutation(len(y))[:n]
    return X[rows], y[rows]


def _split_scores(search: GridSearchCV, n_folds: int) -> np.ndarray:
    return np.array([search.cv_results_[f"split{k}_test_score"] for k in range(n_folds)])


CASES = [
    ("lpmkl", None, None),
    ("l1mkl", None, None),
    ("sm1mkl", {"nu": [0.25, 1.0]}, "box_simplex"),
]


@pytest.mark.parametrize(("method", "grid", "regularizer"), CASES)
def test_same_choice_scores_and_final_model_as_grid_search(method, grid, regularizer):
    X, y = _cancer()
    cv = StratifiedKFold(3, shuffle=True, random_state=1)
    Cs = [10.0, 0.1, 1.0]  # not sorted: ties go to the first in this order, as in the grid search
    # Warm and cold fits agree within tol, so a validation point within about tol of the boundary may fall on
    # either side: at tol = 1e-6 none of these data does.
    ours = MKLClassifierCV(method=method, Cs=Cs, regularizer_grid=grid, cv=cv, standardize=True, tol=1e-6,
                           max_iter=2000).fit(X, y)
    base = MKLClassifier(method=method, standardize=True, tol=1e-6, max_iter=2000)
    param_grid = {"C": Cs}
    if grid:
        base.set_params(regularizer=create("regularizer", regularizer))
        param_grid |= {f"regularizer__{k}": v for k, v in grid.items()}
    search = GridSearchCV(base, param_grid, cv=cv).fit(X, y)
    np.testing.assert_array_equal(ours.scores_.reshape(3, -1), _split_scores(search, 3))
    assert ours.best_params_ == search.best_params_
    assert ours.best_score_ == search.best_score_
    assert ours.C_ == search.best_params_["C"]
    np.testing.assert_allclose(ours.decision_function(X), search.decision_function(X), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(ours.weights_, search.best_estimator_.weights_)
    np.testing.assert_array_equal(ours.predict(X), search.predict(X))
    assert ours.scores_.shape == ((3, 3, 2) if grid else (3, 3))
    assert np.all(ours.path_dual_gap_ <= ours.tol)


def test_precomputed_multiclass_and_a_scorer_as_grid_search():
    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    K = np.stack([X @ X.T, np.exp(-0.05 * ((X[:, None] - X[None]) ** 2).sum(-1))], axis=2)  # (n, n, M)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    for scoring in (None, "f1_macro"):
        ours = MKLClassifierCV(kernels="precomputed", method="lpmkl", Cs=[0.01, 1.0], cv=cv, scoring=scoring).fit(K, y)
        search = GridSearchCV(MKLClassifier(kernels="precomputed", method="lpmkl"), {"C": [0.01, 1.0]}, cv=cv,
                              scoring=scoring).fit(K, y)
        np.testing.assert_allclose(ours.scores_, _split_scores(search, 3), rtol=0, atol=1e-12)
        assert ours.best_params_ == search.best_params_
        np.testing.assert_array_equal(ours.predict(K[:20]), search.predict(K[:20]))


def test_decision_function_scorer_as_grid_search():
    X, y = _cancer(90)
    cv = StratifiedKFold(3, shuffle=True, random_state=2)
    ours = MKLClassifierCV(method="l2mkl", Cs=[0.1, 10.0], cv=cv, scoring="roc_auc", standardize=True).fit(X, y)
    search = GridSearchCV(MKLClassifier(method="l2mkl", standardize=True), {"C": [0.1, 10.0]}, cv=cv,
                          scoring="roc_auc").fit(X, y)
    np.testing.assert_allclose(ours.scores_, _split_scores(search, 3), rtol=0, atol=1e-9)
    assert ours.best_params_ == search.best_params_


# --------------------------------------------------------------------------------------------------
# the warm-started path reaches the cold fits' certified optimum on every fold, on drawn problems
# --------------------------------------------------------------------------------------------------
@st.composite
def cv_problems(draw):
    n = draw(st.integers(12, 30), label="n")
    kinds = draw(st.lists(st.sampled_from(["linear", "poly", "rbf", "flat_rbf", "low_rank"]), min_size=1,
                          max_size=4), label="kinds")
    copies = draw(st.lists(st.integers(0, len(kinds) - 1), max_size=2), label="copies")
    problem = make_problem(
        n=n, positives=draw(st.integers(4, n - 4), label="positives"), kinds=kinds, copies=copies,
        log10_scales=draw(st.none() | st.lists(st.floats(-2, 2), min_size=len(kinds), max_size=len(kinds)),
                          label="log10_scales"),
        seed=draw(st.integers(0, 2**32 - 1), label="seed"))
    Cs = draw(st.lists(st.floats(-2, 3), min_size=2, max_size=4, unique=True), label="log10 Cs")
    return problem, [10.0**c for c in Cs], draw(st.sampled_from(["l1mkl", "lpmkl", "sm1mkl", "simplemkl"]),
                                                label="method")


@settings(max_examples=12, deadline=None)
@given(cv_problems())
def test_fold_fits_along_the_path_reach_the_cold_optimum(drawn):
    # Each fold's fit at each C, warm-started along the path, is within its certified gap of the optimum; so is
    # the cold fit of the plain estimator on the same fold: their objectives agree within the larger of the two
    # certified gaps.  A fit at a neighbouring C (a walk that mixes up its points) is not within it.
    problem, Cs, method = drawn
    K = np.moveaxis(problem.Ks, 0, 2)  # scikit-learn's layout (n, n, M)
    cv = StratifiedKFold(2, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = MKLClassifierCV(kernels="precomputed", method=method, Cs=Cs, cv=cv, refit=False).fit(K, problem.y)
        for f, (train, _) in enumerate(cv.split(K, problem.y)):
            for c, C in enumerate(Cs):
                cold = MKLClassifier(kernels="precomputed", method=method, C=C).fit(K[np.ix_(train, train)],
                                                                                    problem.y[train])
                warm_F, warm_gap = ours.path_objective_[f, c], ours.path_dual_gap_[f, c]
                slack = max(warm_gap * abs(warm_F), cold.dual_gap_ * abs(cold.objective_)) + 1e-12
                assert abs(warm_F - cold.objective_) <= slack, (f, C, warm_F, cold.objective_)


# --------------------------------------------------------------------------------------------------
# scikit-learn conformance
# --------------------------------------------------------------------------------------------------
@parametrize_with_checks([MKLClassifierCV(method="lpmkl", Cs=2, cv=2, max_iter=20),
                          MKLClassifierCV(kernels="precomputed", method="average", Cs=2, cv=2)])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


# --------------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("params", "message"), [
    ({"Cs": 0}, "Cs must be"),
    ({"Cs": []}, "non-empty list"),
    ({"Cs": [1.0, -1.0]}, "each value of Cs"),
    ({"Cs": [1.0, float("nan")]}, "each value of Cs"),
    ({"Cs": "many"}, "Cs must be"),
    ({"Cs": [[1.0, 2.0]]}, "non-empty list"),
    ({"regularizer_grid": [0.1, 0.5]}, "regularizer_grid must be a dict"),
    ({"regularizer_grid": {"regularizer__nu": [0.5]}}, "not 'regularizer__nu'"),
    ({"regularizer_grid": {"C": [1.0]}}, "C is searched by Cs"),
    ({"regularizer_grid": {"nu": 0.5}}, "non-empty list of values"),
    ({"regularizer_grid": {"nu": []}}, "non-empty list of values"),
    ({"refit": "yes"}, "refit must be True or False"),
    ({"tol": -1.0}, "tol"),
    ({"multiclass": "all"}, "multiclass"),
])
def test_bad_parameters_are_named(params, message):
    X, y = _cancer(40)
    with pytest.raises(ValueError, match=message):
        MKLClassifierCV(method="sm1mkl", **params).fit(X, y)


def test_a_parameter_the_regularizer_lacks_is_named():
    X, y = _cancer(40)
    with pytest.raises(UnknownParameterError, match="'p' is not a parameter of regularizer 'box_simplex'"):
        MKLClassifierCV(method="sm1mkl", regularizer_grid={"p": [2.0]}).fit(X, y)


def test_a_training_fold_of_one_class_is_named():
    X, y = _cancer(40)
    order = np.argsort(y, kind="stable")  # unshuffled folds of sorted labels: a training fold of one class
    with pytest.raises(ValueError, match="training fold 0 of cv: y has 1 class"):
        MKLClassifierCV(Cs=2, cv=KFold(2)).fit(X[order], y[order])


def test_a_class_missing_from_a_fold_is_left_out_of_that_fold_as_in_grid_search():
    X, y = load_wine(return_X_y=True)
    rows = np.r_[np.flatnonzero(y == 0)[:20], np.flatnonzero(y == 1)[:20], np.flatnonzero(y == 2)[:3]]
    X, y = X[rows], y[rows]
    fold = np.arange(len(y)) % 3
    fold[y == 2] = 0  # class 2 (3 samples) is absent from the first training fold
    cv = [(np.flatnonzero(fold != k), np.flatnonzero(fold == k)) for k in range(3)]
    ours = MKLClassifierCV(method="lpmkl", Cs=[0.1, 10.0], cv=cv, standardize=True).fit(X, y)
    search = GridSearchCV(MKLClassifier(method="lpmkl", standardize=True), {"C": [0.1, 10.0]}, cv=cv).fit(X, y)
    np.testing.assert_array_equal(ours.scores_, _split_scores(search, 3))
    assert ours.best_params_ == search.best_params_


def test_an_unknown_scorer_is_named():
    X, y = _cancer(40)
    with pytest.raises(ValueError, match="not_a_scorer"):
        MKLClassifierCV(Cs=2, cv=2, scoring="not_a_scorer").fit(X, y)


def test_without_refit_it_chooses_and_says_why_it_cannot_predict():
    X, y = _cancer(60)
    clf = MKLClassifierCV(method="lpmkl", Cs=[0.1, 1.0], cv=2, refit=False).fit(X, y)
    assert clf.C_ in (0.1, 1.0) and clf.scores_.shape == (2, 2)
    assert not hasattr(clf, "weights_")
    with pytest.raises(ValueError, match="refit=False"):
        clf.predict(X)


def test_save_and_load_keep_the_search_and_the_final_model(tmp_path):
    X, y = _cancer(60)
    clf = MKLClassifierCV(method="sm1mkl", Cs=[0.1, 1.0], regularizer_grid={"nu": [0.5, 1.0]}, cv=2).fit(X, y)
    clf.save(tmp_path / "cv.npz")
    back = MKLClassifierCV.load(tmp_path / "cv.npz")
    assert back.get_params()["regularizer_grid"] == {"nu": [0.5, 1.0]}
    assert back.best_params_ == clf.best_params_ and back.C_ == clf.C_
    np.testing.assert_array_equal(back.scores_, clf.scores_)
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))


def test_folds_in_parallel_threads_give_the_same_search():
    X, y = _cancer(60)
    one = MKLClassifierCV(method="lpmkl", Cs=[0.1, 1.0, 10.0], cv=3, n_jobs=1).fit(X, y)
    two = MKLClassifierCV(method="lpmkl", Cs=[0.1, 1.0, 10.0], cv=3, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.scores_, two.scores_)
    np.testing.assert_array_equal(one.path_objective_, two.path_objective_)
    assert one.best_params_ == two.best_params_


def test_verbose_reports_every_fold_fit(capsys):
    X, y = _cancer(40)
    MKLClassifierCV(method="lpmkl", Cs=[0.1, 1.0], cv=2, verbose=1).fit(X, y)
    err = capsys.readouterr().err
    assert "MKLClassifierCV: lpmkl fold fits: 4" in err and "score" in err
