"""multikernel against MKLpy 0.6 on the same precomputed kernels, in one run.

For each binary data set (70% training split, seed 0, features standardized on the training part) the
``simplemkl`` family of kernels (Gaussian and polynomial kernels on every feature and on all features,
trace-normalized) is computed once by multikernel and written as ``.npy`` files; both libraries then fit
on exactly these kernels:

* ours (this virtual environment): ``MKLClassifier(kernels="precomputed")`` with ``average``, ``easymkl``
  (lam 0.1) and ``l1mkl`` to a certified gap of 1e-3, on the (M, n, n) array (checked as user kernels are);
  ``average (stack)`` is the same fit from a ``DenseStack`` (how a stack built by ``KernelSet`` arrives: no
  checks of user kernels, which MKLpy does not make either);
* MKLpy (its own virtual environment, in a subprocess): ``AverageMKL``, ``EasyMKL`` (lam 0.1) and ``GRAM``
  (``max_iter = --gram-iter``, 100 by default where MKLpy's is 1000: each iteration solves two cvxopt QPs,
  and 1000 take many minutes; timed once), each with ``sklearn.svm.SVC(C)`` as the final learner (so both
  sides end with a C-SVC of the same C).

Both sides run on ``--threads`` threads (1 by default: on a shared, overloaded machine torch's two intra-op
threads made AverageMKL 10-50x slower than on one, which would flatter us).  Fit times are the best of
``--repeats`` fits (the inputs prepared before timing: a (M, n, n) array for us, a
list of torch tensors for MKLpy); test accuracy is on the 30% held out.  An MKLpy failure is recorded with
its error text.  MKLpy is not a dependency of multikernel: create its environment with

    python3 -m venv /work/venv_mklpy; /work/venv_mklpy/bin/pip install MKLpy==0.6 torch==2.13.0

and run from the repository root::

    python benchmarks/bench_mklpy.py [--sets heart,ionosphere,pima-diabetes] [--C 10] [--repeats 3]
        [--mklpy-python /work/venv_mklpy/bin/python] [--data-dir ../shared/data]
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

ROOT = Path(__file__).resolve().parents[1]
PAIRS = (("average", "AverageMKL"), ("easymkl", "EasyMKL"), ("l1mkl", "GRAM"))


# --------------------------------------------------------------------------------------------------
# MKLpy's side: runs in MKLpy's environment (no multikernel import)
# --------------------------------------------------------------------------------------------------
def mklpy_worker(folder: str, C: float, repeats: int, gram_iter: int, threads: int, methods: list[str]) -> None:
    import torch
    from MKLpy.algorithms import GRAM, AverageMKL, EasyMKL
    from sklearn.svm import SVC

    torch.set_num_threads(threads)
    d = Path(folder)
    Ktr, Kte = np.load(d / "K_train.npy"), np.load(d / "K_test.npy")
    ytr, yte = np.load(d / "y_train.npy"), np.load(d / "y_test.npy")
    KL = [torch.from_numpy(K) for K in Ktr]
    KLte = [torch.from_numpy(K) for K in Kte]
    makers = {
        "AverageMKL": lambda: AverageMKL(learner=SVC(C=C)),
        "EasyMKL": lambda: EasyMKL(learner=SVC(C=C), lam=0.1),
        "GRAM": lambda: GRAM(learner=SVC(C=C), max_iter=gram_iter),
    }
    out = {}
    peers = {peer for method, peer in PAIRS if method in methods}
    for name, make in makers.items():
        if name not in peers:
            continue
        try:
            times = []
            for _ in range(1 if name == "GRAM" else repeats):  # GRAM: minutes per fit
                clf = make()
                t = time.perf_counter()
                clf.fit(KL, torch.from_numpy(ytr))
                times.append(time.perf_counter() - t)
            pred = np.asarray(clf.predict(KLte))
            out[name] = {"time": min(times), "accuracy": float(np.mean(pred == yte))}
        except Exception as exc:  # noqa: BLE001 - every failure is a result to report
            out[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    print(json.dumps(out))


# --------------------------------------------------------------------------------------------------
# our side
# --------------------------------------------------------------------------------------------------
def prepare(name: str, data_dir: Path, folder: Path, seed: int = 0) -> tuple[int, int]:
    """Write the kernels and labels of ``name`` to ``folder``; returns (n_train, n_kernels)."""
    from sklearn.model_selection import train_test_split

    from multikernel.core.registry import get_registry
    from multikernel.stack.kernelset import KernelSet

    table = np.loadtxt(data_dir / f"{name}.csv", delimiter=",", skiprows=1)
    X, y = table[:, :-1], table[:, -1]
    X = X[:, X.std(axis=0) > 0]
    Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=0.7, random_state=seed, stratify=y)
    mean, std = Xtr.mean(0), Xtr.std(0)
    Xtr, Xte = (Xtr - mean) / std, (Xte - mean) / std
    ks = KernelSet(get_registry().get("family", "simplemkl")(Xtr.shape[1]), normalize="trace")
    Ktr = np.ascontiguousarray(ks.fit_stack(Xtr).to_array())
    Kte = np.ascontiguousarray(ks.cross_stack(Xte).to_array())
    for key, arr in (("K_train", Ktr), ("K_test", Kte), ("y_train", ytr), ("y_test", yte)):
        np.save(folder / f"{key}.npy", arr)
    return Ktr.shape[1], Ktr.shape[0]


def ours(folder: Path, C: float, repeats: int, methods: list[str]) -> dict[str, dict]:
    import warnings

    from multikernel import MKLClassifier
    from multikernel.stack.storage import DenseStack

    Ktr, Kte = np.load(folder / "K_train.npy"), np.load(folder / "K_test.npy")
    ytr, yte = np.load(folder / "y_train.npy"), np.load(folder / "y_test.npy")
    out = {}
    for method in methods:
        times = []
        for _ in range(repeats):
            clf = MKLClassifier(kernels="precomputed", method=method, C=C, tol=1e-3, max_iter=500)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = time.perf_counter()
                clf.fit(Ktr, ytr)
                times.append(time.perf_counter() - t)
        out[method] = {"time": min(times), "accuracy": float(np.mean(clf.predict(Kte) == yte)),
                       "gap": float(clf.dual_gap_), "iterations": int(clf.n_iter_)}
    if "average" not in methods:
        return out
    # The same average-kernel fit from a KernelStack, as a stack built by KernelSet arrives: no checks of
    # user kernels (MKLpy checks none either), the exact symmetry found by DenseStack's own comparison.
    times = []
    for _ in range(repeats):
        clf = MKLClassifier(kernels="precomputed", method="average", C=C, tol=1e-3)
        t = time.perf_counter()
        clf.fit(DenseStack(Ktr), ytr)
        times.append(time.perf_counter() - t)
    out["average (stack)"] = {"time": min(times), "accuracy": float(np.mean(clf.predict(Kte) == yte)),
                              "gap": float(clf.dual_gap_), "iterations": int(clf.n_iter_)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="heart,ionosphere,pima-diabetes")
    ap.add_argument("--C", type=float, default=10.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--methods", default="average,easymkl,l1mkl", help="ours, each with its MKLpy peer")
    ap.add_argument("--gram-iter", type=int, default=100, help="GRAM's max_iter (MKLpy's default is 1000)")
    ap.add_argument("--threads", type=int, default=1,
                    help="threads for both sides (torch's intra-op threads, our OpenMP loops and BLAS)")
    ap.add_argument("--mklpy-python", default="/work/venv_mklpy/bin/python")
    ap.add_argument("--data-dir", default=os.environ.get("MULTIKERNEL_DATA", str(ROOT.parent / "shared" / "data")))
    ap.add_argument("--mklpy-worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.mklpy_worker:
        mklpy_worker(args.mklpy_worker, args.C, args.repeats, args.gram_iter, args.threads, args.methods.split(","))
        return
    # Our loops read OMP_NUM_THREADS when multikernel is imported (below, after this); BLAS is limited here.
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads)

    print(f"# {platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; C = {args.C}, "
          f"best of {args.repeats}; {args.threads} thread(s) on each side; GRAM max_iter {args.gram_iter}")
    print("| data set | n train | M | ours | time (s) | acc | MKLpy | time (s) | acc | time ratio ours/MKLpy |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.sets.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            n, M = prepare(name, Path(args.data_dir), folder)
            methods = args.methods.split(",")
            mine = ours(folder, args.C, args.repeats, methods)
            run = subprocess.run([args.mklpy_python, __file__, "--mklpy-worker", str(folder), "--C", str(args.C),
                                  "--repeats", str(args.repeats), "--gram-iter", str(args.gram_iter),
                                  "--threads", str(args.threads), "--methods", args.methods],
                                 capture_output=True, text=True)
            try:
                theirs = json.loads(run.stdout.strip().splitlines()[-1])
            except (json.JSONDecodeError, IndexError):
                err = (run.stderr.strip().splitlines() or ["no output"])[-1]
                theirs = {peer: {"error": err} for _, peer in PAIRS}
        for method, peer in (*PAIRS[:1], ("average (stack)", "AverageMKL"), *PAIRS[1:]):
            if method not in mine:
                continue
            a, b = mine[method], theirs.get(peer, {"error": "not run"})
            extra = f" (gap {a['gap']:.1e}, {a['iterations']} it.)" if method == "l1mkl" else ""
            if "error" in b:
                print(f"| {name} | {n} | {M} | {method}{extra} | {a['time']:.3f} | {a['accuracy']:.3f} | {peer} | "
                      f"failed: {b['error']} | | |")
            else:
                print(f"| {name} | {n} | {M} | {method}{extra} | {a['time']:.3f} | {a['accuracy']:.3f} | {peer} | "
                      f"{b['time']:.3f} | {b['accuracy']:.3f} | {a['time'] / b['time']:.2f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
