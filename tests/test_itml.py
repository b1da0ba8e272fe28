"""ITML, ITML+ and partial ITML+: the compiled projections against independent references.

References: a plain numpy transcription of Davis et al.'s Algorithm 1 (in the form of their MATLAB code and
metric-learn), a plain numpy transcription of Xu's Proposition 11 / Lemma 5.5 (the spec's formulas verbatim),
metric-learn's ITML where it runs, and cvxpy + Clarabel for the optimisation problems themselves.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import brentq
from sklearn.exceptions import ConvergenceWarning

from multikernel import ITML, ITMLPlus
from multikernel.metric.itml import BregmanState, run_projections

TIGHT = {"tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11, "tol_feas": 1e-11, "max_iter": 500}  # Clarabel
# ----------------------------------------------------------------------------------------------------------
# References (slow and obviously correct)
# ----------------------------------------------------------------------------------------------------------


def davis_itml(V, y, xi0, gamma, tol, max_iter, A0):
    """Davis et al. (2007) Algorithm 1 as in their MATLAB code ItmlAlg.m (and metric-learn), pair by pair."""
    A, lam, lamold, b = A0.copy(), np.zeros(len(y)), np.zeros(len(y)), xi0.copy()
    gp = gamma / (gamma + 1.0)
    for it in range(max_iter):
        for i, v in enumerate(V):
            wtw = v @ A @ v
            if y[i] > 0:
                alpha = min(lam[i], gp * (1.0 / wtw - 1.0 / b[i]))
                lam[i] -= alpha
                beta = alpha / (1.0 - alpha * wtw)
                b[i] = 1.0 / (1.0 / b[i] + alpha / gamma)
            else:
                alpha = min(lam[i], gp * (1.0 / b[i] - 1.0 / wtw))
                lam[i] -= alpha
                beta = -alpha / (1.0 + alpha * wtw)
                b[i] = 1.0 / (1.0 / b[i] - alpha / gamma)
            Av = A @ v
            A = A + beta * np.outer(Av, Av)
        normsum = np.linalg.norm(lam) + np.linalg.norm(lamold)
        if normsum == 0:
            return A, it + 1, lam, b
        if np.abs(lamold - lam).sum() / normsum < tol:
            return A, it + 1, lam, b
        lamold = lam.copy()
    return A, max_iter, lam, b


def xu_partial_itmlplus(X, Z, pairs, y, priv, xi0, M0, P0, gamma, lam, correction, tol, max_iter):
    """Partial ITML+ (5.30): Proposition 11 with Lemma 5.5 for privileged pairs, Davis et al. for the others.

    The formulas are the spec's (5.11)-(5.13), (5.23)-(5.24) verbatim, on full matrices; ``correction`` lets
    alpha go down to minus the pair's accumulated multiplier instead of 0.
    """
    M, P, xi = M0.copy(), P0.copy(), xi0.copy()
    m = len(y)
    nu, bsum = np.zeros(m), np.zeros(m)
    old = np.zeros(2 * m)
    gp = gamma / (gamma + 1.0)
    for sweep in range(max_iter):
        for k, (i, j) in enumerate(pairs):
            v = X[i] - X[j]
            r = v @ M @ v
            if priv[k]:
                w = Z[i] - Z[j]
                s = w @ P @ w
                alpha = (gamma / xi[k] + lam / s - (lam + gamma) / r) / (y[k] * (lam + gamma + 1.0))
                alpha = max(-nu[k] if correction else 0.0, alpha)
                beta = lam / (lam + gamma) * (gamma / s - gamma / xi[k] + y[k] * alpha)
                Mv, Pw = M @ v, P @ w
                M = M - y[k] * alpha * np.outer(Mv, Mv) / (1.0 + y[k] * alpha * r)
                P = P + beta * np.outer(Pw, Pw) / (lam - beta * s)
                xi[k] = lam * s / (lam - s * beta)
                nu[k] += alpha
                bsum[k] += beta
            else:  # Davis et al. in the MATLAB form; their lambda is our nu
                if y[k] > 0:
                    a = min(nu[k], gp * (1.0 / r - 1.0 / xi[k]))
                    step = a / (1.0 - a * r)
                    xi[k] = 1.0 / (1.0 / xi[k] + a / gamma)
                else:
                    a = min(nu[k], gp * (1.0 / xi[k] - 1.0 / r))
                    step = -a / (1.0 + a * r)
                    xi[k] = 1.0 / (1.0 / xi[k] - a / gamma)
                nu[k] -= a
                Mv = M @ v
                M = M + step * np.outer(Mv, Mv)
        new = np.concatenate([nu, bsum])
        normsum = np.linalg.norm(new) + np.linalg.norm(old)
        if normsum == 0 or np.abs(new - old).sum() / normsum < tol:
            return M, P, xi, sweep + 1
        old = new
    return M, P, xi, max_iter


def objectives(X, Z, pairs, y, priv, xi0, M0, P0, gamma, lam, state):
    """Primal objective (5.6) at the state, and the Lagrangian at the state and its duals (the dual value)."""
    V = X[pairs[:, 0]] - X[pairs[:, 1]]
    r = np.einsum("ij,ij->i", V @ state.M, V)
    h = M0.shape[0]
    f = np.trace(state.M @ np.linalg.inv(M0)) - np.linalg.slogdet(state.M @ np.linalg.inv(M0))[1] - h
    f += gamma * np.sum(state.xi / xi0 - np.log(state.xi / xi0) - 1.0)
    dual = np.sum(state.nu * y * (r - state.xi))
    if priv.any():
        W = Z[pairs[:, 0]] - Z[pairs[:, 1]]
        s = np.einsum("ij,ij->i", W @ state.P, W)
        g = P0.shape[0]
        f += lam * (np.trace(state.P @ np.linalg.inv(P0)) - np.linalg.slogdet(state.P @ np.linalg.inv(P0))[1] - g)
        dual += np.sum((state.beta * (state.xi - s))[priv])
    return f, f + dual


# ----------------------------------------------------------------------------------------------------------
# Problems
# ----------------------------------------------------------------------------------------------------------


def make_problem(seed, n=40, h=4, g=5, m=30, n_classes=3):
    """Random labelled samples, a privileged view that is a linear map of the main one plus class signal."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, n)
    X = rng.normal(size=(n, h)) + 0.8 * labels[:, None]
    A = rng.normal(size=(h, g))
    Z = X @ A / np.sqrt(h) + 0.3 * rng.normal(size=(n, g))
    pairs = np.array([rng.choice(n, 2, replace=False) for _ in range(m)], dtype=np.intp)
    y = np.where(labels[pairs[:, 0]] == labels[pairs[:, 1]], 1.0, -1.0)
    d = np.einsum("ij,ij->i", X[pairs[:, 0]] - X[pairs[:, 1]], X[pairs[:, 0]] - X[pairs[:, 1]])
    bounds = np.percentile(d, [20, 80])
    return X, Z, pairs, y, bounds


