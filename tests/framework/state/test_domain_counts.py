"""domain_counts: PodCountIndex.counts kept equal to a recount of the bound
pods as pods come and go; DomainSums' sums, presence and positive-domain
count under bumps."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from support.records import node, pod

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.parsing.selectors import pod_terms
from tensorsched.framework.state.cluster_state import ClusterState
from tensorsched.framework.state.domain_counts import (
    KINDS,
    DomainSums,
    PodCountIndex,
    _split_by,
    pod_count_index,
)
from tensorsched.generators.clusters import pod_dict


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


_TERM = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
_AFFINITIES = (None, {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_TERM]}},
               {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                   {"weight": 5, "podAffinityTerm": _TERM}]}})


def _alike(template, name, deleting):
    out = dataclasses.replace(template, name=name, uid=name, deleting=deleting)
    out.pod_class = template.pod_class              # one class per template
    return out


def _live_web(record) -> bool:
    return not record.deleting and record.labels.get("app") == "web"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["web", "db"]), st.sampled_from(["a", "b"]),
                          st.integers(0, 2)), min_size=1, max_size=4),
       st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.booleans(), st.booleans()),
                max_size=30))
def test_an_index_built_on_bound_pods_equals_their_pod_by_pod_read(templates, ops):
    """Pods of a few templates (labels, namespace, own affinity terms),
    some terminating, bound and some removed again, then the index built:
    its terms' counts and a new key's counts (the predicate asked per class
    and deletion mark) equal a read of every bound pod on its own."""
    state = ClusterState(node_capacity=4)
    for i in range(4):
        state.add_node(node(f"n{i}"))
    parsed = [parse_pod(pod_dict("t", namespace=ns, labels={"app": app},
                                 spec={"affinity": _AFFINITIES[a]} if _AFFINITIES[a] else None))
              for app, ns, a in templates]
    for i, (t, n, deleting, remove) in enumerate(ops):
        template = parsed[t % len(parsed)]
        state.add_pod(_alike(template, f"p{i}", deleting), f"n{n}")
        if remove:
            state.remove_pod(f"{template.namespace}/p{i}")
    index = PodCountIndex(state)
    want = np.zeros(4, np.int64)
    terms: dict = {}
    for record, row in state.pods.bound():
        want[row] += _live_web(record)
        for kind, ts in pod_terms(record).items():
            if kind in KINDS:
                for t in ts:
                    terms.setdefault((kind, t), np.zeros(4, np.int64))[row] += 1
    assert index.counts("live-web", _live_web)[:4].tolist() == want.tolist()
    got = {(kind, t): arr[:4].tolist() for kind in KINDS for t, arr in index.groups[kind].items()}
    assert got == {k: v.tolist() for k, v in terms.items()}
    assert index.pods_with_affinity == sum(
        1 for r, _ in state.pods.bound() if r.pod_affinity or r.pod_anti_affinity)
    # every pod removed and pods of a new class bound (a freed class id
    # given to it): a new key counts them, not the id's old class
    for key in list(state.pods):
        state.remove_pod(key)
    late = parse_pod(pod_dict("late", labels={"app": "web"}))
    for i in range(3):
        state.add_pod(_alike(late, f"late{i}", i == 2), f"n{i}")
    assert index.counts("live-web-2", _live_web)[:4].tolist() == [1, 1, 0, 0]
