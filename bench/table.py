"""Print the README's benchmark tables from bench/results/*.json.

python bench/table.py           # scheduler_perf-like workloads
python bench/table.py --openb   # openb replay: ours vs published (openb-replay.json)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def rows():
    for path in sorted(RESULTS.glob("*.json")):
        rec = json.loads(path.read_text())
        runs = rec.get("runs")
        for r in runs if isinstance(runs, list) else [rec]:
            if "pods_per_second" in r:
                yield path.name, r, rec.get("commit", r.get("commit", ""))


def workload_table() -> None:
    print("| workload | nodes | pods | backend | pods/s | p50 µs | p99 µs | placements sha256 | commit | file |")
    print("|---|---:|---:|---|---:|---:|---:|---|---|---|")
    for name, r, commit in rows():
        # records of a whole simulation (gpu_blocks) carry its digest and
        # no per-pod latencies
        sha = r.get("placements_sha256", r.get("digest", ""))
        print(f"| {r['workload']} | {r['nodes']} | {r['pods']} | {r['backend']} | "
              f"{r['pods_per_second']:,} | {r.get('p50_us', '-')} | {r.get('p99_us', '-')} | "
              f"`{sha[:12]}` | {commit} | {name} |")


def openb_table(path: Path = RESULTS / "openb-replay.json") -> None:
    """Mean GPU allocation ratio (%) at 100 % and 130 % of arrived demand,
    ours vs the paper simulator's published mean, per trace and policy."""
    rec = json.loads(path.read_text())
    print("| trace | policy | ours @100% | published @100% | ours @130% | published @130% "
          "| s/run |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rec["rows"]:
        print(f"| {r['trace']} | {r['policy']} | {r['ours_100']:.2f} | {r['published_100']:.2f} "
              f"| {r['ours_130']:.2f} | {r['published_130']:.2f} | {r['seconds_per_run']} |")
    print(f"\nLargest difference {rec['max_abs_diff']} points; {rec['runs']} runs, seeds "
          f"{rec['rows'][0]['seeds']}, {rec['sweep_wall_seconds']} s on {rec['workers']} "
          f"workers, backend {rec['backend']}, commit {rec['commit']}.")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--openb" in argv:
        openb_table()
    else:
        workload_table()
    return 0


if __name__ == "__main__":
    sys.exit(main())
