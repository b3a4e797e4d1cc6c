"""DRA objects read as a cluster get the API server's checks
(``parsing.dra_validation``): upstream's limits, name rules, uniqueness and
rules between fields, each refusal naming the file, the object and the
field in upstream's words; a refused load or call leaves the Simulation as
it was.  The parsers alone still take what upstream's allocator tests build."""

from __future__ import annotations

import copy

import pytest
import yaml

import tensorsched as ts
from tensorsched.framework.errors import ArgumentError, ManifestError
from tensorsched.framework.parsing.dra import (
    load_resource_slice,
    parse_resource_claim,
    parse_resource_slice,
)
from tensorsched.framework.parsing.manifests import load_objects, parse_objects, parse_pod
from tensorsched.framework.parsing.meta import NameRules
from tensorsched.framework.state.dra_claims import ClaimState

API = "resource.k8s.io/v1"


def _slice(**spec):
    out = {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": "s"},
           "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                    "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0",
                                 "attributes": {"model": {"string": "h100"}},
                                 "capacity": {"memory": {"value": "80Gi"}}}]}}
    out["spec"].update(spec)
    return out


def _dev(**fields):
    d = {"name": "gpu-0", "attributes": {"model": {"string": "h100"}},
         "capacity": {"memory": {"value": "80Gi"}}}
    d.update(fields)
    return d


def _load_file(tmp_path, obj):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([obj]))
    with pytest.raises(ManifestError) as err:
        parse_objects(load_objects(path))
    return err.value


def _policy(**policy):
    return [_dev(allowMultipleAllocations=True,
                 capacity={"bw": {"value": "10", "requestPolicy": policy}})]


_SHARED = [{"name": "gpu-0-counters", "counters": {"memory": {"value": "80Gi"}}}]
_ATTRS_33 = {f"a{i}": {"int": i} for i in range(33)}

