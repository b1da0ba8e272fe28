"""The exp maps of the kernel builders into a float32 kernel go through a float64 buffer of a few rows.

The blocks must give the same bits as the whole-matrix map (exp in double, rounded once), for any number
of rows, including a last partial block and matrices smaller than one block.
"""

from __future__ import annotations

import numpy as np
import pytest

from multikernel.plugins import _kernel_base
from multikernel.plugins._kernel_base import apply_map


@pytest.mark.parametrize("kind", ["exp", "exp_sqrt"])
@pytest.mark.parametrize("shape, block", [((37, 23), 23 * 5), ((37, 23), 1), ((4, 9), 1 << 18), ((50, 50), 50 * 7)])
def test_float32_blocks_equal_the_rounded_float64_map(monkeypatch, kind, shape, block):
    monkeypatch.setattr(_kernel_base, "_MAP_BLOCK", block)
    base = np.abs(np.random.default_rng(0).normal(size=shape)) * 5.0
    expected = apply_map(base, kind, np.empty(shape), a=0.3).astype(np.float32)
    out = apply_map(base, kind, np.full(shape, np.nan, dtype=np.float32), a=0.3)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_allclose(expected, np.exp(-0.3 * (np.sqrt(base) if kind == "exp_sqrt" else base)), rtol=1e-7)
