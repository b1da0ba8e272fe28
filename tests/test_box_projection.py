"""The compiled projection on ``{lo <= x <= hi, sum(x) = target}`` (``_ext/_common.pxd``, exposed by ``_box``)."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from multikernel._ext import _box


@st.composite
def _boxes(draw):
    """``(v, lo, hi, target)``: sizes 1-40, widths and offsets over decades, tied values and breakpoints,
    degenerate boxes (lo == hi), one-sided and two-sided infinite bounds, targets inside the feasible range."""
    m = draw(st.integers(1, 40), label="m")
    seed = draw(st.integers(0, 2**32 - 1), label="seed")
    scale = 10.0 ** draw(st.integers(-3, 3), label="log10 scale")
    rng = np.random.default_rng(seed)
    ties = draw(st.booleans(), label="ties")
    v = (rng.integers(-3, 4, size=m) / 2.0 if ties else rng.normal(size=m)) * scale
    lo = -np.abs(rng.normal(size=m)) * scale
    hi = np.abs(rng.normal(size=m)) * scale
    if ties:
        lo, hi = np.round(lo / scale) * scale, np.round(hi / scale) * scale
    degenerate = rng.random(m) < draw(st.sampled_from([0.0, 0.3]), label="degenerate share")
    hi[degenerate] = lo[degenerate]
    unbounded = draw(st.sampled_from(["none", "above", "below", "both"]), label="unbounded")
    pick = rng.random(m) < 0.3
    if unbounded in ("above", "both"):
        hi[pick & ~degenerate] = np.inf
    if unbounded in ("below", "both"):
        lo[pick & ~degenerate] = -np.inf
    low, high = lo.sum(), hi.sum()
    where = draw(st.sampled_from([0.0, 0.5, 1.0]), label="target position")
    if np.isfinite(low) and np.isfinite(high):
        t = float(np.clip(low + where * (high - low), low, high))
    elif np.isfinite(low):
        t = float(low + where * scale * m)
    elif np.isfinite(high):
        t = float(high - where * scale * m)
    else:
        t = float((where - 0.5) * scale * m)
    return v, lo, hi, t


def _check_projection(v, lo, hi, t, x):
    """The optimality conditions of the projection: ``x`` feasible, ``x = clip(v + lam, lo, hi)`` for one ``lam``."""
    scale = max(1.0, float(np.abs(v).max()), float(np.abs(np.where(np.isfinite(lo), lo, 0)).max()),
                float(np.abs(np.where(np.isfinite(hi), hi, 0)).max()))
    tol = 1e-12 * scale * len(v)
    assert np.all(x >= lo) and np.all(x <= hi)
    assert abs(x.sum() - t) <= tol, (x.sum(), t)
    d = x - v
    free = (x > lo) & (x < hi)
    at_lo, at_hi = (x <= lo) & (lo < hi), (x >= hi) & (lo < hi)  # a degenerate box (lo == hi) fixes x
    if free.any():
        lam = float(np.median(d[free]))
        assert np.all(np.abs(d[free] - lam) <= tol)
        assert np.all(d[at_lo] >= lam - tol)  # at the lower bound: v + lam <= lo
        assert np.all(d[at_hi] <= lam + tol)
    elif at_lo.any() and at_hi.any():  # every coordinate at a bound: some lam separates the two groups
        assert d[at_hi].max() <= d[at_lo].min() + tol


@settings(max_examples=300, deadline=None)
@given(box=_boxes())
def test_is_the_projection(box):
    v, lo, hi, t = box
    x = _box.project(v, lo, hi, t)
    _check_projection(v, lo, hi, t, x)


@settings(max_examples=40, deadline=None)
@given(box=_boxes())
def test_agrees_with_clarabel_on_finite_boxes(box):
    v, lo, hi, t = box
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        wide = 10.0 * (1.0 + np.abs(v))
        lo, hi = np.where(np.isfinite(lo), lo, -wide), np.where(np.isfinite(hi), hi, wide)
        t = float(np.clip(t, lo.sum(), hi.sum()))
    x = _box.project(v, lo, hi, t)
    z = cp.Variable(len(v))
    s = max(1.0, float(np.abs(v).max()))  # Clarabel in O(1) units
    prob = cp.Problem(cp.Minimize(cp.sum_squares(z - v / s)), [z >= lo / s, z <= hi / s, cp.sum(z) == t / s])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status == cp.OPTIMAL
    np.testing.assert_allclose(x, z.value * s, atol=1e-5 * s * len(v))


def test_edges():
    # the sum at a bound of the range: the whole box at that bound
    np.testing.assert_array_equal(_box.project(np.array([5.0, -5.0]), np.array([0.0, 1.0]), np.array([2.0, 3.0]), 1.0),
                                  [0.0, 1.0])
    np.testing.assert_array_equal(_box.project(np.array([5.0, -5.0]), np.array([0.0, 1.0]), np.array([2.0, 3.0]), 5.0),
                                  [2.0, 3.0])
    # unbounded both ways: a plain shift
    np.testing.assert_allclose(_box.project(np.array([1.0, 2.0]), np.full(2, -np.inf), np.full(2, np.inf), 0.0),
                               [-0.5, 0.5])
    assert _box.project(np.zeros(0), np.zeros(0), np.zeros(0), 0.0).shape == (0,)
    with pytest.raises(ValueError, match="same length"):
        _box.project(np.zeros(2), np.zeros(3), np.ones(2), 0.0)
