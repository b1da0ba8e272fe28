"""MI-SVM and mi-SVM of the library against the misvm package on the same folds and kernel, in one process.

10-fold bag-stratified cross-validation (``StratifiedKFold(10, shuffle=True, random_state=seed)`` over the
bags), features standardised on the training fold's instances, one Gaussian kernel with ``gamma = 1/A`` (``A``
the mean squared distance between distinct training instances, the library's ``rbf`` builder; misvm is given
the fitted value).  ``C`` is per sample for both (misvm runs with ``scale_C=False``; its default divides ``C``
by the number of SVM samples, and ``--scale-C`` compares at that: ours then runs at ``C`` over the same number,
the same box on every dual variable).  Per data set and method: mean bag accuracy of each, seconds per fold, and the
ratio of misvm's time to ours.  misvm needs cvxopt and, on numpy 2, a one-line fix (``float`` of a 1 x 1
matrix in ``SVM._compute_separator``); when it cannot be imported the script runs ours alone.

    OMP_NUM_THREADS=1 python benchmarks/bench_mil_baselines.py --data ../shared/data/mil --datasets musk1 elephant
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mil_data import DEFAULT_DATA, as_bags, mil_folds, misvm  # noqa: E402

from multikernel import create  # noqa: E402
from multikernel.iokl.baselines import MISVM, miSVM  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--datasets", nargs="+", default=["musk1", "elephant"])
    parser.add_argument("--C", type=float, default=1.0, help="the per-sample C of both")
    parser.add_argument("--scale-C", action="store_true", help="misvm's default: C over its number of SVM samples")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if misvm is None:
        print("misvm is not importable: the library's baselines only")
    print("| data set | method | ours % | misvm % | ours s/fold | misvm s/fold | misvm / ours time |")
    print("|---|---|---|---|---|---|---|")
    for name in args.datasets:
        rows = {m: {"ours": [], "peer": [], "t_ours": 0.0, "t_peer": 0.0} for m in ("MI-SVM", "mi-SVM")}
        for Xtr, itr, ytr, Xte, ite, yte in mil_folds(Path(args.data) / f"{name}.csv", args.seed):
            yb_tr = pd.Series(ytr).groupby(itr).first().to_numpy()
            n_pos_bags = int(np.sum(yb_tr > 0))
            n_neg_inst = int(np.sum(ytr < 0))
            samples = {"MI-SVM": n_pos_bags + n_neg_inst, "mi-SVM": len(Xtr)}  # misvm's SVM sizes
            for method, ours_cls, peer_name in (("MI-SVM", MISVM, "MISVM"), ("mi-SVM", miSVM, "miSVM")):
                r = rows[method]
                C = args.C / samples[method] if args.scale_C else args.C
                ours = ours_cls(kernels=[create("kernel", "rbf")], C=C, max_iter=50)
                t0 = time.perf_counter()
                ours.fit(Xtr, ytr, itr)
                pred = ours.predict(Xte, ite)
                r["t_ours"] += time.perf_counter() - t0
                r["ours"].append(np.mean(pred == yte))
                if misvm is None:
                    continue
                gamma = ours.kernel_set_.builders[0].gamma_
                peer = getattr(misvm, peer_name)(kernel="rbf", gamma=gamma, C=args.C, max_iters=50,
                                                     scale_C=args.scale_C, verbose=False)
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    peer.fit(as_bags(Xtr, itr), np.where(yb_tr > 0, 1.0, -1.0))
                    scores = peer.predict(as_bags(Xte, ite))
                r["t_peer"] += time.perf_counter() - t0
                r["peer"].append(np.mean(np.where(scores > 0, 1, -1) == yte))
        for method, r in rows.items():
            n = len(r["ours"])
            peer = f"{100 * np.mean(r['peer']):.1f}" if r["peer"] else "n/a"
            t_peer = f"{r['t_peer'] / n:.2f}" if r["peer"] else "n/a"
            ratio = f"{r['t_peer'] / r['t_ours']:.2f}" if r["peer"] else "n/a"
            print(f"| {name} | {method} | {100 * np.mean(r['ours']):.1f} | {peer} | {r['t_ours'] / n:.2f} | {t_peer} | "
                  f"{ratio} |", flush=True)


if __name__ == "__main__":
    main()
