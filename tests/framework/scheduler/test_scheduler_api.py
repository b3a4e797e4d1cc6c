"""The embedding API: queue-driven cycles, events, metrics, binder failures,
Permit (allow, reject, timeout), assumed-pod expiry, nominated pods counted
while filtering, and preemption through the queue -- with the state checked
after every step (nothing double-counted, nothing lost)."""

import pytest
from support.checks import check

from tensorsched.framework.errors import ArgumentError, ManifestError
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.plugins import in_tree_registry
from tensorsched.framework.runtime.status import Code, Status
from tensorsched.framework.scheduler.cluster import build_cluster, pods_from
from tensorsched.framework.scheduler.queue import BACKOFF
from tensorsched.framework.scheduler.scheduler import Scheduler

PREEMPT_CFG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler", "plugins": {
        "multiPoint": {"disabled": [{"name": "*"}]},
        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
        "bind": {"enabled": [{"name": "DefaultBinder"}]},
        "preFilter": {"enabled": [{"name": "NodeResourcesFit"}]},
        "filter": {"enabled": [{"name": "NodeResourcesFit"}]},
        "postFilter": {"enabled": [{"name": "DefaultPreemption"}]}}}],
}


def _events(sched):
    got = []
    sched.subscribe("*", got.append)
    return got


def test_run_until_idle_events_and_metrics():
    sched = Scheduler(build_cluster([node_dict(f"n{i}", cpu="2") for i in range(3)]))
    ev = _events(sched)
    keys = []
    for i in range(8):
        sched.add_pod(pod_dict(f"p{i}", cpu="700m", created=i))
        keys.append(f"default/p{i}")
    out = sched.run_until_idle()
    check(sched, keys)
    placed = [b for b in out if b.node]
    assert len(placed) == 6                           # 2 per node
    assert [e["event"] for e in ev].count("Bound") == 6
    assert [e["event"] for e in ev].count("Scheduled") == 6
    assert [e["event"] for e in ev].count("FailedScheduling") == 2
    m = sched.metrics()
    assert m["attempts"] == {"scheduled": 6, "unschedulable": 2}
    assert m["queue"]["unschedulable"] == 2
    assert "filter_score" in m["stage_seconds"] and "Bind/DefaultBinder" in m["plugin_seconds"]
    assert m["e2e_latency_seconds"]["count"] == 6
    # Deleting a bound pod frees room: a pending one binds after its backoff.
    sched.delete_pod(placed[0].pod)
    out = sched.run_until_idle()
    assert len([b for b in out if b.node]) == 1
    check(sched, keys, deleted={placed[0].pod})
    with pytest.raises(ValueError):
        sched.subscribe("Nope", print)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_binder_fault_rate_requeues_nothing_lost(seed):
    sched = Scheduler(build_cluster([node_dict(f"n{i}", cpu="4") for i in range(4)]),
                      "numpy", seed, binder_fault_rate=0.4)
    ev = _events(sched)
    keys = []
    for i in range(12):
        sched.add_pod(pod_dict(f"p{i}", cpu="1", created=i))
        keys.append(f"default/p{i}")
    for _ in range(500):
        b = sched.schedule_one()
        check(sched, keys)
        if b is None:
            if not sched.queue.infos:
                break
            sched.advance(1.0)
    st = sched.cluster.state
    assert all(k in st.pods for k in keys)            # every pod bound at last
    fails = [e for e in ev if e["event"] == "BindFailed"]
    assert fails and len(fails) == sched.metrics()["bind_failures"]
    assert sched.metrics()["attempts"]["error"] == len(fails)
    assert (st.requested[:, 0] <= st.allocatable[:, 0]).all()


def test_binder_callback_failure_backoff_timing():
    calls = []

    def binder(pod, node):
        calls.append((pod.key, node))
        return len(calls) > 1                         # the first bind fails
    sched = Scheduler(build_cluster([node_dict("n0")]), binder=binder)
    ev = _events(sched)
    sched.add_pod(pod_dict("p"))
    b = sched.schedule_one()
    assert b.node is None and "binder failed" in b.message
    pi = sched.queue.infos["default/p"]
    assert pi.where == BACKOFF and "default/p" not in sched.cluster.state.pods
    check(sched, ["default/p"])
    assert sched.queue.next_backoff_expiry() == 1.0
    sched.advance(0.5)
    assert sched.schedule_one() is None
    sched.advance(0.5)
    assert sched.schedule_one().node == "n0"
    check(sched, ["default/p"])
    assert [e["event"] for e in ev] == ["Scheduled", "BindFailed", "Scheduled", "Bound"]


