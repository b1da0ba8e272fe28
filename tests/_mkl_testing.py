"""Shared helpers of the MKL tests: small problems (random, drawn by hypothesis, or from a real data set),
the presets at their default parameters, and the cvxpy + Clarabel reference.

The reference solves the MKL saddle point from the dual side,

    max_{alpha in A}  1'alpha - dual_bound(q(alpha)/2),   q_m(alpha) = ||L_m'(alpha*y)||^2,  K_m = L_m L_m',

which equals the primal optimum (the min-max is convex-concave and the domains are compact).  Each
``dual_bound`` is written as a conic expression: it is convex and non-decreasing in ``g``, so replacing
``q/2`` by an epigraph variable ``t >= q/2`` is exact.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import attrs
import cvxpy as cp
import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from multikernel import MKLClassifier
from multikernel.core.interfaces import MKLProblem, MKLResult, Regularizer, Solver
from multikernel.core.registry import get_registry
from multikernel.plugins.losses import CSVCLoss
from multikernel.stack.storage import DenseStack


def scaled(fraction: float) -> settings:
    """The active hypothesis profile's settings with ``fraction`` of its ``max_examples`` (at least 2).

    For property tests whose examples cost a second or more (each runs solvers and Clarabel): the ``ci``
    profile keeps them few, the ``thorough`` profile (see CONTRIBUTING.md) runs hundreds.
    """
    return settings(max_examples=max(2, round(settings.default.max_examples * fraction)))


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


@attrs.frozen
class Drawn:
    """A drawn MKL problem: the kernel stack, labels in {-1, +1}, ``C``, and the call that rebuilds it."""

    Ks: np.ndarray
    y: np.ndarray
    C: float
    call: str

    def __repr__(self) -> str:  # hypothesis prints this for a failing example: a reproduction to paste
        return self.call


KERNEL_KINDS = ("linear", "poly", "rbf", "flat_rbf", "low_rank")


def make_problem(n: int, positives: int, kinds: Sequence[str], copies: Sequence[int] = (),
                 log10_scales: Sequence[float] | None = None, order: Sequence[int] | None = None,
                 C: float = 1.0, seed: int = 0) -> Drawn:
    """An MKL problem of a given structure (what :func:`mkl_problems` draws).

    ``n`` points, the first ``positives`` of them positive; one kernel per entry of ``kinds`` on random
    features (the first feature separates the classes by 0 to 2 standard deviations), each trace-normalized
    then scaled by ``10**log10_scales[m]`` if given; exact copies of the kernels listed in ``copies``
    appended; the stack permuted by ``order``.  Every kind but ``rbf`` is numerically rank-deficient for
    most ``n``: ``linear`` and ``poly`` on 1 to 3 features, ``low_rank`` (rank 1 or 2, uninformative) and
    ``flat_rbf`` (a Gaussian kernel of bandwidth 30 times the median distance, whose eigenvalues fall
    below 1e-16 after a few).
    """
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(n) < positives, 1.0, -1.0)
    X = rng.normal(size=(n, 3))
    X[:, 0] += rng.uniform(0.0, 2.0) * y
    distinct = []
    for kind in kinds:
        Z = X[:, rng.choice(3, size=rng.integers(1, 4), replace=False)]
        d2 = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
        med = float(np.median(d2[d2 > 0])) if np.any(d2 > 0) else 1.0
        if kind == "linear":
            K = Z @ Z.T
        elif kind == "poly":
            K = (1.0 + Z @ Z.T / Z.shape[1]) ** 2
        elif kind == "rbf":
            K = np.exp(-d2 / (med * 10.0 ** rng.uniform(-1.0, 1.0)))
        elif kind == "flat_rbf":
            K = np.exp(-d2 / (900.0 * med))
        elif kind == "low_rank":
            W = rng.normal(size=(n, rng.integers(1, 3)))
            K = W @ W.T
        else:
            raise ValueError(f"unknown kernel kind {kind!r}; use one of {KERNEL_KINDS}")
        distinct.append(K * (n / np.trace(K)))
    if log10_scales is not None:
        distinct = [K * 10.0**s for K, s in zip(distinct, log10_scales, strict=True)]
    stack = distinct + [distinct[c] for c in copies]
    Ks = np.array([stack[i] for i in (range(len(stack)) if order is None else order)])
    call = (f"make_problem(n={n}, positives={positives}, kinds={list(kinds)}, copies={list(copies)}, "
            f"log10_scales={None if log10_scales is None else list(log10_scales)}, "
            f"order={None if order is None else list(order)}, C={C!r}, seed={seed})")
    return Drawn(Ks=Ks, y=y, C=C, call=call)


#: The presets that minimise an MKL objective on one binary problem, each checked against cvxpy by the property
#: test (tests/test_mkl_reference.py) and swept by tests/sweep_presets.py; the last seven are the Bucak solver family's.
MKL_PRESETS = ["average", "l1mkl", "simplemkl", "lpmkl", "l2mkl", "sgmkl", "sm1mkl", "sm2mkl",
               "mkl_silp", "mkl_md", "mkl_gl", "gmkl_l1", "gmkl_l2", "gmkl_elastic", "smo_mkl"]


def without_local_constants() -> None:
    """Keep the "ci" draws independent of which modules the run has imported.

    Since 6.131 hypothesis sometimes draws literals found in the local modules of ``sys.modules`` (ours, with the
    editable install), collected when a choice type is first drawn and under a 100 ms parsing budget: the same
    derandomized test then drew different problems alone and in the full suite (a log10 scale of 0.3 against
    3.0), so a failure in CI did not reproduce locally (and a script drawing with the strategy drew other
    problems than the tests).  The "ci" profile and ``tests/sweep_presets.py`` call this.  A private
    hook: if it moves, the draws only become order-dependent again.
    """
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover
        return
    if hasattr(providers, "_get_local_constants") and hasattr(providers, "Constants"):
        empty = providers.Constants()
        providers._get_local_constants = lambda: empty


@st.composite
def mkl_problems(draw: Any, n: tuple[int, int] = (8, 40), kernels: tuple[int, int] = (1, 6),
                 log10_C: tuple[float, float] = (-2.0, 4.0), max_copies: int = 3, log10_scale: float = 3.0
                 ) -> Drawn:
    """A hypothesis strategy that draws the structure of an MKL problem, not only a seed.

    It draws the number of points and the class balance (down to one point in a class), the number of
    distinct kernels (one included) and their kinds (most of them numerically rank-deficient), exact
    duplicates of some of them at random places, trace-normalized or unnormalized kernels (each scaled by
    10^[-log10_scale, log10_scale]), and ``C`` on a log scale; see :func:`make_problem`.
    """
    n_points = draw(st.integers(*n), label="n")
    kinds = draw(st.lists(st.sampled_from(KERNEL_KINDS), min_size=kernels[0], max_size=kernels[1]), label="kinds")
    copies = draw(st.lists(st.integers(0, len(kinds) - 1), max_size=max_copies), label="copies")
    return make_problem(
        n=n_points, positives=draw(st.integers(1, n_points - 1), label="positives"), kinds=kinds, copies=copies,
        log10_scales=draw(st.none() | st.lists(st.floats(-log10_scale, log10_scale), min_size=len(kinds),
                                               max_size=len(kinds)), label="log10_scales"),
        order=draw(st.permutations(range(len(kinds) + len(copies))), label="order"),
        C=10.0 ** draw(st.floats(*log10_C), label="log10 C"), seed=draw(st.integers(0, 2**32 - 1), label="seed"))


def cancer_kernels(seed: int, n: int, builders: Sequence[tuple[str, dict[str, Any]]]
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Trace-normalized kernels on ``n`` standardized breast-cancer points chosen by ``seed``, and labels.

    ``builders`` are (registered kernel name, parameters) pairs, fitted on the chosen points; the issue's
    reproductions of the solver bugs are built this way.
    """
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    idx = np.random.default_rng(seed).choice(len(y), n, replace=False)
    Ks = []
    for name, params in builders:
        K = get_registry().create("kernel", name, **params).fit_transform(X[idx])
        Ks.append(K * (n / np.trace(K)))
    return np.array(Ks), np.where(y[idx] == 1, 1.0, -1.0)