SLICE_CASES = [
    # names of attributes and capacities (QualifiedName)
    (dict(devices=[_dev(attributes={"gpu-memory": {"int": 1}})]),
     "spec.devices[0].attributes", 'Invalid value: "gpu-memory": a valid C identifier'),
    (dict(devices=[_dev(attributes={"Bad_Domain/x": {"int": 1}})]),
     "spec.devices[0].attributes", "RFC 1123 subdomain"),
    (dict(devices=[_dev(attributes={"a.example/b/c": {"int": 1}})]),
     "spec.devices[0].attributes", "must not contain more than one slash"),
    (dict(devices=[_dev(attributes={"/x": {"int": 1}})]),
     "spec.devices[0].attributes", "the domain must not be empty"),
    (dict(devices=[_dev(capacity={"m" * 33: {"value": "1"}})]),
     "spec.devices[0].capacity", "may not be more than 32 bytes"),
    (dict(devices=[_dev(attributes=_ATTRS_33)]),
     "spec.devices[0]", "Invalid value: 34: the total number of attributes and capacities "
     "must not exceed 32"),
    # attribute values
    (dict(devices=[_dev(attributes={"model": {"string": "x" * 65}})]),
     "spec.devices[0].attributes.model.string", "Too long: may not be more than 64 bytes"),
    (dict(devices=[_dev(attributes={"v": {"version": "1.0.0-" + "a" * 60}})]),
     "spec.devices[0].attributes.v.version", "Too long"),
    (dict(devices=[_dev(attributes={"model": {}})]),
     "spec.devices[0].attributes.model", "exactly one value must be specified"),
    (dict(devices=[_dev(attributes={"links": {"strings": []}})]),
     "spec.devices[0].attributes.links.strings", "must not be empty if specified"),
    # taints
    (dict(devices=[_dev(taints=[{"key": "bad key", "effect": "NoSchedule"}])]),
     "spec.devices[0].taints[0].key", 'Invalid value: "bad key"'),
    (dict(devices=[_dev(taints=[{"key": "k", "value": "-bad", "effect": "NoSchedule"}])]),
     "spec.devices[0].taints[0].value", "a valid label must be"),
    (dict(devices=[_dev(taints=[{"key": f"k{i}", "effect": "None"} for i in range(17)])]),
     "spec.devices[0].taints", "Too many: 17: must have at most 16 items"),
    (dict(devices=[_dev(name=f"gpu-{i}", taints=[{"key": "k", "effect": "None"}])
                   for i in range(65)]),
     "spec.devices", "Too many: 65: must have at most 64 items"),
    # the pool and the nodes
    (dict(pool={"name": "Node_1", "generation": 1, "resourceSliceCount": 1}),
     "spec.pool.name", 'Invalid value: "Node_1"'),
    (dict(pool={"name": "a/" + "b" * 253, "generation": 1, "resourceSliceCount": 1}),
     "spec.pool.name", "may not be more than 253 bytes"),
    (dict(nodeName="Node_1"), "spec.nodeName", "RFC 1123 subdomain"),
    (dict(nodeName=None, nodeSelector={"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}),
     "spec.nodeSelector.nodeSelectorTerms", "must have exactly one node selector term"),
    (dict(nodeName=None, nodeSelector={"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In"}]}]}),
     "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values",
     "must be specified when `operator` is 'In' or 'NotIn'"),
    (dict(allNodes=False), "spec.allNodes", "must be either unset or set to true"),
    (dict(nodeName=None, perDeviceNodeSelection=True,
          devices=[_dev(nodeName="Bad_Node")]), "spec.devices[0].nodeName",
     "RFC 1123 subdomain"),
    (dict(devices=[_dev(allNodes=False)]), "spec.devices[0]",
     "can only be set if `perDeviceNodeSelection` is set to true"),
    # counters
    (dict(sharedCounters=_SHARED), "spec", "only one of `sharedCounters` or `devices`"),
    (dict(devices=None, sharedCounters=[dict(_SHARED[0], name=f"c{i}") for i in range(9)]),
     "spec.sharedCounters", "Too many: 9: must have at most 8 items"),
    (dict(devices=None, sharedCounters=_SHARED * 2), "spec.sharedCounters[1]",
     'Duplicate value: "gpu-0-counters"'),
    (dict(devices=None, sharedCounters=[{"name": "Bad_Set", "counters": {"m": {"value": 1}}}]),
     "spec.sharedCounters[0].name", "RFC 1123 label"),
    (dict(devices=None, sharedCounters=[{"name": "c", "counters": {}}]),
     "spec.sharedCounters[0].counters", "Required value"),
    (dict(devices=[_dev(consumesCounters=[
        {"counterSet": f"c{i}", "counters": {"m": {"value": "1"}}} for i in range(3)])]),
     "spec.devices[0].consumesCounters", "Too many: 3: must have at most 2 items"),
    (dict(devices=[_dev(consumesCounters=[
        {"counterSet": "c", "counters": {"Mem_GB": {"value": "1"}}}])]),
     "spec.devices[0].consumesCounters[0].counters", 'Invalid value: "Mem_GB"'),
    # consumable capacity's request policy
    (dict(devices=[_dev(capacity={"bw": {"value": "10", "requestPolicy": {"default": "1"}}})]),
     "spec.devices[0].capacity.bw.requestPolicy",
     "Forbidden: allowMultipleAllocations must be true"),
    (dict(devices=_policy(default="2", validValues=["4", "2"])),
     "spec.devices[0].capacity.bw.requestPolicy.validValues[1]",
     "values must be sorted in ascending order"),
    (dict(devices=_policy(validValues=["2", "4"])),
     "spec.devices[0].capacity.bw.requestPolicy.default", "required when validValues"),
    (dict(devices=_policy(default="3", validValues=["2", "4"])),
     "spec.devices[0].capacity.bw.requestPolicy.validValues",
     "default value is not valid according to the requestPolicy"),
    (dict(devices=_policy(default="2", validValues=["2", "20"])),
     "spec.devices[0].capacity.bw.requestPolicy.validValues[1]",
     "option is larger than capacity value: 10"),
    # at the bound the default breaks, with the default's value, as upstream
    (dict(devices=_policy(default="1", validRange={"min": "2"})),
     "spec.devices[0].capacity.bw.requestPolicy.validRange.min",
     'Invalid value: "1": default is less than min: 2'),
    (dict(devices=_policy(default="3", validRange={"min": "2", "step": "2"})),
     "spec.devices[0].capacity.bw.requestPolicy.validRange.step",
     "value is not a multiple of a given step (2) from (2)"),
    # binding conditions
    (dict(devices=[_dev(bindingConditions=["ready"])]),
     "spec.devices[0].bindingFailureConditions",
     "bindingFailureConditions are required to use bindingConditions"),
    (dict(devices=[_dev(bindingConditions=["ready"], bindingFailureConditions=["ready"])]),
     "spec.devices[0].bindingFailureConditions[0]", "must not overlap"),
]


