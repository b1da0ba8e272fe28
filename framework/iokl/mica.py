"""MICA (Mangasarian and Wild, 2008): multiple-instance classification by a convex combination of each positive
bag's instances, alternated by successive linearisation.

Every negative instance must lie on the negative side of the margin, and for each positive bag ``B`` some convex
combination ``sum_j v_j x_j`` of its instances on the positive side.  With the decision function
``f(x) = sum_i u_i k(x_i, x) + b`` over the training instances, the problem (l1, the paper's)

    min_{u, b, v}  ||u||_1 + C ( sum_{x in B^-} h(-f(x)) + sum_{B^+} h(sum_{j in B} v_j f(x_j)) ),
    v_B >= 0, 1'v_B = 1,                                  h(t) = max(0, 1 - t),

is bilinear in ``(u, v)``.  For fixed ``v`` it is a linear programme in ``(u, b)`` (HiGHS); for fixed ``(u, b)``
it is a linear programme in ``v`` whose optimum is a vertex, each bag's instance of largest ``f`` (taken
directly).  The two steps alternate from ``v`` uniform (the bag means) until ``v`` repeats; the objective does not
increase.  With ``regularizer="l2"`` the first step is the C-SVC ``1/2 ||w||^2`` instead (the misvm package's
MICA), solved by :func:`~multikernel.iokl.unit_svm.unit_svm`.  Since ``max_v sum_j v_j f(x_j) = max_{x in B}
f(x)``, the joint minimum over ``v`` is MI-SVM's problem (Andrews et al.): the l2 form is MI-SVM with a
feature-space-mean start, the l1 form its sparse, linear-programming counterpart.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from multikernel.core.validation import Constraint, Options
from multikernel.estimators.progress import FitProgress
from multikernel.iokl.baselines import _MILBase
from multikernel.iokl.unit_svm import Steps, bag_combinations, hinge, unit_svm

__all__ = ["MICA", "l1_svm_lp"]


def l1_svm_lp(KV: np.ndarray, labels: np.ndarray, C: float) -> tuple[np.ndarray, float]:
    """The 1-norm SVM as a linear programme over units: ``min ||u||_1 + C sum_k max(0, 1 - y_k (KV_k u + b))``.

    Parameters
    ----------
    KV : ndarray of shape (n_units, n)
        Each unit's kernel row against the ``n`` expansion instances (``V K``).
    labels : ndarray of shape (n_units,)
        -1 / +1.
    C : float

    Returns
    -------
    u : ndarray of shape (n,)
    b : float
    """
    m, n = KV.shape
    YKV = labels[:, None] * KV
    # x = [u+ (n), u- (n), b, xi (m)]:  -y_k (KV_k (u+ - u-) + b) - xi_k <= -1
    A = sp.hstack([sp.csr_matrix(-YKV), sp.csr_matrix(YKV), sp.csr_matrix(-labels[:, None]), -sp.identity(m)],
                  format="csr")
    cost = np.r_[np.ones(2 * n), 0.0, np.full(m, C)]
    bounds = [(0, None)] * (2 * n) + [(None, None)] + [(0, None)] * m
    res = linprog(cost, A_ub=A, b_ub=-np.ones(m), bounds=bounds, method="highs")
    if res.status != 0:  # the LP is always feasible and bounded below by 0: only a numerical failure lands here
        raise RuntimeError(f"HiGHS did not solve MICA's linear programme: {res.message}")
    x = res.x
    return x[:n] - x[n:2 * n], float(x[2 * n])


class MICA(_MILBase):
    """MICA: multiple-instance classification by convex combinations of the positive bags' instances
    (Mangasarian and Wild, 2008), by successive linearisation.

    Each positive bag is represented by a convex combination of its instances, chosen with the classifier by
    alternating a linear programme (the 1-norm SVM, HiGHS) for fixed combinations with the combinations' own
    linear programme (each bag's instance of largest decision value) until the combinations repeat.  See
    :mod:`multikernel.iokl.mica` for the problem.

    Parameters
    ----------
    kernels : str, list of KernelBuilder or None, default=None
        The input kernels (``None``: the thesis's four, as :class:`~multikernel.iokl.IOKLMultipleInstanceClassifier`);
        their average is the kernel.
    C : float, default=10
        The cost of a slack (a negative instance's or a positive bag's).
    regularizer : {"l1", "l2"}, default="l1"
        ``"l1"``: ``||u||_1`` of the expansion coefficients, a linear programme per step (the paper's; sparse
        in the training instances).  ``"l2"``: ``1/2 ||w||^2``, a C-SVC per step (the misvm package's MICA).
        The l1 programme's constraint matrix is dense (negative instances and positive bags x twice the training
        instances): for many thousand instances use ``"l2"``.
    max_iter : int, default=50
        Alternations (linear programmes or SVM fits); a ``ConvergenceWarning`` names the criterion that did not
        hold when it is reached.
    verbose : int, default=0
        ``>= 1`` shows the alternations.
    kernel_params, normalize, standardize, kernel_dtype, kernel_backend, memory_budget
        The kernel input's parameters, as in :class:`~multikernel.MKLClassifier` (``normalize="none"``).

    Attributes
    ----------
    dual_coef_ : ndarray
        The decision function's coefficients over the training instances ``support_rows_``.
    intercept_ : float
    support_rows_ : ndarray of int
    objective_ : float
        The MICA objective of the model (with its regularizer).
    objectives_ : ndarray
        The objective after each alternation.
    n_iter_ : int
        Alternations taken.
    classes_ : ndarray of shape (2,)

    References
    ----------
    O. L. Mangasarian and E. W. Wild, Multiple instance classification via successive linear programming,
    Journal of Optimization Theory and Applications 137(3), 555-568, 2008.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {"regularizer": [Options("l1", "l2")]}

    def __init__(self, kernels: Any = None, C: float = 10.0, regularizer: str = "l1", max_iter: int = 50,
                 verbose: int = 0, kernel_params: dict[str, Any] | None = None, normalize: str = "none",
                 standardize: bool = False, kernel_dtype: str = "float64", kernel_backend: str = "dense",
                 memory_budget: int | str | None = None) -> None:
        super().__init__(kernels=kernels, C=C, max_iter=max_iter, verbose=verbose, kernel_params=kernel_params,
                         normalize=normalize, standardize=standardize, kernel_dtype=kernel_dtype,
                         kernel_backend=kernel_backend, memory_budget=memory_budget)
        self.regularizer = regularizer

    def _alternate(self, K: np.ndarray, lists: list[np.ndarray], yb: np.ndarray, progress: FitProgress) -> None:
        pos = [b for b, s in zip(lists, yb, strict=True) if s > 0]
        neg = np.concatenate([b for b, s in zip(lists, yb, strict=True) if s < 0])
        n, C = len(K), float(self.C)
        labels = np.r_[-np.ones(len(neg)), np.ones(len(pos))]
        negatives = sp.csr_matrix((np.ones(len(neg)), (np.arange(len(neg)), neg)), shape=(len(neg), n))
        weights = [np.full(len(b), 1.0 / len(b)) for b in pos]  # v uniform: the bag means
        steps = Steps(self)
        for _ in range(self.max_iter):
            V = sp.vstack([negatives, bag_combinations(pos, weights, n)], format="csr")
            if self.regularizer == "l1":
                coef, b = l1_svm_lp(np.asarray(V @ K), labels, C)
            else:
                coef, b = unit_svm(K, V, labels, np.full(len(labels), C))
            f = K @ coef + b
            # the combinations' step: each bag's vertex of largest f, which also gives the objective at (u, b, v)
            witnesses = [int(np.argmax(f[bag])) for bag in pos]
            new = [np.eye(len(bag))[w] for bag, w in zip(pos, witnesses, strict=True)]
            margins = np.r_[-f[neg], [f[bag][w] for bag, w in zip(pos, witnesses, strict=True)]]
            penalty = np.abs(coef).sum() if self.regularizer == "l1" else 0.5 * coef @ K @ coef
            steps.record(coef, b, float(penalty + C * hinge(margins).sum()))
            progress.update(keep=steps.keep)  # Ctrl-C: the alternation of least objective is the model
            repeated = all(np.array_equal(a, c) for a, c in zip(new, weights, strict=True))
            weights = new
            if repeated:
                steps.keep()
                return
        steps.capped("the positive bags' convex combinations still changing")
