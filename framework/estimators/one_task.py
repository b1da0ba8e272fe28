"""What the regression and one-class estimators add to the fit core
(:class:`~multikernel.estimators.mkl_core.MKLEstimator`): the loss's kind of targets, their own loss parameters,
and the decoding of the one decision path."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from multikernel.core.registry import get_registry
from multikernel.solve.fit import Parts, Targets, decision_values

__all__ = ["TaskMixin"]


class TaskMixin:
    """Mixed in before :class:`~multikernel.estimators.mkl_core.MKLEstimator` by an estimator of another task.

    A subclass sets ``target_kind`` (the :attr:`~multikernel.SampleLoss.target_kind` its loss must have),
    ``target_kinds`` (the :class:`~multikernel.Targets` kinds it fits) and ``_loss_params`` (its own parameters
    that are the loss's, such as ``epsilon`` or ``nu``).
    """

    target_kind: ClassVar[str]

    def _loss_params(self) -> dict[str, Any]:
        return {}

    def _parts(self) -> Parts:
        parts = super()._parts()  # type: ignore[misc]
        loss = parts.loss
        if getattr(loss, "target_kind", "labels") != self.target_kind:
            fitting = sorted(n for n in get_registry().names("loss")
                             if getattr(get_registry().get("loss", n), "target_kind", "") == self.target_kind)
            raise ValueError(f"{type(self).__name__} needs a loss for {self.target_kind} targets "
                             f"({', '.join(fitting)}); loss {loss.name!r} is for "
                             f"{getattr(loss, 'target_kind', 'labels')} targets")
        for key, value in self._loss_params().items():
            name = key.partition("__")[2]
            if name not in loss.get_params(deep=False):
                raise ValueError(f"{name} is not a parameter of loss {loss.name!r}; leave it None with this loss")
            loss.set_params(**{name: value})
        return parts

    def _scores(self, X: Any) -> np.ndarray:
        """The decision values ``sum_m w_m K_m(x, .) c + b`` on ``X``: shape (n_samples, n_blocks).

        With one weight vector the sum over the training samples runs in the same order for every row (not
        through BLAS, whose blocking depends on the number of rows): a one-class SVM puts its free support vectors
        exactly on the boundary, so a rounding difference between a batch and one of its rows would flip them.
        """
        self._check_fitted()  # type: ignore[attr-defined]
        weights = np.atleast_2d(self.weights_)  # type: ignore[attr-defined]
        cross = self._cross_stack(X)  # type: ignore[attr-defined]
        if len(weights) > 1:
            return decision_values(cross, weights, self.dual_coef_, self.intercept_)  # type: ignore[attr-defined]
        return np.einsum("ij,tj->it", cross.combine(weights[0]), self.dual_coef_) + self.intercept_  # type: ignore[attr-defined]

    def _decode(self, scores: np.ndarray) -> np.ndarray:
        return Targets(self.target_type_, np.empty(0), np.empty((0, 0))).decode(scores)  # type: ignore[attr-defined]
