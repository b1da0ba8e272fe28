"""Trace-norm bilinear classification by the convex reformulation of Kobayashi (IJCV 2014), section 3.2.

The problem ``min_{W, b} ||W||_* + C sum_i max(0, 1 - y_i (<W, X_i> + b))`` over matrices ``X_i`` of shape
``(h, w)`` is rewritten over the PSD matrix ``S = W_w W_w'`` of shape ``(w, w)``:

    min_{S >= 0}  J(S) = 1/2 tr(S) + max_{alpha in Omega} 1'alpha - 1/2 tr(S G(alpha)' G(alpha)),

with ``G(alpha) = sum_i alpha_i y_i X_i`` and ``Omega`` the C-SVC dual set.  The inner maximisation is an SVM
with the learnt linear kernel ``K_ij = tr(S X_i' X_j)``, solved by the library's SMO
(:func:`multikernel.solve.smo.solve_qp`) warm-started from the previous ``alpha``.  ``J`` is minimised by
projected gradient with ``grad J = 1/2 (I - G'G)``, the projection being the eigenvalue clipping of a
``(w, w)`` symmetric matrix, and the step by Armijo backtracking along the projection arc.

Stopping rule: a certified relative duality gap.  Every ``alpha`` gives the dual-feasible point
``alpha / max(1, ||G(alpha)||_2)`` of the problem's dual (``max 1'alpha`` s.t. ``||G||_2 <= 1``, box,
``y'alpha = 0``), hence a lower bound; every iterate gives the primal point ``W = G S`` with its best bias,
hence an upper bound.  The gap bounds the sub-optimality of the returned classifier, which a relative change
of ``J`` does not (projected gradient can crawl), so the rule is the gap.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import attrs
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from multikernel._threads import blas_for
from multikernel.solve.smo import solve_qp

__all__ = ["BilinearFit", "fit_trace_norm", "sub_problem_max_iter", "gradient_rounding", "best_bias",
           "primal_objective", "psd_factor", "MatrixKernel", "minimize_psd", "trace_norm_from_gtg", "SubSolution",
           "PSDResult"]

# Armijo sufficient-decrease constant and backtracking factor (spec section 12 defaults).
_ARMIJO = 1e-4
_BACKTRACK = 0.5
_MAX_BACKTRACKS = 40


@attrs.frozen
class BilinearFit:
    """Outcome of :func:`fit_trace_norm` for one binary problem (samples of shape ``(h, w)``).

    Attributes
    ----------
    sigma : ndarray of shape (w, w)
        The learnt PSD matrix ``S = W_w W_w'``.
    alpha : ndarray of shape (n,)
        The SVM dual variables at ``sigma``.
    bias : float
        The offset ``b`` (the best bias for ``W``, see :func:`best_bias`).
    coef : ndarray of shape (h, w)
        ``W = G(alpha) S`` (eq. 18).
    objective : float
        ``J(sigma)`` evaluated at ``alpha``.
    primal : float
        ``||W||_* + C * hinge(W, b)``: an upper bound of the optimal value.
    dual : float
        The best certified lower bound met during the fit.
    gap : float
        ``(primal - dual) / primal``.
    n_iter : int
        Accepted projected-gradient steps.
    converged : bool
        Whether ``gap <= tol``.
    history : list of dict
        Per accepted step (the first entry: the start): ``objective``, ``primal``, ``dual``, ``gap``, ``rank``,
        ``step``, ``time`` (seconds since the start of the fit, the first SVM solve included).
    timings : dict
        Seconds spent in ``svm`` (the SMO), ``gram`` (kernel build), ``eig`` (eigen-decompositions) and
        ``certificate`` (bounds).
    """

    sigma: np.ndarray
    alpha: np.ndarray
    bias: float
    coef: np.ndarray
    objective: float
    primal: float
    dual: float
    gap: float
    n_iter: int
    converged: bool
    history: list = attrs.Factory(list)
    timings: dict = attrs.Factory(dict)


def psd_factor(sigma: np.ndarray, rank_tol: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvectors and eigenvalues of the PSD part of ``sigma``, eigenvalues ``> rank_tol * max`` only.

    Returns ``(V, lam)`` with ``sigma ~= V diag(lam) V'``; the factor of eq. (17) is ``V sqrt(lam)``.
    """
    lam, V = np.linalg.eigh((sigma + sigma.T) / 2)
    top = lam.max(initial=0.0)
    keep = lam > max(rank_tol * top, 0.0) if top > 0 else np.zeros(lam.shape, dtype=bool)
    return V[:, keep], lam[keep]


