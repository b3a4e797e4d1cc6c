"""Compiled runs of alike pods (``Scheduler(batch=True)``) place every pod
exactly where one-by-one cycles would: same nodes, same order, same
messages, same state, whatever mix of signatures, failures, deletions,
node events and Permit waits comes between."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda
from support.checks import check

from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.plugins import in_tree_registry
from tensorsched.framework.plugins import coscheduling as C
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler

ALL_NODES = {"apiVersion": "kubescheduler.config.k8s.io/v1",
             "kind": "KubeSchedulerConfiguration", "percentageOfNodesToScore": 100}
TAINT = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
TOLERATE = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]


@st.composite
def workloads(draw):
    """(nodes, [pod batches], [(event, arg)] between batches, seed)."""
    n = draw(st.integers(1, 12))
    nodes = [node_dict(f"n{i}", cpu=str(draw(st.sampled_from([1, 2, 4, 8]))),
                       memory=f"{draw(st.sampled_from([2, 4, 16]))}Gi",
                       labels={"zone": f"z{i % 3}"},
                       taints=TAINT if draw(st.integers(0, 4)) == 0 else None)
             for i in range(n)]
    templates = draw(st.lists(st.tuples(
        st.sampled_from(["100m", "250m", "500m", "1", "3"]),
        st.sampled_from(["100Mi", "500Mi", "1Gi", "3Gi"]),
        st.booleans(), st.sampled_from([None, "z0", "z1"]),
        st.sampled_from([None, 0, 10])), min_size=1, max_size=3))
    batches, events = [], []
    created = 0
    for b in range(draw(st.integers(1, 3))):
        pods = []
        for _ in range(draw(st.integers(1, 40))):
            cpu, mem, tol, zone, prio = templates[draw(st.integers(0, len(templates) - 1))]
            spec = {}
            if tol:
                spec["tolerations"] = TOLERATE
            if zone:
                spec["nodeSelector"] = {"zone": zone}
            pods.append(pod_dict(f"p{created}", cpu=cpu, memory=mem, priority=prio,
                                 created=created // 3, spec=spec))
            created += 1
        batches.append(pods)
        events.append(draw(st.sampled_from(["none", "delete", "add_node", "delete_node"])))
    return nodes, batches, events, draw(st.integers(0, 2**32))


def _play(nodes, batches, events, seed, backend, batch, config=ALL_NODES, registry=None):
    sched = Scheduler(build_cluster(nodes, config, registry), backend, seed, batch=batch)
    log = []
    for i, (pods, event) in enumerate(zip(batches, events)):
        outcomes, preemptions = sched.schedule_pending(pods)
        log.append([(b.pod, b.node, b.message) for b in outcomes])
        log.append(preemptions)
        # preemption victims are deleted (their controllers would recreate them)
        check(sched, [p["metadata"]["namespace"] + "/" + p["metadata"]["name"] for p in pods],
              deleted={e["pod"] for e in sched.evictions})
        state = sched.cluster.state
        if event == "delete" and state.pods:
            sched.delete_pod(sorted(state.pods)[0])
        elif event == "add_node":
            sched.add_node(node_dict(f"extra{i}", cpu="4", labels={"zone": "z1"}))
        elif event == "delete_node" and state.num_nodes > 1:
            sched.delete_node(state.node_name(int(state.valid_rows()[-1])))
    state = sched.cluster.state
    return log, state.requested.copy(), sorted(state.pods), sched


# RUNS_EXAMPLES=N (with HYPOTHESIS_RANDOM=1 for new examples) explores more.
SETTINGS = settings(max_examples=int(os.environ.get("RUNS_EXAMPLES", "60")), deadline=None,
                    suppress_health_check=list(HealthCheck))


@SETTINGS
@given(workloads())
def test_runs_place_exactly_as_one_by_one(case):
    nodes, batches, events, seed = case
    one_by_one = _play(nodes, batches, events, seed, "numba", batch=False)
    runs = _play(nodes, batches, events, seed, "numba", batch=True)
    assert runs[0] == one_by_one[0]
    assert np.array_equal(runs[1], one_by_one[1]) and runs[2] == one_by_one[2]
    numpy = _play(nodes, batches, events, seed, "numpy", batch=True)     # no compiled runs
    assert numpy[0] == one_by_one[0]


GANG_SORT = {"disabled": [{"name": "*"}], "enabled": [{"name": "Coscheduling"}]}
GANG_ARGS = [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 5}}]
GANG_CONFIG = {**ALL_NODES, "profiles": [     # queueSort is one for every profile
    {"schedulerName": "default-scheduler", "plugins": {"queueSort": GANG_SORT},
     "pluginConfig": GANG_ARGS},
    {"schedulerName": "gang-scheduler", "plugins": {
        "multiPoint": {"enabled": [{"name": "Coscheduling"}]}, "queueSort": GANG_SORT},
     "pluginConfig": GANG_ARGS}]}


@st.composite
def gang_workloads(draw):
    """``workloads()`` plus gangs of a second profile (Coscheduling): pod
    groups whose members wait in Permit for the rest (some never come and
    time out) between runs of the default profile's alike pods."""
    nodes, batches, events, seed = draw(workloads())
    groups = []
    for b, pods in enumerate(batches):
        for g in range(draw(st.integers(0, 2))):
            name = f"g{b}-{g}"
            need = draw(st.integers(2, 3))
            groups.append({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                           "metadata": {"name": name, "namespace": "default"},
                           "spec": {"minMember": need}})
            for k in range(draw(st.integers(1, need))):      # fewer than need: it waits
                at = draw(st.integers(0, len(pods)))
                pods.insert(at, pod_dict(f"{name}-m{k}", cpu=draw(st.sampled_from(["250m", "1"])),
                                         created=at, labels={C.POD_GROUP_LABEL: name},
                                         spec={"schedulerName": "gang-scheduler"}))
    return nodes + groups, batches, events, seed


