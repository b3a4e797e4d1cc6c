"""Pods from Arrow tables / Parquet files (framework/parsing/pod_tables.py):
every record equals parse_pod of the row's equivalent manifest."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.parsing.meta import is_label_value, is_qualified_name
from tensorsched.framework.parsing.pod_tables import read_pods_parquet, read_pods_table

Mi = 1024 * 1024
LABELS = pa.map_(pa.string(), pa.string())
T0 = 1_714_557_600 * 10**9          # 2024-05-01T10:00:00Z


def _stamp(ns):
    secs, frac = divmod(ns, 10**9)
    import datetime
    dt = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=secs)
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"


def expected_manifest(row: dict, template: dict | None = None) -> dict:
    """The equivalent manifest of a row, as the module doc words it."""
    if template is None:
        reqs = {k: (f"{v}m" if k == "cpu" else str(v)) for k, v in row.items()
                if k in ("cpu", "memory", "nvidia.com/gpu") and v is not None}
        obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {},
               "spec": {"containers": [{"name": "main", "resources": {"requests": reqs}}]}}
    else:
        obj = {"apiVersion": "v1", "kind": "Pod"}
        obj.update((k, v) for k, v in template.items() if k not in ("status", "metadata", "spec"))
        obj["metadata"] = {k: v for k, v in template.get("metadata", {}).items()
                           if k not in ("name", "uid", "creationTimestamp",
                                        "deletionTimestamp", "resourceVersion")}
        obj["spec"] = {k: v for k, v in template["spec"].items() if k != "nodeName"}
    meta, spec = obj["metadata"], obj["spec"]
    meta["name"] = row["name"]
    for col, key in (("namespace", "namespace"), ("labels", "labels")):
        if row.get(col) is not None:
            meta[key] = dict(row[col]) if col == "labels" else row[col]
    if row.get("creation_time") is not None:
        meta["creationTimestamp"] = _stamp(row["creation_time"])
    for col, key in (("priority", "priority"), ("scheduler_name", "schedulerName"),
                     ("node_name", "nodeName")):
        if row.get(col) is not None:
            spec[key] = row[col]
    return obj


def basic_table(n):
    return pa.table({
        "name": pa.array([f"pod-{i}" for i in range(n)], pa.string()),
        "namespace": pa.array(["default"] * n, pa.string()),
        "cpu": pa.array(np.full(n, 100, np.int64)),
        "memory": pa.array(np.full(n, 500 * Mi, np.int64)),
        "labels": pa.array([[("app", "web")]] * n, LABELS),
        "creation_time": pa.array(T0 + np.arange(n, dtype=np.int64) * 10**6,
                                  pa.timestamp("ns", "UTC")),
    })


def test_basic_shape_from_parquet(tmp_path):
    path = tmp_path / "pods.parquet"
    pq.write_table(basic_table(50), path)
    recs = read_pods_parquet(path)
    assert [r.name for r in recs] == [f"pod-{i}" for i in range(50)]
    for i, r in enumerate(recs):
        row = {"name": f"pod-{i}", "namespace": "default", "cpu": 100, "memory": 500 * Mi,
               "labels": {"app": "web"}, "creation_time": T0 + i * 10**6}
        assert r.obj == expected_manifest(row)
        assert r == parse_pod(expected_manifest(row))
    assert recs[0].requests == {"cpu": 100, "memory": 500 * Mi}
    # one group (same requests and labels): one memo, derived values made once
    assert recs[0].creation_ns == T0 and recs[0].memo is recs[1].memo
    cols = read_pods_parquet(path, columns=True)     # one class, no record per row
    assert len(cols.classes) == 1 and list(cols) == recs


def test_groups_do_not_share_derived_values(tmp_path):
    table = basic_table(4)
    table = table.set_column(table.schema.get_field_index("labels"), "labels",
                             pa.array([[("app", "web")], [("app", "db")]] * 2, LABELS))
    recs = read_pods_table(table)
    assert recs[0].memo is recs[2].memo and recs[0].memo is not recs[1].memo


# label keys and values the API server takes ('-' and '.' inside only)
names = st.text("abc-", min_size=1, max_size=4).filter(is_qualified_name)
label_values = st.text("xy.-", max_size=3).filter(is_label_value)


def maybe(s):
    return st.one_of(st.none(), s)


@st.composite
def tables(draw):
    n = draw(st.integers(1, 8))
    cols = draw(st.sets(st.sampled_from(["namespace", "cpu", "memory", "nvidia.com/gpu", "labels",
                                         "priority", "creation_time", "scheduler_name",
                                         "node_name"])))
    rows = []
    for i in range(n):
        row = {"name": f"p{i}"}
        for c in cols:
            row[c] = draw({
                "namespace": maybe(st.sampled_from(["", "default", "shop"])),
                "cpu": maybe(st.integers(0, 2**63 - 1) | st.sampled_from([0, 100, 250])),
                "memory": maybe(st.integers(0, 2**63 - 1) | st.sampled_from([0, 500 * Mi])),
                "nvidia.com/gpu": maybe(st.integers(0, 8)),
                "labels": maybe(st.dictionaries(names, label_values, max_size=3)),
                "priority": maybe(st.integers(-2**31, 2**31 - 1) | st.sampled_from([0, 7])),
                "creation_time": maybe(st.integers(-2**63, 2**63 - 1) | st.just(T0)),
                "scheduler_name": maybe(st.sampled_from(["", "bin-packer"])),
                "node_name": maybe(st.sampled_from(["", "n1", "n2"])),
            }[c])
        rows.append(row)
    return cols, rows


def _table(cols, rows, extra=None):
    types = {"namespace": pa.string(), "cpu": pa.int64(), "memory": pa.int64(),
             "nvidia.com/gpu": pa.int64(), "priority": pa.int32(),
             "creation_time": pa.int64(), "scheduler_name": pa.string(),
             "node_name": pa.string(), "labels": LABELS, "template": pa.int64()}
    data = {"name": pa.array([r["name"] for r in rows], pa.string())}
    for c in sorted(cols):
        vals = [r[c] for r in rows]
        if c == "labels":
            vals = [None if v is None else list(v.items()) for v in vals]
        data[c] = pa.array(vals, types[c])
    data.update(extra or {})
    return pa.table(data)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_request_rows_equal_parse_pod_of_the_equivalent_manifest(case):
    cols, rows = case
    recs = read_pods_table(_table(cols, rows))
    for row, rec in zip(rows, recs):
        manifest = expected_manifest(row)
        assert rec.obj == manifest
        assert rec == parse_pod(manifest)
    _check_columns(read_pods_table(_table(cols, rows), columns=True), recs)


def _check_columns(got, recs):
    """The columns form equals the records row for row, and its rows share
    memos exactly as the records' rows do."""
    assert list(got) == recs and got.keys == [r.key for r in recs]
    pairs = {(id(r.memo), id(c.memo)) for r, c in zip(recs, got)}
    assert len(pairs) == len({a for a, _ in pairs}) == len({b for _, b in pairs})


