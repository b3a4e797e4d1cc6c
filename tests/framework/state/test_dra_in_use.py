"""framework/state/dra_in_use.py: devices in use follow allocations
exactly (a device held twice is freed by the second release only), admin
access holds nothing, a share with DRAConsumableCapacity counts its share
and capacity instead of the device, and ``version`` moves with every
change."""

from __future__ import annotations

from fractions import Fraction

from tensorsched.framework.records.dra_records import (
    AllocationResult,
    DeviceRequestAllocationResult,
)
from tensorsched.framework.state.cluster_state import ClusterState
from tensorsched.framework.state.dra_claims import ClaimState


def _alloc(*devices, admin=False, share=None, cap=None) -> AllocationResult:
    return AllocationResult(tuple(
        DeviceRequestAllocationResult("r", "drv", "pool", d, admin_access=admin,
                                      share_id=share, consumed_capacity=cap)
        for d in devices))


def test_exclusive_devices_are_counted_per_holder():
    claims = ClaimState.of(ClusterState())
    used = claims.in_use
    a = _alloc("g0", "g1")
    used.count(a, +1)
    used.count(_alloc("g0"), +1)
    assert used.exclusive == {("drv", "pool", "g0"), ("drv", "pool", "g1")}
    assert claims.devices_in_use is used.exclusive          # the live set
    used.count(a, -1)
    assert used.exclusive == {("drv", "pool", "g0")}
    assert used.version == 3
    assert used.touched_since(used.version) == set()


def test_admin_access_holds_nothing():
    used = ClaimState.of(ClusterState()).in_use
    used.count(_alloc("g0", admin=True), +1)
    assert not used.exclusive and used.version == 1


def test_shares_count_their_capacity_with_consumable_capacity():
    claims = ClaimState.of(ClusterState())
    claims.consumable_capacity = True
    used = claims.in_use
    one = _alloc("g0", share="s1", cap={"memory": Fraction(4)})
    two = _alloc("g0", share="s2", cap={"memory": Fraction(2)})
    used.count(one, +1)
    used.count(two, +1)
    dev = ("drv", "pool", "g0")
    assert not used.exclusive and used.shared == {(dev, "s1"), (dev, "s2")}
    assert used.capacity == {dev: {"memory": Fraction(6)}}
    used.count(one, -1)
    used.count(two, -1)
    assert not used.shared and not used.capacity
    assert used.allocated_state() is not None
