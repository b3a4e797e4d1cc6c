"""``tensorsched simulate``: a cluster and a trace (and/or a scenario) in
simulated time; writes ``timeseries.parquet``, ``events.parquet`` and
``summary.json`` into ``--output`` (``simulation.png`` with ``--plot``).

Part of the composition root: it may import the framework, the GPU plugin
set (openb node lists and traces, the GPU columns) and the CLI's helpers;
what the run needs is imported when it runs (``cmd_simulate``), so the
parser is cheap to build.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

from tensorsched.framework.errors import TensorschedError
from tensorsched.kernels.gpu._core import POLICIES

from .cli_args import (
    BACKENDS,
    DEFAULT_INTERVAL,
    SEED,
    add_feature_gates,
    existing_path,
    positive_float,
    progress,
    require_plotting,
    simulated_until,
    subcommand,
)

def _output_dir(text: str) -> str:
    """A directory to write into: it exists (or its parent does) and is writable."""
    path = os.path.abspath(text)
    if os.path.exists(path) and not os.path.isdir(path):
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory")
    probe = path if os.path.isdir(path) else os.path.dirname(path)
    if not os.path.isdir(probe):
        raise argparse.ArgumentTypeError(f"directory {probe!r} does not exist")
    if not os.access(probe, os.W_OK):
        raise argparse.ArgumentTypeError(f"directory {probe!r} is not writable")
    return text


def cmd_simulate(args) -> int:
    import pyarrow.parquet as pq

    from tensorsched.bench.harness import peak_rss_bytes
    from tensorsched.framework.simulation.scenario import load_scenario
    from tensorsched.framework.simulation.series import check_rows

    from tensorsched.experiments import simulate_run as run
    from .simulate_output import EventWriter, plot_simulation
    if args.plot:
        require_plotting("simulate")
    if not args.trace and not args.scenario:
        raise TensorschedError("simulate: give --trace, --scenario or both")
    if args.policy and not args.nodes:
        raise TensorschedError("simulate: --policy goes with --nodes (the openb profile)")
    if args.policy and args.config:
        raise TensorschedError("simulate: --policy and --config exclude each other")
    t0 = time.perf_counter()
    trace = run.read_trace_file(args.trace) if args.trace else None
    scenario = load_scenario(args.scenario) if args.scenario else None
    # rows for every --interval up to the end: refused before any work
    check_rows(args.interval, args.interval, run.horizon(trace, scenario, args.until),
               "simulate: --interval")
    typical = run.typical_of(trace)
    try:
        objects = run.cluster_objects(args.nodes, args.cluster)
    except (OSError, ValueError) as exc:
        if not args.nodes:
            raise
        raise TensorschedError(f"simulate: {exc}") from exc
    config = run.choose_config(args.config, args.policy, bool(args.nodes), typical)
    sim = run.build_simulation(objects, config, args.backend, args.seed,
                               interval=args.interval, batch=not args.no_batch,
                               typical=typical, feature_gates=args.feature_gates)
    if scenario is not None:
        sim.scenario(scenario)
    for line in run.profile_warning_lines(sim, trace, scenario):
        print(line, file=sys.stderr)
    if trace is not None:
        sim.submit(trace)
    os.makedirs(args.output, exist_ok=True)
    events = EventWriter(os.path.join(args.output, "events.parquet"))
    unsubscribe = sim.on("*", events)
    horizon = run.horizon(trace, scenario, args.until)
    try:
        with progress(run.STEPS, "simulate", unit="%") as bar:
            def step(k, sim):
                bar.set_postfix_str(f"t={sim.now:.0f}s pending={sim.summary()['pending']}")
                bar.update(k - bar.n)
            summary = run.run_to_end(sim, horizon, args.until, step)
    finally:
        unsubscribe()
        events.close()
    ts = sim.timeseries()
    paths = [os.path.join(args.output, "timeseries.parquet"),
             os.path.join(args.output, "events.parquet"), os.path.join(args.output, "summary.json")]
    pq.write_table(ts, paths[0])
    summary.update({"events_rows": events.rows, "wall_seconds": round(time.perf_counter() - t0, 3),
                    "peak_rss_bytes": peak_rss_bytes(), "backend": args.backend, "seed": args.seed,
                    "placed_by": dict(sim.scheduler.placed_by),
                    "runs_by": dict(sim.scheduler.runs_by),
                    "interval": args.interval, "inputs": {
                        "cluster": args.cluster, "nodes": args.nodes, "trace": args.trace,
                        "scenario": args.scenario, "config": args.config,
                        "feature_gates": args.feature_gates,
                        "policy": (args.policy or ("FGD" if args.nodes and not args.config
                                                   else None))}})
    for k, v in list(summary.items()):
        if isinstance(v, float) and not math.isfinite(v):
            summary[k] = None
    with open(paths[2], "w") as f:
        json.dump(summary, f, indent=2)
    if args.plot:
        paths.append(plot_simulation(ts, os.path.join(args.output, "simulation.png")))
    print(f"simulated {summary['time']:.0f}s: {summary['arrived']} pods arrived, "
          f"{summary['scheduled']} scheduled, {summary['departed']} departed, "
          f"{summary['pending']} pending, {summary['failed_attempts']} failed attempts, "
          f"{summary['preemptions']} preemptions in {summary['wall_seconds']:.2f}s; "
          f"wrote {', '.join(paths)}", file=sys.stderr)
    return 0


def add_parser(sub) -> argparse.ArgumentParser:
    """The ``simulate`` sub-command (the CLI's helpers: defaults in --help,
    arguments refused before any work starts)."""
    m = subcommand(sub, "simulate", "a cluster and a workload trace in simulated time "
                "(arrivals, departures, node events)")
    where = m.add_mutually_exclusive_group(required=True)
    where.add_argument("--cluster", type=existing_path,
                       help="manifests (file or directory) of the nodes and bound pods")
    where.add_argument("--nodes", type=existing_path,
                       help="openb node CSV (e.g. data/openb/csv/openb_node_list_gpu_node.csv)")
    m.add_argument("--trace", type=existing_path,
                   help="pods over time: an openb pod CSV, or a CSV/Parquet of the generic "
                   "trace schema (README: Simulation)")
    m.add_argument("--scenario", type=existing_path, help="YAML of timed steps (README: Simulation)")
    m.add_argument("--config", type=existing_path,
                   help="KubeSchedulerConfiguration (v1); default: kube-scheduler's default "
                   "profile, or with --nodes the openb profile of --policy")
    m.add_argument("--policy", choices=POLICIES,
                   help="with --nodes: GpuShareScore's policy of the openb profile (default FGD)")
    m.add_argument("--backend", choices=BACKENDS, default="numba",
                   help="kernel backend")
    m.add_argument("--seed", type=SEED, default=0,
                   help="seed of tie-breaks")
    m.add_argument("--until", type=simulated_until,
                   help="stop at this simulated second, at most 1e15 (default: when nothing can "
                   "change)")
    m.add_argument("--interval", type=positive_float, default=DEFAULT_INTERVAL,
                   help="seconds per time-series row")
    m.add_argument("--output", type=_output_dir, required=True,
                   help="directory for timeseries.parquet, events.parquet, summary.json")
    m.add_argument("--plot", action="store_true",
                   help="draw allocation, pending and fragmentation over time "
                   "(simulation.png; needs the 'plot' extra)")
    m.add_argument("--no-batch", action="store_true",
                   help="schedule every pod on its own (no compiled runs of alike pods)")
    add_feature_gates(m)
    m.set_defaults(func=cmd_simulate)
    return m

