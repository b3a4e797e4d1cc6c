"""One simulation from its input files, with no CLI in it: what
``tensorsched simulate`` runs, and each ``simulate`` job of
``tensorsched sweep`` (``experiments.sweep``), so both give the same
numbers for the same inputs.

- ``read_trace_file(path)``: an openb pod CSV as it is (``cpu_milli`` and
  ``creation_time`` in its header), else a trace of the generic schema;
- ``typical_of(trace)``: GpuShareScore's ``typicalPods`` of the trace's
  shapes, None when no row asks for a GPU (a bad GPU annotation names its
  row);
- ``cluster_objects(nodes=..., cluster=...)``: Node dicts of an openb node
  CSV, or the objects of manifests;
- ``choose_config(config, policy, openb, typical)``: the configuration a run
  gets (the openb profile of ``policy`` on an openb node list);
- ``build_simulation(...)``: a ``Simulation`` with the GPU columns when the
  cluster has GPUs;
- ``profile_warning_lines(sim, trace, scenario)``: what the profiles cannot
  see of the pods' asks (one warning line each);
- ``horizon(trace, scenario, until)`` and ``run_to_end(sim, ...)``: the run
  in 100 steps to the horizon (a progress callback between steps), then on
  until nothing can change (or stop at ``until``).

A library module (``tensorsched.experiments``): it may import the
framework and the GPU plugin set; ``tensorsched simulate`` is its CLI.
"""

from __future__ import annotations

import csv

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import load_objects, parse_pod
from tensorsched.framework.scheduler.profile_warnings import asks_of_pods, profile_warnings
from tensorsched.framework.scheduler.queue import DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS
from tensorsched.framework.simulation.scenario import Scenario
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.framework.simulation.trace import Trace, TraceError, asks_of_trace, read_trace
from tensorsched.topology.gpu_table import GpuTable
from tensorsched.topology.openb.trace import (
    openb_config,
    openb_node_objects,
    read_openb_trace,
)
from tensorsched.topology.sim_metrics import gpu_metrics, trace_shapes, typical_shapes

OPENB_COLUMNS = ("cpu_milli", "creation_time")
DEFAULT_POLICY = "FGD"            # the openb profile's policy when none is given
STEPS = 100                       # progress steps to the horizon


def is_openb(path: str) -> bool:
    """An openb pod CSV (``cpu_milli`` and ``creation_time`` in its header)."""
    if not str(path).lower().endswith(".csv"):
        return False
    try:
        with open(path, newline="", encoding="utf-8") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return False
    return all(c in [h.strip() for h in header] for c in OPENB_COLUMNS)


def read_trace_file(path: str) -> Trace:
    """The trace of an openb pod CSV or of a generic CSV/Parquet trace."""
    return read_openb_trace(path) if is_openb(path) else read_trace(path)


def _shapes(trace: Trace) -> list[tuple]:
    """GPU shapes of the trace's rows; a bad GPU annotation names its row."""
    try:
        return trace_shapes(trace)
    except ManifestError as exc:
        for r in range(len(trace)):
            try:
                trace_shapes(Trace(trace.table.slice(r, 1), trace.source,
                                   trace.origin[r:r + 1], trace.lines))
            except ManifestError:
                raise TraceError(trace.where(r), "annotations",
                                 f"{exc.field}: {exc.problem}") from None
        raise


def typical_of(trace: Trace | None) -> list[dict] | None:
    """``typicalPods`` of the trace (``typical_shapes``), None without a
    trace or when no row asks for a GPU."""
    shapes = _shapes(trace) if trace is not None else []
    return typical_shapes(shapes) if any(s[2] for s in shapes) else None


def cluster_objects(nodes: str | None = None, cluster: str | None = None) -> list[dict]:
    """Node dicts of the openb node CSV ``nodes``, else the objects of the
    manifests ``cluster`` (a file or directory).  An unreadable openb CSV
    raises OSError/ValueError (``CsvError`` names file, line and column)."""
    if nodes:
        return openb_node_objects(nodes)
    return load_objects(cluster)