@pytest.mark.parametrize("spec, field, words", SLICE_CASES)
def test_bad_slices_name_file_object_and_field(tmp_path, spec, field, words):
    err = _load_file(tmp_path, _slice(**spec))
    assert err.field == field, str(err)
    assert words in str(err)
    assert "cluster.yaml" in str(err) and "ResourceSlice s" in str(err)


def test_the_parser_alone_keeps_what_allocator_tests_build():
    """Upstream's allocator tests name attributes freely (the parser takes
    them); read as a cluster the same device is refused, though its shape
    was seen before (the shape memo tells the two apart)."""
    obj = _slice(devices=[_dev(attributes={"gpu-memory": {"int": 1}})])
    assert parse_resource_slice(copy.deepcopy(obj)).devices[0].attributes["gpu-memory"].value == 1
    with pytest.raises(ManifestError, match="C identifier"):
        load_resource_slice(copy.deepcopy(obj))


def test_good_slices_load(tmp_path):
    objs = [
        _slice(devices=[_dev(name=f"gpu-{i}", taints=[{"key": "example.com/broken",
                                                       "value": "yes", "effect": "NoSchedule"}])
                        for i in range(64)]),
        _slice(devices=[_dev(name=f"gpu-{i}") for i in range(128)]),
        _slice(nodeName=None, perDeviceNodeSelection=True,
               devices=[_dev(allNodes=True, allowMultipleAllocations=True,
                             attributes={"gpu.example.com/model": {"string": "h100"},
                                         "links": {"strings": ["a", "b"]}},
                             capacity={"bw": {"value": "10", "requestPolicy": {
                                 "default": "2", "validRange": {"min": "2", "max": "10",
                                                                "step": "2"}}}},
                             consumesCounters=[{"counterSet": "gpu-0-counters",
                                                "counters": {"memory": {"value": "10Gi"}}}],
                             bindingConditions=["ready"],
                             bindingFailureConditions=["failed"])]),
        _slice(devices=None, sharedCounters=_SHARED),
    ]
    for i, o in enumerate(objs):
        o["metadata"]["name"] = f"s{i}"
    assert len(parse_objects(objs).resource_slices) == 4


def _claim(requests, **devices):
    return {"apiVersion": API, "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "ml"},
            "spec": {"devices": dict(requests=requests, **devices)}}


_R = {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}


def _exact(**fields):
    return [{"name": "gpu", "exactly": dict({"deviceClassName": "gpu"}, **fields)}]


