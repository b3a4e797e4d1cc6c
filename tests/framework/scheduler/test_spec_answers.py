"""PreFilter / PreScore calls left out where the plugin answered from the
pod's spec (``SpecAnswerPlugin``, kept per pod class): a cycle's plan, and
a whole one-at-a-time schedule, are what calling every plugin gives
(``Framework.call_every_plugin``).  Pods of many kinds: plain, without
requests, with a node selector, host ports, preferred node affinity (and
an empty preferred list), required node affinity whose names conflict
(NodeAffinity rejects before the volume plugins are asked), a claim that
does not exist (a volume plugin rejects), an emptyDir, required
anti-affinity and a spread constraint; bound pods with anti-affinity
beside them.  The plans' statuses, skipped plugins, node names, score
setup, host plugins, masks, query and cycle data are equal; the
schedules' outcomes, events, metrics, queue and explain records too; and
the calls answered are not made (counted)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorsched.framework.runtime.framework import CyclePlan
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict

N_KINDS = 11


def _pod(name: str, kind: int, k: int) -> dict:
    spec: dict = {}
    cpu, memory = "500m", "256Mi"
    labels = {"app": f"a{kind % 3}"}
    if kind == 1:
        cpu = memory = None                 # BalancedAllocation skips it
    elif kind == 2:
        spec["nodeSelector"] = {"zone": "z1"}
    elif kind == 3:
        spec["containers"] = [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                               "resources": {"requests": {"cpu": cpu}},
                               "ports": [{"containerPort": 80, "hostPort": 8080}]}]
    elif kind == 4:
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "preference": {"matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["z0"]}]}}]}}
    elif kind == 5:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n0"]},
                {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}
    elif kind == 6:
        spec["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": "missing"}}]
    elif kind == 7:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    elif kind == 8:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "a1"}},
             "topologyKey": "kubernetes.io/hostname"}]}}
    elif kind == 9:
        spec["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": labels["app"]}}}]
    elif kind == 10:
        spec["affinity"] = {"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": []}}
    return pod_dict(name, cpu=cpu, memory=memory, created=k, labels=labels,
                    spec=spec or None)


@st.composite
def workloads(draw):
    n = draw(st.integers(1, 6))
    nodes = [node_dict(f"n{i}", cpu=str(draw(st.sampled_from([2, 4]))),
                       memory=f"{draw(st.sampled_from([2, 8]))}Gi",
                       labels={"zone": f"z{i % 2}"})
             for i in range(n)]
    kinds = draw(st.lists(st.integers(0, N_KINDS - 1), min_size=1, max_size=24))
    return nodes, [_pod(f"p{k:03d}", kind, k) for k, kind in enumerate(kinds)]


def _plan_view(fw, state, pod) -> tuple:
    """What ``plan_cycle`` decided for ``pod``, comparable with ==."""
    ctx = CycleContext(state, pod, fw)
    plan, skipped = fw.plan_cycle(ctx)
    data = sorted(ctx.data)
    if not isinstance(plan, CyclePlan):
        return ("rejected", plan, frozenset(skipped), data)
    q = plan.query
    return ("planned", frozenset(skipped), frozenset(plan.skipped), plan.node_names,
            tuple(plan.restricted_by), plan.active.tolist(), plan.norm.tolist(),
            plan.weights.tolist(), [p.name for p in plan.active_plugins],
            [(p.name, b) for p, b in plan.host_filters],
            [(p.name, s) for p, s in plan.host_scores],
            {k: np.asarray(m).tolist() for k, m in plan.masks.items()},
            q._replace(prefilter_rows=None),
            None if q.prefilter_rows is None else np.asarray(q.prefilter_rows).tolist(),
            data)


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(workloads())
def test_a_plan_equals_calling_every_plugin(case):
    nodes, pods = case
    cluster = build_cluster(nodes)
    state = cluster.state
    # bound pods whose anti-affinity some pending pods match (InterPodAffinity's
    # PreFilter reads them: it is always called)
    for i, p in enumerate(pods[:3]):
        rec = cluster.resolve(_pod(f"bound{i}", 8, 100 + i))
        state.add_pod(rec, f"n{i % len(nodes)}")
    for p in pods:
        rec = cluster.resolve(p)
        fw = cluster.framework_for(rec, "numba")
        fw.call_every_plugin = False
        fast = _plan_view(fw, state, rec)
        again = _plan_view(fw, state, rec)          # the class's answers kept
        fw.call_every_plugin = True
        slow = _plan_view(fw, state, rec)
        fw.call_every_plugin = False
        assert fast == slow
        assert again == slow


def _play(nodes, pods, seed: int, fast: bool) -> dict:
    sched = Scheduler(build_cluster(nodes), "numba", seed, batch=False)
    events: list = []
    sched.subscribe("*", lambda e: events.append(tuple(sorted(
        (k, tuple(v) if isinstance(v, list) else v) for k, v in e.items()))))
    for p in pods:
        sched.cluster.framework_for(sched.cluster.resolve(p), "numba").call_every_plugin = \
            not fast
    out, preemptions = sched.schedule_pending(pods)
    metrics = sched.metrics()
    metrics.pop("stage_seconds")
    metrics["plugin_seconds"] = sorted(metrics["plugin_seconds"])
    state = sched.cluster.state
    pending = [p for p, b in zip(pods, out) if b.node is None]
    explained = [explain_pod(sched.cluster, p, "numba", seed) for p in pending[:2]]
    return {
        "outcomes": [(b.pod, b.node, b.message, b.nominated_node, b.victims) for b in out],
        "preemptions": preemptions, "events": events,
        "records": [(r.key, row) for r, row in state.pods.bound()],
        "requested": state.requested[: state.n_rows].tolist(),
        "metrics": metrics, "explained": explained,
        "queue": sorted((k, pi.where, pi.attempts, tuple(sorted(pi.unschedulable_plugins)))
                        for k, pi in sched.queue.infos.items()),
    }


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(workloads(), st.integers(0, 2**31))
def test_a_schedule_equals_calling_every_plugin(case, seed):
    nodes, pods = case
    assert _play(nodes, pods, seed, True) == _play(nodes, pods, seed, False)


def test_the_answered_calls_are_left_out():
    """A plain pod's class calls only the PreFilters and PreScores whose
    answers read the cluster or keep something (PodTopologySpread's,
    InterPodAffinity's, DynamicResources'); one with host ports too (NodePorts' PreFilter
    passes it without being called)."""
    nodes = [node_dict(f"n{i}", labels={"zone": f"z{i % 2}"}) for i in range(4)]
    pods = [_pod(f"p{k}", 0, k) for k in range(6)] + [_pod("ports", 3, 9)]
    sched = Scheduler(build_cluster(nodes), "numba", 0, batch=False)
    fw = sched.cluster.framework_for(sched.cluster.resolve(pods[0]), "numba")
    calls: dict = {}

    def counted(point, name, fn):
        def inner(ctx):
            key = (point, name, ctx.pod.name == "ports")
            calls[key] = calls.get(key, 0) + 1
            return fn(ctx)
        return inner
    fw._prefilter_steps = tuple((counted("preFilter", n, f), n, b)
                                for f, n, b in fw._prefilter_steps)
    fw._score_steps = tuple((p, counted("preScore", p.name, f) if f is not None else None, b)
                            for p, f, b in fw._score_steps)
    fw._spec_calls_key = ("test-spec-calls",)
    out, _ = sched.schedule_pending(pods)
    assert all(b.node is not None for b in out)
    called = {(point, name) for point, name, _ports in calls}
    left_out = {("preFilter", "NodeAffinity"), ("preFilter", "NodePorts"),
                ("preFilter", "NodeResourcesFit"), ("preFilter", "VolumeRestrictions"),
                ("preFilter", "NodeVolumeLimits"), ("preFilter", "VolumeBinding"),
                ("preFilter", "VolumeZone"), ("preScore", "TaintToleration"),
                ("preScore", "NodeAffinity"), ("preScore", "NodeResourcesFit"),
                ("preScore", "NodeResourcesBalancedAllocation")}
    assert not called & left_out
    assert {k[:2] for k in calls if k[2]} == {k[:2] for k in calls if not k[2]}
    assert calls[("preFilter", "InterPodAffinity", False)] == 6
    assert calls[("preScore", "PodTopologySpread", False)] == 6
    assert calls[("preFilter", "DynamicResources", False)] == 6
    assert calls[("preScore", "DynamicResources", False)] == 6
