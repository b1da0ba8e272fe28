"""MKLClassifier: scikit-learn conformance, references, multi-class, precomputed stacks, bad input."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from multikernel import MKLClassifier
from multikernel.plugins.kernels import LinearKernel, PolynomialKernel, RBFKernel


@parametrize_with_checks([MKLClassifier(max_iter=20), MKLClassifier(kernels="precomputed", max_iter=20)])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


def _stack(X, builders):
    return np.array([b.fit_transform(X) for b in builders])


def test_average_equals_svc_on_mean_kernel(cancer):
    """The average kernel method is one SVM on (1/M) sum K_m: compare with scikit-learn's SVC."""
    X, y = cancer
    builders = [RBFKernel(gamma=0.05), LinearKernel(), PolynomialKernel(degree=2, gamma=0.1)]
    est = MKLClassifier(kernels=builders, normalize="none", method="average", C=0.7,
                        inner_tol=1e-6).fit(X, y)
    K = _stack(X, [clone(b) for b in builders]).mean(axis=0)
    ref = SVC(C=0.7, kernel="precomputed", tol=1e-6).fit(K, y)
    np.testing.assert_allclose(est.weights_, 1 / 3)
    np.testing.assert_allclose(est.decision_function(X), ref.decision_function(K), atol=1e-4)
    assert np.array_equal(est.predict(X), ref.predict(K))


def test_l1mkl_learns_simplex_weights_with_certified_gap(cancer):
    X, y = cancer
    est = MKLClassifier(kernels="rbf_poly", method="l1mkl", C=1.0, tol=1e-3, max_iter=500).fit(X, y)
    assert est.weights_.min() >= 0 and est.weights_.sum() == pytest.approx(1.0)
    assert 0 <= est.dual_gap_ <= 1e-3
    assert est.objective_ >= est.results_[0].lower_bound
    # The L1 optimum is no worse than the average kernel's objective at the same C.
    avg = MKLClassifier(kernels="rbf_poly", method="average", C=1.0).fit(X, y)
    assert est.objective_ <= avg.objective_ * (1 + 1e-3)


def test_precomputed_stack_matches_features(cancer):
    X, y = cancer
    builders = [RBFKernel(gamma=0.05), LinearKernel()]
    from_features = MKLClassifier(kernels=builders, normalize="none", max_iter=100).fit(X, y)
    stack = _stack(X, [clone(b) for b in builders])
    pre = MKLClassifier(kernels="precomputed", normalize="none", max_iter=100).fit(stack, y)
    np.testing.assert_allclose(pre.weights_, from_features.weights_, atol=1e-8)
    assert np.array_equal(pre.predict(stack), from_features.predict(X))
    with pytest.raises(ValueError, match="test x train kernels of shape"):
        pre.predict(stack[:, :, :10])


def test_multiclass_one_vs_rest_parallel():
    X, y = load_iris(return_X_y=True)
    serial = MKLClassifier(standardize=True, max_iter=50, tol=1e-2).fit(X, y)
    parallel = MKLClassifier(standardize=True, max_iter=50, tol=1e-2, n_jobs=2).fit(X, y)
    assert serial.weights_.shape == (3, len(serial.kernel_names_))
    np.testing.assert_allclose(serial.weights_, parallel.weights_)
    assert serial.score(X, y) > 0.9
    assert serial.decision_function(X).shape == (150, 3)


def test_cross_validation_and_pipeline(cancer):
    X, y = cancer
    scores = cross_val_score(make_pipeline(StandardScaler(), MKLClassifier(method="average")), X, y, cv=3)
    assert scores.mean() > 0.9


