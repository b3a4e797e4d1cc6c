"""The cuda backend's host-device traffic a device run, two source trees.

Counts, not times: the record's ``device_counters`` (kernels launched,
host-to-device copies, bytes uploaded) of the spread and antiaffinity
workloads on the cuda backend (their pods go in device runs), this tree
against a base tree (``--base-commit C``, laid out as
``harness.base_tree`` lays it out), in alternated processes, with
the placements digests (they must agree).  Without a GPU it runs under
Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``): slow, so the sizes are
small, but the counts are the device's.  Per run = counters / compiled
runs (the warm-up run is outside the timed part).  Each tree counts what
its own backend counts: an older tree may leave some uploads uncounted
(say so in the record).

python -m tensorsched.bench.gpu_counters --base-commit C [--nodes 300] [--pods 100]
        [--output bench/results/gpu-counters-cudasim-300.json]

``--events``: instead, the first one-at-a-time cycle after each kind of
node event (``event_counts``: a node's columns written, a node appended, a
new label key, a new taint word, the host's arrays reallocated), its
launches, host-to-device copies and node rows uploaded, this tree against
the base tree, with the bindings (they must agree).  ``--events --ranked``:
the same with pods that carry a soft topology spread (the cycle ranks on
the host), each cycle's copies each way and bytes also counted from
outside the backend (``gpu_sort_traffic.Transfers``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from tensorsched.bench.gpu_sort_traffic import Transfers
from tensorsched.bench.harness import git_commit, machine_info
from tensorsched.bench.harness import base_tree
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels._deps import gpu_present

WORKLOADS = ("spread", "antiaffinity")


def _record(path: str | None, workload: str, nodes: int, pods: int) -> dict:
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
    if not gpu_present():
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([sys.executable, "-m", "tensorsched.cli", "bench", "--workload", workload,
                        "--nodes", str(nodes), "--pods", str(pods), "--backend", "cuda",
                        "--output", f.name], env=env, check=True, capture_output=True)
        with open(f.name) as out:
            rec = json.load(out)
    counters = rec.get("device_counters") or {}
    runs = max(rec.get("compiled_runs") or 0, 1)
    return {"compiled_runs": rec.get("compiled_runs"), "mean_run_length":
            rec.get("mean_run_length"), "device_counters": counters,
            "per_run": {k: round(v / runs, 2) for k, v in counters.items()},
            "placements_sha256": rec.get("placements_sha256")}


EVENTS = ("write", "append", "label_key", "taint_word", "realloc")


STAGE_EVERY = 128       # appends between cycles while growing (fewer than a cycle stages)


SOFT_SPREAD = {"topologySpreadConstraints": [{
    "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
    "labelSelector": {"matchLabels": {"app": "probe"}}}]}


def event_counts(nodes: int, backend: str = "cuda", regrow_at: int | None = None,
                 ranked: bool = False) -> dict:
    """{event: {launches, copies, rows_uploaded}} of the first cycle (one
    pod, batching off, on ``backend``: its counters, zeros where it keeps
    none) after each kind of node event
    on ``nodes`` nodes, and the bindings.  Every node carries 64 distinct
    taints in all (one taint word), so the next one opens a second word;
    "realloc" appends nodes until the host state reallocates its arrays
    and counts the cycle after that append; "device_regrow" (a tree whose
    packs keep spare room) appends until the device packs run out of room
    (``regrow_at``: to that many nodes, as another backend's run needed;
    returned as "regrow_at").  ``ranked``: the pods carry a soft topology
    spread (a host plugin: the cycle ranks on the host, the row cache's
    rows come back), and each cycle also counts, from outside the backend
    (``gpu_sort_traffic.Transfers``), its copies each way and their bytes."""

    def node(i, labels=None, taint=None):
        taints = [{"key": f"t{taint if taint is not None else i % 64}", "value": "x",
                   "effect": "PreferNoSchedule"}]
        return node_dict(f"n{i:05d}", cpu="8", labels=labels, taints=taints)

    cluster = build_cluster([node(i) for i in range(max(nodes, 64))])
    be = cluster.framework_for(parse_pod(pod_dict("probe")), backend).backend
    sched = Scheduler(cluster, backend, seed=1, batch=False)
    names = ("launches", "copies", "rows_uploaded", "full_uploads", "relayouts")
    if ranked:
        names += ("rows_recomputed", "rows_downloaded")
    seen = Transfers() if ranked and backend == "cuda" else None
    bound = []
    k = [0]

    def cycle() -> dict:
        before = [getattr(be, c, 0) for c in names]
        k[0] += 1
        pod = (pod_dict(f"p{k[0]}", cpu="100m", created=k[0], labels={"app": "probe"},
                        spec=SOFT_SPREAD) if ranked
               else pod_dict(f"p{k[0]}", cpu="100m", created=k[0]))
        if seen is not None:
            seen.now = dict.fromkeys(("uploads", "bytes_up", "downloads", "bytes_down",
                                      "allocations"), 0)
            seen.install()
        try:
            got = sched.schedule_pending([pod])[0]
        finally:
            if seen is not None:
                seen.remove()
        bound.extend((b.pod, b.node) for b in got)
        out = {c: getattr(be, c, 0) - b for c, b in zip(names, before)}
        if seen is not None:
            out.update(seen.now)
        return out
    cycle()
    cycle()                     # the query's first cycle is behind
    n = len(cluster.state.node_rows)
    out = {}
    sched.update_node(node_dict("n00003", cpu="16", taints=[
        {"key": "t3", "value": "x", "effect": "PreferNoSchedule"}]))
    out["write"] = cycle()
    sched.add_node(node(n))
    out["append"] = cycle()
    sched.update_node(node(1, labels={"zone-new": "z1"}, taint=1))
    out["label_key"] = cycle()
    sched.add_node(node(n + 1, taint=64))
    out["taint_word"] = cycle()
    i = [n + 2]

    def grow_past(limit: int) -> dict:
        """Nodes appended up to ``limit`` nodes (a cycle every
        ``STAGE_EVERY`` appends and one at the limit: each stages its
        rows), then one more appended: the next cycle's counts."""
        while len(cluster.state.node_rows) < limit:
            sched.add_node(node(i[0]))
            i[0] += 1
            left = limit - len(cluster.state.node_rows)
            if left == 0 or left % STAGE_EVERY == 0:
                cycle()
        sched.add_node(node(i[0]))
        i[0] += 1
        return cycle()
    layout = cluster.state.layout_version
    out["realloc"] = grow_past(cluster.state.allocatable.shape[0])   # the host's rows
    assert cluster.state.layout_version != layout
    if regrow_at is None and hasattr(be, "_row_cap"):    # packs with room (not older trees')
        regrow_at = be._row_cap
    if regrow_at is not None:
        caps = getattr(be, "_caps", None)
        out["device_regrow"] = grow_past(regrow_at)
        assert caps is None or be._caps != caps
    return {"events": out, "bindings": bound, "regrow_at": regrow_at}


