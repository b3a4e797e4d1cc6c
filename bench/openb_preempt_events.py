"""DefaultPreemption under a scenario's node and Pod steps in the batched
openb engine, timed: ``openb_preempt``'s preempting workload (the openb
profile plus DefaultPreemption at postFilter, 30% of the pods at priority
100) under node steps (a node cordoned and uncordoned, one removed, two
added, one drained near the end, when it holds pods, and uncordoned) and
Pod steps (GPU-share pods created at the top priority, half of them
deleted later), every (policy, seed) run
in one ``ts.simulate_batch(..., scenario=S)`` call (the CPU twin on numba,
or cuda) against one ``Simulation`` per run given the scenario in the same
process, with whether each run's placements (node by name), GPU indices,
binding times, victims and how each pod left are its Simulation's.

python -m tensorsched.bench.openb_preempt_events [--trace gpushare40] [--nodes 12]
        [--pods 400] [--scale 600] [--stay 30] [--high 0.3] [--seeds 1-2] [--policies ...]
        [--backend numba|cuda] [--workers N] [--grace SECONDS]
        [--output bench/results/openb-preempt-events[-grace]-<backend>.json]

``--grace``: the Scheduler's termination grace for both paths (victims
terminate on their node that long; default 0: they leave at once).

Recorded: wall and CPU seconds of both paths (this process; the machine
may be shared: the load average before and after), the runs, preemptions,
evictions and deletions, and equality.
"""
import argparse
import copy
import json
import os
import time

import numpy as np

import tensorsched as ts
from tensorsched.framework.simulation.scenario import load_scenario
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.kernels.batch.openb_events import (WHY_DELETED, WHY_EVICTED, WHY_POD_DELETED,
                                                    WHY_PREEMPTED)
from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.gpu_table import GpuTable
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb import trace as T

from .harness import git_commit, machine_info
from .openb_batch import DATA
from .openb_preempt import preempt_config, timed, workload

CREATED = 8             # GPU-share pods the scenario creates (half deleted later)
TOP = 1000              # their priority: no trace pod outranks them