@SETTINGS
@given(gang_workloads())
def test_runs_between_permit_waits_place_exactly_as_one_by_one(case):
    """Runs of the default profile's pods while gang members of another
    profile wait in Permit (and time out): the same outcomes, state and pods
    with runs on and off."""
    nodes, batches, events, seed = case
    reg = in_tree_registry()
    C.register(reg)
    one_by_one = _play(nodes, batches, events, seed, "numba", False, GANG_CONFIG, reg)
    runs = _play(nodes, batches, events, seed, "numba", True, GANG_CONFIG, reg)
    assert runs[0] == one_by_one[0]
    assert np.array_equal(runs[1], one_by_one[1]) and runs[2] == one_by_one[2]


def test_runs_form_around_permit_waits():
    """With gang members waiting in Permit under one profile, the other
    profile's alike pods still form runs once no pod waits."""
    nodes = [node_dict(f"n{i}", cpu="4") for i in range(4)]
    group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "default"}, "spec": {"minMember": 3}}
    pods = [pod_dict("g-m0", cpu="1", created=0, labels={C.POD_GROUP_LABEL: "g"},
                     spec={"schedulerName": "gang-scheduler"})]
    pods += [pod_dict(f"p{i}", cpu="250m", created=1 + i) for i in range(12)]
    reg = in_tree_registry()
    C.register(reg)
    log, _, _, sched = _play(nodes + [group], [pods], ["none"], 0, "numba", True,
                             GANG_CONFIG, reg)
    one = _play(nodes + [group], [pods], ["none"], 0, "numba", False, GANG_CONFIG, reg)
    assert log == one[0] and sched.run_lengths and max(sched.run_lengths) > 1
    assert dict((p, n) for p, n, _ in log[0])["default/g-m0"] is None     # timed out


def test_a_run_is_one_compiled_call_and_stops_at_the_first_misfit():
    nodes = [node_dict(f"n{i}", cpu="1") for i in range(4)]
    pods = [pod_dict(f"p{i}", cpu="300m", created=i) for i in range(14)]   # 4 x 3 fit
    sched = Scheduler(build_cluster(nodes, ALL_NODES), "numba", 3)
    outcomes, _ = sched.schedule_pending(pods)
    placed = [b for b in outcomes if b.node is not None]
    assert len(placed) == 12 and sched.run_lengths[0] == 12
    # the 13th took the usual cycle: kube-scheduler's FailedScheduling message
    failed = [b for b in outcomes if b.node is None]
    assert [b.pod for b in failed] == ["default/p12", "default/p13"]
    assert failed[0].message.startswith("0/4 nodes are available: 4 Insufficient cpu.")
    one = Scheduler(build_cluster(nodes, ALL_NODES), "numba", 3, batch=False)
    assert [(b.pod, b.node) for b in one.schedule_pending(pods)[0]] == \
        [(b.pod, b.node) for b in outcomes]


