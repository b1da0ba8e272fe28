"""One-class MKL: :class:`MKLOneClass`, novelty and outlier detection with learnt kernel weights."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from sklearn.base import OutlierMixin
from sklearn.utils.validation import _num_samples

from multikernel.core.validation import Constraint, NoneValue, Real
from multikernel.estimators.base import FittedSpec
from multikernel.estimators.mkl_core import MKLEstimator
from multikernel.estimators.one_task import TaskMixin
from multikernel.solve.fit import Targets
from multikernel.stack.storage import KernelStack

__all__ = ["MKLOneClass"]


class MKLOneClass(TaskMixin, OutlierMixin, MKLEstimator):
    """One-class multiple kernel learning: kernel weights and a nu one-class SVM on their combination.

    The fit core of :class:`~multikernel.MKLClassifier` without targets: the method names the regularizer of the
    weights and the outer solver (``"l1mkl"``: the simplex, SHOGUN's ``MKLOneClass``; ``"lpmkl"``, ``"sm1mkl"``,
    ``"average"``, ...), the inner problem is the nu one-class SVM, and every solver reports its certified gap.
    ``predict`` gives +1 (inlier: a non-negative decision value) or -1 (outlier).

    The inner objective (``-1/2 alpha'K alpha``) is negative: with a linear penalty of the weights and no bound
    on them (``gmkl_l1``) the MKL objective is 0 at zero weights or unbounded below, and where the optimum is 0
    (a linear kernel on centred data puts the origin in the data's hull) no *relative* gap can be certified.

    Parameters
    ----------
    nu : float, optional
        In (0, 1]: an upper bound on the fraction of training outliers and a lower bound on the fraction of
        support vectors (``None`` keeps the loss's own value, 0.5).
    loss : "one_class" or SampleLoss, default="one_class"
        The nu one-class SVM (or any loss whose ``target_kind`` is ``"one_class"``).
    **others
        Every other parameter is :class:`~multikernel.MKLClassifier`'s (``kernels``, ``method``, ``regularizer``,
        ``solver``, ``tol``, ``max_iter``, ``verbose``, ...), with the same meaning; there is no ``C``.

    Attributes
    ----------
    offset_ : float
        ``rho``: ``decision_function = score_samples - offset_``.
    weights_, dual_coef_, intercept_, n_iter_, objective_, dual_gap_, support_, kernel_names_, results_
        As for :class:`~multikernel.MKLClassifier`; ``dual_coef_`` is ``alpha`` (summing to 1), ``intercept_``
        is ``-rho``.  scikit-learn's ``OneClassSVM`` solves the same problem times ``nu n``: its decision values
        are these times ``nu n``.
    """

    target_kind: ClassVar[str] = "one_class"
    target_kinds: ClassVar[tuple[str, ...]] = ("one_class",)
    _fitted_schema: ClassVar[dict[str, FittedSpec]] = {**MKLEstimator._fitted_schema,
                                                       "offset_": FittedSpec("real", (0,))}
    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "nu": [Real(low=0, high=1, closed="right"), NoneValue()]}

    def __init__(self, kernels: Any = "rbf_poly", kernel_params: dict[str, Any] | None = None,
                 normalize: str = "trace", standardize: bool = False, method: str = "l1mkl", nu: float | None = None,
                 loss: Any = "one_class", regularizer: Any = None, solver: Any = None, tol: float = 1e-3,
                 max_iter: int = 200, inner_tol: float = 1e-3, stopping: str = "gap", kernel_dtype: str = "float64",
                 kernel_backend: str = "dense", memory_budget: int | str | None = None, cache_size: float = 200.0,
                 warm_start: bool = False, n_jobs: int | None = None, verbose: int = 0) -> None:
        super().__init__(kernels=kernels, kernel_params=kernel_params, normalize=normalize, standardize=standardize,
                         method=method, loss=loss, regularizer=regularizer, solver=solver, tol=tol,
                         max_iter=max_iter, inner_tol=inner_tol, stopping=stopping, kernel_dtype=kernel_dtype,
                         kernel_backend=kernel_backend, memory_budget=memory_budget, cache_size=cache_size,
                         warm_start=warm_start, n_jobs=n_jobs, verbose=verbose)
        self.nu = nu

    def _loss_params(self) -> dict[str, Any]:
        return {} if self.nu is None else {"loss__nu": self.nu}

    def fit(self, X: Any, y: Any = None) -> MKLOneClass:
        """Fit kernel weights and the one-class SVM on the training samples ``X`` (``y`` is ignored).

        Returns
        -------
        self
        """
        super().fit(X, np.ones(self._n_samples(X)))  # the classifier's fit core, with the targets of one class
        self.offset_ = float(-self.intercept_[0])
        return self

    def _n_samples(self, X: Any) -> int:
        """The training samples of ``X``: rows of features, or of a precomputed stack in either layout."""
        if isinstance(X, KernelStack):
            return X.n_rows
        shape = getattr(X, "shape", None)
        if self._precomputed and shape is not None and len(shape) == 3 and shape[1] == shape[2] != shape[0]:
            return int(shape[1])  # the library's layout (n_kernels, n, n)
        return _num_samples(X)

    def _encode_targets(self, y: Any) -> Targets:
        return Targets.one_class(len(y))

    def score_samples(self, X: Any) -> np.ndarray:
        """``sum_m w_m K_m(x, .) alpha``: larger for more typical samples, shape (n_samples,)."""
        return self._scores(X)[:, 0] + self.offset_

    def decision_function(self, X: Any) -> np.ndarray:
        """``score_samples(X) - offset_``: non-negative for inliers, negative for outliers, shape (n_samples,)."""
        return self._scores(X)[:, 0]

    def predict(self, X: Any) -> np.ndarray:
        """+1 for inliers, -1 for outliers."""
        return self._decode(self._scores(X))
