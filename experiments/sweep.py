"""Sweeps: every (trace, config, seed) run, on local processes or on Ray,
into one Arrow table (one row per run), with no CLI in it
(``tensorsched sweep`` is ``sweep_cli``).

A ``Job`` is a small picklable description of one run.  Two kinds:

- ``simulate``: a ``Simulation`` of the cluster (an openb node CSV or
  manifests) with the trace, under a configuration (a
  KubeSchedulerConfiguration file, or on an openb node list the openb
  profile of a GpuShareScore policy; with ``tie_rank`` the experiment's),
  exactly as ``tensorsched simulate`` runs it (``simulate_run``), with
  the sweep's registry (``sweep_registry``: OpenbTieRank too; a run it
  scores labels the node list's nodes ``batch.tie_of(n, seed)``).  Row:
  ``SIMULATE_SCHEMA``.
- ``experiment``: the openb paper's experiment through the framework
  (``tensorsched.topology.openb.trace.simulate_replay``: arrivals only, GPU
  demand up to ``tune`` x capacity).  Row: ``EXPERIMENT_SCHEMA``.

``load_inputs(jobs)`` reads and checks every input file once, before any
run (an error names the file, line and field); the parsed inputs go to the
workers once (a process pool's initializer, or one object in Ray's store),
not per job.  ``run_sweep(jobs)`` runs the jobs on a
``ProcessPoolExecutor`` (default: all cores; ``workers=1`` in this process)
or on Ray (``ray="auto"``, an address, or ``"local"`` for a fresh local
instance), and returns the rows in job order; on one machine the
``experiment`` jobs on numba or cuda run as one batched call
(``openb.batch.replay_batch``, the same rows; ``wall_seconds`` the call's
over its runs), and so do the ``simulate`` jobs the batched engines cover
(``batchable``: the openb profile on openb nodes; ``sweep_local``: default-
profile configurations on manifests, on numba; a job with a termination
grace, ``Job.termination_grace_seconds``, where ``grace_goes`` lets it,
one with another ``Job.pod_max_in_unschedulable_seconds`` where
``unsched_goes`` does):
the table is the same whatever ran it (but ``wall_seconds``).
``comparison(table)`` is the side-by-side table (rows: traces, columns:
configs, cells: mean and standard deviation over the seeds),
``plot_comparison`` its bar chart.  The row
schemas and the table are ``results``, the comparison ``comparison``; this
module, the jobs and their runs, is the API and names them all.

A library module (``tensorsched.experiments``): it may import the
framework, the GPU plugin set, the openb experiment and the composition
root's ``default_registry`` (``tensorsched.plugin_sets``); the CLI and
``bench`` build on it.
"""

from __future__ import annotations

import copy
import logging
import math
import multiprocessing as mp
import os
import socket
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
from tqdm import tqdm

from tensorsched.framework.arguments import Arguments
from tensorsched.framework.config.kube_config import load_config
from tensorsched.framework.scheduler.cluster import check_feature_gates
from tensorsched.framework.config.plugin_names import DEFAULT_PREEMPTION
from tensorsched.framework.errors import TensorschedError
from tensorsched.framework.simulation.series import KEEP_LATENCIES, check_rows
from tensorsched.framework.simulation.trace import MAX_SECONDS
from tensorsched.framework.parsing.manifests import parse_yaml_documents, read_text
from tensorsched.framework.scheduler.queue import DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS
from tensorsched.framework.simulation.scenario import load_scenario
from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.gpu import MILLI, read_openb_nodes
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb.limits import DEFAULT_TUNE
from tensorsched.topology.openb.batch import (
    replay_batch,
    tie_of,
    trace_batch,
    trace_workload,
)
from tensorsched.topology.openb.batch_sim import check_scenario
from tensorsched.topology.openb.trace import (
    NAME_TIE,
    experiment_registry,
    openb_node_objects,
    simulate_replay,
)

from . import DEFAULT_INTERVAL
from . import simulate_run as run
from .comparison import comparison, format_comparison, plot_comparison
from .results import (
    CONFIG_COLUMN,
    EXPERIMENT_SCHEMA,
    HEADLINE,
    KINDS,
    SCHEMAS,
    SIMULATE_SCHEMA,
    SweepError,
    results_table,
)
from .sweep_batch import MIB, departs_terminating, frag_under, simulate_row, time_mean
from .sweep_local import agenda_spans, batched_local, samples_follow
from .sweep_openb_events import (
    batched_openb_events,
    job_preempt,
    policy_weights,
    profile_typical,
    typical_key,
)

__all__ = ["BATCH_BACKENDS", "CONFIG_COLUMN", "EXPERIMENT_SCHEMA", "HEADLINE", "KINDS",
           "RAY_NEEDS", "SCHEMAS", "SIMULATE_SCHEMA", "Job", "SweepError", "comparison",
           "format_comparison", "load_inputs", "make_jobs", "plot_comparison",
           "results_table", "run_job", "run_sweep"]

BATCH_BACKENDS = ("numba", "cuda")      # experiment jobs batched on one machine
RAY_NEEDS = ("sweeps on Ray need the 'ray' package, which the core install leaves out; "
             "install the extra: pip install 'tensorsched[ray]'")

def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


