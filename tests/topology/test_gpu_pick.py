"""topology/gpu_pick.py: the picker reads a table's rows and never writes
them: whole GPUs take the tightest allowed subset, a share the best fit,
a pinned pick is checked against what is free, and a refused ask gets
None."""

from __future__ import annotations

import numpy as np

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.kernels.gpu import share as K
from tensorsched.topology.gpu_table import GpuTable
from tensorsched.generators.gpu_clusters import gpu_node


def _pod(name, *, n=0, milli=0):
    extra = {"nvidia.com/gpu": str(n)} if n else None
    p = pod_dict(name, cpu="1", memory="1Gi", extra=extra)
    if milli:
        p["metadata"]["annotations"] = {"alibabacloud.com/gpu-milli": str(milli)}
    return parse_pod(p)


def _table():
    return GpuTable.of(build_cluster([gpu_node("a")]).state)


def test_picks_leave_the_table_as_it_was():
    t = _table()
    before = (t.left.copy(), t.version)
    whole = t.picker.pick(0, t.pod_info(_pod("w", n=2)), topology_aware=True)
    assert whole is not None and len(whole[0]) == 2
    share = t.picker.pick(0, t.pod_info(_pod("s", milli=300)), topology_aware=True)
    assert share is not None and len(share[0]) == 1
    np.testing.assert_array_equal(t.left, before[0])
    assert t.version == before[1]


def test_share_takes_the_best_fit_gpu():
    t = _table()
    info = t.pod_info(_pod("s", milli=300))
    t.apply("x", 0, info, 0, (5,), -1)              # GPU 5 has 700 left
    got = t.picker.pick(0, info, topology_aware=True, sel=K.SEL_BEST)
    assert got == ((5,), -1)


def test_valid_pick_and_refusals():
    t = _table()
    info = t.pod_info(_pod("w", n=2))
    assert t.picker.valid_pick(0, info, 0, (0, 1))
    assert not t.picker.valid_pick(0, info, 0, (0, 0))      # one GPU twice
    assert not t.picker.valid_pick(0, info, 0, (0, 9))      # past the node's GPUs
    assert t.picker.pick(0, t.pod_info(_pod("big", n=9)), topology_aware=True) is None
