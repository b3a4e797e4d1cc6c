"""Runs of alike pods whose scores are node-local, every node scored, are
placed by one sort of per-node keys (``kernels.fused.run_sort``): the same
nodes, in the same order, as one cycle per pod (``batch=False`` on the
numpy backend: its cycles take ``tied_node``'s tie rule) and as the scalar
oracle, on random clusters with partly used nodes (non-monotone balanced scores), maxPods, PreferNoSchedule
taints, preferred node affinity, image locality, the three Fit strategies
and several weights, runs longer than the cluster holds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import oracle

from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels.fused import run_sort
from support.backends import needs_cuda

PREFER = {"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}
PREFER2 = {"key": "old", "value": "yes", "effect": "PreferNoSchedule"}
IMAGE = "registry.example/app:1"
SCORES = ("NodeResourcesFit", "NodeResourcesBalancedAllocation", "TaintToleration",
          "NodeAffinity", "ImageLocality")
STRATEGIES = {
    "LeastAllocated": {"type": "LeastAllocated"},
    "MostAllocated": {"type": "MostAllocated"},
    "RequestedToCapacityRatio": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
        "shape": [{"utilization": 0, "score": 10}, {"utilization": 60, "score": 2},
                  {"utilization": 100, "score": 7}]}},
}


@pytest.fixture(autouse=True)
def every_run_sorted(monkeypatch):
    """The sort path on (whatever TENSORSCHED_SORT_RUNS says), and the
    numba backend sorts short runs too (it leaves runs that would use few of
    their keys to the compiled run)."""
    monkeypatch.setattr(run_sort, "ENABLED", True)
    monkeypatch.setattr(run_sort, "CPU_MIN_SHARE", 0.0)


def config(strategy: str, weights: dict) -> dict:
    """Every default plugin, the five node-local scores at ``weights``,
    Fit scoring by ``strategy`` (cpu weight 2, memory 1); every node scored."""
    fit = dict(STRATEGIES[strategy], resources=[{"name": "cpu", "weight": 2},
                                                {"name": "memory", "weight": 1}])
    return {"apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration", "percentageOfNodesToScore": 100,
            "profiles": [{"schedulerName": "default-scheduler", "plugins": {"score": {
                "enabled": [{"name": n, "weight": weights[n]} for n in SCORES]}},
                "pluginConfig": [{"name": "NodeResourcesFit",
                                  "args": {"scoringStrategy": fit}}]}]}


def preferred(zone: str, weight: int) -> dict:
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "preference": {"matchExpressions": [
            {"key": "zone", "operator": "In", "values": [zone]}]}}]}}


@st.composite
def clusters(draw, max_nodes=24):
    """(objects: nodes and the pods bound on them, the run's pods, config):
    nodes of random size, partly used, some tainted or holding the image."""
    n = draw(st.integers(2, max_nodes))
    objects = []
    for i in range(n):
        taints = draw(st.sampled_from([None, [PREFER], [PREFER, PREFER2]]))
        images = [{"names": [IMAGE], "sizeBytes": 600 << 20}] if draw(st.booleans()) else None
        objects.append(node_dict(
            f"n{i:02d}", cpu=str(draw(st.sampled_from([1, 2, 4]))),
            memory=f"{draw(st.sampled_from([1, 2, 6]))}Gi",
            pods=str(draw(st.sampled_from([3, 7, 110]))), labels={"zone": f"z{i % 3}"},
            taints=taints, images=images))
        for b in range(draw(st.integers(0, 2))):
            cpu = draw(st.sampled_from(["50m", "300m", "700m"]))
            mem = draw(st.sampled_from(["64Mi", "300Mi", "900Mi"]))
            objects.append(pod_dict(f"b{i:02d}-{b}", cpu=cpu, memory=mem,
                                    spec={"nodeName": f"n{i:02d}"}))
    cpu = draw(st.sampled_from(["100m", "250m", None]))
    mem = draw(st.sampled_from(["128Mi", "400Mi", None]))
    zone = draw(st.sampled_from([None, "z0", "z1"]))
    spec = {"affinity": preferred(zone, draw(st.sampled_from([1, 40, 100])))} if zone else {}
    image = IMAGE if draw(st.booleans()) else "registry.example/other:2"
    run = [pod_dict(f"p{k:03d}", cpu=cpu, memory=mem, created=k, spec=dict(spec), image=image)
           for k in range(draw(st.integers(1, 90)))]
    weights = {name: draw(st.sampled_from([1, 2, 5])) for name in SCORES}
    cfg = config(draw(st.sampled_from(sorted(STRATEGIES))), weights)
    return objects, run, cfg


def play(objects, run, cfg, seed, backend, batch):
    sched = Scheduler(build_cluster(objects, cfg), backend, seed, batch=batch)
    log = [(b.pod, b.node, b.message) for b in sched.schedule_pending(run)[0]]
    return log, sched.cluster.state.requested.copy(), sched


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(clusters(), st.integers(0, 2**32))
def test_sorted_runs_place_exactly_as_one_by_one(case, seed):
    objects, run, cfg = case
    sorted_log, sorted_req, sched = play(objects, run, cfg, seed, "numba", batch=True)
    one_log, one_req, _ = play(objects, run, cfg, seed, "numpy", batch=False)
    assert sorted_log == one_log
    assert np.array_equal(sorted_req, one_req)
    if len(run) > 1:
        assert backend_of(sched).sorted_runs >= 1


def test_a_long_run_is_one_sort_and_stops_where_nodes_run_out():
    """A run longer than the cluster holds: one sort places what fits, in
    the one-by-one order; the rest stay pending with the cycle's message."""
    objects = [node_dict(f"n{i}", cpu=str(1 + i % 3), memory="2Gi", pods=str(3 + i),
                         taints=[PREFER] if i % 2 else None) for i in range(6)]
    objects.append(pod_dict("used", cpu="600m", memory="1Gi", spec={"nodeName": "n2"}))
    run = [pod_dict(f"p{k}", cpu="200m", memory="300Mi", created=k) for k in range(80)]
    cfg = config("LeastAllocated", dict.fromkeys(SCORES, 1))
    sorted_log, sorted_req, sched = play(objects, run, cfg, 5, "numba", batch=True)
    one_log, one_req, _ = play(objects, run, cfg, 5, "numpy", batch=False)
    assert sorted_log == one_log
    assert np.array_equal(sorted_req, one_req)
    placed = [node for _, node, _ in sorted_log if node]
    assert 0 < len(placed) < len(run)
    assert sched.run_lengths and sched.run_lengths[0] == len(placed)
    assert backend_of(sched).sorted_runs == 1


def test_the_switch_leaves_runs_to_the_compiled_run(monkeypatch):
    objects = [node_dict(f"n{i}", cpu="2") for i in range(4)]
    run = [pod_dict(f"p{k}", cpu="300m", created=k) for k in range(10)]
    cfg = config("LeastAllocated", dict.fromkeys(SCORES, 1))
    monkeypatch.setattr(run_sort, "ENABLED", False)
    sched = play(objects, run, cfg, 1, "numba", batch=True)[2]
    monkeypatch.setattr(run_sort, "ENABLED", True)
    sched_on = play(objects, run, cfg, 1, "numba", batch=True)[2]
    assert backend_of(sched).sorted_runs == 0
    assert backend_of(sched_on).sorted_runs == 1


def backend_of(sched):
    (fw,) = sched.cluster.frameworks.values()
    return fw.backend


def oracle_run(objects, run, profile, seed):
    """The run one pod after another through the scalar oracle, each pod
    then bound where the oracle put it."""
    objects = list(objects)
    out = []
    for pod in run:
        got = oracle.oracle_explain(objects, pod, profile, seed)["selected"]
        out.append(got)
        if got is None:
            break
        objects.append(dict(pod, spec=dict(pod["spec"], nodeName=got)))
    return out


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_sorted_runs_agree_with_the_oracle(strategy):
    rng = np.random.default_rng(len(strategy))
    objects = []
    for i in range(7):
        objects.append(node_dict(
            f"n{i}", cpu=str(rng.choice([1, 2, 4])), memory=f"{rng.choice([1, 3])}Gi",
            pods=str(rng.choice([4, 110])), labels={"zone": f"z{i % 3}"},
            taints=[PREFER] if i % 3 == 1 else None,
            images=[{"names": [IMAGE], "sizeBytes": 900 << 20}] if i % 2 else None))
        if i % 2 == 0:
            objects.append(pod_dict(f"b{i}", cpu="450m", memory="200Mi",
                                    spec={"nodeName": f"n{i}"}))
    run = [pod_dict(f"p{k}", cpu="150m", memory="350Mi", created=k, image=IMAGE,
                    spec={"affinity": preferred("z1", 30)}) for k in range(30)]
    weights = {"NodeResourcesFit": 2, "NodeResourcesBalancedAllocation": 1,
               "TaintToleration": 3, "NodeAffinity": 1, "ImageLocality": 1}
    cfg = config(strategy, weights)
    log, _, sched = play(objects, run, cfg, 11, "numba", batch=True)
    assert backend_of(sched).sorted_runs >= 1
    fit_args = cfg["profiles"][0]["pluginConfig"][0]["args"]
    profile = {"filters": ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
                           "NodePorts", "NodeResourcesFit"],
               "scores": weights, "args": {"NodeResourcesFit": fit_args}}
    want = oracle_run(objects, run, profile, 11)
    got = [node for _, node, _ in log][: len(want)]
    assert got == [w for w in want]


