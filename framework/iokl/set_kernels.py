"""The multi-instance kernels of Gärtner, Flach, Kowalczyk and Smola (ICML 2002): NSK and STK, each with one SVM.

The normalized set kernel compares bags through all their instance pairs,

    k_set(X, Y) = sum_{x in X, y in Y} k(x, y),     k_NSK(X, Y) = k_set(X, Y) / (n(X) n(Y)),

with ``n(X) = sqrt(k_set(X, X))`` (feature-space normalization: the bags' mean embeddings scaled to unit norm),
``n(X) = |X|`` (averaging: the kernel of the mean embeddings, :class:`~multikernel.iokl.baselines.MIKernelSVM`)
or ``n(X) = 1``.  The statistics kernel maps a bag to the minimum and the maximum of each feature over its
instances, ``s(X) = (min_x x_1, ..., min_x x_d, max_x x_1, ..., max_x x_d)``, and compares these vectors with
an ordinary kernel (a polynomial one by default).  Both then fit a C-SVC over the bags, solved by the library's
SMO to a certified duality gap.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import numpy as np
from sklearn.utils.validation import validate_data

from multikernel.core.interfaces import KernelBuilder
from multikernel.core.registry import get_registry
from multikernel.core.validation import Constraint, Options, Real
from multikernel.estimators.progress import FitProgress
from multikernel.iokl.bag_qp import certified_solve, unit_kernel, units
from multikernel.iokl.baselines import _MILBase
from multikernel.iokl.estimators import _bag_lists
from multikernel.solve.svm import svm_problem
from multikernel.stack import KernelSet

__all__ = ["NSK", "STK", "bag_statistics"]

_GAERTNER = "Gärtner, Flach, Kowalczyk and Smola, Multi-instance kernels, ICML 2002"

_COMMON_DOC = """C : float, default=10
        The SVM's cost per bag (scikit-learn's ``SVC`` convention; misvm divides its ``C`` by the number of
        bags unless ``scale_C=False``).
    tol : float, default=1e-3
        The certified relative duality gap of the SVM's QP (:func:`multikernel.iokl.bag_qp.certified_solve`).
    verbose : int, default=0
        ``>= 1`` shows the fit.
    kernel_params, normalize, standardize, kernel_dtype, kernel_backend, memory_budget
        The kernel input's parameters, as in :class:`~multikernel.MKLClassifier`."""

_ATTRIBUTES_DOC = """dual_coef_ : ndarray of shape (n_train_bags,)
        The SVM's coefficients ``alpha_B y_B`` of the training bags (zero off the support).
    support_rows_ : ndarray of int
        The training bags, ``arange(n_train_bags)``.
    intercept_ : float
        The KKT offset of the SVM.
    dual_gap_ : float
        The certified relative duality gap of its QP.
    classes_ : ndarray
        The two bag labels; the second is the positive class."""


def bag_statistics(X: np.ndarray, lists: list[np.ndarray]) -> np.ndarray:
    """The statistics of each bag: its features' minima, then their maxima, shape (len(lists), 2 n_features)."""
    rows = X[np.concatenate(lists)]
    starts = np.cumsum([0] + [len(b) for b in lists[:-1]])
    return np.hstack([np.minimum.reduceat(rows, starts), np.maximum.reduceat(rows, starts)])


class _BagSVM(_MILBase):
    """A C-SVC over bags from the kernel between bags; predictions and scores per bag."""

    max_iter = 1  # one SVM (the progress total of _MILBase.fit); not a parameter

    def __init__(self, kernels: Any = None, C: float = 10.0, tol: float = 1e-3, verbose: int = 0,
                 kernel_params: dict[str, Any] | None = None, normalize: str = "none", standardize: bool = False,
                 kernel_dtype: str = "float64", kernel_backend: str = "dense",
                 memory_budget: int | str | None = None) -> None:
        self.kernels = kernels
        self.C = C
        self.tol = tol
        self.verbose = verbose
        self.kernel_params = kernel_params
        self.normalize = normalize
        self.standardize = standardize
        self.kernel_dtype = kernel_dtype
        self.kernel_backend = kernel_backend
        self.memory_budget = memory_budget

    def _fit_bag_svm(self, Kb: np.ndarray, yb: np.ndarray, progress: FitProgress) -> None:
        sol, self.dual_gap_ = certified_solve(Kb, svm_problem("csvc", yb, self.C), self.tol, who=type(self).__name__)
        self.support_rows_ = np.arange(len(Kb))
        self.dual_coef_, self.intercept_ = sol.coef, float(sol.bias)
        progress.update(gap=self.dual_gap_)

    def _bag_cross(self, X: Any, lists: list[np.ndarray]) -> np.ndarray:
        raise NotImplementedError

    def decision_function(self, X: Any, bags: Any) -> np.ndarray:
        """Bag scores of the SVM, bags in the order of ``np.unique(bags)`` (or of the given index arrays)."""
        self._check_fitted()
        lists, _ = _bag_lists(bags, _n_rows(X))
        return self._decide(self._bag_cross(X, lists))


