"""The memory-bandwidth floor of the soft margin protocol v2: how long it would take if every fit read its
kernel stack only once.

Issue 16 asks for the whole protocol (7 data sets x 10 splits x 7 methods, 5-fold cross-validation over each
method's grid, then a refit) in under 10 minutes on 2 cores.  Every certified fit must read every kernel of
its stack at least once (the certificate needs ``alpha' K_m alpha`` for all m), and every fit's validation
predictions read the validation rows of the kernels it weights.  This script counts the fits the runner makes
(the grid of each method, minus the points that are the same problem as an earlier method's:
``multikernel.experiments.equivalent``), times one pass over each fold's stack with the library's own
products (the forms pass, one thread, best of 5), and prints the protocol's time at 1 and at 2 passes per fit,
assuming perfect scaling to ``--cores`` cores (so the floor is optimistic).  With ``--measure`` it also runs
fold 0 of every method's grid on each set (the protocol's unit of work) and prints its CPU time as passes per
fit.

    OMP_NUM_THREADS=1 python benchmarks/softmargin_v2_floor.py docs/experiments/soft-margin-mkl-v2.toml [--measure]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import attrs
import numpy as np
from softmargin_fold_profile import split0_problem

from multikernel.experiments.model_selection import cross_validate_methods, fits_per_fold, resolve_grid, subset_stack
from multikernel.experiments.runner import load_experiment_config


def pass_time(stack, repeats: int = 5) -> float:
    """Seconds of one forms pass (``v' K_m v`` for every m, reading the whole stack), best of ``repeats``."""
    v = np.random.default_rng(0).normal(size=stack.n_rows)
    stack.quad_forms(v)  # first touch
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        stack.quad_forms(v)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--measure", action="store_true", help="also run fold 0 of every grid (minutes)")
    parser.add_argument("--datasets", default="", help="names, comma-separated (default: all)")
    args = parser.parse_args()
    cfg = load_experiment_config(args.config)
    s = cfg.experiment
    names = [d.name for d in cfg.datasets if not args.datasets or d.name in args.datasets.split(",")]
    print(f"# {platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
          f"{s.repeats} splits, {s.cv_folds} folds, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    print("| data set | fold rows | M | fold stack (MB) | pass (ms) | fits per fold (grid) | "
          "protocol at 1 pass per fit (CPU s) | fold 0 measured (CPU s) | measured passes per fit |")
    print("|---|---|---|---|---|---|---|---|---|")
    total = total_measured = total_floor_measured = 0.0
    for name in names:
        dcfg, stack, ytr, folds = split0_problem(args.config, name)
        train, val = folds[0]
        fold_train, fold_val = subset_stack(stack, train, train), subset_stack(stack, val, train)
        methods = [(m, resolve_grid(m.grid, stack.n_kernels)) for m in dcfg.methods]
        fits, grid = fits_per_fold(methods, stack.n_kernels), sum(len(points) for _, points in methods)
        t_fold = pass_time(fold_train)
        t_val = pass_time_rect(fold_val)
        t_full = pass_time(stack)
        # per split: folds x fits x (the fit's pass + its validation predictions), plus one refit per method
        per_split = s.cv_folds * fits * (t_fold + t_val) + len(dcfg.methods) * t_full
        floor = s.repeats * per_split
        total += floor
        mb = fold_train.nbytes / 2**20
        measured = ratio = ""
        if args.measure:
            solver = attrs.evolve(dcfg.solver, tol=s.cv_tol or dcfg.solver.tol)
            c0 = time.process_time()
            cross_validate_methods(stack, ytr, folds[:1], methods, solver, warm_start=s.warm_start)
            cpu = time.process_time() - c0
            total_measured += cpu
            total_floor_measured += fits * (t_fold + t_val)
            measured, ratio = f"{cpu:.1f}", f"{cpu / (fits * (t_fold + t_val)):.0f}"
        print(f"| {name} | {len(train)} | {stack.n_kernels} | {mb:.0f} | {1e3 * t_fold:.2f} | {fits} ({grid}) | "
              f"{floor:.0f} | {measured} | {ratio} |", flush=True)
    print(f"\nprotocol floor at one pass per fit: {total:.0f} CPU s = {total / args.cores / 60:.1f} min on "
          f"{args.cores} cores (perfect scaling); at two passes per fit (the forms and one read of K(mu) for the "
          f"SVM): {2 * total / args.cores / 60:.1f} min.  Target: 10 min.")
    if args.measure:
        print(f"fold 0 of every set: {total_measured:.0f} CPU s measured, "
              f"{total_measured / total_floor_measured:.0f} passes per fit on average")


def pass_time_rect(stack, repeats: int = 5) -> float:
    """Seconds of one read of a rectangular (validation rows x training columns) stack: ``K_m v`` for all m."""
    v = np.random.default_rng(0).normal(size=stack.n_cols)
    w = np.full(stack.n_kernels, 1.0 / stack.n_kernels)
    stack.combine(w)
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        stack.combine(w) @ v
        best = min(best, time.perf_counter() - t)
    return best


if __name__ == "__main__":
    main()
