"""Fuzzing the arguments of every public function of ``import tensorsched
as ts`` (as ``test_cli_fuzz.py`` fuzzes the command line): a valid call on
the README's example cluster with one or two of its arguments replaced by
wrong types, wrong shapes, out-of-range and non-finite numbers, strings
where lists go and lists where strings go.  Each call either returns or
raises a ``TensorschedError``: an ``ArgumentError`` names one of the
replaced arguments; never a bare Python error; a failed call leaves the
cluster (or the simulation) as it was."""

from __future__ import annotations

import copy
import hashlib
import os
import tempfile
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorsched as ts
from tensorsched import sweep
from tensorsched.framework.errors import ArgumentError, TensorschedError
from tensorsched.framework.parsing.manifests import parse_pod

from support.openb import openb_slice  # noqa: I001  (tests/ helper)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "data" / "examples"


class Objects(list):
    """The example's objects, shown short in a failing example."""

    def __repr__(self):
        return "<cluster.yaml objects>"


OBJECTS = Objects(ts.load_manifests(EXAMPLES / "cluster.yaml"))
POD = yaml.safe_load((EXAMPLES / "pod.yaml").read_text())
NODE = copy.deepcopy(next(o for o in OBJECTS if o["kind"] == "Node"
                          and o["metadata"]["name"] == "worker-a1"))
NODE["metadata"]["name"] = "worker-new"
SMALL_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "small", "namespace": "x"},
             "spec": {"containers": [{"name": "c", "image": "i", "resources": {
                 "requests": {"cpu": "1", "memory": "1Gi"}}}]}}

pytestmark = [pytest.mark.filterwarnings("error::RuntimeWarning"), pytest.mark.timeout(600)]
# FUZZ_N=5000 for a longer search than CI's
SETTINGS = dict(max_examples=int(os.environ.get("FUZZ_N", 60)), deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck))

# values that are wrong for most arguments and right for some
NASTY = st.sampled_from([
    "x", "", "worker-a1", "numba-ish", "data/examples/cluster.yaml", "/no/such/file", b"x",
    -1, -2, 0, 1, 3, 2**63, 2**63 - 1, -(2**63), 10**30, 10**400, 1.5, -0.5, 1e300, 1e-300,
    float("nan"), float("inf"),
    True, False,
    None, [], {}, [1, "x"], ["worker-a1"], [None], {"k": "v"}, {"kind": "Pod"}, [{"kind": "Pod"}],
    (x for x in ()), object()])


def _cluster():
    return ts.build_cluster(OBJECTS)


def _simulation():
    sim = ts.Simulation(OBJECTS, backend="numpy", interval=None)
    sim.step(until=1)
    return sim


def cluster_digest(cluster) -> str:
    """What a call must not change: the bound pods and their nodes, the
    nodes and their allocatable and requested resources, the pending pods."""
    state = cluster.state
    h = hashlib.sha256()
    for key in sorted(state.pods):
        h.update(f"{key} {state.node_name(state.pods.row_of(key))}\n".encode())
    for name in sorted(state.node_rows):
        h.update(f"{name}\n".encode())
    h.update(repr(sorted(p.key for p in cluster.pending)).encode())
    return h.hexdigest()


def sim_digest(sim) -> str:
    return sim.digest() + repr(len(sim._log))


@dataclass(repr=False)
class Target:
    """One public function: ``call(subject, **kwargs)`` with ``subject``
    made fresh by ``make`` (a Cluster, a Simulation or None) and valid
    keyword arguments ``kwargs``; ``digest`` reads what must not change."""
    name: str
    call: Callable
    kwargs: dict
    make: Callable = lambda: None
    digest: Callable | None = None

    def __repr__(self):
        return self.name


def _snapshot():
    sim = ts.Simulation(OBJECTS, backend="numpy", interval=None)
    sim.run(until=5)
    return sim.snapshot()


