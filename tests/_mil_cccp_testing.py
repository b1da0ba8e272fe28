"""Drawn multiple-instance problems and the cvxpy references of the MissSVM and MICA tests."""

from __future__ import annotations

import warnings
from typing import Any

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from multikernel import create
from multikernel.iokl.unit_svm import SVM_TOL


class MILProblem:
    """Features ``X`` (the linear kernel ``X X'`` is the kernel), a bag id and a bag label per instance."""

    def __init__(self, X: np.ndarray, bags: np.ndarray, y: np.ndarray, C: float, text: str) -> None:
        self.X, self.bags, self.y, self.C, self.text = X, bags, y, C, text

    @property
    def K(self) -> np.ndarray:
        return self.X @ self.X.T

    def __repr__(self) -> str:  # hypothesis prints this for a failing example
        return self.text


@st.composite
def mil_problems(draw: Any, max_bags: int = 8, max_size: int = 4, singletons: bool = False) -> MILProblem:
    """Bags of 1 to ``max_size`` instances (all singletons with ``singletons``), at least two bags of each class,
    2 or 3 features (or rank one: copies of one column), duplicated instances, features scaled by
    10^-2..10^2 and C from 10^-2 to 10^3."""
    n_pos = draw(st.integers(2, max_bags // 2))
    n_neg = draw(st.integers(2, max_bags // 2))
    sizes = [1 if singletons else draw(st.integers(1, max_size)) for _ in range(n_pos + n_neg)]
    d = draw(st.sampled_from([2, 3]))
    rank_one = draw(st.booleans())
    n_copies = draw(st.integers(0, 2))
    scale = 10.0 ** draw(st.sampled_from([-2, 0, 1, 2]))
    C = 10.0 ** draw(st.sampled_from([-2, -1, 0, 1, 2, 3]))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    X, bags, y = [], [], []
    for k, m in enumerate(sizes):
        pts = rng.normal(size=(m, d))
        label = 1 if k < n_pos else -1
        if label > 0:
            pts[rng.integers(m)] += 2.0
        X.append(pts)
        bags += [k] * m
        y += [label] * m
    X, bags, y = np.vstack(X), np.array(bags), np.array(y)
    if rank_one:  # every column a copy of the first: a rank-one kernel
        X[:, 1:] = X[:, :1]
    for i in rng.integers(0, len(X), size=n_copies):  # an exact copy, in the same bag (singletons: a new bag)
        bag = bags.max() + 1 if singletons else bags[i]
        X, bags, y = np.vstack([X, X[i]]), np.r_[bags, bag], np.r_[y, y[i]]
    text = (f"mil_problems(sizes={sizes}, n_pos={n_pos}, d={d}, rank_one={rank_one}, copies={n_copies}, "
            f"scale={scale:g}, C={C:g}, seed={seed})")
    return MILProblem(X * scale, bags, y, C, text)


def units_svm_optimum(K: np.ndarray, V: sp.csr_matrix, labels: np.ndarray, bounds: np.ndarray) -> float:
    """The optimal value of the C-SVC over units (the primal: ``1/2 ||w||^2 + sum_u C_u h(y_u f(v_u))``) by
    cvxpy + Clarabel, on a factor of ``K``."""
    w_, U = np.linalg.eigh(K)
    F = U[:, w_ > 1e-12 * max(w_.max(), 1e-300)] * np.sqrt(w_[w_ > 1e-12 * max(w_.max(), 1e-300)])
    G = np.asarray(V @ F)
    w, b = cp.Variable(G.shape[1]), cp.Variable()
    margins = cp.multiply(labels, G @ w + b)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + bounds @ cp.pos(1 - margins)))
    prob.solve(solver=cp.CLARABEL)
    return float(prob.value)


def units_svm_objective(K: np.ndarray, V: sp.csr_matrix, labels: np.ndarray, bounds: np.ndarray,
                        coef: np.ndarray, b: float) -> float:
    """The same primal objective at a decision function ``f = K coef + b``."""
    f = np.asarray(V @ (K @ coef)) + b
    return float(0.5 * coef @ K @ coef + bounds @ np.maximum(0.0, 1.0 - labels * f))


def l1_svm_optimum(KV: np.ndarray, labels: np.ndarray, C: float) -> float:
    """``min ||u||_1 + C sum_k h(y_k (KV_k u + b))`` by cvxpy + Clarabel."""
    u, b = cp.Variable(KV.shape[1]), cp.Variable()
    prob = cp.Problem(cp.Minimize(cp.norm1(u) + C * cp.sum(cp.pos(1 - cp.multiply(labels, KV @ u + b)))))
    prob.solve(solver=cp.CLARABEL)
    return float(prob.value)


def fit_linear(cls: type, p: MILProblem, **params: Any) -> Any:
    """``cls`` fitted on ``p`` with the linear kernel (the kernel the references use), capped fits allowed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return cls(kernels=[create("kernel", "linear")], C=p.C, **params).fit(p.X, p.y, p.bags)


def relative(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(b))


def shifted_bags(n_bags: int = 20, shift: float = 1.5, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Bags of three Gaussian instances, every other bag positive with one instance shifted by ``shift``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(3 * n_bags, 2))
    bags = np.repeat(np.arange(n_bags), 3)
    y = np.where(bags % 2 == 0, 1, 0)
    X[::6] += shift
    return X, y, bags


def svm_allowance(reference: float, bounds_sum: float) -> float:
    """How far an objective reached by the SMO may lie from the exact one: 1e-4 relative, plus the duality gap its
    stopping rule allows (the KKT tolerance on each margin, times the sum of the dual variables' bounds)."""
    return 1e-4 * max(1.0, abs(reference)) + SVM_TOL * bounds_sum
