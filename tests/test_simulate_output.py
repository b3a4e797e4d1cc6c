"""simulate_output.EventWriter: only outcome events reach events.parquet,
in order, with empty messages written as nulls."""

from __future__ import annotations

import pyarrow.parquet as pq

from tensorsched.simulate_output import EVENT_SCHEMA, EventWriter


def _e(t, event, pod="default/p", node="n1", message=""):
    return {"time": t, "event": event, "pod": pod, "node": node, "message": message}


def test_writer_keeps_outcome_rows_only(tmp_path):
    path = str(tmp_path / "events.parquet")
    w = EventWriter(path)
    w(_e(0.0, "Arrived"))
    w(_e(1.0, "Bound"))
    w(_e(2.0, "Scheduled"))
    w(_e(3.0, "FailedScheduling", node=None, message="0/1 nodes are available"))
    w(_e(4.0, "Preempted", message="by default/q"))
    w.close()
    t = pq.read_table(path)
    assert t.schema.equals(EVENT_SCHEMA)
    assert w.rows == 3
    assert t.column("event").to_pylist() == ["Bound", "FailedScheduling", "Preempted"]
    assert t.column("time").to_pylist() == [1.0, 3.0, 4.0]
    assert t.column("message").to_pylist() == [None, "0/1 nodes are available", "by default/q"]
    assert t.column("node").to_pylist() == ["n1", None, "n1"]


def test_empty_writer_gives_an_empty_file_with_the_schema(tmp_path):
    path = str(tmp_path / "events.parquet")
    w = EventWriter(path)
    w.close()
    t = pq.read_table(path)
    assert t.num_rows == 0 and t.schema.equals(EVENT_SCHEMA)
