"""What the MKL estimators of the fit core share: :class:`MKLEstimator`.

The classifier (:class:`~multikernel.MKLClassifier`), the regressor and the one-class estimator are one fit core
(a stack of kernels, a sample loss, a regularizer of the weights, an outer solver) with different targets.  This
base holds that core; a subclass says which kinds of :class:`~multikernel.Targets` it fits (``target_kinds``),
how it encodes ``y`` (``_encode_targets``) and what it adds to the fitted state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from multikernel.core.interfaces import Component, KernelBuilder
from multikernel.core.validation import Constraint, Integer, NoneValue, Options, Plugin, Real
from multikernel.estimators.base import FittedSpec, MultikernelEstimator
from multikernel.estimators.kernel_input import KERNEL_INPUT_FITTED, KernelInputMixin, check_loaded_kernel_input
from multikernel.solve.fit import FittedMKL, Parts, SolveSettings, Targets, build_parts, fit_mkl

__all__ = ["MKLEstimator", "MKL_CONSTRAINTS"]


#: The parameters every MKL estimator of the fit core shares.
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


class MKLEstimator(KernelInputMixin, MultikernelEstimator):
    """The fit core as an estimator: kernel weights and the loss's SVM on their combination.

    Not used directly: :class:`~multikernel.MKLClassifier`, :class:`~multikernel.MKLRegressor` and
    :class:`~multikernel.MKLOneClass` are its estimators.  The parameters set here are the ones all three take
    (see :class:`~multikernel.MKLClassifier` for their meaning); a subclass adds its own (``C``, ``multiclass``,
    ``epsilon``, ``nu``) in its ``__init__``, which scikit-learn's ``get_params`` reads.
    """

    #: The kinds of :class:`~multikernel.Targets` the estimator fits (and a loaded model may carry).
    target_kinds: ClassVar[tuple[str, ...]] = ()

    # The fit core reads these; an estimator without them among its parameters (one-class: one block, the
    # loss's own parameters) keeps these values.
    C: float | None = None
    multiclass: str = "ovr"

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = MKL_CONSTRAINTS
    _fitted_schema: ClassVar[dict[str, FittedSpec]] = {
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
        warm_start: bool = False,
        n_jobs: int | None = None,
        verbose: int = 0,
    ) -> None:
        self.kernels = kernels
        self.kernel_params = kernel_params
        self.normalize = normalize
        self.standardize = standardize
        self.method = method
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
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.verbose = verbose

    # ------------------------------------------------------------------------------------------
    # parts and parameters
    # ------------------------------------------------------------------------------------------
    def _parts(self) -> Parts:
        if self.C is not None and isinstance(self.loss, Component):
            raise ValueError(f"C is given twice: {type(self).__name__}(C={self.C!r}) and the loss instance "
                             f"{type(self.loss).__name__}(C={getattr(self.loss, 'C', '?')!r}); set it in one "
                             f"place (C=None keeps the loss's value)")
        return build_parts(self.method, self.loss, self.regularizer, self.solver,
                           params=None if self.C is None else {"C": self.C})

    # ------------------------------------------------------------------------------------------
    # fit
    # ------------------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any) -> MKLEstimator:
        """Fit kernel weights and the SVM(s).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or a precomputed stack (see ``kernels``)
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)

        Returns
        -------
        self
        """
        with self._fit_context(total=self.max_iter, desc=f"{type(self).__name__}: {self.method} outer iterations") \
                as progress:
            parts = self._parts()
            warm = self._warm_fit()
            self._require_y(y)
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
        """The fit core's targets of ``y``, of one of ``target_kinds``."""
        raise NotImplementedError

    def _warm_fit(self) -> FittedMKL | None:
        if not (self.warm_start and hasattr(self, "results_") and hasattr(self, "_targets")):
            return None
        return FittedMKL(targets=self._targets, results=self.results_, shared=self._shared)

    def _store(self, fitted: FittedMKL) -> None:
        t = fitted.targets
        self._targets, self._shared = t, fitted.shared
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

    # ------------------------------------------------------------------------------------------
    # persistence
    # ------------------------------------------------------------------------------------------
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
        if self.target_type_ not in self.target_kinds:
            raise ValueError(f"unknown target type {self.target_type_!r} for {type(self).__name__} (one of "
                             f"{', '.join(self.target_kinds)})")