class MatrixKernel:
    """The learnt kernel of matrix samples: ``K_ij(S) = tr(S X_i' X_j)`` and ``G(a)'G(a)``, ``G(a) = sum_i a_i X_i``.

    Any object with ``w``, ``gram(sigma, factor)`` and ``gtg(a)`` can replace it in :func:`minimize_psd`: the
    heterogeneous MKL (:mod:`multikernel.bilinear.hmkl`) reads the same two quantities off a kernel stack.
    """

    def __init__(self, X: np.ndarray) -> None:
        self.X = X
        self.w = X.shape[2]

    def gram(self, sigma: np.ndarray, factor: tuple | None = None) -> np.ndarray:
        """``K(S)`` by the factor route: ``Y_i = X_i W_w``, ``K = <vec Y_i, vec Y_j>``.

        ``factor`` is ``psd_factor(sigma)`` when the caller has it (the projection step computes it anyway).
        """
        n, h, w = self.X.shape
        if factor is None:
            with blas_for(10.0 * w**3):
                factor = psd_factor(sigma)
        V, lam = factor
        if lam.size == 0:
            return np.zeros((n, n))
        # one (n h, w) x (w, r) product: a batched 3-D matmul is several times slower
        with blas_for(float(n) * n * h * lam.size + float(n) * h * w * lam.size):
            Y = (self.X.reshape(n * h, w) @ (V * np.sqrt(lam))).reshape(n, -1)
            return Y @ Y.T

    def gtg(self, a: np.ndarray) -> np.ndarray:
        n, h, w = self.X.shape
        with blas_for(float(n) * h * w + float(h) * w * w):
            G = np.tensordot(a, self.X, axes=1)
            return G.T @ G


def best_bias(scores: np.ndarray, y: np.ndarray) -> float:
    """The bias ``b`` minimising ``sum_i max(0, 1 - y_i (scores_i + b))`` (exact, O(n log n)).

    The hinge sum is convex and piecewise linear in ``b`` with kinks at ``t_i = y_i - scores_i``; its slope
    ``#{y_i = -1, t_i < b} - #{y_i = +1, t_i > b}`` is non-decreasing, so a minimiser is the first kink
    where the slope becomes non-negative.
    """
    t = y - scores
    order = np.argsort(t, kind="stable")
    ts, ys = t[order], y[order]
    n_pos = int((ys > 0).sum())
    # slope just right of kink k: negatives at or left of k minus positives right of k
    neg_left = np.cumsum(ys < 0)
    pos_right = n_pos - np.cumsum(ys > 0)
    k = int(np.argmax(neg_left - pos_right >= 0))
    return float(ts[k])


def primal_objective(coef: np.ndarray, bias: float, X: np.ndarray, y: np.ndarray, C: float) -> float:
    """``||W||_* + C sum_i max(0, 1 - y_i (<W, X_i> + b))`` (problem (2))."""
    scores = np.tensordot(X, coef, axes=([1, 2], [0, 1]))
    hinge = np.maximum(0.0, 1.0 - y * (scores + bias)).sum()
    return float(np.linalg.svd(coef, compute_uv=False).sum() + C * hinge)


def trace_norm_from_gtg(sigma: np.ndarray, gtg: np.ndarray) -> float:
    """``||G S||_*`` from ``G'G`` only (the singular values of ``G S`` are those of ``R S``, ``R'R = G'G``).

    Taking ``R`` from the eigen-decomposition of the small ``(w, w)`` matrix keeps the accuracy of an SVD
    (square roots of the eigenvalues of ``S G'G S`` would lose half the digits of the small singular values).
    """
    d, Q = np.linalg.eigh((gtg + gtg.T) / 2)
    R = np.sqrt(np.clip(d, 0.0, None))[:, None] * Q.T
    return float(np.linalg.svd(R @ sigma, compute_uv=False).sum())


