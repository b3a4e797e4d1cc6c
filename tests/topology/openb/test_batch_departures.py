"""Traces with departures (at a time, or a duration after the binding) and
pods of unequal priorities in one batched call (``openb.batch.trace_batch``)
equal each run's ``Simulation`` bit for bit: the order and times of every
binding and departure, each pod's node and GPU indices, and the GPU
allocation and fragmentation curves the Simulation samples, for all six
policies, on random small clusters and traces where pods fit nowhere,
retry after departures (backing off or not) and are flushed from the
unschedulable pool."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.openb import openb_slice, simulate_trace

from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.gpu import build_inventory
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb import trace as T

MODELS = ("A10", "V100M16", "T4")


@st.composite
def traced_clusters(draw):
    n = draw(st.integers(1, 6))
    counts = draw(st.lists(st.sampled_from([0, 1, 2, 4]), min_size=n, max_size=n))
    if sum(counts) == 0:
        counts[0] = 2
    models = [draw(st.sampled_from(MODELS)) if c else "" for c in counts]
    cpu = draw(st.lists(st.sampled_from([4000, 16000]), min_size=n, max_size=n))
    mem = draw(st.lists(st.sampled_from([8192, 65536]), min_size=n, max_size=n))
    inv = build_inventory([f"node-{i}" for i in range(n)], cpu, mem, counts, models)
    p = draw(st.integers(1, 24))
    shapes = draw(st.lists(st.tuples(
        st.sampled_from([0, 500, 2000, 8000]), st.sampled_from([0, 1024, 30000]),
        st.sampled_from([(0, 0), (1, 250), (1, 500), (1, 1000), (2, 1000)]),
        st.sampled_from(["", "A10", "T4|V100M16"])), min_size=p, max_size=p))
    if not any(s[2][0] for s in shapes):      # the typical pods need GPU demand
        shapes[0] = (shapes[0][0], shapes[0][1], (1, 500), shapes[0][3])
    gaps = draw(st.lists(st.sampled_from([0, 0, 1, 3, 12, 400]), min_size=p, max_size=p))
    stays = draw(st.lists(st.sampled_from([None, 0, 1, 2, 5, 9, 30, 700]), min_size=p,
                          max_size=p))
    # a stay counted from the arrival (an absolute departure) or the binding (a duration)
    timed = draw(st.lists(st.booleans(), min_size=p, max_size=p)) if draw(st.booleans()) \
        else [False] * p
    arrival = np.cumsum(np.array(gaps, np.float64))
    departure = np.array([np.inf if s is None or d else a + s
                          for a, s, d in zip(arrival, stays, timed)])
    duration = np.array([s if s is not None and d else np.inf for s, d in zip(stays, timed)],
                        np.float64)
    pods = R.TracePods([f"pod-{j:03d}" for j in range(p)],
                       np.array([s[0] for s in shapes], np.int64),
                       np.array([s[1] for s in shapes], np.int64),
                       np.array([s[2][0] for s in shapes], np.int64),
                       np.array([s[2][1] for s in shapes], np.int64),
                       [s[3] if s[2][0] else "" for s in shapes])
    # activeQ's order: some traces' pods of unequal priorities
    rank = np.array(draw(st.lists(st.integers(0, 2), min_size=p, max_size=p)), np.int64) \
        if draw(st.booleans()) else None
    return inv, B.TraceWorkload(pods, arrival, departure, duration=duration, rank=rank)


def assert_simulation(res, inv, tw, **options):
    """``res`` is its Simulation's run (module doc)."""
    sim, log, gpus = simulate_trace(inv, tw, res.policy, res.seed, interval=5.0,
                                    pod_max_in_unschedulable_seconds=options.get(
                                        "max_unsched", B.DEFAULT_MAX_UNSCHED))
    what = res.policy
    assert [(t, p) for t, p, _n in log] == list(zip(res.log_t.tolist(),
                                                    res.log_pod.tolist())), what
    node = np.full(len(tw.arrival), -1)
    for _t, p, nd in log:
        if p >= 0:
            node[p] = nd
    assert node.tolist() == res.node.tolist(), what
    names = tw.pods.names
    assert [gpus.get(f"default/{names[j]}", ()) for j in range(len(names))] == [
        g if res.node[j] >= 0 else () for j, g in enumerate(res.gpus)], what
    assert sim.summary()["scheduled"] == res.scheduled, what
    ts = sim.timeseries()
    used, frag = res.at(ts.column("time").to_numpy())
    np.testing.assert_array_equal(frag, ts.column("gpu_frag_milli").to_numpy(), err_msg=what)
    np.testing.assert_array_equal(used, ts.column("gpu_used_milli").to_numpy(), err_msg=what)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=traced_clusters(), seed=st.integers(0, 2**20),
       max_unsched=st.sampled_from([B.DEFAULT_MAX_UNSCHED, 20.0, np.inf]))
