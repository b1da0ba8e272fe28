"""Multiple-instance baselines of chapter 4 (spec section 3.13): SIL-SVM, mi-SVM, MI-SVM and the MI-kernel SVM.

All take ``fit(X, y, bags)`` like :class:`~multikernel.iokl.IOKLMultipleInstanceClassifier` and solve
scikit-learn's :class:`~sklearn.svm.SVC` on a precomputed kernel (the average of the input kernels).  The
semi-supervised and clustering baselines are scikit-learn estimators used as they are (``SVC`` on the
labelled part, ``LabelSpreading``, ``SelfTrainingClassifier(SVC)``, ``KMeans``, ``SpectralClustering``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC
from sklearn.utils.validation import check_array, check_is_fitted

from multikernel.core.interfaces import KernelBuilder
from multikernel.iokl.estimators import _bag_lists, default_kernels
from multikernel.stack.kernelset import KernelSet

__all__ = ["MISVM", "MIKernelSVM", "SILSVM", "miSVM"]


class _MILBase(ClassifierMixin, BaseEstimator):
    def __init__(self, kernels: Sequence[KernelBuilder] | None = None, C: float = 10.0, max_iter: int = 50
                 ) -> None:
        self.kernels = kernels
        self.C = C
        self.max_iter = max_iter

    def _prepare(self, X: Any, y: Any, bags: Any) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
        X = check_array(X)
        if not (isinstance(self.max_iter, int | np.integer) and self.max_iter >= 1):
            raise ValueError(f"max_iter must be a positive integer (SVM fits of the alternation); got "
                             f"{self.max_iter!r}")
        lists, _ = _bag_lists(bags, len(X))
        y = np.asarray(y)
        yb = np.array([y[b][0] for b in lists]) if y.shape == (len(X),) else y
        if yb.shape != (len(lists),):
            raise ValueError(f"y must hold one label per instance ({len(X)}) or per bag ({len(lists)})")
        self.classes_ = np.unique(yb)
        if len(self.classes_) != 2:
            raise ValueError(f"MIL needs positive and negative bags; got bag labels {self.classes_.tolist()}")
        builders = default_kernels() if self.kernels is None else [clone(b) for b in self.kernels]
        self.kernel_set_ = KernelSet(builders)
        stack = self.kernel_set_.fit_stack(X)
        K = stack.combine(np.full(stack.n_kernels, 1.0 / stack.n_kernels))  # the average, without stacked copies
        return K, lists, np.where(yb == self.classes_[1], 1.0, -1.0)

    def _cross(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "kernel_set_")
        cross = self.kernel_set_.cross_stack(check_array(X))
        return cross.combine(np.full(cross.n_kernels, 1.0 / cross.n_kernels))

    def decision_function(self, X: Any, bags: Any) -> np.ndarray:
        """Bag scores: the largest instance score (bags in the order of ``np.unique(bags)``)."""
        X = check_array(X)
        lists, _ = _bag_lists(bags, len(X))
        f = self.svm_.decision_function(self._cross(X)[:, self.support_rows_])
        return np.array([f[b].max() for b in lists])

    def predict(self, X: Any, bags: Any) -> np.ndarray:
        return self.classes_[(self.decision_function(X, bags) > 0).astype(int)]

    def _fit_rows(self, K: np.ndarray, rows: np.ndarray, labels: np.ndarray) -> None:
        self.support_rows_ = rows
        self.svm_ = SVC(kernel="precomputed", C=self.C).fit(K[np.ix_(rows, rows)], labels)

    def _capped(self, what: str) -> None:
        """The alternation's own criterion did not hold within ``max_iter`` refits: say which, and how to go on."""
        warnings.warn(f"{type(self).__name__} stopped at max_iter={self.max_iter} with the {what} still changing; "
                      f"the last SVM is kept. Increase max_iter", ConvergenceWarning, stacklevel=3)


class SILSVM(_MILBase):
    """Single-instance learning: every instance takes its bag's label; one SVM."""

    def fit(self, X: Any, y: Any, bags: Any) -> SILSVM:
        K, lists, yb = self._prepare(X, y, bags)
        labels = np.empty(len(K))
        for b, s in zip(lists, yb, strict=True):
            labels[b] = s
        self._fit_rows(K, np.arange(len(K)), labels)
        return self


