"""Fields the API does not have (``parsing.dra_fields``): a new DRA object
(or a new pod's claim entries) with one is refused as the API server's
strict decoding refuses it (``kubectl``'s default ``--validate=strict``),
naming the file, the object and every such field by its path, nothing of
the batch kept; a stored object (``metadata.resourceVersion`` set: a dump)
loads, with one warning line naming its fields; what tensorsched itself
writes has none."""

from __future__ import annotations

import copy
from fractions import Fraction

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorsched as ts
from tensorsched.cli import main
from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.dra import parse_resource_claim
from tensorsched.framework.parsing.dra_fields import (
    STRUCTS,
    pod_claim_unknown_fields,
    unknown_fields,
)
from tensorsched.framework.parsing.manifests import (
    ignored_kinds_warning,
    load_objects,
    parse_objects,
)
from tensorsched.framework.parsing.strict_fields import UnknownFieldWarning
from tensorsched.framework.records.dra_records import (
    AllocatedConfig,
    AllocationResult,
    AttrValue,
    DeviceConfig,
    DeviceRequestAllocationResult,
    DeviceToleration,
)
from tensorsched.framework.state.dra_claims import ClaimState
from tensorsched.generators import dra_clusters

API = "resource.k8s.io/v1"
_OWNER = {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u", "controller": True,
          "blockOwnerDeletion": True}
_MANAGED = {"manager": "m", "operation": "Update", "apiVersion": API,
            "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:anything": {}}}}
_OPAQUE = {"driver": "gpu.example.com", "parameters": {"anyKey": {"nested": 1}}}


def _meta(name, namespace=None):
    meta = {"name": name, "labels": {"a": "b"}, "annotations": {"c": "d"},
            "ownerReferences": [dict(_OWNER)], "managedFields": [copy.deepcopy(_MANAGED)],
            "uid": "5f0a7c1e-1111-4222-8333-944455556666", "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["x.example.com/f"]}
    if namespace:
        meta["namespace"] = namespace
    return meta


def device_class():
    return {"apiVersion": API, "kind": "DeviceClass", "metadata": _meta("gpu"),
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
                     "config": [{"opaque": copy.deepcopy(_OPAQUE)}],
                     "extendedResourceName": "example.com/gpu"}}


