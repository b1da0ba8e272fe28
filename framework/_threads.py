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