def solve_preset(method: str, Ks: np.ndarray, y: np.ndarray, C: float, **kw: Any
                 ) -> tuple[MKLResult, list[str]]:
    """A registered method at its default parameters (and the estimator's default tol, inner_tol and
    max_iter) on a precomputed stack: the result and the ConvergenceWarnings it gave.

    ``kw`` overrides problem fields (``callback``) or the method's parts (``solver=...``).
    """
    registry = get_registry()
    preset = registry.get("method", method)
    defaults = MKLClassifier().get_params()
    parts = {"loss": registry.create("loss", preset.loss, **{**preset.loss_params, "C": C}),
             "regularizer": registry.create("regularizer", preset.regularizer, **preset.regularizer_params),
             "solver": registry.create("solver", preset.solver, **preset.solver_params)}
    parts.update((k, kw.pop(k)) for k in list(kw) if k in parts)
    fields = {"tol": defaults["tol"], "inner_tol": defaults["inner_tol"], "max_iter": defaults["max_iter"], **kw}
    problem = MKLProblem(stack=DenseStack(Ks), y=y, loss=parts["loss"], regularizer=parts["regularizer"], **fields)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        res = parts["solver"].solve(problem)
    return res, [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]


def solve_mkl(Ks: np.ndarray, y: np.ndarray, regularizer: Regularizer, solver: Solver, C: float = 1.0,
              tol: float = 1e-6, inner_tol: float = 1e-8, max_iter: int = 500, **kw) -> MKLResult:
    """Our solver on the problem, with tight tolerances (the reference comparisons need them)."""
    problem = MKLProblem(stack=DenseStack(Ks), y=y, loss=CSVCLoss(C=C), regularizer=regularizer, tol=tol,
                         inner_tol=inner_tol, max_iter=max_iter, **kw)
    return solver.solve(problem)


