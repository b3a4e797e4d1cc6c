"""ClusterState behaviour (framework/state.py): columns stay consistent with a
from-scratch rebuild, pod events touch O(1) rows, rows are reused, refused
operations change nothing, ports and image spread are accounted."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.records import node, pod

from tensorsched.framework.errors import StateError
from tensorsched.framework.parsing.manifests import parse_node, parse_pod
from tensorsched.framework.records.records import NodeImage, NodeRecord, PodRecord, Taint
from tensorsched.framework.state.cluster_state import (
    ClusterState,
    _column_max,
    add_pods,
    parse_label_int,
    remove_pods,
)
from tensorsched.framework.state.domain_counts import PodCountIndex
from tensorsched.kernels import layout as L

Mi = 1024 * 1024
Gi = 1024 * Mi
GPU = "nvidia.com/gpu"


# --------------------------------------------------------------------------
# helpers


def snapshot(s: ClusterState) -> dict:
    """Everything a refused operation must leave alone."""
    cols = {k: np.array(v, copy=True) for k, v in s.columns()._asdict().items()}
    return {
        "cols": cols,
        "row_version": s.row_version.copy(),
        "version": s.version,
        "epoch": s.epoch,
        "layout_version": s.layout_version,
        "resources": list(s.resources.names),
        "label_keys": list(s.label_keys.items),
        "label_values": [list(d.items) for d in s.label_values],
        "taints": list(s.taints.items),
        "images": list(s.images.items),
        "ports": list(s.ports.items),
        "image_name_nodes": dict(s.image_name_nodes),
        "node_rows": dict(s.node_rows),
        "free_rows": list(s.free_rows),
        "n_rows": s.n_rows,
        "pods": {k: (e.record, e.node_row) for k, e in s.pods.items()},
        "pods_on_node": [set(x) for x in s.pods_on_node[: s.n_rows]],
        "port_counts": [dict(x) for x in s.port_counts[: s.n_rows]],
    }


def assert_same(before: dict, after: dict) -> None:
    assert before.keys() == after.keys()
    for k in before:
        if k == "cols":
            for name, a in before["cols"].items():
                b = after["cols"][name]
                assert a.shape == b.shape and a.dtype == b.dtype, name
                np.testing.assert_array_equal(a, b, err_msg=name)
        elif k == "row_version":
            np.testing.assert_array_equal(before[k], after[k])
        else:
            assert before[k] == after[k], k


def bits(row_words: np.ndarray) -> set[int]:
    out = set()
    for w, word in enumerate(row_words.tolist()):
        for b in range(64):
            if (word >> b) & 1:
                out.add(w * 64 + b)
    return out


def node_view(s: ClusterState, name: str) -> dict:
    """A node's columns decoded by name (independent of rows and ids)."""
    row = s.node_rows[name]
    res = s.resources.names
    labels = {}
    nums = {}
    for k, key in enumerate(s.label_keys.items):
        v = s.label_vals[row, k]
        if v >= 0:
            labels[key] = s.label_values[k].items[v]
            if s.label_isnum[row, k]:
                nums[key] = int(s.label_nums[row, k])
            else:
                assert s.label_nums[row, k] == 0
    return {
        "valid": bool(s.valid[row]),
        "allocatable": {r: int(s.allocatable[row, i]) for i, r in enumerate(res)
                        if s.allocatable[row, i]},
        "requested": {r: int(s.requested[row, i]) for i, r in enumerate(res)
                      if s.requested[row, i]},
        "nonzero": tuple(s.nonzero_requested[row].tolist()),
        "unschedulable": bool(s.unschedulable[row]),
        "labels": labels,
        "label_nums": nums,
        "taints": {s.taints.items[b] for b in bits(s.taint_bits[row])},
        "images": {s.images.items[b] for b in bits(s.image_bits[row])},
        "ports": {s.ports.items[b] for b in bits(s.port_bits[row])},
        "pods": set(s.pods_on_node[row]),
    }


def free_row_is_clear(s: ClusterState, row: int) -> None:
    assert not s.valid[row]
    assert s.nodes[row] is None
    for a in (s.allocatable, s.requested, s.nonzero_requested, s.label_nums,
              s.taint_bits, s.image_bits, s.port_bits):
        assert not a[row].any()
    assert not s.unschedulable[row] and not s.label_isnum[row].any()
    assert (s.label_vals[row] == -1).all()
    assert not s.pods_on_node[row] and not s.port_counts[row]


# --------------------------------------------------------------------------
# basics

def test_add_node_writes_its_row():
    s = ClusterState()
    rec = node("n1", labels={"zone": "a", "rank": "-7", "big": str(1 << 70)},
               taints=[Taint("dedicated", "gpu", "NoSchedule")],
               images=[NodeImage(("nginx:1", "nginx@sha"), 100 * Mi)], extra={GPU: 4},
               unschedulable=True)
    row = s.add_node(rec)
    assert row == 0 and s.num_nodes == 1 and s.node("n1") is rec
    v = node_view(s, "n1")
    assert v["allocatable"] == {"cpu": 4000, "memory": 8 * Gi, "pods": 110, GPU: 4}
    assert v["labels"] == {"#metadata.name": "n1", "zone": "a", "rank": "-7",
                           "big": str(1 << 70)}
    assert v["label_nums"] == {"rank": -7}            # 2**70 does not fit int64
    assert v["taints"] == {("dedicated", "gpu", "NoSchedule")}
    assert v["images"] == {("nginx:1", 100 * Mi), ("nginx@sha", 100 * Mi)}
    assert v["unschedulable"] and v["valid"]
    assert s.label_vals[row, L.LABEL_KEY_NAME] == s.label_values[0].get("n1")
    assert s.columns().allocatable.shape == (1, 5)


def test_parse_label_int_follows_strconv():
    assert parse_label_int("42") == 42
    assert parse_label_int("+3") == 3
    assert parse_label_int("-9223372036854775808") == -(1 << 63)
    assert parse_label_int("9223372036854775808") is None
    assert parse_label_int("1.5") is None
    assert parse_label_int("") is None
    assert parse_label_int(" 1") is None


