"""One-shot kernel weights from each kernel's own performance: PWMK and FHeuristic.

* ``pwmk`` (Tanabe, Ho, Nguyen and Kawasaki, 2008): each kernel's cross-validated accuracy ``acc_m`` with
  the loss's SVM alone on that kernel, shifted down by ``delta`` times the smallest one:
  ``mu_m ∝ acc_m - delta min_k acc_k`` (``delta`` in [0, 1]; 0 weights by accuracy, 1 gives the worst kernel
  weight 0).
* ``fheuristic`` (Qiu and Lane, 2009): each kernel's (uncentered) alignment with the target kernel,
  ``mu_m ∝ <K_m, yy'>_F / (||K_m||_F ||yy'||_F) = y'K_m y / (n ||K_m||_F)``, negative alignments at 0.

The weights are scaled to sum 1, and the classifier is the loss's SVM on the combined kernel.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold

from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import Method, MKLProblem, Solver
from multikernel.plugins._weights_first import WeightsThenSVM, binary_target, on_simplex
from multikernel.plugins.alignment import ALIGNMENT_FLOOR
from multikernel.stack.storage import KernelStack

__all__ = ["FHeuristicSolver", "PWMKSolver", "fheuristic_weights", "kernel_accuracies", "pwmk_weights"]


def fheuristic_weights(stack: KernelStack, y: np.ndarray) -> np.ndarray:
    """FHeuristic's weights: each kernel's alignment with ``yy'``, negative ones at 0, scaled to sum 1."""
    stack._check_square("fheuristic")
    frob = np.array([np.linalg.norm(np.asarray(stack.kernel(m), dtype=np.float64)) for m in range(stack.n_kernels)])
    a = stack.quad_forms(y) / len(y)
    return on_simplex(np.divide(a, frob, out=np.zeros_like(a), where=frob > 0), "fheuristic", ALIGNMENT_FLOOR)


def kernel_accuracies(problem: MKLProblem, y: np.ndarray, cv: int, tol: float) -> np.ndarray:
    """The mean accuracy over ``cv`` stratified folds (in order, unshuffled: scikit-learn's
    ``cross_val_score(..., cv=cv)``) of the loss's SVM on each kernel alone."""
    stack = problem.stack
    loss = problem.loss
    C = getattr(loss, "C", None)
    acc = np.zeros(stack.n_kernels)
    folds = list(StratifiedKFold(n_splits=cv).split(np.zeros(len(y)), y))
    for train, test in folds:
        fold_loss = loss
        if isinstance(C, np.ndarray):  # a cost per sample: the fold's own
            fold_loss = clone(loss).set_params(C=C[train])
        for m in range(stack.n_kernels):
            K = np.asarray(stack.kernel(m), dtype=np.float64)
            sol = fold_loss.solve(np.ascontiguousarray(K[np.ix_(train, train)]), y[train], None, tol)
            f = K[np.ix_(test, train)] @ sol.coef + sol.bias
            # scikit-learn's rule: a decision value of exactly 0 predicts the first class (-1)
            acc[m] += np.mean(np.where(f > 0, 1.0, -1.0) == y[test])
    return acc / len(folds)


def pwmk_weights(problem: MKLProblem, y: np.ndarray, delta: float, cv: int, tol: float) -> np.ndarray:
    """PWMK's weights: ``acc_m - delta min acc``, scaled to sum 1 (:func:`kernel_accuracies`)."""
    acc = kernel_accuracies(problem, y, cv, tol)
    return on_simplex(acc - delta * acc.min(), "pwmk")


class PWMKSolver(WeightsThenSVM):
    """PWMK: weights from each kernel's cross-validated accuracy (:func:`pwmk_weights`), then the loss's SVM
    on the combined kernel.

    Parameters
    ----------
    delta : float, default=0.0
        In [0, 1]: the share of the smallest accuracy subtracted from every accuracy.
    cv : int, default=3
        Number of stratified folds (at least 2, at most the size of the smaller class).
    inner_tol : float, default=1e-3
        KKT tolerance of the per-kernel SVMs (libsvm's default, as scikit-learn's ``SVC``).
    """

    name = "pwmk"
    replaces_objective = "weights from each kernel's cross-validated accuracy, then one SVM"

    def __init__(self, delta: float = 0.0, cv: int = 3, inner_tol: float = 1e-3) -> None:
        self.delta = delta
        self.cv = cv
        self.inner_tol = inner_tol

    def check(self, problem: MKLProblem) -> None:
        if not (isinstance(self.delta, numbers.Real) and 0.0 <= self.delta <= 1.0):
            raise ValueError(f"pwmk's delta must be a number in [0, 1]; got {self.delta!r}")
        if not (isinstance(self.cv, numbers.Integral) and not isinstance(self.cv, bool) and self.cv >= 2):
            raise ValueError(f"pwmk's cv must be an integer of at least 2 (the number of folds); got {self.cv!r}")
        if not (isinstance(self.inner_tol, numbers.Real) and self.inner_tol > 0):
            raise ValueError(f"pwmk's inner_tol must be positive; got {self.inner_tol!r}")

    def weights(self, problem: MKLProblem) -> tuple[np.ndarray, int]:
        y = binary_target(problem, self.name)
        smaller = int(min((y > 0).sum(), (y < 0).sum()))
        if self.cv > smaller:
            raise ValueError(f"pwmk's cv = {self.cv} folds need at least {self.cv} samples of each class; the smaller "
                             f"class has {smaller}: lower cv")
        problem.stack._check_square("pwmk")
        return pwmk_weights(problem, y, float(self.delta), int(self.cv), float(self.inner_tol)), 0


class FHeuristicSolver(WeightsThenSVM):
    """FHeuristic: each kernel weighted by its alignment with the target (:func:`fheuristic_weights`), then the
    loss's SVM on the combined kernel."""

    name = "fheuristic"
    replaces_objective = "weights from each kernel's alignment with the labels, then one SVM"

    def weights(self, problem: MKLProblem) -> tuple[np.ndarray, int]:
        return fheuristic_weights(problem.stack, binary_target(problem, self.name)), 0


METHODS = (
    Method(name="pwmk", summary="PWMK: weights from each kernel's 3-fold accuracy (delta = 0), then one SVM.",
           loss="csvc", regularizer="simplex", solver="pwmk",
           citation="Tanabe, Ho, Nguyen and Kawasaki, Simple but effective methods for combining kernels in "
                    "computational biology, IEEE RIVF 2008."),
    Method(name="fheuristic", summary="FHeuristic: weights from each kernel's alignment with the labels, then one SVM.",
           loss="csvc", regularizer="simplex", solver="fheuristic",
           citation="Qiu and Lane, A framework for multiple kernel support vector regression and its applications "
                    "to siRNA efficacy prediction, IEEE/ACM TCBB 6(2):190-199, 2009."),
)


@hookimpl
def multikernel_solvers() -> dict[str, type[Solver]]:
    return {PWMKSolver.name: PWMKSolver, FHeuristicSolver.name: FHeuristicSolver}


@hookimpl
def multikernel_methods() -> dict[str, Method]:
    return {m.name: m for m in METHODS}