def test_pods_with_a_waiting_permit_are_not_batched():
    cfg = {**ALL_NODES, "profiles": [{"schedulerName": "default-scheduler", "plugins": {
        "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
        "queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "Coscheduling"}]}}}]}
    group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "default"}, "spec": {"minMember": 3}}
    pods = [pod_dict(f"m{i}", cpu="1", labels={"scheduling.x-k8s.io/pod-group": "g"})
            for i in range(3)]
    reg = in_tree_registry()
    C.register(reg)
    nodes = [node_dict(f"n{i}") for i in range(3)]
    out = {}
    for batch in (True, False):
        sched = Scheduler(build_cluster(nodes + [group], cfg, reg), "numba", 0, batch=batch)
        out[batch] = [(b.pod, b.node) for b in sched.schedule_pending(pods)[0]]
        assert not sched.run_lengths          # Coscheduling's Permit is not run-safe
    assert out[True] == out[False] and all(node for _, node in out[True])


# percentageOfNodesToScore on 7 nodes finds every node (kube-scheduler's
# minimum of 100 nodes to find): 40 ran the same path as 100
@pytest.mark.cudasim
@needs_cuda
@pytest.mark.parametrize("percentage", [100])
def test_cuda_runs_are_one_launch_and_place_as_numba(percentage):
    """The cuda backend places a run in one block launch (device row cache,
    the same tie draws and percentageOfNodesToScore rotation): the placements
    and messages of numba's runs and of one-by-one cycles."""
    nodes = [node_dict(f"n{i}", cpu=str(1 + i % 3), labels={"zone": f"z{i % 2}"})
             for i in range(7)]
    # 30 pods of 500m: 26 fit (one run), the rest fit nowhere
    pods = [pod_dict(f"p{i}", cpu="500m", created=i) for i in range(30)]
    cfg = {**ALL_NODES, "percentageOfNodesToScore": percentage}
    got = {}
    for backend, batch in (("numba", False), ("numba", True), ("cuda", True)):
        sched = Scheduler(build_cluster(nodes, cfg), backend, 1, batch=batch)
        got[backend, batch] = ([(o.pod, o.node, o.message)
                                for o in sched.schedule_pending(pods)[0]],
                               sched.next_start_index % 7, sched.cluster.state.requested.copy())
        if batch:
            assert sched.run_lengths and max(sched.run_lengths) > 10
    one = got["numba", False]
    for key in (("numba", True), ("cuda", True)):
        assert got[key][:2] == one[:2] and np.array_equal(got[key][2], one[2])
    assert any(node is None for _, node, _ in one[0])


@pytest.mark.parametrize("percentage", [0, 10, 50])
def test_runs_follow_percentage_of_nodes_to_score_rotation(percentage):
    """Fewer nodes scored than exist: each pod of a run scans from where the
    previous one stopped, as one-by-one cycles rotate nextStartNodeIndex."""
    nodes = [node_dict(f"n{i:03d}", cpu=str(1 + i % 4), labels={"zone": f"z{i % 3}"})
             for i in range(250)]
    pods = [pod_dict(f"p{i}", cpu="200m", created=i // 7) for i in range(900)]
    cfg = {**ALL_NODES, "percentageOfNodesToScore": percentage}
    out = {}
    for batch in (True, False):
        sched = Scheduler(build_cluster(nodes, cfg), "numba", 5, batch=batch)
        out[batch] = ([(b.pod, b.node, b.message) for b in sched.schedule_pending(pods)[0]],
                      sched.next_start_index % 250)
        if batch:
            assert sched.run_lengths and max(sched.run_lengths) > 100
    assert out[True] == out[False]


# ---------------------------------------------------------------------------
# Pod-to-pod filters inside runs: PodTopologySpread (DoNotSchedule) and
# InterPodAffinity (required anti-affinity) as per-domain rules the run
# keeps current.

HOST = "kubernetes.io/hostname"
WELL_KNOWN_ZONE = "topology.kubernetes.io/zone"


def _spread(key, skew, app, min_domains=None, affinity_policy=None, taints_policy=None,
            action="DoNotSchedule"):
    c = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": action,
         "labelSelector": {"matchLabels": {"app": app}}}
    if min_domains and action == "DoNotSchedule":    # the API server refuses it otherwise
        c["minDomains"] = min_domains
    if affinity_policy:
        c["nodeAffinityPolicy"] = affinity_policy
    if taints_policy:
        c["nodeTaintsPolicy"] = taints_policy
    return c


def _anti(key, app):
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}


@st.composite
def pod_to_pod_workloads(draw):
    """(nodes, [pod batches], events, seed): nodes in zones (some without the
    zone label), templates mixing spread constraints, anti-affinity and
    plain pods, in runs of alike pods."""
    n = draw(st.integers(2, 14))
    nodes = []
    for i in range(n):
        labels = {HOST: f"n{i}"}
        if draw(st.integers(0, 5)):
            labels["zone"] = f"z{draw(st.integers(0, 3))}"
            # the well-known key, which the System default constraints use;
            # sometimes empty (its own domain where keys are not all required)
            labels[WELL_KNOWN_ZONE] = draw(st.sampled_from(["", labels["zone"]]))
        nodes.append(node_dict(f"n{i}", cpu=str(draw(st.sampled_from([1, 2, 4]))),
                               labels=labels,
                               taints=TAINT if draw(st.integers(0, 5)) == 0 else None))
    kinds = st.tuples(
        st.sampled_from(["plain", "spread", "spread2", "anti", "both", "soft", "soft2",
                         "owned", "prefer", "avoid", "affine"]),
        st.sampled_from(["web", "db"]), st.sampled_from(["web", "db"]),
        st.sampled_from(["zone", HOST]), st.integers(1, 3),
        st.sampled_from([None, 2, 4]), st.sampled_from([None, "Ignore"]),
        st.sampled_from([None, "Honor"]), st.booleans(), st.sampled_from(["100m", "300m"]))
    templates = draw(st.lists(kinds, min_size=1, max_size=3))
    batches, events, created = [], [], 0
    for b in range(draw(st.integers(1, 3))):
        pods = []
        t = 0
        for _ in range(draw(st.integers(1, 30))):
            if draw(st.integers(0, 4)) == 0:          # runs of alike pods, then a change
                t = draw(st.integers(0, len(templates) - 1))
            kind, own, other, key, skew, md, ap, tp, zone_sel, cpu = templates[t]
            spec = {}
            if kind in ("spread", "both"):
                spec["topologySpreadConstraints"] = [_spread(key, skew, other, md, ap, tp)]
            elif kind == "spread2":
                spec["topologySpreadConstraints"] = [_spread("zone", skew, own, md, ap, tp),
                                                     _spread(HOST, 1, own)]
            elif kind == "soft":
                spec["topologySpreadConstraints"] = [
                    _spread(key, skew, other, md, ap, tp, action="ScheduleAnyway")]
            elif kind == "soft2":
                spec["topologySpreadConstraints"] = [
                    _spread("zone", skew, own, md, ap, tp, action="ScheduleAnyway"),
                    _spread(HOST, 2, own, action="ScheduleAnyway"),
                    _spread("zone", 2, own, action="DoNotSchedule")]
            if kind in ("anti", "both"):
                spec["affinity"] = _anti(key, other)
            elif kind == "affine":      # required affinity (first pod of a group or not)
                spec["affinity"] = {"podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": other}}, "topologyKey": key}]}}
            elif kind in ("prefer", "avoid"):   # scores the next pods once one is placed
                term = {"labelSelector": {"matchLabels": {"app": own}}, "topologyKey": key}
                spec["affinity"] = {
                    "podAffinity" if kind == "prefer" else "podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 10 * skew, "podAffinityTerm": term}]}}
            if zone_sel:
                spec["nodeSelector"] = {"zone": "z1"}
            if tp:
                spec["tolerations"] = TOLERATE
            pod = pod_dict(f"p{created}", cpu=cpu, labels={"app": own}, created=created,
                           spec=spec)
            if kind == "owned":         # the System default constraints (ScheduleAnyway)
                pod["metadata"]["ownerReferences"] = [
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"rs-{own}",
                     "uid": f"uid-{own}", "controller": True}]
            pods.append(pod)
            created += 1
        batches.append(pods)
        events.append(draw(st.sampled_from(["none", "delete", "add_node", "delete_node"])))
    replica_sets = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                     "metadata": {"name": f"rs-{app}", "namespace": "default"},
                     "spec": {"selector": {"matchLabels": {"app": app}}}}
                    for app in ("web", "db")]
    return nodes + replica_sets, batches, events, draw(st.integers(0, 2**32))