TEMPLATES = [
    {"apiVersion": "v1", "kind": "Pod",
     "metadata": {"name": "tmpl", "namespace": "shop", "uid": "u", "labels": {"app": "web"},
                  "ownerReferences": [{"kind": "ReplicaSet", "name": "web"}],
                  "creationTimestamp": "2020-01-01T00:00:00Z"},
     "spec": {"nodeName": "old", "priority": 3,
              "containers": [{"name": "c", "image": "nginx",
                              "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}},
                              "ports": [{"containerPort": 80, "hostPort": 80}]}],
              "tolerations": [{"key": "k", "operator": "Exists"}],
              "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                  "nodeSelectorTerms": [{"matchExpressions": [
                      {"key": "zone", "operator": "In", "values": ["a"]}]}]}}}},
     "status": {"phase": "Running"}},
    {"kind": "Pod", "spec": {"containers": [{"name": "x", "resources": {"limits": {"cpu": "1"}}}],
                             "initContainers": [{"name": "i", "restartPolicy": "Always"}]}},
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.data())
def test_template_rows_equal_parse_pod_of_the_equivalent_manifest(case, data):
    cols, rows = case
    cols = {c for c in cols if c not in ("cpu", "memory", "nvidia.com/gpu")}
    ids = [data.draw(st.integers(0, 1)) for _ in rows]
    form = data.draw(st.sampled_from(["id", "json spec", "json pod"]))
    as_json = form != "id"
    if form == "json spec":
        col = pa.array([json.dumps(TEMPLATES[i]["spec"]) for i in ids])
        templates = [{"apiVersion": "v1", "kind": "Pod", "spec": TEMPLATES[i]["spec"]}
                     for i in range(2)]
    elif form == "json pod":
        # a whole Pod as JSON reads as the same Pod given by id
        col = pa.array([json.dumps(TEMPLATES[i]) for i in ids])
        templates = TEMPLATES
    else:
        col = pa.array(ids, pa.int64())
        templates = TEMPLATES
    recs = read_pods_table(_table(cols, rows, {"template": col}),
                           None if as_json else TEMPLATES)
    for row, i, rec in zip(rows, ids, recs):
        manifest = expected_manifest(row, templates[i])
        assert rec.obj == manifest
        assert rec == parse_pod(manifest)
    _check_columns(read_pods_table(_table(cols, rows, {"template": col}),
                                   None if as_json else TEMPLATES, columns=True), recs)


def _error(table, templates=None, source="pods.parquet"):
    with pytest.raises(ManifestError) as info:
        read_pods_table(table, templates, source=source)
    return str(info.value)


