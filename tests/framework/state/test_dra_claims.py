"""dra_claims.ClaimState: a claim's allocation held in flight, committed,
reserved and unreserved, deallocated and deleted, with the devices in use
following each step; bad reports refused naming the claim and device."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from support.dra import CLASS, DRIVER, claim, gpu_slice

from tensorsched.framework.errors import ManifestError, StateError
from tensorsched.framework.parsing.dra import (
    parse_device_class,
    parse_resource_claim,
    parse_resource_claim_template,
)
from tensorsched.framework.records.dra_records import (
    AllocationResult,
    DeviceRequestAllocationResult,
)
from tensorsched.framework.state.cluster_state import ClusterState
from tensorsched.framework.state.dra_claims import ClaimEntry, ClaimState

KEY = "ml/c1"


def _alloc(*devices):
    return AllocationResult(tuple(
        DeviceRequestAllocationResult("r0", DRIVER, "s", d) for d in devices))


def _pod(name):
    return SimpleNamespace(name=name, uid=f"uid-{name}", key=f"ml/{name}")


def _claims():
    state = ClusterState()
    claims = ClaimState.of(state)
    assert ClaimState.of(state) is claims and ClaimState.attached(state) is claims
    claims.load([CLASS], [gpu_slice("s", ["a100", "a100"], node="n0")], [],
                [claim("c1", (1, None))])
    return claims


def _dev(name):
    return (DRIVER, "s", name)


def test_in_flight_then_commit_counts_the_devices_once():
    c = _claims()
    assert c.get("ml", "c1").allocation is None and not c.devices_in_use
    c.hold_in_flight(KEY, _alloc("gpu-0"))
    assert c.claim_has_pending_allocation(KEY)
    c.hold_in_flight(KEY, _alloc("gpu-1"))         # replaces the first
    assert c.devices_in_use == {_dev("gpu-1")}
    c.commit(KEY, _alloc("gpu-1"), now_ns=7)
    assert not c.claim_has_pending_allocation(KEY)
    assert c.devices_in_use == {_dev("gpu-1")}
    e = c.get("ml", "c1")
    assert e.allocation == _alloc("gpu-1") and e.allocated_ns == 7


def test_reserve_is_idempotent_and_unreserve_removes():
    c = _claims()
    a, b = _pod("a"), _pod("b")
    c.reserve(KEY, a)
    c.reserve(KEY, a)
    c.reserve(KEY, b)
    assert [r.name for r in c.get("ml", "c1").reserved_for] == ["a", "b"]
    assert c.by_pod["ml/a"] == [KEY]
    c.unreserve(KEY, a)
    assert [r.name for r in c.get("ml", "c1").reserved_for] == ["b"]
    assert "ml/a" not in c.by_pod
    c.unreserve("ml/none", a)                      # unknown claim: nothing to do


def test_deallocate_and_delete_free_the_devices():
    c = _claims()
    c.commit(KEY, _alloc("gpu-0"), now_ns=None)
    c.reserve(KEY, _pod("a"))
    c.deallocate(KEY)
    e = c.get("ml", "c1")
    assert e.allocation is None and e.reserved_for == [] and not c.devices_in_use
    assert not c.by_pod.get("ml/a")
    c.commit(KEY, _alloc("gpu-1"), now_ns=None)
    assert c.delete(KEY) is e and c.get("ml", "c1") is None
    assert not c.devices_in_use
    assert c.delete(KEY) is None


def test_condition_reports_are_checked():
    c = _claims()
    with pytest.raises(StateError, match="resourceclaim ml/none not found"):
        c.report_conditions("ml/none", _dev("gpu-0"), ["Ready"])
    c.commit(KEY, _alloc("gpu-0"), now_ns=None)
    with pytest.raises(StateError, match=f"resourceclaim {KEY}: device {DRIVER}/s/gpu-1 "
                                         "is not allocated to it"):
        c.report_conditions(KEY, _dev("gpu-1"), ["Ready"])
    assert c.get("ml", "c1").conditions == {}
    c.report_conditions(KEY, _dev("gpu-0"), ["Ready"])
    assert c.get("ml", "c1").conditions == {_dev("gpu-0"): {"Ready"}}


def test_create_refuses_an_existing_name():
    c = _claims()
    with pytest.raises(StateError, match=f"resourceclaim {KEY} already exists"):
        c.create(ClaimEntry(claim("c1", (1, None))))
    c.create(ClaimEntry(claim("c2", (1, None))))
    assert c.get("ml", "c2") is not None


@pytest.mark.parametrize("which, label, field", [
    ("class", "DeviceClass gpu", "spec.selectors[1].cel.expression"),
    ("template", "ResourceClaimTemplate ml/one", "spec.spec.devices.requests[0].firstAvailable[1]"
                                                 ".selectors[0].cel.expression"),
    ("claim", "ResourceClaim ml/c", "spec.devices.requests[1].exactly.selectors[0].cel.expression"),
])
def test_selectors_that_do_not_compile_are_refused_on_load(which, label, field):
    """As the API server refuses them on create: the object and the field,
    with the compiler's message; nothing is loaded."""

    bad = "device.atributes['a'].x == 1"
    good = 'device.driver == "d"'
    cls = {"metadata": {"name": "gpu"},
           "spec": {"selectors": [{"cel": {"expression": good}},
                                  {"cel": {"expression": bad if which == "class" else good}}]}}
    def spec(bad_sub, bad_exact):
        return {"devices": {"requests": [
            {"name": "a", "firstAvailable": [
                {"name": "x", "deviceClassName": "gpu"},
                {"name": "y", "deviceClassName": "gpu", "selectors": [
                    {"cel": {"expression": bad if bad_sub else good}}]}]},
            {"name": "b", "exactly": {"deviceClassName": "gpu", "selectors": [
                {"cel": {"expression": bad if bad_exact else good}}]}}]}}
    template = {"metadata": {"name": "one", "namespace": "ml"},
                "spec": {"spec": spec(which == "template", False)}}
    claim_obj = {"metadata": {"name": "c", "namespace": "ml"},
                 "spec": spec(False, which == "claim")}
    store = ClaimState.of(ClusterState())
    with pytest.raises(ManifestError) as err:
        store.load([parse_device_class(cls)], [], [parse_resource_claim_template(template)],
                   [parse_resource_claim(claim_obj)])
    assert err.value.obj == label and err.value.field == field
    assert "undefined field 'atributes'" in str(err.value)
    assert not store.classes and not store.templates and not store.claims


