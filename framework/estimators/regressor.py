"""MKL regression: :class:`MKLRegressor`, the classifier's fit core with real targets and a regression loss."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from sklearn.base import RegressorMixin

from multikernel.core.validation import Constraint, NoneValue, Real
from multikernel.estimators.mkl_core import MKLEstimator
from multikernel.estimators.one_task import TaskMixin
from multikernel.solve.fit import Parts, Targets, encode_targets

__all__ = ["MKLRegressor"]


class MKLRegressor(TaskMixin, RegressorMixin, MKLEstimator):
    """Multiple kernel learning regression: kernel weights and an epsilon-SVR (or kernel ridge) on their combination.

    The fit core of :class:`~multikernel.MKLClassifier` with real targets: the method names the regularizer of
    the weights and the outer solver (``"l1mkl"``: the simplex, SimpleMKL's regression; ``"lpmkl"``, ``"sgmkl"``,
    ``"sm1mkl"``, ``"average"``, ... every preset but the classification-only ``smo_mkl`` and ``easymkl``), the
    ``loss`` the inner problem, and every solver reports its certified duality gap.  Several outputs (a 2-D ``y``)
    are one problem each (``multiclass="ovr"``, their own weights) or share the weights (``"shared"``).
    ``score`` is R^2.

    Parameters
    ----------
    loss : {"epsilon_insensitive", "squared"} or SampleLoss, default="epsilon_insensitive"
        The epsilon-SVR (``C sum max(0, |y - f| - epsilon)``) or kernel ridge regression (``C/2 sum (y - f)^2``,
        with an intercept); a loss instance of either, or any loss whose ``target_kind`` is ``"continuous"``.
    C : float, optional
        The loss's ``C`` (``None`` keeps the loss's own value, 1.0 for the built-ins).
    epsilon : float, optional
        The half-width of the epsilon-SVR's tube, in the units of ``y`` (``None`` keeps the loss's, 0.1); only for
        the epsilon-insensitive loss.
    **others
        Every other parameter is :class:`~multikernel.MKLClassifier`'s (``kernels``, ``method``, ``regularizer``,
        ``solver``, ``tol``, ``max_iter``, ``verbose``, ...), with the same meaning; ``multiclass`` applies to
        several outputs.

    Attributes
    ----------
    target_type_ : {"continuous", "continuous-multioutput"}
    weights_, dual_coef_, intercept_, n_iter_, objective_, dual_gap_, support_, kernel_names_, results_
        As for :class:`~multikernel.MKLClassifier`; ``dual_coef_`` holds ``a - a*`` of the SVR (or the ridge's
        coefficients), one row per output.
    """

    target_kind: ClassVar[str] = "continuous"
    target_kinds: ClassVar[tuple[str, ...]] = ("continuous", "continuous-multioutput")
    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {"epsilon": [Real(low=0, closed="left"),
                                                                                  NoneValue()]}

    def __init__(self, kernels: Any = "rbf_poly", kernel_params: dict[str, Any] | None = None,
                 normalize: str = "trace", standardize: bool = False, method: str = "l1mkl", C: float | None = None,
                 epsilon: float | None = None, loss: Any = "epsilon_insensitive", regularizer: Any = None,
                 solver: Any = None, tol: float = 1e-3, max_iter: int = 200, inner_tol: float = 1e-3,
                 stopping: str = "gap", kernel_dtype: str = "float64", kernel_backend: str = "dense",
                 memory_budget: int | str | None = None, cache_size: float = 200.0, multiclass: str = "ovr",
                 warm_start: bool = False, n_jobs: int | None = None, verbose: int = 0) -> None:
        super().__init__(kernels=kernels, kernel_params=kernel_params, normalize=normalize, standardize=standardize,
                         method=method, loss=loss, regularizer=regularizer, solver=solver, tol=tol,
                         max_iter=max_iter, inner_tol=inner_tol, stopping=stopping, kernel_dtype=kernel_dtype,
                         kernel_backend=kernel_backend, memory_budget=memory_budget, cache_size=cache_size,
                         warm_start=warm_start, n_jobs=n_jobs, verbose=verbose)
        self.C = C
        self.epsilon = epsilon
        self.multiclass = multiclass

    def _loss_params(self) -> dict[str, Any]:
        return {} if self.epsilon is None else {"loss__epsilon": self.epsilon}

    def _parts(self) -> Parts:
        if self.epsilon is not None and not isinstance(self.loss, str | type(None)):
            raise ValueError(f"epsilon is given twice: {type(self).__name__}(epsilon={self.epsilon!r}) and the loss "
                             f"instance {type(self.loss).__name__}; set it in one place")
        return super()._parts()

    def _encode_targets(self, y: Any) -> Targets:
        return encode_targets(y, task="regression")

    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets: shape (n_samples,), or (n_samples, n_outputs) for a 2-D ``y``."""
        return self._decode(self._scores(X))

    @property
    def decision_function(self) -> Any:
        """A regressor has none (scikit-learn's convention: ``hasattr`` is False); use :meth:`predict`."""
        raise AttributeError(f"{type(self).__name__} has no decision_function; predict gives the fitted values")

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.classifier_tags = None
        tags.target_tags.multi_output = True
        return tags