def test_pod_requests_are_summed_on_its_node():
    s = ClusterState()
    s.add_node(node("n1", extra={GPU: 8}))
    s.add_node(node("n2"))
    s.add_pod(pod("a", "n1", cpu=250, mem=Gi, extra={GPU: 2}))
    s.add_pod(pod("b", "n1", cpu=0, mem=0))           # best effort: non-zero defaults
    s.add_pod(pod("c", "n2", cpu=500, mem=Gi), node_name="n2")
    v1 = node_view(s, "n1")
    assert v1["requested"] == {"cpu": 250, "memory": Gi, "pods": 2, GPU: 2}
    assert v1["nonzero"] == (250 + L.DEFAULT_MILLI_CPU_REQUEST, Gi + L.DEFAULT_MEMORY_REQUEST)
    assert v1["pods"] == {"default/a", "default/b"}
    assert s.pods_on("n1") == [s.pods["default/a"].record, s.pods["default/b"].record]
    s.remove_pod("default/a")
    v1 = node_view(s, "n1")
    assert v1["requested"] == {"pods": 1}
    assert v1["nonzero"] == (L.DEFAULT_MILLI_CPU_REQUEST, L.DEFAULT_MEMORY_REQUEST)


def test_explicit_node_overrides_spec_node_name():
    s = ClusterState()
    s.add_node(node("n1"))
    s.add_node(node("n2"))
    s.add_pod(pod("p", "n1"), node_name="n2")         # assumed on n2
    assert s.pods["default/p"].node_row == s.node_rows["n2"]
    assert node_view(s, "n1")["requested"] == {}


def test_update_pod_moves_and_resizes_atomically():
    s = ClusterState()
    s.add_node(node("n1"))
    s.add_node(node("n2"))
    s.add_pod(pod("p", "n1", cpu=100, ports=[80]))
    s.update_pod(pod("p", "n2", cpu=300, ports=[81]))
    assert node_view(s, "n1")["requested"] == {}
    assert node_view(s, "n1")["ports"] == set()
    assert node_view(s, "n2")["requested"] == {"cpu": 300, "memory": 128 * Mi, "pods": 1}
    assert node_view(s, "n2")["ports"] == {("TCP", "0.0.0.0", 81)}
    # no node in the record and none given: stays where it is
    s.update_pod(pod("p", "", cpu=50))
    assert s.pods["default/p"].node_row == s.node_rows["n2"]
    assert node_view(s, "n2")["requested"]["cpu"] == 50


def test_update_node_keeps_usage_and_rewrites_spec():
    s = ClusterState()
    s.add_node(node("n1", labels={"zone": "a"}, taints=[Taint("k", "v", "NoSchedule")]))
    s.add_pod(pod("p", "n1", cpu=700, ports=[8080]))
    row = s.update_node(node("n1", cpu=8000, labels={"disk": "ssd"}, unschedulable=True))
    assert row == 0
    v = node_view(s, "n1")
    assert v["allocatable"]["cpu"] == 8000
    assert v["requested"] == {"cpu": 700, "memory": 128 * Mi, "pods": 1}
    assert v["labels"] == {"#metadata.name": "n1", "disk": "ssd"}
    assert v["taints"] == set() and v["unschedulable"]
    assert v["ports"] == {("TCP", "0.0.0.0", 8080)}
    assert v["pods"] == {"default/p"}


def test_remove_node_removes_its_pods_and_clears_the_row():
    s = ClusterState()
    s.add_node(node("n1", images=[NodeImage(("img",), 10)]))
    s.add_node(node("n2"))
    s.add_pod(pod("a", "n1", ports=[80]))
    s.add_pod(pod("b", "n1"))
    s.add_pod(pod("c", "n2"))
    s.remove_node("n1")
    assert set(s.pods) == {"default/c"}
    assert s.num_nodes == 1 and s.free_rows == [0] and s.n_rows == 2
    free_row_is_clear(s, 0)
    assert s.node_name(0) == "<free row 0>"
    assert s.image_name_nodes == {}
    assert s.valid_rows().tolist() == [1]
    cols = s.columns()
    assert cols.valid.tolist() == [False, True]


def test_node_names_follow_rows_through_growth_removal_and_reuse():
    s = ClusterState(node_capacity=2)
    for i in range(5):                      # past the capacity: the rows grow
        s.add_node(node(f"n{i}"))
    s.remove_node("n1")
    s.update_node(node("n3", cpu=9000))
    s.add_node(node("m"))                   # takes the freed row
    want = [s.nodes[r].name if s.nodes[r] is not None else None
            for r in range(s.node_names.shape[0])]
    assert s.node_names.tolist() == want
    assert s.node_names[s.node_rows["m"]] == "m" and s.node_rows["m"] == 1
    s.remove_node("n4")
    assert s.node_names[4] is None


# --------------------------------------------------------------------------
# O(1) rows

