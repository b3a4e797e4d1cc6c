from __future__ import annotations

import collections
import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capacity_helpers import CONFIG, bound, cluster_of, node_dict, pod_dict, schedule
from tensorsched.framework.capacity.fit import how_many_fit
from tensorsched.framework.errors import ArgumentError, ManifestError
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler


def test_basic_cpu_bound_and_stop_reason():
    cl = cluster_of([node_dict(f"n{i}") for i in range(3)])
    r = how_many_fit(cl, [pod_dict("t")], backend="numpy")
    assert r.total == 120
    assert r.templates[0].per_node == {"n0": 40, "n1": 40, "n2": 40}
    assert "3 Insufficient cpu" in r.templates[0].stop_reason
    assert cl.state.pods == {} and len(cl.pending) == 0      # untouched


def test_numba_equals_numpy_and_the_scheduler():
    nodes = [node_dict(f"n{i}", cpu=str(2 + i % 3)) for i in range(5)]
    cl = cluster_of(nodes, [bound("x", "n1", cpu="1")])
    a = how_many_fit(cl, [pod_dict("t", cpu="300m")], backend="numpy")
    b = how_many_fit(cl, [pod_dict("t", cpu="300m")], backend="numba")
    assert a.to_dict()["status"] == b.to_dict()["status"]
    # the same pods through schedule_pending land on the same nodes
    pods = [pod_dict(f"t-{i}", cpu="300m") for i in range(a.total)]
    bindings = schedule(nodes + [bound("x", "n1", cpu="1")], pods)
    per_node = {}
    for bd in bindings:
        per_node[bd.node] = per_node.get(bd.node, 0) + 1
    assert per_node == a.templates[0].per_node


def _brute_round_robin(objects, templates, backend="numpy"):
    """One pod at a time, in turn, each template until its first failure."""
    cl = build_cluster(objects, CONFIG)
    sched = Scheduler(cl, backend, 0)
    counts = [0] * len(templates)
    per_node = [dict() for _ in templates]
    reasons = [None] * len(templates)
    turn = collections.deque(range(len(templates)))
    while turn:
        t = turn.popleft()
        p = copy.deepcopy(templates[t])
        p["metadata"]["name"] = f"{templates[t]['metadata']['name']}-{counts[t]}"
        (b,), _ = sched.schedule_pending([p])
        if b.node is None:
            reasons[t] = b.message
            sched.delete_pod(b.pod)
            continue
        counts[t] += 1
        per_node[t][b.node] = per_node[t].get(b.node, 0) + 1
        turn.append(t)
    return counts, per_node, reasons


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["1", "2", "3"]), min_size=1, max_size=3),
       st.lists(st.tuples(st.sampled_from(["200m", "500m", "1"]),
                          st.sampled_from(["256Mi", "1Gi", "3Gi"])), min_size=1, max_size=3),
       st.integers(0, 3))
def test_round_robin_matches_one_pod_at_a_time(cpus, shapes, busy):
    nodes = [node_dict(f"n{i}", cpu=c, memory="4Gi", pods="12") for i, c in enumerate(cpus)]
    pods = [bound(f"b{j}", f"n{j % len(nodes)}", cpu="100m") for j in range(busy)]
    templates = [pod_dict(f"t{k}", cpu=c, memory=m) for k, (c, m) in enumerate(shapes)]
    r = how_many_fit(cluster_of(nodes, pods), templates, backend="numpy")
    counts, per_node, reasons = _brute_round_robin(nodes + pods, templates)
    assert [t.count for t in r.templates] == counts
    assert [t.per_node for t in r.templates] == per_node
    assert [t.stop_reason for t in r.templates] == reasons


def test_limit_and_replicas():
    cl = cluster_of([node_dict("n0", cpu="1")])
    r = how_many_fit(cl, [pod_dict("t")], backend="numpy", limit=3)
    assert r.total == 3 and r.templates[0].stop_reason is None
    r = how_many_fit(cl, [pod_dict("a", cpu="300m"), pod_dict("b", cpu="300m")],
                     replicas=[2, 2], backend="numpy")
    assert r.fits is False and r.total == 3
    assert [len(t.unschedulable) for t in r.templates] == [0, 1]
    assert "Insufficient cpu" in r.templates[1].unschedulable[0]["message"]
    r = how_many_fit(cl, [pod_dict("a", cpu="300m")], replicas=[3], backend="numpy")
    assert r.fits is True and r.templates[0].per_node == {"n0": 3}


