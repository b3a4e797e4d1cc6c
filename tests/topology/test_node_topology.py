"""GPU topology: NRT/annotation parsing, subset enumeration (numba == numpy ==
brute force), and placement safety across random arrival sequences."""
import itertools
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import cuda_available

from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.kernels.gpu import subsets as KT
from tensorsched.topology.gpu import MILLI
from tensorsched.topology.gpu_table import GpuTable
from tensorsched.topology.node_topology import (
    ANNO_NODE_TOPOLOGY,
    ANNO_POD_PLACEMENT,
    from_annotation,
    from_nrt,
    pod_constraint,
)

NRT = {
    "apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
    "metadata": {"name": "dgx-0"},
    "topologyPolicies": ["SingleNUMANodePodLevel"],
    "zones": [
        {"name": "node-0", "type": "Node",
         "costs": [{"name": "node-0", "value": 10}, {"name": "node-1", "value": 21}],
         "resources": [{"name": "cpu", "capacity": "64", "allocatable": "62", "available": "62"},
                       {"name": "memory", "capacity": "512Gi", "allocatable": "500Gi"},
                       {"name": "nvidia.com/gpu", "capacity": "4", "allocatable": "4"}]},
        {"name": "node-1", "type": "Node",
         "costs": [{"name": "node-0", "value": 21}, {"name": "node-1", "value": 10}],
         "resources": [{"name": "cpu", "capacity": "64", "allocatable": "64"},
                       {"name": "memory", "capacity": "512Gi", "allocatable": "512Gi"},
                       {"name": "nvidia.com/gpu", "capacity": "4", "allocatable": "4"}]},
        {"name": "nvlink-0", "type": "NVLinkIsland", "parent": "node-0",
         "attributes": [{"name": "gpu-indices", "value": "0,1"}]},
        {"name": "nvlink-1", "type": "NVLinkIsland", "parent": "node-0",
         "attributes": [{"name": "gpu-indices", "value": "2,3"}]},
        {"name": "nvlink-2", "type": "NVLinkIsland", "parent": "node-1",
         "resources": [{"name": "nvidia.com/gpu", "capacity": "4"}]},
    ]}


def test_nrt_zones_to_columns():
    name, t = from_nrt(NRT)
    assert name == "dgx-0"
    assert t.numa == [0, 0, 0, 0, 1, 1, 1, 1]
    assert t.numa_cpu == [62000, 64000]
    assert t.numa_mem == [500 * 2**30, 512 * 2**30]
    assert t.distances == [[10, 21], [21, 10]]
    assert t.single_numa_policy


def test_nrt_island_counts_continue_after_explicit_indices():
    _, t = from_nrt(NRT)
    # the count-based island starts after the highest index named so far (3)
    assert t.islands == [0, 0, 1, 1, 2, 2, 2, 2]


def test_compact_annotation():
    t = from_annotation(json.dumps({"islands": [0, 0, 1, 1], "numa": [0, 0, 0, 0],
                                    "numaCpu": ["32"], "numaMemory": ["64Gi"]}))
    assert t.islands == [0, 0, 1, 1] and t.numa == [0, 0, 0, 0]
    assert t.numa_cpu == [32000] and t.numa_mem == [64 * 2**30]
    zones = from_annotation(json.dumps(NRT["zones"]))
    assert zones.numa == [0, 0, 0, 0, 1, 1, 1, 1]


def test_pod_constraint_annotation_and_qos():
    p = pod_dict("p", cpu="1", memory="1Gi")
    p["metadata"]["annotations"] = {ANNO_POD_PLACEMENT: "nvlink-island,single-numa-node"}
    assert pod_constraint(p) == (3, False)
    g = pod_dict("g", cpu="1", memory="1Gi")
    g["spec"]["containers"][0]["resources"]["limits"] = {"cpu": "1", "memory": "1Gi"}
    assert pod_constraint(g) == (0, True)
    bad = pod_dict("b")
    bad["metadata"]["annotations"] = {ANNO_POD_PLACEMENT: "rack"}
    with pytest.raises(ValueError):
        pod_constraint(bad)


def test_link_levels():
    lv = KT.link_levels(np.array([0, 0, 1, 1, -1]), np.array([0, 0, 0, 1, -1]))
    assert lv[0, 1] == 1 and lv[0, 2] == 2 and lv[0, 3] == 3 and lv[0, 4] == 3 and lv[2, 2] == 0


# ------------------------------------------------------------ enumeration

