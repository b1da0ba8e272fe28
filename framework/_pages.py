"""Large arrays on ordinary (4 KiB) memory pages: :func:`small_pages`.

numpy asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on every allocation of 4 MB
or more.  On the 2-core shared machine of the benchmarks (Linux THP ``enabled=madvise``,
``defrag=madvise``) the first write of such memory costs far more than with small pages: measured on 1.4 GB
(four 6598 x 6598 float64 kernels, musk2), first write 4.6-7.5 s with huge pages against 0.8-1.6 s without
(four runs each); four matrix-vector products afterwards 0.10-0.25 s against 0.14-0.63 s, row-and-column
gathers 0.09-0.15 s against 0.04-0.13 s.  Reads through the TLB can be slower on small pages (the SVM step's
kernel columns in an IOKL fit: 3.9-4.1 s against 2.6-3.5 s), less than the first write saves: a whole
bag-level IOKL fit on musk2 went from 16.5-24.1 s to 11.6-13.1 s wall (kernel-mode time 4.6-5.6 s to 1.7-1.9
s), three runs each, alternated.  Code that writes large fresh arrays once (kernel stacks, combined kernels)
runs inside :func:`small_pages`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import numpy as np

__all__ = ["small_pages"]

_core = getattr(np, "_core", None) or np.core  # numpy 2 / numpy 1.26
_SET = getattr(_core.multiarray, "_set_madvise_hugepage", None)
_LOCK = threading.Lock()
_depth = 0
_previous = True


@contextlib.contextmanager
def small_pages() -> Iterator[None]:
    """Within the context, numpy allocates without asking for huge pages (restored on exit; nests, and
    concurrent contexts in threads restore the setting when the last one exits).

    The setting is numpy's, process-wide: other threads allocating meanwhile get small pages too, which
    changes only their speed.  Without numpy's switch (a numpy that lacks it) this does nothing.
    """
    global _depth, _previous
    if _SET is None:
        yield
        return
    with _LOCK:
        if _depth == 0:
            _previous = bool(_SET(False))
        _depth += 1
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0:
                _SET(_previous)
