"""MissSVM (Zhou and Xu, ICML 2007): multiple-instance learning as semi-supervised learning, solved by the CCCP.

The instances of negative bags are labelled negative; the instances of positive bags are unlabelled points of a
transductive SVM (the symmetric hinge ``max(0, 1 - |f(x)|)``), and each positive bag has the constraint that its
largest decision value reaches the margin.  The non-convex objective

    J(f) = 1/2 ||w||^2 + C sum_{x in B^-} h(-f(x)) + C_b sum_{B^+} h(max_{x in B} f(x))
           + C_u sum_{x in B^+} h(|f(x)|),            h(t) = max(0, 1 - t),

with the weights ``C_b = C L_n / X_p`` and ``C_u = C L_n / L_p`` (``L_n`` negative instances, ``L_p`` positive-bag
instances, ``X_p`` positive bags: each of the three terms weighs as the negative instances do, as in the misvm
package), is minimised by the concave-convex procedure: at the current ``f`` each bag's maximum is replaced by
its largest instance (the witness) and ``|f(x)|`` by ``sign(f(x)) f(x)``; the resulting convex majorant, tight
at ``f``, is the C-SVC :func:`~multikernel.iokl.unit_svm.unit_svm` over the witnesses (+1, bound ``C_b``), the
positive bags' instances (label ``sign f``, bound ``C_u``) and the negative instances (-1, bound ``C``).  Each step
therefore does not increase ``J``; the procedure stops when the linearisation repeats (a fixed point) or ``J``
decreases by less than ``tol`` times its value.  The first step represents each positive bag by its mean and
gives every positive-bag instance both labels with half the bound (the majorant of every linearisation).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from multikernel.core.validation import Constraint, Real
from multikernel.estimators.progress import FitProgress
from multikernel.iokl.baselines import _MILBase
from multikernel.iokl.unit_svm import Steps, bag_combinations, hinge, unit_svm

__all__ = ["MissSVM"]


class MissSVM(_MILBase):
    """MissSVM: multiple-instance learning as semi-supervised learning (Zhou and Xu, ICML 2007), by the CCCP.

    The positive bags' instances are unlabelled points (symmetric hinge loss) and every positive bag must have an
    instance on the positive side of the margin; the non-convex problem is solved by the concave-convex
    procedure, one C-SVC (libsvm) per step.  See :mod:`multikernel.iokl.missvm` for the objective.

    Parameters
    ----------
    kernels : str, list of KernelBuilder or None, default=None
        The input kernels (``None``: the thesis's four, as :class:`~multikernel.iokl.IOKLMultipleInstanceClassifier`);
        their average is the SVM's kernel.
    C : float, default=10
        The cost of a negative instance's slack; the positive bags' and their instances' costs are ``C`` times
        ``L_n / X_p`` and ``L_n / L_p`` (see the module docstring).
    max_iter : int, default=50
        CCCP steps (SVM fits); a ``ConvergenceWarning`` names the criterion that did not hold when it is reached.
    tol : float, default=1e-6
        The CCCP stops when its objective decreases by less than ``tol`` times its value (or the linearisation
        repeats: a fixed point).
    verbose : int, default=0
        ``>= 1`` shows the CCCP's steps.
    kernel_params, normalize, standardize, kernel_dtype, kernel_backend, memory_budget
        The kernel input's parameters, as in :class:`~multikernel.MKLClassifier` (``normalize="none"``).

    Attributes
    ----------
    dual_coef_ : ndarray
        The decision function's coefficients over the training instances ``support_rows_``.
    intercept_ : float
    support_rows_ : ndarray of int
    objective_ : float
        The MissSVM objective ``J`` of the model.
    objectives_ : ndarray
        ``J`` after each CCCP step.
    n_iter_ : int
        CCCP steps taken.
    classes_ : ndarray of shape (2,)

    References
    ----------
    Z.-H. Zhou and J.-M. Xu, On the relation between multi-instance learning and semi-supervised learning,
    ICML 2007.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {"tol": [Real(low=0, closed="left")]}

    def __init__(self, kernels: Any = None, C: float = 10.0, max_iter: int = 50, tol: float = 1e-6,
                 verbose: int = 0, kernel_params: dict[str, Any] | None = None, normalize: str = "none",
                 standardize: bool = False, kernel_dtype: str = "float64", kernel_backend: str = "dense",
                 memory_budget: int | str | None = None) -> None:
        super().__init__(kernels=kernels, C=C, max_iter=max_iter, verbose=verbose, kernel_params=kernel_params,
                         normalize=normalize, standardize=standardize, kernel_dtype=kernel_dtype,
                         kernel_backend=kernel_backend, memory_budget=memory_budget)
        self.tol = tol

    def _alternate(self, K: np.ndarray, lists: list[np.ndarray], yb: np.ndarray, progress: FitProgress) -> None:
        problem = _MissProblem(K, lists, yb, float(self.C))
        witnesses, signs = None, None  # None: the first step's bag means and half-labelled instances
        steps = Steps(self)
        for _ in range(self.max_iter):
            coef, b = unit_svm(K, *problem.units(witnesses, signs))
            f = K @ coef + b
            steps.record(coef, b, problem.objective(coef, f))
            progress.update(keep=steps.keep)  # Ctrl-C: the step of least objective is the model
            new_witnesses, new_signs = problem.linearise(f)
            repeated = (witnesses is not None and np.array_equal(new_witnesses, witnesses)
                        and np.array_equal(new_signs, signs))
            J = steps.history
            stalled = len(J) > 1 and J[-2] - J[-1] <= self.tol * abs(J[-1])
            witnesses, signs = new_witnesses, new_signs
            if repeated or stalled:
                steps.keep()
                return
        steps.capped(f"the CCCP's linearisation (witnesses and instance signs) still changing and its objective "
                     f"still decreasing by more than tol={self.tol:g} times its value")


class _MissProblem:
    """The pieces of the MissSVM objective on one training set: units of each linearisation, the objective."""

    def __init__(self, K: np.ndarray, lists: list[np.ndarray], yb: np.ndarray, C: float) -> None:
        self.K, self.n = K, len(K)
        self.pos = [b for b, s in zip(lists, yb, strict=True) if s > 0]
        self.neg = np.concatenate([b for b, s in zip(lists, yb, strict=True) if s < 0])
        self.pos_inst = np.concatenate(self.pos)
        n_neg, n_pos, n_bags = len(self.neg), len(self.pos_inst), len(self.pos)
        self.C, self.C_bag, self.C_unl = C, C * n_neg / n_bags, C * n_neg / n_pos

    def _one_hot(self, rows: np.ndarray) -> sp.csr_matrix:
        return sp.csr_matrix((np.ones(len(rows)), (np.arange(len(rows)), rows)), shape=(len(rows), self.n))

    def units(self, witnesses: np.ndarray | None, signs: np.ndarray | None
              ) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
        """``(V, labels, bounds)`` of the convex step at a linearisation (``None``: the first step)."""
        n_bags, n_pos, n_neg = len(self.pos), len(self.pos_inst), len(self.neg)
        if witnesses is None:
            bags = bag_combinations(self.pos, [np.full(len(b), 1.0 / len(b)) for b in self.pos], self.n)
            inst = self._one_hot(np.r_[self.pos_inst, self.pos_inst])
            inst_labels = np.r_[np.ones(n_pos), -np.ones(n_pos)]
            inst_bounds = np.full(2 * n_pos, 0.5 * self.C_unl)
        else:
            bags = self._one_hot(witnesses)
            inst = self._one_hot(self.pos_inst)
            inst_labels, inst_bounds = signs, np.full(n_pos, self.C_unl)
        V = sp.vstack([bags, inst, self._one_hot(self.neg)], format="csr")
        labels = np.r_[np.ones(n_bags), inst_labels, -np.ones(n_neg)]
        bounds = np.r_[np.full(n_bags, self.C_bag), inst_bounds, np.full(n_neg, self.C)]
        return V, labels, bounds

    def linearise(self, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The witnesses (each positive bag's instance of largest ``f``) and the signs of ``f`` on the positive
        bags' instances (``+1`` at ``f = 0``, where both linearisations are tight)."""
        witnesses = np.array([b[np.argmax(f[b])] for b in self.pos])
        return witnesses, np.where(f[self.pos_inst] >= 0, 1.0, -1.0)

    def objective(self, coef: np.ndarray, f: np.ndarray) -> float:
        """``J`` of the decision values ``f = K coef + b`` on the training instances."""
        bag_max = np.array([f[b].max() for b in self.pos])
        return float(0.5 * coef @ self.K @ coef + self.C * hinge(-f[self.neg]).sum()
                     + self.C_bag * hinge(bag_max).sum() + self.C_unl * hinge(np.abs(f[self.pos_inst])).sum())
