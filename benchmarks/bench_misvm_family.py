"""sMIL, stMIL, sbMIL, NSK and STK of the library against the misvm package on the same folds and kernels, in one
process.

10-fold bag-stratified cross-validation (``benchmarks/_mil_data.py``: features standardised on the training
fold's instances).  Kernels, the same for both:

* sMIL, stMIL, sbMIL: one Gaussian kernel, ``gamma = 1/A`` (``A`` the mean squared distance between distinct
  training instances, the library's ``rbf`` builder; misvm is given the fitted value as ``rbf_av``, the bag
  means of Bunescu and Mooney's formulation).  ``C`` weighs each group's mean slack in both (misvm's default
  ``scale_C=True``); sbMIL at ``eta``.
* NSK: the same Gaussian kernel, feature-space normalization (misvm's ``rbf_fs``); ``C`` per bag in both
  (misvm with ``scale_C=False``).
* STK: ``(<s, s'> / (2 d) + 1)^3`` on the bag statistics ``s`` (misvm's ``polynomial``, ``p = 3``, given bags
  scaled by ``1/sqrt(2 d)``; ours with ``standardize=False``); ``C`` per bag in both.

Per data set and method: the mean bag accuracy of each on the folds both finished, seconds per fold, the ratio
of misvm's time to ours, and, for the convex ones (sMIL, NSK, STK), the largest difference of the decision
values without the offset on the test fold relative to their largest magnitude (the same weights up to the
solvers' tolerances).  ``--peer-budget`` caps misvm's total seconds per method and data set: once spent, its
remaining folds are skipped (the table says on how many folds both ran).  misvm needs cvxopt and, on numpy 2,
the fixes of ``float`` of 1 x 1 matrices (``svm.py``, ``nsk.py``, ``sil.py``) and of ``stmil.py``'s
``map`` (a Python 3 iterator, used up by its first pass: "need at least one array to concatenate"); when it
cannot be imported the script runs ours alone.

    OMP_NUM_THREADS=1 PYTHONPATH=../peers/misvm-src python benchmarks/bench_misvm_family.py \\
        --datasets musk1 elephant musk2 --peer-budget 600
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mil_data import DEFAULT_DATA, as_bags, mil_folds, misvm  # noqa: E402

from multikernel import create  # noqa: E402
from multikernel.iokl.set_kernels import NSK, STK  # noqa: E402
from multikernel.iokl.sparse_mil import sbMIL, sMIL, stMIL  # noqa: E402

METHODS = ("sMIL", "stMIL", "sbMIL", "NSK", "STK")


def ours_model(method: str, args: argparse.Namespace, n_features: int):
    rbf = [create("kernel", "rbf")]
    if method == "sMIL":
        return sMIL(kernels=rbf, C=args.C_sparse)
    if method == "stMIL":
        return stMIL(kernels=rbf, C=args.C_sparse, max_iter=50)
    if method == "sbMIL":
        return sbMIL(kernels=rbf, C=args.C_sparse, eta=args.eta)
    if method == "NSK":
        return NSK(kernels=rbf, C=args.C_bags)
    return STK(kernels=[create("kernel", "poly", degree=3, gamma=1.0 / (2 * n_features), coef0=1.0)],
               C=args.C_bags, standardize=False)


def peer_model(method: str, args: argparse.Namespace, gamma: float | None):
    common = {"verbose": False}
    if method == "sMIL":
        return misvm.sMIL(kernel="rbf_av", gamma=gamma, C=args.C_sparse, **common)
    if method == "stMIL":
        return misvm.stMIL(kernel="rbf_av", gamma=gamma, C=args.C_sparse, max_iters=50, **common)
    if method == "sbMIL":
        return misvm.sbMIL(kernel="rbf_av", gamma=gamma, C=args.C_sparse, eta=args.eta, **common)
    if method == "NSK":
        return misvm.NSK(kernel="rbf_fs", gamma=gamma, C=args.C_bags, scale_C=False, **common)
    return misvm.STK(kernel="polynomial", p=3, C=args.C_bags, scale_C=False, **common)


def offsetless(method: str, ours, peer, Xte: np.ndarray, ite: np.ndarray, scale: float) -> float | None:
    """max |f_ours - f_misvm| / max |f_ours| of the decision values without the offset (convex methods)."""
    if method == "sMIL":
        mine = ours._decide(ours._cross(Xte)[:, ours.support_rows_]) - ours.intercept_
        theirs = np.asarray(peer.predict([x[None, :] for x in Xte])).ravel() - peer._b
    elif method in ("NSK", "STK"):
        mine = ours.decision_function(Xte, ite) - ours.intercept_
        theirs = np.asarray(peer.predict([b * scale for b in as_bags(Xte, ite)])).ravel() - peer._b
    else:
        return None
    return float(np.max(np.abs(mine - theirs)) / max(np.max(np.abs(mine)), 1e-300))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--datasets", nargs="+", default=["musk1", "elephant"])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--C-sparse", type=float, default=100.0, help="C of sMIL, stMIL, sbMIL (mean slacks)")
    parser.add_argument("--C-bags", type=float, default=10.0, help="C of NSK and STK (per bag)")
    parser.add_argument("--eta", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--peer-budget", type=float, default=float("inf"),
                        help="misvm's seconds per method and data set; its remaining folds are skipped after")
    args = parser.parse_args()
    if misvm is None:
        print("misvm is not importable: the library's estimators only")
    print("| data set | method | folds | ours % | misvm % | ours s/fold | misvm s/fold | misvm / ours time | "
          "max rel. diff of f - b |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        folds = list(mil_folds(Path(args.data) / f"{name}.csv", args.seed))
        for method in args.methods:
            runs, diffs, spent = [], [], 0.0  # per fold: (ours accuracy, ours s, misvm accuracy, misvm s)
            for Xtr, itr, ytr, Xte, ite, yte in folds:
                ours = ours_model(method, args, Xtr.shape[1])
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ours.fit(Xtr, ytr, itr)
                    pred = ours.predict(Xte, ite)
                run = [float(np.mean(pred == np.where(yte > 0, 1, -1))), time.perf_counter() - t0, None, None]
                runs.append(run)
                if misvm is None or spent > args.peer_budget:
                    continue
                gamma = ours.kernel_set_.builders[0].gamma_ if method != "STK" else None
                scale = 1.0 / np.sqrt(2 * Xtr.shape[1]) if method == "STK" else 1.0
                peer = peer_model(method, args, gamma)
                yb_tr = pd.Series(ytr).groupby(itr).first().to_numpy()
                t0 = time.perf_counter()
                with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                    warnings.simplefilter("ignore")
                    peer.fit([b * scale for b in as_bags(Xtr, itr)], np.where(yb_tr > 0, 1.0, -1.0))
                    scores = np.asarray(peer.predict([b * scale for b in as_bags(Xte, ite)])).ravel()
                run[3] = time.perf_counter() - t0
                spent += run[3]
                run[2] = float(np.mean(np.where(scores > 0, 1, -1) == np.where(yte > 0, 1, -1)))
                with contextlib.redirect_stdout(io.StringIO()):
                    d = offsetless(method, ours, peer, Xte, ite, scale)
                if d is not None:
                    diffs.append(d)
            both = [r for r in runs if r[2] is not None]
            if both:
                a_ours, t_ours, a_peer, t_peer = (np.array(c, dtype=float) for c in zip(*both, strict=True))
                diff = f"{max(diffs):.1e}" if diffs else "n/a"
                print(f"| {name} | {method} | {len(both)} | {100 * a_ours.mean():.1f} | {100 * a_peer.mean():.1f} | "
                      f"{t_ours.mean():.2f} | {t_peer.mean():.2f} | {t_peer.sum() / t_ours.sum():.1f} | {diff} |",
                      flush=True)
            if len(both) < len(runs):
                a_ours, t_ours = (np.array([r[k] for r in runs]) for k in (0, 1))
                print(f"| {name} | {method} | {len(runs)} (ours) | {100 * a_ours.mean():.1f} | n/a | "
                      f"{t_ours.mean():.2f} | n/a | n/a | n/a |", flush=True)


if __name__ == "__main__":
    main()
