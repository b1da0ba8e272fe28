"""Experiments: data sets x methods x repeated splits, with model selection, tables, JSON and figures.

``run_experiment(config_or_path)`` (and ``multikernel experiment CONFIG``) plans independent *units*
(one data set split and method of the benchmark, one noise ratio and method, one parameter path), runs the
unfinished ones in parallel (joblib), and appends each finished unit as one JSON line to
``<output>/units.jsonl``.  A rerun with the same configuration skips the finished units, so an interrupted
run continues where it stopped; a unit whose inputs changed (data, kernels, grid, solver settings, seeds)
has a different fingerprint and is run again.  From all finished units it writes ``results.md`` (tables),
``results.json`` (every number) and ``figures/*.png`` (with matplotlib).

See ``docs/experiments.md`` for the configuration format.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs
import numpy as np
from joblib import Parallel, delayed

from multikernel._version import __version__
from multikernel.config.checks import Axis, PartsChecker, check_data, check_kernels, grid_axes, prepare_output
from multikernel.config.datasets import load_data
from multikernel.config.generators import BENCHMARK_GENERATORS, generate
from multikernel.config.progress import Progress
from multikernel.engine import engine_backend
from multikernel.errors import ConfigError
from multikernel.experiments.config import (
    DatasetSpec,
    ExperimentConfig,
    ExperimentSettings,
    MethodSpec,
    dataset_fields,
    experiment_config_from_dict,
    experiment_config_to_dict,
    load_experiment_config,
)
from multikernel.experiments.report import make_figures, markdown_report, summarize_benchmark, summarize_noisy
from multikernel.experiments.tasks import check_task_experiment, plan_task_units, run_task_unit, summarize_tasks
from multikernel.experiments.units import Member, UnitTask, append_noise, run_unit, unit_stub

__all__ = [
    "run_experiment",
    "plan_experiment",
    "check_experiment",
    "load_experiment_config",
    "experiment_config_from_dict",
    "ExperimentConfig",
    "UNITS_FILE",
]

UNITS_FILE = "units.jsonl"


# --------------------------------------------------------------------------------------------------
# data and checks
# --------------------------------------------------------------------------------------------------
def _load_dataset(ds: DatasetSpec, index: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    path = f"datasets[{index}]"
    if ds.source in BENCHMARK_GENERATORS:
        X, y = generate(ds.source, ds.params, seed, path, BENCHMARK_GENERATORS)
    else:
        try:
            X, y, _ = load_data(ds.source, ds.format)
        except ConfigError as exc:
            raise ConfigError(str(exc).removeprefix("data.source: "), f"{path}.source") from exc
    check_data(X, y, ds.source, f"{path}.source")
    if ds.train_size is not None and not ds.train_size < len(y):
        raise ConfigError(f"train_size={ds.train_size} leaves no test samples ({len(y)} samples)",
                          f"{path}.train_size")
    return X, y


def _needed_datasets(config: ExperimentConfig) -> list[str]:
    names = [d.name for d in config.datasets] if config.experiment.benchmark else []
    if config.noisy_kernels is not None:
        names.append(config.noisy_kernels.dataset)
    names += [p.dataset for p in config.paths]
    return list(dict.fromkeys(names))


def check_experiment(config: ExperimentConfig) -> dict[str, Any]:
    """Check what a run needs short of fitting; return the loaded data ``{name: (X, y)}`` (``{name: TaskData}``
    for a task experiment, checked by :func:`multikernel.experiments.tasks.check_task_experiment`).

    This is what ``multikernel validate`` and ``multikernel experiment --dry-run`` run, and what
    :func:`run_experiment` runs before fitting.  It loads every data set the run uses (finite features,
    class labels), expands the kernels for each (and for each noisy width) and fits every builder on a few
    rows, and builds and probes every method's parts at every grid point and path value with ``M`` the
    number of kernels where it runs (see :mod:`multikernel.config.checks`).

    Raises
    ------
    ConfigError
        With the key path of the entry at fault.
    """
    if config.task is not None:
        return check_task_experiment(config)
    ex = config.experiment
    data: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    index = {d.name: i for i, d in enumerate(config.datasets)}
    for name in _needed_datasets(config):
        data[name] = _load_dataset(config.dataset(name), index[name], ex.seed)
    for name, (_, y) in data.items():
        if ex.cv_folds >= 2 and np.min(np.unique(y, return_counts=True)[1]) < ex.cv_folds:
            raise ConfigError(f"data set {name!r} has a class with fewer than cv_folds={ex.cv_folds} samples",
                              "experiment.cv_folds")
    standardize = config.preprocessing.standardize
    n_kernels = {name: len(check_kernels(config.kernels, X, standardize)) for name, (X, _) in data.items()}
    # Check each method's grid where it runs: every benchmark data set, and the noisy data set at each width.
    runs: set[tuple[int, int]] = set()  # (method index, number of kernels)
    if ex.benchmark:
        runs |= {(i, n_kernels[d.name]) for i in range(len(config.methods)) for d in config.datasets}
    noisy = config.noisy_kernels
    if noisy is not None:
        X = data[noisy.dataset][0]
        labels = noisy.methods or [m.display_name for m in config.methods]
        for r in noisy.ratios:
            M = len(check_kernels(config.kernels, append_noise(X, r, max(noisy.ratios), ex.seed), standardize))
            runs |= {(i, M) for i, m in enumerate(config.methods) if m.display_name in labels}
    checker = PartsChecker(config.solver)
    for i, M in sorted(runs):
        checker.check(config.methods[i], grid_axes(config.methods[i].grid, f"methods[{i}].grid"), M,
                      f"methods[{i}]", f"methods[{i}].grid")
    for i, p in enumerate(config.paths):
        j = next(k for k, m in enumerate(config.methods) if m.display_name == p.method)
        values = Axis(p.param, f"paths[{i}].param", tuple((v, f"paths[{i}].values[{k}]")
                                                          for k, v in enumerate(p.values)))
        fixed = [Axis(k, f"paths[{i}].fixed.{k}", ((v, f"paths[{i}].fixed.{k}"),)) for k, v in p.fixed.items()]
        checker.check(config.methods[j], [values, *fixed], n_kernels[p.dataset], f"methods[{j}]", f"paths[{i}]")
    return data


# --------------------------------------------------------------------------------------------------
# planning and fingerprints
# --------------------------------------------------------------------------------------------------
def _fingerprint(parts: dict[str, Any], X: np.ndarray, y: np.ndarray) -> str:
    h = hashlib.sha256(json.dumps(_jsonable(parts), sort_keys=True).encode())
    h.update(np.ascontiguousarray(X).tobytes())
    h.update(np.ascontiguousarray(y).tobytes())
    return h.hexdigest()[:16]


def _method_fields(m: MethodSpec) -> dict[str, Any]:
    """A method's fields for its fingerprint; ``warm_order`` only when set, so that the units of methods
    without it keep their fingerprints."""
    return attrs.asdict(m, filter=lambda a, v: not (a.name == "warm_order" and v is None))


def plan_experiment(config: ExperimentConfig, data: dict[str, Any]) -> list[UnitTask]:
    """Every split of ``config`` with all its units (finished or not), in a deterministic order."""
    if config.task is not None:
        return plan_task_units(config, data, _fingerprint)
    ex = config.experiment
    common = {"preprocessing": config.preprocessing, "kernels": config.kernels, "solver": config.solver}
    # What determines a unit's result (not n_jobs, the output folder or how the results are tabulated).
    protocol = {"seed": ex.seed, "test_fraction": ex.test_fraction, "cv_folds": ex.cv_folds,
                "warm_start": ex.warm_start, **{k: attrs.asdict(v) for k, v in common.items()},
                "version": __version__}
    if ex.cv_tol is not None:  # only when set, so that the units of configurations without it keep their fingerprints
        protocol["cv_tol"] = ex.cv_tol
    if ex.warm_order != "C":  # likewise: only when it differs from the order that came first
        protocol["warm_order"] = ex.warm_order
    tasks: list[UnitTask] = []

    def add(prefix: str, kind: str, ds: DatasetSpec, methods: list[MethodSpec], extra: dict[str, Any],
            **kw: Any) -> None:
        X, y = data[ds.name]
        base = {"kind": kind, "dataset": dataset_fields(ds), "protocol": protocol, **extra}
        members = [Member(key=f"{prefix}/{m.display_name}", method=m,
                          fingerprint=_fingerprint({**base, "method": _method_fields(m)}, X, y)) for m in methods]
        tasks.append(UnitTask(kind=kind, dataset=ds, X=X, y=y, members=members, settings=ex, **common, **kw))

    if ex.benchmark:
        for ds in config.datasets:
            for r in range(ex.repeats):
                add(f"benchmark/{ds.name}/{r}", "benchmark", ds, config.methods, {"repeat": r}, repeat=r, index=r)
    noisy = config.noisy_kernels
    if noisy is not None:
        ds = config.dataset(noisy.dataset)
        methods = [config.method(label) for label in noisy.methods] if noisy.methods else config.methods
        for i, ratio in enumerate(noisy.ratios):
            add(f"noisy/{ds.name}/{ratio:g}", "noisy", ds, methods,
                {"ratio": ratio, "max_ratio": max(noisy.ratios), "repeat": noisy.repeat},
                repeat=noisy.repeat, index=i, ratio=ratio, max_ratio=max(noisy.ratios))
    for i, p in enumerate(config.paths):
        ds = config.dataset(p.dataset)
        task_prefix = f"path/{i}"
        add(task_prefix, "path", ds, [config.method(p.method)], {"path": attrs.asdict(p)}, index=i, path=p)
        tasks[-1].members[0].key = f"{task_prefix}/{p.label or p.method}"
    return tasks


def _read_units(path: Path) -> dict[str, dict[str, Any]]:
    """Finished records by key; a torn last line (an interrupted write) and failed units are ignored."""
    done: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and "key" in rec and "error" not in rec:
            done[rec["key"]] = rec
    return done


def _append(path: Path, record: dict[str, Any]) -> None:
    # One write per line, flushed and synced: a crash leaves at most one torn line, which is skipped.
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(_jsonable(record)) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _jsonable(value: Any) -> Any:
    """Plain JSON types; non-finite floats as the strings "inf", "-inf", "nan" (JSON has no such numbers)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, Path):
        return str(value)
    return value


