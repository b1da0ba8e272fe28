"""Soft margin MKL end to end on Ionosphere against the loop a user would write today.

The baseline is block coordinate descent with scikit-learn's ``SVC(kernel="precomputed")`` as the inner
solver (cold start every iteration, as libsvm cannot warm-start), the kernel combination and the
``q_m`` statistics in numpy, the closed-form weight update in numpy, and the same stopping rule as ours
(certified relative duality gap <= tol).  Both start from uniform weights and must reach the same weights.

Run from the repository root (needs ``../shared/data/ionosphere.csv``)::

    python benchmarks/bench_softmargin.py [--repeats 3] [--C 10] [--nu 0.3] [--theta2 1.0] [--tol 1e-3]
"""

from __future__ import annotations

import argparse
import math
import platform
import time
import warnings
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


def svm_at(K: np.ndarray, mu: np.ndarray, y: np.ndarray, C: float, svc_tol: float):
    """One cold libsvm solve at weights mu: (coef, q, primal objective, dual objective)."""
    Kmu = np.tensordot(mu, K, axes=1)
    svc = SVC(C=C, kernel="precomputed", tol=svc_tol).fit(Kmu, y)
    coef = np.zeros(len(y))
    coef[svc.support_] = svc.dual_coef_[0]
    Kc = Kmu @ coef
    q = np.einsum("i,mij,j->m", coef, K, coef)
    primal = 0.5 * coef @ Kc + C * np.maximum(0, 1 - y * (Kc + svc.intercept_[0])).sum()
    dual = np.abs(coef).sum() - 0.5 * coef @ Kc
    return coef, q, primal, dual


def baseline_sm1mkl(K, y, C, theta, tol, max_iter, svc_tol):
    """Algorithm 1 (block coordinate descent) with the certified gap as stopping rule."""
    M = len(K)
    mu = np.full(M, 1.0 / M)
    best_upper, best_lower = math.inf, -math.inf
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        coef, q, primal, _ = svm_at(K, mu, y, C, svc_tol)
        # max over the box-simplex of mu'g: theta on the largest entries, the remainder on the next one
        g = np.sort(0.5 * q)[::-1]
        k = int(math.floor(1 / theta))
        bound = theta * g[:k].sum() + (1 - k * theta) * (g[k] if k < M else 0.0)
        best_upper = min(best_upper, primal)
        best_lower = max(best_lower, np.abs(coef).sum() - bound)
        if (best_upper - best_lower) / abs(best_upper) <= tol:
            break
        mu = box_simplex_update(mu**2 * q, theta)
    return mu, n_iter, best_upper


def project_simplex(v: np.ndarray) -> np.ndarray:
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1
    rho = np.nonzero(u - css / np.arange(1, len(v) + 1) > 0)[0][-1]
    return np.maximum(v - css[rho] / (rho + 1), 0)


