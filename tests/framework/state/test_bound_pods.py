"""framework/state/bound_pods.py: bound pods as columns behave as the dict
of PodRows they replace (membership, bind order, views, freed slots reused,
records built on request equal to the ones bound), and ``arrays()`` answers
vectorized questions the same as the views do."""

from __future__ import annotations

import dataclasses
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.records import node, pod

from tensorsched.framework.errors import StateError
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.parsing.pod_templates import PodTemplates
from tensorsched.framework.records.pod_columns import PodColumns
from tensorsched.framework.state.bound_pods import NO_START, BoundPods
from tensorsched.framework.state.cluster_state import ClusterState

SHAPES = [(np.array([100, 1 << 20, 0, 1], np.int64), (100, 1 << 20)),
          (np.array([2000, 4 << 30, 0, 1, 3], np.int64), (2000, 4 << 30)),
          (np.array([0, 0, 0, 1], np.int64), (100, 200 << 20))]


def _shape_ids(table: BoundPods) -> list[int]:
    return [table.shape_of(r.copy(), *nz) for r, nz in SHAPES]


# add one / add many / pop, by name index; the model is the dict they replace
ops = st.lists(st.one_of(
    st.tuples(st.just("add"), st.integers(0, 40), st.integers(0, 9), st.integers(0, 2),
              st.booleans()),
    st.tuples(st.just("many"), st.lists(st.integers(0, 40), max_size=6, unique=True),
              st.integers(0, 9), st.integers(0, 2)),
    st.tuples(st.just("pop"), st.integers(0, 40))), max_size=40)


