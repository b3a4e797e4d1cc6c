"""The one-at-a-time cycle's host cost, CPU seconds, two source trees.

1. The basic workload with batching off on the numba backend
   (``tensorsched bench --workload basic --no-batch``), this tree and a base
   tree in alternated processes (``--base-commit C``: commit ``C`` of this
   repository laid out as ``harness.base_tree`` lays it out), each
   process's record kept (CPU seconds of the timed run, placements digest,
   load average).
2. The host work that finds and stages the rows written since a row
   cache's last cycle, with no device: one node row written a cycle, on the
   basic workload's node columns, timed in this process.  ``scan``: a
   compiled scan of ``row_version`` over every row (the numba backend's
   ``dirty_rows``; the cuda backend's ``staged_rows.stage`` scanning
   itself).  ``log``: the state's write log (``_core.logged_rows``, then
   ``stage`` with the rows found).  ``numba_*`` is the numba backend's
   lookup alone, ``cuda_*`` the cuda backend's lookup and packing.

3. ``--node-events``: instead of 1 and 2, the first placement cycle after
   a node event (a node relabelled, cordoned, removed, added back into the
   free row, appended in a new row, in turn) against an ordinary cycle, numba, this tree and the
   base tree in alternated processes (``_NODE_EVENTS_CHILD``): CPU
   microseconds a cycle, the rows the row cache recomputed, a digest of
   the placements.  ``--arrays``: events that change the pod's compiled
   query (a taint first seen, a zone value it prefers first seen, its image
   gained by a node, a node removed, appended: the image's spread), the pod
   holding an image every tenth node has and preferring those zones.

python -m tensorsched.bench.cycle_cpu [--base-commit C] [--rounds 3] [--nodes 10000]
        [--pods 5000] [--node-events [--arrays]] [--events 60]
        [--output bench/results/cycle-cpu-before-after-10000.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from tensorsched import synthetic
from tensorsched.bench.harness import alternated, base_tree, git_commit, machine_info
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.kernels.fused import staged_rows as SR
from tensorsched.kernels.fused.backends import numba_row_lookups
from tensorsched.kernels.fused.source import LOG_READ_MAX, WriteLog


def _workload_record(path: str | None, nodes: int, pods: int) -> dict:
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([sys.executable, "-m", "tensorsched.cli", "bench", "--workload", "basic",
                        "--nodes", str(nodes), "--pods", str(pods), "--backend", "numba",
                        "--no-batch", "--output", f.name], env=env, check=True,
                       capture_output=True)
        with open(f.name) as out:
            rec = json.load(out)
    keep = ("cpu_seconds", "pods_per_second", "p50_us", "p99_us", "placements_sha256", "load",
            "stages", "scheduled")
    return {k: rec.get(k) for k in keep}


def _staging_seconds(nodes: int, repeats: int = 4000) -> dict:
    """Mean CPU microseconds per cycle of finding (and, on cuda, staging)
    the rows written since the last cycle: a scan of ``row_version`` against
    the write log (module doc), one written row a cycle, alternated."""
    dirty_rows, logged_rows = numba_row_lookups()
    node_objs, _ = synthetic.workload("basic", nodes, 1, 0)
    state = build_cluster(node_objs).state
    cols = state.columns()
    n = cols.allocatable.shape[0]
    rv = np.zeros(state.row_version.shape[0], np.int64)
    width = SR.row_width(cols)
    out = np.zeros(SR.staged_size(256, width), np.int64)
    found = np.zeros(max(n, LOG_READ_MAX), np.int64)
    rng = np.random.default_rng(0)
    written = rng.integers(0, n, repeats)
    log = WriteLog()

    def from_log(seen):
        return logged_rows(log.rows, log.versions, log.length, log.floor, seen, rv,
                             LOG_READ_MAX, found)

    steps = {
        "numba_scan": lambda seen: dirty_rows(rv, n, seen, found),
        "numba_log": from_log,
        "cuda_scan": lambda seen: SR.stage(rv, seen, cols, out, 256),
        "cuda_log": lambda seen: SR.stage(rv, seen, cols, out, 256, found, from_log(seen)),
    }
    got = {}
    for name, fn in list(steps.items()) * 3:        # alternated, three times
        rv[:] = 0
        log.restart(0)
        fn(-1)
        c0 = time.process_time()
        for v, row in enumerate(written.tolist(), start=1):
            rv[row] = v
            log.add(row, v)
            assert fn(v - 1) == 1
        got.setdefault(name, []).append((time.process_time() - c0) / repeats)
    return {k: {"cpu_us_per_cycle": [round(x * 1e6, 3) for x in v],
                "mean_cpu_us_per_cycle": round(float(np.mean(v)) * 1e6, 3)}
            for k, v in got.items()} | {"nodes": n, "staged_bytes_per_cycle": 8 * (1 + width),
                                        "note": "each includes the loop's own stamping of "
                                                "row_version and the log"}


# Run in a child process against either tree (only APIs both trees have):
# N nodes, 50 pods placed, then per event one event and two placements,
# the first (after the event) and the second (ordinary) timed apart.
_NODE_EVENTS_CHILD = r"""
import hashlib, json, sys, time
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
n, events, arrays = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "arrays"
IMAGE = [{"names": ["reg/app:1"], "sizeBytes": 500 << 20}]
def node(i, zone, cordon=False, taint=None, image=False):
    d = node_dict(f"n{i}", cpu=str(4 + i % 5), memory="32Gi", labels={"zone": zone},
                  taints=[{"key": "dedicated", "value": taint, "effect": "NoSchedule"}]
                  if taint else None, images=IMAGE if image or i % 10 == 0 else None)
    if cordon:
        d["spec"]["unschedulable"] = True
    return d
