"""Soft margin MKL end to end on Ionosphere against the loop a user would write today.

The baseline is block coordinate descent with scikit-learn's ``SVC(kernel="precomputed")`` as the inner
solver (cold start every iteration, as libsvm cannot warm-start), the kernel combination and the
``q_m`` statistics in numpy, the closed-form weight update in numpy, and the same stopping rule as ours
(certified relative duality gap <= tol).  Both start from uniform weights and must reach the same weights.

Run from the repository root (needs ``../shared/data/ionosphere.csv``)::

    python benchmarks/bench_softmargin.py [--repeats 3] [--C 10] [--nu 0.3] [--theta 1.0]
"""

from __future__ import annotations

import argparse
import math
import platform
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC

from multikernel import MKLClassifier, create
from multikernel.kernelset import KernelSet
from multikernel.registry import get_registry

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ionosphere.csv"


def load_ionosphere() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """70% training split (seed 0), standardized on the training part; constant columns dropped."""
    table = np.loadtxt(DATA, delimiter=",", skiprows=1)
    X, y = table[:, :-1], table[:, -1]
    X = X[:, X.std(axis=0) > 0]  # column 2 is constant: 33 features, 442 kernels as in SimpleMKL
    Xtr, _, ytr, _ = train_test_split(X, y, train_size=0.7, random_state=0, stratify=y)
    Xtr = (Xtr - Xtr.mean(0)) / Xtr.std(0)
    stack = KernelSet(get_registry().get("family", "simplemkl")(Xtr.shape[1]), normalize="trace").fit_stack(Xtr)
    return stack.data, ytr, Xtr


# ----------------------------------------------------------------------------------------------------
# The baseline: what a user writes with scikit-learn and numpy
# ----------------------------------------------------------------------------------------------------
def box_simplex_update(a: np.ndarray, theta: float) -> np.ndarray:
    """argmin sum a_m / mu_m over {sum mu = 1, 0 <= mu <= theta} (Xu et al. 2013, Lemma 3.2), in numpy."""
    s = np.sqrt(np.maximum(a, 0.0))
    order = np.argsort(-s)
    ss = s[order]
    suffix = np.cumsum(ss[::-1])[::-1]
    M = len(a)
    w = M
    for p in range(M):
        if (1 - p * theta) * ss[p] <= theta * suffix[p]:
            w = p
            break
    mu = np.empty(M)
    mu[:w] = theta
    if w < M:
        rest = 1 - w * theta
        mu[w:] = rest * ss[w:] / suffix[w] if suffix[w] > 0 else rest / (M - w)
    out = np.empty(M)
    out[order] = mu
    return out


def baseline_sm1mkl(K: np.ndarray, y: np.ndarray, C: float, theta: float, tol: float, max_iter: int):
    M = len(K)
    mu = np.full(M, 1.0 / M)
    best_upper, best_lower = math.inf, -math.inf
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        Kmu = np.tensordot(mu, K, axes=1)
        svc = SVC(C=C, kernel="precomputed", tol=1e-3).fit(Kmu, y)
        coef = np.zeros(len(y))
        coef[svc.support_] = svc.dual_coef_[0]
        f = Kmu @ coef + svc.intercept_[0]
        q = np.einsum("i,mij,j->m", coef, K, coef)
        primal = 0.5 * coef @ Kmu @ coef + C * np.maximum(0, 1 - y * f).sum()
        # max over the box-simplex of mu'g: theta on the largest entries, the remainder on the next one
        g = np.sort(0.5 * q)[::-1]
        k = int(math.floor(1 / theta))
        bound = theta * g[:k].sum() + (1 - k * theta) * (g[k] if k < M else 0.0)
        best_upper = min(best_upper, primal)
        best_lower = max(best_lower, np.abs(coef).sum() - bound)
        if (best_upper - best_lower) / abs(best_upper) <= tol:
            break
        mu = box_simplex_update(mu**2 * q, theta)
    return mu, n_iter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--C", type=float, default=10.0)
    parser.add_argument("--nu", type=float, default=0.3)
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--max-iter", type=int, default=500)
    args = parser.parse_args()

    K, y, _ = load_ionosphere()
    M = len(K)
    theta = 1.0 / (args.nu * M)
    print(f"Ionosphere: n_train={len(y)}, M={M} kernels, C={args.C}, nu={args.nu} (theta={theta:.4g}), "
          f"tol={args.tol}; {platform.processor() or platform.machine()}")

    ours_t, base_t = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        est = MKLClassifier(kernels="precomputed", method="sm1mkl", C=args.C, tol=args.tol, max_iter=args.max_iter,
                            regularizer=create("regularizer", "box_simplex", nu=args.nu)).fit(K, y)
        ours_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        mu_ref, it_ref = baseline_sm1mkl(K, y, args.C, theta, args.tol, args.max_iter)
        base_t.append(time.perf_counter() - t0)
    diff = float(np.abs(est.weights_ - mu_ref).max())
    print("| method | ours (s) | sklearn SVC + numpy loop (s) | ratio baseline/ours | iters ours / base | "
          "max abs diff of mu | gap |")
    print("|---|---|---|---|---|---|---|")
    print(f"| SM1MKL nu={args.nu} | {np.median(ours_t):.3f} | {np.median(base_t):.3f} | "
          f"{np.median(base_t) / np.median(ours_t):.1f}x | {est.n_iter_} / {it_ref} | {diff:.1e} | "
          f"{est.dual_gap_:.1e} |")


if __name__ == "__main__":
    main()
