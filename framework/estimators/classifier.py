"""The scikit-learn estimator: :class:`MKLClassifier`, a thin layer over the fit core."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from sklearn.base import ClassifierMixin

from multikernel.core.interfaces import Component, KernelBuilder
from multikernel.core.validation import Constraint, Integer, NoneValue, Options, Plugin, Real
from multikernel.estimators.base import FittedSpec, MultikernelEstimator
from multikernel.estimators.kernel_input import KERNEL_INPUT_FITTED, KernelInputMixin, check_loaded_kernel_input
from multikernel.solve.fit import (
    FittedMKL,
    Parts,
    SolveSettings,
    Targets,
    build_parts,
    decision_values,
    encode_targets,
    fit_mkl,
)

__all__ = ["MKLClassifier"]


#: The parameters every MKL estimator of the fit core shares (the classifier, and the regression and one-class
#: estimators built on it).
MKL_CONSTRAINTS: dict[str, list[Constraint]] = {
    "method": [Plugin("method", instances=False)],
    "C": [Real(low=0), NoneValue()],
    "loss": [Plugin("loss"), NoneValue()],
    "regularizer": [Plugin("regularizer"), NoneValue()],
    "solver": [Plugin("solver"), NoneValue()],
    "tol": [Real(low=0)],
    "max_iter": [Integer(low=1)],
    "inner_tol": [Real(low=0)],
    "stopping": [Options("gap", "relative_change")],
    "multiclass": [Options("ovr", "shared")],
    "n_jobs": [Integer(), NoneValue()],
    "verbose": [Integer(low=0)],
}


class MKLClassifier(KernelInputMixin, ClassifierMixin, MultikernelEstimator):
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

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = MKL_CONSTRAINTS
    _fitted_schema: ClassVar[dict[str, FittedSpec]] = {
        "classes_": FittedSpec("labels", (1,)),
        "target_type_": FittedSpec("text", (0,)),
        "weights_": FittedSpec("real", (1, 2)),
        "dual_coef_": FittedSpec("real", (2,)),
        "intercept_": FittedSpec("real", (1,)),
        "n_iter_": FittedSpec("int", (0, 1)),
        "objective_": FittedSpec("real", (0, 1)),
        "dual_gap_": FittedSpec("real", (0, 1)),
        "support_": FittedSpec("int", (1,)),
        **KERNEL_INPUT_FITTED,
    }

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
        self.kernels = kernels
        self.kernel_params = kernel_params
        self.normalize = normalize
        self.standardize = standardize
        self.method = method
        self.C = C
        self.loss = loss
        self.regularizer = regularizer
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.inner_tol = inner_tol
        self.stopping = stopping
        self.kernel_dtype = kernel_dtype
        self.kernel_backend = kernel_backend
        self.memory_budget = memory_budget
        self.cache_size = cache_size
        self.multiclass = multiclass
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.verbose = verbose

    # ------------------------------------------------------------------------------------------
    # parts and parameters
    # ------------------------------------------------------------------------------------------
    def _parts(self) -> Parts:
        if self.C is not None and isinstance(self.loss, Component):
            raise ValueError(f"C is given twice: MKLClassifier(C={self.C!r}) and the loss instance "
                             f"{type(self.loss).__name__}(C={getattr(self.loss, 'C', '?')!r}); set it in one "
                             f"place (C=None keeps the loss's value)")
        return build_parts(self.method, self.loss, self.regularizer, self.solver,
                           params=None if self.C is None else {"C": self.C})

    # ------------------------------------------------------------------------------------------
    # fit / predict
    # ------------------------------------------------------------------------------------------
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
        with self._fit_context(total=self.max_iter, desc=f"{type(self).__name__}: {self.method} outer iterations") \
                as progress:
            parts = self._parts()
            warm = self._warm_fit()
            if y is None:
                raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
            stack, y = self._fit_stack(X, y, first_weights=None if warm is not None else parts.regularizer.initial)
            if len(y) != stack.n_rows:
                raise ValueError(f"X has {stack.n_rows} samples but y has {len(y)} labels")
            targets = self._encode_targets(y)
            if self.multiclass == "ovr" and targets.n_blocks > 1 and parts.solver.samples_blocks:
                raise ValueError(f"solver {parts.solver.name!r} samples the {targets.kind} blocks of one problem "
                                 f"with shared kernel weights; with multiclass='ovr' every block has its own weights "
                                 f"and nothing is sampled: set multiclass='shared' (or choose another solver)")
            settings = self._settings()
            if warm is not None and not (warm.targets.kind == targets.kind and
                                         np.array_equal(warm.targets.blocks, targets.blocks)):
                warm = None  # other data: nothing to start from
            fitted = fit_mkl(stack, targets, parts, settings, shared=self.multiclass == "shared", warm=warm,
                             n_jobs=self.n_jobs, callback=progress.as_callback() if self.verbose else None)
            self._store(fitted)
        return self

    def _settings(self) -> SolveSettings:
        """The outer loop's settings of a fit (a subclass may change how it computes, e.g. ``one_pass``)."""
        return SolveSettings(tol=self.tol, max_iter=self.max_iter, inner_tol=self.inner_tol, stopping=self.stopping)

    def _encode_targets(self, y: Any) -> Targets:
        """The fit core's targets of ``y`` (a subclass for another task encodes its own targets here)."""
        return encode_targets(y)

    def _warm_fit(self) -> FittedMKL | None:
        if not (self.warm_start and hasattr(self, "results_") and hasattr(self, "_targets")):
            return None
        return FittedMKL(targets=self._targets, results=self.results_, shared=self._shared)

    def _store(self, fitted: FittedMKL) -> None:
        t = fitted.targets
        self._targets, self._shared = t, fitted.shared
        self.classes_ = t.classes
        self.target_type_ = t.kind
        self.results_ = fitted.results
        single = len(fitted.results) == 1
        self.weights_ = fitted.weights[0] if single else fitted.weights
        self.dual_coef_ = fitted.coef
        self.intercept_ = fitted.bias
        self.n_iter_ = int(fitted.n_iter[0]) if single else fitted.n_iter
        self.objective_ = float(fitted.objective[0]) if single else fitted.objective
        self.dual_gap_ = float(fitted.dual_gap[0]) if single else fitted.dual_gap
        self.support_ = np.flatnonzero(np.any(self.dual_coef_ != 0, axis=0))

    def _kernel_set_options(self) -> dict[str, Any]:
        return {"cache_size": self.cache_size}

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

    def _restore_unsaved(self) -> None:
        self.results_ = []  # the solvers' histories are not saved

    def _check_loaded(self) -> None:
        check_loaded_kernel_input(self, self.dual_coef_.shape[1])
        weights = np.atleast_2d(self.weights_)
        n_kernels = len(self.kernel_names_)
        if weights.shape[1] != n_kernels or self.dual_coef_.shape[0] != len(self.intercept_) or \
                weights.shape[0] not in (1, self.dual_coef_.shape[0]):
            raise ValueError(f"weights of shape {weights.shape}, dual coefficients {self.dual_coef_.shape} and "
                             f"{len(self.intercept_)} intercepts for {n_kernels} kernels do not fit together")
        if self.target_type_ not in ("binary", "multiclass", "multilabel"):
            raise ValueError(f"unknown target type {self.target_type_!r}")

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()  # pairwise in the precomputed mode: KernelInputMixin
        tags.classifier_tags.multi_label = True
        tags.target_tags.multi_output = True
        return tags