def _keys_of_rows(model: dict) -> list[list[str]]:
    """Per node row (20 rows) the keys bound on it (``pods_on_node``)."""
    out: list[list[str]] = [[] for _ in range(20)]
    for key, m in model.items():
        out[m[1]].append(key)
    return out


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(ops, st.integers(-1, 40))
def test_table_behaves_as_a_dict_of_rows(seq, read_at):
    """Adds, runs and pops behave as the dict of rows they replace; the
    per-slot start times and terminating flags are the records' (a free
    slot's the defaults); and the
    pods per node row (``pods_on_rows``, first read before op ``read_at``
    (-1: not before the end), then kept by the ops) are the model's, with
    their slots."""
    table = BoundPods(capacity=2)
    sids = _shape_ids(table)
    model: dict = {}          # key -> (record, row, shape id, ports)
    for at, op in enumerate(seq):
        if at == read_at:
            table.pods_on_rows([0, 3], _keys_of_rows(model))
        if op[0] == "add":
            _, i, row, shape, with_ports = op
            rec = pod(f"p{i}", priority=i % 3 or None)
            if i % 4 == 1:                          # a running pod: a start time
                rec = dataclasses.replace(rec, start_ns=1000 + i)
            if i % 5 == 2:                          # a terminating pod
                rec = dataclasses.replace(rec, deleting=True)
            if rec.key in model:
                continue
            ports = (i, i + 1) if with_ports else ()
            table.add(rec, row, sids[shape], ports)
            model[rec.key] = (rec, row, sids[shape], ports)
        elif op[0] == "many":
            _, idx, row, shape = op
            recs = [pod(f"p{i}", priority=i) for i in idx if f"default/p{i}" not in model]
            recs = [dataclasses.replace(r, start_ns=7 + k, deleting=k % 2 == 0) if k % 3 == 1
                    else r for k, r in enumerate(recs)]
            rows = np.arange(row, row + len(recs), dtype=np.int64)
            table.add_many(recs, rows, sids[shape])
            for rec, r in zip(recs, rows.tolist()):
                model[rec.key] = (rec, r, sids[shape], ())
        else:
            key = f"default/p{op[1]}"
            got = table.pop(key, None)
            want = model.pop(key, None)
            assert (got is None) == (want is None)
            if got is not None:
                assert (got.record, got.node_row, got.shape_id, got.port_ids) == want
    assert list(table) == list(model) and len(table) == len(model)
    for key, (rec, row, sid, ports) in model.items():
        view = table[key]
        assert (view.record, view.node_row, view.shape_id, view.port_ids) == \
            (rec, row, sid, ports)
        assert view.shape is table.shapes[sid] and table.record(key) == rec
        assert table.row_of(key) == row
    assert [(r, row) for r, row in table.bound()] == [(m[0], m[1]) for m in model.values()]
    cols = table.arrays()
    assert cols["key"].tolist() == list(model)
    assert cols["node_row"].tolist() == [m[1] for m in model.values()]
    assert cols["priority"].tolist() == [m[0].priority or 0 for m in model.values()]
    assert cols["creation_ns"].tolist() == [m[0].creation_ns or 0 for m in model.values()]
    for k, m in enumerate(model.values()):
        req, nz = table.shapes[m[2]]
        assert cols["request"][k, : req.shape[0]].tolist() == req.tolist()
        assert cols["request"][k, req.shape[0]:].tolist() == [0] * (
            cols["request"].shape[1] - req.shape[0])
        assert tuple(cols["nonzero"][k]) == nz
    # the victim table's accessors, by key
    keys = sorted(model)
    slots = table.slots_of(keys)
    assert table.priorities(slots).tolist() == [model[k][0].priority or 0 for k in keys]
    assert table.start_times(slots, -1).tolist() == [
        -1 if model[k][0].start_ns is None else model[k][0].start_ns for k in keys]
    # freed slots are reused before the table grows
    assert table._top == len(table) + len(table._free)
    # the per-slot columns a compiled pass gathers: start time and
    # terminating flag (reused slots hold their new pod's)
    assert table.start_ns[slots].tolist() == [
        NO_START if model[k][0].start_ns is None else model[k][0].start_ns for k in keys]
    assert table.deleting[slots].tolist() == [bool(model[k][0].deleting) for k in keys]
    # a free slot holds the defaults (a pod bound there later without
    # extras writes none)
    free = np.array(sorted(table._free), np.int64)
    assert (table.start_ns[free] == NO_START).all() and not table.deleting[free].any()
    twin = table.copy()
    assert twin.start_ns.tolist() == table.start_ns.tolist()
    assert twin.deleting.tolist() == table.deleting.tolist()
    want_rows = [{} for _ in range(20)]
    for key, m in model.items():
        want_rows[m[1]][key] = table._slot[key]
    assert table.pods_on_rows(list(range(20)), _keys_of_rows(model)) == want_rows
    assert twin.pods_on_rows(list(range(20)), _keys_of_rows(model)) == want_rows


def test_freed_slots_out_of_order_keep_each_pods_own_columns():
    """Slots reused in the order they were freed (2, 4, 3) then a fresh one
    (5): their span is as long as the pods, but they are not in order, so
    each pod's manifest and row go to its own slot."""
    table = BoundPods()
    sid = _shape_ids(table)[0]
    table.add_many([pod(f"p{i}") for i in range(5)], np.arange(5, dtype=np.int64), sid)
    for k in ("default/p3", "default/p4", "default/p2"):
        table.pop(k)
    recs = [pod(f"q{i}") for i in range(4)]
    slots = table.add_many(recs, np.array([10, 11, 12, 13], np.int64), sid)
    assert sorted(slots.tolist()) == [2, 3, 4, 5] and slots.tolist() != [2, 3, 4, 5]
    for i, r in enumerate(recs):
        assert table[r.key].record.obj is r.obj and table.row_of(r.key) == 10 + i