def test_traces_with_departures_equal_their_simulations(case, seed, max_unsched):
    inv, tw = case
    jobs = [(0, 0, pol, seed) for pol in POLICIES]
    for res in B.trace_batch([inv], [tw], jobs, workers=1, max_unsched=max_unsched):
        assert_simulation(res, inv, tw, max_unsched=max_unsched)


def test_openb_slice_with_departures_retries_and_equals_the_simulation(tmp_path):
    """An openb trace (its own creation and deletion times, compressed so
    that pods wait, retry and leave) on two clusters in one call, chunked:
    some pods bind only after a retry, and every run is its Simulation's."""
    nodes, pods = openb_slice(tmp_path, "gpuspec10", 10, 160)
    inv = R.read_openb_nodes(nodes)
    tw = B.trace_workload(T.read_openb_trace(pods))
    (tmp_path / "small").mkdir()
    small = R.read_openb_nodes(openb_slice(tmp_path / "small", "gpuspec10", 6, 1)[0])
    arrival = np.floor(tw.arrival / 600.0)
    tw = B.TraceWorkload(tw.pods, arrival, arrival + np.floor((tw.departure - tw.arrival) / 600.0))
    jobs = [(c, 0, pol, 5 + c) for pol in POLICIES for c in (0, 1)]
    got = B.trace_batch([inv, small], [tw], jobs, workers=1, chunk=5)
    assert any((r.tries[r.node >= 0] > 1).any() for r in got)
    assert any(((r.node < 0) & (r.tries > 0)).any() for r in got)
    for (c, _t, _p, _s), res in zip(jobs, got):
        assert_simulation(res, (inv, small)[c], tw)


def test_trace_batch_refuses_bad_arguments(tmp_path):
    nodes, pods = openb_slice(tmp_path, "default", 5, 20)
    inv = R.read_openb_nodes(nodes)
    tw = B.trace_workload(T.read_openb_trace(pods))
    with pytest.raises(ValueError, match="no runs"):
        B.trace_batch([inv], [tw], [])
    with pytest.raises(ValueError, match="unknown policy 'Best'"):
        B.trace_batch([inv], [tw], [(0, 0, "Best", 1)])
    with pytest.raises(ValueError, match="cluster index 1"):
        B.trace_batch([inv], [tw], [(1, 0, "FGD", 1)])
    with pytest.raises(ValueError, match="trace index 2"):
        B.trace_batch([inv], [tw], [(0, 2, "FGD", 1)])
    with pytest.raises(ValueError, match="unknown backend 'numpy'"):
        B.trace_batch([inv], [tw], [(0, 0, "FGD", 1)], backend="numpy")
    bad = B.TraceWorkload(tw.pods, tw.arrival, np.where(np.isfinite(tw.departure),
                                                        tw.arrival - 1, np.inf))
    with pytest.raises(ValueError, match="arrive/depart"):
        B.trace_batch([inv], [bad], [(0, 0, "FGD", 1)])
    leaves = np.flatnonzero(np.isfinite(tw.departure))[:1]
    both = B.TraceWorkload(tw.pods, tw.arrival, tw.departure,
                           duration=np.where(np.isin(np.arange(20), leaves), 5.0, np.inf))
    with pytest.raises(ValueError, match=f"pod '{tw.pods.names[leaves[0]]}': give departure "
                                         "or duration, not both"):
        B.trace_batch([inv], [both], [(0, 0, "FGD", 1)])
    negative = B.TraceWorkload(tw.pods, tw.arrival, np.full(20, np.inf),
                               duration=np.full(20, -1.0))
    with pytest.raises(ValueError, match="traces.0.: duration: pod 'openb-pod-0000'"):
        B.trace_batch([inv], [negative], [(0, 0, "FGD", 1)])
    ranked = B.TraceWorkload(tw.pods, tw.arrival, tw.departure, rank=np.full(20, -1))
    with pytest.raises(ValueError, match="traces.0.: rank"):
        B.trace_batch([inv], [ranked], [(0, 0, "FGD", 1)])


