"""Shared helpers of the regression and one-class MKL tests: drawn problems and the cvxpy + Clarabel reference.

The reference solves the MKL saddle point from the dual side, as ``_mkl_testing.reference`` does for the C-SVC,

    max_{alpha in A}  L(alpha) - dual_bound(q(alpha)/2),   q_m(alpha) = ||L_m' c(alpha)||^2,  K_m = L_m L_m',

with each task's own dual written independently of the library: the epsilon-SVR over ``(a, a*)`` with
``c = a - a*``, kernel ridge regression over ``c`` (with ``1'c = 0`` for the intercept), the nu one-class SVM over
``alpha`` in the capped simplex.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import attrs
import cvxpy as cp
import numpy as np
import pytest
from _mkl_testing import CLARABEL_TIGHT, _clarabel, _factors, cvx_dual_bound, make_problem, mkl_problems
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from multikernel import DenseStack, MKLProblem, MKLResult, create, get_registry
from multikernel.core.interfaces import Regularizer, SampleLoss

#: The presets that minimise an MKL objective with any loss (``smo_mkl`` is the C-SVC's own solver, ``easymkl``
#: separates two classes).
TASK_PRESETS = ["average", "l1mkl", "simplemkl", "lpmkl", "l2mkl", "sgmkl", "sm1mkl", "sm2mkl", "mkl_silp",
                "mkl_md", "mkl_gl", "gmkl_l1", "gmkl_l2", "gmkl_elastic"]


@attrs.frozen(repr=False)
class Task:
    """A drawn task: the loss's name and parameters, the targets, and the call that rebuilds the problem."""

    loss: str
    params: dict[str, Any]
    Ks: np.ndarray
    y: np.ndarray
    call: str

    def __repr__(self) -> str:  # hypothesis prints this for a failing example
        return self.call

    def make_loss(self) -> SampleLoss:
        return create("loss", self.loss, **self.params)


def regression_targets(drawn_y: np.ndarray, log10_scale: float) -> np.ndarray:
    """Real targets that the drawn kernels explain in part: the drawn classes (which shift the first feature of
    the kernels) plus noise and an offset, times ``10**log10_scale``."""
    rng = np.random.default_rng(len(drawn_y))
    return 10.0**log10_scale * (drawn_y + 0.3 * rng.normal(size=len(drawn_y)) + 0.5)


def make_task(loss: str, params: dict[str, Any], log10_y_scale: float = 0.0, **problem: Any) -> Task:
    """``make_problem(**problem)``'s kernels with regression targets (ones for one class) and a loss."""
    return _task(loss, params, log10_y_scale, make_problem(**problem))


def _task(loss: str, params: dict[str, Any], log10_y_scale: float, drawn: Any) -> Task:
    call = (f"make_task({loss!r}, {params!r}, log10_y_scale={log10_y_scale!r}, "
            f"**dict({drawn.call[len('make_problem('):-1]}))")
    if loss != "one_class":
        return Task(loss=loss, params=params, Ks=drawn.Ks, y=regression_targets(drawn.y, log10_y_scale), call=call)
    # One class: each kernel gets a constant part (0.3 of its mean diagonal), as the Gaussian and polynomial kernels
    # have.  A linear kernel on centred data puts the origin in the data's hull, where the inner optimum is 0, and
    # an optimum of 0 has no *relative* gap to certify (the documented limit of the one-class objective, which is
    # negative, and with a penalty of the weights can cross 0; 0.3 avoids SM2MKL's 1/2 - 1/2 with one kernel).
    Ks = drawn.Ks + 0.3 * np.einsum("mii->m", drawn.Ks)[:, None, None] / drawn.Ks.shape[1]
    return Task(loss=loss, params=params, Ks=Ks, y=np.ones(len(drawn.y)), call=call)


