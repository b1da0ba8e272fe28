"""Heterogeneous multiple kernel learning (hMKL): Kobayashi (IJCV 2014), section 4.

``w`` kernels ``k_1 .. k_w`` on ``n`` training samples become one feature matrix per sample (eq. 36),

    X(x) = [B_1 k_1(x), ..., B_w k_w(x)]  in R^{n x w},   k_c(x) = [k_c(x, x_1), ..., k_c(x, x_n)]',

and the trace-norm bilinear classifier of section 3 learns ``S`` (``w x w``), the weights of every intra-
(``c = d``) and inter-kernel (``c != d``) similarity ``R^{ij}_{cd} = k_ic' B_c' B_d k_jd``.  ``B_c`` is the
*transformation*:

============  =========================  ============================  ===========================
name          ``B_c`` (eq.)              training feature ``T_c e_i``   ``T_c' T_d`` on training
============  =========================  ============================  ===========================
proposed      ``K_c^(-1/2)`` (27)        ``K_c^(1/2) e_i``              ``K_c^(1/2) K_d^(1/2)``
product       ``I`` (59)                 ``K_c e_i``                    ``K_c K_d``
pca           ``L_c^-1 U_c'`` (60)       ``L_c U_c' e_i``               ``U_c L_c L_d U_d'``
inverse       ``K_c^+`` (61)             ``P_c e_i`` (projector)        ``P_c P_d`` (``I`` if full rank)
diagonal      Z = I (Varma and Ray)      ``K_c^(1/2) e_i``, no cross    ``K_c`` on ``c = d``, else 0
============  =========================  ============================  ===========================

(``K_c = U_c L_c^2 U_c'``; eigenvalues below ``cutoff`` times the largest are dropped, so the inverses are
pseudo-inverses.)  On the training set the learnt kernel is ``K(S) = sum_cd S_cd T_c' T_d`` (spec 5.2,
DERIVED): the ``w (w + 1) / 2`` symmetrised products are held in a :class:`~multikernel.stack.DenseStack`
once, and every Gram of the projected gradient is one ``combine`` of that stack with the entries of ``S``.
A test sample scores ``sum_c beta_c' k_c(x) + b`` with ``beta_c = B_c' (G S)_{:, c}``.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.exceptions import ConvergenceWarning

from multikernel._threads import blas_for
from multikernel.bilinear.estimators import OneVsRestPredictMixin, encode_class_labels
from multikernel.bilinear.solver import PSDResult, _Problem, minimize_psd, psd_factor
from multikernel.core.validation import Constraint, Integer, Options, Real
from multikernel.estimators.base import FittedSpec, MultikernelEstimator
from multikernel.estimators.kernel_input import KERNEL_INPUT_FITTED, KernelInputMixin, check_loaded_kernel_input
from multikernel.stack.storage import DenseStack

__all__ = ["TRANSFORMATIONS", "HMKLClassifier", "kernel_transforms", "StackKernel"]

TRANSFORMATIONS = ("proposed", "product", "pca", "inverse", "diagonal")


def _eig(K: np.ndarray, cutoff: float) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending, above ``cutoff * max``) and eigenvectors of the symmetric ``K``.

    The sign of each eigenvector is fixed (largest-magnitude entry positive): the PCA transformation's
    inter-kernel blocks depend on it (spec 5.3), and a convention makes them reproducible.
    """
    if not np.isfinite(K).all():
        raise ValueError("a kernel has NaN or infinite entries (features too large for it?); rescale the "
                         "features, e.g. standardize=True")
    try:
        e, U = np.linalg.eigh((K + K.T) / 2)
    except np.linalg.LinAlgError as exc:
        raise ValueError(f"the eigendecomposition of a kernel failed ({exc}): its entries are too badly scaled; "
                         f"rescale the features (e.g. standardize=True) or normalize the kernels") from None
    e, U = e[::-1], U[:, ::-1]
    keep = e > cutoff * max(e[0], 0.0) if e.size and e[0] > 0 else np.zeros(e.shape, dtype=bool)
    e, U = e[keep], U[:, keep]
    flip = np.sign(U[np.argmax(np.abs(U), axis=0), np.arange(U.shape[1])])
    return e, U * np.where(flip == 0, 1.0, flip)