def _n_rows(X: Any) -> int:
    return len(X) if hasattr(X, "__len__") else np.shape(X)[0]


class NSK(_BagSVM):
    __doc__ = f"""The normalized set kernel SVM (Gärtner et al. 2002): one C-SVC over bags.

    ``k_NSK(X, Y) = sum_{{x in X, y in Y}} k(x, y) / (n(X) n(Y))`` on the average of the instance kernels, with the
    normalization ``n`` chosen by ``normalization`` (see :mod:`multikernel.iokl.set_kernels`).  ``fit(X, y, bags)``
    like the other MIL baselines.

    Parameters
    ----------
    kernels : str, list of KernelBuilder or None, default=None
        The instance kernels (``None``: the four of :func:`~multikernel.iokl.default_kernels`), averaged.
    normalization : {{"featurespace", "averaging", "none"}}, default="featurespace"
        ``n(X) = sqrt(k_set(X, X))`` (every bag of unit norm in the feature space, Gärtner et al.'s normalized
        kernel; it needs the kernels within each test bag, so instance features and ``normalize="none"``),
        ``|X|`` (the kernel of the bags' mean embeddings, as
        :class:`~multikernel.iokl.baselines.MIKernelSVM`), or 1 (the plain sum, which grows with the bag sizes).
    {_COMMON_DOC}

    Attributes
    ----------
    {_ATTRIBUTES_DOC}
    bag_index_ : ndarray of int, shape (n_train_instances,)
        The training bag of each training instance.
    bag_norms_ : ndarray of shape (n_train_bags,)
        ``n(X)`` of each training bag.

    References
    ----------
    {_GAERTNER}.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "normalization": [Options("featurespace", "averaging", "none")], "tol": [Real(low=0)]}

    def __init__(self, kernels: Any = None, normalization: str = "featurespace", C: float = 10.0,
                 tol: float = 1e-3, verbose: int = 0, kernel_params: dict[str, Any] | None = None,
                 normalize: str = "none", standardize: bool = False, kernel_dtype: str = "float64",
                 kernel_backend: str = "dense", memory_budget: int | str | None = None) -> None:
        super().__init__(kernels=kernels, C=C, tol=tol, verbose=verbose, kernel_params=kernel_params,
                         normalize=normalize, standardize=standardize, kernel_dtype=kernel_dtype,
                         kernel_backend=kernel_backend, memory_budget=memory_budget)
        self.normalization = normalization

    def _check_params(self) -> None:
        if self.normalization == "featurespace" and (self._precomputed or self.normalize != "none"):
            raise ValueError("NSK: normalization='featurespace' computes the kernel within each test bag from the "
                             "instance kernels' builders, so it needs instance features and normalize='none' "
                             f"(got kernels={self.kernels!r}, normalize={self.normalize!r}); or use "
                             "normalization='averaging' or 'none'")

    def _alternate(self, K: np.ndarray, lists: list[np.ndarray], yb: np.ndarray, progress: FitProgress) -> None:
        self.bag_index_ = np.empty(len(K), dtype=np.intp)
        for i, b in enumerate(lists):
            self.bag_index_[b] = i
        raw = unit_kernel(units(lists, len(K), "sum"), K)
        self.bag_norms_ = self._norms(lists, np.diag(raw))
        self._fit_bag_svm(raw / np.outer(self.bag_norms_, self.bag_norms_), yb, progress)

    def _norms(self, lists: list[np.ndarray], self_kernels: np.ndarray) -> np.ndarray:
        if self.normalization == "averaging":
            return np.array([len(b) for b in lists], dtype=np.float64)
        if self.normalization == "none":
            return np.ones(len(lists))
        # a bag whose instances the kernel maps to 0 keeps its zero row (as the cosine kernel does)
        norms = np.sqrt(np.maximum(self_kernels, 0.0))
        return np.where(norms > 0, norms, np.inf)

    def _bag_cross(self, X: Any, lists: list[np.ndarray]) -> np.ndarray:
        K = self._cross(X)
        train = [np.flatnonzero(self.bag_index_ == i) for i in range(len(self.bag_norms_))]
        raw = unit_kernel(units(lists, len(K), "sum"), K, units(train, K.shape[1], "sum"))
        within = self._within_bags(X, lists) if self.normalization == "featurespace" else None
        return raw / np.outer(self._norms(lists, within), self.bag_norms_)

    def _within_bags(self, X: Any, lists: list[np.ndarray]) -> np.ndarray:
        """``k_set(X, X)`` of each test bag: its instance kernels (each builder given the bag as its training
        features, with the parameters fitted on the training set), averaged."""
        Z = self.kernel_set_._standardized(validate_data(self, X, dtype=np.float64, reset=False))
        out = np.zeros(len(lists))
        for builder in self.kernel_set_.builders:
            if not hasattr(builder, "set_training_features"):
                raise ValueError(f"NSK: normalization='featurespace' needs the kernel between new instances, which "
                                 f"the builder {builder.describe()} cannot give; use normalization='averaging'")
            within = copy.copy(builder)
            for i, b in enumerate(lists):
                within.set_training_features(Z[b])
                out[i] += within.transform(Z[b]).sum()
        return out / len(self.kernel_set_.builders)

    def _check_loaded(self) -> None:
        super()._check_loaded()
        if len(self.bag_norms_) != len(self.dual_coef_) or self.bag_index_.max(initial=-1) >= len(self.bag_norms_):
            raise ValueError(f"{len(self.bag_norms_)} bag norms and bag indices up to {self.bag_index_.max()} "
                             f"for {len(self.dual_coef_)} training bags")


class STK(_BagSVM):
    __doc__ = f"""The statistics kernel SVM (Gärtner et al. 2002): one C-SVC over the bags' feature minima and maxima.

    Each bag becomes ``s(X)`` (each feature's minimum, then its maximum, over the bag's instances: see
    :func:`bag_statistics`); the kernels compare these vectors.  ``fit(X, y, bags)`` like the other MIL
    baselines; the instances must be features (the statistics are not defined on kernels).

    Parameters
    ----------
    kernels : str, list of KernelBuilder or None, default=None
        The kernels on the statistics (``None``: ``poly`` with ``degree=3``, ``gamma`` one over the number of
        statistics, ``coef0=1``); several are averaged.
    {_COMMON_DOC.replace("memory_budget", "memory_budget (of the statistics)")}
        ``standardize`` defaults to True here: the statistics are standardized on the training bags, so that a
        polynomial kernel of them stays within floating point.

    Attributes
    ----------
    {_ATTRIBUTES_DOC}
    n_features_in_ : int
        The instances' features (the statistics have twice as many).

    References
    ----------
    {_GAERTNER}.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {"tol": [Real(low=0)]}

    def __init__(self, kernels: Any = None, C: float = 10.0, tol: float = 1e-3, verbose: int = 0,
                 kernel_params: dict[str, Any] | None = None, normalize: str = "none", standardize: bool = True,
                 kernel_dtype: str = "float64", kernel_backend: str = "dense",
                 memory_budget: int | str | None = None) -> None:
        # the same parameters as NSK's but standardize: the statistics of raw features span orders of magnitude
        super().__init__(kernels=kernels, C=C, tol=tol, verbose=verbose, kernel_params=kernel_params,
                         normalize=normalize, standardize=standardize, kernel_dtype=kernel_dtype,
                         kernel_backend=kernel_backend, memory_budget=memory_budget)

    def _check_params(self) -> None:
        if self._precomputed:
            raise ValueError("STK: the statistics kernel is computed from each bag's feature minima and maxima, so it "
                             "needs instance features; kernels='precomputed' cannot be used (NSK takes kernels)")

    def _builders(self, n_features: int) -> list[KernelBuilder]:
        if self.kernels is None:
            return [get_registry().create("kernel", "poly", degree=3, gamma=1.0 / n_features, coef0=1.0)]
        return super()._builders(n_features)

    def fit(self, X: Any, y: Any, bags: Any) -> STK:
        """Fit on the instances of labelled bags.

        Parameters
        ----------
        X : array-like of shape (n_instances, n_features)
        y : array-like of shape (n_instances,) or (n_bags,)
            The bag labels (two classes): one per instance (constant within a bag) or one per bag.
        bags : array-like of shape (n_instances,), or a list of index arrays
            The bag of each instance.

        Returns
        -------
        self
        """
        with self._fit_context(total=1, desc="STK: SVM fit") as progress:
            self._require_y(y)
            X = validate_data(self, X, dtype=np.float64)
            lists, yb = self._bag_targets(y, bags, len(X))
            S = bag_statistics(X, lists)
            self.kernel_set_ = KernelSet(self._builders(S.shape[1]), normalize=self.normalize,
                                         dtype=self.kernel_dtype, backend=self.kernel_backend,
                                         memory_budget=self.memory_budget, standardize=self.standardize)
            stack = self.kernel_set_.fit_stack(S)
            self.kernel_names_ = self.kernel_set_.describe()
            Kb = np.asarray(stack.combine(np.full(stack.n_kernels, 1.0 / stack.n_kernels)), dtype=np.float64)
            self._fit_bag_svm(Kb, yb, progress)
        return self

    def _bag_cross(self, X: Any, lists: list[np.ndarray]) -> np.ndarray:
        X = validate_data(self, X, dtype=np.float64, reset=False)
        cross = self.kernel_set_.cross_stack(bag_statistics(X, lists))
        return np.asarray(cross.combine(np.full(cross.n_kernels, 1.0 / cross.n_kernels)))