SNAPSHOT = _snapshot()
TABLE = pa.table({"name": ["a", "b"], "namespace": ["x", "x"], "cpu": [1000, 500],
                  "memory": [1 << 30, 1 << 29]})
CLUSTER = _cluster()          # for the calls that take it as an argument (none changes it)
JOBS = sweep.make_jobs([str(EXAMPLES / "trace.csv")], [1], cluster=str(EXAMPLES / "cluster.yaml"),
                       backend="numpy", until=120.0)
RESULTS = sweep.run_sweep(JOBS, workers=1)
# an openb slice (4 GPU nodes, 12 pods, every other one leaving) for simulate_batch
OPENB_NODES, OPENB_PODS = openb_slice(Path(tempfile.mkdtemp(prefix="fuzz-openb-")), "default",
                                      4, 12, leave_every=2)

TARGETS = [
    Target("load_manifests", lambda _, **kw: ts.load_manifests(**kw),
           {"path": str(EXAMPLES / "cluster.yaml")}),
    Target("build_cluster", lambda _, **kw: ts.build_cluster(**kw),
           {"objects": OBJECTS, "config": None, "registry": None}),
    Target("load_config", lambda _, **kw: ts.load_config(**kw),
           {"source": str(EXAMPLES / "scheduler-config.yaml")}),
    Target("explain", lambda _, **kw: ts.explain(**kw),
           {"objects": OBJECTS, "pod": POD, "config": None, "backend": "numpy", "seed": 0}),
    Target("explain_pod", lambda c, **kw: ts.explain_pod(c, **kw),
           {"pod": POD, "backend": "numpy", "seed": 0}, _cluster, cluster_digest),
    Target("explain_pod(cluster)", lambda c, **kw: ts.explain_pod(**kw),
           {"cluster": CLUSTER, "pod": POD}),
    Target("Scheduler", lambda c, **kw: ts.Scheduler(c, **kw).schedule_pending(c.pending),
           {"backend": "numpy", "seed": 0, "batch": True, "max_run": 10,
            "binder_fault_rate": 0.0, "termination_grace_seconds": 0.0,
            "pod_max_backoff_seconds": None, "assume_ttl": None, "binder": None},
           _cluster, cluster_digest),
    Target("Scheduler(cluster)", lambda c, **kw: ts.Scheduler(**kw), {"cluster": CLUSTER}),
    Target("schedule_pending", lambda c, **kw: ts.Scheduler(c, "numpy", 0).schedule_pending(**kw),
           {"pods": [SMALL_POD]}, _cluster, cluster_digest),
    Target("Scheduler.subscribe", lambda c, **kw: ts.Scheduler(c, "numpy").subscribe(**kw),
           {"event": "Bound", "callback": print}, _cluster, cluster_digest),
    Target("Scheduler.advance", lambda c, **kw: ts.Scheduler(c, "numpy").advance(**kw),
           {"seconds": 5.0}, _cluster, cluster_digest),
    Target("Scheduler.schedule_one", lambda c, **kw: ts.Scheduler(c, "numpy").schedule_one(**kw),
           {"pod": parse_pod(SMALL_POD)}, _cluster, cluster_digest),
    Target("Scheduler.run", lambda c, **kw: ts.Scheduler(c, "numpy").run(**kw),
           {"pods": [parse_pod(SMALL_POD)]}, _cluster, cluster_digest),
    Target("Scheduler.run_until_idle",
           lambda c, **kw: ts.Scheduler(c, "numpy").run_until_idle(**kw),
           {"max_cycles": 5, "resume": False, "collect": True}, _cluster, cluster_digest),
    Target("Scheduler.handles", lambda c, **kw: ts.Scheduler(c, "numpy").handles(**kw),
           {"pod": parse_pod(SMALL_POD)}, _cluster, cluster_digest),
    Target("how_many_fit", lambda c, **kw: ts.how_many_fit(c, **kw),
           {"templates": [SMALL_POD], "replicas": None, "backend": "numpy", "seed": 0,
            "limit": 4, "progress": None}, _cluster, cluster_digest),
    Target("how_many_fit(replicas)", lambda c, **kw: ts.how_many_fit(c, [SMALL_POD], **kw),
           {"replicas": [2], "backend": "numpy"}, _cluster, cluster_digest),
    Target("how_many_fit(cluster)", lambda c, **kw: ts.how_many_fit(templates=[SMALL_POD], **kw),
           {"cluster": CLUSTER, "limit": 1, "backend": "numpy"}),
    Target("nodes_to_add", lambda c, **kw: ts.nodes_to_add(c, **kw),
           {"workloads": [SMALL_POD], "node_templates": [NODE], "backend": "numpy", "seed": 0,
            "max_nodes": 2, "progress": None}, _cluster, cluster_digest),
    Target("removable_nodes", lambda c, **kw: ts.removable_nodes(c, **kw),
           {"nodes": ["worker-a1"], "backend": "numpy", "seed": 0, "exact_limit": 1,
            "progress": None}, _cluster, cluster_digest),
    Target("expand_workloads", lambda _, **kw: ts.expand_workloads(**kw), {"objects": [POD]}),
    Target("synthetic.workload", lambda _, **kw: ts.synthetic.workload(**kw),
           {"name": "basic", "n_nodes": 2, "n_pods": 2, "seed": 0}),
    Target("synthetic.config", lambda _, **kw: ts.synthetic.config(**kw),
           {"name": "basic", "percentage": 50}),
    Target("synthetic.basic", lambda _, **kw: ts.synthetic.basic(**kw),
           {"nodes": 2, "pods": 2, "seed": 0}),
    Target("synthetic.sample", lambda _, **kw: ts.synthetic.sample(**kw),
           {"seed": 0, "nodes": 2, "pods": 2}),
    Target("synthetic.gpu", lambda _, **kw: ts.synthetic.gpu(**kw),
           {"nodes": 2, "pods": 2, "seed": 0}),
    Target("sweep.make_jobs", lambda _, **kw: sweep.make_jobs(**kw),
           {"traces": [str(EXAMPLES / "trace.csv")], "seeds": [1], "configs": (),
            "policies": (), "cluster": str(EXAMPLES / "cluster.yaml"), "backend": "numpy",
            "interval": 600.0, "until": None}),
    Target("sweep.run_sweep", lambda _, **kw: sweep.run_sweep(**kw),
           {"jobs": JOBS, "workers": 1, "ray": None, "progress": None}),
    Target("sweep.comparison", lambda _, **kw: sweep.comparison(**kw),
           {"table": RESULTS, "metrics": None}),
    Target("sweep.format_comparison", lambda _, **kw: sweep.format_comparison(**kw),
           {"cmp": sweep.comparison(RESULTS), "seeds": 1}),
    Target("read_pods_table", lambda _, **kw: ts.read_pods_table(**kw),
           {"table": TABLE, "templates": None, "columns": False}),
    Target("read_pods_parquet", lambda _, **kw: ts.read_pods_parquet(**kw),
           {"path": "/no/such.parquet", "templates": None, "columns": False}),
    Target("read_trace", lambda _, **kw: ts.read_trace(**kw),
           {"path": "/no/such.csv", "templates": None}),
    Target("PodColumns.from_records", lambda _, **kw: ts.PodColumns.from_records(**kw),
           {"records": []}),
    Target("Simulation", lambda _, **kw: ts.Simulation(**kw),
           {"cluster": OBJECTS, "config": None, "backend": "numpy", "seed": 0, "interval": 60.0,
            "metrics": None, "registry": None}),
    Target("simulate_batch", lambda _, **kw: ts.simulate_batch(**kw),
           {"nodes": OPENB_NODES, "traces": OPENB_PODS, "configs": ["FGD"], "seeds": [1],
            "backend": "numba", "workers": 1, "max_unsched": 300.0}),
    Target("simulate_batch(scenario)", lambda _, **kw: ts.simulate_batch(**kw),
           {"nodes": OPENB_NODES, "traces": OPENB_PODS, "configs": ["FGD"], "seeds": [1],
            "backend": "numba", "workers": 1, "max_unsched": 300.0,
            "scenario": {"steps": [{"at": 3, "cordon": "openb-node-0000"}]}}),
    Target("simulate_batch(manifests)", lambda _, **kw: ts.simulate_batch(**kw),
           {"nodes": str(EXAMPLES / "cluster.yaml"), "traces": str(EXAMPLES / "trace.csv"),
            "configs": [None], "seeds": [1], "backend": "numba", "workers": 1,
            "max_unsched": 300.0, "scenario": {"steps": [{"at": 3, "cordon": "worker-a1"}]}}),
    Target("Simulation.restore", lambda _, **kw: ts.Simulation.restore(**kw),
           {"snapshot": SNAPSHOT, "cluster": None}),
    Target("Simulation.submit", lambda s, **kw: s.submit(**kw),
           {"pods": [SMALL_POD], "at": 2.0, "duration": 3.0}, _simulation, sim_digest),
    Target("Simulation.delete", lambda s, **kw: s.delete(**kw),
           {"pod_key": "shop/web-6d4cf56db6-t9w4n", "at": 2.0}, _simulation, sim_digest),
    Target("Simulation.add_node", lambda s, **kw: s.add_node(**kw),
           {"node": NODE, "at": 2.0}, _simulation, sim_digest),
    Target("Simulation.delete_node", lambda s, **kw: s.delete_node(**kw),
           {"name": "worker-a1", "at": 2.0}, _simulation, sim_digest),
    Target("Simulation.cordon", lambda s, **kw: s.cordon(**kw),
           {"name": "worker-a1", "at": 2.0}, _simulation, sim_digest),
    Target("Simulation.uncordon", lambda s, **kw: s.uncordon(**kw),
           {"name": "worker-a1", "at": 2.0}, _simulation, sim_digest),
    Target("Simulation.drain", lambda s, **kw: s.drain(**kw),
           {"name": "worker-a1", "at": 2.0}, _simulation, sim_digest),
    Target("Simulation.scenario", lambda s, **kw: s.scenario(**kw),
           {"scenario": {"steps": [{"at": 3, "cordon": "worker-a1"}]}}, _simulation, sim_digest),
    Target("Simulation.on", lambda s, **kw: s.on(**kw),
           {"event": "Bound", "callback": print}, _simulation, sim_digest),
    Target("Simulation.step", lambda s, **kw: s.step(**kw), {"until": 5.0}, _simulation,
           sim_digest),
    Target("Simulation.run", lambda s, **kw: s.run(**kw), {"until": 5.0}, _simulation,
           sim_digest),
]