# --------------------------------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------------------------------
def _run(task: UnitTask) -> list[dict[str, Any]]:
    """One unit task of any kind (a module-level function: joblib sends it to worker processes)."""
    return run_task_unit(task) if task.kind == "task" else run_unit(task)


def _run_data(task: UnitTask, X: np.ndarray, y: np.ndarray) -> list[dict[str, Any]]:
    """:func:`_run` on ``task`` (a :func:`~multikernel.experiments.units.unit_stub`) with its data set ``X, y``
    given apart, so that a parallel backend ships each data set once for all its splits (joblib's Dask backend
    scatters the arrays given as task arguments; ``task`` itself is small)."""
    return _run(attrs.evolve(task, X=X, y=y))


def _execute(tasks: list[UnitTask], units_path: Path, settings: ExperimentSettings, progress: bool | None,
             n_done: int) -> Iterable[dict[str, Any]]:
    total = sum(len(t.members) for t in tasks) + n_done
    n_jobs = settings.n_jobs
    dask = settings.engine == "dask"
    # The data sets travel as separate arguments so that a backend sends each once: joblib's Dask backend
    # broadcasts the scattered arrays to every worker, loky memory-maps large arrays.
    arrays = list({id(a): a for t in tasks for a in (t.X, t.y)}.values())
    with Progress(total, "experiment", "unit", show=progress, initial=n_done) as bar, \
            engine_backend(settings.engine, settings.scheduler, scatter=arrays if dask else ()):
        if not dask and (n_jobs or 1) == 1:
            # In-process: no pickling, and plugins registered at run time are visible.
            results: Iterable[list[dict[str, Any]]] = (_run(t) for t in tasks)
        else:
            # One unit per task (batch_size=1): a lost worker loses only the units it was running, which
            # the Dask scheduler runs again elsewhere; the records are written here, once each, as they return.
            results = Parallel(n_jobs=-1 if dask and n_jobs is None else n_jobs, batch_size=1,
                               return_as="generator_unordered")(
                delayed(_run_data)(unit_stub(t), t.X, t.y) for t in tasks)
        for records in results:
            for rec in records:
                _append(units_path, rec)
                if "error" in rec:
                    bar.done(f"{rec['key']} failed: {rec['error']}")
                else:
                    accuracy = f"accuracy {rec['accuracy']:.4f}, " if "accuracy" in rec else ""
                    bar.done(f"{rec['key']}: {accuracy}{rec.get('unit_time', 0.0):.1f} s")
                yield rec


