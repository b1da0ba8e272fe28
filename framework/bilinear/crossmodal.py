"""Cross-modal learning in the bilinear framework: Kobayashi (IJCV 2014), section 5.2.

Two modalities (for example images and attribute vectors, or two views of the same objects) with their own
samples, sample counts and kernels, labelled with the same ``w`` classes.  A sample ``x`` of modality ``m``
becomes the matrices ``X_c = x e_c'`` (one per class ``c``), and the trace-norm bilinear classifier with a
shared column factor ``W_w`` (``w x r``) and one row factor ``W_h^[m]`` per modality is learnt over
``S = W_w W_w'`` (eq. 50):

    min_{S >= 0}  1/2 tr(S) + sum_m max_{alpha in Omega^[m]} 1'alpha - 1/2 tr(S A^[m]' K^[m] A^[m]),

``A_ic = y_ic alpha_ic`` (one-vs-rest signs), ``Omega^[m]`` the box ``[0, C]`` with one equality per class.
The inner maximisation of each modality is solved by the class-wise block SMO of section 5.2.1 (Cython,
:mod:`multikernel._ext._crossmodal`), the outer one by the projected gradient shared with the bilinear
classifier (:func:`~multikernel.bilinear.solver.minimize_psd`, ``grad J = 1/2 (I - sum_m A' K A)``), with the
same certified duality gap.  ``W_h^[m]' x = W_w' A^[m]' k^[m](x)`` maps each modality into the common space of
dimension ``rank(S)``, found by the optimisation (at most ``w``); retrieval across modalities is 1-NN there.
"""

from __future__ import annotations

import time
import warnings
from typing import ClassVar

import attrs
import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import pairwise_distances
from sklearn.utils.validation import check_array

from multikernel._ext import _crossmodal
from multikernel._threads import blas_for
from multikernel.bilinear.solver import PSDResult, best_bias, minimize_psd, psd_factor, trace_norm_from_gtg
from multikernel.core.interfaces import KernelBuilder
from multikernel.core.registry import get_registry
from multikernel.core.validation import (
    Boolean,
    Constraint,
    InstanceOf,
    Integer,
    NoneValue,
    Plugin,
    Real,
    check_class_labels,
    shown,
)
from multikernel.estimators.base import FittedSpec, MultikernelEstimator

__all__ = ["CrossModalEmbedding", "solve_block_smo", "retrieval_ranks", "cmc_curve"]


def _one_vs_rest(codes: np.ndarray, w: int) -> np.ndarray:
    """``y_ic = +1`` if sample ``i`` is of class ``c``, else ``-1`` (eq. 49); shape (n, w)."""
    Y = -np.ones((codes.size, w))
    Y[np.arange(codes.size), codes] = 1.0
    return Y