def solve(X, Z, pairs, y, priv, bounds, gamma, lam=1.0, correction=True, tol=1e-3, max_iter=1000, M0=None, P0=None):
    h, g = X.shape[1], Z.shape[1]
    state = BregmanState.start(np.eye(h) if M0 is None else M0, np.eye(g) if P0 is None else P0,
                               np.where(y > 0, bounds[0], bounds[1]))
    n, conv = run_projections(X, Z, pairs, y, priv, state, gamma=gamma, lam=lam, dual_correction=correction,
                              tol=tol, max_iter=max_iter)
    return state, n, conv


def as_pair_array(X, pairs):
    return np.stack([X[pairs[:, 0]], X[pairs[:, 1]]], axis=1)


# ----------------------------------------------------------------------------------------------------------
# ITML
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("gamma", [0.01, 1.0, 10.0])
def test_itml_equals_davis_transcription(seed, gamma):
    X, Z, pairs, y, bounds = make_problem(seed)
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(4, 4))
    M0 = B @ B.T + np.eye(4)
    A, sweeps, lam, b = davis_itml(X[pairs[:, 0]] - X[pairs[:, 1]], y, np.where(y > 0, *bounds), gamma, 1e-6,
                                   500, M0)
    est = ITML(gamma=gamma, tol=1e-6, max_iter=500, prior=M0).fit(as_pair_array(X, pairs), y, bounds=bounds)
    M = est.get_mahalanobis_matrix()
    assert est.n_iter_ == sweeps
    assert np.linalg.norm(M - A) <= 1e-10 * np.linalg.norm(A)
    state, n, _ = solve(X, Z, pairs, y, np.zeros(len(y), bool), bounds, gamma, tol=1e-6, max_iter=500, M0=M0)
    np.testing.assert_allclose(state.nu, lam, rtol=1e-8, atol=1e-12)  # the duals are Davis's lambda
    np.testing.assert_allclose(state.xi, b, rtol=1e-9)