@SETTINGS
@given(pod_to_pod_workloads())
def test_runs_with_spread_and_anti_affinity_place_exactly_as_one_by_one(case):
    nodes, batches, events, seed = case
    one_by_one = _play(nodes, batches, events, seed, "numba", batch=False)
    runs = _play(nodes, batches, events, seed, "numba", batch=True)
    assert runs[0] == one_by_one[0]
    assert np.array_equal(runs[1], one_by_one[1]) and runs[2] == one_by_one[2]


@pytest.mark.parametrize("percentage", [100, 30])
@pytest.mark.parametrize("workload", ["zone-spread", "host-spread", "anti", "mixed",
                                      "soft-spread", "owned", "prefer-zone", "helm",
                                      "affinity"])
def test_pod_to_pod_runs_are_compiled_and_exact(workload, percentage):
    """Long runs whose rules flip whole zones (spread at the skew limit),
    single hosts (anti-affinity, hostname spread) or both, every node scored
    and percentageOfNodesToScore below: one compiled call per run, the
    placements of one-by-one cycles, the misfits' FailedScheduling messages."""
    nodes = [node_dict(f"n{i:03d}", cpu=str(1 + i % 3),
                       labels={"zone": f"z{i % 4}", HOST: f"n{i:03d}"}
                       if i % 17 else {HOST: f"n{i:03d}"})
             for i in range(120)]
    spec = {"zone-spread": {"topologySpreadConstraints": [_spread("zone", 2, "web")]},
            "soft-spread": {"topologySpreadConstraints": [
                _spread("zone", 1, "web", action="ScheduleAnyway"),
                _spread(HOST, 1, "web", action="ScheduleAnyway")]},
            "host-spread": {"topologySpreadConstraints": [_spread(HOST, 1, "web", 60)]},
            "anti": {"affinity": _anti(HOST, "web")},
            "owned": {},          # a ReplicaSet's pods: the System default constraints
            "affinity": {"affinity": {"podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "web"}},
                     "topologyKey": "zone"}]}}},
            "prefer-zone": {"affinity": {"podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 30, "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "topologyKey": "zone"}}]}}},
            # a chart's replicas: default spread and preferred anti-affinity by host
            "helm": {"affinity": {"podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "topologyKey": HOST}}]}}},
            "mixed": {"topologySpreadConstraints": [_spread("zone", 1, "web")],
                      "affinity": _anti(HOST, "web")}}[workload]
    pods = [pod_dict(f"p{i}", cpu="900m", labels={"app": "web"}, created=i, spec=spec)
            for i in range(260)]
    if workload in ("owned", "helm"):
        nodes = nodes + [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                          "metadata": {"name": "web", "namespace": "default"},
                          "spec": {"selector": {"matchLabels": {"app": "web"}}}}]
        for p in pods:
            p["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                 "name": "web", "uid": "u", "controller": True}]
    cfg = {**ALL_NODES, "percentageOfNodesToScore": percentage}
    out = {}
    for batch in (True, False):
        sched = Scheduler(build_cluster(nodes, cfg), "numba", 11, batch=batch)
        out[batch] = [(b.pod, b.node, b.message) for b in sched.schedule_pending(pods)[0]]
        if batch:
            assert sched.run_lengths and max(sched.run_lengths) > 50
    assert out[True] == out[False]
    assert any(node is None for _, node, _ in out[True])       # some fit nowhere


def test_required_affinity_pods_score_the_next_ones_of_their_run():
    """Pods with required affinity and no bound pod carrying affinity terms:
    InterPodAffinity's PreScore skips the first, and once it is bound its
    term scores the next with hardPodAffinityWeight (found by hypothesis)."""
    nodes = [node_dict(f"n{i}", cpu="1", taints=TAINT) for i in range(3)]
    nodes += [node_dict("n3", cpu="1", labels={"zone": "z0"}),
              node_dict("n4", cpu="1", labels={"zone": "z1"})]
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}]}}
    pods = [pod_dict(f"p{i}", labels={"app": "web"}, created=i) for i in range(4)]
    pods += [pod_dict(f"p{i}", labels={"app": "web"}, created=i, spec={"affinity": aff})
             for i in range(4, 8)]
    one = _play(nodes, [pods], ["none"], 0, "numba", batch=False)
    runs = _play(nodes, [pods], ["none"], 0, "numba", batch=True)
    assert runs[0] == one[0] and runs[3].run_lengths == [4, 4]
    assert [node for _, node, _ in one[0][0][4:]] == ["n3"] * 4


