"""Window runs (percentageOfNodesToScore below every node, the default
adaptive one included) across cluster events: between batches of pending
pods nodes are added, changed and deleted and bound pods deleted; the
compiled runs (trees over the evaluation positions) place exactly as one at
a time, and numpy (no compiled runs) as numba."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.kernels.fused import backends

PREFER = [{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]


def _node(name, cpu, zone, spot):
    return node_dict(name, cpu=cpu, labels={"zone": zone}, taints=PREFER if spot else None)


@st.composite
def histories(draw):
    """(nodes, [(events, pods)], percentage, seed): batches of alike pods,
    each after a few events ("add"/"update" a node, "delete" a node, "evict"
    the i-th bound pod)."""
    n = draw(st.integers(101, 200))
    nodes = [_node(f"n{i:03d}", draw(st.sampled_from(["1", "2"])) if i % 9 == 0 else "2",
                   f"z{i % 3}", i % 5 == 0) for i in range(n)]
    batches, made = [], 0
    for b in range(draw(st.integers(2, 3))):
        events = []
        for _ in range(draw(st.integers(0, 4)) if b else 0):
            kind = draw(st.sampled_from(["add", "update", "delete", "evict"]))
            i = draw(st.integers(0, n - 1))
            spec = (draw(st.sampled_from(["1", "2", "4"])), draw(st.booleans()))
            events.append((kind, i, spec))
        cpu = draw(st.sampled_from(["100m", "300m", "700m"]))
        zone = draw(st.sampled_from([None, "z1"]))
        spec = {"affinity": {"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 7, "preference": {
                "matchExpressions": [{"key": "zone", "operator": "In",
                                      "values": [zone]}]}}]}}} if zone else {}
        count = draw(st.integers(1, 90))
        pods = [pod_dict(f"p{made + j}", cpu=cpu, created=made + j, spec=spec)
                for j in range(count)]
        made += count
        batches.append((events, pods))
    return nodes, batches, draw(st.sampled_from([0, 0, 3, 10, 40])), draw(st.integers(0, 2**32))


def _apply(sched, events, added):
    state = sched.cluster.state
    for kind, i, (cpu, spot) in events:
        names = sorted(state.node_rows)
        if kind == "add":
            added.append(f"x{len(added):03d}")
            sched.add_node(_node(added[-1], cpu, f"z{i % 3}", spot))
        elif kind == "update" and names:
            sched.update_node(_node(names[i % len(names)], cpu, f"z{i % 3}", spot))
        elif kind == "delete" and len(names) > 101:
            sched.delete_node(names[i % len(names)])
        elif kind == "evict" and state.pods:
            bound = sorted(state.pods)
            sched.delete_pod(bound[i % len(bound)])


def _play(nodes, batches, percentage, seed, backend, batch):
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "percentageOfNodesToScore": percentage}
    sched = Scheduler(build_cluster(nodes, cfg), backend, seed, batch=batch)
    log, added = [], []
    for events, pods in batches:
        _apply(sched, events, added)
        log += [(b.pod, b.node, b.message) for b in sched.schedule_pending(pods)[0]]
    state = sched.cluster.state
    placed = sorted((k, state.node_name(r.node_row)) for k, r in state.pods.items())
    return log, placed, sched.next_start_index


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(histories(), st.sampled_from([1, 32]))
def test_window_runs_across_events_place_as_one_at_a_time(case, min_run):
    nodes, batches, percentage, seed = case
    keep = backends.WINDOW_TREE_MIN_RUN
    backends.WINDOW_TREE_MIN_RUN = min_run      # 1: every run of two or more takes the trees
    try:
        runs = _play(nodes, batches, percentage, seed, "numba", batch=True)
    finally:
        backends.WINDOW_TREE_MIN_RUN = keep
    one = _play(nodes, batches, percentage, seed, "numba", batch=False)
    assert runs[0] == one[0] and runs[1] == one[1] and runs[2] == one[2]
    numpy = _play(nodes, batches, percentage, seed, "numpy", batch=True)
    assert numpy[0] == one[0] and numpy[1] == one[1]
    assert np.any([b[1] is not None for b in one[0]])