def test_active_q_order_decides_who_binds():
    """One GPU, taken by a until 5; b (priority 0) and c (priority 10)
    wait for it: when a leaves, c binds first although b came first (FIFO
    would bind b)."""
    inv = build_inventory(["n0"], [8000], [16384], [1], ["T4"])
    pods = R.TracePods(["a", "b", "c"], np.full(3, 1000), np.full(3, 1024), np.ones(3, np.int64),
                       np.full(3, 1000), ["", "", ""])
    arrival = np.array([0.0, 1.0, 2.0])
    tw = B.TraceWorkload(pods, arrival, np.array([5.0, np.inf, np.inf]),
                         rank=np.array([1, 1, 0]))
    (res,) = B.trace_batch([inv], [tw], [(0, 0, "FGD", 3)], workers=1)
    assert res.node.tolist() == [0, -1, 0] and res.bind[2] == 5.0
    assert_simulation(res, inv, tw)
    fifo = B.trace_batch([inv], [B.TraceWorkload(pods, arrival, tw.departure)],
                         [(0, 0, "FGD", 3)], workers=1)[0]
    assert fifo.node.tolist() == [0, 0, -1]


def test_trace_workload_takes_durations_and_refuses_what_the_kernel_does_not():
    import pyarrow as pa

    from tensorsched.framework.simulation.trace import trace_from_table
    table = pa.table({"name": ["p", "q"], "arrival": [0.0, 1.0], "departure": [None, 4.0],
                      "duration": [3.0, None], "cpu": [1, 2], "memory": [1048576, 0]})
    tw = B.trace_workload(trace_from_table(table))
    assert tw.duration.tolist() == [3.0, np.inf]
    assert tw.departure.tolist() == [np.inf, 4.0]
    assert tw.pods.mem.tolist() == [1, 0]
    assert tw.rank is None
    table = table.append_column("priority", pa.array([5, None], pa.int32()))
    assert B.trace_workload(trace_from_table(table)).rank.tolist() == [0, 1]
    same = table.set_column(table.column_names.index("priority"), "priority",
                            pa.array([3, 3], pa.int32()))
    assert B.trace_workload(trace_from_table(same)).rank is None
    for column, values in (("namespace", ["x"]), ("scheduler_name", ["other"])):
        table = pa.table({"name": ["p"], "arrival": [0.0], "cpu": [1], "memory": [1048576],
                          column: values})
        with pytest.raises(ValueError, match=f"column '{column}'"):
            B.trace_workload(trace_from_table(table))
    for table in (pa.table({"name": ["p"], "arrival": [0.0], "memory": [0]}),
                  pa.table({"name": ["p", "q"], "arrival": [0.0, 0.0], "cpu": [1, None],
                            "memory": [0, 0]})):
        with pytest.raises(ValueError, match="column 'cpu': every pod's request"):
            B.trace_workload(trace_from_table(table))
    table = pa.table({"name": ["p", "q"], "arrival": [0.0, 0.0], "cpu": [1, 1],
                      "memory": [1048576, 1048577]})
    with pytest.raises(ValueError, match="row 1: memory: 1048577 bytes is not a whole number "
                                         "of MiB"):
        B.trace_workload(trace_from_table(table))
