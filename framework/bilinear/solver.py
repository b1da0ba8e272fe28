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

import attrs
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from multikernel.solve.smo import solve_qp

__all__ = ["BilinearFit", "fit_trace_norm", "best_bias", "primal_objective", "psd_factor"]

# Armijo sufficient-decrease constant and backtracking factor (spec section 12 defaults).
_ARMIJO = 1e-4
_BACKTRACK = 0.5
_MAX_BACKTRACKS = 40
_SERIAL_EIGH = 256


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
        Per accepted step: ``objective``, ``primal``, ``dual``, ``gap``, ``rank``, ``step``, ``time``.
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


def _gram(X: np.ndarray, sigma: np.ndarray, factor: tuple | None = None) -> np.ndarray:
    """``K_ij = tr(S X_i' X_j)`` by the factor route: ``Y_i = X_i W_w``, ``K = <vec Y_i, vec Y_j>``.

    ``factor`` is ``psd_factor(sigma)`` when the caller has it (the projection step computes it anyway).
    """
    V, lam = psd_factor(sigma) if factor is None else factor
    if lam.size == 0:
        return np.zeros((X.shape[0], X.shape[0]))
    n, h, w = X.shape
    # one (n h, w) x (w, r) product: a batched 3-D matmul is several times slower
    Y = (X.reshape(n * h, w) @ (V * np.sqrt(lam))).reshape(n, -1)
    return Y @ Y.T


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


class _Problem:
    """Bookkeeping of one binary problem: SVM solves with warm start, bounds, timings."""

    def __init__(self, X: np.ndarray, y: np.ndarray, C: float, inner_tol: float) -> None:
        self.X, self.y, self.C, self.inner_tol = X, y, C, inner_tol
        self.timings = {"svm": 0.0, "gram": 0.0, "eig": 0.0, "certificate": 0.0}
        self.best_dual = -np.inf

    def svm(self, sigma: np.ndarray, alpha0: np.ndarray | None,
            factor: tuple | None = None) -> tuple[np.ndarray, float, float, np.ndarray]:
        """Solve sub-problem (15) at ``sigma``: returns ``alpha``, the SVM bias, ``J(sigma)`` and ``G'G``."""
        t0 = time.perf_counter()
        K = _gram(self.X, sigma, factor)
        t1 = time.perf_counter()
        with warnings.catch_warnings():
            # K(S) is PSD in exact arithmetic; rounding can show tiny negative curvature on rank-deficient S
            warnings.filterwarnings("ignore", category=RuntimeWarning, message=".*semi-definite.*")
            res = solve_qp(K, self.y, p=-1.0, lower=0.0, upper=self.C, y_sum=0.0, alpha0=alpha0,
                           tol=self.inner_tol)
        t2 = time.perf_counter()
        self.timings["gram"] += t1 - t0
        self.timings["svm"] += t2 - t1
        alpha = res.alpha
        G = np.tensordot(alpha * self.y, self.X, axes=1)
        GtG = G.T @ G
        J = 0.5 * np.trace(sigma) + alpha.sum() - 0.5 * float(np.sum(sigma * GtG))
        return alpha, float(res.bias), J, GtG

    def certify(self, sigma: np.ndarray, alpha: np.ndarray) -> tuple[np.ndarray, float, float, float]:
        """``W = G S``, its best bias, the primal upper bound and the best dual lower bound so far."""
        t0 = time.perf_counter()
        G = np.tensordot(alpha * self.y, self.X, axes=1)
        coef = G @ sigma
        scores = np.tensordot(self.X, coef, axes=([1, 2], [0, 1]))
        bias = best_bias(scores, self.y)
        primal = primal_objective(coef, bias, self.X, self.y, self.C)
        # alpha / max(1, ||G||_2) is feasible for the dual of (2): box scaled down, y'alpha = 0 kept
        dual = float(alpha.sum()) / max(1.0, float(np.linalg.norm(G, 2)))
        self.best_dual = max(self.best_dual, dual)
        self.timings["certificate"] += time.perf_counter() - t0
        return coef, bias, primal, self.best_dual


def _relative_gap(primal: float, dual: float) -> float:
    return max(primal - dual, 0.0) / max(abs(primal), np.finfo(float).tiny)


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

    Returns
    -------
    BilinearFit
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, _, w = X.shape
    prob = _Problem(X, y, float(C), float(inner_tol))
    sigma = np.eye(w) if sigma0 is None else np.array(sigma0, dtype=np.float64)
    alpha, _, J, GtG = prob.svm(sigma, alpha0)
    coef, bias, primal, dual = prob.certify(sigma, alpha)
    gap = _relative_gap(primal, dual)
    start = time.perf_counter()
    history = [dict(objective=J, primal=primal, dual=dual, gap=gap, rank=int(psd_factor(sigma, 1e-6)[1].size),
                    step=0.0, time=0.0)]
    step = 1.0
    n_iter = 0
    while gap > tol and n_iter < max_iter:
        grad = 0.5 * (np.eye(w) - GtG)
        accepted = False
        eta = step
        for _ in range(_MAX_BACKTRACKS):
            t0 = time.perf_counter()
            # a small (w, w) eigh is several times slower with a BLAS thread pool than on one thread
            with threadpool_limits(limits=1 if w <= _SERIAL_EIGH else None):
                V, lam = psd_factor(sigma - eta * grad)
            trial = (V * lam) @ V.T
            prob.timings["eig"] += time.perf_counter() - t0
            diff = trial - sigma
            decrease = float(np.sum(grad * diff))
            if not np.any(diff) or decrease >= 0:
                break  # projected-gradient stationary at this accuracy
            alpha_t, _, J_t, GtG_t = prob.svm(trial, alpha, (V, lam))
            if J_t <= J + _ARMIJO * decrease:
                accepted = True
                break
            eta *= _BACKTRACK
        if not accepted:
            if prob.inner_tol <= min_inner_tol:
                break
            # the inexact inner solution is what blocks the descent: solve it more accurately at sigma
            prob.inner_tol = max(prob.inner_tol / 10, min_inner_tol)
            alpha, _, J, GtG = prob.svm(sigma, alpha)
            coef, bias, primal, dual = prob.certify(sigma, alpha)
            gap = _relative_gap(primal, dual)
            continue
        sigma, alpha, J, GtG = trial, alpha_t, J_t, GtG_t
        step = 2 * eta
        n_iter += 1
        coef, bias, primal, dual = prob.certify(sigma, alpha)
        gap = _relative_gap(primal, dual)
        history.append(dict(objective=J, primal=primal, dual=dual, gap=gap,
                            rank=int(lam.size if lam.size == 0 else (lam > 1e-6 * lam.max()).sum()),
                            step=eta, time=time.perf_counter() - start))
        if n_iter >= stall_window:
            before = history[-1 - stall_window]["objective"]
            if before - J <= 0.1 * tol * abs(J):
                break
    converged = gap <= tol
    if not converged:
        warnings.warn(f"the trace-norm bilinear fit stopped after {n_iter} steps with a certified relative "
                      f"gap {gap:.2e} > tol={tol:g}; raise max_iter or tol", ConvergenceWarning, stacklevel=2)
    return BilinearFit(sigma=sigma, alpha=alpha, bias=bias, coef=coef, objective=J, primal=primal, dual=dual,
                       gap=gap, n_iter=n_iter, converged=converged, history=history, timings=prob.timings)
