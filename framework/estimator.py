"""The scikit-learn estimator: :class:`MKLClassifier`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data
from tqdm.auto import tqdm

from multikernel.capabilities import check_compatible
from multikernel.interfaces import Component, KernelBuilder, MKLProblem, MKLResult
from multikernel.kernelset import KernelSet
from multikernel.registry import get_registry
from multikernel.stack import DenseStack, KernelStack

__all__ = ["MKLClassifier"]


class MKLClassifier(ClassifierMixin, BaseEstimator):
    """Multiple kernel learning classifier.

    Learns kernel weights ``mu`` and an SVM on the combined kernel ``sum_m mu_m K_m``.  The method
    (``"average"``, ``"l1mkl"``, ... see ``multikernel plugins``) is a preset of a sample loss, a
    regularizer of the weights and an outer solver; any part can be overridden.

    Parameters
    ----------
    kernels : str or list of KernelBuilder, default="rbf_poly"
        A registered kernel family name, a list of (unfitted) kernel builders, or ``"precomputed"``:
        then ``X`` given to ``fit`` is a stack of shape (M, n_samples, n_samples) and ``X`` given to
        ``predict`` a cross stack of shape (M, n_test, n_train).
    kernel_params : dict, optional
        Parameters of the kernel family.
    normalize : {"none", "trace", "unit_diagonal", "center"}, default="trace"
        Normalization of each base kernel, fitted on the training kernel.
    standardize : bool, default=False
        Standardize each feature (mean and scale of the training features) before building kernels; the
        same transform is applied at prediction, and saved with the model.
    method : str, default="l1mkl"
        A registered method name.
    C : float, default=1.0
        SVM misclassification cost, set on the loss.
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
    kernel_backend : {"dense", "memmap", "lazy", "auto"}, default="dense"
        Storage of the kernel stack: in memory, memory-mapped on disk, or recomputed from the features by
        blocks (for stacks that do not fit in memory); ``"auto"`` picks the first that fits the budget.
    memory_budget : int or str, optional
        Bytes (or a string such as ``"4GB"``) the stack may use; the dense backend refuses a stack over
        the budget before allocating it, naming the alternatives. Default: the available memory.
    multiclass : {"ovr", "shared"}, default="ovr"
        With more than two classes: ``"ovr"`` learns one-vs-rest problems each with its own kernel weights;
        ``"shared"`` learns one set of weights for all one-vs-rest problems, their objectives summed.
    n_jobs : int, optional
        Parallel binary problems in one-vs-rest multi-class fits (joblib, threads: the stack is shared).
    verbose : int, default=0
        ``>= 1`` shows a progress bar of the outer iterations with the current duality gap.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    weights_ : ndarray of shape (n_kernels,) or (n_classes, n_kernels)
        Kernel weights (one row per class in one-vs-rest multi-class fits).
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
        Full outer-solver results (histories included), one per binary problem.
    """

    def __init__(
        self,
        kernels: str | Sequence[KernelBuilder] = "rbf_poly",
        kernel_params: dict[str, Any] | None = None,
        normalize: str = "trace",
        standardize: bool = False,
        method: str = "l1mkl",
        C: float = 1.0,
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
        multiclass: str = "ovr",
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
        self.multiclass = multiclass
        self.n_jobs = n_jobs
        self.verbose = verbose

    # ------------------------------------------------------------------------------------------
    # parts
    # ------------------------------------------------------------------------------------------
    def _parts(self) -> tuple[Component, Component, Component]:
        registry = get_registry()
        method = registry.get("method", self.method)
        loss = _make_part("loss", self.loss, method.loss, method.loss_params)
        if "C" in loss.get_params(deep=False):
            loss.set_params(C=self.C)
        regularizer = _make_part("regularizer", self.regularizer, method.regularizer,
                                 method.regularizer_params)
        solver = _make_part("solver", self.solver, method.solver, method.solver_params)
        check_compatible(regularizer, solver)
        return loss, regularizer, solver

    def _builders(self, n_features: int) -> list[KernelBuilder]:
        if isinstance(self.kernels, str):
            family = get_registry().get("family", self.kernels)
            return list(family(n_features, **(self.kernel_params or {})))
        builders = list(self.kernels)
        for b in builders:
            if not isinstance(b, KernelBuilder):
                raise TypeError(f"kernels must be a family name, 'precomputed' or a list of KernelBuilder "
                                f"instances; got an element of type {type(b).__name__}")
        return [clone(b) for b in builders]

    def _check_params(self) -> None:
        if not (isinstance(self.C, (int, float)) and np.isfinite(self.C) and self.C > 0):
            raise ValueError(f"C must be a positive finite number; got {self.C!r}")
        if not (self.tol > 0):
            raise ValueError(f"tol must be positive; got {self.tol!r}")
        if not (isinstance(self.max_iter, (int, np.integer)) and self.max_iter >= 1):
            raise ValueError(f"max_iter must be a positive integer; got {self.max_iter!r}")
        if self.standardize and self._precomputed:
            raise ValueError("standardize=True needs features; it cannot apply to precomputed kernels")
        if self.multiclass not in ("ovr", "shared"):
            raise ValueError(f"multiclass must be 'ovr' or 'shared'; got {self.multiclass!r}")
        if self.stopping not in ("gap", "relative_change"):
            raise ValueError(f"stopping must be 'gap' or 'relative_change'; got {self.stopping!r}")

    # ------------------------------------------------------------------------------------------
    # fit / predict
    # ------------------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any) -> MKLClassifier:
        """Fit kernel weights and the SVM.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (M, n_samples, n_samples) if precomputed
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        start = time.perf_counter()
        self._check_params()
        parts = self._parts()
        if self._precomputed:
            stack, y = self._precomputed_stack(X, y)
            self.kernel_set_ = None
            self.kernel_names_ = [f"K{m}" for m in range(stack.n_kernels)]
        else:
            X, y = validate_data(self, X, y, dtype=np.float64)
            X = self._fit_standardize(X)
            builders = self._builders(X.shape[1])
            self.kernel_set_ = KernelSet(builders, normalize=self.normalize, dtype=self.kernel_dtype,
                                         backend=self.kernel_backend, memory_budget=self.memory_budget)
            stack = self.kernel_set_.fit_stack(X)
            self.kernel_names_ = self.kernel_set_.describe()
        check_classification_targets(y)
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"y has 1 class ({self.classes_[0]!r}); a classifier needs at least "
                             f"two classes")
        targets = ([np.where(y_idx == 1, 1.0, -1.0)] if len(self.classes_) == 2 else
                   [np.where(y_idx == k, 1.0, -1.0) for k in range(len(self.classes_))])
        if self.multiclass == "shared" and len(targets) > 1:
            self._store_shared(self._solve_shared(stack, np.array(targets), parts))
        else:
            results = Parallel(n_jobs=self.n_jobs, prefer="threads")(
                delayed(self._solve_binary)(stack, yb, parts) for yb in targets)
            self._store(results)
        self.fit_time_ = time.perf_counter() - start
        return self

    @property
    def _precomputed(self) -> bool:
        return isinstance(self.kernels, str) and self.kernels == "precomputed"

    def _precomputed_stack(self, X: Any, y: Any) -> tuple[KernelStack, np.ndarray]:
        if isinstance(X, KernelStack):
            stack = X
        else:
            arr = np.asarray(X)
            if arr.ndim != 3 or arr.shape[1] != arr.shape[2]:
                raise ValueError(f"with kernels='precomputed', X must be a stack of shape (M, n, n); got "
                                 f"shape {arr.shape}")
            if not np.all(np.isfinite(arr)):
                raise ValueError("the precomputed kernel stack contains NaN or infinite values")
            stack = DenseStack(arr)
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != stack.n_rows:
            raise ValueError(f"y must have one label per sample ({stack.n_rows}); got shape {y.shape}")
        self.n_train_ = stack.n_rows
        return stack, y

    def _solve_binary(self, stack: KernelStack, y: np.ndarray, parts: tuple) -> MKLResult:
        loss, regularizer, solver = (clone(p) for p in parts)
        problem = MKLProblem(stack=stack, y=y, loss=loss, regularizer=regularizer, tol=self.tol,
                             max_iter=self.max_iter, inner_tol=self.inner_tol, stopping=self.stopping)
        return self._run(solver, problem)

    def _run(self, solver: Component, problem: MKLProblem) -> MKLResult:
        if not self.verbose:
            return solver.solve(problem)
        with tqdm(total=self.max_iter, desc=f"{self.method} outer iterations", unit="it", leave=False) as bar:
            def progress(entry: dict[str, Any]) -> None:
                bar.update()
                bar.set_postfix(gap=f"{entry['gap']:.2e}", kernels=entry["n_selected"])

            problem.callback = progress
            return solver.solve(problem)

    def _solve_shared(self, stack: KernelStack, Y: np.ndarray, parts: tuple) -> MKLResult:
        loss, regularizer, solver = (clone(p) for p in parts)
        problem = MKLProblem(stack=stack, y=Y, loss=loss, regularizer=regularizer, tol=self.tol,
                             max_iter=self.max_iter, inner_tol=self.inner_tol, stopping=self.stopping)
        return self._run(solver, problem)

    def _store_shared(self, result: MKLResult) -> None:
        """One weight vector for every class; per-class coefficients and intercepts."""
        n_classes = len(result.coef)
        per_class = [MKLResult(weights=result.weights, alpha=result.alpha[t], coef=result.coef[t],
                               bias=float(result.bias[t]), objective=result.objective,
                               lower_bound=result.lower_bound, dual_gap=result.dual_gap, n_iter=result.n_iter,
                               converged=result.converged, history=result.history) for t in range(n_classes)]
        self._store(per_class)
        self.weights_ = result.weights
        self.n_iter_, self.objective_, self.dual_gap_ = result.n_iter, result.objective, result.dual_gap
        self.results_ = [result]

    def _store(self, results: list[MKLResult]) -> None:
        self.results_ = results
        weights = np.array([r.weights for r in results])
        self.dual_coef_ = np.array([r.coef for r in results])
        self.intercept_ = np.array([r.bias for r in results], dtype=np.float64)
        n_iter = np.array([r.n_iter for r in results])
        objective = np.array([r.objective for r in results])
        gap = np.array([r.dual_gap for r in results])
        single = len(results) == 1
        self.weights_ = weights[0] if single else weights
        self.n_iter_ = int(n_iter[0]) if single else n_iter
        self.objective_ = float(objective[0]) if single else objective
        self.dual_gap_ = float(gap[0]) if single else gap
        self.support_ = np.flatnonzero(np.any(self.dual_coef_ != 0, axis=0))

    def _cross_stack(self, X: Any) -> KernelStack:
        if self._precomputed:
            if isinstance(X, KernelStack):
                return X
            arr = np.asarray(X)
            if arr.ndim != 3 or arr.shape[2] != self.n_train_ or arr.shape[0] != len(self.kernel_names_):
                raise ValueError(f"with kernels='precomputed', X must be a cross stack of shape "
                                 f"({len(self.kernel_names_)}, n_test, {self.n_train_}); got {arr.shape}")
            return DenseStack(arr)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if self.standardize:
            X = (X - self.feature_mean_) / self.feature_scale_
        return self.kernel_set_.cross_stack(X)

    def _fit_standardize(self, X: np.ndarray) -> np.ndarray:
        if not self.standardize:
            return X
        self.feature_mean_ = X.mean(axis=0)
        scale = X.std(axis=0)
        # Constant features stay constant instead of becoming NaN (as StandardScaler does).
        self.feature_scale_ = np.where(scale > 0, scale, 1.0)
        return (X - self.feature_mean_) / self.feature_scale_

    def decision_function(self, X: Any) -> np.ndarray:
        """Signed distance to the separating surface(s).

        Returns
        -------
        ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes)
        """
        check_is_fitted(self)
        cross = self._cross_stack(X)
        weights = np.atleast_2d(self.weights_)
        if len(weights) < len(self.dual_coef_):  # shared weights
            weights = np.repeat(weights, len(self.dual_coef_), axis=0)
        scores = np.column_stack([cross.combine(w) @ c + b
                                  for w, c, b in zip(weights, self.dual_coef_, self.intercept_, strict=True)])
        return scores[:, 0] if len(self.classes_) == 2 else scores

    def predict(self, X: Any) -> np.ndarray:
        """Predicted class labels."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    # ------------------------------------------------------------------------------------------
    # persistence
    # ------------------------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Save the fitted model to ``path`` (``.npz``: arrays, and JSON metadata; no pickled code)."""
        from multikernel.persistence import save_model

        save_model(self, path)

    @classmethod
    def load(cls, path: str | Path) -> MKLClassifier:
        """Load a model written by :meth:`save`."""
        from multikernel.persistence import load_model

        return load_model(path)

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self._precomputed
        return tags


def _make_part(kind: str, override: Any, default_name: str, default_params: dict[str, Any]) -> Any:
    registry = get_registry()
    if override is None:
        return registry.create(kind, default_name, **default_params)
    if isinstance(override, str):
        return registry.create(kind, override)
    if isinstance(override, Component):
        return clone(override)
    raise TypeError(f"{kind} must be None, a registered {kind} name or a plugin instance; got "
                    f"{type(override).__name__}")
