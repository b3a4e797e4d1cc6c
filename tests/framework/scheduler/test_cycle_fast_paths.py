"""The one-at-a-time cycle's kept work leaves what the slow way leaves:
the plan parts kept per (skip, scoring) masks (``Framework.keep_plan_parts``),
the sum-room bound that spares ``add_pod`` its exact int64 check
(``ClusterState.bound_sum_room``), the binding points left out for a
pod whose plugins there are all run-safe (``BindingCycle.quiet_bindings``)
and the PreFilter / PreScore calls answered from the pod's spec
(``Framework.call_every_plugin``).
Random clusters and pods of several shapes (node selectors, host ports,
preferred node affinity, anti-affinity, pods that fit nowhere), one cycle
per pod, with and without a subscriber: the outcomes, every event, the
bound pods, the requested columns, what a state listener hears, the
metrics (the per-plugin keys; seconds aside), the queue and an explain of
a pending pod are the same; the fast ways are taken (counted)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.heard_pods import bound_state, watch
from tensorsched.framework.errors import StateError
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.framework.state import cluster_state as CS
from tensorsched.generators.clusters import node_dict, pod_dict

INT64_MAX = (1 << 63) - 1


def _pod(name: str, kind: int, k: int) -> dict:
    cpu, memory = ("300m", "1", "2", "64")[kind % 4], ("256Mi", "1Gi", "512Mi", "1Gi")[kind % 4]
    spec: dict = {}
    labels = {"app": f"a{kind % 3}"}
    if kind == 4:
        spec["nodeSelector"] = {"zone": "z1"}
    elif kind == 5:
        spec["containers"] = [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                               "resources": {"requests": {"cpu": cpu, "memory": memory}},
                               "ports": [{"containerPort": 80, "hostPort": 8080}]}]
    elif kind == 6:
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "preference": {"matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["z0"]}]}}]}}
    elif kind == 7:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "a1"}},
             "topologyKey": "kubernetes.io/hostname"}]}}
    return pod_dict(name, cpu=cpu, memory=memory, created=k, labels=labels, spec=spec or None)


@st.composite
def workloads(draw):
    n = draw(st.integers(1, 7))
    nodes = [node_dict(f"n{i}", cpu=str(draw(st.sampled_from([2, 4]))),
                       memory=f"{draw(st.sampled_from([2, 8]))}Gi",
                       pods=str(draw(st.sampled_from([3, 110]))),
                       labels={"zone": f"z{i % 2}"})
             for i in range(n)]
    kinds = draw(st.lists(st.integers(0, 7), min_size=1, max_size=30))
    return nodes, [_pod(f"p{k:03d}", kind, k) for k, kind in enumerate(kinds)]


def _play(nodes, pods, seed: int, fast: bool, listen: bool) -> dict:
    sched = Scheduler(build_cluster(nodes), "numba", seed, batch=False)
    state = sched.cluster.state
    state.bound_sum_room = fast
    sched.binding.quiet_bindings = fast
    heard, events = watch(sched, listen)
    for p in pods:
        fw = sched.cluster.framework_for(sched.cluster.resolve(p), "numba")
        fw.keep_plan_parts = fast
        fw.call_every_plugin = not fast
    out, preemptions = sched.schedule_pending(pods)
    metrics = sched.metrics()
    metrics.pop("stage_seconds")
    metrics["plugin_seconds"] = sorted(metrics["plugin_seconds"])
    pending = [b.pod for b in out if b.node is None]
    return {
        "outcomes": [(b.pod, b.node, b.message, b.nominated_node, b.victims) for b in out],
        "preemptions": preemptions, "events": events, **bound_state(state),
        "nonzero": state.nonzero_requested[: state.n_rows].tolist(),
        "heard": heard.events, "metrics": metrics,
        "queue": sorted((k, pi.where, pi.attempts, tuple(sorted(pi.unschedulable_plugins)))
                        for k, pi in sched.queue.infos.items()),
    }


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(workloads(), st.integers(0, 2**31), st.booleans())
def test_kept_cycle_work_equals_the_slow_way(case, seed, listen):
    nodes, pods = case
    assert _play(nodes, pods, seed, True, listen) == _play(nodes, pods, seed, False, listen)


def test_the_fast_ways_are_taken(monkeypatch):
    """Plan parts assembled once per mask pair, no exact sum check while
    the bound clears, no binding plugin called for a signed plain pod."""
    nodes = [node_dict(f"n{i}") for i in range(4)]
    pods = [pod_dict(f"p{k}", cpu="100m", memory="64Mi") for k in range(12)]
    sched = Scheduler(build_cluster(nodes), "numba", 0, batch=False)
    fw = sched.cluster.framework_for(sched.cluster.resolve(pods[0]), "numba")
    calls = {"assemble": 0, "exact": 0, "reserve": 0}
    assemble, exact = fw._assemble_plan, CS._check_sum_room

    def counted(name, fn):
        def inner(*a, **k):
            calls[name] += 1
            return fn(*a, **k)
        return inner
    monkeypatch.setattr(fw, "_assemble_plan", counted("assemble", assemble))
    monkeypatch.setattr(CS, "_check_sum_room", counted("exact", exact))
    for p in fw.plugins_at("reserve"):
        monkeypatch.setattr(p, "reserve", counted("reserve", p.reserve))
    out, _ = sched.schedule_pending(pods)
    assert all(b.node is not None for b in out)
    assert calls == {"assemble": 1, "exact": 0, "reserve": 0}
    assert set(fw.binding_keys) <= set(sched.metrics()["plugin_seconds"])


def test_a_sum_past_int64_is_refused_with_the_bound_kept():
    """The bound grows with each pod accounted; where it no longer clears
    the exact check refuses the pod as before, nothing changed."""
    big = INT64_MAX // 1000 // 2            # cores: two of them fit, three do not
    nodes = [node_dict("n")]
    cluster = build_cluster(nodes)
    state = cluster.state
    pods = [cluster.resolve(pod_dict(f"p{k}", cpu=str(big), memory=None)) for k in range(3)]
    small = cluster.resolve(pod_dict("s", cpu="1m", memory=None))
    state.add_pod(small, "n")
    assert state._sum_top is not None          # made by the first pod
    state.add_pod(pods[0], "n")
    state.add_pod(pods[1], "n")
    before = state.requested.copy()
    have = int(state.requested[0, 0])
    with pytest.raises(StateError) as info:
        state.add_pod(pods[2], "n")
    assert str(info.value) == (
        f"Pod default/p2: spec.containers[*].resources.requests.cpu: {big * 1000} more on "
        f"node 'n' (requested {have}) overflows int64")
    assert (state.requested == before).all() and "default/p2" not in state.pods


def test_the_shape_memo_by_pod_class_stays_bounded(monkeypatch):
    """Pods read one at a time each start a class of their own: the memo
    of their shapes is cleared when full, and a pod accounted after that
    gets the same shape id as an alike pod before."""
    monkeypatch.setattr(CS, "_CLASS_MEMO_MAX", 4)
    cluster = build_cluster([node_dict("n")])
    state = cluster.state
    pods = [cluster.resolve(pod_dict(f"p{k}", cpu="1", memory=None)) for k in range(11)]
    for pod in pods:
        state.add_pod(pod, "n")
        assert len(state._shape_memo[3]) <= 4
    assert len({state.pods[p.key].shape_id for p in pods}) == 1


def _zone_node(name: str, zone: str) -> dict:
    return node_dict(name, cpu="8", memory="16Gi",
                     labels={"topology.kubernetes.io/zone": zone})


def _claim(name: str) -> dict:
    return {"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default",
                                                          "uid": f"uid-{name}"},
            "spec": {"storageClassName": "zonal", "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "10Gi"}}}}


_ZONAL = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
          "metadata": {"name": "zonal"}, "provisioner": "pd.csi.storage.gke.io",
          "volumeBindingMode": "WaitForFirstConsumer"}


def _volume_play(fast: bool) -> tuple:
    """Plain pods between pods whose claims VolumeBinding binds at Reserve
    and PreBind (their binding points are called), one missing claim."""
    objs = [_zone_node(f"n{i}", "ab"[i % 2]) for i in range(4)] + [_ZONAL]
    objs += [_claim(f"data-{k}") for k in range(3)]
    pods = []
    for k in range(9):
        p = pod_dict(f"p{k}", cpu="1", memory="1Gi")
        if k % 3 == 1:
            p["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {
                "claimName": f"data-{k // 3}" if k != 7 else "missing"}}]
        pods.append(p)
    sched = Scheduler(build_cluster(objs), "numba", 3, batch=False)
    sched.binding.quiet_bindings = fast
    sched.cluster.state.bound_sum_room = fast
    events: list = []
    sched.subscribe("*", lambda e: events.append((e["event"], e["pod"], e["node"],
                                                  e["message"])))
    calls = {"reserve": 0}
    fw = sched.cluster.framework_for(sched.cluster.resolve(pods[0]), "numba")
    fw.keep_plan_parts = fast
    for p in fw.plugins_at("reserve"):
        def counted(ctx, node, __fn=p.reserve):
            calls["reserve"] += 1
            return __fn(ctx, node)
        p.reserve = counted
    out, _ = sched.schedule_pending(pods)
    from tensorsched.framework.state.volumes import volume_catalog
    cat = volume_catalog(sched.cluster.state)
    metrics = sched.metrics()
    metrics.pop("stage_seconds")
    metrics["plugin_seconds"] = sorted(metrics["plugin_seconds"])
    return ([(b.pod, b.node, b.message) for b in out], events, metrics,
            sorted((k, repr(v)) for k, v in cat.claim_users.items()),
            sched.cluster.state.requested[:4].tolist()), calls["reserve"]


def test_pods_with_volumes_keep_their_binding_points():
    fast, fast_calls = _volume_play(True)
    slow, slow_calls = _volume_play(False)
    assert fast == slow
    assert any(b[1] is not None for b in fast[0][1::3][:2])    # claims bound through Reserve
    # only the pods with volumes call Reserve (two plugins each) on the fast way
    placed_with_volumes = sum(1 for b in fast[0][1::3] if b[1] is not None)
    assert fast_calls == 2 * placed_with_volumes < slow_calls
