"""The allocator beyond upstream's table: the all-nodes feasibility pass
agrees with per-node allocation on random clusters, device columns track
allocations incrementally, and explain names what failed."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.dra import (
    CLASS,
    DRIVER,
    claim,
    clusters,
    constrained_clusters,
    gpu_slice,
    partitioned_node,
)

from tensorsched.framework.errors import StateError
from tensorsched.framework.parsing.dra import (
    parse_resource_claim,
    parse_resource_slice,
)
from tensorsched.framework.state.dra_allocator import AllocationError, Allocator, DraFeatures
from tensorsched.framework.state.dra_devices import DeviceColumns


@settings(max_examples=60, deadline=None)
@given(clusters(), st.sampled_from(("numpy", "numba")))
def test_feasible_is_allocate_on_every_node(cluster, engine):
    cols, claims, state, nodes = cluster
    alloc = Allocator(
        claims, classes=[CLASS], devices=cols, allocated=state, features=DraFeatures()
    )
    want = [alloc.allocate(n) is not None for n in nodes]
    assert list(alloc.feasible(nodes, engine=engine)) == want


@settings(max_examples=80, deadline=None)
@given(constrained_clusters(), st.sampled_from(("numpy", "numba")))
def test_compiled_search_is_the_allocators_search(cluster, engine):
    """Constraints and counters: the compiled search's answer per node (and
    the numpy engine's host search) equal allocate(node)."""
    cols, claims, state, nodes = cluster
    alloc = Allocator(
        claims,
        classes=[CLASS],
        devices=cols,
        allocated=state,
        features=DraFeatures(partitionable_devices=True),
    )
    want = [alloc.allocate(n) is not None for n in nodes]
    assert list(alloc.feasible(nodes, engine=engine)) == want


def test_compiled_search_picks_the_same_devices():
    """FIT nodes' picks are the devices allocate() returns, in order."""
    from tensorsched.kernels.dra import FIT

    slices = partitioned_node("n0", 6, [4, 2, 2, 3]) + [
        gpu_slice("n1", ["A100", "H200", "H200"], node="n1")
    ]
    cols = DeviceColumns(slices, ["n0", "n1"])
    c = claim("a", (1, None), (1, "A100"), constraints=[{"matchAttribute": f"{DRIVER}/numa"}])
    alloc = Allocator(
        [c], classes=[CLASS], devices=cols, features=DraFeatures(partitionable_devices=True)
    )
    enc = alloc._encode()
    ptr, rows, _ = alloc._csr([("n0", {}), ("n1", {})], [("n0", {}), ("n1", {})])
    from tensorsched.kernels.dra import first_fit_search

    code, picks = first_fit_search(
        ptr,
        rows,
        enc["status"],
        enc["counts"],
        enc["req_claim"],
        alloc.in_use_rows,
        enc["blocked"],
        enc["con_first"],
        enc["con_applies"],
        enc["con_code"],
        enc["con_kind"],
        *enc["counters"],
    )
    for i, node in enumerate(("n0", "n1")):
        got = alloc.allocate(node)
        assert (code[i] == FIT) == (got is not None)
        if got is not None:
            assert [cols.device_id(int(r)) for r in picks[i]] == [
                r.device_id for r in got[0].results
            ]


def test_columns_track_allocations_incrementally():
    cols = DeviceColumns([gpu_slice("n0", ["H200"] * 4, node="n0")], ["n0"])
    assert list(cols.node) == [0, 0, 0, 0]
    c = claim("a", (2, "H200"))
    got = Allocator([c], classes=[CLASS], devices=cols).allocate("n0")
    assert [r.device for r in got[0].results] == ["gpu-0", "gpu-1"]
    cols.allocate(c.key, got[0])
    assert list(cols.allocated_by) == [0, 0, -1, -1]
    assert cols.in_use().devices == {(DRIVER, "n0", "gpu-0"), (DRIVER, "n0", "gpu-1")}
    with pytest.raises(StateError):
        cols.allocate(c.key, got[0])
    c2 = claim("b", (2, None))
    nxt = Allocator([c2], classes=[CLASS], devices=cols).allocate("n0")
    assert [r.device for r in nxt[0].results] == ["gpu-2", "gpu-3"]
    assert (
        Allocator(
            [claim("x", (1, None))], classes=[CLASS], devices=cols, in_use_rows=np.ones(4, bool)
        ).allocate("n0")
        is None
    )
    cols.release(c.key)
    assert list(cols.allocated_by) == [-1] * 4 and not cols.holds(c.key)


def test_shared_capacity_is_counted_and_released():
    sl = parse_resource_slice(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "s"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "n0",
                "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {
                        "name": "nic",
                        "allowMultipleAllocations": True,
                        "capacity": {"bw": {"value": "10"}},
                    }
                ],
            },
        }
    )
    cols = DeviceColumns([sl], ["n0"])
    feats = DraFeatures(consumable_capacity=True)

    def want(name, bw):
        return parse_resource_claim(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": "ml"},
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "r",
                                "exactly": {
                                    "deviceClassName": "gpu",
                                    "capacity": {"requests": {"bw": bw}},
                                },
                            }
                        ]
                    }
                },
            }
        )

    a = Allocator([want("a", "6")], classes=[CLASS], devices=cols, features=feats).allocate("n0")
    assert a[0].results[0].consumed_capacity == {"bw": Fraction(6)} and a[0].results[0].share_id
    cols.allocate("ml/a", a[0])
    assert cols.consumed == {0: {f"{DRIVER}/bw": Fraction(6)}}
    assert (
        Allocator([want("b", "5")], classes=[CLASS], devices=cols, features=feats).allocate("n0")
        is None
    )
    assert Allocator([want("b", "4")], classes=[CLASS], devices=cols, features=feats).allocate(
        "n0"
    )
    cols.release("ml/a")
    assert cols.consumed == {}


