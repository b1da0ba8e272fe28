"""A stack the library builds itself says that it is symmetric, and is: the solvers' first operation then
skips the check that reads the whole stack.  Would have caught a builder or a normalization whose rounding
breaks the exact symmetry."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from multikernel.core.interfaces import KernelBuilder
from multikernel.core.registry import get_registry
from multikernel.stack.kernelset import KernelSet
from multikernel.stack.normalization import NORMALIZATIONS

#: Built-in builders that need more than features (a distance matrix, a kernel, factor kernels).
NOT_FROM_FEATURES = {"distance", "precomputed", "product"}
FEATURE_KERNELS = sorted(set(get_registry().names("kernel")) - NOT_FROM_FEATURES)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("normalize", NORMALIZATIONS)
@pytest.mark.parametrize("name", FEATURE_KERNELS)
def test_every_built_in_kernel_stack_is_exactly_symmetric_and_says_so(name, normalize, dtype):
    X = np.abs(np.random.default_rng(len(name)).normal(size=(37, 5)))  # non-negative: histogram kernels too
    create = get_registry().create
    stack = KernelSet([create("kernel", name), create("kernel", name, columns=[0, 2])], normalize=normalize,
                      dtype=dtype).fit_stack(X)
    assert stack._data_symmetric is True  # declared, not checked
    for K in stack.data:
        np.testing.assert_array_equal(K, K.T)


class _Transposing(KernelBuilder, BaseEstimator):
    """A user's builder whose kernel is not symmetric (what the library cannot vouch for)."""

    def fit(self, X, y=None):  # noqa: ANN001, ANN201
        self.X_train_ = np.asarray(X)
        return self

    def transform(self, X):  # noqa: ANN001, ANN201
        return np.asarray(X) @ self.X_train_.T + np.arange(len(self.X_train_))[None, :] * 1e-3


def test_a_stack_with_a_users_builder_is_checked_on_use_and_found_asymmetric():
    X = np.random.default_rng(1).normal(size=(20, 3))
    stack = KernelSet([get_registry().create("kernel", "rbf"), _Transposing()]).fit_stack(X)
    assert stack._data_symmetric is None
    assert stack.symmetric is False


@pytest.mark.parametrize("normalize", ["unit_diagonal", "center"])
def test_symmetric_normalizations_equal_the_textbook_formulas(normalize):
    X = np.random.default_rng(2).normal(size=(300, 4))
    K = get_registry().create("kernel", "poly", degree=2).fit_transform(X)
    stack = KernelSet([get_registry().create("kernel", "poly", degree=2)], normalize=normalize).fit_stack(X)
    if normalize == "unit_diagonal":
        d = np.sqrt(np.diag(K))
        expected = K / d[:, None] / d[None, :]
    else:
        expected = K - K.mean(axis=0)[None, :] - K.mean(axis=1)[:, None] + K.mean()
    np.testing.assert_allclose(stack.data[0], expected, rtol=1e-13, atol=1e-13 * np.abs(K).max())


def test_a_square_cross_stack_does_not_claim_the_training_stacks_symmetry():
    """A test x train stack with as many test as training samples is square but not symmetric: it must be
    combined from every entry, not mirrored from its upper triangle (a first version declared it symmetric;
    predictions then depended on the order of the test samples)."""
    rng = np.random.default_rng(3)
    X, Z = rng.normal(size=(30, 4)), rng.normal(size=(30, 4))
    kset = KernelSet([get_registry().create("kernel", "rbf"), get_registry().create("kernel", "poly")])
    assert kset.fit_stack(X)._data_symmetric is True
    cross = kset.cross_stack(Z)
    assert cross.shape == (2, 30, 30) and cross.symmetric is False
    w = np.array([0.3, 0.7])
    np.testing.assert_allclose(cross.combine(w), 0.3 * cross.data[0] + 0.7 * cross.data[1], rtol=1e-14)
