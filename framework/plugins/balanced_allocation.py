"""NodeResourcesBalancedAllocation: mirrors plugins/noderesources/balanced_allocation.go.

Score = (1 - standard deviation of the requested/allocatable fractions) * 100
over the configured resources, with actual (not defaulted) requests.
PreScore skips pods that request none of those resources (v1.32)."""

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.config.plugin_args import NodeResourcesBalancedAllocationArgs
from tensorsched.framework.runtime.plugin import NORMALIZE_NONE, FusedScore, Plugin
from tensorsched.framework.runtime.status import SKIP, Code, Status
from tensorsched.kernels import layout as L


NAME = names.NODE_RESOURCES_BALANCED_ALLOCATION


class NodeResourcesBalancedAllocation(Plugin, FusedScore):
    name = NAME
    score_slot = L.S_BALANCED
    normalize = NORMALIZE_NONE

    def __init__(self, args: NodeResourcesBalancedAllocationArgs | None = None):
        self.args = args or NodeResourcesBalancedAllocationArgs()

    def query_options(self):
        return {"balanced_resources": tuple((r.name, r.weight) for r in self.args.resources)}

    def pre_score(self, ctx):
        return SKIP if self._skips(ctx.pod) else Status.OK

    def _skips(self, pod) -> bool:
        requests = pod.requests
        return all(requests.get(r.name, 0) == 0 for r in self.args.resources)

    def spec_answer(self, pod, point):
        """``SpecAnswerPlugin``: PreScore reads the pod's requests alone."""
        return Code.SKIP if self._skips(pod) else Code.SUCCESS


def new(args, handle):
    return NodeResourcesBalancedAllocation(args)