@dataclass(frozen=True)
class Job:
    """One run.  ``kind``: ``simulate`` or ``experiment``; ``trace``: a
    trace file; ``config``: a KubeSchedulerConfiguration file (simulate);
    ``policy``: GpuShareScore's policy (the openb profile's on ``nodes``, or
    the experiment's); ``nodes``: an openb node CSV, or ``cluster``:
    manifests (simulate); ``scenario``: a scenario file (simulate);
    ``interval``/``until``: seconds (simulate); ``tune``: the experiment's
    arrived GPU demand as a multiple of capacity; ``tie_rank``: a policy's
    simulate job runs the experiment's profile (GpuShareScore with
    OpenbTieRank breaking its ties, the nodes labelled ``batch.tie_of(n,
    seed)``; Random without it), as ``ts.simulate_batch`` runs a policy;
    ``termination_grace_seconds``: the Scheduler's (``ts.Simulation``'s):
    DefaultPreemption's victims stay on their node, terminating, until
    their first eviction + that many seconds (0: they leave at once);
    ``pod_max_in_unschedulable_seconds``: the Scheduler's (a pod waiting
    in the unschedulable pool that long goes back to the queue whatever
    the events; seconds >= 0, inf never; the experiment has no pool);
    ``feature_gates``: (gate name, on) pairs over upstream's defaults
    (``--feature-gates``; a job with any runs per job, on the Simulation)."""

    kind: str
    trace: str
    seed: int
    config: str | None = None
    policy: str | None = None
    nodes: str | None = None
    cluster: str | None = None
    scenario: str | None = None
    backend: str = "numba"
    interval: float = DEFAULT_INTERVAL
    until: float | None = None
    tune: float = DEFAULT_TUNE
    batch: bool = True
    tie_rank: bool = False
    termination_grace_seconds: float = 0.0
    pod_max_in_unschedulable_seconds: float = DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS
    feature_gates: tuple[tuple[str, bool], ...] = ()

    @property
    def gates(self) -> dict[str, bool] | None:
        """``feature_gates`` as the mapping ``load_config`` takes (None: none)."""
        return dict(self.feature_gates) or None

    @property
    def trace_name(self) -> str:
        """The trace's file stem (``openb_pod_list_default``)."""
        return _stem(self.trace)

    @property
    def config_name(self) -> str:
        """The config file's stem, else the policy, else what ``simulate``
        runs by default (``FGD`` on openb nodes, ``default``)."""
        if self.config:
            return _stem(self.config)
        if self.policy:
            return self.policy
        return run.DEFAULT_POLICY if self.nodes else "default"

    @property
    def label(self) -> str:
        return f"trace {self.trace_name}, {CONFIG_COLUMN[self.kind]} {self.config_name}, " \
               f"seed {self.seed}"


def make_jobs(traces, seeds, *, configs=(), policies=(), experiment: bool = False,
              nodes: str | None = None, cluster: str | None = None,
              scenario: str | None = None, backend: str = "numba",
              interval: float = DEFAULT_INTERVAL, until: float | None = None,
              tune: float = DEFAULT_TUNE, batch: bool = True,
              tie_rank: bool = False, termination_grace_seconds: float = 0.0,
              pod_max_in_unschedulable_seconds: float | None = None,
              feature_gates=None) -> list[Job]:
    """Every (trace, config, seed), traces outermost, seeds innermost.
    Configs: the ``configs`` files then the ``policies`` (none given: the
    default one; with ``experiment`` every policy).  Names (file stems,
    policies) must be unique: they label the rows.  ``tie_rank``: the
    policy jobs (the default one too) on ``nodes`` run the experiment's
    profile (``Job.tie_rank``); a configuration file names its own
    plugins.  ``termination_grace_seconds`` (seconds, finite, >= 0): every
    job's Simulation's (``Job.termination_grace_seconds``; the experiment,
    which preempts nothing, takes none).
    ``pod_max_in_unschedulable_seconds`` (seconds >= 0, inf: never; None:
    the Scheduler's default, 300): every job's Simulation's
    (``Job.pod_max_in_unschedulable_seconds``; the experiment, whose pods
    are scheduled at their arrival or never, takes none).  ``feature_gates``
    (gate name -> on, None: upstream's defaults): every simulate job's
    (``Job.feature_gates``)."""
    args = Arguments("sweep.make_jobs")
    gates = tuple(sorted((check_feature_gates(args, feature_gates) or {}).items()))
    traces = [args.path(f"traces[{i}]", t) for i, t in
              enumerate(args.sequence("traces", traces, items="trace paths"))]
    seeds = [args.seed(s, f"seeds[{i}]") for i, s in
             enumerate(args.sequence("seeds", seeds, items="seeds"))]
    configs = [args.path(f"configs[{i}]", c) for i, c in
               enumerate(args.sequence("configs", configs, items="configuration paths"))]
    policies = args.names("policies", policies)
    args.flag("experiment", experiment)
    nodes, cluster, scenario = (None if v is None else args.path(name, v) for name, v in
                                (("nodes", nodes), ("cluster", cluster), ("scenario", scenario)))
    backend = args.backend(backend)
    interval = args.number("interval", interval, 0.0, above=True, unit="seconds")
    until = args.number("until", until, 0.0, MAX_SECONDS, above=True, optional=True,
                        unit="seconds")
    args.number("tune", tune, 0.0, above=True)
    batch = args.flag("batch", batch)
    tie_rank = args.flag("tie_rank", tie_rank)
    grace = args.number("termination_grace_seconds", termination_grace_seconds, 0.0,
                        unit="seconds")
    unsched = args.number("pod_max_in_unschedulable_seconds", pod_max_in_unschedulable_seconds,
                          0.0, optional=True, infinite=True, unit="seconds")
    if not traces:
        raise SweepError("no trace to sweep")
    if not seeds:
        raise SweepError("no seeds to sweep")
    try:
        seeds = [R.check_seed(s) for s in seeds]
    except ValueError as exc:
        raise SweepError(str(exc)) from None
    for p in policies:
        if p not in POLICIES:
            raise SweepError(f"unknown policy {p!r}; choose one of {', '.join(POLICIES)}")
    if bool(nodes) == bool(cluster):
        raise SweepError("give the cluster as an openb node CSV (nodes) or manifests (cluster)")
    kind = "experiment" if experiment else "simulate"
    if tie_rank and (experiment or not nodes):
        raise SweepError("tie_rank: the policies' simulate jobs on an openb node CSV (nodes) "
                         "run the experiment's profile; "
                         + ("the experiment's runs rank their ties already" if experiment
                            else "on manifests (cluster) enable OpenbTieRank in a "
                            "configuration instead"))
    if tie_rank and configs and not policies:
        raise SweepError("tie_rank goes with policies (a configuration file names its own "
                         "score plugins: enable OpenbTieRank there)")
    if experiment:
        if not nodes:
            raise SweepError("the experiment runs on an openb node CSV (nodes)")
        if configs or scenario or until is not None:
            raise SweepError("the experiment takes policies, not configs, scenarios or until")
        if grace > 0:
            raise SweepError("the experiment preempts nothing: it takes no "
                             "termination_grace_seconds")
        if unsched is not None:
            raise SweepError("the experiment schedules each pod at its arrival or never (no "
                             "unschedulable pool): it takes no pod_max_in_unschedulable_seconds")
        if gates:
            raise SweepError("the experiment runs no scheduler profile: it takes no "
                             "feature_gates")
        try:
            tune = R.check_tune(tune)
        except ValueError as exc:
            raise SweepError(str(exc)) from None
        choices = [(None, p) for p in (policies or POLICIES)]
    else:
        if policies and not nodes:
            raise SweepError("policies go with an openb node CSV (the openb profile)")
        choices = [(c, None) for c in configs] + [(None, p) for p in policies] or [(None, None)]
    jobs = [Job(kind, t, s, config=c, policy=p, nodes=nodes, cluster=cluster,
                scenario=scenario, backend=backend, interval=float(interval),
                until=None if until is None else float(until), tune=float(tune), batch=batch,
                tie_rank=tie_rank and c is None, termination_grace_seconds=grace,
                pod_max_in_unschedulable_seconds=float(
                    DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS if unsched is None else unsched),
                feature_gates=gates)
            for t in traces for c, p in choices for s in seeds]
    for what, given in (("trace", traces), ("config", configs), ("policy", policies),
                        ("seed", seeds)):
        twice = [x for i, x in enumerate(given) if x in given[:i]]
        if twice:
            raise SweepError(f"{what} {twice[0]} is given twice")
    _unique("trace", [(j.trace_name, j.trace) for j in jobs])
    _unique(CONFIG_COLUMN[kind], [(j.config_name, j.config or j.policy) for j in jobs])
    return jobs


