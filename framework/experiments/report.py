"""Summaries of finished experiment units: tables (Markdown), every number (a dict for JSON), figures.

Conventions (those of the soft margin MKL paper, Xu, Tsang and Xu 2013):

* accuracy is reported in percent as mean ± standard deviation over the repeats (sample standard
  deviation, ``ddof=1``, as MATLAB's ``std``; 0 in the JSON and no ± in the tables for a single repeat);
* the rank of a method on a data set is the competition rank ("1224") of its mean accuracy among the
  methods, ties within 1e-9 sharing the best rank; the average rank is truncated (not rounded) to two
  decimals (44/7 prints as 6.28);
* a kernel is *selected* when its share ``mu_m / sum(mu)`` exceeds ``selection_threshold``;
* the time of a method is the wall time of one fit at the selected parameters on the full training part
  (kernels and model selection excluded; both are reported separately).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from multikernel.config.summary import count_selected, sample_std

__all__ = [
    "competition_ranks",
    "truncate",
    "count_selected",
    "sample_std",
    "format_mean",
    "summarize_benchmark",
    "summarize_noisy",
    "markdown_report",
    "make_figures",
]


def competition_ranks(values: Sequence[float], higher_is_better: bool = True, tol: float = 1e-9) -> list[int]:
    """Competition ranking ("1224"): 1 + the number of values strictly better (beyond ``tol``)."""
    v = np.asarray(values, dtype=np.float64)
    better = (v[None, :] > v[:, None] + tol) if higher_is_better else (v[None, :] < v[:, None] - tol)
    return [int(1 + n) for n in better.sum(axis=1)]


def truncate(value: float, decimals: int = 2) -> float:
    """``value`` truncated to ``decimals`` decimals; the small guard keeps 2.0 stored as 1.99999... at 2.0."""
    factor = 10**decimals
    return math.floor(value * factor + 1e-9) / factor


def format_mean(value: float, repeats: int, digits: int = 1) -> str:
    """A mean over repeats with ``digits`` decimals; over a single repeat, the value as it is (a count of
    kernels or iterations is then an integer: ``8``, not ``8.0``)."""
    return f"{value:.{digits}f}" if repeats > 1 else f"{value:g}"


def summarize_benchmark(records: Sequence[dict[str, Any]], datasets: Sequence[str], methods: Sequence[str],
                        threshold: float) -> dict[str, Any]:
    """Per data set and method: accuracy, rank, time, selected kernels, iterations, gap; average ranks."""
    table: dict[str, dict[str, Any]] = {}
    for ds in datasets:
        row: dict[str, Any] = {}
        for m in methods:
            recs = sorted((r for r in records if r["dataset"] == ds and r["method"] == m), key=lambda r: r["repeat"])
            if not recs:
                continue
            acc = [100.0 * r["accuracy"] for r in recs]
            times = [r["fit_time"] for r in recs]
            row[m] = {
                "repeats": len(recs), "accuracy": acc, "accuracy_mean": float(np.mean(acc)),
                "accuracy_std": sample_std(acc), "fit_time": times, "fit_time_mean": float(np.mean(times)),
                "fit_time_std": sample_std(times),
                "n_selected": [count_selected(r["weights"], threshold) for r in recs],
                "n_iter_mean": float(np.mean([r["n_iter"] for r in recs])),
                "dual_gap_max": float(np.max([r["dual_gap"] for r in recs])),
                "cv_gap_max": float(np.max([r.get("cv_gap_max", 0.0) for r in recs])),
                "cv_time_mean": float(np.mean([r.get("cv_time", 0.0) for r in recs])),
                "kernel_time_mean": float(np.mean([r["kernel_time"] + r.get("test_kernel_time", 0.0) for r in recs])),
                "best_params": [r["best_params"] for r in recs],
                "n_kernels": recs[0]["n_kernels"], "n_train": recs[0]["n_train"], "n_test": recs[0]["n_test"],
                "mean_weights": np.mean([np.atleast_2d(r["weights"]).mean(axis=0) for r in recs], axis=0).tolist(),
                "convergence_warnings": int(sum(r.get("convergence_warnings", 0) for r in recs)),
            }
            row[m]["n_selected_mean"] = float(np.mean(row[m]["n_selected"]))
        present = list(row)
        if present:
            for m, rank in zip(present, competition_ranks([row[m]["accuracy_mean"] for m in present]), strict=True):
                row[m]["rank"] = rank
            for m, rank in zip(present, competition_ranks([row[m]["fit_time_mean"] for m in present],
                                                          higher_is_better=False), strict=True):
                row[m]["time_rank"] = rank
        table[ds] = row
    complete = [ds for ds in datasets if table[ds] and all(m in table[ds] for m in methods)]
    average = {m: truncate(float(np.mean([table[ds][m]["rank"] for ds in complete]))) if complete else None
               for m in methods}
    time_average = {m: truncate(float(np.mean([table[ds][m]["time_rank"] for ds in complete]))) if complete
                    else None for m in methods}
    return {"datasets": list(datasets), "methods": list(methods), "table": table, "average_rank": average,
            "average_time_rank": time_average, "ranked_datasets": complete, "selection_threshold": threshold}


def summarize_noisy(records: Sequence[dict[str, Any]], ratios: Sequence[float], methods: Sequence[str],
                    threshold: float) -> dict[str, Any]:
    """Test accuracy (%) and selected kernels of each method at each noise ratio (``None`` if not run)."""
    rows = []
    for i, r in enumerate(ratios):
        row: dict[str, Any] = {"ratio": r, "methods": {}}
        for m in methods:
            rec = next((x for x in records if x["index"] == i and x["method"] == m), None)
            if rec is None:
                continue
            row.update(n_noise_features=rec["n_noise_features"], n_kernels=rec["n_kernels"])
            row["methods"][m] = {"accuracy": 100.0 * rec["accuracy"], "best_params": rec["best_params"],
                                 "n_selected": count_selected(rec["weights"], threshold),
                                 "fit_time": rec["fit_time"], "dual_gap": rec["dual_gap"]}
        rows.append(row)
    return {"ratios": list(ratios), "methods": list(methods), "rows": rows}


# --------------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------------
def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _params(p: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_fmt(v)}" for k, v in p.items()) or "defaults"


def _benchmark_md(b: dict[str, Any], info: dict[str, dict[str, Any]]) -> list[str]:
    methods, table = b["methods"], b["table"]

    def label(ds: str) -> str:
        d = info.get(ds, {})
        any_m = next(iter(table[ds].values()), None)
        extra = f" (n={d.get('n_samples')}, d={d.get('n_features')}, M={any_m['n_kernels']})" if any_m else ""
        return ds + extra

    def cell(ds: str, m: str, mean: str, std: str, rank: str, scale: float = 1.0, digits: int = 2) -> str:
        e = table[ds].get(m)
        if e is None:
            return "–"
        # A standard deviation needs several repeats: a single one shows the value alone.
        spread = f" ± {e[std] * scale:.{digits}f}" if e["repeats"] > 1 else ""
        return f"{e[mean] * scale:.{digits}f}{spread} ({e[rank]})"

    lines = ["## Test accuracy (%): mean ± std over the repeats (rank)", ""]
    rows = [[label(ds)] + [cell(ds, m, "accuracy_mean", "accuracy_std", "rank") for m in methods]
            for ds in b["datasets"]]
    rows.append(["average rank"] + [f"{b['average_rank'][m]:.2f}" if b["average_rank"][m] is not None else "–"
                                    for m in methods])
    lines += _md_table(["data set"] + list(methods), rows)
    lines += ["", "## Training time (s) of one model at the selected parameters: mean ± std (rank)", ""]
    rows = [[ds] + [cell(ds, m, "fit_time_mean", "fit_time_std", "time_rank", digits=3) for m in methods]
            for ds in b["datasets"]]
    rows.append(["average rank"] + [f"{b['average_time_rank'][m]:.2f}" if b["average_time_rank"][m] is not None
                                    else "–" for m in methods])
    lines += _md_table(["data set"] + list(methods), rows)
    lines += ["", f"## Selected kernels (share of the weight > {b['selection_threshold']:g}), mean over the repeats;"
              " outer iterations; largest duality gap of the refits (and of the cross-validation fits)", ""]
    rows = []
    for ds in b["datasets"]:
        cells = []
        for m in methods:
            e = table[ds].get(m)
            cells.append("–" if e is None else
                         f"{format_mean(e['n_selected_mean'], e['repeats'])} / {e['n_kernels']}; "
                         f"{format_mean(e['n_iter_mean'], e['repeats'])} it; "
                         f"gap {e['dual_gap_max']:.1e}" + (f" (CV {e['cv_gap_max']:.1e})" if e["cv_gap_max"] else ""))
        rows.append([ds] + cells)
    lines += _md_table(["data set"] + list(methods), rows)
    lines += ["", "## Model selection: cross-validation and kernel time (s, mean per split)", ""]
    rows = [[ds] + ["–" if table[ds].get(m) is None else
                    f"CV {table[ds][m]['cv_time_mean']:.2f}; kernels {table[ds][m]['kernel_time_mean']:.2f}"
                    for m in methods] for ds in b["datasets"]]
    lines += _md_table(["data set"] + list(methods), rows)
    return lines


def _noisy_md(n: dict[str, Any]) -> list[str]:
    lines = ["## Noisy kernels: test accuracy (%) on the first split with r·d random features appended", ""]
    rows = []
    for row in n["rows"]:
        rows.append([f"{row['ratio']:g}", str(row.get("n_noise_features", "–")), str(row.get("n_kernels", "–"))]
                    + [f"{row['methods'][m]['accuracy']:.2f}" if m in row["methods"] else "–" for m in n["methods"]])
    return lines + _md_table(["r", "noise features", "M"] + list(n["methods"]), rows)


def _paths_md(paths: Sequence[dict[str, Any]], threshold: float) -> list[str]:
    lines: list[str] = []
    for p in paths:
        lines += [f"## Parameter path {p['label']}: {p['method']} on {p['dataset']}, {p['param']} varies "
                  f"(fixed: {_params(p['fixed'])}; M = {p['n_kernels']})", ""]
        rows = [[_fmt(pt["value"]), f"{100 * pt['accuracy']:.2f}", str(count_selected(pt["weights"], threshold)),
                 f"{pt['fit_time']:.3f}", f"{pt['dual_gap']:.1e}"] for pt in p["points"]]
        lines += _md_table([p["param"], "accuracy (%)", "selected kernels", "fit time (s)", "gap"], rows) + [""]
    return lines


def _tasks_md(summary: dict[str, Any]) -> list[str]:
    """The tables of a task experiment: one per data set and setting, estimators by measure (mean ± sd)."""
    t = summary["tasks"]
    lines = [f"## Task: {t['kind']} ({t['description']})", "",
             f"Mean ± sample standard deviation over the units (repeats x folds); grid points chosen by "
             f"{t['select_by']}.", ""]
    for ds, rows in t["table"].items():
        for setting, row in rows.items():
            title = ds if setting == "-" else f"{ds}, {setting}"
            lines += [f"### {title}", "", "| estimator | units | " + " | ".join(t["measures"]) + " | fit time (s) |",
                      "|---|---|" + "---|" * (len(t["measures"]) + 1)]
            for label in t["estimators"]:
                cell = row.get(label)
                if cell is None:
                    lines.append(f"| {label} | 0 | " + " | ".join("n/a" for _ in t["measures"]) + " | n/a |")
                    continue
                shown = [f"{cell[m]:.4f}" + (f" ± {cell[f'{m}_std']:.4f}" if cell["units"] > 1 else "")
                         for m in t["measures"]]
                lines.append(f"| {label} | {cell['units']} | " + " | ".join(shown)
                             + f" | {cell['fit_time_mean']:.2f} |")
            lines.append("")
    return lines


def markdown_report(summary: dict[str, Any]) -> str:
    """The Markdown page of an experiment summary (tables, then the figures that were written)."""
    lines = [f"# Experiment `{summary['name']}`", ""]
    lines += [f"Command: `{summary['command']}`  ", f"Finished units: {summary['finished_units']} of "
              f"{summary['planned_units']}; wall time of this invocation {summary['wall_time']:.1f} s; "
              f"sum of unit times {summary['unit_time_total']:.1f} s; {summary['environment']['cpu_count']} CPU(s).",
              ""]
    if summary.get("errors"):
        lines += ["**Failed units** (rerun to retry):", ""] + [f"- `{e['key']}`: {e['error']}"
                                                              for e in summary["errors"]] + [""]
    if summary.get("tasks"):
        lines += _tasks_md(summary)
    if summary.get("benchmark"):
        lines += _benchmark_md(summary["benchmark"], summary["data"]) + [""]
    if summary.get("noisy_kernels"):
        lines += _noisy_md(summary["noisy_kernels"]) + [""]
    if summary.get("paths"):
        lines += _paths_md(summary["paths"], summary["selection_threshold"])
    if summary.get("figures"):
        lines += ["## Figures", ""] + [f"![{Path(f).stem}]({f})" for f in summary["figures"]] + [""]
    elif summary.get("figures_note"):
        lines += [f"_{summary['figures_note']}_", ""]
    return "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------------------------------
def make_figures(summary: dict[str, Any], directory: Path) -> tuple[list[str], str]:
    """Write the figures of ``summary`` as PNG files under ``directory``.

    Returns the file names relative to ``directory.parent`` and a note ("" when matplotlib is available).
    Only the object-oriented matplotlib API is used, so no global backend is switched.
    """
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return [], "matplotlib is not installed: figures skipped (pip install 'multikernel[plot]')"
    directory.mkdir(parents=True, exist_ok=True)
    written: list[str] = []

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        fig.savefig(directory / name, dpi=120)
        written.append(f"{directory.name}/{name}")

    b = summary.get("benchmark")
    if b and any(b["table"][ds] for ds in b["datasets"]):
        datasets = [ds for ds in b["datasets"] if b["table"][ds]]
        methods = b["methods"]
        width = 0.8 / len(methods)
        for key, name, ylabel in (("accuracy", "accuracy.png", "test accuracy (%)"),
                                  ("n_selected", "selected_kernels.png", "selected kernels")):
            fig = Figure(figsize=(max(6, 1.6 * len(datasets)), 4))
            ax = fig.add_subplot()
            x = np.arange(len(datasets))
            for j, m in enumerate(methods):
                cells = [b["table"][ds].get(m) for ds in datasets]
                means = [np.mean(c[key]) if c else np.nan for c in cells]
                errs = [sample_std(c[key]) if c else 0.0 for c in cells]
                ax.bar(x + (j - (len(methods) - 1) / 2) * width, means, width, yerr=errs, label=m, capsize=2)
            ax.set_xticks(x, datasets)
            ax.set_ylabel(ylabel)
            if key == "accuracy":
                lows = [min(np.mean(c["accuracy"]) for c in b["table"][ds].values()) for ds in datasets]
                ax.set_ylim(max(0.0, min(lows) - 10.0), 100.0)
            ax.legend(fontsize="small", ncol=min(len(methods), 4))
            save(fig, name)
        for ds in datasets:
            present = [m for m in methods if m in b["table"][ds]]
            fig = Figure(figsize=(8, 1.3 * len(present) + 0.6))
            axes = fig.subplots(len(present), 1, sharex=True, squeeze=False)[:, 0]
            for ax, m in zip(axes, present, strict=True):
                w = np.asarray(b["table"][ds][m]["mean_weights"])
                ax.bar(np.arange(len(w)), w / w.sum() if w.sum() > 0 else w, width=1.0)
                ax.set_ylabel(m, rotation=0, ha="right", fontsize="small")
            axes[-1].set_xlabel("kernel index")
            fig.suptitle(f"{ds}: mean kernel weight shares over the repeats")
            save(fig, f"weights_{_slug(ds)}.png")
    n = summary.get("noisy_kernels")
    if n and any(row["methods"] for row in n["rows"]):
        fig = Figure(figsize=(6, 4))
        ax = fig.add_subplot()
        for m in n["methods"]:
            pts = [(row["ratio"], row["methods"][m]["accuracy"]) for row in n["rows"] if m in row["methods"]]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=m)
        ax.set_xlabel("noise ratio r (r·d random features appended)")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(f"noisy kernels: {summary['noisy_dataset']}")
        ax.legend(fontsize="small")
        save(fig, "noisy_kernels.png")
    for i, p in enumerate(summary.get("paths") or []):
        values = np.array([pt["value"] for pt in p["points"]], dtype=np.float64)
        W = np.array([np.atleast_2d(pt["weights"]).mean(axis=0) for pt in p["points"]])
        fig = Figure(figsize=(7, 4.5))
        ax = fig.add_subplot()
        top = set(np.argsort(-W.max(axis=0))[:6])
        for k in range(W.shape[1]):
            ax.plot(values, W[:, k], lw=1.5 if k in top else 0.6, alpha=1.0 if k in top else 0.5,
                    label=p["kernel_names"][k] if k in top else None)
        positive = values[np.isfinite(values)]
        if len(positive) and positive.min() > 0 and positive.max() / positive.min() > 20:
            ax.set_xscale("log")
        ax.set_xlabel(p["param"])
        ax.set_ylabel("kernel weight μ_m")
        ax2 = ax.twinx()
        ax2.plot(values, [100 * pt["accuracy"] for pt in p["points"]], "k--", marker="s", label="test accuracy")
        ax2.set_ylabel("test accuracy (%)")
        ax.legend(fontsize="x-small", loc="upper left")
        ax2.legend(fontsize="x-small", loc="upper right")
        ax.set_title(f"{p['method']} on {p['dataset']}: weights along {p['param']}")
        save(fig, f"path_{i}_{_slug(p['label'])}.png")
    t = summary.get("tasks")
    if t and t["kind"] == "multilabel_ranking":
        # the missing-label protocol: the selection measure against the fraction of relevant labels removed
        measure = t["select_by"]
        for ds, rows in t["table"].items():
            if len(rows) < 2 or not any(rows.values()):
                continue
            fig = Figure(figsize=(6, 4))
            ax = fig.add_subplot()
            for label in t["estimators"]:
                pts = [(float(setting.split("=")[1]), row[label][measure], row[label][f"{measure}_std"])
                       for setting, row in rows.items() if label in row]
                if pts:
                    x, y, e = zip(*pts, strict=True)
                    ax.errorbar(x, y, yerr=e, marker="o", capsize=2, label=label)
            ax.set_xlabel("fraction of each training sample's relevant labels removed")
            ax.set_ylabel(measure)
            ax.set_title(f"missing labels: {ds}")
            ax.legend(fontsize="small")
            save(fig, f"missing_{_slug(ds)}.png")
    return written, ""


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)