@attrs.define
class SubSolution:
    """The SVM sub-problem (15) at one ``S``: ``alpha``, ``J(S)``, ``G'G`` and the learnt kernel ``K(S)``."""

    alpha: np.ndarray
    objective: float
    gtg: np.ndarray
    gram: np.ndarray


class _Problem:
    """One binary problem over a learnt kernel: SVM solves with warm start, bounds, timings.

    :func:`minimize_psd` uses only ``svm``, ``certify``, ``inner_tol`` and ``timings``; the cross-modal
    problem (:mod:`multikernel.bilinear.crossmodal`) implements the same four with its block SMO.
    """

    def __init__(self, kernel, y: np.ndarray, C: float, inner_tol: float) -> None:
        self.kernel, self.y, self.C, self.inner_tol = kernel, y, C, inner_tol
        self.timings = {"svm": 0.0, "gram": 0.0, "eig": 0.0, "certificate": 0.0}
        self.best_dual = -np.inf
        self.bias = 0.0

    def svm(self, sigma: np.ndarray, alpha0: np.ndarray | None, factor: tuple | None = None) -> SubSolution:
        """Solve sub-problem (15) at ``sigma`` (SMO warm-started from ``alpha0``)."""
        t0 = time.perf_counter()
        K = self.kernel.gram(sigma, factor)
        t1 = time.perf_counter()
        with warnings.catch_warnings():
            # K(S) is PSD in exact arithmetic; rounding can show tiny negative curvature on rank-deficient S
            warnings.filterwarnings("ignore", category=RuntimeWarning, message=".*semi-definite.*")
            res = solve_qp(K, self.y, p=-1.0, lower=0.0, upper=self.C, y_sum=0.0, alpha0=alpha0,
                           tol=max(self.inner_tol, gradient_rounding(K, self.C)),
                           max_iter=sub_problem_max_iter(len(self.y)))
        t2 = time.perf_counter()
        self.timings["gram"] += t1 - t0
        self.timings["svm"] += t2 - t1
        alpha = res.alpha
        GtG = self.kernel.gtg(alpha * self.y)
        J = 0.5 * np.trace(sigma) + alpha.sum() - 0.5 * float(np.sum(sigma * GtG))
        return SubSolution(alpha, J, GtG, K)

    def certify(self, sigma: np.ndarray, sub: SubSolution) -> tuple[float, float]:
        """The primal upper bound of ``W = G S`` with its best bias, and the best dual lower bound so far."""
        t0 = time.perf_counter()
        n, w = sub.gram.shape[0], sigma.shape[0]
        with blas_for(float(n) * n + 30.0 * w**3):
            # <G S, X_i> = sum_j a_j tr(S X_j' X_i) = (K(S) a)_i
            scores = sub.gram @ (sub.alpha * self.y)
            self.bias = best_bias(scores, self.y)
            hinge = np.maximum(0.0, 1.0 - self.y * (scores + self.bias)).sum()
            primal = trace_norm_from_gtg(sigma, sub.gtg) + self.C * float(hinge)
            # alpha / max(1, ||G||_2) is feasible for the dual of (2): box scaled down, y'alpha = 0 kept
            top = float(np.linalg.eigvalsh(sub.gtg)[-1]) if sub.gtg.size else 0.0
        dual = float(sub.alpha.sum()) / max(1.0, np.sqrt(max(top, 0.0)))
        self.best_dual = max(self.best_dual, dual)
        self.timings["certificate"] += time.perf_counter() - t0
        return primal, self.best_dual


def gradient_rounding(K: np.ndarray, C: float) -> float:
    """The rounding error of the SMO's gradient ``1 - y_i sum_j alpha_j y_j K_ij`` in double precision,
    ``eps * C * max_i sum_j |K_ij|``: no KKT tolerance below it can be met (the block SMO of the cross-modal
    problem applies the same floor to float32 kernels), so the sub-problems take it as their floor.  It
    matters only for kernels whose entries dwarf the margin (samples scaled by 1e6 and more)."""
    return float(np.finfo(np.float64).eps) * C * float(np.abs(K).sum(axis=1).max(initial=0.0))


