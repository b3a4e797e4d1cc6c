"""Arrivals placed in blocks (``Scheduler.schedule_arrivals`` over
``Framework.place_block`` and GpuShareFit's compiled block) leave exactly
what one arrival at a time leaves: the same events in the same order at
the same times, the same placements and GPUs, time series, summary and
queue; on openb traces (with their departures) under every policy, and on
random GPU clusters mixing what ends a block (other events, shared arrival
times, departures, pods that cannot join, the unschedulable flush)."""
import math
from unittest.mock import patch

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.openb import NODES, openb_slice

from tensorsched.framework.runtime.clock import SimulatedClock
from tensorsched.framework.scheduler.cluster import build_cluster, pod_from
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.framework.simulation import simulation as SM
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.framework.simulation.trace import trace_from_table
from tensorsched.topology.gpu import ANNO_GPU_COUNT, ANNO_GPU_MILLI, ANNO_GPU_MODEL
from tensorsched.topology.gpu_table import binding_gpus
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb.trace import (
    experiment_registry,
    openb_config,
    openb_node_objects,
    read_openb_trace,
)
from tensorsched.topology.plugins import GpuShareFit
from tensorsched.topology.sim_metrics import trace_shapes, typical_shapes

POLICIES = ("Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD")


def _run(objs, cfg, trace, *, batch, interval=None, extra=(), delete=(), seed=3, **options):
    sim = Simulation(objs, cfg, "numba", seed, interval=interval, registry=experiment_registry(),
                     batch=batch, **options)
    sim.submit(trace)
    for name, at in delete:
        sim.delete(name, at=at)
    for pods, at in extra:
        sim.submit(pods, at=at)
    events = []
    sim.on("*", events.append)
    sim.run()
    state = sim.cluster.state
    placed = {k: state.node_name(e.node_row) for k, e in state.pods.items()}
    q = sim.scheduler.queue
    queue = sorted((k, pi.where, pi.attempts, pi.timestamp, sorted(pi.unschedulable_plugins))
                   for k, pi in q.infos.items())
    out = {"events": events, "placed": placed, "gpus": binding_gpus(state),
           "summary": sim.summary(), "queue": queue, "digest": sim.digest(),
           "requested": state.requested[:state.n_rows].copy(),
           "series": sim.timeseries().to_pydict() if interval else None}
    return out, sim


def _same(a, b):
    assert a["events"] == b["events"]
    assert a["placed"] == b["placed"]
    assert a["gpus"] == b["gpus"]
    assert a["summary"] == b["summary"]
    assert a["queue"] == b["queue"]
    assert a["digest"] == b["digest"]
    np.testing.assert_array_equal(a["requested"], b["requested"])
    assert a["series"] == b["series"]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("trace, tie", [("default", True), ("gpuspec10", False)])
def test_openb_trace_with_departures_block_equals_one_by_one(tmp_path, policy, trace, tie):
    nodes_csv, pods_csv = openb_slice(tmp_path, trace, 12, 700, leave_every=5)
    tr = read_openb_trace(pods_csv)
    inv = R.read_openb_nodes(nodes_csv)
    ranks = np.arange(inv.n_nodes)[::-1].copy() if tie else None
    cfg = openb_config(policy, typical_shapes(trace_shapes(tr)),
                       inv.n_nodes + 1 if tie else None)
    # blocks however short; failed pods never flushed back (as in the
    # paper's experiment): arrivals minutes apart still form blocks
    opts = {"interval": 3600.0, "pod_max_in_unschedulable_seconds": math.inf}
    with patch.object(SM, "MIN_BLOCK", 1):
        a, sim = _run(openb_node_objects(inv, ranks), cfg, tr, batch=True, **opts)
    b, _ = _run(openb_node_objects(inv, ranks), cfg, tr, batch=False, **opts)
    _same(a, b)
    assert sim.scheduler.block_pods > 50          # blocks placed pods between departures
    assert a["summary"]["failed_attempts"] > 0    # failures inside blocks too
    assert any(e["event"] == "Departed" for e in a["events"])


