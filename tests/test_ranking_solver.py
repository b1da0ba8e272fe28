"""MLR-L1 and MLR-GL solvers against cvxpy + Clarabel, and the special cases of spec section 9 (chapters 4-5)."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from multikernel.ranking import solve_mlr
from multikernel.ranking.solver import gl_block, gl_primal, kkt_violation, project_balanced_box
from multikernel.solve.smo import StackColumns, solve_qp

REFERENCE = settings(max_examples=12, deadline=None, derandomize=True)


# --------------------------------------------------------------------------------------------------
# problems
# --------------------------------------------------------------------------------------------------
def _kernel(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    X = rng.normal(size=(n, 3))
    if kind == "linear":  # low rank, with a zero row (a zero column of K: the block's problem is linear)
        X[0] = 0.0
        return X @ X.T
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    return np.exp(-d2 / d2.mean())


@st.composite
def ranking_problems(draw, missing: bool = True):
    """Small problems with the structures the spec names: single relevant labels, a label relevant for every
    sample, all-relevant / all-irrelevant rows, unknown entries (0 in Ysign) and rows with one known label."""
    seed = draw(st.integers(0, 2**31 - 1))
    n, m = draw(st.integers(5, 12)), draw(st.integers(2, 5))
    rng = np.random.default_rng(seed)
    Y = np.where(rng.random((n, m)) < draw(st.sampled_from([0.2, 0.5])), 1.0, -1.0)
    Y[0] = -1.0
    Y[0, rng.integers(m)] = 1.0                          # a single relevant label
    if draw(st.booleans()):
        Y[:, rng.integers(m)] = 1.0                      # a label relevant for every sample
    if draw(st.booleans()):
        Y[1] = 1.0                                       # no irrelevant label: no pair
    if missing:
        Y[rng.random((n, m)) < draw(st.sampled_from([0.0, 0.25]))] = 0.0
        Y[2] = 0.0
        Y[2, rng.integers(m)] = rng.choice([-1.0, 1.0])  # all but one label unknown
    K = _kernel(rng, n, draw(st.sampled_from(["rbf", "linear"])))
    C = draw(st.sampled_from([0.3, 1.0, 4.0]))
    return K, Y, C


def _pairs(Y: np.ndarray) -> np.ndarray:
    return (Y > 0).any(axis=1) & (Y < 0).any(axis=1)


def _factor(K: np.ndarray) -> np.ndarray:
    w, V = np.linalg.eigh(K)
    return V * np.sqrt(np.maximum(w, 0.0))  # K = L L'


def l1_reference(K: np.ndarray, Y: np.ndarray, C: float) -> float:
    """The MLR-L1 dual (4.13) with unknown labels fixed at zero, in cvxpy."""
    n, m = Y.shape
    S = cp.Variable((n, m))
    lo, hi = np.where(Y < 0, -C, 0.0), np.where(Y > 0, C, 0.0)
    objective = cp.sum(cp.multiply(Y, S)) - 0.5 * cp.sum_squares(_factor(K).T @ S)
    problem = cp.Problem(cp.Maximize(objective), [S >= lo, S <= hi, cp.sum(S, axis=1) == 0])
    problem.solve(solver=cp.CLARABEL)
    return float(problem.value)


def gl_reference(K: np.ndarray, Y: np.ndarray, C: float, eta: float) -> float:
    """``D_eta`` (the MLR-GL iteration's objective) over gamma, in cvxpy: one (a_i x b_i) block per sample."""
    n, m = Y.shape
    d = np.diag(K)
    blocks, columns = [], []
    for i in range(n):
        rel, irr = np.flatnonzero(Y[i] > 0), np.flatnonzero(Y[i] < 0)
        if len(rel) and len(irr):
            blocks.append((i, rel, irr))
    if not blocks:
        return 0.0
    A, diag = [], []                       # vec(S) = A x, x the stacked gamma entries
    for i, rel, irr in blocks:
        for l in irr:
            for k in rel:
                col = np.zeros(n * m)
                col[i * m + k], col[i * m + l] = C, -C
                A.append(col)
                diag.append(d[i])
    A = np.array(A).T
    quad = A.T @ (np.kron(K, np.eye(m)) - np.kron(np.diag(d), np.eye(m))) @ A + 2 * eta * C * C * np.diag(diag)
    assert np.linalg.eigvalsh(quad).min() > -1e-8  # concave for eta >= max (a_i + b_i) / 2
    x = cp.Variable(A.shape[1], nonneg=True)
    cons, offset = [], 0
    for _, rel, irr in blocks:
        for _ in irr:
            cons.append(cp.norm(x[offset:offset + len(rel)], 2) <= 1)
            offset += len(rel)
            columns.append(offset)
    objective = C * cp.sum(x) - 0.5 * cp.quad_form(x, cp.psd_wrap(quad))
    problem = cp.Problem(cp.Maximize(objective), cons)
    problem.solve(solver=cp.CLARABEL)
    return float(problem.value)


def _check_feasible_l1(S: np.ndarray, Y: np.ndarray, C: float) -> None:
    assert np.all(S[Y > 0] >= -1e-12) and np.all(S[Y > 0] <= C + 1e-12)
    assert np.all(S[Y < 0] <= 1e-12) and np.all(S[Y < 0] >= -C - 1e-12)
    assert np.all(S[Y == 0] == 0.0)
    np.testing.assert_allclose(S.sum(axis=1), 0.0, atol=1e-10 * max(C, 1.0) * Y.shape[1])


# --------------------------------------------------------------------------------------------------
# whole problems against cvxpy
# --------------------------------------------------------------------------------------------------
@REFERENCE
@given(problem=ranking_problems())
def test_mlr_l1_equals_the_cvxpy_reference(problem):
    K, Y, C = problem
    sol = solve_mlr(K, Y, C, tol=1e-9, max_sweeps=20000)
    assert sol.converged
    _check_feasible_l1(sol.coef, Y, C)
    assert np.all(sol.coef[~_pairs(Y)] == 0.0)           # degenerate rows never become support vectors
    ref = l1_reference(K, Y, C)
    assert sol.dual_objective == pytest.approx(ref, rel=1e-6, abs=1e-7)
    # the matching-hinge primal certifies the solve
    assert sol.primal_objective - sol.dual_objective >= -1e-9
    assert sol.primal_objective - sol.dual_objective <= 1e-6 * max(1.0, abs(ref))
    assert sol.violation <= 1e-9
    np.testing.assert_allclose(sol.scores, K @ sol.coef, atol=1e-9)


@REFERENCE
@given(problem=ranking_problems(), eta_extra=st.sampled_from([0.0, 3.0]))
def test_mlr_gl_equals_the_cvxpy_reference(problem, eta_extra):
    K, Y, C = problem
    eta = max(1.0, np.count_nonzero(Y, axis=1).max() / 2) + eta_extra
    sol = solve_mlr(K, Y, C, loss="gl", eta=eta, tol=1e-10, max_sweeps=20000)
    assert sol.converged
    assert np.all(sol.coef[~_pairs(Y)] == 0.0)
    np.testing.assert_allclose(sol.coef.sum(axis=1), 0.0, atol=1e-10)   # the balance holds exactly
    assert sol.dual_objective == pytest.approx(gl_reference(K, Y, C, eta), rel=1e-6, abs=1e-7)
    # D_eta is a lower bound of the exact group-lasso dual, hence of the exact primal at any point
    assert sol.primal_objective >= sol.dual_objective - 1e-9


def test_gl_default_eta_is_the_concavity_bound():
    rng = np.random.default_rng(0)
    K = _kernel(rng, 10, "rbf")
    Y = np.where(rng.random((10, 6)) < 0.4, 1.0, -1.0)
    Y[:, 0] = 1.0
    default = solve_mlr(K, Y, 1.0, loss="gl", tol=1e-10)
    explicit = solve_mlr(K, Y, 1.0, loss="gl", eta=3.0, tol=1e-10)
    np.testing.assert_array_equal(default.coef, explicit.coef)


# --------------------------------------------------------------------------------------------------
# block steps (spec 9.18, 9.23)
# --------------------------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1), a=st.integers(1, 4), b=st.integers(1, 4), C=st.sampled_from([0.5, 2.0]))
def test_l1_block_step_is_the_projection(seed, a, b, C):
    """Theorem 6: the block step solves the block QP (cvxpy); its balance function is non-decreasing."""
    rng = np.random.default_rng(seed)
    y = np.r_[np.ones(a), -np.ones(b)]
    v = rng.normal(scale=2.0 * C, size=a + b)
    lo, hi = np.where(y < 0, -C, 0.0), np.where(y > 0, C, 0.0)
    s = project_balanced_box(v, lo, hi)
    x = cp.Variable(a + b)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(x - v)), [x >= lo, x <= hi, cp.sum(x) == 0])
    problem.solve(solver=cp.CLARABEL)
    assert np.all(s >= lo) and np.all(s <= hi)
    assert np.sum((s - v) ** 2) <= problem.value + 1e-8 * (1 + problem.value)  # as close as Clarabel's point
    np.testing.assert_allclose(s, x.value, atol=1e-4)               # Clarabel's accuracy at a vertex
    # KKT, exactly: s = clip(v + lam, lo, hi) for one multiplier lam
    free = (s > lo + 1e-12) & (s < hi - 1e-12)
    if free.any():
        lam = np.median((s - v)[free])
        np.testing.assert_allclose(s, np.clip(v + lam, lo, hi), atol=1e-12)
    else:
        at_lo, at_hi = s <= lo, s >= hi
        assert np.max(hi[at_hi] - v[at_hi], initial=-np.inf) <= np.min(lo[at_lo] - v[at_lo], initial=np.inf) + 1e-12
    assert abs(s.sum()) <= 1e-12 * (a + b) * C
    lams = np.linspace(-4 * C, 4 * C, 41)
    phi = [np.clip(v + lam, lo, hi).sum() for lam in lams]
    assert np.all(np.diff(phi) >= -1e-12)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1), a=st.integers(1, 4), b=st.integers(1, 4),
       scale=st.sampled_from([0.1, 5.0]))
