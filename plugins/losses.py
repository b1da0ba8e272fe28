"""Built-in sample losses: the inner problems over alpha."""

from __future__ import annotations

import numpy as np

from multikernel.hookspecs import hookimpl
from multikernel.interfaces import InnerSolution, SampleLoss
from multikernel.svm import solve_svc


class CSVCLoss(SampleLoss):
    """Hinge loss with bias: the C-SVC dual, ``0 <= alpha <= C``, ``y'alpha = 0``, ``L(alpha) = 1'alpha``.

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
        if not (np.isfinite(self.C) and self.C > 0):
            raise ValueError(f"C must be a positive finite number; got {self.C!r}")
        return solve_svc(K, y, C=float(self.C), alpha0=alpha0, tol=tol)

    def linear_term(self, alpha: np.ndarray, y: np.ndarray) -> float:
        return float(np.sum(alpha))


@hookimpl
def multikernel_losses() -> dict[str, type[SampleLoss]]:
    return {"csvc": CSVCLoss}
