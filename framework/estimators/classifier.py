"""The scikit-learn estimator: :class:`MKLClassifier`, a thin layer over the fit core."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from sklearn.base import ClassifierMixin

from multikernel.core.interfaces import Component, KernelBuilder
from multikernel.estimators.base import FittedSpec
from multikernel.estimators.mkl_core import MKL_CONSTRAINTS, MKLEstimator
from multikernel.solve.fit import FittedMKL, Targets, decision_values, encode_targets

__all__ = ["MKLClassifier", "MKL_CONSTRAINTS"]


class MKLClassifier(ClassifierMixin, MKLEstimator):
    """Multiple kernel learning classifier.

    Learns kernel weights ``mu`` and an SVM on the combined kernel ``sum_m mu_m K_m``.  The method
    (``"average"``, ``"l1mkl"``, ... see ``multikernel plugins``) is a preset of a sample loss, a
    regularizer of the weights and an outer solver; any part can be overridden.  Binary, multi-class and
    multi-label (a 0/1 label-indicator ``y``) targets are supported.

    Parameters
    ----------
    kernels : str or list of KernelBuilder, default="rbf_poly"
        A registered kernel family name, a registered kernel builder name (one kernel, with ``kernel_params``),
        a list of (unfitted) kernel builders, or ``"precomputed"``: then
        ``X`` is a stack of precomputed kernels, of shape (n_samples, n_train, n_kernels) (the layout
        scikit-learn's cross-validation splits, so ``cross_val_score`` and ``GridSearchCV`` work), or
        (n_kernels, n_samples, n_train) (the library's own layout, used without a copy; recognised when the
        last two axes have the training size and the first does not), or a single (n_samples, n_train)
        kernel, or a :class:`~multikernel.stack.storage.KernelStack`.  ``fit`` takes the train x train kernels,
        ``predict`` the test x train kernels in the same layout.
    kernel_params : dict, optional
        Parameters of the kernel family.
    normalize : {"none", "trace", "unit_diagonal", "center"}, default="trace"
        Normalization of each base kernel, fitted on the training kernel.
    standardize : bool, default=False
        Standardize each feature (mean and scale of the training features) before building kernels; the
        same transform is applied at prediction, and saved with the model.
    method : str, default="l1mkl"
        A registered method name.
    C : float, optional
        SVM misclassification cost: the loss's ``C``.  ``None`` (default) keeps the loss's own value (1.0 for
        the built-in losses, or the ``C`` of a ``loss`` instance, so ``GridSearchCV`` may search ``loss__C``).
        Giving both ``C`` and a loss instance is an error: ``C`` has one place.
    loss, regularizer, solver : None, str or plugin instance
        Override the method's part: a registered name, or an instance (its parameters are then
        reachable as nested parameters, e.g. ``regularizer__theta`` in a grid search).
    tol : float, default=1e-3
        Stopping tolerance: certified relative duality gap (``stopping="gap"``) or relative objective
        change (``stopping="relative_change"``, the rule of the original authors' code).
    max_iter : int, default=200
        Maximum number of outer iterations.
    inner_tol : float, default=1e-3
        KKT tolerance of each inner SVM solve.
    stopping : {"gap", "relative_change"}, default="gap"
    kernel_dtype : {"float64", "float32"}, default="float64"
        Storage precision of the kernel stack.
    kernel_backend : {"dense", "memmap", "lazy", "factored", "auto"}, default="dense"
        Storage of the kernel stack: in memory, memory-mapped on disk, recomputed from the features by
        blocks (for stacks that do not fit in memory), or factored (each kernel dense or low-rank on the
        distinct points of its features, the truncation inside the certified gap; docs/kernels.md);
        ``"auto"`` is factored where that halves the memory, else the first that fits the budget.
    memory_budget : int or str, optional
        Bytes (or a string such as ``"4GB"``) the stack may use; the dense backend refuses a stack over
        the budget before allocating it, naming the alternatives. Default: the available memory.
    cache_size : float, default=200
        Megabytes of kernel columns the inner SMO keeps for a lazy stack (as libsvm's ``cache_size``): with
        ``kernel_backend="lazy"`` no n x n matrix is formed, so a fit's memory is bounded by this cache.
    multiclass : {"ovr", "shared"}, default="ovr"
        With more than two classes (or labels): ``"ovr"`` learns one-vs-rest problems each with its own kernel
        weights; ``"shared"`` learns one set of weights for all of them, their objectives summed (the sum form
        of multi-class and multi-label MKL).  ``method="ml_mkl_sa"`` solves that shared problem by sampling one
        class or label per step (ML-MKL-SA) and needs ``"shared"``.
    warm_start : bool, default=False
        Start the next ``fit`` from this fit's weights and dual variables (same data, other parameters: a
        path over ``C`` or a regularizer parameter).  Weights outside a changed domain are projected onto it.
    n_jobs : int, optional
        Parallel binary problems in one-vs-rest fits (joblib, threads: the stack is shared).
    verbose : int, default=0
        ``>= 1`` shows the outer iterations with the current duality gap: a progress bar on a terminal, a log line
        per tenth of ``max_iter`` elsewhere.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels; the label indices 0..L-1 for a label-indicator ``y``.
    target_type_ : {"binary", "multiclass", "multilabel"}
    weights_ : ndarray of shape (n_kernels,) or (n_classes, n_kernels)
        Kernel weights (one row per class or label in one-vs-rest fits).
    dual_coef_ : ndarray of shape (n_problems, n_train)
        ``alpha_i y_i`` of each binary problem.
    intercept_ : ndarray of shape (n_problems,)
    n_iter_ : int or ndarray
        Outer iterations.
    objective_ : float or ndarray
        Primal objective at the returned weights.
    dual_gap_ : float or ndarray
        Certified relative duality gap.
    support_ : ndarray
        Indices of training samples with a non-zero coefficient in some binary problem.
    kernel_names_ : list of str
        A label per base kernel.
    fit_time_ : float
        Wall-clock seconds of ``fit`` (kernels included).
    results_ : list of MKLResult
        Full outer-solver results (histories included), one per outer problem (empty after :meth:`load`).
    n_features_in_ : int
        Number of features (of training samples, with precomputed kernels).
    feature_names_in_ : ndarray of str
        Feature names, when ``X`` is a DataFrame with string column names.
    """

    target_kinds: ClassVar[tuple[str, ...]] = ("binary", "multiclass", "multilabel")
    _fitted_schema: ClassVar[dict[str, FittedSpec]] = {"classes_": FittedSpec("labels", (1,)),
                                                       **MKLEstimator._fitted_schema}

    def __init__(
        self,
        kernels: str | Sequence[KernelBuilder] = "rbf_poly",
        kernel_params: dict[str, Any] | None = None,
        normalize: str = "trace",
        standardize: bool = False,
        method: str = "l1mkl",
        C: float | None = None,
        loss: str | Component | None = None,
        regularizer: str | Component | None = None,
        solver: str | Component | None = None,
        tol: float = 1e-3,
        max_iter: int = 200,
        inner_tol: float = 1e-3,
        stopping: str = "gap",
        kernel_dtype: str = "float64",
        kernel_backend: str = "dense",
        memory_budget: int | str | None = None,
        cache_size: float = 200.0,
        multiclass: str = "ovr",
        warm_start: bool = False,
        n_jobs: int | None = None,
        verbose: int = 0,
    ) -> None:
        super().__init__(kernels=kernels, kernel_params=kernel_params, normalize=normalize, standardize=standardize,
                         method=method, loss=loss, regularizer=regularizer, solver=solver, tol=tol,
                         max_iter=max_iter, inner_tol=inner_tol, stopping=stopping, kernel_dtype=kernel_dtype,
                         kernel_backend=kernel_backend, memory_budget=memory_budget, cache_size=cache_size,
                         warm_start=warm_start, n_jobs=n_jobs, verbose=verbose)
        self.C = C
        self.multiclass = multiclass

    def fit(self, X: Any, y: Any) -> MKLClassifier:
        """Fit kernel weights and the SVM(s).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or a precomputed stack (see ``kernels``)
        y : array-like of shape (n_samples,), or a 0/1 label-indicator matrix (n_samples, n_labels)

        Returns
        -------
        self
        """
        return super().fit(X, y)

    def _encode_targets(self, y: Any) -> Targets:
        return encode_targets(y)

    def _store(self, fitted: FittedMKL) -> None:
        super()._store(fitted)
        self.classes_ = fitted.targets.classes

    def decision_function(self, X: Any) -> np.ndarray:
        """Signed distance to the separating surface(s).

        Returns
        -------
        ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes) (or (n_samples, n_labels))
        """
        self._check_fitted()
        weights = np.atleast_2d(self.weights_)
        scores = decision_values(self._cross_stack(X), weights, self.dual_coef_, self.intercept_)
        return scores[:, 0] if self.target_type_ == "binary" else scores

    def predict(self, X: Any) -> np.ndarray:
        """Predicted class labels (a 0/1 indicator matrix for multi-label targets)."""
        scores = self.decision_function(X)
        return Targets(self.target_type_, self.classes_, np.empty((0, 0))).decode(scores.reshape(len(scores), -1))

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()  # pairwise in the precomputed mode: KernelInputMixin
        tags.classifier_tags.multi_label = True
        tags.target_tags.multi_output = True
        return tags