def _metric_learn_itml():
    ml = pytest.importorskip("metric_learn", reason="metric-learn is not installed (pip install metric-learn)")
    X = np.random.default_rng(0).normal(size=(4, 2, 2))
    try:
        ml.ITML().fit(X, np.array([1, 1, -1, -1]))
    except TypeError as exc:  # metric-learn 0.7.0 passes force_all_finite, removed in scikit-learn 1.8
        pytest.skip(f"metric-learn {ml.__version__} cannot run with this scikit-learn: {exc}")
    return ml.ITML


def test_itml_equals_metric_learn():
    MLITML = _metric_learn_itml()
    X, Z, pairs, y, bounds = make_problem(3)
    order = np.argsort(-y, kind="stable")  # metric-learn sweeps all similar pairs, then all dissimilar ones
    P3 = as_pair_array(X, pairs[order])
    ref = MLITML(gamma=0.5, tol=1e-9, max_iter=2000).fit(P3, y[order], bounds=bounds)
    ours = ITML(gamma=0.5, tol=1e-9, max_iter=2000).fit(P3, y[order], bounds=bounds)
    A = ref.get_mahalanobis_matrix()
    assert np.linalg.norm(ours.get_mahalanobis_matrix() - A) <= 1e-6 * np.linalg.norm(A)


def test_itml_reaches_the_optimum_of_its_problem():
    """Converged ITML is the minimiser of (5.2), found independently by cvxpy (LogDet + exponential cones)."""
    cp = pytest.importorskip("cvxpy")
    X, Z, pairs, y, bounds = make_problem(4, h=3, m=20)
    gamma = 0.5
    xi0 = np.where(y > 0, bounds[0], bounds[1])
    state, n, conv = solve(X, Z, pairs, y, np.zeros(len(y), bool), bounds, gamma, tol=1e-12, max_iter=20000)
    assert conv < 1e-12
    Mv = cp.Variable((3, 3), PSD=True)
    xi = cp.Variable(len(y))
    V = X[pairs[:, 0]] - X[pairs[:, 1]]
    d = cp.hstack([cp.quad_form(v, Mv, assume_PSD=True) for v in V])
    loss = cp.sum(cp.multiply(xi, 1 / xi0) - cp.log(xi))
    prob = cp.Problem(cp.Minimize(cp.trace(Mv) - cp.log_det(Mv) + gamma * loss), [cp.multiply(y, d - xi) <= 0])
    prob.solve(solver=cp.CLARABEL, **TIGHT)
    assert np.linalg.norm(state.M - Mv.value) <= 1e-5 * np.linalg.norm(Mv.value)
    np.testing.assert_allclose(state.xi, xi.value, rtol=1e-5)


