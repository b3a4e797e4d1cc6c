"""Cases of upstream's DRA validation tests (``pkg/apis/resource/validation``:
the ResourceSlice, ResourceClaim, ResourceClaimTemplate and DeviceClass
tests), written as manifests and read from a cluster file: each bad one is
refused naming the file, the object, the field and upstream's words; each
good one loads.  Also the rules upstream's validation has and the parsers
once lacked or worded otherwise: tolerations with an empty key,
``firstAvailable: []`` beside ``exactly``, an allocation's tolerations and
binding conditions, ``status.devices``."""

from __future__ import annotations

import copy
import ipaddress

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.dra_device_status import interface_address_errors
from tensorsched.framework.parsing.manifests import load_objects, parse_objects
from tensorsched.framework.records.dra_records import DeviceTaint

API = "resource.k8s.io/v1"
GOOD_UID = "ac051fac-2ead-46d9-b8b4-4e0fbeb7455d"
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
             "or '-', and must start and end with an alphanumeric character")


def _read(tmp_path, *objs):
    """The objects written to a cluster file and read back as a cluster."""
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(list(objs)))
    return parse_objects(load_objects(path))


def _refused(tmp_path, obj, field, *words):
    with pytest.raises(ManifestError) as err:
        _read(tmp_path, obj)
    text = str(err.value)
    assert err.value.field == field, text
    assert "cluster.yaml" in text
    for w in words:
        assert w in text, text
    return text


# --------------------------------------------------------------------------
# ResourceSlice (validation_resourceslice_test.go)


def _dev(i=0, **fields):
    d = {"name": f"device-{i}",
         "attributes": {"int": {"int": 42}, "string": {"string": "hello world"},
                        "version": {"version": "1.2.3"}, "bool": {"bool": True}},
         "capacity": {"memory": {"value": "1Gi"}}}
    d.update(fields)
    return d


def _slice(n=1, **spec):
    out = {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": "foo"},
           "spec": {"driver": "test.example.com", "nodeName": "foo",
                    "pool": {"name": "foo", "resourceSliceCount": 1},
                    "devices": [_dev(i) for i in range(n)]}}
    out["spec"].update(spec)
    return out


def _each(n, **fields):
    return [_dev(i, **fields) for i in range(n)]


def _lists(n, attribute):
    return [_dev(i, attributes=dict(_dev()["attributes"], l=attribute)) for i in range(n)]


GOOD_SLICES = {
    "good": _slice(128),
    "good-taints": _slice(devices=_each(64, taints=[{"key": "example.com/taint",
                                                      "effect": "NoExecute"}])),
    "good-pool-name": _slice(pool={"name": "x" * 253, "resourceSliceCount": 1}),
    "max-devices-with-list-of-int-attributes": _slice(devices=_lists(64, {"ints": [1, 2, 3]})),
    "max-devices-with-list-of-version-attributes": _slice(
        devices=_lists(64, {"versions": ["1.0.0", "2.0.0", "3.0.0"]})),
    "good-list-attribute": _slice(devices=[
        _dev(0, attributes={"foo": {"bools": [True]}}),
        _dev(1, attributes={"foo": {"ints": [1]}}),
        _dev(2, attributes={"foo": {"strings": ["x"]}}),
        _dev(3, attributes={"foo": {"versions": ["1.2.3"]}})]),
    "max-attribute-values": _slice(devices=[_dev(0, attributes={
        "a": {"strings": ["x"] * 24}, "b": {"ints": list(range(24))}})]),
    "good-per-device-node-selection": _slice(
        nodeName=None, perDeviceNodeSelection=True,
        devices=[_dev(0, nodeName="worker"), _dev(1, allNodes=True),
                 _dev(2, nodeSelector={"nodeSelectorTerms": [{"matchFields": [
                     {"key": "metadata.name", "operator": "In", "values": ["worker"]}]}]})]),
    "good-binding-conditions": _slice(devices=_each(
        2, bindingConditions=["example.com/ready"], bindingFailureConditions=["failed"])),
    "good-consumable-capacity": _slice(devices=[_dev(0, allowMultipleAllocations=True, capacity={
        "a": {"value": "100", "requestPolicy": {"default": "10",
                                                "validValues": ["5", "10", "100"]}}})]),
}


@pytest.mark.parametrize("name", sorted(GOOD_SLICES))
def test_upstream_good_slices_load(tmp_path, name):
    (rec,) = _read(tmp_path, GOOD_SLICES[name]).resource_slices
    assert len(rec.devices) == len(GOOD_SLICES[name]["spec"]["devices"])


