"""Instance-level IOKL MIL (MIL-CPB): the two roundings of one relaxation, fold by fold, in one process.

On the folds of ``bench_mil_baselines.py`` (10-fold bag-stratified, seed 0, features standardised on the training
fold), the relaxation is fitted once per fold (``round_keys=False``) and rounded by both rules, each followed by
the single-group solve of the estimator: the sign rule (positive where the relaxed ``f > 0``, at least
``max(1, ceil(portion |B|))`` per positive bag; the estimator's rule before) and the ranking rule (positive where
``f`` exceeds its value at every negative-bag instance, within the same bounds; the estimator's rule now).  Per
fold: the range of the relaxed scores on the training instances, and for each rounding the mean number of
positives per positive training bag, the training and test bag accuracies, and the fraction of test bags
predicted positive (against the true fraction); then the mean test accuracy of each rule and the seconds of the
relaxation and of each rounding.  ``--C``, ``--portion``, ``--offset`` and ``--bag-cost`` set the estimator's
parameters (defaults: the estimator's).

    OMP_NUM_THREADS=1 python benchmarks/bench_mil_instance_rounding.py --datasets musk1
    OMP_NUM_THREADS=1 python benchmarks/bench_mil_instance_rounding.py --datasets musk1 --bag-cost bag
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mil_data import DEFAULT_DATA, bag_labels, mil_folds  # noqa: E402

from multikernel.iokl import IOKLMultipleInstanceClassifier, solve_candidates  # noqa: E402
from multikernel.iokl.labels import LabelSet  # noqa: E402


def bag_predictions(f: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """+1 where a bag's best instance scores above 0, in the order of ``np.unique(ids)``."""
    return np.array([1 if f[ids == b].max() > 0 else -1 for b in np.unique(ids)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--datasets", nargs="+", default=["musk1", "elephant"])
    parser.add_argument("--C", type=float, default=10.0)
    parser.add_argument("--portion", type=float, default=0.0)
    parser.add_argument("--offset", type=float, default=0.1)
    parser.add_argument("--bag-cost", choices=["unit", "bag"], default="unit")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rules = {"sign": LabelSet.from_scores, "ranking": LabelSet.from_scores_above_negatives}
    for name in args.datasets:
        print(f"{name}: C={args.C:g} portion={args.portion:g} offset={args.offset:g} bag_cost={args.bag_cost}")
        print("| fold | relaxed f range | rule | positives / bag | train % | test % | test bags called + | true + |")
        print("|---|---|---|---|---|---|---|---|")
        acc = {rule: [] for rule in rules}
        t_relax, t_round = 0.0, dict.fromkeys(rules, 0.0)
        for k, (Xtr, itr, ytr, Xte, ite, yte) in enumerate(mil_folds(Path(args.data) / f"{name}.csv", args.seed)):
            t0 = time.perf_counter()
            model = IOKLMultipleInstanceClassifier(level="instance", C=args.C, portion=args.portion,
                                                   offset=args.offset, bag_cost=args.bag_cost, round_keys=False)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the relaxation's one-class warning: expected here
                model.fit(Xtr, ytr, itr)
            t_relax += time.perf_counter() - t0
            inputs = model.kernel_set_.fit_stack(Xtr)
            relax = model.result_
            f_relax = model.decision_function_instances(Xtr)
            yb = bag_labels(ytr, itr)
            pos = [np.flatnonzero(itr == b) for b, s in zip(np.unique(itr), yb, strict=True) if s > 0]
            n = len(ytr)
            lists = [np.flatnonzero(itr == b) for b in np.unique(itr)]
            costs = model._unit_costs(lists, yb, n)
            cset = LabelSet(n, np.where(ytr > 0, 0.0, -1.0), pos,
                            [max(1, int(np.ceil(args.portion * len(b)))) for b in pos], [len(b) for b in pos])
            for rule, round_by in rules.items():
                t0 = time.perf_counter()
                index, sign = round_by(cset, f_relax)
                rounded = solve_candidates(inputs, index[None], sign[None], costs, theta=model.theta,
                                           offset=model.offset, solver=model.solver, tol=model.tol, warm=relax.mkl,
                                           solved=relax)
                model._set_classifier(rounded, inputs)
                train = np.mean(bag_predictions(model.decision_function_instances(Xtr), itr) == yb)
                called = bag_predictions(model.decision_function_instances(Xte), ite)
                t_round[rule] += time.perf_counter() - t0
                acc[rule].append(np.mean(called == yte))
                print(f"| {k} | [{f_relax.min():.3f}, {f_relax.max():.3f}] | {rule} | "
                      f"{np.mean([np.sum(sign[b] > 0) for b in pos]):.1f} | {100 * train:.0f} | "
                      f"{100 * acc[rule][-1]:.0f} | {np.mean(called > 0):.2f} | {np.mean(yte > 0):.2f} |", flush=True)
        n_folds = len(acc["sign"])
        for rule in rules:
            print(f"{name} {rule} rule: mean test {100 * np.mean(acc[rule]):.1f} % per fold "
                  f"{[round(100 * a) for a in acc[rule]]}; rounding {t_round[rule] / n_folds:.2f} s/fold")
        print(f"{name} relaxation: {t_relax / n_folds:.2f} s/fold", flush=True)


if __name__ == "__main__":
    main()
