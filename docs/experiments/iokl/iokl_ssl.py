"""IOKL on semi-supervised benchmarks (spec section 3.11): g241c, g241d (generators) and scikit-learn's digits.

    python docs/experiments/iokl/iokl_ssl.py --splits 12 --labeled 10 100

Transductive accuracy on the unlabelled points, 12 random splits per setting (seeded), resumable: every
(data set, #labelled, split, method) result is appended to ``ssl_results.csv`` and skipped on a rerun.

Data (the published benchmark files are not installable; spec section 3.11, data README):

* g241c [EXT reconstruction of Chapelle, Schölkopf and Zien 2006, ch. 21]: 1500 points in 241 dimensions,
  two classes of 750, each an isotropic unit-variance Gaussian; the means are 2.5 apart along a random
  direction (the cluster assumption holds).
* g241d [EXT reconstruction, same source]: each class a mixture of two unit Gaussians whose means are 6 apart;
  each Gaussian of one class lies 2.5 from one of the other class (clusters exist but do not follow the
  classes: the cluster assumption is misleading).
* digits: scikit-learn's ``load_digits`` (1797 8x8 images), binary split digits 0-4 (negative) vs 5-9
  (positive), standing in for Digit1.

The balance constraint is the true positive ratio of the unlabelled points (following the thesis, which
follows [30]); C_labeled = 100 and C_unlabeled = 1.
"""

from __future__ import annotations

import argparse
import csv
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler
from sklearn.semi_supervised import LabelSpreading, SelfTrainingClassifier
from sklearn.svm import SVC

from multikernel import MKLClassifier
from multikernel.iokl import IOKLSemiSupervisedClassifier

HERE = Path(__file__).parent
THESIS = {("g241c", 10): {"SVM": 52.66, "l2-MKL": 52.16, "IOKL-HM": 64.86, "IOKL-SM": 80.66},
          ("g241d", 10): {"SVM": 53.34, "l2-MKL": 53.67, "IOKL-HM": 53.93, "IOKL-SM": 56.32},
          ("digits", 10): {"SVM": 69.40, "l2-MKL": 73.79, "IOKL-HM": 82.18, "IOKL-SM": 85.88},
          ("g241c", 100): {"SVM": 76.89, "l2-MKL": 76.71, "IOKL-HM": 79.86, "IOKL-SM": 83.62},
          ("g241d", 100): {"SVM": 75.36, "l2-MKL": 75.38, "IOKL-HM": 78.39, "IOKL-SM": 78.39},
          ("digits", 100): {"SVM": 94.47, "l2-MKL": 94.15, "IOKL-HM": 94.79, "IOKL-SM": 94.88}}


