"""Raw kernel blocks of fitted builders, sharing the base matrix among builders that declare the same one.

A built-in builder exposes ``base_key()``, ``_base(A, B, symmetric)``, ``_apply(base, out)`` and
``select_rows(X)``; builders with equal keys (ten Gaussian bandwidths on one column subset) then cost
one distance computation.  Any other :class:`~multikernel.core.interfaces.KernelBuilder` is served through
``kernel_block(X, cols)`` when it has one, else ``transform(X)[:, cols]``.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from multikernel._threads import max_threads
from multikernel.core.interfaces import KernelBuilder

__all__ = ["group_builders", "map_rows", "raw_blocks", "symmetric_path"]

MAP_MIN_ENTRIES = 4_000_000
"""Bases with at least this many entries are mapped by :func:`map_rows` (row blocks on threads)."""

_BLOCK_ENTRIES = 1 << 16  # entries of a base block: a few hundred kB, so it is read from cache by every map


def map_rows(builders: Sequence[KernelBuilder], base: np.ndarray, outs: Sequence[np.ndarray]) -> None:
    """``outs[i] = builders[i]._apply(base)`` for a shared ``base``, block of rows by block of rows, the row
    range split among :func:`~multikernel._threads.max_threads` threads.

    Each block of the base is read from memory once for all the maps, and the threads share the first
    writes (page faults) of the fresh outputs, which cost more than the arithmetic: the thesis's four maps
    of musk2's distances (n = 6598) took 0.55 s one map after the other (the rational ones already on two
    threads) and 0.38-0.41 s this way on two cores.  ``_apply`` must be elementwise (every built-in map is).
    """
    n = len(base)
    rows = max(1, _BLOCK_ENTRIES // max(base[0].size if n else 1, 1))

    def work(lo: int, hi: int) -> None:
        for i in range(lo, hi, rows):
            j = min(i + rows, hi)
            for b, out in zip(builders, outs, strict=True):
                b._apply(base[i:j], out[i:j])

    n_threads = min(max_threads(), max(1, n // rows))
    if n_threads == 1:
        work(0, n)
        return
    edges = np.linspace(0, n, n_threads + 1).astype(int)
    with ThreadPoolExecutor(n_threads) as pool:
        # list(): re-raises a worker's exception here
        list(pool.map(work, edges[:-1], edges[1:]))


def _key(builder: KernelBuilder):
    base_key = getattr(builder, "base_key", None)
    if base_key is None or not hasattr(builder, "_base") or not hasattr(builder, "_apply"):
        return None
    return base_key()


def group_builders(builders: Sequence[KernelBuilder], ms: Sequence[int] | None = None) -> list[list[int]]:
    """Indices ``ms`` (all by default) grouped by shared base, in order of first appearance."""
    ms = range(len(builders)) if ms is None else ms
    groups: dict[object, list[int]] = {}
    out: list[list[int]] = []
    for m in ms:
        key = _key(builders[m])
        if key is None:
            out.append([m])
            continue
        if key not in groups:
            groups[key] = []
            out.append(groups[key])
        groups[key].append(m)
    return out


def symmetric_path(builder: KernelBuilder) -> bool:
    """Whether :func:`raw_blocks` with ``symmetric=True`` computes the builder's training kernel by its own
    symmetric path (a built-in builder: the base's symmetric product, then an elementwise map), which gives
    an exactly symmetric matrix (``tests/test_stack_symmetry.py`` checks every built-in kernel)."""
    return hasattr(builder, "_kernel") and hasattr(builder, "X_fit_")


def _writes_base_into(builder: KernelBuilder) -> bool:
    """Whether the builder's ``_base`` takes ``out=`` (a C-contiguous float64 array of the base's shape)."""
    return "out" in inspect.signature(builder._base).parameters


def raw_blocks(builders: Sequence[KernelBuilder], groups: list[list[int]], X: np.ndarray,
               cols: np.ndarray | None, symmetric: bool = False, out: np.ndarray | None = None
               ) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(m, K)``: the unnormalized float64 kernel between rows ``X`` and the training samples
    ``cols`` (all when ``None``) for every ``m`` in ``groups``.

    ``symmetric`` says that ``X`` are the training samples themselves and ``cols`` is ``None``: the
    builders may then use their symmetric (half-work) paths.  A yielded array may be reused for the next
    kernel of its group, so a consumer must copy what it keeps.

    ``out`` (float64, shape ``(len(builders), rows, cols)``, optional) is where the consumer keeps the
    kernels: the builders of a shared base then map it straight into ``out[m]`` and yield that (the consumer
    need not copy it), instead of into a temporary of the base's size (or the base itself) that the consumer
    copies.  At n = 6598 the temporary is 348 MB of fresh memory, whose first write (page faults) costs more
    than the map, and each copy a pass over 348 MB.
    """
    for group in groups:
        b0 = builders[group[0]]
        if len(group) == 1 or _key(b0) is None:
            for m in group:
                b = builders[m]
                if symmetric and hasattr(b, "_kernel") and hasattr(b, "X_fit_"):
                    yield m, b._kernel(b.X_fit_, b.X_fit_, symmetric=True)
                elif hasattr(b, "kernel_block"):
                    yield m, b.kernel_block(X, cols)
                else:
                    K = b.transform(X)
                    yield m, K if cols is None else K[:, cols]
            continue
        if symmetric:
            A = B = b0.X_fit_
        else:
            A = b0.select_rows(X)
            B = b0.X_fit_ if cols is None else b0.X_fit_[cols]
        if out is not None and len(A) * len(B) >= MAP_MIN_ENTRIES:
            # A base that can be computed in place goes into the last kernel's slice, which its map then
            # overwrites block by block after the others read it: no fresh memory beyond the stack.
            last = out[group[-1]]
            base = b0._base(A, B, symmetric, out=last) if _writes_base_into(b0) else b0._base(A, B, symmetric)
            map_rows([builders[m] for m in group], base, [out[m] for m in group])
            for m in group:
                yield m, out[m]
            continue
        base = b0._base(A, B, symmetric)
        tmp = np.empty_like(base) if out is None and len(group) > 1 else None
        for i, m in enumerate(group):
            # The last kernel of the group may overwrite the base: one temporary fewer.
            target = out[m] if out is not None else base if i == len(group) - 1 else tmp
            yield m, builders[m]._apply(base, target)
