"""Kernel weights from centered kernel alignment: CKA and ALIGNF (Cortes, Mohri and Rostamizadeh, 2012).

With ``H = I - 11'/n`` the centering matrix, ``K^c = H K H`` and the target kernel ``yy'``, the centered
alignment of a kernel with the target is ``rho(K) = <K^c, yy'>_F / (||K^c||_F ||yy'^c||_F)``.

* ``cka`` ("align" in the paper) weights each kernel by its own alignment:
  ``mu_m ∝ max(a_m / ||K_m^c||_F, 0)`` with ``a_m = <K_m^c, yy'>_F = y_c' K_m y_c`` (``y_c = H y``).
* ``alignf`` maximises the alignment of the combined kernel, ``max_{||mu|| = 1, mu >= 0} rho(K(mu))``; its
  solution is ``mu = v / ||v||`` with ``v`` the solution of the quadratic program
  ``min_{v >= 0} v'Mv - 2 v'a``, ``M_kl = <K_k^c, K_l^c>_F`` (the paper's Proposition 9).  Without the
  constraint ``v >= 0`` the maximiser is ``M^{-1} a`` (MKLpy's ``CKA``), which can have negative weights
  and then an indefinite combined kernel; where ``M^{-1} a >= 0`` the two agree.

The weights are then scaled to sum 1 (the same direction), and the classifier is the loss's SVM on the
combined kernel.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import nnls

from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import Method, MKLProblem, Solver
from multikernel.plugins._weights_first import WeightsThenSVM, binary_target, on_simplex
from multikernel.stack.storage import KernelStack

__all__ = ["ALIGNFSolver", "CKASolver", "alignf_weights", "centered_alignments", "centered_gram", "cka_weights",
           "frobenius_gram"]

_CORTES2012 = ("Cortes, Mohri and Rostamizadeh, Algorithms for Learning Kernels Based on Centered Alignment, "
               "JMLR 13:795-828, 2012.")


def _centering_stats(stack: KernelStack) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per kernel: the row means (M, n), the grand mean (M,) and the squared Frobenius norm (M,)."""
    stack._check_square("centered alignment")
    M = stack.n_kernels
    rows = np.empty((M, stack.n_rows))
    frob = np.empty(M)
    for m in range(M):
        K = np.asarray(stack.kernel(m), dtype=np.float64)
        rows[m] = K.mean(axis=1)
        frob[m] = np.einsum("ij,ij->", K, K)
    return rows, rows.mean(axis=1), frob


def _target_alignments(stack: KernelStack, y: np.ndarray) -> np.ndarray:
    """``a_m = <K_m^c, yy'>_F = (Hy)' K_m (Hy)``, one pass over the stack."""
    return stack.quad_forms(y - y.mean())


#: Alignments (in [-1, 1]) at most this count as 0: a positive semi-definite kernel's alignment with the
#: labels is never negative, and one of exactly 0 comes out as rounding noise.
ALIGNMENT_FLOOR = 1e-10


def centered_alignments(stack: KernelStack, y: np.ndarray) -> np.ndarray:
    """Each kernel's centered alignment with ``yy'``: ``<K^c, yy'>_F / (||K^c||_F ||(yy')^c||_F)``, in [-1, 1]."""
    n = stack.n_rows
    rows, mean, frob = _centering_stats(stack)
    # ||HKH||_F^2 = ||K||_F^2 - 2 n ||r||^2 + n^2 s^2 (r the row means, s the grand mean)
    centered_norm = np.sqrt(np.maximum(frob - 2 * n * np.einsum("mi,mi->m", rows, rows) + n * n * mean**2, 0.0))
    yc = y - y.mean()
    a = _target_alignments(stack, y)
    return np.divide(a, centered_norm * (yc @ yc), out=np.zeros_like(a), where=centered_norm > 0)


def cka_weights(stack: KernelStack, y: np.ndarray) -> np.ndarray:
    """CKA's weights: each kernel's centered alignment with ``yy'`` (:func:`centered_alignments`), those not
    above 0 at 0, scaled to sum 1.

    Parameters
    ----------
    stack : KernelStack
        The M training kernels (square).
    y : ndarray of shape (n,)
        Targets in {-1, +1}.
    """
    return on_simplex(centered_alignments(stack, y), "cka", ALIGNMENT_FLOOR)


def frobenius_gram(stack: KernelStack) -> np.ndarray:
    """``G_kl = <K_k, K_l>_F`` for every pair of kernels (one matrix product over the flattened kernels)."""
    flat = np.stack([np.asarray(stack.kernel(m), dtype=np.float64).ravel() for m in range(stack.n_kernels)])
    return flat @ flat.T


