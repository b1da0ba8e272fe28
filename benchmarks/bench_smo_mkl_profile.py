"""Where SMO-MKL's time goes (issue 12, session 6): the steps alone against the steps with SVM bounds.

For each data set and p, on the problems of ``bench_solvers.py`` (same data, split, kernels, C, gap), two
cold solves in the same run:

* ``steps only`` (``SMOMKL(svm_bounds=False)``): every certificate is the C-SVC primal at ``mu(alpha)``
  from ``alpha`` itself.  Printed per round: steps so far, the certified lower bound (the dual value at
  ``alpha``) and the upper bound, which shows the dual converging long before the primal bound does;
  and the CPU time per step and the Newton iterations per step.
* ``svm bounds`` (the default): a round whose own bound misses ``tol`` is certified by the C-SVC at
  ``mu(alpha)``.  Printed: the CPU time split into the steps, the combined kernels, the SVM bounds (SVM
  solves and quadratic forms) and the rest, and the speed-up over the steps alone.

CPU times of the process with one BLAS thread (best of ``--repeats``).  Run from the repository root::

    python benchmarks/bench_smo_mkl_profile.py [--datasets heart,ionosphere,pima,australian] [--p 2,4/3]
"""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction
from pathlib import Path

from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_solvers as bench  # noqa: E402 - the same data, kernels and problems

from multikernel.core.interfaces import MKLProblem  # noqa: E402
from multikernel.core.registry import get_registry  # noqa: E402
from multikernel.plugins import smo_mkl  # noqa: E402
from multikernel.stack.combination import CombinedKernel  # noqa: E402


class Timers:
    """CPU time spent in a few methods, by wrapping them for the duration of one solve."""

    TARGETS = ((smo_mkl._State, "run", "steps"), (CombinedKernel, "__call__", "combination"),
               (smo_mkl._State, "svm_bounds", "svm bounds"))

    def __init__(self) -> None:
        self.total = {label: 0.0 for _, _, label in self.TARGETS}
        self._saved = []

    def __enter__(self) -> Timers:
        for owner, name, label in self.TARGETS:
            original = getattr(owner, name)
            self._saved.append((owner, name, original))
            setattr(owner, name, self._timed(original, label))
        return self

    def _timed(self, original, label):  # noqa: ANN001, ANN202
        def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            start = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                self.total[label] += time.process_time() - start
        return wrapper

    def __exit__(self, *exc) -> None:  # noqa: ANN002
        for owner, name, original in self._saved:
            setattr(owner, name, original)


def solve(train, ytr, p: float, args, svm_bounds: bool):  # noqa: ANN001, ANN201
    """One cold solve: (CPU time, result, timers, state, trace of (steps, lower, upper))."""
    reg = get_registry().create("regularizer", "lp_ball", p=p)
    states: list = []
    trace: list = []
    original_init = smo_mkl._State.__init__

    def init(self, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        original_init(self, *a, **k)
        states.append(self)

    def callback(entry: dict) -> None:
        trace.append((states[-1].n_steps if states else 0, entry["lower"], entry["upper"]))

    problem = MKLProblem(stack=train, y=ytr, loss=bench.CountingCSVC(C=args.C), regularizer=reg, tol=args.tol,
                         max_iter=2000, inner_tol=1e-3, callback=callback)
    smo_mkl._State.__init__ = init
    try:
        with Timers() as timers:
            start = time.process_time()
            res = smo_mkl.SMOMKL(svm_bounds=svm_bounds).solve(problem)
            elapsed = time.process_time() - start
    finally:
        smo_mkl._State.__init__ = original_init
    return elapsed, res, timers, states[-1], trace, problem.loss.n_solves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="heart,ionosphere,pima,australian")
    parser.add_argument("--p", default="2,4/3")
    parser.add_argument("--C", type=float, default=10.0)
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    threadpool_limits(1)
    for name in args.datasets.split(","):
        train, _, ytr, _ = bench.load(name)
        train.symmetric  # the stack's one-time symmetry check, outside the timings  # noqa: B018
        print(f"\n## {name}: n={len(ytr)}, M={train.n_kernels}")
        for ptext in args.p.split(","):
            p = float(Fraction(ptext))
            runs = {}
            for svm_bounds in (False, True):
                runs[svm_bounds] = min((solve(train, ytr, p, args, svm_bounds) for _ in range(args.repeats)),
                                       key=lambda r: r[0])
            t, res, timers, state, trace, _ = runs[False]
            print(f"p = {ptext}, steps only: {t:.3f} s, {state.n_steps} steps, {1e6 * t / state.n_steps:.0f} us "
                  f"per step, {state.newton_iterations / state.n_steps:.2f} Newton iterations per step, gap "
                  f"{res.dual_gap:.1e}")
            optimum = trace[-1][1]
            print("  round: steps, lower bound (rel. to the final one), upper bound (rel.): "
                  + "; ".join(f"{s}: {(optimum - lo) / optimum:.1e}, {(up - optimum) / optimum:.1e}"
                              for s, lo, up in trace[1:]))
            t2, res2, timers2, state2, _, svms = runs[True]
            other = t2 - sum(timers2.total.values())
            split = ", ".join(f"{k} {v:.3f}" for k, v in timers2.total.items())
            print(f"p = {ptext}, svm bounds: {t2:.3f} s ({split}, rest {other:.3f}), {state2.n_steps} steps, "
                  f"{svms} SVM solves, {res2.n_iter} rounds, gap {res2.dual_gap:.1e}; steps only / svm bounds = "
                  f"{t / t2:.1f}x")


if __name__ == "__main__":
    main()
