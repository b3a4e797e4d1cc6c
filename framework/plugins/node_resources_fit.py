"""NodeResourcesFit: mirrors plugins/noderesources/fit.go and the scorers in
least_allocated.go, most_allocated.go, requested_to_capacity_ratio.go.

Filter: 'Too many pods', then (when the pod requests anything) 'Insufficient
<resource>' for cpu, memory, ephemeral-storage and each requested scalar
resource not ignored.  Score: the configured strategy over the configured
resources, with non-zero request defaults for cpu and memory."""

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.config.plugin_args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    NodeResourcesFitArgs,
)
from tensorsched.framework.runtime.cluster_events import NODE_ADD, NODE_UPDATE, POD_DELETE
from tensorsched.framework.runtime.plugin import (
    NORMALIZE_NONE,
    FusedFilter,
    FusedScore,
    Plugin,
)
from tensorsched.framework.runtime.status import Code, Status
from tensorsched.kernels import layout as L


NAME = names.NODE_RESOURCES_FIT
_STRATEGY = {LEAST_ALLOCATED: L.STRATEGY_LEAST, MOST_ALLOCATED: L.STRATEGY_MOST}
_NATIVE_ORDER = ("cpu", "memory", "ephemeral-storage")


class NodeResourcesFit(Plugin, FusedFilter, FusedScore):
    name = NAME
    events = frozenset({POD_DELETE, NODE_ADD, NODE_UPDATE})
    filter_flag = L.F_FIT
    reason_bits = int(L.R_TOO_MANY_PODS) | ~((1 << L.INSUFFICIENT_SHIFT) - 1)
    explains_by_bits = True
    score_slot = L.S_FIT
    normalize = NORMALIZE_NONE

    def __init__(self, args: NodeResourcesFitArgs | None = None):
        self.args = args or NodeResourcesFitArgs()

    def query_options(self):
        s = self.args.scoring_strategy
        shape = ()
        if s.requested_to_capacity_ratio is not None:
            shape = tuple((p.utilization, p.score) for p in s.requested_to_capacity_ratio.shape)
        return {"fit_strategy": _STRATEGY.get(s.type, L.STRATEGY_RATIO),
                "fit_resources": tuple((r.name, r.weight) for r in s.resources),
                "shape": shape,
                "ignored_resources": frozenset(self.args.ignored_resources),
                "ignored_groups": frozenset(self.args.ignored_resource_groups)}

    def pre_filter(self, ctx):
        return Status.OK, None

    def pre_score(self, ctx):
        return Status.OK

    def spec_answer(self, pod, point):
        """``SpecAnswerPlugin``: PreFilter and PreScore pass every pod."""
        return Code.SUCCESS

    def explain_reasons(self, ctx, row, bits):
        reasons = []
        if bits & int(L.R_TOO_MANY_PODS):
            reasons.append("Too many pods")
        names_ = ctx.state.resources.names
        short = [names_[r] for r in range(len(names_))
                 if bits & (1 << (L.INSUFFICIENT_SHIFT + r))]
        native = [n for n in _NATIVE_ORDER if n in short]
        scalar = sorted(n for n in short if n not in _NATIVE_ORDER)
        reasons.extend(f"Insufficient {n}" for n in native + scalar)
        return Status(Code.UNSCHEDULABLE, tuple(reasons), NAME)


def new(args, handle):
    return NodeResourcesFit(args)
