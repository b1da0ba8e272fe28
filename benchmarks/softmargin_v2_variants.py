"""Variants of the soft margin protocol v2 measured side by side on the same fold: CPU, iterations, selection.

For one data set of a protocol config (split 0, the first ``--folds`` folds): the cross-validation of the chosen
methods' grids (the config's solvers, ``cv_tol``, warm orders and shared fits), CPU seconds per method
(single-threaded), once per variant in one run, with ratios to the first variant.  A variant changes only how
the same problems are solved, never the problems:

- ``base``: the config as it is;
- ``f32``: the kernel stack in float32 (``[kernels] dtype = "float32"``);
- ``LABEL=SOLVER`` (e.g. ``SM2MKL=level``): that method's outer solver replaced; ``LABEL=SOLVER:KEY=N`` with one
  integer parameter (``SM2MKL=projected_gradient:level_after=20``);
- joined with ``+`` (``f32+SM2MKL=mirror_descent``).

The fold accuracies of every grid point are compared with the first variant (how many points' mean fold
accuracy moved, and whether the selected point moved), since fits that stop at a certified gap of ``cv_tol``
may rank close points differently.

    OMP_NUM_THREADS=1 python benchmarks/softmargin_v2_variants.py docs/experiments/soft-margin-mkl-v2.toml \\
        australian --methods SM2MKL --variants base,f32,f32+SM2MKL=level
"""

from __future__ import annotations

import os
import time
import warnings

import attrs
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from softmargin_fold_profile import (  # the sibling script (benchmarks/ is on sys.path when run)
    fold_parser,
    split0_problem,
)

from multikernel.config.schema import PartConfig
from multikernel.experiments.model_selection import cross_validate_methods, resolve_grid, select_best


def _apply(cfg, variant: str):
    """``cfg`` with the variant's changes (see the module docstring)."""
    for part in variant.split("+"):
        if part == "base":
            continue
        if part == "f32":
            cfg = attrs.evolve(cfg, kernels=attrs.evolve(cfg.kernels, dtype="float32"))
            continue
        label, _, solver = part.partition("=")
        if not solver:
            raise SystemExit(f"unknown variant part {part!r}: base, f32 or LABEL=SOLVER[:KEY=VALUE]")
        name, _, option = solver.partition(":")
        key, _, value = option.partition("=")
        spec = PartConfig(name=name, params={key: int(value)} if key else {})
        cfg = attrs.evolve(cfg, methods=[attrs.evolve(m, solver=spec) if m.display_name == label else m
                                         for m in cfg.methods])
    return cfg


def main() -> None:
    parser = fold_parser(__doc__)
    parser.add_argument("--variants", default="base,f32", help="comma-separated (default: base,f32)")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    variants = args.variants.split(",")
    rows = {}
    for variant in variants:
        cfg, stack, ytr, folds = split0_problem(args.config, args.dataset, transform=lambda c, v=variant: _apply(c, v))
        s = cfg.experiment
        folds = folds[:args.folds]
        solver = attrs.evolve(cfg.solver, tol=s.cv_tol or cfg.solver.tol)
        chosen = [m for m in cfg.methods if not args.methods or m.display_name in args.methods.split(",")]
        methods = [(m, resolve_grid(m.grid, stack.n_kernels)) for m in chosen]
        if variant == variants[0]:
            print(f"{args.dataset}: {len(folds[0][0])} rows in the fold, M = {stack.n_kernels}, {len(folds)} "
                  f"fold(s), gap tol {solver.tol:g}; load {' '.join(f'{x:.1f}' for x in os.getloadavg())}",
                  flush=True)
        for m, points in methods:
            c0 = time.process_time()
            ((scores, info),) = cross_validate_methods(stack, ytr, folds, [(m, points)], solver,
                                                       warm_start=s.warm_start, warm_order=s.warm_order)
            cpu = time.process_time() - c0
            rows.setdefault(m.display_name, {})[variant] = (cpu, info, scores, points)
            print(f"  {variant} {m.display_name}: {cpu:.2f} s, {info['cv_outer_iterations']} it., gap max "
                  f"{info['cv_gap_max']:.1e}", flush=True)

    print("\n| method | " + " | ".join(variants) + " | points moved / selected |")
    print("|---" * (len(variants) + 2) + "|")
    totals = dict.fromkeys(variants, 0.0)
    for label, runs in rows.items():
        base_cpu, _, base_scores, points = runs[variants[0]]
        cells, moved = [], []
        for v in variants:
            cpu, info, scores, _ = runs[v]
            totals[v] += cpu
            cells.append(f"{cpu:.2f} ({cpu / base_cpu:.2f}x; {info['cv_outer_iterations']} it.)")
            if v != variants[0]:
                n_moved = int(np.sum(np.abs(scores.mean(axis=1) - base_scores.mean(axis=1)) > 1e-12))
                same = select_best(scores) == select_best(base_scores)
                moved.append(f"{n_moved}/{'same' if same else points[select_best(scores)]}")
        print(f"| {label} | " + " | ".join(cells) + f" | {', '.join(moved)} |")
    base_total = totals[variants[0]]
    print("| all | " + " | ".join(f"{t:.2f} ({t / base_total:.2f}x)" for t in totals.values()) + " | |")


if __name__ == "__main__":
    main()
