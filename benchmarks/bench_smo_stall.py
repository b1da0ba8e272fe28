"""The SMO on drawn hard problems at tight tolerances: with and without the stall polish, and libsvm, in one run.

Problems as ``tests/_mkl_testing.make_problem`` builds them (mostly rank-deficient kernel kinds, unnormalized by
10^[-3, 3] half of the time, C = 10^[-2, 4], one class down to one point), the mean kernel, the three forms of
``solve_qp`` (C-SVC with and without bias, nu form), tol = rtol * max(1, C max_i K_ii).  "no polish" is the core
with its stall detection off (``_stall_window`` = 0), i.e. the solver before the fix; scikit-learn's SVC
(libsvm) solves the C-SVC problems with the same tol and iteration limit.

Usage::

    python benchmarks/bench_smo_stall.py                 # 300 problems, rtol 1e-9, max_iter 300,000
    python benchmarks/bench_smo_stall.py --problems 100 --rtol 1e-7
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.svm import SVC

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _mkl_testing import KERNEL_KINDS, make_problem  # noqa: E402

from multikernel.solve import smo  # noqa: E402


def _draw(rng: np.random.Generator):
    n = int(rng.integers(6, 25))
    k = int(rng.integers(1, 5))
    kinds = [str(x) for x in rng.choice(KERNEL_KINDS, size=k)]
    scales = None if rng.random() < 0.5 else [float(x) for x in rng.uniform(-3, 3, size=k)]
    pos = int(rng.integers(1, n))
    pr = make_problem(n=n, positives=pos, kinds=kinds, log10_scales=scales, C=float(10 ** rng.uniform(-2, 4)),
                      seed=int(rng.integers(2**32)))
    mode = str(rng.choice(["bias", "nobias", "nu"]))
    kw = {"p": -np.ones(n), "lower": 0.0, "upper": pr.C}
    if mode == "bias":
        kw["y_sum"] = 0.0
    elif mode == "nu":
        kw = {"p": np.zeros(n), "lower": 0.0, "upper": pr.C, "y_sum": 0.0, "total": pr.C * min(pos, n - pos)}
    return pr, mode, kw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=int, default=300)
    parser.add_argument("--rtol", type=float, default=1e-9)
    parser.add_argument("--max-iter", type=int, default=300_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    window = smo._stall_window
    stats = {name: {"solves": 0, "failed": 0, "time": 0.0, "iters": 0} for name in ("polish", "no polish", "libsvm")}
    polished = 0
    rng = np.random.default_rng(args.seed)
    for _ in range(args.problems):
        pr, mode, kw = _draw(rng)
        K, y = pr.Ks.mean(axis=0), pr.y
        tol = args.rtol * max(1.0, pr.C * float(np.diag(K).max()))
        for name, stall_window in (("polish", window), ("no polish", lambda n: 0)):
            smo._stall_window = stall_window
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = time.process_time()
                res = smo.solve_qp(K, y, tol=tol, max_iter=args.max_iter, **kw)
                s = stats[name]
                s["time"] += time.process_time() - t
            s["solves"] += 1
            s["iters"] += res.n_iter
            s["failed"] += not (res.converged and res.kkt_violation <= tol)
            polished += name == "polish" and res.stats["polish_steps"] > 0
        smo._stall_window = window
        if mode == "bias":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = time.process_time()
                svc = SVC(C=pr.C, kernel="precomputed", tol=tol, max_iter=args.max_iter).fit(K, y)
                s = stats["libsvm"]
                s["time"] += time.process_time() - t
            s["solves"] += 1
            s["iters"] += int(svc.n_iter_[0])
            s["failed"] += int(svc.n_iter_[0]) >= args.max_iter
    print(f"# {args.problems} drawn problems, rtol {args.rtol:g}, max_iter {args.max_iter}, seed {args.seed}; "
          f"{polished} solves polished")
    print("| solver | solves | at the iteration limit (or above tol) | CPU total (s) | iterations total |")
    print("|---|---|---|---|---|")
    for name, s in stats.items():
        print(f"| {name} | {s['solves']} | {s['failed']} | {s['time']:.2f} | {s['iters']} |")


if __name__ == "__main__":
    main()