def g241c(seed: int = 0, n: int = 1500, d: int = 241) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    y = np.repeat([-1, 1], n // 2)
    return rng.normal(size=(n, d)) + 1.25 * y[:, None] * u, y


def g241d(seed: int = 0, n: int = 1500, d: int = 241) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    u, v = np.linalg.qr(rng.normal(size=(d, 2)))[0].T
    means = {1: (np.zeros(d), 6.0 * u), -1: (2.5 * v, 6.0 * u + 2.5 * v)}
    y = np.repeat([-1, 1], n // 2)
    comp = rng.integers(0, 2, size=n)
    centres = np.array([means[int(c)][k] for c, k in zip(y, comp, strict=True)])
    return rng.normal(size=(n, d)) + centres, y


def digits() -> tuple[np.ndarray, np.ndarray]:
    data = load_digits()
    return data.data.astype(np.float64), np.where(data.target >= 5, 1, -1)


def methods() -> dict:
    return {
        "SVM": "svm",
        "l2-MKL": "l2mkl",
        "LabelSpreading": "spreading",
        "SelfTraining(SVC)": "selftraining",
        "IOKL-HM": None,
        "IOKL-SM": 2.0,
    }


def run_one(method: str, X: np.ndarray, y: np.ndarray, labeled: np.ndarray, max_iter: int) -> tuple[float, str]:
    unl = np.setdiff1d(np.arange(len(y)), labeled)
    d2 = ((X[labeled, None] - X[None, labeled]) ** 2).sum(-1) if len(labeled) > 1 else np.ones((1, 1))
    gamma = 1.0 / max(d2[np.triu_indices(len(labeled), 1)].mean(), 1e-12)
    stop = ""
    if method == "SVM":
        pred = SVC(C=100.0, gamma=gamma).fit(X[labeled], y[labeled]).predict(X[unl])
    elif method == "l2-MKL":
        clf = MKLClassifier(method="l2mkl", C=100.0).fit(X[labeled], y[labeled])
        pred = clf.predict(X[unl])
    elif method == "LabelSpreading":
        yy = np.full(len(y), -1)  # scikit-learn's unlabelled marker; the classes are encoded 0 / 1
        yy[labeled] = (y[labeled] > 0).astype(int)
        pred = LabelSpreading(kernel="rbf", gamma=gamma).fit(X, yy).transduction_[unl]
        pred = np.where(pred == 1, 1, -1)
    elif method == "SelfTraining(SVC)":
        yy = np.full(len(y), -1)
        yy[labeled] = (y[labeled] > 0).astype(int)
        st = SelfTrainingClassifier(SVC(C=100.0, gamma=gamma, probability=True)).fit(X, yy)
        pred = np.where(st.predict(X[unl]) == 1, 1, -1)
    else:
        theta = methods()[method]
        mask = np.ones(len(y), bool)
        mask[labeled] = False
        frac = float(np.mean(y[unl] > 0))
        clf = IOKLSemiSupervisedClassifier(theta=theta, positive_fraction=frac, max_iter=max_iter)
        clf.fit(X, y, unlabeled=mask)
        pred, stop = clf.transduction_[unl], clf.stop_reason_
    return float(np.mean(pred == y[unl])), stop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["g241c", "g241d", "digits"])
    parser.add_argument("--labeled", nargs="+", type=int, default=[10, 100])
    parser.add_argument("--splits", type=int, default=12)
    parser.add_argument("--n", type=int, default=1500, help="points of the generated sets")
    parser.add_argument("--max-iter", type=int, default=10, help="cutting-plane iterations of IOKL")
    parser.add_argument("--methods", nargs="+", default=None)
    parser.add_argument("--out", default=str(HERE / "ssl_results.csv"))
    args = parser.parse_args()
    out = Path(args.out)
    fresh = not out.exists() or out.stat().st_size == 0
    done = set() if fresh else {(r["dataset"], int(r["labeled"]), int(r["split"]), r["method"])
                                for r in csv.DictReader(out.open())}
    names = args.methods or list(methods())
    with out.open("a", newline="") as fh:
        writer = csv.DictWriter(fh, ["dataset", "labeled", "split", "method", "accuracy", "seconds", "stop"])
        if fresh:
            writer.writeheader()
        for name in args.datasets:
            X, y = {"g241c": lambda: g241c(0, args.n), "g241d": lambda: g241d(0, args.n), "digits": digits}[name]()
            X = StandardScaler().fit_transform(X)  # transductive: all points are available
            for n_lab in args.labeled:
                for split in range(args.splits):
                    rng = np.random.default_rng(1000 * n_lab + split)
                    # both classes among the labelled points, as in the benchmark's splits
                    labeled = np.r_[rng.choice(np.flatnonzero(y > 0), 1, replace=False),
                                    rng.choice(np.flatnonzero(y < 0), 1, replace=False)]
                    rest = np.setdiff1d(np.arange(len(y)), labeled)
                    labeled = np.r_[labeled, rng.choice(rest, n_lab - 2, replace=False)]
                    for method in names:
                        if (name, n_lab, split, method) in done:
                            continue
                        t0 = time.perf_counter()
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            acc, stop = run_one(method, X, y, labeled, args.max_iter)
                        writer.writerow({"dataset": name, "labeled": n_lab, "split": split, "method": method,
                                         "accuracy": acc, "seconds": round(time.perf_counter() - t0, 2),
                                         "stop": stop})
                        fh.flush()
                        print(name, n_lab, split, method, f"{acc:.3f}", flush=True)
    summarize(out)


def summarize(path: Path) -> None:
    res = pd.read_csv(path)
    agg = res.groupby(["dataset", "labeled", "method"]).agg(mean=("accuracy", "mean"), std=("accuracy", "std"),
                                                           splits=("split", "count"), seconds=("seconds", "mean"))
    lines = ["| data set | #L | method | accuracy % (mean ± sd over splits) | splits | s per fit | thesis Table 4.4 |",
             "|---|---|---|---|---|---|---|"]
    for (ds, n_lab, m), row in agg.iterrows():
        sd = "" if row["splits"] < 2 else f" ± {100 * row['std']:.1f}"
        lines.append(f"| {ds} | {n_lab} | {m} | {100 * row['mean']:.1f}{sd} | {int(row['splits'])} | "
                     f"{row['seconds']:.1f} | {THESIS.get((ds, n_lab), {}).get(m, 'n/a')} |")
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
