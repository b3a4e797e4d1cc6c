from __future__ import annotations

import collections
import copy
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capacity_helpers import CONFIG, bound, cluster_of, node_dict, pod_dict, schedule
from support.backends import needs_cuda
from tensorsched.framework.capacity.batch_probe import LocalProber
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


# ------------------------------------------------ several templates, batched

def _two_zones(n, cpu="2", pods="10", tainted=()):
    return [node_dict(f"n{i}", cpu=cpu, memory="4Gi", pods=pods, labels={"zone": "ab"[i % 2]},
                      taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
                      if i in tainted else None) for i in range(n)]


def _template(name, cpu, *, priority=0, created=0, tolerate=False, prefer_a=False,
              zone_b=False, never=True, zone=None):
    spec = {"preemptionPolicy": "Never"} if never else {}
    if tolerate:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    if prefer_a:
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "preference": {"matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["a"]}]}}]}}
    if zone_b or zone:
        spec["nodeSelector"] = {"zone": zone or "b"}
    return pod_dict(name, cpu=cpu, memory="128Mi", priority=priority, created=created,
                    spec=spec)


def _both_ways(cl, templates, **kw):
    """The batched and the Scheduler's answers (documents and progress
    totals), and whether the kernel answered (``place_groups`` ran)."""
    out = []
    with mock.patch.object(LocalProber, "place_groups", autospec=True,
                           side_effect=LocalProber.place_groups) as spy:
        for batch in (True, False):
            settled = []
            r = how_many_fit(cl, copy.deepcopy(templates), batch=batch, progress=settled.append,
                             **kw)
            out.append((r.to_dict()["status"], sum(settled)))
    return out[0], out[1], spy.called


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_several_templates_and_replicas_batched_equal_the_scheduler(data):
    # templates of different requests, tolerations, node affinity, priorities
    # and creation times, with and without a limit, replicas that fit and
    # that do not; the same documents (counts, nodes, stop reasons, the first
    # pod that fit nowhere and its message) and the same progress total
    n = data.draw(st.integers(1, 6))
    tainted = data.draw(st.sets(st.integers(0, n - 1), max_size=2))
    cl = cluster_of(_two_zones(n, cpu=data.draw(st.sampled_from(["2", "3"])), tainted=tainted),
                    [bound(f"b{j}", f"n{j % n}", cpu="500m") for j in range(data.draw(
                        st.integers(0, 2)))], extra=[])
    k = data.draw(st.integers(2, 3))
    templates = [_template(f"t{t}", data.draw(st.sampled_from(["200m", "300m", "500m", "1"])),
                           priority=data.draw(st.sampled_from([0, 5])),
                           created=data.draw(st.integers(0, 1)), tolerate=data.draw(st.booleans()),
                           prefer_a=data.draw(st.booleans()),
                           zone_b=data.draw(st.integers(0, 3)) == 0) for t in range(k)]
    kw = dict(seed=data.draw(st.integers(0, 5)))
    if data.draw(st.booleans()):
        kw["replicas"] = data.draw(st.lists(st.integers(0, 25), min_size=k, max_size=k))
    else:
        kw["limit"] = data.draw(st.sampled_from([None, 2, 5]))
    batched, scheduler, ran = _both_ways(cl, templates, **kw)
    assert batched == scheduler
    assert ran or sum(kw.get("replicas", [1])) == 0


@pytest.mark.parametrize("replicas", [None, [3, 4, 4]])
def test_the_tie_rule_places_alike_pods_on_identical_nodes_as_the_scheduler(replicas):
    # twelve identical nodes: where the small pods go is the seeded tie rule
    # (each node's rank by the seed, its row and the pods on it now).  t0
    # fits nowhere (no node in zone c, room for many by resources): its
    # first pod fails, its later ones are never attempted (the Scheduler
    # deletes them); t1's and t2's pods land as the Scheduler's cycles put
    # them
    cl = cluster_of(_two_zones(12, cpu="4"))
    templates = [_template("t0", "1", zone="c"), _template("t1", "1"), _template("t2", "2")]
    seen = set()
    for seed in range(6):
        batched, scheduler, ran = _both_ways(cl, templates, seed=seed, limit=4,
                                             replicas=replicas)
        assert ran and batched == scheduler
        seen.add(str(batched[0]["templates"]))
    assert len(seen) > 2                # the seeds place them differently


def test_what_the_kernel_does_not_cover_takes_the_scheduler():
    # a template that may preempt the lower-priority one (DefaultPreemption)
    cl = cluster_of(_two_zones(2))
    templates = [_template("lo", "500m"), _template("hi", "1", priority=9, never=False)]
    batched, scheduler, ran = _both_ways(cl, templates, replicas=[3, 2])
    assert not ran and batched == scheduler
    # more templates than the kernel's groups
    one = cluster_of(_two_zones(1, cpu="1"))
    many = [_template(f"t{t}", "1") for t in range(64)]
    batched, scheduler, ran = _both_ways(one, many)
    assert not ran and batched == scheduler and batched[0]["total"] == 1


@pytest.mark.cudasim
@needs_cuda
@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_several_templates_on_the_cuda_kernel_equal_the_scheduler():
    cl = cluster_of(_two_zones(5, tainted={0}))
    templates = [_template("t0", "500m", tolerate=True), _template("t1", "300m", prefer_a=True),
                 _template("t2", "1", zone_b=True)]
    for kw in (dict(limit=3, seed=2), dict(replicas=[4, 6, 2], seed=1)):
        with mock.patch.object(LocalProber, "place_groups", autospec=True,
                               side_effect=LocalProber.place_groups) as spy:
            got = how_many_fit(cl, copy.deepcopy(templates), backend="cuda", **kw)
        want = how_many_fit(cl, copy.deepcopy(templates), backend="numba", batch=False, **kw)
        assert spy.called and got.to_dict()["status"] == want.to_dict()["status"]


@pytest.mark.parametrize("replicas", [None, [150, 300, 100]])
def test_several_templates_batched_with_the_start_rotating(replicas):
    # 110 nodes at 20%: each cycle scans from where the last one stopped
    # (a failure scans them all and leaves the start, a pod never attempted
    # does not move it); t0 (zone c only) stops while the others go on
    objs = [node_dict(f"n{i:03d}", cpu="2", memory="8Gi", pods="8", labels={"zone": "abc"[i % 3]})
            for i in range(110)]
    cl = build_cluster(objs, dict(CONFIG, percentageOfNodesToScore=20))
    templates = [_template("t0", "500m", zone="c"), _template("t1", "250m", prefer_a=True),
                 _template("t2", "1", created=1)]
    for seed in (0, 1):
        batched, scheduler, ran = _both_ways(cl, templates, seed=seed, replicas=replicas)
        assert ran and batched == scheduler
        t0 = batched[0]["templates"][0]
        assert 0 < t0.get("count", t0.get("scheduled")) < 150
