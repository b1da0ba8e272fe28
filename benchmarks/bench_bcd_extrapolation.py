"""Block coordinate descent with and without ``extrapolate`` (the over-relaxed multiplicative update).

Two measurements, both sides in the same run:

* ``--drawn N``: the first ``N`` problems the tests' strategy ``mkl_problems`` draws (seed 12345: ties,
  duplicated kernels, unnormalised scales, C from 1e-2 to 1e4), each solved by the presets ``mkl_gl`` and
  ``lpmkl`` at the estimator's defaults (tol 1e-3, max_iter 200) with ``extrapolate`` off and on: failures
  (no convergence or a ConvergenceWarning), iterations (median, mean, max) and total time.  This is also a
  robustness sweep: a failure prints the problem's ``make_problem`` call, ready to paste into a test.
* ``--data SET``: lp-MKL on a data set of ``../shared/data`` with the soft margin protocol's kernel family
  (trace-normalised), for each ``p`` and ``C``: iterations and CPU seconds, and the ratio on / off.

Run from the repository root (the drawn problems need ``tests/`` and hypothesis)::

    OMP_NUM_THREADS=1 python benchmarks/bench_bcd_extrapolation.py --drawn 200
    OMP_NUM_THREADS=1 python benchmarks/bench_bcd_extrapolation.py --data pima-diabetes --p 32/31,8/7,4/3,2,3
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np

from multikernel import MKLClassifier
from multikernel.core.registry import get_registry
from multikernel.plugins.regularizers import LpBall
from multikernel.plugins.solvers import BlockCoordinateDescent
from multikernel.stack.kernelset import KernelSet

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_onepass import load  # noqa: E402


def drawn(n_examples: int) -> None:
    from sweep_presets import drawn_problems, solve_preset  # the tests' strategy and preset runner

    problems = drawn_problems(n_examples)
    print(f"{len(problems)} drawn problems")
    print("| preset | extrapolate | failures | iterations median / mean / max | time (s) |")
    print("|---|---|---|---|---|")
    for preset in ("mkl_gl", "lpmkl"):
        for extrapolate in (False, True):
            its, failures, start = [], 0, time.perf_counter()
            for p in problems:
                solver = BlockCoordinateDescent(extrapolate=extrapolate)
                res, caught = solve_preset(preset, p.Ks, p.y, p.C, solver=solver)
                its.append(res.n_iter)
                if not res.converged or caught:
                    failures += 1
                    print(f"  FAIL {preset} extrapolate={extrapolate}: {p.call}: {res.n_iter} iterations, "
                          f"gap {res.dual_gap:.2e}", file=sys.stderr)
            its = np.array(its)
            print(f"| {preset} | {extrapolate} | {failures} | {np.median(its):.0f} / {its.mean():.1f} / {its.max()} "
                  f"| {time.perf_counter() - start:.1f} |")


def on_data(name: str, ps: list[float], Cs: list[float], n_max: int) -> None:
    X, y = load(name, n_max)
    family = get_registry().get("family", "simplemkl")(X.shape[1])
    K = KernelSet(family, normalize="trace").fit_stack(X).data
    print(f"{name}: {K.shape[0]} kernels, n = {K.shape[1]}")
    print("| p | C | iterations off / on | CPU s off / on | ratio on / off |")
    print("|---|---|---|---|---|")
    warnings.simplefilter("ignore")
    for p in ps:
        for C in Cs:
            row = []
            for extrapolate in (False, True):
                clf = MKLClassifier(kernels="precomputed", method="lpmkl", regularizer=LpBall(p=p), C=C, tol=1e-3,
                                    max_iter=500, solver=BlockCoordinateDescent(extrapolate=extrapolate))
                start = time.process_time()
                clf.fit(K, y)
                res = clf.results_[0] if isinstance(clf.results_, list) else clf.results_
                row.append((res.n_iter, time.process_time() - start))
            (i0, t0), (i1, t1) = row
            print(f"| {p:.4g} | {C:g} | {i0} / {i1} | {t0:.2f} / {t1:.2f} | {t1 / t0:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--drawn", type=int, default=0, help="number of drawn problems (0: skip)")
    ap.add_argument("--data", default=None, help="a data set of ../shared/data for lp-MKL")
    ap.add_argument("--p", default="32/31,8/7,4/3,2,3", help="comma-separated exponents (fractions allowed)")
    ap.add_argument("--C", default="0.1,1,10,100", help="comma-separated C values")
    ap.add_argument("--n-max", type=int, default=400, help="at most this many samples of the data set")
    args = ap.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.1f}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    if args.drawn:
        drawn(args.drawn)
    if args.data:
        on_data(args.data, [float(Fraction(v)) for v in args.p.split(",")], [float(v) for v in args.C.split(",")],
                args.n_max)


if __name__ == "__main__":
    main()
