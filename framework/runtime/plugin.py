"""Plugin contracts: one Protocol per extension point (kube-scheduler's
``framework/interface.go``), plus the hooks that let a plugin run inside the
fused kernel stages.

Filter and Score plugins answer for all evaluated nodes at once: ``rows`` is
an [M] int64 array of node rows of ``ctx.state`` in evaluation order.

The loop and the preemption evaluator never name a plugin: what a plugin can
do beyond its extension points it offers through the capability protocols at
the end of this module (``PodIndependentWhen``, ``CountProbePlugin``,
``SignPlugin``, ``RunSafePlugin``, ``RunReservePlugin``,
``SpecAnswerPlugin``).
"""

from __future__ import annotations

import json
import marshal
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.state.cluster_state import ClusterState

from .status import Status

NORMALIZE_NONE = 0
NORMALIZE_DEFAULT = 1      # DefaultNormalizeScore(100, reverse=False)
NORMALIZE_REVERSE = 2      # DefaultNormalizeScore(100, reverse=True)

#: the ``CycleContext.data`` key of the cycle's (seed, attempt): what a
#: plugin that chooses at random on purpose draws with
#: (``kernels.fused.ties.draw_index``), the same on every backend
CYCLE_DRAW = "cycle_draw"


@dataclass
class CycleContext:
    """What plugins see during one pod's cycle (upstream's CycleState).

    ``data`` holds what a plugin's PreFilter/PreScore computed for its own
    Filter/Score of this cycle, keyed by the plugin's name."""

    state: ClusterState
    pod: PodRecord
    framework: Any                  # the runtime.framework.Framework running the cycle
    data: dict = field(default_factory=dict)
    bound_node: str | None = None


class Plugin:
    """Base class: every plugin has a unique ``name``."""

    name: str = ""


@runtime_checkable
class PreEnqueuePlugin(Protocol):
    """Gate a pod before it enters the active queue (SUCCESS or UNSCHEDULABLE)."""

    def pre_enqueue(self, pod) -> Status: ...


@runtime_checkable
class QueueSortPlugin(Protocol):
    """Order pods in the active queue: True when ``a`` goes before ``b``."""

    def less(self, a, b) -> bool: ...


@runtime_checkable
class PreFilterPlugin(Protocol):
    """Once per pod before Filter.  Returns (status, node names or None): a
    rejection fails every node, SKIP disables the plugin's Filter for the
    pod, a name set restricts the nodes evaluated."""

    def pre_filter(self, ctx: "CycleContext") -> tuple[Status, set[str] | None]: ...


