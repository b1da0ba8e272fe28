"""The bilinear estimators as library estimators: save/load, progress and Ctrl-C, bad input, tags."""

import warnings

import numpy as np
import pytest
from _model_files import assert_damaged_files_refused, round_trip
from sklearn.exceptions import ConvergenceWarning

from multikernel import BilinearClassifier, BilinearSVMClassifier, CrossModalEmbedding, HMKLClassifier
from multikernel.bilinear import solver as solver_module
from multikernel.errors import FitInterruptedWarning


def _matrices(n=24, classes=2, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    X = rng.normal(size=(n, 4, 3)) + 1.5 * np.einsum("i,jk->ijk", y, np.outer(np.ones(4), [1.0, 0, 0]))
    return X, y


def _features(n=24, classes=2, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    return rng.normal(size=(n, 3)) + y[:, None], y


def _modalities(seed=0):
    rng = np.random.default_rng(seed)
    ya, yb = np.arange(21) % 3, np.arange(15) % 3
    return rng.normal(size=(21, 4)) + ya[:, None], ya, rng.normal(size=(15, 2)) + yb[:, None], yb


@pytest.mark.parametrize("make, classes", [
    (lambda: BilinearClassifier(), 2),
    (lambda: BilinearClassifier(), 3),
    (lambda: BilinearSVMClassifier(rank=1), 3),
    (lambda: BilinearSVMClassifier(), 2),
], ids=["bilinear", "bilinear-ovr", "bilinear-svm", "linear-svm"])
def test_matrix_classifiers_round_trip(tmp_path, make, classes):
    X, y = _matrices(classes=classes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = make().fit(X, np.array(["a", "b", "c"])[y])  # string labels come back as they were
    loaded = round_trip(est, tmp_path / "m.npz", {"decision_function": (X,), "predict": (X,)})
    np.testing.assert_array_equal(loaded.coef_, est.coef_)
    assert_damaged_files_refused(tmp_path / "m.npz", type(est), tmp_path)


@pytest.mark.parametrize("kernels", ["rbf_poly", "precomputed"])
def test_hmkl_round_trip(tmp_path, kernels):
    X, y = _features(classes=3)
    if kernels == "precomputed":
        X = np.stack([X @ X.T, np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))], axis=-1)
    est = HMKLClassifier(kernels=kernels, max_iter=20, tol=1e-2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    round_trip(est, tmp_path / "h.npz", {"decision_function": (X,), "predict": (X,)})
    assert_damaged_files_refused(tmp_path / "h.npz", HMKLClassifier, tmp_path)


@pytest.mark.parametrize("center", [True, False])
def test_crossmodal_round_trip(tmp_path, center):
    Xa, ya, Xb, yb = _modalities()
    est = CrossModalEmbedding(kernel_b="rbf", center=center, tol=1e-2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(Xa, ya, Xb, yb)
    loaded = round_trip(est, tmp_path / "c.npz", {"transform": (Xa,), "predict": (Xa,)})
    np.testing.assert_allclose(loaded.transform(Xb, "b"), est.transform(Xb, "b"), rtol=1e-12, atol=1e-14)
    assert_damaged_files_refused(tmp_path / "c.npz", CrossModalEmbedding, tmp_path)


# ---------------------------------------------------------------------------------------------------------
# Ctrl-C and progress: KeyboardInterrupt from the projected gradient's sub-problem solve
# ---------------------------------------------------------------------------------------------------------
def _interrupt_sub_problems(monkeypatch, problem_class, after):
    original = problem_class.svm
    count = {"n": 0}

    def svm(self, *args, **kwargs):
        count["n"] += 1
        if count["n"] == after + 1:  # one Ctrl-C: what the fit keeps may solve sub-problems again
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    monkeypatch.setattr(problem_class, "svm", svm)


@pytest.mark.parametrize("classes", [2, 3])
def test_ctrl_c_keeps_the_last_accepted_iterate(monkeypatch, classes):
    X, y = _matrices(classes=classes)
    _interrupt_sub_problems(monkeypatch, solver_module._Problem, 6)
    with pytest.warns(FitInterruptedWarning, match="BilinearClassifier.fit was interrupted"):
        est = BilinearClassifier(tol=1e-12).fit(X, y)
    assert est.interrupted_ and len(est.row_factors_) == (1 if classes == 2 else 3)
    assert np.isfinite(est.decision_function(X)).all() and set(est.predict(X)) <= set(y)
    assert np.all(est.dual_gap_ <= 1.0) and est.n_iter_[0] >= 1


def test_ctrl_c_in_hmkl_and_crossmodal(monkeypatch):
    from multikernel.bilinear import crossmodal

    X, y = _features(classes=3)
    _interrupt_sub_problems(monkeypatch, solver_module._Problem, 5)
    with pytest.warns(FitInterruptedWarning):
        est = HMKLClassifier(tol=1e-12).fit(X, y)
    assert est.interrupted_ and est.dual_coef_.shape[0] == 3 and np.isfinite(est.decision_function(X)).all()
    Xa, ya, Xb, yb = _modalities()
    _interrupt_sub_problems(monkeypatch, crossmodal._CrossModalProblem, 4)
    with pytest.warns(FitInterruptedWarning):
        emb = CrossModalEmbedding(tol=1e-12).fit(Xa, ya, Xb, yb)
    assert emb.interrupted_ and np.isfinite(emb.transform(Xb, "b")).all()


def test_ctrl_c_in_the_alternating_bilinear_svm(monkeypatch):
    from multikernel.bilinear import estimators

    X, y = _matrices()
    original, count = estimators._svm, {"n": 0}

    def svm(*args):
        count["n"] += 1
        if count["n"] == 6:
            raise KeyboardInterrupt
        return original(*args)

    monkeypatch.setattr(estimators, "_svm", svm)
    with pytest.warns(FitInterruptedWarning):
        est = BilinearSVMClassifier(rank=2, tol=1e-15, max_iter=100).fit(X, y)
    assert est.interrupted_ and est.n_iter_[0] == 2  # 1 + 2 * 2 sub-problems completed two alternations


def test_verbose_shows_the_steps(capsys):
    X, y = _matrices()
    BilinearClassifier(verbose=1).fit(X, y)
    assert "BilinearClassifier iterations: 1/500" in capsys.readouterr().err
    BilinearClassifier().fit(X, y)
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------------------------------------------------
# bad input: a library error naming the problem, or a finite result
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [1e-300, 1e6, 1e30, 1e99])
def test_scaled_matrix_samples_end_with_a_finite_model(scale):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(12, 3, 2)) * scale, np.arange(12) % 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = BilinearClassifier().fit(X, y)
    assert np.isfinite(est.decision_function(X)).all() and np.isfinite(est.dual_gap_).all()


def test_entries_beyond_what_the_solvers_resolve_are_refused():
    X, y = _matrices()
    with pytest.raises(ValueError, match="entries up to .* rescale X"):
        BilinearClassifier().fit(X * 1e120, y)


@pytest.mark.parametrize("scale", [1e300, 1e150])
def test_hmkl_on_huge_features_is_a_library_error(scale):
    X, y = _features()
    with pytest.raises(ValueError, match="kernel has NaN or infinite entries"):
        HMKLClassifier().fit(X * scale, y)


@pytest.mark.parametrize("make, X", [
    (lambda: BilinearClassifier(), _matrices()[0]),
    (lambda: BilinearSVMClassifier(), _matrices()[0]),
    (lambda: HMKLClassifier(max_iter=2), _features()[0]),
])
def test_mixed_labels_are_a_clear_error(make, X):
    mixed = np.array([1, "a"] * 12, dtype=object)
    with pytest.raises(ValueError, match="mixes labels of different types"):
        make().fit(X, mixed)


def test_tags_of_matrix_samples():
    for est in (BilinearClassifier(), BilinearSVMClassifier()):
        tags = est.__sklearn_tags__()
        assert not tags.input_tags.two_d_array and tags.input_tags.three_d_array
