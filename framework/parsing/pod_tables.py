"""Pending (or bound) pods from an Arrow table or a Parquet file.

``read_pods_table(table, templates=None)`` and ``read_pods_parquet(path,
templates=None)`` return one :class:`~.records.PodRecord` per row, in row
order, equal to ``parse_pod`` of the row's *equivalent manifest* (below),
``obj`` included.  Every column is validated first, vectorized; an error
names the file (when read from one), the row (0-based) and the column:
``pods.parquet: row 17: cpu: must be a non-negative integer, got -5``.

Columns (any other column is an error):

``name``            string, required, a DNS-1123 subdomain; ``namespace``/``name`` unique.
``namespace``       string, optional, a DNS-1123 label (null: the template's, else ``default``).
``template``        the pod's template, either an integer id into ``templates``
                    (a list of Pod dicts given beside the table) or a string
                    holding JSON; either is a Pod (``{"spec": {...}}``, with
                    ``apiVersion``/``kind``/``metadata`` if wanted) or a bare
                    pod ``spec``, read and validated alike (a spec field that
                    is not a PodSpec field is refused, not dropped).
``cpu``             integer millicores, ``memory`` integer bytes, and any column
                    named like an extended resource (``nvidia.com/gpu``,
                    ``ephemeral-storage``, ``hugepages-2Mi``: a name with a
                    ``/``, or one of those) in whole units: the requests of one
                    container (null: not requested).  Not with ``template``.
``labels``          map<string, string>, optional (null: the template's, else none);
                    keys qualified names, values label values, as the API server's.
``priority``        integer (int32 range), optional (null: the template's, else none).
``creation_time``   timestamp (any unit or zone) or integer ns since the epoch, optional.
``scheduler_name``  string, optional (null: the template's; ``""`` means the default).
``node_name``       string, optional: set for pods already bound to a node.

Equivalent manifest of a row (the record's ``obj``)::

    {"apiVersion": "v1", "kind": "Pod",
     "metadata": {"name": name, "namespace": namespace, "labels": labels,
                  "creationTimestamp": "2024-05-01T10:00:00.000000000Z"},
     "spec": {"containers": [{"name": "main", "resources": {"requests":
                  {"cpu": "100m", "memory": "524288000", "nvidia.com/gpu": "1"}}}],
              "priority": priority, "schedulerName": scheduler_name,
              "nodeName": node_name}}

with the keys of null (or absent) columns left out (``resources.requests``
holds the non-null request columns).  A ``template`` row starts from its
template instead: the template Pod dict (or ``{"apiVersion": "v1", "kind":
"Pod", "spec": <JSON spec>}``; a template Pod lacking ``apiVersion`` or
``kind`` gets ``v1`` / ``Pod``) without ``status``, ``spec.nodeName`` and the
per-pod metadata (``uid``, ``creationTimestamp``, ``deletionTimestamp``,
``resourceVersion``), then the row's non-null columns set as above.  A
template is validated (by ``parse_pod``) once per distinct template and
priority / scheduler_name / node_name; a template error names the first row
using it: ``row 3: template: spec.containers[0].resources.requests.cpu:
invalid quantity 'abc' (templates[1])``.

Records are built by copying a base record per distinct (template or
requests, priority, scheduler_name, node_name, namespace, labels) with the
row's ``name``, ``creation_ns`` and ``obj``; rows of one group share their
``labels``, ``requests``, ... containers, their ``spec`` dict and their
``memo`` (records are read-only everywhere).
"""

from __future__ import annotations

import gc
from itertools import repeat

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tensorsched.framework.arguments import Arguments
from tensorsched.framework.errors import ManifestError

from .manifests import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    INT32_MAX,
    INT32_MIN,
    DocumentError,
    parse_json_document,
    parse_pod,
)
from tensorsched.framework.records.pod_columns import NO_EXTRAS, PodColumns, extras_of
from .meta import (
    DNS1123_SUBDOMAIN_FMT,
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    NameRules,
    ObjectContext,
    check_labels,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    invalid_value,
)
from .quantity import INT64_MAX
from tensorsched.framework.records.records import PodClass, PodRecord

__all__ = ["COLUMNS", "bad_pod_name", "is_resource_column", "read_pods_parquet", "read_pods_table"]