def _jobs(args: Arguments, jobs) -> list[Job]:
    """``jobs`` as a list of ``Job`` (make_jobs')."""
    return args.sequence("jobs", jobs, Job, "a Job (make_jobs)", "Jobs (make_jobs)")


def _unique(what: str, pairs) -> None:
    """Names label the rows: two sources may not share one."""
    seen: dict = {}
    for name, source in pairs:
        first = seen.setdefault(name, source)
        if first != source:
            raise SweepError(f"two {what}s named {name!r} ({first}, {source}): rename one")


# ---------------------------------------------------------------------------
# inputs: read and checked once, before any run


def _read_config(path: str) -> dict:
    """A configuration file as a dict (after ``load_config`` checked it and
    named the file), so workers need not read it."""
    docs = [d for _, d in parse_yaml_documents(read_text(path)) if d is not None]
    return dict(docs[0]) if docs else {}


def load_inputs(jobs) -> dict:
    """Every input of ``jobs``, parsed and checked: {(what, path): value};
    ``("warnings", "")``: a line for each thing a configuration cannot see
    of a trace (``profile_warnings``).  Raises the reader's error (file,
    line, field) or ``SweepError``."""
    jobs = _jobs(Arguments("sweep.load_inputs"), jobs)
    kinds = {j.kind for j in jobs}
    if not jobs:
        raise SweepError("no jobs")
    if len(kinds) != 1 or not kinds <= set(KINDS):
        raise SweepError(f"jobs of one kind ({' or '.join(KINDS)}), got {sorted(kinds)}")
    args = Arguments("sweep.load_inputs")
    for i, j in enumerate(jobs):        # a Job made by hand: what make_jobs checks
        grace = args.number(f"jobs[{i}].termination_grace_seconds",
                            j.termination_grace_seconds, 0.0, unit="seconds")
        if grace > 0 and j.kind == "experiment":
            raise SweepError(f"jobs[{i}]: the experiment preempts nothing: it takes no "
                             "termination_grace_seconds")
        unsched = args.number(f"jobs[{i}].pod_max_in_unschedulable_seconds",
                              j.pod_max_in_unschedulable_seconds, 0.0, infinite=True,
                              unit="seconds")
        if unsched != DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS and j.kind == "experiment":
            raise SweepError(f"jobs[{i}]: the experiment has no unschedulable pool: it takes "
                             "no pod_max_in_unschedulable_seconds")
    inputs: dict = {}
    try:
        if kinds == {"experiment"}:
            _load_experiment(jobs, inputs)
        else:
            _load_simulate(jobs, inputs)
    except TensorschedError:
        raise
    except (OSError, ValueError) as exc:
        raise SweepError(str(exc)) from exc
    return inputs


def _load_experiment(jobs, inputs: dict) -> None:
    for j in jobs:
        R.policy_kernels(j.policy, "numba")       # a bad policy name, before any file
    for path in dict.fromkeys(j.nodes for j in jobs):
        inputs[("inventory", path)] = read_openb_nodes(path)
    for j in jobs:
        key = ("pods", j.trace)
        if key in inputs:
            continue
        inv = inputs[("inventory", j.nodes)]
        pods = inputs[key] = R.read_openb_pods(j.trace)
        R.check_inputs(inv, pods)
        # the draw refuses demand it could not reach; its checks come before
        # the seeded loop, so one seed tells for all
        R.draw_workload(pods, inv.total_gpus * MILLI, R.check_tune(j.tune),
                        np.random.default_rng(0))


