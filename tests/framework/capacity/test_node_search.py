from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capacity_helpers import bound, cluster_of, node_dict, pod_dict, schedule
from tensorsched.framework.capacity.node_search import nodes_to_add
from tensorsched.framework.errors import ManifestError


def _with_template(nodes, template, n):
    added = []
    for i in range(n):
        d = copy.deepcopy(template)
        name = f"{template['metadata']['name']}-{i}"
        d["metadata"]["name"] = name
        d["metadata"]["labels"]["kubernetes.io/hostname"] = name
        added.append(d)
    return list(nodes) + added


def _brute(nodes, bound_pods, pods, template, most):
    """The smallest count of template nodes with which every pod schedules."""
    for n in range(most + 1):
        bindings = schedule(_with_template(nodes, template, n) + list(bound_pods), pods)
        if all(b.node is not None for b in bindings):
            return n, bindings
    return None, None


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["1", "2"]), min_size=0, max_size=2),
       st.lists(st.sampled_from(["300m", "700m", "1", "1500m"]), min_size=1, max_size=7),
       st.sampled_from(["2", "3"]), st.integers(0, 2))
def test_smallest_count_matches_brute_force(cpus, pod_cpus, tcpu, busy):
    nodes = [node_dict(f"n{i}", cpu=c, memory="8Gi") for i, c in enumerate(cpus)]
    bound_pods = [bound(f"b{j}", f"n{j % len(nodes)}", cpu="500m") for j in range(busy)] \
        if nodes else []
    pods = [pod_dict(f"w{k}", cpu=c, memory="256Mi") for k, c in enumerate(pod_cpus)]
    template = node_dict("pool", cpu=tcpu, memory="8Gi")
    r = nodes_to_add(cluster_of(nodes, bound_pods), pods, [template], backend="numpy")
    want, bindings = _brute(nodes, bound_pods, pods, template, len(pods))
    assert r.nodes_to_add == want
    best = r.best
    assert best.added_nodes == [f"pool-{i}" for i in range(want)]
    # the placement is the scheduler's on the same input
    assert best.placement == {b.pod: b.node for b in bindings}
    assert "verified" in best.search


def test_controllers_and_two_templates():
    nodes = [node_dict("n0", cpu="2")]
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": "shop"},
           "spec": {"replicas": 6, "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "x",
                                             "resources": {"requests": {"cpu": "1"}}}]}}}}
    small, big = node_dict("small", cpu="1"), node_dict("big", cpu="4")
    r = nodes_to_add(cluster_of(nodes), [dep], [small, big], backend="numpy")
    assert [x.nodes_to_add for x in r.results] == [4, 1]
    assert r.best.template == "big" and r.nodes_to_add == 1
    assert len(r.best.placement) == 6
    assert all(p.startswith("shop/web-") for p in r.best.placement)
    doc = r.to_dict()
    assert doc["status"]["nodeTemplate"] == "big" and doc["status"]["addedNodes"] == ["big-0"]


def test_infeasible_and_bad_templates():
    cl = cluster_of([node_dict("n0", cpu="1")])
    r = nodes_to_add(cl, [pod_dict("huge", cpu="8")], [node_dict("t", cpu="2")],
                     backend="numpy", max_nodes=3)
    assert not r.fits and r.nodes_to_add is None
    assert "Insufficient cpu" in r.to_dict()["status"]["unschedulable"][0]["message"]
    gpu = pod_dict("g", extra={"nvidia.com/gpu": "1"})
    r = nodes_to_add(cl, [gpu], [node_dict("t")], backend="numpy")
    assert not r.fits and "lacks a resource" in r.results[0].search
    with pytest.raises(ManifestError, match="must be a Node"):
        nodes_to_add(cl, [pod_dict("a")], [pod_dict("b")], backend="numpy")


def test_a_template_copied_from_a_cordoned_node_adds_uncordoned_nodes():
    # a node dumped while cordoned: spec.unschedulable and the taint the node
    # lifecycle controller added; the nodes made from it join uncordoned
    template = node_dict("pool", cpu="2", memory="8Gi", unschedulable=True,
                         taints=[{"key": "node.kubernetes.io/unschedulable",
                                  "effect": "NoSchedule"}])
    pods = [pod_dict(f"w{k}", cpu="1500m", memory="256Mi") for k in range(3)]
    r = nodes_to_add(cluster_of([node_dict("n0", cpu="1", memory="8Gi")]), pods, [template],
                     backend="numpy")
    assert r.nodes_to_add == 3 and r.best.added_nodes == ["pool-0", "pool-1", "pool-2"]
