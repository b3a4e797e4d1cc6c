"""GPU-sharing arrivals through the compiled block (``python -m
tensorsched.bench.gpu_blocks``): ``--nodes`` 8-GPU nodes, ``--pods`` openb-
style pods (shares of one GPU and whole GPUs, annotations) arriving one
after another with no departures, under the openb FGD profile with its
typical pods; GpuShareFit's ``place_block`` places them.  One JSON record:
pods a second over ``Simulation.run``, the digest of the outcome (equal
records place the same), and how many pods the blocks placed.
"""

from __future__ import annotations

import argparse
import time
from unittest.mock import patch

import numpy as np
import pyarrow as pa

from tensorsched.bench.harness import record_stamp, write_record
from tensorsched.generators.clusters import node_dict
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.framework.simulation.trace import trace_from_table
from tensorsched.topology import plugins as P
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


def bench(nodes: int, pods: int, trees: bool = True, backend: str = "numba") -> dict:
    objs = [node_dict(f"gpu-{i}", cpu="96", memory="768Gi", pods="110",
                      extra={"nvidia.com/gpu": "8"},
                      labels={"nvidia.com/gpu.product": "A100"}) for i in range(nodes)]
    table = gpu_trace(pods)
    cfg = openb_config("FGD", typical_shapes(trace_shapes(trace_from_table(table))))

    def once(n_pods):
        sim = Simulation(objs, cfg, backend, 0)
        sim.submit(trace_from_table(table.slice(0, n_pods)))
        t0 = time.perf_counter()
        s = sim.run()
        return time.perf_counter() - t0, s, sim

    with patch.object(P, "MAX_TREES", getattr(P, "MAX_TREES", 0) if trees else 0, create=True):
        once(min(pods, 200))               # compiled kernels loaded
        wall, s, sim = once(pods)
    return {"workload": "gpu-blocks", "nodes": nodes, "pods": pods, "backend": backend,
            "policy": "FGD",
            "trees": trees, "wall_seconds": round(wall, 3),
            "pods_per_second": round(pods / wall, 1), "scheduled": s["scheduled"],
            "block_pods": sim.scheduler.block_pods, "digest": sim.digest()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--pods", type=int, default=10_000)
    ap.add_argument("--no-trees", action="store_true", help="one pass over the nodes a pod")
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    record = {"benchmark": "gpu_blocks", **record_stamp(0),
              **bench(args.nodes, args.pods, not args.no_trees)}
    print(record)
    if args.output:
        write_record(record, args.output)
    return 0


if __name__ == "__main__":   # pragma: no cover
    raise SystemExit(main())