def test_gl_block_is_lemma_2(seed, a, b, scale):
    """Lemma 2 equals the numerical solution of (5.15), in both regimes (inside the ball and on the sphere)."""
    rng = np.random.default_rng(seed)
    C, kii, eta = 1.3, 0.9, 1.5
    y = np.r_[np.ones(a), -np.ones(b)]
    g = rng.normal(scale=scale, size=a + b)
    s, gsq = gl_block(g, y, kii, C, eta)
    H = 0.5 * (1.0 - g[:a][:, None] + g[a:][None, :])
    gamma = cp.Variable((a, b), nonneg=True)
    objective = 2 * cp.sum(cp.multiply(H, gamma)) - C * kii * eta * cp.sum_squares(gamma)
    problem = cp.Problem(cp.Maximize(objective), [cp.norm(gamma, 2, axis=0) <= 1])
    problem.solve(solver=cp.CLARABEL)
    Hp = np.maximum(H, 0.0)
    ours = Hp / np.maximum(np.linalg.norm(Hp, axis=0), C * kii * eta)
    assert 2 * np.sum(H * ours) - C * kii * eta * np.sum(ours**2) == pytest.approx(problem.value, rel=1e-7,
                                                                                    abs=1e-8)
    np.testing.assert_allclose(ours, gamma.value, atol=1e-4)  # Clarabel's accuracy on the sphere
    np.testing.assert_allclose(s[:a], C * ours.sum(axis=1), atol=1e-12)
    np.testing.assert_allclose(s[a:], -C * ours.sum(axis=0), atol=1e-12)
    assert gsq == pytest.approx(np.sum(ours**2), rel=1e-12)
    assert abs(s.sum()) <= 1e-12 * (a + b)                          # balance, exactly
    assert np.all(-s[a:] <= C * np.sqrt(a) + 1e-12) and np.all(s[:a] <= C * b + 1e-12)