@pytest.mark.parametrize("policy", ["FGD", "BestFit"])
def test_failures_inside_blocks_match(tmp_path, policy):
    """Arrivals only, a cluster too small: most pods fail inside blocks,
    with the FailedScheduling messages, queue entries and events one cycle
    at a time gives."""
    nodes_csv, pods_csv = openb_slice(tmp_path, "gpushare40", 6, 500, leave_every=10**9)
    tr = read_openb_trace(pods_csv)
    inv = R.read_openb_nodes(nodes_csv)
    cfg = openb_config(policy, typical_shapes(trace_shapes(tr)), inv.n_nodes + 1)
    objs = openb_node_objects(inv, np.arange(inv.n_nodes))
    opts = {"interval": None, "pod_max_in_unschedulable_seconds": math.inf}
    a, sim = _run(objs, cfg, tr, batch=True, **opts)
    b, _ = _run(objs, cfg, tr, batch=False, **opts)
    _same(a, b)
    failed = [e for e in a["events"] if e["event"] == "FailedScheduling"]
    assert sim.scheduler.block_pods > 400 and len(failed) > 200
    assert all(e["message"].startswith("0/6 nodes are available:") for e in failed)


def test_no_block_when_a_filter_retries_on_arrivals(tmp_path):
    """A filter that asks to retry the pods it rejected whenever another pod
    arrives (UnscheduledPod/Add) would see them moved back between two
    arrivals of a block: its profile places one arrival at a time."""
    nodes_csv, pods_csv = openb_slice(tmp_path, "gpushare40", 6, 200, leave_every=10**9)
    tr = read_openb_trace(pods_csv)
    inv = R.read_openb_nodes(nodes_csv)
    cfg = openb_config("FGD", typical_shapes(trace_shapes(tr)))
    opts = {"interval": None, "pod_max_in_unschedulable_seconds": math.inf}
    with patch.object(GpuShareFit, "events", GpuShareFit.events | {"UnscheduledPod/Add"}):
        a, sim = _run(openb_node_objects(inv), cfg, tr, batch=True, **opts)
        b, _ = _run(openb_node_objects(inv), cfg, tr, batch=False, **opts)
    assert sim.scheduler.block_pods == 0
    _same(a, b)


def _gpu_nodes(draw):
    n = draw(st.integers(2, 9))
    nodes = []
    for i in range(n):
        count = draw(st.sampled_from([0, 1, 2, 4, 8]))
        alloc = {"cpu": str(draw(st.sampled_from([2, 4, 8, 16]))),
                 "memory": f"{draw(st.sampled_from([4, 16, 64]))}Gi",
                 "pods": str(draw(st.sampled_from([3, 110])))}
        labels = {"kubernetes.io/hostname": f"n{i}", "openb.tensorsched.io/tie": str(i)}
        if count:
            alloc["nvidia.com/gpu"] = str(count)
            labels["nvidia.com/gpu.product"] = draw(st.sampled_from(["A100", "T4"]))
        spec = {}
        if draw(st.integers(0, 7)) == 0:
            spec["unschedulable"] = True
        if draw(st.integers(0, 7)) == 0:
            spec["taints"] = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
        nodes.append({"apiVersion": "v1", "kind": "Node",
                      "metadata": {"name": f"n{i}", "labels": labels}, "spec": spec,
                      "status": {"capacity": dict(alloc), "allocatable": alloc}})
    return nodes