def _event_record(path: str | None, nodes: int, regrow_at: int | None = None,
                  ranked: bool = False) -> dict:
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
    if not gpu_present():
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    code = ("import json, sys\nfrom tensorsched.bench.gpu_counters import event_counts\n"
            f"json.dump(event_counts({nodes}, regrow_at={regrow_at}, ranked={ranked}), "
            "sys.stdout)\n")
    got = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(got.stdout.strip().splitlines()[-1])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-commit", required=True)
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--pods", type=int, default=100)
    ap.add_argument("--output")
    ap.add_argument("--events", action="store_true",
                    help="the first cycle after each kind of node event (module doc)")
    ap.add_argument("--ranked", action="store_true",
                    help="with --events: pods with a soft spread (the host ranks the cycle)")
    a = ap.parse_args(argv)
    base = base_tree(a.base_commit, tempfile.mkdtemp(prefix="gpu-counters-base-"))
    if a.events:
        return _events_main(a, base)
    out = {}
    for k, workload in enumerate(WORKLOADS):
        trees = [("this", None), ("base", base)]
        for name, path in (trees if k % 2 == 0 else trees[::-1]):      # alternated
            out.setdefault(workload, {})[name] = _record(path, workload, a.nodes, a.pods)
        got = out[workload]
        got["same_placements"] = (got["this"]["placements_sha256"]
                                  == got["base"]["placements_sha256"])
    record = {"experiment": "cuda device runs: launches, copies and bytes a run, this tree vs "
                            "the base tree (module doc)",
              "backend": "cuda", "device": "gpu" if gpu_present() else "numba cuda simulator",
              "nodes": a.nodes, "pods": a.pods, "workloads": out,
              "commit": git_commit(), "base_commit": a.base_commit, "machine": machine_info(),
              "load_after": list(os.getloadavg()),
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    dest = a.output or os.path.join(os.path.dirname(os.path.realpath(__file__)), "results",
                                    f"gpu-counters-{'gpu' if gpu_present() else 'cudasim'}-"
                                    f"{a.nodes}.json")
    with open(dest, "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps({w: {t: v[t]["per_run"] for t in ("this", "base")}
                      for w, v in out.items()}, indent=1))
    return record


def _events_main(a, base: str) -> dict:
    this = _event_record(None, a.nodes, ranked=a.ranked)
    # the base tree replays the same appends and cycles (its own counters)
    got = {"this": this, "base": _event_record(base, a.nodes, this["regrow_at"], a.ranked)}
    record = {"experiment": "cuda one-at-a-time cycles: launches, host-to-device copies and "
                            "node rows uploaded in the first cycle after each kind of node "
                            "event, this tree vs the base tree (module doc, --events)",
              "backend": "cuda", "device": "gpu" if gpu_present() else "numba cuda simulator",
              "nodes": a.nodes, "ranked": a.ranked,
              "events": {t: v["events"] for t, v in got.items()},
              "note": "counters a tree does not keep count 0 (the base tree keeps no "
                      "full_uploads or relayouts; its device_regrow is the same appends "
                      "as this tree's, with nothing to regrow)",
              "same_bindings": got["this"]["bindings"] == got["base"]["bindings"],
              "commit": git_commit(), "base_commit": a.base_commit, "machine": machine_info(),
              "load_after": list(os.getloadavg()),
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    dest = a.output or os.path.join(os.path.dirname(os.path.realpath(__file__)), "results",
                                    f"gpu-counters-events-{'ranked-' if a.ranked else ''}"
                                    f"{'gpu' if gpu_present() else 'cudasim'}-{a.nodes}.json")
    with open(dest, "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps({k: record[k] for k in ("events", "same_bindings")}, indent=1))
    return record


if __name__ == "__main__":
    main()
