"""Workload traces: pods with an arrival time and, optionally, a departure.

The generic trace schema (a CSV file, a Parquet file or an Arrow table; one
row per pod):

``name``            string, required, a DNS-1123 subdomain (a Pod's name);
                    ``namespace``/``name`` unique.
``namespace``       string, optional (empty/null: ``default``).
``arrival``         seconds on the simulated clock (a number >= 0), required.
``departure``       seconds (>= arrival), optional: the pod is deleted then
                    (bound or still pending).
``duration``        seconds (>= 0), optional: the pod leaves that long after it
                    was bound.  Not with ``departure`` in the same row; with
                    neither the pod stays.
``template``        a pod template: an integer id into ``templates`` (Pod
                    dicts given beside the trace) or JSON; either a Pod
                    (``{"spec": {...}}``) or a bare pod ``spec``, both read
                    and validated in full.
``cpu``, ``memory`` and extended resources (``nvidia.com/gpu``, any name
                    with a ``/``, ``ephemeral-storage``, ``hugepages-*``): the
                    requests of one container.  In a CSV, Kubernetes
                    quantities (``500m``, ``2``, ``1Gi``); in Parquet/Arrow,
                    integers (millicores for cpu, bytes for memory, units
                    otherwise).  Not with ``template``.
``labels``          map<string, string> (CSV: a JSON object or ``k=v;k2=v2``).
``annotations``     map<string, string>, same forms: e.g. the GPU fields
                    ``alibabacloud.com/gpu-milli``, ``alibabacloud.com/gpu-count``,
                    ``alibabacloud.com/gpu-card-model`` that the GPU plugin set reads.
``priority``        integer (int32), optional.
``scheduler_name``  string, optional (the profile; empty: the default).

Every cell is validated before a run starts; an error names the file, the
line (CSV) or row (Parquet/Arrow, 0-based) and the column:
``trace.csv:17: arrival: must be a number >= 0, got 'soon'``.  Rows are
kept in arrival order (stable), and pod records are made only for the rows
a simulation reaches (``Trace.records``), so a trace of millions of pods
costs its columns, not millions of objects.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tensorsched.framework.arguments import MAX_LISTED_PODS, Arguments
from tensorsched.framework.errors import ManifestError, TensorschedError
from tensorsched.framework.parsing.manifests import INT32_MAX, INT32_MIN
from tensorsched.framework.parsing.meta import (
    TOTAL_ANNOTATION_SIZE_LIMIT,
    annotation_key_errors,
    invalid_value,
)
from tensorsched.framework.parsing.pod_tables import (
    COLUMNS as POD_COLUMNS,
)
from tensorsched.framework.parsing.pod_tables import (
    bad_pod_name,
    is_resource_column,
    read_pods_table,
)
from tensorsched.framework.parsing.quantity import resource_value
from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.records.records import MemoKey, PodRecord
from tensorsched.framework.scheduler.profile_warnings import Asks, asks_of_pods

TIME_COLUMNS = ("arrival", "departure", "duration")
#: The columns with a fixed meaning (besides extended-resource request columns).
COLUMNS = ("name", "namespace", "arrival", "departure", "duration", "template", "cpu",
           "memory", "labels", "annotations", "priority", "scheduler_name")
_POD_COLUMNS = ("name", "namespace", "template", "cpu", "memory", "labels", "priority",
                "scheduler_name")
MAX_SECONDS = 1e15            # about 31 million years: far beyond any trace, exact in float64
_MAP = pa.map_(pa.string(), pa.string())
assert set(_POD_COLUMNS) <= set(POD_COLUMNS)


class TraceError(TensorschedError, ValueError):
    """A trace that cannot be read: ``source:line: column: problem`` (CSV)
    or ``source: row N: column: problem`` (Parquet, Arrow)."""

    def __init__(self, where: str, column: str, problem: str):
        self.where = where
        self.column = column
        self.problem = problem
        super().__init__(f"{where}: {column}: {problem}" if column else f"{where}: {problem}")


ANNOTATIONS = MemoKey("annotations", __name__,
                      "(key, annotations): the class of a group's pods with these annotations")


@dataclass
class Trace:
    """A validated trace: ``table`` in arrival order with the canonical
    columns, ``origin`` the CSV line (``lines=True``) or the source row of
    every row, for messages; ``templates`` for integer template ids."""

    table: pa.Table
    source: str = "trace"
    origin: np.ndarray = field(default=None)
    lines: bool = False
    templates: list | None = None

    def __post_init__(self):
        if self.origin is None:
            self.origin = np.arange(self.table.num_rows, dtype=np.int64)
        self._arrival = self.table.column("arrival").to_numpy().astype(np.float64)
        dep = self.table.column("departure") if "departure" in self.table.column_names else None
        dur = self.table.column("duration") if "duration" in self.table.column_names else None
        self._departure = _nan_filled(dep, self.table.num_rows)
        self._duration = _nan_filled(dur, self.table.num_rows)
        self._pod_table = self.table.select([c for c in self.table.column_names
                                             if c not in TIME_COLUMNS and c != "annotations"])
        self._annotations = (self.table.column("annotations").combine_chunks()
                             if "annotations" in self.table.column_names else None)

    def __len__(self) -> int:
        return self.table.num_rows

    @property
    def arrival(self) -> np.ndarray:
        """[rows] float64 seconds, non-decreasing."""
        return self._arrival

    @property
    def departure(self) -> np.ndarray:
        """[rows] float64 seconds, NaN where the row has none."""
        return self._departure

    @property
    def duration(self) -> np.ndarray:
        """[rows] float64 seconds, NaN where the row has none."""
        return self._duration

    def where(self, row: int) -> str:
        """``source:line`` or ``source: row N`` of a row of ``table``."""
        o = int(self.origin[row])
        return f"{self.source}:{o}" if self.lines else f"{self.source}: row {o}"

    def records(self, start: int, stop: int) -> list[PodRecord]:
        """Pod records of rows ``start:stop`` (their annotations set)."""
        part = self._pod_table.slice(start, stop - start)
        try:
            recs = read_pods_table(part, self.templates)
        except ManifestError as exc:
            raise self._error(exc, start) from None
        annos = self._annotations
        if annos is not None:
            values = annos.slice(start, stop - start).to_pylist()
            shared: dict = {}
            for rec, pairs in zip(recs, values):
                if pairs:
                    key = tuple(pairs)
                    d = shared.get(key)
                    if d is None:
                        d = shared[key] = dict(pairs)
                    meta = rec.obj.get("metadata")
                    meta["annotations"] = d
                    # the table's groups ignore annotations: records of one
                    # group share a memo only with the same annotations
                    rec.pod_class = rec.pod_class.variant((ANNOTATIONS, key))
        return recs

    def _error(self, exc: ManifestError, offset: int) -> TraceError:
        obj = str(exc.obj)
        if obj.startswith("row "):
            try:
                r = int(obj[4:])
                return TraceError(self.where(offset + r), exc.field, exc.problem)
            except ValueError:
                pass
        return TraceError(self.source, exc.field or obj, exc.problem)

    def with_table(self, table: pa.Table, origin: np.ndarray) -> Trace:
        return Trace(table, self.source, origin, self.lines, self.templates)


def _nan_filled(col, n: int) -> np.ndarray:
    if col is None:
        return np.full(n, np.nan)
    # unsafe: an integer past 2**53 rounds (Arrow's safe cast raised
    # ArrowInvalid); the seconds' bound (1e15, below 2**53) still refuses it
    return pc.fill_null(col.cast(pa.float64(), safe=False),
                        float("nan")).to_numpy().astype(np.float64)


# --------------------------------------------------------------------------
# reading


def read_trace(path, templates=None) -> Trace:
    """A trace from a ``.csv`` or ``.parquet`` file (see the module doc)."""
    args = Arguments("read_trace")
    source = args.path("path", path)
    templates = args.sequence("templates", templates, item="a pod spec", items="pod specs",
                              optional=True, limit=MAX_LISTED_PODS)
    ext = os.path.splitext(source)[1].lower()
    if not os.path.exists(source):
        raise TraceError(source, "", "no such file")
    if ext == ".csv":
        return _read_csv(source, templates)
    if ext in (".parquet", ".pq"):
        try:
            table = pq.read_table(source)
        except (OSError, pa.ArrowException) as exc:
            raise TraceError(source, "", f"cannot read Parquet file: {exc}") from None
        return trace_from_table(table, templates, source=source)
    raise TraceError(source, "", "expected a .csv or .parquet trace file")


def _check_annotations(col: pa.MapArray, where) -> None:
    """TraceError naming the first row whose annotations the API server
    refuses (``meta.check_annotations``): a key that is no qualified name
    (compared in lowercase), more than 256 KiB of keys and values.  Each
    distinct key is checked once; sizes are summed per row in UTF-8 bytes."""
    keys = col.keys
    if not len(keys):
        return
    offsets = col.offsets.to_numpy()
    bad = [k for k in pc.unique(keys).to_pylist() if annotation_key_errors(k)]
    if bad:
        hit = pc.is_in(keys, value_set=pa.array(bad, pa.string())).to_numpy(zero_copy_only=False)
        at = int(np.flatnonzero(hit)[0])
        key = keys[at].as_py()
        r = int(np.searchsorted(offsets, at, side="right") - 1)
        raise TraceError(where(r), "annotations",
                         invalid_value(key, list(annotation_key_errors(key))))
    sizes = (pc.binary_length(keys).to_numpy(zero_copy_only=False).astype(np.int64)
             + pc.binary_length(col.items).to_numpy(zero_copy_only=False).astype(np.int64))
    total = np.concatenate([[0], np.cumsum(sizes)])
    per_row = total[offsets[1:]] - total[offsets[:-1]]
    over = np.flatnonzero(per_row > TOTAL_ANNOTATION_SIZE_LIMIT)
    if len(over):
        r = int(over[0])
        raise TraceError(where(r), "annotations", f"Too long: may not be more than "
                         f"{TOTAL_ANNOTATION_SIZE_LIMIT} bytes (keys and values together, "
                         f"256 KiB), got {int(per_row[r])}")


def trace_from_table(table, templates=None, *, source: str = "trace table") -> Trace:
    """Validate an Arrow table (or record batch) of the trace schema."""
    templates = Arguments("trace_from_table").sequence(
        "templates", templates, item="a pod spec", items="pod specs", optional=True,
        limit=MAX_LISTED_PODS)
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if not isinstance(table, pa.Table):
        raise TraceError(source, "", f"expected a pyarrow.Table, got {type(table).__name__}")
    names = table.column_names
    if len(set(names)) != len(names):
        dup = next(c for c in names if names.count(c) > 1)
        raise TraceError(source, dup, "duplicate column")
    for c in names:
        if c not in COLUMNS and not is_resource_column(c):
            raise TraceError(source, c, "unknown column (expected " + ", ".join(COLUMNS)
                             + " or extended resources such as nvidia.com/gpu)")
    for c in ("name", "arrival"):
        if c not in names:
            raise TraceError(source, c, "missing (a required column)")
    n = table.num_rows
    where = lambda r: f"{source}: row {r}"
    cols = {}
    for c in names:
        col = table.column(c)
        cols[c] = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    times = {}
    for c in TIME_COLUMNS:
        if c not in cols:
            continue
        col = cols[c]
        if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            raise TraceError(source, c, f"must be a numeric column (seconds), got {col.type}")
        if c == "arrival" and col.null_count:
            raise TraceError(where(_first(col.is_null())), c, "required")
        v = _nan_filled(col, n)
        # null is "none given"; a NaN (or an infinity) is a value, refused as in a CSV
        nulls = col.is_null().to_numpy(zero_copy_only=False)
        ok = nulls | ((v >= 0) & (v <= MAX_SECONDS))
        if not ok.all():
            r = int(np.flatnonzero(~ok)[0])
            raise TraceError(where(r), c, f"must be a number of seconds 0..{MAX_SECONDS:g}, "
                             f"got {col[r].as_py()!r}")
        times[c] = v
    _check_times(times, where)
    for c in ("labels", "annotations"):
        if c in cols:
            t = cols[c].type
            if not (pa.types.is_map(t) and _stringish(t.key_type) and _stringish(t.item_type)):
                raise TraceError(source, c, f"must be a map<string, string> column, got {t}")
            cols[c] = cols[c].cast(_MAP)
            if cols[c].items.null_count:
                items = cols[c].items
                at = int(np.flatnonzero(items.is_null().to_numpy(zero_copy_only=False))[0])
                offsets = cols[c].offsets.to_numpy()
                r = int(np.searchsorted(offsets, at, side="right") - 1)
                raise TraceError(where(r), c, f"value of {cols[c].keys[at].as_py()!r} must be "
                                 "a string, got null")
    if "annotations" in cols:
        _check_annotations(cols["annotations"], where)
    out = pa.table({c: (pa.array(times[c]) if c in times and c == "arrival"
                        else pa.array(times[c], mask=np.isnan(times[c])) if c in times
                        else cols[c]) for c in names})
    origin = np.arange(n, dtype=np.int64)
    trace = Trace(out, source, origin, False, templates)
    return _finish(trace)


def _check_times(times: dict, where) -> None:
    arr = times["arrival"]
    if "departure" in times:
        dep = times["departure"]
        bad = ~np.isnan(dep) & (dep < arr)
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise TraceError(where(r), "departure", f"{dep[r]:g} is before the arrival "
                             f"{arr[r]:g}")
        if "duration" in times:
            both = ~np.isnan(dep) & ~np.isnan(times["duration"])
            if both.any():
                r = int(np.flatnonzero(both)[0])
                raise TraceError(where(r), "duration", "give departure or duration, not both")


def _first(mask) -> int:
    return int(np.flatnonzero(pc.fill_null(mask, False).to_numpy(zero_copy_only=False))[0])


def _stringish(t) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _finish(trace: Trace) -> Trace:
    """Sort by arrival (stable), check names are Pod names and unique and
    the pod columns parse (once per distinct combination of them)."""
    table = trace.table
    n = table.num_rows
    if n == 0:
        raise TraceError(trace.source, "", "no pods: the trace has no rows")
    # names: a required non-empty string column, unique per namespace
    names = table.column("name").combine_chunks()
    t = names.type.value_type if pa.types.is_dictionary(names.type) else names.type
    if not _stringish(t):
        raise TraceError(trace.source, "name", f"must be a string column, got {names.type}")
    names = names.cast(pa.string())
    bad = pc.or_(names.is_null(), pc.equal(pc.fill_null(names, ""), ""))
    if pc.any(bad).as_py():
        raise TraceError(trace.where(_first(bad)), "name", "required (a non-empty string)")
    # every row's name now, not as the run reaches the row: a refused
    # trace is refused before it changes anything
    bad_name = bad_pod_name(names)
    if bad_name:
        raise TraceError(trace.where(bad_name[0]), "name", bad_name[1])
    if "namespace" in table.column_names:
        ns = table.column("namespace").combine_chunks()
        tt = ns.type.value_type if pa.types.is_dictionary(ns.type) else ns.type
        if not _stringish(tt):
            raise TraceError(trace.source, "namespace", f"must be a string column, got {ns.type}")
        ns = pc.fill_null(ns.cast(pa.string()), "")
        ns = pc.if_else(pc.equal(ns, ""), "default", ns)
        keys = pc.binary_join_element_wise(ns, names, "/")
    else:
        keys = names
    if pc.count_distinct(keys).as_py() != n:
        seen: dict = {}
        for r, k in enumerate(keys.to_pylist()):
            if k in seen:
                raise TraceError(trace.where(r), "name", f"duplicate pod {k} (also at "
                                 f"{trace.where(seen[k])})")
            seen[k] = r
    order = np.argsort(trace.arrival, kind="stable")
    if not (order == np.arange(n)).all():
        table = table.take(pa.array(order))
        trace = trace.with_table(table, trace.origin[order])
    _check_pod_columns(trace)
    return trace


def _check_pod_columns(trace: Trace) -> None:
    """read_pods_table of the first row of every distinct combination of
    the pod-defining columns (labels aside): every template, request and
    priority value is parsed once before the run."""
    table = trace._pod_table
    keys = [c for c in table.column_names if c not in ("name", "labels")]
    if keys:
        plain = []
        for c in keys:
            col = table.column(c).combine_chunks()
            if pa.types.is_dictionary(col.type):
                col = col.cast(col.type.value_type)
            plain.append(col)
        grouped = pa.table(plain + [pa.array(np.arange(table.num_rows))],
                           names=[f"k{i}" for i in range(len(keys))] + ["row"])
        try:
            rows = grouped.group_by([f"k{i}" for i in range(len(keys))]).aggregate(
                [("row", "min")]).column("row_min").to_numpy()
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            rows = np.arange(table.num_rows)
        rows = np.sort(rows)
    else:
        rows = np.array([0])
    sample = table.take(pa.array(rows))
    try:
        read_pods_table(sample, trace.templates)
    except ManifestError as exc:
        obj = str(exc.obj)
        if obj.startswith("row "):
            raise TraceError(trace.where(int(rows[int(obj[4:])])), exc.field,
                             exc.problem) from None
        raise TraceError(trace.source, exc.field or obj, exc.problem) from None
    # labels: the column reads (duplicate keys are checked per chunk)


# --------------------------------------------------------------------------
# CSV


def _read_csv(path: str, templates) -> Trace:
    try:
        # utf-8-sig: the byte-order mark a spreadsheet writes first is no part of
        # the first column's name (it was 'missing' from the header)
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            try:
                header = next(reader)
            except StopIteration:
                raise TraceError(f"{path}:1", "", "empty file: expected a header row with "
                                 "name, arrival, ...") from None
            except csv.Error as exc:
                raise TraceError(f"{path}:1", "", f"not a CSV file: {exc}") from None
            header = [h.strip() for h in header]
            for h in header:
                if not h:
                    raise TraceError(f"{path}:1", "", "empty column name in the header")
                if h not in COLUMNS and not is_resource_column(h):
                    raise TraceError(f"{path}:1", h, "unknown column (expected "
                                     + ", ".join(COLUMNS)
                                     + " or extended resources such as nvidia.com/gpu)")
            if len(set(header)) != len(header):
                dup = next(c for c in header if header.count(c) > 1)
                raise TraceError(f"{path}:1", dup, "duplicate column")
            for c in ("name", "arrival"):
                if c not in header:
                    raise TraceError(f"{path}:1", c, "missing column in the header (it has: "
                                     + ", ".join(header) + ")")
            if "template" in header:
                res = [c for c in header if c in ("cpu", "memory") or is_resource_column(c)]
                if res:
                    raise TraceError(f"{path}:1", "template", "cannot be combined with request "
                                     "columns (" + ", ".join(res) + ")")
            cells: dict[str, list] = {c: [] for c in header}
            lines: list[int] = []
            width = len(header)
            while True:
                try:
                    row = next(reader)
                except StopIteration:
                    break
                except csv.Error as exc:
                    raise TraceError(f"{path}:{reader.line_num}", "",
                                     f"not a CSV row: {exc}") from None
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                if len(row) != width:
                    raise TraceError(f"{path}:{reader.line_num}", "", f"{len(row)} fields; "
                                     f"the header has {width}")
                lines.append(reader.line_num)
                for c, v in zip(header, row):
                    cells[c].append(v)
    except UnicodeDecodeError as exc:
        raise TraceError(path, "", f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    origin = np.array(lines, dtype=np.int64)
    if not lines:
        raise TraceError(path, "", "no pods: the file has a header but no rows")
    columns = {}
    for c in header:
        columns[c] = _csv_column(path, lines, c, cells[c], templates)
    table = pa.table(columns)
    _check_times({c: _nan_filled(table.column(c), len(lines)) for c in TIME_COLUMNS
                  if c in columns}, lambda r: f"{path}:{lines[r]}")
    if "annotations" in columns:
        _check_annotations(columns["annotations"], lambda r: f"{path}:{lines[r]}")
    trace = Trace(table, path, origin, True, list(templates) if templates is not None else None)
    return _finish(trace)


def _csv_column(path, lines, column, values, templates):
    def fail(i, problem):
        raise TraceError(f"{path}:{lines[i]}", column, problem)

    if column in TIME_COLUMNS:
        out = np.empty(len(values))
        mask = np.zeros(len(values), np.bool_)
        cache: dict = {}
        for i, s in enumerate(values):
            s = s.strip()
            if s == "":
                if column == "arrival":
                    fail(i, "required (seconds, a number >= 0)")
                mask[i] = True
                out[i] = 0.0
                continue
            v = cache.get(s)
            if v is None:
                try:
                    v = float(s)
                except ValueError:
                    v = None
                if v is None or not math.isfinite(v) or not 0 <= v <= MAX_SECONDS:
                    fail(i, f"must be a number of seconds 0..{MAX_SECONDS:g}, got {s!r}")
                cache[s] = v
            out[i] = v
        return pa.array(out, mask=mask if mask.any() else None)
    if column in ("name", "namespace", "scheduler_name"):
        stripped = [s.strip() for s in values]
        if column == "name":
            return pa.array(stripped, pa.string())
        return pa.array([s if s else None for s in stripped], pa.string())
    if column == "priority":
        out = []
        for i, s in enumerate(values):
            s = s.strip()
            if s == "":
                out.append(None)
                continue
            try:
                v = int(s)
            except ValueError:
                fail(i, f"must be an integer {INT32_MIN}..{INT32_MAX}, got {s!r}")
            if not INT32_MIN <= v <= INT32_MAX:
                fail(i, f"must be an integer {INT32_MIN}..{INT32_MAX}, got {v}")
            out.append(v)
        return pa.array(out, pa.int64())
    if column in ("labels", "annotations"):
        out = []
        cache = {}
        for i, s in enumerate(values):
            s = s.strip()
            if s == "":
                out.append(None)
                continue
            got = cache.get(s)
            if got is None:
                got = _string_map(s)
                if isinstance(got, str):
                    fail(i, got)
                cache[s] = got
            out.append(got)
        return pa.array(out, _MAP)
    if column == "template":
        stripped = [s.strip() for s in values]
        ints = [s.lstrip("+-").isdigit() for s in stripped]
        if all(ints):
            if templates is None:
                fail(0, "integer template ids need templates (a list of Pod dicts)")
            return pa.array([int(s) for s in stripped], pa.int64())
        for i, (s, is_int) in enumerate(zip(stripped, ints)):
            if s == "":
                fail(i, "required")
            if is_int:
                fail(i, "mixes template ids and JSON pod specs in one column")
        return pa.array(stripped, pa.string())
    # a request column: a quantity
    out = []
    cache = {}
    for i, s in enumerate(values):
        s = s.strip()
        if s == "":
            out.append(None)
            continue
        v = cache.get(s)
        if v is None:
            try:
                v = resource_value(column, s)
            except (ValueError, ArithmeticError) as exc:
                fail(i, str(exc))
            if v < 0:
                fail(i, f"must not be negative, got {s!r}")
            cache[s] = v
        out.append(v)
    return pa.array(out, pa.int64())


def _string_map(text: str):
    """[(key, value)] of a JSON object of strings or ``k=v;k2=v2``; a str
    is the problem."""
    if text.startswith("{"):
        try:
            d = json.loads(text)
        except ValueError as exc:
            return f"not a JSON object: {exc}"
        if not isinstance(d, dict):
            return "must be a JSON object of strings"
        for k, v in d.items():
            if not isinstance(v, str):
                return f"value of {k!r} must be a string, got {v!r}"
        return list(d.items())
    out = []
    seen = set()
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        k, sep, v = part.partition("=")
        k = k.strip()
        if not sep or not k:
            return f"expected key=value pairs separated by ';' (or a JSON object), got {part!r}"
        if k in seen:
            return f"duplicate key {k!r}"
        seen.add(k)
        out.append((k, v.strip()))
    return out



# --------------------------------------------------------------------------
# what the pods ask (for the profile warnings)


def asks_of_trace(trace: Trace, registered) -> Asks:
    """The registered asks and resource requests of every row of a trace,
    per profile name (``scheduler_name``), from its columns: annotation
    keys, request columns, and one record per distinct template."""
    table = trace.table
    n = table.num_rows
    if "scheduler_name" in table.column_names:
        col = pc.fill_null(table.column("scheduler_name").combine_chunks().cast(pa.string()), "")
        enc = col.dictionary_encode()
        ids = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        profiles = [v or "default-scheduler" for v in enc.dictionary.to_pylist()]
    else:
        ids, profiles = np.zeros(n, np.int64), ["default-scheduler"]
    ask_rows: dict = {}
    res_rows: dict[str, np.ndarray] = {}

    def mark(into: dict, key, rows: np.ndarray) -> None:
        got = into.get(key)
        into[key] = rows if got is None else (got | rows)

    if "annotations" in table.column_names:
        col = table.column("annotations").combine_chunks()
        offsets = col.offsets.to_numpy().astype(np.int64)
        keys = col.keys.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
        parent = np.repeat(np.arange(n), np.diff(offsets))
        for ask in registered:
            hit = pc.is_in(keys, value_set=pa.array(ask.annotations)).to_numpy(
                zero_copy_only=False)
            rows = np.zeros(n, np.bool_)
            rows[parent[hit]] = True
            mark(ask_rows, ask, rows)
    for c in table.column_names:
        if c in ("cpu", "memory") or (c not in COLUMNS and is_resource_column(c)):
            v = pc.fill_null(table.column(c).combine_chunks(), 0).to_numpy(zero_copy_only=False)
            mark(res_rows, c, v > 0)
    if "template" in table.column_names:
        enc = table.column("template").combine_chunks().dictionary_encode()
        tids = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        _, first = np.unique(tids, return_index=True)
        for k, row in zip(np.unique(tids).tolist(), first.tolist()):
            rec = trace.records(row, row + 1)[0]
            rows = tids == k
            for ask in asks_of_pods([rec], registered).by_ask.get(rec.scheduler_name, ()):
                mark(ask_rows, ask, rows)
            for r, v in rec.requests.items():
                if v > 0:
                    mark(res_rows, r, rows)
    out = Asks()
    for into, found in ((out.by_ask, ask_rows), (out.by_resource, res_rows)):
        for key, rows in found.items():
            counts = np.bincount(ids[rows], minlength=len(profiles))
            for p, c in enumerate(counts.tolist()):
                if c:
                    into.setdefault(profiles[p], Counter())[key] += c
    return out
