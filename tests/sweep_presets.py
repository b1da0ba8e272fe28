"""Robustness sweep: every MKL preset on many problems drawn by the tests' strategy.

The property tests (``tests/test_mkl_reference.py``) draw a few dozen problems per preset; this sweep draws
hundreds with the same strategy (``mkl_problems``: ties, exact duplicate kernels, rank-deficient and
unnormalised kernels scaled by up to 1e3, one point in a class, C from 1e-2 to 1e4) and solves each with every
preset at the estimator's defaults (tol 1e-3, max_iter 200).  A failure is a solve that does not converge or
gives a ConvergenceWarning; each is printed with its ``make_problem(...)`` call, ready to paste into a
regression test.  With ``--reference`` every converged objective is also compared with cvxpy + Clarabel
(relative difference at most the tolerance).

With ``--walk`` each problem is solved along C = 1e-2 ... 1e4 and with ``--walk-param`` along the preset's own
parameter (the soft margin protocol's grids), each fit warm-started from the previous one; ``--solver`` replaces the
presets' solver.

Run from the repository root (needs the test extra: hypothesis, cvxpy)::

    OMP_NUM_THREADS=1 python tests/sweep_presets.py --draws 200 [--presets lpmkl,mkl_gl] [--reference]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from typing import Any

import numpy as np

# Run as a script, this file's folder (tests/) is first on sys.path, so the tests' helpers import directly.
from _mkl_testing import (
    MKL_PRESETS,
    mkl_problems,
    reference,
    solve_preset,
    without_local_constants,
)

from multikernel.core.registry import get_registry


def drawn_problems(n_draws: int, seed: int = 12345) -> list[Any]:
    """The first ``n_draws`` problems ``mkl_problems`` draws from ``seed`` (hypothesis, no database)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hypothesis_seed

    without_local_constants()  # the draws the tests' "ci" profile makes, whichever modules are imported
    problems: list[Any] = []

    @settings(max_examples=n_draws, derandomize=False, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @hypothesis_seed(seed)
    @given(mkl_problems())
    def collect(p: Any) -> None:
        problems.append(p)

    collect()
    return problems


#: The C grid of ``--walk``: the decades the property tests draw C from.
WALK = 10.0 ** np.arange(-2, 5)


#: ``--walk-param``: the regularizer and the values of its parameter (the soft margin protocol's grids).
PARAM_WALKS = {
    "sgmkl": ("elastic_net", "v", [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]),
    "sm1mkl": ("box_simplex", "nu", [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]),
    "sm2mkl": ("simplex_l2", "theta", [1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 1e1, 1e2, 1e3, 1e4, 1e5]),
    "lpmkl": ("lp_ball", "p", [32 / 31, 16 / 15, 8 / 7, 4 / 3, 2.0, 3.0]),
}


def _walk(preset: str, p: Any, steps: list[tuple[str, float, dict[str, Any]]], extra: dict[str, Any]
          ) -> tuple[Any, list[str], float]:
    """``preset`` along ``steps`` (label, C, part overrides), each fit warm-started from the previous one: the
    first fit that fails (or the last), its warnings prefixed by its label, and its C."""
    warm = None
    for label, C, parts in steps:
        res, caught = solve_preset(preset, p.Ks, p.y, C, warm_start=warm, **parts, **extra)
        if not res.converged or caught:
            return res, [f"{label}: {c}" for c in caught] or [f"{label}: not converged"], C
        warm = res
    return res, [], C


def _c_steps(p: Any) -> list[tuple[str, float, dict[str, Any]]]:
    """``--walk``: C along :data:`WALK` (``p.C`` is not used; with ``--reference`` the last fit is compared)."""
    return [(f"C = {C:g}", C, {}) for C in map(float, WALK)]


def _param_steps(preset: str, p: Any) -> list[tuple[str, float, dict[str, Any]]]:
    """``--walk-param``: ``preset``'s parameter along :data:`PARAM_WALKS` at ``p.C``."""
    name, param, values = PARAM_WALKS[preset]
    if param == "nu":
        values = [max(v, 1.0 / len(p.Ks)) for v in values]
    registry = get_registry()
    return [(f"{param} = {v:g}", p.C, {"regularizer": registry.create("regularizer", name, **{param: v})})
            for v in values]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--presets", default=",".join(MKL_PRESETS))
    ap.add_argument("--reference", action="store_true", help="compare objectives with cvxpy + Clarabel")
    ap.add_argument("--walk-param", action="store_true",
                    help="solve each problem (at its C) along the preset's own parameter (v, nu, theta, p; the "
                         "grids of the soft margin protocol), each fit warm-started from the previous one; presets "
                         "without one are skipped")
    ap.add_argument("--solver", default=None, help="a registered solver instead of each preset's (JSON parameters "
                                                   "after a colon: projected_gradient:{\"level_after\": 20})")
    ap.add_argument("--walk", action="store_true",
                    help="solve each problem along C = 1e-2 ... 1e4, each fit warm-started from the previous one "
                         "(the experiments' grid walks); a failure is any fit of the walk")
    args = ap.parse_args()
    if args.reference and args.walk_param:
        ap.error("--reference compares the presets' default problems: not with --walk-param")
    problems = drawn_problems(args.draws, args.seed)
    print(f"{len(problems)} problems drawn (seed {args.seed}); {platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}")
    registry = get_registry()
    print("| preset | failures | iterations median / mean / max | time (s) |")
    print("|---|---|---|---|")
    total_failures = 0
    extra: dict[str, Any] = {}
    if args.solver:
        name, _, params = args.solver.partition(":")
        extra["solver"] = registry.create("solver", name, **(json.loads(params) if params else {}))
    for preset in args.presets.split(","):
        if args.walk_param and preset not in PARAM_WALKS:
            continue
        its, failures, start = [], 0, time.perf_counter()
        for p in problems:
            C = p.C
            if args.walk_param:
                res, caught, C = _walk(preset, p, _param_steps(preset, p), extra)
            elif args.walk:
                res, caught, C = _walk(preset, p, _c_steps(p), extra)
            else:
                res, caught = solve_preset(preset, p.Ks, p.y, C, **extra)
            its.append(res.n_iter)
            bad = not res.converged or bool(caught)
            if not bad and args.reference:
                method = registry.get("method", preset)
                reg = registry.create("regularizer", method.regularizer, **method.regularizer_params)
                value = reference(p.Ks, p.y, reg, C, certify=2.5e-4).value
                bad = abs(res.objective - value) > 1e-3 * max(abs(value), 1.0)
            if bad:
                failures += 1
                where = f"{p.call} walked to C = {C:g}" if args.walk or args.walk_param else p.call
                print(f"  FAIL {preset}: {where}: {res.n_iter} iterations, gap {res.dual_gap:.2e}, {caught}",
                      file=sys.stderr)
        its_a = np.array(its)
        total_failures += failures
        print(f"| {preset} | {failures} | {np.median(its_a):.0f} / {its_a.mean():.1f} / {its_a.max()} | "
              f"{time.perf_counter() - start:.1f} |", flush=True)
    return 1 if total_failures else 0


if __name__ == "__main__":
    sys.exit(main())
