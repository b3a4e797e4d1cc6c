"""openb's Random policy through ``Simulation``, GPU blocks on against off
(``python -m tensorsched.bench.random_blocks``): each pod of a block draws
its node as its own cycle would, so both place the same; this measures what
the blocks save.  Three workloads, each run blocks on and off alternately
``--rounds`` times in this process (process CPU seconds over
``Simulation.run``): ``openb-arrivals``, the ``--trace`` pod list (default
``default``) on the openb GPU nodes arriving one pod a simulated second
with no departures (as the paper's experiment feeds its pods); ``trace``,
that pod list as it is, with its departures; ``arrivals``, ``gpu_blocks``'
openb-style pods arriving one after another with no departures on
``--nodes`` 8-GPU nodes.  One JSON record: per workload and mode the CPU
seconds of every round, their median, the pods the arrival blocks placed
(``Scheduler.block_pods``), the digest and GPU-index sha256 (equal on and
off; the hourly curves compared too), and the speed-up of the medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import pyarrow as pa

from tensorsched.bench.gpu_blocks import gpu_sha256, gpu_trace
from tensorsched.bench.harness import record_stamp, write_record
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.framework.simulation.trace import trace_from_table
from tensorsched.generators.clusters import node_dict
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb.trace import (
    experiment_registry,
    openb_config,
    openb_node_objects,
    read_openb_trace,
)

NODES_CSV = "data/openb/csv/openb_node_list_gpu_node.csv"


def _paced(path: str):
    """The openb pod list at ``path`` arriving one pod a second from t = 1,
    none leaving."""
    table = read_openb_trace(path).table.drop_columns(["departure"])
    arrival = pa.array(np.arange(1, table.num_rows + 1, dtype=np.float64))
    return trace_from_table(table.set_column(table.schema.get_field_index("arrival"),
                                             "arrival", arrival))


def _workloads(trace: str, nodes: int, arrivals: int) -> dict:
    """name -> (node objects, a function giving a fresh trace)."""
    path = f"data/openb/csv/openb_pod_list_{trace}.csv"
    openb_nodes = openb_node_objects(R.read_openb_nodes(NODES_CSV))
    gpu_nodes = [node_dict(f"gpu-{i}", cpu="96", memory="768Gi", pods="110",
                           extra={"nvidia.com/gpu": "8"},
                           labels={"nvidia.com/gpu.product": "A100"}) for i in range(nodes)]
    synthetic = gpu_trace(arrivals)
    return {"openb-arrivals": (openb_nodes, lambda: _paced(path)),
            "trace": (openb_nodes, lambda: read_openb_trace(path)),
            "arrivals": (gpu_nodes, lambda: trace_from_table(synthetic))}


def _once(objs, trace, batch: bool, seed: int) -> dict:
    sim = Simulation(objs, openb_config("Random"), "numba", seed,
                     registry=experiment_registry(), batch=batch, interval=3600.0)
    sim.submit(trace)
    c0 = time.process_time()
    s = sim.run()
    cpu = time.process_time() - c0
    return {"cpu_seconds": round(cpu, 3), "scheduled": s["scheduled"],
            "block_pods": sim.scheduler.block_pods, "digest": sim.digest(),
            "gpu_sha256": gpu_sha256(sim), "series": sim.timeseries().to_pydict()}


def bench(trace: str, nodes: int, arrivals: int, rounds: int, seed: int) -> dict:
    out = {}
    for name, (objs, make) in _workloads(trace, nodes, arrivals).items():
        _once(objs, make(), True, seed)         # compiled kernels loaded
        runs: dict = {"on": [], "off": []}
        for _ in range(rounds):
            for mode in ("on", "off"):
                runs[mode].append(_once(objs, make(), mode == "on", seed))
        rec = {}
        for mode, rs in runs.items():
            first = rs[0]
            assert all((r["digest"], r["gpu_sha256"]) == (first["digest"], first["gpu_sha256"])
                       for r in rs)
            cpu = [r["cpu_seconds"] for r in rs]
            rec[mode] = {"cpu_seconds": cpu, "median_cpu_seconds": statistics.median(cpu),
                         "scheduled": first["scheduled"], "block_pods": first["block_pods"],
                         "digest": first["digest"], "gpu_sha256": first["gpu_sha256"]}
        same = all(rec["on"][k] == rec["off"][k] for k in ("digest", "gpu_sha256", "scheduled"))
        same = same and runs["on"][0]["series"] == runs["off"][0]["series"]
        out[name] = {**rec, "same_placements_gpus_curves": same,
                     "speedup": round(rec["off"]["median_cpu_seconds"]
                                      / max(rec["on"]["median_cpu_seconds"], 1e-9), 2)}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default="default")
    ap.add_argument("--nodes", type=int, default=1000, help="nodes of the arrivals workload")
    ap.add_argument("--arrivals", type=int, default=10_000,
                    help="pods of the arrivals workload")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    record = {"benchmark": "random_blocks", **record_stamp(args.seed), "backend": "numba",
              "policy": "Random", "trace": args.trace, "arrival_nodes": args.nodes,
              "arrival_pods": args.arrivals, "rounds": args.rounds,
              **bench(args.trace, args.nodes, args.arrivals, args.rounds, args.seed)}
    print(record)
    if args.output:
        write_record(record, args.output)
    return 0


if __name__ == "__main__":   # pragma: no cover
    raise SystemExit(main())
