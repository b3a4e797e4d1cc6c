"""SchedulingGates: mirrors plugins/schedulinggates/scheduling_gates.go.

A pod with ``spec.schedulingGates`` stays out of the active queue."""

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.runtime.cluster_events import POD_UPDATE
from tensorsched.framework.runtime.plugin import Plugin
from tensorsched.framework.runtime.status import Code, Status


NAME = names.SCHEDULING_GATES


class SchedulingGates(Plugin):
    name = NAME
    events = frozenset({POD_UPDATE})     # the pod's own update only
    # PreEnqueue reads the pod's gates alone: a pod without any passes
    # (the queue then leaves the call out)
    gates_only = True

    def pre_enqueue(self, pod) -> Status:
        if not pod.scheduling_gates:
            return Status.OK
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                      (f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]",),
                      NAME)


def new(args, handle):
    return SchedulingGates()
