"""The first fit in a fresh process against the next one, and what the registry's first load costs.

Each run is a fresh Python process: it imports multikernel, fits ``MKLClassifier(method=--method)`` on
scikit-learn's breast cancer data (standardized, the default kernels) twice, and reports CPU seconds of the
import, of each fit and of the plugin registry's first load (timed in a separate fresh process, before any fit).
What the first fit costs beyond the second is what a user pays once per process; it should be little beyond
the registry's first load.  With ``--compare PYTHON`` the same runs of another installation (another checkout's
virtual environment) alternate with ours, so their ratios share the machine's load.

    OMP_NUM_THREADS=1 python benchmarks/bench_first_fit.py [--runs 5] [--method average]
        [--compare /path/to/other/venv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

_FITS = """
import json, time, warnings
t = time.process_time()
import multikernel
t_import = time.process_time() - t
from sklearn.datasets import load_breast_cancer
X, y = load_breast_cancer(return_X_y=True)
times = []
for _ in range(2):
    clf = multikernel.MKLClassifier(method={method!r}, standardize=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.process_time()
        clf.fit(X, y)
        times.append(time.process_time() - t)
print(json.dumps({{"import": t_import, "first": times[0], "second": times[1]}}))
"""

_REGISTRY = """
import json, sys, time
import multikernel
before = set(sys.modules)
from multikernel.core.registry import get_registry
t = time.process_time()
get_registry()
loaded = sorted(m for m in set(sys.modules) - before if m.startswith("sklearn.") and m.count(".") == 1)
print(json.dumps({"registry": time.process_time() - t, "sklearn": loaded}))
"""


def _run(python: str, code: str) -> dict:
    # bytecode caches written and used, as an installed package has them (PYTHONDONTWRITEBYTECODE would make
    # every process compile the plugin modules, most of the registry's load)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--method", default="average")
    ap.add_argument("--compare", default=None, help="another installation's python, run alternately")
    args = ap.parse_args()
    sides = {"this": sys.executable, **({"compare": args.compare} if args.compare else {})}
    rows: dict[str, list[dict]] = {name: [] for name in sides}
    for python in sides.values():  # unmeasured: writes the bytecode caches
        _run(python, _REGISTRY)
    for _ in range(args.runs):
        for name, python in sides.items():
            rows[name].append({**_run(python, _FITS.format(method=args.method)), **_run(python, _REGISTRY)})
    print(f"# {platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
          f"method {args.method}; medians of {args.runs} fresh processes, CPU seconds")
    print("| installation | import | first fit | second fit | first - second | registry load | sklearn packages "
          "the registry imports |")
    print("|---|---|---|---|---|---|---|")
    for name, runs in rows.items():
        med = {k: statistics.median(r[k] for r in runs) for k in ("import", "first", "second", "registry")}
        print(f"| {name} ({sides[name]}) | {med['import']:.3f} | {med['first']:.3f} | {med['second']:.3f} | "
              f"{med['first'] - med['second']:.3f} | {med['registry']:.3f} | "
              f"{', '.join(runs[-1]['sklearn']) or 'none'} |")
    if args.compare:
        a, b = (statistics.median(r["first"] - r["second"] for r in rows[k]) for k in ("this", "compare"))
        print(f"first-fit excess, this / compare: {a / b:.2f}" if b > 0 else "")


if __name__ == "__main__":
    main()