class Gate:
    """A Permit plugin: WAIT (timeout 5 s) or Reject, as told."""

    name = "Gate"

    def __init__(self):
        self.mode = "wait"

    def permit(self, ctx, node):
        if self.mode == "wait":
            return Status(Code.WAIT, ("held",)), 5.0
        if self.mode == "reject":
            return Status(Code.UNSCHEDULABLE, ("no way",))
        return Status.OK


def _gate_sched(**kw):
    gate = Gate()
    reg = in_tree_registry()
    reg.register("Gate", lambda args, h: gate, {"permit"})
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "default-scheduler",
                         "plugins": {"permit": {"enabled": [{"name": "Gate"}]}}}]}
    return gate, Scheduler(build_cluster([node_dict("n0", cpu="1")], cfg, reg), **kw)


def test_permit_wait_timeout_then_allow():
    gate, sched = _gate_sched()
    ev = _events(sched)
    sched.add_pod(pod_dict("p", cpu="600m"))
    keys = ["default/p"]
    b = sched.schedule_one()
    assert b.node is None and "waiting" in b.message
    st = sched.cluster.state
    assert "default/p" in st.pods and sched.waiting_pods() == keys   # assumed, counted once
    check(sched, keys)
    # a second pod cannot take the reserved room meanwhile
    sched.add_pod(pod_dict("q", cpu="600m", created=1))
    keys.append("default/q")
    assert sched.schedule_one().node is None
    check(sched, keys)
    sched.advance(4.9)
    assert sched.waiting_pods() == keys[:1]
    sched.advance(0.1)                                  # timeout: rejected, released
    assert sched.waiting_pods() == [] and "default/p" not in st.pods
    assert any(e["event"] == "FailedScheduling" and "timeout" in e["message"] for e in ev)
    check(sched, keys)
    gate.mode = "allow"
    out = sched.run_until_idle()
    assert sorted(b.pod for b in out if b.node) in (["default/p"], ["default/q"])
    check(sched, keys)


def test_permit_explicit_allow_and_reject():
    gate, sched = _gate_sched()
    sched.add_pod(pod_dict("p", cpu="600m"))
    sched.schedule_one()
    sched.allow("default/p", "Gate")
    assert "default/p" not in sched.waiting
    sched.schedule_one()                                # drains the allowed binding
    assert sched.outcomes["default/p"].node == "n0"
    check(sched, ["default/p"])
    gate.mode = "reject"
    sched.add_pod(pod_dict("r", cpu="100m", created=2))
    b = sched.schedule_one()
    assert b.node is None and b.message == "no way"
    assert "default/r" not in sched.cluster.state.pods
    assert sched.queue.infos["default/r"].unschedulable_plugins == {"Gate"}
    check(sched, ["default/p", "default/r"])


def test_delete_waiting_pod_releases_reservation():
    _gate, sched = _gate_sched()
    sched.add_pod(pod_dict("p", cpu="600m"))
    sched.schedule_one()
    sched.delete_pod("default/p")
    assert not sched.waiting and "default/p" not in sched.cluster.state.pods
    check(sched, ["default/p"], deleted={"default/p"})


def test_assumed_pods_expire_unless_confirmed():
    sched = Scheduler(build_cluster([node_dict("n0")]), assume_ttl=30)
    ev = _events(sched)
    for i in range(2):
        sched.add_pod(pod_dict(f"p{i}", created=i))
    sched.run_until_idle()
    keys = ["default/p0", "default/p1"]
    assert set(sched.assumed) == set(keys)
    sched.confirm("default/p0")
    sched.advance(29)
    assert "default/p1" in sched.cluster.state.pods
    sched.advance(1)
    assert "default/p1" not in sched.cluster.state.pods and "default/p1" in sched.queue
    assert [e["pod"] for e in ev if e["event"] == "AssumeExpired"] == ["default/p1"]
    check(sched, keys)
    sched.run_until_idle()
    check(sched, keys)
    assert "default/p1" in sched.cluster.state.pods and "default/p1" in sched.assumed
    bound = dict(pod_dict("p1"), spec=dict(pod_dict("p1")["spec"], nodeName="n0"))
    sched.update_pod(bound)                             # the informer's confirmation
    assert "default/p1" not in sched.assumed
    check(sched, keys)


