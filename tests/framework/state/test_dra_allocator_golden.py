"""Every case of ../shared/golden/dra_allocator.json (upstream's allocator
test table) through the allocator, on each engine of the feasibility kernel.

A case runs as its ``how_test_runs`` says: the features it names on, every
other DRA gate off; the allocated state; the classes and slices in list
order; one Allocate for the node and all claims.  ``allocate(node)`` must
give the expected allocations (compared as upstream compares them), None
for 'unsatisfiable', or an AllocationError with the expected text and
scope; ``feasible([node], engine)`` must agree with it.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from support.backends import backend_params
from support.golden import golden_dir

from tensorsched.framework.parsing.dra import (
    parse_device_class,
    parse_resource_claim,
    parse_resource_slice,
)
from tensorsched.framework.parsing.quantity import parse_quantity
from tensorsched.framework.state.dra_allocator import AllocationError, Allocator, DraFeatures
from tensorsched.framework.state.dra_devices import AllocatedState, qualify

GOLDEN = golden_dir() / "dra_allocator.json"
CASES = json.loads(GOLDEN.read_text())["cases"] if GOLDEN.is_file() else []
SHARE_ID_PLACEHOLDER = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"

#: Cases we do not pass yet, each with the reason (kept short; shrink it).
XFAIL: dict[str, str] = {}

ENGINES = backend_params()  # numpy, numba; cuda under the simulator or on a device


def build(case):
    nodes, classes, slices, claims = {}, [], [], []
    for obj in case["objects"]:
        kind = obj["kind"]
        if kind == "Node":
            nodes[obj["metadata"]["name"]] = obj["metadata"].get("labels") or {}
        elif kind == "DeviceClass":
            classes.append(parse_device_class(obj))
        elif kind == "ResourceSlice":
            slices.append(parse_resource_slice(obj))
        elif kind == "ResourceClaim":
            # upstream's claims have no namespace (the transcription wrote
            # "default"); errors name them as klog.KObj does, by name alone
            claim = parse_resource_claim(obj)
            claim.namespace = ""
            claims.append(claim)
    inp = case["input"]
    assert [c.name for c in claims] == inp["claims"]
    state = AllocatedState()
    for d in inp.get("allocatedDevices", []):
        state.devices.add((d["driver"], d["pool"], d["device"]))
    for d in inp.get("allocatedCapacity", []):
        used = state.capacity.setdefault((d["driver"], d["pool"], d["device"]), {})
        for name, q in d["consumedCapacity"].items():
            used[qualify(name, d["driver"])] = parse_quantity(q)
    allocator = Allocator(
        claims,
        classes=classes,
        devices=slices,
        allocated=state,
        features=DraFeatures.from_gates(case["features"]),
    )
    node = (inp["node"], nodes[inp["node"]])
    return allocator, node


def _result_key(r: dict) -> tuple:
    out = []
    for k, v in sorted(r.items()):
        if v in ([], {}, None):
            continue  # an empty field counts as absent
        if k == "shareID":
            v = "<share>"
        elif k == "consumedCapacity":
            v = tuple(sorted((n, parse_quantity(q)) for n, q in v.items()))
        elif isinstance(v, (list, dict)):
            v = json.dumps(v, sort_keys=True)
        out.append((k, v))
    return tuple(out)


def _selector_key(sel):
    if sel is None:
        return None
    terms = []
    for t in sel["nodeSelectorTerms"]:
        term = []
        for part in ("matchExpressions", "matchFields"):
            reqs = sorted(
                (r["key"], r["operator"], tuple(sorted(r.get("values") or ())))
                for r in t.get(part) or []
            )
            term.append((part, tuple(reqs)))
        terms.append(tuple(term))
    return tuple(sorted(terms))


def _allocation_key(claim_name: str, got: dict, ordered: bool):
    results = [_result_key(r) for r in got["devices"]["results"]]
    return (
        claim_name,
        tuple(results) if ordered else tuple(sorted(results)),
        json.dumps(got["devices"].get("config", []), sort_keys=True),
        _selector_key(got.get("nodeSelector")),
    )


def _check_allocated(case, got):
    expect = case["expect"]
    assert got is not None, "expected an allocation, got none"
    ordered = bool(expect.get("results_order_checked"))
    names = case["input"]["claims"]
    for alloc in got:
        for r in alloc.results:
            if r.share_id is not None:
                assert len(r.share_id) == len(SHARE_ID_PLACEHOLDER)
    have = Counter(_allocation_key(n, a.to_dict(), ordered) for n, a in zip(names, got))
    want = Counter(
        _allocation_key(
            a["claim"], {"devices": a["devices"], "nodeSelector": a.get("nodeSelector")}, ordered
        )
        for a in expect["allocations"]
    )
    assert have == want


@pytest.mark.skipif(not CASES, reason="golden data not found")
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_golden_allocator(case, engine):
    if case["id"] in XFAIL:
        pytest.xfail(XFAIL[case["id"]])
    allocator, node = build(case)
    expect = case["expect"]
    outcome = expect["outcome"]
    if outcome == "error":
        with pytest.raises(AllocationError) as err:
            allocator.allocate(node)
        assert expect["error_contains"] in str(err.value)
        assert err.value.scope == expect["error_scope"]
        with pytest.raises(AllocationError) as err:
            allocator.feasible([node], engine=engine)
        assert expect["error_contains"] in str(err.value)
        return
    got = allocator.allocate(node)
    if outcome == "unsatisfiable":
        assert got is None
    else:
        _check_allocated(case, got)
    assert list(allocator.feasible([node], engine=engine)) == [outcome == "allocated"]


def test_golden_pass_count_is_reported():
    """The xfail list stays short and names only real cases."""
    ids = {c["id"] for c in CASES}
    assert set(XFAIL) <= ids