@pytest.mark.timeout(30)
def test_a_million_devices_are_refused_at_once():
    # strict decoding looked into every device first: ~16 s to refuse
    import time
    raw = _slice()
    raw["spec"]["devices"] = raw["spec"]["devices"] * 1_000_000
    t0 = time.process_time()
    with pytest.raises(ManifestError) as exc:
        parse_objects([raw])
    assert time.process_time() - t0 < 2
    assert (exc.value.field, exc.value.problem) == (
        "spec.devices", "Too many: 1000000: must have at most 128 items")


_VALUES_49 = {"a": {"strings": ["x"] * 25}, "b": {"ints": list(range(24))}}

BAD_SLICES = [
    ("too-large", _slice(129), "spec.devices", "Too many: 129: must have at most 128 items"),
    ("too-large-taints", _slice(devices=_each(65, taints=[{"key": "example.com/taint",
                                                           "effect": "NoExecute"}])),
     "spec.devices", "Too many: 65: must have at most 64 items"),
    ("too-many-devices-with-list-of-int-attributes",
     _slice(devices=_lists(1, {"ints": [1, 2, 3]}) + [_dev(i) for i in range(1, 65)]),
     "spec.devices", "Too many: 65: must have at most 64 items"),
    ("too-many-attribute-values", _slice(devices=[_dev(0, attributes=_VALUES_49)]),
     "spec.devices[0]", "Invalid value: 49: the total number of attribute values must not "
     "exceed 48"),
    ("bad-pool-generation", _slice(pool={"name": "foo", "generation": -1,
                                         "resourceSliceCount": 1}),
     "spec.pool.generation", "Invalid value: -1: must be greater than or equal to zero"),
    ("bad-pool-slice-count", _slice(pool={"name": "foo", "resourceSliceCount": 0}),
     "spec.pool.resourceSliceCount", "Invalid value: 0: must be greater than zero"),
    ("missing-pool-slice-count", _slice(pool={"name": "foo"}),
     "spec.pool.resourceSliceCount", "Invalid value: 0: must be greater than zero"),
    ("missing-pool-name", _slice(pool={"name": "", "resourceSliceCount": 1}),
     "spec.pool.name", "Required value"),
    ("bad-pool", _slice(pool={"name": "x/" * 126 + "xy", "resourceSliceCount": 1}),
     "spec.pool.name", "Too long: may not be more than 253 bytes"),
    ("empty-node-name", _slice(nodeName=""),
     "spec.nodeName", 'Invalid value: "": must be either unset or set to a non-empty string'),
    ("empty-device-node-name", _slice(nodeName=None, perDeviceNodeSelection=True,
                                      devices=[_dev(0, nodeName="")]),
     "spec.devices[0].nodeName", 'Invalid value: "": must not be empty'),
    ("bad-node-selector-value", _slice(nodeName=None, nodeSelector={"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a b"]}]}]}),
     "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values[0]",
     'Invalid value: "a b": a valid label must be'),
    ("bad-node-selection-all-nodes", _slice(allNodes=True),
     "spec", 'Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, '
     "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields "
     "are set"),
    ("empty-node-selection", _slice(nodeName=None),
     "spec", "Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
     "`perDeviceNodeSelection` is required"),
    ("all-nodes-false", _slice(allNodes=False), "spec.allNodes",
     "Invalid value: false: must be either unset or set to true"),
    ("device-node-selection-twice", _slice(nodeName=None, perDeviceNodeSelection=True,
                                           devices=[_dev(0, nodeName="worker", allNodes=True)]),
     "spec.devices[0]", 'Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, '
     "`nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true"),
    ("device-node-selection-missing", _slice(nodeName=None, perDeviceNodeSelection=True),
     "spec.devices[0]", "Required value: exactly one of `nodeName`, `nodeSelector`, or "
     "`allNodes` is required"),
    ("device-node-name-without-per-device", _slice(devices=[_dev(0, nodeName="")]),
     "spec.devices[0]", "Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can "
     "only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec"),
    ("bad-node-selection", _slice(nodeSelector={"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["worker"]}]}]}),
     "spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
     "is required, but multiple fields are set"),
    ("bad-devices", _slice(3, devices=[_dev(0), _dev(1, name="!@#$%^"), _dev(2)]),
     "spec.devices[1].name", 'Invalid value: "!@#$%^"', LABEL_MSG),
    ("device-without-name", _slice(devices=[{k: v for k, v in _dev(0).items() if k != "name"}]),
     "spec.devices[0].name", 'Invalid value: ""', LABEL_MSG),
    ("consumption-without-counter-set", _slice(devices=[_dev(0, consumesCounters=[
        {"counters": {"memory": {"value": "1Gi"}}}])]),
     "spec.devices[0].consumesCounters[0].counterSet", "Required value"),
    ("missing-driver", _slice(driver=""), "spec.driver", "Required value"),
    ("duplicate-device", _slice(devices=[_dev(0), _dev(0)]),
     "spec.devices[1]", 'Duplicate value: "device-0"'),
    ("bad-attribute-two-values", _slice(devices=[_dev(0, attributes={
        "foo": {"string": "x", "version": "1.2.3"}})]),
     "spec.devices[0].attributes.foo", "exactly one value must be specified"),
    ("bad-attribute-version", _slice(devices=[_dev(0, attributes={"foo": {"version": "x"}})]),
     "spec.devices[0].attributes.foo.version",
     'Invalid value: "x": must be a string compatible with semver.org spec 2.0.0'),
    ("bad-list-attribute-version", _slice(devices=[_dev(0, attributes={
        "foo": {"versions": ["1.0.0", "x" * 65]}})]),
     "spec.devices[0].attributes.foo.versions[1]", "must be a string compatible with semver"),
    ("bad-list-attribute-string", _slice(devices=[_dev(0, attributes={
        "foo": {"strings": ["x" * 65]}})]),
     "spec.devices[0].attributes.foo.strings[0]", "Too long: may not be more than 64 bytes"),
    ("bad-taint-effect", _slice(devices=[_dev(0, taints=[{"key": "example.com/taint",
                                                          "effect": "Sometimes"}])]),
     "spec.devices[0].taints[0].effect",
     'Unsupported value: "Sometimes": supported values: "NoExecute", "NoSchedule", "None"'),
    ("missing-taint-effect", _slice(devices=[_dev(0, taints=[{"key": "example.com/taint"}])]),
     "spec.devices[0].taints[0].effect", "Required value"),
    ("missing-taint-key", _slice(devices=[_dev(0, taints=[{"effect": "NoSchedule"}])]),
     "spec.devices[0].taints[0].key", 'Invalid value: ""', "name part must be non-empty"),
    ("duplicate-valid-values", _slice(devices=[_dev(0, allowMultipleAllocations=True, capacity={
        "a": {"value": "100", "requestPolicy": {"default": "5",
                                                "validValues": ["5", "5.0", "100"]}}})]),
     "spec.devices[0].capacity.a.requestPolicy.validValues[1]", 'Duplicate value: "5"'),
    ("duplicate-binding-condition", _slice(devices=[_dev(0, bindingConditions=["a", "a"],
                                                         bindingFailureConditions=["b"])]),
     "spec.devices[0].bindingConditions[1]", 'Duplicate value: "a"'),
    ("duplicate-counter-set", _slice(devices=None, sharedCounters=[
        {"name": "counterset-0", "counters": {"memory": {"value": "1Gi"}}}] * 2),
     "spec.sharedCounters[1]", 'Duplicate value: "counterset-0"'),
]


@pytest.mark.parametrize("name, obj, field, words", [c[:3] + (c[3:],) for c in BAD_SLICES],
                         ids=[c[0] for c in BAD_SLICES])
def test_upstream_bad_slices_are_refused(tmp_path, name, obj, field, words):
    text = _refused(tmp_path, obj, field, *words)
    assert "ResourceSlice foo" in text


# --------------------------------------------------------------------------
# ResourceClaim and ResourceClaimTemplate (validation_resourceclaim_test.go,
# validation_resourceclaimtemplate_test.go)


def _claim(requests=None, status=None, **devices):
    if requests is None:
        requests = [{"name": "foo", "exactly": {"deviceClassName": "foo",
                                                "allocationMode": "ExactCount", "count": 1}}]
    out = {"apiVersion": API, "kind": "ResourceClaim",
           "metadata": {"name": "foo", "namespace": "ns"},
           "spec": {"devices": dict(requests=requests, **devices)}}
    if status is not None:
        out["status"] = status
    return out


def _template(claim):
    return {"apiVersion": API, "kind": "ResourceClaimTemplate",
            "metadata": {"name": "foo", "namespace": "ns"}, "spec": {"spec": claim["spec"]}}


def _exactly(**fields):
    return [{"name": "foo", "exactly": dict({"deviceClassName": "foo"}, **fields)}]


_FIRST_AVAILABLE = [{"name": "foo", "firstAvailable": [
    {"name": "foo", "deviceClassName": "foo", "allocationMode": "ExactCount", "count": 1},
    {"name": "bar", "deviceClassName": "foo", "allocationMode": "ExactCount", "count": 1}]}]
_OPAQUE = {"opaque": {"driver": "dra.example.com",
                      "parameters": {"kind": "foo", "apiVersion": "dra.example.com/v1"}}}

GOOD_CLAIMS = {
    "good-claim": _claim(),
    "valid-request": _claim(
        [{"name": f"foo{i}", "exactly": {"deviceClassName": "foo"}} for i in range(32)],
        constraints=[{"matchAttribute": "foo/bar"}] * 32, config=[_OPAQUE] * 32),
    "prioritized-list": _claim(_FIRST_AVAILABLE),
    "exactly-beside-empty-first-available": _claim(
        [{"name": "foo", "exactly": {"deviceClassName": "foo"}, "firstAvailable": []}]),
    "toleration-empty-key-equal": _claim(_exactly(tolerations=[
        {"operator": "Equal", "value": "v", "effect": "NoSchedule"}])),
    "toleration-empty-key-exists": _claim(_exactly(tolerations=[{"operator": "Exists"}])),
    "all-mode-count-zero": _claim(_exactly(allocationMode="All", count=0)),
    "match-and-distinct-attribute": _claim(constraints=[
        {"matchAttribute": "foo/bar", "distinctAttribute": "foo/baz"}]),
    "valid-add-allocation-with-sub-requests": _claim(_FIRST_AVAILABLE, status={
        "allocation": {"devices": {"results": [{
            "request": "foo/foo", "driver": "foo", "pool": "foo", "device": "foo",
            "adminAccess": False}]}}}),
    "allocation-with-tolerations-and-binding": _claim(status={"allocation": {"devices": {
        "results": [{"request": "foo", "driver": "foo", "pool": "foo", "device": "foo",
                     "tolerations": [{"operator": "Equal", "value": "v"},
                                     {"key": "example.com/k", "operator": "Exists"}],
                     "bindingConditions": ["example.com/ready"],
                     "bindingFailureConditions": ["example.com/failed"],
                     "shareID": GOOD_UID}]}}}),
    "device-status": _claim(status={
        "allocation": {"devices": {"results": [
            {"request": "foo", "driver": "foo", "pool": "foo", "device": "foo"},
            {"request": "foo", "driver": "foo", "pool": "foo", "device": "foo",
             "shareID": GOOD_UID}]}},
        "devices": [
            {"driver": "foo", "pool": "foo", "device": "foo",
             "conditions": [{"type": f"test-{i}", "status": "True", "reason": "test_reason",
                             "lastTransitionTime": "2026-01-01T00:00:00Z",
                             "observedGeneration": 0} for i in range(8)],
             "data": {"str": "x" * 100},
             "networkData": {"interfaceName": "x" * 256, "hardwareAddress": "x" * 128,
                             "ips": [f"10.9.8.{i}/24" for i in range(15)] + ["2001:db8::1/64"]}},
            {"driver": "foo", "pool": "foo", "device": "foo", "shareID": GOOD_UID}]}),
}


@pytest.mark.parametrize("name", sorted(GOOD_CLAIMS))
def test_upstream_good_claims_and_templates_load(tmp_path, name):
    claim = GOOD_CLAIMS[name]
    (rec,) = _read(tmp_path, claim).resource_claims
    assert len(rec.requests) == len(claim["spec"]["devices"]["requests"])
    (tpl,) = _read(tmp_path, _template(claim)).resource_claim_templates
    assert len(tpl.claim.requests) == len(rec.requests)


def test_an_empty_first_available_beside_exactly_is_the_exact_request(tmp_path):
    (rec,) = _read(tmp_path, GOOD_CLAIMS["exactly-beside-empty-first-available"]).resource_claims
    assert rec.requests[0].exactly.device_class_name == "foo"
    assert not rec.requests[0].first_available


def test_a_toleration_with_an_empty_key_and_equal_matches_by_value(tmp_path):
    """Upstream's matching: no key tolerates every key; Equal then asks
    for the taint's value."""
    (rec,) = _read(tmp_path, GOOD_CLAIMS["toleration-empty-key-equal"]).resource_claims
    (tol,) = rec.requests[0].exactly.tolerations
    assert (tol.key, tol.operator) == ("", "Equal")
    assert tol.tolerates(DeviceTaint("example.com/any", "v", "NoSchedule"))
    assert not tol.tolerates(DeviceTaint("example.com/any", "w", "NoSchedule"))
    assert not tol.tolerates(DeviceTaint("example.com/any", "v", "NoExecute"))


def _result(**fields):
    return dict({"request": "foo", "driver": "foo", "pool": "foo", "device": "foo"}, **fields)


def _allocated(*results, **status):
    return {"allocation": {"devices": {"results": list(results or [_result()])}}, **status}


def _status_device(**fields):
    return dict({"driver": "foo", "pool": "foo", "device": "foo"}, **fields)


def _condition(**fields):
    return dict({"type": "test-0", "status": "True", "reason": "test_reason",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}, **fields)


_RESULTS = "status.allocation.devices.results[0]"
_SPEC_CASES = [
    ("bad-classname", _exactly(deviceClassName="!@#$%^"), {},
     "spec.devices.requests[0].exactly.deviceClassName", 'Invalid value: "!@#$%^"',
     "a lowercase RFC 1123 subdomain must consist of"),
    ("missing-classname", _exactly(deviceClassName=""), {},
     "spec.devices.requests[0].exactly.deviceClassName", "Required value"),
    ("too-many-requests",
     [{"name": f"foo{i}", "exactly": {"deviceClassName": "foo"}} for i in range(33)], {},
     "spec.devices.requests", "Too many: 33: must have at most 32 items"),
    ("bad-constraint-request", None, {"constraints": [
        {"requests": ["foo", "!@#$%^"], "matchAttribute": "foo/bar"}]},
     "spec.devices.constraints[0].requests[1]", 'Invalid value: "!@#$%^"', LABEL_MSG),
    ("constraint-missing-domain", None, {"constraints": [{"matchAttribute": "missing-domain"}]},
     "spec.devices.constraints[0].matchAttribute", 'Invalid value: "missing-domain"',
     "a valid C identifier must start with alphabetic character"),
    # DRAConsumableCapacity off (1.35's default): upstream names matchAttribute
    # (the gate-on wording: test_dra_fidelity)
    ("constraint-without-attribute", None, {"constraints": [{"requests": ["foo"]}]},
     "spec.devices.constraints[0].matchAttribute", "Required value"),
    ("too-many-constraints", None, {"constraints": [{"matchAttribute": "foo/bar"}] * 33},
     "spec.devices.constraints", "Too many: 33: must have at most 32 items"),
    ("too-many-configs", None, {"config": [_OPAQUE] * 33},
     "spec.devices.config", "Too many: 33: must have at most 32 items"),
    ("bad-config-request", None, {"config": [dict(_OPAQUE, requests=["foo", "!@#$%^"])]},
     "spec.devices.config[0].requests[1]", 'Invalid value: "!@#$%^"', LABEL_MSG),
    ("request-without-name", [{"exactly": {"deviceClassName": "foo"}}], {},
     "spec.devices.requests[0].name", 'Invalid value: ""', LABEL_MSG),
    ("duplicate-request", [{"name": "foo", "exactly": {"deviceClassName": "foo"}}] * 2, {},
     "spec.devices.requests[1]", 'Duplicate value: "foo"'),
    ("no-request-type", [{"name": "foo"}], {},
     "spec.devices.requests[0]",
     "Required value: exactly one of `exactly` or `firstAvailable` is required"),
    ("empty-first-available", [{"name": "foo", "firstAvailable": []}], {},
     "spec.devices.requests[0]",
     "Required value: exactly one of `exactly` or `firstAvailable` is required"),
    ("both-request-types", [dict(_FIRST_AVAILABLE[0], exactly={"deviceClassName": "foo"})], {},
     "spec.devices.requests[0]", "Invalid value: null: exactly one of `exactly` or "
     "`firstAvailable` is required, but multiple fields are set"),
    ("too-many-subrequests", [{"name": "foo", "firstAvailable": [
        {"name": f"sub-{i}", "deviceClassName": "foo"} for i in range(9)]}], {},
     "spec.devices.requests[0].firstAvailable", "Too many: 9: must have at most 8 items"),
    ("duplicate-subrequest", [{"name": "foo", "firstAvailable": [
        {"name": "sub", "deviceClassName": "foo"}] * 2}], {},
     "spec.devices.requests[0].firstAvailable[1]", 'Duplicate value: "sub"'),
    ("subrequest-without-name", [{"name": "foo", "firstAvailable": [
        {"deviceClassName": "foo"}]}], {},
     "spec.devices.requests[0].firstAvailable[0].name", 'Invalid value: ""', LABEL_MSG),
    ("bad-subrequest-name", [{"name": "foo", "firstAvailable": [
        {"name": "&^%$", "deviceClassName": "foo"}]}], {},
     "spec.devices.requests[0].firstAvailable[0].name", 'Invalid value: "&^%$"', LABEL_MSG),
    ("zero-count", _exactly(count=0), {},
     "spec.devices.requests[0].exactly.count", "Invalid value: 0: must be greater than zero"),
    ("negative-count", _exactly(count=-1), {},
     "spec.devices.requests[0].exactly.count", "Invalid value: -1: must be greater than zero"),
    ("all-with-count", _exactly(allocationMode="All", count=2), {},
     "spec.devices.requests[0].exactly.count",
     "Invalid value: 2: must not be specified when allocationMode is 'All'"),
    ("bad-allocation-mode", _exactly(allocationMode="Some"), {},
     "spec.devices.requests[0].exactly.allocationMode",
     'Unsupported value: "Some": supported values: "All", "ExactCount"'),
    ("toleration-exists-with-value", _exactly(tolerations=[
        {"key": "example.com/k", "operator": "Exists", "value": "v"}]), {},
     "spec.devices.requests[0].exactly.tolerations[0].value",
     'Invalid value: "v": must be empty for operator `Exists`'),
    ("toleration-bad-operator", _exactly(tolerations=[{"key": "k", "operator": "Less"}]), {},
     "spec.devices.requests[0].exactly.tolerations[0].operator",
     'Unsupported value: "Less": supported values: "Equal", "Exists"'),
    ("toleration-bad-effect", _exactly(tolerations=[{"operator": "Exists", "effect": "Evict"}]),
     {}, "spec.devices.requests[0].exactly.tolerations[0].effect",
     'Unsupported value: "Evict": supported values: "NoExecute", "NoSchedule", "None"'),
]


@pytest.mark.parametrize("name, requests, devices, field, words",
                         [c[:4] + (c[4:],) for c in _SPEC_CASES], ids=[c[0] for c in _SPEC_CASES])
def test_upstream_bad_claim_specs_are_refused(tmp_path, name, requests, devices, field, words):
    claim = _claim(requests, **devices)
    text = _refused(tmp_path, claim, field, *words)
    assert "ResourceClaim ns/foo" in text
    text = _refused(tmp_path, _template(claim), "spec." + field, *words)
    assert "ResourceClaimTemplate ns/foo" in text


_STATUS_CASES = [
    ("invalid-add-allocation-bad-request", _allocated(_result(request="!@#$%^")),
     f"{_RESULTS}.request", 'Invalid value: "!@#$%^"', LABEL_MSG),
    ("invalid-node-selector", dict(_allocated(), allocation={
        "devices": {"results": [_result()]}, "nodeSelector": {}}),
     "status.allocation.nodeSelector.nodeSelectorTerms",
     "Required value: must have at least one node selector term"),
    ("invalid-update-invalid-label-value", dict(_allocated(), allocation={
        "devices": {"results": [_result()]}, "nodeSelector": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["-1"]}]}]}}),
     "status.allocation.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values[0]",
     'Invalid value: "-1": a valid label must be an empty string'),
    ("invalid-reserved-for-too-large", _allocated(reservedFor=[
        {"resource": "pods", "name": f"foo-{i}", "uid": str(i)} for i in range(257)]),
     "status.reservedFor", "Too many: 257: must have at most 256 items"),
    ("invalid-reserved-for-no-resource", _allocated(reservedFor=[{"name": "foo", "uid": "1"}]),
     "status.reservedFor[0].resource", "Required value"),
    ("invalid-reserved-for-no-uid", _allocated(reservedFor=[{"resource": "pods", "name": "foo"}]),
     "status.reservedFor[0].uid", "Required value"),
    ("result-without-driver", _allocated(_result(driver="")),
     f"{_RESULTS}.driver", "Required value"),
    ("result-without-device", _allocated(_result(device="")),
     f"{_RESULTS}.device", 'Invalid value: ""', LABEL_MSG),
    ("invalid-reserved-for-duplicate", _allocated(reservedFor=[
        {"resource": "pods", "name": "foo", "uid": "1"}] * 2),
     "status.reservedFor[1]", 'Duplicate value: "1"'),
    ("config-without-source", dict(_allocated(), allocation={"devices": {
        "results": [_result()], "config": [dict(_OPAQUE, source="")]}}),
     "status.allocation.devices.config[0].source", "Required value"),
    ("config-bad-source", dict(_allocated(), allocation={"devices": {
        "results": [_result()], "config": [dict(_OPAQUE, source="no-such-source")]}}),
     "status.allocation.devices.config[0].source",
     'Unsupported value: "no-such-source": supported values: "FromClaim", "FromClass"'),
    ("share-id-bad-length", _allocated(_result(shareID="abc")),
     f"{_RESULTS}.shareID", "error validating uid: invalid UUID length: 3"),
    ("share-id-upper-case", _allocated(_result(shareID=GOOD_UID.upper())),
     f"{_RESULTS}.shareID", "uid must be in RFC 4122 normalized form"),
    # the allocation's tolerations and binding conditions
    ("result-toleration-bad-key", _allocated(_result(tolerations=[
        {"key": "bad key", "operator": "Exists"}])),
     f"{_RESULTS}.tolerations[0].key", 'Invalid value: "bad key"'),
    ("result-toleration-bad-value", _allocated(_result(tolerations=[
        {"key": "k", "value": "-x"}])),
     f"{_RESULTS}.tolerations[0].value", 'Invalid value: "-x"', "a valid label must be"),
    ("result-too-many-tolerations", _allocated(_result(tolerations=[{"operator": "Exists"}] * 17)),
     f"{_RESULTS}.tolerations", "Too many: 17: must have at most 16 items"),
    ("result-binding-without-failure", _allocated(_result(bindingConditions=["ready"])),
     f"{_RESULTS}.bindingFailureConditions",
     "bindingFailureConditions are required to use bindingConditions"),
    ("result-failure-without-binding", _allocated(_result(bindingFailureConditions=["failed"])),
     f"{_RESULTS}.bindingConditions",
     "bindingConditions are required to use bindingFailureConditions"),
    ("result-binding-overlap", _allocated(_result(bindingConditions=["a"],
                                                  bindingFailureConditions=["a"])),
     f"{_RESULTS}.bindingFailureConditions[0]",
     'Invalid value: "a": bindingFailureConditions must not overlap with bindingConditions'),
    ("result-too-many-binding-conditions", _allocated(_result(
        bindingConditions=[f"c{i}" for i in range(5)], bindingFailureConditions=["f"])),
     f"{_RESULTS}.bindingConditions", "Too many: 5: must have at most 4 items"),
    ("result-bad-binding-condition", _allocated(_result(
        bindingConditions=["bad condition"], bindingFailureConditions=["f"])),
     f"{_RESULTS}.bindingConditions[0]", 'Invalid value: "bad condition"'),
    # status.devices (AllocatedDeviceStatus)
    ("invalid-device-status-no-device", _allocated(devices=[
        _status_device(driver="b", pool="a", device="r")]),
     "status.devices[0]", "Invalid value: b/a/r: must be an allocated device in the claim"),
    ("device-status-without-allocation", {"devices": [_status_device()]},
     "status.devices[0]", "Invalid value: foo/foo/foo: must be an allocated device"),
    ("device-status-other-share", _allocated(devices=[_status_device(shareID=GOOD_UID)]),
     "status.devices[0]", f"Invalid value: foo/foo/foo/{GOOD_UID}: must be an allocated device"),
    ("invalid-device-status-duplicate", _allocated(devices=[_status_device()] * 2),
     "status.devices[1]", "Duplicate value: foo/foo/foo"),
    ("device-status-bad-driver", _allocated(devices=[_status_device(driver="Bad_Driver")]),
     "status.devices[0].driver", 'Invalid value: "Bad_Driver"', "RFC 1123 subdomain"),
    ("device-status-missing-pool", _allocated(devices=[_status_device(pool="")]),
     "status.devices[0].pool", "Required value"),
    ("device-status-bad-device", _allocated(devices=[_status_device(device="Foo")]),
     "status.devices[0].device", 'Invalid value: "Foo"', LABEL_MSG),
    ("device-status-bad-share", _allocated(devices=[_status_device(shareID="x")]),
     "status.devices[0].shareID", "error validating uid: invalid UUID length: 1"),
    ("duplicate-ips", _allocated(devices=[_status_device(networkData={
        "ips": ["2001:db8::1/64", "2001:db8::1/64"]})]),
     "status.devices[0].networkData.ips[1]", 'Duplicate value: "2001:db8::1/64"'),
    ("interface-name-too-long", _allocated(devices=[_status_device(networkData={
        "interfaceName": "x" * 257})]),
     "status.devices[0].networkData.interfaceName", "Too long: may not be more than 256 bytes"),
    ("hardware-address-too-long", _allocated(devices=[_status_device(networkData={
        "hardwareAddress": "x" * 129})]),
     "status.devices[0].networkData.hardwareAddress",
     "Too long: may not be more than 128 bytes"),
    ("bad-ip", _allocated(devices=[_status_device(networkData={"ips": ["300.9.8.0/24"]})]),
     "status.devices[0].networkData.ips[0]", 'Invalid value: "300.9.8.0/24": must be a valid '
     "address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)"),
    ("ip-leading-zeros", _allocated(devices=[_status_device(networkData={
        "ips": ["010.009.008.000/24"]})]),
     "status.devices[0].networkData.ips[0]", 'must be in canonical form ("10.9.8.0/24")'),
    ("ipv6-not-canonical", _allocated(devices=[_status_device(networkData={
        "ips": ["2001:0db8::1/64"]})]),
     "status.devices[0].networkData.ips[0]", 'must be in canonical form ("2001:db8::1/64")'),
    ("too-many-ips", _allocated(devices=[_status_device(networkData={
        "ips": [f"10.9.8.{i}/24" for i in range(17)]})]),
     "status.devices[0].networkData.ips", "Too many: 17: must have at most 16 items"),
    ("too-many-conditions", _allocated(devices=[_status_device(conditions=[
        _condition(type=f"test-{i}") for i in range(9)])]),
     "status.devices[0].conditions", "Too many: 9: must have at most 8 items"),
    ("data-too-long", _allocated(devices=[_status_device(data={"str": "x" * 10231})]),
     "status.devices[0].data", "Too long: may not be more than 10240 bytes"),
    ("data-not-an-object", _allocated(devices=[_status_device(data=[1, 2])]),
     "status.devices[0].data", "must be a valid JSON object"),
    ("condition-duplicate-type", _allocated(devices=[_status_device(conditions=[
        _condition(), _condition()])]),
     "status.devices[0].conditions[1].type", 'Duplicate value: "test-0"'),
    ("condition-bad-status", _allocated(devices=[_status_device(conditions=[
        _condition(status="Maybe")])]),
     "status.devices[0].conditions[0].status",
     'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"'),
    ("condition-no-reason", _allocated(devices=[_status_device(conditions=[
        _condition(reason="")])]),
     "status.devices[0].conditions[0].reason", "Required value: must be set"),
    ("condition-bad-reason", _allocated(devices=[_status_device(conditions=[
        _condition(reason="not ok")])]),
     "status.devices[0].conditions[0].reason", 'Invalid value: "not ok": a condition reason '
     "must start with alphabetic character"),
    ("condition-no-time", _allocated(devices=[_status_device(conditions=[
        _condition(lastTransitionTime=None)])]),
     "status.devices[0].conditions[0].lastTransitionTime", "Required value: must be set"),
    ("condition-negative-generation", _allocated(devices=[_status_device(conditions=[
        _condition(observedGeneration=-1)])]),
     "status.devices[0].conditions[0].observedGeneration",
     "Invalid value: -1: must be greater than or equal to zero"),
]


