"""The same fit on a float32 and on a float64 kernel stack: time, memory and the difference in objective.

The kernels are the ``simplemkl`` family on a data set's 70% training split (seed 0), built by
``MKLClassifier(kernels="simplemkl", kernel_dtype=...)`` itself; each method fits to a certified gap of 1e-3.
Reported per method and dtype: fit time (best of ``--repeats``, the kernel build included, as a user sees
it), peak of the Python allocations during one fit (``tracemalloc``, a separate fit so the tracing does not
slow the timed ones), the stack's bytes, and the relative objective difference float32 - float64 with both
certified gaps.  Run from the repository root::

    python benchmarks/bench_float32.py [--data pima-diabetes] [--methods average,lpmkl,sm1mkl,l1mkl]
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

from multikernel import MKLClassifier

DATA = Path(os.environ.get("MULTIKERNEL_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def fit(X, y, method: str, dtype: str, C: float) -> MKLClassifier:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return MKLClassifier(kernels="simplemkl", method=method, C=C, kernel_dtype=dtype, tol=1e-3,
                             max_iter=500).fit(X, y)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="pima-diabetes")
    ap.add_argument("--methods", default="average,lpmkl,sm1mkl,l1mkl")
    ap.add_argument("--C", type=float, default=10.0)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    table = np.loadtxt(DATA / f"{args.data}.csv", delimiter=",", skiprows=1)
    X, y = table[:, :-1], table[:, -1]
    X = X[:, X.std(axis=0) > 0]
    X, _, y, _ = train_test_split(X, y, train_size=0.7, random_state=0, stratify=y)
    X = (X - X.mean(0)) / X.std(0)
    print(f"# {args.data}: n = {len(y)}, {X.shape[1]} features; C = {args.C}; load average {os.getloadavg()[0]:.1f}")
    print("| method | dtype | fit (s) | stack (MB) | peak allocated (MB) | objective | gap | rel. diff. vs float64 |")
    print("|---|---|---|---|---|---|---|---|")
    for method in args.methods.split(","):
        rows = {}
        for dtype in ("float64", "float32"):
            times = []
            for _ in range(args.repeats):
                t = time.perf_counter()
                clf = fit(X, y, method, dtype, args.C)
                times.append(time.perf_counter() - t)
            tracemalloc.start()
            fit(X, y, method, dtype, args.C)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            M = len(clf.kernel_names_)
            stack_mb = M * len(y) ** 2 * np.dtype(dtype).itemsize / 2**20
            rows[dtype] = (min(times), stack_mb, peak / 2**20, clf.objective_, clf.dual_gap_)
        ref = rows["float64"][3]
        for dtype, (t, stack_mb, peak, obj, gap) in rows.items():
            diff = "" if dtype == "float64" else f"{(obj - ref) / abs(ref):+.1e}"
            print(f"| {method} | {dtype} | {t:.2f} | {stack_mb:.0f} | {peak:.0f} | {obj:.6g} | {gap:.1e} | {diff} |")


if __name__ == "__main__":
    main()