def test_pod_add_touches_one_row_without_reallocation():
    s = ClusterState(node_capacity=8)
    for i in range(6):
        s.add_node(node(f"n{i}", extra={GPU: 4}))
    # intern the port and resources first so capacity suffices
    s.add_pod(pod("warm", "n0", ports=[80], extra={GPU: 1}))
    arrays = {name: getattr(s, name) for name in (
        "allocatable", "requested", "nonzero_requested", "unschedulable", "valid",
        "label_vals", "label_nums", "label_isnum", "taint_bits", "image_bits", "port_bits",
        "row_version")}
    layout, epoch = s.layout_version, s.epoch
    cols_before = {k: v.copy() for k, v in s.columns()._asdict().items()}
    rv = s.row_version.copy()

    row = s.add_pod(pod("p", "n3", cpu=300, ports=[80], extra={GPU: 2}))
    assert row == 3
    assert np.flatnonzero(rv != s.row_version).tolist() == [3]
    assert s.row_version[3] == s.version
    for name, a in arrays.items():
        assert getattr(s, name) is a, f"{name} was reallocated"
    assert s.layout_version == layout and s.epoch == epoch
    # only row 3 changed in any column
    for name, before in cols_before.items():
        after = getattr(s.columns(), name)
        diff = np.flatnonzero((before != after).reshape(before.shape[0], -1).any(axis=1))
        assert set(diff.tolist()) <= {3}, name

    rv = s.row_version.copy()
    s.remove_pod("default/p")
    assert np.flatnonzero(rv != s.row_version).tolist() == [3]
    for name, a in arrays.items():
        assert getattr(s, name) is a
    for name, before in cols_before.items():
        np.testing.assert_array_equal(before, getattr(s.columns(), name), err_msg=name)

    rv = s.row_version.copy()
    s.add_pod(pod("q", "n2"))
    s.update_pod(pod("q", "n2", cpu=900))
    assert np.flatnonzero(rv != s.row_version).tolist() == [2]


def test_pod_move_touches_two_rows():
    s = ClusterState(node_capacity=4)
    for i in range(4):
        s.add_node(node(f"n{i}"))
    s.add_pod(pod("p", "n0"))
    rv = s.row_version.copy()
    s.update_pod(pod("p", "n2"))
    assert np.flatnonzero(rv != s.row_version).tolist() == [0, 2]


def test_new_table_entry_bumps_epoch_not_layout_when_room():
    s = ClusterState(node_capacity=2)
    s.add_node(node("n0"))
    layout, epoch = s.layout_version, s.epoch
    s.add_pod(pod("p", "n0", ports=[80]))              # new port table entry
    assert s.epoch == epoch + 1 and s.layout_version == layout
    s.add_pod(pod("q", "n0", ports=[80]))              # no new entry
    assert s.epoch == epoch + 1


def test_growth_reallocates_and_preserves_rows():
    s = ClusterState(node_capacity=2)
    s.add_node(node("a", labels={"z": "1"}))
    s.add_node(node("b"))
    s.add_pod(pod("p", "a", cpu=123))
    layout = s.layout_version
    before = node_view(s, "a")
    s.add_node(node("c"))
    assert s.layout_version > layout
    assert s.allocatable.shape[0] >= 3
    assert node_view(s, "a") == before
    for i in range(70):                                 # many label keys, taints and images
        s.add_node(node(f"x{i}", labels={f"k{i}": "v"}, taints=[Taint(f"t{i}", "", "NoSchedule")],
                        images=[NodeImage((f"img{i}",), i)]))
    assert node_view(s, "a") == before
    assert node_view(s, "x69")["taints"] == {("t69", "", "NoSchedule")}
    assert s.columns().taint_bits.shape[1] == 2


def test_removed_rows_are_reused_last_freed_first():
    s = ClusterState(node_capacity=4)
    for n in "abcd":
        s.add_node(node(n))
    s.remove_node("b")
    s.remove_node("d")
    assert s.free_rows == [1, 3] and s.n_rows == 4
    layout = s.layout_version
    assert s.add_node(node("e", labels={"new": "yes"})) == 3
    assert s.add_node(node("f")) == 1
    assert s.add_node(node("g")) == 4                   # no free row left: a new one
    assert s.n_rows == 5 and s.free_rows == []
    assert s.layout_version > layout                   # capacity 4 exceeded
    # the reused row carries nothing from its previous node
    v = node_view(s, "f")
    assert v["labels"] == {"#metadata.name": "f"} and v["requested"] == {}


def test_valid_rows_tracks_node_set_changes():
    # Regression: the cache was keyed by the node count, so removing one node,
    # adding one and removing another returned the stale row set.
    s = ClusterState(node_capacity=8)
    for n in "abcd":
        s.add_node(node(n))
    s.remove_node("b")
    assert s.valid_rows().tolist() == [0, 2, 3]
    s.add_node(node("e"))                               # reuses row 1
    s.remove_node("c")
    assert s.valid_rows().tolist() == [0, 1, 3]
    assert s.valid_rows() is s.valid_rows()            # still cached when unchanged


# --------------------------------------------------------------------------
# refused operations

def _populated() -> ClusterState:
    s = ClusterState(node_capacity=4)
    s.add_node(node("n1", labels={"zone": "a"}, taints=[Taint("k", "v", "NoExecute")],
                    images=[NodeImage(("img",), 5)], extra={GPU: 2}))
    s.add_node(node("n2"))
    s.add_node(node("n3"))
    s.remove_node("n3")
    s.add_pod(pod("p", "n1", ports=[80], extra={GPU: 1}))
    return s


REFUSED = [
    ("duplicate node", lambda s: s.add_node(node("n1", labels={"new-key": "x"}, extra={"x/y": 1})),
     "Node n1"),
    ("update unknown node", lambda s: s.update_node(node("ghost", extra={"x/y": 1})), "Node ghost"),
    ("remove unknown node", lambda s: s.remove_node("ghost"), "Node ghost"),
    ("remove deleted node", lambda s: s.remove_node("n3"), "Node n3"),
    ("pod on unknown node", lambda s: s.add_pod(pod("q", "ghost", ports=[99], extra={"x/y": 1})),
     "Pod default/q.*'ghost'"),
    ("pod without node", lambda s: s.add_pod(pod("q", "")), "Pod default/q"),
    ("pod priority past int64", lambda s: s.add_pod(pod("q", "n2", priority=1 << 63)),
     "Pod default/q: spec.priority"),
    ("update pod priority past int64",
     lambda s: s.update_pod(pod("p", "n2", priority=-(1 << 64))), "Pod default/p: spec.priority"),
    ("duplicate pod", lambda s: s.add_pod(pod("p", "n2", ports=[99])), "Pod default/p"),
    ("remove unknown pod", lambda s: s.remove_pod("default/ghost"), "Pod default/ghost"),
    ("update unknown pod", lambda s: s.update_pod(pod("ghost", "n1")), "Pod default/ghost"),
    ("update pod to unknown node", lambda s: s.update_pod(pod("p", "ghost", ports=[99])),
     "Pod default/p.*'ghost'"),
    ("pod with too many resources",
     lambda s: s.add_pod(pod("q", "n2", extra={f"ex.com/r{i}": 1 for i in range(40)})),
     "Pod default/q: resource"),
    ("update pod with too many resources",
     lambda s: s.update_pod(pod("p", "n2", extra={f"ex.com/r{i}": 1 for i in range(40)})),
     "Pod default/p: resource"),
    ("node with too many resources",
     lambda s: s.add_node(node("n9", extra={f"ex.com/r{i}": 1 for i in range(40)})),
     "Node n9: resource"),
    ("node update with too many resources",
     lambda s: s.update_node(node("n2", extra={f"ex.com/r{i}": 1 for i in range(40)})),
     "Node n2: resource"),
]


