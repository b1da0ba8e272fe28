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
    run.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no report on stdout")

    val = sub.add_parser("validate", help="check a config without running it",
                         description="Check a configuration: syntax, keys, values, plugin names and the data.")
    val.add_argument("config", type=Path)

    plugins = sub.add_parser("plugins", help="list every registered plugin by kind, with its origin package")
    plugins.add_argument("--json", action="store_true", help="print the list as JSON")

    cfg = sub.add_parser("show-config", help="print a config (the default without CONFIG) as complete TOML")
    cfg.add_argument("config", nargs="?", type=Path)

    exp = sub.add_parser("experiment", help="run or continue an experiment: data sets x methods x splits, "
                                            "with tables, JSON and figures",
                         description="Run the experiment CONFIG describes (see docs/experiments.md). Finished "
                                     "units are kept in OUT/units.jsonl; rerunning continues an interrupted run.")
    exp.add_argument("config", type=Path, help="an experiment TOML file")
    exp.add_argument("--out", metavar="DIR", type=Path, help="output folder (default: experiment.output)")
    exp.add_argument("--n-jobs", metavar="N", type=int, help="parallel units (default: experiment.n_jobs)")
    exp.add_argument("--json", metavar="PATH", help="also write the summary JSON to PATH ('-' for stdout)")
    exp.add_argument("--dry-run", action="store_true",
                     help="check the config, the data and every grid point, print the plan, fit nothing")
    exp.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary on stdout")
    return parser


def _load(path: Path | None) -> Any:
    from multikernel.config.schema import default_config, load_config

    return default_config() if path is None else load_config(path)


def _format_report(report: dict[str, Any]) -> str:
    d = report["data"]
    lines = [f"data: {d['source']}  ({d['n_samples']} samples, {d['n_features']} features, "
             f"{d['n_classes']} classes, {d['n_kernels']} base kernels)", ""]
    header = f"{'model':<18} {'accuracy':>17} {'kernels':>8} {'fit time':>9} {'iters':>6} {'gap':>9}"
    lines += [header, "-" * len(header)]
    for m in report["models"]:
        rep = m["repeats"][0]
        iters = rep["n_iter"] if isinstance(rep["n_iter"], int) else max(rep["n_iter"])
        gap = rep["dual_gap"] if isinstance(rep["dual_gap"], float) else max(rep["dual_gap"])
        lines.append(f"{m['label']:<18} {m['accuracy_mean']:>8.4f} ± {m['accuracy_std']:.4f} "
                     f"{m['n_selected_mean']:>8.1f} {m['fit_time_mean']:>8.2f}s {iters:>6} {gap:>9.2e}")
    lines.append("")
    for m in report["models"]:
        tops = ", ".join(f"{t['kernel']}: {t['weight']:.3f}" for t in m["top_kernels"])
        lines.append(f"top kernels of {m['label']}: {tops}")
    lines.append(f"\ntotal time {report['total_time']:.2f}s")
    return "\n".join(lines)


def _cmd_run(args: argparse.Namespace) -> int:
    from multikernel.config.runner import run_config

    config = _load(args.config)
    report = run_config(config, progress=False if args.quiet else None)
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

    config = _load(args.config)
    X, y, _ = check_config(config)
    print(f"{args.config}: valid ({len(config.models)} model(s); data {X.shape[0]} x {X.shape[1]})")
    return EXIT_OK


def _cmd_plugins(args: argparse.Namespace) -> int:
    from multikernel.core.registry import get_registry

    infos = get_registry().plugins()
    if args.json:
        print(json.dumps([{"kind": i.kind, "name": i.name, "origin": i.origin} for i in infos], indent=2))
        return EXIT_OK
    kind = None
    for info in infos:
        if info.kind != kind:
            kind = info.kind
            print(f"{kind}:")
        doc = (getattr(info.obj, "summary", None) or (info.obj.__doc__ or "")).strip().splitlines()
        print(f"  {info.name:<20} {info.origin:<28} {doc[0] if doc else ''}")
    return EXIT_OK


def _cmd_show_config(args: argparse.Namespace) -> int:
    from multikernel.config.schema import config_to_toml

    print(config_to_toml(_load(args.config)), end="")
    return EXIT_OK


def _cmd_experiment(args: argparse.Namespace) -> int:
    from multikernel.experiments.runner import check_experiment, load_experiment_config, plan_experiment, run_experiment

    if args.dry_run:
        config = load_experiment_config(args.config)
        splits = plan_experiment(config, check_experiment(config))
        kinds = {k: sum(len(s.members) for s in splits if s.kind == k) for k in ("benchmark", "noisy", "path")}
        print(f"{args.config}: valid; {sum(kinds.values())} units "
              f"({', '.join(f'{n} {k}' for k, n in kinds.items() if n)}) in {len(splits)} splits; "
              f"output {args.out or config.experiment.output}")
        return EXIT_OK
    options = ([f"--out {args.out}"] if args.out else []) + ([f"--n-jobs {args.n_jobs}"] if args.n_jobs else [])
    command = " ".join(["multikernel", "experiment", str(args.config), *options])
    summary = run_experiment(args.config, out=args.out, n_jobs=args.n_jobs, progress=False if args.quiet else None,
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
