"""The batched node-local engine's CUDA kernel (a block per cluster,
shuffles emulated under the simulator) gives the CPU twin's answers: random
clusters (taints, node affinity, unschedulable nodes, images, an extended
resource, the three Fit strategies), node subsets, more nodes than threads,
the percentage of nodes to score's scan window, chunks by a small budget,
InterPodAffinity's static filter bits and min-max normalized score (and a
probe group's own, ``static_group``), the same diagnosis counts for the
pods that fit nowhere, and many identical nodes tied cycle after cycle
(the seeded tie rule's block reduction)."""

import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda
from support.launch_guard import device_arrays_only  # noqa: F401 (autouse)
from support.local_clusters import (
    affinity_bound_pods,
    affinity_pending,
    bound_pods,
    config,
    nodes,
    workloads,
)

from tensorsched.framework.capacity.batch_probe import LocalProber
from tensorsched.framework.capacity.common import bound_pods as bound_of
from tensorsched.framework.parsing.manifests import parse_objects
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels.batch.local_cpu import run_local_batch

# splitmix64 wraps mod 2**64 by design (quiet on the simulator: kernels.mod64); any
# other RuntimeWarning fails
pytestmark = [pytest.mark.cudasim, needs_cuda,
              pytest.mark.filterwarnings("error::RuntimeWarning")]


def _batch(objects, cfg, pending, seed, subsets, fail_cap=3):
    cl = build_cluster(copy.deepcopy(list(objects)), cfg)
    pods = [cl.resolve(p) for p in parse_objects(copy.deepcopy(pending)).pods]
    prober = LocalProber(cl, list(cl.objects.nodes), bound_of(cl), pods, seed)
    names = [n.name for n in cl.objects.nodes]
    sets = [[n for n, keep in zip(names, mask) if keep] for mask in subsets]
    return prober.batch(sets, [list(range(len(pods)))] * len(sets), fail_cap)[0]


def _same(batch, budget=None):
    from tensorsched.kernels.batch.local_cuda import run_local_batch_cuda
    twin = run_local_batch(batch)
    dev = run_local_batch_cuda(batch, budget=budget)
    for a, b in zip(twin, dev):
        np.testing.assert_array_equal(a, b)
    return twin


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_cuda_equals_the_twin_on_random_clusters(data):
    ns = data.draw(nodes(min_size=2, max_size=18))
    bd = bound_pods(data.draw, ns)
    pending = data.draw(workloads(max_pods=5))
    subsets = [[True] * len(ns)] + [[data.draw(st.booleans()) for _ in ns]]
    batch = _batch(ns + bd, config(data.draw(st.integers(0, 2))), pending,
                   data.draw(st.integers(0, 5)), subsets)
    _same(batch)


def test_cuda_scan_window_and_chunks():
    # 104 nodes: 100 to find at 50%, the start rotating; two clusters in
    # chunks of one (a small budget)
    ns = [node_dict(f"n{i:03d}", cpu="12"[i % 2], labels={"zone": "abc"[i % 3]},
                    taints=[{"key": "spot", "effect": "PreferNoSchedule"}] if i % 7 == 0 else None)
          for i in range(104)]
    pending = [pod_dict(f"p{k}", cpu=("300m", "900m")[k % 2]) for k in range(6)]
    subsets = [[True] * 104, [i != 3 for i in range(104)]]
    batch = _batch(ns, config(0, pct=50), pending, 1, subsets)
    placed, bound, _, _ = _same(batch, budget=30_000)
    assert bound.tolist() == [6, 6] and len(set(placed[:6].tolist())) > 3


def test_cuda_counts_the_failures_as_the_twin():
    # big pods fit nowhere: tainted, unschedulable and full nodes decide
    # them; 24 nodes, two rounds of the simulator's 16 threads
    ns = [node_dict(f"n{i}", cpu="1", taints=[{"key": "dedicated", "value": "x",
                                                 "effect": "NoSchedule"}] if i % 3 == 0 else None,
                    unschedulable=i == 4) for i in range(24)]
    pending = [pod_dict(f"p{k}", cpu=("600m", "2")[k % 2]) for k in range(8)]
    batch = _batch(ns, config(0), pending, 2, [[True] * 24, [i % 2 == 0 for i in range(24)]],
                   fail_cap=2)
    _, _, fail_pod, fail_counts = _same(batch, budget=60_000)
    assert (fail_pod >= 0).all() and fail_counts.sum(axis=1).min() > 0


