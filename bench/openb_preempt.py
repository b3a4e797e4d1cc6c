"""DefaultPreemption in the batched openb engine, timed: the openb profile
plus DefaultPreemption at postFilter over a preempting openb workload,
every (policy, seed) run in one ``ts.simulate_batch`` call (the CPU twin
on numba, or cuda) against one ``Simulation`` per run in the same
process, with whether each run's placements, GPU indices and victims are
its Simulation's.

python -m tensorsched.bench.openb_preempt [--trace gpushare40] [--nodes 12] [--pods 400]
        [--scale 600] [--stay 30] [--high 0.3] [--seeds 1-2] [--policies ...]
        [--backend numba|cuda] [--workers N] [--output bench/results/openb-preempt-<backend>.json]

The workload: the first ``--nodes`` GPU nodes of the openb node list and
the first ``--pods`` pods of the trace, arrivals compressed ``--scale``
times (whole seconds), each pod with a deletion time staying its lifetime
times ``--stay`` compressed as much (at least a second); a share of the pods
(``--high``, drawn with a fixed seed) has priority 100 (inference), the
others 0 (training), so the high-priority pods evict the others when the
cluster is full.  Recorded: wall and CPU seconds of both paths (this
process; the machine may be shared: the load average before and after),
the runs, preemptions and equality.
"""
import argparse
import json
import os
import time

import numpy as np
import pyarrow as pa

import tensorsched as ts
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.framework.simulation.trace import trace_from_table
from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.gpu import (ANNO_GPU_COUNT, ANNO_GPU_MILLI, ANNO_GPU_MODEL,
                                     build_inventory)
from tensorsched.topology.gpu_table import GpuTable
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb import trace as T

from .harness import cpu_seconds, git_commit, machine_info
from .openb_batch import DATA

HIGH, LOW = 100, 0


def timed(fn) -> tuple:
    """(``fn()``, its wall and CPU seconds and the load average before and
    after)."""
    load0, c0, t0 = os.getloadavg(), cpu_seconds(), time.perf_counter()
    out = fn()
    return out, {"wall_seconds": round(time.perf_counter() - t0, 2),
                 "cpu_seconds": round(cpu_seconds() - c0, 2),
                 "load_before": [round(x, 2) for x in load0],
                 "load_after": [round(x, 2) for x in os.getloadavg()]}


def preempt_config(policy: str, n: int) -> dict:
    """The openb profile (``openb_config``: the tie rank unless Random)
    plus DefaultPreemption at postFilter (its default arguments)."""
    cfg = T.openb_config(policy, None, None if policy == "Random" else n + 1)
    cfg["profiles"][0]["plugins"]["postFilter"]["enabled"] = [{"name": "DefaultPreemption"}]
    return cfg


def workload(data: str, trace: str, n_nodes: int, n_pods: int, scale: float,
             high: float = 0.3, stay: float = 1.0) -> tuple:
    """(GpuInventory, Trace) of the module doc's workload."""
    csv_dir = os.path.join(data, "csv")
    inv = R.read_openb_nodes(os.path.join(csv_dir, "openb_node_list_gpu_node.csv"))
    keep = list(range(min(n_nodes, inv.n_nodes)))
    inv = build_inventory([inv.names[i] for i in keep], inv.cpu_cap[keep], inv.mem_cap[keep],
                          inv.gpu_count[keep],
                          [inv.models[inv.model[i]] if inv.model[i] >= 0 else "" for i in keep])
    tw = B.trace_workload(T.read_openb_trace(os.path.join(csv_dir,
                                                          f"openb_pod_list_{trace}.csv")))
    p = tw.pods
    k = min(n_pods, len(tw.arrival))
    arrival = np.floor(tw.arrival[:k] / scale)
    # a lifetime compressed to nothing would delete the pod at its arrival
    life = np.maximum(np.floor((tw.departure[:k] - tw.arrival[:k]) * stay / scale), 1.0)
    annos, prio = [], []
    draw = np.random.default_rng(0).random(k)
    for j in range(k):
        a = None
        if p.num[j] and p.milli[j]:
            a = [(ANNO_GPU_MILLI, str(int(p.milli[j]))), (ANNO_GPU_COUNT, str(int(p.num[j])))]
            if p.spec[j]:
                a.append((ANNO_GPU_MODEL, p.spec[j]))
        annos.append(a)
        prio.append(HIGH if draw[j] < high else LOW)
    table = pa.table({
        "name": pa.array(p.names[:k]), "arrival": pa.array(arrival),
        "departure": pa.array([float(a + d) if np.isfinite(d) else None
                               for a, d in zip(arrival, life)], pa.float64()),
        "cpu": pa.array(p.cpu[:k]), "memory": pa.array(p.mem[:k] * 1048576),
        "annotations": pa.array(annos, pa.map_(pa.string(), pa.string())),
        "priority": pa.array(prio, pa.int32())})
    return inv, trace_from_table(table)


