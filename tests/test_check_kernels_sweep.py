"""The one-read check of precomputed training kernels (``_stack.check_square_stack``) against numpy.

The sweep reads whole rows in panels and compares each panel with the mirrored blocks above it by 4 x 4
blocks transposed in registers; the sizes drawn here cross every edge of that layout (n below 4, not a
multiple of 4 or of the panel height, one or several panels) and the perturbations land anywhere, so a
block or an edge that the sweep skipped would show as a wrong maximum, a missed NaN or a wrong pair.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from multikernel.stack import storage


def _psd(n: int, M: int, seed: int, dtype) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    Ks = np.stack([np.exp(-g * d2) for g in np.logspace(-1, 1, M)])
    return np.ascontiguousarray(Ks, dtype=dtype)


def _first_minor(K: np.ndarray, scale: float) -> tuple[int, int]:
    """The first (row-major) pair with |K_ij| > sqrt(K_ii) sqrt(K_jj) (1 + 5e-7) + 1e-8 scale, as the sweep tests it."""
    dpos = np.sqrt(np.clip(np.diagonal(K), 0.0, None)) * np.sqrt(1.0 + 5e-7)  # the slack on each root
    bad = np.abs(K) - dpos[:, None] * dpos[None, :] > 1e-8 * scale
    hits = np.argwhere(bad)
    return (int(hits[0, 0]), int(hits[0, 1])) if hits.size else (-1, -1)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 75), M=st.integers(1, 5), seed=st.integers(0, 2**16), f32=st.booleans(),
       n_asym=st.integers(0, 3), minor=st.booleans(), bad=st.sampled_from([None, np.nan, np.inf, -np.inf]),
       data=st.data())
def test_sweep_reports_what_numpy_computes(n, M, seed, f32, n_asym, minor, bad, data):
    dtype = np.float32 if f32 else np.float64
    K = _psd(n, M, seed, dtype)
    rng = np.random.default_rng(seed + 1)
    cell = st.tuples(st.integers(0, M - 1), st.integers(0, n - 1), st.integers(0, n - 1))
    for _ in range(n_asym):  # one entry changed without its mirror: anywhere, edges included
        m, i, j = data.draw(cell)
        K[m, i, j] += dtype(0.25 + rng.random())
    if minor and n >= 2:  # a symmetric pair above the Cauchy-Schwarz bound
        m, i, j = data.draw(cell)
        if i != j:
            K[m, i, j] = K[m, j, i] = 2.0 * np.sqrt(float(K[m, i, i]) * float(K[m, j, j])) + 1.0
    if bad is not None:
        m, i, j = data.draw(cell)
        K[m, i, j] = bad
    weights = rng.random(M)
    finite, found, maxabs, asym, scale, combined = storage._fused_checks(K, weights)
    K64 = K.astype(np.float64)
    expect_finite = np.isfinite(K64).all(axis=(1, 2))
    np.testing.assert_array_equal(finite, expect_finite)
    for m in np.flatnonzero(expect_finite):  # what the sweep reports is only used for finite kernels
        assert maxabs[m] == np.abs(K64[m]).max()
        assert asym[m] == np.abs(K64[m] - K64[m].T).max()  # exact: the same double differences
        assert tuple(found[m]) == _first_minor(K64[m], scale[m])
    # every kernel symmetric: the mirrored upper sums, where the float64 buffer is at most a quarter of the stack
    # (M >= 4 in float64, M >= 8 in float32)
    if expect_finite.all() and not asym.any() and M >= (8 if f32 else 4):
        assert combined is not None
    if combined is not None and expect_finite.all():
        np.testing.assert_allclose(combined, np.tensordot(weights, K64, axes=1), rtol=1e-12, atol=1e-12)
