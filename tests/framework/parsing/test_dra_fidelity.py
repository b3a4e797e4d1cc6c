"""The DRA API's edges as upstream's validation has them, each case a
manifest read from a cluster file (the error names the file, the object,
the field and upstream's words; nothing of a refused batch is kept):

- the wording of a constraint with neither attribute follows
  DRAConsumableCapacity (``matchAttribute: Required value`` while it is
  off, 1.35's default);
- create-only checks (opaque parameters past 10 KiB, a selector's length
  and cost limits, ``adminAccess`` in an unlabelled namespace) hold for a
  new object, not for a stored one (``metadata.resourceVersion`` set, as
  in a dump);
- a request policy's range refuses values the step arithmetic cannot read
  (negative, past int64) and reads each value in whole units;
- a claim's status and binding conditions report upstream's first problem;
- fields added to resource.k8s.io/v1 after 1.35 are refused by name."""

from __future__ import annotations

import pytest
import yaml

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import load_objects, parse_objects
from tensorsched.framework.scheduler.cluster import build_cluster

API = "resource.k8s.io/v1"
UID = "ac051fac-2ead-46d9-b8b4-4e0fbeb7455d"
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}


def _write(tmp_path, *objs):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(list(objs)))
    return path


def _refused(tmp_path, objs, field, *words, gates=None):
    """The objects read as a cluster (``build_cluster``, under ``gates``):
    refused at ``field`` with ``words``, naming the file."""
    path = _write(tmp_path, *objs)
    with pytest.raises(ManifestError) as err:
        build_cluster(load_objects(path), feature_gates=gates)
    text = str(err.value)
    assert err.value.field == field, text
    assert "cluster.yaml" in text, text
    for w in words:
        assert w in text, text
    return err.value


def _loads(tmp_path, *objs, gates=None):
    return build_cluster(load_objects(_write(tmp_path, *objs)), feature_gates=gates)


def _claim(name="c", status=None, stored=False, **devices):
    devices.setdefault("requests", [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}])
    meta = {"name": name, "namespace": "ml"}
    if stored:
        meta.update(resourceVersion="41", uid=UID)
    obj = {"apiVersion": API, "kind": "ResourceClaim", "metadata": meta,
           "spec": {"devices": devices}}
    if status is not None:
        obj["status"] = status
    return obj


def _class(stored=False, **spec):
    meta = {"name": "gpu"}
    if stored:
        meta["resourceVersion"] = "7"
    return {"apiVersion": API, "kind": "DeviceClass", "metadata": meta, "spec": spec}


def _template(stored=False, **devices):
    devices.setdefault("requests", [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}])
    meta = {"name": "t", "namespace": "ml"}
    if stored:
        meta["resourceVersion"] = "9"
    return {"apiVersion": API, "kind": "ResourceClaimTemplate", "metadata": meta,
            "spec": {"spec": {"devices": devices}}}


