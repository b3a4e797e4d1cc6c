"""domain_counts: PodCountIndex.counts kept equal to a recount of the bound
pods as pods come and go; DomainSums' sums, presence and positive-domain
count under bumps."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from support.records import node, pod

from tensorsched.framework.state.cluster_state import ClusterState
from tensorsched.framework.state.domain_counts import DomainSums, _split_by, pod_count_index


def _is_web(record) -> bool:
    return record.labels.get("app") == "web"


def _recount(state, n):
    out = np.zeros(n, np.int64)
    for record, row in state.pods.bound():
        out[row] += _is_web(record)
    return out


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.booleans(), st.booleans()),
                min_size=1, max_size=12))
def test_counts_follow_adds_and_removes(ops):
    state = ClusterState(node_capacity=3)
    for i in range(3):
        state.add_node(node(f"n{i}"))
    index = pod_count_index(state)
    assert pod_count_index(state) is index            # one per state
    index.counts("web", _is_web)                      # built before the changes
    live = []
    for i, (n, web, remove) in enumerate(ops):
        if remove and live:
            state.remove_pod(live.pop(0))
        else:
            p = pod(f"p{i}", labels={"app": "web" if web else "db"})
            state.add_pod(p, f"n{n}")
            live.append(p.key)
        got = index.counts("web", _is_web)[:3]
        assert got.tolist() == _recount(state, 3).tolist()


def test_domain_sums_track_bumps():
    dom = np.array([0, 0, 1, -1, 2], np.int64)        # row 3 not counted
    counts = np.array([1, 2, 0, 5, 0], np.int64)
    s = DomainSums(dom, counts, 3)
    assert s.sums.tolist() == [3, 0, 0]
    assert s.present.tolist() == [True, True, True]
    assert s.positive == 1
    s.bump(2, 1)
    assert s.sums.tolist() == [3, 1, 0] and s.positive == 2 and s.version == 1
    s.bump(3, 4)                                      # uncounted row: no change
    s.bump(9, 4)                                      # row beyond the map: stale tag, ignored
    assert s.sums.tolist() == [3, 1, 0] and s.version == 1
    s.bump_many(np.array([0, 1, 2, 3], np.int64), -1)
    assert s.sums.tolist() == [1, 0, 0] and s.positive == 1 and s.version == 2
    assert DomainSums(dom, counts, 3).serial != s.serial


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.sampled_from([3, 9, 300]).flatmap(
    lambda top: st.lists(st.integers(0, top), min_size=1, max_size=30)), st.booleans())
def test_split_by_groups_rows_by_key_in_key_order(keys, one):
    """Each distinct key once, in key order, with its first position and
    its rows in their order, whether the keys are few (a pass per key) or
    many (the sort); keys all alike (a run's pods) give one group of every
    row."""
    keys = np.array([keys[0]] * len(keys) if one else keys, np.int32)
    rows = np.arange(100, 100 + keys.shape[0], dtype=np.int64)
    got = [(v, first, part.tolist()) for v, first, part in _split_by(keys, rows)]
    want = [(v, keys.tolist().index(v), [100 + i for i, k in enumerate(keys.tolist()) if k == v])
            for v in sorted(set(keys.tolist()))]
    assert got == want and all(type(v) is int for v, _, _ in got)