@runtime_checkable
class FilterPlugin(Protocol):
    """Per node feasibility.  Array plugins return [M] bool (True = fits);
    fused plugins set ``filter_flag`` and explain bits via ``reasons``."""

    def filter(self, ctx: "CycleContext", rows: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class PostFilterPlugin(Protocol):
    """Runs when no node fits (e.g. preemption).  ``result`` is the failed
    cycle's ``CycleResult``, ``victims`` the cluster's victim table; returns
    an outcome with ``status``, ``nominated_node`` (None: none), ``victims``
    and ``message`` (``preemption.PreemptionResult``)."""

    def post_filter(self, ctx: "CycleContext", result, victims, *, seed: int = 0,
                    attempt: int = 0): ...


@runtime_checkable
class PreScorePlugin(Protocol):
    """Once per pod before Score; SKIP leaves the plugin out of scoring."""

    def pre_score(self, ctx: "CycleContext") -> Status: ...


@runtime_checkable
class ScorePlugin(Protocol):
    """Raw scores of the feasible nodes, [M] int64; ``normalize`` is one of
    the NORMALIZE_* modes applied over the scored nodes."""

    normalize: int

    def score(self, ctx: "CycleContext", rows: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class ReservePlugin(Protocol):
    """Claim (reserve) or release (unreserve) what the pod needs on a node."""

    def reserve(self, ctx: "CycleContext", node_name: str) -> Status: ...

    def unreserve(self, ctx: "CycleContext", node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Protocol):
    """Allow, reject or hold (WAIT) a reserved pod before binding."""

    def permit(self, ctx: "CycleContext", node_name: str) -> Status: ...


@runtime_checkable
class PreBindPlugin(Protocol):
    def pre_bind(self, ctx: "CycleContext", node_name: str) -> Status: ...


@runtime_checkable
class BindPlugin(Protocol):
    """Bind the pod; SKIP passes to the next bind plugin."""

    def bind(self, ctx: "CycleContext", node_name: str) -> Status: ...


@runtime_checkable
class PostBindPlugin(Protocol):
    def post_bind(self, ctx: "CycleContext", node_name: str) -> None: ...


class FusedFilter(ABC):
    """A built-in filter evaluated inside the fused kernel pass.

    ``filter_flag`` enables its checks (``layout.F_*``); ``reason_bits`` are
    the reason bits it owns; ``explain_reasons`` turns a node's bits into
    (code, reasons) text, only at the edge; ``explains_by_bits``: that text
    depends on the bits alone, not on the node (a diagnosis then explains
    each distinct bit pattern once).  ``always_unresolvable``: every node
    it rejects is UnschedulableAndUnresolvable, whatever the bits (evicting
    pods cannot help there, so preemption leaves such nodes out); other
    filters report Unschedulable, or say per node through an
    ``unresolvable(ctx, rows)`` method as host filters do."""

    filter_flag: int = 0
    reason_bits: int = 0
    explains_by_bits: bool = False
    always_unresolvable: bool = False

    @abstractmethod
    def explain_reasons(self, ctx: "CycleContext", row: int, bits: int) -> Status:
        """The rejection of node ``row`` given its reason bits (a non-zero
        subset of ``reason_bits``)."""

    def sign(self, pod) -> tuple:
        """``SignPlugin``: a fused plugin reads only the pod's compiled
        query, which the framework's signature covers."""
        return ()


def sign_value(value) -> bytes | str:
    """A hashable stand-in for a manifest value in a ``sign``: equal only for
    equal values.  ``marshal`` is exact and fast (~1 us against ~5 us for
    sorted JSON) but keeps key order, so the same value written in another
    order signs apart (a shorter run, never a wrong one); values marshal
    refuses (subclasses) fall back to sorted JSON."""
    if not value:
        return ""
    try:
        return marshal.dumps(value, 0)
    except (ValueError, TypeError, RecursionError):
        return json.dumps(value, sort_keys=True)


class FusedScore(ABC):
    """A built-in score computed inside the fused kernel pass (``score_slot``):
    an interface, like ``FusedFilter``, that a plugin class adds to
    ``Plugin``."""

    score_slot: int = -1
    normalize: int = NORMALIZE_NONE

    def sign(self, pod) -> tuple:
        """``SignPlugin``: a fused plugin reads only the pod's compiled
        query, which the framework's signature covers."""
        return ()

    def query_options(self) -> dict:
        """QueryOptions fields this plugin sets from its args."""
        return {}


# ---------------------------------------------------------------- capabilities
#: the extension points a ``SpecAnswerPlugin`` answers for
PRE_FILTER = "preFilter"
PRE_SCORE = "preScore"


@runtime_checkable
class SpecAnswerPlugin(Protocol):
    """A PreFilter / PreScore plugin that can tell from a pod's spec alone,
    whatever the cluster holds, what that call returns for the pod:
    ``spec_answer(pod, point)`` (point ``PRE_FILTER`` or ``PRE_SCORE``)
    returns ``Code.SKIP`` or ``Code.SUCCESS`` where the call would return
    that code (a PreFilter: with no node names) and do nothing else (no
    ``CycleContext.data``, nothing the plugin keeps), else None.  It reads
    the pod's spec and the plugin's own arguments only, so the framework
    keeps the answers per pod class (``PodRecord.memo``) and leaves out
    the calls answered: a pod without host ports, volumes or node
    constraints calls only the plugins with work for it."""

    def spec_answer(self, pod: PodRecord, point: str) -> Any: ...


@runtime_checkable
class PodIndependentWhen(Protocol):
    """A host filter that, for some pods, passes every node whatever pods run
    there (GpuShareFit for a pod that asks no GPU): preemption's victim
    search then leaves it out."""

    def ignores_pods(self, ctx: CycleContext) -> bool: ...


PROBE_SPREAD = "spread"         # CountProbePlugin.probe_kind: PodTopologySpread's count model
PROBE_AFFINITY = "affinity"     # ... InterPodAffinity's


@runtime_checkable
class CountProbePlugin(Protocol):
    """A host filter whose victim search can run on per-domain counts, the
    state untouched (``preemption.host_search``).

    ``probe_kind`` names the count model the probe answers for ("spread":
    per-constraint domain counts with a global minimum; "affinity":
    affinity / anti-affinity conditions over domain sums);
    ``victim_probe(state, pod)`` builds the probe on the baseline state
    (a plugin that counts a cycle's nominated pods per node,
    ``counts_nominated_per_node``, also takes them: ``victim_probe(state,
    pod, nominated)``);
    ``probe_reasons[code - 1]`` is the rejection (a tuple of reasons) of a
    probe's non-zero ``code``.
    """

    probe_kind: str
    probe_reasons: tuple

    def victim_probe(self, state: ClusterState, pod: PodRecord) -> Any: ...


@runtime_checkable
class SignPlugin(Protocol):
    """A plugin that states what of a pod its decisions depend on (upstream's
    SignPlugin, KEP-5598): pods whose signatures are equal get the same
    answers from it, so a run of them can be scheduled in one compiled call.
    ``sign(pod)`` returns a hashable tuple, or None when this pod cannot be
    batched; it reads the pod alone (never the cluster), so the framework
    keeps its answer in the pod's memo.  A plugin without ``sign`` keeps
    every pod on the one-by-one path."""

    def sign(self, pod: PodRecord) -> tuple | None: ...


@runtime_checkable
class RunFilterPlugin(Protocol):
    """A host filter plugin whose answer for a run of alike pods is a set of
    per-domain rules (``kernels.domain_rules.DomainRule``) that the compiled
    run keeps current as it places pods: ``run_rules(ctx)`` returns them for
    ``ctx.pod`` on ``ctx.state`` after PreFilter, or None when the pod's
    answers cannot be written so (it is then scheduled on its own)."""

    def run_rules(self, ctx) -> list | None: ...


@runtime_checkable
class RunScorePlugin(Protocol):
    """A host score plugin whose score for a run of alike pods the compiled
    run can compute itself: ``run_score(ctx)`` returns it as arrays
    (``kernels.domain_rules.SpreadScore``) for ``ctx.pod`` after PreScore,
    or None (the pod is then scheduled on its own)."""

    def run_score(self, ctx): ...


@runtime_checkable
class RunSkipPlugin(Protocol):
    """A host filter or score plugin that can promise its PreFilter /
    PreScore Skip holds for a whole run: ``run_keeps_skip(ctx, point)``
    (point "preFilter" or "preScore") is True when it skipped ``ctx.pod``
    and would skip every alike pod whatever the run places before it (and
    whatever pods leave meanwhile: a block of arrivals keeps the answer
    across departures, ``runtime.blocks``).  A
    host plugin that skipped a pod without this promise keeps the pod on
    the one-by-one path."""

    def run_keeps_skip(self, ctx, point: str) -> bool: ...


@runtime_checkable
class RunSafePlugin(Protocol):
    """A Reserve / Permit / PreBind / Bind / PostBind plugin whose methods
    always succeed at once and change nothing another pod's cycle reads
    (``run_safe = True``): a compiled run may leave them out.  Any other
    plugin at those points keeps pods on the one-by-one path."""

    run_safe: bool


@runtime_checkable
class RepeatableFailurePlugin(Protocol):
    """A PostFilter plugin whose outcome, when it nominates no node, is a
    function of the cluster state and of the pod's signature, priority and
    preemptionPolicy only, and that changes nothing when it nominates none
    (DefaultPreemption's "no candidate"): ``repeats_failure = True``.  The
    scheduler may then answer an alike pod that failed on an unchanged
    cluster with the remembered failure (``scheduler.failure_memory``).  A
    PostFilter plugin that is also a deciding ``SignPlugin`` makes the same
    promise through its signature."""

    repeats_failure: bool


@runtime_checkable
class RunReservePlugin(Protocol):
    """A Reserve plugin with work for some pods of a compiled run, which it
    does for the whole run itself: ``run_prefix(ctx, pods) -> int`` says
    how many of ``pods`` (alike, ``ctx.pod`` first, after its filters'
    ``run_rules``) the run may take (the rest keep their own cycles);
    ``reserve_run(ctx, placed, rows)`` does, once the run placed pod i on
    ``rows[i]``, what their Reserve and PreBind would have, in order."""

    def run_prefix(self, ctx, pods) -> int: ...

    def reserve_run(self, ctx, pods, rows) -> None: ...


@runtime_checkable
class NodeMaskPlugin(Protocol):
    """A host filter whose answer for a pod, after its PreFilter, is a fixed
    set of nodes that no pod placed or removed meanwhile can change (the
    volumes a pod's claims can reach): ``node_mask(ctx)`` returns (key,
    [n_rows] bool allowed rows, or None for every row), or None when it
    has no such answer (it then runs as a host filter).  The framework
    folds the mask into the query's row mask (the fused pass keeps its
    per-row cache: pods with equal keys share the masked query; a key None
    is not kept) and explains a masked row with the plugin's
    ``explain_status``, in profile order."""

    def node_mask(self, ctx: CycleContext): ...


@runtime_checkable
class StaticScorePlugin(Protocol):
    """A host score plugin whose scores read the nodes only, never the pod
    or the pods on the nodes: ``static_scores(state)`` returns them for
    rows 0..n_rows-1 ([n_rows] int64, not normalized).  A block of unlike
    pods (``BlockPlacerPlugin``) adds them as they are."""

    def static_scores(self, state: ClusterState) -> Any: ...


@runtime_checkable
class BlockPlacerPlugin(Protocol):
    """A host filter plugin that can place a block of unlike pods one after
    another in one compiled call, together with the fused filters'
    answers the framework hands it (``runtime.blocks.BlockInputs``), as
    their cycles one by one would: ``place_block(ctx, inputs)`` returns a
    ``runtime.blocks.BlockOutput`` or None (nothing done).  Its Reserve is
    part of the block (it records what it picked); ``block_scores`` names
    the host score plugins whose scores it computes itself, and
    ``block_status(ctx, code)`` is its rejection of a node whose code
    (``BlockOutput.keys``) it gave."""

    block_scores: frozenset

    def place_block(self, ctx: CycleContext, inputs: Any) -> Any: ...

    def block_status(self, ctx: CycleContext, code: int) -> Status: ...
