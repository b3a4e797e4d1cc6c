"""The snapshot encoding: calls and objects round-trip through the Arrow
table, traces through IPC blobs; a table that is no snapshot, or of another
version, is refused; the digest follows the state it is given."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.simulation import snapshot as SN
from tensorsched.framework.simulation.errors import SimulationError
from tensorsched.framework.simulation.trace import trace_from_table

INIT = {"backend": "numpy", "seed": 3, "interval": 10.0, "options": {"batch": False},
        "objects": [node_dict("n0")], "config": None}


def test_calls_round_trip():
    calls = [("submit", 2.0, {"pods": [pod_dict("a")], "duration": None}, None),
             ("cordon", 4.0, "n0", None), ("run", None, None, None)]
    table = SN.snapshot_table(INIT, calls, 12.5, "abc")
    meta, objects, rest = SN.read_snapshot(table)
    assert meta == {"version": SN.SNAPSHOT_VERSION, "time": 12.5, "digest": "abc",
                    "init": {k: v for k, v in INIT.items() if k != "objects"}}
    assert objects == INIT["objects"] and rest == calls
    # made from a Cluster: no objects, and the metadata says so
    meta, objects, _ = SN.read_snapshot(SN.snapshot_table(dict(INIT, objects=None), [], 0, "d"))
    assert objects is None and meta["init"]["objects_in_snapshot"] is False


def test_refused_tables():
    with pytest.raises(SimulationError, match="not a simulation snapshot"):
        SN.read_snapshot(pa.table({"call": ["init"]}))
    table = SN.snapshot_table(INIT, [], 0.0, "d")
    meta = json.loads(table.schema.metadata[SN.METADATA_KEY])
    old = table.replace_schema_metadata({SN.METADATA_KEY: json.dumps(dict(meta, version=0))})
    with pytest.raises(SimulationError, match="snapshot version 0; this reads 1"):
        SN.read_snapshot(old)
    with pytest.raises(SimulationError, match="unknown call 'fly'"):
        SN.replay_call(object(), "fly", None, None, None)


def test_trace_blob_round_trip():
    trace = trace_from_table(pa.table({"name": ["a", "b"], "arrival": [0.0, 4.0],
                                       "duration": [5.0, None], "cpu": [1000, 2000]}),
                             source="t.csv")
    back = SN.trace_from_blob(SN.trace_blob(trace), {"source": trace.source,
                                                     "lines": trace.lines,
                                                     "templates": trace.templates})
    assert back.table.equals(trace.table) and back.source == "t.csv"
    np.testing.assert_array_equal(back.origin, trace.origin)


def test_digest_follows_the_state():
    state = build_cluster([node_dict("n0"), pod_dict("a", spec={"nodeName": "n0"})]).state
    base = SN.digest(1.0, state, {"default/p": 0}, 2, {"arrived": 1})
    assert base == SN.digest(1.0, state, ["default/p"], 2, {"arrived": 1})
    assert len({base, SN.digest(2.0, state, ["default/p"], 2, {"arrived": 1}),
                SN.digest(1.0, state, [], 2, {"arrived": 1}),
                SN.digest(1.0, state, ["default/p"], 3, {"arrived": 1}),
                SN.digest(1.0, state, ["default/p"], 2, {"arrived": 2})}) == 5


def _meta_table(change):
    """A good snapshot table whose metadata ``change(meta)`` edited."""
    table = SN.snapshot_table(INIT, [], 0.0, "d")
    meta = json.loads(table.schema.metadata[SN.METADATA_KEY])
    text = change(meta)
    return table.replace_schema_metadata(
        {SN.METADATA_KEY: text if isinstance(text, bytes) else json.dumps(text)})


def _without(meta, *path):
    d = meta
    for key in path[:-1]:
        d = d[key]
    del d[path[-1]]
    return meta


@pytest.mark.parametrize("table, problem", [
    (_meta_table(lambda m: b"{not json"), "snapshot: metadata: not JSON"),
    (_meta_table(lambda m: [1]), "snapshot: metadata: must be a JSON object, got list"),
    (_meta_table(lambda m: _without(m, "init")), "snapshot: metadata: init: missing"),
    (_meta_table(lambda m: _without(m, "digest")), "snapshot: metadata: digest: missing"),
    (_meta_table(lambda m: _without(m, "init", "backend")),
     "snapshot: metadata: init.backend: missing"),
    (_meta_table(lambda m: dict(m, init=dict(m["init"], options=[1]))),
     "snapshot: metadata: init.options: must be a JSON object"),
    (SN.snapshot_table(INIT, [], 0.0, "d").drop(["call"]),
     "not a simulation snapshot (no column 'call')"),
    (SN.snapshot_table(INIT, [], 0.0, "d").slice(0, 0),
     "snapshot: row 0: call: must be 'init' (the objects), got 'no rows'"),
    (SN.snapshot_table(INIT, [("run", None, None, None)], 0.0, "d").slice(1),
     "snapshot: row 0: call: must be 'init' (the objects), got 'run'"),
])
def test_malformed_tables_are_refused_naming_what_is_wrong(table, problem):
    # a hand-edited or foreign table: one SimulationError, no JSON, Key or Index error
    with pytest.raises(SimulationError) as exc:
        SN.read_snapshot(table)
    assert str(exc.value).startswith(problem)


def test_a_row_that_is_not_json_is_named():
    table = SN.snapshot_table(INIT, [("cordon", 1.0, "n0", None)], 0.0, "d")
    bad = table.set_column(2, "payload", pa.array(['[]', '{"x'], pa.string()))
    with pytest.raises(SimulationError, match=r"^s.arrow: row 1: payload: not JSON"):
        SN.read_snapshot(bad, "s.arrow")


@pytest.mark.parametrize("call, arg, blob", [
    ("submit", ["a"], None), ("submit", {"pods": []}, None),
    ("add_node_slices", {"node": {}}, None), ("submit_trace", {"source": "t"}, None),
    ("submit_trace", {"source": "t", "lines": False, "templates": None}, b"not arrow"),
])
def test_a_call_whose_argument_has_another_shape_is_refused(call, arg, blob):
    with pytest.raises(SimulationError, match=f"^snapshot: call '{call}': its argument"):
        SN.replay_call(object(), call, 1.0, arg, blob)
