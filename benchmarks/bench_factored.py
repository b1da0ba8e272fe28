"""The factored kernel stack against the dense one, in the same process: memory, one CV fold of the soft margin
protocol v2, and a whole split of german with the protocol's per-feature family (806 kernels).

The protocol (docs/experiments/soft-margin-mkl-v2.toml): the ``simplemkl`` family on all features and on each
feature (13 (d + 1) kernels), standardized features, trace normalization, float32 stacks, certified gap 1e-3
(CV fits 1e-2), split 0 of each set.  Three measurements, each printing a markdown table:

``memory``
    Bytes of the training stack of split 0, dense and factored (``KernelSet(backend=...)``), the factored
    backend's estimate before allocating, how many kernels are factored, and the build times.
``fold``
    CPU seconds of one CV fold of every method's grid (``cross_validate_methods``, as the runner calls it) on
    the dense and on the factored stack, their ratio, and whether the fold accuracies agree.  Multiplied by
    the protocol's per-set times (docs/experiments/soft-margin-mkl-v2/results.json) this estimates the
    protocol's wall time on the factored stack; the estimate says so.
``german``
    One whole split (5-fold CV over every method's grid, the refit, the test predictions) through the
    experiment runner, on the factored stack only (the dense stack did not finish a split in 21 minutes).

German credit (UCI Statlog, 1000 x 61 after one-hot encoding: 7 numeric and 13 categorical attributes) is not
among the shared data sets; ``german_standin`` draws a set of the same shape and the same value structure
(the numeric attributes with German credit's numbers of distinct values, the 54 one-hot columns of its 13
categorical attributes, 30 % positives, labels about 75 % predictable) and the script says that it used it.

    OMP_NUM_THREADS=1 python benchmarks/bench_factored.py memory
    OMP_NUM_THREADS=1 python benchmarks/bench_factored.py fold heart pima-diabetes [--methods SimpleMKL,SM1MKL]
    OMP_NUM_THREADS=1 python benchmarks/bench_factored.py german
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import warnings
from pathlib import Path

import attrs
import numpy as np
from sklearn.model_selection import StratifiedKFold

from multikernel.experiments.model_selection import cross_validate_methods, resolve_grid
from multikernel.experiments.runner import check_experiment, load_experiment_config, run_experiment
from multikernel.experiments.units import make_kernel_set, split_data
from multikernel.stack.factored import estimate_factored_memory
from multikernel.stack.memory import format_bytes

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "docs" / "experiments" / "soft-margin-mkl-v2.toml"
RESULTS = ROOT / "docs" / "experiments" / "soft-margin-mkl-v2" / "results.json"

#: German credit's categorical attributes (levels) and numeric ones (distinct values in the 1000 rows).
GERMAN_LEVELS = (4, 5, 10, 5, 5, 4, 3, 4, 3, 3, 4, 2, 2)
GERMAN_NUMERIC = (33, 921, 4, 4, 53, 4, 2)


def german_standin(seed: int = 0, n: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """A data set with German credit's shape and value structure (see the module docstring)."""
    rng = np.random.default_rng(seed)
    numeric = []
    for k in GERMAN_NUMERIC:
        values = np.sort(rng.lognormal(0.0, 0.6, size=k)) if k > 100 else np.arange(1.0, k + 1)
        numeric.append(values[np.minimum(rng.geometric(3.0 / k, size=n) - 1, k - 1)] if k > 2
                       else values[rng.integers(0, k, size=n)])
    onehot = []
    for levels in GERMAN_LEVELS:
        p = rng.dirichlet(np.ones(levels))
        onehot.append(np.eye(levels)[rng.choice(levels, size=n, p=p)])
    X = np.column_stack(numeric + onehot)
    Z = (X - X.mean(0)) / X.std(0)
    score = Z @ rng.normal(size=X.shape[1]) * 0.25 + 0.8 * rng.logistic(size=n)
    y = np.where(score > np.quantile(score, 0.7), 1.0, -1.0)
    return X, y


def _config(dataset: str, backend: str, csv: str | None = None):
    cfg = load_experiment_config(str(CONFIG))
    cfg = attrs.evolve(cfg, kernels=attrs.evolve(cfg.kernels, backend=backend))
    if csv is not None:
        spec = attrs.evolve(cfg.datasets[0], name=dataset, source=csv, train_size=None)
        return attrs.evolve(cfg, datasets=[spec])
    return attrs.evolve(cfg, datasets=[d for d in cfg.datasets if d.name == dataset])


def _german_csv(directory: str) -> str:
    X, y = german_standin()
    path = os.path.join(directory, "german-standin.csv")
    header = ",".join([f"x{j}" for j in range(X.shape[1])] + ["label"])
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header=header, comments="", fmt="%.10g")
    return path


def _split0(dataset: str, backend: str, csv: str | None = None):
    cfg = _config(dataset, backend, csv)
    X, y = check_experiment(cfg)[dataset]
    s = cfg.experiment
    Xtr, _, ytr, _ = split_data(X, y, cfg.datasets[0], s, 0)
    ks = make_kernel_set(cfg.kernels, X.shape[1], cfg.preprocessing.standardize)
    t = time.perf_counter()
    stack = ks.fit_stack(Xtr)
    return cfg, ks, stack, Xtr, ytr, time.perf_counter() - t


