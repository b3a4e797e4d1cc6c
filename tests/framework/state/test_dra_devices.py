"""dra_devices: DeviceColumns' rows (slice order, node-local rows), device
ids, allocate / release / in_use bookkeeping, and gather_pools' choice of
the pools a node reaches (newest generation, sorted by driver and pool)."""

from __future__ import annotations

import dataclasses

import pytest
from support.dra import DRIVER, gpu_slice

from tensorsched.framework.errors import StateError
from tensorsched.framework.records.dra_records import (
    AllocationResult,
    DeviceRequestAllocationResult,
)
from tensorsched.framework.state.dra_devices import DeviceColumns, gather_pools, qualify


def _columns():
    slices = [gpu_slice("s-a", ["a100", "a100"], node="n0"),
              gpu_slice("s-b", ["h100"], node="n1"),
              gpu_slice("s-all", ["t4"], all_nodes=True)]
    return DeviceColumns(slices, node_names=["n0", "n1"])


def _alloc(*devices):
    return AllocationResult(tuple(
        DeviceRequestAllocationResult("r", DRIVER, pool, dev) for pool, dev in devices))


def test_rows_follow_slice_order_with_node_rows():
    c = _columns()
    assert c.n == 4
    assert c.first_row.tolist() == [0, 2, 3, 4]
    assert c.slice_of.tolist() == [0, 0, 1, 2]
    assert c.node.tolist() == [0, 0, 1, -1]            # allNodes: not node-local
    assert c.device_id(1) == (DRIVER, "s-a", "gpu-1")
    assert c.rows_of((DRIVER, "s-b", "gpu-0")) == [2]
    assert c.rows_of((DRIVER, "nope", "gpu-0")) == []


def test_allocate_release_and_in_use():
    c = _columns()
    c.allocate("default/c1", _alloc(("s-a", "gpu-1"), ("s-all", "gpu-0")))
    assert c.holds("default/c1")
    assert c.allocated_by.tolist() == [-1, 0, -1, 0]
    assert c.in_use().devices == {(DRIVER, "s-a", "gpu-1"), (DRIVER, "s-all", "gpu-0")}
    with pytest.raises(StateError, match="ResourceClaim default/c1 already holds devices"):
        c.allocate("default/c1", _alloc(("s-b", "gpu-0")))
    assert c.allocated_by.tolist() == [-1, 0, -1, 0]    # the refused call changed nothing
    c.release("default/c1")
    c.release("default/c1")                             # nothing held: a no-op
    assert not c.holds("default/c1")
    assert (c.allocated_by == -1).all() and not c.in_use().devices


def test_gather_pools_reaches_local_and_all_node_slices_sorted():
    c = _columns()
    got = gather_pools(c, "n0", {}, partitionable=False)
    assert [p.pool_id for p in got] == [f"{DRIVER}/s-a", f"{DRIVER}/s-all"]
    assert all(not p.invalid and not p.incomplete for p in got)
    assert [p.pool_id for p in gather_pools(c, "n9", {}, False)] == [f"{DRIVER}/s-all"]


def test_newest_generation_of_a_pool_wins():
    old = gpu_slice("old", ["a100"], node="n0", pool="p")
    new = gpu_slice("new", ["h100"], node="n0", pool="p")
    new = dataclasses.replace(new, pool=dataclasses.replace(new.pool, generation=2))
    c = DeviceColumns([old, new], node_names=["n0"])
    pools = gather_pools(c, "n0", {}, False)
    assert len(pools) == 1 and pools[0].slices == [1]


def test_qualify():
    assert qualify("model", DRIVER) == f"{DRIVER}/model"
    assert qualify("example.org/model", DRIVER) == "example.org/model"
