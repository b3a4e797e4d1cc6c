"""dra_searched.SearchedClaims: claims the compiled search allocates
(``matchAttribute`` / ``distinctAttribute`` across requests and claims
included) get the allocator's own AllocationResults on every node, from the
pass's picks; a node's room (pods of the kind it takes one after another)
equals allocating with the allocator again and again; claims outside the
shape are left to the allocator."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import backend_params

from tensorsched.generators import dra_clusters as DC
from tensorsched.framework.parsing.dra import parse_resource_claim
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.state.dra_allocator import Allocator, DraFeatures
from tensorsched.framework.state.dra_claims import ClaimState
from tensorsched.framework.state.dra_devices import AllocatedState
from tensorsched.framework.state.dra_searched import SearchedClaims

ATTRS = (f"{DC.DRIVER}/pcieRoot", f"{DC.DRIVER}/numaNode", f"{DC.DRIVER}/index")


@st.composite
def claim_specs(draw):
    """1-2 claims of 1-3 requests (whole GPUs or MIG devices, 1-2 each),
    with matchAttribute / distinctAttribute constraints over some of them."""
    claims = []
    for ci in range(draw(st.integers(1, 2))):
        reqs = []
        for ri in range(draw(st.integers(1, 3))):
            cls = draw(st.sampled_from([DC.GPU_CLASS, DC.GPU_CLASS, DC.MIG_CLASS]))
            reqs.append({"name": f"r{ri}", "exactly": {
                "deviceClassName": cls, "allocationMode": "ExactCount",
                "count": draw(st.integers(1, 2))}})
        cons = []
        for _ in range(draw(st.integers(0, 2))):
            names = draw(st.lists(st.sampled_from([r["name"] for r in reqs]), unique=True,
                                  max_size=len(reqs)))
            kind = draw(st.sampled_from(["matchAttribute", "distinctAttribute"]))
            cons.append({"requests": names, kind: draw(st.sampled_from(ATTRS))})
        devices = {"requests": reqs}
        if cons:
            devices["constraints"] = cons
        claims.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                       "metadata": {"name": f"c{ci}", "namespace": "default"},
                       "spec": {"devices": devices}})
    return claims


@functools.lru_cache(maxsize=4)
def _setup(nodes: int):
    """A dra-gpu cluster (read only here: devices in use come as arrays)."""
    objs, _ = DC.dra_gpu(nodes, 0)
    state = build_cluster(objs).state
    return state, ClaimState.of(state)


def _allocator(store, claims, in_use):
    recs = [parse_resource_claim(c) for c in claims]
    return Allocator(recs, classes=store.classes, devices=store.columns(),
                     allocated=AllocatedState(set(), {}), in_use_rows=in_use,
                     features=DraFeatures.default())


def _dicts(got):
    return None if got is None else [a.to_dict() for a in got]


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(claim_specs(), st.integers(0, 2**32 - 1), st.sampled_from([0.0, 0.3, 0.6]))
def test_the_pass_allocates_what_the_allocator_allocates(claims, seed, busy):
    state, store = _setup(2)
    in_use = np.random.default_rng(seed).random(store.columns().n) < busy
    alloc = _allocator(store, claims, in_use)
    searched = SearchedClaims.of(alloc)
    assert searched is not None
    for node in (state.nodes[r] for r in state.valid_rows().tolist()):
        assert _dicts(searched.allocate(node)) == _dicts(alloc.allocate(node))


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(claim_specs(), st.integers(0, 2**32 - 1))
def test_room_is_allocating_again_and_again(claims, seed):
    state, store = _setup(3)
    in_use = np.random.default_rng(seed).random(store.columns().n) < 0.3
    searched = SearchedClaims.of(_allocator(store, claims, in_use))
    rows = state.valid_rows()
    nodes = [state.nodes[r] for r in rows.tolist()]
    room = searched.room(nodes, rows.astype(np.int64), state.n_rows)
    cols = store.columns()
    for row, node in zip(rows.tolist(), nodes):
        used = in_use.copy()
        k = 0
        while True:
            got = _allocator(store, claims, used).allocate(node)
            if got is None:
                break
            k += 1
            for a in got:
                for r in a.results:
                    used[cols.rows_of((r.driver, r.pool, r.device))] = True
        assert room[row] == k


def test_the_dra_gpu_pair_template_is_searched():
    state, store = _setup(2)
    rec = store.templates["default/two-gpus-one-root"].instantiate("default", "probe")
    alloc = Allocator([rec], classes=store.classes, devices=store.columns(),
                      in_use_rows=store.in_use_rows().copy(), features=DraFeatures.default())
    searched = SearchedClaims.of(alloc)
    assert searched is not None
    node = state.nodes[int(state.valid_rows()[0])]
    got = searched.allocate(node)
    assert _dicts(got) == _dicts(alloc.allocate(node))
    # 8 GPUs on 4 PCIe roots: 4 pairs
    rows = state.valid_rows().astype(np.int64)
    room = searched.room([state.nodes[r] for r in rows.tolist()], rows, state.n_rows)
    assert room[rows].tolist() == [4, 3]      # node-1 publishes 2 GPUs as MIG devices


@pytest.mark.parametrize("engine", backend_params(("numba", "cuda")))
def test_every_engine_picks_alike(engine):
    state, store = _setup(2)
    rec = store.templates["default/two-gpus-one-root"].instantiate("default", "probe")
    alloc = Allocator([rec], classes=store.classes, devices=store.columns(),
                      in_use_rows=store.in_use_rows().copy(), features=DraFeatures.default())
    searched = SearchedClaims.of(alloc, engine)
    for r in state.valid_rows().tolist():
        assert _dicts(searched.allocate(state.nodes[r])) == _dicts(alloc.allocate(state.nodes[r]))


def test_claims_the_pass_does_not_judge_are_left_to_the_allocator():
    state, store = _setup(1)
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "all", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                 "deviceClassName": DC.GPU_CLASS, "allocationMode": "All"}}]}}}
    in_use = store.in_use_rows().copy()
    assert SearchedClaims.of(_allocator(store, [claim], in_use)) is None