@pytest.mark.parametrize("what,op,match", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_operation_changes_nothing(what, op, match):
    s = _populated()
    s.valid_rows()
    before = snapshot(s)
    with pytest.raises(StateError, match=match):
        op(s)
    assert_same(before, snapshot(s))
    # and the state still works
    s.add_pod(pod("later", "n2"))
    assert node_view(s, "n2")["pods"] == {"default/later"}


def test_resource_limit_allows_exactly_max():
    s = ClusterState()
    room = L.MAX_RESOURCES - len(L.FIXED_RESOURCES)
    s.add_node(node("n", extra={f"ex.com/r{i}": 1 for i in range(room)}))
    assert len(s.resources) == L.MAX_RESOURCES
    with pytest.raises(StateError, match="more than"):
        s.add_pod(pod("p", "n", extra={"ex.com/one-more": 1}))
    s.add_pod(pod("p", "n", extra={"ex.com/r0": 1, "pods": 3}))   # known names only
    assert node_view(s, "n")["requested"]["pods"] == 1


# --------------------------------------------------------------------------
# ports and images

def test_ports_released_when_last_pod_leaves():
    s = ClusterState()
    s.add_node(node("n1"))
    s.add_node(node("n2"))
    s.add_pod(pod("a", "n1", ports=[80, ("UDP", "0.0.0.0", 53)]))
    s.add_pod(pod("b", "n1", ports=[80]))
    s.add_pod(pod("c", "n2", ports=[80]))
    tcp80, udp53 = ("TCP", "0.0.0.0", 80), ("UDP", "0.0.0.0", 53)
    assert node_view(s, "n1")["ports"] == {tcp80, udp53}
    assert s.port_counts[0] == {s.ports.get(tcp80): 2, s.ports.get(udp53): 1}
    s.remove_pod("default/a")
    assert node_view(s, "n1")["ports"] == {tcp80}
    s.remove_pod("default/b")
    assert node_view(s, "n1")["ports"] == set() and s.port_counts[0] == {}
    assert node_view(s, "n2")["ports"] == {tcp80}   # other nodes untouched
    assert len(s.ports) == 2                          # the table never shrinks
    s.update_pod(pod("c", "n2", ports=[443]))
    assert node_view(s, "n2")["ports"] == {("TCP", "0.0.0.0", 443)}


def test_same_port_twice_in_one_pod():
    s = ClusterState()
    s.add_node(node("n1"))
    s.add_pod(pod("a", "n1", ports=[80, 80]))
    s.add_pod(pod("b", "n1", ports=[80]))
    s.remove_pod("default/a")
    assert node_view(s, "n1")["ports"] == {("TCP", "0.0.0.0", 80)}
    s.remove_pod("default/b")
    assert node_view(s, "n1")["ports"] == set()


def test_image_spread_counts():
    s = ClusterState()
    nginx = NodeImage(("nginx:1.25", "docker.io/nginx@sha256:abc"), 50 * Mi)
    redis = NodeImage(("redis:7",), 30 * Mi)
    s.add_node(node("a", images=[nginx, redis]))
    s.add_node(node("b", images=[nginx]))
    s.add_node(node("c", images=[NodeImage(("redis:7", "redis:7"), 31 * Mi)]))
    assert s.image_name_nodes == {"nginx:1.25": 2, "docker.io/nginx@sha256:abc": 2,
                                  "redis:7": 2}
    # a name with two sizes is two table entries
    assert s.images.get(("redis:7", 30 * Mi)) >= 0 and s.images.get(("redis:7", 31 * Mi)) >= 0
    s.update_node(node("b", images=[redis]))
    assert s.image_name_nodes == {"nginx:1.25": 1, "docker.io/nginx@sha256:abc": 1,
                                  "redis:7": 3}
    s.remove_node("a")
    assert s.image_name_nodes == {"redis:7": 2}
    s.remove_node("b")
    s.remove_node("c")
    assert s.image_name_nodes == {}


def test_state_from_manifests():
    s = ClusterState()
    s.add_node(parse_node({
        "kind": "Node", "metadata": {"name": "w1", "labels": {"zone": "a"}},
        "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110",
                                   GPU: "2"}}}))
    s.add_pod(parse_pod({
        "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "w1", "containers": [
            {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1500m"},
                                                      "limits": {GPU: "1"}},
             "ports": [{"containerPort": 80, "hostPort": 8080}]}]}}))
    v = node_view(s, "w1")
    assert v["requested"] == {"cpu": 1500, "pods": 1, GPU: 1}
    assert v["nonzero"] == (1500, L.DEFAULT_MEMORY_REQUEST)
    assert v["ports"] == {("TCP", "0.0.0.0", 8080)}
    assert v["taints"] == {("gpu", "", "NoSchedule")}


# --------------------------------------------------------------------------
# property: random operations == a fresh rebuild from the survivors

NODE_NAMES = ["n0", "n1", "n2"]
POD_NAMES = ["p0", "p1", "p2"]
NAMESPACES = ["default", "default", "kube-system"]