def _slice(devices, **spec):
    out = {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": "s"},
           "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                    "pool": {"name": "n1", "resourceSliceCount": 1}, "devices": devices}}
    out["spec"].update(spec)
    return out


# --------------------------------------------------------------------------
# a constraint with neither attribute: the wording follows the gate

_NO_ATTRIBUTE = {"constraints": [{"requests": ["gpu"]}]}


def test_a_constraint_without_attribute_names_match_attribute_with_the_gate_off(tmp_path):
    err = _refused(tmp_path, [NODE, _claim(**_NO_ATTRIBUTE)],
                   "spec.devices.constraints[0].matchAttribute", "ResourceClaim ml/c",
                   "Required value")
    assert "distinctAttribute" not in str(err)
    # the same through parse_objects alone (1.35's defaults)
    with pytest.raises(ManifestError) as again:
        parse_objects(load_objects(tmp_path / "cluster.yaml"))
    assert again.value.field == "spec.devices.constraints[0].matchAttribute"


def test_with_consumable_capacity_on_it_names_both_fields(tmp_path):
    _refused(tmp_path, [NODE, _template(**_NO_ATTRIBUTE)], "spec.spec.devices.constraints[0]",
             "ResourceClaimTemplate ml/t",
             'Required value: exactly one of "matchAttribute" or "distinctAttribute" is '
             "required", gates={"DRAConsumableCapacity": True})


# --------------------------------------------------------------------------
# create-only checks: a new object (a manifest) against a stored one (a dump)

_BIG = {"blob": "x" * 10240}           # past 10 KiB as JSON
_OPAQUE = [{"opaque": {"driver": "gpu.example.com", "parameters": _BIG}}]


@pytest.mark.parametrize("make, field", [
    (lambda stored: _class(stored, config=_OPAQUE), "spec.config[0].opaque.parameters"),
    (lambda stored: _claim(stored=stored, config=_OPAQUE),
     "spec.devices.config[0].opaque.parameters"),
    (lambda stored: _template(stored, config=_OPAQUE),
     "spec.spec.devices.config[0].opaque.parameters"),
])
def test_opaque_parameters_past_10_kib_are_refused_on_create_only(tmp_path, make, field):
    _refused(tmp_path, [NODE, make(False)], field, "Too long: may not be more than 10240 bytes")
    cluster = _loads(tmp_path, NODE, make(True))
    assert len(cluster.objects.device_classes) + len(cluster.objects.resource_claims) \
        + len(cluster.objects.resource_claim_templates) == 1


def test_an_allocation_config_of_a_stored_claim_keeps_its_parameters(tmp_path):
    status = {"allocation": {"devices": {
        "results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1",
                     "device": "gpu-0"}],
        "config": [{"source": "FromClaim", "opaque": {"driver": "gpu.example.com",
                                                      "parameters": _BIG}}]}}}
    _refused(tmp_path, [NODE, _claim(status=status)],
             "status.allocation.devices.config[0].opaque.parameters", "Too long")
    (claim,) = _loads(tmp_path, NODE, _claim(status=status, stored=True)).objects.resource_claims
    assert claim.allocation.config[0].config.parameters == _BIG


def test_a_stored_parameter_must_still_be_a_json_object(tmp_path):
    bad = [{"opaque": {"driver": "gpu.example.com", "parameters": ["x"] * 3000}}]
    _refused(tmp_path, [NODE, _class(True, config=bad)], "spec.config[0].opaque.parameters",
             "must be a valid JSON object")


def _nested(n: int) -> str:
    """``n`` levels of ``all`` over ten elements: 7 is past the cost limit."""
    expr = "1 < 2"
    for i in range(n):
        expr = f"[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(v{i}, {expr})"
    return expr


@pytest.mark.parametrize("expression, words", [
    (_nested(7), "Forbidden: too complex, exceeds cost limit"),
    ("true" + " " * 10240, "Too long: may not be more than 10240 bytes"),
])
def test_selector_limits_hold_for_new_objects_only(tmp_path, expression, words):
    selectors = [{"cel": {"expression": expression}}]
    _refused(tmp_path, [NODE, _class(selectors=selectors)],
             "spec.selectors[0].cel.expression", "DeviceClass gpu", words)
    requests = [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "selectors": selectors}}]
    _refused(tmp_path, [NODE, _claim(requests=requests)],
             "spec.devices.requests[0].exactly.selectors[0].cel.expression", words)
    cluster = _loads(tmp_path, NODE, _class(True, selectors=selectors),
                     _claim(requests=requests, stored=True))
    assert len(cluster.objects.device_classes) == len(cluster.objects.resource_claims) == 1


def test_admin_access_is_judged_on_create_only(tmp_path):
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}
    requests = [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "adminAccess": True}}]
    _refused(tmp_path, [NODE, namespace, _claim(requests=requests)],
             "spec.devices.requests[0].exactly.adminAccess", "resource.kubernetes.io/admin-access")
    cluster = _loads(tmp_path, NODE, namespace, _claim(requests=requests, stored=True))
    assert len(cluster.objects.resource_claims) == 1


# --------------------------------------------------------------------------
# request policy ranges