def _load_simulate(jobs, inputs: dict) -> None:
    for path in dict.fromkeys(j.trace for j in jobs):
        trace = inputs[("trace", path)] = run.read_trace_file(path)
        inputs[("typical", path)] = run.typical_of(trace)
    registry = sweep_registry()
    for path, gates in dict.fromkeys((j.config, j.feature_gates) for j in jobs if j.config):
        # errors name the file
        cfg = load_config(path, registry.plugin_points(), dict(gates) or None)
        inputs[("config", path)] = _read_config(path)
        inputs[("ties", path)] = scores_with_tie(cfg)
    for path in dict.fromkeys(j.scenario for j in jobs if j.scenario):
        inputs[("scenario", path)] = load_scenario(path)
    for j in jobs:          # rows for every interval up to the end: refused before any run
        check_rows(j.interval, j.interval, run.horizon(
            inputs[("trace", j.trace)], inputs.get(("scenario", j.scenario)), j.until),
            f"sweep: interval (--interval) on {j.trace_name}")
    for path in dict.fromkeys(j.nodes for j in jobs if j.nodes):
        inputs[("nodes", path)] = run.cluster_objects(nodes=path)
        inputs[("inventory", path)] = read_openb_nodes(path)
    for path in dict.fromkeys(j.cluster for j in jobs if j.cluster):
        inputs[("cluster", path)] = run.cluster_objects(cluster=path)
    # each configuration once on its cluster (from the file, so its errors
    # name it): plugin arguments, the backend, the scenario's node names
    checked = set()
    warnings: dict[str, None] = {}
    for j in jobs:
        key = (j.nodes, j.cluster, j.config, j.policy, j.scenario, j.backend, j.tie_rank,
               j.feature_gates)
        if key in checked:
            continue
        checked.add(key)
        traces = dict.fromkeys((k.trace, k.trace_name) for k in jobs
                               if (k.nodes, k.cluster, k.config, k.policy, k.scenario,
                                   k.backend, k.tie_rank, k.feature_gates) == key)
        typical = inputs[("typical", j.trace)]
        # the config from its file, so its errors name it
        sim = _simulation(j, inputs, j.config, typical)
        scenario = inputs[("scenario", j.scenario)] if j.scenario else None
        if scenario is not None:
            sim.scenario(copy.deepcopy(scenario))
            # an added node's tie label that is no rank: its step named, before any run
            check_scenario([], scenario, tie_ranked(j, inputs))
        for path, name in traces:
            for line in run.profile_warning_lines(sim, inputs[("trace", path)], scenario):
                warnings[f"{line} [{CONFIG_COLUMN[j.kind]} {j.config_name}, trace {name}]"] = None
    inputs[("warnings", "")] = list(warnings)


def sweep_registry():
    """The plugins a sweep's configurations may name: the installed
    ``default_registry()`` and OpenbTieRank (``trace.experiment_registry``:
    a node's ``openb.tensorsched.io/tie`` label as its score)."""
    return experiment_registry()


def scores_with_tie(cfg) -> bool:
    """Some profile of the loaded configuration ``cfg`` scores with
    OpenbTieRank."""
    return any(ref.name == NAME_TIE for prof in cfg.profiles
               for ref in prof.plugins.get("score", ()))


def tie_ranked(job: Job, inputs: dict) -> bool:
    """The job's Simulation scores with OpenbTieRank: its configuration
    enables it, or a ``tie_rank`` policy job but Random's."""
    if job.config:
        return bool(inputs[("ties", job.config)])
    return bool(job.nodes) and policy_weights(job, inputs, run.DEFAULT_POLICY)[1] > 0


def _objects(job: Job, inputs: dict) -> list[dict]:
    """The job's cluster objects, a fresh copy per run (nothing one run does
    can reach the next); on an openb node CSV with OpenbTieRank scoring,
    each node labelled with its rank ``batch.tie_of(n, seed)``, as
    ``ts.simulate_batch``'s run is (manifests: the labels they carry)."""
    if job.nodes and tie_ranked(job, inputs):
        inv = inputs[("inventory", job.nodes)]
        return openb_node_objects(inv, tie_of(inv.n_nodes, job.seed))
    key = ("nodes", job.nodes) if job.nodes else ("cluster", job.cluster)
    return copy.deepcopy(inputs[key])


def _simulation(job: Job, inputs: dict, config, typical):
    """The job's Simulation (not yet given its scenario or trace): ``config``
    the configuration file's dict (a copy) or None (the policy's openb
    profile, the experiment's with ``tie_rank``), the sweep's registry."""
    gpu_weight, tie_weight = policy_weights(job, inputs, run.DEFAULT_POLICY) if job.nodes \
        else (1, 0)
    config = run.choose_config(config, job.policy, bool(job.nodes), typical,
                               gpu_weight if tie_weight else None)
    return run.build_simulation(_objects(job, inputs), config, job.backend, job.seed,
                                interval=job.interval, batch=job.batch, typical=typical,
                                registry=sweep_registry(),
                                termination_grace_seconds=job.termination_grace_seconds,
                                pod_max_in_unschedulable_seconds=(
                                    job.pod_max_in_unschedulable_seconds),
                                feature_gates=job.gates)


# ---------------------------------------------------------------------------
# one run


def _finite(v):
    """None for None and NaN (nulls in the table), else a float."""
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def _time_mean(ts: pa.Table, column: str):
    """Mean of a time-series column, each row weighing the seconds of its
    interval (rows hold the state at their interval's end); None when the
    column is missing or null."""
    if column not in ts.column_names or ts.num_rows == 0:
        return None
    t = ts.column("time").to_numpy()
    v = np.asarray(ts.column(column).to_numpy(zero_copy_only=False), dtype=np.float64)
    return time_mean(t, v)