CLAIM_CASES = [
    ([dict(_R, name=f"r{i}") for i in range(33)], {},
     "spec.devices.requests", "Too many: 33: must have at most 32 items"),
    ([{"name": "gpu", "exactly": {}}], {},
     "spec.devices.requests[0].exactly.deviceClassName", "Required value"),
    (_exact(deviceClassName="Bad_Class"), {},
     "spec.devices.requests[0].exactly.deviceClassName", 'Invalid value: "Bad_Class"'),
    (_exact(selectors=[{}]), {},
     "spec.devices.requests[0].exactly.selectors[0].cel", "Required value"),
    (_exact(selectors=[{"cel": {"expression": "true"}}] * 33), {},
     "spec.devices.requests[0].exactly.selectors", "Too many: 33"),
    (_exact(selectors=[{"cel": {"expression": "true" + " " * 10240}}]), {},
     "spec.devices.requests[0].exactly.selectors[0].cel.expression",
     "Too long: may not be more than 10240 bytes"),
    (_exact(tolerations=[{"key": "bad key", "operator": "Exists"}]), {},
     "spec.devices.requests[0].exactly.tolerations[0].key", 'Invalid value: "bad key"'),
    (_exact(tolerations=[{"key": "k", "value": "-x"}]), {},
     "spec.devices.requests[0].exactly.tolerations[0].value", "a valid label must be"),
    (_exact(tolerations=[{"operator": "Exists"}] * 17), {},
     "spec.devices.requests[0].exactly.tolerations", "Too many: 17: must have at most 16"),
    (_exact(capacity={"requests": {"gpu-memory": "1Gi"}}), {},
     "spec.devices.requests[0].exactly.capacity.requests", "C identifier"),
    ([{"name": "gpu", "firstAvailable": [{"name": "a"}]}], {},
     "spec.devices.requests[0].firstAvailable[0].deviceClassName", "Required value"),
    ([_R], {"constraints": [{"matchAttribute": "gpu.example.com/numa"}] * 33},
     "spec.devices.constraints", "Too many: 33"),
    ([_R], {"constraints": [{"requests": ["gpu"]}]},
     "spec.devices.constraints[0].matchAttribute", "Required value"),
    ([_R], {"constraints": [{"matchAttribute": "gpu.example.com/numa-node"}]},
     "spec.devices.constraints[0].matchAttribute", "C identifier"),
    ([_R], {"constraints": [{"matchAttribute": "numa"}]},
     "spec.devices.constraints[0].matchAttribute",
     "a fully qualified name must be a domain and a name separated by a slash"),
    ([_R], {"constraints": [{"requests": ["gpu", "gpu"], "matchAttribute": "a.example/n"}]},
     "spec.devices.constraints[0].requests[1]", 'Duplicate value: "gpu"'),
    ([_R], {"constraints": [{"requests": ["gpu/a/b"], "matchAttribute": "a.example/n"}]},
     "spec.devices.constraints[0].requests[0]", "must be the name of a request in the claim"),
    ([_R], {"config": [{"requests": ["cpu"], "opaque": {"driver": "d.example",
                                                       "parameters": {}}}]},
     "spec.devices.config[0].requests[0]", 'Invalid value: "cpu"'),
    ([_R], {"config": [{"opaque": {"driver": "Bad_Driver", "parameters": {}}}]},
     "spec.devices.config[0].opaque.driver", "RFC 1123 subdomain"),
    ([_R], {"config": [{"opaque": {"driver": "d.example"}}]},
     "spec.devices.config[0].opaque.parameters", "Required value"),
    ([_R], {"config": [{"opaque": {"driver": "d.example", "parameters": [1, 2]}}]},
     "spec.devices.config[0].opaque.parameters", "must be a valid JSON object"),
    ([_R], {"config": [{"opaque": {"driver": "d.example", "parameters": {"x": "y" * 10240}}}]},
     "spec.devices.config[0].opaque.parameters", "Too long: may not be more than 10240 bytes"),
]


@pytest.mark.parametrize("requests, devices, field, words", CLAIM_CASES)
def test_bad_claims_and_templates_name_file_object_and_field(tmp_path, requests, devices,
                                                             field, words):
    err = _load_file(tmp_path, _claim(requests, **devices))
    assert err.field == field, str(err)
    assert words in str(err) and "cluster.yaml" in str(err) and "ResourceClaim ml/c" in str(err)
    template = {"apiVersion": API, "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t", "namespace": "ml"},
                "spec": {"spec": _claim(requests, **devices)["spec"]}}
    err = _load_file(tmp_path, template)
    assert err.field == "spec." + field and words in str(err)
    assert "ResourceClaimTemplate ml/t" in str(err)


def test_a_selector_past_the_length_limit_is_refused_by_the_parser_too():
    with pytest.raises(ManifestError, match="Too long"):
        parse_resource_claim(_claim(_exact(selectors=[{"cel": {"expression": "x" * 10241}}])))
    # 10 KiB exactly is within the limit (counted in bytes, as Go's len)
    parse_resource_claim(_claim(_exact(selectors=[{"cel": {"expression": "x" * 10240}}])))
    with pytest.raises(ManifestError, match="Too long"):
        parse_resource_claim(_claim(_exact(selectors=[{"cel": {"expression": "é" * 5121}}])))


