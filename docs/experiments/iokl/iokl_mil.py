"""IOKL on the MIL benchmarks (spec section 3.12): 10-fold cross-validation bag accuracy, resumable.

    python docs/experiments/iokl/iokl_mil.py --data ../shared/data/mil --datasets musk1 --reps 10
    python docs/experiments/iokl/iokl_mil.py --data ../shared/data/mil --datasets elephant --reps 3
    python docs/experiments/iokl/iokl_mil.py --data ../shared/data/mil --datasets musk2 --reps 1
    python docs/experiments/iokl/iokl_mil.py --summarize     # mil_results.md from mil_results.csv only

``mil_results_session4.csv`` keeps the IOKL rows of session 4 (before the bag-level rounding, issue 14): the
summary shows them beside the current ones.

Every (data set, repetition, fold, method) result is appended to ``mil_results.csv`` next to this script as
soon as it is computed; a rerun skips what is there (resumable).  ``mil_results.md`` is the summary with the
thesis's Table 4.5 beside it.  Features are standardised on the training folds; the kernels are the thesis's
four (Gaussian, Laplacian, ISD, ID with gamma = 1 / mean squared training distance).
"""

from __future__ import annotations

import argparse
import csv
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

from multikernel import create
from multikernel.iokl import IOKLMultipleInstanceClassifier
from multikernel.iokl.baselines import MISVM, SILSVM, MIKernelSVM, miSVM

HERE = Path(__file__).parent
THESIS = {"musk1": {"MI-Kernel": 88.0, "mi-SVM": 87.4, "MI-SVM": 77.9, "KI-SVM": 88.0, "IOKL-HM": 86.9,
                    "IOKL-SM": 88.0},
          "musk2": {"MI-Kernel": 89.3, "mi-SVM": 83.6, "MI-SVM": 84.3, "KI-SVM": 82.0, "IOKL-HM": 87.2,
                    "IOKL-SM": 88.2},
          "elephant": {"MI-Kernel": 84.3, "mi-SVM": 82.0, "MI-SVM": 81.4, "KI-SVM": 84.5, "IOKL-HM": 87.0,
                       "IOKL-SM": 88.0}}


def methods(C: float, max_iter: int) -> dict:
    iokl = dict(C=C, max_iter=max_iter)
    return {
        "SIL-SVM": lambda: SILSVM(C=C),
        "mi-SVM": lambda: miSVM(C=C),
        "MI-SVM": lambda: MISVM(C=C),
        "MI-Kernel": lambda: MIKernelSVM(C=C),
        "KI-SVM": lambda: IOKLMultipleInstanceClassifier(kernels=[create("kernel", "rbf")], **iokl),
        "IOKL-HM": lambda: IOKLMultipleInstanceClassifier(**iokl),
        "IOKL-SM": lambda: IOKLMultipleInstanceClassifier(theta=2.0, **iokl),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(HERE.parents[3] / "shared" / "data" / "mil"))
    parser.add_argument("--datasets", nargs="+", default=["musk1", "musk2", "elephant"])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--C", type=float, default=10.0)
    parser.add_argument("--max-iter", type=int, default=10, help="cutting-plane iterations of IOKL")
    parser.add_argument("--methods", nargs="+", default=None)
    parser.add_argument("--out", default=str(HERE / "mil_results.csv"))
    parser.add_argument("--summarize", action="store_true", help="only write the summary of --out")
    parser.add_argument("--before", default=str(HERE / "mil_results_session4.csv"),
                        help="earlier results shown beside the current ones (skipped when absent)")
    args = parser.parse_args()
    out = Path(args.out)
    if args.summarize:
        summarize(out, Path(args.before))
        return
    done = set()
    fresh = not out.exists() or out.stat().st_size == 0
    if not fresh:
        done = {(r["dataset"], int(r["rep"]), int(r["fold"]), r["method"]) for r in csv.DictReader(out.open())}
    table = methods(args.C, args.max_iter)
    names = args.methods or list(table)
    with out.open("a", newline="") as fh:
        writer = csv.DictWriter(fh, ["dataset", "rep", "fold", "method", "accuracy", "seconds", "stop"])
        if fresh:
            writer.writeheader()
        for name in args.datasets:
            data = pd.read_csv(Path(args.data) / f"{name}.csv")
            X = data.filter(like="x").to_numpy(dtype=np.float64)
            bag_ids = data["bag"].to_numpy()
            uniq = np.unique(bag_ids)
            bag_y = data.groupby("bag")["label"].first().loc[uniq].to_numpy()
            for rep in range(args.reps):
                cv = StratifiedKFold(args.folds, shuffle=True, random_state=rep)
                for fold, (tr, te) in enumerate(cv.split(uniq, bag_y)):
                    itr, ite = np.isin(bag_ids, uniq[tr]), np.isin(bag_ids, uniq[te])
                    scaler = StandardScaler().fit(X[itr])
                    Xtr, Xte = scaler.transform(X[itr]), scaler.transform(X[ite])
                    for method in names:
                        if (name, rep, fold, method) in done:
                            continue
                        t0 = time.perf_counter()
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            model = table[method]().fit(Xtr, data["label"].to_numpy()[itr], bag_ids[itr])
                            pred = model.predict(Xte, bag_ids[ite])
                        acc = float(np.mean(pred == bag_y[te]))
                        writer.writerow({"dataset": name, "rep": rep, "fold": fold, "method": method,
                                         "accuracy": acc, "seconds": round(time.perf_counter() - t0, 2),
                                         "stop": getattr(model, "stop_reason_", "")})
                        fh.flush()
                        print(name, rep, fold, method, f"{acc:.3f}", flush=True)
    summarize(out, Path(args.before))


def _accuracy(res: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series, pd.Series]:
    """Mean, sd and count over repetitions (each repetition the mean of its folds), fits and seconds."""
    per_rep = res.groupby(["dataset", "method", "rep"])["accuracy"].mean().reset_index()
    agg = per_rep.groupby(["dataset", "method"])["accuracy"].agg(["mean", "std", "count"])
    return agg, res.groupby(["dataset", "method"])["fold"].count(), res.groupby(["dataset", "method"])["seconds"].mean()


def summarize(path: Path, before: Path | None = None) -> None:
    agg, folds, secs = _accuracy(pd.read_csv(path))
    old = _accuracy(pd.read_csv(before))[0] if before is not None and before.exists() else None
    lines = ["| data set | method | accuracy % (ours, mean ± sd over repetitions) | repetitions x folds run | "
             "s per fit | session 4 (before rounding) | thesis Table 4.5 |", "|---|---|---|---|---|---|---|"]
    for (ds, m), row in agg.iterrows():
        sd = "" if row["count"] < 2 else f" ± {100 * row['std']:.1f}"
        prev = f"{100 * old.loc[(ds, m), 'mean']:.1f}" if old is not None and (ds, m) in old.index else ""
        lines.append(f"| {ds} | {m} | {100 * row['mean']:.1f}{sd} | {int(row['count'])} reps, {folds[ds, m]} fits | "
                     f"{secs[ds, m]:.1f} | {prev} | {THESIS.get(ds, {}).get(m, 'n/a')} |")
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
