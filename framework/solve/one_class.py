"""The inner problem of one-class MKL: the nu one-class SVM dual (Schoelkopf et al., 2001), by the SMO.

For a fixed kernel ``K`` on ``n`` training samples,

    max_alpha  -1/2 alpha' K alpha,   subject to   0 <= alpha_i <= 1/(nu n),   1'alpha = 1,

whose primal is ``1/2 ||w||^2 - rho + 1/(nu n) sum_i max(0, rho - f(x_i))`` with ``f(x) = sum_i alpha_i k(x, x_i)``;
``rho`` is the multiplier of ``1'alpha = 1``, and the decision function ``f(x) - rho`` is non-negative on the
inliers.  ``nu`` in (0, 1] bounds the fraction of training outliers from above and the fraction of support
vectors from below.  This is the scaling of Schoelkopf's paper; libsvm (and scikit-learn's ``OneClassSVM``)
solve the same problem multiplied by ``nu n`` (``0 <= alpha_i <= 1``, ``1'alpha = nu n``): the same support,
``alpha``, ``rho`` and decision values times ``nu n``.  In the MKL problem the scale matters only beside a
penalty of the weights (the elastic net), and this one keeps the inner optimum of order 1 for every ``n``.
"""

from __future__ import annotations

import numpy as np

from multikernel.core.interfaces import InnerSolution, KernelColumns
from multikernel.core.validation import check_real
from multikernel.solve.svm import InnerQP, solve_inner

__all__ = ["check_nu", "one_class_problem", "solve_one_class"]


def check_nu(nu: float) -> float:
    """``nu`` as a float in (0, 1], or a ``ValueError``."""
    nu = check_real("nu", nu, low=0.0)
    if nu > 1.0:
        raise ValueError(f"nu must be in (0, 1] (an upper bound on the fraction of training outliers); got {nu!r}")
    return nu


def one_class_problem(n: int, nu: float) -> InnerQP:
    """The nu one-class SVM dual for ``n`` samples: no labels, ``upper = 1/(nu n)``, ``1'alpha = 1``."""
    nu = check_nu(nu)
    if n < 1:
        raise ValueError("the one-class SVM needs at least one training sample")
    return InnerQP(p=0.0, upper=1.0 / (nu * n), signed=False, total=1.0)


def solve_one_class(K: np.ndarray | KernelColumns, nu: float, alpha0: np.ndarray | None = None,
                    tol: float = 1e-3) -> InnerSolution:
    """The nu one-class SVM on the kernel ``K``: ``coef = alpha``, ``bias = -rho``.

    ``alpha0`` warm-starts the SMO (projected onto the feasible set); ``tol`` bounds its KKT violation.
    """
    n = int(K.n) if isinstance(K, KernelColumns) else int(np.shape(K)[0])
    return solve_inner(K, one_class_problem(n, nu), alpha0=alpha0, tol=tol)
