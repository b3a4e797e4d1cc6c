"""ClusterState <-> Arrow tables / Parquet (framework/arrow_io.py): the round
trip is exact (columns, rows including free rows, dictionaries, records) and
the tables are usable for analytics."""

from __future__ import annotations

import json
import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from support.records import node, pod

from tensorsched.framework.parsing.manifests import parse_node, parse_pod
from tensorsched.framework.records.records import NodeImage, Taint
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.state.arrow_io import (
    FORMAT,
    FORMAT_VERSION,
    TABLES,
    ArrowFormatError,
    read_parquet,
    state_from_arrow,
    state_to_arrow,
    write_parquet,
)
from tensorsched.framework.state.cluster_state import ClusterState

Mi = 1024 * 1024
Gi = 1024 * Mi
GPU = "nvidia.com/gpu"

COLUMNS = ("allocatable", "requested", "nonzero_requested", "unschedulable", "valid",
           "label_vals", "label_nums", "label_isnum", "taint_bits", "image_bits", "port_bits")


# --------------------------------------------------------------------------
# fixtures

def node_obj(name, zone, cpu="8", mem="32Gi", gpu=None, taints=(), images=(), labels=None,
             unschedulable=False):
    alloc = {"cpu": cpu, "memory": mem, "pods": "110", "ephemeral-storage": "100Gi"}
    if gpu is not None:
        alloc[GPU] = str(gpu)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                              "topology.kubernetes.io/zone": zone,
                                              **(labels or {})},
                     "annotations": {"note": "ünïcode ✓"},
                     "creationTimestamp": "2024-03-01T10:00:00Z"},
        "spec": {"unschedulable": unschedulable,
                 "taints": [{"key": k, "value": v, "effect": e} for k, v, e in taints]},
        "status": {"capacity": {**alloc, "cpu": "9"}, "allocatable": alloc,
                   "images": [{"names": list(n), "sizeBytes": s} for n, s in images]},
    }


def pod_obj(name, node_name, cpu="500m", mem="1Gi", gpu=None, host_port=None, ns="default",
            priority=None, extra_spec=None):
    limits = {GPU: str(gpu)} if gpu else {}
    container = {"name": "main", "image": f"registry/{name}:v1",
                 "resources": {"requests": {"cpu": cpu, "memory": mem}, "limits": limits}}
    if host_port:
        container["ports"] = [{"containerPort": 8080, "hostPort": host_port, "protocol": "TCP"}]
    spec = {"nodeName": node_name, "containers": [container],
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu",
                             "effect": "NoSchedule"}, {"operator": "Exists"}],
            **(extra_spec or {})}
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}",
                     "labels": {"app": name.split("-")[0], "tier": "web"},
                     "creationTimestamp": "2024-03-01T10:00:00.123456789Z"},
        "spec": spec,
        "status": {"phase": "Running", "startTime": "2024-03-01T10:00:05Z"},
    }


AFFINITY = {
    "affinity": {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a", "b"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "preference": {"matchExpressions": [
                    {"key": "gen", "operator": "Gt", "values": ["3"]}]}}]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}},
             "topologyKey": "kubernetes.io/hostname"}]},
    },
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                   "whenUnsatisfiable": "DoNotSchedule",
                                   "labelSelector": {"matchLabels": {"app": "db"}}}],
    "nodeSelector": {"disk": "ssd"},
    "schedulingGates": [],
}