def _run_simulate(job: Job, inputs: dict) -> dict:
    t0 = time.perf_counter()
    trace = inputs[("trace", job.trace)]
    typical = inputs[("typical", job.trace)]
    scenario = inputs.get(("scenario", job.scenario))
    config = copy.deepcopy(inputs[("config", job.config)]) if job.config else None
    sim = _simulation(job, inputs, config, typical)
    if scenario is not None:
        sim.scenario(copy.deepcopy(scenario))
    sim.submit(trace)
    s = run.run_to_end(sim, run.horizon(trace, scenario, job.until), job.until)
    ts = sim.timeseries()
    row = {"trace": job.trace_name, "config": job.config_name, "seed": job.seed,
           "sim_seconds": _finite(s["time"])}
    for k in ("arrived", "scheduled", "failed_attempts", "preemptions", "departed", "deleted",
              "evicted", "pending", "running"):
        row[k] = int(s[k])
    row["latency_p50"] = _finite(s["latency_p50"])
    row["latency_p99"] = _finite(s["latency_p99"])
    for col in ("cpu_alloc_pct", "memory_alloc_pct", "gpu_alloc_pct", "gpu_frag_pct"):
        row[f"mean_{col}"] = _time_mean(ts, col)
    row["wall_seconds"] = time.perf_counter() - t0
    return row


def _run_experiment(job: Job, inputs: dict) -> dict:
    t0 = time.perf_counter()
    res = simulate_replay(inputs[("inventory", job.nodes)], inputs[("pods", job.trace)],
                          job.policy, seed=job.seed, tune=job.tune, backend=job.backend)
    return _experiment_row(job, res, time.perf_counter() - t0)


def _batched_experiments(jobs, inputs: dict, workers: int | None, done) -> list:
    """The experiment jobs on numba or cuda run as batched calls (one per
    node CSV, tune and backend: ``openb.batch.replay_batch``, each run equal
    to its ``simulate_replay``); returns the indices of the other jobs."""
    groups: dict = {}
    rest = []
    for i, job in enumerate(jobs):
        if job.kind == "experiment" and job.batch and job.backend in BATCH_BACKENDS:
            groups.setdefault((job.nodes, job.tune, job.backend), []).append(i)
        else:
            rest.append(i)
    for (nodes, tune, backend), idx in groups.items():
        traces = list(dict.fromkeys(jobs[i].trace for i in idx))
        runs = [(traces.index(jobs[i].trace), jobs[i].policy, jobs[i].seed) for i in idx]
        t0 = time.perf_counter()
        try:
            got = replay_batch(inputs[("inventory", nodes)],
                               [inputs[("pods", t)] for t in traces], runs, tune=tune,
                               backend=backend, workers=workers)
        except (ValueError, OSError) as exc:
            raise SweepError(f"{jobs[idx[0]].label}: {_first_line(exc)}") from exc
        each = (time.perf_counter() - t0) / len(idx)
        for i, res in zip(idx, got):
            done(i, _experiment_row(jobs[i], res, each), None)
    return rest


#: The batched engines of ``simulate`` jobs that run a termination grace
#: above 0 as the Simulation does: ``"openb"`` the openb engine without a
#: scenario (``trace_batch``, here), ``"openb_events"`` it with a
#: scenario's node steps (``sweep_openb_events.batched_openb_events``),
#: ``"local"`` the node-local kernel on manifests (``sweep_local.
#: batched_local``).  ``grace_goes`` reads it: a job whose grace matters
#: goes to an engine not named here per job.  An engine that learns the
#: grace (reads ``Job.termination_grace_seconds``) joins by its name here.
GRACE_ENGINES = frozenset({"openb", "openb_events", "local"})


def preempts(job: Job, inputs: dict) -> bool:
    """The job's profile (its configuration file, else the one ``simulate``
    picks: the openb profile on openb nodes, kube-scheduler's default on
    manifests) has DefaultPreemption at postFilter: the only evictions a
    termination grace delays (once per configuration, policy and cluster
    kind)."""
    key = ("preempts", job.config, job.policy, bool(job.nodes), job.feature_gates)
    if key not in inputs:
        config = copy.deepcopy(inputs[("config", job.config)]) if job.config else \
            run.choose_config(None, job.policy, bool(job.nodes), None)
        cfg = load_config(config, sweep_registry().plugin_points(), job.gates)
        inputs[key] = any(ref.name == DEFAULT_PREEMPTION for prof in cfg.profiles
                          for ref in prof.plugins.get("postFilter", ()))
    return inputs[key]


def grace_goes(job: Job, inputs: dict, engine: str) -> bool:
    """The job may run on the batched ``engine`` (a ``GRACE_ENGINES`` name)
    as far as its termination grace goes: none (0), or a profile without
    DefaultPreemption (nothing is evicted: the grace changes nothing), or
    an engine that runs it.  The one place the sweep decides it."""
    return (job.termination_grace_seconds == 0 or engine in GRACE_ENGINES
            or not preempts(job, inputs))


#: The batched engines of ``simulate`` jobs that take the job's
#: ``pod_max_in_unschedulable_seconds`` (their ``max_unsched``): the openb
#: engine without a scenario and with one, and the node-local kernel's
#: sweep call on manifests (``sweep_local.batched_local``: ``run_setups``'
#: ``max_unsched``, a call per value).  A job with another value goes per
#: job on an engine not named here (``unsched_goes``).
UNSCHED_ENGINES = frozenset({"openb", "openb_events", "local"})


def unsched_goes(job: Job, engine: str) -> bool:
    """The job may run on the batched ``engine`` as far as its
    ``pod_max_in_unschedulable_seconds`` goes: the Scheduler's default, or
    an engine of ``UNSCHED_ENGINES``."""
    return (job.pod_max_in_unschedulable_seconds == DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS
            or engine in UNSCHED_ENGINES)