def test_explain_names_the_request_and_the_numbers():
    cols = DeviceColumns([gpu_slice("n0", ["H200", "A100"], node="n0")], ["n0"])
    alloc = Allocator([claim("a", (2, "H200"))], classes=[CLASS], devices=cols)
    assert alloc.explain("n0") == (
        "claim ml/a, request r0: 1 of 2 devices available (1 match the selectors, 0 in use)"
    )
    ok = Allocator([claim("a", (1, "A100"))], classes=[CLASS], devices=cols)
    assert ok.explain("n0") is None
    bad = Allocator([claim("a", (1, None))], classes=[], devices=cols)
    assert "could not retrieve device class gpu" in bad.explain("n0")
    numa = Allocator(
        [claim("a", (1, None), (1, None), constraints=[{"matchAttribute": f"{DRIVER}/model"}])],
        classes=[CLASS],
        devices=cols,
    )
    assert "constraints" in numa.explain("n0")


def test_errors_carry_their_scope():
    # two slices of one pool list the same device: the pool is invalid
    cols = DeviceColumns(
        [
            parse_resource_slice(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"s{i}"},
                    "spec": {
                        "driver": DRIVER,
                        "nodeName": "n0",
                        "pool": {"name": "p", "generation": 1, "resourceSliceCount": 2},
                        "devices": [{"name": "gpu-0"}],
                    },
                }
            )
            for i in range(2)
        ],
        ["n0"],
    )
    alloc = Allocator([claim("a", (1, None))], classes=[CLASS], devices=cols)
    with pytest.raises(AllocationError) as err:
        alloc.allocate("n0")
    assert err.value.scope == "node" and "invalid resource pools" in str(err.value)
    with pytest.raises(AllocationError) as err:
        Allocator([claim("a", (33, None))], classes=[CLASS], devices=cols).allocate("n0")
    assert err.value.scope == "pod" and "exceeds the claim limit of 32" in str(err.value)


def test_unknown_feature_gate_is_refused():
    with pytest.raises(ValueError, match="DRASomething"):
        DraFeatures.from_gates({"DRASomething"})
    f = DraFeatures.from_gates({"DRADeviceBindingConditions"})
    assert not f.binding_and_status


def test_explain_names_what_keeps_an_all_request_from_its_devices():
    """``All`` needs every matching device of the node: explain says how many
    there are and how many are in use (or tainted), not that requests
    compete; with admin access, devices in use do not stop it."""
    from tensorsched.framework.records.dra_records import (
        AllocationResult, DeviceRequestAllocationResult)

    cols = DeviceColumns([gpu_slice("n0", ["H200", "H200", "A100"], node="n0")], ["n0"])
    cols.allocate("ml/other", AllocationResult((
        DeviceRequestAllocationResult("r0", DRIVER, "n0", "gpu-1"),)))

    def all_of(model, admin=None):
        exact = {"deviceClassName": "gpu", "allocationMode": "All", "selectors": [
            {"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}]}
        if admin:
            exact["adminAccess"] = True
        return parse_resource_claim({"metadata": {"name": "a", "namespace": "ml"},
                                     "spec": {"devices": {"requests": [
                                         {"name": "r0", "exactly": exact}]}}})

    alloc = Allocator([all_of("H200")], classes=[CLASS], devices=cols)
    assert alloc.allocate("n0") is None
    assert alloc.explain("n0") == (
        "claim ml/a, request r0: asks for all 2 matching devices, 1 in use")
    assert Allocator([all_of("A100")], classes=[CLASS], devices=cols).explain("n0") is None
    assert Allocator([all_of("H200", admin=True)], classes=[CLASS],
                     devices=cols).explain("n0") is None
    assert Allocator([all_of("B200")], classes=[CLASS], devices=cols).explain("n0") == (
        "claim ml/a, request r0: no device on the node matches the selectors (mode All)")


def test_explain_names_the_pools_whose_devices_are_not_used():
    """A pool missing one of its slices (resourceSliceCount) is skipped by
    the search: explain says so instead of only "0 match the selectors"."""
    s = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "n0-a"},
        "spec": {"driver": DRIVER, "nodeName": "n0",
                 "pool": {"name": "n0", "generation": 1, "resourceSliceCount": 2},
                 "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "H200"}}}]},
    }
    cols = DeviceColumns([parse_resource_slice(s)], ["n0"])
    alloc = Allocator([claim("a", (1, "H200"))], classes=[CLASS], devices=cols)
    assert alloc.allocate("n0") is None
    assert alloc.explain("n0") == (
        "claim ml/a, request r0: 0 of 1 devices available (0 match the selectors, 0 in use); "
        f"pools not used: {DRIVER}/n0 (incomplete)")
