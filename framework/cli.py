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
                         description="Fit and evaluate what CONFIG says; without CONFIG, run the embedded default "
                                     "(breast cancer data, average kernel vs a learned combination).")
    run.add_argument("config", nargs="?", type=Path, help="a TOML configuration file (see docs/config.md)")
    run.add_argument("--json", metavar="PATH", help="also write the report as JSON to PATH ('-' for stdout)")
    run.add_argument("--save", metavar="PATH", type=Path,
                     help="save the fitted model of the first repeat (.npz); with several models, one file "
                          "per model: PATH-<label>.npz")
    run.add_argument("-q", "--quiet", action="store_true",
                     help="no progress (bar or log lines on stderr) and no report on stdout")

    val = sub.add_parser("validate", help="check a run or experiment config without fitting anything",
                         description="Check a run or an experiment configuration (the embedded default without "
                                     "CONFIG) exactly as `run` and `experiment` check it before fitting: syntax, "
                                     "keys, values, plugin names, kernel parameters, every grid point, the data.")
    val.add_argument("config", nargs="?", type=Path, help="a run or experiment TOML file")
    val.add_argument("--strict", action="store_true",
                     help="also refuse (exit 2) a config that leaves a result-deciding part (method parts and their "
                          "parameters, C, tol, kernels, normalization, seeds, ...) to a default; lists each key path")

    plugins = sub.add_parser("plugins", help="list every registered plugin by kind (task estimators with their task "
                                             "kind), with its origin package")
    plugins.add_argument("--json", action="store_true", help="print the list as JSON")

    cfg = sub.add_parser("show-config", help="print a config (the default without CONFIG) as complete TOML, with "
                                             "relative paths resolved")
    cfg.add_argument("config", nargs="?", type=Path)

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


def _load(path: Path | None, experiment_ok: bool = False) -> Any:
    """The configuration in ``path`` (the embedded default run without one); relative paths in it are
    resolved against its folder.  An experiment configuration is accepted with ``experiment_ok``."""
    from multikernel.config.schema import config_from_dict, default_config, read_toml
    from multikernel.experiments.config import experiment_config_from_dict, is_experiment_config

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


def _format_report(report: dict[str, Any]) -> str:
    from multikernel.experiments.report import format_mean

    d = report["data"]
    lines = [f"data: {d['source']}  ({d['n_samples']} samples, {d['n_features']} features, "
             f"{d['n_classes']} classes, {d['n_kernels']} base kernels)", ""]
    header = f"{'model':<18} {'accuracy':>17} {'kernels':>8} {'fit time':>9} {'iters':>6} {'gap':>9}"
    lines += [header, "-" * len(header)]
    for m in report["models"]:
        rep = m["repeats"][0]
        iters = rep["n_iter"] if isinstance(rep["n_iter"], int) else max(rep["n_iter"])
        gap = rep["dual_gap"] if isinstance(rep["dual_gap"], float) else max(rep["dual_gap"])
        # A standard deviation needs several repeats: a single one shows the accuracy alone.
        spread = f" ± {m['accuracy_std']:.4f}" if len(m["repeats"]) > 1 else " " * 9
        lines.append(f"{m['label']:<18} {m['accuracy_mean']:>8.4f}{spread} "
                     f"{format_mean(m['n_selected_mean'], len(m['repeats'])):>8} {m['fit_time_mean']:>8.2f}s "
                     f"{iters:>6} {gap:>9.2e}")
    lines.append("")
    for m in report["models"]:
        tops = ", ".join(f"{t['kernel']}: {t['weight']:.3f}" for t in m["top_kernels"])
        lines.append(f"top kernels of {m['label']}: {tops}")
    lines.append(f"\ntotal time {report['total_time']:.2f}s")
    return "\n".join(lines)


def _cmd_run(args: argparse.Namespace) -> int:
    from multikernel.config.checks import prepare_output
    from multikernel.config.runner import run_config

    config = _load(args.config)
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
            target = args.save.with_name(f"{args.save.stem}-{model['label']}.npz") if many else args.save
            est.save(target)
            if not args.quiet:
                print(f"saved {model['label']} to {target}")
    return EXIT_OK


def _cmd_validate(args: argparse.Namespace) -> int:
    from multikernel.config.runner import check_config
    from multikernel.experiments.config import ExperimentConfig

    config = _load(args.config, experiment_ok=True)
    name = args.config or "the embedded default"
    if isinstance(config, ExperimentConfig):
        print(_experiment_plan(name, config, None))
    else:
        X, _, _ = check_config(config)
        print(f"{name}: valid ({len(config.models)} model(s); data {X.shape[0]} x {X.shape[1]})")
    if args.strict:
        from multikernel.experiments.strict import check_strict, strict_source

        check_strict(strict_source(args.config))
        print(f"{name}: strict: every result-deciding part is pinned")
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

    config = _load(args.config, experiment_ok=True)
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


COMMANDS = {"run": _cmd_run, "validate": _cmd_validate, "plugins": _cmd_plugins, "show-config": _cmd_show_config,
            "experiment": _cmd_experiment}


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
