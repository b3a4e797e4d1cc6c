"""The GPU plugins' per-node answers kept between cycles (``RowAnswers``):
after any sequence of pod adds and deletes, node changes and failed
cycles, GpuShareFit's filter, GpuTopologyScore and GpuShareScore give what
they give computed from scratch, on numpy and numba alike."""
import json
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorsched.framework.parsing.manifests import parse_node, parse_pod
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.runtime.status import Code
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.topology.gpu_table import GpuTable
from tensorsched.topology.node_topology import ANNO_NODE_TOPOLOGY, ANNO_POD_PLACEMENT
from tensorsched.topology.plugins import GpuShareFit, GpuShareScore, GpuTopologyScore
from tensorsched.topology import row_answers
from tensorsched.topology.row_answers import FULL_PASS_SHARE, RowAnswers

BACKENDS = ("numpy", "numba")
TYPICAL = [{"cpu": 2000, "gpuCount": 1, "gpuMilli": 250, "weight": 3},
           {"cpu": 8000, "gpuCount": 1, "gpuMilli": 1000, "weight": 2},
           {"cpu": 16000, "gpuCount": 2, "gpuMilli": 1000, "weight": 1}]
POLICY_ARGS = [{"policy": "FGD", "typicalPods": TYPICAL}, {"policy": "FGD"},
               {"policy": "DotProd"}, {"policy": "GpuClustering"}, {"policy": "GpuPacking"}]
# (cpu, memory, gpus, milli, placement): shares, whole GPUs, NVLink/NUMA asks, no GPU
SHAPES = [("2", "8Gi", 1, 250, ""), ("4", "16Gi", 1, 500, ""), ("1", "4Gi", 1, 100, ""),
          ("8", "32Gi", 1, 1000, ""), ("16", "64Gi", 2, 1000, "nvlink-island"),
          ("32", "128Gi", 4, 1000, "single-numa-node"), ("4", "8Gi", 0, 0, ""),
          ("64", "256Gi", 8, 1000, "")]


def gpu_node(name, gpus, model="A100", single=False, cpu="128"):
    n = node_dict(name, cpu=cpu, memory="1Ti", pods="110", extra={"nvidia.com/gpu": str(gpus)},
                  labels={"nvidia.com/gpu.product": model})
    if gpus >= 2:
        numa = 2
        topo = {"islands": [g * 2 // gpus for g in range(gpus)],
                "numa": [g * numa // gpus for g in range(gpus)],
                "numaCpu": ["64"] * numa, "numaMemory": ["512Gi"] * numa}
        if single:
            topo["singleNumaNodePolicy"] = True
        n["metadata"]["annotations"] = {ANNO_NODE_TOPOLOGY: json.dumps(topo)}
    return n


def gpu_pod(name, shape, guaranteed=False):
    cpu, mem, num, milli, place = shape
    if num and milli < 1000:
        p = pod_dict(name, cpu=cpu, memory=mem)
        p["metadata"]["annotations"] = {"alibabacloud.com/gpu-milli": str(milli),
                                        "alibabacloud.com/gpu-count": "1"}
    else:
        p = pod_dict(name, cpu=cpu, memory=mem,
                     extra={"nvidia.com/gpu": str(num)} if num else None)
    if place:
        p["metadata"].setdefault("annotations", {})[ANNO_POD_PLACEMENT] = place
    if guaranteed:
        for c in p["spec"]["containers"]:
            c["resources"]["limits"] = dict(c["resources"]["requests"])
    return p


def profile(args):
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler", "plugins": {
                "filter": {"enabled": [{"name": "GpuShareFit"}]},
                "reserve": {"enabled": [{"name": "GpuShareFit"}]},
                "preScore": {"enabled": [{"name": "GpuTopologyScore"}]},
                "score": {"enabled": [{"name": "GpuShareScore"}, {"name": "GpuTopologyScore"}]}},
                "pluginConfig": [{"name": "GpuShareScore", "args": args}]}]}


NODES = st.tuples(st.sampled_from([0, 1, 2, 4, 8]), st.sampled_from(["A100", "T4"]),
                  st.booleans(), st.sampled_from(["16", "128"]))
