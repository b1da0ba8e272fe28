"""MKLClassifierCV against GridSearchCV over MKLClassifier on the same folds, in one run.

For each binary data set (all its samples; constant columns dropped) and method, both select ``C`` from
``--Cs`` values (logarithmically spaced from 1e-2 to 1e3) by ``--folds``-fold stratified cross-validation
(the same folds, seed 0) with features standardized and kernels of the ``--kernels`` family fitted on each
fold's training rows, every fit stopped at a certified gap of ``--tol``, and both refit the chosen model on
all the data:

* ``GridSearchCV(MKLClassifier(...), {"C": Cs}, cv=folds)``: kernels built and solved cold at every (fold, C);
* ``MKLClassifierCV(..., Cs=Cs, cv=folds)``: each fold's kernels built once, the Cs walked as a warm-started path.

Reported per (set, method): both wall times and their ratio (grid search / path), the ``C`` each chose and its mean
fold score, the largest difference between the two searches' fold scores (fits certified to ``tol`` may put a
validation point within about ``tol`` of the boundary on either side), and the largest difference between the
final models' decision values (zero when both chose the same ``C``: the same cold fit).  Timings are wall clock
on a shared machine: read the ratios, measured in the same process, one after the other.

Run from the repository root (needs ``../shared/data``)::

    OMP_NUM_THREADS=1 python benchmarks/bench_cv_path.py [--sets heart,pima-diabetes,ionosphere,australian]
        [--methods lpmkl,sm1mkl,l1mkl] [--kernels simplemkl] [--Cs 6] [--folds 5] [--tol 1e-3]
        [--data-dir ../shared/data]
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import GridSearchCV, StratifiedKFold

from multikernel import MKLClassifier, MKLClassifierCV

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def load(data_dir: Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    table = np.loadtxt(data_dir / f"{name}.csv", delimiter=",", skiprows=1)
    X, y = table[:, :-1], table[:, -1]
    return X[:, X.std(axis=0) > 0], y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="heart,pima-diabetes,ionosphere,australian")
    parser.add_argument("--methods", default="lpmkl,sm1mkl,l1mkl")
    parser.add_argument("--kernels", default="simplemkl")
    parser.add_argument("--Cs", type=int, default=6)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--data-dir", type=Path, default=DATA)
    args = parser.parse_args()
    print(f"# {platform.node()}, {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(f"# kernels={args.kernels}, {args.Cs} Cs in [1e-2, 1e3], {args.folds} stratified folds, tol={args.tol}")
    print(f"{'set':<14} {'method':<8} {'M':>4} {'grid s':>8} {'path s':>8} {'ratio':>6} {'C grid':>7} {'C path':>7} "
          f"{'best grid':>9} {'best path':>9} {'|d score|':>9} {'|d f(x)|':>9}")
    Cs = np.logspace(-2, 3, args.Cs)
    for name in args.sets.split(","):
        X, y = load(args.data_dir, name)
        cv = StratifiedKFold(args.folds, shuffle=True, random_state=0)
        for method in args.methods.split(","):
            common = {"kernels": args.kernels, "method": method, "standardize": True, "tol": args.tol}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a fit at max_iter warns on both sides alike
                start = time.perf_counter()
                grid = GridSearchCV(MKLClassifier(**common), {"C": list(Cs)}, cv=cv).fit(X, y)
                t_grid = time.perf_counter() - start
                start = time.perf_counter()
                path = MKLClassifierCV(**common, Cs=Cs, cv=cv).fit(X, y)
                t_path = time.perf_counter() - start
            split = np.array([grid.cv_results_[f"split{k}_test_score"] for k in range(args.folds)])
            d_score = float(np.abs(path.scores_ - split).max())
            d_f = float(np.abs(path.decision_function(X) - grid.decision_function(X)).max())
            print(f"{name:<14} {method:<8} {len(path.kernel_names_):>4} {t_grid:>8.1f} {t_path:>8.1f} "
                  f"{t_grid / t_path:>6.2f} {grid.best_params_['C']:>7.3g} {path.C_:>7.3g} {grid.best_score_:>9.4f} "
                  f"{path.best_score_:>9.4f} {d_score:>9.3g} {d_f:>9.2g}", flush=True)


if __name__ == "__main__":
    main()