@pytest.mark.parametrize("name, status, field, words", [c[:3] + (c[3:],) for c in _STATUS_CASES],
                         ids=[c[0] for c in _STATUS_CASES])
def test_upstream_bad_claim_statuses_are_refused(tmp_path, name, status, field, words):
    text = _refused(tmp_path, _claim(status=copy.deepcopy(status)), field, *words)
    assert "ResourceClaim ns/foo" in text


@pytest.mark.parametrize("value, problem", [
    ("10.9.8.7/24", None),
    ("2001:db8::1/64", None),
    ("::ffff:1.2.3.4/120", 'must be in canonical form ("1.2.3.4/24")'),
    ("10.9.8.7", "must be a valid address in CIDR form"),
    ("10.9.8.7/33", "must be a valid address in CIDR form"),
    ("fe80::1%eth0/64", "must be a valid address in CIDR form"),
    ("2001:DB8::1/64", 'must be in canonical form ("2001:db8::1/64")'),
    ("2001:db8:0:0:1:0:0:1/64", 'must be in canonical form ("2001:db8::1:0:0:1/64")'),
])
def test_interface_addresses_are_held_to_their_canonical_form(value, problem):
    errs = interface_address_errors(value)
    if problem is None:
        assert errs == []
    else:
        assert len(errs) == 1 and problem in errs[0]