def _allocated(results, reserved=()):
    obj = _claim([_R])
    obj["status"] = {"reservedFor": list(reserved)}
    if results is not None:
        obj["status"]["allocation"] = {"devices": {"results": results}}
    return obj


_RESULT = {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}
_POD_REF = {"resource": "pods", "name": "p", "uid": "u1"}


@pytest.mark.parametrize("obj, field, words", [
    (_allocated([dict(_RESULT, request="cpu")]),
     "status.allocation.devices.results[0].request", "must be the name of a request"),
    (_allocated([dict(_RESULT, device="GPU_0")]),
     "status.allocation.devices.results[0].device", "RFC 1123 label"),
    (_allocated([dict(_RESULT, pool="Pool_1")]),
     "status.allocation.devices.results[0].pool", "RFC 1123 subdomain"),
    (_allocated([dict(_RESULT, shareID="AC051FAC-2EAD-46D9-B8B4-4E0FBEB7455D")]),
     "status.allocation.devices.results[0].shareID", "RFC 4122 normalized form"),
    ({**_allocated([_RESULT]), "status": {"allocation": {"devices": {
        "results": [_RESULT], "config": [{"source": "FromClaim", "requests": ["tpu"], "opaque": {
            "driver": "gpu.example.com", "parameters": {}}}]}}}},
     "status.allocation.devices.config[0].requests[0]", "must be the name of a request"),
    (_allocated(None, [_POD_REF]), "status.reservedFor",
     "Forbidden: may not be specified when `allocated` is not set"),
    (_allocated([_RESULT], [_POD_REF, dict(_POD_REF, name="q")]), "status.reservedFor[1]",
     'Duplicate value: "u1"'),
])
def test_bad_claim_status_is_refused(tmp_path, obj, field, words):
    err = _load_file(tmp_path, obj)
    assert err.field == field and words in str(err)


def test_template_labels_are_checked(tmp_path):
    template = {"apiVersion": API, "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t", "namespace": "ml"},
                "spec": {"metadata": {"labels": {"team": "-a-"}},
                         "spec": _claim([_R])["spec"]}}
    err = _load_file(tmp_path, template)
    assert err.field == 'spec.metadata.labels.team' and "a valid label must be" in str(err)


def _class(**spec):
    return {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": "gpu"}, "spec": spec}


@pytest.mark.parametrize("spec, field, words", [
    (dict(selectors=[{}]), "spec.selectors[0].cel", "Required value"),
    (dict(selectors=[{"cel": {"expression": "true"}}] * 33), "spec.selectors", "Too many: 33"),
    (dict(config=[{"opaque": {"driver": "d.example"}}]), "spec.config[0].opaque.parameters",
     "Required value"),
    (dict(config=[{"opaque": {"driver": "d.example", "parameters": {}}}] * 33),
     "spec.config", "Too many: 33"),
    (dict(extendedResourceName="gpu"), "spec.extendedResourceName",
     "must be a valid extended resource name"),
    (dict(extendedResourceName="kubernetes.io/gpu"), "spec.extendedResourceName",
     "must be a valid extended resource name"),
])
def test_bad_device_classes_are_refused(tmp_path, spec, field, words):
    err = _load_file(tmp_path, _class(**spec))
    assert err.field == field and words in str(err) and "DeviceClass gpu" in str(err)


def test_good_device_class_loads():
    cls = _class(selectors=[{"cel": {"expression": "true"}}],
                 config=[{"opaque": {"driver": "GPU.example.com", "parameters": {"a": 1}}}],
                 extendedResourceName="example.com/gpu")
    (rec,) = parse_objects([cls]).device_classes
    assert rec.extended_resource_name == "example.com/gpu"


def _pod(claims):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
            "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one"},
                                        {"name": "nic", "resourceClaimTemplateName": "one"}],
                     "containers": [{"name": "c", "image": "x",
                                     "resources": {"claims": claims}}]}}