def rich_state() -> ClusterState:
    """Deleted nodes (free rows, the last row among them), extended
    resources, taints, images, ports, assumed pods, updates."""
    s = ClusterState(node_capacity=2)
    objs = [
        node_obj("w0", "a", gpu=8, taints=[("dedicated", "gpu", "NoSchedule")],
                 images=[(("nginx:1.25", "docker.io/nginx@sha256:1"), 60 * Mi)],
                 labels={"gen": "5", "disk": "ssd"}),
        node_obj("w1", "a", images=[(("redis:7",), 40 * Mi)], labels={"gen": "old"}),
        node_obj("w2", "b", gpu=4, taints=[("maintenance", "", "NoExecute")]),
        node_obj("w3", "b", images=[(("nginx:1.25",), 60 * Mi)], unschedulable=True),
        node_obj("w4", "c", labels={"big": "99999999999999999999"}),
        node_obj("w5", "c", mem="64Gi"),
    ]
    for o in objs:
        s.add_node(parse_node(o))
    s.add_node(node("plain", extra={"example.com/fpga": 2, "hugepages-2Mi": 4 * Mi},
                    taints=[Taint("t", "", "PreferNoSchedule")],
                    images=[NodeImage(("busybox",), 1)]))
    s.add_pod(parse_pod(pod_obj("web-1", "w0", gpu=2, host_port=80, priority=1000)))
    s.add_pod(parse_pod(pod_obj("web-2", "w0", host_port=80)))
    s.add_pod(parse_pod(pod_obj("db-1", "w2", gpu=1, host_port=5432, extra_spec=AFFINITY)))
    s.add_pod(parse_pod(pod_obj("db-2", "w5", cpu="0", mem="0", ns="prod")))
    s.add_pod(parse_pod(pod_obj("gone-1", "w1")))
    s.add_pod(parse_pod(pod_obj("gone-2", "w5", host_port=9090)))
    s.add_pod(parse_pod(pod_obj("late", "")), node_name="w4")   # assumed, no spec.nodeName
    s.add_pod(pod("fpga", "plain", extra={"example.com/fpga": 1}, ports=[("UDP", "10.0.0.1", 53)]))
    s.remove_node("w1")                                  # free row 1
    s.remove_node("plain")                               # free last row (6)
    s.remove_node("w3")                                  # free row 3
    s.remove_pod("default/web-2")
    s.update_node(parse_node(node_obj("w2", "b", gpu=4, labels={"gen": "7"})))
    s.update_pod(parse_pod(pod_obj("web-1", "w0", cpu="2", gpu=3, host_port=80, priority=1000)))
    s.add_node(parse_node(node_obj("w6", "d")))          # reuses row 3
    assert s.free_rows == [1, 6] and s.n_rows == 7
    return s


