"""MLR-L1 training time against one-vs-rest SVC (scikit-learn / LIBSVM), same kernel, same tolerance, one run.

Contenders, each on the same RBF kernel (``gamma = 1 / mean squared training distance``) and ``tol = 1e-3``
(MLR-L1: largest block KKT violation; LIBSVM: its ``eps``, the same measure per binary problem):

* ``mlr``: :func:`multikernel.ranking.solve_mlr` on the precomputed kernel (kernel time reported apart);
* ``ovr_pre``: one ``SVC(kernel="precomputed")`` per label on the same kernel matrix;
* ``ovr_rbf``: one ``SVC(kernel="rbf")`` per label, computing its own kernel rows (cache 200 MB): what a
  scikit-learn user runs; compare it with ``mlr`` + the kernel time.

Times are CPU seconds of this process (``time.process_time``; everything runs on one thread: BLAS is limited to
one) because the benchmark machine is shared, wall seconds are printed beside them.  Rows: yeast (if
``../shared/data/yeast.csv`` is there) at three values of C, then synthetic data (10 Gaussian features, labels
from a random linear model, 10 % of the labels relevant on average, every sample with a relevant and an
irrelevant label) over a grid of n and of the number of labels, and optionally one lazy-kernel run at large n
(kernel rows computed on demand through a bounded cache; SVC with its own rbf kernel beside it).

Usage::

    python benchmarks/bench_mlr.py                      # yeast; n in {1000, 2000, 5000} x m in {10, 50, 200}
    python benchmarks/bench_mlr.py --sizes 1000 2000 --labels 10       # quick
    python benchmarks/bench_mlr.py --lazy 20000 --lazy-labels 10       # the lazy row (minutes)
    python benchmarks/bench_mlr.py --figure docs/benchmarks/mlr-scaling.png --json results.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
from pathlib import Path

import numpy as np
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from multikernel import create
from multikernel.ranking import solve_mlr
from multikernel.stack.kernelset import KernelSet

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.process_time() - c, time.perf_counter() - w, out


def synthetic(n: int, m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 10))
    scores = X @ rng.normal(size=(10, m)) + rng.normal(size=(n, m))
    Y = scores > np.quantile(scores, 0.9, axis=0)      # 10 % of each label relevant
    Y[np.arange(n), np.argmax(scores, axis=1)] = True  # every sample: a relevant label ...
    Y[np.arange(n), np.argmin(scores, axis=1)] = False  # ... and an irrelevant one
    return X, Y


def yeast(data_dir: Path) -> tuple[np.ndarray, np.ndarray] | None:
    path = data_dir / "yeast.csv"
    if not path.exists():
        print(f"# {path} not found: no yeast rows")
        return None
    import pandas as pd

    df = pd.read_csv(path)
    labels = [c for c in df.columns if c.startswith("label:")]
    return df.drop(columns=labels).to_numpy(float), df[labels].to_numpy() > 0


def run(X: np.ndarray, Y: np.ndarray, C: float, svc_pre: bool = True) -> dict[str, float]:
    """One row: the kernel, MLR-L1 and the one-vs-rest SVCs on it."""
    sq_c, sq_w, sq = _timed(lambda: euclidean_distances(X, squared=True))
    gamma = 1.0 / sq.mean()
    k_c, k_w, K = _timed(lambda: np.exp(-gamma * sq))
    Ysign = np.where(Y, 1.0, -1.0)
    mlr_c, mlr_w, sol = _timed(lambda: solve_mlr(K, Ysign, C, tol=1e-3))
    row = {"n": len(X), "m": Y.shape[1], "C": C, "kernel_cpu": sq_c + k_c, "kernel_wall": sq_w + k_w,
           "mlr_cpu": mlr_c, "mlr_wall": mlr_w, "mlr_sweeps": sol.n_sweeps,
           "mlr_gap": (sol.primal_objective - sol.dual_objective) / abs(sol.primal_objective)}
    if svc_pre:
        c, w, _ = _timed(lambda: [SVC(kernel="precomputed", C=C, tol=1e-3).fit(K, y) for y in Y.T])
        row.update(ovr_pre_cpu=c, ovr_pre_wall=w)
    c, w, _ = _timed(lambda: [SVC(kernel="rbf", gamma=gamma, C=C, tol=1e-3).fit(X, y) for y in Y.T])
    row.update(ovr_rbf_cpu=c, ovr_rbf_wall=w)
    return row


def run_lazy(n: int, m: int, C: float, cache_mb: float) -> dict[str, float]:
    """MLR-L1 with kernel rows computed on demand (no n x n array) against SVC(kernel="rbf")."""
    X, Y = synthetic(n, m)
    kset = KernelSet([create("kernel", "rbf")], backend="lazy")
    stack = kset.fit_stack(X)
    gamma = kset.builders[0].gamma_
    columns = stack.column_provider(np.ones(1))  # LazyColumns: blocks of rows from the features
    mlr_c, mlr_w, sol = _timed(lambda: solve_mlr(columns, np.where(Y, 1.0, -1.0), C, tol=1e-3,
                                                 cache_size=cache_mb))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    c, w, _ = _timed(lambda: [SVC(kernel="rbf", gamma=gamma, C=C, tol=1e-3).fit(X, y) for y in Y.T])
    return {"n": n, "m": m, "C": C, "mlr_cpu": mlr_c, "mlr_wall": mlr_w, "mlr_sweeps": sol.n_sweeps,
            "mlr_peak_rss_mb": peak_mb, "ovr_rbf_cpu": c, "ovr_rbf_wall": w}


def _fmt(row: dict) -> str:
    pre = row.get("ovr_pre_cpu")
    ratio_pre = f"{row['mlr_cpu'] / pre:.2f}" if pre else "-"
    total = row["mlr_cpu"] + row.get("kernel_cpu", 0.0)
    return (f"| {row['label']} | {row['n']} | {row['m']} | {row['C']:g} | {row.get('kernel_cpu', 0):.2f} | "
            f"{row['mlr_cpu']:.2f} ({row['mlr_sweeps']}) | {pre if pre is not None else float('nan'):.2f} | "
            f"{ratio_pre} | {row['ovr_rbf_cpu']:.2f} | {total / row['ovr_rbf_cpu']:.2f} |")


def figure(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    synth = [r for r in rows if r["label"] == "synthetic"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for m in sorted({r["m"] for r in synth}):
        pts = sorted((r["n"], r["mlr_cpu"], r.get("ovr_pre_cpu")) for r in synth if r["m"] == m)
        line, = axes[0].loglog([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"MLR-L1, {m} labels")
        axes[0].loglog([p[0] for p in pts], [p[2] for p in pts], "s--", color=line.get_color(),
                       label=f"one-vs-rest SVC, {m} labels")
    axes[0].set(xlabel="training samples n", ylabel="CPU seconds", title="growth with n (C = 1, tol = 1e-3)")
    for n in sorted({r["n"] for r in synth}):
        pts = sorted((r["m"], r["mlr_cpu"], r.get("ovr_pre_cpu")) for r in synth if r["n"] == n)
        line, = axes[1].loglog([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"MLR-L1, n={n}")
        axes[1].loglog([p[0] for p in pts], [p[2] for p in pts], "s--", color=line.get_color(),
                       label=f"one-vs-rest SVC, n={n}")
    axes[1].set(xlabel="labels m", ylabel="CPU seconds", title="growth with the number of labels")
    for ax in axes:
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 2000, 5000])
    parser.add_argument("--labels", type=int, nargs="*", default=[10, 50, 200])
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--no-yeast", action="store_true")
    parser.add_argument("--data-dir", type=Path, default=DATA, help="folder of yeast.csv (default ../shared/data)")
    parser.add_argument("--lazy", type=int, default=0, help="n of the lazy-kernel row (0: none)")
    parser.add_argument("--lazy-labels", type=int, default=10)
    parser.add_argument("--cache-mb", type=float, default=200.0)
    parser.add_argument("--figure", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    print(f"# {platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, "
          f"numpy {np.__version__}")
    rows = []
    header = ("| data | n | labels | C | kernel (s) | MLR-L1 (s, sweeps) | OvR SVC precomputed (s) | ratio | "
              "OvR SVC rbf (s) | (MLR + kernel) / OvR rbf |\n|---|---|---|---|---|---|---|---|---|---|")
    print(header)
    with threadpool_limits(1):
        data = None if args.no_yeast else yeast(args.data_dir)
        if data is not None:
            for C in (0.1, 1.0, 10.0):
                row = {"label": "yeast", **run(*data, C)}
                rows.append(row)
                print(_fmt(row), flush=True)
        for m in args.labels:
            for n in args.sizes:
                row = {"label": "synthetic", **run(*synthetic(n, m), args.C)}
                rows.append(row)
                print(_fmt(row), flush=True)
        if args.lazy:
            row = {"label": "synthetic, lazy kernel", **run_lazy(args.lazy, args.lazy_labels, args.C, args.cache_mb)}
            rows.append(row)
            print(f"| lazy | {row['n']} | {row['m']} | {row['C']:g} | - | {row['mlr_cpu']:.1f} ({row['mlr_sweeps']})"
                  f" | - | - | {row['ovr_rbf_cpu']:.1f} | {row['mlr_cpu'] / row['ovr_rbf_cpu']:.2f} |  peak RSS "
                  f"{row['mlr_peak_rss_mb']:.0f} MB", flush=True)
    print(f"# load average at the end {os.getloadavg()[0]:.1f}; max RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    if args.figure:
        figure(rows, args.figure)


if __name__ == "__main__":
    main()
