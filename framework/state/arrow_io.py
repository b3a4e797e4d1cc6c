"""ClusterState <-> Arrow tables / Parquet files.

``state_to_arrow(state)`` gives one table per kind of thing the state holds:

``nodes``        one row per live node (in the state's insertion order):
                 ``name``, ``row`` (the node's row in every column array),
                 ``labels`` map<string,string>, ``unschedulable``,
                 ``taints`` list<struct<key,value,effect>>,
                 ``allocatable.<resource>`` and ``requested.<resource>`` int64 (one
                 column per registered resource, 0 when absent),
                 ``nonzero_requested.cpu`` / ``nonzero_requested.memory``,
                 ``allocatable_keys`` (the resources the node declares),
                 ``capacity`` map<string,int64>,
                 ``images`` list<struct<names: list<string>, size_bytes>>,
                 ``object`` (the Node object as JSON).
``pods``         one row per bound (or assumed) pod: ``namespace``, ``name``,
                 ``uid``, ``node`` (where it is accounted), ``node_name``
                 (its spec.nodeName), ``priority``, ``creation_ns``, ``start_ns``,
                 ``request.<resource>`` int64 (what the pod adds to its node's
                 ``requested``, ``pods`` = 1), ``requests`` (the record's map),
                 ``nonzero_cpu``, ``nonzero_memory``, ``labels``, and every other
                 PodRecord field (affinity and spread as JSON strings), ``object``.
``resources``    ``id``, ``name``: the resource registry.
``label_keys``   ``id``, ``key``, ``values`` list<string> (value id = position).
``taints``       ``id``, ``key``, ``value``, ``effect``: the taint table (bit ids).
``images``       ``id``, ``name``, ``size_bytes``: the image table (bit ids).
``ports``        ``id``, ``protocol``, ``host_ip``, ``port``: the host-port table.

Every table's schema metadata carries ``tensorsched.format`` and
``tensorsched.format_version``; the nodes table also carries ``n_rows`` and
``free_rows`` (the rows of deleted nodes, in reuse order).

``state_from_arrow`` rebuilds an identical state: the dictionaries in their
original order (ids are preserved, entries of deleted nodes included), every
node at its original row, every pod on its node, so every array of
``columns()``, every record and every row number equal the original.  The
derived columns (``requested.*``, ``nonzero_requested.*``, ``request.*``) are
checked against the rebuilt state; a table that does not fit raises
:class:`ArrowFormatError` naming the table and the column.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tensorsched.framework.errors import StateError, TensorschedError
from tensorsched.framework.records.records import (
    HostPort,
    NodeImage,
    NodeRecord,
    PodRecord,
    Taint,
    Toleration,
)
from tensorsched.kernels import layout as L

from .cluster_state import ClusterState, Dictionary

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "TABLES",
    "ArrowFormatError",
    "state_to_arrow",
    "state_from_arrow",
    "write_parquet",
    "read_parquet",
]

FORMAT = "tensorsched.cluster_state"
FORMAT_VERSION = 1
TABLES = ("nodes", "pods", "resources", "label_keys", "taints", "images", "ports")

_META_FORMAT = b"tensorsched.format"
_META_VERSION = b"tensorsched.format_version"
_META_TABLE = b"tensorsched.table"
_META_N_ROWS = b"tensorsched.n_rows"
_META_FREE_ROWS = b"tensorsched.free_rows"


class ArrowFormatError(TensorschedError, ValueError):
    """Tables that cannot be loaded into a ClusterState; ``table`` and
    ``column`` (``""`` when the problem is the whole table) say where."""

    def __init__(self, table: str, column: str, problem: str):
        self.table = table
        self.column = column
        self.problem = problem
        where = f"{table} table" + (f", column {column!r}" if column else "")
        super().__init__(f"{where}: {problem}")


# --------------------------------------------------------------------------
# types

_STR = pa.string()
_I64 = pa.int64()
_STR_MAP = pa.map_(pa.string(), pa.string())
_I64_MAP = pa.map_(pa.string(), pa.int64())
_STR_LIST = pa.list_(pa.string())
_TAINT = pa.struct([("key", _STR), ("value", _STR), ("effect", _STR)])
_IMAGE = pa.struct([("names", _STR_LIST), ("size_bytes", _I64)])
_TOLERATION = pa.struct([("key", _STR), ("operator", _STR), ("value", _STR), ("effect", _STR)])
_HOST_PORT = pa.struct([("protocol", _STR), ("host_ip", _STR), ("port", _I64)])

_NODE_FIELDS = [
    ("name", _STR),
    ("row", _I64),
    ("labels", _STR_MAP),
    ("unschedulable", pa.bool_()),
    ("taints", pa.list_(_TAINT)),
    ("allocatable_keys", _STR_LIST),
    ("capacity", _I64_MAP),
    ("images", pa.list_(_IMAGE)),
    ("object", _STR),
]
_POD_FIELDS = [
    ("namespace", _STR),
    ("name", _STR),
    ("uid", _STR),
    ("node", _STR),
    ("node_name", _STR),
    ("priority", pa.int32()),
    ("creation_ns", _I64),
    ("start_ns", _I64),
    ("nonzero_cpu", _I64),
    ("nonzero_memory", _I64),
    ("labels", _STR_MAP),
    ("requests", _I64_MAP),
    ("scheduler_name", _STR),
    ("priority_class_name", _STR),
    ("preemption_policy", _STR),
    ("deleting", pa.bool_()),
    ("phase", _STR),
    ("tolerations", pa.list_(_TOLERATION)),
    ("node_selector", _STR_MAP),
    ("node_affinity", _STR),
    ("pod_affinity", _STR),
    ("pod_anti_affinity", _STR),
    ("topology_spread", _STR),
    ("host_ports", pa.list_(_HOST_PORT)),
    ("images", _STR_LIST),
    ("has_restartable_init", pa.bool_()),
    ("scheduling_gates", _STR_LIST),
    ("object", _STR),
]
_DICT_FIELDS = {
    "resources": [("id", _I64), ("name", _STR)],
    "label_keys": [("id", _I64), ("key", _STR), ("values", _STR_LIST)],
    "taints": [("id", _I64), ("key", _STR), ("value", _STR), ("effect", _STR)],
    "images": [("id", _I64), ("name", _STR), ("size_bytes", _I64)],
    "ports": [("id", _I64), ("protocol", _STR), ("host_ip", _STR), ("port", _I64)],
}
_NONZERO = ("nonzero_requested.cpu", "nonzero_requested.memory")


def _metadata(table: str, extra: dict | None = None) -> dict:
    meta = {_META_FORMAT: FORMAT.encode(), _META_VERSION: str(FORMAT_VERSION).encode(),
            _META_TABLE: table.encode()}
    for k, v in (extra or {}).items():
        meta[k] = v.encode()
    return meta


def _table(name: str, fields: list, data: dict, extra_meta: dict | None = None) -> pa.Table:
    schema = pa.schema([pa.field(n, t) for n, t in fields], metadata=_metadata(name, extra_meta))
    arrays = [pa.array(data[n], type=t) for n, t in fields]
    return pa.Table.from_arrays(arrays, schema=schema)


def _json(value, what: str) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise StateError(f"{what}: not JSON-serializable, cannot be exported: {exc}") from exc


# --------------------------------------------------------------------------
# export

def state_to_arrow(state: ClusterState) -> dict[str, pa.Table]:
    """The state as Arrow tables (see the module docstring for the columns)."""
    resources = list(state.resources.names)
    tables = {
        "resources": _table("resources", _DICT_FIELDS["resources"],
                            {"id": list(range(len(resources))), "name": resources}),
        "label_keys": _table("label_keys", _DICT_FIELDS["label_keys"], {
            "id": list(range(len(state.label_keys))),
            "key": list(state.label_keys.items),
            "values": [list(d.items) for d in state.label_values]}),
        "taints": _dict_table("taints", state.taints, ("key", "value", "effect")),
        "images": _dict_table("images", state.images, ("name", "size_bytes")),
        "ports": _dict_table("ports", state.ports, ("protocol", "host_ip", "port")),
    }
    tables["nodes"] = _nodes_table(state, resources)
    tables["pods"] = _pods_table(state, resources)
    return {name: tables[name] for name in TABLES}


def _dict_table(name: str, table: Dictionary, parts: tuple[str, ...]) -> pa.Table:
    data = {"id": list(range(len(table)))}
    for j, part in enumerate(parts):
        data[part] = [item[j] for item in table.items]
    return _table(name, _DICT_FIELDS[name], data)


def _nodes_table(state: ClusterState, resources: list[str]) -> pa.Table:
    names = list(state.node_rows)
    rows = np.array([state.node_rows[n] for n in names], dtype=np.int64)
    recs: list[NodeRecord] = [state.nodes[r] for r in rows]
    data = {
        "name": names,
        "row": rows,
        "labels": [list(r.labels.items()) for r in recs],
        "unschedulable": [bool(r.unschedulable) for r in recs],
        "taints": [[{"key": t.key, "value": t.value, "effect": t.effect} for t in r.taints]
                   for r in recs],
        "allocatable_keys": [list(r.allocatable) for r in recs],
        "capacity": [list(r.capacity.items()) for r in recs],
        "images": [[{"names": list(i.names), "size_bytes": i.size_bytes} for i in r.images]
                   for r in recs],
        "object": [_json(r.obj, f"Node {r.name}: object") for r in recs],
    }
    fields = list(_NODE_FIELDS[:5])
    for i, res in enumerate(resources):
        fields.append((f"allocatable.{res}", _I64))
        data[f"allocatable.{res}"] = state.allocatable[rows, i]
    for i, res in enumerate(resources):
        fields.append((f"requested.{res}", _I64))
        data[f"requested.{res}"] = state.requested[rows, i]
    for j, col in enumerate(_NONZERO):
        fields.append((col, _I64))
        data[col] = state.nonzero_requested[rows, j]
    fields += _NODE_FIELDS[5:]
    meta = {_META_N_ROWS: str(state.n_rows), _META_FREE_ROWS: json.dumps(list(state.free_rows))}
    return _table("nodes", fields, data, meta)


def _pods_table(state: ClusterState, resources: list[str]) -> pa.Table:
    entries = list(state.pods.values())
    recs: list[PodRecord] = [e.record for e in entries]
    r = len(resources)
    req = np.zeros((len(entries), r), np.int64)
    for j, e in enumerate(entries):
        req[j, : e.request.shape[0]] = e.request
    data = {
        "namespace": [p.namespace for p in recs],
        "name": [p.name for p in recs],
        "uid": [p.uid for p in recs],
        "node": [state.node_name(e.node_row) for e in entries],
        "node_name": [p.node_name for p in recs],
        "priority": [p.priority for p in recs],
        "creation_ns": [p.creation_ns for p in recs],
        "start_ns": [p.start_ns for p in recs],
        "nonzero_cpu": [p.nonzero_cpu for p in recs],
        "nonzero_memory": [p.nonzero_memory for p in recs],
        "labels": [list(p.labels.items()) for p in recs],
        "requests": [list(p.requests.items()) for p in recs],
        "scheduler_name": [p.scheduler_name for p in recs],
        "priority_class_name": [p.priority_class_name for p in recs],
        "preemption_policy": [p.preemption_policy for p in recs],
        "deleting": [bool(p.deleting) for p in recs],
        "phase": [p.phase for p in recs],
        "tolerations": [[{"key": t.key, "operator": t.operator, "value": t.value,
                          "effect": t.effect} for t in p.tolerations] for p in recs],
        "node_selector": [list(p.node_selector.items()) for p in recs],
        "node_affinity": [None if p.node_affinity is None
                          else _json(p.node_affinity, f"Pod {p.key}: node_affinity")
                          for p in recs],
        "pod_affinity": [None if p.pod_affinity is None
                         else _json(p.pod_affinity, f"Pod {p.key}: pod_affinity")
                         for p in recs],
        "pod_anti_affinity": [None if p.pod_anti_affinity is None
                              else _json(p.pod_anti_affinity, f"Pod {p.key}: pod_anti_affinity")
                              for p in recs],
        "topology_spread": [_json(p.topology_spread, f"Pod {p.key}: topology_spread")
                            for p in recs],
        "host_ports": [[{"protocol": h.protocol, "host_ip": h.host_ip, "port": h.port}
                        for h in p.host_ports] for p in recs],
        "images": [list(p.images) for p in recs],
        "has_restartable_init": [bool(p.has_restartable_init) for p in recs],
        "scheduling_gates": [list(p.scheduling_gates) for p in recs],
        "object": [_json(p.obj, f"Pod {p.key}: object") for p in recs],
    }
    fields = list(_POD_FIELDS[:10])
    for i, res in enumerate(resources):
        fields.append((f"request.{res}", _I64))
        data[f"request.{res}"] = req[:, i]
    fields += _POD_FIELDS[10:]
    return _table("pods", fields, data)


# --------------------------------------------------------------------------
# import

class _Reader:
    """Column access with errors that name the table and the column."""

    def __init__(self, name: str, table):
        if not isinstance(table, pa.Table):
            raise ArrowFormatError(name, "", f"expected a pyarrow.Table, got {type(table).__name__}")
        self.name = name
        self.table = table
        meta = table.schema.metadata or {}
        fmt = meta.get(_META_FORMAT)
        if fmt is not None and fmt.decode() != FORMAT:
            raise ArrowFormatError(name, "", f"schema metadata says format {fmt.decode()!r}, "
                                   f"expected {FORMAT!r}")
        version = meta.get(_META_VERSION)
        if version is None:
            raise ArrowFormatError(name, "", "schema metadata has no "
                                   f"{_META_VERSION.decode()!r} (not written by state_to_arrow?)")
        try:
            v = int(version.decode())
        except ValueError:
            raise ArrowFormatError(name, "", f"bad format version {version.decode()!r}") from None
        if v != FORMAT_VERSION:
            raise ArrowFormatError(name, "", f"format version {v} is not supported "
                                   f"(this tensorsched reads version {FORMAT_VERSION})")
        self.meta = meta

    def has(self, column: str) -> bool:
        return column in self.table.column_names

    def column(self, column: str, type_: pa.DataType):
        if column not in self.table.column_names:
            raise ArrowFormatError(self.name, column, "required column is missing")
        col = self.table.column(column)
        if not col.type.equals(type_):
            try:
                col = col.cast(type_)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise ArrowFormatError(self.name, column, f"has type {col.type}, expected "
                                       f"{type_}: {exc}") from None
        return col

    def values(self, column: str, type_: pa.DataType, nullable: bool = False) -> list:
        vals = self.column(column, type_).to_pylist()
        if not nullable:
            for i, v in enumerate(vals):
                if v is None:
                    raise ArrowFormatError(self.name, column, f"row {i}: null value")
        return vals

    def ints(self, column: str) -> np.ndarray:
        col = self.column(column, _I64)
        if col.null_count:
            raise ArrowFormatError(self.name, column, "null values")
        return col.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)

    def meta_json(self, key: bytes):
        raw = self.meta.get(key)
        if raw is None:
            raise ArrowFormatError(self.name, "", f"schema metadata has no {key.decode()!r}")
        try:
            return json.loads(raw.decode())
        except ValueError as exc:
            raise ArrowFormatError(self.name, "", f"schema metadata {key.decode()!r}: {exc}") from None

    def fail(self, column: str, problem: str):
        raise ArrowFormatError(self.name, column, problem)


def _check_ids(rd: _Reader) -> int:
    ids = rd.ints("id")
    if not np.array_equal(ids, np.arange(len(ids))):
        rd.fail("id", "ids must be 0, 1, 2, ... in order")
    return len(ids)


def _loads(rd: _Reader, column: str, row: int, text):
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        rd.fail(column, f"row {row}: invalid JSON: {exc}")


def state_from_arrow(tables) -> ClusterState:
    """A ClusterState equal to the one ``state_to_arrow`` exported (rows,
    dictionaries, columns, records).  Raises ArrowFormatError naming the
    table and the column when the tables do not fit."""
    for name in TABLES:
        if name not in tables:
            raise ArrowFormatError(name, "", "table is missing")
    rd = {name: _Reader(name, tables[name]) for name in TABLES}

    # -- resources
    res = rd["resources"]
    _check_ids(res)
    resources = res.values("name", _STR)
    if tuple(resources[: len(L.FIXED_RESOURCES)]) != L.FIXED_RESOURCES:
        res.fail("name", f"the first resources must be {list(L.FIXED_RESOURCES)}, "
                 f"got {resources[:len(L.FIXED_RESOURCES)]}")
    if len(set(resources)) != len(resources):
        res.fail("name", "duplicate resource names")

    nodes = rd["nodes"]
    n_rows = nodes.meta_json(_META_N_ROWS)
    free_rows = nodes.meta_json(_META_FREE_ROWS)
    if not isinstance(n_rows, int) or n_rows < 0:
        nodes.fail("", f"schema metadata {_META_N_ROWS.decode()!r} must be an integer >= 0")
    if not isinstance(free_rows, list) or not all(isinstance(r, int) for r in free_rows):
        nodes.fail("", f"schema metadata {_META_FREE_ROWS.decode()!r} must be a list of rows")

    state = ClusterState(node_capacity=max(n_rows, 1))
    try:
        for name in resources[len(L.FIXED_RESOURCES):]:
            state.intern_resource(name)
    except StateError as exc:
        res.fail("name", str(exc))
    _restore_dictionaries(state, rd)
    sizes = _dictionary_sizes(state)

    # -- nodes, each at its row
    _load_nodes(state, nodes, resources, n_rows, free_rows)
    # -- pods
    _load_pods(state, rd["pods"], resources)

    if _dictionary_sizes(state) != sizes:
        grown = [k for k, v in _dictionary_sizes(state).items() if v != sizes[k]]
        raise ArrowFormatError(grown[0], "", "nodes or pods use entries this table lacks")
    _check_usage(state, nodes, resources)
    return state


def _dictionary_sizes(state: ClusterState) -> dict[str, int]:
    return {"resources": len(state.resources),
            "label_keys": sum(len(d) for d in state.label_values) + len(state.label_keys),
            "taints": len(state.taints), "images": len(state.images), "ports": len(state.ports)}


def _restore_dictionaries(state: ClusterState, rd: dict[str, _Reader]) -> None:
    lk = rd["label_keys"]
    _check_ids(lk)
    if lk.table.num_rows == 0:
        lk.fail("key", f"no rows (key 0 must be {L.NAME_COLUMN_KEY!r})")
    for k, (key, values) in enumerate(zip(lk.values("key", _STR), lk.values("values", _STR_LIST))):
        if k == L.LABEL_KEY_NAME:
            if key != L.NAME_COLUMN_KEY:
                lk.fail("key", f"key {L.LABEL_KEY_NAME} must be {L.NAME_COLUMN_KEY!r}, "
                        f"got {key!r}")
        elif key in state.label_keys.ids:
            lk.fail("key", f"row {k}: duplicate key {key!r}")
        elif not values:
            lk.fail("values", f"row {k} (key {key!r}): a key without values")
        for v in values:
            if v is None or (k < len(state.label_values) and v in state.label_values[k].ids):
                lk.fail("values", f"row {k} (key {key!r}): null or duplicate value {v!r}")
            state.intern_label(key, v)          # the state's own path: ids in order

    def restore(name, attr, parts):
        r = rd[name]
        n = _check_ids(r)
        cols = [r.values(p, t) for p, t in parts]
        table = getattr(state, attr)
        for i in range(n):
            item = tuple(c[i] for c in cols)
            if state.intern_bit(table, f"{attr[:-1]}_bits", item) != i:
                r.fail("", f"row {i}: duplicate entry {item!r}")

    restore("taints", "taints", [("key", _STR), ("value", _STR), ("effect", _STR)])
    restore("images", "images", [("name", _STR), ("size_bytes", _I64)])
    restore("ports", "ports", [("protocol", _STR), ("host_ip", _STR), ("port", _I64)])


def _load_nodes(state: ClusterState, rd: _Reader, resources: list[str], n_rows: int,
                free_rows: list[int]) -> None:
    names = rd.values("name", _STR)
    rows = rd.ints("row")
    labels = rd.values("labels", _STR_MAP)
    unsched = rd.values("unschedulable", pa.bool_())
    taints = rd.values("taints", pa.list_(_TAINT))
    keys = rd.values("allocatable_keys", _STR_LIST)
    capacity = rd.values("capacity", _I64_MAP)
    images = rd.values("images", pa.list_(_IMAGE))
    objects = rd.values("object", _STR)
    alloc = np.stack([rd.ints(f"allocatable.{r}") for r in resources], axis=1) \
        if len(names) else np.zeros((0, len(resources)), np.int64)
    index = {r: i for i, r in enumerate(resources)}

    used = sorted([*rows.tolist(), *free_rows])
    if used != list(range(n_rows)):
        rd.fail("row", f"rows of nodes and free rows {free_rows} must cover 0..{n_rows - 1} "
                "exactly once each")
    state.n_rows = n_rows
    for i, name in enumerate(names):
        allocatable = {}
        for k in keys[i]:
            if k not in index:
                rd.fail("allocatable_keys", f"node {name!r}: resource {k!r} is not in the "
                        "resources table")
            allocatable[k] = int(alloc[i, index[k]])
        rec = NodeRecord(
            name=name,
            labels=dict(labels[i]),
            unschedulable=bool(unsched[i]),
            taints=[Taint(t["key"], t["value"], t["effect"]) for t in taints[i]],
            allocatable=allocatable,
            capacity=dict(capacity[i]),
            images=[NodeImage(tuple(img["names"]), img["size_bytes"]) for img in images[i]],
            obj=_loads(rd, "object", i, objects[i]),
        )
        for r, k in enumerate(resources):
            if k not in allocatable and alloc[i, r] != 0:
                rd.fail(f"allocatable.{k}", f"node {name!r}: {alloc[i, r]} for a resource "
                        "not in its allocatable_keys")
        row = int(rows[i])
        state.free_rows[:] = [row]          # add_node takes the last free row
        try:
            got = state.add_node(rec)
        except StateError as exc:
            rd.fail("name", f"row {i}: {exc}")
        assert got == row
    state.free_rows[:] = list(free_rows)


def _load_pods(state: ClusterState, rd: _Reader, resources: list[str]) -> None:
    n = rd.table.num_rows
    get = {name: rd.values(name, t, nullable=name in (
        "priority", "start_ns", "node_affinity", "pod_affinity", "pod_anti_affinity"))
        for name, t in _POD_FIELDS}
    for i in range(n):
        p = PodRecord(
            namespace=get["namespace"][i],
            name=get["name"][i],
            uid=get["uid"][i],
            node_name=get["node_name"][i],
            scheduler_name=get["scheduler_name"][i],
            priority=get["priority"][i],
            priority_class_name=get["priority_class_name"][i],
            preemption_policy=get["preemption_policy"][i],
            labels=dict(get["labels"][i]),
            creation_ns=get["creation_ns"][i],
            start_ns=get["start_ns"][i],
            deleting=get["deleting"][i],
            phase=get["phase"][i],
            requests=dict(get["requests"][i]),
            nonzero_cpu=get["nonzero_cpu"][i],
            nonzero_memory=get["nonzero_memory"][i],
            tolerations=[Toleration(t["key"], t["operator"], t["value"], t["effect"])
                         for t in get["tolerations"][i]],
            node_selector=dict(get["node_selector"][i]),
            node_affinity=_loads(rd, "node_affinity", i, get["node_affinity"][i]),
            pod_affinity=_loads(rd, "pod_affinity", i, get["pod_affinity"][i]),
            pod_anti_affinity=_loads(rd, "pod_anti_affinity", i, get["pod_anti_affinity"][i]),
            topology_spread=_loads(rd, "topology_spread", i, get["topology_spread"][i]),
            host_ports=[HostPort(h["protocol"], h["host_ip"], h["port"])
                        for h in get["host_ports"][i]],
            images=list(get["images"][i]),
            has_restartable_init=get["has_restartable_init"][i],
            scheduling_gates=list(get["scheduling_gates"][i]),
            obj=_loads(rd, "object", i, get["object"][i]),
        )
        try:
            state.add_pod(p, get["node"][i])
        except StateError as exc:
            rd.fail("node", f"row {i}: {exc}")
    # The accounted request vectors, when present, must match.
    entries = list(state.pods.values())
    rebuilt = np.zeros((len(entries), len(resources)), np.int64)
    for i, e in enumerate(entries):
        rebuilt[i, : e.request.shape[0]] = e.request
    for r, res in enumerate(resources):
        col = f"request.{res}"
        if not rd.has(col):
            continue
        stored = rd.ints(col)
        bad = np.flatnonzero(stored != rebuilt[:, r])
        if bad.size:
            i = int(bad[0])
            rd.fail(col, f"pod {entries[i].record.key}: {stored[i]}, but its record "
                    f"requests {rebuilt[i, r]}")


def _check_usage(state: ClusterState, rd: _Reader, resources: list[str]) -> None:
    """The derived node columns, when present, must match the rebuilt state."""
    rows = rd.ints("row")
    names = rd.values("name", _STR)
    checks = [(f"requested.{res}", state.requested[rows, r]) for r, res in enumerate(resources)]
    checks += [(col, state.nonzero_requested[rows, j]) for j, col in enumerate(_NONZERO)]
    for col, rebuilt in checks:
        if not rd.has(col):
            continue
        stored = rd.ints(col)
        bad = np.flatnonzero(stored != rebuilt)
        if bad.size:
            i = int(bad[0])
            rd.fail(col, f"node {names[i]!r}: {stored[i]}, but its pods sum to {rebuilt[i]}")


# --------------------------------------------------------------------------
# Parquet

def write_parquet(state: ClusterState, directory) -> dict[str, Path]:
    """One ``<table>.parquet`` file per table under ``directory`` (created);
    returns the paths by table name."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, table in state_to_arrow(state).items():
        path = d / f"{name}.parquet"
        pq.write_table(table, path)
        out[name] = path
    return out


def read_parquet(directory) -> ClusterState:
    """The state ``write_parquet`` wrote to ``directory``."""
    d = Path(directory)
    tables = {}
    for name in TABLES:
        path = d / f"{name}.parquet"
        if not path.is_file():
            raise ArrowFormatError(name, "", f"file {str(path)!r} is missing")
        try:
            tables[name] = pq.read_table(path)
        except (OSError, pa.ArrowInvalid) as exc:
            raise ArrowFormatError(name, "", f"cannot read {str(path)!r}: {exc}") from None
    return state_from_arrow(tables)