def device_slice():
    return {"apiVersion": API, "kind": "ResourceSlice", "metadata": _meta("n1-gpus"),
            "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                     "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{
                         "name": "gpu-0",
                         "attributes": {"model": {"string": "h100"}, "cores": {"int": 4}},
                         "capacity": {"memory": {"value": "80Gi", "requestPolicy": {
                             "default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}}},
                         "allowMultipleAllocations": True,
                         "taints": [{"key": "example.com/t", "value": "v",
                                     "effect": "NoSchedule"}],
                         "consumesCounters": [{"counterSet": "gpu-0-counters",
                                               "counters": {"mem": {"value": "1"}}}]}]}}


def counter_slice():
    return {"apiVersion": API, "kind": "ResourceSlice", "metadata": _meta("counters"),
            "spec": {"driver": "gpu.example.com",
                     "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "zone", "operator": "In", "values": ["a"]}]}]},
                     "pool": {"name": "shared", "generation": 1, "resourceSliceCount": 1},
                     "sharedCounters": [{"name": "gpu-0-counters",
                                         "counters": {"mem": {"value": "1"}}}]}}


_RESULT = {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}


def claim():
    return {"apiVersion": API, "kind": "ResourceClaim", "metadata": _meta("c", "ml"),
            "spec": {"devices": {
                "requests": [
                    {"name": "gpu", "exactly": {
                        "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1,
                        "selectors": [{"cel": {"expression": "true"}}],
                        "tolerations": [{"key": "example.com/t", "operator": "Exists"}],
                        "capacity": {"requests": {"memory": "1Gi"}}}},
                    {"name": "any", "firstAvailable": [
                        {"name": "big", "deviceClassName": "gpu", "count": 2},
                        {"name": "small", "deviceClassName": "gpu"}]}],
                "constraints": [{"requests": ["gpu", "any"],
                                 "matchAttribute": "gpu.example.com/model"}],
                "config": [{"requests": ["gpu"], "opaque": copy.deepcopy(_OPAQUE)}]}},
            "status": {
                "allocation": {
                    "devices": {"results": [dict(_RESULT)],
                                "config": [{"source": "FromClaim", "requests": ["gpu"],
                                            "opaque": copy.deepcopy(_OPAQUE)}]},
                    "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]},
                    "allocationTimestamp": "2026-01-01T00:00:00Z"},
                "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}],
                "devices": [{"driver": "gpu.example.com", "pool": "n1", "device": "gpu-0",
                             "conditions": [{"type": "Ready", "status": "True",
                                             "lastTransitionTime": "2026-01-01T00:00:00Z",
                                             "reason": "Configured", "message": ""}],
                             "data": {"free": {"form": True}},
                             "networkData": {"interfaceName": "eth1",
                                             "ips": ["10.0.0.1/24"],
                                             "hardwareAddress": "aa:bb"}}]}}


def template():
    return {"apiVersion": API, "kind": "ResourceClaimTemplate", "metadata": _meta("t", "ml"),
            "spec": {"metadata": {"labels": {"team": "a"}},
                     "spec": {"devices": {"requests": [
                         {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}}


def pod():
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
            "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
                     "initContainers": [{"name": "i", "image": "x",
                                         "resources": {"claims": [{"name": "gpu"}]}}],
                     "containers": [{"name": "c", "image": "x",
                                     "resources": {"claims": [{"name": "gpu",
                                                               "request": "gpu"}]}}]}}


def _at(obj, path):
    """The mapping at ``path`` (dots and [i]) of ``obj``."""
    node = obj
    for part in filter(None, path.replace("[", ".[").split(".")):
        node = node[int(part[1:-1])] if part.startswith("[") else node[part]
    return node


# (a new object, the mapping to misspell a field in, the misspelled field)
CASES = [
    (device_class, "", "Spec"),
    (device_class, "metadata", "labelz"),
    (device_class, "metadata.ownerReferences[0]", "Controller"),
    (device_class, "metadata.managedFields[0]", "fieldsv1"),
    (device_class, "spec", "selector"),
    (device_class, "spec.selectors[0]", "CEL"),
    (device_class, "spec.selectors[0].cel", "expresion"),
    (device_class, "spec.config[0]", "opaqe"),
    (device_class, "spec.config[0].opaque", "Driver"),
    (device_slice, "spec", "nodename"),
    (device_slice, "spec.pool", "generaton"),
    (device_slice, "spec.devices[0]", "attribute"),
    (device_slice, "spec.devices[0].attributes.model", "String"),
    (device_slice, "spec.devices[0].capacity.memory", "Value"),
    (device_slice, "spec.devices[0].capacity.memory.requestPolicy", "Default"),
    (device_slice, "spec.devices[0].capacity.memory.requestPolicy.validRange", "Min"),
    (device_slice, "spec.devices[0].taints[0]", "Effect"),
    (device_slice, "spec.devices[0].consumesCounters[0]", "counterset"),
    (device_slice, "spec.devices[0].consumesCounters[0].counters.mem", "Value"),
    (counter_slice, "spec.nodeSelector", "nodeselectorTerms"),
    (counter_slice, "spec.nodeSelector.nodeSelectorTerms[0]", "matchexpressions"),
    (counter_slice, "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0]", "Values"),
    (counter_slice, "spec.sharedCounters[0]", "counter"),
    (counter_slice, "spec.sharedCounters[0].counters.mem", "val"),
    (claim, "spec", "Devices"),
    (claim, "spec.devices", "request"),
    (claim, "spec.devices.requests[0]", "Exactly"),
    (claim, "spec.devices.requests[0].exactly", "allocationmode"),
    (claim, "spec.devices.requests[0].exactly.selectors[0].cel", "expr"),
    (claim, "spec.devices.requests[0].exactly.tolerations[0]", "tolerationseconds"),
    (claim, "spec.devices.requests[0].exactly.capacity", "request"),
    (claim, "spec.devices.requests[1].firstAvailable[0]", "adminAccess"),
    (claim, "spec.devices.constraints[0]", "matchattribute"),
    (claim, "spec.devices.config[0]", "Requests"),
    (claim, "spec.devices.config[0].opaque", "params"),
    (claim, "status", "allocations"),
    (claim, "status.reservedFor[0]", "UID"),
    (claim, "status.allocation", "nodeselector"),
    (claim, "status.allocation.devices", "result"),
    (claim, "status.allocation.devices.results[0]", "Device"),
    (claim, "status.allocation.devices.config[0]", "Source"),
    (claim, "status.allocation.nodeSelector.nodeSelectorTerms[0].matchFields[0]", "Key"),
    (claim, "status.devices[0]", "networkdata"),
    (claim, "status.devices[0].networkData", "ip"),
    (claim, "status.devices[0].conditions[0]", "Reason"),
    (template, "spec", "Spec"),
    (template, "spec.metadata", "label"),
    (template, "spec.spec.devices.requests[0].exactly", "Count"),
    (pod, "spec.resourceClaims[0]", "resourceClaimtemplateName"),
    (pod, "spec.containers[0].resources.claims[0]", "Request"),
    (pod, "spec.initContainers[0].resources.claims[0]", "requests"),
]


def _label(obj):
    meta = obj["metadata"]
    ns = meta.get("namespace")
    return f"{obj['kind']} {ns + '/' if ns else ''}{meta['name']}"


def _cluster(make):
    """``make()`` with what it needs to load beside it."""
    obj = make()
    return [device_slice(), counter_slice(), obj] if make is claim else [obj]


@pytest.mark.parametrize("make", [device_class, device_slice, counter_slice, claim, template,
                                  pod])
def test_the_objects_of_every_case_load_as_written(make):
    objs = _cluster(make)
    assert make is pod or unknown_fields(objs[-1], objs[-1]["kind"]) == []
    got = parse_objects(objs)
    assert ignored_kinds_warning(got) is None


@pytest.mark.parametrize("make, where, field", CASES)
def test_a_new_object_with_an_unknown_field_is_refused_as_kubectl_refuses_it(
        tmp_path, make, where, field):
    objs = _cluster(make)
    obj = objs[-1]
    _at(obj, where)[field] = 1 if field != "Spec" else {}
    path = f"{where}.{field}" if where else field
    file = tmp_path / "cluster.yaml"
    file.write_text(yaml.safe_dump_all(objs))
    with pytest.raises(ManifestError) as err:
        parse_objects(load_objects(file))
    doc = len(objs) - 1
    assert str(err.value) == (f'{file}#{doc}: {_label(obj)}: strict decoding error: '
                              f'unknown field "{path}"')


@pytest.mark.parametrize("make, where, field", CASES)
def test_a_stored_object_with_an_unknown_field_loads_with_a_warning(make, where, field):
    objs = _cluster(make)
    obj = objs[-1]
    obj["metadata"]["resourceVersion"] = "42"
    _at(obj, where)[field] = None if field in ("Spec", "Devices") else 1
    path = f"{where}.{field}" if where else field
    with pytest.warns(UnknownFieldWarning):
        got = parse_objects(objs)
    lines = ignored_kinds_warning(got).splitlines()
    assert lines == [f'warning: {_label(obj)}: unknown field "{path}": tensorsched does not '
                     "model it (a stored object, perhaps from a newer API server); read "
                     "without"]


def test_every_unknown_field_is_named_in_document_order(tmp_path):
    obj = claim()
    obj["spec"]["devices"]["requests"][0]["exactly"]["allocationmode"] = "All"
    obj["spec"]["devices"]["requests"][1]["firstAvailable"][1]["Count"] = 3
    obj["status"]["bogus"] = {}
    objs = [device_slice(), counter_slice(), obj]
    with pytest.raises(ManifestError) as err:
        parse_objects(objs)
    assert err.value.problem == (
        'strict decoding error: unknown field "spec.devices.requests[0].exactly.allocationmode"'
        ', unknown field "spec.devices.requests[1].firstAvailable[1].Count", '
        'unknown field "status.bogus"')
    # stored: one line for the object, naming the three
    obj["metadata"]["resourceVersion"] = "7"
    with pytest.warns(UnknownFieldWarning):
        (line,) = ignored_kinds_warning(parse_objects(objs)).splitlines()
    assert line.startswith("warning: ResourceClaim ml/c: unknown fields "
                           '"spec.devices.requests[0].exactly.allocationmode", '
                           '"spec.devices.requests[1].firstAvailable[1].Count", "status.bogus": '
                           "tensorsched does not model them")


def test_the_issue_case_is_no_longer_read_as_one_device():
    """``exactly: {allocationmode: All}`` used to load as ExactCount of 1."""
    obj = template()
    obj["spec"]["spec"]["devices"]["requests"][0]["exactly"]["allocationmode"] = "All"
    with pytest.raises(ManifestError, match=r'unknown field "spec.spec.devices.requests\[0\]'
                                            r'.exactly.allocationmode"'):
        parse_objects([obj])
    # stored, it is read without the field (ExactCount of 1), and said so
    obj["metadata"]["resourceVersion"] = "1"
    with pytest.warns(UnknownFieldWarning):
        got = parse_objects([obj])
    assert got.resource_claim_templates[0].claim.requests[0].exactly.count == 1
    assert "allocationmode" in ignored_kinds_warning(got)


def test_free_form_fields_are_not_looked_into():
    obj = claim()
    obj["spec"]["devices"]["config"][0]["opaque"]["parameters"] = {"Whatever": {"x": [1]}}
    obj["status"]["devices"][0]["data"] = {"Anything": 1}
    obj["metadata"]["managedFields"][0]["fieldsV1"] = {"f:odd": {}}
    assert unknown_fields(obj, "ResourceClaim") == []


def test_fields_added_after_135_keep_their_own_words():
    obj = device_slice()
    obj["spec"]["devices"][0]["nodeAllocatableResources"] = {"cpu": {"mapping": {}}}
    with pytest.raises(ManifestError, match="not modelled: a field added to resource.k8s.io/v1 "
                                            "after Kubernetes 1.35"):
        parse_objects([obj])


def test_the_parser_alone_does_not_decode_strictly():
    """Upstream's allocator tests build objects without the API server
    (the goldens): ``parse_*`` reads what it models and nothing more."""
    obj = claim()
    obj["spec"]["devices"]["requests"][0]["exactly"]["allocationmode"] = "All"
    assert parse_resource_claim(obj).requests[0].exactly.count == 1


def test_a_pod_with_an_unknown_claim_field_is_refused_and_nothing_is_kept():
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}
    slice_ = device_slice()
    slice_["spec"]["devices"] = [{"name": "gpu-0", "attributes": {"model": {"string": "h100"}}}]
    cls = device_class()
    cls["spec"]["selectors"] = [{"cel": {"expression": "true"}}]
    sim = ts.Simulation([node, slice_, cls, template()], backend="numpy")
    agenda = list(sim.agenda)
    slices = list(ClaimState.of(sim.cluster.state).slices)
    good, bad = pod(), pod()
    good["metadata"]["name"] = "ok"
    bad["spec"]["resourceClaims"][0]["resourceClaimtemplateName"] = "t"
    with pytest.raises(ManifestError, match=r'Pod ml/p: strict decoding error: unknown field '
                                            r'"spec.resourceClaims\[0\].resourceClaimtemplate'):
        sim.submit([good, bad], at=5)
    assert list(sim.agenda) == agenda and ClaimState.of(sim.cluster.state).slices == slices
    sim.submit([good])
    sim.run()
    assert sim.summary()["scheduled"] == 1


# --------------------------------------------------------------------------
# what tensorsched writes has no unknown field


def test_the_tables_name_known_structs_only():
    for fields in STRUCTS.values():
        for value in fields.values():
            assert value is None or value.lstrip("[]{}") in STRUCTS


@pytest.mark.parametrize("generate", [dra_clusters.dra, dra_clusters.dra_gpu])
@pytest.mark.parametrize("stored", [False, True])
def test_the_bench_generators_objects_load_without_a_refusal(generate, stored):
    objs, pods = generate(3, 4)
    objs = copy.deepcopy(objs + pods)
    if stored:
        for o in objs:
            o["metadata"]["resourceVersion"] = "1"
    got = parse_objects(objs)
    assert ignored_kinds_warning(got) is None
    assert len(got.pods) == 4 and got.resource_slices
    for t in got.resource_claim_templates:
        made = t.instantiate("ml", f"{t.name}-x", "5f0a7c1e-1111-4222-8333-944455556666").obj
        assert unknown_fields(made, "ResourceClaim") == []
        assert parse_objects([made]).resource_claims[0].name == f"{t.name}-x"
    assert all(pod_claim_unknown_fields(p) == [] for p in pods)


_names = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)
_tolerations = st.builds(
    DeviceToleration, _names, st.sampled_from(["Equal", "Exists"]), st.just(""),
    st.sampled_from(["", "NoSchedule", "NoExecute"]), st.one_of(st.none(), st.integers(0, 99)))
_results = st.builds(
    DeviceRequestAllocationResult, _names, st.just("gpu.example.com"), _names, _names,
    admin_access=st.one_of(st.none(), st.booleans()),
    tolerations=st.lists(_tolerations, max_size=2).map(tuple),
    binding_conditions=st.lists(_names, max_size=2).map(tuple),
    binding_failure_conditions=st.lists(_names, max_size=2).map(tuple),
    share_id=st.one_of(st.none(), st.just("5f0a7c1e-1111-4222-8333-944455556666")),
    consumed_capacity=st.one_of(st.none(), st.dictionaries(_names, st.integers(0, 9).map(Fraction),
                                                     max_size=2)))
_configs = st.builds(
    AllocatedConfig, st.sampled_from(["FromClass", "FromClaim"]),
    st.lists(_names, max_size=2).map(tuple),
    st.builds(DeviceConfig, st.just("gpu.example.com"), st.just({"Free": {"Form": 1}})))
_attrs = st.one_of(
    st.builds(AttrValue, st.just("int"), st.integers(-5, 5)),
    st.builds(AttrValue, st.just("bool"), st.booleans()),
    st.builds(AttrValue, st.sampled_from(["string", "version"]), st.just("1.0.0")),
    st.builds(AttrValue, st.just("ints"), st.lists(st.integers(0, 3), min_size=1).map(tuple)),
    st.builds(AttrValue, st.just("strings"), st.lists(_names, min_size=1).map(tuple)))


@settings(max_examples=60, deadline=None)
@given(results=st.lists(_results, min_size=1, max_size=3),
       configs=st.lists(_configs, max_size=2),
       node_selector=st.one_of(st.none(), st.just({"nodeSelectorTerms": [{"matchFields": [
           {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]})),
       attrs=st.dictionaries(_names, _attrs, max_size=3))
def test_the_records_writers_emit_known_fields_only(results, configs, node_selector, attrs):
    allocation = AllocationResult(tuple(results), tuple(configs), node_selector).to_dict()
    obj = claim()
    obj["status"] = {"allocation": allocation}
    assert unknown_fields(obj, "ResourceClaim") == []
    device = device_slice()["spec"]["devices"][0]
    device["attributes"] = {k: v.to_dict() for k, v in attrs.items()}
    assert unknown_fields(device, "Device") == []


def test_the_cli_warns_of_a_stored_object_and_refuses_a_new_one(tmp_path, capsys):
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}
    stored = template()
    stored["metadata"]["resourceVersion"] = "3"
    stored["spec"]["spec"]["devices"]["requests"][0]["exactly"]["allocationmode"] = "All"
    file = tmp_path / "cluster.yaml"
    file.write_text(yaml.safe_dump_all([node, stored]))
    assert main(["schedule", "--cluster", str(file)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (f'warning: {file}#1: ResourceClaimTemplate ml/t: unknown field '
                      '"spec.spec.devices.requests[0].exactly.allocationmode": tensorsched '
                      "does not model it (a stored object, perhaps from a newer API server); "
                      "read without")
    del stored["metadata"]["resourceVersion"]
    file.write_text(yaml.safe_dump_all([node, stored]))
    assert main(["schedule", "--cluster", str(file)]) != 0
    err = capsys.readouterr().err
    assert (f'{file}#1: ResourceClaimTemplate ml/t: strict decoding error: unknown field '
            '"spec.spec.devices.requests[0].exactly.allocationmode"') in err
    assert "Traceback" not in err


def test_device_shapes_checked_once_still_refuse_an_unknown_field():
    """Devices are looked into once per shape (the device but its name): a
    shape seen clean, or seen with an unknown field in a stored slice, does
    not let a new slice's unknown field through."""
    parse_objects([device_slice()])             # the clean shape, remembered
    stored = device_slice()
    stored["metadata"]["resourceVersion"] = "9"
    stored["spec"]["devices"][0]["Taints"] = []
    with pytest.warns(UnknownFieldWarning):
        assert "spec.devices[0].Taints" in ignored_kinds_warning(parse_objects([stored]))
    new = device_slice()
    new["spec"]["devices"].append(dict(new["spec"]["devices"][0], name="gpu-1"))
    new["spec"]["devices"][1]["Taints"] = []
    with pytest.raises(ManifestError) as err:
        parse_objects([new])
    assert err.value.problem == ('strict decoding error: unknown field '
                                 '"spec.devices[1].Taints"')
    del stored["metadata"]["resourceVersion"]
    with pytest.raises(ManifestError, match=r'"spec.devices\[0\].Taints"'):
        parse_objects([stored])


def test_a_new_pod_sharing_a_stored_pods_template_is_still_decoded_strictly():
    """Pods of one template share a parse; a stored pod's unknown claim
    field (warned) must not let a new pod with the same spec through."""
    stored, new = pod(), pod()
    for p, name in ((stored, "a"), (new, "b")):
        p["metadata"]["name"] = name
        p["spec"]["resourceClaims"][0]["resourceClaimtemplateName"] = "t"
    stored["metadata"]["resourceVersion"] = "7"
    with pytest.raises(ManifestError, match=r'Pod ml/b: strict decoding error: unknown field '
                                            r'"spec.resourceClaims\[0\].resourceClaimtemplate'):
        parse_objects([stored, new])
    with pytest.warns(UnknownFieldWarning):
        got = parse_objects([stored])
    assert "resourceClaimtemplateName" in ignored_kinds_warning(got)
