"""A fitted set of kernel builders with a normalization: features -> train stack and cross stacks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from multikernel.interfaces import KernelBuilder
from multikernel.stack import DenseStack

__all__ = ["KernelSet", "NORMALIZATIONS"]

NORMALIZATIONS = ("none", "trace", "unit_diagonal")


class KernelSet:
    """Builds the training stack and, with the same fitted parameters, the cross stacks.

    Parameters
    ----------
    builders : sequence of KernelBuilder
        Unfitted builders; they are fitted on the training features in :meth:`fit_stack`.
    normalize : {"none", "trace", "unit_diagonal"}
        ``"trace"`` scales each kernel so that its training trace equals n (mean diagonal 1);
        ``"unit_diagonal"`` is the cosine normalization ``K_ij / sqrt(K_ii K_jj)``. The constants are
        fitted on the training kernel and applied to the cross kernels.
    dtype : {"float64", "float32"}
        Storage precision of the stacks.
    """

    def __init__(self, builders: Sequence[KernelBuilder], normalize: str = "none",
                 dtype: str = "float64") -> None:
        if normalize not in NORMALIZATIONS:
            raise ValueError(f"normalize must be one of {NORMALIZATIONS}; got {normalize!r}")
        if not builders:
            raise ValueError("at least one kernel builder is needed")
        self.builders = list(builders)
        self.normalize = normalize
        self.dtype = np.dtype(dtype)

    def fit_stack(self, X: np.ndarray) -> DenseStack:
        """Fit every builder on ``X`` and return the train x train stack."""
        n = len(X)
        data = np.empty((len(self.builders), n, n), dtype=self.dtype)
        self.scale_: list[float] = []
        self.train_diag_: list[np.ndarray] = []
        for m, b in enumerate(self.builders):
            K = b.fit_transform(X)
            diag = np.diag(K).copy()
            self.train_diag_.append(diag)
            data[m] = self._normalize(K, diag, diag, m, fitting=True)
        return DenseStack(data)

    def cross_stack(self, X: np.ndarray) -> DenseStack:
        """The cross stack between ``X`` and the training features, shape (M, len(X), n_train)."""
        n_train = len(self.train_diag_[0])
        data = np.empty((len(self.builders), len(X), n_train), dtype=self.dtype)
        for m, b in enumerate(self.builders):
            K = b.transform(X)
            row_diag = None
            if self.normalize == "unit_diagonal":
                row_diag = _self_similarity(b, X)
            data[m] = self._normalize(K, row_diag, self.train_diag_[m], m, fitting=False)
        return DenseStack(data)

    def _normalize(self, K: np.ndarray, row_diag: np.ndarray | None, col_diag: np.ndarray, m: int,
                   fitting: bool) -> np.ndarray:
        if self.normalize == "none":
            return K
        if self.normalize == "trace":
            if fitting:
                tr = float(np.trace(K))
                self.scale_.append(len(K) / tr if tr > 0 else 1.0)
            return K * self.scale_[m]
        denom = np.sqrt(np.outer(np.maximum(row_diag, 1e-300), np.maximum(col_diag, 1e-300)))
        return K / denom

    def describe(self) -> list[str]:
        return [b.describe() for b in self.builders]


def _self_similarity(builder: KernelBuilder, X: np.ndarray) -> np.ndarray:
    """``k(x_i, x_i)`` for each row of X, through the builder's own kernel."""
    return np.array([builder._kernel(row[None, :], row[None, :])[0, 0]  # type: ignore[attr-defined]
                     for row in builder._select(X)])  # type: ignore[attr-defined]
