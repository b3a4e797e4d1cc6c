"""VolumeZone alone (PreFilter/Filter), after upstream's volume_zone_test.go.

A pod's bound volumes carry zone / region labels (values split on "__"); a
node with none of the four topology labels fits, any other must have, for
every label of every volume, a value among the volume's (a beta key falls
back to the node's GA label).  A conflict is UnschedulableAndUnresolvable
'node(s) had no available volume zone'; a missing claim or volume, or an
unbound claim that no class will bind later, fails every node with
upstream's message.  A pod whose claims carry no topology is skipped.

The filter is a host filter (the same code on every backend): numpy only."""

from __future__ import annotations

import pytest
from support.builders import case, node, one_plugin_config, pod, run

VZ = "VolumeZone"
GA_ZONE = "topology.kubernetes.io/zone"
GA_REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
CONFLICT = {"code": "UnschedulableAndUnresolvable", "plugin": VZ,
            "reasons": ["node(s) had no available volume zone"]}


def pv(name, labels):
    return {"kind": "PersistentVolume", "metadata": {"name": name, "labels": labels},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "claimRef": {"namespace": "default", "name": f"claim-{name}"}},
            "status": {"phase": "Bound"}}


def claim(name, volume=None, cls=None):
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if volume:
        spec["volumeName"] = volume
    if cls is not None:
        spec["storageClassName"] = cls
    return {"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


def storage_class(name, mode):
    obj = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
           "metadata": {"name": name}, "provisioner": "example.com/disk"}
    if mode:
        obj["volumeBindingMode"] = mode
    return obj


def pod_with(*claims):
    return pod("p", spec={"volumes": [{"name": f"v{i}", "persistentVolumeClaim": {
        "claimName": c}} for i, c in enumerate(claims)]})


def nodes():
    return [node("za", labels={GA_ZONE: "a", GA_REGION: "r1"}),
            node("zb", labels={GA_ZONE: "b", GA_REGION: "r1"}),
            node("beta-a", labels={BETA_ZONE: "a"}),
            node("plain")]


CASES = [
    # beta-a has a topology label (the beta zone) but no GA zone: a GA key
    # does not fall back to the beta label, so it is rejected
    case(name="zone a volume", labels={GA_ZONE: "a"}, feasible=["plain", "za"]),
    case(name="two zones joined by __", labels={GA_ZONE: "a__b"},
         feasible=["plain", "za", "zb"]),
    case(name="zone and region both needed", labels={GA_ZONE: "b", GA_REGION: "r1"},
         feasible=["plain", "zb"]),
    case(name="region only", labels={GA_REGION: "r2"}, feasible=["plain"]),
    case(name="beta zone matches the beta label", labels={BETA_ZONE: "a"},
         feasible=["beta-a", "plain", "za"]),
    # a beta zone on the volume: a node without the beta label is read by its GA label
    case(name="beta key falls back to the GA label", labels={BETA_ZONE: "b"},
         feasible=["plain", "zb"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_filter(case):
    objects = nodes() + [pv("vol", case["labels"]), claim("c", "vol")]
    rec = run(objects, pod_with("c"), one_plugin_config(VZ), "numpy")
    assert sorted(rec["feasible"]) == case["feasible"]
    rejected = [n["metadata"]["name"] for n in nodes()
                if n["metadata"]["name"] not in case["feasible"]]
    assert rec["filter"] == {n: CONFLICT for n in rejected}


def test_a_volume_without_topology_and_a_pod_without_claims_fit_everywhere():
    objects = nodes() + [pv("vol", {"other": "x"}), claim("c", "vol")]
    for incoming in (pod_with("c"), pod("bare")):
        rec = run(objects, incoming, one_plugin_config(VZ), "numpy")
        assert rec["filter"] == {} and len(rec["feasible"]) == 4


def test_every_volume_of_the_pod_must_allow_the_node():
    objects = nodes() + [pv("va", {GA_ZONE: "a"}), pv("vb", {GA_ZONE: "b"}),
                         claim("ca", "va"), claim("cb", "vb")]
    rec = run(objects, pod_with("ca", "cb"), one_plugin_config(VZ), "numpy")
    assert sorted(rec["feasible"]) == ["plain"]


@pytest.mark.parametrize("objects, claim_name, message", [
    ([], "missing", 'persistentvolumeclaim "missing" not found'),
    ([claim("c", "nowhere")], "c", 'persistentvolume "nowhere" not found'),
    ([claim("c", cls="")], "c", "PersistentVolumeClaim had no pv name and storageClass name"),
    ([claim("c", cls="gone")], "c", 'storageclass.storage.k8s.io "gone" not found'),
    ([claim("c", cls="now"), storage_class("now", "Immediate")], "c",
     "PersistentVolume had no name"),
])
def test_prefilter_failures_reject_every_node(objects, claim_name, message):
    rec = run(nodes() + objects, pod_with(claim_name), one_plugin_config(VZ), "numpy")
    want = {"code": "UnschedulableAndUnresolvable", "plugin": VZ, "reasons": [message]}
    assert rec["feasible"] == [] and rec["filter"] == {n: want for n in
                                                       ("beta-a", "plain", "za", "zb")}


def test_an_unbound_wait_for_first_consumer_claim_is_left_to_volume_binding():
    objects = nodes() + [claim("c", cls="late"), storage_class("late", "WaitForFirstConsumer")]
    rec = run(objects, pod_with("c"), one_plugin_config(VZ), "numpy")
    assert rec["filter"] == {} and len(rec["feasible"]) == 4
