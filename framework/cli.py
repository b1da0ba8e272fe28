"""The ``multikernel`` command line.

Exit codes: 0 success, 1 any other failure, 2 usage or configuration errors (message on stderr),
130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from multikernel._version import __version__
from multikernel.errors import ConfigError, ModelFormatError, PluginError

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="multikernel",
        description="Learning with multiple kernels: fit, evaluate and inspect MKL models.",
        epilog="Exit codes: 0 success, 1 failure, 2 usage or configuration error.",
    )
    parser.add_argument("--version", action="version", version=f"multikernel {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    run = sub.add_parser("run", help="fit and evaluate the models of a config (the embedded default without one)",
                         description="Fit and evaluate what CONFIG says (any registered estimator of any task kind); "
                                     "without CONFIG, run the embedded default (breast cancer data, soft margin "
                                     "MKL against the average kernel and L1-MKL); --example NAME runs an embedded "
                                     "example (`multikernel examples` lists them).")
    _config_argument(run, "a TOML configuration file (see docs/config.md)")
    run.add_argument("--json", metavar="PATH", help="also write the report as JSON to PATH ('-' for stdout)")
    run.add_argument("--save", metavar="PATH", type=Path,
                     help="save the fitted model of the first repeat (.npz); with several models, one file "
                          "per model: PATH-<label>.npz")
    run.add_argument("-q", "--quiet", action="store_true",
                     help="no progress (bar or log lines on stderr) and no report on stdout")

    val = sub.add_parser("validate", help="check a run or experiment config without fitting anything",
                         description="Check a run or an experiment configuration (the embedded default without "
                                     "CONFIG) exactly as `run` and `experiment` check it before fitting: syntax, "
                                     "keys, values, plugin names, kernel parameters, every grid point, the data, "
                                     "and a fit of every model on a few samples.")
    _config_argument(val, "a run or experiment TOML file")
    val.add_argument("--strict", action="store_true",
                     help="also refuse (exit 2) a config that leaves a result-deciding part (method parts and their "
                          "parameters, C, tol, kernels, normalization, seeds, ...) to a default; lists each key path")

    examples = sub.add_parser("examples", help="list the embedded examples that `run --example NAME` runs")
    examples.add_argument("--json", action="store_true", help="print the list as JSON")

    plugins = sub.add_parser("plugins", help="list every registered plugin by kind (task estimators with their task "
                                             "kind), with its origin package")
    plugins.add_argument("--json", action="store_true", help="print the list as JSON")

    cfg = sub.add_parser("show-config", help="print a config (the default without CONFIG) as complete TOML, with "
                                             "relative paths resolved")
    _config_argument(cfg, "a run or experiment TOML file")

    exp = sub.add_parser("experiment", help="run or continue an experiment: data sets x methods x splits, "
                                            "with tables, JSON and figures",
                         description="Run the experiment CONFIG describes (see docs/experiments.md). Finished "
                                     "units are kept in OUT/units.jsonl; rerunning continues an interrupted run.")
    exp.add_argument("config", type=Path, help="an experiment TOML file")
    exp.add_argument("--out", metavar="DIR", type=Path, help="output folder (default: experiment.output)")
    exp.add_argument("--n-jobs", metavar="N", type=_n_jobs, help="parallel units (default: experiment.n_jobs)")
    exp.add_argument("--json", metavar="PATH", help="also write the summary JSON to PATH ('-' for stdout)")
    exp.add_argument("--dry-run", action="store_true",
                     help="check the config, the data and every grid point, print the plan, fit nothing")
    exp.add_argument("-q", "--quiet", action="store_true",
                     help="no progress (bar or log lines on stderr) and no summary on stdout")
    return parser


def _config_argument(parser: argparse.ArgumentParser, help: str) -> None:
    """CONFIG, or ``--example NAME`` (an embedded example) in its place."""
    parser.add_argument("config", nargs="?", type=Path, help=help)
    parser.add_argument("--example", metavar="NAME",
                        help="an embedded example instead of CONFIG (`multikernel examples` lists them)")


def _n_jobs(text: str) -> int:
    from multikernel.config.schema import valid_n_jobs

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    try:
        valid_n_jobs(None, None, value)  # the check of experiment.n_jobs
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{value} {exc}") from None
    return value


def _load(args: argparse.Namespace, experiment_ok: bool = False) -> Any:
    """The configuration of ``args.config`` (``args.example``, an embedded example; the embedded default run
    without either); relative paths in it are resolved against its folder.  An experiment configuration is
    accepted with ``experiment_ok``."""
    from multikernel.config.examples import load_example
    from multikernel.config.schema import config_from_dict, default_config, read_toml
    from multikernel.experiments.config import experiment_config_from_dict, is_experiment_config

    path = args.config
    if args.example is not None:
        if path is not None:
            raise ConfigError(f"give CONFIG ({path}) or --example {args.example}, not both")
        return load_example(args.example)
    if path is None:
        return default_config()
    data = read_toml(path)
    base = path.resolve().parent
    if is_experiment_config(data):
        if not experiment_ok:
            raise ConfigError(f"{path} is an experiment configuration; run it with `multikernel experiment {path}`")
        return experiment_config_from_dict(data, base_dir=base)
    return config_from_dict(data, base_dir=base)


def _experiment_plan(path: Path, config: Any, out: Path | None) -> str:
    """Check an experiment as a run would (data, kernels, every grid point) and describe its plan."""
    from multikernel.experiments.runner import check_experiment, plan_experiment

    splits = plan_experiment(config, check_experiment(config))
    kinds = {k: sum(len(s.members) for s in splits if s.kind == k) for k in ("benchmark", "noisy", "path", "task")}
    return (f"{path}: valid; {sum(kinds.values())} units ({', '.join(f'{n} {k}' for k, n in kinds.items() if n)}) "
            f"in {len(splits)} splits; output {out.resolve() if out else config.experiment.output}")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """Columns as wide as their widest cell, the first left-aligned and the others right-aligned under their
    headers."""
    widths = [max(len(r[j]) for r in [header, *rows]) for j in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(cells, widths,
                                                                                             strict=True)))
    return [line(header), "-" * len(line(header)), *(line(r) for r in rows)]


def _format_report(report: dict[str, Any]) -> str:
    import numpy as np

    from multikernel.experiments.report import format_mean

    d, task = report["data"], report["task"]
    shape = [f"{d['n_samples']} samples", f"{d['n_features']} features"]
    shape += [f"{d[k]} {k.removeprefix('n_')}" for k in ("n_classes", "n_labels") if d.get(k) is not None]
    shape += [f"{d['n_kernels']} base kernels"] if d.get("n_kernels") is not None else []
    lines = [f"data: {d['source']}  ({', '.join(shape)})", f"task: {task['kind']}: {task['description']}", ""]
    measures = task["measures"]
    mkl = any("n_selected_mean" in m for m in report["models"])
    header = ["model", *measures, *(["kernels"] if mkl else []), "fit time", *(["iters", "gap"] if mkl else [])]
    rows = []
    for m in report["models"]:
        reps = m["repeats"]
        # A standard deviation needs several evaluations: a single one shows the measure alone.
        cells = [m["label"], *(f"{m[f'{k}_mean']:.4f}" + (f" ± {m[f'{k}_std']:.4f}" if len(reps) > 1 else "")
                               for k in measures)]
        if mkl:
            cells.append(format_mean(m["n_selected_mean"], len(reps)) if "n_selected_mean" in m else "-")
        cells.append(f"{m['fit_time_mean']:.2f}s")
        if mkl:
            iters = [v for r in reps for v in np.ravel(r.get("n_iter", []))]
            gaps = [v for r in reps for v in np.ravel(r.get("dual_gap", []))]
            cells += [str(int(max(iters))) if iters else "-", f"{max(gaps):.2e}" if gaps else "-"]
        rows.append(cells)
    lines += _table(header, rows)
    lines.append("")
    for m in report["models"]:
        if m.get("top_kernels"):
            tops = ", ".join(f"{t['kernel']}: {t['weight']:.3f}" for t in m["top_kernels"])
            lines.append(f"top kernels of {m['label']}: {tops}")
    lines.append(f"\ntotal time {report['total_time']:.2f}s")
    return "\n".join(lines)


def _cmd_run(args: argparse.Namespace) -> int:
    from multikernel.config.checks import prepare_output
    from multikernel.config.runner import run_config

    config = _load(args)
    # Paths on the command line are relative to the working directory; their folders are created now, so
    # that a missing one does not fail the run after everything is fitted.
    prepare_output(args.json, "--json")
    prepare_output(args.save, "--save")
    report = run_config(config, progress=not args.quiet)
    estimators = report.pop("_estimators")
    if not args.quiet:
        print(_format_report(report))
    if args.json:
        text = json.dumps(report, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")
    if args.save:
        many = len(estimators) > 1
        for model, est in zip(report["models"], estimators, strict=True):
            target = args.save.with_name(f"{args.save.stem}-{model['label']}{args.save.suffix or '.npz'}") \
                if many else args.save
            target = _save(est, target)
            if not args.quiet:
                print(f"saved {model['label']} to {target}")
    return EXIT_OK


def _save(estimator: Any, target: Path) -> Path:
    """Save a fitted model: the library's safe format (``.npz``, no code run on loading) where it can hold the
    model, else joblib (``.joblib``: scikit-learn's estimators, or a library model wrapping one); returns the file
    written."""
    if hasattr(estimator, "save"):
        try:
            estimator.save(target)
            return target
        except ValueError:  # what the safe format cannot hold (an estimator of another library inside)
            pass
    import joblib

    target = target.with_suffix(".joblib")
    joblib.dump(estimator, target)
    return target


def _cmd_validate(args: argparse.Namespace) -> int:
    from multikernel.config.runner import check_config
    from multikernel.experiments.config import ExperimentConfig

    config = _load(args, experiment_ok=True)
    name = args.config or (f"example {args.example!r}" if args.example else "the embedded default")
    if isinstance(config, ExperimentConfig):
        print(_experiment_plan(name, config, None))
    else:
        plan = check_config(config)
        shape = " x ".join(str(n) for n in plan.data.X.shape)
        print(f"{name}: valid ({len(config.models)} model(s); {plan.task.kind} task; data {shape})")
    if args.strict:
        from multikernel.experiments.strict import check_strict, strict_source

        check_strict(strict_source(args.config, args.example))
        print(f"{name}: strict: every result-deciding part is pinned")
    return EXIT_OK


def _cmd_examples(args: argparse.Namespace) -> int:
    from multikernel.config.examples import examples

    listed = examples()
    if args.json:
        print(json.dumps([{"name": e.name, "task": e.task, "summary": e.summary} for e in listed], indent=2))
        return EXIT_OK
    width = max(len(e.name) for e in listed)
    for e in listed:
        print(f"  {e.name:<{width}}  [{e.task}] {e.summary}")
    print("\nrun one with `multikernel run --example NAME`; print its configuration with "
          "`multikernel show-config --example NAME`")
    return EXIT_OK


def _cmd_plugins(args: argparse.Namespace) -> int:
    from multikernel.core.registry import get_registry

    infos = get_registry().plugins()
    if args.json:
        print(json.dumps([{"kind": i.kind, "name": i.name, "origin": i.origin,
                           **({"task": i.obj.task} if i.kind == "estimator" else {})} for i in infos], indent=2))
        return EXIT_OK
    kind = None
    for info in infos:
        if info.kind != kind:
            kind = info.kind
            print(f"{kind}:")
        doc = (getattr(info.obj, "summary", None) or (info.obj.__doc__ or "")).strip().splitlines()
        task = f"[{info.obj.task}] " if info.kind == "estimator" else ""
        print(f"  {info.name:<20} {info.origin:<28} {task}{doc[0] if doc else ''}")
    return EXIT_OK


def _cmd_show_config(args: argparse.Namespace) -> int:
    import tomli_w

    from multikernel.config.schema import RunConfig, config_to_toml
    from multikernel.experiments.config import experiment_config_to_dict

    config = _load(args, experiment_ok=True)
    print(config_to_toml(config) if isinstance(config, RunConfig) else
          tomli_w.dumps(experiment_config_to_dict(config)), end="")
    return EXIT_OK


def _cmd_experiment(args: argparse.Namespace) -> int:
    from multikernel.experiments.runner import load_experiment_config, run_experiment

    if args.dry_run:
        print(_experiment_plan(args.config, load_experiment_config(args.config), args.out))
        return EXIT_OK
    options = ([f"--out {args.out}"] if args.out else []) + ([f"--n-jobs {args.n_jobs}"] if args.n_jobs else [])
    command = " ".join(["multikernel", "experiment", str(args.config), *options])
    summary = run_experiment(args.config, out=args.out, n_jobs=args.n_jobs, progress=not args.quiet,
                             json_path=args.json, command=command)
    outdir = Path(summary["config"]["experiment"]["output"])
    if not args.quiet:
        print((outdir / "results.md").read_text(encoding="utf-8"))
        print(f"results in {outdir} (results.md, results.json, figures/)")
        if summary["figures_note"]:
            print(summary["figures_note"])
    for err in summary["errors"]:
        print(f"multikernel: unit {err['key']} failed: {err['error']}", file=sys.stderr)
    return EXIT_FAILURE if summary["errors"] else EXIT_OK


COMMANDS = {"run": _cmd_run, "validate": _cmd_validate, "examples": _cmd_examples, "plugins": _cmd_plugins,
            "show-config": _cmd_show_config, "experiment": _cmd_experiment}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``multikernel`` console script; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (ConfigError, PluginError) as exc:
        print(f"multikernel: configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        extra = "; finished experiment units are kept, rerun to continue" if args.command == "experiment" else ""
        print(f"multikernel: interrupted{extra}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (ModelFormatError, ValueError, OSError, MemoryError) as exc:
        print(f"multikernel: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
