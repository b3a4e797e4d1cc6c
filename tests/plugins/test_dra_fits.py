"""framework/plugins/dra_fits.py: pods of one template share a kind of
claims (equal spec keys) and so one kept feasibility answer; an
allocation changes the kept answer only on the node whose devices it
took, and the answer equals a fresh allocator's."""

from __future__ import annotations

import numpy as np

from tensorsched.generators import dra_clusters as DC
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.plugins.dra_cycle import Cycle, claims_of, generate, resolve
from tensorsched.framework.plugins.dra_fits import ClaimFits
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.state.dra_allocator import DraFeatures


def _setup(nodes: int, pods: int):
    objs, pod_dicts = DC.dra(nodes, pods)
    cluster = build_cluster(objs)
    store = claims_of(cluster.state)
    cycles = []
    for d in pod_dicts:
        pod = parse_pod(d)
        generate(store, pod)
        claims = resolve(store, pod)
        cycles.append((pod, Cycle(claims, [None] * len(claims), list(range(len(claims))))))
    return cluster.state, store, cycles


def test_one_template_one_kind_and_kept_answers_follow_allocations():
    state, store, cycles = _setup(2, 3)
    fits = ClaimFits(DraFeatures.default)
    (p0, c0), (p1, c1), (p2, c2) = cycles
    assert fits.spec_key(c0) == fits.spec_key(c1) == fits.spec_key(c2)
    rows = state.valid_rows()
    assert fits.pending_fits(c0, store, state, rows, keep=True).tolist() == [True, True]
    # take every device of node-0: the kept answer changes there only
    fits.ensure_allocator(store, c1)
    for k in range(8):
        got = c1.allocator.allocate(state.nodes[int(rows[0])])
        assert got is not None
        store.hold_in_flight(f"default/x{k}", got[0])
    kept = fits.pending_fits(c2, store, state, rows, keep=True)
    fresh = ClaimFits(DraFeatures.default).pending_fits(c2, store, state, rows, keep=False)
    np.testing.assert_array_equal(kept, fresh)
    assert kept.tolist() == [False, True]
