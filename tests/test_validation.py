"""The shared parameter checks: every real number type is a number, bool and strings are not."""

from fractions import Fraction

import numpy as np
import pytest

from multikernel.core.validation import (
    check_nonnegative_real,
    check_positive_integer,
    check_positive_real,
    check_real,
)
from multikernel.plugins.losses import CSVCLoss, CSVCNoBiasLoss, NuLoss, SquareHingeLoss

REALS = [1, 2.5, np.float32(1.0), np.float64(0.25), np.int64(10), np.int32(3), np.uint8(7), np.float16(2.0),
         Fraction(1, 3)]


@pytest.mark.parametrize("value", REALS, ids=repr)
def test_every_real_type_is_accepted(value):
    out = check_positive_real("C", value)
    assert type(out) is float and out == pytest.approx(float(value))


@pytest.mark.parametrize("value", [0, -1, -0.5, np.float32(-1.0), np.int64(0), np.nan, np.inf, -np.inf,
                                   np.float32(np.nan)], ids=repr)
def test_non_positive_or_non_finite_is_refused(value):
    with pytest.raises(ValueError, match=r"C must be a positive finite number; got"):
        check_positive_real("C", value)


@pytest.mark.parametrize("value", [True, False, np.True_, "1.0", None, [1.0], np.array([1.0]), 1 + 0j],
                         ids=repr)
def test_non_numbers_are_refused_with_their_type(value):
    with pytest.raises(ValueError, match=r"C must be a positive finite number; got .* of type"):
        check_positive_real("C", value)


def test_nonnegative_and_bounds():
    assert check_nonnegative_real("coef0", np.int64(0)) == 0.0
    with pytest.raises(ValueError, match="coef0 must be a non-negative finite number"):
        check_nonnegative_real("coef0", -1e-9)
    assert check_real("x", -3) == -3.0
    assert check_real("x", np.inf, low=0, allow_inf=True) == np.inf
    with pytest.raises(ValueError, match=r"x must be a finite number >= 2"):
        check_real("x", 1.5, low=2, strict=False)


@pytest.mark.parametrize("value", [1, 3, np.int64(4), 2.0, np.float32(5.0)], ids=repr)
def test_positive_integers(value):
    out = check_positive_integer("degree", value)
    assert type(out) is int and out == int(value)


@pytest.mark.parametrize("value", [0, -2, 1.5, True, "2", np.nan, np.inf, None], ids=repr)
def test_non_integers_are_refused(value):
    with pytest.raises(ValueError, match="degree must be a positive integer"):
        check_positive_integer("degree", value)


@pytest.mark.parametrize("loss_cls", [CSVCLoss, CSVCNoBiasLoss, NuLoss, SquareHingeLoss])
@pytest.mark.parametrize("C", [np.float32(1.0), np.int64(10)], ids=repr)
def test_losses_accept_numpy_scalar_C(loss_cls, C):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    K = X @ X.T
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    sol = loss_cls(C=C).solve(K, y)
    reference = loss_cls(C=float(C)).solve(K, y)
    np.testing.assert_array_equal(sol.alpha, reference.alpha)
    assert sol.alpha.max() <= float(C) + 1e-12 or loss_cls is SquareHingeLoss


@pytest.mark.parametrize("C", [True, "1", np.nan, -1.0, 0])
def test_losses_refuse_bad_C(C):
    K, y = np.eye(4), np.array([1.0, -1.0, 1.0, -1.0])
    with pytest.raises(ValueError, match="C must be a positive finite number"):
        CSVCLoss(C=C).solve(K, y)
