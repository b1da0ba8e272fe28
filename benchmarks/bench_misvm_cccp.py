"""MissSVM and MICA of the library against the misvm package on the same folds and kernel, in one process.

The folds and the kernel are those of ``bench_mil_baselines.py``: 10-fold bag-stratified cross-validation
(``StratifiedKFold(10, shuffle=True, random_state=seed)`` over the bags), features standardised on the training
fold's instances, one Gaussian kernel with ``gamma = 1/A`` (``A`` the mean squared distance between distinct
training instances, the library's ``rbf`` builder; misvm is given the fitted value), ``C`` per sample for both
(misvm with ``scale_C=False``).  misvm's MICA is the l2 form (a QP per step, cvxopt, then a GLPK linear programme
for the combinations), so it is compared with ``MICA(regularizer="l2")``; the library's l1 form (the paper's) has
no peer and is reported alone.  ``--peer-folds`` caps the folds misvm runs on (its MissSVM solves a dense cvxopt
QP over ``X_p + 2 L_p + L_n`` variables per CCCP step); the library runs on the same folds, so every ratio is on
common folds.

misvm's decision offset for MICA and MissSVM (``MICA._compute_separator``) subtracts the sum of the decision values
over *all* training instances, not over the support vectors; the column "misvm, SVM bias" re-scores misvm's own
final model with the mean of ``y_u - f(u)`` over its support units (its SVM class's rule), without refitting.
GLPK and cvxopt print to the C-level stdout: the peer's fits run with file descriptors 1 and 2 on /dev/null.

    OMP_NUM_THREADS=1 PYTHONPATH=/path/to/misvm python benchmarks/bench_misvm_cccp.py --datasets musk1 elephant
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mil_data import DEFAULT_DATA, as_bags, bag_labels, mil_folds, misvm  # noqa: E402

from multikernel import create  # noqa: E402
from multikernel.iokl import MICA, MissSVM  # noqa: E402

METHODS = {  # label: (our class, its parameters, the name of misvm's class or None)
    "MissSVM": (MissSVM, {}, "MissSVM"),
    "MICA l2": (MICA, {"regularizer": "l2"}, "MICA"),
    "MICA l1": (MICA, {"regularizer": "l1"}, None),
}


@contextlib.contextmanager
def _silenced() -> Iterator[None]:
    """stdout and stderr of C code (GLPK, cvxopt) and Python on /dev/null."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)


def _svm_bias(peer) -> float:
    """The mean of ``y_u - f(u)`` over the support units of misvm's fitted MICA / MissSVM model."""
    from misvm.kernel import by_name

    K = by_name(peer.kernel, gamma=peer.gamma, p=peer.p)(peer._X, peer._X)
    alphas = np.asarray(peer._alphas).ravel()
    y = np.asarray(peer._y).ravel()
    f_instances = np.asarray(K @ (peer._V.T @ (alphas * y))).ravel()
    f_units = np.asarray(peer._V @ f_instances).ravel()
    sv = alphas > peer.sv_cutoff
    return float(np.mean(y[sv] - f_units[sv]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--datasets", nargs="+", default=["musk1", "elephant"])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--C", type=float, default=1.0, help="the per-sample C of both")
    parser.add_argument("--peer-folds", type=int, default=10, help="folds misvm runs on (the first ones)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if misvm is None:
        print("misvm is not importable: the library's estimators only")
    print("| data set | method | folds | ours % | misvm % | misvm, SVM bias % | ours s/fold | misvm s/fold | "
          "misvm / ours time |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        rows = {m: {"ours": [], "peer": [], "fixed": [], "t_ours": 0.0, "t_peer": 0.0} for m in args.methods}
        for k, (Xtr, itr, ytr, Xte, ite, yte) in enumerate(mil_folds(Path(args.data) / f"{name}.csv", args.seed)):
            if k >= args.peer_folds:
                break
            for method in args.methods:
                cls, params, peer_name = METHODS[method]
                r = rows[method]
                ours = cls(kernels=[create("kernel", "rbf")], C=args.C, **params)
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ours.fit(Xtr, ytr, itr)
                pred = ours.predict(Xte, ite)
                r["t_ours"] += time.perf_counter() - t0
                r["ours"].append(np.mean(pred == yte))
                if misvm is None or peer_name is None:
                    continue
                gamma = ours.kernel_set_.builders[0].gamma_
                peer = getattr(misvm, peer_name)(kernel="rbf", gamma=gamma, C=args.C, max_iters=50,
                                                 scale_C=False, verbose=False)
                t0 = time.perf_counter()
                with _silenced():
                    peer.fit(as_bags(Xtr, itr), bag_labels(ytr, itr))
                    scores = np.asarray(peer.predict(as_bags(Xte, ite))).ravel()
                r["t_peer"] += time.perf_counter() - t0
                r["peer"].append(np.mean(np.where(scores > 0, 1, -1) == yte))
                fixed = scores - float(peer._b) + _svm_bias(peer)
                r["fixed"].append(np.mean(np.where(fixed > 0, 1, -1) == yte))
        for method, r in rows.items():
            n = len(r["ours"])
            has_peer = bool(r["peer"])
            peer = f"{100 * np.mean(r['peer']):.1f}" if has_peer else "n/a"
            fixed = f"{100 * np.mean(r['fixed']):.1f}" if has_peer else "n/a"
            t_peer = f"{r['t_peer'] / n:.2f}" if has_peer else "n/a"
            ratio = f"{r['t_peer'] / r['t_ours']:.1f}" if has_peer else "n/a"
            print(f"| {name} | {method} | {n} | {100 * np.mean(r['ours']):.1f} | {peer} | {fixed} | "
                  f"{r['t_ours'] / n:.2f} | {t_peer} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
