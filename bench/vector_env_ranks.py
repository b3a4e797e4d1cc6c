"""Steps per second of the openb vector environment (``OpenbVectorEnv``)
on a trace with pods of unequal priorities (activeQ a heap in
PrioritySort's order) against the same trace first in first out, and
against every pod of one rank (activeQ a heap, the runs first in first
out's: the heap's own cost), timed alternately in one process
(``--rounds`` times each, after an untimed step compiling or loading
them).

The trace: an openb pod list read with its own creation and deletion
times (``trace_workload(read_openb_trace(...))``), its arrival times
divided by ``--compress`` and rounded down (the default trace: 320 groups
of up to 132 pods arriving together), each pod's stay divided the same
and rounded up (a pod that stays stays at least one unit);
the priorities from each pod's ``qos`` column (LS and Guaranteed first,
then Burstable, then BE).  ``--envs`` environments on the openb node list
(all 1,523 nodes by default), environment k running policy k mod 6 with
seed 42 + k // 6, stepped with their default actions: ``--warmup`` steps
after a reset, then ``--steps`` timed; a step counts once per environment.

python -m tensorsched.bench.vector_env_ranks [--envs 256] [--steps 200] [--warmup 200]
        [--rounds 2] [--trace default] [--nodes all_node] [--compress 10000] [--threads N]
        [--output bench/results/vector-env-numba-256-ranks.json]
"""
import argparse
import csv
import json
import os
import time

import numpy as np

from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb import trace as T
from tensorsched.topology.openb.vector_env import OpenbVectorEnv

from .harness import git_commit, machine_info
from .vector_env import jobs_of

HERE = os.path.dirname(os.path.realpath(__file__))
DATA = os.path.join(HERE, "..", "data", "openb", "csv")
QOS_RANK = {"LS": 0, "Guaranteed": 0, "Burstable": 1, "BE": 2}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--envs", type=int, default=256)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--trace", default="default")
    ap.add_argument("--nodes", default="all_node")
    ap.add_argument("--compress", type=float, default=1e4)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--output")
    a = ap.parse_args(argv)
    record = run(a)
    out = a.output or os.path.join(HERE, "results", f"vector-env-numba-{a.envs}-ranks.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps(record, indent=1))


def ranked_trace(path: str, compress: float) -> B.TraceWorkload:
    """The openb trace at ``path`` with its times compressed and its
    priorities from ``qos`` (module doc)."""
    tw = B.trace_workload(T.read_openb_trace(path))
    with open(path) as f:
        qos = [row["qos"] for row in csv.DictReader(f)]
    arrival = np.floor(tw.arrival / compress)
    departure = np.where(np.isfinite(tw.departure),
                         arrival + np.ceil((tw.departure - tw.arrival) / compress), np.inf)
    rank = np.array([QOS_RANK.get(q, 2) for q in qos], np.int64)
    return B.TraceWorkload(tw.pods, arrival, departure, rank=rank)


def _time(env, a) -> dict:
    """One timing: reset, ``a.warmup`` steps, ``a.steps`` timed."""
    _, info = env.reset()
    for _ in range(a.warmup):
        _, _, _, _, info = env.step(info["default_action"])
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(a.steps):
        _, _, _, _, info = env.step(info["default_action"])
    wall = time.perf_counter() - t0
    return {"wall_seconds": round(wall, 3), "cpu_seconds": round(time.process_time() - c0, 3),
            "env_steps_per_second": round(a.envs * a.steps / wall)}


def run(a) -> dict:
    """The record of the alternated timings (``a``: the parsed flags)."""
    nodes = R.read_openb_nodes(os.path.join(a.data, f"openb_node_list_{a.nodes}.csv"))
    ranked = ranked_trace(os.path.join(a.data, f"openb_pod_list_{a.trace}.csv"), a.compress)
    fifo = B.TraceWorkload(ranked.pods, ranked.arrival, ranked.departure)
    # every pod of one rank: activeQ a heap, the runs first in first out's
    one = B.TraceWorkload(ranked.pods, ranked.arrival, ranked.departure,
                          rank=np.zeros_like(ranked.rank))
    jobs = jobs_of(a.envs, None)
    t0 = time.perf_counter()
    envs = {k: OpenbVectorEnv(nodes, [tw], jobs, threads=a.threads)
            for k, tw in (("fifo", fifo), ("one_rank", one), ("ranks", ranked))}
    for env in envs.values():           # compiled (or loaded) outside the timing
        _, info = env.reset()
        env.step(info["default_action"])
    setup = time.perf_counter() - t0
    load0 = os.getloadavg()
    timings = {k: [] for k in envs}
    for _ in range(a.rounds):
        for k in envs:
            timings[k].append(_time(envs[k], a))
    node = {k: env.engine.out_node for k, env in envs.items()}
    if not np.array_equal(node["one_rank"], node["fifo"]):
        raise AssertionError("one rank for every pod placed pods unlike first in first out")
    cpu = {k: sum(t["cpu_seconds"] for t in v) for k, v in timings.items()}
    return {"bench": "openb vector env, default actions, ranks vs first in first out",
            "backend": "numba", "envs": a.envs, "steps": a.steps, "warmup_steps": a.warmup,
            "rounds": a.rounds, "nodes": nodes.n_nodes, "trace": a.trace,
            "compress_seconds": a.compress,
            "rank_counts": np.bincount(ranked.rank).tolist(),
            "threads": a.threads or os.cpu_count(), "setup_seconds": round(setup, 2),
            **timings,
            # the heap's cost on the same runs; the ranks' (their runs differ too)
            "one_rank_over_fifo_cpu": round(cpu["one_rank"] / cpu["fifo"], 3),
            "ranks_over_fifo_cpu": round(cpu["ranks"] / cpu["fifo"], 3),
            "events_placed_differently": int((node["ranks"] != node["fifo"]).sum()),
            "load_before": [round(x, 2) for x in load0],
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "commit": git_commit(), "machine": machine_info(),
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


if __name__ == "__main__":
    main()
