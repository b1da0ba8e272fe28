"""Multi-label ranking experiments on yeast and emotions: MLR-L1, MLR-GL, MK-MLR and the baselines.

Three experiments, each over 10 random splits of the data set (scikit-learn ``ShuffleSplit(10, train_size,
random_state=0)`` with MULAN's training sizes: yeast 1500 of 2417 samples, emotions 391 of 593; the rest is the
test set):

* ``ranking``: MLR-L1, MLR-GL, one-vs-rest SVM, Platt-scaled one-vs-rest (PLATT) and ML-kNN on complete labels;
* ``missing``: the thesis's missing-label protocol (section 5.2): for each training sample 20 %, 40 % and 60 % of
  its relevant labels are removed (set to 0, unmarked: the learner does not know them), at least one kept; test
  labels complete; the same methods;
* ``mkl``: MK-MLR on yeast with five kernels on the (standardized) features -- RBF with gamma = g0/4, g0, 4 g0
  (g0 = 1 / mean squared training distance), polynomial of degree 2, linear -- against the average kernel
  (AVG-MLR) and the best single kernel (SK-MLR, chosen by cross-validation), with the learnt weights.

Model selection: every hyper-parameter by 3-fold cross-validation on the training part (``KFold(3, shuffle=True,
random_state=split)``), maximising the example-based AUC (the thesis's criterion) computed from
``decision_function``; grids below.  Platt uses the C chosen for the one-vs-rest SVM, and MK-MLR the C chosen for
AVG-MLR (a cross-validation of MK-MLR itself costs an outer MKL solve per grid point and fold).  Features are
standardized on the training part.  Kernels: RBF with ``gamma = 1 / mean squared training distance`` (the
thesis's bandwidth rule).

Results are appended to a JSON-lines file, one line per (experiment, data set, split, method, missing fraction);
a rerun skips the lines already there (resumable).  ``--report`` writes the tables and the figure.

Usage::

    python docs/experiments/mlr/run_mlr.py --data-dir ../shared/data            # everything (about an hour)
    python docs/experiments/mlr/run_mlr.py --experiments ranking --datasets emotions --splits 2
    python docs/experiments/mlr/run_mlr.py --report                              # tables + figure from results
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV, KFold, ShuffleSplit
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from multikernel import create
from multikernel.ranking import (
    MLkNN,
    MultiLabelRanker,
    OneVsRestRanker,
    drop_positive_labels,
    example_auc,
    ranking_scores,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
TRAIN_SIZE = {"yeast": 1500, "emotions": 391}
FRACTIONS = (0.2, 0.4, 0.6)
C_GRID = [0.01, 0.1, 1.0, 10.0]
SVM_C_GRID = [0.1, 1.0, 10.0, 100.0]
K_GRID = [5, 10, 15, 20]
SCORER = make_scorer(example_auc, response_method="decision_function")


def load(name: str, data_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    df = pd.read_csv(data_dir / f"{name}.csv")
    labels = [c for c in df.columns if c.startswith("label:")]
    return df.drop(columns=labels).to_numpy(np.float64), df[labels].to_numpy(np.int64)


def eta_grid(m: int) -> list[float]:
    return sorted({1.0, max(1.0, m / 4), m / 2})


def select(estimator, grid: dict, X: np.ndarray, Y: np.ndarray, seed: int):
    """The estimator refitted on (X, Y) with the grid point of best 3-fold example-based AUC."""
    search = GridSearchCV(estimator, grid, scoring=SCORER, cv=KFold(3, shuffle=True, random_state=seed),
                          error_score="raise")
    return search.fit(X, Y)


def ranking_methods(m: int) -> dict:
    """name -> (estimator, grid) for the ``ranking`` and ``missing`` experiments."""
    return {
        "MLR-L1": (MultiLabelRanker(standardize=True), {"C": C_GRID}),
        "MLR-GL": (MultiLabelRanker(method="mlr_gl", standardize=True), {"C": C_GRID, "eta": eta_grid(m)}),
        "SVM": (OneVsRestRanker(standardize=True), {"C": SVM_C_GRID}),
        "PLATT": (OneVsRestRanker(standardize=True, platt=True), None),   # C of the SVM row
        "MLkNN": (make_pipeline(StandardScaler(), MLkNN()), {"mlknn__k": K_GRID}),
    }


def mkl_kernels() -> list:
    return [create("kernel", "rbf", gamma_scale=s) for s in (0.25, 1.0, 4.0)] + \
           [create("kernel", "poly", degree=2, gamma=0.01), create("kernel", "linear")]


def _record(out: Path, row: dict) -> None:
    with out.open("a") as f:
        f.write(json.dumps(row) + "\n")


def _done(out: Path) -> set[tuple]:
    if not out.exists():
        return set()
    keys = set()
    for line in out.read_text().splitlines():
        r = json.loads(line)
        keys.add((r["experiment"], r["dataset"], r["split"], r["method"], r["fraction"]))
    return keys


def run_split(experiment: str, name: str, X: np.ndarray, Y: np.ndarray, split: int, train: np.ndarray,
              test: np.ndarray, out: Path, done: set) -> None:
    fractions = FRACTIONS if experiment == "missing" else (0.0,)
    for fraction in fractions:
        Ytr = Y[train] if fraction == 0.0 else drop_positive_labels(Y[train], fraction, random_state=split)
        chosen_C: dict[str, float] = {}
        methods = ranking_methods(Y.shape[1]) if experiment != "mkl" else {}
        if experiment == "mkl":
            methods = {"AVG-MLR": (MultiLabelRanker(kernels=mkl_kernels(), regularizer="uniform", standardize=True),
                                   {"C": C_GRID}),
                       "SK-MLR": (MultiLabelRanker(standardize=True),
                                  {"C": C_GRID, "kernels": [[k] for k in mkl_kernels()]}),
                       "MK-MLR": (MultiLabelRanker(kernels=mkl_kernels(), standardize=True), None)}
        for method, (estimator, grid) in methods.items():
            key = (experiment, name, split, method, fraction)
            if key in done:
                if method in ("SVM", "AVG-MLR"):
                    row = next(json.loads(line) for line in out.read_text().splitlines()
                               if tuple(json.loads(line)[k] for k in ("experiment", "dataset", "split", "method",
                                                                      "fraction")) == key)
                    chosen_C[method] = row["params"]["C"]
                continue
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                if grid is None:  # PLATT and MK-MLR take the C chosen for their companion
                    companion = "SVM" if method == "PLATT" else "AVG-MLR"
                    fitted = estimator.set_params(C=chosen_C[companion]).fit(X[train], Ytr)
                    params = {"C": chosen_C[companion]}
                else:
                    search = select(estimator, grid, X[train], Ytr, split)
                    fitted, params = search.best_estimator_, search.best_params_
            seconds = time.perf_counter() - start
            if "C" in params:
                chosen_C[method] = params["C"]
            scores = ranking_scores(Y[test], fitted.decision_function(X[test]))
            shown = {k: (v if isinstance(v, (int, float, str)) else
                         (v[0].describe() if isinstance(v, list) else str(v))) for k, v in params.items()}
            row = {"experiment": experiment, "dataset": name, "split": split, "method": method,
                   "fraction": fraction, "params": shown, "seconds": seconds, **scores}
            if experiment == "mkl" and method != "SK-MLR":
                row["weights"] = [float(w) for w in fitted.weights_]
                row["kernels"] = fitted.kernel_names_
                if method == "MK-MLR":
                    row["dual_gap"] = float(fitted.dual_gap_)
            _record(out, row)
            print(f"{experiment} {name} split {split} {method} missing {fraction:.0%}: "
                  f"AUC {100 * scores['example_auc']:.2f} ({seconds:.1f} s) {shown}", flush=True)


# --------------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------------
MEASURES = [("example_auc", "image-based AUC (%)", 100, 2), ("example_ap", "image-based AP, 11-pt (%)", 100, 2),
            ("ranking_loss", "ranking loss", 1, 4), ("one_error", "one-error", 1, 3),
            ("coverage", "coverage (MULAN)", 1, 3)]


def report(out: Path) -> str:
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    df = pd.DataFrame(rows)
    lines = []
    for experiment in ("ranking", "missing", "mkl"):
        part = df[df.experiment == experiment]
        if part.empty:
            continue
        for (name, fraction), group in part.groupby(["dataset", "fraction"]):
            lines.append(f"\n### {experiment}: {name}" + (f", {fraction:.0%} of relevant training labels removed"
                                                       if experiment == "missing" else "")
                         + f" ({group.split.nunique()} splits)\n")
            lines.append("| method | " + " | ".join(label for _, label, _, _ in MEASURES) + " | fit (s) |")
            lines.append("|---|" + "---|" * (len(MEASURES) + 1))
            for method, g in group.groupby("method", sort=False):
                cells = [f"{s * g[key].mean():.{d}f} ± {s * g[key].std(ddof=1) if len(g) > 1 else 0:.{d}f}"
                         for key, _, s, d in MEASURES]
                lines.append(f"| {method} | " + " | ".join(cells) + f" | {g.seconds.mean():.1f} |")
        if experiment == "mkl":
            for method in ("MK-MLR",):
                g = part[part.method == method]
                if g.empty:
                    continue
                W = np.array(g.weights.tolist())
                spread = W.std(0, ddof=1) if len(W) > 1 else np.zeros(W.shape[1])
                lines.append(f"\n{method} kernel weights (mean ± std over splits): " + ", ".join(
                    f"{k} {w:.3f} ± {s:.3f}" for k, w, s in zip(g.kernels.iloc[0], W.mean(0), spread, strict=True)))
                lines.append(f"\n{method} certified duality gap: max {g.dual_gap.max():.2g}")
            sk = part[part.method == "SK-MLR"]
            if not sk.empty:
                lines.append("\nSK-MLR kernels chosen: " + ", ".join(
                    f"{k} ({n})" for k, n in sk.params.apply(lambda p: p["kernels"]).value_counts().items()))
    return "\n".join(lines)


def figure(out: Path, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = pd.DataFrame([json.loads(line) for line in out.read_text().splitlines()])
    df = df[df.experiment.isin(["ranking", "missing"])]
    names = sorted(df.dataset.unique())
    fig, axes = plt.subplots(2, len(names), figsize=(5 * len(names), 7), squeeze=False)
    for col, name in enumerate(names):
        for row, (key, label, scale, _) in enumerate([MEASURES[0], MEASURES[2]]):
            ax = axes[row, col]
            for method, g in df[df.dataset == name].groupby("method", sort=False):
                stats = g.groupby("fraction")[key].agg(["mean", "std"])
                ax.errorbar(100 * stats.index, scale * stats["mean"], yerr=scale * stats["std"], marker="o",
                            capsize=3, label=method)
            ax.set(xlabel="relevant training labels removed (%)", ylabel=label, title=name)
            ax.grid(alpha=0.3)
        axes[0, col].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=HERE / "results.jsonl")
    parser.add_argument("--experiments", nargs="+", default=["ranking", "missing", "mkl"])
    parser.add_argument("--datasets", nargs="+", default=["emotions", "yeast"])
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--report", action="store_true", help="print the tables and write the figure")
    args = parser.parse_args()
    if args.report:
        print(report(args.out))
        figure(args.out, HERE / "missing-labels.png")
        return
    done = _done(args.out)
    for experiment in args.experiments:
        for name in (["yeast"] if experiment == "mkl" else args.datasets):
            X, Y = load(name, args.data_dir)
            splitter = ShuffleSplit(n_splits=10, train_size=TRAIN_SIZE[name], random_state=0)
            for split, (train, test) in enumerate(splitter.split(X)):
                if split >= args.splits:
                    break
                run_split(experiment, name, X, Y, split, train, test, args.out, done)


if __name__ == "__main__":
    main()
