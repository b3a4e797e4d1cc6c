"""gpu_table.GpuTable: it follows the state's pod adds and removals on the
pod's node only, honours the openb gpu-index annotation when those GPUs are
free, never over-allocates (an unfittable bound pod holds none), and gives
back the GPUs a pod held before a temporary removal."""

from __future__ import annotations

import numpy as np

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.generators.clusters import pod_dict
from tensorsched.generators.gpu_clusters import gpu_node
from tensorsched.topology.gpu import MILLI
from tensorsched.topology.gpu_table import GpuTable, binding_gpus


def _pod(name, node, *, n=0, milli=0, index=None):
    extra = {"nvidia.com/gpu": str(n)} if n else None
    p = pod_dict(name, cpu="1", memory="1Gi", extra=extra)
    annos = {}
    if milli:
        annos["alibabacloud.com/gpu-milli"] = str(milli)
    if index:
        annos["alibabacloud.com/gpu-index"] = index
    p["metadata"]["annotations"] = annos
    return parse_pod(p), node


def _table():
    state = build_cluster([gpu_node("a"), gpu_node("b")]).state
    return state, GpuTable.of(state)


def test_one_table_per_state_and_no_gpus_used_at_first():
    state, t = _table()
    assert GpuTable.of(state) is t and GpuTable.attached(state) is t
    assert (t.left[:2, :8] == MILLI).all()
    assert binding_gpus(state) == {}


def test_add_and_remove_touch_only_the_pods_node():
    state, t = _table()
    rec, node = _pod("w", "b", n=2)
    before_a = t.left[0].copy()
    state.add_pod(rec, node)
    a = t.alloc[rec.key]
    assert state.node_name(a.row) == "b" and len(a.indices) == 2 and a.milli == MILLI
    assert int((t.left[a.row] == 0).sum()) == 2
    np.testing.assert_array_equal(t.left[0], before_a)
    assert binding_gpus(state)[rec.key]["node"] == "b"
    t.check()
    state.remove_pod(rec.key)
    assert rec.key not in t.alloc
    assert (t.left[:2, :8] == MILLI).all()
    t.check()


def test_gpu_index_annotation_is_honoured_when_free():
    state, t = _table()
    rec, node = _pod("s", "a", milli=250, index="3")
    state.add_pod(rec, node)
    assert t.alloc[rec.key].indices == (3,)
    assert t.left[0, 3] == MILLI - 250
    rec2, _ = _pod("w", "a", n=2, index="4-5")
    state.add_pod(rec2, "a")
    assert t.alloc[rec2.key].indices == (4, 5)
    t.check()


def test_bound_pod_over_the_node_holds_no_gpu():
    state, t = _table()
    for i in range(2):
        state.add_pod(_pod(f"w{i}", "a", n=4)[0], "a")
    extra, _ = _pod("x", "a", n=1)
    state.add_pod(extra, "a")                      # the node's 8 GPUs are all taken
    a = t.alloc.get(extra.key)
    assert a is None or (a.unplaced and a.indices == ())
    assert extra.key not in binding_gpus(state)
    t.check()


def test_regain_gives_back_the_gpus_held_before_a_temporary_removal():
    state, t = _table()
    rec, node = _pod("w", "a", n=1, index="6")
    state.add_pod(rec, node)
    held = t.hold(rec.key)
    assert held.indices == (6,)
    row = held.row
    t.release(rec.key)                             # re-placed elsewhere meanwhile
    t.apply(rec.key, row, t.pod_info(rec), 0, (1,), -1)
    t.regain(rec.key, rec, row, held)
    assert t.alloc[rec.key].indices == (6,)
    assert t.left[row, 1] == MILLI and t.left[row, 6] == 0
    t.check()
