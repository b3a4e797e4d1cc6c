"""Print the README's benchmark tables from bench/results/*.json.

python bench/table.py           # scheduler_perf-like workloads
python bench/table.py --queue   # every workload through the queue, batch on and off
python bench/table.py --openb   # openb replay: ours vs published (openb-replay.json)
python bench/table.py --readme README.md    # rewrite the README's table section

The README's section lies between ``BEGIN`` and ``END``: the queue table
(records of ``python -m tensorsched.bench.queue_table``, marked ``"table":
"queue"``: per workload, the latest run with batch on beside the latest with
batch off) and then every other record.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
README = RESULTS.parent.parent / "README.md"
BEGIN = ("<!-- benchmark table: begin (written by `python bench/table.py --readme README.md` "
         "from bench/results; edit bench/table.py, not these lines) -->")
END = "<!-- benchmark table: end -->"


def rows(results: Path | None = None):
    """(file name, run, commit) of every run with a pods/s figure, by file name."""
    for path in sorted((results or RESULTS).glob("*.json")):
        rec = json.loads(path.read_text())
        runs = rec.get("runs")
        for r in runs if isinstance(runs, list) else [rec]:
            if "pods_per_second" in r:
                yield path.name, r, rec.get("commit", r.get("commit", ""))


#: what a table row prints of a run
ROW_FIELDS = ("workload", "nodes", "pods", "backend")


def is_comparison(run: dict) -> bool:
    """A run of alternated before/after rounds (the README's prose reads
    them), or a record of one whose figures are per side (a dict of
    pods/s by tree, no workload of its own)."""
    return ("round" in run or "label" in run
            or not all(k in run for k in ROW_FIELDS)
            or not isinstance(run.get("pods_per_second"), (int, float)))


def workload_lines(results: Path | None = None, skip: frozenset = frozenset(),
                   comparisons: bool = True) -> list[str]:
    """The table of every record (files named in ``skip`` left out, and
    the runs of before/after comparisons unless ``comparisons``)."""
    out = ["| workload | nodes | pods | backend | pods/s | p50 µs | p99 µs | placements sha256 "
           "| commit | file |",
           "|---|---:|---:|---|---:|---:|---:|---|---|---|"]
    for name, r, commit in rows(results):
        if name in skip or not comparisons and is_comparison(r):
            continue
        # records of a whole simulation (gpu_blocks) carry its digest and
        # no per-pod latencies
        sha = r.get("placements_sha256", r.get("digest", ""))
        out.append(f"| {r['workload']} | {r['nodes']} | {r['pods']} | {r['backend']} | "
                   f"{r['pods_per_second']:,} | {r.get('p50_us', '-')} | {r.get('p99_us', '-')} | "
                   f"`{sha[:12]}` | {commit} | {name} |")
    return out


def workload_table() -> None:
    """The table of every record's runs but the before/after comparisons'
    (their runs carry the fields their prose compares, not a table row's)."""
    print("\n".join(workload_lines(comparisons=False)))


def queue_pairs(results: Path | None = None) -> dict:
    """(workload, nodes, pods, backend, percentage) -> {batch: (file name,
    record)}: the latest record (by timestamp) of ``queue_table`` for each,
    batch on (True) and off (False)."""
    pairs: dict = {}
    for path in sorted((results or RESULTS).glob("*.json")):
        rec = json.loads(path.read_text())
        # a comparison record (rounds of runs) carries no single run's batch
        if not isinstance(rec, dict) or rec.get("table") != "queue" or "batch" not in rec:
            continue
        key = (rec["workload"], rec["nodes"], rec["pods"], rec["backend"],
               rec.get("percentage_of_nodes_to_score", 100))
        side = pairs.setdefault(key, {})
        old = side.get(rec["batch"])
        if old is None or rec.get("timestamp", "") >= old[1].get("timestamp", ""):
            side[rec["batch"]] = (path.name, rec)
    return pairs


def _half(rec: dict | None) -> str:
    if rec is None:
        return "- | - | -"
    pps = rec.get("pods_per_second")
    return (f"{pps:,} | {rec.get('p50_us', '-')} | {rec.get('cpu_seconds', '-')}"
            if pps is not None else f"- | - | {rec.get('cpu_seconds', '-')}")


def _both(on: dict | None, off: dict | None, field: str, show=str) -> str:
    got = [show(r[field]) for r in (on, off) if r is not None and field in r]
    return got[0] if len(set(got)) == 1 else " / ".join(got)


def queue_lines(results: Path | None = None) -> list[str]:
    """The queue table: per workload, batch on beside batch off (pods/s,
    p50, CPU seconds of the timed run), the placements hash (both sides'
    when they differ), the commit and the 1-minute load average."""
    pairs = queue_pairs(results)
    if not pairs:
        return ["No records of `python -m tensorsched.bench.queue_table` yet."]
    out = ["| workload | nodes | pods | batch on: pods/s | p50 µs | CPU s "
           "| batch off: pods/s | p50 µs | CPU s | placements sha256 | commit | load |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|"]
    for key in sorted(pairs, key=lambda k: (k[0], k[1], k[2], k[3], k[4])):
        on, off = (pairs[key].get(b, (None, None))[1] for b in (True, False))
        workload, nodes, pods, backend, pct = key
        name = workload if pct == 100 else f"{workload} ({pct or 'adaptive'} %)"
        sha = _both(on, off, "placements_sha256", lambda h: f"`{h[:12]}`")
        load = _both(on, off, "load", lambda v: f"{v[0]}")
        out.append(f"| {name} | {nodes} | {pods} | {_half(on)} | {_half(off)} | {sha} "
                   f"| {_both(on, off, 'commit')} | {load} |")
    return out


def readme_section(results: Path | None = None) -> str:
    """The README's table section, ``BEGIN`` to ``END``."""
    used = frozenset(name for side in queue_pairs(results).values()
                     for name, _ in side.values())
    compared = sorted({name for name, r, _ in rows(results) if is_comparison(r)})
    return "\n".join([
        BEGIN,
        "Through the queue, batch on and off (`python -m tensorsched.bench.queue_table`: "
        "every workload at 10,000 nodes, both runs placing the same pods on the same nodes; "
        "CPU s: the process's CPU seconds of the timed run; load: the 1-minute load "
        "average after it):",
        "",
        *queue_lines(results),
        "",
        "Every other record:",
        "",
        *workload_lines(results, used, comparisons=False),
        "",
        "Before/after comparisons, alternated on this machine (read in bench/README.md): "
        + ", ".join(f"`{name}`" for name in compared) + ".",
        END])


def update_readme(path: Path = README, results: Path | None = None) -> None:
    """Rewrite ``path``'s table section (``BEGIN`` to ``END``) from the records."""
    text = path.read_text()
    a, b = text.find(BEGIN), text.find(END)
    if a < 0 or b < a:
        raise SystemExit(f"{path}: no table section ({BEGIN!r} ... {END!r})")
    path.write_text(text[:a] + readme_section(results) + text[b + len(END):])


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
    elif "--queue" in argv:
        print("\n".join(queue_lines()))
    elif "--readme" in argv:
        at = argv.index("--readme") + 1
        update_readme(Path(argv[at]) if at < len(argv) else README)
    else:
        workload_table()
    return 0


if __name__ == "__main__":
    sys.exit(main())