def _env_call(_, **kw):
    env = ts.SchedulingEnv(**kw)
    try:
        env.reset()
        env.step(0)
    finally:
        env.close()


def _env():
    env = ts.SchedulingEnv(OBJECTS, [SMALL_POD], backend="numpy")
    env.reset()
    return env


def _env_method(method):
    def call(env, **kw):
        try:
            getattr(env, method)(**kw)
        finally:
            env.close()
    return call


if find_spec("gymnasium") is not None:          # the gym extra
    TARGETS += [
        Target("SchedulingEnv", _env_call,
               {"cluster": OBJECTS, "trace": [SMALL_POD], "backend": "numpy", "seed": 0,
                "max_nodes": 4, "features": ("cpu", "memory"), "reward": "allocation",
                "invalid_action_penalty": 1.0, "max_steps": 3, "max_time": None,
                "scores": True, "setup": None}),
        Target("SchedulingEnv.reset", _env_method("reset"), {"seed": 3}, _env),
        Target("SchedulingEnv.step", _env_method("step"), {"action": 1}, _env),
    ]


def test_every_facade_name_is_fuzzed():
    """A name added to the facade gets a target here (or a reason not to)."""
    fuzzed = {t.name.partition("(")[0].partition(".")[0] for t in TARGETS}
    # no arguments / classes to read
    exempt = {"default_registry", "Cluster", "Binding", "TensorschedError", "ArgumentError",
              "UnknownFieldWarning", "__version__"}
    gym = {"SchedulingEnv"} if find_spec("gymnasium") is not None else set()
    assert set(ts.__all__) | gym <= fuzzed | exempt