def simulate(inv, trace, policy: str, seed: int) -> tuple:
    """One run as a Simulation: (node per pod, GPUs per pod, victims)."""
    n = inv.n_nodes
    tw = B.trace_workload(trace)
    cfg = preempt_config(policy, n)
    typical = T.typical_of(tw.pods)
    if typical:
        cfg["profiles"][0]["pluginConfig"][0]["args"]["typicalPods"] = typical
    tie = None if policy == "Random" else B.tie_of(n, seed)
    sim = Simulation(T.openb_node_objects(inv, tie), cfg, "numba", seed,
                     registry=T.experiment_registry(),
                     pod_max_in_unschedulable_seconds=B.DEFAULT_MAX_UNSCHED)
    index = {name: j for j, name in enumerate(tw.pods.names)}
    rows = {name: i for i, name in enumerate(inv.names)}
    node = np.full(len(index), -1, np.int64)
    gpus = [()] * len(index)
    victims = []

    def bound(e):
        j = index[e["pod"].split("/", 1)[1]]
        node[j] = rows[e["node"]]
        a = GpuTable.attached(sim.cluster.state).alloc.get(e["pod"])
        gpus[j] = tuple(a.indices) if a is not None and a.indices else ()

    sim.on("Bound", bound)
    sim.on("Preempted", lambda e: victims.append(index[e["pod"].split("/", 1)[1]]))
    sim.submit(trace.table)
    sim.run()
    return node, gpus, sorted(victims)


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
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--output")
    a = ap.parse_args(argv)
    inv, trace = workload(a.data, a.trace, a.nodes, a.pods, a.scale, a.high, a.stay)
    policies = a.policies.split(",")
    seeds = R.parse_seeds(a.seeds)
    configs = [preempt_config(p, inv.n_nodes) for p in policies]
    # compile (or load the compiled kernels) outside the timing
    ts.simulate_batch(inv, trace, configs[:1], seeds[:1], backend=a.backend, workers=a.workers)
    runs, batched = timed(lambda: ts.simulate_batch(inv, trace, configs, seeds,
                                                     backend=a.backend, workers=a.workers))
    sims, per_run = timed(lambda: [simulate(inv, trace, policies[r.config], r.seed)
                                    for r in runs])
    equal = [r.node.tolist() == node.tolist()
             and all(r.gpus[j] == g for j, g in enumerate(gpus) if node[j] >= 0)
             and np.flatnonzero(r.preempted).tolist() == victims
             for r, (node, gpus, victims) in zip(runs, sims)]
    record = {"experiment": "openb profile + DefaultPreemption, simulate_batch vs one "
                            "Simulation per run (module doc's workload)",
              "trace": a.trace, "nodes": inv.n_nodes, "pods": len(trace), "scale": a.scale,
              "stay": a.stay,
              "priorities": {"high (inference)": HIGH, "low (training)": LOW,
                             "share high": a.high},
              "policies": policies, "seeds": a.seeds, "runs": len(runs),
              "backend": a.backend, "workers": a.workers or os.cpu_count(),
              "preemptions": [int(r.preempted.sum()) for r in runs],
              "scheduled": [r.scheduled for r in runs],
              "batched": batched, "per_run": per_run,
              "runs_equal": f"{sum(equal)}/{len(equal)}",
              "cpu_ratio": round(per_run["cpu_seconds"] / max(batched["cpu_seconds"], 1e-9), 1),
              "commit": git_commit(), "machine": machine_info(),
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    out = a.output or os.path.join(os.path.dirname(os.path.realpath(__file__)), "results",
                                   f"openb-preempt-{a.backend}.json")
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps(record, indent=1))
    return record


if __name__ == "__main__":
    main()
