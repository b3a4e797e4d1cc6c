"""BindingCycle on its own, made from the parts its constructor names:
assume then bind, a Permit wait released by ``allow`` (after ``drain``), a
rejection that forgets the pod and sends it back to the queue, a binder
failure counted and backed off, ``forget`` of a deleted pod, and the
assumed TTL expiring on the clock."""

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.plugins import in_tree_registry
from tensorsched.framework.plugins.priority_sort import PrioritySort
from tensorsched.framework.runtime.clock import SimulatedClock
from tensorsched.framework.runtime.status import Code, Status
from tensorsched.framework.scheduler.binding import BindingCycle
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.events import EventBus, Outcomes
from tensorsched.framework.scheduler.metrics import MetricsRecorder
from tensorsched.framework.scheduler.nominator import Nominator
from tensorsched.framework.scheduler.queue import BACKOFF, SchedulingQueue


class Hold:
    """A Permit plugin that makes every pod wait 5 s."""

    name = "Hold"

    def permit(self, ctx, node):
        return Status(Code.WAIT, ("held",)), 5.0


def _binding(permit=False, **kw):
    reg = in_tree_registry()
    cfg = None
    if permit:
        reg.register("Hold", lambda args, h: Hold(), {"permit"})
        cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1",
               "kind": "KubeSchedulerConfiguration",
               "profiles": [{"schedulerName": "default-scheduler",
                             "plugins": {"permit": {"enabled": [{"name": "Hold"}]}}}]}
    cluster = build_cluster([node_dict("n0", cpu="2")], cfg, reg)
    clock = SimulatedClock()
    queue = SchedulingQueue(clock, sort_plugin=PrioritySort())
    events, got = EventBus(clock), []
    events.subscribe("*", got.append)
    binding = BindingCycle(cluster.state, clock, queue, MetricsRecorder(), events, Outcomes(),
                           Nominator(), **kw)
    pod = parse_pod(pod_dict("p", cpu="1"))
    fw = cluster.framework_for(pod, "numpy")
    return binding, fw, pod, got


def _popped(binding, pod):
    binding.queue.add(pod)
    return binding.queue.pop()


def test_assume_then_bind():
    binding, fw, pod, got = _binding()
    pi = _popped(binding, pod)
    b = binding.assume_and_permit(fw, pod, "n0", pi)
    assert b.node == "n0" and binding.outcomes["default/p"].node == "n0"
    assert "default/p" in binding.state.pods and "default/p" not in binding.queue
    assert [e["event"] for e in got] == ["Scheduled", "Bound"]
    assert binding.metrics.results == {"scheduled": 1}
    assert "Bind/DefaultBinder" in binding.metrics.plugin_seconds


def test_permit_wait_allow_then_drain_binds():
    binding, fw, pod, _got = _binding(permit=True)
    b = binding.assume_and_permit(fw, pod, "n0", _popped(binding, pod))
    assert b.node is None and binding.waiting_pods() == ["default/p"]
    assert binding.longest_permit_wait == 5.0 and binding.waiting["default/p"].deadline == 5.0
    assert "default/p" in binding.state.pods                   # assumed while waiting
    binding.allow("default/p", "Hold")
    assert not binding.waiting and len(binding.to_bind) == 1
    binding.drain()
    assert not binding.to_bind and binding.outcomes["default/p"].node == "n0"


def test_reject_forgets_and_requeues():
    binding, fw, pod, _got = _binding(permit=True)
    binding.assume_and_permit(fw, pod, "n0", _popped(binding, pod))
    binding.reject("default/p", "Hold", "no quorum")
    assert "default/p" not in binding.state.pods and not binding.waiting
    pi = binding.queue.infos["default/p"]
    # rejected after its cycle: the freed room is a move request first, so
    # the pod itself backs off (rejected inside the cycle it would wait aside)
    assert pi.where == BACKOFF and pi.unschedulable_plugins == {"Hold"}
    assert binding.outcomes["default/p"].message == "no quorum"
    assert binding.metrics.results == {"unschedulable": 1}


def test_permit_timeout_expires_on_the_clock():
    binding, fw, pod, _got = _binding(permit=True)
    binding.assume_and_permit(fw, pod, "n0", _popped(binding, pod))
    binding.expire(4.9)
    assert binding.waiting
    binding.expire(5.0)
    assert not binding.waiting and "default/p" not in binding.state.pods
    assert "timeout after waiting 5s" in binding.outcomes["default/p"].message


def test_binder_failure_backs_off():
    binding, fw, pod, got = _binding(binder=lambda pod, node: False)
    assert binding.may_fail()
    b = binding.assume_and_permit(fw, pod, "n0", _popped(binding, pod))
    assert b.node is None and "binder failed" in b.message
    assert binding.metrics.bind_failures == 1 and "default/p" not in binding.state.pods
    assert binding.queue.infos["default/p"].where == BACKOFF
    assert [e["event"] for e in got] == ["Scheduled", "BindFailed"]


def test_forget_a_deleted_waiting_pod():
    binding, fw, pod, _got = _binding(permit=True)
    binding.assume_and_permit(fw, pod, "n0", _popped(binding, pod))
    binding.preempted_for["default/p"] = ("n0", [])
    binding.forget("default/p")
    assert not binding.waiting and not binding.preempted_for
    assert "default/p" not in binding.state.pods


def test_assumed_pods_expire_and_requeue():
    binding, fw, pod, got = _binding(assume_ttl=30.0)
    binding.assume_and_permit(fw, pod, "n0", _popped(binding, pod))
    assert binding.assumed == {"default/p": 30.0}
    binding.expire(29.0)
    assert "default/p" in binding.state.pods
    binding.expire(30.0)
    assert not binding.assumed and "default/p" not in binding.state.pods
    assert binding.queue.infos["default/p"].where == BACKOFF
    assert got[-1]["event"] == "AssumeExpired"
