"""NodeUnschedulable: mirrors plugins/nodeunschedulable/node_unschedulable.go.

A node with ``spec.unschedulable`` rejects pods that do not tolerate the
``node.kubernetes.io/unschedulable:NoSchedule`` taint."""

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.runtime.cluster_events import NODE_ADD, NODE_UPDATE
from tensorsched.framework.runtime.plugin import FusedFilter, Plugin
from tensorsched.framework.runtime.status import Code, Status
from tensorsched.kernels import layout as L


NAME = names.NODE_UNSCHEDULABLE
REASON = "node(s) were unschedulable"


class NodeUnschedulable(Plugin, FusedFilter):
    name = NAME
    events = frozenset({NODE_ADD, NODE_UPDATE})
    filter_flag = L.F_UNSCHEDULABLE
    reason_bits = int(L.R_UNSCHEDULABLE)
    always_unresolvable = True
    explains_by_bits = True

    def explain_reasons(self, ctx, row, bits):
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,), NAME)


def new(args, handle):
    return NodeUnschedulable()
