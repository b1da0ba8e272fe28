"""One-class MKL (novelty and outlier detection) as a plugin: the nu one-class SVM loss.

The loss is the inner problem of :mod:`multikernel.solve.one_class`, so every regularizer and outer solver of
the library learns the kernel weights of a one-class SVM with its certified gap (SHOGUN's ``MKLOneClass`` is
the simplex case).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import InnerSolution, KernelColumns, SampleLoss
from multikernel.solve.one_class import one_class_problem, solve_one_class

__all__ = ["OneClassLoss"]


class OneClassLoss(SampleLoss):
    """The nu one-class SVM: ``1/2 ||w||^2 - rho + 1/(nu n) sum_i max(0, rho - f(x_i))``.

    Its dual ``max -1/2 alpha'K alpha`` over ``0 <= alpha <= 1/(nu n)``, ``1'alpha = 1`` is solved by the SMO
    (warm-started); the coefficient block is ``alpha`` and the offset ``-rho``.  The targets are ignored
    but for their number (one block of ones).  Fixed weights give scikit-learn's
    ``OneClassSVM(kernel="precomputed", nu=nu)`` on the combined kernel, whose decision values are these
    times ``nu n``.

    Parameters
    ----------
    nu : float, default=0.5
        In (0, 1]: an upper bound on the fraction of training outliers and a lower bound on the fraction of
        support vectors.
    """

    name = "one_class"
    target_kind: ClassVar[str] = "one_class"

    def __init__(self, nu: float = 0.5) -> None:
        self.nu = nu

    def solve(self, K: np.ndarray | KernelColumns, y: np.ndarray, alpha0: np.ndarray | None = None,
              tol: float = 1e-3) -> InnerSolution:
        return solve_one_class(K, self.nu, alpha0=alpha0, tol=tol)

    def linear_term(self, alpha: np.ndarray, y: np.ndarray) -> float:
        return one_class_problem(len(y), self.nu).linear_term(alpha)


@hookimpl
def multikernel_losses() -> dict[str, type[SampleLoss]]:
    return {"one_class": OneClassLoss}
