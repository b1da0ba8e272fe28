"""Built-in sample losses: the SVM forms of the inner problem, each solved by the SMO core.

Every loss writes its inner problem as ``max_alpha L(alpha) - 1/2 coef' K coef`` over its own domain,
with ``coef = alpha * y``: a row of :data:`multikernel.solve.svm.SVM_FORMS`, solved by
:func:`multikernel.solve.svm.solve_inner`.  ``solve`` returns an :class:`InnerSolution` whose
``primal_objective`` is the primal objective at the returned classifier (an upper bound of the inner
optimum) and whose ``dual_objective`` is ``L(alpha) - 1/2 coef'K coef`` (a lower bound).  ``K`` is the
combined kernel as the outer solvers pass it: a dense matrix, or a column provider
(:class:`multikernel.solve.smo.KernelColumns`) for a lazy stack.
"""

from __future__ import annotations

import numpy as np

from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import InnerSolution, SampleLoss
from multikernel.solve.smo import KernelColumns
from multikernel.solve.svm import InnerQP, solve_inner, svm_problem


class _SVMLoss(SampleLoss):
    """A loss whose inner problem is the SVM form ``form`` (a key of :data:`multikernel.solve.svm.SVM_FORMS`).

    ``L(alpha)`` is the form's own linear term (:meth:`InnerQP.linear_term`), so that the outer
    loop's bound and the inner solve always agree.

    Parameters
    ----------
    C : float or ndarray of shape (n_samples,), default=1.0
        The cost of the form (a positive number, or one per sample).
    """

    form: str

    def __init__(self, C: float = 1.0) -> None:
        self.C = C

    def problem(self, y: np.ndarray) -> InnerQP:
        """The inner problem for labels ``y`` at this loss's ``C``."""
        return svm_problem(self.form, y, self.C)

    def solve(self, K: np.ndarray | KernelColumns, y: np.ndarray, alpha0: np.ndarray | None = None,
              tol: float = 1e-3) -> InnerSolution:
        return solve_inner(K, self.problem(y), alpha0=alpha0, tol=tol)

    def linear_term(self, alpha: np.ndarray, y: np.ndarray) -> float:
        return self.problem(y).linear_term(alpha)

    def ray(self, alpha: np.ndarray, y: np.ndarray) -> tuple[float, float, float] | None:
        return self.problem(y).ray(alpha)

    def feasible_scale(self, alpha: np.ndarray, y: np.ndarray) -> float | None:
        return self.problem(y).feasible_scale(alpha)


class CSVCLoss(_SVMLoss):
    """Hinge loss with bias: the C-SVC dual, ``0 <= alpha <= C``, ``y'alpha = 0``, ``L(alpha) = 1'alpha``.

    The primal bound is ``1/2 coef'K coef + C sum_i max(0, 1 - y_i f(x_i))`` with the solver's bias.
    ``C`` (positive, default 1) is the misclassification cost.
    """

    name = "csvc"
    form = "csvc"


class CSVCNoBiasLoss(_SVMLoss):
    """Hinge loss without bias: ``0 <= alpha <= C`` and no equality, ``L(alpha) = 1'alpha``.

    The form derived in the Bucak thesis and used by the ranking methods; the decision function has no
    offset.  The primal bound is ``1/2 coef'K coef + C sum_i max(0, 1 - y_i (K coef)_i)``.  ``C``
    (positive, default 1) is the misclassification cost.
    """

    name = "csvc_nobias"
    form = "csvc_nobias"


class NuLoss(_SVMLoss):
    """The nu-form of the soft margin MKL derivations: ``1'alpha = 1``, ``y'alpha = 0``, ``0 <= alpha <= C``.

    ``L(alpha) = 0``: the inner problem is ``max -1/2 coef'K coef``.  The primal bound is
    ``1/2 coef'K coef - rho + C sum_i max(0, rho - y_i f(x_i))`` with the solver's bias and margin
    ``rho``.  ``C`` (positive, default 1) is the upper bound of each ``alpha_i``: feasible when
    ``C * n_+ >= 1/2`` and ``C * n_- >= 1/2``; ``C >= 1`` never binds.
    """

    name = "nu"
    form = "nu"


class SquareHingeLoss(_SVMLoss):
    """Square hinge loss with bias (L2-SVM): ``alpha >= 0``, ``y'alpha = 0``.

    Convention: the ridge belongs to the kernel-independent part, ``L(alpha) = 1'alpha -
    alpha'alpha/(2C)``, so the inner problem is ``max L(alpha) - 1/2 coef'K coef`` and the outer
    loop's ``q_m`` are the plain ``coef'K_m coef``.  The primal bound is
    ``1/2 coef'K coef + C/2 sum_i max(0, 1 - y_i f(x_i))^2``.  ``C`` (positive, default 1) is the
    misclassification cost.
    """

    name = "square_hinge"
    form = "square_hinge"


@hookimpl
def multikernel_losses() -> dict[str, type[SampleLoss]]:
    return {
        "csvc": CSVCLoss,
        "csvc_nobias": CSVCNoBiasLoss,
        "nu": NuLoss,
        "square_hinge": SquareHingeLoss,
    }
