"""Preemption with the host-side filters (PodTopologySpread, InterPodAffinity):
victim sets, PDB violations, Filter-call counts and the chosen node on every
backend against the scalar oracle; the state untouched by the victim search;
the domain counts right after the scheduler evicts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import cudasim_enabled
from support.preemption import (
    HOST,
    PREEMPTION_CONFIG,
    check_victims,
    preemption_node,
    preemption_pod,
)

from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.framework.state.domain_counts import DomainSums, PodCountIndex, pod_count_index

KEYS = st.sampled_from(["zone", HOST])
APPS = st.sampled_from(["a", "b"])


@st.composite
def clusters(draw, max_nodes=5, max_pods=5):
    objs = []
    for i in range(draw(st.integers(1, max_nodes))):
        zone = draw(st.sampled_from(["z1", "z2", "z3", "z1", "z2", None]))
        objs.append(preemption_node(f"n{i}", draw(st.sampled_from([400, 600, 1000])),
                          draw(st.integers(3, 8)), zone))
        for k in range(draw(st.integers(0, max_pods))):
            anti = (draw(KEYS), draw(APPS)) if draw(st.integers(0, 7)) == 0 else None
            objs.append(preemption_pod(f"p{i}-{k}", f"n{i}", prio=draw(st.sampled_from([-5, 0, 3, 7])),
                             cpu=draw(st.sampled_from([50, 100, 200])), app=draw(APPS),
                             start=draw(st.one_of(st.none(), st.integers(0, 5))),
                             port=draw(st.sampled_from([None, None, None, 8080])), anti=anti))
    for j in range(draw(st.integers(0, 2))):
        objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": f"pdb{j}", "namespace": "default"},
                     "spec": {"selector": {"matchLabels": {"app": draw(APPS)}}},
                     "status": {"disruptionsAllowed": draw(st.integers(0, 2))}})
    kind = draw(st.sampled_from(["spread", "spread", "anti", "both", "affinity"]))
    spread = ()
    if kind in ("spread", "both"):
        spread = tuple((key, draw(st.integers(1, 2)), draw(APPS))
                       for key in draw(st.lists(KEYS, min_size=1, max_size=2, unique=True)))
    anti = (draw(KEYS), draw(APPS)) if kind in ("anti", "both") else None
    aff = (draw(KEYS), draw(APPS)) if kind == "affinity" else None
    pre = preemption_pod("preemptor", prio=draw(st.sampled_from([3, 7, 10])),
               cpu=draw(st.sampled_from([50, 200, 400])), app=draw(APPS),
               port=draw(st.sampled_from([None, None, 8080])), spread=spread, anti=anti,
               aff=aff)
    return objs, pre


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(clusters())
def test_host_filter_victims_match_oracle_numpy_numba(case):
    objs, pre = case
    for backend in ("numpy", "numba"):
        check_victims(objs, pre, backend)


@pytest.mark.cudasim
@pytest.mark.skipif(not cudasim_enabled(), reason="needs NUMBA_ENABLE_CUDASIM=1")
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(clusters(max_nodes=3, max_pods=3))
def test_host_filter_victims_match_oracle_cuda(case):
    objs, pre = case
    check_victims(objs, pre, "cuda")


# ---------------------------------------------------------------------------
# The state after the victim search, and after the scheduler evicts
# ---------------------------------------------------------------------------

def _zone_cluster():
    """Three zones, one app=a pod each in z2 and z3 (high priority, nodes
    full), two low-priority app=a pods and one app=b pod on n0 in z1.  The
    preemptor (app=a, spread over zones with maxSkew 1, anti-affinity to
    app=b per zone) fits n0's resources already: only the host filters ask
    for victims, a0-1 (spread) and b0 (anti-affinity); a0-0 is reprieved.
    b0 carries an anti-affinity term of its own (an affinity-term group)."""
    objs = [preemption_node("n0", 1000, 10, "z1"), preemption_node("n1", 400, 10, "z2"),
            preemption_node("n2", 400, 10, "z3")]
    objs += [preemption_pod(f"a0-{k}", "n0", prio=0, cpu=200, start=k) for k in range(2)]
    objs += [preemption_pod("b0", "n0", prio=0, cpu=100, app="b", start=2, anti=("zone", "c")),
             preemption_pod("a1", "n1", prio=100, cpu=400), preemption_pod("a2", "n2", prio=100, cpu=400)]
    pre = preemption_pod("pre", prio=10, cpu=300, spread=(("zone", 1, "a"),), anti=("zone", "b"))
    return objs, pre


def _snapshot(state):
    cols = state.columns()
    idx = pod_count_index(state)
    return {
        "cols": {f: np.array(getattr(cols, f)) for f in cols._fields},
        "pods": [(k, e.node_row, e.request.tolist(), e.port_ids) for k, e in state.pods.items()],
        "on_node": [list(s) for s in state.pods_on_node[: state.n_rows]],
        "ports": [list(d.items()) for d in state.port_counts[: state.n_rows]],
        "counts": {k: a.copy() for k, (_p, a) in idx._entries.items()},
        "sums": {k: (ds.sums.copy(), ds.positive) for k, ds in idx._sums.items()},
        "groups": {kind: {t: a.copy() for t, a in g.items()} for kind, g in idx.groups.items()},
    }


def _same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, dict):
            _same(x, y)
        elif isinstance(x, np.ndarray):
            assert np.array_equal(x, y), k
        elif isinstance(x, tuple) and isinstance(x[0], np.ndarray):
            assert np.array_equal(x[0], y[0]) and x[1] == y[1], k
        else:
            assert x == y, k


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_victim_search_leaves_state_identical(backend):
    objs, pre = _zone_cluster()
    cluster = build_cluster(objs, PREEMPTION_CONFIG)
    pod = cluster.resolve(pre)
    fw = cluster.framework_for(pod, backend)
    state = cluster.state
    result = fw.run_cycle(state, pod, all_nodes=True)
    assert result.selected_row < 0
    before = _snapshot(state)
    pods_obj = state.pods
    out = fw.plugins_at("postFilter")[0].post_filter(CycleContext(state, pod, fw), result,
                                                 cluster.pod_table())
    assert out.nominated_node == "n0"
    assert out.victims == ["default/a0-1", "default/b0"]
    assert state.pods is pods_obj
    _same(before, _snapshot(state))


def _recount_matches(state):
    """The incremental pod counts, domain sums and affinity-term groups
    equal a from-scratch recount of the bound pods."""
    idx = pod_count_index(state)
    assert idx._entries and idx._sums          # the spread/affinity counts exist
    fresh = PodCountIndex(state)
    n = state.n_rows
    for key, (pred, arr) in idx._entries.items():
        assert np.array_equal(arr[:n], fresh.counts(key, pred)[:n]), key
    for (source, _tag), ds in idx._sums.items():
        if source[0] == "e":
            counts = fresh.counts(source[1], idx._entries[source[1]][0])
        else:
            counts = fresh.groups[source[1]].get(source[2], np.zeros(n, np.int64))
        want = DomainSums(ds.dom, counts, ds.sums.shape[0])
        assert np.array_equal(ds.sums, want.sums) and ds.positive == want.positive
    for kind, g in idx.groups.items():
        got = {t: a[:n] for t, a in g.items() if a[:n].any()}
        exp = {t: a[:n] for t, a in fresh.groups[kind].items() if a[:n].any()}
        assert got.keys() == exp.keys()
        for t in got:
            assert np.array_equal(got[t], exp[t])


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_scheduler_eviction_keeps_domain_counts(backend):
    objs, pre = _zone_cluster()
    objs.append(pre)
    cluster = build_cluster(objs, PREEMPTION_CONFIG)
    sched = Scheduler(cluster, backend, seed=3)
    bindings = sched.run(cluster.pending)
    (b,) = bindings
    assert (b.node, b.nominated_node) == ("n0", "n0")
    assert b.victims == ["default/a0-1", "default/b0"]
    state = cluster.state
    for v in b.victims:
        assert v not in state.pods
    _recount_matches(state)


# ---------------------------------------------------------------------------
# GpuShareFit: GPU shares are freed and re-taken exactly
# ---------------------------------------------------------------------------

GPU_CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler", "plugins": {
        "multiPoint": {"disabled": [{"name": "*"}]},
        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
        "bind": {"enabled": [{"name": "DefaultBinder"}]},
        "preFilter": {"enabled": [{"name": "NodeResourcesFit"}]},
        "filter": {"enabled": [{"name": "NodeResourcesFit"}, {"name": "GpuShareFit"}]},
        "reserve": {"enabled": [{"name": "GpuShareFit"}]},
        "postFilter": {"enabled": [{"name": "DefaultPreemption"}]}}}],
}


def _share(name, milli, prio, node=None, start=None):
    from tensorsched.generators.clusters import pod_dict
    p = pod_dict(name, cpu="1", memory="1Gi", priority=prio)
    p["metadata"]["annotations"] = {"alibabacloud.com/gpu-milli": str(milli)}
    if node:
        p["spec"]["nodeName"] = node
    if start is not None:
        p["status"] = {"startTime": f"2024-01-01T00:00:{start:02d}Z"}
    return p


def _gpu_snapshot(t):
    return ({k: (a.row, a.indices, a.zone, a.unplaced) for k, a in t.alloc.items()},
            t.left.copy(), t.zcpu_used.copy(), t.aff.copy())


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_gpu_share_preemption_frees_one_gpu(backend):
    from tensorsched.topology.gpu_table import GpuTable
    from tensorsched.generators.gpu_clusters import gpu_node
    # Eight 600m shares, one per GPU of the node: a 700m share fits only when
    # one of them goes; resources alone would reprieve them all.  Reprieved
    # in the reverse of their binding order, they must get their own GPUs back.
    objs = [gpu_node("dgx")] + [_share(f"low{k}", 600, 0, "dgx", start=7 - k)
                                for k in range(8)]
    cluster = build_cluster(objs, GPU_CONFIG)
    pod = cluster.resolve(_share("pre", 700, 10))
    fw = cluster.framework_for(pod, backend)
    state = cluster.state
    result = fw.run_cycle(state, pod, all_nodes=True)
    assert result.selected_row < 0
    t = GpuTable.of(state)
    before, pods_before = _gpu_snapshot(t), list(state.pods)
    out = fw.plugins_at("postFilter")[0].post_filter(CycleContext(state, pod, fw), result,
                                                 cluster.pod_table())
    assert (out.nominated_node, out.victims) == ("dgx", ["default/low0"])
    after = _gpu_snapshot(t)
    assert before[0] == after[0] and list(state.pods) == pods_before
    for a, b in zip(before[1:], after[1:]):
        assert np.array_equal(a, b)


# ---------------------------------------------------------------------------
# A user filter plugin that counts the pods on a node
# ---------------------------------------------------------------------------

def _few_pods_registry():
    from tensorsched.framework.plugins import in_tree_registry
    from tensorsched.framework.runtime.user_plugins import ArrayPlugin

    class FewPods(ArrayPlugin):
        """Passes nodes holding fewer than two pods."""
        name = "FewPods"

        def filter(self, ctx, rows):
            return np.array([len(ctx.state.pods_on_node[int(r)]) < 2 for r in rows], bool)

    reg = in_tree_registry()
    reg.register("FewPods", lambda args, handle: FewPods(), {"filter"})
    return reg


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_user_filter_is_rerun_while_pods_are_removed(backend):
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "default-scheduler", "plugins": {
               "multiPoint": {"disabled": [{"name": "*"}]},
               "queueSort": {"enabled": [{"name": "PrioritySort"}]},
               "bind": {"enabled": [{"name": "DefaultBinder"}]},
               "preFilter": {"enabled": [{"name": "NodeResourcesFit"}]},
               "filter": {"enabled": [{"name": "NodeResourcesFit"}, {"name": "FewPods"}]},
               "postFilter": {"enabled": [{"name": "DefaultPreemption"}]}}}]}
    objs = [preemption_node("n0", 1000, 10, "z1")]
    objs += [preemption_pod(f"p{k}", "n0", prio=0, cpu=50, start=k) for k in range(3)]
    cluster = build_cluster(objs, cfg, _few_pods_registry())
    pod = cluster.resolve(preemption_pod("pre", prio=10, cpu=50))
    fw = cluster.framework_for(pod, backend)
    result = fw.run_cycle(cluster.state, pod, all_nodes=True)
    out = fw.plugins_at("postFilter")[0].post_filter(CycleContext(cluster.state, pod, fw), result,
                                                 cluster.pod_table())
    # p0 (oldest) is reprieved: one pod left on the node; p1 and p2 go.
    assert (out.nominated_node, out.victims) == ("n0", ["default/p1", "default/p2"])
    assert out.filter_calls == 4
    assert sorted(cluster.state.pods) == [f"default/p{k}" for k in range(3)]


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_missing_spread_key_is_not_helpful(backend):
    # A node without the constraint's key fails PodTopologySpread with
    # UnschedulableAndUnresolvable: preemption does not try it (upstream's
    # nodesWherePreemptionMightHelp); the zoned node is tried and has no
    # lower-priority pod.
    objs = [preemption_node("n0", 1000, 10, None), preemption_node("n1", 100, 10, "z1"),
            preemption_pod("low", "n0", prio=0, cpu=100), preemption_pod("high", "n1", prio=50, cpu=100)]
    cluster = build_cluster(objs, PREEMPTION_CONFIG)
    pod = cluster.resolve(preemption_pod("pre", prio=10, cpu=100, spread=(("zone", 1, "a"),)))
    fw = cluster.framework_for(pod, backend)
    result = fw.run_cycle(cluster.state, pod, all_nodes=True)
    out = fw.plugins_at("postFilter")[0].post_filter(CycleContext(cluster.state, pod, fw), result,
                                                 cluster.pod_table())
    assert out.nominated_node is None
    assert out.message == ("preemption: 0/2 nodes are available: 1 No preemption victims found "
                           "for incoming pod, 1 Preemption is not helpful for scheduling.")