@st.composite
def tasks(draw: Any, loss: str, n: tuple[int, int] = (8, 30), kernels: tuple[int, int] = (1, 5),
          log10_C: tuple[float, float] = (-2.0, 3.0),
          nus: tuple[float, ...] = (0.05, 0.1, 0.3, 0.5, 0.9, 1.0)) -> Task:
    """A hypothesis strategy: the structure of the kernels (``mkl_problems``: sizes, kinds, duplicates, scales),
    the scale of the targets over decades, and the loss's parameters (``C``, ``epsilon`` relative to the targets'
    size, ``nu``) over their ranges.  A failing example prints as the :func:`make_task` call that rebuilds it."""
    drawn = draw(mkl_problems(n=n, kernels=kernels, log10_C=log10_C))
    log10_y = draw(st.floats(-2.0, 2.0), label="log10 y scale") if loss != "one_class" else 0.0
    if loss == "epsilon_insensitive":
        params = {"C": drawn.C, "epsilon": 10.0**log10_y * draw(st.sampled_from([0.0, 0.01, 0.1, 0.5, 1.0]),
                                                                 label="epsilon / y scale")}
    elif loss == "squared":
        params = {"C": drawn.C, "fit_intercept": draw(st.booleans(), label="fit_intercept")}
    else:
        params = {"nu": draw(st.sampled_from(nus), label="nu")}
    return _task(loss, params, log10_y, drawn)


