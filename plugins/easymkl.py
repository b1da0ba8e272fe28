"""EasyMKL (Aiolli and Donini, 2015): kernel weights from one quadratic program, then one SVM.

EasyMKL learns the weights that maximise the margin between the classes' convex hulls in the combined
feature space, regularized towards their centroids.  With ``Y = diag(y)``, ``Gamma`` the pairs of
distributions over each class (``gamma >= 0``, ``sum over the positives = sum over the negatives = 1``)
and the weights on the unit sphere, the problem is

    max_{eta >= 0, ||eta||_2 = 1}  min_{gamma in Gamma}  (1 - lam) gamma' Y K(eta) Y gamma + lam ||gamma||^2.

The paper's one-shot solution replaces ``K(eta)`` by the sum of the (trace-normalized) kernels, which
makes the inner minimum one QP, and reads the weights off its solution ``gamma*``:

    d_m = gamma*' Y K_m Y gamma*,      eta = d / ||d||_2.

One pass over the stack (``q_m``) gives ``d``; the QP is solved by the library's SMO on the sum kernel
(as in the paper and in MKLpy, so ``lam`` means what it means there).  The weights are then scaled onto
the simplex (``eta / sum eta``, the same direction, MKLpy's scaling too), so
that the combined kernel has the scale of the average kernel and ``C`` means what it means for
``average``; the classifier is the loss's SVM (the C-SVC by default) on ``K(eta)``, solved with the
certified gap of a fixed-weight problem (the inner solve's own gap): EasyMKL's weights minimise no MKL
objective, so there is no outer gap to report.
"""

from __future__ import annotations

import numpy as np

from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import InnerCapability, Method, MKLProblem, Solver
from multikernel.plugins._weights_first import FixedWeights, WeightsThenSVM
from multikernel.solve.smo import solve_qp
from multikernel.stack.combination import CombinedKernel

__all__ = ["EasyMKLSolver", "FixedWeights", "easymkl_weights"]


def easymkl_weights(problem: MKLProblem, lam: float, tol: float = 1e-8) -> tuple[np.ndarray, np.ndarray]:
    """EasyMKL's weights (scaled to sum 1) and ``gamma`` (one row per block) for ``problem``'s stack and targets.

    For several blocks sharing the weights (``y`` of shape (T, n)), each block has its own ``gamma`` and
    ``d_m`` sums the blocks' margins, as the objectives of shared-weight blocks add up everywhere else.

    Parameters
    ----------
    problem : MKLProblem
        The stack and the targets in {-1, +1} (a problem with its own inner problem and no ``y`` has no
        classes to separate, and is refused).
    lam : float
        The regularization ``lam`` in [0, 1): 0 is the hard margin between the hulls, values near 1 pull
        ``gamma`` towards the class centroids.
    tol : float
        KKT tolerance of the QP.
    """
    if InnerCapability.LABELLED_BLOCKS not in problem.inner.capabilities():
        raise ValueError("easymkl needs class targets in {-1, +1}: it separates two classes, and has no form "
                         "for a problem that brings its own inner problem")
    if not (0.0 <= lam < 1.0):
        raise ValueError(f"lam must be in [0, 1); got {lam!r}")
    stack = problem.stack
    M = stack.n_kernels
    K = CombinedKernel(stack)(np.ones(M))
    Y = np.atleast_2d(np.asarray(problem.y, dtype=np.float64))
    gammas = []
    for y in Y:
        # (1 - lam) g'YKYg + lam g'g, divided by 2 (1 - lam): 1/2 g'(YKY + lam/(1 - lam) I) g, per-class sums 1
        res = solve_qp(K, y, p=0.0, lower=0.0, upper=np.inf, ridge=lam / (1.0 - lam), signed=True,
                       y_sum=0.0, total=2.0, tol=tol)
        gammas.append(res.alpha)
    gamma = np.array(gammas)
    coef = gamma * Y
    d = problem.quad_forms(coef[0] if len(Y) == 1 else coef)
    d = np.maximum(d, 0.0)  # rounding of a form of a positive semi-definite kernel
    if not d.sum() > 0:
        return np.full(M, 1.0 / M), gamma
    return d / d.sum(), gamma


class EasyMKLSolver(WeightsThenSVM):
    """EasyMKL: the weights from one QP on the sum kernel (:func:`easymkl_weights`), then the loss's SVM
    on the combined kernel, solved until its own certified gap meets ``tol``.

    Parameters
    ----------
    lam : float, default=0.1
        EasyMKL's ``lam`` in [0, 1) (MKLpy's default is 0.1).
    qp_tol : float, default=1e-8
        KKT tolerance of the weights' QP (a tight one costs little: the QP is solved once).
    """

    name = "easymkl"
    replaces_objective = "weights from one QP (the margin between the class hulls), then one SVM"

    def __init__(self, lam: float = 0.1, qp_tol: float = 1e-8) -> None:
        self.lam = lam
        self.qp_tol = qp_tol

    def check(self, problem: MKLProblem) -> None:
        if not (isinstance(self.lam, int | float | np.floating) and 0.0 <= self.lam < 1.0):
            raise ValueError(f"lam must be a number in [0, 1); got {self.lam!r}")
        if not (isinstance(self.qp_tol, int | float | np.floating) and self.qp_tol > 0):
            raise ValueError(f"qp_tol must be positive; got {self.qp_tol!r}")

    def weights(self, problem: MKLProblem) -> tuple[np.ndarray, int]:
        return easymkl_weights(problem, float(self.lam), float(self.qp_tol))[0], 0


EASYMKL = Method(
    name="easymkl",
    summary="EasyMKL: weights from one QP (margin between the class hulls on the sum kernel, lam = 0.1), "
            "then one SVM on the combined kernel.",
    loss="csvc", regularizer="simplex", solver="easymkl", solver_params={"lam": 0.1},
    citation="Aiolli and Donini, EasyMKL: a scalable multiple kernel learning algorithm, Neurocomputing "
             "169:215-224, 2015.",
)


@hookimpl
def multikernel_solvers() -> dict[str, type[Solver]]:
    return {EasyMKLSolver.name: EasyMKLSolver}


@hookimpl
def multikernel_methods() -> dict[str, Method]:
    return {EASYMKL.name: EASYMKL}
