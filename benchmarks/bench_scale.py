"""Scale benchmark: MKL fits with kernel columns computed on demand (lazy stack), against one SVC fit.

Data: magic (``../shared/data/magic.csv``, 19,020 x 10, a stratified 70/30 split: 13,314 training points)
with 12 kernels (RBF on all features at 6 relative bandwidths, RBF on each of two feature groups at 2
bandwidths, polynomial of degree 1 and 2: 6 + 2 x 2 + 2), and Breiman's ringnorm generated at ``--n`` training points
(default 50,000; 20 features) with 10 kernels (RBF at 8 relative bandwidths, polynomial of degree 1 and 2).
Features are standardized on the training part; kernels normalized to unit trace.

For each method (``lpmkl``, ``sm1mkl`` presets; certified gap stopping at ``--tol``) the script records the
fit time, outer iterations, gap reached, test accuracy and the peak resident memory of a fresh process
(each fit runs in its own subprocess so that the peaks do not mix).  The peer in the same run is one
scikit-learn ``SVC`` fit with the same ``cache_size``: on the average kernel precomputed when it fits in
``--svc-precomputed-gb`` (its kernel-computation time counted), otherwise with libsvm's own RBF kernel at
the middle bandwidth (libsvm cannot take a sum of kernels without the n x n matrix).

    python benchmarks/bench_scale.py magic            # every method and the peer on magic
    python benchmarks/bench_scale.py ringnorm --n 50000 --methods lpmkl
    python benchmarks/bench_scale.py ringnorm --n 50000 --only svc
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def load(dataset: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    if dataset == "magic":
        raw = np.loadtxt(DATA / "magic.csv", delimiter=",", skiprows=1)
        X, y = raw[:, :-1], raw[:, -1]
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)
    else:
        from multikernel.config.datasets import make_ringnorm

        X, y = make_ringnorm(n + 10_000, 20, random_state=seed)
        Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=n, stratify=y, random_state=seed)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), scaler.transform(Xte), ytr, yte


def builders(dataset: str) -> list:
    from multikernel import create

    # gamma relative to the mean squared training distance (gamma_scale / A), so the bandwidths follow the data.
    scales = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
    if dataset == "magic":
        out = [create("kernel", "rbf", gamma_scale=s) for s in scales]
        for cols in ([0, 1, 2, 3, 4], [5, 6, 7, 8, 9]):
            out += [create("kernel", "rbf", gamma_scale=s, columns=cols) for s in (1.0, 4.0)]
    else:
        out = [create("kernel", "rbf", gamma_scale=s) for s in [0.125, *scales, 16.0]]
    out += [create("kernel", "poly", degree=d, gamma=1.0 / 20) for d in (1, 2)]
    return out


def _peak_gb() -> float:
    """Peak resident memory of this process so far (the fit's peak: measured before predicting)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB


def fit_mkl(args: argparse.Namespace, method: str) -> dict:
    from multikernel import MKLClassifier

    Xtr, Xte, ytr, yte = load(args.dataset, args.n, args.seed)
    est = MKLClassifier(kernels=builders(args.dataset), method=method, C=args.C, kernel_backend="lazy",
                        cache_size=args.cache_size, tol=args.tol, stopping="gap", max_iter=args.max_iter,
                        verbose=args.verbose)
    t0, c0 = time.perf_counter(), time.process_time()
    est.fit(Xtr, ytr)
    fit_time, cpu_time = time.perf_counter() - t0, time.process_time() - c0
    peak = _peak_gb()
    accuracy = est.score(Xte, yte)
    return {"what": method, "n_train": len(ytr), "n_kernels": len(est.kernel_names_), "fit_time": fit_time,
            "cpu_time": cpu_time, "n_iter": int(est.n_iter_), "gap": float(est.dual_gap_),
            "accuracy": float(accuracy), "peak_rss_gb": peak,
            "selected": int(np.count_nonzero(est.weights_ > 1e-5 * est.weights_.sum()))}


def fit_svc(args: argparse.Namespace) -> dict:
    from sklearn.svm import SVC

    from multikernel.stack.kernelset import KernelSet

    Xtr, Xte, ytr, yte = load(args.dataset, args.n, args.seed)
    n = len(ytr)
    precomputed = n * n * 8 * 2 <= args.svc_precomputed_gb * 2**30  # the average kernel and libsvm's copy
    t0, c0 = time.perf_counter(), time.process_time()
    if precomputed:
        # The lazy backend forms the average kernel block by block: n x n, never the n x n x M stack.
        ks = KernelSet(builders(args.dataset), backend="lazy", cache_size=args.cache_size)
        stack = ks.fit_stack(Xtr)
        M = stack.n_kernels
        K = stack.combine(np.full(M, 1.0 / M))
        svc = SVC(kernel="precomputed", C=args.C, cache_size=args.cache_size, tol=args.tol).fit(K, ytr)
        fit_time, cpu_time = time.perf_counter() - t0, time.process_time() - c0
        peak = _peak_gb()
        del K
        accuracy = float(np.mean(svc.predict(ks.cross_stack(Xte).combine(np.full(M, 1.0 / M))) == yte))
        what = "SVC (average kernel, precomputed)"
    else:
        from multikernel import create

        gamma = create("kernel", "rbf", gamma_scale=1.0).fit(Xtr[:5000]).gamma_
        svc = SVC(kernel="rbf", gamma=gamma, C=args.C, cache_size=args.cache_size, tol=args.tol).fit(Xtr, ytr)
        fit_time, cpu_time = time.perf_counter() - t0, time.process_time() - c0
        peak = _peak_gb()
        accuracy = float(svc.score(Xte, yte))
        what = "SVC (libsvm RBF, middle bandwidth)"
    return {"what": what, "n_train": n, "fit_time": fit_time, "cpu_time": cpu_time, "n_sv": int(svc.n_support_.sum()),
            "accuracy": accuracy, "peak_rss_gb": peak}


def child(args: argparse.Namespace) -> None:
    result = fit_svc(args) if args.only == "svc" else fit_mkl(args, args.only)
    result["load"] = os.getloadavg()
    print("RESULT " + json.dumps(result), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", choices=["magic", "ringnorm"])
    parser.add_argument("--n", type=int, default=50_000, help="ringnorm training points")
    parser.add_argument("--methods", default="lpmkl,sm1mkl")
    parser.add_argument("--only", help="run one fit in this process: a method name or 'svc'")
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--cache-size", type=float, default=1000.0, help="megabytes of kernel columns")
    parser.add_argument("--svc-precomputed-gb", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", type=int, default=0)
    args = parser.parse_args()
    if args.only:
        child(args)
        return
    rows = []
    for what in ["svc", *args.methods.split(",")]:
        cmd = [sys.executable, __file__, *sys.argv[1:], "--only", what]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        line = next((ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if line is None:
            print(f"{what} failed:\n{out.stderr[-2000:]}", file=sys.stderr)
            continue
        rows.append(json.loads(line[7:]))
        print(line, flush=True)
    svc = next((r for r in rows if r["what"].startswith("SVC")), None)
    print(f"\n{args.dataset}, n_train = {rows[0]['n_train'] if rows else '?'}, C = {args.C}, tol = {args.tol}, "
          f"cache_size = {args.cache_size:g} MB, load {os.getloadavg()[0]:.1f}")
    # CPU time is the fairer measure on a shared machine (wall time counts the other users' load).
    print("| fit | kernels | wall (s) | CPU (s) | CPU ratio to SVC | outer iterations | gap | test accuracy | "
          "peak RSS (GB) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = f"{r['cpu_time'] / svc['cpu_time']:.1f}" if svc and "cpu_time" in r and "cpu_time" in svc else "-"
        cpu = r.get("cpu_time", float("nan"))
        print(f"| {r['what']} | {r.get('n_kernels', 1)} | {r['fit_time']:.1f} | {cpu:.1f} | {ratio} | "
              f"{r.get('n_iter', '-')} | {r.get('gap', float('nan')):.2g} | {r['accuracy']:.4f} | "
              f"{r['peak_rss_gb']:.2f} |")


if __name__ == "__main__":
    main()
