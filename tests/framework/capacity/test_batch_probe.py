"""Capacity probes as one batch (``framework/capacity/batch_probe.py``): the
node-local kernel's placements equal ``schedule_pending``'s on random
clusters (every Fit strategy, Balanced, taints, node affinity,
unschedulable nodes, images, an extended resource, node subsets, the
percentage of nodes to score), ``nodes_to_add`` and ``removable_nodes``
give the same documents batched and per probe, and what the kernel does
not cover is refused naming the plugin."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorsched.framework.capacity.batch_probe import BatchProfileError, LocalProber
from tensorsched.framework.capacity.common import bound_pods as bound_of
from tensorsched.framework.capacity.drain import removable_nodes
from tensorsched.framework.capacity.fit import how_many_fit
from tensorsched.framework.capacity.node_search import nodes_to_add
from tensorsched.framework.parsing.manifests import parse_objects
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.generators.clusters import node_dict, pod_dict

from support.local_clusters import (
    EXT,
    bound_pods,
    config,
    make_pod,
    nodes,
    pod_class,
    scheduler_placements,
    workloads,
)

SLOW = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


def _prober(objects, cfg, pending, seed):
    cl = build_cluster(copy.deepcopy(list(objects)), cfg)
    pods = [cl.resolve(p) for p in parse_objects(copy.deepcopy(pending)).pods]
    return cl, pods, LocalProber(cl, list(cl.objects.nodes), bound_of(cl), pods, seed)


@SLOW
@given(st.data())
def test_probes_equal_the_scheduler_on_random_clusters(data):
    ns = data.draw(nodes(min_size=2))
    bd = bound_pods(data.draw, ns)
    pending = data.draw(workloads())
    cfg = config(data.draw(st.integers(0, 2)), data.draw(st.booleans()))
    seed = data.draw(st.integers(0, 9))
    cl, pods, prober = _prober(ns + bd, cfg, pending, seed)
    names = [n["metadata"]["name"] for n in ns]
    # the whole cluster and two subsets (a drain's or a smaller probe's
    # cluster), each with its own pods, in one call
    subsets = [names] + [[n for n in names if data.draw(st.booleans())] for _ in range(2)]
    lists = [list(range(len(pods)))] + [
        sorted(data.draw(st.sets(st.integers(0, len(pods) - 1)))) for _ in range(2)]
    got = prober.run(subsets, lists)
    for subset, pl, placed in zip(subsets, lists, got):
        objs = [n for n in ns if n["metadata"]["name"] in subset]
        objs += [p for p in bd if p["spec"]["nodeName"] in subset]
        want = scheduler_placements(objs, cfg, [pending[i] for i in pl], seed)
        assert {pods[i].key: node for i, node in placed} == want


@pytest.mark.parametrize("strategy", [0, 2])
def test_the_percentage_of_nodes_to_score_rotates_the_start(strategy):
    # 130 nodes: 100 to find at 50%, so every pod scans from where the last
    # one stopped; the nodes within the scan are normalized among themselves
    ns = [node_dict(f"n{i:03d}", cpu="12"[i % 2], labels={"zone": "abc"[i % 3]},
                    taints=[{"key": "spot", "effect": "PreferNoSchedule"}] if i % 5 == 0 else None)
          for i in range(130)]
    pref = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 7, "preference": {"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["b"]}]}}]}}}
    pending = [pod_dict(f"p{k}", cpu=("300m", "700m")[k % 2], spec=pref if k % 3 else None)
               for k in range(60)]
    cfg = config(strategy, pct=50)
    cl, pods, prober = _prober(ns, cfg, pending, 3)
    placed = prober.run([[n["metadata"]["name"] for n in ns]], [list(range(60))])[0]
    got = {pods[i].key: n for i, n in placed}
    assert got == scheduler_placements(ns, cfg, pending, 3)
    assert len(set(got.values())) > 20


def _search_cluster(data):
    ns = data.draw(nodes(min_size=1, max_size=4))
    bd = bound_pods(data.draw, ns, max_pods=4)
    cfg = config(data.draw(st.integers(0, 2)))
    return ns, bd, cfg


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_nodes_to_add_batched_equals_per_probe(data):
    ns, bd, cfg = _search_cluster(data)
    pending = data.draw(workloads(max_pods=10))
    template = node_dict("pool", cpu=data.draw(st.sampled_from(["1", "2"])), memory="4Gi",
                         pods="4", extra={EXT: "2"}, labels={"zone": "a", "tier": "9"})
    seed = data.draw(st.integers(0, 3))
    cl = build_cluster(copy.deepcopy(ns + bd), cfg)
    reports = [nodes_to_add(cl, copy.deepcopy(pending), [template], seed=seed, max_nodes=12,
                            batch=batch) for batch in (True, False)]
    assert reports[0].to_dict() == reports[1].to_dict()
    assert reports[0].probe_path.startswith("batched")
    assert reports[1].probe_path == "per probe"


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_removable_nodes_batched_equals_per_probe(data):
    ns = data.draw(nodes(min_size=2, max_size=5))
    bd = bound_pods(data.draw, ns, max_pods=8)
    cfg = config(data.draw(st.integers(0, 2)))
    cl = build_cluster(copy.deepcopy(ns + bd), cfg)
    limit = data.draw(st.sampled_from([0, 8]))          # greedy or every subset
    seed = data.draw(st.integers(0, 3))
    reports = [removable_nodes(cl, seed=seed, exact_limit=limit, batch=batch)
               for batch in (True, False)]
    assert reports[0].to_dict() == reports[1].to_dict()
    assert reports[0].probe_path.startswith("batched")


def _refusal(pending, extra=(), cfg=None):
    ns = [node_dict(f"n{i}", labels={"zone": "a"}) for i in range(2)]
    cfg = cfg or config(0)
    with pytest.raises(BatchProfileError) as err:
        _prober(ns + list(extra), cfg, pending, 0)
    return str(err.value)


def test_refusals_name_the_plugin():
    spread = pod_dict("s", spec={"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "s"}}}]}, labels={"app": "s"})
    assert _refusal([spread]).startswith("PodTopologySpread")
    # the System default spreading, for a pod a Service selects
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "d", "namespace": "default"},
           "spec": {"selector": {"app": "d"}}}
    owned = pod_dict("d", labels={"app": "d"})
    assert _refusal([owned], extra=[svc]).startswith("PodTopologySpread")
    _prober([node_dict("n0")], config(0), [owned], 0)     # no Service: no spreading
    anti = pod_dict("a", labels={"app": "a"}, spec={"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname",
             "labelSelector": {"matchLabels": {"app": "a"}}}]}}})
    assert _refusal([anti]).startswith("InterPodAffinity")
    ports = pod_dict("p")
    ports["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    assert _refusal([ports]).startswith("NodePorts")
    low = pod_dict("low", priority=-5)
    low["spec"]["nodeName"] = "n0"
    assert _refusal([pod_dict("hi", priority=10)], extra=[low]).startswith("DefaultPreemption")
    gated = pod_dict("g", spec={"schedulingGates": [{"name": "wait"}]})
    assert _refusal([gated]).startswith("SchedulingGates")
    named = pod_dict("b", spec={"nodeName": "n1"})
    assert _refusal([named]).startswith("NodeName")
    other = pod_dict("o", spec={"schedulerName": "elsewhere"})
    assert _refusal([other]).startswith("profiles")
    cfg = config(0)
    cfg["profiles"][0]["plugins"] = {"filter": {"enabled": [{"name": "GpuShareFit"}]}}
    msg = _refusal([pod_dict("x")], cfg=cfg)
    assert msg.startswith("GpuShareFit") and "not of the default profile" in msg


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_how_many_fit_batched_equals_the_scheduler(data):
    ns = data.draw(nodes(min_size=1, max_size=5))
    bd = bound_pods(data.draw, ns)
    cfg = config(data.draw(st.integers(0, 2)), pct=data.draw(st.sampled_from([100, 50])))
    cls = data.draw(pod_class())
    if cls["cpu"] == "0" and cls["memory"] == "0":
        cls["cpu"] = "100m"
    template = make_pod("t", cls)
    limit = data.draw(st.sampled_from([None, 3]))
    seed = data.draw(st.integers(0, 5))
    cl = build_cluster(copy.deepcopy(ns + bd), cfg)
    got = [how_many_fit(cl, [copy.deepcopy(template)], seed=seed, limit=limit,
                        batch=batch).to_dict() for batch in (True, False)]
    assert got[0] == got[1]