#: Columns with a fixed meaning (request columns besides these: ``is_resource_column``).
COLUMNS = ("name", "namespace", "template", "cpu", "memory", "labels", "priority",
           "creation_time", "scheduler_name", "node_name")
_PER_POD_META = ("name", "uid", "creationTimestamp", "deletionTimestamp", "resourceVersion")
_NEW = object.__new__


def is_resource_column(name: str) -> bool:
    """Whether a column other than ``COLUMNS`` is an extended-resource request."""
    return ("/" in name or name == "ephemeral-storage" or name.startswith("hugepages-")) \
        and name != "pods"


class _Table:
    """The table being read, for error messages."""

    def __init__(self, table: pa.Table, source: str | None):
        self.table = table
        self.source = source
        self.n = table.num_rows

    def fail(self, row: int | None, column: str, problem: str):
        if row is None:
            raise ManifestError(column, "", problem, self.source)
        raise ManifestError(f"row {row}", column, problem, self.source)

    def column(self, name: str) -> pa.Array | None:
        if name not in self.table.column_names:
            return None
        col = self.table.column(name)
        return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col

    def strings(self, name: str, required: bool = False) -> pa.Array | None:
        col = self.column(name)
        if col is None:
            if required:
                self.fail(None, name, "missing (a string column is required)")
            return None
        t = col.type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            self.fail(None, name, f"must be a string column, got {col.type}")
        col = col.cast(pa.string())
        if required:
            if col.null_count:
                self.fail(_first(col.is_null()), name, "required")
            empty = pc.equal(col, "")
            if pc.any(empty).as_py():
                self.fail(_first(empty), name, "required")
        return col

    def ints(self, name: str, lo: int, hi: int, what: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(values int64 with nulls as 0, null mask) of an integer column in lo..hi."""
        col = self.column(name)
        if col is None:
            return None
        if not pa.types.is_integer(col.type):
            self.fail(None, name, f"must be an integer column, got {col.type}")
        valid = col.is_valid()
        for bad, cmp in ((_compared(pc.less, col, lo), "<"),
                         (_compared(pc.greater, col, hi), ">")):
            bad = pc.and_(bad, valid)
            if pc.any(bad).as_py():
                row = _first(bad)
                self.fail(row, name, f"{what}, got {col[row].as_py()}")
        nulls = col.is_null().to_numpy(zero_copy_only=False)
        values = pc.fill_null(col, 0).cast(pa.int64()).to_numpy(zero_copy_only=False)
        return values, nulls


def _compared(op, col, bound: int):
    """``op(col, bound)`` (``pc.less`` or ``pc.greater``) for an integer
    column of any width and sign.  An unsigned column is compared in its
    own type (Arrow compares a column with a Python int as int64, and a
    uint64 past 2**63 would raise ArrowInvalid instead of failing the check);
    a bound outside its range holds for no row or for every row."""
    if not pa.types.is_unsigned_integer(col.type):
        return op(col, bound)
    top = int(np.iinfo(col.type.to_pandas_dtype()).max)
    if 0 <= bound <= top:
        return op(col, pa.scalar(bound, col.type))
    # less than a negative bound / greater than one past the top: no row;
    # greater than a negative bound / less than one past the top: every row
    every = (op is pc.greater) == (bound < 0)
    return pc.is_valid(col) if every else pc.is_null(col)


def _first(mask: pa.Array) -> int:
    """The first row where a boolean array is true."""
    return int(np.flatnonzero(pc.fill_null(mask, False).to_numpy(zero_copy_only=False))[0])


def _factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dense ids in first-appearance order, first row of every id) of int64 values."""
    if len(values) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ids = pa.array(values).dictionary_encode().indices.to_numpy().astype(np.int64)
    top = np.maximum.accumulate(ids)
    first = np.flatnonzero(np.concatenate(([True], top[1:] > top[:-1])))
    return ids, first


def _encode(col: pa.Array | None, n: int) -> tuple[np.ndarray, list]:
    """(ids, distinct values with None for null) of a column; all 0 / [None] when absent."""
    if col is None:
        return np.zeros(n, np.int64), [None]
    enc = col.dictionary_encode(null_encoding="encode")
    return (enc.indices.to_numpy(zero_copy_only=False).astype(np.int64),
            enc.dictionary.to_pylist())


def _combine(*parts: tuple[np.ndarray, int]) -> tuple[np.ndarray, np.ndarray]:
    """Ids of the distinct combinations of several id columns (ids, counts),
    with the first row of each."""
    ids, count = parts[0]
    for more, m in parts[1:]:
        if m > 1:
            if count * m >= 1 << 62:
                ids = _factorize(ids)[0]
                count = int(ids.max()) + 1
            ids = ids * m + more
            count = count * m
    ids, first = _factorize(ids)
    return ids, first


# --------------------------------------------------------------------------
# timestamps: RFC3339 text of int64 ns, vectorized


def _rfc3339(ns: np.ndarray) -> list[str]:
    """``YYYY-MM-DDTHH:MM:SS.fffffffffZ`` of every int64 ns since the epoch
    (``parse_timestamp`` reads it back exactly)."""
    n = len(ns)
    if n == 0:
        return []
    day_ns = 86_400 * 10**9
    days = np.floor_divide(ns, day_ns)
    sod = ns - days * day_ns
    # days -> civil date (H. Hinnant's algorithm); int64 ns span 1677..2262
    z = days + 719_468
    era = np.floor_divide(z, 146_097)
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = np.where(mp < 10, mp + 3, mp - 9)
    year = yoe + era * 400 + (month <= 2)
    secs, frac = np.divmod(sod, 10**9)
    out = np.empty(n, _STAMP)
    out.view(np.uint8).reshape(n, 30)[:] = np.frombuffer(b"0000-00-00T00:00:00.000000000Z", np.uint8)
    out["y"] = _DIGITS4[year - 1600]
    out["mo"] = _DIGITS2[month]
    out["d"] = _DIGITS2[day]
    out["h"] = _DIGITS2[secs // 3600]
    out["mi"] = _DIGITS2[secs // 60 % 60]
    out["s"] = _DIGITS2[secs % 60]
    out["f1"] = _DIGITS3[frac // 1_000_000]
    out["f2"] = _DIGITS3[frac // 1000 % 1000]
    out["f3"] = _DIGITS3[frac % 1000]
    offsets = np.arange(0, 30 * (n + 1), 30, dtype=np.int64)
    text = pa.Array.from_buffers(pa.large_string(), n,
                                 [None, pa.py_buffer(offsets), pa.py_buffer(out)])
    return text.to_pylist()


_STAMP = np.dtype([("y", "S4"), ("_1", "S1"), ("mo", "S2"), ("_2", "S1"), ("d", "S2"),
                   ("_3", "S1"), ("h", "S2"), ("_4", "S1"), ("mi", "S2"), ("_5", "S1"),
                   ("s", "S2"), ("_6", "S1"), ("f1", "S3"), ("f2", "S3"), ("f3", "S3"),
                   ("_7", "S1")])
_DIGITS2 = np.array([f"{i:02d}".encode() for i in range(100)], "S2")
_DIGITS3 = np.array([f"{i:03d}".encode() for i in range(1000)], "S3")
_DIGITS4 = np.array([f"{i:04d}".encode() for i in range(1600, 2300)], "S4")   # int64 ns: 1677..2262


# --------------------------------------------------------------------------
# templates


#: The top-level fields of a Pod; a template holding any of them is a Pod,
#: otherwise a pod spec (a spec has none of these fields).
_POD_FIELDS = ("apiVersion", "kind", "metadata", "spec", "status")


#: The fields of a v1 PodSpec: a template's spec with any other field is a
#: typo (or a Pod's field misplaced), refused rather than dropped.
_SPEC_FIELDS = frozenset((
    "activeDeadlineSeconds", "affinity", "automountServiceAccountToken", "containers",
    "dnsConfig", "dnsPolicy", "enableServiceLinks", "ephemeralContainers", "hostAliases",
    "hostIPC", "hostNetwork", "hostPID", "hostUsers", "hostname", "imagePullSecrets",
    "initContainers", "nodeName", "nodeSelector", "os", "overhead", "preemptionPolicy",
    "priority", "priorityClassName", "readinessGates", "resourceClaims", "resources",
    "restartPolicy", "runtimeClassName", "schedulerName", "schedulingGates",
    "securityContext", "serviceAccount", "serviceAccountName", "setHostnameAsFQDN",
    "shareProcessNamespace", "subdomain", "terminationGracePeriodSeconds", "tolerations",
    "topologySpreadConstraints", "volumes"))


def _template_problem(tmpl: dict) -> str | None:
    """Why a template (a Pod or a pod spec) cannot be read as either, or None."""
    pod_keys = [k for k in tmpl if k in _POD_FIELDS]
    if pod_keys:
        other = [k for k in tmpl if k not in _POD_FIELDS]
        if other:
            return (f"a pod spec or a Pod, not both: {other[0]!r} beside {pod_keys[0]!r} "
                    "(a Pod's fields are " + ", ".join(_POD_FIELDS) + ")")
        kind = tmpl.get("kind", "Pod")
        if kind != "Pod":
            return f"kind: a template must be a Pod, got {kind!r}"
        spec, prefix = tmpl.get("spec"), "spec."
        if not isinstance(spec, dict):
            return "spec: required (a Pod template needs its spec)"
    else:
        spec, prefix = tmpl, ""
    unknown = sorted(k for k in spec if k not in _SPEC_FIELDS)
    if unknown:
        return (f"{prefix}{unknown[0]}: unknown field of a pod spec (a template is a Pod: "
                "apiVersion, kind, metadata, spec; or a pod spec: containers, ...)")
    return None


def _template_base(tmpl: dict) -> tuple[dict, dict, dict]:
    """(top-level fields, metadata, spec) of a template (a Pod, or a pod
    spec: the fields of a Pod's ``spec``), without what is per pod."""
    if not any(k in tmpl for k in _POD_FIELDS):
        tmpl = {"apiVersion": "v1", "kind": "Pod", "spec": tmpl}
    top = {"apiVersion": "v1", "kind": "Pod"}
    top.update((k, v) for k, v in tmpl.items() if k not in ("status", "metadata", "spec"))
    meta = tmpl.get("metadata")
    meta = {k: v for k, v in meta.items() if k not in _PER_POD_META} if isinstance(meta, dict) else {}
    spec = tmpl.get("spec")
    spec = {k: v for k, v in spec.items() if k != "nodeName"} if isinstance(spec, dict) else spec
    return top, meta, spec


def _pod_groups(t: _Table, templates) -> dict:
    """Everything but name/creation of every row, per distinct combination."""
    n = t.n
    if len(set(t.table.column_names)) != len(t.table.column_names):
        dup = next(c for c in t.table.column_names if t.table.column_names.count(c) > 1)
        t.fail(None, dup, "duplicate column")
    names = t.strings("name", required=True)
    _check_names(t, names)
    namespaces = t.strings("namespace")
    sched = t.strings("scheduler_name")
    nodes = t.strings("node_name")
    prio = t.ints("priority", INT32_MIN, INT32_MAX,
                  f"must be in {INT32_MIN}..{INT32_MAX}")
    resources = [c for c in t.table.column_names if c in ("cpu", "memory") or
                 (c not in COLUMNS and is_resource_column(c))]
    for c in t.table.column_names:
        if c not in COLUMNS and c not in resources:
            t.fail(None, c, "unknown column (expected " + ", ".join(COLUMNS) +
                   " or extended resources such as nvidia.com/gpu)")
    requests = {c: t.ints(c, 0, INT64_MAX, "must be a non-negative integer") for c in resources}
    template_col = t.column("template")
    if template_col is not None and resources:
        t.fail(None, "template", "cannot be combined with request columns (" +
               ", ".join(resources) + ")")
    labels_ids, label_sets = _labels(t)

    # the spec-level combination: template (or requests), priority, scheduler, node
    if template_col is None:
        parts = []
        for c in resources:
            values, nulls = requests[c]
            ids, first = _factorize(np.where(nulls, -1, values))
            parts.append((ids, len(first)))
        spec_source = None
        spec_ids = _combine(*parts, (np.zeros(n, np.int64), 1)) if parts else None
    else:
        spec_source = _template_ids(t, template_col, templates)
        spec_ids = (spec_source[0], None)
    sched_ids, sched_vals = _encode(sched, n)
    node_ids, node_vals = _encode(nodes, n)
    if prio is not None:
        prio_ids, prio_first = _factorize(np.where(prio[1], INT32_MIN - 1, prio[0]))
        prio_vals = [None if prio[1][r] else int(prio[0][r]) for r in prio_first]
    else:
        prio_ids, prio_vals = np.zeros(n, np.int64), [None]
    base_ids = spec_ids[0] if spec_ids is not None else np.zeros(n, np.int64)
    base_count = (int(base_ids.max()) + 1) if n else 1
    group_ids, group_first = _combine((base_ids, base_count), (prio_ids, len(prio_vals)),
                                      (sched_ids, len(sched_vals)), (node_ids, len(node_vals)))
    ns_ids, ns_vals = _encode(namespaces, n)
    for k, ns in enumerate(ns_vals):        # first-appearance order: the first bad row
        errs = dns1123_label_errors(ns) if ns else []
        if errs:
            t.fail(int(np.argmax(ns_ids == k)), "namespace", invalid_value(ns, errs))
    final_ids, final_first = _combine((group_ids, len(group_first)), (ns_ids, len(ns_vals)),
                                      (labels_ids, len(label_sets)))

    group_bases = []
    for g, r in enumerate(group_first.tolist()):
        overrides = {"priority": prio_vals[prio_ids[r]], "schedulerName": sched_vals[sched_ids[r]],
                     "nodeName": node_vals[node_ids[r]]}
        if spec_source is None:
            reqs = {c: int(requests[c][0][r]) for c in resources if not requests[c][1][r]}
            group_bases.append(_request_base(reqs, overrides))
        else:
            group_bases.append(_template_group(t, spec_source, r, overrides,
                                               names[r].as_py()))
    finals = []
    ns_of_final = []
    ns_index: dict[str, int] = {}
    for r, g in zip(final_first.tolist(), group_ids[final_first].tolist()):
        fields, top, meta = group_bases[g]
        ns = ns_vals[ns_ids[r]]
        labels = label_sets[labels_ids[r]]
        fields = dict(fields)
        meta = dict(meta)
        if ns is not None:
            meta["namespace"] = ns
            fields["namespace"] = ns or "default"
        if labels is not None:
            meta["labels"] = labels
            fields["labels"] = labels
        finals.append((fields, top, meta))
        ns_of_final.append(ns_index.setdefault(fields["namespace"], len(ns_index)))
    name_list = names.to_pylist()
    _check_unique(t, name_list, np.asarray(ns_of_final, np.int64)[final_ids], len(ns_index),
                  finals, final_ids)
    return {"names": name_list, "final_ids": final_ids, "finals": finals}


def _check_unique(t: _Table, names: list, ns_ids: np.ndarray, ns_count: int, finals,
                  final_ids) -> None:
    keys = names if ns_count == 1 else list(zip(ns_ids.tolist(), names))
    if len(set(keys)) == t.n:
        return
    first: dict = {}
    for row, key in enumerate(keys):
        other = first.setdefault(key, row)
        if other != row:
            ns = finals[final_ids[row]][0]["namespace"]
            t.fail(row, "name", f"duplicate Pod {ns}/{names[row]} (row {other} has the "
                   "same namespace and name)")


def _labels(t: _Table) -> tuple[np.ndarray, list]:
    """(ids, distinct label dicts with None for null) of the labels column."""
    col = t.column("labels")
    if col is None:
        return np.zeros(t.n, np.int64), [None]
    typ = col.type
    if not (pa.types.is_map(typ) and _stringish(typ.key_type) and _stringish(typ.item_type)):
        t.fail(None, "labels", f"must be a map<string, string> column, got {typ}")
    col = col.cast(pa.map_(pa.string(), pa.string()))
    offsets = col.offsets.to_numpy().astype(np.int64)
    start = int(offsets[0])
    keys = col.keys.slice(start, int(offsets[-1]) - start)
    values = col.items.slice(start, int(offsets[-1]) - start)
    offsets = offsets - start
    if values.null_count:
        at = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
        row = int(np.searchsorted(offsets, at, side="right") - 1)
        t.fail(row, "labels", f"value of {keys[at].as_py()!r} must be a string, got null")
    sep = ("\x1f", "\x1e")
    if any(pc.any(pc.match_substring(a, s)).as_py() for a in (keys, values) for s in sep):
        # separators in the labels themselves: one key per row, in Python
        rows = [None if v is None else tuple(v) for v in col.to_pylist()]
        ids, first = _factorize(np.asarray(_encode(pa.array([repr(r) for r in rows]), t.n)[0]))
    else:
        pairs = pc.binary_join_element_wise(keys, values, sep[0])
        joined = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pairs,
                                          mask=col.is_null())
        enc_ids, _ = _encode(pc.binary_join(joined, sep[1]), t.n)
        ids, first = _factorize(enc_ids)
    sets = []
    for r in first.tolist():
        pairs = col[r].as_py()
        if pairs is None:
            sets.append(None)
            continue
        d = dict(pairs)
        if len(d) != len(pairs):
            seen = set()
            dup = next(k for k, _ in pairs if k in seen or seen.add(k))
            t.fail(r, "labels", f"duplicate key {dup!r}")
        try:
            check_labels(_ROW_LABELS, d, "labels")
        except ManifestError as exc:
            t.fail(r, exc.field, exc.problem)
        sets.append(d)
    return ids, sets


#: Only the field and problem of its errors are read (``_Table.fail`` names the row).
_ROW_LABELS = ObjectContext("labels")
#: ``^...$`` as RE2 (pyarrow) reads it: the whole value.
_NAME_RE2 = f"^{DNS1123_SUBDOMAIN_FMT}$"


def bad_pod_name(names: pa.Array) -> tuple[int, str] | None:
    """(row, problem) of the first of ``names`` (a string array without
    nulls) that is no Pod ``metadata.name`` (a DNS-1123 subdomain), in
    upstream's words; None when every one is, or when ``NameRules`` is off.
    Vectorized: one regex pass over the column."""
    if not NameRules.enforced:
        return None
    bad = pc.or_(pc.invert(pc.match_substring_regex(names, _NAME_RE2)),
                 pc.greater(pc.binary_length(names), DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not pc.any(bad).as_py():
        return None
    row = _first(bad)
    name = names[row].as_py()
    return row, invalid_value(name, dns1123_subdomain_errors(name))


def _check_names(t: _Table, names: pa.Array) -> None:
    """Every row's name a Pod name (``bad_pod_name``); the first row that
    is not refused."""
    bad = bad_pod_name(names)
    if bad:
        t.fail(bad[0], "name", bad[1])


def _stringish(t) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _template_ids(t: _Table, col: pa.Array, templates) -> tuple:
    """(ids, kind, sources): per row the template it uses; sources[id] the
    (top, meta, spec, label) of that template."""
    if col.null_count:
        t.fail(_first(col.is_null()), "template", "required")
    if pa.types.is_integer(col.type):
        if templates is None:
            t.fail(None, "template", "integer template ids need templates (a list of Pod dicts)")
        templates = list(templates)
        bad = pc.or_(_compared(pc.less, col, 0),
                     _compared(pc.greater, col, len(templates) - 1))
        if pc.any(bad).as_py():
            row = _first(bad)
            t.fail(row, "template", f"no template {col[row].as_py()} "
                   f"({len(templates)} templates given)")
        ids, first = _factorize(col.cast(pa.int64()).to_numpy(zero_copy_only=False))
        sources = []
        for r in first.tolist():
            i = col[r].as_py()
            tmpl = templates[i]
            if not isinstance(tmpl, dict):
                t.fail(r, "template", f"templates[{i}] must be a Pod dict, got "
                       f"{type(tmpl).__name__}")
            problem = _template_problem(tmpl)
            if problem:
                t.fail(r, "template", f"{problem} (templates[{i}])")
            sources.append((*_template_base(tmpl), f" (templates[{i}])"))
        return ids, sources
    t_ = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
    if not _stringish(t_):
        t.fail(None, "template", "must be an integer column (ids into templates) or a string "
               f"column (a pod spec as JSON), got {col.type}")
    ids, _ = _encode(col.cast(pa.string()), t.n)
    ids, first = _factorize(ids)
    sources = []
    for r in first.tolist():
        text = col[r].as_py()
        try:
            spec = parse_json_document(text)
        except DocumentError as exc:
            path = ".".join(str(p) for p in exc.path)
            t.fail(r, "template", (f"{path}: " if path else "") + exc.problem)
        if not isinstance(spec, dict):
            t.fail(r, "template", "must be the JSON of a pod spec or a Pod (an object)")
        problem = _template_problem(spec)
        if problem:
            t.fail(r, "template", problem)
        sources.append((*_template_base(spec), ""))
    return ids, sources


def _template_group(t: _Table, spec_source, row: int, overrides: dict, name: str):
    ids, sources = spec_source
    top, meta, spec, label = sources[ids[row]]
    spec = dict(spec) if isinstance(spec, dict) else spec
    if isinstance(spec, dict):
        for k, v in overrides.items():
            if v is not None:
                spec[k] = v
    elif any(v is not None for v in overrides.values()):
        spec = {k: v for k, v in overrides.items() if v is not None}  # parse_pod refuses it
    obj = {**top, "metadata": {**meta, "name": name}, "spec": spec}
    try:
        record = parse_pod(obj)
    except ManifestError as exc:
        field = f"{exc.field}: " if exc.field else ""
        t.fail(row, "template", f"{field}{exc.problem}{label}")
    fields = dict(record.__dict__)
    top = {**top, "spec": spec}
    meta = dict(meta)
    return fields, top, meta


_EMPTY_FIELDS = dict(  # noqa: C408 (the PodRecord field names)
    namespace="default", name="", uid="", node_name="", scheduler_name="default-scheduler",
    priority=None, priority_class_name="", preemption_policy="PreemptLowerPriority",
    labels={}, creation_ns=0, start_ns=None, deleting=False, phase="", requests={},
    nonzero_cpu=DEFAULT_MILLI_CPU_REQUEST, nonzero_memory=DEFAULT_MEMORY_REQUEST,
    tolerations=[], node_selector={}, node_affinity=None, pod_affinity=None,
    pod_anti_affinity=None, topology_spread=[], host_ports=[], images=[],
    has_restartable_init=False, scheduling_gates=[], obj={})


def _quantity(resource: str, value: int) -> str:
    return f"{value}m" if resource == "cpu" else str(value)


def _request_base(reqs: dict[str, int], overrides: dict):
    """The record fields, top-level and metadata of a request-columns row."""
    fields = dict(_EMPTY_FIELDS)
    fields["requests"] = reqs
    fields["nonzero_cpu"] = reqs.get("cpu", DEFAULT_MILLI_CPU_REQUEST)
    fields["nonzero_memory"] = reqs.get("memory", DEFAULT_MEMORY_REQUEST)
    spec = {"containers": [{"name": "main", "resources": {
        "requests": {k: _quantity(k, v) for k, v in reqs.items()}}}]}
    if overrides["priority"] is not None:
        spec["priority"] = fields["priority"] = overrides["priority"]
    if overrides["schedulerName"] is not None:
        spec["schedulerName"] = overrides["schedulerName"]
        fields["scheduler_name"] = overrides["schedulerName"] or "default-scheduler"
    if overrides["nodeName"] is not None:
        spec["nodeName"] = fields["node_name"] = overrides["nodeName"]
    return fields, {"apiVersion": "v1", "kind": "Pod", "spec": spec}, {}


def _creation(t: _Table) -> tuple[list, list | None]:
    """(creation ns per row (0 when null), RFC3339 text per row (None when null)),
    ([0]*n, None) without the column."""
    col = t.column("creation_time")
    if col is None:
        return [0] * t.n, None
    typ = col.type
    if pa.types.is_timestamp(typ):
        factor = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[typ.unit]
        raw = col.cast(pa.int64())
    elif pa.types.is_integer(typ):
        factor = 1
        raw = col
        big = pc.and_(_compared(pc.greater, col, INT64_MAX), col.is_valid())
        if pc.any(big).as_py():
            row = _first(big)
            t.fail(row, "creation_time", f"out of range (ns since the epoch), got {col[row].as_py()}")
        raw = col.cast(pa.int64())
    else:
        t.fail(None, "creation_time", "must be a timestamp column or integer ns since the "
               f"epoch, got {typ}")
    nulls = raw.is_null().to_numpy(zero_copy_only=False)
    values = pc.fill_null(raw, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    if factor > 1:
        limit = INT64_MAX // factor
        bad = (np.abs(values) > limit) & ~nulls
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            t.fail(row, "creation_time", f"out of range for nanoseconds, got {col[row].as_py()}")
        values = values * factor
    texts = _rfc3339(values)
    if nulls.any():
        for r in np.flatnonzero(nulls).tolist():
            texts[r] = None
    return values.tolist(), texts


def read_pods_table(table, templates=None, *, source: str | None = None,
                    columns: bool = False) -> list[PodRecord] | PodColumns:
    """One PodRecord per row of an Arrow table (or record batch), in row
    order; see the module doc for the columns.  ``source`` (a file name)
    starts every error message.  ``columns``: the rows as
    :class:`~.pod_columns.PodColumns` instead (one class per group, a
    record built only on request), equal row for row."""
    args = Arguments("read_pods_table")
    templates = args.sequence("templates", templates, item="a pod spec", items="pod specs",
                              optional=True)
    args.flag("columns", columns)
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if not isinstance(table, pa.Table):
        raise ManifestError(source or "pods table", "",
                            f"expected a pyarrow.Table, got {type(table).__name__}")
    t = _Table(table, source)
    groups = _pod_groups(t, templates)
    creation_ns, texts = _creation(t)
    finals = groups["finals"]
    names = groups["names"]
    gids = groups["final_ids"].tolist()
    # Millions of new acyclic objects: the cyclic GC's passes over them
    # (quadratic in effect) would take 3/4 of the time.
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        if columns:
            return _columns(finals, names, gids, creation_ns, texts)
        return _records(finals, names, gids, creation_ns, texts)
    finally:
        if gc_was_on:
            gc.enable()


def _row_objects(finals, names, gids, texts) -> tuple[list[str], list[dict]]:
    """Each row's key and object (its group's equivalent manifest with the
    row's name and creation timestamp)."""
    keys, objs = [], []
    kappend, oappend = keys.append, objs.append
    for name, g, text in zip(names, gids, texts if texts is not None else repeat(None)):
        fields, top, meta = finals[g]
        m = meta.copy()
        m["name"] = name
        if text is not None:
            m["creationTimestamp"] = text
        obj = top.copy()
        obj["metadata"] = m
        oappend(obj)
        kappend(f"{fields['namespace']}/{name}")
    return keys, objs


def _records(finals, names, gids, creation_ns, texts) -> list[PodRecord]:
    # Rows of one group share their memo as they share the fields it is
    # derived from (query signature, compiled terms; none reads the name or
    # the creation time): a trace of a few shapes signs each shape once.
    keys, objs = _row_objects(finals, names, gids, texts)
    memos: dict = {}
    out = []
    append = out.append
    new = _NEW
    cls = PodRecord
    for name, g, key, obj, ns in zip(names, gids, keys, objs,
                                     creation_ns if texts is not None else repeat(None)):
        f = finals[g][0].copy()
        f["name"] = name
        f["key"] = key
        if ns is not None:
            f["creation_ns"] = ns
        f["obj"] = obj
        f["pod_class"] = memos.setdefault(g, PodClass())
        r = new(cls)
        r.__dict__ = f
        append(r)
    return out


def _columns(finals, names, gids, creation_ns, texts) -> PodColumns:
    """``_records`` as columns: each group's class is the record of its
    first row; every row gets its key, creation time and object."""
    gid = np.asarray(gids, np.int64)
    used, first, inverse = np.unique(gid, return_index=True, return_inverse=True)
    at = first.tolist()
    protos = _records(finals, [names[i] for i in at], used.tolist(),
                      [creation_ns[i] for i in at] if texts is not None else None,
                      [texts[i] for i in at] if texts is not None else None)
    keys, objs = _row_objects(finals, names, gids, texts)
    if texts is not None:
        born = np.asarray(creation_ns, np.int64)
    else:
        born = np.array([p.creation_ns or 0 for p in protos], np.int64)[inverse]
    extras = {}
    for c, proto in enumerate(protos):
        extra = extras_of(proto)
        if extra != NO_EXTRAS:
            extras.update(dict.fromkeys(np.flatnonzero(inverse == c).tolist(), extra))
    return PodColumns(keys, inverse.astype(np.int32), protos, born, objs, extras)


def read_pods_parquet(path, templates=None, *, columns: bool = False
                      ) -> list[PodRecord] | PodColumns:
    """:func:`read_pods_table` of a Parquet file; errors start with its path."""
    args = Arguments("read_pods_parquet")
    source = args.path("path", path)
    args.sequence("templates", templates, item="a pod spec", items="pod specs", optional=True)
    args.flag("columns", columns)
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise ManifestError(source, "", f"cannot read Parquet file: {exc}") from None
    return read_pods_table(table, templates, source=source, columns=columns)
