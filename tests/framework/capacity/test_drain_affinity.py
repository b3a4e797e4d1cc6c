"""Drains whose removed nodes hold bound pods InterPodAffinity reads
(DaemonSet pods whose terms select the moved pods or whose labels their
terms select, a lone pod whose terms select itself): the batch reads each
probe group's constants (``LocalProber``'s static groups) and its reports
equal the per-probe path's (the Scheduler on each removal's cluster), on
random clusters with required and preferred affinity and anti-affinity;
beyond the memory for the groups the removals left over take the
Scheduler, and the report says so."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.local_clusters import NAMESPACES, _affinity, config
from tensorsched.framework.capacity.batch_probe import LocalProber
from tensorsched.framework.capacity.drain import removable_nodes
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.generators.clusters import node_dict, pod_dict

KINDS = ("req_aff", "req_anti", "pref_aff", "pref_anti")
DAEMONSET = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u",
              "controller": True}]


def _on(pod: dict, node: str, daemon: bool = False) -> dict:
    pod["spec"]["nodeName"] = node
    if daemon:
        pod["metadata"]["ownerReferences"] = copy.deepcopy(DAEMONSET)
    return pod


@st.composite
def drain_clusters(draw):
    """Nodes in two zones; on some a DaemonSet pod (app=agent, staying with
    its node) with terms selecting app pods; app pods a0.. each its own
    class (app=a<k>), with terms selecting the agents or itself (a lone
    pod's terms may select its own class), never another app pod (the
    batch refuses pods whose terms select each other)."""
    n = draw(st.integers(2, 4))
    nodes = [node_dict(f"n{i}", cpu=draw(st.sampled_from(["1", "2"])), memory="4Gi",
                       labels={"zone": "ab"[i % 2]}) for i in range(n)]
    n_apps = draw(st.integers(1, 6))
    apps = tuple(f"a{k}" for k in range(n_apps))
    pods = []
    for i in range(n):
        if draw(st.booleans()):
            aff = _affinity(draw, apps, KINDS)
            pods.append(_on(pod_dict(f"agent-n{i}", namespace=draw(st.sampled_from(NAMESPACES)),
                                     cpu="100m", memory="64Mi", labels={"app": "agent"},
                                     spec={"affinity": aff} if aff else None), f"n{i}", True))
    for k, app in enumerate(apps):
        aff = _affinity(draw, ("agent", app), KINDS)
        node = f"n{draw(st.integers(0, n - 1))}"
        pods.append(_on(pod_dict(app, namespace=draw(st.sampled_from(NAMESPACES)),
                                 cpu=draw(st.sampled_from(["200m", "500m"])), memory="256Mi",
                                 labels={"app": app}, spec={"affinity": aff} if aff else None),
                        node))
    return nodes, pods


def _reports(objects, cfg, **kw):
    cl = build_cluster(copy.deepcopy(objects), cfg)
    return [removable_nodes(cl, batch=batch, **kw) for batch in (True, False)]


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(drain_clusters(), st.integers(0, 2), st.sampled_from([0, 8]), st.integers(0, 3))
def test_drains_of_pods_that_pod_affinity_reads_batched_equal_per_probe(cluster, strategy,
                                                                       limit, seed):
    nodes, pods = cluster
    cfg = config(strategy)
    if seed % 2:
        cfg["profiles"][0]["pluginConfig"].append({"name": "InterPodAffinity", "args": {
            "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "InterPodAffinityArgs",
            "hardPodAffinityWeight": 5}})
    batched, per_probe = _reports(nodes + pods, cfg, seed=seed, exact_limit=limit)
    assert batched.to_dict() == per_probe.to_dict()
    assert batched.probe_path == "batched (cpu)"


def _guarded():
    """n0 and n1 in zone a, n2 in zone b; on n0 a DaemonSet guard whose
    required anti-affinity keeps app=web out of its zone, and web0 (bound
    there before the guard came); web1 on n2.  Draining n0 takes the guard
    along: web0 may go to n1 (the per-probe answer; the base constants,
    with the guard, say zone a is closed)."""
    nodes = [node_dict(f"n{i}", cpu="2", memory="4Gi", labels={"zone": "aab"[i]})
             for i in range(3)]
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}]}}
    guard = _on(pod_dict("guard", cpu="100m", labels={"app": "guard"},
                         spec={"affinity": anti}), "n0", True)
    web = [_on(pod_dict(f"web{i}", cpu="1500m", labels={"app": "web"}), node)
           for i, node in enumerate(("n0", "n2"))]
    return nodes + [guard] + web


def test_a_drain_that_removes_a_guard_runs_batched():
    batched, per_probe = _reports(_guarded(), config(0))
    assert batched.to_dict() == per_probe.to_dict()
    # the removal the batch used to refuse ("a probe without node n0, whose
    # bound pods its terms read") now runs in it
    assert batched.probe_path == "batched (cpu)"
    by = {n.node: n for n in batched.nodes}
    assert by["n0"].removable and by["n0"].moves == {"default/web0": "n1"}
    assert by["n0"].staying == ["default/guard"]
    assert not by["n2"].removable and "anti-affinity" in by["n2"].reason


def test_removals_beyond_the_group_budget_take_the_scheduler(monkeypatch):
    monkeypatch.setattr(LocalProber, "group_budget", 0)
    batched, per_probe = _reports(_guarded(), config(0))
    assert batched.to_dict() == per_probe.to_dict()
    assert batched.probe_path.startswith("batched (cpu); per probe for ")
    assert "InterPodAffinity" in batched.probe_path and "fits in 0 bytes" in batched.probe_path


@pytest.mark.parametrize("seed", range(3))
def test_a_lone_pod_whose_anti_affinity_selects_itself_moves_batched(seed):
    # solo's bound copy on n0 repels its own class from zone a in the
    # base constants; once n0 goes, solo may land in zone a (n1)
    nodes = [node_dict(f"n{i}", cpu="1", memory="4Gi", labels={"zone": "aab"[i]})
             for i in range(3)]
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "solo"}}}]}}
    solo = _on(pod_dict("solo", cpu="600m", labels={"app": "solo"}, spec={"affinity": anti}),
               "n0")
    fill = _on(pod_dict("fill", cpu="600m"), "n2")
    batched, per_probe = _reports(nodes + [solo, fill], config(0), seed=seed)
    assert batched.to_dict() == per_probe.to_dict()
    assert batched.probe_path == "batched (cpu)"
    assert {n.node: n.moves for n in batched.nodes}["n0"] == {"default/solo": "n1"}


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(drain_clusters())
def test_a_budget_of_one_group_per_call_answers_every_removal_batched(cluster):
    # each call holds one group's tables: the subsets of one size that
    # need others go in the calls after it
    nodes, pods = cluster
    arrays = LocalProber._arrays

    def one_group(self, *args):
        arrays(self, *args)
        self.group_budget = self._group_bytes
    LocalProber._arrays = one_group
    try:
        batched, per_probe = _reports(nodes + pods, config(0), exact_limit=8)
    finally:
        LocalProber._arrays = arrays
    assert batched.to_dict() == per_probe.to_dict()
    assert batched.probe_path == "batched (cpu)"
