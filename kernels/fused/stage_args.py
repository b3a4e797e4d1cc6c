"""The fused stage's inputs, declared once.

``NODE_COLUMNS`` are the node columns the fused filter/score stage reads and
``QUERY_ARGS`` the pod query's fields, in the order the per-node rules of
``fused._core`` name them.  Everything else is generated from these lists:

- ``host_args(cols, q)``: the unpacked argument tuple (the numba kernels and
  the scalar tests call ``node_reasons`` / ``node_raw_scores`` with it);
- ``PARAMETERS`` / ``call_arguments(fn)``: the parameter and call lists the
  numba and cuda drivers are generated with (no hand-written lists);
- ``pack_nodes`` / ``pack_query`` / ``unpack_source``: the cuda kernels'
  packed form, four device arrays for the whole stage instead of ~50
  arguments (numba-cuda pays a few microseconds per array argument at each
  launch).  Node columns go by dtype into row-major packs (``node_i64``
  [N, W] int64, ``node_flags`` [N, F] int8, ``label_vals`` [N, K] int32),
  so a node's columns are contiguous and a dirty span of rows is one copy per
  pack; the query becomes one int64 buffer whose header holds where each
  column sits in its pack and where each query field starts.  The device
  mirror keeps spare rows and pack columns (``pack_rows`` with capacities,
  ``FILLS`` in the spare room; ``relayout_map`` when it moves into larger
  packs), so the header's spans, not the packs' widths, say where a column
  is.
"""

from __future__ import annotations

import inspect
from typing import NamedTuple

import numpy as np

from tensorsched.kernels import layout as L

# (column, pack, dimensions): pack "i64" -> node_i64 columns, "flag" ->
# node_flags columns (bool stored as int8), "labels" -> label_vals as it is.
NODE_COLUMNS = (
    ("allocatable", "i64", 2), ("requested", "i64", 2), ("nonzero_requested", "i64", 2),
    ("unschedulable", "flag", 1), ("valid", "flag", 1), ("label_vals", "labels", 2),
    ("label_nums", "i64", 2), ("label_isnum", "flag", 2), ("taint_bits", "i64", 2),
    ("image_bits", "i64", 2), ("port_bits", "i64", 2),
)

INT, BOOL, ARRAY = "int", "bool", "array"


def _program(field):
    return lambda q: getattr(q.programs, field)


def _field(field):
    return lambda q: getattr(q, field)


# (argument, kind, how it is read from a PodQuery)
QUERY_ARGS = (
    ("filter_flags", INT, _field("filter_flags")),
    ("score_flags", INT, _field("score_flags")),
    ("request", ARRAY, _field("request")),
    ("nonzero_request", ARRAY, _field("nonzero_request")),
    ("requests_anything", BOOL, _field("requests_anything")),
    ("fit_ignored", ARRAY, _field("fit_ignored")),
    ("node_name_row", INT, _field("node_name_row")),
    ("prefilter_rows", ARRAY, _field("prefilter_rows")),
    ("tolerates_unschedulable", BOOL, _field("tolerates_unschedulable")),
    ("taint_reject", ARRAY, _field("taint_reject")),
    ("taint_prefer", ARRAY, _field("taint_prefer")),
    ("has_node_selector", BOOL, _field("has_node_selector")),
    ("has_required", BOOL, _field("has_required")),
    ("has_added_required", BOOL, _field("has_added_required")),
    ("program_terms", ARRAY, _field("program_terms")),
    ("term_offsets", ARRAY, _program("term_offsets")),
    ("term_weights", ARRAY, _program("term_weights")),
    ("req_key", ARRAY, _program("req_key")),
    ("req_op", ARRAY, _program("req_op")),
    ("req_num", ARRAY, _program("req_num")),
    ("val_offsets", ARRAY, _program("val_offsets")),
    ("vals", ARRAY, _program("vals")),
    ("port_conflicts", ARRAY, _field("port_conflicts")),
    ("strategy", INT, _field("fit_strategy")),
    ("fit_res", ARRAY, _field("fit_res")),
    ("fit_kind", ARRAY, _field("fit_kind")),
    ("fit_weights", ARRAY, _field("fit_weights")),
    ("shape_util", ARRAY, _field("shape_util")),
    ("shape_score", ARRAY, _field("shape_score")),
    ("bal_res", ARRAY, _field("bal_res")),
    ("bal_kind", ARRAY, _field("bal_kind")),
    ("image_entries", ARRAY, _field("image_entries")),
    ("image_scaled", ARRAY, _field("image_scaled")),
    ("image_min", INT, lambda q: L.IMAGE_MIN_THRESHOLD),
    ("image_max", INT, _field("image_max")),
)

