"""ITML+, partial ITML+, ITML, ITML-S and L2 on UCI Multiple Features: a main view, a privileged view.

Face-verification-style protocol (Xu 2014, chapter 5) on the digits: for each random stratified split of the
samples into training, validation and test parts, pairs are drawn inside each part; every method learns a
metric on the training pairs (the privileged view only there), its hyper-parameters are chosen by the
validation pairs' average precision (the thesis chose them on the test set), and the test pairs are scored by
AUC and average precision of the learnt distances; k-NN accuracy classifies the test samples by their
neighbours among the training samples (k chosen on the validation samples).

Usage::

    python docs/experiments/itml_mfeat.py docs/experiments/itml-mfeat.toml [--data PATH] [--n-jobs N]
    python docs/experiments/itml_mfeat.py CONFIG --report-only     # tables and figures from units.jsonl

Every fitted unit is appended to ``units.jsonl`` in the output folder; a rerun fits only what is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import average_precision_score, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from multikernel import ITML, ITMLS, ITMLPlus
from multikernel.metric import draw_pairs

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

METHODS = ("L2", "ITML", "ITML-S", "ITML+")


# ----------------------------------------------------------------------------------------------------------
# Data, splits, pairs
# ----------------------------------------------------------------------------------------------------------


def load(path: Path, main: str, privileged: str):
    df = pd.read_csv(path)
    cols = lambda v: [c for c in df.columns if c.startswith(v + ":")]  # noqa: E731
    if not cols(main) or not cols(privileged):
        raise SystemExit(f"views {main!r} / {privileged!r} not found in {path}")
    return df[cols(main)].to_numpy(float), df[cols(privileged)].to_numpy(float), df["label"].to_numpy()


def prepare(view: np.ndarray, train: np.ndarray, pca_dim: int) -> np.ndarray:
    """Standardise on the training part, PCA to ``pca_dim`` when larger, then scale so that the mean squared
    distance between training samples is 1 (both views on the scale of the targets; P0 = M0 = I)."""
    Xs = StandardScaler().fit(view[train]).transform(view)
    if Xs.shape[1] > pca_dim:
        Xs = PCA(pca_dim, random_state=0).fit(Xs[train]).transform(Xs)
    Xt = Xs[train]
    mean_sq = 2.0 * np.mean(np.sum((Xt - Xt.mean(0)) ** 2, axis=1))  # E||x - x'||^2 over training pairs
    return Xs / np.sqrt(mean_sq)


def split(y: np.ndarray, cfg: dict, r: int):
    seed = cfg["seed"] + r
    ids = np.arange(len(y))
    train, rest = train_test_split(ids, train_size=cfg["train_fraction"], stratify=y, random_state=seed)
    val_share = cfg["validation_fraction"] / (1.0 - cfg["train_fraction"])
    val, test = train_test_split(rest, train_size=val_share, stratify=y[rest], random_state=seed)
    return np.sort(train), np.sort(val), np.sort(test)


def pairs_in(ids: np.ndarray, y: np.ndarray, n: int, seed: int):
    idx, lab = draw_pairs(y[ids], n, random_state=seed)
    return ids[idx], lab


def privileged_mask(lab: np.ndarray, fraction: float) -> np.ndarray:
    """The first ``fraction`` of the similar and of the dissimilar training pairs have privileged data."""
    mask = np.zeros(len(lab), dtype=bool)
    for kind in (1, -1):
        where = np.flatnonzero(lab == kind)
        mask[where[: int(round(fraction * len(where)))]] = True
    return mask


# ----------------------------------------------------------------------------------------------------------
# Units
# ----------------------------------------------------------------------------------------------------------


def unit_key(r: int, method: str, fraction: float | None, params: dict) -> str:
    return json.dumps({"r": r, "method": method, "fraction": fraction, "params": params}, sort_keys=True)


def plan(cfg: dict, grid: dict) -> list[tuple]:
    units = []
    for r in range(cfg["repeats"]):
        units.append((r, "L2", None, {}))
        for g in grid["gamma"]:
            units.append((r, "ITML", None, {"gamma": g}))
            for o in grid["outlier_fraction"]:
                units.append((r, "ITML-S", None, {"gamma": g, "outlier_fraction": o}))
            for f in grid["privileged_fraction"]:
                for lam in grid["lam"]:
                    units.append((r, "ITML+", f, {"gamma": g, "lam": lam}))
    return units


def build(method: str, params: dict, Xm: np.ndarray, cfg: dict):
    common = {"max_iter": cfg["max_iter"], "tol": cfg["tol"], "preprocessor": Xm}
    if method == "ITML":
        return ITML(**common, **params)
    if method == "ITML-S":
        return ITMLS(**common, **params)
    return ITMLPlus(**common, **params)


def fit_unit(r, method, fraction, params, data, cfg, knn_k):
    with threadpool_limits(1):  # small BLAS calls: threads only contend on a shared machine
        return _fit_unit(r, method, fraction, params, data, cfg, knn_k)


def _fit_unit(r, method, fraction, params, data, cfg, knn_k):
    Xm, Xp, y, parts, tr_pairs, tr_lab, va_pairs, va_lab, te_pairs, te_lab = data
    train, val, test = parts
    t0 = time.perf_counter()
    n_iter, converged = 0, True
    if method == "L2":
        M = np.eye(Xm.shape[1])
    else:
        est = build(method, params, Xm, cfg)
        kw = {}
        if method != "ITML":
            Zp = np.stack([Xp[tr_pairs[:, 0]], Xp[tr_pairs[:, 1]]], axis=1)
            if fraction is not None:
                Zp[~privileged_mask(tr_lab, fraction)] = np.nan
            kw["pairs_privileged"] = Zp
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            est.fit(tr_pairs, tr_lab, **kw)
        converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
        M, n_iter = est.get_mahalanobis_matrix(), est.n_iter_
    fit_time = time.perf_counter() - t0

    def pair_scores(pairs):
        D = Xm[pairs[:, 0]] - Xm[pairs[:, 1]]
        return -np.einsum("ij,jk,ik->i", D, M, D)

    out = {"r": r, "method": method, "fraction": fraction, "params": params, "fit_time": fit_time,
           "n_iter": int(n_iter), "converged": converged}
    for name, pairs, lab in (("val", va_pairs, va_lab), ("test", te_pairs, te_lab)):
        s = pair_scores(pairs)
        out[f"{name}_ap"] = float(average_precision_score(lab > 0, s))
        out[f"{name}_auc"] = float(roc_auc_score(lab > 0, s))
    w, V = np.linalg.eigh(M)
    T = Xm @ (np.sqrt(np.maximum(w, 0))[:, None] * V.T).T
    for name, ids in (("val", val), ("test", test)):
        for k, acc in knn_accuracies(T[train], y[train], T[ids], y[ids], knn_k).items():
            out[f"knn_{name}_{k}"] = acc
    out["key"] = unit_key(r, method, fraction, params)
    return out


def knn_accuracies(T_train, y_train, T_eval, y_eval, ks) -> dict:
    """k-NN accuracy for every k from one neighbour search (KNeighborsClassifier's vote: ties to the smallest
    label)."""
    D = np.sum(T_eval**2, 1)[:, None] - 2 * T_eval @ T_train.T + np.sum(T_train**2, 1)[None]
    near = np.argsort(D, axis=1, kind="stable")[:, : max(ks)]
    classes, codes = np.unique(y_train, return_inverse=True)
    out = {}
    for k in ks:
        votes = np.zeros((len(T_eval), len(classes)))
        np.add.at(votes, (np.repeat(np.arange(len(T_eval)), k), codes[near[:, :k]].ravel()), 1.0)
        out[k] = float(np.mean(classes[votes.argmax(1)] == y_eval))
    return out


def repeat_data(r, Xmain, Xpriv, y, cfg):
    parts = split(y, cfg, r)
    train = parts[0]
    Xm, Xp = prepare(Xmain, train, cfg["pca_dim"]), prepare(Xpriv, train, cfg["pca_dim"])
    seed = 1000 * (cfg["seed"] + r)
    tr = pairs_in(train, y, cfg["n_train_pairs"], seed)
    va = pairs_in(parts[1], y, cfg["n_eval_pairs"], seed + 1)
    te = pairs_in(parts[2], y, cfg["n_eval_pairs"], seed + 2)
    return (Xm, Xp, y, parts, *tr, *va, *te)


# ----------------------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------------------


def select(units: list[dict], cfg: dict, knn_k) -> pd.DataFrame:
    """Per repeat, method and fraction: the grid point of best validation metric, and k of best validation
    k-NN accuracy for it; their test numbers."""
    metric = "val_" + cfg["selection_metric"]
    rows = []
    df = pd.DataFrame(units)
    df["fraction"] = df["fraction"].astype(object).where(df["fraction"].notna(), None)
    for (r, method, fraction), g in df.groupby(["r", "method", df["fraction"].fillna(-1)], sort=True):
        best = g.loc[g[metric].idxmax()]  # ties: the first in plan order
        k = max(knn_k, key=lambda k: best[f"knn_val_{k}"])
        rows.append({"r": r, "method": method, "fraction": None if fraction == -1 else fraction,
                     "params": best["params"], "test_ap": best["test_ap"], "test_auc": best["test_auc"],
                     "val_ap": best["val_ap"], "k": k, "test_knn": best[f"knn_test_{k}"],
                     "grid_points": len(g), "not_converged": int((~g["converged"]).sum()),
                     "fit_time": float(g["fit_time"].sum())})
    return pd.DataFrame(rows)


def label(method, fraction):
    if method == "ITML+" and fraction is not None and fraction < 1:
        return f"partial ITML+ {int(round(100 * fraction))}%"
    return method


def refit_selected(sel, data, cfg):
    """Repeat 0's selected ITML, ITML-S, ITML+ (100%) and ITML+ with lam >= 1: learnt squared distances of the
    first 250 similar and 250 dissimilar training pairs (the thesis's Fig. 5.4), and the targets (l, u)."""
    Xm, Xp, y, parts, tr_pairs, tr_lab = data[:6]
    first = np.concatenate([np.flatnonzero(tr_lab > 0)[:250], np.flatnonzero(tr_lab < 0)[:250]])
    out = {}
    for method in ("ITML", "ITML-S", "ITML+", COUPLED):
        row = sel[(sel.r == 0) & (sel.method == method) & (sel.fraction.isin([None, 1.0]) | sel.fraction.isna())]
        params = row.iloc[0]["params"]
        est = build("ITML+" if method == COUPLED else method, params, Xm, cfg)
        kw = {} if method == "ITML" else {"pairs_privileged": np.stack([Xp[tr_pairs[:, 0]], Xp[tr_pairs[:, 1]]], 1)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(tr_pairs, tr_lab, **kw)
        out[method] = {"d2": est.pair_distance(tr_pairs[first], squared=True).tolist(), "params": params,
                       "bounds": est.bounds_.tolist()}
    return out, tr_lab[first]


def figures(summary: pd.DataFrame, sel: pd.DataFrame, dist, dist_lab, outdir: Path, cfg: dict):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figdir = outdir / "figures"
    figdir.mkdir(exist_ok=True)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    fr = [0.0] + sorted(f for f in sel.fraction.dropna().unique())
    for ax, (col, name) in zip(axes, (("test_ap", "test AP"), ("test_auc", "test AUC"), ("test_knn", "k-NN accuracy")),
                               strict=True):
        plus = [sel[sel.method == "ITML"][col] if f == 0 else sel[(sel.method == "ITML+") & (sel.fraction == f)][col]
                for f in fr]
        ax.errorbar(100 * np.array(fr), [p.mean() for p in plus], yerr=[p.std(ddof=0) for p in plus], marker="o",
                    capsize=3, label="(partial) ITML+", color="C3")
        c = sel[sel.method == COUPLED][col]
        ax.errorbar([100], [c.mean()], yerr=[c.std(ddof=0)], marker="s", color="C1", capsize=3, ls="none",
                    label="ITML+ with lam >= 1")
        for method, color, style in (("ITML", "C0", "--"), ("ITML-S", "C2", "-."), ("L2", "0.4", ":")):
            ax.axhline(sel[sel.method == method][col].mean(), color=color, ls=style, label=method)
        ax.set_xlabel("training pairs with privileged data (%)")
        ax.set_title(name)
        ax.set_xticks(100 * np.array(fr))
    axes[0].legend(fontsize=8)
    fig.suptitle(f"mfeat: main view {cfg['main_view']}, privileged view {cfg['privileged_view']} "
                 f"(mean ± std over {cfg['repeats']} splits; 0% is ITML)", fontsize=10)
    fig.tight_layout()
    fig.savefig(figdir / "privileged-fraction.png", dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8), sharey=True)
    pos = dist_lab > 0
    for ax, method in zip(axes, ("ITML", "ITML-S", "ITML+", COUPLED), strict=True):
        d2 = np.array(dist[method]["d2"])
        x = np.arange(len(d2))
        ax.scatter(x[pos], d2[pos], s=4, color="C0", label="similar pairs")
        ax.scatter(x[~pos], d2[~pos], s=4, color="C3", label="dissimilar pairs")
        lo, hi = dist[method]["bounds"]
        ax.axhline(lo, color="k", lw=0.8, ls="--")
        ax.axhline(hi, color="k", lw=0.8, ls=":")
        ax.set_yscale("log")
        p = ", ".join(f"{k}={v:g}" for k, v in dist[method]["params"].items())
        ax.set_title(f"{method.split(' (')[0]} ({p})", fontsize=9)
        ax.set_xlabel("training pair (first 250 similar, first 250 dissimilar)")
    axes[0].set_ylabel("learnt squared distance")
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle(f"Learnt distances of training pairs, split 0 (dashed: l = {lo:.3g}, dotted: u = {hi:.3g})",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(figdir / "learnt-distances.png", dpi=110)
    plt.close(fig)


COUPLED = "ITML+ (lam >= 1)"


def report(units, cfg, grid, outdir, data0, env):
    # ITML+ with the privileged coupling in force: as lam -> 0, P is free and ITML+ tends to ITML, so the
    # best lam >= 1 (again chosen on the validation pairs) shows what the privileged view does to the metric
    coupled = [{**u, "method": COUPLED} for u in units
               if u["method"] == "ITML+" and u["fraction"] == 1.0 and u["params"]["lam"] >= 1]
    sel = select(units + coupled, cfg, grid["knn_k"])
    dist, dist_lab = refit_selected(sel, data0, cfg)
    sel["label"] = [label(m, f) for m, f in zip(sel.method, sel.fraction, strict=True)]
    order = ["L2", "ITML", "ITML-S"] + [label("ITML+", f) for f in sorted(grid["privileged_fraction"])] + [COUPLED]
    summary = sel.groupby("label").agg(
        ap=("test_ap", "mean"), ap_std=("test_ap", "std"), auc=("test_auc", "mean"), auc_std=("test_auc", "std"),
        knn=("test_knn", "mean"), knn_std=("test_knn", "std"), not_converged=("not_converged", "sum"),
        grid_points=("grid_points", "sum"), fit_time=("fit_time", "sum")).reindex(order)
    figures(summary, sel, dist, dist_lab, outdir, cfg)
    sel_json = sel.assign(params=sel.params.map(json.dumps))
    (outdir / "results.json").write_text(json.dumps({
        "config": cfg, "grid": grid, "environment": env,
        "summary": json.loads(summary.reset_index().to_json(orient="records")),
        "selected": json.loads(sel_json.to_json(orient="records")),
        "fig_5_4": {"pair_labels": dist_lab.tolist(), **dist},
        "units": units}, indent=None))

    def overlap(method):
        d2, pos = np.array(dist[method]["d2"]), dist_lab > 0
        return roc_auc_score(pos, -d2), float(np.mean(d2[pos] > dist[method]["bounds"][0])), float(
            np.mean(d2[~pos] < dist[method]["bounds"][1]))

    lines = [f"# Results: {cfg['name']}", "",
             f"Main view `{cfg['main_view']}`, privileged view `{cfg['privileged_view']}` (training only); "
             f"{cfg['repeats']} random stratified splits, mean ± std of the test numbers at the hyper-parameters "
             f"chosen by validation {cfg['selection_metric'].upper()} (k of k-NN by validation accuracy).", "",
             "| method | test AP (%) | test AUC (%) | k-NN accuracy (%) | fits at max_iter / fits | fit time (s) |",
             "|---|---|---|---|---|---|"]
    for name, row in summary.iterrows():
        lines.append(f"| {name} | {100 * row.ap:.2f} ± {100 * row.ap_std:.2f} | {100 * row.auc:.2f} ± "
                     f"{100 * row.auc_std:.2f} | {100 * row.knn:.2f} ± {100 * row.knn_std:.2f} | "
                     f"{int(row.not_converged)} / {int(row.grid_points)} | {row.fit_time:.0f} |")
    lines += ["", "Selected hyper-parameters (split: parameters, k):", ""]
    for name in order:
        s = sel[sel.label == name].sort_values("r")
        lines.append(f"- {name}: " + "; ".join(f"{int(r.r)}: {r.params}, k={r.k}" for r in s.itertuples()))
    lines += ["", "Figure 5.4 analogue, split 0, first 250 similar and 250 dissimilar training pairs "
              "(AUC of their learnt distances; share of similar pairs above l; share of dissimilar pairs "
              "below u):", ""]
    for method in ("ITML", "ITML-S", "ITML+", COUPLED):
        auc, above, below = overlap(method)
        lines.append(f"- {method}: AUC {100 * auc:.2f}%, similar above l {100 * above:.1f}%, dissimilar below u "
                     f"{100 * below:.1f}%")
    lines += ["", "![metric versus privileged fraction](figures/privileged-fraction.png)", "",
              "![learnt distances](figures/learnt-distances.png)", "",
              f"Environment: {env}"]
    (outdir / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


# ----------------------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("config", type=Path)
    ap.add_argument("--data", type=Path, help="mfeat.csv (default: the config's data, relative to it)")
    ap.add_argument("--n-jobs", type=int, default=None)
    ap.add_argument("--report-only", action="store_true", help="no fitting: report what units.jsonl holds")
    args = ap.parse_args()
    conf = tomllib.loads(args.config.read_text())
    cfg, grid = conf["experiment"], conf["grid"]
    here = args.config.resolve().parent
    data_path = args.data or (here / cfg["data"])
    if not data_path.exists():
        print(f"data not found: {data_path}; pass --data PATH/mfeat.csv", file=sys.stderr)
        return 2
    outdir = here / cfg["output"]
    outdir.mkdir(parents=True, exist_ok=True)
    Xmain, Xpriv, y = load(data_path, cfg["main_view"], cfg["privileged_view"])
    store = outdir / "units.jsonl"
    done = {}
    if store.exists():
        for line in store.read_text().splitlines():
            if line.strip():
                u = json.loads(line)
                done[u["key"]] = u
    todo = [u for u in plan(cfg, grid) if unit_key(*u) not in done]
    print(f"{len(done)} units done, {len(todo)} to fit", flush=True)
    t0 = time.perf_counter()
    if todo and not args.report_only:
        for r in sorted({u[0] for u in todo}):
            data = repeat_data(r, Xmain, Xpriv, y, cfg)
            mine = [u for u in todo if u[0] == r]
            jobs = (delayed(fit_unit)(*u, data, cfg, grid["knn_k"]) for u in mine)
            with store.open("a") as fh:
                for i, res in enumerate(Parallel(n_jobs=args.n_jobs or cfg["n_jobs"],
                                                 return_as="generator_unordered")(jobs)):
                    fh.write(json.dumps(res) + "\n")
                    fh.flush()
                    done[res["key"]] = res
                    if (i + 1) % 10 == 0 or i + 1 == len(mine):
                        print(f"split {r}: {i + 1}/{len(mine)} ({time.perf_counter() - t0:.0f} s)", flush=True)
    missing = [u for u in plan(cfg, grid) if unit_key(*u) not in done]
    if missing:
        print(f"{len(missing)} units missing; rerun without --report-only", file=sys.stderr)
        return 1
    units = [done[unit_key(*u)] for u in plan(cfg, grid)]  # plan order: ties go to the first grid point
    env = (f"{platform.machine()}, {os.cpu_count()} CPUs (shared), Python {platform.python_version()}, numpy "
           f"{np.__version__}; {len(units)} units, their fits {sum(u['fit_time'] for u in units):.0f} s in all")
    report(units, cfg, grid, outdir, repeat_data(0, Xmain, Xpriv, y, cfg), env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
