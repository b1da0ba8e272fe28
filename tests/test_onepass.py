"""Fewer reads of the stack: user kernels checked in one read, and no quadratic forms for fixed weights.

The fused check is compared with direct numpy computations of what it reports; the fixed-weight certificate
with the one the quadratic forms give (``L(alpha) - mean(q)/2`` for the average kernel).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.svm import SVC

from multikernel import MKLClassifier
from multikernel.stack import storage
from multikernel.stack.storage import DenseStack, check_kernel_matrices


def _stack_of(n=40, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    Ks = np.stack([X @ X.T, np.exp(-0.2 * d2), np.exp(-2.0 * d2), (1 + X @ X.T) ** 2])
    Ks = Ks * (n / np.trace(Ks, axis1=1, axis2=2))[:, None, None]
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return np.ascontiguousarray(Ks, dtype=dtype), y


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fused_check_reports_what_numpy_computes(dtype):
    K, _ = _stack_of(dtype=dtype)
    rng = np.random.default_rng(3)
    K = K.copy()
    K[2] += 1e-3 * rng.random(K[2].shape).astype(dtype)  # asymmetric
    K[1, 5, 9] = K[1, 9, 5] = 1.1 * np.sqrt(K[1, 5, 5] * K[1, 9, 9])  # violates Cauchy-Schwarz
    finite, minor, maxabs, asym, scale, combined = storage._fused_checks(K)
    assert combined is None  # no weights asked for
    K64 = K.astype(np.float64)
    assert finite.all()
    np.testing.assert_allclose(maxabs, np.abs(K64).max(axis=(1, 2)))
    np.testing.assert_allclose(asym, np.abs(K64 - K64.transpose(0, 2, 1)).max(axis=(1, 2)))
    np.testing.assert_allclose(scale, np.abs(np.diagonal(K64, axis1=1, axis2=2)).max(axis=1))
    assert asym[0] == asym[1] == asym[3] == 0.0
    assert minor[1, 0] >= 0
    i, j = minor[1]
    assert K64[1, i, j] ** 2 > K64[1, i, i] * K64[1, j, j]
    assert minor[0, 0] == minor[3, 0] == -1
    # any strides: the same stack with the kernels on the last axis
    moved = np.moveaxis(np.ascontiguousarray(np.moveaxis(K, 0, -1)), -1, 0)
    assert not moved.flags.c_contiguous
    np.testing.assert_array_equal(storage._fused_checks(moved)[3], asym)
    # a non-finite entry anywhere
    for bad in (np.nan, np.inf):
        T = K.copy()
        T[2, 39, 0] = bad
        assert storage._fused_checks(T)[0].tolist() == [True, True, False, True]


def test_checked_stack_knows_its_symmetry_without_another_read():
    K, _ = _stack_of()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stack = DenseStack.checked(K)
    assert stack.data is K  # no copy
    assert stack._data_symmetric is True  # found by the checks, not by a later array_equal pass
    A = K.copy()
    A[0, 1, 2] += 1e-12  # within the rounding tolerance: used as is, but not exactly symmetric
    assert DenseStack.checked(A)._data_symmetric is False
    B = K.copy()
    B[3, 1, 2] += 1.0
    with pytest.warns(UserWarning, match=r"kernels \[3\] are not symmetric"):
        sym = DenseStack.checked(B)
    assert sym._data_symmetric is True  # (K + K')/2 is exactly symmetric
    np.testing.assert_array_equal(sym.data[3], (B[3] + B[3].T) / 2)


def test_non_finite_entries_found_by_the_fused_pass():
    K, _ = _stack_of()
    K[2, 30, 4] = np.nan
    with pytest.raises(ValueError, match=r"kernel 2 has NaN or infinite entries \(the first at row 30, column 4"):
        check_kernel_matrices(K)


class _Count:
    def __init__(self, monkeypatch):
        self.combine = self.quad = 0
        combine, quad = storage.DenseStack.combine, storage.DenseStack.quad_forms

        def counted_combine(stack, *a, **k):
            self.combine += 1
            return combine(stack, *a, **k)

        def counted_quad(stack, *a, **k):
            self.quad += 1
            return quad(stack, *a, **k)

        monkeypatch.setattr(storage.DenseStack, "combine", counted_combine)
        monkeypatch.setattr(storage.DenseStack, "quad_forms", counted_quad)


@pytest.mark.parametrize("tol", [1e-3, 1e-7])
def test_average_reads_the_stack_once_and_certifies_with_the_inner_gap(monkeypatch, tol):
    K, y = _stack_of()
    count = _Count(monkeypatch)
    clf = MKLClassifier(kernels="precomputed", method="average", C=10.0, tol=tol).fit(K, y)
    assert count.quad == 0  # the certificate of fixed weights needs no quadratic form
    assert count.combine == 1
    assert clf.dual_gap_ <= tol
    # the certificate equals the one from the quadratic forms: L(alpha) - mean(q)/2
    stack = DenseStack(K)
    coef = clf.dual_coef_[0]
    q = stack.quad_forms(coef)
    lower = float(np.abs(coef).sum()) - 0.5 * float(q.mean())
    res = clf.results_[0]
    assert res.lower_bound == pytest.approx(lower, rel=1e-10)
    # and the classifier is the SVM on the average kernel (scikit-learn's, to its tolerance)
    svc = SVC(kernel="precomputed", C=10.0, tol=1e-8).fit(K.mean(axis=0), y)
    np.testing.assert_allclose(clf.decision_function(K), svc.decision_function(K.mean(axis=0)),
                               atol=5e-2 if tol > 1e-5 else 1e-4)


def test_average_under_other_solvers_takes_no_step(monkeypatch):
    K, y = _stack_of()
    ref = MKLClassifier(kernels="precomputed", method="average", C=1.0, tol=1e-6).fit(K, y)
    for solver in ("level", "projected_gradient"):
        count = _Count(monkeypatch)
        clf = MKLClassifier(kernels="precomputed", method="average", solver=solver, C=1.0, tol=1e-6).fit(K, y)
        assert count.quad == 0, solver
        np.testing.assert_allclose(clf.weights_, np.full(len(K), 0.25))
        assert clf.objective_ == pytest.approx(ref.objective_, rel=1e-6)


def test_an_unchecked_stack_defers_its_symmetry_check_to_a_second_operation():
    K, y = _stack_of()
    stack = DenseStack(K)
    combined = stack.combine(np.full(len(K), 0.25))
    assert stack._data_symmetric is None  # one operation: no extra read of the stack for the check
    np.testing.assert_allclose(combined, K.mean(axis=0))
    stack.quad_forms(np.ones(len(y)))
    assert stack._data_symmetric is True  # from the second on, upper triangles are streamed
    np.testing.assert_allclose(stack.combine(np.full(len(K), 0.25)), K.mean(axis=0))
