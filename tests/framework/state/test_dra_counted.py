"""dra_counted.CountedClaims: claims of the "first N free matching
devices" shape answered by counts: the same allocations and feasibility as
the allocator's search on every node, per-node free counts in one pass equal
to the per-node answer, and claims outside the shape left to the allocator."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.generators import dra_clusters as DC
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.state.dra_allocator import Allocator, DraFeatures
from tensorsched.framework.state.dra_claims import ClaimState
from tensorsched.framework.state.dra_counted import CountedClaims


def _allocator(store, template: str, in_use=None):
    rec = store.templates[f"default/{template}"].instantiate("default", "probe")
    rows = store.in_use_rows().copy() if in_use is None else in_use
    return Allocator([rec], classes=store.classes, devices=store.columns(),
                     in_use_rows=rows, features=DraFeatures.default())


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["one-gpu", "one-mig"]))
def test_counted_claims_allocate_as_the_allocator(seed, template):
    objs, _ = DC.dra_gpu(2, 0)
    cluster = build_cluster(objs)
    store = ClaimState.of(cluster.state)
    cols = store.columns()
    in_use = np.random.default_rng(seed).random(cols.n) < 0.6
    alloc = _allocator(store, template, in_use)
    counted = CountedClaims.of(alloc)
    assert counted is not None
    for node in (cluster.state.nodes[r] for r in cluster.state.valid_rows().tolist()):
        want = alloc.allocate(node)
        got = counted.allocate(node)
        assert (got is None) == (want is None)
        if want is not None:
            assert [a.to_dict() for a in got] == [a.to_dict() for a in want]
        free = counted.free_on(node)
        assert (free >= counted.need) == (want is not None)


def test_claims_with_constraints_are_not_counted():
    objs, _ = DC.dra_gpu(2, 0)
    store = ClaimState.of(build_cluster(objs).state)
    assert CountedClaims.of(_allocator(store, "two-gpus-one-root")) is None


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["one-gpu", "one-mig"]))
def test_free_counts_of_all_nodes_equal_each_nodes_answer(seed, template):
    objs, _ = DC.dra_gpu(3, 0)
    state = build_cluster(objs).state
    store = ClaimState.of(state)
    in_use = np.random.default_rng(seed).random(store.columns().n) < 0.5
    counted = CountedClaims.of(_allocator(store, template, in_use))
    rows = state.valid_rows()
    nodes = [state.nodes[r] for r in rows.tolist()]
    free = counted.free_counts(nodes, rows.astype(np.int64), state.n_rows)
    assert free.shape == (state.n_rows,)
    assert [int(free[r]) for r in rows.tolist()] == [counted.free_on(n) for n in nodes]