def _node(name: str, like: int, inv) -> dict:
    """A Node manifest shaped as node ``like`` of ``inv``."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "nvidia.com/gpu.product": inv.models[int(inv.model[like])]}},
            "status": {"allocatable": {"cpu": f"{int(inv.cpu_cap[like])}m",
                                       "memory": f"{int(inv.mem_cap[like])}Mi",
                                       "pods": "110",
                                       "nvidia.com/gpu": str(int(inv.gpu_count[like]))}}}


def _pod(name: str, milli: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "annotations": {
                "alibabacloud.com/gpu-milli": str(milli), "alibabacloud.com/gpu-count": "1"}},
            "spec": {"priority": TOP, "containers": [{"name": "c", "resources": {
                "requests": {"cpu": "1", "memory": "1Gi"}}}]}}


def scenario(inv, trace) -> dict:
    """The module doc's steps over the trace's span T."""
    t = float(np.max(trace.arrival))
    names = list(inv.names)
    n = len(names)
    at = lambda f: float(np.floor(f * t))     # noqa: E731
    steps = [{"at": at(0.2), "cordon": names[0]},
             {"at": at(0.96), "drain": names[min(3, n - 1)]},
             {"at": at(0.4), "removeNodes": [names[min(6, n - 1)]]},
             {"at": at(0.5), "create": _node("added-0", 0, inv)},
             {"at": at(0.5), "create": _node("added-1", min(1, n - 1), inv)},
             {"at": at(0.6), "uncordon": names[0]},
             {"at": at(0.98), "uncordon": names[min(3, n - 1)]}]
    for k in range(CREATED):
        steps.append({"at": at(0.25 + 0.05 * k), "create": _pod(f"made-{k}", 500)})
        if k % 2:
            steps.append({"at": at(0.3 + 0.05 * k), "delete": {"kind": "Pod",
                                                               "name": f"made-{k}"}})
    return {"steps": [s for s in steps if "removeNodes" not in s or n > 1]}


def simulate(inv, trace, policy: str, seed: int, sc: dict, grace: float = 0.0) -> tuple:
    """One run as a Simulation given the scenario (termination grace
    ``grace``): per pod name (node, GPUs, binding time), how each pod that
    left its node other than by its own departure left."""
    n = inv.n_nodes
    tw = B.trace_workload(trace)
    cfg = preempt_config(policy, n)
    typical = T.typical_of(tw.pods)
    if typical:
        cfg["profiles"][0]["pluginConfig"][0]["args"]["typicalPods"] = typical
    tie = None if policy == "Random" else B.tie_of(n, seed)
    sim = Simulation(T.openb_node_objects(inv, tie), cfg, "numba", seed,
                     registry=T.experiment_registry(),
                     pod_max_in_unschedulable_seconds=B.DEFAULT_MAX_UNSCHED,
                     termination_grace_seconds=grace)
    sim.scenario(load_scenario(copy.deepcopy(sc)))
    made = {f"made-{k}" for k in range(CREATED)}
    got, gone = {}, {}

    def name(e):
        return e["pod"].split("/", 1)[1]

    def bound(e):
        a = GpuTable.attached(sim.cluster.state).alloc.get(e["pod"])
        got[name(e)] = (e["node"], tuple(a.indices) if a is not None and a.indices else (),
                        float(e["time"]))

    def left(e):
        if "node" in str(e.get("message", "")):
            gone[name(e)] = e["event"]
        elif e["event"] == "Deleted" and name(e) in made:
            gone[name(e)] = "PodDeleted"

    sim.on("Bound", bound)
    sim.on("Evicted", left)
    sim.on("Deleted", left)
    sim.on("Preempted", lambda e: gone.__setitem__(name(e), "Preempted"))
    # (a victim still terminating that departs first left as a departure)
    sim.on("Departed", lambda e: gone.pop(name(e), None))
    sim.submit(trace.table)
    sim.run()
    return got, gone


WHY = {WHY_EVICTED: "Evicted", WHY_DELETED: "Deleted", WHY_POD_DELETED: "PodDeleted",
       WHY_PREEMPTED: "Preempted"}


def batched(res) -> tuple:
    got, gone = {}, {}
    for j, nm in enumerate(res.pod_names):
        if res.node[j] >= 0:
            got[nm] = (res.node_names[int(res.node[j])], res.gpus[j], float(res.bind[j]))
        if int(res.why[j]) in WHY:
            gone[nm] = WHY[int(res.why[j])]
    return got, gone


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", default="gpushare40")
    ap.add_argument("--nodes", type=int, default=12)
    ap.add_argument("--pods", type=int, default=400)
    ap.add_argument("--scale", type=float, default=600.0)
    ap.add_argument("--high", type=float, default=0.3)
    ap.add_argument("--stay", type=float, default=30.0)
    ap.add_argument("--seeds", default="1-2")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--backend", default="numba", choices=("numba", "cuda"))
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--grace", type=float, default=0.0)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--output")
    a = ap.parse_args(argv)
    inv, trace = workload(a.data, a.trace, a.nodes, a.pods, a.scale, a.high, a.stay)
    sc = scenario(inv, trace)
    policies = a.policies.split(",")
    seeds = R.parse_seeds(a.seeds)
    configs = [preempt_config(p, inv.n_nodes) for p in policies]
    # compile (or load the compiled kernels) outside the timing
    ts.simulate_batch(inv, trace, configs[:1], seeds[:1], backend=a.backend, workers=a.workers,
                      scenario=sc, termination_grace_seconds=a.grace)
    runs, batched_t = timed(lambda: ts.simulate_batch(inv, trace, configs, seeds,
                                                       backend=a.backend, workers=a.workers,
                                                       scenario=sc,
                                                       termination_grace_seconds=a.grace))
    sims, per_run = timed(lambda: [simulate(inv, trace, policies[r.config], r.seed, sc,
                                            a.grace) for r in runs])
    equal = [batched(r) == s for r, s in zip(runs, sims)]
    record = {"experiment": "openb profile + DefaultPreemption under node and Pod steps, "
                            "simulate_batch(scenario=S) vs one Simulation per run (module "
                            "doc's workload)",
              "trace": a.trace, "nodes": inv.n_nodes, "pods": len(trace), "scale": a.scale,
              "stay": a.stay, "high_share": a.high, "steps": len(sc["steps"]),
              "termination_grace_seconds": a.grace,
              "policies": policies, "seeds": a.seeds, "runs": len(runs),
              "backend": a.backend, "workers": a.workers or os.cpu_count(),
              "preemptions": [int(r.preempted.sum()) for r in runs],
              "evicted": [int((r.why == WHY_EVICTED).sum()) for r in runs],
              "deleted": [int(((r.why == WHY_DELETED) | (r.why == WHY_POD_DELETED)).sum())
                          for r in runs],
              "scheduled": [r.scheduled for r in runs],
              "batched": batched_t, "per_run": per_run,
              "runs_equal": f"{sum(equal)}/{len(equal)}",
              "cpu_ratio": round(per_run["cpu_seconds"] / max(batched_t["cpu_seconds"], 1e-9),
                                 1),
              "commit": git_commit(), "machine": machine_info(),
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    out = a.output or os.path.join(os.path.dirname(os.path.realpath(__file__)), "results",
                                   "openb-preempt-events-"
                                   + ("grace-" if a.grace > 0 else "") + f"{a.backend}.json")
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps(record, indent=1))
    return record


if __name__ == "__main__":
    main()
