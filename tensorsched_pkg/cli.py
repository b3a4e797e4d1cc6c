"""The ``tensorsched`` command: explain, schedule, bench, replay, capacity,
simulate, sweep (the last three from ``capacity_cli``, ``simulate_cli`` and
``sweep_cli``).

The composition root with ``tensorsched.synthetic``: it may import every
package (the framework, the GPU plugin set, the benchmarks).  Building the
parser imports nothing heavy, so ``--help`` and ``--version`` answer at
once; each command imports what it uses when it runs (NumPy, Numba, the
scheduler, the benchmark workloads: the first lines of each ``cmd_*``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

from tensorsched.framework.errors import TensorschedError
from tensorsched.kernels.gpu._core import POLICIES

from . import __version__, capacity_cli, simulate_cli, sweep_cli
from .cli_args import (
    BACKENDS,
    SEED,
    Parser,
    add_feature_gates,
    existing_path,
    int_in,
    load,
    load_cluster,
    output_file,
    positive_float,
    progress,
    require_plotting,
    subcommand,
)
from .synthetic import WORKLOADS


REPLAY_SEED = 42        # the paper's first seed


def _single_pod(path) -> dict:
    objs = [o for o in load(path) if o.get("kind") == "Pod"]
    if len(objs) != 1:
        raise TensorschedError(f"{path}: expected exactly one Pod, found {len(objs)}")
    return objs[0]


def _pods_file(path) -> list[dict]:
    """The objects of a ``schedule --pods`` file: pods and what they name
    (PriorityClasses, PDBs, workloads...), never a Node (it was added to
    the cluster without a word: the pods then landed on it)."""
    objs = load(path)
    for o in objs:
        if isinstance(o, dict) and o.get("kind") == "Node":
            name = (o.get("metadata") or {}).get("name")
            raise TensorschedError(f"{path}: Node {name}: schedule --pods takes pending pods; "
                                   "nodes go in --cluster")
    return objs


def _explain_table(record: dict, top: int) -> list[str]:
    """The table form of an explain record: the best nodes with each
    plugin's score and weight, the rejections by reason, the preemption."""
    ran = record["backend"]
    if record.get("requested_backend"):
        ran += f" ({record['requested_backend']})"
    lines = [f"pod {record['pod']}  profile {record['profile']}  backend {ran}"]
    if record.get("bound_node"):
        lines.append(f"bound to {record['bound_node']} (explained without its own usage)")
    lines.append(f"nodes evaluated: {record['nodes_evaluated']}, "
                 f"feasible: {len(record['feasible'])}")
    ranked = sorted(record["total"].items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    if ranked:
        weights = record.get("weights", {})
        plugins = list(next(iter(record["scores"].values())).keys())
        heads = [f"{p} x{weights.get(p, 1)}" for p in plugins]
        node_w = max(len("node"), *(len(n) for n, _ in ranked)) + 1
        widths = [max(len(h), 5) for h in heads]
        lines.append("")
        lines.append(" ".join([f"{'node':<{node_w}}", f"{'total':>6}"]
                              + [f"{h:>{w}}" for h, w in zip(heads, widths)]))
        for name, total in ranked:
            row = record["scores"][name]
            mark = "*" if name == record["selected"] else " "
            lines.append(" ".join([f"{mark}{name:<{node_w - 1}}", f"{total:>6}"]
                                  + [f"{row[p]:>{w}}" for p, w in zip(plugins, widths)]))
    if record["filter"]:
        counts: dict[str, int] = {}
        for st in record["filter"].values():
            for r in st["reasons"]:
                counts[r] = counts.get(r, 0) + 1
        lines.append("")
        lines.append("rejections:")
        for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {n:>5}  {reason}")
    pre = record.get("preemption")
    if pre is not None:
        lines.append("")
        if pre["nominated_node"] is None:
            lines.append("preemption: no node (no victims would make room)")
        else:
            lines.append(f"preemption: nominated {pre['nominated_node']}, evicting "
                         + (", ".join(pre["victims"]) or "nothing"))
    return lines


def cmd_explain(args) -> int:
    from tensorsched.framework.scheduler.explain import explain_pod, failed_scheduling_message
    pod = _single_pod(args.pod)
    cluster = load_cluster(load(args.cluster), args.config, [pod], args.feature_gates)
    record = explain_pod(cluster, pod, backend=args.backend, seed=args.seed)
    if args.format == "json":
        print(json.dumps(record, indent=2))
        return 0
    print("\n".join(_explain_table(record, args.top)))
    # the last line follows the record's own decision (both are made on the
    # same state: a bound pod without its own usage)
    if record["selected"] is not None:
        print(f"\nselected: {record['selected']}")
    else:
        print(f"\n{failed_scheduling_message(cluster, pod, backend=args.backend)}")
    return 0


def cmd_schedule(args) -> int:
    import yaml

    from tensorsched.generators.clusters import sample
    from tensorsched.framework.scheduler.events import OUTCOME_EVENTS
    from tensorsched.framework.scheduler.metrics import placed_by_line, summarize
    from tensorsched.framework.scheduler.scheduler import Scheduler
    from tensorsched.framework.state.dra_claims import binding_claims
    from tensorsched.topology.gpu_table import binding_gpus
    more = [o for path in args.pods or () for o in _pods_file(path)]
    if args.cluster:
        objects = load(args.cluster) + more
    else:
        nodes, pods = sample(seed=args.seed)
        objects = nodes + (more if args.pods else pods)
    cluster = load_cluster(objects, args.config, feature_gates=args.feature_gates)
    sched = Scheduler(cluster, args.backend, args.seed, batch=not args.no_batch)
    with progress(len(cluster.pending), "scheduling") as bar:
        done: set = set()

        def advance(e: dict) -> None:
            if e["event"] in OUTCOME_EVENTS and e["pod"] not in done:
                done.add(e["pod"])
                bar.update(1)
        unsubscribe = sched.subscribe("*", advance)
        try:
            bindings, preemptions = sched.schedule_pending(cluster.pending)
        finally:
            unsubscribe()
    summary = summarize(bindings)
    # the final bindings show only the last preemption of each preemptor
    summary["preemptions"] = len(preemptions)
    summary["evictions"] = len(sched.evictions)
    out = {"bindings": [b.to_dict() for b in bindings], "preemptions": preemptions,
           "evictions": sched.evictions, "summary": summary,
           "placed_by": dict(sched.placed_by), "runs_by": dict(sched.runs_by)}
    gpus = binding_gpus(cluster.state)      # GPU indices, only for pods holding GPUs
    claims = binding_claims(cluster.state)  # DRA devices, only for pods holding claims
    for d in out["bindings"]:
        if d.get("node") is not None and d["pod"] in gpus:
            d["gpus"] = gpus[d["pod"]]["indices"]
        if d.get("node") is not None and d["pod"] in claims:
            d["claims"] = claims[d["pod"]]
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
    ignored = f", {s['ignored']} for other schedulers" if s["ignored"] else ""
    print(f"scheduled {s['scheduled']}/{s['pods']} pods on {s['nodes_used']} nodes "
          f"({s['unschedulable']} unschedulable{ignored}, {s['preemptions']} preemptions, "
          f"{s['evictions']} evictions), backend {_ran(args.backend)}", file=sys.stderr)
    print(placed_by_line(out["placed_by"], out["runs_by"]), file=sys.stderr)
    return 0


def _ran(backend: str) -> str:
    """The backend that ran the cycles, and ``auto`` when it chose it."""
    from tensorsched.kernels.fused.backends import resolve_backend
    ran = resolve_backend(backend)
    return f"{ran} ({backend})" if ran != backend else ran


def cmd_bench(args) -> int:
    from tqdm import tqdm

    from tensorsched.bench.harness import write_record
    from tensorsched.bench.sizes import check_bench_size
    from tensorsched.bench.workloads import BENCH_STAGES, run_workload
    # refused before anything of that size is built (a run past the
    # machine's memory would swap for minutes, then be killed)
    check_bench_size(args.workload, args.nodes, args.pods)
    with tqdm(total=len(BENCH_STAGES), desc="bench", unit="stage", file=sys.stderr,
              disable=None, leave=False) as bar:
        def stage(name: str) -> None:
            bar.set_postfix_str(name)
            bar.update(1)
        record = run_workload(args.workload, args.nodes, args.pods, args.backend,
                              percentage=args.percentage_of_nodes_to_score, seed=args.seed,
                              progress=stage, batch=not args.no_batch,
                              remember_failures=not args.no_failure_memory)
    write_record(record, args.output)
    return 0


def _once(flag: str, what: str, items: list) -> list:
    """``items`` refused when one is given twice (a run twice in the sweep
    CSV would count twice in its means)."""
    seen = set()
    for x in items:
        if x in seen:
            raise TensorschedError(f"replay --sweep: {flag}: {what} {x} is given twice")
        seen.add(x)
    return items


def _sweep_lists(args, R) -> tuple[list, list]:
    """``replay --sweep``'s policies and seeds, each given once."""
    if args.policies is not None:
        policies = [p.strip() for p in args.policies.split(",") if p.strip()]
        if not policies:
            raise TensorschedError(f"replay --sweep: --policies {args.policies!r}: no policy; "
                                   f"choose of {', '.join(R.K.POLICIES)} (comma-separated)")
    else:
        policies = [args.policy] if args.policy else list(R.K.POLICIES)
    seeds = R.parse_seeds(args.seeds if args.seeds is not None else str(args.seed))
    _once("--pods", "pod CSV", list(args.pods))
    return _once("--policies", "policy", policies), _once("--seeds", "seed", seeds)


def _check_replay_flags(args) -> None:
    """Flags that would be dropped without a word, refused before any work:
    the sweep's lists without ``--sweep``, ``--policy`` or ``--seed``
    beside the list that replaces them, ``--expected`` without a plot."""
    if not args.sweep:
        for flag, value in (("--policies", args.policies), ("--seeds", args.seeds),
                            ("--workers", args.workers)):
            if value is not None:
                raise TensorschedError(f"replay: {flag} goes with --sweep")
    if args.policies is not None and args.policy:
        raise TensorschedError("replay --sweep: --policy and --policies exclude each other "
                               "(give the policies in one)")
    if args.seeds is not None and args.seed is not None:
        raise TensorschedError("replay --sweep: --seed and --seeds exclude each other "
                               "(give the seeds in one)")
    if args.expected and not args.plot:
        raise TensorschedError("replay: --expected goes with --plot (it draws the published "
                               "means on the plot)")


def _percent(value) -> str:
    """A point of the allocation curve: NaN where the arrived demand never
    reached that level (a workload smaller than tune x capacity)."""
    return f"{value}%" if value == value else "not reached"


def _problem(exc: Exception) -> str:
    """An error's words: an OSError as ``<file>: <reason>`` (not Python's
    ``[Errno 21] Is a directory: 'x'``), others as they are."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)


def cmd_replay(args) -> int:
    from tqdm import tqdm

    from tensorsched.topology.openb import replay as R
    if args.plot:
        require_plotting("replay")
    _check_replay_flags(args)
    if args.seed is None:
        args.seed = REPLAY_SEED
    if not args.sweep:
        if not args.policy:
            raise TensorschedError("replay: --policy is required (or use --sweep)")
        if len(args.pods) != 1:
            raise TensorschedError("replay: one --pods CSV per run (several need --sweep)")
        if args.backend == "cuda":
            raise TensorschedError("replay: --backend cuda runs sweeps only (add --sweep)")
        try:
            res, paths = R.run_replay(args.nodes, args.pods[0], args.policy, seed=args.seed,
                                      tune=args.tune, output=args.output, backend=args.backend)
            if args.plot:
                paths.append(R.plot_allocation([(R.workload_name(args.pods[0]), res)], args.plot,
                                               expected=args.expected))
        except (OSError, ValueError, KeyError) as exc:
            raise TensorschedError(f"replay: {_problem(exc)}") from exc
        # the curve ends at 130%: a larger tune is shown there, under that label
        at = min(130, int(round(args.tune * 100)))
        print(f"{args.policy} seed {args.seed}: {res.scheduled}/{res.pods} pods scheduled in "
              f"{res.seconds:.2f}s; GPU allocation at 100% demand {_percent(res.alloc[100])}, "
              f"at {at}% {_percent(res.alloc[at])}"
              + (f"; wrote {', '.join(paths)}" if paths else ""), file=sys.stderr)
        return 0
    if not args.output:
        raise TensorschedError("replay --sweep: --output CSV is required")
    try:
        policies, seeds = _sweep_lists(args, R)
        total = len(args.pods) * len(policies) * len(seeds)
        t0 = time.perf_counter()
        with tqdm(total=total, desc="replays", unit="run", file=sys.stderr, disable=None,
                  leave=False) as bar:
            def progress(wl, res):
                bar.set_postfix_str(f"{wl} {res.policy} seed {res.seed}: {res.alloc[100]}%")
                bar.update(1)
            from tensorsched.kernels.backend_names import BATCH
            from tensorsched.kernels.fused.backends import resolve_backend
            from tensorsched.topology.openb import batch
            out = batch.sweep(args.nodes, args.pods, policies, seeds, tune=args.tune,
                              workers=args.workers, backend=resolve_backend(args.backend, BATCH),
                              output=args.output,
                              progress=progress)
        paths = [args.output]
        if args.plot:
            paths.append(R.plot_allocation(out, args.plot, expected=args.expected))
    except (OSError, ValueError, KeyError) as exc:
        raise TensorschedError(f"replay: {_problem(exc)}") from exc
    workers = max(1, min(args.workers or os.cpu_count() or 1, total))
    print(f"sweep: {total} runs on {workers} worker(s) in {time.perf_counter() - t0:.1f}s; "
          f"wrote {', '.join(paths)}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(prog="tensorsched",
                 description="Kubernetes scheduling decisions as array kernels.")
    ap.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    e = subcommand(sub, "explain", "why a pod would land where it lands")
    e.add_argument("--cluster", required=True,
                   help="file or directory of manifests (kubectl get ... -o yaml|json)")
    e.add_argument("--pod", required=True, help="manifest holding the one pod to place")
    e.add_argument("--config", help="KubeSchedulerConfiguration (v1) file; default: "
                   "kube-scheduler's default profile")
    e.add_argument("--backend", choices=BACKENDS, default="numpy", help="kernel backend")
    e.add_argument("--seed", type=SEED, default=0, help="seed of the tie-break among equal nodes")
    e.add_argument("--format", choices=("json", "table"), default="json", help="output form")
    e.add_argument("--top", type=int_in(1), default=10, help="nodes shown in the table")
    add_feature_gates(e)
    e.set_defaults(func=cmd_explain)

    s = subcommand(sub, "schedule", "schedule pending pods through the scheduling queue")
    s.add_argument("--cluster", help="manifests; default: a built-in synthetic cluster")
    s.add_argument("--pods", action="append", metavar="PATH",
                   help="more pending pods (repeat for several files); default: the pending "
                   "pods of --cluster (or the built-in ones)")
    s.add_argument("--config", help="KubeSchedulerConfiguration (v1) file; default: "
                   "kube-scheduler's default profile")
    s.add_argument("--backend", choices=BACKENDS, default="numpy", help="kernel backend")
    s.add_argument("--seed", type=SEED, default=0, help="seed of tie-breaks and of the "
                   "built-in cluster")
    s.add_argument("--output", type=output_file,
                   help="write the bindings as YAML (JSON for *.json) instead of printing them")
    s.add_argument("--no-batch", action="store_true",
                   help="schedule every pod on its own (no compiled runs of alike pods)")
    add_feature_gates(s)
    s.set_defaults(func=cmd_schedule)

    b = subcommand(sub, "bench", "scheduler_perf-like workloads, one JSON record")
    b.add_argument("--workload", default="basic", choices=WORKLOADS, help="workload")
    b.add_argument("--nodes", type=int_in(1, 10_000_000), default=1000, help="nodes")
    b.add_argument("--pods", type=int_in(1, 100_000_000), default=1000, help="pods to schedule")
    b.add_argument("--backend", choices=BACKENDS, default="numba", help="kernel backend")
    b.add_argument("--percentage-of-nodes-to-score", type=int_in(0, 100), default=100,
                   help="percentageOfNodesToScore (0: kube-scheduler's adaptive default)")
    b.add_argument("--seed", type=SEED, default=0, help="seed of the workload and tie-breaks")
    b.add_argument("--no-batch", action="store_true",
                   help="schedule every pod on its own (no compiled runs of alike pods)")
    b.add_argument("--no-failure-memory", action="store_true",
                   help="run every failing pod's full cycle (no failures remembered)")
    b.add_argument("--output", type=output_file, help="write the JSON record here too")
    b.set_defaults(func=cmd_bench)

    r = subcommand(sub, "replay", "openb GPU trace replay (Weng et al., ATC'23)")
    r.add_argument("--nodes", required=True, help="openb node CSV (the paper uses the GPU nodes: "
                   "data/openb/csv/openb_node_list_gpu_node.csv)")
    r.add_argument("--pods", required=True, nargs="+", action="extend",
                   help="openb pod CSV (several with --sweep)")
    r.add_argument("--policy", choices=POLICIES, help="score policy (required without --sweep)")
    r.add_argument("--seed", type=SEED, help=f"seed of the workload draw (default: "
                   f"{REPLAY_SEED})")
    r.add_argument("--tune", type=positive_float, default=1.3,
                   help="arrived GPU demand to draw, as a multiple of the cluster's GPUs")
    r.add_argument("--backend", choices=("numba", "numpy", "cuda", "auto"), default="numba",
                   help="backend (cuda: --sweep only; with --sweep numba and cuda run every "
                   "run in one batched call, numpy one process per run; auto: cuda for a "
                   "sweep on a machine with a GPU, else numba)")
    r.add_argument("--output", type=output_file,
                   help="allocation CSV; *_frag.csv and *_frag_ratio.csv beside it "
                   "(with --sweep: the one sweep CSV)")
    r.add_argument("--sweep", action="store_true",
                   help="run policies x pod CSVs x seeds in parallel and write one CSV")
    r.add_argument("--policies", help="with --sweep: comma-separated policies (default: all six)")
    r.add_argument("--seeds", help="with --sweep: e.g. 42-51 or 42,43 (default: --seed)")
    r.add_argument("--workers", type=int_in(1, 1024), default=None,
                   help="with --sweep: threads of the batched call on numba, processes on "
                   "numpy (default: all cores)")
    r.add_argument("--plot", metavar="PNG", type=output_file,
                   help="draw the allocation curves (needs the 'plot' extra)")
    r.add_argument("--expected", metavar="CSV", type=existing_path,
                   help="with --plot: analysis_allo_discrete.csv to draw the published means dashed")
    r.set_defaults(func=cmd_replay)
    capacity_cli.add_parser(sub)
    simulate_cli.add_parser(sub)
    sweep_cli.add_parser(sub)
    return ap


def _plain_unknown_fields(showwarning):
    """``warnings.showwarning`` that prints an ``UnknownFieldWarning`` as
    its lines (the CLI's words, as ``load_cluster`` prints them), any other
    warning as ``showwarning`` does."""
    from tensorsched.framework.parsing.strict_fields import UnknownFieldWarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, UnknownFieldWarning):
            print(message, file=sys.stderr)
        else:
            showwarning(message, category, filename, lineno, file, line)
    return show


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings():     # restores showwarning after the command
            warnings.showwarning = _plain_unknown_fields(warnings.showwarning)
            return args.func(args)
    except TensorschedError as exc:
        print(f"tensorsched: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:      # a file that cannot be written after all (disk full, ...)
        # a failed write or flush names no file: it is the output's
        name = exc.filename or getattr(args, "output", None)
        where = f"{name}: " if name else ""
        print(f"tensorsched: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":   # pragma: no cover
    sys.exit(main())