def test_errors_name_file_row_and_column(tmp_path):
    t = basic_table(20)
    cpu = t.column("cpu").to_pylist()
    cpu[17] = -5
    bad = t.set_column(t.schema.get_field_index("cpu"), "cpu", pa.array(cpu, pa.int64()))
    assert _error(bad) == "pods.parquet: row 17: cpu: must be a non-negative integer, got -5"
    path = tmp_path / "pods.parquet"
    pq.write_table(bad, path)
    with pytest.raises(ManifestError, match=rf"^{path}: row 17: cpu: must be a non-negative"):
        read_pods_parquet(path)
    name = t.column("name").to_pylist()
    name[4] = None
    assert _error(t.set_column(0, "name", pa.array(name))) == "pods.parquet: row 4: name: required"
    name[4] = "pod-2"
    assert _error(t.set_column(0, "name", pa.array(name))) == (
        "pods.parquet: row 4: name: duplicate Pod default/pod-2 (row 2 has the same namespace "
        "and name)")
    assert _error(t.append_column("gpu", pa.array([1] * 20))).startswith(
        "pods.parquet: gpu: unknown column")
    assert _error(t.set_column(2, "cpu", pa.array([1.5] * 20))) == (
        "pods.parquet: cpu: must be an integer column, got double")
    labels = [[("app", "web")]] * 20
    labels[6] = [("app", "web"), ("tier", None)]
    assert _error(t.set_column(4, "labels", pa.array(labels, LABELS))) == (
        "pods.parquet: row 6: labels: value of 'tier' must be a string, got null")
    labels[6] = [("app", "web"), ("app", "db")]
    assert _error(t.set_column(4, "labels", pa.array(labels, LABELS))) == (
        "pods.parquet: row 6: labels: duplicate key 'app'")
    prio = pa.array([0] * 19 + [2**40], pa.int64())
    assert _error(t.append_column("priority", prio)) == (
        "pods.parquet: row 19: priority: must be in -2147483648..2147483647, got 1099511627776")
    assert _error(t.append_column("template", pa.array([0] * 20))).startswith(
        "pods.parquet: template: cannot be combined with request columns")
    with pytest.raises(ManifestError, match="cannot read Parquet file"):
        read_pods_parquet(tmp_path / "missing.parquet")


def test_template_errors():
    t = pa.table({"name": ["a", "b", "c"], "template": pa.array([0, 1, 2])})
    assert _error(t, TEMPLATES) == "pods.parquet: row 2: template: no template 2 (2 templates given)"
    assert _error(t, None).startswith("pods.parquet: template: integer template ids need templates")
    bad = [TEMPLATES[0], {"kind": "Pod", "spec": {"containers": [
        {"name": "x", "resources": {"requests": {"cpu": "abc"}}}]}}]
    msg = _error(t.slice(0, 2), bad)
    assert msg.startswith("pods.parquet: row 1: template: spec.containers[0].resources.requests"
                          ".cpu: invalid quantity 'abc'") and msg.endswith(" (templates[1])")
    js = pa.table({"name": ["a", "b"], "template": ['{"containers": []}', '{"containers": [}']})
    assert _error(js).startswith("pods.parquet: row 1: template: invalid JSON")
    js = pa.table({"name": ["a"], "template": ['{"priority": "x"}']})
    assert _error(js, source=None) == "row 0: template: spec.priority: must be an integer, got a string 'x'"


def test_bound_pods_and_empty_table():
    t = pa.table({"name": ["a", "b"], "cpu": pa.array([1, None]), "node_name": ["n1", None]})
    a, b = read_pods_table(t)
    assert (a.node_name, b.node_name, a.requests, b.requests, b.nonzero_cpu) == ("n1", "", {"cpu": 1}, {}, 100)
    assert read_pods_table(basic_table(0)) == []


@pytest.mark.parametrize("column, values, row, words", [
    # a Pod's name is a DNS-1123 subdomain, its namespace a DNS-1123 label
    ("name", ["pod-0", "Pod_1", "pod-2"], 1,
     'name: Invalid value: "Pod_1": a lowercase RFC 1123 subdomain'),
    ("name", ["pod-0", "p" * 254, "pod-2"], 1, "must be no more than 253 characters"),
    ("name", ["pod-0", "pod-1", "pod-2."], 2, "a lowercase RFC 1123 subdomain"),
    ("namespace", ["shop", "shop", "My.Shop"], 2,
     'namespace: Invalid value: "My.Shop": a lowercase RFC 1123 label'),
    ("namespace", ["a" * 64, "shop", "shop"], 0, "must be no more than 63 characters"),
    ("labels", [[("app", "web")], [("bad key", "x")], [("app", "web")]], 1,
     'labels: Invalid value: "bad key": name part must consist of'),
    ("labels", [[("app", "web")], [("app", "web")], [("app", "v" * 64)]], 2,
     'labels.app: Invalid value: "' + "v" * 64 + '": must be no more than 63 characters'),
])
def test_names_namespaces_and_labels_refused_as_the_api_server_does(column, values, row, words):
    t = pa.table({"name": pa.array(["pod-0", "pod-1", "pod-2"], pa.string()),
                  "namespace": pa.array(["shop"] * 3, pa.string()),
                  "cpu": pa.array([100] * 3, pa.int64()),
                  "labels": pa.array([[("app", "web")]] * 3, LABELS)})
    typ = LABELS if column == "labels" else pa.string()
    t = t.set_column(t.schema.get_field_index(column), column, pa.array(values, typ))
    text = _error(t)
    assert text.startswith(f"pods.parquet: row {row}: {column}"), text
    assert words in text
