"""NodeName: mirrors plugins/nodename/node_name.go (spec.nodeName must match)."""

from tensorsched.framework.runtime.plugin import FusedFilter, Plugin
from tensorsched.framework.runtime.status import Code, Status
from tensorsched.kernels import layout as L

from . import names

NAME = names.NODE_NAME
REASON = "node(s) didn't match the requested node name"


class NodeName(Plugin, FusedFilter):
    name = NAME
    events = frozenset({"Node/Add"})
    filter_flag = L.F_NODE_NAME
    reason_bits = int(L.R_NODE_NAME)
    explains_by_bits = True

    def explain_reasons(self, ctx, row, bits):
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,), NAME)


def new(args, handle):
    return NodeName()
