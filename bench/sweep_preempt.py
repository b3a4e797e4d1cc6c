"""``tensorsched sweep`` over default-profile configurations on manifests
where pods preempt, batched (``experiments.sweep_local`` with
``sweep_preempt``: DefaultPreemption inside the node-local kernel's trace
form, one call) against one Simulation per job (the way these jobs ran
before: refused by the batched path): ``python -m
tensorsched.bench.sweep_preempt``.

The cluster: ``--nodes`` nodes (4 cpu / 16Gi / 110 pods), each with two
bound pods of priority 0 (1 cpu); the trace: ``--pods`` pods (250m..2
cpu, 256Mi..2Gi) arriving a second apart, of priorities 0, 100 and 1000
(the later ones more often high: they come when the cluster is full),
most staying, some leaving after 30..600 s, some after a duration; three
configurations (LeastAllocated, MostAllocated, RequestedToCapacityRatio
at percentageOfNodesToScore 50, DefaultPreemption's
minCandidateNodesPercentage 10, 30, 10) times ``--seeds`` seeds.  CPU and
wall seconds of both, the load average before each, whether the tables
are equal (but ``wall_seconds``), the preemptions per job and how many
jobs the batched path took.  Written to
``bench/results/sweep-preempt-numba.json`` (``--output`` elsewhere).

``--grace G`` (seconds above 0): the victims terminate that long on their
node (the Scheduler's termination_grace_seconds); the batched side is
``ts.simulate_batch(..., termination_grace_seconds=G)`` over the
configurations and seeds in one call and the per-run side one
``ts.Simulation(..., termination_grace_seconds=G)`` per run fed the trace;
equal when every run binds each pod on the same node at the same time and
preempts the same pods as often (``timed_grace``).  Written to
``bench/results/sweep-preempt-grace-numba.json``.  With ``--sweep`` too:
the sweep's jobs under that grace (``make_jobs(...,
termination_grace_seconds=G)``), batched against per job as without a
grace, written to ``bench/results/sweep-preempt-sweep-grace-numba.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import yaml

import tensorsched as ts
from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_local as SL
from tensorsched.framework.simulation.scenario import load_scenario
from tensorsched.generators.clusters import node_dict, pod_dict

from .harness import git_commit, machine_info
from .sweep_timing import comparison, timed_sweep

RESULTS = Path(__file__).resolve().parent / "results"
API = "kubescheduler.config.k8s.io/v1"
STRATEGIES = (
    ({"type": "LeastAllocated"}, 100, 10),
    ({"type": "MostAllocated"}, 100, 30),
    ({"type": "RequestedToCapacityRatio",
      "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10},
                                             {"utilization": 100, "score": 0}]}}, 50, 10),
)


def write_inputs(where: Path, nodes: int, pods: int, seed: int = 0) -> tuple:
    """(cluster path, trace path, config paths) under ``where``."""
    objs = [node_dict(f"node-{i}", cpu="4", memory="16Gi") for i in range(nodes)]
    for i in range(nodes):
        for k in range(2):
            p = pod_dict(f"bound-{i}-{k}", cpu="1", memory="1Gi", priority=0)
            p["spec"]["nodeName"] = f"node-{i}"
            objs.append(p)
    cluster = where / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(objs))
    rng = np.random.default_rng(seed)
    lines = ["name,arrival,departure,duration,cpu,memory,priority"]
    for j in range(pods):
        stay = int(rng.choice([-1, -1, -1, 30, 600]))
        timed = stay >= 0 and rng.random() < 0.5
        dep = "" if stay < 0 or timed else str(j + stay)
        prio = rng.choice([0, 100, 1000] if j < pods // 2 else [0, 1000, 1000])
        lines.append(f"p{j},{j},{dep},{stay if timed else ''},"
                     f"{rng.choice(['250m', '500m', '1', '2'])},"
                     f"{rng.choice(['256Mi', '1Gi', '2Gi'])},{prio}")
    trace = where / "trace.csv"
    trace.write_text("\n".join(lines) + "\n")
    configs = []
    for k, (strategy, pct, cand) in enumerate(STRATEGIES):
        cfg = {"apiVersion": API, "kind": "KubeSchedulerConfiguration",
               "percentageOfNodesToScore": pct,
               "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
                   {"name": "NodeResourcesFit",
                    "args": {"apiVersion": API, "kind": "NodeResourcesFitArgs",
                             "scoringStrategy": strategy}},
                   {"name": "DefaultPreemption",
                    "args": {"apiVersion": API, "kind": "DefaultPreemptionArgs",
                             "minCandidateNodesPercentage": cand}}]}]}
        path = where / f"config{k}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        configs.append(str(path))
    return str(cluster), str(trace), configs


def _timed(fn) -> tuple:
    load = os.getloadavg()
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return ({"cpu_seconds": round(time.process_time() - c0, 3),
             "wall_seconds": round(time.perf_counter() - t0, 3),
             "load_before": [round(x, 2) for x in load]}, out)


def _outcome(sim) -> tuple:
    """A Simulation's run to its end: ({pod: (node, bind time)}, Preempted
    events per pod)."""
    bound, preempted = {}, Counter()
    sim.scheduler.subscribe("Bound", lambda e: bound.__setitem__(
        e["pod"], (e["node"], sim.clock.now())))
    sim.scheduler.subscribe("Preempted", lambda e: preempted.update([e["pod"]]))
    return bound, preempted


def timed_grace(cluster: str, trace: str, configs: list, seeds: list, grace: float,
                scenario: str | None = None) -> dict:
    """The record's fields of ``--grace``: ``ts.simulate_batch`` of every
    (config, seed) under ``grace`` (after a warm-up call) against one
    Simulation per run, timed alike; ``equal`` when each run's bindings
    (pod, node, time) and preemption counts are its Simulation's."""
    objs = list(yaml.safe_load_all(Path(cluster).read_text()))
    cfgs = [yaml.safe_load(Path(c).read_text()) for c in configs]
    tr = run.read_trace_file(trace)
    sc = None if scenario is None else load_scenario(scenario)
    setups = [SL.trace_setup(objs, c, tr, sc) for c in cfgs]
    ts.simulate_batch(objs, [trace], cfgs[:1], seeds=seeds[:1], scenario=scenario,
                      termination_grace_seconds=grace, workers=1)       # compile
    batched, runs = _timed(lambda: ts.simulate_batch(
        objs, [trace], cfgs, seeds=seeds, scenario=scenario, termination_grace_seconds=grace,
        workers=1))

    def per_run():
        out = []
        for cfg in cfgs:
            for seed in seeds:
                sim = ts.Simulation(objs, cfg, "numba", seed, termination_grace_seconds=grace)
                if scenario is not None:
                    sim.scenario(scenario)
                got = _outcome(sim)
                sim.submit(tr)
                sim.run()
                out.append(got)
        return out

    per, want = _timed(per_run)
    equal = True
    for r, (bound, preempted) in zip(runs, want):
        s = setups[r.config]
        keys = [p.key for p in s.prober.pods]
        every = keys + [b.key for b in s.prober.bound]
        got = {k: (r.node_names[n], float(t)) for k, n, t in zip(keys, r.node.tolist(),
                                                                 r.bind.tolist()) if n >= 0}
        vic = Counter({k: int(v) for k, v in zip(every, r.victim.tolist()) if v})
        equal &= got == {k: v for k, v in bound.items() if k in set(keys)} and vic == preempted
    return {"grace": grace, "batched": batched, "per_run": per, "equal": bool(equal),
            "cpu_ratio": round(per["cpu_seconds"] / max(batched["cpu_seconds"], 1e-9), 2),
            "preemptions": [int(r.victim.sum()) for r in runs],
            "scheduled": [int((r.node >= 0).sum()) for r in runs]}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.sweep_preempt",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--pods", type=int, default=1500)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--grace", type=float, default=0.0)
    ap.add_argument("--sweep", action="store_true",
                    help="with --grace: the sweep's jobs under it, batched and per job")
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    if args.grace > 0 and not args.sweep:
        return graceful_run(args)
    with tempfile.TemporaryDirectory() as tmp:
        cluster, trace, configs = write_inputs(Path(tmp), args.nodes, args.pods)
        jobs = S.make_jobs([trace], list(range(args.seeds)), configs=configs, cluster=cluster,
                           termination_grace_seconds=args.grace)
        taken: list = []
        SL.batched_local(jobs, S.load_inputs(jobs), 1, lambda i, row, e: taken.append(i))
        # compile (or load the cached) kernels before timing
        timed_sweep(S.make_jobs([trace], [0], configs=configs[:1], cluster=cluster), True)
        batched, rows_b = timed_sweep(jobs, True)
        # per job: one process (the CPU time of a pool's workers is not this
        # process's), so both sides count every CPU second they spend
        per_run, rows_p = timed_sweep(jobs, False)
    record = {"benchmark": "sweep-preempt", "backend": "numba", "nodes": args.nodes,
              "pods": args.pods, "configs": len(configs), "seeds": args.seeds,
              "jobs": len(jobs), "termination_grace_seconds": args.grace,
              "batched_jobs": len(taken),
              **comparison(batched, per_run, rows_b, rows_p),
              "preemptions": [r["preemptions"] for r in rows_b],
              "machine": machine_info(), "commit": git_commit()}
    name = "sweep-preempt-sweep-grace-numba.json" if args.grace > 0 else \
        "sweep-preempt-numba.json"
    out = Path(args.output) if args.output else RESULTS / name
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"{len(jobs)} jobs ({len(taken)} batched), {args.nodes} nodes, {args.pods} pods, "
          f"{sum(record['preemptions'])} preemptions: batched {batched['cpu_seconds']} CPU s, "
          f"per run {per_run['cpu_seconds']} CPU s ({record['cpu_ratio']}x), "
          f"tables equal {record['tables_equal']}")
    print(f"wrote {out}")
    return record


def graceful_run(args, scenario_of=None, name: str = "sweep-preempt-grace") -> dict:
    """``--grace``'s run (module doc); ``scenario_of(where, nodes, pods)``
    writes a scenario (``bench.sweep_preempt_events``)."""
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        cluster, trace, configs = write_inputs(where, args.nodes, args.pods)
        scenario = None if scenario_of is None else scenario_of(where, args.nodes, args.pods)
        got = timed_grace(cluster, trace, configs, list(range(args.seeds)), args.grace,
                          scenario)
    record = {"benchmark": name, "backend": "numba", "nodes": args.nodes, "pods": args.pods,
              "configs": len(configs), "seeds": args.seeds,
              "runs": len(configs) * args.seeds, **got,
              "machine": machine_info(), "commit": git_commit()}
    out = Path(args.output) if args.output else RESULTS / f"{name}-numba.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"{record['runs']} runs, grace {args.grace:g} s, {args.nodes} nodes, {args.pods} pods, "
          f"{sum(record['preemptions'])} preemptions: batched "
          f"{got['batched']['cpu_seconds']} CPU s, per run {got['per_run']['cpu_seconds']} "
          f"CPU s ({got['cpu_ratio']}x), equal {got['equal']}")
    print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