def batchable(job: Job, inputs: dict) -> bool:
    """A simulate job the batched engine runs (``sweep_batch``): the openb
    profile on an openb node list with GPUs (a policy's, with ``tie_rank``
    the experiment's, or a ``--config`` of it that
    ``sweep_openb_events.profile_typical`` takes: OpenbTieRank too; under
    FGD the trace's ``typicalPods`` or its own), a trace
    asking for GPUs whose columns the engine takes (``trace_workload``:
    an openb pod CSV, or a generic trace of those columns and
    ``duration``), no scenario, no ``until``, numba or cuda; a config with
    DefaultPreemption at postFilter too (the engine preempts in its queue,
    ``sweep_batch.simulate_row`` counts the victims), with a termination
    grace where ``grace_goes`` lets it."""
    return (job.kind == "simulate" and job.batch and job.backend in BATCH_BACKENDS
            and bool(job.nodes) and not job.scenario and job.until is None
            and inputs.get(("typical", job.trace)) is not None
            and len(inputs[("trace", job.trace)]) <= KEEP_LATENCIES
            and _workload(job.trace, inputs) is not None
            and _profile(job, inputs) is not None
            and grace_goes(job, inputs, "openb") and unsched_goes(job, "openb"))


def _profile(job: Job, inputs: dict):
    """``profile_typical`` of the job (once per configuration, policy and
    trace): (policy, (GpuShareScore's weight, OpenbTieRank's), backoff,
    the configuration's own typical pods or None), None when the kernel
    does not run it."""
    key = ("profile", (job.config, job.policy, job.tie_rank, job.trace))
    if key not in inputs:
        inputs[key] = profile_typical(job, inputs, run.DEFAULT_POLICY)
    return inputs[key]


def _preempt(job: Job, inputs: dict):
    """``job_preempt`` of a job ``_profile`` takes (once per configuration):
    DefaultPreemption's (minCandidateNodesPercentage,
    minCandidateNodesAbsolute), None without it."""
    key = ("preempt", job.config)
    if key not in inputs:
        inputs[key] = job_preempt(job, inputs)
    return inputs[key]


def _grace(job: Job, inputs: dict) -> float:
    """The termination grace the job's batched run takes: its own where it
    preempts, else 0 (nothing evicted: one call for all graces)."""
    return job.termination_grace_seconds if _preempt(job, inputs) is not None else 0.0


def _workload(path: str, inputs: dict):
    """The trace's ``TraceWorkload`` (once per trace), its typical pods the
    ones the Simulation's GpuShareScore and GpuTracker take; None when it
    has a column the engine does not take (it runs per run)."""
    key = ("workload", path)
    if key not in inputs:
        try:
            tw = trace_workload(inputs[("trace", path)])
            tw.typical = inputs[("typical", path)]
        except ValueError:
            tw = None
        inputs[key] = tw
    return inputs[key]


def _scored_workload(path: str, key, inputs: dict):
    """The trace's ``TraceWorkload`` (``_workload``) with the typical pods
    the job's GpuShareScore scores with: the trace's (``key`` None) or a
    configuration's (``typical_key`` of its ``typicalPods`` dicts), the
    kernel's one table for the FGD score and its fragmentation log (the
    row's comes from ``sweep_batch.frag_under`` then)."""
    tw = _workload(path, inputs)
    return tw if key is None else replace(tw, typical=[dict(p) for p in key])


def batched_simulations(jobs, inputs: dict, workers: int | None, done) -> list:
    """The simulate jobs ``batchable`` covers run as batched calls (one per
    node CSV, backend, interval, queue backoff and termination grace:
    ``openb.batch.trace_batch``, each run equal to its Simulation, the row
    made as ``sweep_batch.simulate_row`` makes it; the unschedulable pool's
    ``Job.pod_max_in_unschedulable_seconds`` too); ``done(i, row, None)``
    per row, ``inputs`` ``load_inputs(jobs)``'s); returns the indices of
    the other jobs (``run_sweep`` runs them per job or on the other
    engines; a bench counts the rows kept)."""
    groups: dict = {}
    rest = []
    unclear = []
    for i, job in enumerate(jobs):
        if batchable(job, inputs):
            groups.setdefault((job.nodes, job.backend, job.interval,
                               _profile(job, inputs)[2], _grace(job, inputs),
                               float(job.pod_max_in_unschedulable_seconds)), []).append(i)
        else:
            rest.append(i)
    for (nodes, backend, interval, backoff, grace, max_unsched), idx in groups.items():
        inv = read_openb_nodes(nodes)
        if inv.total_gpus <= 0:
            rest.extend(idx)
            continue
        profiles = [_profile(jobs[i], inputs) for i in idx]
        # a workload per (trace, typical pods GpuShareScore scores with): the
        # trace's own, or a configuration's (``_scored_workload``)
        kinds = [(jobs[i].trace, typical_key(prof[3])) for i, prof in zip(idx, profiles)]
        traces = list(dict.fromkeys(kinds))
        runs = [(0, traces.index(kind), prof[0], jobs[i].seed)
                for i, kind, prof in zip(idx, kinds, profiles)]
        t0 = time.perf_counter()
        try:
            # each job's (GpuShareScore, OpenbTieRank) weights: the kernel ranks
            # the nodes batch.tie_of(n, seed), as the job's Simulation labels them
            workloads = [_scored_workload(t, typical, inputs) for t, typical in traces]
            got = trace_batch([inv], workloads, runs, backend=backend,
                              workers=workers, backoff=backoff,
                              weights=[prof[1] for prof in profiles],
                              preempt=[_preempt(jobs[i], inputs) for i in idx],
                              termination_grace_seconds=grace, max_unsched=max_unsched)
        except (ValueError, OSError) as exc:
            raise SweepError(f"{jobs[idx[0]].label}: {_first_line(exc)}") from exc
        each = (time.perf_counter() - t0) / len(idx)
        cpu_cap = int(inv.cpu_cap.sum())
        mem_cap = int(inv.mem_cap.sum()) * MIB
        for i, res, prof in zip(idx, got, profiles):
            job = jobs[i]
            trace = inputs[("trace", job.trace)]
            horizon = run.horizon(trace, None, None)
            # (a TraceWorkload has the ``duration`` agenda_spans reads)
            spans = agenda_spans(_workload(job.trace, inputs), res, horizon)
            if not samples_follow(spans, interval, horizon):
                rest.append(i)              # the per-run path samples it
                continue
            tw = _workload(job.trace, inputs)
            if res.evictions is not None and departs_terminating(
                    res.evictions, res.log_t, res.log_pod, res.bind, tw.departure, tw.duration,
                    grace):
                unclear.append(i)           # the node-event engine tells how it left
                continue
            if prof[3] is not None:
                # scored against the config's typical pods, measured (GpuTracker)
                # under the trace's
                f0, log_frag = frag_under(inv, tw.pods, res, tw.typical)
                res = replace(res, frag0=f0, log_frag=log_frag)
            row = {"trace": job.trace_name, "config": job.config_name, "seed": job.seed}
            row.update(simulate_row(res, trace, cpu_cap, mem_cap, int(inv.total_gpus), interval,
                                    horizon, True, last_event=float(spans[:, 1].max())))
            row["wall_seconds"] = each
            done(i, row, None)
    if unclear:
        rest.extend(_on_no_steps(jobs, unclear, inputs, workers, done))
    return sorted(rest)