def test_preemption_is_reported():
    nodes = [node_dict("n0", cpu="1")]
    low = [bound(f"low{i}", "n0", cpu="400m", priority=0) for i in range(2)]
    cl = cluster_of(nodes, low)
    r = how_many_fit(cl, [pod_dict("hi", cpu="400m", priority=100)], backend="numpy")
    assert r.total == 2
    assert {e["pod"] for e in r.evictions} == {"default/low0", "default/low1"}
    assert len(r.preemptions) >= 1


def test_bad_templates():
    cl = cluster_of([node_dict("n0")])
    with pytest.raises(ManifestError, match="must be a Pod"):
        how_many_fit(cl, [node_dict("x")], backend="numpy")
    p = pod_dict("x")
    p["spec"]["nodeName"] = "n0"
    with pytest.raises(ManifestError, match="spec.nodeName"):
        how_many_fit(cl, [p], backend="numpy")
    with pytest.raises(ArgumentError, match=r"how_many_fit: replicas\[0\]: must be an integer"):
        how_many_fit(cl, [pod_dict("x")], replicas=[-1], backend="numpy")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["1", "2", "3"]), min_size=1, max_size=3),
       st.lists(st.tuples(st.sampled_from(["300m", "700m", "1"]), st.integers(0, 9),
                          st.sampled_from([0, 5])), min_size=1, max_size=3),
       st.integers(0, 2))
def test_replicas_equal_all_of_them_scheduled_at_once(cpus, shapes, busy):
    # pods of requests only: a pod that fits nowhere means the later pods of
    # its template fit nowhere either, so stopping there changes no answer
    nodes = [node_dict(f"n{i}", cpu=c, memory="8Gi") for i, c in enumerate(cpus)]
    low = [bound(f"b{j}", f"n{j % len(nodes)}", cpu="300m", priority=1) for j in range(busy)]
    templates = [pod_dict(f"t{k}", cpu=c, memory="256Mi", priority=p)
                 for k, (c, _, p) in enumerate(shapes)]
    replicas = [n for _, n, _ in shapes]
    r = how_many_fit(cluster_of(nodes, low), templates, replicas=replicas, backend="numpy")
    order = []
    for i in range(max(replicas)):
        for k, t in enumerate(templates):
            if i < replicas[k]:
                p = copy.deepcopy(t)
                p["metadata"]["name"] = f"t{k}-{i}"
                order.append(p)
    want = [collections.Counter() for _ in templates]
    for b in schedule(nodes + low, order):
        if b.node is not None:
            want[int(b.pod.split("/")[1][1:].split("-")[0])][b.node] += 1
    assert [t.per_node for t in r.templates] == [dict(w) for w in want]
    assert [t.not_scheduled for t in r.templates] == [
        n - sum(w.values()) for n, w in zip(replicas, want)]
    assert r.fits == all(n == sum(w.values()) for n, w in zip(replicas, want))
    for t in r.templates:
        assert len(t.unschedulable) == (1 if t.not_scheduled else 0)


def test_replicas_stop_at_the_first_pod_that_fits_nowhere():
    import time
    cl = cluster_of([node_dict(f"n{i}", cpu="4") for i in range(4)])
    settled = []
    t0 = time.perf_counter()
    r = how_many_fit(cl, [pod_dict("a", cpu="1"), pod_dict("b", cpu="3")],
                     replicas=[10_000_000, 3], backend="numpy", progress=settled.append)
    assert time.perf_counter() - t0 < 5          # not 10 million pods made or scheduled
    a, b = r.templates
    assert b.count == 3 and b.not_scheduled == 0 and not b.unschedulable
    # 16 cpus: b takes 3 on three nodes, a the rest (4 + 1 + 1 + 1)
    assert a.count == 7 and a.not_scheduled == 10_000_000 - 7
    assert a.unschedulable == [{"pod": "default/a-7", "message": a.unschedulable[0]["message"]}]
    assert "Insufficient cpu" in a.stop_reason
    assert sum(settled) == 10_000_003             # progress accounts for every replica
    doc = r.to_dict()["status"]["templates"][0]
    assert doc["notScheduled"] == 10_000_000 - 7 and len(doc["unschedulable"]) == 1
    assert r.table()[4].startswith("  ... 9999992 more of default/a not scheduled")
