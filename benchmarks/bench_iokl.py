"""Benchmark of the IOKL cutting-plane loop.

For a semi-supervised problem (the g241c generator, 10 labelled points, the thesis's four kernels) of size n,
run IOKL-SM and report: cutting-plane iterations, time per iteration split into the MKL solve (inner SVM +
weight steps), the quadratic forms of the violation certificate and the label search, and the ratio of the
whole fit (the fastest of ``--repeats``, like the SVC's best of 3) to one scikit-learn ``SVC`` fit on the
average kernel of the same data.  ``--musk2`` times a bag-level IOKL-SM fit on musk2 (6598 instances) against
SVC fits on its instance kernel.

    python benchmarks/bench_iokl.py --n 500 1000 2000 [--max-iter 10] [--musk2 ../shared/data/mil/musk2.csv]
    python benchmarks/bench_iokl.py --n --musk2 ../shared/data/mil/musk2.csv     # musk2 only

The musk2 line's "rounding s" is the bag-level rounding solve (one MKL solve over the rounded key instances;
0 when it reuses the cutting plane's last solve, the same problem).

The reference ("one SVC fit") is ``SVC(kernel="precomputed", C, tol=1e-3)`` on the average of the four input
kernels, with the instance (MIL) or true (SSL) labels, best of 3; ``C`` is the IOKL fit's (MIL: 10; SSL: C_u = 1,
the cost of most samples).  It is handed its kernel, so two ratios are printed: the fit without its kernel
build against one SVC fit ("(fit - kernels) / SVC"), and the whole fit against one SVC fit plus the same
kernel build ("fit / (SVC + kernels)": what a user of either pays from the features).  "of which kernels" is
timed inside the fit (``KernelSet.fit_stack``).  Wall seconds, and CPU seconds of the process (user +
system, all threads) for the fit and the SVC: on the shared machine the wall time includes waiting for a core.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import warnings

import numpy as np
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from multikernel.config.task_data import make_g241c
from multikernel.iokl import (
    IOKLMultipleInstanceClassifier,
    IOKLSemiSupervisedClassifier,
)
from multikernel.stack.kernelset import KernelSet


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def svc_seconds(K: np.ndarray, y: np.ndarray, C: float, repeats: int = 3) -> tuple[float, float]:
    """Best wall and best CPU seconds of ``repeats`` SVC fits on the precomputed kernel ``K``."""
    best, best_cpu = np.inf, np.inf
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), cpu()
        SVC(kernel="precomputed", C=C, tol=1e-3).fit(K, y)
        best, best_cpu = min(best, time.perf_counter() - t0), min(best_cpu, cpu() - c0)
    return best, best_cpu


_BUILDS: list[float] = []
_fit_stack = KernelSet.fit_stack


def _timed_fit_stack(self, X):
    """``KernelSet.fit_stack`` timed where the fit calls it (the kernel build inside the fit)."""
    t0 = time.perf_counter()
    out = _fit_stack(self, X)
    _BUILDS.append(time.perf_counter() - t0)
    return out


KernelSet.fit_stack = _timed_fit_stack


def timed_fit(model, *args, repeats: int = 3, **kwargs) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and kernel-build seconds of the fastest of ``repeats`` fits (as for the
    SVC: the first fit of a process also pays the plugin registry's loading and first calls)."""
    runs = []
    for _ in range(repeats):
        _BUILDS.clear()
        t0, c0 = time.perf_counter(), cpu()
        model.fit(*args, **kwargs)
        runs.append((time.perf_counter() - t0, cpu() - c0, sum(_BUILDS)))
    print("fits (wall s): " + " ".join(f"{r[0]:.2f}" for r in runs), file=sys.stderr)
    return min(runs)


def row(name: str, n: int, fit: tuple[float, float, float], model, svc: tuple[float, float]) -> str:
    fit_s, fit_cpu, kernel_s = fit
    svc_s, svc_cpu = svc
    h = model.result_.history
    it = len(h)
    mkl = sum(e["time_mkl"] for e in h) / it
    quad = sum(e["time_quad_forms"] for e in h) / it
    search = sum(e["time_search"] for e in h) / it
    rounded = getattr(model, "rounded_", None)
    rounding = f"{rounded.history[0]['time_mkl']:.2f}" if rounded is not None else ""
    return (f"| {name} | {n} | {it} | {model.result_.index.shape[0]} | {fit_s:.2f} | {kernel_s:.2f} | {mkl:.3f} | "
            f"{quad:.4f} | {search:.4f} | {rounding} | {svc_s:.3f} | {fit_s / svc_s:.0f} | "
            f"{(fit_s - kernel_s) / svc_s:.0f} | {fit_s / (svc_s + kernel_s):.1f} | {fit_cpu:.2f} | {svc_cpu:.3f} | "
            f"{fit_cpu / svc_cpu:.0f} | {model.stop_reason_} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", nargs="*", type=int, default=[500, 1000, 2000],
                        help="semi-supervised sizes (none: skip them)")
    parser.add_argument("--max-iter", type=int, default=10)
    parser.add_argument("--musk2", default=None)
    parser.add_argument("--repeats", type=int, default=3, help="fits timed (the fastest is reported)")
    args = parser.parse_args()
    print("| problem | n | CP iterations | groups | fit s | of which kernels s | MKL s/iter | quad forms s/iter | "
          "search s/iter | rounding s | one SVC fit s | fit / SVC | (fit - kernels) / SVC | fit / (SVC + kernels) | "
          "fit CPU s | SVC CPU s | CPU fit / SVC | stop |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    warnings.simplefilter("ignore")
    for n in args.n:
        X, y = make_g241c(n, random_state=0)
        X = StandardScaler().fit_transform(X)
        rng = np.random.default_rng(n)
        labeled = np.r_[rng.choice(np.flatnonzero(y > 0), 5, replace=False),
                        rng.choice(np.flatnonzero(y < 0), 5, replace=False)]
        mask = np.ones(n, bool)
        mask[labeled] = False
        model = IOKLSemiSupervisedClassifier(theta=2.0, max_iter=args.max_iter)
        fit = timed_fit(model, X, y, unlabeled=mask, repeats=args.repeats)
        inputs = model.kernel_set_.fit_stack(X)
        K = inputs.combine(np.full(inputs.n_kernels, 1.0 / inputs.n_kernels))
        print(row("SSL g241c, IOKL-SM", n, fit, model, svc_seconds(K, y, model.C_unlabeled)), flush=True)
    if args.musk2:
        import pandas as pd

        data = pd.read_csv(args.musk2)
        X = StandardScaler().fit_transform(data.filter(like="x").to_numpy(dtype=np.float64))
        model = IOKLMultipleInstanceClassifier(theta=2.0, max_iter=args.max_iter)
        fit = timed_fit(model, X, data["label"].to_numpy(), data["bag"].to_numpy(), repeats=args.repeats)
        inputs = model.kernel_set_.fit_stack(X)
        K = inputs.combine(np.full(inputs.n_kernels, 1.0 / inputs.n_kernels))
        del inputs
        print(row("MIL musk2 bag level, IOKL-SM", len(X), fit, model,
                  svc_seconds(K, data["label"].to_numpy(), model.C)), flush=True)


if __name__ == "__main__":
    main()