def test_cuda_pod_affinity_equals_the_twin():
    # 20 nodes (more than the simulator's threads) in 4 zones; bound pods
    # with terms on web pods, web pending pods preferring db pods' zones
    ns = [node_dict(f"n{i:02d}", cpu="2", labels={"zone": "abcd"[i % 4]}) for i in range(20)]
    bd = []
    for k in range(8):
        spec = {"nodeName": f"n{(3 * k) % 20:02d}"}
        term = {"topologyKey": ("zone", "kubernetes.io/hostname")[k % 2],
                "labelSelector": {"matchLabels": {"app": "web"}}}
        kind = ("podAffinity", "podAntiAffinity")[k % 3 == 0]
        spec["affinity"] = {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10 + 7 * k, "podAffinityTerm": term}]}}
        if k == 3:      # web pods stay off n09
            spec["affinity"][kind]["requiredDuringSchedulingIgnoredDuringExecution"] = [term]
        bd.append(pod_dict(f"b{k}", labels={"app": ("db", "web")[k % 2]}, spec=spec))
    pref = {"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 30, "podAffinityTerm": {"topologyKey": "zone",
                                           "labelSelector": {"matchLabels": {"app": "db"}}}}]}}}
    pending = [pod_dict(f"p{k}", cpu=("300m", "900m")[k % 2], labels={"app": "web"},
                        spec=pref if k % 2 else None) for k in range(8)]
    subsets = [[True] * 20, [i not in (2, 7, 11) for i in range(20)]]     # pods stay
    batch = _batch(ns + bd, config(0, pct=100), pending, 1, subsets)
    assert batch.c_active[:, 5].all() and (batch.static_bits != 0).any()
    placed, bound, _, _ = _same(batch)
    assert bound.min() > 4


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_cuda_pod_affinity_equals_the_twin_on_random_clusters(data):
    ns = data.draw(nodes(min_size=2, max_size=6))
    bd = affinity_bound_pods(data.draw, ns)
    pending = data.draw(affinity_pending(max_pods=4))
    batch = _batch(ns + bd, config(data.draw(st.integers(0, 2))), pending,
                   data.draw(st.integers(0, 5)), [[True] * len(ns)])
    _same(batch)


def test_cuda_drops_a_group_after_its_first_failure_as_the_twin():
    # 600m pods of two groups fill 1-cpu nodes, 2-cpu pods of a third fail
    # at once: each group's later pods are dropped (no attempts), the
    # tie-breaks of the others as the twin's; a cluster without nodes too
    ns = [node_dict(f"n{i}", cpu="1") for i in range(6)]
    pending = [pod_dict(f"p{k}", cpu=("600m", "2")[k % 3 == 2]) for k in range(15)]
    batch = _batch(ns, config(0), pending, 3, [[True] * 6, [False] * 6], fail_cap=3)
    batch = batch._replace(pod_group=np.tile(np.arange(3), 10))
    placed, bound, fail_pod, _ = _same(batch, budget=60_000)
    assert bound.tolist() == [6, 0] and fail_pod.tolist()[3:] == [0, 1, 2]
    assert (placed[:15][2::3] == -1).all()


@pytest.mark.parametrize("to_find", [24, 9])
def test_cuda_many_identical_nodes_tie_as_the_twin(to_find):
    # 24 identical nodes (more than a block's threads under the simulator:
    # two rounds of its 16), 54 pods of 400m: every cycle ties the window's
    # least loaded nodes, the tie rule picks one by its rank (the pods on
    # it move it); every node scored, and a scan window; the last 6 pods
    # fit nowhere
    from support.local_batches import hand_batch
    n = 24
    b = hand_batch([list(range(n))], [[0] * 54], alloc_cpu=(1000,) * n)._replace(
        seed=5, num_to_find=np.array([to_find]))
    rows, bound, _, _ = _same(b)
    assert bound.tolist() == [48] and (rows[48:] == -1).all()


def test_cuda_static_groups_equal_the_twin():
    # a guard on n0 whose anti-affinity closes zone a to web pods, a db pod
    # there that web pods prefer: probes without n0 read their group's
    # constants (the guard and the db pod gone), the others the base
    ns = [node_dict(f"n{i}", cpu="2", labels={"zone": "aabb"[i]}) for i in range(4)]
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}]}}
    guard = pod_dict("guard", spec={"nodeName": "n0", "affinity": anti})
    db = pod_dict("db", labels={"app": "db"}, spec={"nodeName": "n2"})
    pref = {"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 40, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                           "labelSelector": {"matchLabels": {"app": "db"}}}}]}}}
    pending = [pod_dict(f"w{k}", cpu="1200m", labels={"app": "web"}, spec=pref)
               for k in range(3)]
    subsets = [[True] * 4, [False, True, True, True], [True, True, False, False]]
    batch = _batch(ns + [guard, db], config(0), pending, 2, subsets, fail_cap=1)
    assert batch.static_group.tolist() == [-1, 0, 1]
    placed, bound, fail_pod, _ = _same(batch)
    # zone a closed with the guard (clusters 0 and 2), open without it
    assert bound.tolist() == [2, 3, 0] and fail_pod[2] >= 0
