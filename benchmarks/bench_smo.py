"""Benchmark the SMO solver against scikit-learn's SVC(kernel="precomputed") (libsvm) in one run.

Three measurements on RBF kernels of ``make_classification`` data:

1. cold solves: median wall time (and CPU time) of the C-SVC form of ``solve_inner`` and of ``SVC.fit``, interleaved;
2. an MKL-like sequence: ``K_t = sum_m mu_t,m K_m`` over M RBF widths with ``mu_t`` drifting
   geometrically towards a fixed point; the C-SVC warm-started from the previous alpha versus cold
   ``SVC.fit`` on every ``K_t`` (only the solves are timed, the combination is shared);
3. peak memory allocated during one cold C-SVC solve (tracemalloc), next to the kernel's own size.

Usage::

    python benchmarks/bench_smo.py                      # n in {1000, 2000, 5000}, C in {1, 100}
    python benchmarks/bench_smo.py --sizes 1000 --repeats 3 --steps 10   # quick run
"""

from __future__ import annotations

import argparse
import os
import platform
import threading
import time
import tracemalloc

import numpy as np
from sklearn.datasets import make_classification
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.svm import SVC

from multikernel.solve import smo
from multikernel.solve.svm import solve_inner, svm_problem
from multikernel.stack.storage import DenseStack


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    X, y = make_classification(n_samples=n, n_features=20, n_informative=10, random_state=seed)
    X = (X - X.mean(0)) / X.std(0)
    sq = euclidean_distances(X, squared=True)
    return sq, 2.0 * y - 1.0


def _csvc(K: np.ndarray, y: np.ndarray, C: float, alpha0: np.ndarray | None = None, tol: float = 1e-3):
    """The C-SVC dual through the library's one inner-problem entry point."""
    return solve_inner(K, svm_problem("csvc", y, C), alpha0=alpha0, tol=tol)


def _timed(fn) -> tuple[float, float, object]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def cold(K: np.ndarray, y: np.ndarray, C: float, repeats: int) -> dict[str, float]:
    ours, theirs, ours_cpu, theirs_cpu = [], [], [], []
    for _ in range(repeats):  # interleaved, so that machine load hits both alike
        w, c, sol = _timed(lambda: _csvc(K, y, C=C, tol=1e-3))
        ours.append(w)
        ours_cpu.append(c)
        w, c, svc = _timed(lambda: SVC(C=C, kernel="precomputed", tol=1e-3).fit(K, y))
        theirs.append(w)
        theirs_cpu.append(c)
    a = np.zeros(len(y))
    a[svc.support_] = np.abs(svc.dual_coef_[0])
    sk_dual = a.sum() - 0.5 * (a * y) @ K @ (a * y)
    return {"ours": float(np.median(ours)), "sk": float(np.median(theirs)),
            "ours_cpu": float(np.median(ours_cpu)), "sk_cpu": float(np.median(theirs_cpu)),
            "iters": sol.n_iter, "sk_iters": int(svc.n_iter_[0]),
            "rel_dual_diff": abs(sol.dual_objective - sk_dual) / abs(sk_dual)}


def mkl_sequence(sq: np.ndarray, y: np.ndarray, C: float, steps: int, n_kernels: int) -> dict[str, float]:
    gammas = np.geomspace(0.25, 4.0, n_kernels) / 20.0
    stack = DenseStack(np.stack([np.exp(-g * sq) for g in gammas]))
    target = np.linspace(1.0, 3.0, n_kernels) ** 2
    target /= target.sum()
    mu = np.full(n_kernels, 1.0 / n_kernels)
    K = np.empty_like(sq)
    ours = theirs = 0.0
    alpha = None
    iters = []
    for _ in range(steps):
        stack.combine(mu, out=K)
        w, _, sol = _timed(lambda a=alpha: _csvc(K, y, C=C, alpha0=a, tol=1e-3))
        ours += w
        alpha = sol.alpha
        iters.append(sol.n_iter)
        w, _, _ = _timed(lambda: SVC(C=C, kernel="precomputed", tol=1e-3).fit(K, y))
        theirs += w
        mu = target + 0.7 * (mu - target)  # drift towards the fixed point, as an outer loop converging
    return {"ours": ours, "sk": theirs, "first_iters": iters[0], "last_iters": iters[-1]}


def peak_memory(K: np.ndarray, y: np.ndarray, C: float) -> tuple[float, float]:
    """Megabytes allocated at peak by one cold solve in a fresh thread (the caller's kernel excluded).

    A fresh thread has no reusable row-cache buffer yet, so the peak includes it; its size is
    returned too.
    """
    out: list[float] = []

    def run() -> None:
        tracemalloc.start()
        tracemalloc.reset_peak()
        _csvc(K, y, C=C, tol=1e-3)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out.append(peak / 2**20)
        buf = getattr(smo._SCRATCH, "buf", None)
        out.append(0.0 if buf is None else buf.nbytes / 2**20)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return out[0], out[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 5000])
    parser.add_argument("--C", type=float, nargs="+", default=[1.0, 100.0], dest="Cs")
    parser.add_argument("--repeats", type=int, default=5, help="cold solves per solver (median)")
    parser.add_argument("--steps", type=int, default=30, help="solves in the MKL-like sequence")
    parser.add_argument("--kernels", type=int, default=5, help="base kernels in the MKL-like sequence")
    parser.add_argument("--no-mkl", action="store_true", help="skip the MKL-like sequence")
    args = parser.parse_args()

    print(f"# SMO benchmark: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    print()
    print("| n | C | ours cold (s) | sklearn cold (s) | ratio wall | ratio CPU | iterations ours / sklearn "
          "| rel. dual diff | MKL warm ours (s) | MKL cold sklearn (s) | MKL speed-up "
          "| iterations first → last | peak alloc (MB) | of which row cache (MB) | kernel size (MB) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        sq, y = _data(n)
        K = np.exp(-sq / 20.0)
        for C in args.Cs:
            c = cold(K, y, C, args.repeats)
            m = None if args.no_mkl else mkl_sequence(sq, y, C, args.steps, args.kernels)
            mem, cache = peak_memory(K, y, C)
            mkl_cols = ("–", "–", "–", "–") if m is None else (
                f"{m['ours']:.3f}", f"{m['sk']:.3f}", f"{m['sk'] / m['ours']:.1f}×",
                f"{m['first_iters']} → {m['last_iters']}")
            print(f"| {n} | {C:g} | {c['ours']:.4f} | {c['sk']:.4f} | {c['ours'] / c['sk']:.2f} "
                  f"| {c['ours_cpu'] / c['sk_cpu']:.2f} | {c['iters']} / {c['sk_iters']} "
                  f"| {c['rel_dual_diff']:.1e} | " + " | ".join(mkl_cols) +
                  f" | {mem:.1f} | {cache:.1f} | {K.nbytes / 2**20:.0f} |", flush=True)


if __name__ == "__main__":
    main()
