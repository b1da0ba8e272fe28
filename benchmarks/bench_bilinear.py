"""Benchmark the trace-norm bilinear classifier (Kobayashi 2014) on the toy set of section 6.1.1, in one run.

1. The proposed projected gradient against the same problem written in cvxpy (nuclear-norm form, Clarabel):
   cvxpy's time; the time at which the proposed solver's iterate first reaches cvxpy's objective within
   ``--match`` (relative; read off the iteration history, which times every step from the start of the fit);
   the time until its own stopping rule (certified relative gap ``--tol``, or the stall safeguard).
2. The baselines on a held-out half: the linear SVM on vec(X) and the alternating bilinear SVM (rank k)
   of Pirsiavash et al.: time, test error, rank of W.
3. The profile of the proposed solver: SVM sub-problem, Gram build, eigen-decomposition, certificate.

Usage::

    python benchmarks/bench_bilinear.py                 # 2 x 100 images of 40 x 40
    python benchmarks/bench_bilinear.py --size 100      # the paper's 100 x 100 (cvxpy takes minutes)
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings

import numpy as np

from multikernel.bilinear import BilinearClassifier, BilinearSVMClassifier, fit_trace_norm, make_toy_bilinear


def cvxpy_peer(X: np.ndarray, y: np.ndarray, C: float) -> tuple[float, np.ndarray]:
    """The peer: problem (2), ``min ||W||_* + C sum_i hinge_i``, written in cvxpy and solved by Clarabel."""
    import cvxpy as cp  # the peer, installed with the test extra

    n, h, w = X.shape
    W, b = cp.Variable((h, w)), cp.Variable()
    scores = X.reshape(n, h * w) @ cp.vec(W, order="C") + b
    problem = cp.Problem(cp.Minimize(cp.normNuc(W) + C * cp.sum(cp.pos(1 - cp.multiply(y, scores)))))
    problem.solve(solver="CLARABEL")
    return float(problem.value), np.asarray(W.value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=40)
    parser.add_argument("--n-per-class", type=int, default=100)
    parser.add_argument("--C", type=float, default=0.1)
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--rank", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--match", type=float, default=1e-4,
                        help="relative distance to cvxpy's objective counted as the same objective")
    args = parser.parse_args()
    print(f"# {platform.processor() or platform.machine()}, python {platform.python_version()}")
    X, y = make_toy_bilinear(n_per_class=args.n_per_class, size=args.size, random_state=args.seed)
    print(f"toy set: {X.shape[0]} images {args.size}x{args.size}, C={args.C}, tol={args.tol}")

    # cvxpy first: its optimum is the reference "same objective" of the proposed solver's trajectory
    t0 = time.perf_counter()
    ref, W_ref = cvxpy_peer(X, y, args.C)
    cvx = time.perf_counter() - t0
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the stall safeguard may end the fit above tol: reported below
        fit = fit_trace_norm(X, y, args.C, tol=args.tol, max_iter=2000)
    ours = time.perf_counter() - t0
    s_ref = np.linalg.svd(W_ref, compute_uv=False)
    # the first iterate whose objective (primal value of W = G S, its best bias) is within --match of cvxpy's
    reached = next((h for h in fit.history if h["primal"] <= ref * (1 + args.match)), None)
    print("\n| solver | time (s) | objective | rel. to cvxpy | certified gap | rank W |")
    print("|---|---|---|---|---|---|")
    print(f"| cvxpy nuclear norm + Clarabel | {cvx:.2f} | {ref:.7f} | 0 | (interior point) | "
          f"{int((s_ref > 1e-6 * s_ref[0]).sum())} |")
    if reached is not None:
        print(f"| proposed, first iterate within {args.match:g} of cvxpy | {reached['time']:.2f} | "
              f"{reached['primal']:.7f} | {(reached['primal'] - ref) / ref:.1e} | {reached['gap']:.1e} | "
              f"{reached['rank']} |")
    print(f"| proposed, until the stopping rule (gap {args.tol:g} or stall) | {ours:.2f} | {fit.primal:.7f} | "
          f"{(fit.primal - ref) / ref:.1e} | {fit.gap:.1e} | {fit.history[-1]['rank']} |")
    if reached is not None:
        print(f"\nspeed-up at the same objective ({args.match:g} relative): {cvx / reached['time']:.1f}x; "
              f"until the stopping rule: {cvx / ours:.1f}x ({fit.n_iter} steps)")
    total = sum(fit.timings.values())
    split = ", ".join(f"{k} {v:.2f} s ({v / total:.0%})" for k, v in fit.timings.items())
    print(f"profile ({total:.2f} s inside the solver of {ours:.2f} s): {split}")

    rng = np.random.default_rng(args.seed)
    perm = rng.permutation(len(y))
    train, test = perm[: len(y) // 2], perm[len(y) // 2:]
    print("\n| method (train half, test half) | fit time (s) | test error | rank W |")
    print("|---|---|---|---|")
    for name, est in [(f"trace-norm bilinear (proposed), gap {args.tol:g}", BilinearClassifier(C=args.C, tol=args.tol)),
                      ("trace-norm bilinear (proposed), gap 0.01", BilinearClassifier(C=args.C, tol=1e-2)),
                      ("linear SVM on vec(X)", BilinearSVMClassifier(C=args.C)),
                      (f"bilinear SVM, rank {args.rank}", BilinearSVMClassifier(rank=args.rank, C=args.C))]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            est.fit(X[train], y[train])
            elapsed = time.perf_counter() - t0
        err = float((est.predict(X[test]) != y[test]).mean())
        print(f"| {name} | {elapsed:.2f} | {err:.3f} | {est.rank_[0]} |")


if __name__ == "__main__":
    main()
