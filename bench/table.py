"""Print the README's benchmark table from bench/results/*.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def rows():
    for path in sorted(RESULTS.glob("*.json")):
        rec = json.loads(path.read_text())
        for r in rec.get("runs", [rec]):
            if "pods_per_second" in r:
                yield path.name, r, rec.get("commit", r.get("commit", ""))


def main() -> int:
    print("| workload | nodes | pods | backend | pods/s | p50 µs | p99 µs | placements sha256 | commit | file |")
    print("|---|---:|---:|---|---:|---:|---:|---|---|---|")
    for name, r, commit in rows():
        print(f"| {r['workload']} | {r['nodes']} | {r['pods']} | {r['backend']} | "
              f"{r['pods_per_second']:,} | {r['p50_us']} | {r['p99_us']} | "
              f"`{r['placements_sha256'][:12]}` | {commit} | {name} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