def solve_task(task: Task, method: str, tol: float = 1e-3, inner_tol: float = 1e-3, max_iter: int = 200,
               **kw: Any) -> tuple[MKLResult, list[str]]:
    """A registered method's regularizer and solver (at their default parameters) with the task's loss: the
    result and the ConvergenceWarnings it gave."""
    registry = get_registry()
    preset = registry.get("method", method)
    problem = MKLProblem(stack=DenseStack(task.Ks), y=task.y, loss=task.make_loss(),
                         regularizer=registry.create("regularizer", preset.regularizer, **preset.regularizer_params),
                         tol=tol, inner_tol=inner_tol, max_iter=max_iter, **kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        res = registry.create("solver", preset.solver, **preset.solver_params).solve(problem)
    return res, [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]


def _dual(task: Task, scale: float) -> tuple[cp.Expression, cp.Expression, list]:
    """The task's inner dual in cvxpy, its variables divided by ``scale``: ``(c, L, constraints)``."""
    n, y, p = len(task.y), task.y, task.params
    if task.loss == "epsilon_insensitive":
        a, b = cp.Variable(n), cp.Variable(n)
        C = p["C"] / scale
        c = scale * (a - b)
        L = y @ c - p["epsilon"] * scale * cp.sum(a + b)
        return c, L, [a >= 0, b >= 0, a <= C, b <= C, cp.sum(a - b) == 0]
    if task.loss == "squared":
        a = cp.Variable(n)
        L = scale * (y @ a) - scale**2 * cp.sum_squares(a) / (2.0 * p["C"])
        return scale * a, L, ([cp.sum(a) == 0] if p.get("fit_intercept", True) else [])
    a = cp.Variable(n)
    return a, 0.0, [a >= 0, a <= 1.0 / (p["nu"] * n), cp.sum(a) == 1]


def _feasible(task: Task, c: np.ndarray) -> tuple[np.ndarray, float]:
    """Clarabel's ``c`` moved exactly into the task's feasible set, and ``L(c)`` there (numpy, no cvxpy)."""
    y, p = task.y, task.params
    if task.loss == "epsilon_insensitive":
        a, b = np.clip(c, 0.0, p["C"]), np.clip(-c, 0.0, p["C"])  # the optimum has a_i a*_i = 0
        if a.sum() > b.sum():
            a *= b.sum() / a.sum()
        elif b.sum() > 0:
            b *= a.sum() / b.sum()
        return a - b, float(y @ (a - b) - p["epsilon"] * np.sum(a + b))
    if task.loss == "squared":
        if p.get("fit_intercept", True):
            c = c - c.mean()
        return c, float(y @ c - c @ c / (2.0 * p["C"]))
    upper = 1.0 / (p["nu"] * len(c))
    c = np.clip(c, 0.0, upper)
    if c.sum() > 1.0:
        c /= c.sum()
    else:
        room = upper - c
        c += (1.0 - c.sum()) * room / room.sum()
    return c, 0.0


def task_primal(task: Task, reg: Regularizer, weights: np.ndarray, coef: np.ndarray, bias: float) -> float:
    """The MKL primal objective at the model ``f = K(mu) c + b`` (any ``c``, ``b``): an upper bound of the optimum,
    ``1/2 c'K(mu)c + loss(y, f) + Omega(mu)``, from the formulations' definitions."""
    K = np.tensordot(weights, task.Ks, axes=1)
    f = K @ coef
    y, p = task.y, task.params
    if task.loss == "epsilon_insensitive":
        loss = p["C"] * np.maximum(0.0, np.abs(y - f - bias) - p["epsilon"]).sum()
    elif task.loss == "squared":
        loss = 0.5 * p["C"] * np.sum((y - f - bias) ** 2)
    else:  # rho = -bias: -rho + 1/(nu n) sum max(0, rho - f)
        loss = bias + np.maximum(0.0, -bias - f).sum() / (p["nu"] * len(y))
    return float(0.5 * coef @ f + loss + reg.penalty(np.asarray(weights, dtype=np.float64)))


def task_reference(task: Task, reg: Regularizer) -> float:
    """A certified lower bound of the MKL optimum of ``task`` with ``reg``: Clarabel's solution of the dual form
    above, moved exactly into the feasible set, and its dual value ``L(c) - dual_bound(q(c)/2)`` in numpy.

    The variables are scaled (by ``C``, or by ``C`` times the targets' size for the ridge) so that they are of
    order 1; Clarabel's tight tolerances first, then its defaults.  Where ``dual_bound`` is infinite at that point
    (GMKL's pure l1), the best bound on the ray ``s c``, ``0 <= s <= 1`` (feasible for the regression duals).
    """
    M = len(task.Ks)
    factors = _factors(task.Ks)
    scale = 1.0
    if task.loss == "epsilon_insensitive":
        scale = task.params["C"]
    elif task.loss == "squared":
        scale = task.params["C"] * max(float(np.abs(task.y).max()), 1e-12)
    for opts in (CLARABEL_TIGHT, {}, {"static_regularization_constant": 1e-6}):
        c, L, cons = _dual(task, scale)
        t = cp.Variable(M)
        cones = [0.5 * cp.sum_squares(F.T @ c) <= t[m] for m, F in enumerate(factors)]
        bound, extra = cvx_dual_bound(reg, t, M)
        prob = cp.Problem(cp.Maximize(L - bound), [*cons, *cones, *extra])
        if _clarabel(prob, opts) and c.value is not None:
            coef, _ = _feasible(task, np.asarray(c.value, dtype=np.float64))
            q = np.einsum("i,mij,j->m", coef, task.Ks, coef)

            def lower(s: float, coef: np.ndarray = coef, q: np.ndarray = q) -> float:
                return _feasible(task, s * coef)[1] - reg.dual_bound(0.5 * s * s * q)

            value = lower(1.0)
            if not math.isfinite(value) and task.loss != "one_class":
                value = max(lower(s) for s in np.linspace(0.0, 1.0, 2001))
            if math.isfinite(value):
                return float(value)
    raise AssertionError(f"Clarabel found no reference for {task!r}")


def check_against_reference(task: Task, reg: Regularizer, res: MKLResult, tol: float) -> None:
    """``res`` against the reference: its objective is the primal at its model, its certified lower bound is below
    that primal, Clarabel's certified lower bound is below it too, and the primal is within ``tol`` of that bound
    (plus 1e-6 of the targets' scale: Clarabel's own accuracy)."""
    upper = task_primal(task, reg, res.weights, res.coef, float(res.bias))
    scale = max(abs(upper), 1e-6 * float(task.y @ task.y) * task.params.get("C", 1.0), 1e-12)
    lower = task_reference(task, reg)
    assert res.objective == pytest.approx(upper, rel=1e-7, abs=1e-9 * scale), (res.objective, upper)
    assert res.lower_bound <= upper + 1e-9 * scale and lower <= upper + 1e-9 * scale, (res.lower_bound, lower, upper)
    assert upper - lower <= tol * abs(upper) + 1e-6 * scale, (upper, lower)


def check_preset(task: Task, method: str, tol: float = 1e-3) -> None:
    """The preset at its default parameters and the estimator's default tol, inner_tol and max_iter reaches its
    certified gap without a warning, at the reference optimum."""
    res, warned = solve_task(task, method, tol=tol)
    assert res.converged and res.dual_gap <= tol and not warned, (res.n_iter, res.dual_gap, warned)
    preset = get_registry().get("method", method)
    reg = get_registry().create("regularizer", preset.regularizer, **preset.regularizer_params)
    check_against_reference(task, reg, res, tol)