def _policy(capacity, **policy):
    return _slice([{"name": "gpu-0", "allowMultipleAllocations": True,
                    "capacity": {"bw": {"value": capacity, "requestPolicy": policy}}}])


_RANGE = "spec.devices[0].capacity.bw.requestPolicy.validRange"


@pytest.mark.parametrize("capacity, policy, field, words", [
    ("10", dict(default="-2", validRange={"min": "-2", "step": "1"}), f"{_RANGE}.default",
     'Invalid value: "-2": must be greater than or equal to 0'),
    ("10", dict(default="0", validRange={"min": "-1", "step": "1"}), f"{_RANGE}.min",
     'Invalid value: "-1": must be greater than or equal to 0'),
    ("2e19", dict(default="0", validRange={"min": "0", "max": "1e19", "step": "1"}),
     f"{_RANGE}.max", "must not be larger than 9223372036854775807"),
    ("2e19", dict(default="0", validRange={"min": "0", "step": "9223372036854775808"}),
     f"{_RANGE}.step", "must not be larger than 9223372036854775807"),
    # the default's problems at the bound it breaks
    ("10", dict(default="8", validRange={"min": "2", "max": "6"}), f"{_RANGE}.max",
     'Invalid value: "8": default is more than max: 6'),
])
def test_a_range_refuses_what_its_step_arithmetic_cannot_read(tmp_path, capacity, policy,
                                                               field, words):
    _refused(tmp_path, [NODE, _policy(capacity, **policy)], field, "ResourceSlice s", words)


def test_without_a_step_a_negative_bound_is_left_alone(tmp_path):
    (s,) = _loads(tmp_path, NODE, _policy("10", default="-1", validRange={"min": "-2"})
                  ).objects.resource_slices
    assert s.devices[0].capacity["bw"].request_policy.range_min == -2


def test_a_range_steps_in_whole_units(tmp_path):
    """DRAFractionalCapacityRange off: 250m from 200m in steps of 100m reads
    as 1 from 1 in steps of 1 (upstream's gate-off case, accepted)."""
    _loads(tmp_path, NODE, _policy("1", default="250m",
                                   validRange={"min": "200m", "max": "1", "step": "100m"}))
    _refused(tmp_path, [NODE, _policy("10", default="3",
                                      validRange={"min": "2", "step": "2"})],
             f"{_RANGE}.step", "value is not a multiple of a given step (2) from (2)")


# --------------------------------------------------------------------------
# upstream's first problem first

_RESULT = {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}
_POD = {"resource": "pods", "name": "p", "uid": "u1"}


def test_a_claim_status_reports_its_consumers_before_its_allocation(tmp_path):
    bad_driver = dict(_RESULT, driver="Bad_Driver")
    status = {"reservedFor": [_POD, _POD],
              "allocation": {"devices": {"results": [bad_driver]}}}
    _refused(tmp_path, [NODE, _claim(status=status)], "status.reservedFor[1]",
             'Duplicate value: "u1"')


def test_too_many_consumers_come_before_a_consumer_field(tmp_path):
    refs = [dict(_POD, name=f"p{i}", uid=f"u{i}") for i in range(257)]
    refs[3] = {"resource": "pods", "name": "p3"}          # no uid
    status = {"reservedFor": refs, "allocation": {"devices": {"results": [_RESULT]}}}
    _refused(tmp_path, [NODE, _claim(status=status)], "status.reservedFor",
             "Too many: 257: must have at most 256 items")


def test_a_consumer_field_comes_before_an_allocation_field(tmp_path):
    status = {"reservedFor": [{"resource": "pods", "name": "p"}],
              "allocation": {"devices": {"results": [dict(_RESULT, pool="")]}}}
    _refused(tmp_path, [NODE, _claim(status=status)], "status.reservedFor[0].uid",
             "Required value")


def test_device_statuses_come_before_the_allocation(tmp_path):
    status = {"allocation": {"devices": {"results": [dict(_RESULT, device="Gpu_0")]}},
              "devices": [{"driver": "gpu.example.com", "pool": "n1", "device": "gpu-9"}]}
    _refused(tmp_path, [NODE, _claim(status=status)], "status.devices[0]",
             "must be an allocated device in the claim")


