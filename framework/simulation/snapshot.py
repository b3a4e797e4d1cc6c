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

from tensorsched.framework.errors import TensorschedError

from .errors import SimulationError
from .trace import Trace

SNAPSHOT_VERSION = 1
METADATA_KEY = b"tensorsched.simulation"


class Frozen(str):
    """A call's argument as JSON text, taken when the call was made: the
    caller may change its dicts afterwards, the snapshot keeps what was
    given (``freeze``)."""


class NotJson:
    """An argument JSON cannot hold (a function, a NumPy array, a date):
    the simulation runs, a snapshot of it is refused naming ``where``."""

    def __init__(self, where: str, problem: str):
        self.where = where
        self.problem = problem

    def refuse(self):
        raise SimulationError(f"snapshot: {self.where}: not a JSON value ({self.problem}); "
                              "a snapshot holds its simulation's inputs as JSON")


def freeze(value, where: str) -> Frozen | NotJson:
    """``value`` as JSON text now (its later changes do not reach the
    snapshot), or a NotJson naming ``where`` (e.g. ``the submit call at
    5s``) when it is no JSON value."""
    try:
        return Frozen(json.dumps(value))
    except (TypeError, ValueError) as exc:
        return NotJson(where, str(exc))


def thawed(value, where: str):
    """A JSON copy of ``value`` (a mapping or list the caller keeps), or a
    NotJson naming ``where``: what ``freeze`` keeps, decoded, for values
    that go into the snapshot's metadata."""
    text = freeze(value, where)
    return text if isinstance(text, NotJson) else json.loads(text)


def _payload(value, where: str) -> str:
    """The payload column's text of ``value``: JSON (a Frozen is already)."""
    if isinstance(value, NotJson):
        value.refuse()
    if isinstance(value, Frozen):
        return str(value)
    text = freeze(value, where)
    if isinstance(text, NotJson):
        text.refuse()
    return str(text)


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
    (``(call, at, payload, blob)``; a payload may be ``freeze``'s).  An
    input JSON cannot hold (a ``binder`` function, a NumPy array in a
    manifest) is a SimulationError naming it."""
    init = dict(init)
    if init["objects"] is None:
        init["objects_in_snapshot"] = False
    for key, value in init.get("options", {}).items():
        _payload(value, key)          # a binder function has no JSON form
    if isinstance(init.get("config"), NotJson):
        init["config"].refuse()
    meta = {"version": SNAPSHOT_VERSION, "time": time, "digest": state_digest,
            "init": {k: v for k, v in init.items() if k != "objects"}}
    calls = [("init", None, init["objects"], None)] + list(calls)
    payloads = [_payload(c[2], "the objects" if i == 0 else
                         f"the {c[0]} call" + (f" at {c[1]:g}s" if c[1] is not None else ""))
                for i, c in enumerate(calls)]
    table = pa.table({
        "call": pa.array([c[0] for c in calls], pa.string()),
        "at": pa.array([c[1] for c in calls], pa.float64()),
        "payload": pa.array(payloads, pa.string()),
        "blob": pa.array([c[3] for c in calls], pa.binary()),
    })
    return table.replace_schema_metadata({METADATA_KEY: json.dumps(meta)})


#: The columns of a snapshot table, in order.
COLUMNS = ("call", "at", "payload", "blob")
#: What the metadata's ``init`` holds (``Simulation.__init__``'s arguments).
INIT_KEYS = ("backend", "seed", "interval", "options", "config")


def read_snapshot(table: pa.Table, source: str = "snapshot") -> tuple[dict, object, list]:
    """(metadata, the objects or None, the calls after init as ``(call, at,
    argument, blob)``) of a snapshot table.  A table that is not one
    snapshot_table wrote (metadata or rows that are not JSON, a column
    or field missing, no init row) is a SimulationError naming ``source``
    (the file, when it was read from one) and what is wrong."""
    md = (table.schema.metadata or {}).get(METADATA_KEY)
    if md is None:
        raise SimulationError(f"{_not_one(source)} (no tensorsched.simulation metadata)")
    meta = _json(md, source, "metadata")
    if not isinstance(meta, dict):
        raise SimulationError(f"{source}: metadata: must be a JSON object, got "
                              f"{type(meta).__name__}")
    if meta.get("version") != SNAPSHOT_VERSION:
        raise SimulationError(f"snapshot version {meta.get('version')!r}; this reads "
                              f"{SNAPSHOT_VERSION}")
    init = meta.get("init")
    if not isinstance(init, dict) or not isinstance(meta.get("digest"), str):
        field = "init" if not isinstance(init, dict) else "digest"
        raise SimulationError(f"{source}: metadata: {field}: missing or malformed")
    for key in INIT_KEYS:
        if key not in init:
            raise SimulationError(f"{source}: metadata: init.{key}: missing")
    if not isinstance(init["options"], dict):
        raise SimulationError(f"{source}: metadata: init.options: must be a JSON object")
    for name in COLUMNS:
        if name not in table.column_names:
            raise SimulationError(f"{_not_one(source)} (no column {name!r})")
    calls = table.column("call").to_pylist()
    if not calls or calls[0] != "init":
        raise SimulationError(f"{source}: row 0: call: must be 'init' (the objects), got "
                              f"{calls[0] if calls else 'no rows'!r}")
    ats = table.column("at").to_pylist()
    payloads = [_json(p, source, f"row {i}: payload")
                for i, p in enumerate(table.column("payload").to_pylist())]
    blobs = table.column("blob").to_pylist()
    rest = list(zip(calls[1:], ats[1:], payloads[1:], blobs[1:]))
    return meta, payloads[0], rest


def _not_one(source: str) -> str:
    return "not a simulation snapshot" if source == "snapshot" \
        else f"{source}: not a simulation snapshot"


def _json(text, source: str, where: str):
    """``text`` (str or bytes) decoded as JSON; a SimulationError naming
    ``source`` and ``where`` when it is none."""
    try:
        return json.loads(text)
    except (TypeError, ValueError) as exc:
        raise SimulationError(f"{source}: {where}: not JSON ({exc})") from None


def replay_call(sim, call: str, at, arg, blob) -> None:
    """Make ``call`` again on ``sim`` (a Simulation), through its public
    methods.  A row whose argument has not the shape its call writes (a
    hand-edited table) is a SimulationError naming the call."""
    try:
        if call == "submit_trace":
            if not isinstance(blob, bytes):
                raise TypeError(f"the trace's blob is {type(blob).__name__}, not bytes")
            trace = trace_from_blob(blob, arg)
        elif call == "submit":
            pods, duration = arg["pods"], arg["duration"]
        elif call == "add_node_slices":
            node, slices = arg["node"], arg["slices"]
    except (KeyError, TypeError, ValueError, pa.ArrowException) as exc:
        raise SimulationError(f"snapshot: call {call!r}: its argument is not what "
                              f"{call} writes ({type(exc).__name__}: {exc})") from None
    if call == "submit_trace":
        sim.submit(trace, at=at if at else None)
    elif call == "submit":
        sim.submit(pods, at=at, duration=duration)
    elif call in ("delete", "add_node", "delete_node", "cordon", "uncordon", "drain"):
        getattr(sim, call)(arg, at=at)
    elif call == "add_node_slices":
        sim.add_node(node, at=at, slices=slices)
    elif call in ("step", "run"):
        failed = arg.get("failed") if isinstance(arg, dict) else None
        try:
            getattr(sim, call)(at)
        except TensorschedError as exc:
            if str(exc) != failed:      # the original stopped there with this error
                raise
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
