"""How many threads the compiled loops may use (shared by every ``_ext`` module)."""

from __future__ import annotations

import os

PARALLEL_MIN_WORK = 16_000_000
"""Loops with less work than this (element operations) run serially: on a busy machine waking a second
thread costs more than it saves (the first kernels of a 403-kernel family on 200 samples took 30x longer in
parallel), and OpenBLAS's own spinning threads compete with OpenMP's."""


def max_threads() -> int:
    """``OMP_NUM_THREADS`` if set, else the CPUs this process may run on."""
    env = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


_BLAS_CONTROLLER = None
BLAS_MIN_WORK = 5e8
"""Dense products with fewer flops than this run on one BLAS thread (see :func:`blas_for`)."""


def one_blas_thread():
    """A context that limits BLAS to one thread (the one controller of the package: inspecting the loaded
    libraries costs milliseconds, so it is built once)."""
    global _BLAS_CONTROLLER
    if _BLAS_CONTROLLER is None:
        from threadpoolctl import ThreadpoolController

        _BLAS_CONTROLLER = ThreadpoolController()
    return _BLAS_CONTROLLER.limit(limits=1, user_api="blas")


def blas_for(flops: float):
    """A context that limits BLAS to one thread when ``flops`` is below :data:`BLAS_MIN_WORK`.

    Small products and eigen-decompositions called in a loop (the (w, w) steps of the bilinear solvers) were
    up to 50x slower with OpenBLAS's thread pool than on one thread on a busy machine.
    """
    import contextlib

    return contextlib.nullcontext() if flops > BLAS_MIN_WORK else one_blas_thread()
