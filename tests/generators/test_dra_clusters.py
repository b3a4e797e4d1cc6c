"""``generators.dra_clusters``: the DRA workloads load as a cluster whose
ResourceSlices publish the devices the generator says, and repeat with
their seed."""

from __future__ import annotations

from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.generators import dra_clusters as DC


def _devices(objs):
    return sum(len(o["spec"]["devices"]) for o in objs if o["kind"] == "ResourceSlice")


def test_dra_publishes_eight_gpus_per_node_and_loads():
    objs, pods = DC.dra(3, 4, seed=1)
    assert _devices(objs) == 3 * 8
    cluster = build_cluster(objs + pods)
    assert len(cluster.objects.resource_slices) == 3
    assert DC.dra(3, 4, seed=1) == (objs, pods)


def test_dra_gpu_splits_every_other_node_into_mig_devices():
    objs, pods = DC.dra_gpu(2, 4, seed=0)
    slices = [o for o in objs if o["kind"] == "ResourceSlice"]
    sizes = sorted(len(s["spec"]["devices"]) for s in slices)
    assert sizes[0] == 8 and sizes[1] > 8          # 6 GPUs + 2 x 7 MIG devices
    build_cluster(objs + pods)