ADD = st.tuples(st.just("add"), st.integers(0, len(SHAPES) - 1), st.integers(0, 23), st.booleans())
EVENTS = st.lists(st.one_of(
    ADD, ADD, ADD,
    st.tuples(st.just("delete"), st.integers(0, 50)),
    st.tuples(st.just("node"), st.integers(0, 23), NODES),
    st.tuples(st.just("cycle"), st.integers(0, len(SHAPES) - 1), st.booleans()),
    st.tuples(st.just("ask"), st.integers(0, len(SHAPES) - 1), st.booleans())),
    min_size=1, max_size=30)


def _answers(plugins, state, rec):
    """(filter, GpuShareScore, GpuTopologyScore) [n] of the pod ``rec``."""
    fit, score, topo = plugins
    ctx = CycleContext(state, rec, None)
    rows = np.arange(state.n_rows, dtype=np.int64)
    ok = fit.filter(ctx, rows)
    s = score.score(ctx, rows)
    t = topo.score(ctx, rows) if topo.pre_score(ctx).code != Code.SKIP else None
    return ok.copy(), s.copy(), None if t is None else t.copy()


def _from_scratch(args, backend, state, rec, learned):
    """The answers of fresh plugins with the table's kept answers set aside
    (and the typical pods ``learned`` so far, when FGD learns them)."""
    t = GpuTable.of(state)
    kept = t._answers
    t._answers = {}
    try:
        handle = types.SimpleNamespace(backend_name=backend)
        fresh = (GpuShareFit(None, handle), GpuShareScore(args, handle),
                 GpuTopologyScore(None, handle))
        fresh[1]._seen, fresh[1]._seen_keys = dict(learned._seen), set(learned._seen_keys)
        fresh[1]._typical_spec = learned._typical_spec
        return _answers(fresh, state, rec)
    finally:
        t._answers = kept


def _same(a, b):
    for x, y in zip(a, b):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_array_equal(x, y)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=st.lists(NODES, min_size=1, max_size=6), events=EVENTS,
       policy=st.integers(0, len(POLICY_ARGS) - 1))
def test_kept_answers_equal_from_scratch_after_any_events(nodes, events, policy):
    args = POLICY_ARGS[policy]
    got_by_backend = []
    for backend, share in zip(BACKENDS, (row_answers.FULL_PASS_SHARE, 1.0)):
        # numba: changed rows always gathered, however many (numpy: the default)
        row_answers.FULL_PASS_SHARE = share
        try:
            got_by_backend.append(_run_events(nodes, events, args, backend))
        finally:
            row_answers.FULL_PASS_SHARE = FULL_PASS_SHARE
    for a, b in zip(*got_by_backend):
        _same(a, b)


def _run_events(nodes, events, args, backend):
    """Play ``events`` on a cluster of ``nodes``; at each ask, the kept
    answers checked against fresh ones; returns the answers asked."""
    # each kind of node 4 times: a changed row is one of many, as the
    # kept answers expect (a few rows recomputed, not all)
    kinds = [nodes[i % len(nodes)] for i in range(4 * len(nodes))]
    node_objs = [gpu_node(f"n{i}", c, m, s, cpu) for i, (c, m, s, cpu) in enumerate(kinds)]
    cl = build_cluster(node_objs, profile(args))
    state = cl.state
    handle = types.SimpleNamespace(backend_name=backend)
    kept = (GpuShareFit(None, handle), GpuShareScore(args, handle),
            GpuTopologyScore(None, handle))
    fw = cl.framework_for(parse_pod(gpu_pod("probe", SHAPES[0])), backend)
    bound, got, k = [], [], 0
    for ev in events:
        k += 1
        if ev[0] == "add" and ev[2] < len(kinds):
            rec = parse_pod(gpu_pod(f"p{k}", SHAPES[ev[1]], ev[3]))
            state.add_pod(rec, f"n{ev[2]}")
            bound.append(rec.key)
        elif ev[0] == "delete" and bound:
            state.remove_pod(bound.pop(ev[1] % len(bound)))
        elif ev[0] == "node" and ev[1] < len(kinds):
            c, m, s, cpu = ev[2]
            state.update_node(parse_node(gpu_node(f"n{ev[1]}", c, m, s, cpu)))
        elif ev[0] == "cycle":
            # a whole cycle (which may fail: no node fits) between queries
            rec = parse_pod(gpu_pod(f"c{k}", SHAPES[ev[1]], ev[2]))
            fw.run_cycle(state, rec, seed=0)
        elif ev[0] == "ask":
            rec = parse_pod(gpu_pod(f"q{k}", SHAPES[ev[1]], ev[2]))
            cached = _answers(kept, state, rec)
            _same(cached, _from_scratch(args, backend, state, rec, kept[1]))
            got.append(cached)
    GpuTable.of(state).check()
    return got