label_st = st.dictionaries(st.sampled_from(["zone", "rack", "gen", "disk"]),
                           st.sampled_from(["a", "b", "1", "-2", "99"]), max_size=3)
taint_st = st.lists(st.builds(Taint, st.sampled_from(["k1", "k2"]), st.sampled_from(["", "v"]),
                              st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"])),
                    max_size=2, unique=True)
image_st = st.lists(st.builds(NodeImage, st.lists(st.sampled_from(["i1", "i2", "i3"]), min_size=1,
                                                  max_size=2).map(tuple),
                              st.sampled_from([10, 20])), max_size=2)
extra_st = st.dictionaries(st.sampled_from([GPU, "example.com/fpga", "hugepages-2Mi"]),
                           st.integers(0, 8), max_size=2)
node_st = st.builds(node, st.sampled_from(NODE_NAMES), cpu=st.integers(0, 8000),
                    mem=st.integers(0, 16).map(lambda g: g * Gi), labels=label_st,
                    taints=taint_st, images=image_st, unschedulable=st.booleans(),
                    extra=extra_st)


def pod_st(names=st.sampled_from(POD_NAMES), namespaces=st.sampled_from(NAMESPACES)):
    return st.builds(
        pod, names, st.sampled_from(NODE_NAMES + [""]),
        cpu=st.integers(0, 1000), mem=st.integers(0, 4).map(lambda g: g * Gi), ns=namespaces,
        ports=st.lists(st.sampled_from([80, 443, ("UDP", "0.0.0.0", 53), ("TCP", "10.0.0.1", 80)]),
                       max_size=2),
        extra=extra_st)


def draw_op(data, model_nodes: dict, model_pods: dict):
    """One operation, mostly on objects that exist (so most succeed), sometimes
    on unknown ones (so refusals are exercised too)."""
    kind = data.draw(st.sampled_from(["add_node", "update_node", "remove_node", "add_pod",
                                      "add_pod", "update_pod", "update_pod", "remove_pod",
                                      "remove_pod"]))
    target = st.sampled_from([None, *NODE_NAMES])
    if kind in ("add_node", "update_node"):
        return (kind, data.draw(node_st))
    if kind == "remove_node":
        names = sorted(model_nodes) if model_nodes and data.draw(st.booleans()) else NODE_NAMES
        return (kind, data.draw(st.sampled_from(names)))
    if kind == "add_pod":
        return (kind, data.draw(pod_st()), data.draw(target))
    keys = sorted(model_pods)
    if keys and data.draw(st.integers(0, 4)) > 0:
        key = data.draw(st.sampled_from(keys))
    else:
        key = f"default/{data.draw(st.sampled_from(POD_NAMES + ['ghost']))}"
    if kind == "remove_pod":
        return (kind, key)
    ns, name = key.split("/")
    return (kind, data.draw(pod_st(st.just(name), st.just(ns))), data.draw(target))


def _apply(s: ClusterState, model_nodes: dict, model_pods: dict, op) -> None:
    """Apply ``op`` to the state and to a dict model; a refused op must raise
    StateError and change nothing."""
    kind = op[0]
    ok = True
    if kind == "add_node":
        ok = op[1].name not in model_nodes
    elif kind in ("update_node", "remove_node"):
        name = op[1].name if kind == "update_node" else op[1]
        ok = name in model_nodes
    elif kind == "add_pod":
        p, target = op[1], op[2] or op[1].node_name
        ok = p.key not in model_pods and target in model_nodes
    elif kind == "update_pod":
        p = op[1]
        old = model_pods.get(p.key)
        target = op[2] or p.node_name or (old[1] if old else None)
        ok = old is not None and target in model_nodes
    elif kind == "remove_pod":
        ok = op[1] in model_pods

    if not ok:
        before = snapshot(s)
        with pytest.raises(StateError):
            getattr(s, kind)(*[a for a in op[1:] if a is not None])
        assert_same(before, snapshot(s))
        return
    getattr(s, kind)(*[a for a in op[1:] if a is not None])
    if kind in ("add_node", "update_node"):
        model_nodes[op[1].name] = op[1]
    elif kind == "remove_node":
        del model_nodes[op[1]]
        for k in [k for k, (_, n) in model_pods.items() if n == op[1]]:
            del model_pods[k]
    elif kind in ("add_pod", "update_pod"):
        model_pods[op[1].key] = (op[1], target)
    else:
        del model_pods[op[1]]


def _words(n: int) -> int:
    return max(1, (n + 63) // 64)


def _check_columns_view(s: ClusterState) -> None:
    """columns() (memoized) shows exactly the rows, resources, keys and words in use."""
    n, r, k = max(s.n_rows, 1), len(s.resources), len(s.label_keys)
    want = {
        "allocatable": s.allocatable[:n, :r], "requested": s.requested[:n, :r],
        "nonzero_requested": s.nonzero_requested[:n], "unschedulable": s.unschedulable[:n],
        "valid": s.valid[:n], "label_vals": s.label_vals[:n, :k],
        "label_nums": s.label_nums[:n, :k], "label_isnum": s.label_isnum[:n, :k],
        "taint_bits": s.taint_bits[:n, :_words(len(s.taints))],
        "image_bits": s.image_bits[:n, :_words(len(s.images))],
        "port_bits": s.port_bits[:n, :_words(len(s.ports))],
    }
    got = s.columns()._asdict()
    assert got.keys() == want.keys()
    for name, a in want.items():
        assert got[name].shape == a.shape, name
        np.testing.assert_array_equal(got[name], a, err_msg=name)


def _check_invariants(s: ClusterState) -> None:
    _check_columns_view(s)
    live = set(s.node_rows.values())
    assert sorted([*live, *s.free_rows]) == list(range(s.n_rows))
    assert s.valid[: s.n_rows].tolist() == [r in live for r in range(s.n_rows)]
    assert s.valid_rows().tolist() == sorted(live)
    for r in s.free_rows:
        free_row_is_clear(s, r)
    for name, r in s.node_rows.items():
        assert s.nodes[r].name == name
        want = np.zeros(len(s.resources), np.int64)
        nz = [0, 0]
        for key in s.pods_on_node[r]:
            e = s.pods[key]
            assert e.node_row == r
            want[: e.request.shape[0]] += e.request
            nz[0] += e.nonzero[0]
            nz[1] += e.nonzero[1]
        np.testing.assert_array_equal(s.requested[r, : len(s.resources)], want)
        assert s.nonzero_requested[r].tolist() == nz
    assert sum(len(x) for x in s.pods_on_node) == len(s.pods)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(node_st, max_size=3, unique_by=lambda n: n.name), st.integers(4, 60),
       st.integers(1, 6), st.data())
def test_random_operations_match_fresh_rebuild(initial, n_ops, capacity, data):
    s = ClusterState(node_capacity=capacity)
    model_nodes: dict[str, NodeRecord] = {}
    model_pods: dict[str, tuple[PodRecord, str]] = {}
    for n in initial:
        _apply(s, model_nodes, model_pods, ("add_node", n))
    for _ in range(n_ops):
        _apply(s, model_nodes, model_pods, draw_op(data, model_nodes, model_pods))
        if data.draw(st.booleans()):        # cached views read between events
            assert s.valid_rows().tolist() == sorted(s.node_rows.values())
            _check_columns_view(s)
    _check_invariants(s)

    fresh = ClusterState()
    for rec in model_nodes.values():
        fresh.add_node(rec)
    for p, target in model_pods.values():
        fresh.add_pod(p, target)
    assert set(s.node_rows) == set(fresh.node_rows) == set(model_nodes)
    assert set(s.pods) == set(fresh.pods)
    for name in model_nodes:
        assert node_view(s, name) == node_view(fresh, name), name
        assert s.node(name) is model_nodes[name]
    for key, (p, target) in model_pods.items():
        assert s.pods[key].record == p
        assert s.node_name(s.pods[key].node_row) == target
    assert s.image_name_nodes == fresh.image_name_nodes
    assert s.num_nodes == len(model_nodes)


def test_a_label_named_like_the_name_column_does_not_collide():
    """matchFields metadata.name reads column 0; a node label literally keyed
    'metadata.name' is an ordinary label in its own column."""
    from tensorsched.generators.clusters import node_dict, pod_dict
    from tensorsched.framework.scheduler.explain import explain
    nodes = [node_dict("real", labels={"metadata.name": "fake"}), node_dict("fake")]
    pod = pod_dict("p", spec={"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "NotIn",
                              "values": ["fake"]}]}]}}}})
    assert explain(nodes, pod)["feasible"] == ["real"]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3), st.integers(0, 2**40)),
                max_size=30))
