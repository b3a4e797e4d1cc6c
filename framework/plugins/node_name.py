"""NodeName: mirrors plugins/nodename/node_name.go (spec.nodeName must match)."""

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.runtime.cluster_events import NODE_ADD
from tensorsched.framework.runtime.plugin import FusedFilter, Plugin
from tensorsched.framework.runtime.status import Code, Status
from tensorsched.kernels import layout as L


NAME = names.NODE_NAME
REASON = "node(s) didn't match the requested node name"


class NodeName(Plugin, FusedFilter):
    name = NAME
    events = frozenset({NODE_ADD})
    filter_flag = L.F_NODE_NAME
    reason_bits = int(L.R_NODE_NAME)
    always_unresolvable = True
    explains_by_bits = True

    def explain_reasons(self, ctx, row, bits):
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,), NAME)


def new(args, handle):
    return NodeName()
