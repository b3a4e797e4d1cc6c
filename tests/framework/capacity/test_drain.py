from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capacity_helpers import bound, cluster_of, node_dict, schedule
from tensorsched.framework.capacity.drain import removable_nodes


def _drain_ok(nodes, pods, gone):
    """Every pod of the ``gone`` nodes rebound elsewhere without preemption,
    the pods queued as removable_nodes queues them: node by node in node
    order, each node's pods in load order (with equal priorities and
    creation times the queue keeps that order, and it can decide the fit)."""
    keep = [n for n in nodes if n["metadata"]["name"] not in gone]
    stay = [p for p in pods if p["spec"]["nodeName"] not in gone]
    move = []
    for name in (n["metadata"]["name"] for n in nodes):
        if name not in gone:
            continue
        for p in pods:
            if p["spec"]["nodeName"] == name:
                q = {**p, "spec": {k: v for k, v in p["spec"].items() if k != "nodeName"}}
                move.append(q)
    if not move:
        return True
    return all(b.node is not None and not b.victims for b in schedule(keep + stay, move))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["1", "2", "3"]), min_size=1, max_size=4),
       st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["200m", "600m", "1"])),
                max_size=6))
def test_matches_brute_force(cpus, placed):
    nodes = [node_dict(f"n{i}", cpu=c, memory="8Gi") for i, c in enumerate(cpus)]
    pods, used = [], {}
    for k, (i, cpu) in enumerate(placed):
        node = f"n{i % len(nodes)}"
        milli = int(cpu[:-1]) if cpu.endswith("m") else int(cpu) * 1000
        if used.get(node, 0) + milli > int(cpus[i % len(nodes)]) * 1000:
            continue
        used[node] = used.get(node, 0) + milli
        pods.append(bound(f"p{k}", node, cpu=cpu, memory="128Mi"))
    r = removable_nodes(cluster_of(nodes, pods), backend="numpy")
    names = [n["metadata"]["name"] for n in nodes]
    assert r.removable == [n for n in names if _drain_ok(nodes, pods, {n})]
    best = []
    for size in range(len(names), 0, -1):
        best = next((list(c) for c in itertools.combinations(names, size)
                     if _drain_ok(nodes, pods, set(c))), [])
        if best:
            break
    assert r.removable_set == best and r.set_search.startswith("exact")


def test_pdb_daemonset_and_mirror_pods():
    nodes = [node_dict("n0", cpu="2"), node_dict("n1", cpu="2"), node_dict("n2", cpu="2")]
    web = [bound(f"web{i}", f"n{i}", labels={"app": "web"}) for i in range(2)]
    ds = bound("proxy-n2", "n2")
    ds["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                          "name": "proxy", "uid": "u", "controller": True}]
    mirror = bound("etcd-n2", "n2", cpu="1000m")
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "x"}
    # a static pod as the API shows it: its controller is its Node
    static = bound("kube-apiserver-n2", "n2", cpu="500m")
    static["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": "n2",
                                              "uid": "n", "controller": True}]
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "web", "namespace": "default"},
           "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}}
    cl = cluster_of(nodes, web + [ds, mirror, static], [pdb])
    r = removable_nodes(cl, backend="numpy")
    by = {n.node: n for n in r.nodes}
    assert not by["n0"].removable and "PodDisruptionBudget default/web" in by["n0"].reason
    assert by["n2"].removable and sorted(by["n2"].staying) == [
        "default/etcd-n2", "default/kube-apiserver-n2", "default/proxy-n2"]
    assert by["n2"].moves == {}
    assert r.removable_set == ["n2"]
    # greedy (cluster-autoscaler's order) beyond the exact limit
    g = removable_nodes(cl, backend="numpy", exact_limit=0)
    assert g.removable_set == ["n2"] and g.set_search.startswith("greedy")
    doc = g.to_dict()
    assert doc["status"]["removable"] == ["n2"]
