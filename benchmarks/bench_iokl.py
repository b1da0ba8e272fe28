"""Benchmark of the IOKL cutting-plane loop (issue 14, Performance).

For a semi-supervised problem (the g241c generator, 10 labelled points, the thesis's four kernels) of size n,
run IOKL-SM and report: cutting-plane iterations, time per iteration split into the MKL solve (inner SVM +
weight steps), the quadratic forms of the violation certificate and the label search, and the ratio of the
whole fit to one scikit-learn ``SVC`` fit on the average kernel of the same data.  ``--musk2`` times a bag-level
IOKL-SM fit on musk2 (6598 instances) against SVC fits on its instance kernel (the issue's target: 20 SVC fits).

    python benchmarks/bench_iokl.py --n 500 1000 2000 [--max-iter 10] [--musk2 ../shared/data/mil/musk2.csv]
    python benchmarks/bench_iokl.py --n --musk2 ../shared/data/mil/musk2.csv     # musk2 only

The musk2 line's "rounding s" is the bag-level rounding solve (one MKL solve over the rounded key instances).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "experiments" / "iokl"))
from iokl_ssl import g241c  # noqa: E402  (the experiment's generator, one definition)

from multikernel.iokl import (  # noqa: E402
    IOKLMultipleInstanceClassifier,
    IOKLSemiSupervisedClassifier,
    default_kernels,
)
from multikernel.stack.kernelset import KernelSet  # noqa: E402


def svc_seconds(K: np.ndarray, y: np.ndarray, repeats: int = 3) -> float:
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        SVC(kernel="precomputed", C=1.0).fit(K, y)
        best = min(best, time.perf_counter() - t0)
    return best


def kernel_seconds(X: np.ndarray) -> float:
    """The estimator's first step alone: the four input kernels (the SVC baseline gets its kernel for free)."""
    t0 = time.perf_counter()
    KernelSet(default_kernels()).fit_stack(X)
    return time.perf_counter() - t0


def row(name: str, n: int, fit_s: float, model, svc_s: float, kernel_s: float) -> str:
    h = model.result_.history
    it = len(h)
    mkl = sum(e["time_mkl"] for e in h) / it
    quad = sum(e["time_quad_forms"] for e in h) / it
    search = sum(e["time_search"] for e in h) / it
    rounded = getattr(model, "rounded_", None)
    rounding = f"{rounded.history[0]['time_mkl']:.2f}" if rounded is not None else ""
    return (f"| {name} | {n} | {it} | {model.result_.index.shape[0]} | {fit_s:.2f} | {kernel_s:.2f} | {mkl:.3f} | "
            f"{quad:.4f} | {search:.4f} | {rounding} | {svc_s:.3f} | {fit_s / svc_s:.0f} | "
            f"{(fit_s - kernel_s) / svc_s:.0f} | {model.stop_reason_} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", nargs="*", type=int, default=[500, 1000, 2000],
                        help="semi-supervised sizes (none: skip them)")
    parser.add_argument("--max-iter", type=int, default=10)
    parser.add_argument("--musk2", default=None)
    args = parser.parse_args()
    print("| problem | n | CP iterations | groups | fit s | of which kernels s | MKL s/iter | quad forms s/iter | "
          "search s/iter | rounding s | one SVC fit s | fit / SVC | fit without kernels / SVC | stop |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    warnings.simplefilter("ignore")
    for n in args.n:
        X, y = g241c(0, n)
        X = StandardScaler().fit_transform(X)
        rng = np.random.default_rng(n)
        labeled = np.r_[rng.choice(np.flatnonzero(y > 0), 5, replace=False),
                        rng.choice(np.flatnonzero(y < 0), 5, replace=False)]
        mask = np.ones(n, bool)
        mask[labeled] = False
        model = IOKLSemiSupervisedClassifier(theta=2.0, max_iter=args.max_iter)
        t0 = time.perf_counter()
        model.fit(X, y, unlabeled=mask)
        fit_s = time.perf_counter() - t0
        inputs = model.kernel_set_.fit_stack(X)
        K = np.mean([inputs.kernel(m) for m in range(inputs.n_kernels)], axis=0)
        print(row("SSL g241c, IOKL-SM", n, fit_s, model, svc_seconds(K, y), kernel_seconds(X)), flush=True)
    if args.musk2:
        import pandas as pd

        data = pd.read_csv(args.musk2)
        X = StandardScaler().fit_transform(data.filter(like="x").to_numpy(dtype=np.float64))
        model = IOKLMultipleInstanceClassifier(theta=2.0, max_iter=args.max_iter)
        t0 = time.perf_counter()
        model.fit(X, data["label"].to_numpy(), data["bag"].to_numpy())
        fit_s = time.perf_counter() - t0
        inputs = model.kernel_set_.fit_stack(X)
        K = inputs.combine(np.full(inputs.n_kernels, 1.0 / inputs.n_kernels))
        print(row("MIL musk2 bag level, IOKL-SM", len(X), fit_s, model,
                  svc_seconds(K, data["label"].to_numpy(), repeats=3), kernel_seconds(X)), flush=True)


if __name__ == "__main__":
    main()
