"""``tensorsched sweep``: every (trace, config, seed) run on local processes
or on Ray (``tensorsched.experiments.sweep``); writes the results Parquet (one row per
run), prints the side-by-side comparison of the configs and writes it as
``<output stem>.csv`` (``<output stem>.png`` with ``--plot``).

Every input is read and checked before the first run; a bad one is one
line naming the file, line and field (exit status 2).

The CLI of ``tensorsched.experiments.sweep``: it may import the sweep
runner and the CLI's helpers; the runner (and with it NumPy, Arrow, the scheduler) is imported
when the command runs (``cmd_sweep``), so the parser is cheap to build.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time

from tensorsched.framework.errors import TensorschedError
from tensorsched.kernels.gpu._core import POLICIES
from tensorsched.topology.openb.limits import DEFAULT_TUNE, MAX_TUNE, parse_seeds

from .cli_args import (
    BACKENDS,
    DEFAULT_INTERVAL,
    add_feature_gates,
    existing_path,
    int_in,
    nonnegative_float,
    output_file,
    positive_float,
    require_plotting,
    simulated_until,
    subcommand,
)

DEFAULT_SEED = {"simulate": 0, "experiment": 42}     # as ``simulate`` and ``replay``


def _seeds(text: str) -> list[int]:
    """An argparse type: ``42-51``, ``1,2,5`` or a mix (replay's grammar)."""
    try:
        return parse_seeds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seconds_or_inf(text: str) -> float:
    """An argparse type: seconds >= 0, ``inf`` for never (what
    ``ts.Simulation``'s ``pod_max_in_unschedulable_seconds`` takes)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if math.isnan(v) or v < 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0 (inf: never), got {text!r}")
    return v


def _parquet_output(text: str) -> str:
    """An argparse type: a ``.parquet`` file to write (the comparison goes
    beside it as ``.csv`` and ``.png``)."""
    if not text.lower().endswith(".parquet"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a .parquet file name")
    return output_file(text)


def _check_flags(args) -> None:
    """Flags that do not go together, refused before anything is read."""
    if args.experiment:
        given = [flag for flag, v in (("--cluster", args.cluster), ("--config", args.config),
                                      ("--scenario", args.scenario), ("--until", args.until),
                                      ("--interval", args.interval),
                                      ("--no-batch", args.no_batch),
                                      ("--tie-rank", args.tie_rank),
                                      ("--termination-grace-seconds",
                                       args.termination_grace_seconds is not None),
                                      ("--pod-max-in-unschedulable-seconds",
                                       args.pod_max_in_unschedulable_seconds is not None),
                                      ("--feature-gates", args.feature_gates)) if v]
        if given:
            raise TensorschedError(f"sweep --experiment: {given[0]} does not apply (the "
                                   "experiment takes --nodes, --trace, --policy, --seeds, --tune; "
                                   "its runs rank their ties already)")
        if not args.nodes:
            raise TensorschedError("sweep --experiment: give --nodes (an openb node CSV)")
    else:
        if args.tune is not None:
            raise TensorschedError("sweep: --tune goes with --experiment")
        if args.policy and not args.nodes:
            raise TensorschedError("sweep: --policy goes with --nodes (the openb profile) "
                                   "or --experiment")
        if args.tie_rank and not args.nodes:
            raise TensorschedError("sweep: --tie-rank goes with --nodes (the policies' openb "
                                   "profile); on --cluster enable OpenbTieRank in a --config")
        if args.tie_rank and args.config and not args.policy:
            raise TensorschedError("sweep: --tie-rank goes with --policy (a --config names "
                                   "its own score plugins: enable OpenbTieRank there)")


def _check_outputs(args) -> None:
    """The files written beside ``--output`` (``<stem>.csv``, with
    ``--plot`` ``<stem>.png``) can be written: refused before any run
    (a directory of that name would fail after the runs, the results
    Parquet written and the comparison lost)."""
    stem = os.path.splitext(args.output)[0]
    for ext in (".csv", ".png") if args.plot else (".csv",):
        if os.path.isdir(stem + ext):
            raise TensorschedError(f"sweep: --output {args.output!r}: the comparison goes to "
                                   f"{stem + ext!r}, which is a directory")


def _check_metrics(kind: str, metrics) -> None:
    import pyarrow as pa

    from tensorsched.experiments.sweep import SCHEMAS
    schema = SCHEMAS[kind]
    numeric = [f.name for f in schema if f.name not in ("seed", "wall_seconds")
               and (pa.types.is_integer(f.type) or pa.types.is_floating(f.type))]
    for m in metrics or ():
        if m not in numeric:
            raise TensorschedError(f"sweep: --metric {m!r}: not a result column of this "
                                   f"sweep; choose of {', '.join(numeric)}")


def _write_csv(cmp, path: str) -> str:
    """The comparison (a pyarrow.Table) as CSV at ``path``; returns ``path``."""
    d = cmp.to_pydict()
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cmp.column_names)
        for i in range(cmp.num_rows):
            w.writerow(["" if d[c][i] is None else d[c][i] for c in cmp.column_names])
    return path


def cmd_sweep(args) -> int:
    import pyarrow.parquet as pq

    from tensorsched.experiments import sweep as S
    if args.plot:
        require_plotting("sweep")
    _check_flags(args)
    _check_outputs(args)
    kind = "experiment" if args.experiment else "simulate"
    _check_metrics(kind, args.metric)
    seeds = args.seeds or [DEFAULT_SEED[kind]]
    jobs = S.make_jobs(args.trace, seeds, configs=args.config or (),
                       policies=args.policy or (), experiment=args.experiment,
                       nodes=args.nodes, cluster=args.cluster, scenario=args.scenario,
                       backend=args.backend,
                       interval=args.interval if args.interval else DEFAULT_INTERVAL,
                       until=args.until, tune=args.tune if args.tune else DEFAULT_TUNE,
                       batch=not args.no_batch, tie_rank=args.tie_rank,
                       termination_grace_seconds=args.termination_grace_seconds or 0.0,
                       pod_max_in_unschedulable_seconds=args.pod_max_in_unschedulable_seconds,
                       feature_gates=args.feature_gates)
    t0 = time.perf_counter()
    inputs = S.load_inputs(jobs)                # every file checked before the first run
    for line in inputs.get(("warnings", ""), ()):
        print(line, file=sys.stderr)
    table = S.run_sweep(jobs, workers=args.workers, ray=args.ray, progress=True,
                        inputs=inputs)
    pq.write_table(table, args.output)
    stem = os.path.splitext(args.output)[0]
    cmp = S.comparison(table, args.metric)
    print(S.format_comparison(cmp, len(seeds)))
    paths = [args.output, _write_csv(cmp, stem + ".csv")]
    if args.plot:
        paths.append(S.plot_comparison(cmp, stem + ".png"))
    where = (f"Ray ({args.ray})" if args.ray else
             f"{max(1, min(args.workers or os.cpu_count() or 1, len(jobs)))} process(es)")
    print(f"sweep: {len(jobs)} runs on {where} in {time.perf_counter() - t0:.1f}s; "
          f"wrote {', '.join(paths)}", file=sys.stderr)
    return 0


def add_parser(sub) -> argparse.ArgumentParser:
    """The ``sweep`` sub-command (the CLI's helpers: defaults in --help,
    arguments refused before any work starts)."""
    m = subcommand(sub, "sweep", "every (trace, config, seed) simulation on local processes "
                   "or on Ray: one Parquet of results and a comparison of the configs")
    m.add_argument("--trace", type=existing_path, nargs="+", action="extend", required=True,
                   help="traces (repeatable): openb pod CSVs or CSV/Parquet of the generic "
                   "trace schema (README: Simulation); with --experiment openb pod CSVs")
    where = m.add_mutually_exclusive_group(required=True)
    where.add_argument("--nodes", type=existing_path,
                       help="openb node CSV (e.g. data/openb/csv/openb_node_list_gpu_node.csv)")
    where.add_argument("--cluster", type=existing_path,
                       help="manifests (file or directory) of the nodes and bound pods")
    m.add_argument("--config", type=existing_path, nargs="+", action="extend",
                   help="KubeSchedulerConfiguration files (repeatable), each named by its "
                   "file stem; default: simulate's (kube-scheduler's default profile, or "
                   "with --nodes the openb profile of FGD)")
    m.add_argument("--policy", choices=POLICIES, nargs="+", action="extend",
                   help="with --nodes: the openb profile with GpuShareScore's policy "
                   "(repeatable, beside --config); with --experiment the policies "
                   "(default: all six)")
    m.add_argument("--seeds", type=_seeds,
                   help="e.g. 42-51, 1,2,5 or 42-44,50 (default: 0, as simulate; with "
                   "--experiment 42, as replay)")
    m.add_argument("--output", type=_parquet_output, required=True,
                   help="results Parquet, one row per run (README: Sweeps); the comparison "
                   "goes beside it as <stem>.csv (and <stem>.png with --plot)")
    m.add_argument("--workers", type=int_in(1, 1024),
                   help="processes (default: all cores; 1: in this process); with --ray the "
                   "most runs in flight")
    m.add_argument("--ray", nargs="?", const="auto", metavar="auto|local|ADDRESS",
                   help="run on Ray (the 'ray' extra): auto (this machine's cluster, the "
                   "default of a bare --ray), local (a fresh local instance) or an address")
    m.add_argument("--backend", choices=BACKENDS, default="numba", help="kernel backend")
    m.add_argument("--scenario", type=existing_path,
                   help="YAML of timed steps for every run (README: Simulation)")
    m.add_argument("--until", type=simulated_until,
                   help="stop each run at this simulated second, at most 1e15 (default: when "
                   "nothing can change)")
    m.add_argument("--interval", type=positive_float,
                   help=f"seconds per time-series row, the time-weighted means' resolution "
                   f"(default {DEFAULT_INTERVAL:g})")
    m.add_argument("--termination-grace-seconds", type=nonnegative_float, metavar="S",
                   help="every run's termination grace: DefaultPreemption's victims stay on "
                   "their node, terminating, until S seconds after their first eviction "
                   "(default 0: they leave at once; as ts.Simulation's "
                   "termination_grace_seconds)")
    m.add_argument("--pod-max-in-unschedulable-seconds", type=_seconds_or_inf, metavar="S",
                   help="every run's unschedulable pool: a pod waiting there S seconds goes "
                   "back to the queue whatever the cluster events (default 300, "
                   "kube-scheduler's; inf: never; as ts.Simulation's "
                   "pod_max_in_unschedulable_seconds)")
    m.add_argument("--tie-rank", action="store_true",
                   help="with --nodes: the --policy jobs run the openb paper experiment's "
                   "profile (GpuShareScore with OpenbTieRank breaking its ties: a seeded node "
                   "order, as --experiment and ts.simulate_batch; Random without it)")
    m.add_argument("--experiment", action="store_true",
                   help="the openb paper's experiment (simulate_replay: arrivals only, GPU "
                   "demand up to --tune x capacity) per (trace, policy, seed)")
    m.add_argument("--tune", type=positive_float,
                   help=f"with --experiment: arrived GPU demand as a multiple of the GPU "
                   f"capacity, at most {MAX_TUNE:g} (default {DEFAULT_TUNE:g})")
    m.add_argument("--metric", nargs="+", action="extend",
                   help="result columns compared (default: scheduled, the mean allocations "
                   "and fragmentation, latency_p99; with --experiment alloc_at_100, "
                   "alloc_at_130, frag_at_100)")
    m.add_argument("--plot", action="store_true",
                   help="draw the comparison as grouped bars with std error bars "
                   "(<stem>.png; needs the 'plot' extra)")
    m.add_argument("--no-batch", action="store_true",
                   help="schedule every pod on its own (no compiled runs of alike pods)")
    add_feature_gates(m)
    m.set_defaults(func=cmd_sweep)
    return m