def run_experiment(config_or_path: ExperimentConfig | dict[str, Any] | str | Path, out: str | Path | None = None,
                   n_jobs: int | None = None, progress: bool | None = None, json_path: str | Path | None = None,
                   command: str | None = None) -> dict[str, Any]:
    """Run (or continue) an experiment and write its tables, JSON and figures.

    Parameters
    ----------
    config_or_path : ExperimentConfig, dict or path
        A configuration, its dict form (relative paths resolved against the current directory) or a TOML
        file (relative paths resolved against the file's folder).
    out : path, optional
        Output folder, replacing ``experiment.output`` (relative to the working directory).
    n_jobs : int, optional
        Parallel units (joblib processes), replacing ``experiment.n_jobs``; ``-1`` for every core.
    progress : bool, optional
        ``False``: silent; otherwise a bar when stderr is a terminal, one line per finished unit when not.
    json_path : path, optional
        Also write the summary JSON there (relative to the working directory; its folder is created before
        anything runs).
    command : str, optional
        The command line to quote in ``results.md``.

    Returns
    -------
    dict
        The summary written to ``results.json``: per-method tables, noisy-kernel and path results, every
        unit record, failed units under ``errors``, timings and environment.
    """
    start = time.perf_counter()
    if isinstance(config_or_path, ExperimentConfig):
        config = config_or_path
    elif isinstance(config_or_path, dict):
        config = experiment_config_from_dict(config_or_path)
    else:
        config = load_experiment_config(config_or_path)
    # Paths given here (the command line's --out, --json) are relative to the working directory.
    overrides = {"output": str(Path(out).resolve())} if out is not None else {}
    if n_jobs is not None:
        overrides["n_jobs"] = n_jobs
    if overrides:  # a copy: the caller's configuration stays as it was
        try:
            config = attrs.evolve(config, experiment=attrs.evolve(config.experiment, **overrides))
        except ValueError as exc:  # the settings' own validators
            raise ConfigError(str(exc), "n_jobs") from exc
    prepare_output(json_path, "json_path")
    data = check_experiment(config)
    tasks = plan_experiment(config, data)
    members = [m for t in tasks for m in t.members]
    outdir = Path(config.experiment.output)
    outdir.mkdir(parents=True, exist_ok=True)
    units_path = outdir / UNITS_FILE
    previous = _read_units(units_path)
    finished = {m.key: previous[m.key] for m in members
                if m.key in previous and previous[m.key]["fingerprint"] == m.fingerprint}
    pending = []
    for t in tasks:  # a split runs only its unfinished units (its kernels are still built once)
        todo = [m for m in t.members if m.key not in finished]
        if todo:
            pending.append(attrs.evolve(t, members=todo))
    errors: list[dict[str, Any]] = []
    for rec in _execute(pending, units_path, config.experiment, progress, len(finished)):
        if "error" in rec:
            errors.append({"key": rec["key"], "error": rec["error"], "traceback": rec.get("traceback", "")})
        else:
            finished[rec["key"]] = rec
    summary = summarize(config, data, [finished[m.key] for m in members if m.key in finished], len(members))
    summary.update(errors=errors, wall_time=time.perf_counter() - start,
                   command=command or f"multikernel experiment {config.experiment.name}")
    _write_outputs(summary, outdir, json_path)
    return summary


