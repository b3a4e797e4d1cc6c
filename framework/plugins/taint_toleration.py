"""TaintToleration: mirrors plugins/tainttoleration/taint_toleration.go.

Filter: the first NoSchedule/NoExecute taint of the node that no toleration
tolerates rejects it.  Score: the number of PreferNoSchedule taints not
tolerated (by tolerations with an empty or PreferNoSchedule effect),
reverse-normalized so the fewest gets 100."""

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.runtime.cluster_events import NODE_ADD, NODE_UPDATE
from tensorsched.framework.runtime.plugin import NORMALIZE_REVERSE, FusedFilter, FusedScore, Plugin
from tensorsched.framework.runtime.status import Code, Status
from tensorsched.framework.state.query import tolerates
from tensorsched.kernels import layout as L


NAME = names.TAINT_TOLERATION


class TaintToleration(Plugin, FusedFilter, FusedScore):
    name = NAME
    events = frozenset({NODE_ADD, NODE_UPDATE})
    filter_flag = L.F_TAINT
    reason_bits = int(L.R_TAINT)
    always_unresolvable = True
    score_slot = L.S_TAINT
    normalize = NORMALIZE_REVERSE

    def pre_score(self, ctx):
        return Status.OK

    def spec_answer(self, pod, point):
        """``SpecAnswerPlugin``: PreScore passes every pod."""
        return Code.SUCCESS

    def explain_reasons(self, ctx, row, bits):
        node = ctx.state.nodes[row]
        for taint in node.taints:
            if taint.effect not in ("NoSchedule", "NoExecute"):
                continue
            if not any(tolerates(t, taint) for t in ctx.pod.tolerations):
                reason = f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason,), NAME)
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                      ("node(s) had untolerated taint",), NAME)


def new(args, handle):
    return TaintToleration()
