"""Pods' spec.resourceClaims and containers' resources.claims (framework/parsing/pod_claims.py)."""

from __future__ import annotations

import copy

import pytest

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import parse_objects, parse_pod
from tensorsched.framework.parsing.meta import ObjectContext
from tensorsched.framework.parsing.pod_claims import PodClaim, claim_statuses

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"},
                           {"name": "shared", "resourceClaimName": "big-claim"}],
        "containers": [{"name": "c", "image": "x",
                        "resources": {"claims": [{"name": "gpu"},
                                                 {"name": "shared", "request": "req-1"}]}}],
    },
}


def _pod(**spec_changes):
    pod = copy.deepcopy(POD)
    pod["spec"].update(spec_changes)
    return pod


def test_claims_are_parsed_in_order():
    rec = parse_pod(POD)
    assert rec.resource_claims == (PodClaim("gpu", "", "one-gpu"),
                                   PodClaim("shared", "big-claim", ""))


def test_pod_without_claims_has_none():
    rec = parse_pod(_pod(resourceClaims=None, containers=[{"name": "c", "image": "x"}]))
    assert rec.resource_claims == ()


@pytest.mark.parametrize("claims, field, words", [
    ([{"name": "gpu"}], "spec.resourceClaims[0]", "must specify one of"),
    ([{"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}],
     "spec.resourceClaims[0]", "at most one of"),
    ([{"resourceClaimName": "a"}], "spec.resourceClaims[0].name", "Required value"),
    ([{"name": "GPU", "resourceClaimName": "a"}], "spec.resourceClaims[0].name",
     "RFC 1123 label"),
    ([{"name": "a", "resourceClaimName": "a"}, {"name": "a", "resourceClaimName": "b"}],
     "spec.resourceClaims[1].name", "Duplicate value"),
    ([{"name": "a", "resourceClaimName": "Bad_Name"}],
     "spec.resourceClaims[0].resourceClaimName", "RFC 1123 subdomain"),
    ("gpu", "spec.resourceClaims", "must be a list"),
])
def test_bad_pod_claims_name_the_field(claims, field, words):
    with pytest.raises(ManifestError) as e:
        parse_pod(_pod(resourceClaims=claims, containers=[]))
    assert e.value.field == field
    assert words in str(e.value)
    assert "Pod default/p" in str(e.value)


def test_container_must_name_a_pod_claim():
    bad = _pod(containers=[{"name": "c", "resources": {"claims": [{"name": "nope"}]}}])
    with pytest.raises(ManifestError, match="must be one of the names in pod.spec.resourceClaims"):
        parse_pod(bad)
    empty = _pod(resourceClaims=None,
                 containers=[{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}])
    with pytest.raises(ManifestError, match="which is empty") as e:
        parse_pod(empty)
    # at the entry, as upstream's NotFound
    assert e.value.field == "spec.containers[0].resources.claims[0]"
    unnamed = _pod(containers=[{"name": "c", "resources": {"claims": [{"request": "a"}]}}])
    with pytest.raises(ManifestError) as e:
        parse_pod(unnamed)
    assert e.value.field == "spec.containers[0].resources.claims[0]"
    assert e.value.problem == "Required value"
    dup = _pod(initContainers=[{"name": "i", "resources": {"claims": [{"name": "gpu"},
                                                                       {"name": "gpu"}]}}])
    with pytest.raises(ManifestError, match="Duplicate value") as e:
        parse_pod(dup)
    assert e.value.field == "spec.initContainers[0].resources.claims[1]"


def test_pods_of_one_template_with_other_claims_do_not_share_a_record():
    a = copy.deepcopy(POD)
    b = copy.deepcopy(POD)
    b["metadata"]["name"] = "q"
    b["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = "two-gpus"
    pods = parse_objects([a, b]).pods
    assert pods[0].resource_claims[0].template_name == "one-gpu"
    assert pods[1].resource_claims[0].template_name == "two-gpus"


def test_claim_statuses():
    ctx = ObjectContext("Pod default/p")
    got = claim_statuses(ctx, {"resourceClaimStatuses": [
        {"name": "gpu", "resourceClaimName": "p-gpu-x1"}, {"name": "none"}]})
    assert got == {"gpu": "p-gpu-x1", "none": ""}
    with pytest.raises(ManifestError, match="required"):
        claim_statuses(ctx, {"resourceClaimStatuses": [{"resourceClaimName": "x"}]})
