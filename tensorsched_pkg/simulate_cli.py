"""``tensorsched simulate``: a cluster and a trace (and/or a scenario) in
simulated time; writes ``timeseries.parquet``, ``events.parquet`` and
``summary.json`` into ``--output`` (``simulation.png`` with ``--plot``).

Part of the composition root: it may import the framework, the GPU plugin
set (openb node lists and traces, the GPU columns) and the CLI's helpers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq

from tensorsched.bench.harness import peak_rss_bytes
from tensorsched.framework.errors import TensorschedError
from tensorsched.framework.simulation.scenario import load_scenario
from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.openb import replay as R

from . import simulate_run as run
from .cli_args import (
    BACKENDS,
    SEED,
    existing_path,
    positive_float,
    progress,
    require_plotting,
    subcommand,
)

#: Events written to events.parquet (one row per outcome; Scheduled and
#: Arrived are counted in the time series instead).
EVENT_ROWS = ("Bound", "FailedScheduling", "Preempted", "BindFailed", "AssumeExpired",
              "Departed", "Deleted", "Evicted", "NodeAdded", "NodeUpdated", "NodeDeleted")
EVENT_SCHEMA = pa.schema([("time", pa.float64()), ("event", pa.string()), ("pod", pa.string()),
                          ("node", pa.string()), ("message", pa.string())])


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


class EventWriter:
    """Streams outcome events into a Parquet file, 64k rows at a time."""

    def __init__(self, path: str):
        self.path = path
        self.writer = pq.ParquetWriter(path, EVENT_SCHEMA)
        self.rows = 0
        self._cols: dict[str, list] = {n: [] for n in EVENT_SCHEMA.names}

    def __call__(self, e: dict) -> None:
        if e["event"] not in EVENT_ROWS:
            return
        c = self._cols
        c["time"].append(e["time"])
        c["event"].append(e["event"])
        c["pod"].append(e["pod"])
        c["node"].append(e["node"])
        c["message"].append(e["message"] or None)
        if len(c["time"]) >= 65536:
            self.flush()

    def flush(self) -> None:
        c = self._cols
        if c["time"]:
            self.writer.write_table(pa.table(c, schema=EVENT_SCHEMA))
            self.rows += len(c["time"])
            self._cols = {n: [] for n in EVENT_SCHEMA.names}

    def close(self) -> None:
        self.flush()
        self.writer.close()


def _plot(ts: pa.Table, path: str) -> str:
    plt = R._pyplot()
    t = ts.column("time").to_numpy() / 3600.0
    panels = [("allocation (%)", [c for c in ("cpu_alloc_pct", "memory_alloc_pct",
                                               "gpu_alloc_pct") if c in ts.column_names]),
              ("pending pods", ["pending"])]
    if "gpu_frag_pct" in ts.column_names:
        panels.append(("GPU fragmentation (% of capacity)", ["gpu_frag_pct"]))
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 2.6 * len(panels)), sharex=True,
                             squeeze=False)
    for ax, (title, cols) in zip(axes[:, 0], panels):
        for c in cols:
            v = ts.column(c).to_numpy(zero_copy_only=False).astype(float)
            ax.plot(t, v, lw=1.2, label=c)
        ax.set_ylabel(title)
        ax.grid(alpha=0.3)
        if len(cols) > 1:
            ax.legend(fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("simulated time (hours)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def cmd_simulate(args) -> int:
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
                               typical=typical)
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
                    "interval": args.interval, "inputs": {
                        "cluster": args.cluster, "nodes": args.nodes, "trace": args.trace,
                        "scenario": args.scenario, "config": args.config,
                        "policy": (args.policy or ("FGD" if args.nodes and not args.config
                                                   else None))}})
    for k, v in list(summary.items()):
        if isinstance(v, float) and not math.isfinite(v):
            summary[k] = None
    with open(paths[2], "w") as f:
        json.dump(summary, f, indent=2)
    if args.plot:
        paths.append(_plot(ts, os.path.join(args.output, "simulation.png")))
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
    m.add_argument("--until", type=positive_float,
                   help="stop at this simulated second (default: when nothing can change)")
    m.add_argument("--interval", type=positive_float, default=3600.0,
                   help="seconds per time-series row")
    m.add_argument("--output", type=_output_dir, required=True,
                   help="directory for timeseries.parquet, events.parquet, summary.json")
    m.add_argument("--plot", action="store_true",
                   help="draw allocation, pending and fragmentation over time "
                   "(simulation.png; needs the 'plot' extra)")
    m.add_argument("--no-batch", action="store_true",
                   help="schedule every pod on its own (no compiled runs of alike pods)")
    m.set_defaults(func=cmd_simulate)
    return m