@pytest.mark.parametrize("labels, refused", [
    (None, False),                                                   # no Namespace object
    ({}, True),
    ({"resource.kubernetes.io/admin-access": "false"}, True),
    ({"resource.kubernetes.io/admin-access": "true"}, False),
])
def test_admin_access_needs_the_namespace_label(labels, refused):
    """As the API server refuses it on create: a claim or template asking
    admin access in a namespace without the label; nothing is loaded."""

    template = parse_resource_claim_template({
        "metadata": {"name": "admin", "namespace": "ml"},
        "spec": {"spec": {"devices": {"requests": [
            {"name": "plain", "exactly": {"deviceClassName": "gpu"}},
            {"name": "all", "exactly": {"deviceClassName": "gpu", "allocationMode": "All",
                                        "adminAccess": True}}]}}}})
    state = ClusterState()
    if labels is not None:
        state.namespace_labels = {"ml": labels}
    store = ClaimState.of(state)
    if not refused:
        store.load([], [], [template], [])
        assert "ml/admin" in store.templates
        return
    with pytest.raises(ManifestError) as err:
        store.load([], [], [template], [])
    assert err.value.obj == "ResourceClaimTemplate ml/admin"
    assert err.value.field == "spec.spec.devices.requests[1].exactly.adminAccess"
    assert "requires the `resource.kubernetes.io/admin-access: true` label" in str(err.value)
    assert not store.templates


