"""``records.dra_records``: the DRA records' own behaviour: attribute
values as sets, device tolerations matching taints as upstream's
``ToleratesTaint``, allocation results written back as API dicts, claims
made from templates, and quantities formatted canonically (parsing them
back gives the same value)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from tensorsched.framework.parsing.quantity import parse_quantity
from tensorsched.framework.records import dra_records as DRR


def test_attribute_values_as_sets():
    assert DRR.AttrValue("int", 3).as_set() == frozenset({("int", 3)})
    assert DRR.AttrValue("strings", ("a", "b")).as_set() == frozenset({("string", "a"),
                                                                     ("string", "b")})
    assert DRR.AttrValue("ints", ()).as_set() is None
    assert DRR.AttrValue("none").as_set() is None
    assert DRR.AttrValue("versions", ("1.0.0",)).is_list and not DRR.AttrValue("bool", True).is_list


def test_attribute_values_as_dicts():
    assert DRR.AttrValue("none").to_dict() == {}
    assert DRR.AttrValue("bool", False).to_dict() == {"bool": False}
    assert DRR.AttrValue("ints", (1, 2)).to_dict() == {"ints": [1, 2]}


@pytest.mark.parametrize("tol, taint, ok", [
    (("", "Exists", "", ""), ("k", "v", "NoSchedule"), True),          # tolerates everything
    (("k", "Exists", "", ""), ("k", "v", "NoExecute"), True),
    (("k", "Exists", "", ""), ("j", "v", "NoExecute"), False),
    (("k", "Equal", "v", ""), ("k", "v", "NoSchedule"), True),
    (("k", "Equal", "w", ""), ("k", "v", "NoSchedule"), False),
    (("k", "Equal", "v", "NoExecute"), ("k", "v", "NoSchedule"), False),
    (("k", "Equal", "v", "NoSchedule"), ("k", "v", "NoSchedule"), True),
    (("", "Equal", "", ""), ("k", "", "NoSchedule"), True),              # empty key: any key
])
def test_a_toleration_matches_effect_key_and_value(tol, taint, ok):
    assert DRR.DeviceToleration(*tol).tolerates(DRR.DeviceTaint(*taint)) is ok


def test_a_toleration_writes_only_the_fields_it_sets():
    assert DRR.DeviceToleration("", "Exists", "", "").to_dict() == {"operator": "Exists"}
    assert DRR.DeviceToleration("k", "Equal", "v", "NoExecute", 30).to_dict() == {
        "operator": "Equal", "key": "k", "value": "v", "effect": "NoExecute",
        "tolerationSeconds": 30}


@pytest.mark.parametrize("q, text", [
    (Fraction(0), "0"), (Fraction(1000), "1000"), (Fraction(1024), "1Ki"),
    (Fraction(3 << 30), "3Gi"), (Fraction(3072), "3Ki"), (Fraction(1536), "1536"), (Fraction(1 << 60), "1Ei"),
    (Fraction(1, 2), "500m"), (Fraction(1, 3), "333333334n"), (Fraction(-2048), "-2Ki")])
def test_format_quantity_uses_the_largest_exact_binary_suffix(q, text):
    assert DRR.format_quantity(q) == text


@settings(max_examples=30)
@given(st.integers(-(1 << 40), 1 << 40), st.sampled_from([1, 2, 4, 8, 10, 1000]))
def test_formatted_quantities_parse_back_to_the_same_value(n, denom):
    q = Fraction(n, denom)                      # whole or milli: exact in text
    assert parse_quantity(DRR.format_quantity(q)) == q


def test_a_finer_than_nano_value_rounds_up_to_a_nano():
    q = Fraction(1, 3)
    back = parse_quantity(DRR.format_quantity(q))
    assert q <= back < q + Fraction(1, 10 ** 9)


def test_allocation_results_as_api_dicts():
    tol = DRR.DeviceToleration("k", "Exists", "", "")
    full = DRR.DeviceRequestAllocationResult(
        "gpus", "gpu.example.com", "pool", "gpu-0", admin_access=False, tolerations=(tol,),
        binding_conditions=("ready",), binding_failure_conditions=("failed",),
        share_id="s1", consumed_capacity={"memory": Fraction(1 << 30)})
    assert full.device_id == ("gpu.example.com", "pool", "gpu-0")
    assert full.to_dict() == {
        "request": "gpus", "driver": "gpu.example.com", "pool": "pool", "device": "gpu-0",
        "adminAccess": False, "tolerations": [{"operator": "Exists", "key": "k"}],
        "bindingConditions": ["ready"], "bindingFailureConditions": ["failed"],
        "shareID": "s1", "consumedCapacity": {"memory": "1Gi"}}
    bare = DRR.DeviceRequestAllocationResult("r", "d", "p", "x")
    assert bare.to_dict() == {"request": "r", "driver": "d", "pool": "p", "device": "x"}
    cfg = DRR.AllocatedConfig("FromClass", (), DRR.DeviceConfig("d", {"a": 1}))
    alloc = DRR.AllocationResult((bare,), (cfg,), {"nodeSelectorTerms": []})
    assert alloc.to_dict() == {
        "devices": {"results": [bare.to_dict()],
                    "config": [{"source": "FromClass", "opaque": {"driver": "d",
                                                                  "parameters": {"a": 1}}}]},
        "nodeSelector": {"nodeSelectorTerms": []}}
    assert DRR.AllocationResult((bare,)).to_dict() == {"devices": {"results": [bare.to_dict()]}}
    assert DRR.AllocatedConfig("FromClaim", ("r",), DRR.DeviceConfig("d", None)).to_dict()[
        "requests"] == ["r"]


def test_a_template_instantiates_an_unallocated_claim_sharing_its_requests():
    req = DRR.DeviceRequest("gpus", DRR.ExactRequest("gpu.example.com", count=2))
    spec = {"devices": {"requests": [{"name": "gpus"}]}}
    claim = DRR.ResourceClaimRecord("ns", "tmpl", "", (req,),
                                  allocation=DRR.AllocationResult(()), deleting=True)
    tmpl = DRR.ResourceClaimTemplateRecord("ns", "tmpl", spec, claim)
    assert tmpl.key == "ns/tmpl"
    made = tmpl.instantiate("ns", "pod-gpus", uid="u1")
    assert (made.key, made.uid, made.requests) == ("ns/pod-gpus", "u1", (req,))
    assert made.allocation is None and made.reserved_for == () and not made.deleting
    assert made.obj["metadata"] == {"namespace": "ns", "name": "pod-gpus", "uid": "u1"}
    assert made.obj["spec"] is spec and made.obj["kind"] == "ResourceClaim"
    assert "uid" not in tmpl.instantiate("ns", "x").obj["metadata"]


def test_a_request_policy_has_a_range_when_it_has_a_minimum():
    assert DRR.RequestPolicy(range_min=Fraction(1)).has_range
    assert not DRR.RequestPolicy(valid_values=(Fraction(1),)).has_range