def test_room_for_bounds_stay_above_the_columns(ops):
    """room_for's ceilings (raised on accounting, exact on node changes) are
    never below the live columns, so the int64 headroom check stays safe."""
    s = ClusterState()
    for i in range(4):
        s.add_node(node(f"n{i}"))
    alive = []
    req = np.array([1, 1, 1], np.int64)
    for k, (add, row, cpu) in enumerate(ops):
        s.room_for(req, np.array([1, 1], np.int64), 1)          # builds the ceilings
        if add or not alive:
            s.add_pod(pod(f"p{k}", f"n{row}", cpu=cpu))
            alive.append(f"default/p{k}")
        else:
            s.remove_pod(alive.pop(row % len(alive)))
        up_req, up_nz = s._ceilings()
        n = s.n_rows
        assert (up_req >= s.requested[:n].max(axis=0)).all()
        assert (up_nz >= s.nonzero_requested[:n].max(axis=0)).all()
    top = int(s.requested[:s.n_rows, 0].max())
    big = np.array([(2**63 - 1 - top) // 2 + 1, 0, 0], np.int64)
    assert not s.room_for(big, np.zeros(2, np.int64), 2)
    assert s.room_for(np.zeros(3, np.int64), np.zeros(2, np.int64), 2)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["a", "b"]),
                          st.sampled_from(["default", "other"]), st.booleans(),
                          st.booleans(), st.booleans()), min_size=1, max_size=30))
@example([(0, "a", "default", False, False, False), (0, "a", "default", False, False, True)])
def test_pod_count_index_on_pods_equals_on_pod(spec):
    """The count index's form for a compiled run's pods (``on_pods``) leaves
    the per-row counts, the domain sums and the affinity term groups as
    ``on_pod`` of each pod in order does, with stretches of pods sharing a
    labels object and pods that differ (namespace, deletion, labels)."""
    def index():
        st_ = ClusterState()
        for i in range(6):
            st_.add_node(node(f"n{i}", labels={"zone": f"z{i % 2}"}))
        idx = PodCountIndex(st_)
        pred = lambda r: not r.deleting and r.namespace == "default" and r.labels.get("app") == "a"  # noqa: E731
        idx.counts("app=a", pred)
        dom = np.array([i % 2 for i in range(6)], np.int64)
        sums = idx.domain_sums("app=a", pred, "zone", lambda: dom, 2)
        return idx, sums

    shared = {"a": {"app": "a"}, "b": {"app": "b"}}
    anti = {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "zone"}]}
    records, rows = [], []
    for k, (row, app, ns, deleting, own_labels, has_anti) in enumerate(spec):
        r = pod(f"p{k}", ns=ns)
        r.labels = dict(shared[app]) if own_labels else shared[app]
        r.deleting = deleting
        r.pod_anti_affinity = anti if has_anti else None
        records.append(r)
        rows.append(row)
    one, one_sums = index()
    many, many_sums = index()
    for r, row in zip(records, rows):
        one.on_pod(r, row, 1)
    many.on_pods(records, np.array(rows, np.int64), 1)
    assert (one.counts("app=a", None) == many.counts("app=a", None)).all()
    assert (one_sums.sums == many_sums.sums).all() and one_sums.positive == many_sums.positive
    assert one.pods_with_affinity == many.pods_with_affinity
    for kind in one.groups:
        assert one.groups[kind].keys() == many.groups[kind].keys()
        for t, arr in one.groups[kind].items():
            assert (arr == many.groups[kind][t]).all()


