"""``plugins.dra_extended``: extended resources that DeviceClasses serve.
Which names each class serves (implicit and explicit, first by name on a
clash), which container requests ask for them (container order, then
resource name), which of them a node lacks, and the claim the scheduler
makes for a pod: owned by it, annotated, one ExactCount request per
(container, resource)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import parse_node, parse_pod
from tensorsched.framework.plugins import dra_extended as X
from tensorsched.generators.clusters import node_dict, pod_dict


def cls(ext=None):
    return SimpleNamespace(extended_resource_name=ext)


def pod_requesting(*containers, name="p"):
    """A pod whose containers request the given {resource: quantity} maps."""
    d = pod_dict(name, namespace="ns", cpu=None, memory=None)
    d["metadata"]["uid"] = "uid-p"
    d["spec"]["containers"] = [{"name": f"c{i}", "image": "i",
                                "resources": {"requests": dict(r)}}
                               for i, r in enumerate(containers)]
    return parse_pod(d)


def test_resource_classes_implicit_and_explicit_names():
    served = X.resource_classes({"gpu": cls("example.com/gpu"), "fpga": cls()})
    assert served == {X.IMPLICIT_PREFIX + "gpu": "gpu", X.IMPLICIT_PREFIX + "fpga": "fpga",
                      "example.com/gpu": "gpu"}


def test_the_first_class_by_name_serves_a_shared_name():
    served = X.resource_classes({"zeta": cls("example.com/gpu"), "alpha": cls("example.com/gpu")})
    assert served["example.com/gpu"] == "alpha"


def test_may_request_looks_for_a_domain_prefixed_request():
    assert X.may_request(pod_requesting({"example.com/gpu": "1"}))
    assert not X.may_request(pod_requesting({"cpu": "1", "memory": "1Gi"}))
    assert not X.may_request(SimpleNamespace(obj=None))


def test_extended_requests_in_container_then_name_order():
    served = {"example.com/b": "cb", "example.com/a": "ca"}
    rec = pod_requesting({"example.com/b": "2", "example.com/a": "1", "cpu": "1"},
                         {"example.com/a": "0"}, {"example.com/b": "3", "other.io/x": "1"})
    got = X.extended_requests(rec, served)
    assert got == [X.ExtendedRequest(0, "example.com/a", "ca", 1),
                   X.ExtendedRequest(0, "example.com/b", "cb", 2),
                   X.ExtendedRequest(2, "example.com/b", "cb", 3)]
    assert X.extended_requests(rec, {}) == []



@pytest.mark.parametrize("bad", ["abc", "1.2.3", None, True])
def test_a_bad_quantity_is_a_manifest_error_naming_the_pod_and_field(bad):
    # parse_pod refuses these; a record whose object carries one anyway
    # (built another way) gets the project's error, not a bare ValueError
    rec = pod_requesting({"cpu": "1"}, {"example.com/a": "1"})
    rec.obj["spec"]["containers"][1]["resources"]["requests"]["example.com/a"] = bad
    with pytest.raises(ManifestError) as info:
        X.extended_requests(rec, {"example.com/a": "ca"})
    assert info.value.obj == "Pod ns/p"
    assert info.value.field == 'spec.containers[1].resources.requests["example.com/a"]'
    assert "quantity" in info.value.problem

def test_lacking_is_what_the_node_does_not_offer_itself():
    reqs = [X.ExtendedRequest(0, "example.com/a", "ca", 1),
            X.ExtendedRequest(0, "example.com/b", "cb", 1)]
    offers_a = parse_node(node_dict("n", extra={"example.com/a": "4", "example.com/b": "0"}))
    assert X.lacking(offers_a, reqs) == (1,)
    assert X.lacking(parse_node(node_dict("m")), reqs) == (0, 1)


def test_the_claim_made_for_a_pod():
    rec = pod_requesting({"example.com/a": "1", "example.com/b": "2"}, {"example.com/a": "3"})
    reqs = X.extended_requests(rec, {"example.com/a": "ca", "example.com/b": "cb"})
    claim = X.claim_record(rec, reqs)
    assert claim.namespace == "ns" and claim.name == "p-extended-resources-0"
    assert X.is_extended_claim(claim)
    meta = claim.obj["metadata"]
    assert meta["generateName"] == "p-extended-resources-"
    assert meta["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "p",
                                        "uid": "uid-p", "controller": True}]
    got = [(r.name, r.exactly.device_class_name, r.exactly.count, r.exactly.allocation_mode)
           for r in claim.requests]
    assert got == [("container-0-request-0", "ca", 1, "ExactCount"),
                   ("container-0-request-1", "cb", 2, "ExactCount"),
                   ("container-1-request-0", "ca", 3, "ExactCount")]


def test_other_claims_are_not_extended_claims():
    assert not X.is_extended_claim(SimpleNamespace(obj={"metadata": {"annotations": {
        X.CLAIM_ANNOTATION: "false"}}}))
    assert not X.is_extended_claim(SimpleNamespace(obj=None))
