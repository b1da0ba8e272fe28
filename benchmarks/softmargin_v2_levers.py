"""The levers of the soft margin protocol v2 outside the stack passes, measured side by side on the same folds.

For one data set of a protocol config (split 0): the cross-validation of every method's grid on the first
``--folds`` folds, CPU seconds per method (single-threaded), with the fits of equivalent problems shared across
methods (``share``, :mod:`multikernel.experiments.equivalent`) and without (each method fits its whole grid),
in one run; then the ratio.  The selected grid point of each method is printed for both, since fits that
stop at a certified gap of ``cv_tol`` may rank close points differently.

    OMP_NUM_THREADS=1 python benchmarks/softmargin_v2_levers.py docs/experiments/soft-margin-mkl-v2.toml heart
    ... CONFIG DATASET [--folds K] [--methods LABEL,LABEL]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from collections.abc import Iterator

import attrs
import numpy as np
from sklearn.model_selection import StratifiedKFold

from multikernel.experiments.model_selection import cross_validate_methods, resolve_grid, select_best
from multikernel.experiments.runner import check_experiment, load_experiment_config
from multikernel.experiments.units import make_kernel_set, split_data


@contextlib.contextmanager
def _timed(cpu: list[float], j: int) -> Iterator[None]:
    """Adds the CPU seconds of the block to ``cpu[j]`` (a method's share of a fold)."""
    c0 = time.process_time()
    try:
        yield
    finally:
        cpu[j] += time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config")
    parser.add_argument("dataset")
    parser.add_argument("--folds", type=int, default=1, help="how many of the cv_folds folds to run (default 1)")
    parser.add_argument("--methods", default="", help="labels, comma-separated (default: all)")
    args = parser.parse_args()
    cfg = load_experiment_config(args.config)
    cfg = attrs.evolve(cfg, datasets=[d for d in cfg.datasets if d.name == args.dataset])
    X, y = check_experiment(cfg)[args.dataset]
    s = cfg.experiment
    Xtr, _, ytr, _ = split_data(X, y, cfg.datasets[0], s, 0)
    stack = make_kernel_set(cfg.kernels, X.shape[1], cfg.preprocessing.standardize).fit_stack(Xtr)
    folds = list(StratifiedKFold(s.cv_folds, shuffle=True, random_state=s.seed).split(np.zeros(len(ytr)), ytr))
    folds = folds[:args.folds]
    solver = attrs.evolve(cfg.solver, tol=s.cv_tol or cfg.solver.tol)
    chosen = [m for m in cfg.methods if not args.methods or m.display_name in args.methods.split(",")]
    methods = [(m, resolve_grid(m.grid, stack.n_kernels)) for m in chosen]
    print(f"{args.dataset}: {len(ytr)} training rows, M = {stack.n_kernels}, {len(folds)} fold(s), gap tol "
          f"{solver.tol:g}; load {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)

    runs = {}
    for share in (False, True):
        cpu = [0.0] * len(methods)
        out = cross_validate_methods(stack, ytr, folds, methods, solver, warm_start=s.warm_start,
                                     guards=[lambda j=j, cpu=cpu: _timed(cpu, j) for j in range(len(methods))],
                                     share=share)
        runs[share] = (cpu, out)

    print("\n| method | fits alone | CPU s alone | fits shared (+ taken) | CPU s shared | ratio | selected alone "
          "| selected shared |")
    print("|---|---|---|---|---|---|---|---|")
    totals = [0.0, 0.0]
    for j, (m, points) in enumerate(methods):
        (ca, (sa, ia)), (cs, (ss, is_)) = ((runs[k][0][j], runs[k][1][j]) for k in (False, True))
        totals[0] += ca
        totals[1] += cs
        print(f"| {m.display_name} | {ia['cv_fits']} | {ca:.2f} | {is_['cv_fits']} (+{is_['cv_shared_fits']}) | "
              f"{cs:.2f} | {cs / ca if ca else float('nan'):.2f} | {points[select_best(sa)]} | "
              f"{points[select_best(ss)]} |")
    print(f"| all | | {totals[0]:.2f} | | {totals[1]:.2f} | {totals[1] / totals[0]:.2f} | | |")


if __name__ == "__main__":
    main()
