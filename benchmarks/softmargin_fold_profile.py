"""CPU time of one cross-validation fold of every method's grid on one data set of a protocol config.

The unit of work that dominates the soft margin protocol is the grid search on a fold; this times it per
method (CPU seconds, single-threaded), with the outer iterations, to compare stopping rules and solvers.

    OMP_NUM_THREADS=1 python benchmarks/softmargin_fold_profile.py docs/experiments/soft-margin-mkl-v2.toml heart
    ... CONFIG DATASET [LABEL,LABEL] [--profile]   (cProfile of each method, by internal time)
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections.abc import Callable

import attrs
import numpy as np
from sklearn.model_selection import StratifiedKFold

from multikernel.experiments.model_selection import cross_validate_methods, resolve_grid
from multikernel.experiments.runner import check_experiment, load_experiment_config
from multikernel.experiments.units import make_kernel_set, split_data


def split0_problem(config: str, dataset: str, transform: Callable | None = None) -> tuple:
    """The experiment's split 0 of one data set: ``(config, kernel stack of its training part, training labels,
    the CV folds of the training part)``, as the runner builds them; ``transform`` changes the loaded config
    first (a variant of the protocol)."""
    cfg = load_experiment_config(config)
    if transform is not None:
        cfg = transform(cfg)
    cfg = attrs.evolve(cfg, datasets=[d for d in cfg.datasets if d.name == dataset])
    X, y = check_experiment(cfg)[dataset]
    s = cfg.experiment
    Xtr, _, ytr, _ = split_data(X, y, cfg.datasets[0], s, 0)
    stack = make_kernel_set(cfg.kernels, X.shape[1], cfg.preprocessing.standardize).fit_stack(Xtr)
    folds = list(StratifiedKFold(s.cv_folds, shuffle=True, random_state=s.seed).split(np.zeros(len(ytr)), ytr))
    return cfg, stack, ytr, folds


def fold_parser(description: str | None) -> argparse.ArgumentParser:
    """The command line of the scripts that run folds of split 0: config, data set, --folds, --methods."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config")
    parser.add_argument("dataset")
    parser.add_argument("--folds", type=int, default=1, help="how many of the cv_folds folds to run (default 1)")
    parser.add_argument("--methods", default="", help="labels, comma-separated (default: all)")
    return parser


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config")
    parser.add_argument("dataset")
    parser.add_argument("methods", nargs="?", default="")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--cv-tol", type=float, help="the tolerance of the fold's fits (default: cv_tol or tol)")
    args = parser.parse_args()
    cfg, stack, ytr, folds = split0_problem(args.config, args.dataset)
    s = cfg.experiment
    fold = folds[:1]
    tol = args.cv_tol or s.cv_tol or cfg.solver.tol
    solver = attrs.evolve(cfg.solver, tol=tol)
    print(f"{args.dataset}: {len(fold[0][0])} training rows, M = {stack.n_kernels}, {solver.stopping} tol {tol:g}")
    total = 0.0
    for m in cfg.methods:
        if args.methods and m.display_name not in args.methods.split(","):
            continue
        points = resolve_grid(m.grid, stack.n_kernels)
        prof = cProfile.Profile()
        c0 = time.process_time()
        if args.profile:
            prof.enable()
        ((_, info),) = cross_validate_methods(stack, ytr, fold, [(m, points)], solver, warm_start=s.warm_start)
        if args.profile:
            prof.disable()
        cpu = time.process_time() - c0
        total += cpu
        print(f"{m.display_name}: {cpu:.1f} s CPU, {len(points)} points, {info['cv_outer_iterations']} outer "
              f"iterations, largest gap {info['cv_gap_max']:.1e}", flush=True)
        if args.profile:
            pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    print(f"all: {total:.1f} s CPU")


if __name__ == "__main__":
    main()