def assert_states_equal(a: ClusterState, b: ClusterState) -> None:
    ca, cb = a.columns(), b.columns()
    for name in COLUMNS:
        x, y = getattr(ca, name), getattr(cb, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert a.n_rows == b.n_rows
    assert a.node_rows == b.node_rows
    assert list(a.node_rows) == list(b.node_rows)          # insertion order too
    assert a.free_rows == b.free_rows
    assert a.nodes[: a.n_rows] == b.nodes[: b.n_rows]
    for rec_a, rec_b in zip(a.nodes[: a.n_rows], b.nodes[: b.n_rows]):
        if rec_a is not None:
            assert rec_a.obj == rec_b.obj
    assert a.resources.names == b.resources.names
    assert a.resources.index == b.resources.index
    assert a.label_keys.items == b.label_keys.items
    assert [d.items for d in a.label_values] == [d.items for d in b.label_values]
    assert a.taints.items == b.taints.items
    assert a.images.items == b.images.items
    assert a.ports.items == b.ports.items
    assert a.image_name_nodes == b.image_name_nodes
    assert list(a.pods) == list(b.pods)
    for key, ea in a.pods.items():
        eb = b.pods[key]
        assert ea.record == eb.record, key
        assert ea.record.obj == eb.record.obj, key
        assert ea.node_row == eb.node_row
        r = len(a.resources)
        pa_, pb = np.zeros(r, np.int64), np.zeros(r, np.int64)
        pa_[: ea.request.shape[0]] = ea.request
        pb[: eb.request.shape[0]] = eb.request
        np.testing.assert_array_equal(pa_, pb)
        assert ea.nonzero == eb.nonzero and ea.port_ids == eb.port_ids
    assert a.pods_on_node[: a.n_rows] == b.pods_on_node[: b.n_rows]
    assert a.port_counts[: a.n_rows] == b.port_counts[: b.n_rows]
    np.testing.assert_array_equal(a.valid_rows(), b.valid_rows())


# --------------------------------------------------------------------------
# round trips

def test_arrow_round_trip_is_exact():
    s = rich_state()
    tables = state_to_arrow(s)
    assert set(tables) == set(TABLES)
    back = state_from_arrow(tables)
    assert_states_equal(s, back)
    # and again (a round trip of a round trip)
    assert_states_equal(s, state_from_arrow(state_to_arrow(back)))


def test_parquet_round_trip_is_exact(tmp_path):
    s = rich_state()
    paths = write_parquet(s, tmp_path / "snap")
    assert sorted(p.name for p in (tmp_path / "snap").iterdir()) == sorted(
        f"{t}.parquet" for t in TABLES)
    assert set(paths) == set(TABLES)
    back = read_parquet(tmp_path / "snap")
    assert_states_equal(s, back)
    meta = pq.read_schema(tmp_path / "snap" / "nodes.parquet").metadata
    assert meta[b"tensorsched.format_version"] == str(FORMAT_VERSION).encode()


def test_restored_state_behaves_like_the_original():
    s = rich_state()
    back = state_from_arrow(state_to_arrow(s))
    for st_ in (s, back):                           # same free-row reuse, same ids
        assert st_.add_node(node("x", labels={"zone": "new"})) == 6
        assert st_.add_node(node("y")) == 1
        assert st_.add_node(node("z")) == 7
        st_.add_pod(pod("p", "x", ports=[80], extra={GPU: 1}))
        st_.remove_node("w0")
        st_.update_pod(pod("p", "y", cpu=5))
    assert_states_equal(s, back)


def test_restored_state_reports_table_growth():
    # a new label value / port in the restored state bumps the epoch (query
    # caches depend on it) exactly as in the original
    s = rich_state()
    back = state_from_arrow(state_to_arrow(s))
    for st_ in (s, back):
        st_.add_pod(pod("warm", "w0"))                 # settle pending growth
    deltas = []
    for st_ in (s, back):
        e = st_.epoch
        st_.add_pod(pod("np", "w0", ports=[12345]))    # new port entry
        st_.update_node(parse_node(node_obj("w4", "c", labels={"gen": "brand-new"})))
        deltas.append(st_.epoch - e)
    assert deltas[0] == deltas[1] == 3
    assert_states_equal(s, back)


def test_empty_state_round_trip(tmp_path):
    s = ClusterState()
    assert_states_equal(s, state_from_arrow(state_to_arrow(s)))
    write_parquet(s, tmp_path)
    assert_states_equal(s, read_parquet(tmp_path))
    # every node deleted: only free rows
    s.add_node(node("a"))
    s.add_node(node("b"))
    s.remove_node("a")
    s.remove_node("b")
    back = state_from_arrow(state_to_arrow(s))
    assert_states_equal(s, back)
    assert back.free_rows == [0, 1] and back.n_rows == 2 and back.num_nodes == 0


def test_built_cluster_round_trip(tmp_path):
    objects = [node_obj(f"n{i}", "ab"[i % 2], gpu=i or None) for i in range(5)]
    objects += [pod_obj(f"app-{i}", f"n{i % 5}", gpu=1 if i % 5 else None,
                        host_port=8000 + i % 3) for i in range(12)]
    objects.append(pod_obj("pending", ""))
    state = build_cluster(objects).state
    write_parquet(state, tmp_path)
    assert_states_equal(state, read_parquet(tmp_path))


@pytest.mark.parametrize("seed", range(12))
def test_random_histories_round_trip(seed, tmp_path):
    rng = random.Random(seed)
    s = ClusterState(node_capacity=rng.randint(1, 4))
    names = [f"n{i}" for i in range(8)]
    for step in range(rng.randint(10, 80)):
        live = list(s.node_rows)
        op = rng.random()
        if op < 0.3 or not live:
            name = rng.choice(names)
            rec = node(name, cpu=rng.randint(0, 9000),
                       labels={rng.choice("abc"): str(rng.randint(-5, 5)),
                               "h": rng.choice(["x", "y"])},
                       taints=[Taint(rng.choice("kl"), "", "NoSchedule")] * rng.randint(0, 1),
                       images=[NodeImage((f"img{rng.randint(0, 4)}",), rng.randint(1, 3))],
                       extra={f"ex.com/r{rng.randint(0, 3)}": rng.randint(0, 5)})
            (s.update_node if name in s.node_rows else s.add_node)(rec)
        elif op < 0.45:
            s.remove_node(rng.choice(live))
        elif op < 0.85:
            p = pod(f"p{step}", rng.choice(live), cpu=rng.randint(0, 900),
                    ns=rng.choice(["a", "b"]), ports=rng.sample([80, 443, 53], rng.randint(0, 2)),
                    extra={f"ex.com/r{rng.randint(0, 5)}": 1}, priority=rng.choice([None, 7]))
            s.add_pod(p)
        elif s.pods:
            key = rng.choice(sorted(s.pods))
            if rng.random() < 0.5:
                s.remove_pod(key)
            else:
                old = s.pods[key].record
                s.update_pod(pod(old.name, rng.choice(live), ns=old.namespace, cpu=1))
    assert_states_equal(s, state_from_arrow(state_to_arrow(s)))
    write_parquet(s, tmp_path)
    assert_states_equal(s, read_parquet(tmp_path))


# --------------------------------------------------------------------------
# the tables

def test_nodes_table_has_documented_columns():
    s = rich_state()
    t = state_to_arrow(s)["nodes"]
    schema = t.schema
    for name, type_ in [
        ("name", pa.string()), ("row", pa.int64()),
        ("labels", pa.map_(pa.string(), pa.string())), ("unschedulable", pa.bool_()),
        ("taints", pa.list_(pa.struct([("key", pa.string()), ("value", pa.string()),
                                       ("effect", pa.string())]))),
        ("images", pa.list_(pa.struct([("names", pa.list_(pa.string())),
                                       ("size_bytes", pa.int64())]))),
        ("object", pa.string()),
    ]:
        assert schema.field(name).type.equals(type_), name
    for res in s.resources.names:
        assert schema.field(f"allocatable.{res}").type == pa.int64()
        assert schema.field(f"requested.{res}").type == pa.int64()
    assert {"allocatable.nvidia.com/gpu", "allocatable.example.com/fpga",
            "requested.hugepages-2Mi"} <= set(t.column_names)

    rows = {r["name"]: r for r in t.to_pylist()}
    assert list(rows) == list(s.node_rows)           # live nodes only
    w0 = rows["w0"]
    assert w0["row"] == 0
    assert dict(w0["labels"])["topology.kubernetes.io/zone"] == "a"
    assert w0["taints"] == [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    assert w0["images"] == [{"names": ["nginx:1.25", "docker.io/nginx@sha256:1"],
                             "size_bytes": 60 * Mi}]
    assert w0["allocatable.nvidia.com/gpu"] == 8 and w0["requested.nvidia.com/gpu"] == 3
    assert w0["allocatable.cpu"] == 8000 and w0["requested.cpu"] == 2000
    assert w0["requested.pods"] == 1
    assert rows["w6"]["row"] == 3 and rows["w4"]["allocatable.nvidia.com/gpu"] == 0
    assert json.loads(w0["object"])["metadata"]["annotations"]["note"] == "ünïcode ✓"
    meta = schema.metadata
    assert meta[b"tensorsched.format"] == FORMAT.encode()
    assert meta[b"tensorsched.format_version"] == str(FORMAT_VERSION).encode()
    assert json.loads(meta[b"tensorsched.free_rows"]) == [1, 6]
    assert int(meta[b"tensorsched.n_rows"]) == 7


def test_every_table_carries_the_format_version():
    for name, t in state_to_arrow(rich_state()).items():
        assert t.schema.metadata[b"tensorsched.format_version"] == str(FORMAT_VERSION).encode()
        assert t.schema.metadata[b"tensorsched.table"] == name.encode()


def test_pods_table_supports_analytics():
    s = rich_state()
    tables = state_to_arrow(s)
    pods, nodes = tables["pods"], tables["nodes"]
    for col in ("namespace", "name", "uid", "node", "priority", "creation_ns", "start_ns",
                "nonzero_cpu", "nonzero_memory", "labels", "request.cpu",
                "request.nvidia.com/gpu", "object"):
        assert col in pods.column_names, col
    by_key = {f"{r['namespace']}/{r['name']}": r for r in pods.to_pylist()}
    assert list(by_key) == list(s.pods)
    late = by_key["default/late"]
    assert late["node"] == "w4" and late["node_name"] == ""
    assert by_key["default/web-1"]["priority"] == 1000
    assert by_key["prod/db-2"]["priority"] is None
    assert by_key["default/db-1"]["creation_ns"] == 1709287200_123456789
    assert by_key["default/db-1"]["start_ns"] == 1709287205_000000000
    assert by_key["prod/db-2"]["nonzero_cpu"] == 0          # explicit 0 is not defaulted
    assert json.loads(by_key["default/db-1"]["topology_spread"])[0]["maxSkew"] == 1

    # sum of pod requests per node == the node's requested columns
    grouped = pods.group_by("node").aggregate(
        [(f"request.{r}", "sum") for r in s.resources.names])
    sums = {row["node"]: row for row in grouped.to_pylist()}
    for row in nodes.to_pylist():
        for r in s.resources.names:
            got = sums.get(row["name"], {}).get(f"request.{r}_sum") or 0
            assert got == row[f"requested.{r}"], (row["name"], r)
    # free capacity of GPU nodes, with Arrow compute
    free = pc.subtract(nodes["allocatable.nvidia.com/gpu"], nodes["requested.nvidia.com/gpu"])
    assert dict(zip(nodes["name"].to_pylist(), free.to_pylist()))["w0"] == 5


def test_dictionary_tables_keep_entries_of_deleted_nodes():
    s = rich_state()
    t = state_to_arrow(s)
    assert t["resources"].column("name").to_pylist() == s.resources.names
    assert ("redis:7", 40 * Mi) in [(r["name"], r["size_bytes"]) for r in t["images"].to_pylist()]
    keys = t["label_keys"].to_pylist()
    assert keys[0]["key"] == "#metadata.name" and "w1" in keys[0]["values"]
    assert [r["port"] for r in t["ports"].to_pylist()] == [p[2] for p in s.ports.items]


# --------------------------------------------------------------------------
# errors

@pytest.mark.parametrize("table,column", [
    ("nodes", "labels"), ("nodes", "row"), ("nodes", "allocatable.cpu"),
    ("nodes", "allocatable.nvidia.com/gpu"), ("nodes", "object"),
    ("pods", "node"), ("pods", "requests"), ("pods", "tolerations"),
    ("resources", "name"), ("label_keys", "values"), ("taints", "effect"),
    ("images", "size_bytes"), ("ports", "port"),
])
def test_missing_required_column_names_table_and_column(table, column):
    tables = state_to_arrow(rich_state())
    t = tables[table]
    tables[table] = t.drop_columns([column]).replace_schema_metadata(t.schema.metadata)
    with pytest.raises(ArrowFormatError) as exc:
        state_from_arrow(tables)
    assert exc.value.table == table and exc.value.column == column
    assert table in str(exc.value) and repr(column) in str(exc.value)
    assert "missing" in str(exc.value)


def test_missing_column_in_parquet_file(tmp_path):
    write_parquet(rich_state(), tmp_path)
    t = pq.read_table(tmp_path / "pods.parquet")
    pq.write_table(t.drop_columns(["namespace"]), tmp_path / "pods.parquet")
    with pytest.raises(ArrowFormatError, match=r"pods table, column 'namespace'"):
        read_parquet(tmp_path)


def test_optional_derived_columns_may_be_dropped():
    s = rich_state()
    tables = state_to_arrow(s)
    derived = [c for c in tables["nodes"].column_names if c.startswith(("requested.", "nonzero_"))]
    tables["nodes"] = tables["nodes"].drop_columns(derived)
    tables["pods"] = tables["pods"].drop_columns(
        [c for c in tables["pods"].column_names if c.startswith("request.")])
    assert_states_equal(s, state_from_arrow(tables))


def test_missing_table_and_missing_file(tmp_path):
    tables = state_to_arrow(rich_state())
    del tables["taints"]
    with pytest.raises(ArrowFormatError, match="taints table: table is missing"):
        state_from_arrow(tables)
    write_parquet(rich_state(), tmp_path)
    (tmp_path / "ports.parquet").unlink()
    with pytest.raises(ArrowFormatError, match="ports table.*ports.parquet"):
        read_parquet(tmp_path)


def test_format_version_is_checked():
    tables = state_to_arrow(rich_state())
    meta = dict(tables["pods"].schema.metadata)
    meta[b"tensorsched.format_version"] = b"99"
    tables["pods"] = tables["pods"].replace_schema_metadata(meta)
    with pytest.raises(ArrowFormatError, match="pods table: format version 99"):
        state_from_arrow(tables)
    tables = state_to_arrow(rich_state())
    tables["images"] = tables["images"].replace_schema_metadata(None)
    with pytest.raises(ArrowFormatError, match="images table: .*format_version"):
        state_from_arrow(tables)


def test_inconsistent_tables_are_refused():
    s = rich_state()
    # requested column that does not match the pods
    tables = state_to_arrow(s)
    t = tables["nodes"]
    i = t.schema.get_field_index("requested.cpu")
    tables["nodes"] = t.set_column(i, "requested.cpu", pc.add(t["requested.cpu"], 1))
    with pytest.raises(ArrowFormatError, match=r"nodes table, column 'requested.cpu': node 'w0'"):
        state_from_arrow(tables)
    # a pod on a node that is not there
    tables = state_to_arrow(s)
    t = tables["pods"]
    i = t.schema.get_field_index("node")
    tables["pods"] = t.set_column(i, "node", pa.array(["ghost"] * t.num_rows))
    with pytest.raises(ArrowFormatError, match=r"pods table, column 'node'.*ghost"):
        state_from_arrow(tables)
    # rows that collide with a free row
    tables = state_to_arrow(s)
    t = tables["nodes"]
    i = t.schema.get_field_index("row")
    tables["nodes"] = t.set_column(i, "row", pa.array([1] + t["row"].to_pylist()[1:], pa.int64()))
    with pytest.raises(ArrowFormatError, match=r"nodes table, column 'row'"):
        state_from_arrow(tables)
    # a column of the wrong type
    tables = state_to_arrow(s)
    t = tables["nodes"]
    i = t.schema.get_field_index("labels")
    tables["nodes"] = t.set_column(i, "labels", pa.array(["x"] * t.num_rows))
    with pytest.raises(ArrowFormatError, match=r"nodes table, column 'labels': has type string"):
        state_from_arrow(tables)
    # a taint a node uses is missing from the taint table
    tables = state_to_arrow(s)
    tables["taints"] = tables["taints"].slice(0, 0)
    with pytest.raises(ArrowFormatError, match="taints table"):
        state_from_arrow(tables)