@st.composite
def calls(draw):
    """(target, keyword arguments, names of the replaced ones)."""
    target = draw(st.sampled_from(TARGETS))
    kwargs = dict(target.kwargs)
    names = draw(st.lists(st.sampled_from(sorted(kwargs)), min_size=1, max_size=2, unique=True))
    for name in names:
        kwargs[name] = draw(NASTY)
    return target, kwargs, set(names)


@settings(**SETTINGS)
@given(calls())
def test_a_bad_argument_is_named_and_changes_nothing(call):
    target, kwargs, replaced = call
    subject = target.make()
    before = target.digest(subject) if target.digest else None
    try:
        target.call(subject, **kwargs)
    except ArgumentError as exc:
        assert str(exc).startswith(f"{exc.function}: {exc.argument}: ")
        assert exc.argument.partition("[")[0] in replaced, str(exc)
    except TensorschedError as exc:
        assert str(exc)           # the parsers' errors name the file, object and field
    else:
        return
    if target.digest is not None:
        assert target.digest(subject) == before, f"{target.name} changed its subject"


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_the_valid_call_of_each_target_works(target):
    """The base calls above are valid: a refusal in the fuzz is the
    replaced argument's doing."""
    if target.name in ("read_pods_parquet", "read_trace"):
        with pytest.raises(TensorschedError, match="/no/such"):
            target.call(target.make(), **target.kwargs)
        return
    target.call(target.make(), **target.kwargs)