def baseline_sm2mkl(K, y, C, theta, tol, max_iter, svc_tol):
    """Algorithm 2: projected gradient with Armijo backtracking, certified gap as stopping rule."""
    M = len(K)
    mu = np.full(M, 1.0 / M)
    coef, q, primal, dual = svm_at(K, mu, y, C, svc_tol)
    best_upper, best_lower = math.inf, -math.inf
    step = 1.0
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        pen = mu @ mu / (2 * theta)
        best_upper = min(best_upper, primal + pen)
        nu = project_simplex(theta * 0.5 * q)  # argmax of nu'g - ||nu||^2/(2 theta) on the simplex
        best_lower = max(best_lower, np.abs(coef).sum() - (nu @ (0.5 * q) - nu @ nu / (2 * theta)))
        if (best_upper - best_lower) / abs(best_upper) <= tol:
            break
        grad = -0.5 * q + mu / theta
        F = dual + pen
        while True:
            trial = project_simplex(mu - step * grad)
            t_coef, t_q, t_primal, t_dual = svm_at(K, trial, y, C, svc_tol)
            if t_dual + trial @ trial / (2 * theta) <= F + 1e-4 * grad @ (trial - mu) or step < 1e-10:
                break
            step *= 0.5
        mu, coef, q, primal, dual = trial, t_coef, t_q, t_primal, t_dual
        step *= 2.0
    return mu, n_iter, best_upper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--C", type=float, default=10.0)
    parser.add_argument("--nu", type=float, default=0.3)
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--max-iter", type=int, default=500)
    parser.add_argument("--theta2", type=float, default=1.0, help="theta of SM2MKL")
    parser.add_argument("--svc-tol", type=float, default=1e-5,
                        help="libsvm tolerance of the baseline (tight enough to certify the outer gap)")
    args = parser.parse_args()

    K, y, _ = load_ionosphere()
    M = len(K)
    theta = 1.0 / (args.nu * M)
    print(f"Ionosphere: n_train={len(y)}, M={M} kernels, C={args.C}, nu={args.nu} (theta={theta:.4g}), "
          f"tol={args.tol}; {platform.processor() or platform.machine()}")

    cases = [
        (f"SM1MKL nu={args.nu}, block coordinate descent", "sm1mkl", create("regularizer", "box_simplex", nu=args.nu),
         lambda: baseline_sm1mkl(K, y, args.C, theta, args.tol, args.max_iter, args.svc_tol), "bcd"),
        (f"SM2MKL theta={args.theta2:g}", "sm2mkl", create("regularizer", "simplex_l2", theta=args.theta2),
         lambda: baseline_sm2mkl(K, y, args.C, args.theta2, args.tol, args.max_iter, args.svc_tol)),
    ]
    print("| method | ours (s) | sklearn SVC + numpy loop (s) | speed-up | outer iterations ours / baseline | "
          "max abs diff of mu | rel. diff of objective | certified gap (ours) |")
    print("|---|---|---|---|---|---|---|---|")
    cases.insert(1, (f"SM1MKL nu={args.nu}, level method (the preset)", "sm1mkl", cases[0][2], cases[0][3], "level"))
    for label, method, reg, baseline, *solver in cases:
        ours_t, base_t = [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            est = MKLClassifier(kernels="precomputed", method=method, C=args.C, tol=args.tol,
                                max_iter=args.max_iter, regularizer=reg, solver=solver[0] if solver else None).fit(K, y)
            ours_t.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            mu_ref, it_ref, obj_ref = baseline()
            base_t.append(time.perf_counter() - t0)
        diff = float(np.abs(est.weights_ - mu_ref).max())
        print(f"| {label} | {np.median(ours_t):.3f} | {np.median(base_t):.3f} | "
              f"{np.median(base_t) / np.median(ours_t):.1f}x | {est.n_iter_} / {it_ref} | {diff:.1e} | "
              f"{abs(est.objective_ - obj_ref) / abs(obj_ref):.1e} | {est.dual_gap_:.1e} |", flush=True)

    print("\nL1-MKL to a certified relative gap <= tol:")
    print("| solver | time (s) | outer iterations | certified gap | kernels selected |")
    print("|---|---|---|---|---|")
    for label, solver in [("reduced gradient (SimpleMKL, `simplemkl`)", "reduced_gradient"),
                          ("closed-form update (block coordinate descent)", "bcd"),
                          ("projected gradient", "projected_gradient"),
                          ("level method (cutting planes + level-set projection; `l1mkl`)", "level")]:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = MKLClassifier(kernels="precomputed", method="l1mkl", solver=solver, C=args.C, tol=args.tol,
                                max_iter=args.max_iter).fit(K, y)
        print(f"| {label} | {time.perf_counter() - t0:.2f} | {est.n_iter_} | {est.dual_gap_:.1e} | "
              f"{np.count_nonzero(est.weights_ > 1e-5 * est.weights_.sum())} |", flush=True)


if __name__ == "__main__":
    main()