#: ``inputs``' key of the scenario of no steps (``_on_no_steps``)
NO_STEPS = "(no steps)"


def _on_no_steps(jobs, idx: list, inputs: dict, workers: int | None, done) -> list:
    """The jobs ``idx`` (indices into ``jobs``) whose openb run had a victim
    leave at its own departure time (``departs_terminating``) run on the
    node-event engine under a scenario of no steps: the same Simulation
    (a scenario without steps changes nothing), and that engine's ``why``
    tells a victim's departure while terminating from its grace's end.
    Returns the indices it did not run (they go per job)."""
    inputs.setdefault(("scenario", NO_STEPS), load_scenario({"steps": []}))
    sub = [replace(jobs[i], scenario=NO_STEPS) for i in idx]
    left = batched_openb_events(sub, inputs, workers, _shifted(idx, done),
                                lambda t: _workload(t, inputs), run.DEFAULT_POLICY)
    return [idx[k] for k in left]


def _experiment_row(job: Job, res, seconds: float) -> dict:
    def curve(a) -> list:
        return [_finite(v) for v in np.asarray(a, np.float64)]
    return {"trace": job.trace_name, "policy": job.policy, "seed": job.seed,
            "tune": job.tune, "total_gpus": int(res.total_gpus), "pods": int(res.pods),
            "scheduled": int(res.scheduled),
            "alloc_at_100": _finite(res.alloc[100]), "alloc_at_130": _finite(res.alloc[130]),
            "frag_at_100": _finite(res.frag_amount[100]),
            "frag_at_130": _finite(res.frag_amount[130]),
            "alloc_curve": curve(res.alloc), "frag_curve": curve(res.frag_amount),
            "frag_ratio_curve": curve(res.frag_ratio),
            "wall_seconds": seconds}


def run_job(job: Job, inputs: dict | None = None) -> dict:
    """The result row of one run (``inputs``: ``load_inputs([job])`` or a
    superset; read now when None)."""
    inputs = load_inputs([job]) if inputs is None else inputs
    return _run_experiment(job, inputs) if job.kind == "experiment" \
        else _run_simulate(job, inputs)


def _guarded(job: Job, inputs: dict) -> tuple:
    """(row, None), or (None, one-line message) when the run refused its
    input: a plain string crosses process and Ray boundaries intact."""
    try:
        return run_job(job, inputs), None
    except (TensorschedError, ValueError) as exc:
        return None, f"{job.label}: {exc}"


# ---------------------------------------------------------------------------
# executors

_WORKER_INPUTS: dict = {}        # this process's inputs: the pool initializer's, or Ray's


def _pool_init(inputs: dict) -> None:
    global _WORKER_INPUTS
    _WORKER_INPUTS = inputs


def _pool_job(i: int, job: Job) -> tuple:
    return (i, *_guarded(job, _WORKER_INPUTS))


_RAY_KEY: list = [None]


def _ray_job(i: int, job: Job, box: list) -> tuple:
    """A Ray task: ``box`` holds the ObjectRef of the inputs (boxed, so Ray
    does not resolve it per task); each worker process fetches it once."""
    global _WORKER_INPUTS
    ref = box[0]
    if _RAY_KEY[0] != ref.hex():
        import ray
        _WORKER_INPUTS = ray.get(ref)
        _RAY_KEY[0] = ref.hex()
    return (i, *_guarded(job, _WORKER_INPUTS))


def _import_ray():
    try:
        import ray
    except ImportError:
        raise SweepError(RAY_NEEDS) from None
    return ray


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _run_local(jobs, inputs, workers: int, done) -> None:
    if workers == 1:
        for i, job in enumerate(jobs):
            done(i, *_guarded(job, inputs))
        return
    # fork: the workers start with the inputs in memory (spawn pickles them once each)
    methods = mp.get_all_start_methods()
    ctx = mp.get_context("fork" if "fork" in methods else None)
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_pool_init,
                             initargs=(inputs,)) as ex:
        pending = {ex.submit(_pool_job, i, job) for i, job in enumerate(jobs)}
        try:
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in finished:
                    done(*f.result())
        except BaseException:
            for f in pending:
                f.cancel()
            raise


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """A ``host:port`` or ``ray://host:port`` address answers a TCP connect
    within ``timeout`` seconds (``ray.init`` itself retries a dead address
    for minutes)."""
    hostport = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        return                  # not host:port: Ray's own checks and errors
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise SweepError(f"Ray at {address!r}: cannot connect to {hostport} "
                         f"({exc.strerror or exc})") from None


