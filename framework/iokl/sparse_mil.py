"""Sparse multiple-instance learning (Bunescu and Mooney, ICML 2007): sMIL, stMIL and sbMIL.

Positive bags may hold very few positive instances.  sMIL represents a positive bag ``B`` by its mean in the
kernel's feature space and asks that mean to score at least ``(2 - |B|) / |B|``, the mean of one instance at
+1 and ``|B| - 1`` at -1, instead of +1; every instance of a negative bag is a negative sample:

    min_{w, b, xi >= 0}  1/2 ||w||^2 + C/L_n sum_{x in neg} xi_x + C/X_p sum_{B in pos} xi_B
    s.t.  w'phi(x) + b <= -1 + xi_x,   w'phi_mean(B) + b >= (2 - |B|)/|B| - xi_B,

(``L_n`` negative instances, ``X_p`` positive bags).  Its dual is the C-SVC dual over these units with the
linear term ``r'alpha`` (``r = 1`` for the instances, ``2/|B| - 1`` for the bags) and per-unit costs, solved
by the library's SMO.  stMIL adds each instance of a positive bag as an unlabelled point of a transductive
SVM (``|w'phi(x) + b| >= 1 - xi_x``, cost ``C/L_p``), solved by the concave-convex procedure from sMIL's
instance labels; sbMIL fits sMIL, labels positive the ``eta`` fraction of the positive bags' instances it
scores highest, and fits one SVM on every instance.  sMIL and stMIL score a bag by its mean instance score against
the midpoint of the two margin targets, ``mean f + 1 - 1/|B|``; sbMIL, an instance classifier, by its best
instance.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from multikernel.core.validation import Constraint, Real
from multikernel.estimators.progress import FitProgress
from multikernel.iokl.bag_qp import certified_solve, instance_units, unit_kernel, units
from multikernel.iokl.baselines import _kept, _MILBase
from multikernel.iokl.estimators import _bag_lists
from multikernel.solve.svm import InnerQP

__all__ = ["sMIL", "sbMIL", "stMIL"]

_BUNESCU = "Bunescu and Mooney, Multiple instance learning for sparse positive bags, ICML 2007"


_KERNELS_DOC = """kernels : str, list of KernelBuilder or None, default=None
        The instance kernels (``None``: the four of :func:`~multikernel.iokl.default_kernels`); their average is
        the SVM's kernel."""
_COST_DOC = """C : float, default=100
        The cost of each group's *mean* slack (Bunescu and Mooney's ``C/L_n`` per negative instance and
        ``C/X_p`` per positive bag; misvm's ``C`` with its default ``scale_C=True``), not a per-sample cost."""
_REST_DOC = """tol : float, default=1e-3
        The certified relative duality gap of every QP solved (:func:`multikernel.iokl.bag_qp.certified_solve`).
    max_iter : int, default=50
        stMIL: QPs of the concave-convex procedure, sMIL's included; unused by sMIL and sbMIL.
    verbose : int, default=0
        ``>= 1`` shows the QPs solved.
    kernel_params, normalize, standardize, kernel_dtype, kernel_backend, memory_budget
        The kernel input's parameters, as in :class:`~multikernel.MKLClassifier` (``normalize="none"``)."""
_ATTRIBUTES_DOC = """dual_coef_ : ndarray
        Instance coefficients of ``f(x) = sum_i dual_coef_i k(x, x_{support_rows_i}) + intercept_``.
    support_rows_ : ndarray of int
        The training instances with a non-zero coefficient.
    intercept_ : float
        The KKT offset of the dual solution.
    dual_gap_ : float
        The certified relative duality gap of the QP.
    classes_ : ndarray
        The two bag labels; the second is the positive class."""


