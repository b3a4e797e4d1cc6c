"""The openb node-event engine's CPU twin timed alone, for a before /
after comparison of its source in separate processes (run this file with
``PYTHONPATH`` naming another tree's package to time that one):
``openb_preempt_events``' workload and scenario (node and Pod steps,
DefaultPreemption, 30% high-priority pods), every (policy, seed) run in
one ``ts.simulate_batch(..., scenario=S)`` call, compiled (or loaded)
first, then timed ``--repeat`` times; prints one JSON line: the CPU and
wall seconds of each call, the load average, and a digest of the runs'
answers (placements, GPUs, binding times, attempts, how each pod left,
evictions, the change logs) for the equality of both sides.

python bench/openb_events_steps.py [--nodes 200] [--pods 3000] [--scale 60] [--stay 30]
        [--seeds 1-2] [--policies FGD,BestFit] [--grace 0] [--repeat 2]
"""
import argparse
import hashlib
import json
import os
import time

import numpy as np

import tensorsched as ts
from tensorsched.bench.harness import cpu_seconds
from tensorsched.bench.openb_batch import DATA
from tensorsched.bench.openb_preempt import preempt_config, workload
from tensorsched.bench.openb_preempt_events import scenario
from tensorsched.topology.openb import replay as R


def digest(runs) -> str:
    h = hashlib.sha256()
    for r in runs:
        for f in ("node", "bind", "tries", "why", "log_t", "log_pod", "log_frag", "evictions"):
            x = getattr(r, f, None)
            if x is not None:
                h.update(np.ascontiguousarray(np.asarray(x)).tobytes())
        h.update(repr(r.gpus).encode())
    return h.hexdigest()[:16]


def main(argv=None, with_scenario: bool = True, nodes: int = 200, pods: int = 3000,
         scale: float = 60.0):
    """The timing above; ``with_scenario`` False: the engine without one
    (``openb_preempt_steps``, its own default sizes)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", default="gpushare40")
    ap.add_argument("--nodes", type=int, default=nodes)
    ap.add_argument("--pods", type=int, default=pods)
    ap.add_argument("--scale", type=float, default=scale)
    ap.add_argument("--high", type=float, default=0.3)
    ap.add_argument("--stay", type=float, default=30.0)
    ap.add_argument("--seeds", default="1-2")
    ap.add_argument("--policies", default="FGD,BestFit")
    ap.add_argument("--grace", type=float, default=0.0)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--data", default=DATA)
    a = ap.parse_args(argv)
    inv, trace = workload(a.data, a.trace, a.nodes, a.pods, a.scale, a.high, a.stay)
    sc = scenario(inv, trace) if with_scenario else None
    configs = [preempt_config(p, inv.n_nodes) for p in a.policies.split(",")]
    seeds = R.parse_seeds(a.seeds)

    def call():
        return ts.simulate_batch(inv, trace, configs, seeds, backend="numba", workers=1,
                                 scenario=sc, termination_grace_seconds=a.grace)
    call()
    cpu, wall = [], []
    load = os.getloadavg()
    for _ in range(a.repeat):
        c0, t0 = cpu_seconds(), time.perf_counter()
        runs = call()
        cpu.append(round(cpu_seconds() - c0, 3))
        wall.append(round(time.perf_counter() - t0, 3))
    print(json.dumps({"tree": os.path.dirname(os.path.dirname(ts.__file__)), "cpu": cpu,
                      "wall": wall, "load": [round(x, 2) for x in load],
                      "preempted": int(sum(int(r.preempted.sum()) for r in runs)),
                      "digest": digest(runs)}))


if __name__ == "__main__":
    main()