# --------------------------------------------------------------------------------------------------
# special cases and equivalences (spec 9.15, 9.16, 9.21, erratum E10)
# --------------------------------------------------------------------------------------------------
def _svm_nobias(K: np.ndarray, y: np.ndarray, C: float) -> np.ndarray:
    a = cp.Variable(len(y))
    L = _factor(K)
    objective = cp.sum(a) - 0.5 * cp.sum_squares(L.T @ cp.multiply(a, y))
    cp.Problem(cp.Maximize(objective), [a >= 0, a <= C]).solve(solver=cp.CLARABEL)
    return a.value


@pytest.mark.parametrize("C", [0.5, 3.0])
def test_two_complementary_labels_are_the_binary_svm_without_bias(C):
    """Spec 9.15: m = 2 with y_2 = -y_1 gives alpha_1 = alpha_2 = the no-bias SVM's alpha, f_1 = -f_2."""
    rng = np.random.default_rng(1)
    K = _kernel(rng, 25, "rbf")
    y = np.where(rng.random(25) < 0.4, 1.0, -1.0)
    sol = solve_mlr(K, np.column_stack([y, -y]), C, tol=1e-10)
    alpha = _svm_nobias(K, y, C)
    np.testing.assert_allclose(sol.alpha[:, 0], sol.alpha[:, 1], atol=1e-12)
    np.testing.assert_allclose(sol.alpha[:, 0], alpha, atol=1e-5)
    np.testing.assert_allclose(sol.scores[:, 0], K @ (alpha * y), atol=1e-4)
    np.testing.assert_allclose(sol.scores[:, 1], -sol.scores[:, 0], atol=1e-12)