def _data_info(X: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None) -> dict[str, Any]:
    info = {"n_samples": int(X.shape[0]), "n_features": int(np.prod(X.shape[1:]))}
    if y.ndim == 2:
        info["n_labels"] = int(y.shape[1])
    else:
        info["n_classes"] = int(len(np.unique(y)))
    if groups is not None:
        info["n_bags"] = int(len(np.unique(groups)))
    return info


def _portable_paths(summary: dict[str, Any], output: str) -> dict[str, Any]:
    """A copy of ``summary`` whose data files and output folder are named relative to the results' folder
    ``output``, so that a committed ``results.json`` names no path of the machine it ran on (generator names
    such as ``"g241c"`` stay as they are)."""
    out = Path(output)
    sources = {ds["source"] for ds in summary["config"].get("datasets") or []
               if isinstance(ds.get("source"), str) and Path(ds["source"]).is_absolute()}
    renamed = {src: os.path.relpath(src, out) for src in sources}
    renamed[summary["config"].get("experiment", {}).get("output")] = "."

    def portable(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: portable(v) for k, v in value.items()}
        if isinstance(value, list):
            return [portable(v) for v in value]
        return renamed.get(value, value) if isinstance(value, str) else value

    return portable(summary)


def summarize(config: ExperimentConfig, data: dict[str, Any], records: list[dict[str, Any]], planned: int
              ) -> dict[str, Any]:
    """The summary of the finished ``records`` of ``config`` (tables, every number, environment)."""
    ex = config.experiment
    labels = [m.display_name for m in config.methods]
    summary: dict[str, Any] = {
        "name": ex.name, "config": experiment_config_to_dict(config), "planned_units": planned,
        "finished_units": len(records), "unit_time_total": float(sum(r["unit_time"] for r in records)),
        "selection_threshold": ex.selection_threshold,
        "data": {name: (_data_info(d.X, d.y, d.groups) if config.task is not None else _data_info(*d))
                 for name, d in data.items()},
        "environment": {"multikernel": __version__, "python": sys.version.split()[0],
                        "platform": platform.platform(), "cpu_count": os.cpu_count()},
        "units": records,
    }
    if config.task is not None:
        summary["tasks"] = summarize_tasks(records, config)
        summary["paths"] = []
        return summary
    if ex.benchmark:
        summary["benchmark"] = summarize_benchmark([r for r in records if r["kind"] == "benchmark"],
                                                   [d.name for d in config.datasets], labels, ex.selection_threshold)
    if config.noisy_kernels is not None:
        noisy = config.noisy_kernels
        summary["noisy_dataset"] = noisy.dataset
        summary["noisy_kernels"] = summarize_noisy([r for r in records if r["kind"] == "noisy"], noisy.ratios,
                                                   noisy.methods or labels, ex.selection_threshold)
    paths = []
    for i, p in enumerate(config.paths):
        rec = next((r for r in records if r["kind"] == "path" and r["index"] == i), None)
        if rec is not None:
            paths.append({**rec, "label": p.label or p.method, "dataset": p.dataset, "method": p.method})
    summary["paths"] = paths
    return summary


def _write_outputs(summary: dict[str, Any], outdir: Path, json_path: str | Path | None) -> None:
    figures, note = make_figures(summary, outdir / "figures")
    summary["figures"], summary["figures_note"] = figures, note
    (outdir / "results.md").write_text(markdown_report(summary), encoding="utf-8")
    text = json.dumps(_jsonable(_portable_paths(summary, str(outdir))), indent=1)
    (outdir / "results.json").write_text(text + "\n", encoding="utf-8")
    if json_path is not None:
        if str(json_path) == "-":
            print(text)
        else:
            Path(json_path).write_text(text + "\n", encoding="utf-8")

