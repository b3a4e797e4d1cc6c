"""framework/records/pod_columns.py: pods as columns are the records they
were made from (built on request, equal, sharing the memo), in every
order and slice the queue and the bound-pod table take of them, and keep
no record alive."""

from __future__ import annotations

import copy
import gc
import weakref

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.records import node

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.records.pod_columns import PodColumns
from tensorsched.framework.parsing.pod_templates import PodTemplates
from tensorsched.framework.plugins.priority_sort import PrioritySort
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler


def _manifest(i: int, template: int, per_pod: int) -> dict:
    """Pod ``i`` of one of three templates; ``per_pod`` picks which per-pod
    fields it sets (uid, running status, deletion, a node, annotations)."""
    meta = {"name": f"p{i}", "namespace": "ns", "labels": {"app": f"a{template}"},
            "creationTimestamp": f"2026-01-01T00:00:{i % 60:02d}Z"}
    spec = {"containers": [{"name": "c", "image": "img", "resources": {
        "requests": {"cpu": f"{100 * (template + 1)}m"}}}]}
    if template == 2:
        spec["priority"] = 7
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    if per_pod & 1:
        meta["uid"] = f"uid-{i}"
    if per_pod & 2:
        obj["status"] = {"phase": "Running", "startTime": "2026-01-01T00:01:00Z"}
    if per_pod & 4:
        meta["deletionTimestamp"] = "2026-01-01T00:02:00Z"
    if per_pod & 8:
        spec["nodeName"] = "n1"
    if per_pod & 16:
        meta["annotations"] = {"note": "x"}
    return obj


pod_lists = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 31)), max_size=30)


def _records(spec) -> list:
    templates = PodTemplates(parse_pod)
    return [templates.parse(_manifest(i, t, p)) for i, (t, p) in enumerate(spec)]


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(pod_lists, st.data())
def test_columns_are_the_records_in_every_order(spec, data):
    recs = _records(spec)
    cols = PodColumns.from_records(recs)
    assert len(cols) == len(recs) and list(cols) == recs
    assert cols.keys == [r.key for r in recs]
    for i, r in enumerate(recs):
        got = cols[i]
        assert got == r and got.memo is r.memo and cols[i - len(recs)] == r
    assert cols.priorities().tolist() == [r.priority or 0 for r in recs]
    assert cols.has_node_names() == any(r.node_name for r in recs)
    assert len(cols.classes) == len({id(r.memo) for r in recs})
    a = data.draw(st.integers(0, len(recs)))
    b = data.draw(st.integers(a, len(recs)))
    assert list(cols[a:b]) == recs[a:b]
    order = data.draw(st.permutations(range(len(recs))))
    taken = cols.take(order)
    assert list(taken) == [recs[i] for i in order]
    assert list(taken.take(range(a, b))) == [recs[i] for i in order][a:b]
    head = _records([(1, 31)])[0]
    assert list(cols.take(range(a, b)).with_first(head)) == [head] + recs[a:b]
    # its own class list: the head's, then the classes the stretch uses
    first = cols.take(range(a, b)).with_first(head)
    assert first.classes[0] is head and [c.memo for c in first.classes[1:]] == [
        cols.classes[c].memo for c in sorted(set(cols.class_id[a:b].tolist()))]
    assert [p.memo for p in first] == [head.memo] + [r.memo for r in recs[a:b]]
    assert PrioritySort.sort_keys(taken) == PrioritySort.sort_keys([recs[i] for i in order])
    assert PodColumns.from_records(cols) is cols


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(st.lists(st.integers(0, 20), max_size=60))
def test_classes_number_in_order_of_first_appearance(picks):
    """Few classes or many (a scan each, or a map of first positions):
    class i is the i-th distinct class met, its prototype the first
    record of it, every pod's id its class's."""
    protos = [parse_pod(_manifest(c, c % 3, 0)) for c in range(21)]
    recs = [copy.copy(protos[c]) for c in picks]      # a copy shares its class
    cols = PodColumns.from_records(recs)
    seen: list = []
    for r in recs:
        if not any(r.pod_class is c.pod_class for c in seen):
            seen.append(r)
    assert [c is s for c, s in zip(cols.classes, seen)] == [True] * len(seen)
    assert len(cols.classes) == len(seen)
    assert cols.class_id.dtype == np.int32 and cols.class_id.tolist() == [
        next(j for j, c in enumerate(seen) if c.pod_class is r.pod_class) for r in recs]
    assert list(cols) == recs


def test_queued_and_bound_pods_keep_no_record():
    """Once the caller lets go of the records, neither the scheduling queue
    nor the bound-pod table keeps more than one per class (its prototype);
    each is built again, equal."""
    cluster = build_cluster([])
    cluster.state.add_node(node("n0"))
    sched = Scheduler(cluster, "numpy", 0)
    recs = _records([(i % 3, 0) for i in range(12)])
    want = {r.key: copy.copy(r) for r in recs}         # equal, not the same objects
    refs = [weakref.ref(r) for r in recs]
    sched.queue.add_many(recs)
    del recs
    gc.collect()
    assert sum(ref() is not None for ref in refs) == 3      # one per template
    assert {k: sched.queue.infos[k].pod for k in want} == want

    out, _ = sched.schedule_pending([])
    assert sorted((b.pod, b.node) for b in out) == [(k, "n0") for k in sorted(want)]
    bound = cluster.state.pods
    assert set(bound) == set(want)
    assert all(bound.record(k) == want[k] for k in want)
    assert sum(ref() is not None for ref in refs) <= 3
    assert np.array_equal(np.sort(bound.arrays()["creation_ns"]),
                          np.sort([r.creation_ns for r in want.values()]))
