"""Smoothing regularization of Kobayashi (2014), section 3.3: Laplacians on the rows and columns of ``W``.

Problem (22) adds ``C_w/2 tr(W_w' L_w W_w) + C_h/2 tr(W_h' L_h W_h)`` to the factored objective; it equals the
base problem on ``Xbar_i = A_h X_i A_w`` with ``A = (I + C L)^(-1/2)`` (eq. 24), and the learnt ``Wbar`` maps
back to ``W = A_h Wbar A_w`` (so that ``<Wbar, Xbar_i> = <W, X_i>``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse
from scipy.sparse.csgraph import laplacian
from sklearn.neighbors import kneighbors_graph

from multikernel.core.validation import check_positive_integer

__all__ = ["check_laplacian", "smoothing_transform", "second_difference_laplacian", "knn_laplacian"]


def check_laplacian(L: object, size: int, name: str) -> np.ndarray:
    """``L`` as a dense symmetric PSD ``(size, size)`` array, or a ``ValueError`` saying what is wrong."""
    if scipy.sparse.issparse(L):
        L = L.toarray()
    L = np.asarray(L, dtype=np.float64)
    if L.ndim != 2 or L.shape != (size, size):
        raise ValueError(f"{name} must be a square matrix of shape ({size}, {size}) to match the samples; "
                         f"got shape {L.shape}")
    if not np.isfinite(L).all():
        raise ValueError(f"{name} has non-finite entries")
    scale = max(np.abs(L).max(initial=0.0), 1.0)
    if not np.allclose(L, L.T, rtol=0, atol=1e-10 * scale):
        raise ValueError(f"{name} must be symmetric; pass (L + L.T) / 2 if the asymmetry is rounding")
    low = float(np.linalg.eigvalsh((L + L.T) / 2).min(initial=0.0))
    if low < -1e-9 * scale:
        raise ValueError(f"{name} must be positive semi-definite (a graph Laplacian or D'D); its smallest "
                         f"eigenvalue is {low:.3g}")
    return (L + L.T) / 2


def _inverse_sqrt_shift(L: np.ndarray, weight: float | None) -> np.ndarray:
    """``(I + c L)^(-1/2)`` with ``c = weight``, by default ``1 / ||L||_2`` (the paper's balance rule)."""
    lam, V = np.linalg.eigh(L)
    lam = np.clip(lam, 0.0, None)
    top = lam.max(initial=0.0)
    if weight is None:
        weight = 1.0 / top if top > 0 else 0.0
    return (V / np.sqrt(1.0 + weight * lam)) @ V.T


def smoothing_transform(row_laplacian: np.ndarray | None, col_laplacian: np.ndarray | None, shape: tuple,
                        row_weight: float | None = None, col_weight: float | None = None,
                        ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The matrices ``A_h`` (``(h, h)``) and ``A_w`` (``(w, w)``) of eq. (24), ``None`` for a side without a Laplacian.

    The weights default to ``1 / ||L||_2`` (so ``||C L||_2 = 1``); ``0`` disables a side.
    """
    h, w = shape
    A_h = A_w = None
    if row_laplacian is not None:
        A_h = _inverse_sqrt_shift(check_laplacian(row_laplacian, h, "row_laplacian"), row_weight)
    if col_laplacian is not None:
        A_w = _inverse_sqrt_shift(check_laplacian(col_laplacian, w, "col_laplacian"), col_weight)
    return A_h, A_w


def second_difference_laplacian(size: int) -> np.ndarray:
    """``D'D`` with ``D`` the ``(size - 2, size)`` second-difference operator (rows ``[-1, 2, -1]``, interior only).

    ``tr(W' L W) = sum_{t, r} (-w_{t-1,r} + 2 w_{t,r} - w_{t+1,r})^2``; constant and linear columns are free.
    """
    size = check_positive_integer("size", size)
    if size < 3:
        raise ValueError(f"a second-difference Laplacian needs size >= 3; got {size}")
    D = np.zeros((size - 2, size))
    idx = np.arange(size - 2)
    D[idx, idx], D[idx, idx + 1], D[idx, idx + 2] = -1.0, 2.0, -1.0
    return D.T @ D


def knn_laplacian(points: np.ndarray, n_neighbors: int = 10) -> np.ndarray:
    """Graph Laplacian ``D - A`` of the symmetric binary ``n_neighbors``-NN graph of ``points`` (rows)."""
    A = kneighbors_graph(np.asarray(points, dtype=np.float64), n_neighbors, mode="connectivity")
    A = A.maximum(A.T)
    return laplacian(A).toarray()