NODE_NAMES = tuple(name for name, _, _ in NODE_COLUMNS)
QUERY_NAMES = tuple(name for name, _, _ in QUERY_ARGS)
STAGE_NAMES = NODE_NAMES + QUERY_NAMES
PARAMETERS = ", ".join(STAGE_NAMES)
"""The stage's parameter list, for generated drivers."""

PACKED_PARAMETERS = "node_i64, node_flags, label_vals, qbuf"
"""The cuda kernels' packed stage parameters."""


def host_args(cols: L.NodeColumns, q: L.PodQuery) -> tuple:
    """The stage's arguments, unpacked, in ``STAGE_NAMES`` order."""
    out = [getattr(cols, name) for name in NODE_NAMES]
    for _name, kind, get in QUERY_ARGS:
        v = get(q)
        out.append(np.int64(v) if kind == INT else bool(v) if kind == BOOL else v)
    return tuple(out)


def call_arguments(fn, leading: int) -> str:
    """The call list of ``fn`` (a ``_core`` rule) after its ``leading``
    positional parameters, checked to be stage arguments."""
    names = list(inspect.signature(fn).parameters)[leading:]
    unknown = [n for n in names if n not in STAGE_NAMES]
    if unknown:
        raise AssertionError(f"{fn.__name__} reads {unknown}, not declared in stage_args")
    return ", ".join(names)


# ----------------------------------------------------------------- packing
# What a column holds where a node has no value (the host state's fill for
# a column it has not used yet: a label key no node carried, a taint word
# no taint reached); spare pack columns hold it, so a column that widens
# into them reads as the host's new column does on every unwritten row.
FILLS = {"label_vals": -1}


def widths_of(shapes) -> tuple:
    """Each column's width (1 for a 1-D column), ``NODE_COLUMNS`` order."""
    return tuple(shape[1] if dims == 2 else 1
                 for (_n, _p, dims), shape in zip(NODE_COLUMNS, shapes))


def node_packs(shapes, caps=None) -> tuple[list, int, int]:
    """Where each node column sits in its pack: [(start, stop)] per column
    (a 1-D flag column takes one pack column, start), and the widths of
    node_i64 and node_flags.  ``shapes``: the columns' shapes in
    ``NODE_COLUMNS`` order; ``caps``: the pack columns each column holds
    (at least its width; spare ones follow its used ones), None: its
    width."""
    spans = []
    width = {"i64": 0, "flag": 0, "labels": 0}
    used = widths_of(shapes)
    for k, ((_name, pack, _dims), w) in enumerate(zip(NODE_COLUMNS, used)):
        start = width[pack]
        spans.append((start, start + w))
        width[pack] = start + (w if caps is None else caps[k])
    return spans, width["i64"], width["flag"]


def pack_nodes(cols: L.NodeColumns, lo: int = 0, hi: int | None = None) -> tuple:
    """(node_i64 [n, W] int64, node_flags [n, F] int8, label_vals [n, K]
    int32) of rows lo:hi, C-contiguous."""
    hi = cols.allocatable.shape[0] if hi is None else hi
    parts = {"i64": [], "flag": []}
    labels = None
    for name, pack, _dims in NODE_COLUMNS:
        a = getattr(cols, name)[lo:hi]
        if pack == "labels":
            labels = np.ascontiguousarray(a, np.int32)
            continue
        parts[pack].append(a.reshape(a.shape[0], -1))
    node_i64 = np.ascontiguousarray(np.concatenate(parts["i64"], axis=1), np.int64)
    node_flags = np.ascontiguousarray(np.concatenate(parts["flag"], axis=1), np.int8)
    return node_i64, node_flags, labels


def pack_rows(cols: L.NodeColumns, caps, lo: int, hi: int, rows: int | None = None) -> tuple:
    """``pack_nodes`` at capacity: (node_i64 [m, W'], node_flags [m, F'],
    label_vals [m, K']) with each column at ``node_packs(.., caps)``'s
    place and its spare pack columns at ``FILLS``; rows lo:hi of ``cols``
    first, then (``rows`` > hi - lo) spare rows at the fills, m = ``rows``."""
    shapes = [getattr(cols, n).shape for n in NODE_NAMES]
    spans, w, f = node_packs(shapes, caps)
    m = hi - lo if rows is None else rows
    k_cap = caps[NODE_NAMES.index("label_vals")]
    out = {"i64": np.zeros((m, w), np.int64), "flag": np.zeros((m, f), np.int8),
           "labels": np.full((m, k_cap), FILLS["label_vals"], np.int32)}
    for k, (name, pack, _dims) in enumerate(NODE_COLUMNS):
        a = getattr(cols, name)[lo:hi]
        start, stop = spans[k]
        out[pack][:hi - lo, start:stop] = a.reshape(a.shape[0], -1)
    return out["i64"], out["flag"], out["labels"]


