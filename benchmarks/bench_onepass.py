"""Time per outer iteration as a multiple of one memory pass over the kernel stack (the physical floor).

Each fit goes through ``MKLClassifier(kernels="precomputed")`` on a (M, n, n) array, the path of a user with
precomputed kernels.  Reported per method:

* ``validate``: the time to turn the user's array into a training stack (the checks of precomputed kernels);
* ``per iter``: (fit time - validate) / outer iterations, and that as a ratio to one pass (``x pass``);
* ``combine`` / ``quad``: stack operations per outer iteration (counted by wrapping the stack), so a ratio
  far above 1 can be told apart from a slow SMO; on the one-pass path (``multikernel.stack.products``)
  ``quad`` counts the products passes (``K_m v``, which give the quadratic forms), and ``cols`` the columns
  of the combined kernel the SMO computed from the stack, in whole combinations (columns / n) per iteration;
* ``solves``: the SVM solves of the fit (line searches and extrapolated trials make more than one per
  iteration), and ``x pass/solve``: (fit - validate) / solves as a ratio to one pass.

The floor is ``np.sum`` over the whole stack in float64 accumulation (median of 5), which reads every byte
once.  Run from the repository root (needs ``../shared/data``)::

    python benchmarks/bench_onepass.py [--data ionosphere] [--dtype float64] [--methods average,l1mkl,...]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np

from multikernel import MKLClassifier
from multikernel.core.interfaces import MKLProblem
from multikernel.core.registry import get_registry
from multikernel.stack import storage
from multikernel.stack.kernelset import KernelSet

# ../shared/data next to the repository, or where MULTIKERNEL_DATA points (a git worktree elsewhere)
DATA = Path(os.environ.get("MULTIKERNEL_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def load(name: str, n_max: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    table = np.loadtxt(DATA / f"{name}.csv", delimiter=",", skiprows=1)
    X, y = table[:, :-1], table[:, -1]
    X = X[:, X.std(axis=0) > 0]
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(X))[:n_max]
    X, y = X[idx], y[idx]
    return (X - X.mean(0)) / X.std(0), y


def floor(data: np.ndarray, repeats: int = 5) -> float:
    """Seconds of one read of the whole stack: the least an operation touching every entry costs."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        np.sum(data, dtype=np.float64)
        times.append(time.perf_counter() - t)
    return float(np.median(times))


try:  # the one-pass path; absent from the commits before it (the "before" of a comparison)
    from multikernel.stack import products
except ImportError:
    products = None


class Counts:
    """Counts the stack operations of a fit by wrapping DenseStack's methods (the library is unchanged)."""

    def __init__(self) -> None:
        self.combine = self.quad = self.columns = self.solves = 0
        self._orig = (storage.DenseStack.combine, storage.DenseStack.quad_forms)
        self._orig_solve = MKLProblem.solve_inner
        if products is not None:
            self._orig_products = (products.StackProducts.__init__, products.CombinedColumns.columns)

    def __enter__(self) -> Counts:
        combine, quad = self._orig
        counts = self
        if products is not None:
            init, columns = self._orig_products

            def counted_init(obj, *a, **k):
                counts.quad += 1
                return init(obj, *a, **k)

            def counted_columns(obj, idx, out):
                counts.columns += len(idx)
                return columns(obj, idx, out)

            products.StackProducts.__init__, products.CombinedColumns.columns = counted_init, counted_columns

        def counted_combine(stack, *a, **k):
            counts.combine += 1
            return combine(stack, *a, **k)

        def counted_quad(stack, *a, **k):
            counts.quad += 1
            return quad(stack, *a, **k)

        def counted_solve(problem, *a, **k):
            counts.solves += 1
            return counts._orig_solve(problem, *a, **k)

        storage.DenseStack.combine, storage.DenseStack.quad_forms = counted_combine, counted_quad
        MKLProblem.solve_inner = counted_solve
        return self

    def __exit__(self, *exc) -> None:
        storage.DenseStack.combine, storage.DenseStack.quad_forms = self._orig
        MKLProblem.solve_inner = self._orig_solve
        if products is not None:
            products.StackProducts.__init__, products.CombinedColumns.columns = self._orig_products


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="ionosphere")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    ap.add_argument("--methods", default="average,l1mkl,lpmkl,sm1mkl,simplemkl")
    ap.add_argument("--C", type=float, default=10.0)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    X, y = load(args.data, args.n)
    family = get_registry().get("family", "simplemkl")(X.shape[1])
    K = KernelSet(family, normalize="trace", dtype=args.dtype).fit_stack(X).data
    K = np.ascontiguousarray(K)
    one_pass = floor(K)
    print(f"# {args.data}: n = {len(y)}, M = {len(K)} kernels, {args.dtype}, {K.nbytes / 2**20:.0f} MB; "
          f"one pass (np.sum) = {one_pass * 1e3:.1f} ms; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs")
    print(f"{'method':10s} {'fit s':>8s} {'validate':>9s} {'iters':>6s} {'per iter':>9s} {'x pass':>7s} "
          f"{'combine':>8s} {'quad':>6s} {'cols':>6s} {'solves':>7s} {'x pass/solve':>13s} {'gap':>9s}")
    for method in args.methods.split(","):
        rows = []
        for _ in range(args.repeats):
            clf = MKLClassifier(kernels="precomputed", method=method, C=args.C, tol=1e-3, max_iter=500)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = time.perf_counter()
                clf._training_stack(K)
                t_validate = time.perf_counter() - t
                with Counts() as c:
                    t = time.perf_counter()
                    clf.fit(K, y)
                    t_fit = time.perf_counter() - t
            n_iter = int(np.max(clf.n_iter_))
            rows.append((t_fit, t_validate, n_iter, c.combine, c.quad, c.columns / len(y), c.solves,
                         float(np.max(clf.dual_gap_))))
        t_fit, t_val, n_iter, n_comb, n_quad, n_cols, n_solves, gap = min(rows)
        per = (t_fit - t_val) / max(n_iter, 1)
        per_solve = (t_fit - t_val) / max(n_solves, 1)
        print(f"{method:10s} {t_fit:8.3f} {t_val:9.3f} {n_iter:6d} {per * 1e3:7.1f}ms {per / one_pass:7.2f} "
              f"{n_comb / n_iter:8.2f} {n_quad / n_iter:6.2f} {n_cols / n_iter:6.2f} {n_solves:7d} "
              f"{per_solve / one_pass:13.2f} {gap:9.2e}")


if __name__ == "__main__":
    main()
