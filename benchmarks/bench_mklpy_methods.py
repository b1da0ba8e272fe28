"""MKLpy's kernel-combination methods against ours on the same precomputed kernels, in one run.

The kernels, splits and labels are those of ``bench_mklpy.py`` (its ``prepare``: the ``simplemkl`` family,
trace-normalized, 70% stratified training split; ``--splits N`` takes seeds 0 to N - 1, and the table gives
the mean test accuracy and the total fit time over the splits).  Pairs (ours / MKLpy 0.6), every one ending
with a C-SVC of the same C (ours: the loss's SVM at the weights, certified to 1e-3; MKLpy: ``learner=SVC(C)``):

    cka / CKA, alignf / CKA (MKLpy's CKA is the unconstrained ALIGNF), fheuristic / FHeuristic,
    pwmk / PWMK (delta 0, 3 folds), gram / GRAM, rmkl / RMKL (C), memo / MEMO (theta 0)

MKLpy's iterative methods run ``--peer-iter`` steps (its default is 1000, minutes per fit with two cvxopt
QPs a step); ours stop at their own tolerance (``tol = 1e-3``, ``max_iter = 200``).  Besides time and test
accuracy the table gives the largest difference between the two weight vectors (both scaled to sum 1).
MKLpy is not a dependency of multikernel: create its environment with

    python3 -m venv /work/venv-peers-mklpy; /work/venv-peers-mklpy/bin/pip install MKLpy==0.6 torch cvxopt

and run from the repository root (both sides on one thread)::

    python benchmarks/bench_mklpy_methods.py [--sets heart,ionosphere,pima-diabetes] [--C 10] [--splits 1]
        [--methods cka,alignf,fheuristic,pwmk,gram,rmkl,memo] [--peer-iter 100] [--skip-peer CKA]
        [--mklpy-python /work/venv-peers-mklpy/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mklpy import ROOT, prepare  # noqa: E402  (the kernels both benchmarks share)

PEERS = {"cka": "CKA", "alignf": "CKA", "fheuristic": "FHeuristic", "pwmk": "PWMK", "gram": "GRAM", "rmkl": "RMKL",
         "memo": "MEMO"}


def mklpy_worker(folder: str, C: float, repeats: int, peer_iter: int, methods: list[str], skip: set[str]) -> None:
    import contextlib
    import io

    import torch
    from MKLpy.algorithms import CKA, GRAM, MEMO, PWMK, RMKL, FHeuristic
    from sklearn.svm import SVC

    torch.set_num_threads(1)
    d = Path(folder)
    Ktr, Kte = np.load(d / "K_train.npy"), np.load(d / "K_test.npy")
    ytr, yte = np.load(d / "y_train.npy"), np.load(d / "y_test.npy")
    KL, KLte = [torch.from_numpy(K) for K in Ktr], [torch.from_numpy(K) for K in Kte]
    makers = {
        "CKA": lambda: CKA(learner=SVC(C=C)),
        "FHeuristic": lambda: FHeuristic(learner=SVC(C=C)),
        "PWMK": lambda: PWMK(learner=SVC(C=C), delta=0, cv=3),
        "GRAM": lambda: GRAM(learner=SVC(C=C), max_iter=peer_iter),
        "RMKL": lambda: RMKL(learner=SVC(C=C), C=C, max_iter=peer_iter),
        "MEMO": lambda: MEMO(learner=SVC(C=C), theta=0.0, max_iter=peer_iter),
    }
    out = {}
    for name in dict.fromkeys(PEERS[m] for m in methods if PEERS[m] not in skip):
        try:
            times = []
            for _ in range(repeats):
                clf = makers[name]()
                t = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):  # MEMO prints its shapes
                    clf.fit(KL, torch.from_numpy(ytr))
                times.append(time.perf_counter() - t)
            w = np.asarray(clf.solution.weights, dtype=np.float64)
            out[name] = {"time": min(times), "accuracy": float(np.mean(np.asarray(clf.predict(KLte)) == yte)),
                         "weights": (w / w.sum()).tolist(), "negative": int((w < 0).sum())}
        except Exception as exc:  # noqa: BLE001 - every failure is a result to report
            out[name] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
    print(json.dumps(out))


def ours(folder: Path, C: float, repeats: int, methods: list[str]) -> dict[str, dict]:
    import warnings

    from multikernel import MKLClassifier

    Ktr, Kte = np.load(folder / "K_train.npy"), np.load(folder / "K_test.npy")
    ytr, yte = np.load(folder / "y_train.npy"), np.load(folder / "y_test.npy")
    out = {}
    for method in methods:
        times = []
        for _ in range(repeats):
            clf = MKLClassifier(kernels="precomputed", method=method, C=C, tol=1e-3, max_iter=200)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                t = time.perf_counter()
                clf.fit(Ktr, ytr)
                times.append(time.perf_counter() - t)
        out[method] = {"time": min(times), "accuracy": float(np.mean(clf.predict(Kte) == yte)),
                       "weights": clf.weights_, "iterations": int(clf.n_iter_),
                       "warned": any("max_iter" in str(w.message) for w in caught)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="heart,ionosphere,pima-diabetes")
    ap.add_argument("--C", type=float, default=10.0)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--splits", type=int, default=1, help="stratified 70/30 splits, seeds 0 .. splits - 1")
    ap.add_argument("--methods", default=",".join(PEERS))
    ap.add_argument("--peer-iter", type=int, default=100, help="max_iter of MKLpy's GRAM, RMKL and MEMO")
    ap.add_argument("--skip-peer", default="", help="MKLpy methods not to run (CKA costs M^2 n^3: 100 s on heart)")
    ap.add_argument("--mklpy-python", default="/work/venv-peers-mklpy/bin/python")
    ap.add_argument("--data-dir", default=os.environ.get("MULTIKERNEL_DATA", str(ROOT.parent / "shared" / "data")))
    ap.add_argument("--mklpy-worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    methods = args.methods.split(",")
    if args.mklpy_worker:
        mklpy_worker(args.mklpy_worker, args.C, args.repeats, args.peer_iter, methods, set(args.skip_peer.split(",")))
        return
    os.environ["OMP_NUM_THREADS"] = "1"
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    print(f"# {platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; C = {args.C}, "
          f"{args.splits} split(s), best of {args.repeats}; one thread each side; MKLpy's iterative methods "
          f"{args.peer_iter} steps")
    print("| data set | n | M | ours | time (s) | acc | MKLpy | time (s) | acc | ratio ours/MKLpy | max weight diff |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.sets.split(","):
        mine: dict[str, list[dict]] = {m: [] for m in methods}
        theirs: dict[str, list[dict]] = {PEERS[m]: [] for m in methods}
        for seed in range(args.splits):
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp)
                n, M = prepare(name, Path(args.data_dir), folder, seed)
                for method, result in ours(folder, args.C, args.repeats, methods).items():
                    mine[method].append(result)
                run = subprocess.run([args.mklpy_python, __file__, "--mklpy-worker", str(folder), "--C", str(args.C),
                                      "--repeats", str(args.repeats), "--peer-iter", str(args.peer_iter),
                                      "--methods", args.methods, "--skip-peer", args.skip_peer],
                                     capture_output=True, text=True)
                try:
                    peer = json.loads(run.stdout.strip().splitlines()[-1])
                except (json.JSONDecodeError, IndexError):
                    err = (run.stderr.strip().splitlines() or ["no output"])[-1]
                    peer = {PEERS[m]: {"error": err} for m in methods}
                for key in theirs:
                    theirs[key].append(peer.get(key, {"error": "not run (--skip-peer)"}))
        for method in methods:
            a, peer = mine[method], PEERS[method]
            time_a, acc_a = sum(r["time"] for r in a), np.mean([r["accuracy"] for r in a])
            steps = "/".join(str(r["iterations"]) for r in a) + (", max_iter" if any(r["warned"] for r in a) else "")
            label = f"{method} ({steps} it.)"
            failed = [r["error"] for r in theirs[peer] if "error" in r]
            if failed:
                print(f"| {name} | {n} | {M} | {label} | {time_a:.3f} | {acc_a:.3f} | {peer} | "
                      f"failed ({len(failed)}/{args.splits}): {failed[0]} | | | |")
                continue
            b = theirs[peer]
            time_b, acc_b = sum(r["time"] for r in b), np.mean([r["accuracy"] for r in b])
            diff = max(float(np.abs(np.asarray(r["weights"]) - x["weights"]).max()) for r, x in zip(b, a, strict=True))
            neg = max(r["negative"] for r in b)
            neg = f" ({neg} negative)" if neg else ""
            print(f"| {name} | {n} | {M} | {label} | {time_a:.3f} | {acc_a:.3f} | {peer}{neg} | {time_b:.3f} | "
                  f"{acc_b:.3f} | {time_a / time_b:.2f} | {diff:.1e} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
