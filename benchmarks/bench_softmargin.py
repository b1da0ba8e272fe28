"""Soft margin MKL end to end on Ionosphere against the loop a user would write today.

The baseline is block coordinate descent with scikit-learn's ``SVC(kernel="precomputed")`` as the inner
solver (cold start every iteration, as libsvm cannot warm-start), the kernel combination and the
``q_m`` statistics in numpy, the closed-form weight update in numpy, and the same stopping rule as ours
(certified relative duality gap <= tol).  Both start from uniform weights and must reach the same weights.

Run from the repository root (needs ``../shared/data/ionosphere.csv``)::

    python benchmarks/bench_softmargin.py [--repeats 3] [--C 10] [--nu 0.3] [--tol 1e-3]
        [--theta2 0.01,0.1,1] [--tol2 1e-6] [--max-iter2 1500] [--svc-tol2 1e-8] [--sections sm1,sm2,l1]

SM2MKL has its own rows and tolerance: its objective is flat along directions of the weights (the penalty
``||mu||^2/(2 theta)`` is its only curvature there), so a gap of 1e-3 leaves the weights uncertain to a few
1e-2; agreeing on the weights needs a much tighter gap on both sides.
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
from multikernel.core.registry import get_registry
from multikernel.stack.kernelset import KernelSet

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
    """Algorithm 2: projected gradient with Armijo backtracking, certified gap as stopping rule.

    Returns the weights of the last iterate, the iteration count, the best upper bound and the certified
    relative gap reached.
    """
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
    return mu, n_iter, best_upper, (best_upper - best_lower) / abs(best_upper)


def _fit(K, y, C, tol, max_iter, method, reg, solver=None):
    return MKLClassifier(kernels="precomputed", method=method, C=C, tol=tol, max_iter=max_iter,
                         regularizer=reg, solver=solver).fit(K, y)


def sm1_rows(K, y, theta, args) -> None:
    """SM1MKL: ours (block coordinate descent, then the level method of the preset) against Algorithm 1."""
    reg = create("regularizer", "box_simplex", nu=args.nu)
    print("| method | ours (s) | sklearn SVC + numpy loop (s) | speed-up | outer iterations ours / baseline | "
          "max abs diff of mu | rel. diff of objective | certified gap (ours) |")
    print("|---|---|---|---|---|---|---|---|")
    for label, solver in [(f"SM1MKL nu={args.nu}, block coordinate descent", "bcd"),
                          (f"SM1MKL nu={args.nu}, level method (the preset)", "level")]:
        ours_t, base_t = [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            est = _fit(K, y, args.C, args.tol, args.max_iter, "sm1mkl", reg, solver)
            ours_t.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            mu_ref, it_ref, obj_ref = baseline_sm1mkl(K, y, args.C, theta, args.tol, args.max_iter, args.svc_tol)
            base_t.append(time.perf_counter() - t0)
        diff = float(np.abs(est.weights_ - mu_ref).max())
        print(f"| {label} | {np.median(ours_t):.3f} | {np.median(base_t):.3f} | "
              f"{np.median(base_t) / np.median(ours_t):.1f}x | {est.n_iter_} / {it_ref} | {diff:.1e} | "
              f"{abs(est.objective_ - obj_ref) / abs(obj_ref):.1e} | {est.dual_gap_:.1e} |", flush=True)


def sm2_rows(K, y, args) -> None:
    """SM2MKL for each theta: ours (the ``sm2mkl`` preset) against Algorithm 2 in sklearn + numpy.

    Both stop on the same certified relative gap ``--tol2``; the baseline gets ``--max-iter2`` iterations and
    a libsvm tolerance ``--svc-tol2``.  To tell which side is off when the weights differ, both are also
    compared with a reference solved 100 times tighter by ours (not timed).
    """
    print(f"\nSM2MKL, certified relative gap <= {args.tol2:g} on both sides (baseline: at most {args.max_iter2} "
          f"iterations, libsvm tol {args.svc_tol2:g}); mu_ref = ours at gap <= {args.tol2 / 100:g}:")
    print("| theta | ours (s) | baseline (s) | speed-up | outer iterations ours / baseline | certified gap ours / "
          "baseline | max abs diff of mu | max abs mu - mu_ref, ours / baseline | rel. diff of objective | "
          "gap of mu_ref |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for theta in args.theta2:
        reg = create("regularizer", "simplex_l2", theta=theta)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = _fit(K, y, args.C, args.tol2 / 100, 5 * args.max_iter2, "sm2mkl", reg)
        ours_t, base_t = [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            est = _fit(K, y, args.C, args.tol2, args.max_iter2, "sm2mkl", reg)
            ours_t.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            mu_b, it_b, obj_b, gap_b = baseline_sm2mkl(K, y, args.C, theta, args.tol2, args.max_iter2, args.svc_tol2)
            base_t.append(time.perf_counter() - t0)
        note = "" if gap_b <= args.tol2 else " (not converged)"
        print(f"| {theta:g} | {np.median(ours_t):.2f} | {np.median(base_t):.2f}{note} | "
              f"{np.median(base_t) / np.median(ours_t):.1f}x | {est.n_iter_} / {it_b} | {est.dual_gap_:.1e} / "
              f"{gap_b:.1e} | {np.abs(est.weights_ - mu_b).max():.1e} | "
              f"{np.abs(est.weights_ - ref.weights_).max():.1e} / {np.abs(mu_b - ref.weights_).max():.1e} | "
              f"{abs(est.objective_ - obj_b) / abs(obj_b):.1e} | {ref.dual_gap_:.0e} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--C", type=float, default=10.0)
    parser.add_argument("--nu", type=float, default=0.3)
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--max-iter", type=int, default=500)
    parser.add_argument("--theta2", type=lambda v: [float(t) for t in v.split(",")], default=[0.01, 0.1, 1.0],
                        help="comma-separated thetas of SM2MKL")
    parser.add_argument("--tol2", type=float, default=1e-6, help="certified relative gap of the SM2MKL rows")
    parser.add_argument("--max-iter2", type=int, default=1500, help="outer iterations of the SM2MKL rows")
    parser.add_argument("--svc-tol2", type=float, default=1e-8, help="libsvm tolerance of the SM2MKL baseline")
    parser.add_argument("--svc-tol", type=float, default=1e-5,
                        help="libsvm tolerance of the baseline (tight enough to certify the outer gap)")
    parser.add_argument("--sections", default="sm1,sm2,l1", help="which tables: sm1, sm2, l1")
    args = parser.parse_args()
    sections = set(args.sections.split(","))

    K, y, _ = load_ionosphere()
    M = len(K)
    theta = 1.0 / (args.nu * M)
    print(f"Ionosphere: n_train={len(y)}, M={M} kernels, C={args.C}, nu={args.nu} (theta={theta:.4g}), "
          f"tol={args.tol}; {platform.processor() or platform.machine()}")

    if "sm1" in sections:
        sm1_rows(K, y, theta, args)
    if "sm2" in sections:
        sm2_rows(K, y, args)
    if "l1" not in sections:
        return
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