@pytest.mark.parametrize("call, error, match", [
    (lambda s: s.run(until=1e300), ArgumentError, r"Simulation\.run: until: .*\[0, 1e\+15\]"),
    (lambda s: s.step(until=1e300), ArgumentError, r"Simulation\.step: until: .*1e\+15"),
    (lambda s: s.submit([SMALL_POD], at=1e300), ArgumentError, r"Simulation\.submit: at: "),
    (lambda s: s.submit([SMALL_POD], at=2, duration=1e300), ArgumentError,
     r"Simulation\.submit: duration: "),
    (lambda s: s.run(until=1e15), TensorschedError,
     r"Simulation\.run: interval: a time-series row every 60 s up to 1e\+15 s makes "
     r"1\.67e\+13 rows; at most 2,000,000"),
    (lambda s: s.step(until=1e9), TensorschedError, r"Simulation\.step: interval: .*1e\+09 s"),
])
def test_a_run_that_would_sample_for_ages_is_refused_and_changes_nothing(call, error, match):
    """Times past the traces' bound (1e15 s) are refused as a trace's are;
    a run whose time series would pass MAX_ROWS rows is refused before it
    starts (``run(until=1e300)`` sampled every 60 s forever)."""
    sim = ts.Simulation(OBJECTS, backend="numpy", interval=60.0)
    sim.step(until=1)
    before = sim_digest(sim)
    with pytest.raises(error, match=match):
        call(sim)
    assert sim_digest(sim) == before
    assert sim.run(until=120)["rows"] == 2          # and it goes on as before


def test_an_interval_below_the_span_of_the_events_is_refused_before_the_run():
    """``interval=1e-300`` (every row's time equal to the last from some
    point on: ``t + interval == t``) and a pod submitted at 1e14 s with
    a minute's interval: refused, the events known now set the end."""
    sim = ts.Simulation(OBJECTS, backend="numpy", interval=1e-300)
    before = sim_digest(sim)
    with pytest.raises(TensorschedError, match=r"every 1e-300 s up to 10 s"):
        sim.run(until=10)
    assert sim_digest(sim) == before
    sim = ts.Simulation(OBJECTS, backend="numpy", interval=60.0)
    sim.submit([SMALL_POD], at=1e14)
    before = sim_digest(sim)
    with pytest.raises(TensorschedError, match=r"Simulation\.run: interval: .* up to 1e\+14 s"):
        sim.run()
    assert sim_digest(sim) == before