def _run_ray(jobs, inputs, address: str, workers: int | None, done) -> None:
    ray = _import_ray()
    started = False
    if not ray.is_initialized():
        if address not in ("local", "auto"):
            _check_reachable(address)
        try:
            # quiet: the runs' outcomes come back as values, not worker logs
            quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
            if address == "local":
                ray.init(num_cpus=workers, include_dashboard=False, **quiet)
            else:
                ray.init(address=address, **quiet)
        except (OSError, RuntimeError, ValueError) as exc:    # ConnectionError, TimeoutError...
            raise SweepError(f"Ray at {address!r}: {_first_line(exc)}") from None
        started = True
    try:
        box = [ray.put(inputs)]
        task = ray.remote(num_cpus=1)(_ray_job)
        todo = list(enumerate(jobs))[::-1]
        limit = workers or len(jobs)        # Ray's CPU count bounds it too
        pending: list = []
        try:
            while todo or pending:
                while todo and len(pending) < limit:
                    i, job = todo.pop()
                    pending.append(task.remote(i, job, box))
                ready, pending = ray.wait(pending, num_returns=1)
                for ref in ready:
                    done(*ray.get(ref))
        except BaseException:
            for ref in pending:
                ray.cancel(ref)
            raise
    finally:
        if started:
            ray.shutdown()


def _shifted(index: list, done):
    """``done`` for a sub-list of jobs: its k-th is the job ``index[k]``."""
    def sub_done(k: int, row, error) -> None:
        done(index[k], row, error)
    return sub_done


def _engine_rest(jobs, rest: list, inputs: dict, engine: str, batched, done) -> list:
    """Hand the jobs ``rest`` (indices into ``jobs``) that ``grace_goes``
    and ``unsched_goes`` let go to the batched ``engine`` to
    ``batched(sub_jobs, sub_done)``
    (its ``sweep_local``-like call: returns the indices into ``sub_jobs``
    it did not run); returns the indices of ``jobs`` still to run, each
    once, in order: those it held back and those it gave back."""
    sent = [i for i in rest if grace_goes(jobs[i], inputs, engine)
            and unsched_goes(jobs[i], engine)]
    left = [sent[k] for k in batched([jobs[i] for i in sent], _shifted(sent, done))]
    return sorted(set(rest) - set(sent) | set(left))


def run_sweep(jobs, workers: int | None = None, ray: str | None = None, progress=None,
              inputs: dict | None = None) -> pa.Table:
    """Run every job; one row per job, in job order (``SCHEMAS[kind]``).

    ``workers``: processes (default ``os.cpu_count()``; 1: in this process);
    with ``ray`` the most tasks in flight (default: all).  ``ray``: None
    (local processes), ``"auto"`` (the Ray cluster this machine belongs to),
    an address (``"ray://host:10001"``, ``"host:6379"``) or ``"local"`` (a
    fresh local instance of ``workers`` CPUs); an initialized Ray is used as
    it is.  ``progress``: True for a bar on stderr (quiet when not a
    terminal), or ``fn(job, row)`` after each run.  ``inputs``:
    ``load_inputs(jobs)`` when already read.  A run that fails raises
    ``SweepError`` naming it, and the runs not started are cancelled."""
    args = Arguments("sweep.run_sweep")
    jobs = _jobs(args, jobs)
    args.integer("workers", workers, 1, optional=True)
    args.text("ray", ray, optional=True)
    if progress is not True and progress is not None and progress is not False:
        args.callback("progress", progress)
    args.mapping("inputs", inputs, optional=True, what="load_inputs(jobs)'s dict")
    inputs = load_inputs(jobs) if inputs is None else inputs
    rows: list = [None] * len(jobs)
    bar = None
    if progress is True:
        bar = tqdm(total=len(jobs), desc="sweep", unit="run", file=sys.stderr, disable=None,
                   leave=False)
        progress = None

    def done(i: int, row, error) -> None:
        if error is not None:
            raise SweepError(error)
        rows[i] = row
        if bar is not None:
            bar.set_postfix_str(jobs[i].label)
            bar.update(1)
        if progress:
            progress(jobs[i], row)

    try:
        if ray is not None:
            _run_ray(jobs, inputs, ray, workers, done)
        else:
            # on one machine the experiment's runs go as batched calls; jobs
            # under feature gates run per job (the batched engines read none)
            rest = _batched_experiments(jobs, inputs, workers, done)
            gated = [i for i in rest if jobs[i].feature_gates]
            rest = [i for i in rest if not jobs[i].feature_gates]
            rest = [rest[k] for k in batched_simulations([jobs[i] for i in rest], inputs,
                                                          workers, _shifted(rest, done))]
            # the openb profile with a scenario's node steps: the openb engine's node events
            rest = _engine_rest(jobs, rest, inputs, "openb_events", lambda sub, sub_done: (
                batched_openb_events(sub, inputs, workers, sub_done,
                                     lambda t: _workload(t, inputs), run.DEFAULT_POLICY)),
                done)
            # default-profile configurations on manifests: the node-local kernel
            rest = _engine_rest(jobs, rest, inputs, "local", lambda sub, sub_done: (
                batched_local(sub, inputs, workers, sub_done)), done)
            rest = sorted(rest + gated)
            if rest:
                sub = [jobs[i] for i in rest]

                def sub_done(k: int, row, error) -> None:
                    done(rest[k], row, error)

                n = max(1, min(workers or os.cpu_count() or 1, len(sub)))
                _run_local(sub, inputs, n, sub_done)
    finally:
        if bar is not None:
            bar.close()
    return results_table(jobs, rows)