def test_dropping_the_balance_gives_one_vs_all_svms():
    """Spec 9.16: without the balance constraint (4.13) is m no-bias SVMs (4.6): a relaxation, tight when the
    balance holds at the SVMs' optimum (two complementary labels)."""
    rng = np.random.default_rng(2)
    K = _kernel(rng, 20, "rbf")
    Y = np.where(rng.random((20, 4)) < 0.4, 1.0, -1.0)
    Y[:, 0] = -1.0
    Y[np.arange(20), rng.integers(4, size=20)] = 1.0

    def ova(Y: np.ndarray) -> float:  # the library's SMO, a solver independent of the block ascent
        return sum(-solve_qp(K, y, p=-1.0, lower=0.0, upper=1.0, tol=1e-10).objective for y in Y.T)

    sol = solve_mlr(K, Y, 1.0, tol=1e-10)
    assert sol.dual_objective < ova(Y) - 1e-3
    y = Y[:, 1]
    pair = solve_mlr(K, np.column_stack([y, -y]), 1.0, tol=1e-10)
    assert pair.dual_objective == pytest.approx(ova(np.column_stack([y, -y])), rel=1e-7)


def test_group_lasso_with_one_relevant_label_is_the_pairwise_loss():
    """Spec 9.21: with a = 1 the exact MLR-GL loss (5.4) is the pairwise hinge ranking loss (5.1)."""
    rng = np.random.default_rng(3)
    F = rng.normal(size=(30, 5))
    Y = -np.ones((30, 5))
    Y[np.arange(30), rng.integers(5, size=30)] = 1.0
    Y[rng.random((30, 5)) < 0.2] = 0.0
    Y[np.arange(30), np.argmax(Y, axis=1)] = 1.0
    pairwise = sum(max(0.0, 1.0 - F[i, k] + F[i, l]) for i in range(30) for k in range(5) for l in range(5)
                   if Y[i, k] > 0 and Y[i, l] < 0)
    assert gl_primal(F, None, Y, 2.0) == pytest.approx(2.0 * pairwise, rel=1e-12)


def test_half_factor_solves_the_problem_of_the_modified_kernel():
    """Erratum E10: the thesis's literal update converges to the optimum for K/2 + Diag(K)/2."""
    rng = np.random.default_rng(4)
    K = _kernel(rng, 15, "rbf")
    Y = np.where(rng.random((15, 4)) < 0.4, 1.0, -1.0)
    literal = solve_mlr(K, Y, 1.0, half_factor=True, tol=1e-10)
    exact = solve_mlr(0.5 * K + 0.5 * np.diag(np.diag(K)), Y, 1.0, tol=1e-10)
    np.testing.assert_allclose(literal.coef, exact.coef, atol=1e-8)
    assert literal.dual_objective == pytest.approx(exact.dual_objective, rel=1e-10)
    assert literal.dual_objective == pytest.approx(l1_reference(0.5 * K + 0.5 * np.diag(np.diag(K)), Y, 1.0),
                                                   rel=1e-6)


