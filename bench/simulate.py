"""Simulation benchmarks (``python -m tensorsched.bench.simulate``), one
record in ``bench/results/simulate.json``:

- ``openb``: the openb ``default`` trace with its departures on the paper's
  1,213 GPU nodes under the FGD profile (``tensorsched simulate --nodes ...
  --trace ...``), wall seconds of the run (target: <= 3 s);
- ``churn``: a synthetic churn trace of 1,000,000 pods on 10,000 nodes
  (arrivals at whole seconds, 100 a second in bursts of four pod shapes, each
  leaving after an exponential time, mean 600 s), on numba: wall seconds
  (target: <= 60 s) and peak RSS (bounded by the pods alive);
- ``replay_equal``: ``replay`` against the same experiment through
  ``Simulation`` (``simulate_replay``) for a few (trace, policy, seed):
  allocation at 100 % and 130 % of arrived demand.
"""

from __future__ import annotations

import argparse
import gc
import os
import time

import numpy as np
import pyarrow as pa

from tensorsched.bench.harness import peak_rss_bytes, record_stamp, rss_bytes, write_record
from tensorsched.generators.clusters import node_dict
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.framework.simulation.trace import trace_from_table
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb.trace import (
    openb_config,
    openb_node_objects,
    read_openb_trace,
    simulate_replay,
)
from tensorsched.topology.sim_metrics import gpu_metrics, trace_shapes, typical_shapes

NODES = "data/openb/csv/openb_node_list_gpu_node.csv"
OUT = os.path.join(os.path.dirname(os.path.realpath(__file__)), "results", "simulate.json")
SHAPES = ((100, 500 << 20), (250, 1 << 30), (500, 2 << 30), (1000, 4 << 30))


def bench_openb(backend: str = "numba") -> dict:
    trace = read_openb_trace("data/openb/csv/openb_pod_list_default.csv")
    objs = openb_node_objects(NODES)
    typical = typical_shapes(trace_shapes(trace))
    cfg = openb_config("FGD", typical)

    def once():
        sim = Simulation(objs, cfg, backend, 0, interval=3600.0, metrics=gpu_metrics(typical))
        sim.submit(trace)
        t0 = time.perf_counter()
        s = sim.run()
        return time.perf_counter() - t0, s
    once()                               # compiled kernels loaded, caches warm
    wall, s = once()
    return {"trace": "openb_pod_list_default", "nodes": 1213, "policy": "FGD",
            "wall_seconds": round(wall, 3), "target_seconds": 3.0, "pods": s["arrived"],
            "scheduled": s["scheduled"], "departed": s["departed"], "rows": s["rows"]}


def churn_trace(pods: int, per_second: int = 100, mean_life: float = 600.0, seed: int = 0):
    rng = np.random.default_rng(seed)
    arrival = (np.arange(pods) // per_second).astype(np.float64)
    duration = np.maximum(1.0, np.round(rng.exponential(mean_life, pods)))
    # within a second, the pods of one shape arrive together (four
    # ReplicaSets scaling up): runs of alike pods, one compiled call each
    shape = np.sort(rng.integers(len(SHAPES), size=pods).reshape(-1, per_second), axis=1).ravel() \
        if pods % per_second == 0 else rng.integers(len(SHAPES), size=pods)
    cpu = np.array([s[0] for s in SHAPES], np.int64)[shape]
    mem = np.array([s[1] for s in SHAPES], np.int64)[shape]
    names = pa.array(np.char.add("p", np.arange(pods).astype(str)).tolist(), pa.string())
    return pa.table({"name": names, "arrival": arrival, "duration": duration,
                     "cpu": cpu, "memory": mem})


def bench_churn(pods: int, nodes: int, backend: str = "numba") -> dict:
    table = churn_trace(pods)
    objs = [node_dict(f"node-{i}", cpu="8", memory="32Gi", pods="110",
                      labels={"topology.kubernetes.io/zone": f"zone-{i % 3}"})
            for i in range(nodes)]
    t0 = time.perf_counter()
    trace = trace_from_table(table, source="churn")
    t_read = time.perf_counter() - t0
    sim = Simulation(objs, None, backend, 0, interval=600.0)
    del objs
    sim.submit(trace)
    del table
    gc.collect()
    rss0 = rss_bytes()
    t0 = time.perf_counter()
    s = sim.run()
    wall = time.perf_counter() - t0
    ts = sim.timeseries()
    return {"pods": pods, "nodes": nodes, "backend": backend, "per_second": 100,
            "mean_life_seconds": 600, "validate_seconds": round(t_read, 3),
            "wall_seconds": round(wall, 3), "target_seconds": 60.0,
            "pods_per_second": round(pods / wall, 1), "scheduled": s["scheduled"],
            "departed": s["departed"], "max_running": int(max(ts.column("running").to_pylist())),
            "rss_before_run_bytes": rss0, "peak_rss_bytes": peak_rss_bytes(),
            "rows": s["rows"]}


def bench_replay_equal(combos) -> list:
    nodes = R.read_openb_nodes(NODES)
    out = []
    for trace, policy, seed in combos:
        pods = R.read_openb_pods(f"data/openb/csv/openb_pod_list_{trace}.csv")
        a = R.replay(nodes, pods, policy, seed=seed)
        b = simulate_replay(nodes, pods, policy, seed=seed)
        out.append({"trace": trace, "policy": policy, "seed": seed,
                    "replay": [float(a.alloc[100]), float(a.alloc[130])],
                    "simulation": [float(b.alloc[100]), float(b.alloc[130])],
                    "replay_seconds": round(a.seconds, 2), "simulation_seconds": round(b.seconds, 2)})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=1_000_000)
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--backend", default="numba")
    ap.add_argument("--skip-replay", action="store_true")
    ap.add_argument("--output", default=OUT)
    args = ap.parse_args(argv)
    record = {"benchmark": "simulate", "command": "python -m tensorsched.bench.simulate",
              **record_stamp(0), "backend": args.backend}
    record["openb"] = bench_openb(args.backend)
    if not args.skip_replay:
        record["replay_equal"] = bench_replay_equal([("default", "FGD", 42),
                                                     ("gpushare40", "BestFit", 43),
                                                     ("multigpu20", "FGD", 44)])
    record["churn"] = bench_churn(args.pods, args.nodes, args.backend)
    write_record(record, args.output)
    return 0


if __name__ == "__main__":   # pragma: no cover
    raise SystemExit(main())
