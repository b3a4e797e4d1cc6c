"""The ``tensorsched`` command: explain, schedule, bench, replay.

The composition root with ``tensorsched.synthetic``: it may import every
package (the framework, the GPU plugin set, the benchmarks).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import yaml

from tensorsched.bench.harness import write_record
from tensorsched.bench.workloads import run_workload
from tensorsched.framework.errors import TensorschedError
from tensorsched.framework.objects.manifests import load_objects
from tensorsched.framework.objects.synthetic import sample
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod, failed_scheduling_message
from tensorsched.framework.scheduler.metrics import summarize
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.topology.gpu_table import binding_gpus
from tensorsched.topology.openb import replay as R

from .synthetic import WORKLOADS


def _load(path):
    return load_objects(path)


def _config(path):
    return path  # load_config reads paths itself (None = upstream defaults)


def _single_pod(path) -> dict:
    objs = [o for o in _load(path) if o.get("kind") == "Pod"]
    if len(objs) != 1:
        raise TensorschedError(f"{path}: expected exactly one Pod, found {len(objs)}")
    return objs[0]


def cmd_explain(args) -> int:
    cluster = build_cluster(_load(args.cluster), _config(args.config))
    pod = _single_pod(args.pod)
    record = explain_pod(cluster, pod, backend=args.backend, seed=args.seed)
    if args.format == "json":
        print(json.dumps(record, indent=2))
        return 0
    print(f"pod {record['pod']}  profile {record['profile']}  backend {record['backend']}")
    print(f"nodes evaluated: {record['nodes_evaluated']}, feasible: {len(record['feasible'])}")
    top = sorted(record["total"].items(), key=lambda kv: (-kv[1], kv[0]))[: args.top]
    if top:
        plugins = list(next(iter(record["scores"].values())).keys())
        print("\n" + " ".join([f"{'node':<24}", f"{'total':>6}"] + [f"{p[:18]:>18}" for p in plugins]))
        for name, total in top:
            row = record["scores"][name]
            mark = "*" if name == record["selected"] else " "
            print(" ".join([f"{mark}{name:<23}", f"{total:>6}"] + [f"{row[p]:>18}" for p in plugins]))
    if record["filter"]:
        counts: dict[str, int] = {}
        for st in record["filter"].values():
            for r in st["reasons"]:
                counts[r] = counts.get(r, 0) + 1
        print("\nrejections:")
        for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {n:>5}  {reason}")
    msg = failed_scheduling_message(cluster, pod, backend=args.backend)
    print(f"\nselected: {record['selected']}" if msg is None else f"\n{msg}")
    return 0


def cmd_schedule(args) -> int:
    if args.cluster:
        objects = _load(args.cluster)
        if args.pods:
            objects = objects + _load(args.pods)
    else:
        nodes, pods = sample(seed=args.seed)
        objects = nodes + (_load(args.pods) if args.pods else pods)
    cluster = build_cluster(objects, _config(args.config))
    sched = Scheduler(cluster, args.backend, args.seed)
    bindings, preemptions = sched.schedule_pending(cluster.pending)
    summary = summarize(bindings)
    # the final bindings show only the last preemption of each preemptor
    summary["preemptions"] = len(preemptions)
    summary["evictions"] = len(sched.evictions)
    out = {"bindings": [b.to_dict() for b in bindings], "preemptions": preemptions,
           "evictions": sched.evictions, "summary": summary}
    gpus = binding_gpus(cluster.state)      # GPU indices, only for pods holding GPUs
    for d in out["bindings"]:
        if d.get("node") is not None and d["pod"] in gpus:
            d["gpus"] = gpus[d["pod"]]["indices"]
    if args.output:
        with open(args.output, "w") as f:
            if args.output.endswith(".json"):
                json.dump(out, f, indent=2)
            else:
                yaml.safe_dump(out, f, sort_keys=False)
    else:
        for b in bindings:
            print(f"{b.pod:<32} -> {b.node}" if b.node else f"{b.pod:<32} !! {b.message}")
    s = out["summary"]
    print(f"scheduled {s['scheduled']}/{s['pods']} pods on {s['nodes_used']} nodes "
          f"({s['unschedulable']} unschedulable, {s['preemptions']} preemptions, "
          f"{s['evictions']} evictions), backend {args.backend}", file=sys.stderr)
    return 0


def cmd_bench(args) -> int:
    record = run_workload(args.workload, args.nodes, args.pods, args.backend,
                          percentage=args.percentage_of_nodes_to_score, seed=args.seed)
    write_record(record, args.output)
    return 0


def cmd_replay(args) -> int:
    if args.plot:
        try:
            R._pyplot()
        except ImportError as exc:
            raise TensorschedError(f"replay --plot: {exc}") from exc
    if not args.sweep:
        if not args.policy:
            raise TensorschedError("replay: --policy is required (or use --sweep)")
        if len(args.pods) != 1:
            raise TensorschedError("replay: one --pods CSV per run (several need --sweep)")
        try:
            res, paths = R.run_replay(args.nodes, args.pods[0], args.policy, seed=args.seed,
                                      tune=args.tune, output=args.output, backend=args.backend)
            if args.plot:
                paths.append(R.plot_allocation([(R.workload_name(args.pods[0]), res)], args.plot,
                                               expected=args.expected))
        except (OSError, ValueError, KeyError) as exc:
            raise TensorschedError(f"replay: {exc}") from exc
        print(f"{args.policy} seed {args.seed}: {res.scheduled}/{res.pods} pods scheduled in "
              f"{res.seconds:.2f}s; GPU allocation at 100% demand {res.alloc[100]}%, "
              f"at {int(round(args.tune * 100))}% {res.alloc[min(130, int(round(args.tune * 100)))]}%"
              + (f"; wrote {', '.join(paths)}" if paths else ""), file=sys.stderr)
        return 0
    if not args.output:
        raise TensorschedError("replay --sweep: --output CSV is required")
    try:
        policies = [p.strip() for p in (args.policies or (args.policy or ",".join(R.K.POLICIES))).split(",")
                    if p.strip()]
        seeds = R.parse_seeds(args.seeds if args.seeds else str(args.seed))
        done = [0]
        total = len(args.pods) * len(policies) * len(seeds)

        def progress(wl, res):
            done[0] += 1
            print(f"[{done[0]}/{total}] {wl} {res.policy} seed {res.seed}: {res.alloc[100]}% at 100%, "
                  f"{res.seconds:.2f}s", file=sys.stderr)

        t0 = time.perf_counter()
        out = R.sweep(args.nodes, args.pods, policies, seeds, tune=args.tune, workers=args.workers,
                      backend=args.backend, output=args.output, progress=progress)
        paths = [args.output]
        if args.plot:
            paths.append(R.plot_allocation(out, args.plot, expected=args.expected))
    except (OSError, ValueError, KeyError) as exc:
        raise TensorschedError(f"replay: {exc}") from exc
    workers = max(1, min(args.workers or os.cpu_count() or 1, total))
    print(f"sweep: {total} runs on {workers} worker(s) in {time.perf_counter() - t0:.1f}s; "
          f"wrote {', '.join(paths)}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="tensorsched",
                                 description="Kubernetes scheduling decisions as array kernels.")
    sub = ap.add_subparsers(dest="command", required=True)
    backends = ("numpy", "numba", "cuda")

    e = sub.add_parser("explain", help="why a pod would land where it lands")
    e.add_argument("--cluster", required=True, help="file or directory of Node/Pod manifests")
    e.add_argument("--pod", required=True, help="manifest of the pod to place")
    e.add_argument("--config", help="KubeSchedulerConfiguration (v1) file")
    e.add_argument("--backend", choices=backends, default="numpy")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--format", choices=("json", "table"), default="json")
    e.add_argument("--top", type=int, default=10, help="nodes shown in the table")
    e.set_defaults(func=cmd_explain)

    s = sub.add_parser("schedule", help="schedule pending pods through the scheduling queue")
    s.add_argument("--cluster", help="manifests (default: a built-in synthetic cluster)")
    s.add_argument("--pods", help="pending pods (default: those in --cluster, or built-in)")
    s.add_argument("--config", help="KubeSchedulerConfiguration (v1) file")
    s.add_argument("--backend", choices=backends, default="numpy")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--output", help="write bindings as YAML (or JSON for *.json)")
    s.set_defaults(func=cmd_schedule)

    b = sub.add_parser("bench", help="scheduler_perf-like workloads")
    b.add_argument("--workload", default="basic", choices=WORKLOADS)
    b.add_argument("--nodes", type=int, default=1000)
    b.add_argument("--pods", type=int, default=1000)
    b.add_argument("--backend", choices=backends, default="numba")
    b.add_argument("--percentage-of-nodes-to-score", type=int, default=100)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--output", help="write the JSON record here too")
    b.set_defaults(func=cmd_bench)

    r = sub.add_parser("replay", help="openb GPU trace replay (Weng et al., ATC'23)")
    r.add_argument("--nodes", required=True, help="openb node CSV (the paper uses the GPU nodes: "
                   "data/openb/csv/openb_node_list_gpu_node.csv)")
    r.add_argument("--pods", required=True, nargs="+", help="openb pod CSV (several with --sweep)")
    r.add_argument("--policy",
                   choices=("Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD"))
    r.add_argument("--seed", type=int, default=42)
    r.add_argument("--tune", type=float, default=1.3)
    r.add_argument("--backend", choices=("numba", "numpy"), default="numba")
    r.add_argument("--output", help="allocation CSV; *_frag.csv and *_frag_ratio.csv beside it "
                   "(with --sweep: the one sweep CSV)")
    r.add_argument("--sweep", action="store_true",
                   help="run policies x pod CSVs x seeds in parallel and write one CSV")
    r.add_argument("--policies", help="with --sweep: comma-separated policies (default: all six)")
    r.add_argument("--seeds", help="with --sweep: e.g. 42-51 or 42,43 (default: --seed)")
    r.add_argument("--workers", type=int, default=None, help="with --sweep: processes (default: all cores)")
    r.add_argument("--plot", metavar="PNG", help="draw the allocation curves (needs the 'plot' extra)")
    r.add_argument("--expected", metavar="CSV",
                   help="with --plot: analysis_allo_discrete.csv to draw the published means dashed")
    r.set_defaults(func=cmd_replay)
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except TensorschedError as exc:
        print(f"tensorsched: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":   # pragma: no cover
    sys.exit(main())
