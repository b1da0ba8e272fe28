"""ML-MKL-SA's certificate stays a valid bound whatever the run: after any number of rounds, with any suffix of
the iterates certified, either gradient estimate and any batch, the reported upper bound (the sum form's primal
at the certified weights) and lower bound (its dual at the alphas the run holds) bracket the sum form's optimum
solved independently in cvxpy (Clarabel)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from test_fitcore import _kernels, _shared_reference

from multikernel.solve.fit import SolveSettings, build_parts, encode_targets, fit_mkl
from multikernel.stack.storage import DenseStack

#: cvxpy's optimum is itself approximate (Clarabel's default precision): the bracket is checked to this relative
#: margin, far below the gaps of the truncated runs (1e-3 to 1)
REFERENCE_PRECISION = 1e-6


def _labels(seed: int, n: int, labels: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    Y = (X @ rng.normal(size=(3, labels)) + 0.7 * rng.normal(size=(n, labels)) > 0).astype(int)
    Y[0], Y[1] = 1, 0  # every label column has both values
    return X, Y


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), labels=st.integers(2, 5), C=st.sampled_from([0.1, 1.0, 10.0]),
       suffix=st.sampled_from([0.2, 0.5, 1.0]), gradient=st.sampled_from(["aggregated", "sampled"]),
       batch=st.sampled_from(["auto", 1, 2]), rounds=st.integers(1, 4))
def test_sa_bounds_bracket_the_cvxpy_optimum(seed, labels, C, suffix, gradient, batch, rounds):
    X, Y = _labels(seed, 24, labels)
    Ks = _kernels(X)
    targets = encode_targets(Y)
    parts = build_parts("ml_mkl_sa", params={"C": C, "solver__random_state": seed, "solver__suffix": suffix,
                                             "solver__gradient": gradient, "solver__batch": batch})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a run cut at max_iter is the point of the test
        # inner tolerance 1e-3 as in the benchmarks: the bounds must not rely on precise inner solves
        fitted = fit_mkl(DenseStack(Ks), targets, parts, SolveSettings(tol=1e-9, inner_tol=1e-3, max_iter=rounds),
                         shared=True)
    res = fitted.results[0]
    ref = _shared_reference(Ks, targets.blocks, build_parts("l1mkl").regularizer, C=C)
    margin = REFERENCE_PRECISION * abs(ref)
    assert res.lower_bound <= ref + margin, (res.lower_bound, ref)
    assert res.objective >= ref - margin, (res.objective, ref)
    # every certified round's bounds bracket it too, not only the best ones
    for entry in res.history:
        assert entry["lower"] <= ref + margin and entry["upper"] >= ref - margin
    np.testing.assert_allclose(res.weights.sum(), 1.0)
    assert (res.weights >= 0).all()


@pytest.mark.parametrize("suffix", [0.2, 1.0])
@pytest.mark.parametrize("step", ["auto", "constant"])
def test_sa_reaches_the_cvxpy_optimum_with_any_suffix(suffix, step):
    """The suffix only picks the weights certified: every suffix ends at the certified sum-form optimum."""
    X, Y = _labels(5, 30, 4)
    Ks = _kernels(X)
    targets = encode_targets(Y)
    params = {"C": 1.0, "solver__random_state": 0, "solver__suffix": suffix, "solver__step": step}
    if step == "constant":
        params["solver__eta"] = 0.05
    res = fit_mkl(DenseStack(Ks), targets, build_parts("ml_mkl_sa", params=params),
                  SolveSettings(tol=1e-3, inner_tol=1e-8, max_iter=2000), shared=True).results[0]
    ref = _shared_reference(Ks, targets.blocks, build_parts("l1mkl").regularizer, C=1.0)
    assert res.converged and res.dual_gap <= 1e-3
    assert ref * (1 - REFERENCE_PRECISION) <= res.objective <= ref * (1 + 1e-3)
    assert res.lower_bound <= ref * (1 + REFERENCE_PRECISION)