def test_a_run_that_outgrows_the_rows_on_the_way_stops(monkeypatch):
    """A pod's duration is known only when it binds: a run that passes the
    rows bound on the way stops with an error naming the time, not after
    hours of sampling."""
    from tensorsched.framework.simulation import series
    monkeypatch.setattr(series, "MAX_ROWS", 50)
    sim = ts.Simulation(OBJECTS, backend="numpy", interval=1.0)
    sim.submit([SMALL_POD], at=2, duration=1e6)
    with pytest.raises(TensorschedError, match=r"reached 50 rows at 51 s"):
        sim.run()
    assert sim.series.rows == 50


@pytest.mark.parametrize("make, match", [
    (lambda: ts.Simulation(OBJECTS, backend="numpy", foo=1),
     r"^Simulation: foo: unknown keyword argument \(the Scheduler's are binder_fault_rate, "),
    (lambda: ts.Simulation(OBJECTS, backend="numpy", clock=None),
     r"^Simulation: clock: unknown keyword argument"),
    pytest.param(lambda: ts.SchedulingEnv(OBJECTS, [SMALL_POD], backend="numpy", grace=5),
                 r"^SchedulingEnv: grace: unknown keyword argument",
                 marks=pytest.mark.skipif(find_spec("gymnasium") is None, reason="gym extra")),
    pytest.param(lambda: ts.SchedulingEnv(OBJECTS, [SMALL_POD], backend="numpy", batch=True),
                 r"^SchedulingEnv: batch: the environment decides one pod at a time",
                 marks=pytest.mark.skipif(find_spec("gymnasium") is None, reason="gym extra")),
    pytest.param(lambda: ts.SchedulingEnv(OBJECTS, [SMALL_POD], backend="numpy", max_time=1e300),
                 r"^SchedulingEnv: max_time: must be a finite number of seconds in \[0, 1e\+15\]",
                 marks=pytest.mark.skipif(find_spec("gymnasium") is None, reason="gym extra")),
])
def test_an_unknown_keyword_is_named_by_the_function_called(make, match):
    """A keyword passed on to the Scheduler that it does not take was a bare
    TypeError naming ``Scheduler.__init__`` (the environment's only at its
    first reset); ``batch`` given to the environment was dropped silently."""
    with pytest.raises(ArgumentError, match=match):
        make()


@pytest.mark.parametrize("column, match", [
    ("cpu", r"row 0: cpu: must be a non-negative integer, got 18446744073709551615"),
    ("nvidia.com/gpu", r"row 0: nvidia\.com/gpu: must be a non-negative integer, got 1844"),
    ("priority", r"row 0: priority: must be in -2147483648\.\.2147483647, got 1844"),
    ("creation_time", r"row 0: creation_time: out of range \(ns since the epoch\), got 1844"),
    ("template", r"row 0: template: no template 18446744073709551615 \(1 templates given\)"),
])
def test_an_unsigned_column_past_int64_is_refused_by_row_and_column(column, match):
    """A uint64 cell past 2**63 (a Parquet file written from unsigned
    counters) raised a bare ArrowInvalid from the range check itself."""
    table = pa.table({"name": ["a", "b"], column: pa.array([2**64 - 1, 1], pa.uint64())})
    with pytest.raises(TensorschedError, match=match):
        ts.read_pods_table(table, templates=[{"spec": {"containers": []}}])
    ok = pa.table({"name": ["a"], column: pa.array([0], pa.uint64())})
    assert len(ts.read_pods_table(ok, templates=[{"spec": {"containers": []}}])) == 1