@pytest.mark.parametrize("claims, field, words", [
    ([{"name": "gpu", "request": "Big_One"}], "spec.containers[0].resources.claims[0].request",
     'Invalid value: "Big_One"'),
    ([{"name": "gpu", "request": "a"}, {"name": "gpu", "request": "a"}],
     "spec.containers[0].resources.claims[1]", 'Duplicate value: "gpu/a"'),
    ([{"name": "tpu"}], "spec.containers[0].resources.claims[0]",
     'Not found: "tpu": must be one of the names in pod.spec.resourceClaims: gpu, nic'),
])
def test_container_claims_follow_upstream(claims, field, words):
    with pytest.raises(ManifestError) as err:
        parse_pod(_pod(claims))
    assert err.value.field == field and words in str(err.value)
    # one request each of one claim is not a repeat
    parse_pod(_pod([{"name": "gpu", "request": "a"}, {"name": "gpu", "request": "b"},
                    {"name": "gpu"}]))


# --------------------------------------------------------------------------
# through the Simulation facade


def _node(name):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}


def _gpu_cluster():
    return [_node("n1"), _slice(),
            {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": "gpu"},
             "spec": {"selectors": [{"cel": {"expression":
                                             'device.driver == "gpu.example.com"'}}]}},
            {"apiVersion": API, "kind": "ResourceClaimTemplate",
             "metadata": {"name": "one", "namespace": "ml"},
             "spec": {"spec": {"devices": {"requests": [_R]}}}}]


def test_a_cluster_file_with_a_bad_slice_is_refused(tmp_path):
    path = tmp_path / "cluster.yaml"
    objs = _gpu_cluster()
    objs[1] = _slice(devices=[_dev(attributes={"gpu-memory": {"int": 1}})])
    path.write_text(yaml.safe_dump_all(objs))
    with pytest.raises(ManifestError) as err:
        ts.Simulation(str(path), backend="numpy")
    assert str(err.value).startswith(f"{path}#1: ResourceSlice s: spec.devices[0].attributes: "
                                     'Invalid value: "gpu-memory"')


def test_refused_calls_leave_the_simulation_unchanged():
    sim = ts.Simulation(_gpu_cluster(), backend="numpy")
    claims = ClaimState.of(sim.cluster.state)
    slices, agenda = list(claims.slices), list(sim.agenda)
    bad = _slice(nodeName="n2", pool={"name": "n2", "generation": 1, "resourceSliceCount": 1},
                 devices=[_dev(taints=[{"key": "bad key", "effect": "NoSchedule"}])])
    bad["metadata"]["name"] = "n2-gpus"
    with pytest.raises(ArgumentError) as err:
        sim.add_node(_node("n2"), at=10, slices=[bad])
    assert "slices[0]" in str(err.value) and "spec.devices[0].taints[0].key" in str(err.value)
    pod = _pod([{"name": "gpu", "request": "Not_A_Label"}])
    with pytest.raises(ManifestError, match=r"Pod ml/p: spec.containers\[0\].resources"
                                            r".claims\[0\].request"):
        sim.submit([pod], at=5)
    assert list(sim.agenda) == agenda and claims.slices == slices
    sim.run()
    assert sim.summary()["scheduled"] == 0 and list(claims.slices) == slices
    # the same calls, corrected, go through
    good = copy.deepcopy(bad)
    good["spec"]["devices"][0]["taints"][0]["key"] = "example.com/broken"
    sim.add_node(_node("n2"), slices=[good])
    sim.submit([_pod([{"name": "gpu"}])])
    sim.run()
    assert len(ClaimState.of(sim.cluster.state).slices) == 2


def test_results_naming_other_requests_load_with_the_name_rules_off(monkeypatch):
    """Upstream's plugin tests allocate claims by hand (their harness turns
    the name rules off): the results' names are then not held to the claim."""
    obj = _allocated([dict(_RESULT, request="req-2")])
    with pytest.raises(ManifestError, match="must be the name of a request"):
        parse_objects([copy.deepcopy(obj)])
    monkeypatch.setattr(NameRules, "enforced", False)
    (claim,) = parse_objects([obj]).resource_claims
    assert claim.allocation.results[0].request == "req-2"
