"""Blocks of unlike GPU pods through the queue (``CompiledRuns`` over
``runtime.blocks.place_block`` with ``stop_at_failure`` and GpuShareFit's
compiled block) place exactly as one cycle after another: the default
profile (PostFilter plugins, NodeResourcesFit / BalancedAllocation /
TaintToleration / ImageLocality scores) plus the GPU plugins, with and
without GpuTopologyScore, on random GPU clusters (NVLink islands, NUMA
nodes, single-numa-node policy) with pods asking for shares, whole GPUs, one
NVLink island or one NUMA node, Guaranteed pods, pods that fit nowhere (and
take their own cycle with preemption), and cluster events between the
stretches (nodes added, changed, deleted; bound pods deleted).  Same
bindings, messages, GPU indices and NUMA pins batch on and off, and numpy
(no compiled blocks) the same."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorsched import synthetic
from tensorsched.framework.scheduler.cluster import build_cluster, pod_columns_from
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.generators.gpu_clusters import gpu_config
from tensorsched.topology.gpu import ANNO_GPU_COUNT, ANNO_GPU_MILLI
from tensorsched.topology.gpu_table import GpuTable, binding_gpus
from tensorsched.topology.node_topology import (
    ANNO_NODE_TOPOLOGY,
    ANNO_POD_PLACEMENT,
    dgx_annotation,
)

PREFER = [{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]


def _node(name, spec):
    gpus, islands, numa, single, cpu, spot = spec
    n = node_dict(name, cpu=str(cpu), memory="256Gi", pods="110",
                  extra={"nvidia.com/gpu": str(gpus)} if gpus else None,
                  labels={"nvidia.com/gpu.product": "A100"} if gpus else {},
                  taints=PREFER if spot else None)
    if gpus:
        topo = json.loads(dgx_annotation(gpus, islands, numa, str(cpu // numa), "128Gi"))
        topo["singleNumaNodePolicy"] = single
        n["metadata"]["annotations"] = {ANNO_NODE_TOPOLOGY: json.dumps(topo)}
    return n


node_specs = st.tuples(st.sampled_from([0, 4, 8, 8]), st.sampled_from([1, 2]),
                       st.sampled_from([1, 2]), st.booleans(),
                       st.sampled_from([16, 32, 64]), st.sampled_from([False] * 5 + [True]))


@st.composite
def pods(draw, name, kinds=("share", "share", "whole", "whole", "none", "big")):
    kind = draw(st.sampled_from(kinds))
    cpu = draw(st.sampled_from([1, 2, 4, 8]))
    mem = f"{draw(st.sampled_from([1, 8, 16]))}Gi"
    extra, annos = None, {}
    if kind == "share":
        annos = {ANNO_GPU_MILLI: str(draw(st.sampled_from([100, 250, 500, 750]))),
                 ANNO_GPU_COUNT: "1"}
    elif kind in ("whole", "big"):
        extra = {"nvidia.com/gpu": str(draw(st.sampled_from([1, 2, 4])) if kind == "whole"
                                        else 8)}
        place = draw(st.sampled_from(["", "", "nvlink-island", "single-numa-node",
                                      "nvlink-island,single-numa-node"]))
        if place:
            annos[ANNO_POD_PLACEMENT] = place
    p = pod_dict(name, cpu=str(cpu), memory=mem, extra=extra,
                 priority=draw(st.sampled_from([0, 0, 10])))
    if annos:
        p["metadata"]["annotations"] = annos
    if kind != "none" and draw(st.integers(0, 4)) == 0:
        # Guaranteed: single-numa-node on a node whose policy says so
        c = p["spec"]["containers"][0]
        c["resources"]["limits"] = dict(c["resources"]["requests"])
    return p


# DGX-like nodes only, whole GPUs and shares, no GPU policy score: the
# topology score and the row scores decide
topology_nodes = st.tuples(st.just(8), st.just(2), st.sampled_from([1, 2]), st.just(False),
                           st.sampled_from([32, 64]), st.just(False))
TOPOLOGY_KINDS = ("share", "whole", "whole", "whole")


@st.composite
def histories(draw, topology_only=False):
    """(node specs, [(events, pod dicts)], policy, topology score on, seed)."""
    specs = draw(st.lists(topology_nodes if topology_only else node_specs,
                          min_size=2, max_size=8))
    kinds = {"kinds": TOPOLOGY_KINDS} if topology_only else {}
    stretches, made = [], 0
    for b in range(draw(st.integers(1, 3))):
        events = []
        for _ in range(draw(st.integers(0, 3)) if b else 0):
            events.append((draw(st.sampled_from(["add", "update", "delete", "evict"])),
                           draw(st.integers(0, 50)), draw(node_specs)))
        count = draw(st.integers(1, 30))
        stretches.append((events, [draw(pods(f"p{made + j}", **kinds)) for j in range(count)]))
        made += count
    if topology_only:
        return specs, stretches, "Random", True, draw(st.integers(0, 2**32))
    policy = draw(st.sampled_from(["FGD", "FGD", "GpuPacking", "DotProd", "Random"]))
    return specs, stretches, policy, draw(st.booleans()), draw(st.integers(0, 2**32))


def _config(policy, topology):
    cfg = gpu_config(100, policy)
    if policy != "FGD":
        cfg["profiles"][0]["pluginConfig"] = [{"name": "GpuShareScore",
                                               "args": {"policy": policy}}]
    if not topology:
        plugins = cfg["profiles"][0]["plugins"]
        del plugins["preScore"]
        plugins["score"]["enabled"] = plugins["score"]["enabled"][:1]
    return cfg


def _apply(sched, events, added):
    state = sched.cluster.state
    for kind, i, spec in events:
        names = sorted(state.node_rows)
        if kind == "add":
            added.append(f"x{len(added)}")
            sched.add_node(_node(added[-1], spec))
        elif kind == "update" and names:
            sched.update_node(_node(names[i % len(names)], spec))
        elif kind == "delete" and len(names) > 1:
            sched.delete_node(names[i % len(names)])
        elif kind == "evict" and state.pods:
            bound = sorted(state.pods)
            sched.delete_pod(bound[i % len(bound)])


def _play(case, backend, batch):
    specs, stretches, policy, topology, seed = case
    nodes = [_node(f"n{i}", s) for i, s in enumerate(specs)]
    sched = Scheduler(build_cluster(nodes, _config(policy, topology)), backend, seed,
                      batch=batch)
    log, added = [], []
    for events, pending in stretches:
        _apply(sched, events, added)
        log += [(b.pod, b.node, b.message) for b in sched.schedule_pending(pending)[0]]
    state = sched.cluster.state
    t = GpuTable.of(state)
    t.check()
    pins = sorted((k, a.zone, a.cpu, a.mem) for k, a in t.alloc.items())
    return log, binding_gpus(state), pins, sched.run_lengths


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(histories())
def test_gpu_blocks_through_the_queue_place_as_one_at_a_time(case):
    blocks = _play(case, "numba", batch=True)
    one = _play(case, "numba", batch=False)
    assert blocks[:3] == one[:3]
    numpy = _play(case, "numpy", batch=True)
    assert numpy[:3] == one[:3]


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(histories(topology_only=True))
def test_gpu_blocks_with_topology_scores_place_as_one_at_a_time(case):
    blocks = _play(case, "numba", batch=True)
    one = _play(case, "numba", batch=False)
    assert blocks[:3] == one[:3]


def test_the_gpu_workload_is_placed_in_blocks():
    """The bench's GPU workload (constraints and GpuTopologyScore included)
    goes through the queue as blocks, placing as one at a time."""
    def play(batch):
        node_objs, pod_objs = synthetic.workload("gpu", 40, 300, 0)
        cluster = build_cluster(node_objs, synthetic.config("gpu", 100))
        sched = Scheduler(cluster, "numba", 0, batch=batch)
        out = sched.schedule_pending(pod_columns_from(pod_objs, cluster.resolve))[0]
        return ([(b.pod, b.node, b.message) for b in out], binding_gpus(cluster.state),
                sched.run_lengths)

    blocks, one = play(True), play(False)
    assert blocks[:2] == one[:2]
    assert max(blocks[2]) > 100       # long blocks formed, constraint pods inside them
    assert sum(1 for b in one[0] if b[1] is None) > 0      # and some pods fit nowhere
