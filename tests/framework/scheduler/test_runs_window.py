"""Runs under a percentageOfNodesToScore below every node take each pod's
window (from the rotating start to the k-th feasible node) from trees over
the evaluation positions (``place_run_window``) instead of a scan: the same
nodes, in the same order, as one-by-one cycles, on random clusters,
percentages and normalized scores (preferred node affinity,
PreferNoSchedule taints), and numpy (no compiled runs) agrees."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.kernels.fused import _numba, backends

PREFER = [{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]


def _preferred(zone, weight):
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "preference": {"matchExpressions": [
            {"key": "zone", "operator": "In", "values": [zone]}]}}]}}


@st.composite
def window_workloads(draw):
    """(nodes, pods, percentage, seed): over 100 nodes (kube-scheduler
    scores every node of smaller clusters), alike pods in runs."""
    n = draw(st.integers(101, 260))
    kinds = draw(st.lists(st.tuples(st.sampled_from(["1", "2", "4"]), st.booleans()),
                          min_size=1, max_size=4))
    nodes = []
    for i in range(n):
        cpu, spot = kinds[draw(st.integers(0, len(kinds) - 1))] if i % 7 == 0 else kinds[0]
        nodes.append(node_dict(f"n{i:03d}", cpu=cpu, labels={"zone": f"z{i % 3}"},
                               taints=PREFER if spot else None))
    templates = draw(st.lists(st.tuples(
        st.sampled_from(["100m", "300m", "900m"]), st.sampled_from([None, "z0", "z2"]),
        st.sampled_from([1, 5, 100])), min_size=1, max_size=3))
    pods = []
    for t in range(draw(st.integers(1, 3))):
        cpu, zone, weight = templates[draw(st.integers(0, len(templates) - 1))]
        spec = {"affinity": _preferred(zone, weight)} if zone else {}
        for _ in range(draw(st.integers(1, 120))):
            pods.append(pod_dict(f"p{len(pods)}", cpu=cpu, created=len(pods), spec=spec))
    percentage = draw(st.sampled_from([0, 1, 5, 20, 45, 70]))
    return nodes, pods, percentage, draw(st.integers(0, 2**32))


def _play(nodes, pods, percentage, seed, backend, batch):
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "percentageOfNodesToScore": percentage}
    sched = Scheduler(build_cluster(nodes, cfg), backend, seed, batch=batch)
    half = len(pods) // 2
    log = []
    for part in (pods[:half], pods[half:]):        # the rotation carries over
        log += [(b.pod, b.node, b.message) for b in sched.schedule_pending(part)[0]]
    return log, sched.cluster.state.requested.copy(), sched.next_start_index, sched.run_lengths


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(window_workloads(), st.sampled_from([1, 32]))
def test_window_runs_place_exactly_as_one_by_one(case, min_run):
    nodes, pods, percentage, seed = case
    keep = backends.WINDOW_TREE_MIN_RUN
    backends.WINDOW_TREE_MIN_RUN = min_run      # 1: every run of two or more takes the trees
    try:
        runs = _play(nodes, pods, percentage, seed, "numba", batch=True)
    finally:
        backends.WINDOW_TREE_MIN_RUN = keep
    one_by_one = _play(nodes, pods, percentage, seed, "numba", batch=False)
    assert runs[0] == one_by_one[0]
    assert np.array_equal(runs[1], one_by_one[1])
    assert runs[2] % len(nodes) == one_by_one[2] % len(nodes)
    numpy = _play(nodes, pods, percentage, seed, "numpy", batch=True)
    assert numpy[0] == one_by_one[0]


def test_window_trees_take_the_run(monkeypatch):
    """A long run under the default percentage is one compiled call through
    the window kernel (not the scan), and places as one by one."""
    calls = []
    nodes = [node_dict(f"n{i:03d}", cpu=str(1 + i % 4), labels={"zone": f"z{i % 3}"},
                       taints=PREFER if i % 5 == 0 else None) for i in range(400)]
    pods = [pod_dict(f"p{i}", cpu="200m", created=i) for i in range(600)]
    build = _numba.build_place_run

    def counting(by_row):
        whole, scan, window = build(by_row)

        def counted(*a):
            calls.append(a[0])
            return window(*a)
        return whole, scan, counted

    monkeypatch.setattr(_numba, "build_place_run", counting)
    runs = _play(nodes, pods, 0, 3, "numba", batch=True)
    monkeypatch.setattr(_numba, "build_place_run", build)
    one_by_one = _play(nodes, pods, 0, 3, "numba", batch=False)
    assert calls == [300, 300] and runs[3] == [300, 300]     # each half one run
    assert runs[0] == one_by_one[0]
