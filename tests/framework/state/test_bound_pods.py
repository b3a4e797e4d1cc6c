"""framework/state/bound_pods.py: bound pods as columns behave as the dict
of PodRows they replace (membership, bind order, views, freed slots reused),
and ``arrays()`` answers vectorized questions the same as the views do."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.records import node, pod

from tensorsched.framework.errors import StateError
from tensorsched.framework.state.bound_pods import BoundPods
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


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(ops)
def test_table_behaves_as_a_dict_of_rows(seq):
    table = BoundPods(capacity=2)
    sids = _shape_ids(table)
    model: dict = {}          # key -> (record, row, shape id, ports)
    for op in seq:
        if op[0] == "add":
            _, i, row, shape, with_ports = op
            rec = pod(f"p{i}", priority=i % 3 or None)
            if rec.key in model:
                continue
            ports = (i, i + 1) if with_ports else ()
            table.add(rec, row, sids[shape], ports)
            model[rec.key] = (rec, row, sids[shape], ports)
        elif op[0] == "many":
            _, idx, row, shape = op
            recs = [pod(f"p{i}", priority=i) for i in idx if f"default/p{i}" not in model]
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
        assert view.shape is table.shapes[sid] and table.record(key) is rec
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
    # freed slots are reused before the table grows
    assert table._top == len(table) + len(table._free)


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