@pytest.mark.parametrize("where", ["slice", "allocation"])
def test_binding_condition_names_come_before_their_duplicates(tmp_path, where):
    """Upstream checks both lists' names, then the duplicates."""
    fields = {"bindingConditions": ["ready", "ready"], "bindingFailureConditions": ["bad name"]}
    if where == "slice":
        obj = _slice([dict({"name": "gpu-0"}, **fields)])
        base = "spec.devices[0]"
    else:
        obj = _claim(status={"allocation": {"devices": {"results": [dict(_RESULT, **fields)]}}})
        base = "status.allocation.devices.results[0]"
    _refused(tmp_path, [NODE, obj], f"{base}.bindingFailureConditions[0]",
             'Invalid value: "bad name"')
    fields["bindingFailureConditions"] = ["failed"]
    obj = (_slice([dict({"name": "gpu-0"}, **fields)]) if where == "slice" else
           _claim(status={"allocation": {"devices": {"results": [dict(_RESULT, **fields)]}}}))
    _refused(tmp_path, [NODE, obj], f"{base}.bindingConditions[1]", 'Duplicate value: "ready"')


# --------------------------------------------------------------------------
# fields added after 1.35

_LATER = [
    (_slice([{"name": "gpu-0"}], partitionTypeAttribute="gpu.example.com/profile"),
     "spec.partitionTypeAttribute", "DRAPartitionableDevicesType"),
    (_slice([{"name": "gpu-0"}], skipNodeOperations=["*"]),
     "spec.skipNodeOperations", "DRAOptionalNodeOperations"),
    (_slice([{"name": "gpu-0", "nodeAllocatableResources": {"cpu": {
        "mapping": {"deviceMultiplier": "8"}}}}]),
     "spec.devices[0].nodeAllocatableResources", "DRANodeAllocatableResources"),
    (_slice([{"name": "gpu-0", "consumesCounters": [
        {"counterSet": "s", "counters": {"mem": {"value": "1"}},
         "compatibilityGroups": ["a"]}]}]),
     "spec.devices[0].consumesCounters[0].compatibilityGroups", "DRADeviceCompatibilityGroups"),
    (_claim(requests=[{"name": "gpu", "exactly": {"deviceClassName": "gpu", "derivedAttributes": [
        {"name": "derived/numa", "expression": "1"}]}}]),
     "spec.devices.requests[0].exactly.derivedAttributes", "DRADerivedAttributes"),
    (_template(requests=[{"name": "gpu", "firstAvailable": [
        {"name": "a", "deviceClassName": "gpu",
         "derivedAttributes": [{"name": "derived/numa", "expression": "1"}]}]}]),
     "spec.spec.devices.requests[0].firstAvailable[0].derivedAttributes",
     "DRADerivedAttributes"),
    (_claim(status={"allocation": {"devices": {"results": [
        dict(_RESULT, skipNodeOperations=["NodePrepareResources"])]}}}),
     "status.allocation.devices.results[0].skipNodeOperations", "DRAOptionalNodeOperations"),
]


@pytest.mark.parametrize("obj, field, gate", _LATER)
def test_a_field_added_after_1_35_is_refused_by_name(tmp_path, obj, field, gate):
    err = _refused(tmp_path, [NODE, _class(), obj], field,
                   "not modelled: a field added to resource.k8s.io/v1 after Kubernetes 1.35",
                   f"feature gate {gate}")
    assert err.obj.split()[0] == obj["kind"]
    # the lenient parsers (upstream's allocator cases) refuse it too
    with pytest.raises(ManifestError):
        parse_objects([obj])


def test_an_empty_later_field_is_as_if_unset(tmp_path):
    cluster = _loads(tmp_path, NODE, _slice([{"name": "gpu-0"}], skipNodeOperations=[]))
    assert len(cluster.objects.resource_slices) == 1
