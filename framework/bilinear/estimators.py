"""scikit-learn estimators for matrix-valued samples ``X`` of shape ``(n, h, w)``.

- :class:`BilinearClassifier`: the trace-norm bilinear classifier of Kobayashi (2014) by the convex
  reformulation (:func:`multikernel.bilinear.solver.fit_trace_norm`), with the optional smoothing of section 3.3.
- :class:`BilinearSVMClassifier`: the baselines, the alternating bilinear SVM of Pirsiavash et al. (2009)
  with a hard rank ``k``, and (``rank=None``) the linear SVM on ``vec(X)``.

Both are one-vs-rest for more than two classes (argmax of the scores) and keep each class's ``W`` as
factors ``W = W_h W_w'``, so a decision costs ``rank x (h + w)`` stored numbers instead of ``h x w``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.validation import column_or_1d

from multikernel.bilinear.smoothing import smoothing_transform
from multikernel.bilinear.solver import best_bias, fit_trace_norm, psd_factor
from multikernel.core.validation import (
    Constraint,
    InstanceOf,
    Integer,
    NoneValue,
    Real,
    check_class_labels,
    shown,
)
from multikernel.estimators.base import FittedSpec, MultikernelEstimator
from multikernel.estimators.progress import FitProgress
from multikernel.solve.smo import solve_qp

__all__ = ["BilinearClassifier", "BilinearSVMClassifier", "check_matrix_samples"]

#: The largest absolute entry of a matrix sample the solvers take: the learnt kernel holds products of two
#: entries summed over a sample, and beyond about 1e100 the SMO's gradients and the certificate's eigenvalues
#: lose every digit (at 1e30 the SMO did not terminate; at 1e150 the products overflow).
_MAX_ENTRY = 1e100


def check_matrix_samples(X: object, shape: tuple | None = None) -> np.ndarray:
    """``X`` as a finite float64 array of shape ``(n, h, w)`` (and ``(h, w) == shape`` when given)."""
    X = np.asarray(X)
    if X.dtype == object or not np.issubdtype(X.dtype, np.number) or X.dtype.kind == "c":
        raise ValueError(f"X must be a real numeric array of shape (n_samples, h, w); got dtype {X.dtype}")
    if X.ndim != 3:
        hint = (" (a 2-D X of vectors: reshape each row to its matrix form, e.g. X.reshape(n, h, w))"
                if X.ndim == 2 else "")
        raise ValueError(f"X must be 3-D, of shape (n_samples, h, w); got {X.ndim}-D shape {X.shape}{hint}")
    if min(X.shape) == 0:
        raise ValueError(f"X must have at least one sample and non-empty matrices; got shape {X.shape}")
    X = X.astype(np.float64, copy=False)
    if not np.isfinite(X).all():
        raise ValueError("X contains NaN or infinite values")
    top = float(np.abs(X).max())
    if top > _MAX_ENTRY:
        raise ValueError(f"X has entries up to {top:.3g} in absolute value, beyond what the solvers resolve "
                         f"({_MAX_ENTRY:g}); rescale X (for example divide it by its largest absolute value)")
    if shape is not None and X.shape[1:] != tuple(shape):
        raise ValueError(f"X has matrices of shape {X.shape[1:]}; this model was fitted on {tuple(shape)}")
    return X


def encode_class_labels(y: Any, n_samples: int, owner: str) -> tuple[np.ndarray, np.ndarray]:
    """``(classes, codes)`` of class labels ``y`` (one per sample, at least two classes), with the library's
    messages for every bad ``y``."""
    if y is None:
        raise ValueError(f"{owner} requires y to be passed, but the target y is None")
    if np.ndim(y) == 2 and np.shape(y)[1] == 1:
        y = column_or_1d(y, warn=True)  # a column vector: scikit-learn's DataConversionWarning
    y = check_class_labels(y)
    if y.shape[0] != n_samples:
        raise ValueError(f"y has {y.shape[0]} labels for {n_samples} samples; give one label per sample")
    if y.dtype.kind == "f" and not np.all(y == np.round(y)):
        raise ValueError("Unknown label type: y holds continuous values; a classifier needs class labels")
    encoder = LabelEncoder().fit(y)
    if encoder.classes_.size < 2:
        raise ValueError(f"y has one class ({shown(encoder.classes_[0])!r}); a classifier needs at least two")
    return encoder.classes_, encoder.transform(y)


def _numerical_rank(W: np.ndarray, rtol: float = 1e-6) -> int:
    s = np.linalg.svd(W, compute_uv=False)
    return int((s > rtol * s.max()).sum()) if s.size and s.max() > 0 else 0


class OneVsRestPredictMixin:
    """``predict`` from ``decision_function``: one score column per one-vs-rest problem (one column, as a
    vector, for two classes) and ``classes_``."""

    def predict(self, X: object) -> np.ndarray:
        """Class labels: the sign for two classes, the argmax of the one-vs-rest scores otherwise."""
        scores = self.decision_function(X)
        if self.classes_.size == 2:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]


class _MatrixClassifier(OneVsRestPredictMixin, ClassifierMixin, MultikernelEstimator):
    """Validation, one-vs-rest split, orientation, progress and low-rank decision shared by the bilinear
    estimators.

    Ctrl-C keeps the one-vs-rest problems solved so far, the current one at its last accepted iterate, and the
    remaining ones at their starting point (the linear SVM on ``vec(X)``, one SVM solve each).
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "C": [Real(low=0)],
        "tol": [Real(low=0)],
        "max_iter": [Integer(low=1)],
        "inner_tol": [Real(low=0)],
        "verbose": [Integer(low=0)],
    }
    _fitted_schema: ClassVar[dict[str, FittedSpec] | None] = {
        "classes_": FittedSpec("labels", (1,)),
        "input_shape_": FittedSpec("int", (1,)),
        "transposed_": FittedSpec("int", (0,)),
        "row_factors_": FittedSpec("any"),
        "col_factors_": FittedSpec("any"),
        "intercept_": FittedSpec("real", (1,)),
        "rank_": FittedSpec("int", (1,)),
        "n_iter_": FittedSpec("int", (1,)),
        "fit_info_": FittedSpec("any"),
        "n_features_in_": FittedSpec("int", (0,)),
        "dual_gap_": FittedSpec("real", (1,), required=False),
        "objective_": FittedSpec("real", (1,)),
    }

    def _fit_binary(self, X: np.ndarray, y: np.ndarray, max_iter: int,
                    on_step: Callable[[Callable[[], tuple]], None] | None) -> tuple:
        """Fit one problem on ``X`` (n, h, w) with ``w <= h`` in at most ``max_iter`` iterations (0: the start);
        return ``(W_h, W_w, b, info)``.  ``on_step(snapshot)`` after every iteration, ``snapshot()`` giving that
        iterate's ``(W_h, W_w, b, info)``."""
        raise NotImplementedError

    def _prepare(self, X: np.ndarray) -> np.ndarray:
        """Training-time transform of the (oriented) samples; the identity by default."""
        return X

    def fit(self, X: object, y: object) -> _MatrixClassifier:
        """Fit on matrices ``X`` of shape ``(n, h, w)`` and labels ``y`` (any type, two or more classes).

        Parameters
        ----------
        X : array-like of shape (n_samples, h, w)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        with self._fit_context(total=self.max_iter, desc=f"{type(self).__name__} iterations") as progress:
            X = check_matrix_samples(X)
            self.classes_, codes = encode_class_labels(y, X.shape[0], type(self).__name__)
            self.input_shape_ = (int(X.shape[1]), int(X.shape[2]))
            self.n_features_in_ = int(X.shape[1] * X.shape[2])
            # the learnt (w, w) matrix lives on the smaller side (spec: transpose if h < w)
            self.transposed_ = bool(X.shape[1] < X.shape[2])
            Xo = np.ascontiguousarray(X.transpose(0, 2, 1)) if self.transposed_ else X
            Xo = self._prepare(Xo)
            targets = [codes == 1] if self.classes_.size == 2 else [codes == k for k in range(self.classes_.size)]
            signs = [np.where(positive, 1.0, -1.0) for positive in targets]
            fits: list[tuple] = []
            for yb in signs:
                def on_step(snapshot: Callable[[], tuple], progress: FitProgress = progress) -> None:
                    done = list(fits)
                    progress.update(keep=lambda: self._store(done + [snapshot()] + [
                        self._fit_binary(Xo, s, 0, None) for s in signs[len(done) + 1:]]))

                fits.append(self._fit_binary(Xo, yb, self.max_iter, on_step))
            self._store(fits)
        return self

    def _store(self, fits: list[tuple]) -> None:
        row, col, bias, info = [], [], [], []
        for Wh, Ww, b, extra in fits:
            if self.transposed_:
                Wh, Ww = Ww, Wh
            row.append(Wh)
            col.append(Ww)
            bias.append(b)
            info.append(extra)
        self.row_factors_, self.col_factors_ = row, col
        self.intercept_ = np.asarray(bias, dtype=np.float64)
        # numerical rank of each W (singular values above 1e-6 of the largest), comparable across methods
        self.rank_ = np.array([_numerical_rank(Wh @ Ww.T) for Wh, Ww in zip(row, col, strict=True)])
        self.fit_info_ = info
        self.n_iter_ = np.array([extra.get("n_iter", 0) for extra in info])
        self.objective_ = np.array([extra.get("primal", extra.get("objective", np.nan)) for extra in info],
                                   dtype=np.float64)

    @property
    def coef_(self) -> np.ndarray:
        """The full weights ``W`` of each one-vs-rest problem, shape ``(n_problems, h, w)``."""
        self._check_fitted()
        return np.stack([Wh @ Ww.T for Wh, Ww in zip(self.row_factors_, self.col_factors_, strict=True)])

    def decision_function(self, X: object) -> np.ndarray:
        """``tr(W' X) + b`` by the factors: ``sum_r W_h[:, r]' X W_w[:, r]``; shape (n,) for two classes."""
        self._check_fitted()
        X = check_matrix_samples(X, self.input_shape_)
        n, h, w = X.shape
        scores = np.empty((n, len(self.row_factors_)))
        for k, (Wh, Ww) in enumerate(zip(self.row_factors_, self.col_factors_, strict=True)):
            # (n h, w) x (w, r) then contract with W_h: O(n h w r) flops, r (h + w) stored weights
            XW = (X.reshape(n * h, w) @ Ww).reshape(n, h * Ww.shape[1])
            scores[:, k] = XW @ Wh.ravel() + self.intercept_[k]
        return scores[:, 0] if self.classes_.size == 2 else scores

    def _check_loaded(self) -> None:
        h, w = (int(d) for d in self.input_shape_) if len(self.input_shape_) == 2 else (0, 0)
        n_problems = 1 if len(self.classes_) == 2 else len(self.classes_)
        if not (h and w and len(self.row_factors_) == len(self.col_factors_) == len(self.intercept_) == n_problems):
            raise ValueError(f"{len(self.row_factors_)} factors and {len(self.intercept_)} intercepts for "
                             f"{len(self.classes_)} classes and samples of shape {tuple(self.input_shape_)}")
        for Wh, Ww in zip(self.row_factors_, self.col_factors_, strict=True):
            Wh, Ww = np.asarray(Wh), np.asarray(Ww)
            if Wh.dtype.kind != "f" or Ww.dtype.kind != "f" or Wh.ndim != 2 or Ww.ndim != 2 or \
                    Wh.shape[0] != h or Ww.shape[0] != w or Wh.shape[1] != Ww.shape[1]:
                raise ValueError(f"factors of shapes {Wh.shape} and {Ww.shape} for samples of shape ({h}, {w})")

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False  # matrix samples (n, h, w)
        tags.input_tags.three_d_array = True
        return tags


class BilinearClassifier(_MatrixClassifier):
    """Trace-norm low-rank bilinear classifier (Kobayashi, IJCV 2014), convex formulation.

    Solves ``min_{W, b} ||W||_* + C sum_i max(0, 1 - y_i (tr(W' X_i) + b))`` per one-vs-rest problem by
    projected gradient over ``S = W_w W_w'`` (``(w, w)``, ``w = min(h, w)``), starting at the identity (the
    linear SVM on ``vec(X)``), each step an SVM with the learnt linear kernel ``tr(S X_i' X_j)`` solved by the
    library's SMO with warm start; stops at a certified relative duality gap ``tol``.

    Parameters
    ----------
    C : float, default=1.0
        Hinge-loss weight.
    tol : float, default=1e-3
        Certified relative duality gap at which a problem stops.
    max_iter : int, default=500
        Maximal projected-gradient steps per problem.
    inner_tol : float, default=1e-5
        Initial KKT tolerance of the SMO (tightened automatically when it blocks descent).
    row_laplacian, col_laplacian : array-like of shape (h, h) and (w, w), optional
        PSD smoothness matrices of the smoothing regularization (section 3.3) on the rows / columns of ``W``.
    row_weight, col_weight : float, optional
        ``C_h`` and ``C_w``; by default ``1 / ||L||_2`` (the paper's rule).
    rank_tol : float, default=1e-6
        Eigenvalues of ``S`` at most ``rank_tol * max`` are dropped from the factors (reported rank).
    verbose : int, default=0
        ``>= 1`` shows the projected-gradient steps with their certified gap (a progress bar on a terminal, log
        lines elsewhere).  Ctrl-C ends the fit with the last accepted iterate (the problems not reached yet at
        their start, the linear SVM) and a ``FitInterruptedWarning``.

    Attributes
    ----------
    classes_ : ndarray
    row_factors_, col_factors_ : list of ndarray of shapes (h, r_k) and (w, r_k)
        ``W_k = row_factors_[k] @ col_factors_[k].T`` (in the orientation of the input).
    intercept_ : ndarray of shape (n_problems,)
    rank_ : ndarray of shape (n_problems,)
    n_iter_ : ndarray of shape (n_problems,)
    dual_gap_ : ndarray of shape (n_problems,)
        Certified relative duality gaps.
    objective_ : ndarray of shape (n_problems,)
        The primal objective ``||W||_* + C * hinge`` of each problem (an upper bound of its optimum).
    fit_info_ : list of dict
        Per problem: ``n_iter``, ``gap``, ``primal``, ``dual``, ``history``, ``timings``.
    input_shape_ : tuple of int
        ``(h, w)`` of the training samples.
    n_features_in_ : int
        ``h * w``, the entries of a sample.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "row_laplacian": [InstanceOf(np.ndarray, list, tuple, label="an array"), NoneValue()],
        "col_laplacian": [InstanceOf(np.ndarray, list, tuple, label="an array"), NoneValue()],
        "row_weight": [Real(low=0, closed="left"), NoneValue()],
        "col_weight": [Real(low=0, closed="left"), NoneValue()],
        "rank_tol": [Real(low=0, closed="left")],
    }

    def __init__(self, C: float = 1.0, *, tol: float = 1e-3, max_iter: int = 500, inner_tol: float = 1e-5,
                 row_laplacian: object = None, col_laplacian: object = None, row_weight: float | None = None,
                 col_weight: float | None = None, rank_tol: float = 1e-6, verbose: int = 0) -> None:
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.inner_tol = inner_tol
        self.row_laplacian = row_laplacian
        self.col_laplacian = col_laplacian
        self.row_weight = row_weight
        self.col_weight = col_weight
        self.rank_tol = rank_tol
        self.verbose = verbose

    def _prepare(self, X: np.ndarray) -> np.ndarray:
        rows, cols = self.row_laplacian, self.col_laplacian
        rw, cw = self.row_weight, self.col_weight
        if self.transposed_:  # the Laplacians follow the matrix sides they were given for
            rows, cols, rw, cw = cols, rows, cw, rw
        self._smooth = smoothing_transform(rows, cols, X.shape[1:], rw, cw)
        A_h, A_w = self._smooth
        if A_h is not None:
            X = np.einsum("ab,nbw->naw", A_h, X)
        if A_w is not None:
            X = X @ A_w
        return np.ascontiguousarray(X)

    def _fit_binary(self, X, y, max_iter, on_step):
        def factors(fit):
            V, lam = psd_factor(fit.sigma, self.rank_tol)
            Ww = V * np.sqrt(lam)  # eq. (17)
            Wh = np.tensordot(fit.alpha * y, X, axes=1) @ Ww
            A_h, A_w = self._smooth
            if A_h is not None:  # back to the original samples: W = A_h Wbar A_w
                Wh = A_h @ Wh
            if A_w is not None:
                Ww = A_w @ Ww
            info = dict(n_iter=fit.n_iter, gap=fit.gap, primal=fit.primal, dual=fit.dual, history=fit.history,
                        timings=fit.timings, converged=fit.converged)
            return Wh, Ww, fit.bias, info

        fit = fit_trace_norm(X, y, self.C, tol=self.tol, max_iter=max_iter, inner_tol=self.inner_tol,
                             callback=None if on_step is None else
                             lambda snapshot: on_step(lambda: factors(snapshot())))
        return factors(fit)

    def _store(self, fits: list[tuple]) -> None:
        super()._store(fits)
        self.dual_gap_ = np.array([info["gap"] for info in self.fit_info_])


def _svm(K: np.ndarray, y: np.ndarray, C: float, alpha0: np.ndarray | None, tol: float) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=RuntimeWarning, message=".*semi-definite.*")
        return solve_qp(K, y, p=-1.0, lower=0.0, upper=C, y_sum=0.0, alpha0=alpha0, tol=tol).alpha


class BilinearSVMClassifier(_MatrixClassifier):
    """Bilinear SVM of Pirsiavash et al. (2009) with rank ``k``; ``rank=None`` is the linear SVM on ``vec(X)``.

    Minimises ``1/2 ||W_h W_w'||_F^2 + C sum_i max(0, 1 - y_i (tr(W_w W_h' X_i) + b))`` over ``W_h (h, k)``,
    ``W_w (w, k)`` by alternating SVM solves (biconvex: a local minimum).  With ``W_w`` fixed the ``W_h`` step
    is an SVM with kernel ``tr(P_w X_i' X_j)``, ``P_w`` the projector onto ``span(W_w)``, and
    ``W_h = G W_w (W_w' W_w)^+``; symmetrically for ``W_w``.  Initialisation: the rank-``k`` truncated SVD of
    the linear SVM's ``W`` (as Pirsiavash et al.; the Kobayashi paper does not say).

    Parameters
    ----------
    rank : int or None, default=None
    C : float, default=1.0
    tol : float, default=1e-4
        Stop when the objective decreases by less than ``tol`` relatively over one alternation (a biconvex
        problem: there is no certified gap).
    max_iter : int, default=50
        Maximal alternations (``W_h`` then ``W_w``).
    inner_tol : float, default=1e-4
        KKT tolerance of the SMO.
    verbose : int, default=0
        ``>= 1`` shows the alternations; Ctrl-C keeps the last completed one.

    Attributes
    ----------
    classes_, row_factors_, col_factors_, intercept_, rank_, n_iter_, fit_info_, input_shape_, n_features_in_
        As in :class:`BilinearClassifier`.
    objective_ : ndarray of shape (n_problems,)
        The objective above at the returned factors.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "rank": [Integer(low=1), NoneValue()],
    }

    def __init__(self, rank: int | None = None, C: float = 1.0, *, tol: float = 1e-4, max_iter: int = 50,
                 inner_tol: float = 1e-4, verbose: int = 0) -> None:
        self.rank = rank
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.inner_tol = inner_tol
        self.verbose = verbose

    def _objective(self, Wh: np.ndarray, Ww: np.ndarray, b: float, X: np.ndarray, y: np.ndarray) -> float:
        W = Wh @ Ww.T
        scores = np.tensordot(X, W, axes=([1, 2], [0, 1]))
        return float(0.5 * np.sum(W * W) + self.C * np.maximum(0.0, 1.0 - y * (scores + b)).sum())

    def _fit_binary(self, X, y, max_iter, on_step):
        C, inner_tol = float(self.C), float(self.inner_tol)
        n, h, w = X.shape
        flat = X.reshape(n, h * w)
        alpha = _svm(flat @ flat.T, y, C, None, inner_tol)
        G = np.tensordot(alpha * y, X, axes=1)
        if self.rank is None:  # the linear SVM on vec(X): W = G, no factorisation
            b = best_bias(flat @ G.ravel(), y)
            return G, np.eye(w), b, dict(n_iter=0, objective=self._objective(G, np.eye(w), b, X, y))
        k = int(self.rank)
        if k > w:
            raise ValueError(f"rank={k} exceeds min(h, w)={w}")
        U, s, Vt = np.linalg.svd(G, full_matrices=False)
        Wh, Ww = U[:, :k] * np.sqrt(s[:k]), Vt[:k].T * np.sqrt(s[:k])
        b = best_bias(np.tensordot(X, Wh @ Ww.T, axes=([1, 2], [0, 1])), y)
        previous = self._objective(Wh, Ww, b, X, y)
        n_iter = 0
        converged = False
        while n_iter < max_iter:
            n_iter += 1
            for side in ("h", "w"):
                fixed = Ww if side == "h" else Wh
                Xs = X if side == "h" else np.ascontiguousarray(X.transpose(0, 2, 1))
                m = Xs.shape[2]
                inv = np.linalg.pinv(fixed.T @ fixed)
                # features X_i W (W'W)^(-1/2): kernel tr(P X_i' X_j) with P the projector onto span(W)
                lam, V = np.linalg.eigh(inv)
                root = fixed @ (V * np.sqrt(np.clip(lam, 0, None))) @ V.T
                Y = (Xs.reshape(-1, m) @ root).reshape(n, -1)
                alpha = _svm(Y @ Y.T, y, C, alpha, inner_tol)
                Gs = np.tensordot(alpha * y, Xs, axes=1)
                if side == "h":
                    Wh = Gs @ fixed @ inv
                else:
                    Ww = Gs @ fixed @ inv
            b = best_bias(np.tensordot(X, Wh @ Ww.T, axes=([1, 2], [0, 1])), y)
            current = self._objective(Wh, Ww, b, X, y)
            if on_step is not None:
                state = (Wh, Ww, b, dict(n_iter=n_iter, objective=current))
                on_step(lambda state=state: state)
            if previous - current <= self.tol * abs(previous):
                converged = True
                previous = min(previous, current)
                break
            previous = current
        if not converged and max_iter > 0:
            warnings.warn(f"the bilinear SVM did not converge in {max_iter} alternations", ConvergenceWarning,
                          stacklevel=4)
        return Wh, Ww, b, dict(n_iter=n_iter, objective=previous)
