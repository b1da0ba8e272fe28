"""Memory estimates of kernel stacks, checked before anything large is allocated."""

from __future__ import annotations

import os
import re

import attrs
import numpy as np

from multikernel.errors import MemoryBudgetError

__all__ = ["StackMemoryEstimate", "estimate_stack_memory", "available_memory", "parse_bytes",
           "format_bytes", "check_budget", "BACKENDS"]

BACKENDS = ("dense", "memmap", "lazy", "factored")

_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "KIB": 1024, "M": 1024**2, "MB": 1024**2, "MIB": 1024**2,
          "G": 1024**3, "GB": 1024**3, "GIB": 1024**3, "T": 1024**4, "TB": 1024**4, "TIB": 1024**4}


def parse_bytes(value: int | float | str) -> int:
    """A byte count from a number or a string such as ``"4GB"``, ``"512 MiB"`` (binary units)."""
    if isinstance(value, (int, float, np.integer, np.floating)):
        if value < 0:
            raise ValueError(f"a memory size must be non-negative; got {value!r}")
        return int(value)
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", str(value))
    if not match or match.group(2).upper() not in _UNITS:
        raise ValueError(f"cannot read the memory size {value!r}; write for example '4GB' or '512MB'")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def format_bytes(n: float) -> str:
    """``1536 -> '1.5 KiB'``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TiB"


def available_memory() -> int:
    """Memory the process can use without swapping: ``MemAvailable`` on Linux, else free physical pages."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 2**63 - 1  # unknown: do not refuse


@attrs.frozen
class StackMemoryEstimate:
    """Bytes a kernel stack needs.

    Attributes
    ----------
    resident : int
        Memory held while the stack is built and used (storage for ``dense``; work arrays for all
        backends, including one float64 ``combine`` output).
    disk : int
        Bytes written to disk (``memmap`` only).
    storage : int
        Bytes of the full stack at the requested precision, whatever the backend.
    """

    backend: str
    n_kernels: int
    n_rows: int
    n_cols: int
    dtype: str
    resident: int
    disk: int
    storage: int

    def __str__(self) -> str:
        s = (f"{self.n_kernels} kernels of {self.n_rows} x {self.n_cols} ({self.dtype}, {self.backend}): "
             f"{format_bytes(self.resident)} in memory")
        return s + (f", {format_bytes(self.disk)} on disk" if self.disk else "")


def estimate_stack_memory(n_kernels: int, n_rows: int, n_cols: int | None = None, dtype: str = "float64",
                          backend: str = "dense", n_features: int = 0,
                          block_bytes: int | str = "256MB",
                          cache_size: float | None = None) -> StackMemoryEstimate:
    """Estimate the memory of a stack before building it.

    Parameters
    ----------
    n_kernels, n_rows, n_cols : int
        Stack shape (``n_cols = n_rows`` for a training stack).
    dtype : {"float64", "float32"}
        Storage precision.
    backend : {"dense", "memmap", "lazy", "factored"}
        Storage backend.  Without the features, the factored backend's estimate is the dense one, an upper
        bound (:func:`multikernel.stack.factored.estimate_factored_memory` counts the factors).
    n_features : int
        Number of features (the lazy backend keeps them).
    block_bytes : int or str
        The lazy backend's budget for one block of kernel values.
    cache_size : float, optional
        For a lazy training stack: the megabytes of the solver's column cache, which replaces the
        float64 ``combine`` output (a lazy training stack is never combined densely).

    Returns
    -------
    StackMemoryEstimate
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}; got {backend!r}")
    n_cols = n_rows if n_cols is None else n_cols
    itemsize = np.dtype(dtype).itemsize
    cells = n_rows * n_cols
    storage = n_kernels * cells * itemsize
    # Building a kernel holds a float64 base and a float64 kernel (then cast into the stack); using the
    # stack allocates the float64 combine output.  Normalization constants are O(M n).
    norm = 4 * n_kernels * (n_rows + n_cols) * 8
    if backend == "lazy":
        combined = cells * 8 if cache_size is None else min(cells * 8, int(cache_size * 2**20))
        work = min(3 * cells * 8, 2 * parse_bytes(block_bytes)) + combined
        resident = work + norm + 2 * (n_rows + n_cols) * max(n_features, 1) * 8
        return StackMemoryEstimate(backend, n_kernels, n_rows, n_cols, str(np.dtype(dtype)),
                                   int(resident), 0, int(storage))
    work = 3 * cells * 8 + norm
    if backend in ("dense", "factored"):
        return StackMemoryEstimate(backend, n_kernels, n_rows, n_cols, str(np.dtype(dtype)),
                                   int(storage + work), 0, int(storage))
    return StackMemoryEstimate(backend, n_kernels, n_rows, n_cols, str(np.dtype(dtype)),
                               int(work), int(storage), int(storage))


def check_budget(estimate: StackMemoryEstimate, budget: int) -> None:
    """Raise :class:`~multikernel.errors.MemoryBudgetError` naming the alternatives if it does not fit."""
    if estimate.resident <= budget:
        return
    M, n, m = estimate.n_kernels, estimate.n_rows, estimate.n_cols
    alternatives = []
    if estimate.backend == "factored":
        alternatives.append("a larger factor_tol (fewer factor columns, a looser certificate)")
        alternatives.append("backend='lazy' (kernels recomputed from the features by blocks)")
    elif estimate.backend != "lazy":
        if estimate.dtype == "float64":
            f32 = estimate_stack_memory(M, n, m, "float32", estimate.backend)
            fits = "fits" if f32.resident <= budget else "does not fit either"
            alternatives.append(f"dtype='float32' ({format_bytes(f32.resident)}, {fits})")
        if estimate.backend == "dense":
            mm = estimate_stack_memory(M, n, m, estimate.dtype, "memmap")
            alternatives.append(f"backend='memmap' ({format_bytes(mm.disk)} on disk, "
                                f"{format_bytes(mm.resident)} in memory)")
        alternatives.append("backend='lazy' (kernels recomputed from the features by blocks)")
        per_kernel = n * m * np.dtype(estimate.dtype).itemsize
        fixed = estimate.resident - M * per_kernel if estimate.backend == "dense" else estimate.resident
        if estimate.backend == "dense" and budget > fixed:
            alternatives.append(f"fewer kernels (at most {int((budget - fixed) // per_kernel)})")
    else:
        alternatives.append("a smaller block size, or fewer training samples")
    raise MemoryBudgetError(
        f"the kernel stack needs about {format_bytes(estimate.resident)} ({estimate}), more than the "
        f"memory budget of {format_bytes(budget)}. Alternatives: " + "; ".join(alternatives) + ".")