def choose_config(config, policy: str | None, openb: bool, typical: list[dict] | None,
                  tie_weight: int | None = None):
    """``config`` when given; on an openb node list the openb profile of
    ``policy`` (FGD by default) with the trace's typical pods (``tie_weight``:
    GpuShareScore's weight with OpenbTieRank breaking its ties,
    ``openb_config``'s); else None (kube-scheduler's default profile)."""
    if config is not None:
        return config
    if openb:
        return openb_config(policy or DEFAULT_POLICY, typical, tie_weight)
    return None


def build_simulation(objects, config, backend: str, seed: int, *, interval: float,
                     batch: bool = True, typical: list[dict] | None = None,
                     registry=None, termination_grace_seconds: float = 0.0,
                     pod_max_in_unschedulable_seconds: float = DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS,
                     feature_gates=None) -> Simulation:
    """A Simulation of ``objects`` under ``config``; when the cluster has
    GPUs, with the GPU columns (``gpu_alloc_pct``, and with ``typical`` the
    fragmentation ones) in its time series.  ``registry``: the plugins the
    config may name (default: the installed ``default_registry()``);
    ``termination_grace_seconds``: the Scheduler's (DefaultPreemption's
    victims stay on their node, terminating, that long after eviction);
    ``pod_max_in_unschedulable_seconds``: the Scheduler's (seconds a pod
    waits in the unschedulable pool before it is tried again whatever the
    events); ``feature_gates``: gate name -> on (``--feature-gates``)."""
    sim = Simulation(objects, config, backend, seed, interval=interval, batch=batch,
                     registry=registry, feature_gates=feature_gates,
                     termination_grace_seconds=termination_grace_seconds,
                     pod_max_in_unschedulable_seconds=pod_max_in_unschedulable_seconds)
    if int(GpuTable.of(sim.cluster.state).count.sum()):
        # the metrics are known only once the cluster is built (does it have GPUs?)
        sim.series.add_metrics(gpu_metrics(typical))
    return sim


def profile_warning_lines(sim: Simulation, trace: Trace | None,
                          scenario: Scenario | None) -> list[str]:
    """``profile_warnings`` of what the run's pods ask (the cluster's
    pending pods, the trace's rows, the scenario's created pods) under its
    profiles: GPU annotations without the GPU plugins, extended resources
    no node offers."""
    registered = sim.cluster.registry.asks()
    asks = asks_of_pods(sim.cluster.pending, registered)
    if trace is not None:
        asks.add(asks_of_trace(trace, registered))
    for st in scenario.steps if scenario is not None else ():
        if st.action == "create" and st.kind == "Pod" and st.objects:
            # replicas of one manifest ask alike: one record, counted len(objects) times
            one = asks_of_pods([parse_pod(st.objects[0])], registered)
            for table in (one.by_ask, one.by_resource):
                for counts in table.values():
                    for key in counts:
                        counts[key] *= len(st.objects)
            asks.add(one)
    return profile_warnings(sim.cluster, asks)


def horizon(trace: Trace | None, scenario: Scenario | None, until: float | None) -> float:
    """Simulated seconds the progress steps cover: ``until``, else the last
    arrival, departure or scenario step."""
    if until is not None:
        return until
    ends = []
    if trace is not None:
        ends.append(float(trace.arrival[-1]))
        dep = trace.departure[~(trace.departure != trace.departure)]
        if dep.size:
            ends.append(float(dep.max()))
    if scenario is not None and scenario.steps:
        ends.append(scenario.steps[-1].at)
    return max(ends) if ends else 0.0


def run_to_end(sim: Simulation, end: float, until: float | None, on_step=None) -> dict:
    """Run ``sim`` to ``end`` in ``STEPS`` steps (``on_step(k, sim)`` after
    step k = 1..STEPS), then, without ``until``, until nothing can change.
    Returns ``sim.summary()``."""
    for k in range(1, STEPS + 1):
        t = end * k / STEPS
        if t > sim.now:
            sim.run(until=t)
        if on_step is not None:
            on_step(k, sim)
    return sim.run() if until is None else sim.summary()