def solve_block_smo(K: np.ndarray, Y: np.ndarray, sigma: np.ndarray, C: float, *, alpha0: np.ndarray | None = None,
                    tol: float = 1e-3, max_iter: int | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """Sub-problem (52) of one modality by the class-wise block SMO (section 5.2.1).

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Symmetric PSD kernel of the modality (float32 or float64).
    Y : ndarray of shape (n, w)
        One-vs-rest signs in {-1, +1}.
    sigma : ndarray of shape (w, w)
        The PSD matrix ``S``.
    C : float
        Upper bound of every ``alpha_ic``.
    alpha0 : ndarray of shape (n, w), optional
        Feasible warm start (default zeros).
    tol : float, default=1e-3
        Stop when every block's KKT gap (eq. 57) is below ``tol``.  On a float32 ``K`` at least
        ``eps32 * max_i sum_t |K_it| * C * max |S|``, the rounding of ``F = K A`` in single precision: below it the
        gaps hover (a 20 x 20 kernel: about 5e-6, and a tol of 1e-8 ran into max_iter).
    max_iter : int, optional
        SMO steps over all blocks; default ``max(10**7, 100 n w)`` (a ``ConvergenceWarning`` when reached).

    Returns
    -------
    alpha : ndarray of shape (n, w)
    F : ndarray of shape (n, w)
        ``K (Y * alpha)``.
    info : dict
        ``n_iter``, ``n_blocks``, ``gaps`` (per block), ``hit_max_iter`` and ``tol`` (the one applied).
    """
    K = np.ascontiguousarray(K)
    if K.dtype not in (np.float32, np.float64):
        K = K.astype(np.float64)
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    n, w = Y.shape
    alpha = np.zeros((n, w)) if alpha0 is None else np.array(alpha0, dtype=np.float64, order="C")
    F = np.ascontiguousarray(K @ (Y * alpha), dtype=np.float64)
    limit = max(10_000_000, 100 * n * w) if max_iter is None else int(max_iter)
    sigma = np.ascontiguousarray(sigma, dtype=np.float64)
    if K.dtype == np.float32 and n:
        rounding = float(np.finfo(np.float32).eps) * float(np.abs(K).sum(axis=1).max()) * C * float(np.abs(sigma).max())
        tol = max(tol, rounding)
    info = _crossmodal.block_smo(K, Y, sigma, alpha, F, float(C), float(tol), limit)
    info["tol"] = tol
    if info["hit_max_iter"]:
        warnings.warn(f"the block SMO stopped at max_iter={limit} with a KKT gap {max(info['gaps']):.3g} > "
                      f"tol={tol:g}; check that the kernel is symmetric PSD, or raise max_iter or tol",
                      ConvergenceWarning, stacklevel=2)
    return alpha, F, info


@attrs.define
class _Sub:
    """The sub-problems of all modalities at one ``S``."""

    alpha: list
    F: list
    objective: float
    gtg: np.ndarray


class _CrossModalProblem:
    """Outer-problem bookkeeping for :func:`minimize_psd`: block-SMO solves with warm start and the bounds."""

    def __init__(self, kernels: list[np.ndarray], Ys: list[np.ndarray], C: float, inner_tol: float) -> None:
        self.kernels, self.Ys, self.C, self.inner_tol = kernels, Ys, C, inner_tol
        self.timings = {"svm": 0.0, "gram": 0.0, "eig": 0.0, "certificate": 0.0}
        self.best_dual = -np.inf
        self.biases: list[np.ndarray] = []

    def svm(self, sigma: np.ndarray, previous: _Sub | list | None, factor: tuple | None = None) -> _Sub:
        t0 = time.perf_counter()
        starts = previous.alpha if isinstance(previous, _Sub) else previous
        alphas, Fs = [], []
        J = 0.5 * float(np.trace(sigma))
        gtg = np.zeros_like(sigma)
        for m, (K, Y) in enumerate(zip(self.kernels, self.Ys, strict=True)):
            alpha, F, _ = solve_block_smo(K, Y, sigma, self.C, alpha0=None if starts is None else starts[m],
                                          tol=self.inner_tol)
            with blas_for(float(Y.size) * Y.shape[1]):
                M = (Y * alpha).T @ F  # A' K A
            gtg += (M + M.T) / 2
            J += float(alpha.sum()) - 0.5 * float(np.sum(sigma * M))
            alphas.append(alpha)
            Fs.append(F)
        self.timings["svm"] += time.perf_counter() - t0
        return _Sub(alphas, Fs, J, gtg)

    def certify(self, sigma: np.ndarray, sub: _Sub) -> tuple[float, float]:
        """Primal (39) of ``W = G S`` with the best bias per modality and class; the best dual bound so far."""
        t0 = time.perf_counter()
        hinge = 0.0
        self.biases = []
        for F, Y in zip(sub.F, self.Ys, strict=True):
            with blas_for(float(F.size) * F.shape[1]):
                scores = F @ sigma  # tr(W^[m]' X_ic) = (K A S)_ic
            b = np.array([best_bias(scores[:, c], Y[:, c]) for c in range(Y.shape[1])])
            hinge += float(np.maximum(0.0, 1.0 - Y * (scores + b)).sum())
            self.biases.append(b)
        with blas_for(30.0 * sigma.shape[0] ** 3):
            primal = trace_norm_from_gtg(sigma, sub.gtg) + self.C * hinge
            top = float(np.linalg.eigvalsh(sub.gtg)[-1])
        dual = sum(float(a.sum()) for a in sub.alpha) / max(1.0, np.sqrt(max(top, 0.0)))
        self.best_dual = max(self.best_dual, dual)
        self.timings["certificate"] += time.perf_counter() - t0
        return primal, self.best_dual


def _builder(kernel: object, params: dict | None, name: str) -> KernelBuilder:
    if isinstance(kernel, KernelBuilder):
        if params:
            raise ValueError(f"{name}_params applies to a kernel given by name; set the parameters on the "
                             f"{type(kernel).__name__} instance instead")
        return clone(kernel)
    return get_registry().get("kernel", kernel)(**(params or {}))  # a registered name (the constraints say)


def _center(K: np.ndarray, column_means: np.ndarray) -> np.ndarray:
    """``K`` (rows: samples, columns: training samples) centred in the training samples' feature space, as
    scikit-learn's ``KernelCenterer`` fitted on the training kernel (``column_means``: its column means)."""
    return K - column_means[None, :] - K.mean(axis=1, keepdims=True) + column_means.mean()


class CrossModalEmbedding(MultikernelEstimator):
    """Common space of two modalities by the trace-norm bilinear model (Kobayashi, IJCV 2014, section 5.2).

    ``fit(Xa, ya, Xb, yb)`` takes two modalities with their own samples (their counts may differ) and kernels,
    labelled with the same classes; no sample correspondence is needed.  ``transform(X, modality)`` maps
    either modality into the common space, whose dimension ``n_components_ = rank(S)`` the optimisation
    finds (at most the number of classes); retrieval across modalities is nearest neighbours there
    (:func:`retrieval_ranks`).  The sub-problem is solved by the class-wise block SMO, the outer problem by
    projected gradient with a certified duality gap.

    Parameters
    ----------
    kernel_a, kernel_b : str or KernelBuilder, default="linear"
        Kernel of each modality: a registered kernel name (``multikernel plugins``) or a builder instance.
    kernel_a_params, kernel_b_params : dict, optional
        Parameters of a kernel given by name.
    center : bool, default=True
        Center each modality's kernel on its training samples (the paper centres the features, footnote 1).
    C : float, default=1.0
        Hinge-loss weight.
    tol : float, default=1e-3
        Certified relative duality gap at which the fit stops.
    max_iter : int, default=300
        Maximal projected-gradient steps (0: the start ``S = I``).
    inner_tol : float, default=1e-4
        Initial KKT tolerance of the block SMO (tightened automatically when it blocks descent).
    rank_tol : float, default=1e-6
        Eigenvalues of ``S`` at most ``rank_tol * max`` are dropped (they define ``n_components_``).
    verbose : int, default=0
        ``>= 1`` shows the projected-gradient steps with their certified gap.  Ctrl-C ends the fit with the last
        accepted iterate and a ``FitInterruptedWarning``.

    Attributes
    ----------
    classes_ : ndarray of shape (w,)
    sigma_ : ndarray of shape (w, w)
    n_components_ : int
    components_a_, components_b_ : ndarray of shape (n_a, r) and (n_b, r)
        ``A^[m] W_w``: the embedding of ``x`` is ``k^[m](x) @ components``.
    class_factors_ : ndarray of shape (w, r)
        ``W_w``: class ``c`` scores ``class_factors_[c] @ z + b_c`` at a point ``z`` of the common space.
    intercept_a_, intercept_b_ : ndarray of shape (w,)
        Per-class biases of each modality's classifier.
    builders_ : list of KernelBuilder
        The fitted kernel of each modality.
    column_means_ : list of ndarray
        Per modality, the column means of its training kernel (what centring subtracts; empty without
        ``center``).
    dual_gap_ : float
        Certified relative duality gap.
    objective_ : float
        The primal objective (an upper bound of the optimum).
    n_iter_ : int
    fit_info_ : dict
        ``primal``, ``dual``, ``history``, ``timings``.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "kernel_a": [Plugin("kernel")],
        "kernel_b": [Plugin("kernel")],
        "kernel_a_params": [InstanceOf(dict, label="a dict"), NoneValue()],
        "kernel_b_params": [InstanceOf(dict, label="a dict"), NoneValue()],
        "center": [Boolean()],
        "C": [Real(low=0)],
        "tol": [Real(low=0)],
        "max_iter": [Integer(low=0)],
        "inner_tol": [Real(low=0)],
        "rank_tol": [Real(low=0)],
        "verbose": [Integer(low=0)],
    }
    _fitted_schema: ClassVar[dict[str, FittedSpec] | None] = {
        "classes_": FittedSpec("labels", (1,)),
        "sigma_": FittedSpec("real", (2,)),
        "n_components_": FittedSpec("int", (0,)),
        "components_a_": FittedSpec("real", (2,)),
        "components_b_": FittedSpec("real", (2,)),
        "class_factors_": FittedSpec("real", (2,)),
        "intercept_a_": FittedSpec("real", (1,)),
        "intercept_b_": FittedSpec("real", (1,)),
        "builders_": FittedSpec("any"),
        "column_means_": FittedSpec("any"),
        "dual_gap_": FittedSpec("real", (0,)),
        "objective_": FittedSpec("real", (0,)),
        "n_iter_": FittedSpec("int", (0,)),
        "fit_info_": FittedSpec("any"),
    }

    def __init__(self, kernel_a: object = "linear", kernel_b: object = "linear", kernel_a_params: dict | None = None,
                 kernel_b_params: dict | None = None, center: bool = True, C: float = 1.0, *, tol: float = 1e-3,
                 max_iter: int = 300, inner_tol: float = 1e-4, rank_tol: float = 1e-6, verbose: int = 0) -> None:
        self.kernel_a = kernel_a
        self.kernel_b = kernel_b
        self.kernel_a_params = kernel_a_params
        self.kernel_b_params = kernel_b_params
        self.center = center
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.inner_tol = inner_tol
        self.rank_tol = rank_tol
        self.verbose = verbose

    def _check_modality(self, X: object, y: object, name: str) -> tuple[np.ndarray, np.ndarray]:
        X = check_array(X, dtype=np.float64, input_name=f"X{name}")
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y{name} to be passed, but it is None")
        y = check_class_labels(y, what=f"y{name}")
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"y{name} must hold one label per sample of X{name} ({X.shape[0]}); got {y.shape[0]}")
        return X, y

    def fit(self, Xa: object, ya: object, Xb: object, yb: object) -> CrossModalEmbedding:
        """Learn the common space from modality ``a`` (``Xa``, ``ya``) and modality ``b`` (``Xb``, ``yb``).

        Parameters
        ----------
        Xa : array-like of shape (n_a, n_features_a)
        ya : array-like of shape (n_a,)
        Xb : array-like of shape (n_b, n_features_b)
        yb : array-like of shape (n_b,)
            Class labels of the same classes as ``ya``.

        Returns
        -------
        self
        """
        with self._fit_context(total=self.max_iter, desc=f"{type(self).__name__} iterations") as progress:
            self._fit(progress, Xa, ya, Xb, yb)
        return self

    def _fit(self, progress, Xa, ya, Xb, yb) -> None:
        Xa, ya = self._check_modality(Xa, ya, "a")
        Xb, yb = self._check_modality(Xb, yb, "b")
        ca, cb = np.unique(ya), np.unique(yb)
        if ca.shape != cb.shape or not np.array_equal(ca, cb):
            only_a = sorted(shown(v) for v in set(ca.tolist()) - set(cb.tolist()))
            only_b = sorted(shown(v) for v in set(cb.tolist()) - set(ca.tolist()))
            raise ValueError(f"the two modalities must be labelled with the same classes (one shared column "
                             f"factor per class); classes only in ya: {only_a}, only in yb: {only_b}. Drop those "
                             f"samples or relabel them")
        if ca.size < 2:
            raise ValueError(f"the modalities have a single class {shown(ca[0])!r}; the common space needs at least "
                             f"two")
        self.classes_ = ca
        w = ca.size
        kernels, Ys, builders, means = [], [], [], []
        for X, y, kernel, params, name in ((Xa, ya, self.kernel_a, self.kernel_a_params, "kernel_a"),
                                           (Xb, yb, self.kernel_b, self.kernel_b_params, "kernel_b")):
            builder = _builder(kernel, params, name)
            K = np.asarray(builder.fit_transform(X), dtype=np.float64)
            if not np.isfinite(K).all():
                raise ValueError(f"the {name} kernel has NaN or infinite entries (features too large for it?); "
                                 f"rescale X{name[-1]}")
            column_means = K.mean(axis=0) if self.center else np.zeros(0)
            if self.center:
                K = _center(K, column_means)
            K = np.ascontiguousarray((K + K.T) / 2)  # the block SMO reads row i as column i
            kernels.append(K)
            Ys.append(_one_vs_rest(np.searchsorted(ca, y), w))
            builders.append(builder)
            means.append(column_means)
        self.builders_, self.column_means_ = builders, means
        prob = _CrossModalProblem(kernels, Ys, float(self.C), float(self.inner_tol))

        def on_step(res: PSDResult) -> None:
            biases = [b.copy() for b in prob.biases]  # certify set them for this iterate
            progress.update(gap=res.gap, keep=lambda: self._store(res, Ys, biases, prob.timings))

        res = minimize_psd(prob, np.eye(w), tol=self.tol, max_iter=self.max_iter, callback=on_step)
        if not res.converged and self.max_iter > 0:
            warnings.warn(f"the cross-modal fit stopped after {res.n_iter} steps with a certified relative gap "
                          f"{res.gap:.2e} > tol={self.tol:g}; raise max_iter or tol", ConvergenceWarning,
                          stacklevel=4)
        self._store(res, Ys, prob.biases, prob.timings)

    def _store(self, res: PSDResult, Ys: list, biases: list, timings: dict) -> None:
        self.sigma_ = res.sigma
        V, lam = psd_factor(res.sigma, self.rank_tol)
        Ww = V * np.sqrt(lam)  # (w, r), eq. (17)
        self.n_components_ = int(lam.size)
        self.components_a_, self.components_b_ = ((Y * alpha) @ Ww for Y, alpha in zip(Ys, res.sub.alpha,
                                                                                          strict=True))
        self.intercept_a_, self.intercept_b_ = biases
        self.class_factors_ = Ww
        self.dual_gap_ = float(res.gap)
        self.objective_ = float(res.primal)
        self.n_iter_ = int(res.n_iter)
        self.fit_info_ = dict(primal=res.primal, dual=res.dual, history=res.history, timings=dict(timings),
                              converged=res.converged)

    def _kernel(self, X: object, modality: str) -> tuple[np.ndarray, int]:
        self._check_fitted()
        if modality not in ("a", "b"):
            raise ValueError(f"modality must be 'a' or 'b'; got {modality!r}")
        m = 0 if modality == "a" else 1
        X = check_array(X, dtype=np.float64, input_name=f"X{modality}")
        K = np.asarray(self.builders_[m].transform(X), dtype=np.float64)
        if self.center:
            K = _center(K, self.column_means_[m])
        return K, m

    def transform(self, X: object, modality: str = "a") -> np.ndarray:
        """Coordinates in the common space, shape (n, n_components_), of samples of ``modality``."""
        K, m = self._kernel(X, modality)
        return K @ (self.components_a_ if m == 0 else self.components_b_)

    def decision_function(self, X: object, modality: str = "a") -> np.ndarray:
        """One-vs-rest class scores ``w_c' z(x) + b_c^[m]`` (eq. 46), shape (n, n_classes)."""
        z = self.transform(X, modality)
        return z @ self.class_factors_.T + (self.intercept_a_ if modality == "a" else self.intercept_b_)

    def predict(self, X: object, modality: str = "a") -> np.ndarray:
        """The class with the largest score (eq. 45)."""
        scores = self.decision_function(X, modality)
        return self.classes_[np.argmax(scores, axis=1)]

    def _check_loaded(self) -> None:
        w, r = len(self.classes_), self.n_components_
        if self.sigma_.shape != (w, w) or self.class_factors_.shape != (w, r) or \
                self.components_a_.shape[1] != r or self.components_b_.shape[1] != r or \
                self.intercept_a_.shape != (w,) or self.intercept_b_.shape != (w,):
            raise ValueError(f"a common space of dimension {r} for {w} classes with factors of shapes "
                             f"{self.class_factors_.shape}, {self.components_a_.shape}, {self.components_b_.shape}")
        if not (isinstance(self.builders_, list) and len(self.builders_) == 2 and
                all(isinstance(b, KernelBuilder) for b in self.builders_)):
            raise ValueError("a cross-modal model without the kernel of each modality")
        sizes = (self.components_a_.shape[0], self.components_b_.shape[0])
        if not (isinstance(self.column_means_, list) and len(self.column_means_) == 2 and all(
                np.shape(c) == ((n,) if self.center else (0,)) for c, n in zip(self.column_means_, sizes,
                                                                                 strict=True))):
            raise ValueError("kernel centring that does not match the training samples of each modality")

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True  # fit(Xa, ya, Xb, yb): two modalities, each with its labels
        return tags


def retrieval_ranks(probe: np.ndarray, probe_labels: np.ndarray, gallery: np.ndarray,
                    gallery_labels: np.ndarray) -> np.ndarray:
    """For each probe, the rank (1-based) of the first gallery item of its class by Euclidean distance.

    A probe is retrieved at rank ``k`` (CMC, Kobayashi 2014 footnote 7) when its ``k`` nearest gallery items
    contain one of its class; ``(ranks == 1).mean()`` is the 1-NN (rank-1) accuracy.  A probe whose class
    is absent from the gallery gets rank ``len(gallery) + 1``.
    """
    D = pairwise_distances(probe, gallery)
    order = np.argsort(D, axis=1, kind="stable")
    hit = np.asarray(gallery_labels)[order] == np.asarray(probe_labels)[:, None]
    return np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, gallery.shape[0] + 1)


def cmc_curve(ranks: np.ndarray, k_max: int) -> np.ndarray:
    """Cumulative match characteristic: the fraction of probes retrieved within rank ``k``, k = 1..k_max."""
    return np.array([(ranks <= k).mean() for k in range(1, k_max + 1)])