sched = Scheduler(build_cluster([node(i, f"z{i % 3}") for i in range(n)]), "numba", 0)
(fw,) = sched.cluster.frameworks.values()
k, placed = 0, []
# arrays: the pod's image is on every tenth node, and it prefers zones w0,
# w1, ... that nodes take on over time: every event changes its query
SPEC = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 5, "preference": {"matchExpressions": [
        {"key": "zone", "operator": "In", "values": [f"w{e}" for e in range(events)]}]}}]}}}
def place():
    global k
    sched.add_pod(pod_dict(f"p{k}", cpu="100m", memory="100Mi", spec=SPEC if arrays else None,
                           image="reg/app:1" if arrays else "registry.k8s.io/pause:3.10"))
    k += 1
    c0 = time.process_time()
    b = sched.schedule_one()
    placed.append(b.node)
    return time.process_time() - c0
for _ in range(50):
    place()
KINDS = (("new_taint", "new_value", "image_gained", "remove", "append") if arrays else
         ("relabel", "cordon", "remove", "add_back", "append"))
after, plain, rows_after, rows_plain = [], [], 0, 0
by_kind = {k: [] for k in KINDS}
for e in range(events):
    i = 7 + 13 * (e // len(KINDS))
    kind = KINDS[e % len(KINDS)]
    if kind == "new_taint":                      # a taint first seen: a new taint word
        sched.update_node(node(i, f"z{i % 3}", taint=f"t{e}"))
    elif kind == "new_value":                    # a zone value first seen, one it prefers
        sched.update_node(node(i, f"w{e}"))
    elif kind == "image_gained":                 # the image's spread grows
        sched.update_node(node(i, f"z{i % 3}", image=True))
    elif kind == "relabel":
        sched.update_node(node(i, "z9"))
    elif kind == "cordon":
        sched.update_node(node(i, "z9", cordon=True))
    elif kind == "remove":
        sched.delete_node(f"n{i}")
    elif kind == "add_back":                     # into the free row
        sched.add_node(node(i, f"z{i % 3}"))
    else:                                        # a new row
        sched.add_node(node(n + e, f"z{e % 3}"))
    r0 = fw.backend.rows_recomputed
    after.append(place())
    r1 = fw.backend.rows_recomputed
    plain.append(place())
    rows_after += r1 - r0
    rows_plain += fw.backend.rows_recomputed - r1
    by_kind[kind].append((after[-1], r1 - r0))
print(json.dumps({"after_event_cpu_us": 1e6 * sum(after) / events,
                  "plain_cpu_us": 1e6 * sum(plain) / events,
                  "rows_after_event": rows_after / events, "rows_plain": rows_plain / events,
                  "by_kind": {k: {"after_event_cpu_us": 1e6 * sum(t for t, _ in v) / len(v),
                                  "rows_after_event": sum(r for _, r in v) / len(v)}
                              for k, v in by_kind.items() if v},
                  "placements_sha256": hashlib.sha256(json.dumps(placed).encode()).hexdigest()}))
"""


def _node_events_record(path: str | None, nodes: int, events: int, arrays: bool) -> dict:
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
    got = subprocess.run([sys.executable, "-c", _NODE_EVENTS_CHILD, str(nodes), str(events),
                          "arrays" if arrays else "plain"],
                         env=env, check=True, capture_output=True, text=True)
    rec = json.loads(got.stdout.strip().splitlines()[-1])
    rec["load"] = list(os.getloadavg())
    return rec


def _node_events(a, trees) -> dict:
    runs = alternated(trees, a.rounds,
                      lambda path: _node_events_record(path, a.nodes, a.events, a.arrays))
    keys = ("after_event_cpu_us", "plain_cpu_us", "rows_after_event", "rows_plain")
    summary = {t: {**{f"mean_{k}": round(float(np.mean([x[k] for x in v])), 2) for k in keys},
                   "by_kind": {kind: {k: round(float(np.mean([x["by_kind"][kind][k]
                                                                for x in v])), 2)
                                      for k in ("after_event_cpu_us", "rows_after_event")}
                               for kind in v[0]["by_kind"]},
                   "digests": sorted({x["placements_sha256"] for x in v})}
               for t, v in runs.items()}
    kinds = ("a new taint, a zone value the pod prefers first seen, the pod's image "
             "gained by a node, remove, append, in turn (each changes the pod's query "
             "arrays)" if a.arrays else "relabel, cordon, remove, add back, append, in turn")
    record = {"experiment": f"first numba placement cycle after a node event ({kinds}) "
                            "against an ordinary cycle, "
                            "this tree vs the base tree in alternated processes",
              "backend": "numba", "nodes": a.nodes, "events": a.events, "rounds": a.rounds,
              "summary": summary, "runs": runs, "commit": git_commit(),
              "base_commit": a.base_commit, "machine": machine_info(),
              "load_after": list(os.getloadavg()),
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if len(trees) > 1:
        record["same_placements"] = summary["this"]["digests"] == summary["base"]["digests"]
    return record


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-commit")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--pods", type=int, default=5000)
    ap.add_argument("--node-events", action="store_true",
                    help="time the first cycle after a node event instead (module doc, 3)")
    ap.add_argument("--events", type=int, default=60)
    ap.add_argument("--arrays", action="store_true",
                    help="with --node-events: events that change the pod's query arrays "
                         "(module doc, 3)")
    ap.add_argument("--output")
    a = ap.parse_args(argv)
    base = (base_tree(a.base_commit, tempfile.mkdtemp(prefix="cycle-cpu-base-"))
            if a.base_commit else None)
    trees = [("this", None)] + ([("base", base)] if base else [])
    if a.node_events:
        record = _node_events(a, trees)
        out = a.output or os.path.join(
            os.path.dirname(os.path.realpath(__file__)), "results",
            f"cycle-cpu-node-events{'-arrays' if a.arrays else ''}-{a.nodes}.json")
        with open(out, "w") as f:
            json.dump(record, f, indent=1)
        print(json.dumps(record["summary"], indent=1))
        return record
    runs = alternated(trees, a.rounds, lambda path: _workload_record(path, a.nodes, a.pods))
    summary = {t: {"cpu_seconds": [x["cpu_seconds"] for x in v],
                   "mean_cpu_seconds": round(float(np.mean([x["cpu_seconds"] for x in v])), 4),
                   "cpu_us_per_pod": round(float(np.mean([x["cpu_seconds"] for x in v]))
                                           / a.pods * 1e6, 2),
                   "digests": sorted({x["placements_sha256"] for x in v})}
               for t, v in runs.items()}
    record = {"experiment": "basic --no-batch on numba, this tree vs the base tree in "
                            "alternated processes; finding / staging the rows written "
                            "since the last cycle by a scan or the write log (module doc)",
              "backend": "numba", "nodes": a.nodes, "pods": a.pods, "rounds": a.rounds,
              "summary": summary, "runs": runs, "cuda_host_staging": _staging_seconds(a.nodes),
              "commit": git_commit(), "base_commit": a.base_commit, "machine": machine_info(),
              "load_after": list(os.getloadavg()),
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if base:
        record["same_placements"] = summary["this"]["digests"] == summary["base"]["digests"]
    out = a.output or os.path.join(os.path.dirname(os.path.realpath(__file__)), "results",
                                   "cycle-cpu-before-after-10000.json")
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps({"summary": summary, "cuda_host_staging": record["cuda_host_staging"]},
                     indent=1))
    return record


if __name__ == "__main__":
    main()