def _prio_pod(name, prio, cpu, node=None, created=0):
    spec = {"nodeName": node} if node else None
    return pod_dict(name, cpu=cpu, memory="1Mi", priority=prio, created=created, spec=spec)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_preemption_through_queue_nominated_counted(backend):
    objs = [node_dict("n0", cpu="1", memory="1Gi"),
            _prio_pod("low", 0, "800m", "n0")]
    sched = Scheduler(build_cluster(objs, PREEMPT_CFG), backend)
    ev = _events(sched)
    sched.add_pod(_prio_pod("high", 100, "600m", created=1))
    keys = ["default/low", "default/high"]
    b = sched.schedule_one()
    assert b.node is None and b.nominated_node == "n0" and b.victims == ["default/low"]
    st = sched.cluster.state
    assert "default/low" not in st.pods                 # victim really gone
    pi = sched.queue.infos["default/high"]
    assert pi.where == BACKOFF                          # the deletion came during its cycle
    assert pi.pod.obj["status"]["nominatedNodeName"] == "n0"
    assert sched.nominator.node_of == {"default/high": "n0"}
    check(sched, keys, deleted={"default/low"})
    # Pods of equal or lower priority see the nominated pod on n0.
    sched.add_pod(_prio_pod("same", 100, "500m", created=2))
    sched.add_pod(_prio_pod("mid", 50, "500m", created=3))
    keys += ["default/same", "default/mid"]
    for _ in range(2):
        b = sched.schedule_one()
        assert b.node is None and "Insufficient cpu" in b.message
        check(sched, keys, deleted={"default/low"})
    assert st.requested[st.node_rows["n0"], 0] == 0     # nominated pods were only borrowed
    sched.advance(1)
    b = sched.schedule_one()
    assert (b.pod, b.node, b.nominated_node, b.victims) == (
        "default/high", "n0", "n0", ["default/low"])   # bound on its nominated node
    assert not sched.nominator
    check(sched, keys, deleted={"default/low"})
    assert [e["pod"] for e in ev if e["event"] == "Preempted"] == ["default/low"]
    assert sched.metrics()["preemptions"] == 1


def test_higher_priority_pod_ignores_lower_nomination():
    objs = [node_dict("n0", cpu="1", memory="1Gi"), _prio_pod("low", 0, "800m", "n0")]
    sched = Scheduler(build_cluster(objs, PREEMPT_CFG))
    sched.add_pod(_prio_pod("high", 100, "600m", created=1))
    sched.schedule_one()
    sched.add_pod(_prio_pod("top", 200, "600m", created=2))
    b = sched.schedule_one()
    assert b.node == "n0"                               # the lower nomination does not count
    check(sched, ["default/high", "default/top"])


def test_graceful_termination_then_bound_on_nominated_node():
    objs = [node_dict("n0", cpu="1", memory="1Gi"), node_dict("n1", cpu="1", memory="1Gi"),
            _prio_pod("l0", 0, "800m", "n0"), _prio_pod("l1", 10, "800m", "n1")]
    sched = Scheduler(build_cluster(objs, PREEMPT_CFG), termination_grace_seconds=30)
    sched.add_pod(_prio_pod("high", 100, "600m", created=1))
    keys = ["default/l0", "default/l1", "default/high"]
    b = sched.schedule_one()
    assert b.nominated_node == "n0" and b.victims == ["default/l0"]   # lowest victim priority
    st = sched.cluster.state
    assert st.pods["default/l0"].record.deleting                       # terminating
    check(sched, keys)
    sched.advance(1)
    # Upstream: the nominated preemptor waits among the unschedulable pods
    # until the victim's deletion (a Pod/Delete event) moves it.
    assert sched.schedule_one() is None
    assert sched.queue.infos["default/high"].where == "unschedulable"
    assert "default/l0" in st.pods
    check(sched, keys)
    out = sched.run_until_idle()             # the clock jumps to the end of the grace period
    assert sched.clock.now() >= 30
    assert "default/l0" not in st.pods and st.pods["default/high"].node_row == st.node_rows["n0"]
    assert out[-1].node == "n0" and "default/l1" in st.pods
    check(sched, keys, deleted={"default/l0"})


def test_direct_mode_run_unchanged():
    """schedule_one(pod)/run(pods): the CLI and the benchmarks' path."""
    objs = [node_dict(f"n{i}", cpu="1", memory="1Gi") for i in range(2)]
    objs += [_prio_pod(f"low{i}", 0, "800m", f"n{i}") for i in range(2)]
    objs += [_prio_pod(f"high{j}", 100, "600m", created=j) for j in range(2)]
    cluster = build_cluster(objs, PREEMPT_CFG)
    sched = Scheduler(cluster)
    out = sched.run(cluster.pending)
    assert all(b.node == b.nominated_node and b.victims for b in out)
    assert len(sched.evictions) == 2
    check(sched, [])


