"""GpuShareFit's compiled block with its top structure (``place_block``'s
per-class trees of the rows' tie keys): blocks placed with a tree for every
class, with none, and one arrival at a time giving the same rows and GPUs
over random GPU clusters with departures, node changes and pods that fit
nowhere between and inside blocks."""
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.parsing.pod_templates import PodTemplates
from tensorsched.framework.runtime.clock import SimulatedClock
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.kernels.gpu import _block as _gpu_block
from tensorsched.topology import plugins as P
from tensorsched.topology.gpu import ANNO_GPU_COUNT, ANNO_GPU_MILLI, ANNO_GPU_MODEL
from tensorsched.topology.gpu_table import GpuTable, binding_gpus
from tensorsched.topology.openb.trace import experiment_registry, openb_config

POLICIES = ("Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD")
TYPICAL = [{"cpu": 1000, "gpuCount": 1, "gpuMilli": 300, "weight": 2},
           {"cpu": 2000, "gpuCount": 1, "gpuMilli": 1000, "weight": 1},
           {"cpu": 500, "gpuCount": 2, "gpuMilli": 1000, "weight": 1}]


def _node(i, count, model, cpu):
    alloc = {"cpu": str(cpu), "memory": "64Gi", "pods": "110"}
    labels = {"kubernetes.io/hostname": f"n{i}"}
    if count:
        alloc["nvidia.com/gpu"] = str(count)
        labels["nvidia.com/gpu.product"] = model
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": labels},
            "spec": {}, "status": {"capacity": dict(alloc), "allocatable": alloc}}


def _pod(name, shape):
    cpu, kind, milli, num, model = shape
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": f"{cpu}m"}}}]}}
    if kind != "none":
        annos = {ANNO_GPU_MILLI: str(milli), ANNO_GPU_COUNT: str(num)}
        if model:
            annos[ANNO_GPU_MODEL] = model
        pod["metadata"]["annotations"] = annos
    return pod


NODE = st.tuples(st.sampled_from([0, 2, 4, 8]), st.sampled_from(["A100", "T4"]),
                 st.sampled_from([4, 16, 64]))
SHAPE = st.one_of(
    st.tuples(st.sampled_from([500, 1000, 4000]), st.just("share"),
              st.sampled_from([100, 300, 500]), st.just(1), st.sampled_from(["", "T4"])),
    st.tuples(st.sampled_from([1000, 8000]), st.just("whole"), st.just(1000),
              st.sampled_from([1, 2, 8]), st.just("")),
    st.tuples(st.sampled_from([500, 100000]), st.just("none"), st.just(0), st.just(0),
              st.just("")))
STEP = st.one_of(
    st.tuples(st.just("arrive"), st.lists(st.integers(0, 3), min_size=1, max_size=25)),
    st.tuples(st.just("leave"), st.integers(0, 200)),
    st.tuples(st.just("node"), st.integers(0, 11), NODE))


def _play(nodes, shapes, steps, policy, batch):
    cfg = openb_config(policy, TYPICAL if policy == "FGD" else None)
    cluster = build_cluster([_node(i, *nd) for i, nd in enumerate(nodes)], cfg,
                            experiment_registry())
    sched = Scheduler(cluster, "numba", 5, clock=SimulatedClock())
    # pods of one shape parsed from one template share a memo: one class
    # of the block, whose tree outlives other classes' placements
    templates = PodTemplates(parse_pod, finish=cluster.resolve)
    t, k, placed = 1.0, 0, []
    for step in steps:
        if step[0] == "arrive":
            pods = []
            for s in step[1]:
                pods.append(_pod(f"p{k}", shapes[s % len(shapes)]))
                k += 1
            times = t + np.arange(len(pods), dtype=np.float64)
            t += len(pods)
            i = 0
            while i < len(pods):
                got = 0
                if batch:
                    recs = [templates.parse(p) for p in pods[i:]]
                    got = sched.schedule_arrivals(recs, times[i:]).shape[0]
                if got == 0:        # the rest one arrival at a time
                    sched.clock.set(float(times[i]))
                    sched.add_pod(pods[i])
                    sched.run_until_idle()
                    got = 1
                i += got
            placed = sorted(cluster.state.pods.keys())
        elif step[0] == "leave" and placed:
            key = placed.pop(step[1] % len(placed))
            if key in cluster.state.pods:
                sched.delete_pod(key)
                sched.run_until_idle()
        elif step[0] == "node" and step[1] < len(nodes):
            sched.update_node(_node(step[1], *step[2]))
            sched.run_until_idle()
    GpuTable.of(cluster.state).check()
    return ({key: e.node_row for key, e in cluster.state.pods.items()},
            binding_gpus(cluster.state), sorted(sched.queue.infos), sched.block_pods)


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=st.lists(NODE, min_size=3, max_size=12),
       shapes=st.lists(SHAPE, min_size=1, max_size=4),
       steps=st.lists(STEP, min_size=1, max_size=6))
def test_blocks_with_trees_equal_without_and_one_by_one(nodes, shapes, steps, policy):
    with patch.object(P, "TREE_ROWS_PER_CLASS", 1), patch.object(P, "TREE_MIN_PODS", 1):
        trees = _play(nodes, shapes, steps, policy, True)
    with patch.object(P, "MAX_TREES", 0):
        plain = _play(nodes, shapes, steps, policy, True)
    alone = _play(nodes, shapes, steps, policy, False)
    assert trees[:3] == plain[:3] == alone[:3]
    assert alone[3] == 0 and trees[3] == plain[3]


def test_block_trees_chosen_by_pods_per_class():
    """Trees for the classes with the most pods (at least TREE_MIN_PODS),
    one per TREE_ROWS_PER_CLASS rows; none under BestFit."""
    cls = np.array([0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3], np.int64)
    size, slot, tm, tc, built, *_ = P._block_trees(cls, 4, 600, 5)
    assert size == 1024 and slot.tolist() == [-1, 1, 0, -1] and tm.shape == (2, 2048)
    assert built.tolist() == [0, 0, 0, 0]
    size, slot, *_ = P._block_trees(cls, 4, 300, 5)
    assert slot.tolist() == [-1, -1, 0, -1]
    size, slot, *_ = P._block_trees(cls, 4, 600, 4)
    assert size == 0 and (slot < 0).all()


@pytest.mark.parametrize("policy", ["FGD", "GpuPacking"])
def test_alternating_shapes_share_rows_between_trees(policy):
    """Shares of two sizes and whole GPUs taking turns on a few 8-GPU nodes:
    each class's tree sees the rows the others just filled, and the pod's
    GPU on its row is its own class's pick."""
    nodes = [(8, "A100", 64)] * 3 + [(4, "A100", 16)] * 2
    shapes = [(500, "share", 300, 1, ""), (1000, "whole", 1000, 1, ""),
              (500, "share", 500, 1, ""), (1000, "share", 100, 1, "")]
    steps = [("arrive", [0, 1, 2, 3, 2, 0, 1, 3] * 6), ("leave", 4), ("leave", 9),
             ("arrive", [3, 2, 1, 0] * 6)]
    with patch.object(P, "TREE_ROWS_PER_CLASS", 1), patch.object(P, "TREE_MIN_PODS", 1):
        trees = _play(nodes, shapes, steps, policy, True)
    alone = _play(nodes, shapes, steps, policy, False)
    assert trees[3] > 40 and trees[:3] == alone[:3]
