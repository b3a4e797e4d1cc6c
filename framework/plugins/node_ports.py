"""NodePorts: mirrors plugins/nodeports/node_ports.go.

A host port (protocol, hostIP, port) conflicts with one in use on the node
when protocol and port match and either IP is 0.0.0.0 or both are equal.
PreFilter skips pods that ask for no host port."""

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.runtime.cluster_events import NODE_ADD, POD_DELETE
from tensorsched.framework.runtime.plugin import FusedFilter, Plugin
from tensorsched.framework.runtime.status import SKIP, Code, Status
from tensorsched.kernels import layout as L


NAME = names.NODE_PORTS
REASON = "node(s) didn't have free ports for the requested pod ports"


class NodePorts(Plugin, FusedFilter):
    name = NAME
    events = frozenset({POD_DELETE, NODE_ADD})
    filter_flag = L.F_PORTS
    reason_bits = int(L.R_PORTS)
    explains_by_bits = True

    def pre_filter(self, ctx):
        return (Status.OK if ctx.pod.host_ports else SKIP), None

    def spec_answer(self, pod, point):
        """``SpecAnswerPlugin``: PreFilter's answer is the pod's host ports'."""
        return Code.SUCCESS if pod.host_ports else Code.SKIP

    def explain_reasons(self, ctx, row, bits):
        return Status(Code.UNSCHEDULABLE, (REASON,), NAME)


def new(args, handle):
    return NodePorts()
