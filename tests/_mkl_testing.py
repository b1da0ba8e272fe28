"""Shared helpers of the MKL tests: small random problems and the cvxpy + Clarabel reference.

The reference solves the MKL saddle point from the dual side,

    max_{alpha in A}  1'alpha - dual_bound(q(alpha)/2),   q_m(alpha) = ||L_m'(alpha*y)||^2,  K_m = L_m L_m',

which equals the primal optimum (the min-max is convex-concave and the domains are compact).  Each
``dual_bound`` is written as a conic expression: it is convex and non-decreasing in ``g``, so replacing
``q/2`` by an epigraph variable ``t >= q/2`` is exact.
"""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np

from multikernel.core.interfaces import MKLProblem, MKLResult, Regularizer, Solver
from multikernel.plugins.losses import CSVCLoss
from multikernel.stack.storage import DenseStack


def random_problem(seed: int, n: int = 20, M: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """``M`` PSD kernels of trace ``n`` on ``n`` points (some informative, some not) and labels."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] + 0.7 * rng.normal(size=n) >= 0, 1.0, -1.0)
    if abs(y.sum()) == n:  # both classes are needed
        y[0] = -y[0]
    kernels = []
    for m in range(M):
        Z = rng.normal(size=(n, 1 + m % 3))
        if m % 2 == 0:
            Z[:, 0] += (1.0 + m) * X[:, 0]
        if m % 3 == 2:  # a Gaussian kernel, to mix ranks
            d2 = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
            K = np.exp(-d2 / (2.0 * np.median(d2[d2 > 0])))
        else:
            K = Z @ Z.T
        kernels.append(K * (n / np.trace(K)))
    return np.array(kernels), y


def solve_mkl(Ks: np.ndarray, y: np.ndarray, regularizer: Regularizer, solver: Solver, C: float = 1.0,
              tol: float = 1e-6, inner_tol: float = 1e-8, max_iter: int = 500, **kw) -> MKLResult:
    """Our solver on the problem, with tight tolerances (the reference comparisons need them)."""
    problem = MKLProblem(stack=DenseStack(Ks), y=y, loss=CSVCLoss(C=C), regularizer=regularizer, tol=tol,
                         inner_tol=inner_tol, max_iter=max_iter, **kw)
    return solver.solve(problem)


def decision_values(Ks: np.ndarray, res: MKLResult) -> np.ndarray:
    """Training decision values ``K(mu) coef + b`` of a fitted result."""
    return np.tensordot(res.weights, Ks, axes=1) @ res.coef + res.bias


def cvx_dual_bound(reg: Regularizer, t: cp.Expression, M: int) -> tuple[cp.Expression, list]:
    """``dual_bound(t)`` as a convex cvxpy expression (and constraints on auxiliary variables)."""
    name = reg.name
    if name == "uniform":
        return cp.sum(t) / M, []
    if name == "simplex":
        return cp.max(t), []
    if name == "box_simplex":
        theta = reg.cap(M)
        lam, s = cp.Variable(), cp.Variable(M, nonneg=True)
        return lam + theta * cp.sum(s), [s >= t - lam]
    if name in ("simplex_l2", "simplex_power"):
        p = float(reg.p)
        kappa = reg.kappa()
        r = p / (p - 1.0)
        c = (1.0 - 1.0 / p) * (kappa * p) ** (-1.0 / (p - 1.0))
        lam = cp.Variable()
        return lam + c * cp.sum(cp.power(cp.pos(t - lam), r)), []
    if name in ("lp_ball", "l2_ball"):
        p = float(reg.p)
        if p == 1.0:
            return cp.max(t), []
        if math.isinf(p):
            return cp.sum(t), []
        return cp.norm(t, p / (p - 1.0)), []
    if name == "elastic_net":
        v = float(reg.v)
        if v == 1.0:
            return cp.max(t), []
        lam, s = cp.Variable(nonneg=True), cp.Variable(M, nonneg=True)
        return lam + cp.quad_over_lin(s, 4.0 * (1.0 - v) * lam), [s >= t - lam * v]
    raise ValueError(f"no cvxpy form for {name}")


def reference_value(Ks: np.ndarray, y: np.ndarray, reg: Regularizer, C: float = 1.0) -> float:
    """The optimal MKL objective by cvxpy + Clarabel (C-SVC inner problem)."""
    M, n = Ks.shape[0], Ks.shape[1]
    alpha, t = cp.Variable(n), cp.Variable(M)
    cons = [alpha >= 0, alpha <= C, y @ alpha == 0]
    ay = cp.multiply(y, alpha)
    for m in range(M):
        w, V = np.linalg.eigh(Ks[m])
        keep = w > 1e-12 * w.max()  # the zero eigenvalues only make the cone constraint degenerate
        L = V[:, keep] * np.sqrt(w[keep])
        cons.append(0.5 * cp.sum_squares(L.T @ ay) <= t[m])
    bound, extra = cvx_dual_bound(reg, t, M)
    prob = cp.Problem(cp.Maximize(cp.sum(alpha) - bound), cons + extra)
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL, prob.status
    return float(prob.value)


def kernel_slack_value(Ks: np.ndarray, y: np.ndarray, theta: float, r: float | None, C: float = 1.0) -> float:
    """The soft margin MKL in the paper's own kernel-slack form, by cvxpy + Clarabel.

    ``max_{alpha, tau, zeta >= 0} tau - theta sum_m zeta_m`` (hinge, ``r = None``, (3.10)) or
    ``tau - (theta/2) sum_m zeta_m^r`` (``r = 2``: square hinge (3.12); ``r = p/(p-1)``: the thesis's
    generalization), subject to ``S_m(alpha) >= tau - zeta_m``, with ``S_m(alpha) = 1'alpha - q_m(alpha)/2``
    the C-SVC dual objective of kernel m (the thesis's SVM{K_m, alpha} in the C-SVC form).  Its optimum is
    the MKL optimum of the matching regularizer (Propositions 3 and 4), which checks our mu-side forms.
    """
    M, n = Ks.shape[0], Ks.shape[1]
    alpha, tau, zeta = cp.Variable(n), cp.Variable(), cp.Variable(M, nonneg=True)
    ay = cp.multiply(y, alpha)
    cons = [alpha >= 0, alpha <= C, y @ alpha == 0]
    for m in range(M):
        w, V = np.linalg.eigh(Ks[m])
        keep = w > 1e-12 * w.max()
        L = V[:, keep] * np.sqrt(w[keep])
        cons.append(cp.sum(alpha) - 0.5 * cp.sum_squares(L.T @ ay) >= tau - zeta[m])
    loss = theta * cp.sum(zeta) if r is None else 0.5 * theta * cp.sum(cp.power(zeta, r))
    prob = cp.Problem(cp.Maximize(tau - loss), cons)
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL, prob.status
    return float(prob.solution.opt_val)
