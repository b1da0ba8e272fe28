"""float32 stacks end to end: the same fit as float64 within rounding, and no float64 copy of the stack.

Tolerance (stated in docs/kernels.md): a float32 stack rounds every entry by at most 2^-24 relative; the
operations accumulate in float64, so the fitted objective differs from the float64 fit's by about that
relative rounding times a small factor, far below a certified gap of 1e-3 (checked here at 1e-5).
"""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest

from multikernel import MKLClassifier
from multikernel._ext import _stack
from multikernel.stack.kernelset import KernelSet
from multikernel.stack.storage import DenseStack


def _features(n=160, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = np.where(X[:, 0] ** 2 + X[:, 1] - 0.8 + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("method", ["average", "l1mkl", "lpmkl", "sm1mkl", "easymkl"])
def test_float32_fit_equals_float64_fit(method):
    X, y = _features()
    fits = {}
    for dtype in ("float32", "float64"):
        fits[dtype] = MKLClassifier(kernels="rbf_poly", method=method, C=10.0, tol=1e-6, kernel_dtype=dtype,
                                    max_iter=500).fit(X, y)
    f32, f64 = fits["float32"], fits["float64"]
    # both objectives are certified to 1e-6; rounding of the stack moves the optimum by far less than 1e-5
    assert f32.objective_ == pytest.approx(f64.objective_, rel=1e-5)
    assert f32.dual_gap_ <= 1e-6
    np.testing.assert_allclose(f32.decision_function(X), f64.decision_function(X), atol=1e-2)
    assert np.mean(f32.predict(X) == f64.predict(X)) >= 0.99


def test_no_float64_copy_of_a_float32_stack(monkeypatch):
    X, y = _features(n=200)
    ks = KernelSet(MKLClassifier()._builders(X.shape[1]), normalize="trace", dtype="float32")
    stack = ks.fit_stack(X)
    assert stack.dtype == np.float32
    seen = []
    for name in ("combine_dense", "quad_forms_dense", "check_square_stack"):
        original = getattr(_stack, name)

        def spy(K, *args, _original=original, **kwargs):
            seen.append(np.asarray(K).dtype)
            return _original(K, *args, **kwargs)

        monkeypatch.setattr(_stack, name, spy)
    K = stack.data
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = MKLClassifier(kernels="precomputed", method="l1mkl", C=10.0).fit(K, y)
            clf.decision_function(K)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seen and all(dt == np.float32 for dt in seen)
    # a float64 copy would allocate twice the stack's bytes (a float32 copy once); what a fit allocates is
    # O(n^2 + M n): here (M = 8) about 2.5 n^2 doubles on the one-pass path (the combined kernel of the
    # first solve, then the SMO's cache of its columns, and prediction's cross kernel)
    assert peak < 0.75 * K.nbytes, (peak, K.nbytes)


def test_rounding_that_makes_a_kernel_indefinite_keeps_the_certificate():
    """A rank-deficient kernel (most eigenvalues exactly 0) rounded to float32 has negative eigenvalues.

    The certified bounds of the float32 fit must still bracket the optimum of the float64 problem, up to the
    rounding of the kernels (a relative 1e-6 here).
    """
    rng = np.random.default_rng(4)
    n = 120
    Z = rng.normal(size=(n, 3))
    y = np.where(Z[:, 0] - Z[:, 1] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    d2 = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    K64 = np.stack([Z @ Z.T, np.outer(Z[:, 2], Z[:, 2]), np.exp(-0.5 * d2)])
    K64 = K64 * (n / np.trace(K64, axis1=1, axis2=2))[:, None, None]
    K32 = K64.astype(np.float32)
    assert np.linalg.eigvalsh(K32[0].astype(np.float64)).min() < 0  # the case under test
    ref = MKLClassifier(kernels="precomputed", method="l1mkl", C=1.0, tol=1e-8, max_iter=1000).fit(K64, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # rounding-level indefiniteness is not flagged
        DenseStack.checked(K32)
    fit = MKLClassifier(kernels="precomputed", method="l1mkl", C=1.0, tol=1e-6, max_iter=1000).fit(K32, y)
    res = fit.results_[0]
    optimum = ref.objective_
    assert res.lower_bound <= optimum * (1 + 1e-6)
    assert res.objective >= ref.results_[0].lower_bound * (1 - 1e-6)