def test_retry_while_victim_terminates_is_not_eligible():
    objs = [node_dict("n0", cpu="1", memory="1Gi"), _prio_pod("l0", 0, "800m", "n0")]
    sched = Scheduler(build_cluster(objs, PREEMPT_CFG), termination_grace_seconds=30)
    sched.add_pod(_prio_pod("high", 100, "600m", created=1))
    sched.schedule_one()
    sched.advance(2)
    sched.update_node(node_dict("n0", cpu="1", memory="1Gi"))   # moves the preemptor back
    b = sched.schedule_one()
    assert b.pod == "default/high" and b.node is None
    assert "not eligible due to a terminating pod on the nominated node" in b.message
    assert len(sched.evictions) == 1                           # no second round of victims
    check(sched, ["default/l0", "default/high"])
    sched.run_until_idle()
    assert sched.cluster.state.pods["default/high"].node_row == 0
    check(sched, ["default/l0", "default/high"], deleted={"default/l0"})


def test_schedule_pending_resolves_priorities_once_per_template_and_refuses_before_adding():
    """Pod dicts are parsed and their priorities resolved once per template:
    the records equal one-by-one resolution, and a pod naming an unknown
    PriorityClass is refused before any pod of the call enters the queue."""
    classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"},
               {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": "dflt"}, "value": 7, "globalDefault": True}]
    cluster = build_cluster([node_dict("n0")] + classes)
    pods = [pod_dict(f"p{i}", created=i) for i in range(6)]
    for p in pods[3:]:
        p["spec"]["priorityClassName"] = "high"
    got = pods_from(pods, cluster.resolve)
    assert got == [cluster.resolve(parse_pod(p)) for p in pods]
    assert [(r.priority, r.preemption_policy) for r in got] == \
        [(7, "PreemptLowerPriority")] * 3 + [(1000, "Never")] * 3
    assert got[1].memo is got[2].memo and got[4].memo is got[5].memo

    sched = Scheduler(cluster, "numba", 0)
    bad = pod_dict("bad", created=9)
    bad["spec"]["priorityClassName"] = "nope"
    with pytest.raises(ManifestError, match="spec.priorityClassName"):
        sched.schedule_pending(pods + [bad])
    assert len(sched.queue) == 0 and not sched.cluster.state.pods


@pytest.mark.parametrize("n", [3, 300])
@pytest.mark.parametrize("field", ["creationTimestamp", "deletionTimestamp"])
def test_a_timestamp_past_int64_ns_is_a_manifest_error_and_changes_nothing(n, field):
    # 2262-04-11T23:47:16.854775807Z is the last int64 ns; a list of dicts
    # (few, or many through the bulk path) refuses the pod before any enters
    sched = Scheduler(build_cluster([node_dict("n0", cpu="100")]))
    pods = [pod_dict(f"p{i}", cpu="10m", created=i) for i in range(n)]
    pods[n // 2]["metadata"][field] = "2262-04-12T00:00:00Z"
    with pytest.raises(ManifestError) as info:
        sched.schedule_pending(pods)
    assert (info.value.obj, info.value.field) == (f"Pod default/p{n // 2}", f"metadata.{field}")
    assert len(sched.queue) == 0 and not sched.cluster.state.pods
    with pytest.raises(ManifestError, match="out of range"):
        parse_pod(pods[n // 2])
    bindings, _ = sched.schedule_pending(pods[:n // 2])       # still usable
    assert len(bindings) == n // 2


def test_schedule_pending_refuses_an_endless_iterator_before_queueing(monkeypatch):
    """An endless iterator of pods is read up to the bound plus one and
    refused naming the argument; nothing is queued or bound."""
    import itertools

    from tensorsched.framework.scheduler import scheduler as scheduler_module
    monkeypatch.setattr(scheduler_module, "MAX_OBJECTS", 1000)
    sched = Scheduler(build_cluster([node_dict("n0")]), backend="numpy")
    with pytest.raises(ArgumentError, match=r"^schedule_pending: pods: at most 1,000 Pod dicts "
                       r"or PodRecords \(or a PodColumns\), got more$"):
        sched.schedule_pending(itertools.repeat(pod_dict("p")))
    assert not sched.cluster.state.pods and not len(sched.queue)