class miSVM(_MILBase):  # noqa: N801 (the name of Andrews et al.)
    """mi-SVM (Andrews et al. 2003): latent instance labels in positive bags, relabelled by ``sign(f)`` with at
    least one positive per positive bag, until the labels stop changing (a ``ConvergenceWarning`` when they
    still change after ``max_iter`` SVM fits).  Every instance of a positive bag starts positive."""

    def fit(self, X: Any, y: Any, bags: Any) -> miSVM:
        K, lists, yb = self._prepare(X, y, bags)
        labels = np.empty(len(K))
        for b, s in zip(lists, yb, strict=True):
            labels[b] = s
        rows = np.arange(len(K))
        pos = [b for b, s in zip(lists, yb, strict=True) if s > 0]
        self.n_iter_ = 0
        for _ in range(self.max_iter):
            self._fit_rows(K, rows, labels)
            self.n_iter_ += 1
            f = self.svm_.decision_function(K)
            new = labels.copy()
            for b in pos:
                new[b] = np.where(f[b] > 0, 1.0, -1.0)
                new[b[np.argmax(f[b])]] = 1.0
            if np.array_equal(new, labels):
                break
            labels = new
        else:
            self._capped("instance labels")
        return self


class MISVM(_MILBase):
    """MI-SVM (Andrews et al. 2003): each positive bag is represented by its highest-scoring instance (the
    witness); negative instances all stay; alternate until the witnesses stop changing (a
    ``ConvergenceWarning`` when they still change after ``max_iter`` SVM fits).

    The first SVM represents each positive bag by its mean in the kernel's feature space (the start of
    Andrews et al. and of the misvm package; its kernel entries are averages of the bag's kernel rows), so the
    first witnesses are chosen by a classifier that has seen every instance of the positive bags.
    """

    def fit(self, X: Any, y: Any, bags: Any) -> MISVM:
        K, lists, yb = self._prepare(X, y, bags)
        neg = np.concatenate([b for b, s in zip(lists, yb, strict=True) if s < 0])
        pos = [b for b, s in zip(lists, yb, strict=True) if s > 0]
        labels = np.r_[np.ones(len(pos)), -np.ones(len(neg))]
        # the bag means: M = S K with S the averaging rows, so k(mean_b, x) = M[b, x] and k(mean_b, mean_c) =
        # M[b] S_c'; one SVM on the means and the negative instances, scored on every instance
        M = np.stack([K[b].mean(axis=0) for b in pos])
        means = np.stack([M[:, b].mean(axis=1) for b in pos], axis=1)
        units = np.block([[means, M[:, neg]], [M[:, neg].T, K[np.ix_(neg, neg)]]])
        svm = SVC(kernel="precomputed", C=self.C).fit(units, labels)
        f = svm.decision_function(np.hstack([M.T, K[:, neg]]))
        witness = np.array([b[np.argmax(f[b])] for b in pos])
        self.n_iter_ = 1
        for _ in range(self.max_iter - 1):
            rows = np.r_[witness, neg]
            self._fit_rows(K, rows, labels)
            self.n_iter_ += 1
            f = self.svm_.decision_function(K[:, rows])
            new = np.array([b[np.argmax(f[b])] for b in pos])
            if np.array_equal(new, witness):
                break
            witness = new
        else:
            if self.max_iter == 1:  # the means' SVM only: the classifier is the SVM of its witnesses
                self._fit_rows(K, np.r_[witness, neg], labels)
            self._capped("witnesses")
        return self


class MIKernelSVM(_MILBase):
    """The MI-kernel (set kernel) SVM of Gärtner et al. (2002): ``k(B, B') = sum_{x in B, x' in B'} k(x, x')``,
    normalised by the bag sizes, and one SVM over bags."""

    def fit(self, X: Any, y: Any, bags: Any) -> MIKernelSVM:
        K, lists, yb = self._prepare(X, y, bags)
        self.S_ = self._membership(lists, len(K))
        Kb = self.S_ @ K @ self.S_.T
        self.svm_ = SVC(kernel="precomputed", C=self.C).fit(Kb, yb)
        return self

    @staticmethod
    def _membership(lists: list[np.ndarray], n: int) -> np.ndarray:
        S = np.zeros((len(lists), n))
        for i, b in enumerate(lists):
            S[i, b] = 1.0 / len(b)
        return S

    def decision_function(self, X: Any, bags: Any) -> np.ndarray:
        X = check_array(X)
        lists, _ = _bag_lists(bags, len(X))
        return self.svm_.decision_function(self._membership(lists, len(X)) @ self._cross(X) @ self.S_.T)
