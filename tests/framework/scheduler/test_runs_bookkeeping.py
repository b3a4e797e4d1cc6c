"""A run placed by one sort and booked in bulk (the bound-pod table's
deferred index, the outcomes as one key -> node dict, events sent after
the run) leaves what one cycle per pod leaves: the outcomes in order, every
event a subscriber hears with its time, the bound-pod table (bind order and
records built back), each node's pods, the requested columns, what a state
listener hears, the metrics on the simulated clock, and the pending pods'
failure messages.  Random runs of a few templates (owners, labels, uids),
longer than the nodes hold (so runs end in a failed pod), with and without
a subscriber (the bulk branch of the binding bookkeeping and the per-pod
one)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.heard_pods import bound_state, watch
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels.fused import run_sort

CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
          "percentageOfNodesToScore": 100}


@pytest.fixture(autouse=True)
def every_run_sorted(monkeypatch):
    """The sort path takes short runs too."""
    monkeypatch.setattr(run_sort, "ENABLED", True)
    monkeypatch.setattr(run_sort, "CPU_MIN_SHARE", 0.0)


def _template_pod(name: str, t: int, k: int, owner: bool, labels: bool, uid: bool) -> dict:
    obj = pod_dict(name, cpu=("300m", "700m", "1")[t], memory=("256Mi", "1Gi", "512Mi")[t],
                   created=k, labels={"app": f"a{t}", "tier": "web"} if labels else None)
    if owner:
        obj["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                               "name": f"rs{t}", "uid": f"rs-uid-{t}",
                                               "controller": True}]
    if uid:
        obj["metadata"]["uid"] = f"uid-{name}"
    return obj


@st.composite
def workloads(draw):
    n = draw(st.integers(2, 9))
    nodes = [node_dict(f"n{i}", cpu=str(draw(st.sampled_from([2, 4]))),
                       memory=f"{draw(st.sampled_from([2, 8]))}Gi",
                       pods=str(draw(st.sampled_from([3, 5, 110]))))
             for i in range(n)]
    owner, labels = draw(st.booleans()), draw(st.booleans())
    pods, k = [], 0
    for _ in range(draw(st.integers(1, 4))):          # stretches of one template
        t = draw(st.integers(0, 2))
        for _ in range(draw(st.integers(1, 30))):
            pods.append(_template_pod(f"p{k:03d}", t, k, owner, labels,
                                      uid=draw(st.integers(0, 9)) == 0))
            k += 1
    return nodes, pods


def _play(nodes, pods, seed: int, batch: bool, listen: bool) -> dict:
    sched = Scheduler(build_cluster(nodes, CONFIG), "numba", seed, batch=batch)
    state = sched.cluster.state
    heard, events = watch(sched, listen)
    out, preemptions = sched.schedule_pending(pods)
    metrics = sched.metrics()
    for k in ("stage_seconds", "plugin_seconds"):
        metrics.pop(k)
    # which path placed the pods differs by design; the pods they placed do not
    placed_by, runs_by = metrics.pop("placed_by"), metrics.pop("runs_by")
    metrics["placed"] = sum(placed_by.values())
    assert all(runs_by[p] <= n for p, n in placed_by.items())
    return {
        "outcomes": [(b.pod, b.node, b.message, b.nominated_node, b.victims) for b in out],
        "preemptions": preemptions, "events": events, **bound_state(state),
        "heard": sorted(heard.events), "metrics": metrics,
        "runs": sched.run_lengths if batch else None,
    }


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(workloads(), st.integers(0, 2**31), st.booleans())
def test_bulk_bookkeeping_equals_one_cycle_per_pod(case, seed, listen):
    nodes, pods = case
    bulk = _play(nodes, pods, seed, True, listen)
    one = _play(nodes, pods, seed, False, listen)
    runs = bulk.pop("runs")
    one.pop("runs")
    assert bulk == one
    assert bulk["metrics"]["placed"] == len(bulk["bound"])
    if len(pods) > 1 and any(b[1] is None for b in bulk["outcomes"]):
        assert bulk["metrics"]["attempts"].get("unschedulable", 0) >= 1
    assert sum(runs) <= len(bulk["bound"])