class CountingLoss(CSVCLoss):
    """The C-SVC loss that records the warm start and the tolerance of every inner solve in ``calls``."""

    def __init__(self, C: float = 1.0) -> None:
        super().__init__(C=C)
        self.calls: list[tuple[np.ndarray | None, float]] = []

    def solve(self, K: np.ndarray, y: np.ndarray, alpha0: np.ndarray | None = None, tol: float = 1e-3):
        self.calls.append((alpha0, tol))
        return super().solve(K, y, alpha0=alpha0, tol=tol)


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
    if name.startswith("gmkl_"):  # max_{nu >= 0} nu't - sigma'nu - c/2 ||nu||^2
        sigma, c = reg._sigma(M), reg._c()
        if c == 0:
            return 0.0, [t <= sigma]
        return cp.sum_squares(cp.pos(t - sigma)) / (2.0 * c), []
    raise ValueError(f"no cvxpy form for {name}")


@attrs.frozen
class Reference:
    """The MKL optimum by cvxpy + Clarabel, bracketed by certified bounds.

    ``lower = 1'alpha - dual_bound(q(alpha)/2)`` at Clarabel's ``alpha`` from the dual form, made exactly
    feasible.  ``upper`` is the lower of two primal values: libsvm's classifier (scikit-learn's ``SVC``) on
    the kernel combined with the dual form's weights (the multipliers of its cones), and the MKL primal
    objective recomputed exactly at the primal form's point (weights, per-kernel functions, bias).  Neither
    trusts Clarabel's accuracy, which its reported gap does not measure: at C = 1000 with one positive point
    the dual form reported "solved" 0.7 % above the optimum, and the primal form's own value was 2e-5 below
    the certified lower bound at C = 1e4.
    """

    lower: float
    upper: float

    @property
    def value(self) -> float:
        return 0.5 * (self.lower + self.upper)

    @property
    def error(self) -> float:
        """How far ``value`` may be from the optimum."""
        return 0.5 * max(self.upper - self.lower, 0.0)

    def brackets(self, res: MKLResult) -> bool:
        """Whether ``res``'s certified bounds and the reference's overlap (up to rounding): both hold the optimum."""
        slack = 1e-9 * max(abs(self.value), 1.0)
        return res.lower_bound <= self.upper + slack and res.objective >= self.lower - slack