def sub_problem_max_iter(n: int) -> int:
    """SMO steps allowed per SVM sub-problem: a well-scaled sub-problem of ``n`` samples needs a few times ``n``
    (warm-started, far fewer); one whose kernel entries dwarf the KKT tolerance (samples scaled by 1e6 and more)
    cannot reach it and would run to the SMO's own limit of 10^7 steps at every line-search trial.  Stopped
    here, the inexact solution shows as a certified gap that does not close (a ConvergenceWarning)."""
    return max(100_000, 1000 * n)


def _relative_gap(primal: float, dual: float) -> float:
    return max(primal - dual, 0.0) / max(abs(primal), np.finfo(float).tiny)


@attrs.frozen
class PSDResult:
    """What :func:`minimize_psd` returns: the last accepted iterate and its certificate."""

    sigma: np.ndarray
    sub: object
    primal: float
    dual: float
    gap: float
    n_iter: int
    converged: bool
    history: list


def minimize_psd(prob, sigma: np.ndarray, alpha0: object = None, *, tol: float = 1e-3, max_iter: int = 500,
                 min_inner_tol: float = 1e-10, stall_window: int = 20,
                 callback: Callable[[PSDResult], None] | None = None) -> PSDResult:
    """Projected gradient on the PSD cone for ``min_S J(S)`` (section 3.2), for any problem ``prob``.

    ``prob.svm(S, alpha0, factor)`` returns the sub-problem's solution with ``objective`` (``J(S)``) and
    ``gtg`` (``G'G``, so that ``grad J = 1/2 (I - G'G)``); ``prob.certify(S, sub)`` returns the primal upper
    bound and the best dual lower bound.  The step is Armijo backtracking along the projection arc; see
    :func:`fit_trace_norm` for the stopping rules.  ``callback(result)`` is called with the start and with every
    accepted iterate (the certified state an interrupted fit keeps).
    """
    w = sigma.shape[0]
    start = time.perf_counter()
    sub = prob.svm(sigma, alpha0)
    primal, dual = prob.certify(sigma, sub)
    gap = _relative_gap(primal, dual)
    history = [dict(objective=sub.objective, primal=primal, dual=dual, gap=gap,
                    rank=int(psd_factor(sigma, 1e-6)[1].size), step=0.0, time=time.perf_counter() - start)]
    step = 1.0
    n_iter = 0

    def result() -> PSDResult:
        return PSDResult(sigma=sigma, sub=sub, primal=primal, dual=dual, gap=gap, n_iter=n_iter,
                         converged=gap <= tol, history=list(history))

    if callback is not None:
        callback(result())
    while gap > tol and n_iter < max_iter:
        grad = 0.5 * (np.eye(w) - sub.gtg)
        accepted = False
        eta = step
        for _ in range(_MAX_BACKTRACKS):
            t0 = time.perf_counter()
            # a small (w, w) eigh is many times slower with a BLAS thread pool than on one thread
            with blas_for(10.0 * w**3):
                V, lam = psd_factor(sigma - eta * grad)
                trial = (V * lam) @ V.T
            prob.timings["eig"] += time.perf_counter() - t0
            diff = trial - sigma
            decrease = float(np.sum(grad * diff))
            if not np.any(diff) or decrease >= 0:
                break  # projected-gradient stationary at this accuracy
            sub_t = prob.svm(trial, sub.alpha, (V, lam))
            if sub_t.objective <= sub.objective + _ARMIJO * decrease:
                accepted = True
                break
            eta *= _BACKTRACK
        if not accepted:
            if prob.inner_tol <= min_inner_tol:
                break
            # the inexact inner solution is what blocks the descent: solve it more accurately at sigma
            prob.inner_tol = max(prob.inner_tol / 10, min_inner_tol)
            sub = prob.svm(sigma, sub.alpha)
            primal, dual = prob.certify(sigma, sub)
            gap = _relative_gap(primal, dual)
            continue
        sigma, sub = trial, sub_t
        step = 2 * eta
        n_iter += 1
        primal, dual = prob.certify(sigma, sub)
        gap = _relative_gap(primal, dual)
        history.append(dict(objective=sub.objective, primal=primal, dual=dual, gap=gap,
                            rank=int(lam.size if lam.size == 0 else (lam > 1e-6 * lam.max()).sum()),
                            step=eta, time=time.perf_counter() - start))
        if callback is not None:
            callback(result())
        if n_iter >= stall_window:
            before = history[-1 - stall_window]["objective"]
            if before - sub.objective <= 0.1 * tol * abs(sub.objective):
                break
    return result()


