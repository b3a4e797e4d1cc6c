"""Runs where every scored node ties: identical nodes under a profile with
no score plugin.  The tie rule alone decides each pod's node (the highest
``tie_rank(seed, row, pods on the node)``, the lower row on an equal rank),
so the expected placements are derived here from the scalar oracle's
``tie_rank`` and kube-scheduler's window (percentageOfNodesToScore from the
rotating start), independently of the engines: the compiled runs (the key
tree with every node scored, the window trees below it, the device run),
the host's one-by-one cycles and numpy must all give them.  The former
(seed, attempt)-th tie in evaluation order gives other nodes."""

from __future__ import annotations

import pytest
from reference.oracle import tie_rank
from support.backends import needs_cuda

from tensorsched.framework.runtime.framework import num_feasible_nodes_to_find
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels.fused import backends


def _config(percentage):
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": percentage,
            "profiles": [{"schedulerName": "default-scheduler",
                          "plugins": {"score": {"disabled": [{"name": "*"}]}}}]}


def _expected(n, count, percentage, seed):
    """Node names by the tie rule over each pod's window of identical
    nodes (every node feasible: the window is the next k rows from the
    rotating start, k = numFeasibleNodesToFind)."""
    k = num_feasible_nodes_to_find(percentage, n)
    pods = [0] * n
    start = 0
    out = []
    for _ in range(count):
        window = [(start + j) % n for j in range(k)]
        row = max(window, key=lambda r: (tie_rank(seed, r, pods[r]), -r))
        pods[row] += 1
        out.append(f"n{row:03d}")
        start = (start + k) % n
    return out


def _placed(n, count, percentage, seed, backend, batch):
    nodes = [node_dict(f"n{i:03d}", cpu="64") for i in range(n)]
    pods = [pod_dict(f"p{i}", cpu="100m", created=i) for i in range(count)]
    sched = Scheduler(build_cluster(nodes, _config(percentage)), backend, seed, batch=batch)
    got = [o.node for o in sched.schedule_pending(pods)[0]]
    return got, sched.run_lengths


@pytest.mark.parametrize("percentage", [100, 30])
@pytest.mark.parametrize("backend, batch", [("numba", True), ("numba", False),
                                            ("numpy", True)])
def test_identical_nodes_follow_the_tie_rule(percentage, backend, batch):
    """120 identical nodes (over kube-scheduler's 100-node minimum, so 30%
    scores a window of 100), 150 alike pods: a run through the key tree
    (100%) or the window trees (30%), and one-by-one cycles."""
    n, count, seed = 120, 150, 7
    want = _expected(n, count, percentage, seed)
    assert len(set(want)) > n // 2          # the rule spreads the ties
    got, runs = _placed(n, count, percentage, seed, backend, batch)
    assert got == want
    if batch and backend == "numba":
        assert runs and max(runs) >= backends.WINDOW_TREE_MIN_RUN


@pytest.mark.cudasim
@needs_cuda
def test_identical_nodes_follow_the_tie_rule_on_the_device():
    """The device run (one block, the largest key then the lowest row by
    block reductions) on a cluster the simulator runs quickly."""
    n, count, seed = 12, 20, 3
    got, runs = _placed(n, count, 100, seed, "cuda", True)
    assert runs and got == _expected(n, count, 100, seed)
