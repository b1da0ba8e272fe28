"""Multi-label and multi-class MKL with shared kernel weights: ML-MKL-SA and ML-MKL-Sum on yeast and
emotions, and shared weights against one-vs-rest on UCI Multiple Features (mfeat).

Experiments (each fitted unit is appended to ``units.jsonl`` in ``--out``; a rerun fits only what is missing):

* ``multilabel``: yeast (14 labels) and emotions (6), random 50/50 splits (``ShuffleSplit``, seed = split);
  the 10 kernels of ``benchmarks/bench_multilabel_mkl.py`` (7 RBF, linear, polynomial of degrees 2 and 3 on the
  standardized features, trace-normalized) built on the training half; methods ``sa`` (``ml_mkl_sa``, seeded),
  ``sum`` (the sum form by the level method, ``l1mkl`` with shared weights) and ``avg-svm`` (one-vs-rest SVM on
  the average kernel: one C-SVM per label), each at C in {0.1, 1, 10}; the MKL methods stop at a certified gap of
  ``--tol`` or after 30 outer iterations (SA: epochs).  Test measures: AUC per label (``roc_auc_score``,
  averaged over the labels), ranking loss
  (``label_ranking_loss``), fit time, weights.
* ``mfeat``: 10 digit classes, six views (``fou fac kar pix zer mor``), each a group of three RBF kernels
  (``gamma = s / mean squared distance``, ``s`` in {1/4, 1, 4}) on its standardized features, trace-normalized;
  stratified 50/50 splits; methods ``shared`` (L1-MKL with one weight vector for the 10 one-vs-rest problems,
  level method), ``shared-sa`` (the same problem by ML-MKL-SA), ``ovr`` (L1-MKL per class), ``average`` (all 18
  kernels, uniform weights) and ``view:<v>`` (the average of one view's three kernels); C = 10.  Test accuracy
  (argmax of the one-vs-rest decision values), weights per view.

Usage::

    python docs/experiments/multilabel_mkl.py --data ../shared/data --splits 10          # both experiments
    python docs/experiments/multilabel_mkl.py --experiments mfeat --splits 5
    python docs/experiments/multilabel_mkl.py --report                                    # tables + figures
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit

from multikernel import create
from multikernel.solve.fit import SolveSettings, build_parts, encode_targets, fit_mkl
from multikernel.stack.kernelset import KernelSet

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_multilabel_mkl import kernel_set, load_multilabel, ranking_scores  # noqa: E402

OUT = Path(__file__).resolve().parent / "multilabel-mkl"
VIEWS = ("fou", "fac", "kar", "pix", "zer", "mor")
ML_METHODS = {"sa": ("ml_mkl_sa", True), "sum": ("l1mkl", True), "avg-svm": ("average", False)}
ML_C = (0.1, 1.0, 10.0)
MFEAT_C = 10.0
MAX_ITER = 30  # outer iterations (SA: epochs); a fit that stops short reports its certified gap


def _done(path: Path) -> set[tuple]:
    if not path.exists():
        return set()
    return {tuple(json.loads(line)["key"]) for line in path.read_text().splitlines() if line.strip()}


def _append(path: Path, unit: dict) -> None:
    with path.open("a") as f:
        f.write(json.dumps(unit) + "\n")


def _fit(method: str, shared: bool, stack, targets, C: float, tol: float, seed: int):
    params: dict = {"C": C}
    if method == "ml_mkl_sa":
        params["solver__random_state"] = seed
    parts = build_parts(method, params=params)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fitted = fit_mkl(stack, targets, parts, SolveSettings(tol=tol, max_iter=MAX_ITER), shared=shared)
    return fitted, time.perf_counter() - start


def run_multilabel(data: Path, splits: int, tol: float, units: Path) -> None:
    done = _done(units)
    for name in ("emotions", "yeast"):
        X, Y = load_multilabel(name, data)
        for split, (tr, te) in enumerate(ShuffleSplit(splits, train_size=0.5, random_state=0).split(X)):
            todo = [(m, C) for m in ML_METHODS for C in ML_C if ("multilabel", name, split, m, C) not in done]
            if not todo:
                continue
            keep = (Y[tr].sum(0) > 0) & (Y[tr].sum(0) < len(tr))  # a label with one value has no SVM
            ks = kernel_set()
            stack, cross = ks.fit_stack(X[tr]), None
            cross = ks.cross_stack(X[te])
            targets = encode_targets(Y[tr][:, keep])
            for m, C in todo:
                method, shared = ML_METHODS[m]
                fitted, seconds = _fit(method, shared, stack, targets, C, tol, split)
                scores = fitted.decision_function(cross)
                unit = {"key": ["multilabel", name, split, m, C], "labels": int(keep.sum()), "fit_time": seconds,
                        "objective": float(fitted.objective.sum()), "gap": float(fitted.dual_gap.max()),
                        "weights": fitted.weights.mean(axis=0).tolist(),
                        **ranking_scores(Y[te][:, keep], scores)}
                _append(units, unit)
                print(f"{name} split {split} {m:8s} C={C:<5g} AUC {unit['auc']:.4f} RL {unit['ranking_loss']:.4f} "
                      f"{seconds:6.1f}s gap {unit['gap']:.1e}", flush=True)


def mfeat_kernels() -> tuple[KernelSet, list[str]]:
    df_cols = pd.read_csv(MFEAT_PATH, nrows=0).columns
    builders, owners = [], []
    for v in VIEWS:
        cols = [i for i, c in enumerate(c for c in df_cols if c != "label") if c.startswith(v + ":")]
        for s in (0.25, 1.0, 4.0):
            builders.append(create("kernel", "rbf", gamma_scale=s, columns=cols))
            owners.append(v)
    return KernelSet(builders, normalize="trace", standardize=True), owners


MFEAT_PATH = Path()


def run_mfeat(data: Path, splits: int, tol: float, units: Path) -> None:
    global MFEAT_PATH
    MFEAT_PATH = data / "mfeat.csv"
    df = pd.read_csv(MFEAT_PATH)
    X, y = df.drop(columns="label").to_numpy(float), df["label"].to_numpy()
    done = _done(units)
    methods = ["shared", "shared-sa", "ovr", "average"] + [f"view:{v}" for v in VIEWS]
    sss = StratifiedShuffleSplit(splits, train_size=0.5, random_state=0)
    for split, (tr, te) in enumerate(sss.split(X, y)):
        todo = [m for m in methods if ("mfeat", "mfeat", split, m, MFEAT_C) not in done]
        if not todo:
            continue
        ks, owners = mfeat_kernels()
        stack = ks.fit_stack(X[tr])
        cross = ks.cross_stack(X[te])
        targets = encode_targets(y[tr])
        for m in todo:
            if m.startswith("view:"):
                idx = [k for k, o in enumerate(owners) if o == m[5:]]
                sub_stack, sub_cross = _kernel_subset(stack, idx), _kernel_subset(cross, idx)
                fitted, seconds = _fit("average", False, sub_stack, targets, MFEAT_C, tol, split)
                weights = np.zeros(len(owners))
                weights[idx] = 1.0 / len(idx)
                acc = float(np.mean(fitted.predict(sub_cross) == y[te]))
                block_weights = np.tile(weights, (targets.n_blocks, 1))
            else:
                method, shared = {"shared": ("l1mkl", True), "shared-sa": ("ml_mkl_sa", True),
                                  "ovr": ("l1mkl", False), "average": ("average", False)}[m]
                fitted, seconds = _fit(method, shared, stack, targets, MFEAT_C, tol, split)
                acc = float(np.mean(fitted.predict(cross) == y[te]))
                block_weights = fitted.block_weights
            view_weights = [[float(w[[k for k, o in enumerate(owners) if o == v]].sum()) for v in VIEWS]
                            for w in block_weights]
            unit = {"key": ["mfeat", "mfeat", split, m, MFEAT_C], "accuracy": acc, "fit_time": seconds,
                    "gap": float(fitted.dual_gap.max()), "view_weights": view_weights,
                    "classes": [str(c) for c in targets.classes]}
            _append(units, unit)
            print(f"mfeat split {split} {m:10s} acc {acc:.4f} {seconds:6.1f}s", flush=True)


def _kernel_subset(stack, idx):
    """The kernels ``idx`` of a stack, as a dense stack (a single view's group)."""
    from multikernel.stack.storage import DenseStack

    return DenseStack(np.stack([stack.kernel(k) for k in idx]))


# ----------------------------------------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------------------------------------
def report(units_path: Path, out: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(line) for line in units_path.read_text().splitlines() if line.strip()]
    lines = []
    ml = [r for r in rows if r["key"][0] == "multilabel"]
    if ml:
        df = pd.DataFrame([{"data": r["key"][1], "split": r["key"][2], "method": r["key"][3], "C": r["key"][4],
                            "auc": r["auc"], "rl": r["ranking_loss"], "time": r["fit_time"], "gap": r["gap"],
                            "objective": r["objective"]} for r in ml])
        for name, d in df.groupby("data", sort=False):
            lines.append(f"\n### {name} ({d.split.nunique()} splits, 50/50)\n")
            lines.append("| method | C | AUC per label (%) | ranking loss | fit (s) | certified gap (max) |")
            lines.append("|---|---|---|---|---|---|")
            for (m, C), g in d.groupby(["method", "C"], sort=False):
                lines.append(f"| {m} | {C:g} | {100 * g.auc.mean():.2f} ± {100 * g.auc.std():.2f} | "
                             f"{g.rl.mean():.4f} ± {g.rl.std():.4f} | {g.time.mean():.1f} | {g.gap.max():.1e} |")
            piv = d[d.method.isin(["sa", "sum"])].pivot_table(index=["split", "C"], columns="method",
                                                              values=["objective", "time"])
            if {"sa", "sum"} <= set(piv["objective"].columns):
                rel = (piv["objective"]["sa"] / piv["objective"]["sum"] - 1).abs()
                ratio = piv["time"]["sum"] / piv["time"]["sa"]
                lines.append(f"\nSA vs Sum on the same splits: |F_SA / F_Sum - 1| at most {rel.max():.1e}; fit-time "
                             f"ratio Sum/SA median {ratio.median():.2f} (range {ratio.min():.2f}-{ratio.max():.2f}).")
    mf = [r for r in rows if r["key"][0] == "mfeat"]
    if mf:
        df = pd.DataFrame([{"split": r["key"][2], "method": r["key"][3], "acc": r["accuracy"], "time": r["fit_time"],
                            "gap": r["gap"]} for r in mf])
        lines.append(f"\n### mfeat ({df.split.nunique()} splits, stratified 50/50, C = {MFEAT_C:g})\n")
        lines.append("| method | test accuracy (%) | fit (s) | certified gap (max) |")
        lines.append("|---|---|---|---|")
        for m, g in df.groupby("method", sort=False):
            lines.append(f"| {m} | {100 * g.acc.mean():.2f} ± {100 * g.acc.std():.2f} | {g.time.mean():.1f} | "
                         f"{g.gap.max():.1e} |")
        # which views get weight: the shared weights, and each class's one-vs-rest weights (mean over splits)
        shared = np.mean([r["view_weights"][0] for r in mf if r["key"][3] == "shared"], axis=0)
        sa = np.mean([r["view_weights"][0] for r in mf if r["key"][3] == "shared-sa"], axis=0)
        ovr = np.mean([r["view_weights"] for r in mf if r["key"][3] == "ovr"], axis=0)
        classes = next(r["classes"] for r in mf if r["key"][3] == "ovr")
        fig, ax = plt.subplots(figsize=(6.5, 5.2))
        mat = np.vstack([shared, sa, ovr])
        im = ax.imshow(mat, cmap="viridis", vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(range(len(VIEWS)), VIEWS)
        ax.set_yticks(range(len(mat)), ["shared (level)", "shared (SA)"] + [f"ovr: digit {c}" for c in classes])
        ax.axhline(1.5, color="w", lw=2)
        for i in range(mat.shape[0]):
            for j in range(mat.shape[1]):
                ax.text(j, i, f"{mat[i, j]:.2f}", ha="center", va="center", fontsize=7,
                        color="w" if mat[i, j] < 0.5 else "k")
        ax.set_title("mfeat: kernel weight per view (sum over its 3 RBF kernels)")
        fig.colorbar(im, ax=ax, shrink=0.8)
        fig.tight_layout()
        fig.savefig(out / "mfeat-view-weights.png", dpi=110)
        lines.append("\nWeight per view (mean over splits): shared " +
                     ", ".join(f"{v} {w:.2f}" for v, w in zip(VIEWS, shared, strict=True)) +
                     "; figure `multilabel-mkl/mfeat-view-weights.png`.")
    text = "\n".join(lines)
    (out / "tables.md").write_text(text + "\n")
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--experiments", nargs="+", default=["multilabel", "mfeat"], choices=["multilabel", "mfeat"])
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--tol", type=float, default=1e-2, help="certified relative gap of the MKL fits")
    ap.add_argument("--report", action="store_true", help="only the tables and figures from units.jsonl")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    units = args.out / "units.jsonl"
    if not args.report:
        print(f"# {platform.platform()}, python {platform.python_version()}", flush=True)
        if "multilabel" in args.experiments:
            run_multilabel(args.data, args.splits, args.tol, units)
        if "mfeat" in args.experiments:
            run_mfeat(args.data, args.splits, args.tol, units)
    print(report(units, args.out))


if __name__ == "__main__":
    main()