TOPOS = [
    (8, [0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1, 1, 1]),
    (8, [0, 0, 1, 1, 2, 2, 3, 3], [0, 0, 0, 0, 1, 1, 1, 1]),
    (4, [-1] * 4, [-1] * 4),
    (16, [g // 8 for g in range(16)], [g // 4 for g in range(16)]),
    (2, [0, 0], [0, 0]),
]


def brute(count, isl, nm, k, free, cons):
    lv = KT.link_levels(np.array(isl), np.array(nm))
    best = None
    for c in itertools.combinations(range(count), k):
        if any(not (free >> g) & 1 for g in c):
            continue
        if k > 1 and cons & 1 and (len({isl[g] for g in c}) != 1 or isl[c[0]] < 0):
            continue
        if cons & 2 and (len({nm[g] for g in c}) != 1 or nm[c[0]] < 0):
            continue
        pairs = [lv[a, b] for a, b in itertools.combinations(c, 2)]
        cost = (max(pairs) * 1000 + sum(pairs)) if pairs else 0
        if best is None or cost < best[0]:
            best = (cost, sum(1 << g for g in c))
    return best


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 8), data=st.data())
def test_best_subsets_numba_numpy_brute(k, data):
    tables = [KT.topology_table(c, i, n, k) for c, i, n in TOPOS]
    sub, cost, iok, nok = KT.stack_tables(tables)
    n = data.draw(st.integers(1, 30))
    topo = np.array(data.draw(st.lists(st.integers(-1, len(TOPOS) - 1), min_size=n, max_size=n)),
                    np.int64)
    free = np.array([data.draw(st.integers(0, (1 << TOPOS[t][0]) - 1)) if t >= 0 else 0
                     for t in topo], np.int64)
    cons = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.int64)
    c1, i1 = np.empty(n, np.int64), np.empty(n, np.int64)
    c2, i2 = np.empty(n, np.int64), np.empty(n, np.int64)
    KT.best_subsets(topo, free, cons, sub, cost, iok, nok, c1, i1)
    KT.best_subsets_np(topo, free, cons, sub, cost, iok, nok, c2, i2, chunk_cells=64)
    assert (c1 == c2).all() and (i1 == i2).all()
    for j in range(n):
        if topo[j] < 0:
            assert c1[j] == -1
            continue
        cnt, isl, nm = TOPOS[topo[j]]
        b = brute(cnt, isl, nm, k, int(free[j]), int(cons[j]))
        if b is None:
            assert c1[j] == -1
        else:
            assert c1[j] == b[0] and sub[topo[j], i1[j]] == b[1]


def test_free_masks_and_zone_allowed_twins():
    rng = np.random.default_rng(1)
    n, g = 40, 8
    count = rng.choice([0, 4, 8], n).astype(np.int64)
    left = rng.choice([0, 300, 700, 1000], (n, g)).astype(np.int64)
    numa = np.tile(np.array([0, 0, 0, 0, 1, 1, 1, 1], np.int64), (n, 1))
    zc = rng.integers(0, 10000, (n, 8)).astype(np.int64)
    zm = rng.integers(0, 10000, (n, 8)).astype(np.int64)
    allowed = rng.integers(-1, 255, n).astype(np.int64)
    for milli in (100, 700, 1000):
        assert (KT.free_masks(count, left, milli, allowed)
                == KT.free_masks_np(count, left, milli, allowed)).all()
    assert (KT.zone_allowed(count, numa, zc, zm, 5000, 5000)
            == KT.zone_allowed_np(count, numa, zc, zm, 5000, 5000)).all()


# --------------------------------------------- random arrival sequences

def _config(policy):
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler", "plugins": {
                "filter": {"enabled": [{"name": "GpuShareFit"}]},
                "reserve": {"enabled": [{"name": "GpuShareFit"}]},
                "score": {"enabled": [{"name": "GpuShareScore"}, {"name": "GpuTopologyScore"}]}},
                "pluginConfig": [{"name": "GpuShareScore", "args": {"policy": policy}}]}]}


NODE_TOPOS = [
    {"islands": [0, 0, 0, 0, 1, 1, 1, 1], "numa": [0, 0, 0, 0, 1, 1, 1, 1],
     "numaCpu": ["16", "16"], "numaMemory": ["64Gi", "64Gi"]},
    {"islands": [0, 0, 1, 1, 2, 2, 3, 3], "numa": [0, 0, 0, 0, 1, 1, 1, 1]},
    {"islands": [0, 0, 1, 1], "numa": [0, 0, 1, 1], "singleNumaNodePolicy": True},
    None,
]


