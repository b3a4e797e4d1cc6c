"""The queue's door: PreEnqueue's answer recorded on the pod's info."""

from types import SimpleNamespace

from tensorsched.framework.runtime.status import Code, Status
from tensorsched.framework.scheduler.pre_enqueue_gate import PreEnqueueGate


def _pi():
    return SimpleNamespace(pod="pod", gated=None, gated_message=None,
                           unschedulable_plugins=frozenset({"Old"}))


def test_no_plugins_lets_every_pod_in():
    pi = _pi()
    assert PreEnqueueGate().admits(pi) and pi.gated is False


def test_a_rejection_gates_the_pod_with_its_plugin_and_message():
    gate = PreEnqueueGate(lambda pod: Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                             ("waiting for gates", "x"), "SchedulingGates"))
    pi = _pi()
    assert not gate.admits(pi)
    assert pi.gated and pi.gated_message == "waiting for gates; x"
    assert pi.unschedulable_plugins == frozenset({"SchedulingGates"})
    ok = PreEnqueueGate(lambda pod: Status.OK)
    assert ok.admits(pi) and not pi.gated and pi.gated_message == ""
