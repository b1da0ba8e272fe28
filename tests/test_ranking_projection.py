"""The compiled MLR-L1 block step (bracket shrinking, expected O(m)) against the sorting reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from multikernel._ext import _mlr
from multikernel.ranking.solver import project_balanced_box


def _compiled_projection(v: np.ndarray, ysign: np.ndarray, C: float, kii: float = 1.0) -> np.ndarray:
    """The compiled step of one block, driven through ``sweep`` on a one-sample problem.

    With ``S = 0`` and scores ``F = Ysign - kii v`` the block projects ``S + (Ysign - F) / kii = v`` (the sweep
    does not check that ``F = K S``; it only reads it).
    """
    m = len(v)
    S = np.zeros((1, m))
    Ft = np.ascontiguousarray((ysign - kii * v)[:, None])
    Y = np.ascontiguousarray(ysign[None, :], dtype=np.float64)
    d = np.array([kii])
    _mlr.sweep(np.array([[kii]]), None, S, Ft, Y, d, d, C, 1.0, 0.0, 1.0, np.zeros(1, dtype=np.intp), 1e-12, True,
               False, np.zeros(0))
    return S[0]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1), m=st.integers(2, 60), ties=st.booleans(), C=st.sampled_from([0.3, 1.0, 7.0]),
       spread=st.sampled_from([0.01, 1.0, 30.0]))
def test_compiled_step_equals_the_sorting_reference(seed, m, ties, C, spread):
    rng = np.random.default_rng(seed)
    ysign = np.where(rng.random(m) < 0.3, 1.0, -1.0)
    ysign[rng.integers(m)], ysign[rng.integers(m)] = 1.0, -1.0  # may overwrite each other: redraw below
    if ysign.min() == ysign.max():
        ysign[0] = -ysign[0]
    # ties: values on a coarse grid make equal breakpoints, and breakpoints equal to the root
    v = rng.integers(-3, 4, size=m) * C / 2 if ties else rng.normal(scale=spread * C, size=m)
    lo, hi = np.where(ysign < 0, -C, 0.0), np.where(ysign > 0, C, 0.0)
    got = _compiled_projection(v, ysign, C)
    want = project_balanced_box(v, lo, hi)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * C * m)
    assert np.all(got >= lo) and np.all(got <= hi)
    assert abs(got.sum()) <= 1e-12 * C * m
