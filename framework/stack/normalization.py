"""Kernel normalizations, fitted on the training kernels and applied alike to train and cross kernels.

Every normalization is an affine map of each kernel entry with per-row and per-column constants, so a
lazy stack can normalize any block ``K_m[rows, cols]`` it computes:

==================  ==========================================================================
``none``            ``K``
``trace``           ``s_m K`` with ``s_m = n / tr(K_m^train)`` (mean training diagonal 1)
``unit_diagonal``   ``K(x, x') / sqrt(k(x, x) k(x', x'))`` (cosine normalization)
``center``          ``K(x, x') - r(x) - c(x') + g``: ``c`` the column means of the training kernel,
                    ``g`` their mean, ``r(x)`` the mean of ``x``'s row over the training samples
                    (``r = c`` for the training kernel), i.e. the kernel of the features centred
                    by the training mean in feature space
==================  ==========================================================================
"""

from __future__ import annotations

import attrs
import numpy as np

__all__ = ["NORMALIZATIONS", "Normalization"]

NORMALIZATIONS = ("none", "trace", "unit_diagonal", "center")

_TINY = 1e-300  # a zero self-similarity (a zero vector) must not divide by zero


def _row_blocks(K: np.ndarray, entries: int = 1 << 16) -> list[tuple[int, int]]:
    """Row ranges of ``K`` of about ``entries`` entries each (the temporaries of :meth:`Normalization.apply`)."""
    step = max(1, entries // max(K.shape[1], 1))
    return [(lo, min(lo + step, len(K))) for lo in range(0, len(K), step)]


@attrs.define(slots=False)
class Normalization:
    """Fitted constants of one normalization for a stack with ``M`` kernels.

    Row constants (``row_diag``, ``row_mean``) belong to the stack's rows (test samples for a cross
    stack), column constants to the training samples.  Arrays absent for a kind are ``None``.
    """

    kind: str = "none"
    scale: np.ndarray | None = None       # (M,)           trace
    row_diag: np.ndarray | None = None    # (M, n_rows)    unit_diagonal
    col_diag: np.ndarray | None = None    # (M, n_cols)    unit_diagonal
    row_mean: np.ndarray | None = None    # (M, n_rows)    center
    col_mean: np.ndarray | None = None    # (M, n_cols)    center
    grand: np.ndarray | None = None       # (M,)           center

    def __attrs_post_init__(self) -> None:
        if self.kind not in NORMALIZATIONS:
            raise ValueError(f"normalize must be one of {NORMALIZATIONS}; got {self.kind!r}")

    @property
    def needs_row_diag(self) -> bool:
        return self.kind == "unit_diagonal"

    @property
    def needs_row_mean(self) -> bool:
        return self.kind == "center"

    def apply(self, K: np.ndarray, m: int, rows: np.ndarray | slice = slice(None),
              cols: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Normalize, in place, the float64 block ``K = K_m[rows, cols]`` (indices into the stack's full
        rows and columns)."""
        if self.kind == "trace":
            K *= self.scale[m]
        elif self.kind == "unit_diagonal":
            rd = np.sqrt(np.maximum(self.row_diag[m][rows], _TINY))
            cd = np.sqrt(np.maximum(self.col_diag[m][cols], _TINY))
            # K_ij / (rd_i cd_j), one product per entry: a symmetric kernel stays exactly symmetric (the
            # product commutes; two divisions in turn would not), so the stack is known symmetric unchecked.
            for lo, hi in _row_blocks(K):
                K[lo:hi] /= rd[lo:hi, None] * cd[None, :]
        elif self.kind == "center":
            rm, cm = self.row_mean[m][rows], self.col_mean[m][cols]
            for lo, hi in _row_blocks(K):  # (r_i + c_j) commutes: exact symmetry, as above
                K[lo:hi] -= rm[lo:hi, None] + cm[None, :]
            K += self.grand[m]
        return K

    def apply_pairs(self, values: np.ndarray, m: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Normalize the entries ``K_m[rows[a], cols[a]]`` (a diagonal), in place."""
        if self.kind == "trace":
            values *= self.scale[m]
        elif self.kind == "unit_diagonal":
            values /= np.sqrt(np.maximum(self.row_diag[m][rows], _TINY)
                              * np.maximum(self.col_diag[m][cols], _TINY))
        elif self.kind == "center":
            values += self.grand[m] - self.row_mean[m][rows] - self.col_mean[m][cols]
        return values

    @classmethod
    def fit(cls, kind: str, diags: list[np.ndarray], col_means: list[np.ndarray] | None) -> Normalization:
        """Constants from the training kernels' diagonals (and column means, for ``center``)."""
        norm = cls(kind)
        if kind == "trace":
            traces = np.array([d.sum() for d in diags])
            n = len(diags[0]) if diags else 0
            norm.scale = np.where(traces > 0, n / np.where(traces > 0, traces, 1.0), 1.0)
        elif kind == "unit_diagonal":
            norm.col_diag = norm.row_diag = np.array(diags, dtype=np.float64)
        elif kind == "center":
            norm.col_mean = norm.row_mean = np.array(col_means, dtype=np.float64)
            norm.grand = norm.col_mean.mean(axis=1)
        return norm

    @classmethod
    def empty(cls, kind: str, M: int, n: int) -> Normalization:
        """Neutral constants for ``M`` kernels on ``n`` training samples, filled kernel by kernel as they are built."""
        norm = cls(kind)
        if kind == "trace":
            norm.scale = np.ones(M)
        elif kind == "unit_diagonal":
            norm.col_diag = norm.row_diag = np.ones((M, n))
        elif kind == "center":
            norm.col_mean = norm.row_mean = np.zeros((M, n))
            norm.grand = np.zeros(M)
        return norm

    def for_rows(self, row_diag: np.ndarray | None, row_mean: np.ndarray | None) -> Normalization:
        """The same training constants with new row constants (for a cross stack)."""
        return attrs.evolve(self, row_diag=row_diag if self.needs_row_diag else None,
                            row_mean=row_mean if self.needs_row_mean else None)
