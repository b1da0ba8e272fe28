"""An experiment protocol run by two versions of the library, alternately, in one run: same table, time ratio.

Used to check that a change of the fit path (for example the fit core of issue 11) gives the same results
and is not slower.  The old version is an installed copy of an earlier commit with its own interpreter:

    git worktree add --detach /tmp/old <commit> && python -m venv /tmp/old/.venv && \
        /tmp/old/.venv/bin/pip install -e /tmp/old
    python benchmarks/bench_core_rerun.py docs/experiments/soft-margin-mkl.toml --old-python /tmp/old/.venv/bin/python \
        [--rounds 2] [--datasets heart,ionosphere] [--repeats 3]

Each round runs old then new (then new then old in the next round, so a drift of the machine's load hits both)
on a copy of the config reduced to ``--datasets`` and ``--repeats``, with the data paths made absolute.  The
script prints every (data set, method) accuracy of both versions with the largest difference, the wall times
and the new/old ratio.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tomli_w

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib


def reduced_config(path: Path, datasets: list[str] | None, repeats: int | None, out: Path) -> Path:
    """A copy of the config with fewer data sets / repeats, absolute data paths and ``out`` as output."""
    cfg = tomllib.loads(path.read_text())
    if datasets:
        cfg["datasets"] = [d for d in cfg["datasets"] if d["name"] in datasets]
        cfg.pop("paths", None)
        cfg.pop("noisy_kernels", None)
    for d in cfg["datasets"]:
        source = d.get("source", "")
        if source.endswith(".csv") and not Path(source).is_absolute():
            d["source"] = str((path.parent / source).resolve())
    if repeats:
        cfg["experiment"]["repeats"] = repeats
    cfg["experiment"]["output"] = str(out)
    cfg["experiment"].pop("figures", None)
    target = out.parent / f"{out.name}.toml"
    target.write_text(tomli_w.dumps(cfg))
    return target


def run(python: str, config: Path, out: Path) -> tuple[float, dict]:
    start = time.perf_counter()
    subprocess.run([python, "-m", "multikernel", "experiment", str(config), "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    return wall, json.loads((out / "results.json").read_text())["benchmark"]["table"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("--old-python", required=True, help="interpreter with the old version installed")
    parser.add_argument("--new-python", default=sys.executable)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--datasets", default="", help="comma-separated data set names (default: all)")
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args()
    datasets = [d for d in args.datasets.split(",") if d]
    walls: dict[str, list[float]] = {"old": [], "new": []}
    tables: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
            for version in order:
                out = Path(tmp) / f"{version}{r}"
                config = reduced_config(args.config.resolve(), datasets, args.repeats, out)
                python = args.old_python if version == "old" else args.new_python
                wall, table = run(python, config, out)
                walls[version].append(wall)
                tables[version] = table
                print(f"round {r + 1} {version}: {wall:.1f} s", flush=True)
    print(f"\nmachine: {platform.machine()} {platform.system()} {platform.python_version()}")
    print(f"{'data set':<16} {'method':<12} {'old acc':>16} {'new acc':>16} {'diff':>7}")
    worst = 0.0
    for ds, methods in tables["new"].items():
        for method, new in methods.items():
            old = tables["old"][ds][method]
            diff = new["accuracy_mean"] - old["accuracy_mean"]
            worst = max(worst, abs(diff))
            print(f"{ds:<16} {method:<12} {old['accuracy_mean']:8.2f} +- {old['accuracy_std']:5.2f} "
                  f"{new['accuracy_mean']:8.2f} +- {new['accuracy_std']:5.2f} {diff:7.2f}")
    old_t, new_t = sum(walls["old"]), sum(walls["new"])
    print(f"\nlargest accuracy difference: {worst:.2f} points")
    print(f"wall time old {old_t:.1f} s, new {new_t:.1f} s over {args.rounds} round(s): new/old = {new_t / old_t:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
