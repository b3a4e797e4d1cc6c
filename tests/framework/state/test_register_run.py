"""``ClusterState.register_run``, the bookkeeping of a compiled run's pods,
equals ``add_pod`` of each pod in order: the pod table (bind order, slots,
records built back, rows, shapes), each row's pods, the requested columns,
the priorities, the pod count, a batch listener's counts and what a
listener hears, with single adds and removals between runs (which read the
table while a run's keys still wait to join its index).  Versions differ
by design: a run is one step."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.records import node, pod

from tensorsched.framework.records.pod_columns import PodColumns, build_record
from tensorsched.framework.state.cluster_state import ClusterState
from tensorsched.framework.state.domain_counts import PodCountIndex

GPU = "nvidia.com/gpu"


class _Told:
    """What a listener hears, one (key, row, delta) per pod: the many-pod
    form spelled out pod by pod."""

    def __init__(self):
        self.events: list = []

    def on_pod(self, record, row, delta):
        self.events.append((record.key, record, int(row), delta))

    def on_pods(self, records, rows, delta):
        for rec, row in zip(records, rows.tolist()):
            self.on_pod(rec, row, delta)


def _state():
    s = ClusterState(node_capacity=2)
    for i in range(5):
        s.add_node(node(f"n{i}", cpu=64000, labels={"zone": f"z{i % 2}"}, extra={GPU: 8}))
    s.add_pod(pod("old", "n1", labels={"app": "web"}, priority=5))
    idx = PodCountIndex(s)
    s.listeners.add(idx)
    idx.counts("web", lambda r: r.labels.get("app") == "web")
    told = _Told()
    s.listeners.add(told)
    return s, idx, told


def _view(s: ClusterState, idx: PodCountIndex, told: _Told) -> dict:
    """What callers of the state see (versions aside)."""
    n = s.n_rows
    table = s.pods
    return {
        "keys": list(table), "len": len(table),
        "rows": [(k, e.node_row, e.slot, e.shape_id, e.port_ids, e.record)
                 for k, e in table.items()],
        "bound": [(r, row) for r, row in table.bound()],
        "arrays": {k: v.tolist() for k, v in table.arrays().items()},
        "on_node": [list(d) for d in s.pods_on_node[:n]],
        "requested": s.requested[:n].tolist(),
        "nonzero": s.nonzero_requested[:n].tolist(),
        "priorities": dict(s.priorities), "pod_adds": s.pod_adds,
        "web": idx.counts("web", None)[:n].tolist(),
        "told": told.events,
    }


def _template(t: int, owner: bool, labels: bool, prio) -> object:
    rec = pod(f"tmpl{t}", cpu=100 * (t + 1), extra={GPU: t % 2},
              labels={"app": "web", "tier": str(t)} if labels else {}, priority=prio)
    if owner:
        obj = dict(rec.obj, metadata=dict(rec.obj["metadata"], ownerReferences=[
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"rs{t}", "uid": f"u{t}",
             "controller": True}]))
        rec = dataclasses.replace(rec, obj=obj)
    return rec


def _run_pods(template, start: int, count: int, extras: bool) -> list:
    """``count`` pods of ``template``'s class (as the queue hands a run:
    one memo), some with per-pod fields of their own (``extras``)."""
    out = []
    for i in range(count):
        j = start + i
        extra = (f"uid-{j}", 1000 + j, "", "Running", False) if extras and j % 3 == 0 else \
            ("", None, "", "", False)
        out.append(build_record(template, f"default/r{j}", 10 * j, {"metadata": {"name": f"r{j}"}},
                                extra))
    return out


def _register(s: ClusterState, pods, rows: np.ndarray, as_columns: bool) -> None:
    """What a compiled run does: its requests added to the columns, then
    ``register_run``."""
    first = pods[0]
    req = s.resource_vector(first.requests, intern=True)
    req[3] = 1
    np.add.at(s.requested[:, : req.shape[0]], rows, req)
    nz = (first.nonzero_cpu, first.nonzero_memory)
    np.add.at(s.nonzero_requested, rows, np.array(nz, np.int64))
    s.register_run(PodColumns.from_records(pods) if as_columns else pods, rows, req, nz)


steps = st.lists(st.one_of(
    st.tuples(st.just("run"), st.integers(0, 3), st.integers(1, 12), st.booleans(),
              st.booleans(), st.booleans(), st.sampled_from([None, 0, 7]), st.booleans(),
              st.integers(0, 2**16)),
    st.tuples(st.just("add"), st.integers(0, 4)),
    st.tuples(st.just("remove"), st.integers(0, 60)),
    st.tuples(st.just("read"), st.sampled_from(["len", "in", "copy", "hold"]))),
    min_size=1, max_size=10)


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(steps)
def test_register_run_equals_add_pod_one_at_a_time(seq):
    bulk, one = _state(), _state()
    made = 0
    singles = 0
    for step in seq:
        if step[0] == "run":
            _, t, count, owner, labels, extras, prio, as_columns, seed = step
            pods = _run_pods(_template(t, owner, labels, prio), made, count, extras)
            made += count
            rows = np.random.default_rng(seed).integers(0, 5, count).astype(np.int64)
            _register(bulk[0], pods, rows, as_columns)
            for p, r in zip(pods, rows.tolist()):
                one[0].add_pod(p, f"n{r}")
        elif step[0] == "add":
            for s, _, _ in (bulk, one):
                s.add_pod(pod(f"single{singles}", f"n{step[1]}", cpu=50), f"n{step[1]}")
            singles += 1
        elif step[0] == "remove":
            key = f"default/r{step[1]}"
            if key in one[0].pods:
                for s, _, _ in (bulk, one):
                    s.remove_pod(key)
        else:           # reads while a run's keys may still wait to join the index
            what = step[1]
            b, o = bulk[0].pods, one[0].pods
            if what == "len":
                assert len(b) == len(o)
            elif what == "in":
                assert [f"default/r{j}" in b for j in range(made)] == \
                    [f"default/r{j}" in o for j in range(made)]
            elif what == "copy":
                twin = b.copy()
                assert list(twin) == list(o) and len(twin) == len(o)
            else:
                held = b.hold_order()
                b.restore_order(held)
                assert list(b) == list(o)
    assert _view(*bulk) == _view(*one)