def test_copy_is_independent():
    table = BoundPods()
    sid = _shape_ids(table)[0]
    table.add_many([pod(f"p{i}") for i in range(5)], np.arange(5, dtype=np.int64), sid)
    twin = table.copy()
    twin.pop("default/p1")
    twin.add(pod("q"), 7, sid)
    assert list(table) == [f"default/p{i}" for i in range(5)]
    assert list(twin) == ["default/p0", "default/p2", "default/p3", "default/p4", "default/q"]
    assert table.row_of("default/p1") == 1 and "default/q" not in table


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(st.integers(1, 12), st.data())
def test_suspension_puts_pods_back_in_their_slots_and_order(n, data):
    """Pods popped after ``hold_order`` and added back (in any order, with
    another pod coming and going meanwhile) leave the table as it was."""
    table = BoundPods(capacity=1)
    sid = _shape_ids(table)[1]
    recs = [pod(f"p{i}", priority=i) for i in range(n)]
    table.add_many(recs[: n // 2], np.arange(n // 2, dtype=np.int64), sid)
    for i in range(n // 2, n):
        table.add(recs[i], i, sid, (i,) if i % 2 else ())
    table.pop(recs[0].key)                  # a free slot before the suspension
    table.add(recs[0], 0, sid)
    before = {k: table[k] for k in table}
    order = list(table)
    gone = data.draw(st.lists(st.sampled_from(order), unique=True, min_size=1))
    held = table.hold_order()
    rows = [table.pop(k) for k in gone]
    table.add(pod("visitor"), 3, sid)        # a nominated pod for one cycle
    table.pop("default/visitor")
    for entry in data.draw(st.permutations(rows)):
        table.add(entry.record, entry.node_row, entry.shape_id, entry.port_ids, entry.slot)
    table.restore_order(held)
    assert list(table) == order
    assert {k: table[k] for k in table} == before


def test_pop_missing_key_raises_without_default():
    with pytest.raises(KeyError):
        BoundPods().pop("default/nobody")


def test_state_runs_and_removals_keep_columns_and_requested_in_step():
    """A run registered in bulk, single pods with ports, removals: every
    node's requested column equals the sum of its bound pods' shapes."""
    s = ClusterState()
    for i in range(4):
        s.add_node(node(f"n{i}"))
    s.add_pod(pod("a", "n0", ports=(8080,)))
    s.add_pod(pod("b", "n1", cpu=300))
    run = [pod(f"r{i}", cpu=250, priority=5) for i in range(6)]
    rows = np.array([0, 1, 2, 3, 0, 1], np.int64)
    req = s.resource_vector(run[0].requests, intern=True)
    req[3] = 1
    np.add.at(s.requested[:, : req.shape[0]], rows, req)
    np.add.at(s.nonzero_requested, rows, np.array([250, run[0].nonzero_memory]))
    s.register_run(run, rows, req, (250, run[0].nonzero_memory))
    s.remove_pod("default/r2")
    s.remove_pod("default/a")
    with pytest.raises(StateError):
        s.remove_pod("default/a")
    cols = s.pods.arrays()
    assert sorted(cols["key"].tolist()) == sorted(
        ["default/b"] + [f"default/r{i}" for i in (0, 1, 3, 4, 5)])
    r = cols["request"].shape[1]
    for row in range(4):
        on = cols["node_row"] == row
        assert s.requested[row, :r].tolist() == cols["request"][on].sum(axis=0).tolist()
        assert s.nonzero_requested[row].tolist() == cols["nonzero"][on].sum(axis=0).tolist()
        assert set(s.pods_on_node[row]) == set(cols["key"][on].tolist())
    assert cols["priority"][cols["key"] == "default/r0"].tolist() == [5]
    assert s.port_bits[0].tolist() == [0]           # a's port left with it


def _manifest(name, app="web", cpu="250m", annotations=None, **meta):
    status = meta.pop("status", None)
    obj = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "shop", "labels": {"app": app},
                        "creationTimestamp": "2026-01-01T00:00:05Z", **meta},
           "spec": {"containers": [{"name": "c", "image": "img",
                                    "resources": {"requests": {"cpu": cpu}}}]}}
    if annotations is not None:
        obj["metadata"]["annotations"] = annotations
    if status is not None:
        obj["status"] = status
    return obj


def test_pods_of_a_template_share_a_class_and_come_back_equal():
    """Records are not kept: a pod's record is built from its class and its
    slot, equal to the one it was bound with (memo shared), whatever its
    per-pod fields; a class goes when its last pod does."""
    templates = PodTemplates(parse_pod)
    web = [templates.parse(_manifest(f"web-{i}")) for i in range(5)]
    running = templates.parse(_manifest(
        "web-up", uid="u-1", creationTimestamp="2026-01-02T00:00:00Z",
        status={"phase": "Running", "startTime": "2026-01-02T00:00:01Z"}))
    leaving = templates.parse(_manifest("web-gone", deletionTimestamp="2026-01-03T00:00:00Z"))
    noted = templates.parse(_manifest("web-noted", annotations={"a": "b"}))
    api = [templates.parse(_manifest(f"api-{i}", app="api", cpu="1")) for i in range(3)]
    records = web + [running, leaving, noted] + api
    assert templates.hits == 9            # one parse per template, the rest are copies

    table = BoundPods(capacity=2)
    sid = _shape_ids(table)[0]
    table.add_many(web[:3], np.arange(3, dtype=np.int64), sid)
    for i, rec in enumerate(web[3:] + [running, leaving, noted]):
        table.add(rec, 3 + i, sid)
    table.add_many(api, np.full(3, 9, np.int64), sid)
    cls = dict(zip(table.arrays()["key"].tolist(), table.arrays()["class_id"].tolist()))
    assert len({cls[r.key] for r in web + [running, leaving]}) == 1
    assert len({cls[web[0].key], cls[noted.key], cls[api[0].key]}) == 3
    assert len([c for c in table.classes if c is not None]) == 3
    for rec in records:
        got = table.record(rec.key)
        assert got == rec and got is not rec and got.memo is rec.memo
        assert type(got) is type(rec)
    # per-pod fields beyond name, creation time and object only where set
    slot = table._slot
    assert set(table.extras) == {slot[running.key], slot[leaving.key]}
    assert table.record(running.key).start_ns == running.start_ns > 0
    assert table.record(leaving.key).deleting
    assert table.arrays()["creation_ns"].tolist() == [table.record(k).creation_ns
                                                      for k in table]

    for rec in api:
        assert table.pop(rec.key).record == rec
    gone = cls[api[0].key]
    assert table.classes[gone] is None and id(api[0].memo) not in table._class_ids
    again = templates.parse(_manifest("api-9", app="api", cpu="1"))
    table.add(again, 0, sid)                # the freed class id is reused
    assert table.arrays()["class_id"][-1] == gone and table.record(again.key) == again


def test_pods_of_one_class_over_freed_and_fresh_slots():
    """Pods of one template (a run's) over two freed slots (last freed
    first) and two fresh ones: the class is counted once for all of them,
    and each pod's manifest, row and extras (a start time, on a reused and
    on a fresh slot) go to its own slot."""
    table = BoundPods()
    sid = _shape_ids(table)[0]
    table.add_many([pod(f"p{i}") for i in range(4)], np.arange(4, dtype=np.int64), sid)
    for k in ("default/p1", "default/p3"):
        table.pop(k)
    templates = PodTemplates(parse_pod)
    up = {"phase": "Running", "startTime": "2026-01-02T00:00:01Z"}
    recs = [templates.parse(_manifest(f"q{i}", **({"status": up} if i in (0, 3) else {})))
            for i in range(4)]
    assert len({r.pod_class for r in recs}) == 1 and recs[0].start_ns
    slots = table.add_many(recs, np.array([20, 21, 22, 23], np.int64), sid)
    assert slots.tolist() == [3, 1, 4, 5]
    cid = int(table.class_id[slots[0]])
    assert table.class_id[slots].tolist() == [cid] * 4 and table._class_refs[cid] == 4
    for i, r in enumerate(recs):
        assert table.record(r.key) == r and table[r.key].record.obj is r.obj
        assert table.row_of(r.key) == 20 + i and table[r.key].slot == slots[i]
    assert set(table.extras) & set(slots.tolist()) == {3, 5}
    assert list(table)[-4:] == [r.key for r in recs]


def test_pods_of_classes_numbered_far_apart():
    """Pods whose classes in their columns lie far apart (past the span a
    table maps) take the sort: each pod still gets its own class."""
    table = BoundPods()
    sid = _shape_ids(table)[0]
    recs = [pod(f"c{i}", priority=i) for i in range(4200)]
    cols = PodColumns.from_records(recs).take([0, 4199, 7, 4199 - 7])
    table.add_many(cols, np.arange(4, dtype=np.int64), sid)
    for k in (0, 4199, 7, 4192):
        assert table.record(f"default/c{k}") == recs[k]
    assert len({int(table.class_id[table._slot[f"default/c{k}"]]) for k in (0, 4199, 7)}) == 3


def test_rows_pods_are_built_on_the_first_read_of_a_row_only():
    """``pods_on_rows`` builds a row's dict on the first read that asks
    for that row, from the row's keys (a row never asked costs nothing),
    then keeps it through binds and removals; a run bound on a kept row
    has it built again on the next read."""
    table = BoundPods()
    sid = _shape_ids(table)[0]
    table.add_many([pod(f"p{i}") for i in range(4)], np.array([0, 1, 0, 2], np.int64), sid)
    on_node = [["default/p0", "default/p2"], ["default/p1"], ["default/p3"], [], [], []]
    assert table.pods_on_rows([], on_node) == [] and table._by_row == {}
    got = table.pods_on_rows([0, 2, 5], on_node)
    assert got == [{"default/p0": 0, "default/p2": 2}, {"default/p3": 3}, {}]
    assert sorted(table._by_row) == [0, 2, 5]           # row 1 never asked: not built
    table.pop("default/p0")
    table.add(pod("q"), 2, sid)
    table.add(pod("r"), 1, sid)                         # a row not kept: nothing written
    assert sorted(table._by_row) == [0, 2, 5]
    on_node = [["default/p2"], ["default/p1", "default/r"], ["default/p3", "default/q"],
               [], [], []]
    assert table.pods_on_rows([0, 2], on_node) == [{"default/p2": 2},
                                                   {"default/p3": 3, "default/q": 0}]
    table.add_many([pod("s")], np.array([2], np.int64), sid)
    on_node[2].append("default/s")
    assert table.pods_on_rows([2, 0], on_node) == [
        {"default/p3": 3, "default/q": 0, "default/s": 5}, {"default/p2": 2}]


def test_pods_without_start_time_or_deletion_write_neither_column():
    """Binding and removing pods with no start time and not terminating
    (a uid only, or no extras at all) writes neither ``start_ns`` nor
    ``deleting`` (read-only here: a write would raise); a pod with both
    writes them and its removal puts the defaults back."""
    table = BoundPods()
    sid = _shape_ids(table)[0]
    table.start_ns.flags.writeable = False
    table.deleting.flags.writeable = False
    plain = dataclasses.replace(pod("a"), uid=None)
    table.add(pod("u"), 0, sid)                         # a uid: extras, no start
    table.add(plain, 1, sid)
    table.add_many([pod("m0"), pod("m1")], np.array([0, 1], np.int64), sid)
    for key in ("default/u", "default/a", "default/m0", "default/m1"):
        table.pop(key)
    table.start_ns.flags.writeable = True
    table.deleting.flags.writeable = True
    table.add(dataclasses.replace(pod("r"), start_ns=5, deleting=True), 0, sid)
    got = table._slot["default/r"]
    assert (table.start_ns[got], table.deleting[got]) == (5, True)
    table.pop("default/r")
    assert (table.start_ns[got], table.deleting[got]) == (NO_START, False)
