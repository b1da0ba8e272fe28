"""Tables of a soft margin protocol v2 run: time per data set and per method, gaps reached, accuracy.

Reads the run's ``units.jsonl`` (unit wall time and ``unit_cpu_time``, CPU seconds, the split's shared part
divided evenly among its methods; ``dual_gap`` of the refit and ``cv_gap_max`` of the cross-validation fits)
and, for the comparison with the authors' relative-change rule, version 1's ``results.json`` (same splits of the same
files: seed 0, repeat r).  Prints Markdown and the machine's load.

    python benchmarks/softmargin_v2_times.py [UNITS_JSONL] [V1_RESULTS_JSON]
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs" / "experiments"


def main() -> None:
    units = Path(sys.argv[1] if len(sys.argv) > 1 else DOCS / "soft-margin-mkl-v2" / "units.jsonl")
    v1_path = Path(sys.argv[2] if len(sys.argv) > 2 else DOCS / "soft-margin-mkl" / "results.json")
    records = [json.loads(line) for line in units.read_text().splitlines() if line.strip()]
    records = [r for r in records if "error" not in r]
    v1 = {(r["dataset"], r["method"], r["repeat"]): r for r in json.loads(v1_path.read_text())["units"]}
    datasets = list(dict.fromkeys(r["dataset"] for r in records))
    methods = list(dict.fromkeys(r["method"] for r in records))
    by = {(r["dataset"], r["method"], r["repeat"]): r for r in records}
    repeats = sorted({r["repeat"] for r in records})

    print(f"{len(records)} units, repeats {repeats}; load now {' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    print("CPU seconds per split (sum over repeats; in brackets the unit wall time, inflated by the load):\n")
    print("| data set | " + " | ".join(methods) + " | total CPU |")
    print("|---" * (len(methods) + 2) + "|")
    totals: dict[str, float] = defaultdict(float)
    for ds in datasets:
        cells, row_total = [], 0.0
        for m in methods:
            rs = [by[(ds, m, k)] for k in repeats if (ds, m, k) in by]
            cpu, wall = sum(r.get("unit_cpu_time", 0.0) for r in rs), sum(r["unit_time"] for r in rs)
            cells.append(f"{cpu:.1f} ({wall:.0f})" if rs else "–")
            row_total += cpu
            totals[m] += cpu
        print(f"| {ds} | " + " | ".join(cells) + f" | {row_total:.1f} |")
    print("| total | " + " | ".join(f"{totals[m]:.1f}" for m in methods) + f" | {sum(totals.values()):.1f} |")

    print("\nTest accuracy (%) and gaps: v2 (gap stopping; refit gap / largest CV gap) | v1 (relative change, "
          "same split; its refit's certified gap)\n")
    print("| data set | method | v2 accuracy | v2 refit gap | v2 CV gap max | v2 outer it. | v1 accuracy | v1 gap | "
          "v1 unit wall (s, quiet machine) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for ds in datasets:
        for m in methods:
            for k in repeats:
                r = by.get((ds, m, k))
                if r is None:
                    continue
                old = v1.get((ds, m, k))
                v1_cells = (f"{100 * old['accuracy']:.2f} | {old['dual_gap']:.1e} | {old['unit_time']:.1f}"
                            if old else "– | – | –")
                print(f"| {ds} | {m} | {100 * r['accuracy']:.2f} | {r['dual_gap']:.1e} | "
                      f"{r.get('cv_gap_max', float('nan')):.1e} | {r['n_iter']} | {v1_cells} |")


if __name__ == "__main__":
    main()