# as above: on 8 nodes a percentage below 100 scores every node too
@pytest.mark.cudasim
@needs_cuda
@pytest.mark.parametrize("percentage", [100])
@pytest.mark.parametrize("kind", ["zone-spread", "anti", "affinity", "affinity-weighted",
                                  "soft-spread", "owned", "prefer"])
def test_cuda_runs_keep_pod_to_pod_plugins_on_the_device(kind, percentage):
    """The device run evaluates and counts the pod-to-pod rules itself and
    recomputes their scores (ScheduleAnyway spread, the System defaults of a
    ReplicaSet's pods, pod affinity weights with and without
    hardPodAffinityWeight) over the scanned nodes for each pod: the
    placements and messages of one-by-one cycles, in runs."""
    nodes = [node_dict(f"n{i}", cpu=str(1 + i % 2),
                       labels={"zone": f"z{i % 3}", HOST: f"n{i}",
                               **({WELL_KNOWN_ZONE: f"z{i % 3}"} if i % 5 else {})})
             for i in range(8)]
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
    spec = {"zone-spread": {"topologySpreadConstraints": [_spread("zone", 1, "web")]},
            "anti": {"affinity": _anti(HOST, "web")},
            "affinity": {"affinity": {"podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [term]}}},
            "soft-spread": {"topologySpreadConstraints": [
                _spread("zone", 1, "web", action="ScheduleAnyway"),
                _spread(HOST, 2, "web", action="ScheduleAnyway")]},
            "owned": {},
            "prefer": {"affinity": {"podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 30, "podAffinityTerm": term}]}}}}[kind.replace("-weighted", "")]
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "percentageOfNodesToScore": percentage, "profiles": [{
               "schedulerName": "default-scheduler", "plugins": {"multiPoint": {"disabled": [
                   {"name": "InterPodAffinity"}] if kind == "zone-spread" else []}}}]}
    if kind == "affinity":      # no score between the run's own pods
        cfg["profiles"][0]["pluginConfig"] = [{"name": "InterPodAffinity", "args": {
            "hardPodAffinityWeight": 0}}]
    pods = [pod_dict(f"p{i}", cpu="400m", labels={"app": "web"}, created=i, spec=spec)
            for i in range(14)]
    objects = list(nodes)
    if kind == "owned":
        for pod in pods:
            pod["metadata"]["ownerReferences"] = [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs-web",
                 "uid": "uid-web", "controller": True}]
        objects.append({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "metadata": {"name": "rs-web", "namespace": "default"},
                        "spec": {"selector": {"matchLabels": {"app": "web"}}}})
    got = {}
    for backend, batch in (("numba", False), ("cuda", True)):
        sched = Scheduler(build_cluster(objects, cfg), backend, 2, batch=batch)
        got[backend] = [(o.pod, o.node, o.message) for o in sched.schedule_pending(pods)[0]]
        if batch:
            assert sched.run_lengths and max(sched.run_lengths) > 3
    assert got["cuda"] == got["numba"]


@pytest.mark.cudasim
@needs_cuda
# 3 random mixes on the simulator: numba's runs check the random space with
# 60 (test_runs_with_spread_and_anti_affinity_place_exactly_as_one_by_one),
# each rule has its own device case above
@settings(max_examples=int(os.environ.get("CUDA_RUNS_EXAMPLES", "3")), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(pod_to_pod_workloads())
def test_cuda_runs_with_pod_to_pod_plugins_place_as_one_by_one(case):
    """Random mixes of the pod-to-pod rules and scores, failures and node
    events between batches: cuda runs (under the simulator here) place as
    numba's one-by-one cycles.  CUDA_RUNS_EXAMPLES=N checks more."""
    nodes, batches, events, seed = case
    one_by_one = _play(nodes, batches, events, seed, "numba", batch=False)
    device = _play(nodes, batches, events, seed, "cuda", batch=True)
    assert device[0] == one_by_one[0]
    assert np.array_equal(device[1], one_by_one[1]) and device[2] == one_by_one[2]


def test_run_outcomes_read_as_the_one_by_one_list():
    """Every pod bound by runs: schedule_pending's BindingList (built when
    read) equals batch off's, gated and ignored pods last in both."""
    nodes = [node_dict(f"n{i}", cpu="2") for i in range(3)]
    pods = [pod_dict(f"p{i}", cpu="300m", created=i) for i in range(15)]
    pods.append(pod_dict("gated", created=20, spec={"schedulingGates": [{"name": "x"}]}))
    pods.append(pod_dict("other", created=21, spec={"schedulerName": "elsewhere"}))
    got = {}
    for batch in (True, False):
        sched = Scheduler(build_cluster(nodes, ALL_NODES), "numba", 3, batch=batch)
        got[batch] = sched.schedule_pending(pods)[0]
        assert bool(sched.run_lengths) == batch
    on, off = got[True], got[False]
    assert len(on) == len(off) == 17
    assert on == off and list(on) == list(off)
    assert [b.to_dict() for b in on[-2:]] == [
        {"pod": "default/gated", "node": None, "message": off[-2].message},
        {"pod": "default/other", "node": None, "message": off[-1].message, "ignored": True}]
    assert all(b.node for b in on[:15])


@pytest.mark.cudasim
@needs_cuda
@pytest.mark.parametrize("kind", ["plain", "anti", "soft-spread"])
def test_cuda_runs_below_every_node_place_as_one_by_one(kind):
    """More than 100 nodes and percentageOfNodesToScore 50: each pod of a
    device run scans from where the previous one stopped up to the 100th
    feasible node (the block's prefix count finds the stop), as one-by-one
    cycles do, with and without per-domain rules and pod-to-pod scores."""
    nodes = [node_dict(f"n{i:03d}", cpu=str(1 + i % 3),
                       labels={"zone": f"z{i % 4}", HOST: f"n{i:03d}"})
             for i in range(130)]
    spec = {"plain": {}, "anti": {"affinity": _anti(HOST, "web")},
            "soft-spread": {"topologySpreadConstraints": [
                _spread("zone", 1, "web", action="ScheduleAnyway")]}}[kind]
    pods = [pod_dict(f"p{i}", cpu="700m", labels={"app": "web"}, created=i, spec=spec)
            for i in range(8)]
    cfg = {**ALL_NODES, "percentageOfNodesToScore": 50}
    got = {}
    for backend, batch in (("numba", False), ("cuda", True)):
        sched = Scheduler(build_cluster(nodes, cfg), backend, 4, batch=batch)
        got[backend] = ([(o.pod, o.node, o.message) for o in sched.schedule_pending(pods)[0]],
                        sched.next_start_index)
        if batch:
            assert sched.run_lengths and max(sched.run_lengths) > 3
            assert sched.placed_by.get("device_run", 0) > 3
    assert got["cuda"] == got["numba"]