@st.composite
def _clusters(draw, policies=POLICIES):
    nodes = _gpu_nodes(draw)
    m = draw(st.integers(1, 40))
    t = 0.0
    rows = {k: [] for k in ("name", "arrival", "departure", "duration", "cpu", "memory",
                            "annotations", "priority")}
    for j in range(m):
        t += draw(st.sampled_from([0.0, 1.0, 1.0, 2.0, 5.0]))
        rows["name"].append(f"p{j}")
        rows["arrival"].append(t)
        leave = draw(st.sampled_from(["none", "none", "dep", "dur"]))
        life = float(draw(st.integers(1, 30)))
        rows["departure"].append(t + life if leave == "dep" else None)
        rows["duration"].append(life if leave == "dur" else None)
        rows["cpu"].append(draw(st.sampled_from([0, 500, 1000, 3000])))
        rows["memory"].append(draw(st.sampled_from([0, 2**30, 8 * 2**30])))
        kind = draw(st.sampled_from(["none", "share", "whole"]))
        annos = None
        if kind != "none":
            milli = draw(st.sampled_from([100, 300, 500])) if kind == "share" else 1000
            num = 1 if kind == "share" else draw(st.sampled_from([1, 2, 4]))
            annos = [(ANNO_GPU_MILLI, str(milli)), (ANNO_GPU_COUNT, str(num))]
            if draw(st.booleans()):
                annos.append((ANNO_GPU_MODEL, draw(st.sampled_from(["A100", "T4", "A100|T4"]))))
        rows["annotations"].append(annos)
        rows["priority"].append(draw(st.sampled_from([0, 0, 5])))
    types = {"annotations": pa.map_(pa.string(), pa.string()), "arrival": pa.float64(),
             "departure": pa.float64(), "duration": pa.float64()}
    table = pa.table({k: pa.array(v, types.get(k)) for k, v in rows.items()})
    extra = []
    for j in range(draw(st.integers(0, 3))):
        at = float(draw(st.integers(0, int(t) + 2)))
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"x{j}", "namespace": "default"},
               "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
        if draw(st.booleans()):
            pod["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
        extra.append(([pod], at))
    policy = draw(st.sampled_from(policies))
    tie = draw(st.booleans())
    flush = draw(st.sampled_from([math.inf, 3.0, 20.0]))
    interval = draw(st.sampled_from([None, 4.0]))
    return nodes, table, extra, policy, tie, flush, interval


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_clusters())
def test_random_gpu_clusters_block_equals_one_by_one(case):
    _blocks_equal_one_by_one(case)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_clusters(("Random",)))
def test_random_policy_blocks_equal_one_by_one(case):
    """Random, whose pods draw their nodes per cycle, on its own: blocks
    on (however short, and from 8 arrivals) and off give the same events,
    placements, GPU indices, queue and curves, with departures and pods
    retried after the unschedulable flush (that blocks form under Random:
    ``test_openb_trace_with_departures_block_equals_one_by_one``)."""
    _blocks_equal_one_by_one(case)


def _blocks_equal_one_by_one(case):
    nodes, table, extra, policy, tie, flush, interval = case
    trace = trace_from_table(table)
    cfg = openb_config(policy, typical_shapes(trace_shapes(trace)),
                       len(nodes) + 1 if tie else None)
    runs = []
    for batch, min_block in ((True, 1), (True, SM.MIN_BLOCK), (False, 1)):
        with patch.object(SM, "MIN_BLOCK", min_block):
            runs.append(_run(nodes, cfg, trace_from_table(table), batch=batch,
                             interval=interval, extra=extra,
                             pod_max_in_unschedulable_seconds=flush))
    _same(runs[0][0], runs[2][0])
    _same(runs[1][0], runs[2][0])
    return runs


def _gpu_pod(name, milli):
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "default",
                        "annotations": {ANNO_GPU_MILLI: str(milli), ANNO_GPU_COUNT: "1"}},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    return pod