def kernel_transforms(kernels: list[np.ndarray], transformation: str = "proposed",
                      cutoff: float = 1e-10) -> tuple[list[np.ndarray], list[np.ndarray | None]]:
    """The training features ``T_c`` and the test maps ``B_c`` of ``transformation`` (module table).

    Parameters
    ----------
    kernels : list of ndarray of shape (n, n)
        The ``w`` training kernels (symmetric PSD).
    transformation : {"proposed", "product", "pca", "inverse", "diagonal"}
    cutoff : float
        Relative eigenvalue cut-off of the (pseudo-)inverse square roots.

    Returns
    -------
    T : list of ndarray of shape (n, n)
        Column ``i`` of ``T_c`` is column ``c`` of the training sample ``i``'s feature matrix.
    B : list of ndarray of shape (n, n) or None
        ``B_c k_c(x)`` is column ``c`` of a sample's feature matrix; ``None`` for the identity.
    """
    if transformation not in TRANSFORMATIONS:
        raise ValueError(f"transformation must be one of {', '.join(TRANSFORMATIONS)}; got {transformation!r}")
    T, B = [], []
    for K in kernels:
        K = np.asarray(K, dtype=np.float64)
        n = K.shape[0]
        if transformation == "product":
            T.append(K)
            B.append(None)
            continue
        e, U = _eig(K, cutoff)
        root = np.sqrt(e)
        if transformation in ("proposed", "diagonal"):
            T.append((U * root) @ U.T)
            B.append((U / root) @ U.T)
        elif transformation == "pca":
            # n x n with zero rows past the rank, so that every column of X(x) has n entries
            Tc, Bc = np.zeros((n, n)), np.zeros((n, n))
            Tc[: e.size] = root[:, None] * U.T
            Bc[: e.size] = U.T / root[:, None]
            T.append(Tc)
            B.append(Bc)
        else:  # inverse
            T.append(U @ U.T)
            B.append((U / e) @ U.T)
    return T, B


class StackKernel:
    """The learnt kernel of hMKL on the training set, ``K(S) = sum_cd S_cd T_c' T_d``, as a kernel stack.

    Implements the two quantities :func:`multikernel.bilinear.solver.minimize_psd` needs: ``gram(S)``
    (one ``combine`` of the stack of symmetrised products) and ``gtg(a) = G'G``, ``G = [T_1 a .. T_w a]``.
    With ``block_diagonal`` (the Varma-Ray case) only the ``c = d`` products exist and ``G'G`` is diagonal.
    """

    def __init__(self, T: list[np.ndarray], block_diagonal: bool = False) -> None:
        self.T = T
        self.w = len(T)
        self.block_diagonal = block_diagonal
        self.pairs = [(c, c) for c in range(self.w)] if block_diagonal else [
            (c, d) for c in range(self.w) for d in range(c, self.w)]
        products = []
        for c, d in self.pairs:
            P = T[c].T @ T[d]
            # sum_cd S_cd T_c'T_d over c < d and d < c is S_cd (P + P'): symmetric, so stored exactly so
            products.append(P + P.T if c != d else (P + P.T) / 2)
        self.stack = DenseStack(np.stack(products), symmetric=True)

    def weights(self, sigma: np.ndarray) -> np.ndarray:
        return np.array([sigma[c, d] for c, d in self.pairs])

    def gram(self, sigma: np.ndarray, factor: tuple | None = None) -> np.ndarray:
        return self.stack.combine(self.weights(sigma))

    def features(self, a: np.ndarray) -> np.ndarray:
        """``G(a) = [T_1 a, ..., T_w a]`` of shape (n, w)."""
        return np.stack([Tc @ a for Tc in self.T], axis=1)

    def gtg(self, a: np.ndarray) -> np.ndarray:
        n = a.shape[0]
        with blas_for(float(n) * n * self.w):
            G = self.features(a)
            M = G.T @ G
        return np.diag(np.diag(M)) if self.block_diagonal else M


