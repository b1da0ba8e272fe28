"""The levers of the soft margin protocol v2 outside the stack passes, measured side by side on the same folds.

For one data set of a protocol config (split 0): the cross-validation of every method's grid on the first
``--folds`` folds, CPU seconds per method (single-threaded), in one run: as on main (each method fits its
whole grid, ``C`` inside the warm-started walk), with the fits of equivalent problems shared across methods
(``share``, :mod:`multikernel.experiments.equivalent`), and with the method's parameter inside the walk
(``warm_order = "parameters"``); ratios to main.  The selected grid point is compared too, since fits that
stop at a certified gap of ``cv_tol`` may rank close points differently.

    OMP_NUM_THREADS=1 python benchmarks/softmargin_v2_levers.py docs/experiments/soft-margin-mkl-v2.toml heart
    ... CONFIG DATASET [--folds K] [--methods LABEL,LABEL]
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

import attrs
from softmargin_fold_profile import (  # the sibling script (benchmarks/ is on sys.path when run)
    fold_parser,
    split0_problem,
)

from multikernel.experiments.model_selection import cross_validate_methods, resolve_grid, select_best


@contextlib.contextmanager
def _timed(cpu: list[float], j: int) -> Iterator[None]:
    """Adds the CPU seconds of the block to ``cpu[j]`` (a method's share of a fold)."""
    c0 = time.process_time()
    try:
        yield
    finally:
        cpu[j] += time.process_time() - c0


def main() -> None:
    parser = fold_parser(__doc__)
    args = parser.parse_args()
    cfg, stack, ytr, folds = split0_problem(args.config, args.dataset)
    s = cfg.experiment
    folds = folds[:args.folds]
    solver = attrs.evolve(cfg.solver, tol=s.cv_tol or cfg.solver.tol)
    chosen = [m for m in cfg.methods if not args.methods or m.display_name in args.methods.split(",")]
    methods = [(m, resolve_grid(m.grid, stack.n_kernels)) for m in chosen]
    print(f"{args.dataset}: {len(ytr)} training rows, M = {stack.n_kernels}, {len(folds)} fold(s), gap tol "
          f"{solver.tol:g}; load {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)

    # (label, share, warm_order): main's protocol first, then each lever added
    variants = [("main", False, "C"), ("shared", True, "C"), ("shared + parameters inside", True, "parameters")]
    runs = {}
    for label, share, order in variants:
        cpu = [0.0] * len(methods)
        out = cross_validate_methods(stack, ytr, folds, methods, solver, warm_start=s.warm_start,
                                     guards=[lambda j=j, cpu=cpu: _timed(cpu, j) for j in range(len(methods))],
                                     share=share, warm_order=order)
        runs[label] = (cpu, out)

    base = runs["main"]
    print("\nCPU seconds of the cross-validation (fits made, + fits taken from an equivalent problem); in "
          "brackets the ratio to main:\n")
    print("| method | " + " | ".join(label for label, _, _ in variants) + " | selected (main / last) |")
    print("|---" * (len(variants) + 2) + "|")
    for j, (m, points) in enumerate(methods):
        cells = []
        for label, _, _ in variants:
            cpu, out = runs[label]
            info = out[j][1]
            ratio = cpu[j] / base[0][j] if base[0][j] else float("nan")
            cells.append(f"{cpu[j]:.2f} ({ratio:.2f}x; {info['cv_fits']}+{info['cv_shared_fits']} fits, "
                         f"{info['cv_outer_iterations']} it.)")
        chosen_main, chosen_last = (points[select_best(runs[k][1][j][0])] for k in ("main", variants[-1][0]))
        same = "same" if chosen_main == chosen_last else f"{chosen_main} / {chosen_last}"
        print(f"| {m.display_name} | " + " | ".join(cells) + f" | {same} |")
    totals = [sum(runs[label][0]) for label, _, _ in variants]
    print("| all | " + " | ".join(f"{t:.2f} ({t / totals[0]:.2f}x)" for t in totals) + " | |")

if __name__ == "__main__":
    main()