@given(st.one_of(st.integers(0, 2**32 - 1).map(ipaddress.IPv4Address),
                 st.integers(0, 2**128 - 1).map(ipaddress.IPv6Address)),
       st.integers(0, 128))
def test_an_address_written_as_upstream_writes_it_back_is_accepted(ip, prefix):
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped       # Go prints an IPv4-mapped address as IPv4
    prefix %= ip.max_prefixlen + 1
    assert interface_address_errors(f"{ip}/{prefix}") == []
    # the same address spelled otherwise is refused with the form to use
    if isinstance(ip, ipaddress.IPv6Address) and any(c in "abcdef" for c in str(ip)):
        (err,) = interface_address_errors(f"{str(ip).upper()}/{prefix}")
        assert f'canonical form ("{ip}/{prefix}")' in err


# --------------------------------------------------------------------------
# DeviceClass (validation_deviceclass_test.go)


def _class(**spec):
    return {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": "foo"}, "spec": spec}


def test_upstream_good_device_class_loads(tmp_path):
    cls = _class(selectors=[{"cel": {"expression": 'device.driver == "dra.example.com"'}}] * 32,
                 config=[_OPAQUE] * 32, extendedResourceName="example.com/gpu")
    (rec,) = _read(tmp_path, cls).device_classes
    assert len(rec.selectors) == 32


@pytest.mark.parametrize("spec, field, words", [
    (dict(selectors=[{"cel": {"expression": "true"}}] * 33), "spec.selectors",
     ("Too many: 33: must have at most 32 items",)),
    (dict(config=[{"opaque": {"driver": "", "parameters": {}}}]), "spec.config[0].opaque.driver",
     ("Required value",)),
    (dict(config=[{"opaque": {"driver": "dra.example.com", "parameters": {
        "str": "x" * 10231}}}]), "spec.config[0].opaque.parameters",
     ("Too long: may not be more than 10240 bytes",)),
    (dict(extendedResourceName="requests.example.com/gpu"), "spec.extendedResourceName",
     ('Invalid value: "requests.example.com/gpu": must be a valid extended resource name',)),
])
def test_upstream_bad_device_classes_are_refused(tmp_path, spec, field, words):
    text = _refused(tmp_path, _class(**spec), field, *words)
    assert "DeviceClass foo" in text