def test_optional_syntax_loads_and_its_errors_are_refused():
    """``x[?"k"]`` and the other optional forms parse and type-check like
    any selector: a valid one loads, a syntax or type error among them is
    refused on load (no longer left for the pods to meet)."""

    def cls(expr):
        return parse_device_class({"metadata": {"name": "gpu"},
                                   "spec": {"selectors": [{"cel": {"expression": expr}}]}})

    store = ClaimState.of(ClusterState())
    store.load([cls('device.attributes["d"][?"model"].orValue("") == "x"')])
    assert "gpu" in store.classes
    for bad, words in (('device.attributes["d"].model ==', "Syntax error"),
                       ('device.attributes["d"][?"model"] ==', "Syntax error"),
                       ('device.attributes["d"].?model == "x"', "no matching overload")):
        with pytest.raises(ManifestError, match=words):
            ClaimState.of(ClusterState()).load([cls(bad)])


def test_library_selectors_load_and_their_errors_name_object_and_field():
    """The base environment's libraries (sets, two-variable comprehensions,
    lists, format) load; what cel-go refuses among them (an attribute value
    beside a literal in a list, a format clause its argument does not
    suit) is refused on load, naming the object and the field, nothing
    kept."""

    def cls(*exprs):
        return parse_device_class({"metadata": {"name": "gpu"}, "spec": {
            "selectors": [{"cel": {"expression": e}} for e in exprs]}})

    store = ClaimState.of(ClusterState())
    store.load([cls('sets.contains(["a", "b"], [device.attributes["d"].model])',
                    'device.attributes["d"].exists(k, v, k == "model")',
                    '[1, 2].sum() == 3 && "%d".format([1]) == "1"')])
    assert "gpu" in store.classes
    for bad, words in (('[device.attributes["d"].model, "x"].size() == 2',
                        "expected type 'any' but found 'string'"),
                       ('"%d".format(["x"]) == "x"', "decimal clause can only be used on integers")):
        fresh = ClaimState.of(ClusterState())
        with pytest.raises(ManifestError, match=words) as err:
            fresh.load([cls('device.driver == "d"', bad)])
        assert err.value.obj == "DeviceClass gpu"
        assert err.value.field == "spec.selectors[1].cel.expression"
        assert not fresh.classes


@pytest.mark.parametrize("which, label, field", [
    ("class", "DeviceClass gpu", "spec.selectors[0].cel.expression"),
    ("template", "ResourceClaimTemplate ml/one", "spec.spec.devices.requests[0].exactly"
                                                 ".selectors[0].cel.expression"),
    ("claim", "ResourceClaim ml/c", "spec.devices.requests[0].firstAvailable[0]"
                                    ".selectors[0].cel.expression"),
])
def test_selectors_that_do_not_type_check_are_refused_on_load(which, label, field):
    """``device.driver == 1`` compiles in cel-python but not against the
    API's declared types: refused naming the object and the field, nothing
    loaded; a comparison on an attribute (dynamic upstream) loads."""

    def load(bad):
        def sel(on):
            return [{"cel": {"expression": bad if on else 'device.driver == "d"'}}]
        cls = {"metadata": {"name": "gpu"}, "spec": {"selectors": sel(which == "class")}}
        template = {"metadata": {"name": "one", "namespace": "ml"}, "spec": {"spec": {
            "devices": {"requests": [{"name": "a", "exactly": {
                "deviceClassName": "gpu", "selectors": sel(which == "template")}}]}}}}
        claim_obj = {"metadata": {"name": "c", "namespace": "ml"}, "spec": {
            "devices": {"requests": [{"name": "a", "firstAvailable": [
                {"name": "x", "deviceClassName": "gpu", "selectors": sel(which == "claim")}]}]}}}
        store = ClaimState.of(ClusterState())
        store.load([parse_device_class(cls)], [], [parse_resource_claim_template(template)],
                   [parse_resource_claim(claim_obj)])
        return store

    with pytest.raises(ManifestError) as err:
        store = load("device.driver == 1")
    assert err.value.obj == label and err.value.field == field
    assert "found no matching overload for '_==_' applied to '(string, int)'" in str(err.value)
    with pytest.raises(ManifestError, match="must evaluate to bool or the unknown type, not string"):
        load("device.driver")
    store = load('device.attributes["d"].model == 1')
    assert "gpu" in store.classes and "ml/one" in store.templates and "ml/c" in store.claims
