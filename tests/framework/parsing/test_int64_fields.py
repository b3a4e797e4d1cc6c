"""int64 and int32 fields past their type are refused at load (the API
server's decoder refuses them), never saturated or wrapped: DRA attribute
ints, request counts and toleration seconds, a ResourceSlice's pool
counters, a CSINode's attach limit; the bounds themselves load."""

import pytest

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.dra import parse_resource_claim, parse_resource_slice
from tensorsched.framework.parsing.manifests import parse_objects


def refused(obj) -> ManifestError:
    with pytest.raises(ManifestError) as info:
        parse_objects([obj])
    return info.value




def dra_slice(**device):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "s"},
            "spec": {"driver": "d", "nodeName": "n", "devices": [{"name": "dev", **device}],
                     "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}}}


def dra_claim(**exactly):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {"devices": {"requests": [
                {"name": "r", "exactly": {"deviceClassName": "gpu", **exactly}}]}}}


@pytest.mark.parametrize("parse, obj, field", [
    (parse_resource_slice, dra_slice(attributes={"index": {"int": 2**63}}),
     "spec.devices[0].attributes.index.int"),
    (parse_resource_slice, dra_slice(attributes={"index": {"int": -(2**63) - 1}}),
     "spec.devices[0].attributes.index.int"),
    (parse_resource_claim, dra_claim(count=2**63), "spec.devices.requests[0].exactly.count"),
    (parse_resource_slice, {**dra_slice(), "spec": {**dra_slice()["spec"], "pool": {
        "name": "p", "generation": 2**63, "resourceSliceCount": 1}}}, "spec.pool.generation"),
    (parse_resource_claim, dra_claim(tolerations=[
        {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 2**63}]),
     "spec.devices.requests[0].exactly.tolerations[0].tolerationSeconds"),
])
def test_dra_int64_fields_past_int64_are_refused(parse, obj, field):
    with pytest.raises(ManifestError) as info:
        parse(obj)
    assert info.value.field == field and "(an int64)" in info.value.problem, str(info.value)


def test_dra_int64_fields_at_the_bounds_load():
    s = parse_resource_slice(dra_slice(attributes={"index": {"int": 2**63 - 1}}))
    assert s.devices[0].attributes["index"].value == 2**63 - 1
    c = parse_resource_claim(dra_claim(count=2**63 - 1, tolerations=[
        {"key": "k", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": -(2**63)}]))
    assert c.requests[0].exactly.count == 2**63 - 1


def test_csinode_count_past_int32_is_refused():
    obj = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n1"},
           "spec": {"drivers": [{"name": "d", "allocatable": {"count": 2**31}}]}}
    err = refused(obj)
    assert (err.obj, err.field) == ("CSINode n1", "spec.drivers[0].allocatable.count")
    assert "(an int32), got 2147483648" in err.problem
    obj["spec"]["drivers"][0]["allocatable"]["count"] = 2**31 - 1
    assert parse_objects([obj]).csi_nodes[0].limits == {"d": 2**31 - 1}