# --------------------------------------------------------------------------
# add_pods / remove_pods: the same as add_pod / remove_pod one at a time


class _Told:
    """A listener that records what it is told, with or without a many-pod
    form (a state whose listeners all have one adds and removes at once)."""

    def __init__(self):
        self.events: list = []

    def on_pod(self, record, row, delta):
        self.events.append((record.key, int(row), delta))


class _ToldMany(_Told):
    def on_pods(self, records, rows, delta):
        for rec, row in zip(records, rows.tolist()):
            self.on_pod(rec, row, delta)


def _batch_state(many: bool):
    s = ClusterState(node_capacity=2)
    for i in range(5):
        s.add_node(node(f"n{i}", labels={"zone": f"z{i % 2}"}, extra={GPU: 4}))
    s.add_pod(pod("old", "n1", labels={"app": "web"}, priority=5))
    idx = PodCountIndex(s)
    s.listeners.add(idx)
    web = idx.counts("web", lambda r: r.labels.get("app") == "web")
    k = s.label_keys.get("zone")
    sums = idx.domain_sums("web", lambda r: r.labels.get("app") == "web", "t",
                           lambda: s.label_vals[: s.n_rows, k].astype(np.int64), 2)
    assert web.shape[0] >= s.n_rows
    told = _ToldMany() if many else _Told()
    s.listeners.add(told)
    return s, idx, sums, told


def _batch_view(s, idx, sums, told) -> dict:
    """What callers of the state see: the snapshot, the pod table with its
    slots and bind order, each row's pod order, the tallies, the counts of
    a batch listener (``PodCountIndex``) and what a listener was told (as a
    multiset: a many-pod form hears each pod after all of them changed)."""
    snap = snapshot(s)
    snap["cols"] = {k: (a.shape, str(a.dtype), a.tolist()) for k, a in snap["cols"].items()}
    snap["row_version"] = snap["row_version"].tolist()
    return {**snap,
            "slots": [(k, e.slot, e.shape_id, e.port_ids) for k, e in s.pods.items()],
            "order": [list(x) for x in s.pods_on_node[: s.n_rows]],
            "pod_adds": s.pod_adds, "priorities": dict(s.priorities),
            "web": idx.counts("web", None)[: s.n_rows].tolist(),
            "sums": (sums.sums.tolist(), sums.positive),
            "told": sorted(told.events)}


def _batch_pod(i, cpu, gpu, web, prio, port, unknown):
    extra = {GPU: gpu} if gpu else {}
    if unknown:
        extra["example.com/unknown"] = 1
    return pod(f"p{i}", cpu=cpu, extra=extra, labels={"app": "web"} if web else {},
               priority=prio, ports=(8080,) if port else ())


