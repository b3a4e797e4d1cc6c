"""Pods with template claims in compiled runs: the same nodes, devices,
claims and reservations as one cycle after another (``plugins.dra_runs``,
``state.dra_counted``: its own rules in tests/framework/state/test_dra_counted.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tensorsched.generators import dra_clusters as DC
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.framework.state.dra_claims import ClaimState


def _claims_view(store: ClaimState) -> dict:
    return {k: (e.allocation.to_dict() if e.allocation is not None else None,
                [r.name for r in e.reserved_for]) for k, e in sorted(store.claims.items())}


def _schedule(objs, pods, batch: bool):
    cluster = build_cluster(objs)
    sched = Scheduler(cluster, "numba", 0, batch=batch)
    out, _ = sched.schedule_pending(pods)
    store = ClaimState.of(cluster.state)
    return [(b.pod, b.node) for b in out], _claims_view(store), sched.run_lengths


def test_dra_run_places_and_allocates_as_one_by_one():
    objs, pods = DC.dra(3, 30)          # 24 GPUs: 24 placed in one run, 6 left
    one = _schedule(objs, pods, batch=False)
    run = _schedule(objs, pods, batch=True)
    assert run[0] == one[0] and run[1] == one[1]
    assert sum(1 for _, n in run[0] if n) == 24
    assert run[2] and max(run[2]) == 24 and not one[2]


def test_mixed_claims_run_as_one_by_one():
    """Whole GPUs and MIG devices in long stretches (runs), aligned pairs
    (a constraint: one by one) between them."""
    objs, _ = DC.dra_gpu(4, 0)
    pods = ([DC.claim_pod(f"g{i}", "one-gpu", created=i) for i in range(20)]
            + [DC.claim_pod(f"p{i}", "two-gpus-one-root", created=20 + i) for i in range(3)]
            + [DC.claim_pod(f"m{i}", "one-mig", created=23 + i) for i in range(18)])
    one = _schedule(objs, pods, batch=False)
    run = _schedule(objs, pods, batch=True)
    assert run[0] == one[0] and run[1] == one[1]
    assert len(run[2]) >= 2


def test_attribute_codes_from_the_leaf_match_the_device_walk():
    from tensorsched.framework.state import dra_allocator as A
    objs, _ = DC.dra_gpu(3, 0)
    store = ClaimState.of(build_cluster(objs).state)
    cols = store.columns()
    for name in (f"{DC.DRIVER}/pcieRoot", f"{DC.DRIVER}/numaNode", f"{DC.DRIVER}/profile"):
        fast = A._attribute_codes_of_leaf(cols, name)
        cols.cache.clear()
        # the device walk (a name without the leaf shortcut: same rule)
        slow_codes = np.full(cols.n, -1, np.int64)
        ids: dict = {}
        dom, _, ident = name.partition("/")
        for row in range(cols.n):
            sl, dev = cols.device(row)
            attr = dev.attributes.get(name) or (dev.attributes.get(ident)
                                                if dom == sl.driver else None)
            if attr is not None:
                slow_codes[row] = ids.setdefault((attr.kind, attr.value), len(ids))
        assert np.array_equal(fast[0], slow_codes)
        assert not fast[1].any()


def test_a_run_makes_the_claims_of_pods_that_skipped_the_queue():
    """Pods handed to a run without PreEnqueue (capacity's replicas): their
    claims are made from the template as their PreFilter would."""
    from tensorsched.framework.parsing.manifests import parse_pod
    objs, _ = DC.dra(3, 0)
    cluster = build_cluster(objs)
    state = cluster.state
    pods = [parse_pod(DC.claim_pod(f"r{i}", "one-gpu", created=i)) for i in range(20)]
    fw = cluster.framework_for(pods[0], "numba")
    rows, _ = fw.place_run(state, pods, seed=0, attempt=0, start_index=0)
    assert rows.shape[0] == 20
    store = ClaimState.of(state)
    for pod, row in zip(pods, rows.tolist()):
        e = store.get("default", f"{pod.name}-gpu")
        assert [r.name for r in e.reserved_for] == [pod.name]
        assert e.allocation.results[0].pool == state.node_name(row)
    assert len(store.devices_in_use) == 20


def test_constraint_claims_run_as_one_by_one():
    """Aligned pairs (``matchAttribute`` on the PCIe root) in a long
    stretch: one compiled run with the compiled search's picks, the same
    nodes, devices and claims as one cycle after another, then whole GPUs."""
    objs, _ = DC.dra_gpu(6, 0)          # 3 nodes x 4 pairs + 3 nodes x 3 pairs = 21
    pods = ([DC.claim_pod(f"p{i}", "two-gpus-one-root", created=i) for i in range(24)]
            + [DC.claim_pod(f"g{i}", "one-gpu", created=24 + i) for i in range(4)])
    one = _schedule(objs, pods, batch=False)
    run = _schedule(objs, pods, batch=True)
    assert run[0] == one[0] and run[1] == one[1]
    assert sum(1 for p, n in run[0] if n and p.startswith("default/p")) == 21
    assert run[2] and max(run[2]) == 21 and not one[2]
