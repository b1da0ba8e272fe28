"""Kernels and the kernel stack: speed against scikit-learn and numpy, measured in the same run.

Run::

    python benchmarks/bench_kernels.py            # the sizes of docs/benchmarks.md
    python benchmarks/bench_kernels.py --quick    # small sizes, a smoke run
    python benchmarks/bench_kernels.py --lazy-large   # also the lazy simplemkl stack, n=5000, d=20

Each timing is the best of ``--repeat`` runs, the contenders interleaved so that both see the same
machine state.  Prints a markdown table.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import time
import tracemalloc
from collections.abc import Callable

import numpy as np
from sklearn.metrics.pairwise import chi2_kernel, rbf_kernel

from multikernel.plugins.kernels import ExpChi2Kernel, RBFKernel, simplemkl_family
from multikernel.stack.kernelset import KernelSet
from multikernel.stack.storage import DenseStack


def best_times(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """Best wall time of each function over ``repeat`` interleaved rounds (after one warm-up)."""
    for fn in fns:
        fn()
    best = [np.inf] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            gc.collect()
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def peak_traced(fn: Callable[[], object]) -> tuple[float, int]:
    """Wall time and peak bytes allocated through Python/numpy while ``fn`` runs."""
    gc.collect()
    tracemalloc.start()
    t0 = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del result
    return elapsed, peak


def row(name: str, ours: float, ref: float, ref_name: str, target: str) -> str:
    return f"| {name} | {ours:.3f} s | {ref:.3f} s ({ref_name}) | {ours / ref:.2f} | {target} |"


def bench_rbf(n: int, d: int, repeat: int) -> str:
    X = np.random.default_rng(0).random((n, d))
    gamma = 1.0 / d
    ours, ref = best_times([lambda: RBFKernel(gamma=gamma).fit_transform(X),
                            lambda: rbf_kernel(X, gamma=gamma)], repeat)
    np.testing.assert_allclose(RBFKernel(gamma=gamma).fit_transform(X[:500]),
                               rbf_kernel(X[:500], gamma=gamma), atol=1e-12)
    return row(f"rbf train kernel n={n}, d={d}", ours, ref, "sklearn rbf_kernel", "<= 1.0")


def bench_chi2(n: int, d: int, repeat: int) -> str:
    X = np.random.default_rng(1).random((n, d))
    ours, ref = best_times([lambda: ExpChi2Kernel(gamma=1.0 / d).fit_transform(X),
                            lambda: chi2_kernel(X, gamma=1.0 / d)], repeat)
    np.testing.assert_allclose(ExpChi2Kernel(gamma=1.0 / d).fit_transform(X[:300]),
                               chi2_kernel(X[:300], gamma=1.0 / d), rtol=1e-10)
    return row(f"exp-chi2 train kernel n={n}, d={d}", ours, ref, "sklearn chi2_kernel", "<= 0.33")


def bench_stack(M: int, n: int, repeat: int) -> list[str]:
    rng = np.random.default_rng(2)
    data = np.empty((M, n, n), dtype=np.float32)
    for m in range(M):
        data[m] = rng.random((n, n), dtype=np.float32)
    stack = DenseStack(data)
    w = rng.random(M)
    out = np.empty((n, n))
    v_full = rng.standard_normal(n)
    v_half = v_full * (rng.random(n) < 0.5)
    t_sum, t_comb, t_qf, t_qh = best_times([
        lambda: data.sum(), lambda: stack.combine(w, out=out), lambda: stack.quad_forms(v_full),
        lambda: stack.quad_forms(v_half)], repeat)
    size = f"float32 M={M}, n={n} ({data.nbytes / 2**30:.2f} GiB)"
    return [row(f"combine (all {M} weights > 0), {size}", t_comb, t_sum, "stack.sum()", "<= 2.0"),
            row(f"quad_forms, v without zeros, {size}", t_qf, t_sum, "stack.sum()", "<= 2.0"),
            row(f"quad_forms, v 50% zeros, {size}", t_qh, t_sum, "stack.sum()", "(info)")]


def naive_simplemkl(X: np.ndarray, dtype) -> np.ndarray:
    """A straightforward numpy build: every kernel computed on its own, as independent builders would."""
    n, d = X.shape
    sigmas = [2.0**k for k in range(-3, 7)]
    subsets = [np.arange(d)] + [np.array([j]) for j in range(d)]
    out = np.empty((13 * len(subsets), n, n), dtype=dtype)
    m = 0
    for cols in subsets:
        Xs = X[:, cols]
        for s in sigmas:
            sq = (Xs**2).sum(axis=1)
            D = np.maximum(sq[:, None] + sq[None, :] - 2 * Xs @ Xs.T, 0)
            out[m] = np.exp(-D / (2 * s**2))
            m += 1
        for deg in (1, 2, 3):
            out[m] = (Xs @ Xs.T + 1.0) ** deg
            m += 1
    return out


def bench_family(n: int, d: int) -> list[str]:
    X = np.random.default_rng(3).standard_normal((n, d))
    M = len(simplemkl_family(d))
    lines = []
    for dtype in ("float32", "float64"):
        def ours(dt=dtype):
            return KernelSet(simplemkl_family(d), dtype=dt).fit_stack(X)

        def naive(dt=dtype):
            return naive_simplemkl(X, dt)

        # Times without tracemalloc (its hooks slow allocations), then one traced run each for the peak.
        t_ours, t_naive = best_times([ours, naive], repeat=2)
        peak_ours, peak_naive = peak_traced(ours)[1], peak_traced(naive)[1]
        storage = M * n * n * np.dtype(dtype).itemsize
        lines.append(
            f"| simplemkl family build, n={n}, d={d}, {M} kernels, {dtype} | {t_ours:.2f} s, peak "
            f"{peak_ours / 2**30:.2f} GiB | {t_naive:.2f} s, peak {peak_naive / 2**30:.2f} GiB (numpy, "
            f"one kernel at a time) | {t_ours / t_naive:.2f} | (report; stack {storage / 2**30:.2f} GiB) |")
    # Same values as the straightforward build.
    ref = naive_simplemkl(X[:200], "float64")
    ours = KernelSet(simplemkl_family(d)).fit_stack(X[:200]).data
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-9)
    return lines


def bench_lazy_large(n: int, d: int) -> list[str]:
    X = np.random.default_rng(4).standard_normal((n, d))
    ks = KernelSet(simplemkl_family(d), dtype="float32", backend="lazy", block_size="256MB")
    est = ks.estimate_memory(n, n, n_features=d)
    dense = ks.estimate_memory(n, n, n_features=d, backend="dense")
    t_fit, peak_fit = peak_traced(lambda: ks.fit_stack(X))
    stack = ks.fit_stack(X)
    w = np.zeros(stack.n_kernels)
    w[::10] = 1.0 / len(w[::10])
    v = np.zeros(n)
    v[:: 5] = 1.0
    t_comb, peak_comb = peak_traced(lambda: stack.combine(w))
    t_qf, peak_qf = peak_traced(lambda: stack.quad_forms(v))
    return [f"| lazy simplemkl stack n={n}, d={d}, {stack.n_kernels} kernels (dense float32 would need "
            f"{dense.resident / 2**30:.1f} GiB; estimate lazy {est.resident / 2**30:.2f} GiB) | fit "
            f"{t_fit:.2f} s (peak {peak_fit / 2**30:.2f} GiB); combine of {int((w > 0).sum())} kernels "
            f"{t_comb:.2f} s (peak {peak_comb / 2**30:.2f} GiB); quad_forms, {int((v != 0).sum())} "
            f"non-zeros, {t_qf:.2f} s (peak {peak_qf / 2**30:.2f} GiB) | | | works |"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--lazy-large", action="store_true", help="also the lazy n=5000 simplemkl stack")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    q = args.quick
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
          f"load average at start {os.getloadavg()[0]:.1f}")
    print("| benchmark | ours | reference | ratio | target |")
    print("|---|---|---|---|---|")
    # The Gram product (BLAS, the same in both) dominates and varies with the load of a shared machine:
    # more rounds make the best time of each contender more stable.
    print(bench_rbf(1000 if q else 5000, 100, max(args.repeat, 7)), flush=True)
    print(bench_chi2(600 if q else 3000, 500, args.repeat), flush=True)
    for line in bench_stack(20 if q else 100, 500 if q else 2000, args.repeat):
        print(line, flush=True)
    for line in bench_family(200 if q else 1000, 30):
        print(line, flush=True)
    if args.lazy_large:
        for line in bench_lazy_large(1000 if q else 5000, 20):
            print(line, flush=True)
    print(f"load average at end {os.getloadavg()[0]:.1f}")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"\nmax resident set size of the whole run: {rss:.2f} GiB")


if __name__ == "__main__":
    main()
