"""Every ``tensorsched bench`` workload through the scheduling queue with
batch on and off, and the README's table of them:
``python -m tensorsched.bench.queue_table``.

Each workload runs at 10,000 nodes with the pod count the README's table has
always used (``SIZES``), once with compiled runs of alike pods (batch on)
and once one pod at a time (``--no-batch``), each run in a process of its
own (so ``peak_rss_bytes`` is that run's): the record is what ``tensorsched
bench`` writes (machine, backend, commit, load, ``placements_sha256``) plus
``"table": "queue"``, in ``bench/results/<workload>-<nodes>x<pods>-<backend>-
queue[-nobatch].json``.  The preemption workloads go through the queue too
(``schedule_pending``; ``tensorsched bench`` times them one ``schedule_one``
call each).  Batch on and off must place the same pods on the same nodes (the
same hash): a workload whose hashes differ is named and the exit status is 1.
Then ``bench/table.py`` rewrites the README's table section from the records.

``--quick``: 100 nodes and a few pods per workload, records in a temporary
directory and the README left alone unless ``--readme`` is given (a test's
size).  ``--workloads a,b`` runs some of them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import table
from .harness import write_record

RESULTS = table.RESULTS
README = table.README
NODES = 10_000

#: workload -> pods at 10,000 nodes (the README table's counts)
SIZES = {"basic": 100_000, "spread": 10_000, "antiaffinity": 10_000, "affinity": 10_000,
         "preferred-affinity": 10_000, "replicaset": 5_000, "preemption": 1_000,
         "preemption-spread": 50, "preemption-antiaffinity": 50, "gpu": 10_000,
         "volumes": 3_000, "volumes-none": 3_000, "dra": 5_000, "dra-gpu": 2_000,
         "unschedulable": 10_000}
QUICK_NODES = 100
#: workload -> pods with ``--quick``
QUICK_SIZES = {w: (5 if w.startswith("preemption") else 40) for w in SIZES}


def record_name(workload: str, nodes: int, pods: int, backend: str, batch: bool) -> str:
    return f"{workload}-{nodes}x{pods}-{backend}-queue{'' if batch else '-nobatch'}.json"


def run_one(workload: str, nodes: int, pods: int, backend: str, batch: bool) -> dict:
    """One workload through the queue (in this process): its record."""
    # imported here, in the run's own process: the parent that starts one
    # process per run never loads the scheduler or compiles a kernel
    from .preemption import run_preemption
    from .workloads import run_workload
    if workload.startswith("preemption"):
        record = run_preemption(nodes, pods, backend, variant=workload.partition("-")[2],
                                queue=True, batch=batch)
    else:
        record = run_workload(workload, nodes, pods, backend, batch=batch)
    return {**record, "table": "queue", "queue": True, "batch": batch}


def run_in_process(workload: str, nodes: int, pods: int, backend: str, batch: bool,
                   path: Path) -> dict:
    """``run_one`` in a fresh Python process, its record written to ``path``."""
    cmd = [sys.executable, "-m", "tensorsched.bench.queue_table", "--one", workload,
           "--nodes", str(nodes), "--pods", str(pods), "--backend", backend,
           "--output", str(path)] + ([] if batch else ["--no-batch"])
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{workload} (batch {'on' if batch else 'off'}) failed:\n"
                         f"{done.stderr[-4000:]}")
    return json.loads(path.read_text())


def run_table(workloads: list[str], nodes: int, sizes: dict, backend: str,
              results: Path) -> list[str]:
    """Run each workload batch on, then off; returns the workloads whose
    placements differ between the two."""
    differ = []
    results.mkdir(parents=True, exist_ok=True)
    for w in workloads:
        hashes = []
        for batch in (True, False):
            path = results / record_name(w, nodes, sizes[w], backend, batch)
            t0 = time.perf_counter()
            rec = run_in_process(w, nodes, sizes[w], backend, batch, path)
            hashes.append(rec["placements_sha256"])
            pps = rec["pods_per_second"] or 0
            print(f"{w:24s} batch {'on ' if batch else 'off'} {pps:>12,.1f} pods/s"
                  f"  {rec['placements_sha256'][:12]}  ({time.perf_counter() - t0:.0f} s,"
                  f" load {rec.get('load')})", flush=True)
        if hashes[0] != hashes[1]:
            differ.append(w)
    return differ


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK_NODES} nodes, a few pods each, records in a temporary directory")
    ap.add_argument("--workloads", help="comma-separated (default: every one)")
    ap.add_argument("--backend", default="numba")
    ap.add_argument("--results", help="directory of the records (default: bench/results)")
    ap.add_argument("--readme", help="the README whose table section is rewritten "
                    "(default: the repository's, not with --quick)")
    ap.add_argument("--one", help=argparse.SUPPRESS)       # a child process's workload
    ap.add_argument("--nodes", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--pods", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--no-batch", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--output", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        record = run_one(args.one, args.nodes, args.pods, args.backend, not args.no_batch)
        write_record(record, args.output)
        return 0
    workloads = args.workloads.split(",") if args.workloads else list(SIZES)
    unknown = [w for w in workloads if w not in SIZES]
    if unknown:
        ap.error(f"--workloads: unknown {', '.join(unknown)}; choose among {', '.join(SIZES)}")
    nodes, sizes = (QUICK_NODES, QUICK_SIZES) if args.quick else (NODES, SIZES)
    if args.results:
        results = Path(args.results)
    else:
        results = Path(tempfile.mkdtemp(prefix="queue-table-")) if args.quick else RESULTS
    differ = run_table(workloads, nodes, sizes, args.backend, results)
    readme = args.readme or (None if args.quick else README)
    if readme:
        table.update_readme(Path(readme), results)
        print(f"rewrote the table section of {readme}")
    if differ:
        print(f"placements differ between batch on and off: {', '.join(differ)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
