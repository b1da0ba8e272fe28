"""MKL regression as plugins: the epsilon-insensitive (SVR) and squared (kernel ridge) losses.

Each loss is the inner problem of :mod:`multikernel.solve.regression` on real targets, so every regularizer and
outer solver of the library applies to regression with its certified gap: ``MKLRegressor(method="l1mkl")`` is
SimpleMKL's regression form solved by the level method, ``method="lpmkl"`` Kloft's lp-norm MKL regression.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import InnerSolution, KernelColumns, SampleLoss
from multikernel.solve.regression import ridge_problem, solve_ridge, solve_svr, svr_problem

__all__ = ["EpsilonInsensitiveLoss", "SquaredLoss"]


class EpsilonInsensitiveLoss(SampleLoss):
    """The epsilon-insensitive loss of support vector regression: ``C sum_i max(0, |y_i - f(x_i)| - epsilon)``.

    The inner problem is the epsilon-SVR dual over ``2n`` variables with a bias (libsvm's form, solved by the
    SMO, warm-started); its coefficient block is ``a - a*``.  Fixed weights give scikit-learn's
    ``SVR(kernel="precomputed", C=C, epsilon=epsilon)`` on the combined kernel.

    Parameters
    ----------
    C : float, default=1.0
        The positive cost of a deviation beyond the tube.
    epsilon : float, default=0.1
        The non-negative half-width of the tube, in the units of the targets.
    """

    name = "epsilon_insensitive"
    target_kind: ClassVar[str] = "continuous"

    def __init__(self, C: float = 1.0, epsilon: float = 0.1) -> None:
        self.C = C
        self.epsilon = epsilon

    def dual_size(self, n_samples: int) -> int:
        return 2 * n_samples

    def solve(self, K: np.ndarray | KernelColumns, y: np.ndarray, alpha0: np.ndarray | None = None,
              tol: float = 1e-3) -> InnerSolution:
        return solve_svr(K, y, self.C, self.epsilon, alpha0=alpha0, tol=tol)

    def linear_term(self, alpha: np.ndarray, y: np.ndarray) -> float:
        return svr_problem(y, self.C, self.epsilon).linear_term(alpha)

    def ray(self, alpha: np.ndarray, y: np.ndarray) -> tuple[float, float, float] | None:
        return svr_problem(y, self.C, self.epsilon).ray(alpha)


class SquaredLoss(SampleLoss):
    """The squared loss of kernel ridge regression: ``C/2 sum_i (y_i - f(x_i) - b)^2``.

    The inner problem has a closed form (one Cholesky factorization per solve, exact to rounding); without
    an intercept, fixed weights give scikit-learn's ``KernelRidge(alpha=1/C, kernel="precomputed")`` on the
    combined kernel, and with one the least-squares SVM.

    Parameters
    ----------
    C : float, default=1.0
        The positive weight of the squared residuals (the inverse of the ridge).
    fit_intercept : bool, default=True
        Whether ``f`` has an offset ``b`` (the dual then has ``1'alpha = 0``).
    """

    name = "squared"
    target_kind: ClassVar[str] = "continuous"

    def __init__(self, C: float = 1.0, fit_intercept: bool = True) -> None:
        self.C = C
        self.fit_intercept = fit_intercept

    def _intercept(self) -> bool:
        if not isinstance(self.fit_intercept, bool | np.bool_):
            raise ValueError(f"fit_intercept must be True or False; got {self.fit_intercept!r}")
        return bool(self.fit_intercept)

    def solve(self, K: np.ndarray | KernelColumns, y: np.ndarray, alpha0: np.ndarray | None = None,
              tol: float = 1e-3) -> InnerSolution:
        return solve_ridge(K, y, self.C, self._intercept())

    def linear_term(self, alpha: np.ndarray, y: np.ndarray) -> float:
        return ridge_problem(y, self.C, self._intercept()).linear_term(alpha)

    def ray(self, alpha: np.ndarray, y: np.ndarray) -> tuple[float, float, float] | None:
        return ridge_problem(y, self.C, self._intercept()).ray(alpha)


@hookimpl
def multikernel_losses() -> dict[str, type[SampleLoss]]:
    return {"epsilon_insensitive": EpsilonInsensitiveLoss, "squared": SquaredLoss}
