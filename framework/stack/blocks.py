"""Raw kernel blocks of fitted builders, sharing the base matrix among builders that declare the same one.

A built-in builder exposes ``base_key()``, ``_base(A, B, symmetric)``, ``_apply(base, out)`` and
``select_rows(X)``; builders with equal keys (ten Gaussian bandwidths on one column subset) then cost
one distance computation.  Any other :class:`~multikernel.core.interfaces.KernelBuilder` is served through
``kernel_block(X, cols)`` when it has one, else ``transform(X)[:, cols]``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from multikernel.core.interfaces import KernelBuilder

__all__ = ["group_builders", "raw_blocks"]


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
        base = b0._base(A, B, symmetric)
        tmp = np.empty_like(base) if out is None and len(group) > 1 else None
        for i, m in enumerate(group):
            # The last kernel of the group may overwrite the base: one temporary fewer.
            target = out[m] if out is not None else base if i == len(group) - 1 else tmp
            yield m, builders[m]._apply(base, target)
