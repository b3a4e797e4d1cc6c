"""``topology.sim_metrics``: the typical pods of a workload (most frequent
shapes covering 95 %), and the GPU time-series columns: allocated and
fragmented GPU milli (FGD's measure) as shares of capacity and of the idle
GPUs, kept per changed node and equal to measuring afresh."""

from __future__ import annotations

import pytest

from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.generators.gpu_clusters import gpu_config, gpu_node
from tensorsched.topology.sim_metrics import gpu_metrics, typical_shapes

WHOLE = [{"cpu": 1000, "gpuCount": 1, "gpuMilli": 1000, "models": "", "weight": 1.0}]


def gpu_pod(name, milli, count, node=None):
    p = pod_dict(name, cpu="1", memory="1Gi")
    p["metadata"]["annotations"] = {"alibabacloud.com/gpu-milli": str(milli),
                                    "alibabacloud.com/gpu-count": str(count)}
    if node:
        p["spec"]["nodeName"] = node
    return p


def test_typical_shapes_most_frequent_first_until_the_threshold():
    shapes = [(1000, 1, 1000, "")] * 6 + [(2000, 2, 1000, "A100")] * 3 + [(0, 1, 500, "")]
    got = typical_shapes(shapes)
    assert got == [
        {"cpu": 1000, "gpuCount": 1, "gpuMilli": 1000, "models": "", "weight": 6.0},
        {"cpu": 2000, "gpuCount": 2, "gpuMilli": 1000, "models": "A100", "weight": 3.0},
        # 9 of 10 is below 95 %: the last shape too, its cpu 0 read as 100m
        {"cpu": 100, "gpuCount": 1, "gpuMilli": 500, "models": "", "weight": 1.0}]
    assert len(typical_shapes(shapes, threshold=90)) == 2
    assert len(typical_shapes(shapes, threshold=60)) == 1
    assert typical_shapes([]) == []


def test_typical_shapes_break_count_ties_the_same_way_every_time():
    shapes = [(1000, 1, 1000, ""), (2000, 1, 1000, "")]
    assert typical_shapes(shapes) == typical_shapes(list(reversed(shapes)))


def test_columns_without_typical_pods_are_allocation_only():
    assert set(gpu_metrics()) == {"gpu_alloc_pct"}
    assert set(gpu_metrics(WHOLE)) == {"gpu_alloc_pct", "gpu_frag_pct", "gpu_frag_ratio"}


def test_allocation_and_fragmentation_of_a_small_cluster():
    # 2 nodes x 8 GPUs = 16000 milli; 2 whole GPUs and half a GPU in use
    cl = build_cluster([gpu_node("a"), gpu_node("b"), gpu_pod("x", 1000, 2, "a"),
                        gpu_pod("y", 500, 1, "b")], gpu_config())
    cols = gpu_metrics(WHOLE)
    assert cols["gpu_alloc_pct"](cl) == pytest.approx(100 * 2500 / 16000)
    # a whole-GPU typical pod cannot use the half GPU left on b: 500 fragmented
    assert cols["gpu_frag_pct"](cl) == pytest.approx(100 * 500 / 16000)
    assert cols["gpu_frag_ratio"](cl) == pytest.approx(100 * 500 / 13500)


def test_a_cluster_without_gpus_has_no_allocation_share():
    cl = build_cluster([node_dict("cpu-only")], gpu_config())
    cols = gpu_metrics(WHOLE)
    assert cols["gpu_alloc_pct"](cl) is None and cols["gpu_frag_pct"](cl) is None
    assert cols["gpu_frag_ratio"](cl) == 0.0


def test_kept_measures_follow_the_cluster_and_equal_a_fresh_measure():
    cl = build_cluster([gpu_node("a"), gpu_node("b"), gpu_pod("x", 1000, 2, "a")],
                       gpu_config())
    kept = gpu_metrics(WHOLE)
    assert kept["gpu_frag_pct"](cl) == 0.0
    before = kept["gpu_alloc_pct"](cl)
    Scheduler(cl, "numpy").schedule_pending([gpu_pod("s1", 300, 1), gpu_pod("s2", 1000, 3)])
    after = kept["gpu_alloc_pct"](cl)
    assert after == pytest.approx(before + 100 * 3300 / 16000)
    fresh = gpu_metrics(WHOLE)
    for name in kept:
        assert kept[name](cl) == pytest.approx(fresh[name](cl))
    assert kept["gpu_frag_pct"](cl) > 0          # the 300-milli share leaves 700 unusable
