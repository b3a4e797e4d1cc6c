"""NodeAffinity: mirrors plugins/nodeaffinity/node_affinity.go.

PreFilter: Skip when neither the pod (nodeSelector, required terms) nor the
scheduler-enforced ``addedAffinity`` constrains nodes; restricts the nodes
to those named by matchFields ``metadata.name In`` when every term does.
Filter: scheduler-enforced terms first, then nodeSelector AND required terms.
Score: sum of the weights of matching preferred terms (the pod's and the
added ones), normalized so the best node gets 100."""

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.config.plugin_args import NodeAffinityArgs
from tensorsched.framework.runtime.cluster_events import NODE_ADD, NODE_UPDATE
from tensorsched.framework.runtime.plugin import (
    NORMALIZE_DEFAULT,
    PRE_SCORE,
    FusedFilter,
    FusedScore,
    Plugin,
)
from tensorsched.framework.runtime.status import SKIP, Code, Status
from tensorsched.framework.state.query import prefilter_node_names
from tensorsched.kernels import layout as L


NAME = names.NODE_AFFINITY
REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_CONFLICT = "pod affinity terms conflict"


class NodeAffinity(Plugin, FusedFilter, FusedScore):
    name = NAME
    events = frozenset({NODE_ADD, NODE_UPDATE})
    filter_flag = L.F_NODE_AFFINITY
    reason_bits = int(L.R_NODE_AFFINITY | L.R_ADDED_AFFINITY)
    always_unresolvable = True
    explains_by_bits = True
    score_slot = L.S_NODE_AFFINITY
    normalize = NORMALIZE_DEFAULT

    def __init__(self, args: NodeAffinityArgs | None = None):
        added = (args.added_affinity if args else None) or {}
        req = added.get("requiredDuringSchedulingIgnoredDuringExecution")
        self.added_required = (tuple((req or {}).get("nodeSelectorTerms") or ())
                               if req is not None else None)
        self.added_preferred = tuple(
            added.get("preferredDuringSchedulingIgnoredDuringExecution") or ())

    def query_options(self):
        return {"added_required": self.added_required,
                "added_preferred": self.added_preferred}

    def pre_filter(self, ctx):
        pod = ctx.pod
        if self._filter_skips(pod):
            return SKIP, None
        node_names = prefilter_node_names(pod)
        if node_names is not None and not node_names:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_CONFLICT,), NAME), None
        return Status.OK, node_names

    def _filter_skips(self, pod) -> bool:
        """Whether neither the pod nor ``addedAffinity`` constrains nodes."""
        required = (pod.node_affinity or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution")
        return required is None and self.added_required is None and not pod.node_selector

    def _score_skips(self, pod) -> bool:
        preferred = (pod.node_affinity or {}).get(
            "preferredDuringSchedulingIgnoredDuringExecution")
        # Upstream skips only when the pod's preferred list is nil: an empty
        # (non-nil) list still scores (every node 0).
        return preferred is None and not self.added_preferred

    def pre_score(self, ctx):
        return SKIP if self._score_skips(ctx.pod) else Status.OK

    def spec_answer(self, pod, point):
        """``SpecAnswerPlugin``: PreScore reads the pod and the added
        affinity alone; PreFilter's Skip too (its node names are the
        call's)."""
        if point == PRE_SCORE:
            return Code.SKIP if self._score_skips(pod) else Code.SUCCESS
        return Code.SKIP if self._filter_skips(pod) else None

    def explain_reasons(self, ctx, row, bits):
        reason = REASON_ENFORCED if bits & int(L.R_ADDED_AFFINITY) else REASON_POD
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason,), NAME)


def new(args, handle):
    return NodeAffinity(args)
