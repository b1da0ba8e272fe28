"""MI-SVM and mi-SVM of the library against the misvm package on the same folds and kernel, in one process.

10-fold bag-stratified cross-validation (``StratifiedKFold(10, shuffle=True, random_state=seed)`` over the
bags), features standardised on the training fold's instances, one Gaussian kernel with ``gamma = 1/A`` (``A``
the mean squared distance between distinct training instances, the library's ``rbf`` builder; misvm is given
the fitted value).  ``C`` is per sample for both (misvm runs with ``scale_C=False``; its default divides ``C``
by the number of SVM samples, and ``--scale-C`` compares at that: ours then runs at ``C`` over the same number,
the same box on every dual variable).  ``--inner-cv C1 C2 ...`` chooses ``C`` on each training fold instead, for
each library with its own fits: 3-fold bag-stratified cross-validation over the training bags, the best mean
bag accuracy (ties: the smaller C), then a refit at that C; the times include the selection.  Per data set and
method: mean bag accuracy of each, seconds per fold, and the ratio of misvm's time to ours.  misvm needs cvxopt
and, on numpy 2, a one-line fix (``float`` of a 1 x 1 matrix in ``SVM._compute_separator``); when it cannot be
imported the script runs ours alone.  ``--max-iter`` caps both alternations (misvm's ``max_iters``).
``--intercept RULE ...`` runs ours with each bias rule (``optimal``, the SVM's optimum, the default; ``support_mean``,
misvm's mean over all support vectors), one row each against the same misvm run; ``--per-fold`` also prints each
fold's accuracy (for paired comparisons over ``--seed``).
``--instance-level P1 P2 ...`` also runs the library's instance-level IOKL MIL (MIL-CPB, no peer) at its defaults
with these portions, on the same folds, and its seconds per fold (fit and prediction).

    OMP_NUM_THREADS=1 python benchmarks/bench_mil_baselines.py --data ../shared/data/mil --datasets musk1 elephant
    OMP_NUM_THREADS=1 python benchmarks/bench_mil_baselines.py --datasets musk1 --inner-cv 0.1 1 10 100
    OMP_NUM_THREADS=1 python benchmarks/bench_mil_baselines.py --datasets musk1 --C 10 --intercept optimal support_mean
    OMP_NUM_THREADS=1 python benchmarks/bench_mil_baselines.py --datasets musk1 --instance-level 0 0.5
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mil_data import DEFAULT_DATA, as_bags, bag_labels, mil_folds, misvm  # noqa: E402

from multikernel import create  # noqa: E402
from multikernel.iokl import IOKLMultipleInstanceClassifier  # noqa: E402
from multikernel.iokl.baselines import MISVM, miSVM  # noqa: E402


def fit_ours(cls: type, C: float, max_iter: int, intercept: str, X: np.ndarray, ids: np.ndarray, y: np.ndarray):
    return cls(kernels=[create("kernel", "rbf")], C=C, max_iter=max_iter, intercept=intercept).fit(X, y, ids)


def fit_peer(name: str, C: float, max_iter: int, gamma: float, scale_C: bool, X: np.ndarray, ids: np.ndarray,
             y: np.ndarray):
    peer = getattr(misvm, name)(kernel="rbf", gamma=gamma, C=C, max_iters=max_iter, scale_C=scale_C, verbose=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peer.fit(as_bags(X, ids), bag_labels(y, ids))
    return peer


def predict_ours(model, X: np.ndarray, ids: np.ndarray) -> np.ndarray:
    return np.where(model.predict(X, ids) > 0, 1, -1)


def predict_peer(model, X: np.ndarray, ids: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.where(model.predict(as_bags(X, ids)) > 0, 1, -1)


def choose_C(fit, predict, Cs: list[float], X: np.ndarray, ids: np.ndarray, y: np.ndarray, seed: int) -> float:
    """The C of the best 3-fold bag accuracy on the training bags (ties: the smaller C)."""
    uniq = np.unique(ids)
    yb = bag_labels(y, ids)
    scores = []
    for C in Cs:
        acc = []
        for tr, te in StratifiedKFold(3, shuffle=True, random_state=seed).split(uniq, yb):
            itr, ite = np.isin(ids, uniq[tr]), np.isin(ids, uniq[te])
            model = fit(C, X[itr], ids[itr], y[itr])
            acc.append(np.mean(predict(model, X[ite], ids[ite]) == yb[te]))
        scores.append(np.mean(acc))
    return Cs[int(np.argmax(scores))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--datasets", nargs="+", default=["musk1", "elephant"])
    parser.add_argument("--C", type=float, default=1.0, help="the per-sample C of both")
    parser.add_argument("--scale-C", action="store_true", help="misvm's default: C over its number of SVM samples")
    parser.add_argument("--inner-cv", nargs="+", type=float, metavar="C",
                        help="choose C from these values by 3-fold CV on each training fold, for each library")
    parser.add_argument("--max-iter", type=int, default=50, help="the alternations' cap (misvm's max_iters)")
    parser.add_argument("--instance-level", nargs="+", type=float, metavar="PORTION", default=[],
                        help="also run instance-level IOKL MIL (MIL-CPB) at its defaults with these portions")
    parser.add_argument("--intercept", nargs="+", choices=["optimal", "support_mean"], default=["optimal"],
                        help="the bias rules of ours, a row each")
    parser.add_argument("--per-fold", action="store_true", help="also print each fold's accuracy")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if misvm is None:
        print("misvm is not importable: the library's baselines only")
    print("| data set | method | intercept | ours % | misvm % | ours s/fold | misvm s/fold | misvm / ours time |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        rows = {m: {"ours": {r: [] for r in args.intercept}, "t_ours": dict.fromkeys(args.intercept, 0.0),
                    "C_ours": {r: [] for r in args.intercept}, "peer": [], "t_peer": 0.0, "C_peer": []}
                for m in ("MI-SVM", "mi-SVM")}
        cpb = {portion: [] for portion in args.instance_level}
        t_cpb = dict.fromkeys(args.instance_level, 0.0)
        for Xtr, itr, ytr, Xte, ite, yte in mil_folds(Path(args.data) / f"{name}.csv", args.seed):
            for portion in args.instance_level:
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = IOKLMultipleInstanceClassifier(level="instance", portion=portion).fit(Xtr, ytr, itr)
                cpb[portion].append(np.mean(predict_ours(model, Xte, ite) == yte))
                t_cpb[portion] += time.perf_counter() - t0
            yb_tr = bag_labels(ytr, itr)
            n_pos_bags = int(np.sum(yb_tr > 0))
            n_neg_inst = int(np.sum(ytr < 0))
            samples = {"MI-SVM": n_pos_bags + n_neg_inst, "mi-SVM": len(Xtr)}  # misvm's SVM sizes
            for method, ours_cls, peer_name in (("MI-SVM", MISVM, "MISVM"), ("mi-SVM", miSVM, "miSVM")):
                r = rows[method]
                scale = 1.0 / samples[method] if args.scale_C else 1.0

                for rule in args.intercept:
                    def ours_fit(C, X, ids, y, cls=ours_cls, scale=scale, rule=rule):
                        return fit_ours(cls, C * scale, args.max_iter, rule, X, ids, y)

                    t0 = time.perf_counter()
                    C = args.C if args.inner_cv is None else choose_C(ours_fit, predict_ours, args.inner_cv, Xtr,
                                                                      itr, ytr, args.seed)
                    ours = ours_fit(C, Xtr, itr, ytr)
                    pred = predict_ours(ours, Xte, ite)
                    r["t_ours"][rule] += time.perf_counter() - t0
                    r["ours"][rule].append(np.mean(pred == yte))
                    r["C_ours"][rule].append(C)
                if misvm is None:
                    continue
                gamma = ours.kernel_set_.builders[0].gamma_

                def peer_fit(C, X, ids, y, name=peer_name, gamma=gamma):
                    return fit_peer(name, C, args.max_iter, gamma, args.scale_C, X, ids, y)

                t0 = time.perf_counter()
                C = args.C if args.inner_cv is None else choose_C(peer_fit, predict_peer, args.inner_cv, Xtr, itr,
                                                                  ytr, args.seed)
                peer = peer_fit(C, Xtr, itr, ytr)
                pred = predict_peer(peer, Xte, ite)
                r["t_peer"] += time.perf_counter() - t0
                r["peer"].append(np.mean(pred == yte))
                r["C_peer"].append(C)
        for method, r in rows.items():
            for rule in args.intercept:
                acc, n = r["ours"][rule], len(r["ours"][rule])
                peer = f"{100 * np.mean(r['peer']):.1f}" if r["peer"] else "n/a"
                t_peer = f"{r['t_peer'] / n:.2f}" if r["peer"] else "n/a"
                ratio = f"{r['t_peer'] / r['t_ours'][rule]:.2f}" if r["peer"] else "n/a"
                print(f"| {name} | {method} | {rule} | {100 * np.mean(acc):.1f} | {peer} | "
                      f"{r['t_ours'][rule] / n:.2f} | {t_peer} | {ratio} |", flush=True)
                if args.inner_cv is not None:
                    print(f"  C chosen per fold, ours ({rule}) {r['C_ours'][rule]}, misvm {r['C_peer']}", flush=True)
                if args.per_fold:
                    print(f"  per fold %, ours ({rule}) {[round(100 * float(a), 1) for a in acc]}", flush=True)
            if args.per_fold and r["peer"]:
                print(f"  per fold %, misvm {[round(100 * float(a), 1) for a in r['peer']]}", flush=True)
        for portion, acc in cpb.items():
            print(f"| {name} | MIL-CPB, portion {portion:g} | {100 * np.mean(acc):.1f} | n/a | "
                  f"{t_cpb[portion] / len(acc):.2f} | | |  per fold {[round(100 * a) for a in acc]}", flush=True)


if __name__ == "__main__":
    main()