@pytest.mark.parametrize("column", ["arrival", "departure", "duration"])
@pytest.mark.parametrize("kind", [pa.uint64(), pa.int64()])
def test_a_trace_time_past_two_to_the_53_is_refused_by_row_and_column(tmp_path, column, kind):
    """Integer seconds past 2**53 raised ArrowInvalid in the cast to float
    (Arrow's safe cast); now the seconds' bound names the row."""
    cols = {"name": ["a"], "arrival": pa.array([1], kind)}
    cols[column] = pa.array([2**63 - 1], kind)
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table(cols), path)
    with pytest.raises(TensorschedError, match=rf"t\.parquet: row 0: {column}: must be a "
                       r"number of seconds 0\.\.1e\+15, got 9223372036854775807"):
        ts.read_trace(path)


def _replica_set(name: str, replicas: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "x"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"a": name}},
                     "template": {"metadata": {"labels": {"a": name}},
                                  "spec": SMALL_POD["spec"]}}}


@pytest.mark.parametrize("objects, match", [
    ([_replica_set("rs", 2**31 - 1)],
     r"^ReplicaSet x/rs: spec\.replicas: 2147483647 pods; workloads expand to at most "
     r"1,000,000 pods"),
    ([_replica_set("a", 600_000), _replica_set("b", 600_000)],
     r"^ReplicaSet x/b: spec\.replicas: 600000 pods \(1200000 with the workloads before it\)"),
])
def test_workloads_past_a_million_pods_are_refused_before_any_pod_is_made(objects, match):
    """A ReplicaSet of 2**31-1 replicas (an int32, valid upstream) made a
    dict per pod: ``nodes_to_add`` and ``expand_workloads`` ran for hours."""
    with pytest.raises(TensorschedError, match=match):
        ts.expand_workloads(objects)
    with pytest.raises(TensorschedError, match=match):
        ts.nodes_to_add(ts.build_cluster(OBJECTS), objects, [NODE], backend="numpy")
    assert len(ts.expand_workloads([_replica_set("ok", 3)])[0]) == 3


BIG_NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "big"},
            "status": {"allocatable": {"cpu": "1000000", "memory": "1000Ti",
                                       "pods": "1000000000"}}}
EMPTY_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t", "namespace": "x"},
             "spec": {"containers": [{"name": "c", "image": "i"}]}}     # requests nothing


@pytest.mark.parametrize("kw, name, count", [
    ({}, "limit", "1,000,000,000"),
    ({"limit": 10**18}, "limit", "1,000,000,000"),
    ({"limit": 10**7 + 1}, "limit", "10,000,001"),
    ({"replicas": [10**7 + 1]}, "replicas", "10,000,001"),
])
def test_how_many_fit_past_ten_million_placeable_pods_is_refused_up_front(kw, name, count):
    """A node with a billion pod slots: how_many_fit placed ~2,500 pods/s
    for days; now the pods its room lets bind (within ``limit`` or
    ``replicas``) past MAX_PODS are refused before any pod is made."""
    cluster = ts.build_cluster([BIG_NODE])
    with pytest.raises(ArgumentError, match=rf"^how_many_fit: {name}: up to {count} pods could "
                       r"be placed .*; one call places at most 10,000,000 \("):
        ts.how_many_fit(cluster, [EMPTY_POD], backend="numpy", **kw)
    assert ts.how_many_fit(cluster, [EMPTY_POD], backend="numpy", limit=3).templates[0].count == 3


def test_replicas_past_the_bound_on_a_small_cluster_still_run():
    """Replicas beyond the room are counted, never made: a hundred million
    on the example cluster is within the bound (what can bind is small)."""
    report = ts.how_many_fit(ts.build_cluster(OBJECTS), [SMALL_POD], replicas=[10**8],
                             backend="numpy")
    tf = report.templates[0]
    assert tf.replicas == 10**8 and tf.count + tf.not_scheduled == 10**8 and tf.count < 10**3
