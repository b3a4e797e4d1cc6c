"""``capacity.common``: what the capacity analyses share.  Templates are
parsed and refused in the template's name, copies differ only by name,
fresh clusters leave the given one untouched, and the resource bound is
the least free / request over the requested resources."""

from __future__ import annotations

import gc

import pytest

from capacity_helpers import bound, cluster_of, node_dict, pod_dict
from tensorsched.framework.capacity import common as CC
from tensorsched.framework.errors import ArgumentError, ManifestError
from tensorsched.framework.parsing.manifests import parse_node, parse_pod
from tensorsched.framework.records.records import NodeRecord, PodRecord


def test_no_gc_restores_the_collector_state_even_on_error():
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with CC.no_gc():
            assert not gc.isenabled()
            raise RuntimeError
    assert gc.isenabled()
    gc.disable()
    try:
        with CC.no_gc():
            pass
        assert not gc.isenabled()          # was off: stays off
    finally:
        gc.enable()


def test_unique_names_skip_taken_ones():
    assert CC.unique_names("n", set(), 3) == ["n-0", "n-1", "n-2"]
    assert CC.unique_names("n", {"n-0", "n-2"}, 2) == ["n-1", "n-3"]
    assert CC.unique_names("n", (), 2, start=5) == ["n-5", "n-6"]
    assert CC.unique_names("n", (), 0) == []


def test_pod_template_parses_a_pending_pod_and_refuses_others():
    cl = cluster_of([node_dict("n0")])
    rec = CC.pod_template(cl, pod_dict("t", cpu="250m"))
    assert isinstance(rec, PodRecord) and rec.requests["cpu"] == 250
    assert CC.pod_template(cl, rec).key == "default/t"
    with pytest.raises(ManifestError) as info:
        CC.pod_template(cl, ["not", "a", "pod"])
    assert info.value.obj == "template" and "got list" in info.value.problem
    with pytest.raises(ManifestError) as info:
        CC.pod_template(cl, node_dict("x"), what="workload")
    assert info.value.field == "kind" and "a workload must be a Pod, got 'Node'" in str(info.value)
    with pytest.raises(ManifestError) as info:
        CC.pod_template(cl, bound("b", "n0"))
    assert (info.value.obj, info.value.field) == ("Pod default/b", "spec.nodeName")


def test_node_template_parses_or_refuses():
    rec = CC.node_template(node_dict("t", cpu="2"))
    assert isinstance(rec, NodeRecord) and rec.allocatable["cpu"] == 2000
    assert CC.node_template(rec) is rec
    with pytest.raises(ManifestError, match="expected a Node object, got str"):
        CC.node_template("t")
    with pytest.raises(ManifestError) as info:
        CC.node_template(pod_dict("p"), what="spare")
    assert info.value.field == "kind" and "a spare must be a Node, got 'Pod'" in str(info.value)


def test_pod_copies_differ_only_by_name_and_share_the_memo():
    tmpl = parse_pod(pod_dict("t", namespace="ns", cpu="300m"))
    tmpl.memo["x"] = 1
    a, b = CC.pod_copies(tmpl, ["a", "b"])
    assert (a.name, a.key, b.key) == ("a", "ns/a", "ns/b")
    assert a.uid == "" and a.requests == tmpl.requests and a.memo is tmpl.memo
    assert tmpl.name == "t" and tmpl.key == "ns/t"         # the template is untouched
    assert CC.pod_copies(tmpl, []) == []


def test_node_copies_set_the_hostname_and_join_uncordoned():
    taint = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    tmpl = parse_node(node_dict("t", labels={"zone": "a"}, unschedulable=True, taints=[taint]))
    copies = CC.node_copies(tmpl, ["x", "y"])
    assert [c.name for c in copies] == ["x", "y"]
    assert [c.labels["kubernetes.io/hostname"] for c in copies] == ["x", "y"]
    assert all(c.labels["zone"] == "a" and not c.unschedulable and not c.taints
               for c in copies)
    assert tmpl.unschedulable and tmpl.labels["kubernetes.io/hostname"] == "t"


def test_fresh_cluster_replaces_nodes_and_leaves_the_original():
    cl = cluster_of([node_dict("n0"), node_dict("n1")], [bound("b", "n0")])
    fresh = CC.fresh_cluster(cl, nodes=[parse_node(node_dict("z"))], pods=[])
    assert sorted(fresh.state.node_rows) == ["z"] and fresh.state.pods == {}
    assert sorted(cl.state.node_rows) == ["n0", "n1"] and len(cl.state.pods) == 1
    same = CC.fresh_cluster(cl)
    assert same is not cl and sorted(same.state.node_rows) == ["n0", "n1"]


