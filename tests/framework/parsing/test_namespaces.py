"""Namespace objects: loaded with their labels (kubernetes.io/metadata.name
set to the name, as the API server does), carried to the state, and read by
the namespaceSelector of pod (anti-)affinity terms on every backend."""

import pytest

from tensorsched.framework import explain
from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import load_objects, parse_namespace, parse_objects
from tensorsched.framework.parsing.selectors import NS_NAME_LABEL, affinity_term
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster

HOST = "kubernetes.io/hostname"


def namespace(name, **labels):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def term(ns_labels, app="db"):
    return {"labelSelector": {"matchLabels": {"app": app}},
            "namespaceSelector": {"matchLabels": ns_labels}, "topologyKey": HOST}


NODES = [node_dict("n0"), node_dict("n1"), node_dict("n2")]
NAMESPACES = [namespace("shop", team="a"), namespace("bank", team="b"), namespace("lab")]
DB_A = pod_dict("db", "shop", labels={"app": "db"}, spec={"nodeName": "n0"})
DB_B = pod_dict("db", "bank", labels={"app": "db"}, spec={"nodeName": "n1"})


def incoming(ns="default", labels=None, **affinity):
    return pod_dict("web", ns, labels=labels or {"app": "web"}, spec={"affinity": affinity})


# --------------------------------------------------------------------------
# loading


def test_parse_namespace_defaults_the_name_label():
    rec = parse_namespace(namespace("shop", team="a"))
    assert (rec.name, rec.labels) == ("shop", {"team": "a", NS_NAME_LABEL: "shop"})
    # the API server overwrites a different value
    rec = parse_namespace({"kind": "Namespace", "metadata": {
        "name": "shop", "labels": {NS_NAME_LABEL: "other"}}})
    assert rec.labels == {NS_NAME_LABEL: "shop"}
    assert parse_namespace({"kind": "Namespace", "metadata": {"name": "x"}}).labels == {
        NS_NAME_LABEL: "x"}


def test_namespaces_reach_objects_and_state():
    objs = parse_objects(NAMESPACES + NODES)
    assert [n.name for n in objs.namespaces] == ["shop", "bank", "lab"]
    assert objs.ignored_kinds == {}
    cluster = build_cluster(NAMESPACES + NODES + [DB_A])
    assert cluster.state.namespace_labels == {
        "shop": {"team": "a", NS_NAME_LABEL: "shop"},
        "bank": {"team": "b", NS_NAME_LABEL: "bank"},
        "lab": {NS_NAME_LABEL: "lab"}}
    # no Namespace objects: nothing (namespaces keep only their name label)
    assert build_cluster(NODES).state.namespace_labels == {}


@pytest.mark.parametrize("labels, field, words", [
    ({"team": "{{.bad.}}"}, 'metadata.labels.team', ["a valid label must be an empty string"]),
    ({"bad key": "a"}, "metadata.labels", ['Invalid value: "bad key"', "name part must consist"]),
    ({"team": 1}, "metadata.labels.team", ["must be a string"]),
])
def test_namespace_errors(labels, field, words):
    with pytest.raises(ManifestError) as info:
        parse_objects([{"kind": "Namespace", "metadata": {"name": "shop", "labels": labels}}])
    assert (info.value.obj, info.value.field) == ("Namespace shop", field)
    for w in words:
        assert w in info.value.problem


def test_duplicate_namespace_names_both_sources(tmp_path):
    f = tmp_path / "ns.yaml"
    f.write_text("kind: Namespace\nmetadata: {name: shop}\n---\n"
                 "kind: Namespace\nmetadata: {name: shop}\n")
    with pytest.raises(ManifestError) as info:
        parse_objects(load_objects(f))
    assert str(info.value) == (f"{f}#1: Namespace shop: metadata.name: duplicate Namespace "
                               f"(another object already has this name ({f}#0))")


def test_term_matches_with_and_without_namespace_labels():
    t = affinity_term("default", term({"team": "a"}))
    table = {"shop": {"team": "a", NS_NAME_LABEL: "shop"}}
    assert t.matches("shop", {"app": "db"}, table)
    assert not t.matches("shop", {"app": "db"})           # no labels known: name only
    assert not t.matches("bank", {"app": "db"}, table)
    by_name = affinity_term("default", term({NS_NAME_LABEL: "ghost"}))
    assert by_name.matches("ghost", {"app": "db"}, table)  # no object: the name label
    assert by_name.matches("ghost", {"app": "db"})


# --------------------------------------------------------------------------
# scheduling


def test_required_affinity_follows_namespace_labels(backend):
    objs = NAMESPACES + NODES + [DB_A, DB_B]
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term({"team": "a"})]}}
    got = explain(objs, incoming(**aff), backend=backend)
    assert got["feasible"] == ["n0"] and got["selected"] == "n0"
    got = explain(objs, incoming(podAffinity={"requiredDuringSchedulingIgnoredDuringExecution": [
        term({"team": "b"})]}), backend=backend)
    assert got["feasible"] == ["n1"]
    # Without the Namespace objects no namespace has team=a: nothing matches
    # and the pod (in default) does not match its own term either.
    got = explain(NODES + [DB_A, DB_B], incoming(**aff), backend=backend)
    assert got["feasible"] == [] and got["selected"] is None


def test_required_anti_affinity_follows_namespace_labels(backend):
    objs = NAMESPACES + NODES + [DB_A, DB_B]
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term({"team": "a"})]}}
    got = explain(objs, incoming(**anti), backend=backend)
    assert got["feasible"] == ["n1", "n2"]
    # matchExpressions over namespace labels
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "db"}},
        "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists"}]},
        "topologyKey": HOST}]}}
    assert explain(objs, incoming(**anti), backend=backend)["feasible"] == ["n2"]


def test_existing_pods_anti_affinity_reads_incoming_namespace_labels(backend):
    guard = pod_dict("guard", "bank", labels={"app": "guard"}, spec={
        "nodeName": "n1", "affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term({"team": "a"}, app="web")]}}})
    objs = NAMESPACES + NODES + [guard]
    # web in shop (team=a) is kept off n1; web in lab (no team) is not
    assert explain(objs, incoming("shop"), backend=backend)["feasible"] == ["n0", "n2"]
    assert explain(objs, incoming("lab"), backend=backend)["feasible"] == ["n0", "n1", "n2"]


def test_preferred_affinity_scores_follow_namespace_labels(backend):
    objs = NAMESPACES + NODES + [DB_A, DB_B]
    pref = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": term({"team": "b"})}]}}
    got = explain(objs, incoming(**pref), backend=backend)
    ipa = {n: s["InterPodAffinity"] for n, s in got["scores"].items()}
    assert ipa == {"n0": 0, "n1": 100, "n2": 0}
    assert got["selected"] == "n1"


def test_preemption_victims_found_through_namespace_labels(backend):
    low = pod_dict("db", "shop", cpu="100m", priority=0, labels={"app": "db"},
                   spec={"nodeName": "n0"})
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term({"team": "a"})]}}
    web = pod_dict("web", "default", priority=1000, labels={"app": "web"},
                   spec={"affinity": anti})
    got = explain(NAMESPACES + [node_dict("n0"), low], web, backend=backend)
    assert got["feasible"] == []
    assert got["preemption"] is not None
    assert got["preemption"]["nominated_node"] == "n0"
    assert got["preemption"]["victims"] == ["shop/db"]
    # without the Namespace objects the term matches nothing: it fits
    assert explain([node_dict("n0"), low], web, backend=backend)["feasible"] == ["n0"]
