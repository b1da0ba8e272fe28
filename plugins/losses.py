"""Built-in sample losses: the inner problems over alpha, each solved by the SMO core.

Every loss writes its inner problem as ``max_alpha L(alpha) - 1/2 coef' K coef`` over its own domain,
with ``coef = alpha * y``.  ``solve`` returns an :class:`InnerSolution` whose ``primal_objective`` is
the primal objective at the returned classifier (an upper bound of the inner optimum) and whose
``dual_objective`` is ``L(alpha) - 1/2 coef'K coef`` (a lower bound); see :mod:`multikernel.solve.svm` for
how each is computed.
"""

from __future__ import annotations

import numpy as np

from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import InnerSolution, SampleLoss
from multikernel.core.validation import check_positive_real
from multikernel.solve.svm import solve_nu, solve_square_hinge, solve_svc, solve_svc_nobias


class CSVCLoss(SampleLoss):
    """Hinge loss with bias: the C-SVC dual, ``0 <= alpha <= C``, ``y'alpha = 0``, ``L(alpha) = 1'alpha``.

    The primal bound is ``1/2 coef'K coef + C sum_i max(0, 1 - y_i f(x_i))`` with the solver's bias.

    Parameters
    ----------
    C : float, default=1.0
        Misclassification cost; must be positive.
    """

    name = "csvc"

    def __init__(self, C: float = 1.0) -> None:
        self.C = C

    def solve(self, K: np.ndarray, y: np.ndarray, alpha0: np.ndarray | None = None,
              tol: float = 1e-3) -> InnerSolution:
        return solve_svc(K, y, C=check_positive_real("C", self.C), alpha0=alpha0, tol=tol)

    def linear_term(self, alpha: np.ndarray, y: np.ndarray) -> float:
        return float(np.sum(alpha))


class CSVCNoBiasLoss(SampleLoss):
    """Hinge loss without bias: ``0 <= alpha <= C`` and no equality, ``L(alpha) = 1'alpha``.

    The form derived in the Bucak thesis and used by the ranking methods; the decision function has no
    offset.  The primal bound is ``1/2 coef'K coef + C sum_i max(0, 1 - y_i (K coef)_i)``.

    Parameters
    ----------
    C : float, default=1.0
        Misclassification cost; must be positive.
    """

    name = "csvc_nobias"

    def __init__(self, C: float = 1.0) -> None:
        self.C = C

    def solve(self, K: np.ndarray, y: np.ndarray, alpha0: np.ndarray | None = None,
              tol: float = 1e-3) -> InnerSolution:
        return solve_svc_nobias(K, y, C=check_positive_real("C", self.C), alpha0=alpha0, tol=tol)

    def linear_term(self, alpha: np.ndarray, y: np.ndarray) -> float:
        return float(np.sum(alpha))


class NuLoss(SampleLoss):
    """The nu-form of the soft margin MKL derivations: ``1'alpha = 1``, ``y'alpha = 0``, ``0 <= alpha <= C``.

    ``L(alpha) = 0``: the inner problem is ``max -1/2 coef'K coef``.  The primal bound is
    ``1/2 coef'K coef - rho + C sum_i max(0, rho - y_i f(x_i))`` with the solver's bias and margin
    ``rho``.  Feasible when ``C * n_+ >= 1/2`` and ``C * n_- >= 1/2``; ``C >= 1`` never binds.

    Parameters
    ----------
    C : float, default=1.0
        Upper bound of each ``alpha_i``.
    """

    name = "nu"

    def __init__(self, C: float = 1.0) -> None:
        self.C = C

    def solve(self, K: np.ndarray, y: np.ndarray, alpha0: np.ndarray | None = None,
              tol: float = 1e-3) -> InnerSolution:
        return solve_nu(K, y, C=check_positive_real("C", self.C), alpha0=alpha0, tol=tol)

    def linear_term(self, alpha: np.ndarray, y: np.ndarray) -> float:
        return 0.0


class SquareHingeLoss(SampleLoss):
    """Square hinge loss with bias (L2-SVM): ``alpha >= 0``, ``y'alpha = 0``.

    Convention: the ridge belongs to the kernel-independent part, ``L(alpha) = 1'alpha -
    alpha'alpha/(2C)``, so the inner problem is ``max L(alpha) - 1/2 coef'K coef`` and the outer
    loop's ``q_m`` are the plain ``coef'K_m coef``.  The primal bound is
    ``1/2 coef'K coef + C/2 sum_i max(0, 1 - y_i f(x_i))^2``.

    Parameters
    ----------
    C : float, default=1.0
        Misclassification cost; must be positive.
    """

    name = "square_hinge"

    def __init__(self, C: float = 1.0) -> None:
        self.C = C

    def solve(self, K: np.ndarray, y: np.ndarray, alpha0: np.ndarray | None = None,
              tol: float = 1e-3) -> InnerSolution:
        return solve_square_hinge(K, y, C=check_positive_real("C", self.C), alpha0=alpha0, tol=tol)

    def linear_term(self, alpha: np.ndarray, y: np.ndarray) -> float:
        return float(np.sum(alpha) - alpha @ alpha / (2.0 * float(self.C)))


@hookimpl
def multikernel_losses() -> dict[str, type[SampleLoss]]:
    return {
        "csvc": CSVCLoss,
        "csvc_nobias": CSVCNoBiasLoss,
        "nu": NuLoss,
        "square_hinge": SquareHingeLoss,
    }
