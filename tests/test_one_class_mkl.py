"""One-class MKL: the nu one-class SVM inner problem against scikit-learn's ``OneClassSVM`` (fixed weights) and
every MKL preset against cvxpy + Clarabel on drawn structures (sizes, nu over its range, duplicated, unnormalized
and rank-deficient kernels), and the special cases of the formulation."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _mkl_testing import scaled
from _task_testing import TASK_PRESETS, check_preset, make_task, solve_task, tasks
from hypothesis import given
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import OneClassSVM

from multikernel.solve.one_class import solve_one_class

#: GMKL's pure l1 penalty is linear in the weights and the one-class inner optimum is homogeneous of degree 1 in
#: them (and negative), so its objective is either 0 at mu = 0 or unbounded below: no MKL optimum to compare.
ONE_CLASS_PRESETS = [m for m in TASK_PRESETS if m != "gmkl_l1"]


@scaled(2.0)
@given(task=tasks("one_class", kernels=(1, 1), nus=(0.05, 0.1, 0.3, 0.5, 0.9)))  # libsvm fails at nu = 1
def test_one_class_inner_problem_is_scikit_learn_one_class_svm(task):
    K, nu, n = task.Ks[0], task.params["nu"], len(task.y)
    ours = solve_one_class(K, nu, tol=1e-10)
    with warnings.catch_warnings():  # libsvm's one-class solver crawls at tight tolerances: capped
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = OneClassSVM(kernel="precomputed", nu=nu, tol=1e-7, max_iter=10**6).fit(K)
    # libsvm solves the same problem times nu n: alpha, rho and the decision values scale by nu n
    scale = nu * n
    alpha = np.zeros(n)
    alpha[ref.support_] = ref.dual_coef_[0] / scale
    w_ours, w_theirs = 0.5 * ours.coef @ K @ ours.coef, 0.5 * alpha @ K @ alpha
    size = max(abs(w_theirs), 1e-5 * np.abs(K).max())  # the rounding of an optimum near 0 is relative to K
    assert ours.dual_objective == pytest.approx(-w_ours, rel=1e-12)
    assert ours.dual_objective >= -w_theirs - 1e-7 * size  # as good as libsvm's dual
    # the gap of a KKT tolerance of 1e-10 on 1'alpha = 1 is about 1e-10 (an optimum of 0 has no relative size)
    assert ours.primal_objective - ours.dual_objective <= 1e-6 * max(size, abs(ours.primal_objective)) + 1e-9
    # the function part is unique; score_samples is ours times nu n
    assert np.allclose(scale * (K @ ours.coef), ref.score_samples(K), atol=1e-4 * scale * np.abs(K).max())
    assert ours.coef.sum() == pytest.approx(1.0) and ours.coef.max() <= 1.0 / scale * (1 + 1e-12)


@pytest.mark.parametrize("method", ONE_CLASS_PRESETS)
@scaled(0.3)
@given(data=st.data())
def test_every_preset_reaches_the_one_class_optimum(method, data):
    check_preset(data.draw(tasks("one_class"), label="task"), method)


@pytest.mark.parametrize("method", ["l1mkl", "simplemkl", "mkl_silp"])
def test_nu_one_puts_every_sample_at_its_bound(method):
    # nu = 1: the cap 1/n and 1'alpha = 1 leave alpha = 1/n; on the simplex the optimum is -max_m 1'K_m 1 / (2 n^2)
    task = make_task("one_class", {"nu": 1.0}, n=18, positives=5, kinds=["rbf", "poly", "linear"], seed=2)
    res, warned = solve_task(task, method, tol=1e-8, inner_tol=1e-10)
    n = 18
    assert not warned and np.allclose(res.coef, 1.0 / n)
    assert res.objective == pytest.approx(-0.5 * task.Ks.sum(axis=(1, 2)).max() / n**2, rel=1e-7)


@pytest.mark.parametrize("method", ["l1mkl", "sm1mkl"])
@given(s=st.floats(-3.0, 3.0))
@scaled(0.5)
def test_scaling_every_kernel_scales_the_optimum(method, s):
    """On a domain of the simplex family the optimum is homogeneous in the kernels: ``c K`` gives ``c J`` and the
    same weights (a consequence of the formulation, no reference solver)."""
    task = make_task("one_class", {"nu": 0.3}, n=20, positives=5, kinds=["rbf", "poly", "low_rank"], seed=7)
    a, _ = solve_task(task, method, tol=1e-7, inner_tol=1e-9)
    scaled_task = type(task)(loss=task.loss, params=task.params, Ks=10.0**s * task.Ks, y=task.y, call=task.call)
    b, _ = solve_task(scaled_task, method, tol=1e-7, inner_tol=1e-9)
    assert b.objective == pytest.approx(10.0**s * a.objective, rel=1e-5)
    assert np.allclose(a.weights, b.weights, atol=1e-3)


def test_bad_nu_is_named():
    task = make_task("one_class", {"nu": 0.0}, n=10, positives=3, kinds=["rbf"])
    for nu in (0.0, 1.5, float("nan"), "0.5", True):
        with pytest.raises(ValueError, match="nu"):
            solve_one_class(task.Ks[0], nu)