def test_bound_pods_skip_pending_and_finished_pods():
    done = bound("done", "n0")
    done["status"] = {"phase": "Succeeded"}
    cl = cluster_of([node_dict("n0")], [bound("b", "n0"), pod_dict("p"), done])
    assert [p.name for p in CC.bound_pods(cl)] == ["b"]


def test_free_bound_is_the_least_over_resources_and_pod_slots():
    cl = cluster_of([node_dict("n0", cpu="1"), node_dict("n1", cpu="2", pods="3")],
                    [bound("b", "n0", cpu="500m", memory="1Gi")])
    # n0: 500m free -> 2 of 250m; n1: 2000m -> 8, but 3 pod slots
    assert CC.free_bound(cl.state, {"cpu": 250}) == 2 + 3
    assert CC.free_bound(cl.state, {"cpu": 0, "pods": 1}) == 109 + 3
    assert CC.free_bound(cl.state, {"example.com/gpu": 1}) == 0     # nobody has it
    # the bound pod (priority 0) counts as free for a preemptor above it
    assert CC.free_bound(cl.state, {"cpu": 250}, preemptible_below=1) == 4 + 3
    assert CC.free_bound(cl.state, {"cpu": 250}, preemptible_below=0) == 2 + 3


def test_free_bound_skips_unschedulable_nodes_and_empty_clusters():
    cl = cluster_of([node_dict("n0", cpu="1", unschedulable=True), node_dict("n1", cpu="1")])
    assert CC.free_bound(cl.state, {"cpu": 500}) == 2
    assert CC.free_bound(cluster_of([]).state, {"cpu": 1}) == 0


def test_node_utilization_is_the_larger_of_cpu_and_memory_shares():
    cl = cluster_of([node_dict("n0", cpu="2", memory="4Gi"), node_dict("n1")],
                    [bound("b", "n0", cpu="500m", memory="2Gi")])
    assert CC.node_utilization(cl.state, "n0") == pytest.approx(0.5)
    assert CC.node_utilization(cl.state, "n1") == 0.0


def test_capacity_arguments_name_the_function():
    cl = cluster_of([node_dict("n0")])
    args = CC.capacity_arguments("how_many_fit", cl, "numpy", 0, None)
    assert args.function == "how_many_fit"
    for bad in [("cluster", dict(cluster={}, backend="numpy", seed=0, progress=None)),
                ("backend", dict(cluster=cl, backend="x", seed=0, progress=None)),
                ("seed", dict(cluster=cl, backend="numpy", seed=-1, progress=None)),
                ("progress", dict(cluster=cl, backend="numpy", seed=0, progress=3))]:
        with pytest.raises(ArgumentError) as info:
            CC.capacity_arguments("fn", **bad[1])
        assert (info.value.function, info.value.argument) == ("fn", bad[0])


def test_object_list_takes_dicts_or_records():
    args = CC.capacity_arguments("f", cluster_of([]), "numpy", 0, None)
    rec = parse_pod(pod_dict("p"))
    assert CC.object_list(args, "pods", [pod_dict("a"), rec], PodRecord, "Pod")[1] is rec
    with pytest.raises(ArgumentError) as info:
        CC.object_list(args, "pods", [pod_dict("a"), "b"], PodRecord, "Pod")
    assert info.value.argument == "pods[1]" and "a Pod dict or PodRecord" in str(info.value)
    with pytest.raises(ArgumentError, match="non-empty list of Pod dicts or PodRecords"):
        CC.object_list(args, "pods", [], PodRecord, "Pod", nonempty=True)


@pytest.mark.timeout(30)
def test_templates_from_an_endless_generator_are_refused_not_listed():
    # how_many_fit(cluster, itertools.repeat(pod)) listed templates until
    # the machine ran out of memory
    import itertools

    from tensorsched.framework.arguments import MAX_ITEMS
    from tensorsched.framework.capacity.fit import how_many_fit
    from tensorsched.framework.capacity.node_search import nodes_to_add
    cl = cluster_of([node_dict("n0")])
    with pytest.raises(ArgumentError, match=f"^how_many_fit: templates: at most {MAX_ITEMS:,} "):
        how_many_fit(cl, itertools.repeat(pod_dict("p")), backend="numpy")
    with pytest.raises(ArgumentError, match="^how_many_fit: replicas: at most"):
        how_many_fit(cl, [pod_dict("p")], replicas=itertools.repeat(1), backend="numpy")
    with pytest.raises(ArgumentError, match="^nodes_to_add: node_templates: at most"):
        nodes_to_add(cl, [pod_dict("p")], itertools.repeat(node_dict("t")), backend="numpy")
    with pytest.raises(ArgumentError, match="^nodes_to_add: workloads: at most"):
        nodes_to_add(cl, itertools.repeat(pod_dict("p")), [node_dict("t")], backend="numpy")