def test_pickle_round_trip(cancer):
    X, y = cancer
    est = MKLClassifier(max_iter=30, tol=1e-2).fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_allclose(again.decision_function(X), est.decision_function(X), rtol=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    ({"C": -1.0}, "C must be a positive"),
    ({"tol": 0.0}, "tol must be a positive"),
    ({"max_iter": 0}, "max_iter must be a positive"),
    ({"stopping": "never"}, "stopping must be"),
    ({"method": "nope"}, "unknown method 'nope'"),
    ({"kernels": "nope"}, "kernels must be .*got 'nope', which is neither"),
    ({"regularizer": "nope"}, "unknown regularizer 'nope'"),
    ({"C": True}, "MKLClassifier: C must be a positive finite number or None; got True of type bool"),
    ({"C": "3"}, "C must be a positive .*got '3' of type str"),
    ({"max_iter": 2.5}, "max_iter must be a positive integer"),
    ({"verbose": -1}, "verbose must be a non-negative integer"),
    ({"kernels": []}, "kernels must be .*got an empty list"),
    ({"kernels": ["rbf"]}, "kernels must be .*element of type str"),
    ({"normalize": "l2"}, "normalize must be one of 'none', 'trace'"),
])
def test_bad_parameters(cancer, kwargs, match):
    X, y = cancer
    with pytest.raises(ValueError, match=match):
        MKLClassifier(**kwargs).fit(X, y)


def test_bad_input(cancer):
    X, y = cancer
    Xnan = X.copy()
    Xnan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MKLClassifier().fit(Xnan, y)
    with pytest.raises(ValueError, match="1 class"):
        MKLClassifier().fit(X, np.ones(len(y)))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        MKLClassifier().fit(X, y[:-1])
    with pytest.raises(TypeError, match="list of KernelBuilder"):
        MKLClassifier(kernels=[object()]).fit(X, y)
    est = MKLClassifier(max_iter=5).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :3])


def test_shared_weights_multiclass():
    """One mu for all classes: its objective is at least the sum of the per-class optima (each class
    choosing its own mu is a relaxation), and with uniform weights both modes coincide."""
    X, y = load_iris(return_X_y=True)
    kw = dict(standardize=True, max_iter=300, tol=1e-4)
    ovr = MKLClassifier(multiclass="ovr", **kw).fit(X, y)
    shared = MKLClassifier(multiclass="shared", **kw).fit(X, y)
    assert shared.weights_.shape == (len(shared.kernel_names_),)
    assert shared.weights_.sum() == pytest.approx(1.0)
    assert shared.objective_ >= ovr.objective_.sum() * (1 - 1e-3)
    assert shared.score(X, y) > 0.9
    exact = dict(kw, inner_tol=1e-8)
    avg_ovr = MKLClassifier(method="average", multiclass="ovr", **exact).fit(X, y)
    avg_shared = MKLClassifier(method="average", multiclass="shared", **exact).fit(X, y)
    np.testing.assert_allclose(avg_shared.decision_function(X), avg_ovr.decision_function(X), atol=1e-5)
    assert avg_shared.objective_ == pytest.approx(avg_ovr.objective_.sum(), rel=1e-7)


def test_storage_backends_give_the_same_model(cancer, tmp_path):
    X, y = cancer
    # The backends agree to rounding; solved tightly, so does the (unique here) optimum they lead to.
    kw = dict(kernels="rbf_poly", method="sm1mkl", max_iter=300, tol=1e-7, inner_tol=1e-8)
    dense = MKLClassifier(**kw).fit(X, y)
    for backend in ("memmap", "lazy"):
        other = MKLClassifier(kernel_backend=backend, **kw).fit(X, y)
        assert other.objective_ == pytest.approx(dense.objective_, rel=1e-6)
        np.testing.assert_allclose(other.weights_, dense.weights_, atol=1e-6)
        np.testing.assert_allclose(other.decision_function(X), dense.decision_function(X), atol=1e-6)


def test_memory_budget_is_checked_before_allocating(cancer):
    from multikernel.errors import MemoryBudgetError

    X, y = cancer
    with pytest.raises(MemoryBudgetError, match="lazy"):
        MKLClassifier(kernels="simplemkl", memory_budget="1MB").fit(X, y)