def memory(datasets: list[str], tmp: str) -> None:
    print("| data | n | M | dense | factored | ratio | estimate | factored kernels | stored columns "
          "| build d / f (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in datasets:
        csv = _german_csv(tmp) if name == "german" else None
        _, _, dense, _, _, td = _split0(name, "dense", csv)
        _, ks, fac, Xtr, _, tf = _split0(name, "factored", csv)
        Xs = ks._standardized(Xtr)
        estimate = estimate_factored_memory(ks.builders, Xs, str(ks.dtype))
        label = "german (stand-in)" if name == "german" else name
        print(f"| {label} | {fac.n_rows} | {fac.n_kernels} | {format_bytes(dense.nbytes)} | {format_bytes(fac.nbytes)} "
              f"| {fac.nbytes / dense.nbytes:.3f} | {format_bytes(estimate.storage)} | {int(fac.factored.sum())} "
              f"| {int(fac.ranks.sum())} | {td:.2f} / {tf:.2f} |", flush=True)
        del dense


def fold(datasets: list[str], methods: str, tmp: str) -> None:
    per_set = {}
    if RESULTS.exists():
        for u in json.loads(RESULTS.read_text())["units"]:
            per_set[u["dataset"]] = per_set.get(u["dataset"], 0.0) + u["unit_time"]
    print("| data | method | points | dense CPU (s) | factored CPU (s) | ratio | same fold accuracies | gaps d / f |")
    print("|---|---|---|---|---|---|---|---|")
    for name in datasets:
        csv = _german_csv(tmp) if name == "german" else None
        totals = {}
        stacks = {}
        for backend in ("dense", "factored"):
            cfg, _, stack, _, ytr, _ = _split0(name, backend, csv)
            stacks[backend] = stack
        s = cfg.experiment
        folds = list(StratifiedKFold(s.cv_folds, shuffle=True, random_state=s.seed).split(np.zeros(len(ytr)), ytr))
        solver = attrs.evolve(cfg.solver, tol=s.cv_tol or cfg.solver.tol)
        for m in cfg.methods:
            if methods and m.display_name not in methods.split(","):
                continue
            points = resolve_grid(m.grid, stacks["dense"].n_kernels)
            got = {}
            for backend in ("dense", "factored"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    c0 = time.process_time()
                    ((scores, info),) = cross_validate_methods(stacks[backend], ytr, folds[:1], [(m, points)], solver,
                                                               warm_start=s.warm_start, warm_order=s.warm_order)
                    got[backend] = (time.process_time() - c0, scores, info["cv_gap_max"])
                totals[backend] = totals.get(backend, 0.0) + got[backend][0]
            (td, sd, gd), (tf, sf, gf) = got["dense"], got["factored"]
            same = np.mean(np.isclose(sd, sf))
            print(f"| {name} | {m.display_name} | {len(points)} | {td:.1f} | {tf:.1f} | {tf / td:.2f} | {same:.0%} "
                  f"| {gd:.1e} / {gf:.1e} |", flush=True)
        ratio = totals["factored"] / totals["dense"]
        line = f"| {name} | all | | {totals['dense']:.1f} | {totals['factored']:.1f} | {ratio:.2f} | | |"
        print(line)
        if name in per_set:
            print(f"<!-- {name}: protocol v2 unit time {per_set[name]:.0f} s dense; at this fold's ratio, an "
                  f"estimated {per_set[name] * ratio:.0f} s factored -->", flush=True)


def german(tmp: str) -> None:
    csv = _german_csv(tmp)
    cfg = _config("german", "factored", csv)
    cfg = attrs.evolve(cfg, experiment=attrs.evolve(cfg.experiment, repeats=1, n_jobs=1))
    t, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = run_experiment(cfg, out=os.path.join(tmp, "out"), progress=False)
    wall, cpu = time.perf_counter() - t, time.process_time() - c0
    print(f"german stand-in, split 0, factored stack, one process: wall {wall:.0f} s, CPU {cpu:.0f} s")
    print("| method | unit wall (s) | unit CPU (s) | CV fits | outer iterations | test accuracy | certified gap "
          "| warnings |")
    print("|---|---|---|---|---|---|---|---|")
    for u in summary["units"]:
        print(f"| {u['method']} | {u['unit_time']:.1f} | {u['unit_cpu_time']:.1f} | {u['cv_fits']} "
              f"| {u['cv_outer_iterations']} | {u['accuracy']:.3f} | {u['dual_gap']:.1e} "
              f"| {u['convergence_warnings']} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["memory", "fold", "german"])
    parser.add_argument("datasets", nargs="*")
    parser.add_argument("--methods", default="", help="labels, comma-separated (default: all)")
    args = parser.parse_args()
    print(f"# load average {os.getloadavg()[0]:.1f}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    with tempfile.TemporaryDirectory() as tmp:
        if args.what == "memory":
            memory(args.datasets or ["heart", "pima-diabetes", "german"], tmp)
        elif args.what == "fold":
            fold(args.datasets or ["heart"], args.methods, tmp)
        else:
            german(tmp)


if __name__ == "__main__":
    main()