# --------------------------------------------------------------------------------------------------
# implementations, warm starts, kernels
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", ["l1", "gl"])
def test_cython_sweep_equals_the_numpy_reference(loss):
    rng = np.random.default_rng(5)
    K = _kernel(rng, 40, "rbf")
    Y = np.where(rng.random((40, 6)) < 0.35, 1.0, -1.0)
    Y[rng.random((40, 6)) < 0.1] = 0.0
    ref = solve_mlr(K, Y, 2.0, loss=loss, tol=1e-8, backend="numpy")
    fast = solve_mlr(K, Y, 2.0, loss=loss, tol=1e-8, backend="cython")
    assert fast.n_sweeps == ref.n_sweeps
    np.testing.assert_allclose(fast.coef, ref.coef, atol=1e-10)
    np.testing.assert_allclose(fast.scores, ref.scores, atol=1e-10)
    assert fast.dual_objective == pytest.approx(ref.dual_objective, rel=1e-12)


@pytest.mark.parametrize("loss", ["l1", "gl"])
def test_float32_and_column_served_kernels(loss):
    rng = np.random.default_rng(6)
    K = _kernel(rng, 30, "rbf")
    Y = np.where(rng.random((30, 5)) < 0.4, 1.0, -1.0)
    dense = solve_mlr(K, Y, 1.0, loss=loss, tol=1e-9)
    lazy = solve_mlr(StackColumns(K[None], np.ones(1)), Y, 1.0, loss=loss, tol=1e-9, cache_size=1e-3)
    np.testing.assert_allclose(lazy.coef, dense.coef, atol=1e-12)
    single = solve_mlr(K.astype(np.float32), Y, 1.0, loss=loss, tol=1e-5)
    assert single.dual_objective == pytest.approx(dense.dual_objective, rel=1e-5)


@pytest.mark.parametrize("loss", ["l1", "gl"])
def test_warm_starts(loss):
    rng = np.random.default_rng(7)
    K = _kernel(rng, 30, "rbf")
    Y = np.where(rng.random((30, 5)) < 0.4, 1.0, -1.0)
    cold = solve_mlr(K, Y, 1.0, loss=loss, tol=1e-9)
    again = solve_mlr(K, Y, 1.0, loss=loss, tol=1e-8, coef0=cold.coef)
    assert again.n_sweeps <= 2 and again.dual_objective == pytest.approx(cold.dual_objective, rel=1e-9)
    garbage = solve_mlr(K, Y, 1.0, loss=loss, tol=1e-9, coef0=rng.normal(scale=3.0, size=Y.shape))
    assert garbage.dual_objective == pytest.approx(cold.dual_objective, rel=1e-7)
    if loss == "l1":
        _check_feasible_l1(garbage.coef, Y, 1.0)
        assert kkt_violation(garbage.scores, garbage.coef, Y, 1.0, np.diag(K)) <= 1e-9


def test_max_sweeps_warns():
    rng = np.random.default_rng(8)
    K = _kernel(rng, 30, "rbf")
    Y = np.where(rng.random((30, 5)) < 0.4, 1.0, -1.0)
    with pytest.warns(ConvergenceWarning, match="max_sweeps=1"):
        sol = solve_mlr(K, Y, 10.0, tol=1e-9, max_sweeps=1)
    assert not sol.converged


def test_bad_inputs():
    K = np.eye(4)
    Y = np.array([[1.0, -1.0]] * 4)
    with pytest.raises(ValueError, match="Ysign"):
        solve_mlr(K, np.array([[1.0, 2.0]] * 4))
    with pytest.raises(ValueError, match=r"\(4, 4\) training kernel"):
        solve_mlr(np.eye(3), Y)
    with pytest.raises(ValueError, match="C must be"):
        solve_mlr(K, Y, C=0.0)
    with pytest.raises(ValueError, match="eta must be"):
        solve_mlr(K, Y, loss="gl", eta=0.5)
    with pytest.raises(ValueError, match="half_factor"):
        solve_mlr(K, Y, loss="gl", half_factor=True)
    with pytest.raises(ValueError, match="loss must be"):
        solve_mlr(K, Y, loss="l2")
    with pytest.raises(ValueError, match="diagonal"):
        solve_mlr(-np.eye(4), Y)
    with pytest.raises(ValueError, match="coef0"):
        solve_mlr(K, Y, coef0=np.zeros((4, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sol = solve_mlr(np.zeros((4, 4)), Y, tol=1e-9)   # zero kernel: each block is a linear problem
    np.testing.assert_allclose(np.abs(sol.coef), 1.0)