@st.composite
def gpu_world(draw, max_nodes=5, max_ops=30):
    n = draw(st.integers(1, max_nodes))
    nodes = []
    for i in range(n):
        tp = draw(st.sampled_from(range(len(NODE_TOPOS))))
        gpus = 4 if tp == 2 else draw(st.sampled_from([4, 8])) if tp == 3 else 8
        nd = node_dict(f"n{i}", cpu="32", memory="128Gi", extra={"nvidia.com/gpu": str(gpus)},
                       labels={"nvidia.com/gpu.product": draw(st.sampled_from(["A100", "V100"]))})
        if NODE_TOPOS[tp] is not None:
            nd["metadata"]["annotations"] = {ANNO_NODE_TOPOLOGY: json.dumps(NODE_TOPOS[tp])}
        nodes.append(nd)
    ops = []
    for j in range(draw(st.integers(1, max_ops))):
        if ops and draw(st.integers(0, 5)) == 0:
            ops.append(("delete", draw(st.integers(0, len(ops) - 1))))
            continue
        kind = draw(st.sampled_from(["share", "whole", "cpu"]))
        cpu = draw(st.sampled_from(["1", "4", "12"]))
        p = pod_dict(f"p{j}", cpu=cpu, memory="4Gi", created=j)
        annos = {}
        if kind == "share":
            annos["alibabacloud.com/gpu-milli"] = str(draw(st.sampled_from([200, 500, 800])))
        elif kind == "whole":
            p["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = str(
                draw(st.sampled_from([1, 2, 3, 4, 8])))
        place = draw(st.sampled_from(["", "", "nvlink-island", "single-numa-node",
                                      "nvlink-island,single-numa-node"]))
        if place:
            annos[ANNO_POD_PLACEMENT] = place
        if draw(st.booleans()):
            p["spec"]["containers"][0]["resources"]["limits"] = {"cpu": cpu, "memory": "4Gi"}
        if draw(st.integers(0, 4)) == 0:
            annos["alibabacloud.com/gpu-card-model"] = "V100"
        p["metadata"]["annotations"] = annos
        ops.append(("add", p))
    return nodes, ops


def _run(nodes, ops, backend, policy):
    from tensorsched.framework.parsing.manifests import parse_pod
    cluster = build_cluster(nodes, _config(policy))
    sched = Scheduler(cluster, backend, 7)
    state = cluster.state
    placed = []
    for kind, x in ops:
        if kind == "delete":
            key = placed[x % len(placed)] if placed else None
            if key is not None and key in state.pods:
                state.remove_pod(key)
                t = GpuTable.of(state)
                t.check()
                _assert_safe(t)          # a deletion frees exactly the pod's GPUs
            continue
        rec = cluster.resolve(parse_pod(x))
        b = sched.schedule_one(rec)
        t = GpuTable.of(state)
        if b.node is not None:
            placed.append(b.pod)
        t.check()
        _assert_safe(t)
    t = GpuTable.of(state)
    return t, [(k, a.row, a.indices, a.zone) for k, a in sorted(t.alloc.items())]


def _assert_safe(t: GpuTable):
    state = t.state
    used = {}
    for key, a in t.alloc.items():
        assert key in state.pods and state.pods[key].node_row == a.row
        info = t.pod_info(state.pods[key].record)
        cons = t.constraint_at(info, a.row)
        assert not a.unplaced
        if info.has_gpu:
            assert len(a.indices) == info.ask.num
        if cons & 1 and len(a.indices) > 1:
            isl = {int(t.island[a.row, g]) for g in a.indices}
            assert len(isl) == 1 and -1 not in isl, (key, a)
        if cons & 2:
            if a.indices:
                nm = {int(t.numa[a.row, g]) for g in a.indices}
                assert len(nm) == 1 and -1 not in nm, (key, a)
                assert a.zone == nm.pop()
            assert a.zone >= 0
        for g in a.indices:
            used[(a.row, g)] = used.get((a.row, g), 0) + a.milli
    assert all(v <= MILLI for v in used.values())
    for (row, g), v in used.items():
        assert g < t.count[row]
        assert t.left[row, g] == MILLI - v
    assert (t.zcpu_used <= t.zcpu).all() and (t.zmem_used <= t.zmem).all()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=gpu_world(), policy=st.sampled_from(["FGD", "BestFit", "GpuPacking", "Random",
                                                  "DotProd", "GpuClustering"]))
def test_random_arrivals_never_violate_topology_or_overallocate(world, policy):
    nodes, ops = world
    t1, a1 = _run(nodes, ops, "numba", policy)
    _assert_safe(t1)
    t2, a2 = _run(nodes, ops, "numpy", policy)
    _assert_safe(t2)
    assert a1 == a2


@pytest.mark.cudasim
@pytest.mark.skipif(not cuda_available(), reason="needs a GPU or NUMBA_ENABLE_CUDASIM=1")
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=gpu_world(max_nodes=3, max_ops=8),
       policy=st.sampled_from(["FGD", "BestFit", "GpuPacking", "Random", "DotProd",
                               "GpuClustering"]))
def test_random_arrivals_cuda_safe_and_same_as_numpy(world, policy):
    nodes, ops = world
    t1, a1 = _run(nodes, ops, "cuda", policy)
    _assert_safe(t1)
    _, a2 = _run(nodes, ops, "numpy", policy)
    assert a1 == a2