def cvx_domain(reg: Regularizer, m: cp.Variable, M: int) -> list:
    """The domain of ``reg`` as cvxpy constraints on ``m``."""
    if reg.name == "uniform":
        return [m == 1.0 / M]
    if reg.name in ("simplex", "simplex_l2", "simplex_power"):
        return [m >= 0, cp.sum(m) == 1]
    if reg.name == "box_simplex":
        return [m >= 0, m <= reg.cap(M), cp.sum(m) == 1]
    if reg.name in ("lp_ball", "l2_ball"):
        return [m >= 0, cp.norm(m, float(reg.p)) <= 1]
    if reg.name == "elastic_net":
        return [m >= 0, reg.v * cp.sum(m) + (1 - reg.v) * cp.sum_squares(m) <= 1]
    if reg.name.startswith("gmkl_"):
        return [m >= 0]
    raise ValueError(f"no cvxpy form for {reg.name}")


def cvx_penalty(reg: Regularizer, m: cp.Variable) -> cp.Expression | float:
    """The penalty ``Omega`` of ``reg`` as a cvxpy expression."""
    if reg.name in ("simplex_l2", "simplex_power"):
        return reg.kappa() * cp.sum(cp.power(m, float(reg.p)))
    if reg.name.startswith("gmkl_"):
        return reg._sigma(m.shape[0]) @ m + 0.5 * reg._c() * cp.sum_squares(m)
    return 0.0


def _factors(Ks: np.ndarray) -> list[np.ndarray]:
    """``L_m`` with ``K_m = L_m L_m'`` (the zero eigenvalues only make the cone constraints degenerate)."""
    factors = []
    for K in Ks:
        w, V = np.linalg.eigh(K)
        keep = w > 1e-12 * w.max()
        factors.append(V[:, keep] * np.sqrt(w[keep]))
    return factors


#: Clarabel's settings for a reference: tolerances of 1e-10 instead of 1e-8.
CLARABEL_TIGHT = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}
#: How the two forms are solved, in turn, until their bracket is tight.  With the variables scaled by 1/C
#: (the same problem, its variables of order 1 for every C) and tight tolerances Clarabel is usually within
#: 1e-9 of the optimum, where its defaults on the dual form as written were off by up to 4e-7 (C = 66, flat
#: Gaussian kernels); near-singular kernels can end one attempt in a numerical error a step short of it.
_ATTEMPTS = (("C", CLARABEL_TIGHT), (1.0, CLARABEL_TIGHT), ("C", {}), (1.0, {}),
             ("C", {"static_regularization_constant": 1e-6}), (1.0, {"static_regularization_constant": 1e-6}))


def _clarabel(prob: cp.Problem, opts: dict[str, Any]) -> bool:
    """Solve with Clarabel; whether it returned a solution ("inaccurate" ones included)."""
    try:
        with warnings.catch_warnings():  # "inaccurate": the bracket says how much
            warnings.simplefilter("ignore", UserWarning)
            prob.solve(solver=cp.CLARABEL, **opts)
    except cp.error.SolverError:
        return False
    return prob.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE)


def _feasible(alpha: np.ndarray, y: np.ndarray, C: float) -> np.ndarray:
    """``alpha`` clipped to ``[0, C]`` with ``y'alpha = 0`` restored by shrinking the larger class's part."""
    a = np.clip(alpha, 0.0, C)
    pos = y > 0
    big, small = (pos, ~pos) if a[pos].sum() > a[~pos].sum() else (~pos, pos)
    a[big] *= a[small].sum() / max(a[big].sum(), 1e-300)
    return a