class HMKLClassifier(OneVsRestPredictMixin, KernelInputMixin, ClassifierMixin, MultikernelEstimator):
    """Heterogeneous MKL (Kobayashi, IJCV 2014, section 4): trace-norm bilinear classifier over kernel features.

    Each sample becomes the ``n x w`` matrix ``[B_1 k_1(x), ..., B_w k_w(x)]`` of its kernel values with the
    ``n`` training samples, one column per kernel, and the trace-norm bilinear classifier learns the PSD
    matrix ``S`` (``w x w``) that weights the intra- and inter-kernel similarities (projected gradient with a
    certified duality gap, :func:`~multikernel.bilinear.solver.minimize_psd`).  At ``S = I`` (the start) the
    proposed and diagonal transformations give the SVM with the sum of the kernels (the average kernel with
    ``C`` scaled by ``w``).  One-vs-rest for more than two classes, each class with its own ``S``.

    Parameters
    ----------
    kernels : str or list of KernelBuilder, default="rbf_poly"
        Kernel family name, a list of kernel builders (applied to the features), or ``"precomputed"``; the
        same inputs as :class:`~multikernel.MKLClassifier`.
    kernel_params : dict, optional
        Parameters of the kernel family.
    normalize : str, default="trace"
        Kernel normalization fitted on the training data (see :class:`~multikernel.stack.KernelSet`).
    standardize : bool, default=False
        Standardize the features before the kernels.
    transformation : {"proposed", "product", "pca", "inverse", "diagonal"}, default="proposed"
        The kernelization ``B_c`` (module docstring); ``"diagonal"`` is the MKL of Varma and Ray (2007).
    C : float, default=1.0
        Hinge-loss weight.
    tol : float, default=1e-3
        Certified relative duality gap at which a problem stops.
    max_iter : int, default=500
        Maximal projected-gradient steps per problem (0: the SVM at ``S = I``).
    inner_tol : float, default=1e-5
        Initial KKT tolerance of the SMO.
    cutoff : float, default=1e-10
        Relative eigenvalue cut-off of the kernels' (pseudo-)inverse square roots.
    rank_tol : float, default=1e-6
        Eigenvalues of ``S`` at most ``rank_tol * max`` do not count in ``rank_``.
    kernel_dtype, kernel_backend, memory_budget
        Storage of the base kernels, as for :class:`~multikernel.MKLClassifier`.
    verbose : int, default=0
        ``>= 1`` shows the projected-gradient steps with their certified gap.  Ctrl-C ends the fit with the last
        accepted iterate (one-vs-rest problems not reached yet at their start ``S = I``) and a
        ``FitInterruptedWarning``.

    Attributes
    ----------
    classes_ : ndarray
    sigma_ : ndarray of shape (n_problems, w, w)
        The learnt ``S`` per one-vs-rest problem.
    coef_ : ndarray of shape (n_problems, n_train, w)
        ``W = G S`` (eq. 18) on the feature matrices ``X(x)``: ``f(x) = tr(W' X(x)) + b``.
    dual_coef_ : ndarray of shape (n_problems, w, n_train)
        ``beta_c``: a sample scores ``sum_c beta_c' k_c(x) + b``.
    intercept_ : ndarray of shape (n_problems,)
    rank_ : ndarray of shape (n_problems,)
        ``rank(S)``.
    dual_gap_ : ndarray of shape (n_problems,)
        Certified relative duality gaps.
    objective_ : ndarray of shape (n_problems,)
        Primal objectives (upper bounds of each problem's optimum).
    n_iter_ : ndarray of shape (n_problems,)
        Sub-problem solves on the accepted path: the start ``S = I`` plus the projected-gradient steps.
    fit_info_ : list of dict
        Per problem: ``primal``, ``dual``, ``gap``, ``n_iter`` (projected-gradient steps), ``history``,
        ``timings``.
    kernel_names_ : list of str
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        When ``X`` is a DataFrame with string column names.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "transformation": [Options(*TRANSFORMATIONS)],
        "C": [Real(low=0)],
        "tol": [Real(low=0)],
        "max_iter": [Integer(low=0)],
        "inner_tol": [Real(low=0)],
        "cutoff": [Real(low=0)],
        "rank_tol": [Real(low=0)],
        "verbose": [Integer(low=0)],
    }
    _fitted_schema: ClassVar[dict[str, FittedSpec] | None] = {
        **KERNEL_INPUT_FITTED,
        "classes_": FittedSpec("labels", (1,)),
        "sigma_": FittedSpec("real", (3,)),
        "coef_": FittedSpec("real", (3,)),
        "dual_coef_": FittedSpec("real", (3,)),
        "intercept_": FittedSpec("real", (1,)),
        "rank_": FittedSpec("int", (1,)),
        "dual_gap_": FittedSpec("real", (1,)),
        "objective_": FittedSpec("real", (1,)),
        "n_iter_": FittedSpec("int", (1,)),
        "fit_info_": FittedSpec("any"),
    }

    def __init__(self, kernels: object = "rbf_poly", kernel_params: dict | None = None, normalize: str = "trace",
                 standardize: bool = False, transformation: str = "proposed", C: float = 1.0, *,
                 tol: float = 1e-3, max_iter: int = 500, inner_tol: float = 1e-5, cutoff: float = 1e-10,
                 rank_tol: float = 1e-6, kernel_dtype: str = "float64", kernel_backend: str = "dense",
                 memory_budget: int | str | None = None, verbose: int = 0) -> None:
        self.kernels = kernels
        self.kernel_params = kernel_params
        self.normalize = normalize
        self.standardize = standardize
        self.transformation = transformation
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.inner_tol = inner_tol
        self.cutoff = cutoff
        self.rank_tol = rank_tol
        self.kernel_dtype = kernel_dtype
        self.kernel_backend = kernel_backend
        self.memory_budget = memory_budget
        self.verbose = verbose

    def fit(self, X: object, y: object) -> HMKLClassifier:
        """Fit on features (or precomputed kernels, ``kernels="precomputed"``) ``X`` and labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or precomputed kernels (see ``kernels``)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        with self._fit_context(total=self.max_iter, desc=f"{type(self).__name__} iterations") as progress:
            self._require_y(y)
            stack, y = self._fit_stack(X, y)
            self.classes_, codes = encode_class_labels(y, stack.n_rows, type(self).__name__)
            kernels = [np.asarray(stack.kernel(m), dtype=np.float64) for m in range(stack.n_kernels)]
            T, B = kernel_transforms(kernels, self.transformation, self.cutoff)
            learnt = StackKernel(T, block_diagonal=self.transformation == "diagonal")
            targets = [codes == 1] if self.classes_.size == 2 else [codes == k for k in range(self.classes_.size)]
            signs = [np.where(positive, 1.0, -1.0) for positive in targets]
            fits: list[tuple] = []
            for yb in signs:
                def on_step(res: PSDResult, prob: _Problem, yb: np.ndarray = yb) -> None:
                    # the problems done, this one at its last accepted iterate, the others at S = I
                    done, current = list(fits), (res, prob.bias, yb, dict(prob.timings))
                    progress.update(gap=res.gap, keep=lambda: self._store(learnt, B, done + [current] + [
                        self._solve(learnt, s, 0, None) for s in signs[len(done) + 1:]]))

                fit = self._solve(learnt, yb, self.max_iter, on_step)
                if not fit[0].converged and self.max_iter > 0:
                    warnings.warn(f"hMKL stopped after {fit[0].n_iter} steps with a certified relative gap "
                                  f"{fit[0].gap:.2e} > tol={self.tol:g}; raise max_iter or tol", ConvergenceWarning,
                                  stacklevel=3)
                fits.append(fit)
            self._store(learnt, B, fits)
        return self

    def _solve(self, learnt: StackKernel, yb: np.ndarray, max_iter: int, on_step: Any) -> tuple:
        """One one-vs-rest problem from ``S = I``: ``(result, bias, signs, timings)``."""
        prob = _Problem(learnt, yb, float(self.C), float(self.inner_tol))
        res = minimize_psd(prob, np.eye(learnt.w), tol=self.tol, max_iter=max_iter,
                           callback=None if on_step is None else lambda r: on_step(r, prob))
        return res, prob.bias, yb, prob.timings

    def _store(self, learnt: StackKernel, B: list, fits: list[tuple]) -> None:
        sigmas, coefs, betas, biases, info = [], [], [], [], []
        for res, bias, yb, timings in fits:
            W = learnt.features(res.sub.alpha * yb) @ res.sigma  # eq. (18): W = G S, (n, w)
            betas.append(np.stack([W[:, c] if Bc is None else Bc.T @ W[:, c] for c, Bc in enumerate(B)]))
            sigmas.append(res.sigma)
            coefs.append(W)
            biases.append(bias)
            info.append(dict(primal=res.primal, dual=res.dual, gap=res.gap, n_iter=res.n_iter,
                             history=res.history, timings=timings, converged=res.converged))
        self.sigma_ = np.stack(sigmas)
        self.coef_ = np.stack(coefs)
        self.dual_coef_ = np.stack(betas)
        self.intercept_ = np.asarray(biases, dtype=np.float64)
        self.rank_ = np.array([psd_factor(s, self.rank_tol)[1].size for s in sigmas])
        self.dual_gap_ = np.array([d["gap"] for d in info])
        self.objective_ = np.array([d["primal"] for d in info])
        # the solve at S = I counts as the first iteration (scikit-learn's convention: n_iter_ >= 1)
        self.n_iter_ = np.array([d["n_iter"] + 1 for d in info])
        self.fit_info_ = info

    def decision_function(self, X: object) -> np.ndarray:
        """``sum_c beta_c' k_c(x) + b`` per problem; shape (n,) for two classes, (n, n_classes) otherwise."""
        self._check_fitted()
        cross = self._cross_stack(X)
        scores = np.tile(self.intercept_, (cross.n_rows, 1))
        for c in range(cross.n_kernels):
            scores += np.asarray(cross.kernel(c), dtype=np.float64) @ self.dual_coef_[:, c, :].T
        return scores[:, 0] if self.classes_.size == 2 else scores

    def _check_loaded(self) -> None:
        check_loaded_kernel_input(self, self.dual_coef_.shape[-1])
        n_train = self.dual_coef_.shape[-1]
        n_problems = 1 if len(self.classes_) == 2 else len(self.classes_)
        w = len(self.kernel_names_)
        if self.dual_coef_.shape != (n_problems, w, n_train) or self.intercept_.shape != (n_problems,) or \
                self.sigma_.shape != (n_problems, w, w):
            raise ValueError(f"coefficients of shape {self.dual_coef_.shape}, S of shape {self.sigma_.shape} and "
                             f"{len(self.intercept_)} intercepts for {len(self.classes_)} classes, {w} kernels and "
                             f"{n_train} training samples")