def fit_trace_norm(
    X: np.ndarray,
    y: np.ndarray,
    C: float = 1.0,
    *,
    tol: float = 1e-3,
    max_iter: int = 500,
    inner_tol: float = 1e-5,
    min_inner_tol: float = 1e-10,
    stall_window: int = 20,
    sigma0: np.ndarray | None = None,
    alpha0: np.ndarray | None = None,
    callback: Callable[[Callable[[], BilinearFit]], None] | None = None,
) -> BilinearFit:
    """Fit the trace-norm bilinear classifier by projected gradient on ``S`` (Kobayashi 2014, section 3.2).

    Parameters
    ----------
    X : ndarray of shape (n, h, w)
        Matrix-valued samples; the learnt ``S`` is ``(w, w)``, so put the smaller side last.
    y : ndarray of shape (n,)
        Labels in {-1, +1}, both present.
    C : float, default=1.0
        Hinge-loss weight.
    tol : float, default=1e-3
        Stop when the certified relative duality gap is at most ``tol``.
    max_iter : int, default=500
        Maximal number of accepted projected-gradient steps (a ``ConvergenceWarning`` when reached).
    inner_tol : float, default=1e-5
        Initial KKT tolerance of the SMO; divided by 10 (down to ``min_inner_tol``) whenever the line search
        cannot decrease ``J``, because then the inexact ``alpha`` is what limits the progress.
    min_inner_tol : float, default=1e-10
        Floor of the SMO tolerance.
    stall_window : int, default=20
        Safeguard: also stop (with a ``ConvergenceWarning`` giving the certified gap) when ``J`` decreased
        by less than ``tol / 10`` relatively over the last ``stall_window`` accepted steps.  ``J`` is not
        smooth where the SVM solution is not unique (a rank-deficient learnt kernel), and there projected
        gradient can crawl while the gap stays above ``tol``.
    sigma0 : ndarray of shape (w, w), optional
        Start (PSD); default the identity, where the sub-problem is the linear SVM on ``vec(X)``.
    alpha0 : ndarray of shape (n,), optional
        Warm start of the first SVM solve.
    callback : callable, optional
        Called with the start and every accepted step as ``callback(snapshot)``; ``snapshot()`` returns the
        :class:`BilinearFit` of that iterate (what an interrupted fit keeps).

    Returns
    -------
    BilinearFit
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = X.shape[2]
    prob = _Problem(MatrixKernel(X), y, float(C), float(inner_tol))
    sigma = np.eye(w) if sigma0 is None else np.array(sigma0, dtype=np.float64)

    def on_step(res: PSDResult) -> None:
        bias = prob.bias  # certify set it for this iterate
        callback(lambda: _bilinear_fit(res, bias, X, y, prob.timings))

    res = minimize_psd(prob, sigma, alpha0, tol=tol, max_iter=max_iter, min_inner_tol=min_inner_tol,
                       stall_window=stall_window, callback=None if callback is None else on_step)
    if not res.converged and max_iter > 0:
        warnings.warn(f"the trace-norm bilinear fit stopped after {res.n_iter} steps with a certified relative "
                      f"gap {res.gap:.2e} > tol={tol:g}; raise max_iter or tol", ConvergenceWarning, stacklevel=2)
    return _bilinear_fit(res, prob.bias, X, y, prob.timings)


def _bilinear_fit(res: PSDResult, bias: float, X: np.ndarray, y: np.ndarray, timings: dict) -> BilinearFit:
    alpha = res.sub.alpha
    coef = np.tensordot(alpha * y, X, axes=1) @ res.sigma  # eq. (18)
    return BilinearFit(sigma=res.sigma, alpha=alpha, bias=bias, coef=coef, objective=res.sub.objective,
                       primal=res.primal, dual=res.dual, gap=res.gap, n_iter=res.n_iter, converged=res.converged,
                       history=res.history, timings=dict(timings))
