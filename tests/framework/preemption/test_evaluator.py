"""Preemption: hypothesis parity of the victim kernel and the candidate
choice across numpy / numba / cuda and the scalar oracle, priorities, PDB
disruptionsAllowed, and the scheduler loop (victims really gone, preemptor
bound on its nominated node, nothing double-counted)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference.oracle import (
    oracle_pick_one_node,
    oracle_select_victims_on_node,
    plugin_args,
    split_objects,
)
from support.backends import needs_cuda

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import parse_objects
from tensorsched.framework.parsing.pdb import disruptions_allowed
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain
from tensorsched.framework.scheduler.scheduler import Scheduler

FILTERS = ["NodePorts", "NodeResourcesFit"]
CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler", "plugins": {
        "multiPoint": {"disabled": [{"name": "*"}]},
        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
        "bind": {"enabled": [{"name": "DefaultBinder"}]},
        "preFilter": {"enabled": [{"name": f} for f in FILTERS]},
        "filter": {"enabled": [{"name": f} for f in FILTERS]},
        "postFilter": {"enabled": [{"name": "DefaultPreemption"}]}}}],
}


def _pod(name, node=None, prio=0, cpu=100, labels=None, start=None, port=None, ns="default"):
    c = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": f"{cpu}m",
                                                                  "memory": "1Mi"}}}
    if port:
        c["ports"] = [{"containerPort": port, "hostPort": port}]
    spec = {"containers": [c], "priority": prio}
    if node:
        spec["nodeName"] = node
    obj = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": ns, "labels": labels or {}}, "spec": spec}
    if start is not None:
        obj["status"] = {"startTime": f"2024-01-01T00:00:{start:02d}Z"}
    return obj


def _node(name, cpu, pods=10):
    alloc = {"cpu": f"{cpu}m", "memory": "1Gi", "pods": str(pods)}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"capacity": dict(alloc), "allocatable": alloc}}


@st.composite
def clusters(draw, max_nodes=5, max_pods=6):
    n = draw(st.integers(1, max_nodes))
    objs = []
    for i in range(n):
        objs.append(_node(f"n{i}", draw(st.sampled_from([400, 600, 1000])),
                          draw(st.integers(2, 8))))
        for k in range(draw(st.integers(0, max_pods))):
            objs.append(_pod(f"p{i}-{k}", f"n{i}", prio=draw(st.sampled_from([-5, 0, 0, 3, 7])),
                             cpu=draw(st.sampled_from([50, 100, 200, 300])),
                             labels={"app": draw(st.sampled_from(["a", "b"]))},
                             start=draw(st.one_of(st.none(), st.integers(0, 5))),
                             port=draw(st.sampled_from([None, None, 8080]))))
    for j in range(draw(st.integers(0, 2))):
        pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": f"pdb{j}", "namespace": "default"},
               "spec": {"selector": {"matchLabels": {"app": draw(st.sampled_from(["a", "b"]))}}},
               "status": {"disruptionsAllowed": draw(st.integers(0, 2))}}
        if draw(st.booleans()):
            pdb["status"]["disruptedPods"] = {"p0-0": "2024-01-01T00:00:00Z"}
        objs.append(pdb)
    pre = _pod("preemptor", prio=draw(st.sampled_from([0, 3, 7, 10])),
               cpu=draw(st.sampled_from([200, 400, 600])),
               port=draw(st.sampled_from([None, 8080])))
    return objs, pre


def _oracle(objs, pre):
    nodes, bound = split_objects(objs)
    pdbs = [o for o in objs if o["kind"] == "PodDisruptionBudget"]
    args = {f: plugin_args(f, None) for f in FILTERS}
    return {n["metadata"]["name"]: oracle_select_victims_on_node(
        pre, n, bound[n["metadata"]["name"]], FILTERS, args, pdbs, nodes) for n in nodes}


def _ours(objs, pre, backend):
    cluster = build_cluster(objs, CONFIG)
    pod = cluster.resolve(pre)
    fw = cluster.framework_for(pod, backend)
    result = fw.run_cycle(cluster.state, pod, all_nodes=True)
    plugin = fw.plugins_at("postFilter")[0]
    ctx = CycleContext(cluster.state, pod, fw)
    rows = cluster.state.valid_rows()
    n = rows.shape[0]
    dry = plugin.post_filter(ctx, result, cluster.pod_table(), offset=0, num_cands=n,
                             dry_run_all=True, potential_rows=rows)
    full = plugin.post_filter(ctx, result, cluster.pod_table(), offset=0, num_cands=n,
                              potential_rows=rows)
    return dry, full


def _check(objs, pre, backend):
    want = _oracle(objs, pre)
    dry, full = _ours(objs, pre, backend)
    got = {c.node: (c.victims, c.num_pdb_violations) for c in dry.candidates}
    exp = {n: (r["victims"], r["num_pdb_violations"]) for n, r in want.items()
           if r["status"] == "ok"}
    assert got == exp
    assert dry.filter_calls == sum(r["filter_calls"] for r in want.values())
    # Candidate order as upstream: non-violating first, then violating (scan order).
    order = [c.node for c in dry.candidates]
    oracle_cands = [(n, want[n]) for n in order]
    assert full.nominated_node == oracle_pick_one_node(oracle_cands)
    if full.nominated_node is not None:
        assert full.victims == want[full.nominated_node]["victims"]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(clusters())
def test_victims_match_oracle_numpy_numba(case):
    objs, pre = case
    for backend in ("numpy", "numba"):
        _check(objs, pre, backend)


@pytest.mark.cudasim
@needs_cuda
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(clusters(max_nodes=3, max_pods=3))
def test_victims_match_oracle_cuda(case):
    objs, pre = case
    _check(objs, pre, "cuda")


def test_priority_resolution_and_unknown_class():
    objs = [_node("n0", 1000),
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
             "metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"},
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
             "metadata": {"name": "dflt"}, "value": 7, "globalDefault": True}]
    cluster = build_cluster(objs)
    a = _pod("a")
    del a["spec"]["priority"]
    a["spec"]["priorityClassName"] = "high"
    b = _pod("b")
    del b["spec"]["priority"]
    c = _pod("c", prio=5)
    c["spec"]["priorityClassName"] = "high"
    ra, rb, rc = cluster.resolve(a), cluster.resolve(b), cluster.resolve(c)
    assert (ra.priority, ra.preemption_policy) == (1000, "Never")
    assert (rb.priority, rb.preemption_policy) == (7, "PreemptLowerPriority")
    assert rc.priority == 5
    bad = _pod("d")
    del bad["spec"]["priority"]
    bad["spec"]["priorityClassName"] = "nope"
    with pytest.raises(ManifestError) as e:
        cluster.resolve(bad)
    assert "Pod default/d" in str(e.value) and "spec.priorityClassName" in str(e.value)
    cluster2 = build_cluster([_node("n0", 1000)])
    assert cluster2.resolve(b).priority == 0


def test_pdb_disruptions_allowed_computed():
    pods = [_pod(f"p{i}", "n0", labels={"app": "a"}) for i in range(5)]
    objs = [_node("n0", 1000)] + pods
    base = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "x", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "a"}}}}
    recs = parse_objects(objs).pods

    def allowed(spec_extra, status=None):
        o = {**base, "spec": {**base["spec"], **spec_extra}}
        if status is not None:
            o["status"] = status
        return disruptions_allowed(parse_objects([o]).pdbs[0], recs)
    assert allowed({"minAvailable": 3}) == 2
    assert allowed({"minAvailable": "50%"}) == 2          # ceil(2.5) = 3 healthy needed
    assert allowed({"maxUnavailable": 1}) == 1
    assert allowed({"maxUnavailable": "30%"}) == 2        # ceil(1.5) = 2
    assert allowed({"minAvailable": 9}) == 0
    assert allowed({}) == 0
    assert allowed({"minAvailable": 1}, {"disruptionsAllowed": 0}) == 0


def test_explain_preemption_field():
    objs = [_node("n0", 500), _pod("low", "n0", prio=0, cpu=400)]
    r = explain(objs, _pod("high", prio=10, cpu=300), CONFIG)
    assert r["selected"] is None
    assert r["preemption"] == {"nominated_node": "n0", "victims": ["default/low"]}
    r = explain(objs, _pod("small", prio=10, cpu=50), CONFIG)
    assert r["selected"] == "n0" and r["preemption"] is None
    never = _pod("never", prio=10, cpu=300)
    never["spec"]["preemptionPolicy"] = "Never"
    assert explain(objs, never, CONFIG)["preemption"] == {"nominated_node": None, "victims": []}


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_scheduler_preempts_and_binds(backend):
    objs = [_node(f"n{i}", 1000) for i in range(3)]
    objs += [_pod(f"low{i}-{k}", f"n{i}", prio=0, cpu=300, start=k) for i in range(3)
             for k in range(3)]
    objs += [_pod(f"high{j}", prio=100, cpu=500) for j in range(2)]
    cluster = build_cluster(objs, CONFIG)
    before = cluster.state.requested.copy()
    sched = Scheduler(cluster, backend, seed=1)
    bindings = sched.run(cluster.pending)
    assert all(b.node is not None for b in bindings)
    st = cluster.state
    for b in bindings:
        assert b.node == b.nominated_node and b.victims
        for v in b.victims:
            assert v not in st.pods                       # victims really gone
        assert st.pods[b.pod].node_row == st.node_rows[b.node]
    # Requested == sum over the pods still bound (nothing double-counted or lost).
    req = np.zeros_like(st.requested)
    for e in st.pods.values():
        req[e.node_row, : e.request.shape[0]] += e.request
    assert np.array_equal(req, st.requested)
    assert not np.array_equal(before, st.requested)
    assert sched.preemptions == 2 and len(sched.evictions) == sum(len(b.victims) for b in bindings)