@pytest.mark.cudasim
@needs_cuda
def test_auto_with_a_gpu_sorts_runs_on_the_device(monkeypatch):
    """``--backend auto`` where a GPU answers: the cycle stays on numba and
    the sort stage's backend (cuda) places the runs, the same nodes as
    numba alone.  (The simulator stands in for the device.)"""
    from tensorsched.kernels.fused import backends as fused_backends
    monkeypatch.setattr(fused_backends, "gpu_present", lambda: True)
    objects = [node_dict(f"n{i}", cpu=str(1 + i % 3), memory="2Gi", pods=str(4 + i),
                         taints=[PREFER] if i % 2 else None) for i in range(5)]
    run = [pod_dict(f"p{k}", cpu="200m", memory="300Mi", created=k) for k in range(12)]
    cfg = config("LeastAllocated", dict.fromkeys(SCORES, 1))
    auto_log, auto_req, sched = play(objects, run, cfg, 3, "auto", batch=True)
    numba_log, numba_req, _ = play(objects, run, cfg, 3, "numba", batch=True)
    assert auto_log == numba_log
    assert np.array_equal(auto_req, numba_req)
    (fw,) = sched.cluster.frameworks.values()
    assert fw.backend_name == "numba" and fw.backend.sorted_runs == 0
    assert fw.stage_backend("sort").name == "cuda"
    assert fw.stage_backend("sort").sorted_runs >= 1