def relayout_map(old_shapes, old_caps, new_shapes, new_caps) -> np.ndarray:
    """[W' + F' + K'] int64: for each column of the packs laid out by
    (``new_shapes``, ``new_caps``), node_i64's, node_flags' then
    label_vals', the column of the old packs (``old_shapes``, ``old_caps``)
    holding the same values, -1 where none does (spare room, or a column
    widened past its old width: the fill, as the host's new column on
    every row not written since)."""
    old_spans, _, _ = node_packs(old_shapes, old_caps)
    new_spans, w, f = node_packs(new_shapes, new_caps)
    k_cap = new_caps[NODE_NAMES.index("label_vals")]
    out = np.full(w + f + k_cap, -1, np.int64)
    base = {"i64": 0, "flag": w, "labels": w + f}
    for k, (_name, pack, _dims) in enumerate(NODE_COLUMNS):
        (olo, ohi), (nlo, nhi) = old_spans[k], new_spans[k]
        m = min(ohi - olo, nhi - nlo)
        out[base[pack] + nlo:base[pack] + nlo + m] = np.arange(olo, olo + m)
    return out


# The staged row's order (``staged_rows``): node_i64's columns, then
# node_flags', then label_vals; each as (column index, pack 0/1/2).
STAGED_ORDER = np.array(
    [k for p in ("i64", "flag", "labels") for k, c in enumerate(NODE_COLUMNS) if c[1] == p],
    np.int64)
STAGED_PACK = np.array([("i64", "flag", "labels").index(NODE_COLUMNS[k][1])
                        for k in STAGED_ORDER], np.int64)


def pack_query(cols: L.NodeColumns, q: L.PodQuery, caps=None) -> np.ndarray:
    """The query and the node packs' layout as one int64 buffer: header
    [2 * len(NODE_COLUMNS)] column spans (``node_packs(.., caps)``),
    [len(QUERY_ARGS) + 1] field offsets into the buffer, then the fields
    (bools as 0/1)."""
    spans, _, _ = node_packs([getattr(cols, n).shape for n in NODE_NAMES], caps)
    header = [v for span in spans for v in span]
    data = []
    pos = len(header) + len(QUERY_ARGS) + 1
    offsets = []
    for _name, kind, get in QUERY_ARGS:
        v = get(q)
        a = np.atleast_1d(np.asarray(v)).astype(np.int64)
        offsets.append(pos)
        data.append(a)
        pos += a.shape[0]
    offsets.append(pos)
    return np.concatenate([np.asarray(header + offsets, np.int64)] + data)


def unpack_source(indent: str) -> str:
    """Source lines binding every stage name from the packed parameters
    (``PACKED_PARAMETERS``), for generated cuda functions."""
    lines = []
    for k, (name, pack, dims) in enumerate(NODE_COLUMNS):
        if pack == "labels":        # the parameter of that name
            continue
        src = "node_i64" if pack == "i64" else "node_flags"
        if dims == 1:
            lines.append(f"{name} = {src}[:, qbuf[{2 * k}]]")
        else:
            lines.append(f"{name} = {src}[:, qbuf[{2 * k}]:qbuf[{2 * k + 1}]]")
    base = 2 * len(NODE_COLUMNS)
    for k, (name, kind, _get) in enumerate(QUERY_ARGS):
        at = f"qbuf[{base + k}]"
        if kind == ARRAY:
            lines.append(f"{name} = qbuf[{at}:qbuf[{base + k + 1}]]")
        elif kind == BOOL:
            lines.append(f"{name} = qbuf[{at}] != 0")
        else:
            lines.append(f"{name} = qbuf[{at}]")
    return "".join(f"{indent}{line}\n" for line in lines)



class DeviceStage(NamedTuple):
    """The stage on a CUDA device for one query: ``packs`` the device
    (node_i64, node_flags, label_vals), ``qbuf`` the packed query
    (``pack_query``), ``allocatable`` the view of node_i64 that is the
    allocatable column (the victim search's kernel takes it apart)."""

    packs: tuple
    qbuf: object
    allocatable: object