class _SparseMIL(_MILBase):
    """sMIL and its two extensions: the parameters and the sMIL problem (see the subclasses)."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {"tol": [Real(low=0)]}

    def __init__(self, kernels: Any = None, C: float = 100.0, tol: float = 1e-3, max_iter: int = 50,
                 verbose: int = 0, kernel_params: dict[str, Any] | None = None, normalize: str = "none",
                 standardize: bool = False, kernel_dtype: str = "float64", kernel_backend: str = "dense",
                 memory_budget: int | str | None = None) -> None:
        super().__init__(kernels=kernels, C=C, max_iter=max_iter, verbose=verbose, kernel_params=kernel_params,
                         normalize=normalize, standardize=standardize, kernel_dtype=kernel_dtype,
                         kernel_backend=kernel_backend, memory_budget=memory_budget)
        self.tol = tol

    def _keep(self, A: sp.csr_matrix, sol: Any, gap: float) -> None:
        """The model of a dual solution over the units ``A``: instance coefficients ``A' (y * alpha)``."""
        coef = np.asarray(A.T @ sol.coef).ravel()
        self.support_rows_ = np.flatnonzero(coef)
        self.dual_coef_, self.intercept_, self.dual_gap_ = coef[self.support_rows_], float(sol.bias), gap

    def _smil(self, K: np.ndarray, lists: list[np.ndarray], yb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fit sMIL; return the negative instances and the positive bags' instances (in bag order)."""
        neg = np.concatenate([b for b, s in zip(lists, yb, strict=True) if s < 0])
        pos = [b for b, s in zip(lists, yb, strict=True) if s > 0]
        sizes = np.array([len(b) for b in pos], dtype=np.float64)
        A = sp.vstack([instance_units(neg, len(K)), units(pos, len(K))]).tocsr()
        labels = np.r_[-np.ones(len(neg)), np.ones(len(pos))]
        problem = InnerQP(y=labels, p=-np.r_[np.ones(len(neg)), 2.0 / sizes - 1.0],
                          upper=np.r_[np.full(len(neg), self.C / len(neg)), np.full(len(pos), self.C / len(pos))],
                          y_sum=0.0)
        sol, gap = certified_solve(unit_kernel(A, K), problem, self.tol, who=type(self).__name__)
        self._keep(A, sol, gap)
        return neg, np.concatenate(pos)


class _BagMeanScore:
    """The bag score of sMIL's constraints: a negative bag's instances score at most -1, a positive bag's mean at
    least ``(2 - |B|)/|B|``, so a bag is scored by its mean instance score against the midpoint ``1/|B| - 1``
    of the two targets (0 for one instance, the SVM's own threshold)."""

    def decision_function(self, X: Any, bags: Any) -> np.ndarray:
        """Bag scores ``mean_{x in B} f(x) + 1 - 1/|B|`` (bags in the order of ``np.unique(bags)``)."""
        K = self._cross(X)
        lists, _ = _bag_lists(bags, len(K))
        f = self._decide(K[:, self.support_rows_])
        return np.array([f[b].mean() + 1.0 - 1.0 / len(b) for b in lists])


class sMIL(_BagMeanScore, _SparseMIL):  # noqa: N801 (the name of Bunescu and Mooney)
    __doc__ = f"""sMIL: the sparse MIL SVM (Bunescu and Mooney 2007), one QP.

    Each positive bag is its feature-space mean with the margin target ``(2 - |B|) / |B|``; the instances of
    negative bags are negative samples (see :mod:`multikernel.iokl.sparse_mil`).  ``fit(X, y, bags)`` like the
    other MIL baselines.  A bag is scored as the constraints treat it: its mean instance score against the
    midpoint of the negative target -1 and the positive target ``(2 - |B|)/|B|``, ``mean f + 1 - 1/|B|``.

    Parameters
    ----------
    {_KERNELS_DOC}
    {_COST_DOC}
    {_REST_DOC}

    Attributes
    ----------
    {_ATTRIBUTES_DOC}

    References
    ----------
    {_BUNESCU}.
    """

    def _alternate(self, K: np.ndarray, lists: list[np.ndarray], yb: np.ndarray, progress: FitProgress) -> None:
        self._smil(K, lists, yb)
        progress.update(gap=self.dual_gap_)


class stMIL(_BagMeanScore, _SparseMIL):  # noqa: N801
    __doc__ = f"""stMIL: sparse transductive MIL (Bunescu and Mooney 2007).

    sMIL plus every instance of a positive bag as an unlabelled point of a transductive SVM,
    ``|w'phi(x) + b| >= 1 - xi_x`` at cost ``C/L_p`` (``L_p`` such instances).  The concave-convex procedure
    replaces ``|f(x)|`` by ``s_x f(x)`` with ``s_x`` the sign of the current ``f(x)`` (starting from sMIL's), an
    upper bound of the objective that is tight at the current point, so each QP's optimum is at most the
    previous one; it stops when the signs repeat or the optimum decreases by less than ``tol`` (relative),
    with a ``ConvergenceWarning`` after ``max_iter`` QPs.  The unlabelled points are the training positive
    bags' instances: no test data is needed at fit time.  Bags are scored as by :class:`sMIL`.

    Parameters
    ----------
    {_KERNELS_DOC}
    {_COST_DOC}
    {_REST_DOC}

    Attributes
    ----------
    {_ATTRIBUTES_DOC}
    n_iter_ : int
        QPs solved, sMIL's included.

    References
    ----------
    {_BUNESCU}.
    """

    def _alternate(self, K: np.ndarray, lists: list[np.ndarray], yb: np.ndarray, progress: FitProgress) -> None:
        neg, pos_inst = self._smil(K, lists, yb)
        self.n_iter_ = 1
        progress.update(keep=_kept, gap=self.dual_gap_)
        pos = [b for b, s in zip(lists, yb, strict=True) if s > 0]
        sizes = np.array([len(b) for b in pos], dtype=np.float64)
        n_neg, n_inst, n_bag = len(neg), len(pos_inst), len(pos)
        A = sp.vstack([instance_units(np.r_[neg, pos_inst], len(K)), units(pos, len(K))]).tocsr()
        Ku = unit_kernel(A, K)
        r = np.r_[np.ones(n_neg + n_inst), 2.0 / sizes - 1.0]
        upper = np.r_[np.full(n_neg, self.C / n_neg), np.full(n_inst, self.C / n_inst), np.full(n_bag, self.C / n_bag)]
        signs = self._signs(K, pos_inst)
        alpha, best = None, np.inf
        for _ in range(self.max_iter - 1):
            labels = np.r_[-np.ones(n_neg), signs, np.ones(n_bag)]
            problem = InnerQP(y=labels, p=-r, upper=upper, y_sum=0.0)
            sol, gap = certified_solve(Ku, problem, self.tol, alpha0=alpha, who="stMIL")
            self._keep(A, sol, gap)
            self.n_iter_ += 1
            progress.update(keep=_kept, gap=gap)
            alpha, new = sol.alpha, self._signs(K, pos_inst)
            # the QP optimum (its primal, an upper bound of stMIL's objective at this classifier) never increases
            # by more than the solves' tolerance: a smaller decrease than tol ends the procedure
            stalled = best - sol.primal_objective <= self.tol * abs(sol.primal_objective)
            best = min(best, sol.primal_objective)
            if np.array_equal(new, signs) or stalled:
                return
            signs = new
        self._capped("instance labels")

    def _signs(self, K: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The signs of the current ``f`` on the instances ``rows``; a score of exactly 0 counts as positive."""
        return np.where(self._decide(K[np.ix_(rows, self.support_rows_)]) >= 0, 1.0, -1.0)


class sbMIL(_SparseMIL):  # noqa: N801
    __doc__ = f"""sbMIL: sparse balanced MIL (Bunescu and Mooney 2007).

    Fits sMIL, then labels positive the ``n = round(eta L_p)`` instances of the positive bags that sMIL scores
    highest (at least one per positive bag on average: ``X_p <= n <= L_p``; instances tied with the ``n``-th
    score are positive too) and the others negative, and fits one C-SVC on every training instance with the cost
    ``C/L`` per instance (``L`` instances: ``C`` again weighs the mean slack).  The final classifier is one of
    instances: a bag's score is its best instance's.

    Parameters
    ----------
    {_KERNELS_DOC}
    {_COST_DOC}
    eta : float, default=0.1
        The expected fraction of positive instances in a positive bag, in [0, 1] (0.1, for sparse bags: the
        value of misvm's example).
    {_REST_DOC}

    Attributes
    ----------
    {_ATTRIBUTES_DOC}
    instance_labels_ : ndarray of shape (n_instances,)
        The labels (-1/+1) the final SVM was fitted on, per training instance.

    References
    ----------
    {_BUNESCU}.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {"eta": [Real(low=0, high=1, closed="both")]}

    def __init__(self, kernels: Any = None, C: float = 100.0, eta: float = 0.1, tol: float = 1e-3,
                 max_iter: int = 50, verbose: int = 0, kernel_params: dict[str, Any] | None = None,
                 normalize: str = "none", standardize: bool = False, kernel_dtype: str = "float64",
                 kernel_backend: str = "dense", memory_budget: int | str | None = None) -> None:
        super().__init__(kernels=kernels, C=C, tol=tol, max_iter=max_iter, verbose=verbose,
                         kernel_params=kernel_params, normalize=normalize, standardize=standardize,
                         kernel_dtype=kernel_dtype, kernel_backend=kernel_backend, memory_budget=memory_budget)
        self.eta = eta

    def _alternate(self, K: np.ndarray, lists: list[np.ndarray], yb: np.ndarray, progress: FitProgress) -> None:
        neg, pos_inst = self._smil(K, lists, yb)
        progress.update(keep=_kept, gap=self.dual_gap_)
        n_bags = int(np.sum(yb > 0))
        n = min(len(pos_inst), max(n_bags, int(round(self.eta * len(pos_inst)))))
        f = self._decide(K[np.ix_(pos_inst, self.support_rows_)])
        cutoff = np.sort(f)[::-1][n - 1]
        labels = -np.ones(len(K))
        labels[pos_inst[f >= cutoff]] = 1.0
        problem = InnerQP(y=labels, p=-1.0, upper=self.C / len(K), y_sum=0.0)
        sol, gap = certified_solve(K, problem, self.tol, who="sbMIL")
        self._keep(sp.identity(len(K), format="csr"), sol, gap)
        self.instance_labels_ = labels
        progress.update(keep=_kept, gap=gap)
