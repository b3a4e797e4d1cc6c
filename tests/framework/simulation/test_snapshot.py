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