class _Table:
    def __init__(self, n):
        self.cap = n
        self.ver = np.arange(n, dtype=np.int64)
        self.version = n - 1            # the counter the row versions come from
        self.log = list(range(n))       # row bumped to version i: log[i]

    def bump(self, row):
        self.version += 1
        self.ver[row] = self.version
        self.log.append(row)

    def rows_changed_since(self, version):
        return np.array(self.log[version + 1:], np.int64)


def test_row_answers_recompute_only_changed_rows():
    t = _Table(100)
    seen = []

    def compute(rows):
        seen.append(None if rows is None else rows.tolist())
        idx = np.arange(100) if rows is None else rows
        return (t.ver[idx] * 10,)

    ra = RowAnswers(1)
    np.testing.assert_array_equal(ra.get(t, 100, "s", compute)[0], t.ver * 10)
    assert seen == [None]                       # first use: one pass over all rows
    t.bump(70)
    t.bump(3)
    t.bump(70)
    np.testing.assert_array_equal(ra.get(t, 100, "s", compute)[0], t.ver * 10)
    assert seen[-1] == [3, 70]                  # then only the rows that changed
    ra.get(t, 100, "s", compute)
    assert len(seen) == 2                       # nothing changed: nothing computed
    ra.get(t, 100, "s", compute, token=7)       # another token: afresh
    assert seen[-1] is None
    other = _Table(100)
    ra.get(other, 100, "s", compute)             # another table: afresh
    assert seen[-1] is None and len(seen) == 4


@pytest.mark.parametrize("backend", BACKENDS)
def test_bench_gpu_placements_unchanged(backend):
    """The workload's placements as recorded before the answers were kept
    (60 nodes, 300 pods, seed 0; re-recorded under the seeded tie rank,
    numpy and numba, batching on and off alike)."""
    from tensorsched.bench.workloads import run_workload
    rec = run_workload("gpu", 60, 300, backend)
    assert rec["scheduled"] > 0
    assert rec["placements_sha256"] == PLACEMENTS_60x300
    assert rec["gpu_placements_sha256"] == GPU_PLACEMENTS_60x300


PLACEMENTS_60x300 = "0d56d0db8429ca5f5d97d85dfa507d3065ae6f3f7dc4ad4f74bc26c611f8ff8e"
GPU_PLACEMENTS_60x300 = "8704f72421a0565c60bb5f71ee4c67045c3a1f171024047ff365b4d14846a7bb"


@settings(max_examples=40, deadline=None)
@given(ops=st.lists(st.one_of(st.tuples(st.just("bump"), st.integers(0, 7)),
                              st.tuples(st.just("block"), st.lists(st.integers(0, 7), max_size=12)),
                              st.tuples(st.just("ask"), st.integers(0, 60))),
                    min_size=1, max_size=60),
       chunk=st.sampled_from([2, 5, 4096]))
def test_change_log_names_exactly_the_rows_bumped_since(ops, chunk):
    """``rows_changed_since(v)``: the rows whose version moved after table
    version ``v`` (single bumps and a compiled block's rows alike), or None
    once the log no longer reaches back (a short log starts over often)."""
    import tensorsched.topology.gpu_table as gt
    saved = gt.LOG_CHUNK
    gt.LOG_CHUNK = chunk
    try:
        cl = build_cluster([gpu_node(f"n{i}", 2) for i in range(8)], profile(POLICY_ARGS[2]))
        t = GpuTable.of(cl.state)
    finally:
        gt.LOG_CHUNK = saved
    history = [t.ver.copy()]            # row versions after each table version
    start = t.version
    for op in ops:
        if op[0] == "bump":
            t._bump(op[1])
            history.append(t.ver.copy())
        elif op[0] == "block":
            rows = np.array(op[1], np.int64)
            for r in rows.tolist():        # what the block kernel does to the versions
                t.version += 1
                t.ver[r] = t.version
                history.append(t.ver.copy())
            t.log_placed(rows)
        else:
            v = start + op[1] % len(history)
            got = t.rows_changed_since(v)
            want = np.flatnonzero(t.ver != history[v - start])
            if got is not None:
                np.testing.assert_array_equal(np.unique(got), want)
            else:
                assert chunk < 4096         # only a short log forgets
    assert t.rows_changed_since(t.version).shape[0] == 0