@pytest.mark.parametrize("seed", [0, 5])
def test_itml_state_is_spd_feasible_and_stationary(seed):
    X, Z, pairs, y, bounds = make_problem(seed)
    state, n, conv = solve(X, Z, pairs, y, np.zeros(len(y), bool), bounds, gamma=2.0, tol=1e-10, max_iter=20000)
    assert conv < 1e-10
    assert np.allclose(state.M, state.M.T, rtol=0, atol=0)
    assert np.linalg.eigvalsh(state.M)[0] > 0
    V = X[pairs[:, 0]] - X[pairs[:, 1]]
    r = np.einsum("ij,ij->i", V @ state.M, V)
    scale = np.abs(state.xi).max()
    assert np.all(y * (r - state.xi) <= 1e-7 * scale)  # every constraint holds within its slack
    active = state.nu > 1e-8
    assert np.allclose(r[active], state.xi[active], rtol=1e-6)  # complementary slackness
    assert np.all(state.nu >= 0)
    # the state minimises the Lagrangian: M^-1 = M0^-1 + sum nu y v v', gamma/xi = gamma/xi0 - nu y
    inv = np.eye(4) + (V.T * (state.nu * y)) @ V
    np.testing.assert_allclose(np.linalg.inv(state.M), inv, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(2.0 / state.xi, 2.0 / np.where(y > 0, *bounds) - state.nu * y, rtol=1e-9)


@pytest.mark.parametrize("prior", ["identity", "spd"])
def test_itml_returns_prior_when_constraints_hold(prior):
    rng = np.random.default_rng(0)
    B = rng.normal(size=(3, 3))
    M0 = np.eye(3) if prior == "identity" else B @ B.T + 0.5 * np.eye(3)
    # similar pairs at squared M0-distance 0.5, dissimilar ones at 3: all inside (l, u) = (1, 2)
    L = np.linalg.cholesky(np.linalg.inv(M0))  # d_M0(L e) = e' e
    dirs = rng.normal(size=(12, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    y = np.where(np.arange(12) % 2 == 0, 1.0, -1.0)
    diffs = (dirs * np.sqrt(np.where(y > 0, 0.5, 3.0))[:, None]) @ L.T
    base = rng.normal(size=(12, 3))
    pairs = np.stack([base + diffs, base], axis=1)
    est = ITML(prior="identity" if prior == "identity" else M0).fit(pairs, y, bounds=(1.0, 2.0))
    assert est.n_iter_ == 1
    np.testing.assert_array_equal(est.get_mahalanobis_matrix(), M0 if prior == "spd" else np.eye(3))


def test_itml_dual_increases_at_every_sweep():
    """Cyclic Bregman projection is coordinate ascent on the dual: its value never decreases.

    (The primal objective starts at 0 at the unconstrained minimiser M0 and is not monotone; the negated dual
    is the objective that decreases monotonically.)"""
    X, Z, pairs, y, bounds = make_problem(6, m=40)
    xi0 = np.where(y > 0, bounds[0], bounds[1])
    state = BregmanState.start(np.eye(4), np.eye(5), xi0)
    priv = np.zeros(len(y), bool)
    values = [objectives(X, Z, pairs, y, priv, xi0, np.eye(4), np.eye(5), 1.0, 1.0, state)[1]]
    for _ in range(40):
        run_projections(X, Z, pairs, y, priv, state, gamma=1.0, tol=1e-300, max_iter=1)
        values.append(objectives(X, Z, pairs, y, priv, xi0, np.eye(4), np.eye(5), 1.0, 1.0, state)[1])
    assert np.all(np.diff(values) >= -1e-10 * abs(values[-1]))
    assert values[-1] > values[0]


# ----------------------------------------------------------------------------------------------------------
# ITML+: one projection
# ----------------------------------------------------------------------------------------------------------


def _one_pair(seed, y_pair):
    rng = np.random.default_rng(seed)
    h, g = 3, 4
    B, C = rng.normal(size=(h, h)), rng.normal(size=(g, g))
    M, P = B @ B.T + 0.3 * np.eye(h), C @ C.T + 0.3 * np.eye(g)
    v, w = rng.normal(size=h), rng.normal(size=g)
    xi = float(rng.uniform(0.2, 5.0))
    gamma, lam = 10 ** rng.uniform(-2, 1), 10 ** rng.uniform(-1, 1)
    r, s = v @ M @ v, w @ P @ w
    # scale M so that the projection moves it (alpha > 0): r beyond both xi and s on the violating side
    M = M * ((4.0 * max(xi, s) if y_pair > 0 else 0.25 * min(xi, s)) / r)
    return M, P, v, w, xi, gamma, lam


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("y_pair", [1.0, -1.0])
def test_itmlplus_projection_matches_1d_root(seed, y_pair):
    """Proposition 11 / Lemma 5.5 against the KKT equation of the projection solved numerically in 1-D.

    At the projection with an active constraint, d_M' = d_P' = xi' =: t, and stationarity in M, P and xi gives
    alpha = y (1/t - 1/r), beta = lam (1/s - 1/t), gamma/t = gamma/xi - alpha y + beta: one equation in t."""
    M, P, v, w, xi, gamma, lam = _one_pair(seed, y_pair)
    r, s = v @ M @ v, w @ P @ w

    def kkt(t):
        return gamma / t - gamma / xi + (1 / t - 1 / r) - lam * (1 / s - 1 / t)

    lo, hi = min(r, s, xi) * 0.5, max(r, s, xi) * 2
    t = brentq(kkt, lo, hi, xtol=1e-15, rtol=1e-14)
    X, Z = np.vstack([v, np.zeros(3)]), np.vstack([w, np.zeros(4)])
    state = BregmanState(M.copy(), P.copy(), np.array([xi]), np.zeros(1), np.zeros(1))
    run_projections(X, Z, np.array([[0, 1]]), np.array([y_pair]), np.array([True]), state, gamma=gamma, lam=lam,
                    max_iter=1)
    alpha, beta = y_pair * (1 / t - 1 / r), lam * (1 / s - 1 / t)
    assert alpha > 0
    np.testing.assert_allclose(state.xi[0], t, rtol=1e-10)
    np.testing.assert_allclose(state.nu[0], alpha, rtol=1e-8)
    np.testing.assert_allclose(state.beta[0], beta, rtol=1e-8, atol=1e-12 * abs(lam / s))
    # the constraint is tight and the slack is the privileged distance (spec property 15)
    np.testing.assert_allclose(v @ state.M @ v, t, rtol=1e-10)
    np.testing.assert_allclose(w @ state.P @ w, t, rtol=1e-10)
    # the inverse forms (5.17)/(5.18) of the Sherman-Morrison updates (spec property 17), and PD (16)
    np.testing.assert_allclose(np.linalg.inv(state.M), np.linalg.inv(M) + y_pair * alpha * np.outer(v, v), rtol=1e-8,
                               atol=1e-10)
    np.testing.assert_allclose(lam * np.linalg.inv(state.P), lam * np.linalg.inv(P) - beta * np.outer(w, w),
                               rtol=1e-8, atol=1e-10)
    assert np.linalg.eigvalsh(state.M)[0] > 0 and np.linalg.eigvalsh(state.P)[0] > 0


def test_itmlplus_projection_matches_cvxpy():
    """One projection (5.8) solved as a convex problem by cvxpy: the closed form is its minimiser."""
    cp = pytest.importorskip("cvxpy")
    M, P, v, w, xi, gamma, lam = _one_pair(11, 1.0)
    Mi, Pi = np.linalg.inv(M), np.linalg.inv(P)
    Mv, Pv, xv = cp.Variable((3, 3), PSD=True), cp.Variable((4, 4), PSD=True), cp.Variable()
    obj = (cp.trace(Mv @ Mi) - cp.log_det(Mv) + lam * (cp.trace(Pv @ Pi) - cp.log_det(Pv))
           + gamma * (xv / xi - cp.log(xv)))
    cons = [cp.quad_form(v, Mv, assume_PSD=True) <= xv, xv == cp.quad_form(w, Pv, assume_PSD=True)]
    cp.Problem(cp.Minimize(obj), cons).solve(solver=cp.CLARABEL, **TIGHT)
    X, Z = np.vstack([v, np.zeros(3)]), np.vstack([w, np.zeros(4)])
    state = BregmanState(M.copy(), P.copy(), np.array([xi]), np.zeros(1), np.zeros(1))
    run_projections(X, Z, np.array([[0, 1]]), np.array([1.0]), np.array([True]), state, gamma=gamma, lam=lam,
                    max_iter=1)
    assert np.linalg.norm(state.M - Mv.value) <= 1e-5 * np.linalg.norm(M)
    assert np.linalg.norm(state.P - Pv.value) <= 1e-5 * np.linalg.norm(P)
    np.testing.assert_allclose(state.xi[0], xv.value, rtol=1e-5)


# ----------------------------------------------------------------------------------------------------------
# ITML+: whole runs
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fraction", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("correction", [True, False])
def test_partial_itmlplus_equals_transcription(fraction, correction):
    X, Z, pairs, y, bounds = make_problem(7)
    priv = np.arange(len(y)) < round(fraction * len(y))
    xi0 = np.where(y > 0, bounds[0], bounds[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        state, n, _ = solve(X, Z, pairs, y, priv, bounds, 0.3, lam=2.0, correction=correction, tol=1e-6,
                            max_iter=300)
    M, P, xi, sweeps = xu_partial_itmlplus(X, Z, pairs, y, priv, xi0, np.eye(4), np.eye(5), 0.3, 2.0, correction,
                                          1e-6, 300)
    assert n == sweeps
    assert np.linalg.norm(state.M - M) <= 1e-9 * np.linalg.norm(M)
    assert np.linalg.norm(state.P - P) <= 1e-9 * np.linalg.norm(P)
    np.testing.assert_allclose(state.xi, xi, rtol=1e-9)


def test_partial_itmlplus_at_0_and_100_percent_is_itml_and_itmlplus():
    X, Z, pairs, y, bounds = make_problem(8)
    P3, Z3 = as_pair_array(X, pairs), as_pair_array(Z, pairs)
    itml = ITML(gamma=0.5).fit(P3, y, bounds=bounds)
    none = np.full_like(Z3, np.nan)
    zero = ITMLPlus(gamma=0.5, lam=3.0).fit(P3, y, pairs_privileged=none, bounds=bounds)
    np.testing.assert_array_equal(zero.get_mahalanobis_matrix(), itml.get_mahalanobis_matrix())
    np.testing.assert_array_equal(zero.privileged_metric_, np.eye(5))
    assert zero.n_privileged_pairs_ == 0
    full = ITMLPlus(gamma=0.5, lam=3.0).fit(P3, y, pairs_privileged=Z3, bounds=bounds)
    M, P, xi, sweeps = xu_partial_itmlplus(X, Z, pairs, y, np.ones(len(y), bool), np.where(y > 0, *bounds),
                                          np.eye(4), np.eye(5), 0.5, 3.0, True, 1e-3, 1000)
    assert full.n_privileged_pairs_ == len(y) and full.n_iter_ == sweeps
    assert np.linalg.norm(full.get_mahalanobis_matrix() - M) <= 1e-9 * np.linalg.norm(M)


def test_itmlplus_with_one_privileged_coordinate_per_pair_is_itml():
    """ITML's slack is the special case of ITML+ in which each pair has its own privileged coordinate.

    With z_i - z_j = sqrt(xi0_ij) e_k for pair k, P stays diagonal, d_P(z_i, z_j) = xi0_ij P_kk is the pair's
    slack, and lam D_ld(P, I) + gamma sum l(d_P, xi0) = (lam + gamma) sum l(xi, xi0): ITML with gamma + lam."""
    X, _, pairs, y, bounds = make_problem(9, m=25)
    m = len(y)
    xi0 = np.where(y > 0, bounds[0], bounds[1])
    Zp = np.zeros((m, 2, m))
    Zp[np.arange(m), 0, np.arange(m)] = np.sqrt(xi0)
    P3 = as_pair_array(X, pairs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        plus = ITMLPlus(gamma=0.2, lam=0.7, tol=1e-300, max_iter=60).fit(P3, y, pairs_privileged=Zp, bounds=bounds)
        itml = ITML(gamma=0.9, tol=1e-300, max_iter=60).fit(P3, y, bounds=bounds)
    M = itml.get_mahalanobis_matrix()
    assert np.linalg.norm(plus.get_mahalanobis_matrix() - M) <= 1e-10 * np.linalg.norm(M)
    P = plus.privileged_metric_
    np.testing.assert_allclose(P, np.diag(np.diag(P)), atol=1e-14)


def test_itmlplus_large_lambda_keeps_p_at_prior():
    """Spec property 19: lam -> infinity keeps P = P0; the pairs are held to d_M = ||z_i - z_j||^2 when active."""
    X, _, pairs, y, bounds = make_problem(10)
    Z = X @ np.random.default_rng(10).normal(size=(4, 5))  # M = A A' meets every hard constraint: feasible
    state, n, conv = solve(X, Z, pairs, y, np.ones(len(y), bool), bounds, 0.5, lam=1e9, tol=1e-9, max_iter=20000)
    assert np.abs(state.P - np.eye(5)).max() < 1e-6
    W, V = Z[pairs[:, 0]] - Z[pairs[:, 1]], X[pairs[:, 0]] - X[pairs[:, 1]]
    s, r = np.einsum("ij,ij->i", W, W), np.einsum("ij,ij->i", V @ state.M, V)
    assert np.all(y * (r - s) <= 1e-6 * s.max())


def test_itmlplus_reaches_the_optimum_and_its_dual_increases():
    """Corrected ITML+ converges to the minimiser of (5.4)/(5.6) (cvxpy), with a dual that never decreases;
    Algorithm 6 as printed (alpha = max{0, .}) ends feasible but above that optimum."""
    cp = pytest.importorskip("cvxpy")
    X, Z, pairs, y, bounds = make_problem(12, h=3, g=3, m=16)
    # z = x A: (M, A^-T M A^-1) meets every ITML+ constraint with equality, so the problem is feasible
    Z = X @ np.array([[1.0, 0.2, 0.0], [0.0, 1.0, 0.3], [0.1, 0.0, 1.0]])
    priv = np.ones(len(y), bool)
    priv[::4] = False  # partial: a quarter of the pairs without privileged data
    gamma, lam = 0.5, 2.0
    xi0 = np.where(y > 0, bounds[0], bounds[1])
    state = BregmanState.start(np.eye(3), np.eye(3), xi0)
    duals = []
    for _ in range(30):
        run_projections(X, Z, pairs, y, priv, state, gamma=gamma, lam=lam, tol=1e-300, max_iter=1)
        duals.append(objectives(X, Z, pairs, y, priv, xi0, np.eye(3), np.eye(3), gamma, lam, state)[1])
    assert np.all(np.diff(duals) >= -1e-10 * abs(duals[-1]))
    n, conv = run_projections(X, Z, pairs, y, priv, state, gamma=gamma, lam=lam, tol=1e-12, max_iter=50000)
    assert conv < 1e-12
    primal, dual = objectives(X, Z, pairs, y, priv, xi0, np.eye(3), np.eye(3), gamma, lam, state)

    V, W = X[pairs[:, 0]] - X[pairs[:, 1]], Z[pairs[:, 0]] - Z[pairs[:, 1]]
    Mv, Pv, xv = cp.Variable((3, 3), PSD=True), cp.Variable((3, 3), PSD=True), cp.Variable(len(y))
    dM = cp.hstack([cp.quad_form(v, Mv, assume_PSD=True) for v in V])
    dP = cp.hstack([cp.quad_form(w, Pv, assume_PSD=True) for w in W])
    obj = (cp.trace(Mv) - cp.log_det(Mv) - 3 + lam * (cp.trace(Pv) - cp.log_det(Pv) - 3)
           + gamma * cp.sum(cp.multiply(xv, 1 / xi0) - cp.log(xv) + np.log(xi0) - 1))
    prob = cp.Problem(cp.Minimize(obj), [cp.multiply(y, dM - xv) <= 0, (xv - dP)[priv] == 0])
    prob.solve(solver=cp.CLARABEL, **TIGHT)
    np.testing.assert_allclose(primal, prob.value, rtol=1e-6)
    np.testing.assert_allclose(dual, prob.value, rtol=1e-6)
    assert np.linalg.norm(state.M - Mv.value) <= 1e-4 * np.linalg.norm(Mv.value)
    assert np.linalg.norm(state.P - Pv.value) <= 1e-4 * np.linalg.norm(Pv.value)
    # the state minimises the Lagrangian at its duals (the inverse forms accumulated over all projections)
    np.testing.assert_allclose(np.linalg.inv(state.M), np.eye(3) + (V.T * (state.nu * y)) @ V, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(lam * np.linalg.inv(state.P), lam * np.eye(3) - (W[priv].T * state.beta[priv]) @ W[priv],
                               rtol=1e-7, atol=1e-9)

    printed, n2, conv2 = solve(X, Z, pairs, y, priv, bounds, gamma, lam=lam, correction=False, tol=1e-12,
                               max_iter=50000)
    r = np.einsum("ij,ij->i", V @ printed.M, V)
    assert np.all(y * (r - printed.xi) <= 1e-6 * printed.xi.max())
    f_printed, _ = objectives(X, Z, pairs, y, priv, xi0, np.eye(3), np.eye(3), gamma, lam, printed)
    assert f_printed >= prob.value * (1 - 1e-6)