batch_pods = st.lists(st.tuples(st.integers(0, 9), st.sampled_from([0, 100, 100, 250]),
                                st.integers(0, 1), st.booleans(), st.sampled_from([None, 0, 7]),
                                st.integers(0, 5).map(lambda v: v == 0),
                                st.integers(0, 7).map(lambda v: v == 0),
                                st.sampled_from(["n0", "n1", "n3", "n4", "n4", "n4", "gone"])),
                      max_size=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(many=st.booleans(), plain=st.booleans(), spec=batch_pods, data=st.data())
def test_add_pods_and_remove_pods_equal_one_at_a_time(many, plain, spec, data):
    """``add_pods`` then ``remove_pods`` (pods on repeated nodes, host ports,
    unknown resources, unknown nodes, repeated keys, a listener with or
    without a many-pod form) leave the state, its versions, its pod table
    and its listeners as ``add_pod`` / ``remove_pod`` one at a time, a
    refusal included."""
    at_once, one = _batch_state(many), _batch_state(many)
    if plain:       # no host ports, known resources and nodes: at once
        spec = [(*p[:5], False, False, p[7] if p[7] != "gone" else "n2") for p in spec]
    pods = [_batch_pod(*p[:7]) for p in spec]
    names = [p[7] for p in spec]
    err = None
    try:
        for p, n in zip(pods, names):
            one[0].add_pod(p, n)
    except StateError as e:
        err = str(e)
    if err is not None:        # refused as the calls one at a time refuse
        with pytest.raises(StateError) as got:
            add_pods(at_once[0], pods, names)
        assert str(got.value) == err
        assert _batch_view(*at_once) == _batch_view(*one)
        return
    add_pods(at_once[0], pods, names)
    assert _batch_view(*at_once) == _batch_view(*one)
    keys = data.draw(st.permutations([p.key for p in pods]))
    keys = keys[: data.draw(st.integers(0, len(keys)))]
    remove_pods(at_once[0], keys)
    for k in keys:
        one[0].remove_pod(k)
    assert _batch_view(*at_once) == _batch_view(*one)
    # the pods come back as they were (a nominated pod's next cycle)
    back = [(p, n) for p, n in zip(pods, names) if p.key in keys]
    add_pods(at_once[0], [p for p, _ in back], [n for _, n in back])
    for p, n in back:
        one[0].add_pod(p, n)
    assert _batch_view(*at_once) == _batch_view(*one)
    if keys:
        gone = keys[:1] + ["default/absent"]
        for s in (at_once, one):
            with pytest.raises(StateError, match="default/absent: not in the cluster state"):
                remove_pods(s[0], gone) if s is at_once else [s[0].remove_pod(k) for k in gone]
        assert _batch_view(*at_once) == _batch_view(*one)


def test_add_pods_counts_pods_of_one_shape_on_one_row():
    """Pods of one shape on one row add (and remove) their count times the
    request, at once (every listener has a many-pod form)."""
    at_once, one = _batch_state(True), _batch_state(True)
    pods = [_batch_pod(i, 100, 1, True, 7, False, False) for i in range(3)]
    names = ["n4", "n4", "n0"]
    add_pods(at_once[0], pods, names)
    for p, n in zip(pods, names):
        one[0].add_pod(p, n)
    assert _batch_view(*at_once) == _batch_view(*one)
    assert at_once[0].requested[4, 0] == 200 and at_once[2].sums.tolist() == [3, 1]
    remove_pods(at_once[0], ["default/p1", "default/p0"])
    for k in ("default/p1", "default/p0"):
        one[0].remove_pod(k)
    assert _batch_view(*at_once) == _batch_view(*one)
    assert at_once[0].requested[4, 0] == 0


@pytest.mark.parametrize("k, spread", [(1200, 5000), (1200, 300), (3000, 5000), (10, 5000)])
def test_run_rows_raise_the_ceilings_to_the_columns(k, spread):
    """A compiled run adds to the requested columns itself; the rows it
    hands over (k of them, on ``spread`` rows: a run over most rows, many
    pods on few rows, a short run) raise the ceilings to those rows' sums."""
    s = ClusterState(node_capacity=5000)
    for i in range(5000):
        s.add_node(node(f"n{i}"))
    s.room_for(np.array([1, 1, 1], np.int64), np.array([1, 1], np.int64), 1)
    rows = np.random.default_rng(k + spread).integers(0, spread, k)
    np.add.at(s.requested[:, 0], rows, 7)
    np.add.at(s.nonzero_requested[:, 1], rows, 3)
    s._raise_ceilings(rows)
    up_req, up_nz = s._ceilings()
    assert (up_req >= s.requested[:s.n_rows].max(axis=0)).all()
    assert (up_nz >= s.nonzero_requested[:s.n_rows].max(axis=0)).all()


@settings(max_examples=30, deadline=None, derandomize=True)
@given(st.integers(1, 40), st.integers(0, 6), st.integers(0, 2**62))
def test_column_max_is_the_max_of_each_column(k, c, top):
    a = np.random.default_rng(k * 7 + c).integers(-top - 1, top + 1, (k, c), dtype=np.int64)
    got = _column_max(a)
    assert got.dtype == np.int64 and got.tolist() == a.max(axis=0).tolist()
    assert _column_max(a[::2]).tolist() == a[::2].max(axis=0).tolist()


def _register(s, run, rows):
    rows = np.array(rows, np.int64)
    req = s.resource_vector(run[0].requests, intern=True)
    req[3] = 1
    np.add.at(s.requested[:, : req.shape[0]], rows, req)
    np.add.at(s.nonzero_requested, rows, np.array([run[0].nonzero_cpu, run[0].nonzero_memory]))
    s.register_run(run, rows, req, (run[0].nonzero_cpu, run[0].nonzero_memory))


def test_runs_pods_reach_the_row_keys_in_order_on_the_next_read():
    """Runs' pods are written into ``pods_on_node`` when it is next read:
    two runs, then a single pod and a removal (which read it first), give
    each row's keys in the order one pod at a time would have; a read with
    nothing waiting is the instance's own list."""
    s = ClusterState()
    for i in range(3):
        s.add_node(node(f"n{i}"))
    s.add_pod(pod("a", "n1"))
    _register(s, [pod(f"r{i}", cpu=250) for i in range(4)], [1, 0, 1, 2])
    assert "pods_on_node" not in vars(s)            # waiting: not yet written
    _register(s, [pod(f"q{i}", cpu=100) for i in range(2)], [1, 0])
    s.add_pod(pod("b", "n0"))                       # reads (writes the runs) first
    assert "pods_on_node" in vars(s) and not s._on_node_runs
    want = [["default/r1", "default/q1", "default/b"],
            ["default/a", "default/r0", "default/r2", "default/q0"], ["default/r3"]]
    assert [list(d) for d in s.pods_on_node[:3]] == want
    _register(s, [pod("z0", cpu=100)], [2])
    s.remove_pod("default/r3")
    assert [list(d) for d in s.pods_on_node[:3]] == want[:2] + [["default/z0"]]
    assert s.pods_on_node is vars(s)["pods_on_node"]
    assert [p.key for p in s.pods_on("n0")] == sorted(want[0])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(extra_st, st.sampled_from([0, 100, 250]), st.booleans(),
                          st.integers(0, 2)), min_size=1, max_size=12))
def test_add_pod_accounts_its_own_request_when_its_shape_is_memoized(spec):
    """``add_pod`` takes a request the state accounted before from the
    memoized shape ids (nothing to intern, no room to check): the shape it
    records is still the pod's own request vector (pods 1) and non-zero
    pair, and the requested column its sum, with resources added between
    (a node with a new extended resource), pods removed, and alike
    requests asked again."""
    s = ClusterState(node_capacity=2)
    s.add_node(node("n0", cpu=100_000, mem=64 * Gi, extra={GPU: 64}))
    bound = {}
    for i, (extra, cpu, new_resource, leave) in enumerate(spec):
        if new_resource:
            s.add_node(node(f"m{i}", extra={f"example.com/r{i}": 4}))
        p = pod(f"p{i}", "n0", cpu=cpu, extra=extra)
        s.add_pod(p)
        entry = s.pods[p.key]
        want = np.zeros(len(s.resources), np.int64)
        for name, v in p.requests.items():
            want[s.resources.get(name)] = v
        want[L.RES_PODS] = 1
        assert entry.request.tolist() == want.tolist()
        assert entry.nonzero == (p.nonzero_cpu, p.nonzero_memory)
        bound[p.key] = want
        if leave == 0:
            s.remove_pod(p.key)
            del bound[p.key]
    total = np.zeros(len(s.resources), np.int64)
    for want in bound.values():
        total[: want.shape[0]] += want
    row = s.node_rows["n0"]
    assert s.requested[row, : total.shape[0]].tolist() == total.tolist()