def centered_gram(stack: KernelStack) -> np.ndarray:
    """``M_kl = <K_k^c, K_l^c>_F = <K_k, K_l>_F - 2 n r_k'r_l + n^2 s_k s_l`` for every pair of kernels."""
    n = stack.n_rows
    rows, mean, _ = _centering_stats(stack)
    return frobenius_gram(stack) - 2 * n * (rows @ rows.T) + n * n * np.outer(mean, mean)


def alignf_weights(stack: KernelStack, y: np.ndarray) -> np.ndarray:
    """ALIGNF's weights: ``argmin_{v >= 0} v'Mv - 2 v'a``, scaled to sum 1.

    The quadratic program is solved exactly as the non-negative least squares problem
    ``min_{v >= 0} ||R v - t||^2`` with ``M = R'R`` and ``R t = a`` (``R`` from the eigenvectors of ``M`` with
    positive eigenvalues; ``a`` lies in the range of ``M``, since ``a_k = <K_k^c, yy'^c>``), by the
    Lawson-Hanson active set method (:func:`scipy.optimize.nnls`).

    Parameters
    ----------
    stack : KernelStack
        The M training kernels (square).
    y : ndarray of shape (n,)
        Targets in {-1, +1}.
    """
    if not (centered_alignments(stack, y) > ALIGNMENT_FLOOR).any():
        raise ValueError("alignf scored no kernel above 0 (no centered kernel is aligned with the labels); use other "
                         "kernels or another method")
    Mat = centered_gram(stack)
    a = _target_alignments(stack, y)
    # The QP as it is, and in units of each centered kernel's norm (v_k = u_k / ||K_k^c||, the same problem with
    # a unit diagonal of M, where a kernel of small norm but high alignment stays above the eigenvalue cutoff);
    # near a flat optimum the two exact solves can differ, and the one of larger alignment is kept.
    norm = np.sqrt(np.maximum(np.diag(Mat), 0.0))
    unit = np.where(norm > 0, 1.0 / np.where(norm > 0, norm, 1.0), 0.0)
    candidates = [_nnls_alignment(Mat, a), _nnls_alignment(Mat * np.outer(unit, unit), a * unit) * unit]

    def alignment(v: np.ndarray) -> float:
        quad = float(v @ Mat @ v)
        return float(v @ a) / np.sqrt(quad) if quad > 0 else -np.inf

    return on_simplex(max(candidates, key=alignment), "alignf")


def _nnls_alignment(Mat: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``argmin_{v >= 0} v'Mv - 2 v'a`` as the least-squares problem ``min ||R v - t||`` with ``M = R'R``."""
    w, V = np.linalg.eigh(Mat)
    keep = w > max(w.max(), 0.0) * len(w) * np.finfo(float).eps
    if not keep.any():
        return np.zeros(len(a))
    R = np.sqrt(w[keep])[:, None] * V[:, keep].T
    t = (V[:, keep].T @ a) / np.sqrt(w[keep])
    return nnls(R, t, maxiter=50 * len(a))[0]


class CKASolver(WeightsThenSVM):
    """CKA: each kernel weighted by its centered alignment with the target (:func:`cka_weights`), then the
    loss's SVM on the combined kernel."""

    name = "cka"
    replaces_objective = "weights from each kernel's centered alignment with the labels, then one SVM"

    def weights(self, problem: MKLProblem) -> tuple[np.ndarray, int]:
        return cka_weights(problem.stack, binary_target(problem, self.name)), 0


class ALIGNFSolver(WeightsThenSVM):
    """ALIGNF: the weights that maximise the combined kernel's centered alignment with the target (one
    non-negative quadratic program, :func:`alignf_weights`), then the loss's SVM on the combined kernel."""

    name = "alignf"
    replaces_objective = "weights maximising the combined kernel's centered alignment (one QP), then one SVM"

    def weights(self, problem: MKLProblem) -> tuple[np.ndarray, int]:
        return alignf_weights(problem.stack, binary_target(problem, self.name)), 0


METHODS = (
    Method(name="cka", summary="CKA: each kernel weighted by its centered alignment with the labels, then one SVM.",
           loss="csvc", regularizer="simplex", solver="cka", citation=_CORTES2012 + " (align)"),
    Method(name="alignf",
           summary="ALIGNF: weights maximising the combined kernel's centered alignment with the labels (one QP), "
                   "then one SVM.",
           loss="csvc", regularizer="simplex", solver="alignf", citation=_CORTES2012 + " (alignf)"),
)


@hookimpl
def multikernel_solvers() -> dict[str, type[Solver]]:
    return {CKASolver.name: CKASolver, ALIGNFSolver.name: ALIGNFSolver}


@hookimpl
def multikernel_methods() -> dict[str, Method]:
    return {m.name: m for m in METHODS}