EVENTS = ("update", "add", "relabel", "taint", "remove")


def node_event(sched, what: str, n: int, k: int) -> None:
    """One node event between runs (``n`` nodes at the start; ``k`` the
    event's index): a node's columns rewritten, a node appended, a node
    taking the zone the run prefers and no node had (the query compiled
    anew with that value: its cache adopted with the rows the value
    reaches), a taint no node had (a new taint word bit), a node removed."""
    if what == "update":
        sched.update_node(node_dict("n00", cpu="8", memory="6Gi", labels={"zone": "z1"}))
    elif what == "add":
        sched.add_node(node_dict(f"x{k}", cpu="4", memory="6Gi", labels={"zone": "z2"},
                                 taints=[PREFER]))
    elif what == "relabel":
        sched.update_node(node_dict("n01", cpu="2", memory="2Gi", labels={"zone": "z5"}))
    elif what == "taint":
        sched.update_node(node_dict("n00", cpu="4", memory="6Gi", labels={"zone": "z0"},
                                    taints=[{"key": "fresh", "value": "x",
                                             "effect": "PreferNoSchedule"}]))
    elif n > 2:
        sched.delete_node(f"n{n - 1:02d}")


@pytest.mark.cudasim
@needs_cuda
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(clusters(max_nodes=12), st.integers(0, 2**32),
       st.lists(st.sampled_from(EVENTS), min_size=1, max_size=3, unique=True))
def test_cuda_sorted_runs_across_node_events_place_as_one_by_one(case, seed, events):
    """The cuda sort path keeps the query's row cache on the device from
    run to run: the rows the runs and the node events wrote, and those a
    recompiled query's change reaches, are staged into the next run's one
    upload and recomputed there.  Runs (preferring a zone no node has
    until an event gives it) between node events place as one cycle per
    pod on numpy."""
    objects, run, cfg = case
    run = [dict(p, spec={"affinity": preferred("z5", 40)}) for p in run]
    n = sum(o["kind"] == "Node" for o in objects)
    cut = [len(run) * (i + 1) // (len(events) + 1) for i in range(len(events))]
    chunks = [run[a:b] for a, b in zip([0] + cut, cut + [len(run)])]

    def replay(backend, batch):
        sched = Scheduler(build_cluster(objects, cfg), backend, seed, batch=batch)
        log = []
        for i, chunk in enumerate(chunks):
            if i:
                node_event(sched, events[i - 1], n, i)
            log += [(b.pod, b.node, b.message) for b in sched.schedule_pending(chunk)[0]]
        return log, sched.cluster.state.requested.copy(), sched

    got_log, got_req, sched = replay("cuda", True)
    want_log, want_req, _ = replay("numpy", False)
    assert got_log == want_log
    assert np.array_equal(got_req, want_req)
    if len(run) > 1:
        assert backend_of(sched).sorted_runs >= 1