def _svm_upper(Ks: np.ndarray, y: np.ndarray, reg: Regularizer, C: float, weights: np.ndarray) -> float:
    """A certified upper bound: libsvm's classifier on ``K(weights)`` (weights projected onto the domain).

    Any classifier bounds the optimum from above, so libsvm's iterations are capped (at C = 1e4 on kernels
    scaled by 1e3 it did not reach tol = 1e-10 in minutes): a capped solve only loosens the bound.
    """
    w = np.asarray(reg.project(np.maximum(weights, 0.0)), dtype=np.float64)
    K = np.tensordot(w, Ks, axes=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svc = SVC(C=C, kernel="precomputed", tol=1e-9, max_iter=100_000).fit(K, y)
    c = np.zeros(len(y))
    c[svc.support_] = svc.dual_coef_[0]
    margins = y * (K @ c + svc.intercept_[0])
    return float(0.5 * c @ K @ c + C * np.maximum(0.0, 1.0 - margins).sum() + reg.penalty(w))


def _primal_upper(factors: list[np.ndarray], y: np.ndarray, reg: Regularizer, C: float, weights: np.ndarray,
                  ws: list[np.ndarray], b: float) -> float:
    """A certified upper bound: the MKL primal objective at Clarabel's primal point, recomputed exactly.

    ``sum_m ||w_m||^2 / (2 mu_m) + C sum_i hinge_i + Omega(mu)`` with the weights projected onto the domain and
    the hinge losses recomputed (Clarabel's slacks may be slightly infeasible); a kernel whose projected
    weight is negligible (below 1e-12 of the largest) is dropped with its function.
    """
    mu = np.asarray(reg.project(np.maximum(weights, 0.0)), dtype=np.float64)
    keep = mu > 1e-12 * mu.max()
    f = sum(L @ w for L, w, k in zip(factors, ws, keep, strict=True) if k)
    norms = sum(float(w @ w) / (2.0 * m) for w, m, k in zip(ws, mu, keep, strict=True) if k)
    return float(norms + C * np.maximum(0.0, 1.0 - y * (f + b)).sum() + reg.penalty(mu))


def _gmkl_l1_scaled(reg: Regularizer, a: np.ndarray, q: np.ndarray) -> float:
    """``1'a - dual_bound(q/2)``; for GMKL's pure l1 (infinite beyond ``q_m/2 > sigma_m``) at ``s a`` with
    ``s = min(1, min_m sqrt(2 sigma_m / q_m))``, which keeps ``s a`` feasible and brings it inside (the closed
    form, independent of the library's search along the ray in ``multikernel.solve.scaling``)."""
    plain = float(a.sum() - reg.dual_bound(0.5 * q))
    if math.isfinite(plain) or not (reg.name.startswith("gmkl_") and reg._c() == 0):
        return plain
    sigma = reg._sigma(len(q))
    with np.errstate(divide="ignore"):
        s = min(1.0, float(np.min(np.sqrt(2.0 * sigma / np.maximum(q, 0.0)))))
    s *= 1.0 - 1e-12  # strictly inside despite the rounding of the square root
    return max(plain, float(s * a.sum() - reg.dual_bound(0.5 * s * s * q)))


def reference(Ks: np.ndarray, y: np.ndarray, reg: Regularizer, C: float = 1.0, certify: float = 1e-5) -> Reference:
    """The optimal MKL objective (C-SVC inner problem) by cvxpy + Clarabel, bracketed from both sides.

    The dual form ``max_alpha 1'alpha - dual_bound(q(alpha)/2)`` gives the lower bound and weights; while the
    bounds are further apart than 1e-8 (relative), the primal form is solved too, then both forms with the next
    of Clarabel's settings; the tightest bounds found are kept (see :class:`Reference`).  Asserts that the
    bracket is within ``certify`` (relative, 1e-5 by default): a looser reference would make every comparison
    weak.  Tests that compare at a tolerance of 1e-3 may accept 2.5e-4 (Clarabel brackets some problems at
    C = 1e4 with two positive points only to 1.1e-4).
    """
    M, n = Ks.shape[0], Ks.shape[1]
    factors = _factors(Ks)

    def dual_form(s: float) -> tuple[cp.Problem, tuple]:
        alpha, t = cp.Variable(n), cp.Variable(M)
        ay = cp.multiply(y, alpha) / s
        cones = [0.5 * s * s * cp.sum_squares(L.T @ ay) <= t[m] for m, L in enumerate(factors)]
        bound, extra = cvx_dual_bound(reg, t, M)
        cons = [alpha >= 0, alpha <= C, y @ alpha == 0, *cones, *extra]
        return cp.Problem(cp.Maximize(cp.sum(alpha) - bound), cons), (alpha, cones)

    def primal_form(s: float) -> tuple[cp.Problem, tuple]:
        # min sum_m ||w_m||^2 / (2 mu_m) + C sum xi + Omega(mu), f = sum_m L_m w_m, all divided by s.
        mu, r, b, xi = cp.Variable(M, nonneg=True), cp.Variable(M), cp.Variable(), cp.Variable(n, nonneg=True)
        ws = [cp.Variable(L.shape[1]) for L in factors]
        f = sum(L @ w for L, w in zip(factors, ws, strict=True))
        cons = [cp.quad_over_lin(w, mu[m]) <= 2.0 * r[m] * s for m, w in enumerate(ws)]
        cons += [cp.multiply(y, f + b) >= 1 - xi, *cvx_domain(reg, mu, M)]
        objective = cp.Minimize(cp.sum(r) + C / s * cp.sum(xi) + cvx_penalty(reg, mu) / s)
        return cp.Problem(objective, cons), (mu, ws, b)

    lower, upper = -math.inf, math.inf

    def within(rel: float) -> bool:
        return math.isfinite(upper - lower) and upper - lower <= rel * max(abs(lower), 1.0)

    for scale, opts in _ATTEMPTS:
        s = C if scale == "C" else 1.0
        prob, (alpha, cones) = dual_form(s)
        if _clarabel(prob, opts):
            a = _feasible(alpha.value, y, C)
            coef = a * y
            lower = max(lower, _gmkl_l1_scaled(reg, a, np.einsum("i,mij,j->m", coef, Ks, coef)))
            upper = min(upper, _svm_upper(Ks, y, reg, C, np.array([np.sum(c.dual_value) for c in cones])))
        if within(1e-8):
            break
        prob, (mu, ws, b) = primal_form(s)
        if _clarabel(prob, opts):
            upper = min(upper, _primal_upper(factors, y, reg, C, mu.value, [w.value for w in ws], float(b.value)))
        if within(1e-8):
            break
    assert within(certify), f"the reference is not certified to {certify:g}: lower {lower}, upper {upper}"
    return Reference(lower=lower, upper=upper)


def reference_value(Ks: np.ndarray, y: np.ndarray, reg: Regularizer, C: float = 1.0) -> float:
    """The optimal MKL objective by cvxpy + Clarabel, for moderate problems where Clarabel is accurate."""
    ref = reference(Ks, y, reg, C)
    assert ref.upper - ref.lower <= 2e-7 * max(abs(ref.value), 1.0), ref
    return ref.value


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
    cons += [cp.sum(alpha) - 0.5 * cp.sum_squares(L.T @ ay) >= tau - zeta[m] for m, L in enumerate(_factors(Ks))]
    loss = theta * cp.sum(zeta) if r is None else 0.5 * theta * cp.sum(cp.power(zeta, r))
    prob = cp.Problem(cp.Maximize(tau - loss), cons)
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL, prob.status
    return float(prob.solution.opt_val)
