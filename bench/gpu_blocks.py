"""GPU-sharing arrivals through the compiled block (``python -m
tensorsched.bench.gpu_blocks``): ``--nodes`` 8-GPU nodes, ``--pods`` openb-
style pods (shares of one GPU and whole GPUs, annotations) arriving one
after another with no departures, under the openb FGD profile with its
typical pods; GpuShareFit's ``place_block`` places them.  One JSON record:
pods a second over ``Simulation.run``, its process CPU seconds, the digest of
the outcome and a sha256 of the GPU indices taken (equal records place the
same), and how many pods the blocks placed.  ``--learn``: FGD is given no
typical pods and learns them from the pods it scores (no block: every pod
takes its own cycle, and every new pod moves the typical-pod weights).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time
from unittest.mock import patch

import numpy as np
import pyarrow as pa

from tensorsched.bench.harness import record_stamp, write_record
from tensorsched.generators.clusters import node_dict
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.framework.simulation.trace import trace_from_table
from tensorsched.topology import plugins as P
from tensorsched.topology.gpu_table import GpuTable
from tensorsched.topology.openb.trace import openb_config
from tensorsched.topology.sim_metrics import trace_shapes, typical_shapes

# (weight, cpu millicores, memory bytes, gpu count, milli per GPU)
MIX = ((10, 2000, 8 << 30, 1, 100), (10, 2000, 8 << 30, 1, 250), (12, 4000, 16 << 30, 1, 500),
       (8, 4000, 16 << 30, 1, 750), (25, 8000, 32 << 30, 1, 1000),
       (15, 16000, 64 << 30, 2, 1000), (10, 32000, 128 << 30, 4, 1000))


def gpu_trace(pods: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    w = np.array([m[0] for m in MIX], np.float64)
    kind = rng.choice(len(MIX), size=pods, p=w / w.sum())
    annos = [[("alibabacloud.com/gpu-milli", str(MIX[k][4])),
              ("alibabacloud.com/gpu-count", str(MIX[k][3]))] for k in kind.tolist()]
    return pa.table({
        "name": pa.array([f"p{i}" for i in range(pods)], pa.string()),
        "arrival": np.arange(pods, dtype=np.float64) * 0.001,
        "cpu": np.array([m[1] for m in MIX], np.int64)[kind],
        "memory": np.array([m[2] for m in MIX], np.int64)[kind],
        "annotations": pa.array(annos, pa.map_(pa.string(), pa.string()))})


def gpu_sha256(sim) -> str:
    """sha256 of every bound pod's GPU indices (by pod key)."""
    t = GpuTable.of(sim.cluster.state)
    h = hashlib.sha256()
    for key in sorted(t.alloc):
        a = t.alloc[key]
        h.update(f"{key} {','.join(str(g) for g in a.indices)} {a.milli}\n".encode())
    return h.hexdigest()


def bench(nodes: int, pods: int, trees: bool = True, backend: str = "numba",
          learn: bool = False) -> dict:
    objs = [node_dict(f"gpu-{i}", cpu="96", memory="768Gi", pods="110",
                      extra={"nvidia.com/gpu": "8"},
                      labels={"nvidia.com/gpu.product": "A100"}) for i in range(nodes)]
    table = gpu_trace(pods)
    cfg = openb_config("FGD", None if learn else
                       typical_shapes(trace_shapes(trace_from_table(table))))

    def once(n_pods):
        sim = Simulation(objs, cfg, backend, 0)
        sim.submit(trace_from_table(table.slice(0, n_pods)))
        t0, c0 = time.perf_counter(), time.process_time()
        s = sim.run()
        return time.perf_counter() - t0, time.process_time() - c0, s, sim

    with patch.object(P, "MAX_TREES", getattr(P, "MAX_TREES", 0) if trees else 0, create=True):
        once(min(pods, 200))               # compiled kernels loaded
        wall, cpu, s, sim = once(pods)
    return {"workload": "gpu-blocks", "nodes": nodes, "pods": pods, "backend": backend,
            "policy": "FGD", "learn_typical_pods": learn,
            "trees": trees, "wall_seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
            "cpu_us_per_pod": round(cpu / pods * 1e6, 1),
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "pods_per_second": round(pods / wall, 1), "scheduled": s["scheduled"],
            "block_pods": sim.scheduler.block_pods, "digest": sim.digest(),
            "gpu_sha256": gpu_sha256(sim)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--pods", type=int, default=10_000)
    ap.add_argument("--no-trees", action="store_true", help="one pass over the nodes a pod")
    ap.add_argument("--backend", default="numba", choices=("numba", "numpy"))
    ap.add_argument("--learn", action="store_true",
                    help="FGD learns its typical pods from the pods it scores")
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    record = {"benchmark": "gpu_blocks", **record_stamp(0),
              **bench(args.nodes, args.pods, not args.no_trees, args.backend, args.learn)}
    print(record)
    if args.output:
        write_record(record, args.output)
    return 0


if __name__ == "__main__":   # pragma: no cover
    raise SystemExit(main())