def test_schedule_arrivals_api():
    """``Scheduler.schedule_arrivals`` on its own: the rows of the prefix it
    handled (a repeated name ends it), the clock at the last arrival, the
    same placements and GPUs as one arrival at a time; nothing for a
    profile without a block form."""
    objs = openb_node_objects(R.read_openb_nodes(NODES))[:4]
    cfg = openb_config("BestFit")
    pods = [_gpu_pod(f"p{i}", 300 + 100 * (i % 5)) for i in range(30)]

    def scheduler(config):
        cluster = build_cluster(objs, config, experiment_registry())
        return cluster, Scheduler(cluster, "numba", 7, clock=SimulatedClock())

    cluster, sched = scheduler(cfg)
    recs = [cluster.resolve(pod_from(p)) for p in pods]
    rows = sched.schedule_arrivals(recs + recs[:1], np.arange(31, dtype=np.float64) + 1.0)
    assert rows.shape == (30,) and sched.clock.now() == 30.0 and (rows >= 0).sum() > 10
    one, alone = scheduler(cfg)
    for i, p in enumerate(pods):
        alone.clock.set(i + 1.0)
        alone.add_pod(p)
        alone.run_until_idle()
    assert {k: e.node_row for k, e in cluster.state.pods.items()} == \
        {k: e.node_row for k, e in one.state.pods.items()}
    assert binding_gpus(cluster.state) == binding_gpus(one.state)
    assert sorted(sched.queue.infos) == sorted(alone.queue.infos)
    plain, sched = scheduler(None)          # the default profile: no block form
    recs = [plain.resolve(pod_from(p)) for p in pods]
    assert sched.schedule_arrivals(recs, np.arange(30, dtype=np.float64)).shape == (0,)



def _at_once(tr, n: int):
    """The first ``n`` pods of trace ``tr`` arriving together at t = 1."""
    table = tr.table.slice(0, n)
    at = table.schema.get_field_index("arrival")
    return trace_from_table(table.set_column(at, "arrival", pa.array(np.ones(n))))


@pytest.mark.parametrize("policy", ["Random", "FGD"])
def test_a_stretch_too_short_for_a_block_takes_its_cycles(tmp_path, policy):
    """Arrivals reaching the queue one at a time (no arrival blocks, each
    pod leaving before the next arrives): each head takes its own cycle,
    not a one-pod block (whose setup costs more than the cycle), leaving
    what one cycle at a time leaves; pods queued together still form a
    block."""
    nodes_csv, pods_csv = openb_slice(tmp_path, "default", 80, 300)
    tr = read_openb_trace(pods_csv)
    inv = R.read_openb_nodes(nodes_csv)
    cfg = openb_config(policy, typical_shapes(trace_shapes(tr)))
    with patch.object(SM, "MIN_BLOCK", 10**9):
        for trace in (tr, _at_once(tr, 40)):
            a, sim = _run(openb_node_objects(inv), cfg, trace, batch=True, interval=3600.0)
            b, _ = _run(openb_node_objects(inv), cfg, trace, batch=False, interval=3600.0)
            _same(a, b)
            sched = sim.scheduler
            assert sched.block_pods == 0
            if trace is tr:
                assert a["summary"]["scheduled"] == 300
                assert sched.runs.short_heads == 300 and not sched.run_lengths
            else:
                assert sched.runs.short_heads < 4 and max(sched.run_lengths) >= 36


def test_a_departure_from_a_block_leaves_only_the_pod_it_was_scheduled_for():
    """Pod ``dup`` arrives in a block with a departure at 52 s, is deleted at
    10 s and created again at 20 s: the departure does nothing to the new
    pod (a pod's lifetime is its object's, not its name's), as one arrival
    at a time."""
    objs = openb_node_objects(R.read_openb_nodes(NODES))[:4]
    cfg = openb_config("BestFit")
    rows = 12
    trace = pa.table({"name": ["dup" if i == 2 else f"t{i}" for i in range(rows)],
                      "arrival": [float(i) for i in range(rows)],
                      "departure": pa.array([52.0 if i == 2 else None for i in range(rows)],
                                            pa.float64()),
                      "cpu": [100] * rows, "memory": [1 << 20] * rows})
    again = _gpu_pod("dup", 200)
    with patch.object(SM, "MIN_BLOCK", 1):
        a, sim = _run(objs, cfg, trace, batch=True, extra=[([again], 20.0)],
                      delete=[("dup", 10.0)])
    b, _ = _run(objs, cfg, trace, batch=False, extra=[([again], 20.0)], delete=[("dup", 10.0)])
    _same(a, b)
    assert sim.scheduler.block_pods > 0
    assert "default/dup" in a["placed"] and a["summary"]["departed"] == 0
    assert not [e for e in a["events"] if e["pod"] == "default/dup" and e["time"] > 20
                and e["event"] in ("Departed", "Deleted")]
