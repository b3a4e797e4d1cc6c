"""A simulation as an Arrow table, and back: one row per call that fed it
(``init`` first: the objects; then submit, delete, node calls, step, run,
with their time and arguments as JSON, traces as Arrow IPC blobs), and in
the schema metadata the version, the time reached and the digest of the
state (``digest``).  ``Simulation.restore`` makes the simulation again and
replays the calls (``replay_call``), then checks the digest."""

from __future__ import annotations

import hashlib
import json

import pyarrow as pa

from .errors import SimulationError
from .trace import Trace

SNAPSHOT_VERSION = 1
METADATA_KEY = b"tensorsched.simulation"


def digest(time: float, state, queued, pending_events: int, summary: dict) -> str:
    """sha256 of a state reached: ``time``, bound pods and their nodes (of
    the ClusterState ``state``), ``queued`` pod keys, the number of pending
    events and the summary."""
    h = hashlib.sha256()
    h.update(repr(time).encode())
    for key in sorted(state.pods):
        h.update(f"{key} {state.node_name(state.pods.row_of(key))}\n".encode())
    h.update(b"|")
    for key in sorted(queued):
        h.update(f"{key}\n".encode())
    h.update(f"|{pending_events}|{sorted(summary.items())!r}".encode())
    return h.hexdigest()


def snapshot_table(init: dict, calls: list, time: float, state_digest: str) -> pa.Table:
    """The table of a simulation made with ``init`` (backend, seed,
    interval, options, objects or None, config) and fed ``calls``
    (``(call, at, payload, blob)``)."""
    init = dict(init)
    if init["objects"] is None:
        init["objects_in_snapshot"] = False
    meta = {"version": SNAPSHOT_VERSION, "time": time, "digest": state_digest,
            "init": {k: v for k, v in init.items() if k != "objects"}}
    calls = [("init", None, init["objects"], None)] + list(calls)
    table = pa.table({
        "call": pa.array([c[0] for c in calls], pa.string()),
        "at": pa.array([c[1] for c in calls], pa.float64()),
        "payload": pa.array([json.dumps(c[2]) for c in calls], pa.string()),
        "blob": pa.array([c[3] for c in calls], pa.binary()),
    })
    return table.replace_schema_metadata({METADATA_KEY: json.dumps(meta)})


def read_snapshot(table: pa.Table) -> tuple[dict, object, list]:
    """(metadata, the objects or None, the calls after init as ``(call, at,
    argument, blob)``) of a snapshot table."""
    md = (table.schema.metadata or {}).get(METADATA_KEY)
    if md is None:
        raise SimulationError("not a simulation snapshot (no tensorsched.simulation metadata)")
    meta = json.loads(md)
    if meta.get("version") != SNAPSHOT_VERSION:
        raise SimulationError(f"snapshot version {meta.get('version')!r}; this reads "
                              f"{SNAPSHOT_VERSION}")
    calls = table.column("call").to_pylist()
    ats = table.column("at").to_pylist()
    payloads = table.column("payload").to_pylist()
    blobs = table.column("blob").to_pylist()
    objects = json.loads(payloads[0])
    rest = [(c, a, json.loads(p), b)
            for c, a, p, b in zip(calls[1:], ats[1:], payloads[1:], blobs[1:])]
    return meta, objects, rest


def replay_call(sim, call: str, at, arg, blob) -> None:
    """Make ``call`` again on ``sim`` (a Simulation), through its public methods."""
    if call == "submit_trace":
        sim.submit(trace_from_blob(blob, arg), at=at if at else None)
    elif call == "submit":
        sim.submit(arg["pods"], at=at, duration=arg["duration"])
    elif call in ("delete", "add_node", "delete_node", "cordon", "uncordon", "drain"):
        getattr(sim, call)(arg, at=at)
    elif call == "add_node_slices":
        sim.add_node(arg["node"], at=at, slices=arg["slices"])
    elif call == "step":
        sim.step(at)
    elif call == "run":
        sim.run(at)
    else:
        raise SimulationError(f"snapshot: unknown call {call!r}")


def trace_blob(trace: Trace) -> bytes:
    """A trace's table (with each row's origin line) as Arrow IPC bytes."""
    table = trace.table.append_column("__origin", pa.array(trace.origin, pa.int64()))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def trace_from_blob(blob: bytes, arg: dict) -> Trace:
    """The trace ``trace_blob`` wrote (``arg``: its source, lines, templates)."""
    table = pa.ipc.open_stream(blob).read_all()
    origin = table.column("__origin").to_numpy()
    table = table.drop(["__origin"])
    return Trace(table, arg["source"], origin, arg["lines"], arg["templates"])
