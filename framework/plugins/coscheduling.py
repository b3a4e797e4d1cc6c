"""Coscheduling (gang scheduling), after kubernetes-sigs/scheduler-plugins'
pkg/coscheduling (the version whose CoschedulingArgs has
permitWaitingTimeSeconds and podGroupBackoffSeconds, PostFilter with the
10% quorum gap) -- out of tree: not in the in-tree registry nor the default
profile; ``register(registry)`` adds it (or use ``registry()``), then a
profile enables it at queueSort (instead of PrioritySort), preFilter,
postFilter, reserve and permit.

A pod belongs to the PodGroup named by its label
``scheduling.x-k8s.io/pod-group`` (same namespace).  PodGroup objects
(``framework.podgroups``) come from the cluster's manifests (handed over
when a Scheduler takes the plugin, ``set_handle``) or ``add_pod_group``;
for a label without such an object the group's minMember comes from the
pod label ``scheduling.x-k8s.io/min-member`` (a convenience of this port;
without either, Permit rejects the pod as upstream: "PodGroup not found").

- QueueSort: priority (higher first), then the group's creation time (the
  PodGroup's, else the first member's creation time seen), then the group's
  (or the pod's) namespaced name, so members of a group pop together.
- PreFilter (every failure UnschedulableAndUnresolvable, so no preemption):
  1. a group backed off by PostFilter is rejected until the backoff ends
     ("podGroup ns/name failed recently");
  2. a group with fewer than minMember pods known to the scheduler
     (pending, waiting, assumed or bound) is rejected;
  3. with spec.minResources: minResources plus ``pods: minMember`` must fit
     in the cluster's free capacity, summed over nodes (upstream's
     CheckClusterResource: per node allocatable minus requested, the
     group's own assumed or bound members counted as free since they are
     part of the demand; pods free = allocatable pods minus pods on the
     node).  Not a per-node fit: affinity, taints or fragmentation may still
     fail the pods in Filter.  Nodes are added in row order and a resource
     is satisfied as soon as the running sum reaches it (as upstream's loop
     over the snapshot, which matters only for overcommitted nodes).  A
     passing group is remembered for ``permitWaitingTimeSeconds`` on the
     clock and not checked again meanwhile (upstream's permittedPG cache).
- PostFilter (a member failed PreFilter or Filter, and preemption found
  nothing when DefaultPreemption runs first): nothing happens when the
  group already has minMember members assumed or bound, or when the
  missing ones are at most 10% of minMember; otherwise every waiting member
  of the group is rejected (its reservation released, back to the queue),
  the minResources check is forgotten, and with ``podGroupBackoffSeconds``
  > 0 (default 0, off, as upstream) a group with at least minMember pods is
  backed off: its members fail PreFilter at once for that long.  A pod
  without a group gets Unschedulable "can not find pod group", as upstream.
- Permit: when the group's assumed-or-bound members (this pod included)
  reach minMember, every waiting member is allowed and the pod passes;
  otherwise it waits (scheduleTimeoutSeconds, else the args'
  ``permitWaitingTimeSeconds``, 60 by default; 0 also means the default,
  as upstream's GetWaitTimeDuration, so no member ever waits 0 seconds).
- Unreserve (a member rejected, timed out or failed to bind): every waiting
  member of the group is rejected, so their reservations are released and
  they go back to the queue; the minResources check is forgotten.

Args (``CoschedulingArgs``, decoded strictly with ``register_args_decoder``
when a configuration is loaded): ``permitWaitingTimeSeconds`` and
``podGroupBackoffSeconds``, integers >= 0 (upstream's
ValidateCoschedulingArgs: negative values are refused), at most
MAX_SECONDS; anything else is a ConfigError at its field path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensorsched.framework.config.plugin_args import register_args_decoder
from tensorsched.framework.errors import ConfigError
from tensorsched.framework.parsing.podgroups import PodGroup, parse_pod_group
from tensorsched.framework.parsing.priorities import pod_priority
from tensorsched.framework.preemption.evaluator import PreemptionResult
from tensorsched.framework.runtime.cluster_events import (
    NODE_ADD,
    NODE_UPDATE,
    POD_ADD,
    POD_DELETE,
    UNSCHEDULED_POD_ADD,
)
from tensorsched.framework.runtime.handle import Handle
from tensorsched.framework.runtime.plugin import Plugin
from tensorsched.framework.runtime.status import Code, Status
from tensorsched.framework.state.listeners import OnPod

NAME = "Coscheduling"
POINTS = frozenset({"queueSort", "preFilter", "postFilter", "reserve", "permit"})
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
MIN_MEMBER_LABEL = "scheduling.x-k8s.io/min-member"
DEFAULT_PERMIT_WAITING_SECONDS = 60.0
REJECT_GAP_PERCENT = 10           # PostFilter leaves a group this close to quorum alone
MAX_SECONDS = (2**63 - 1) // 10**9  # upstream turns the seconds into an int64 time.Duration
_ARG_KEYS = ("permitWaitingTimeSeconds", "podGroupBackoffSeconds")


@dataclass(frozen=True)
class CoschedulingArgs:
    permit_waiting_time_seconds: int = int(DEFAULT_PERMIT_WAITING_SECONDS)
    pod_group_backoff_seconds: int = 0


def _seconds(value, path: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, f"must be an integer number of seconds, got {value!r}")
    if value < 0:
        raise ConfigError(path, f"must be greater than or equal to 0, got {value}")
    if value > MAX_SECONDS:
        # a float like 1e300 arrives as a 301-digit int: shown as 1e+300
        got = value if value < 10**18 else f"{value:g}"
        raise ConfigError(path, f"must be at most {MAX_SECONDS} seconds, got {got}")
    return value


def decode_args(raw, path: str) -> CoschedulingArgs:
    """CoschedulingArgs from a pluginConfig ``args`` mapping (None: the
    defaults); every problem a ConfigError naming ``path`` + the field."""
    if isinstance(raw, CoschedulingArgs):
        return raw
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(path, f"must be an object, got {type(raw).__name__} {raw!r}")
    sub = (lambda k: f"{path}.{k}" if path else k)
    for k in raw:
        if k not in _ARG_KEYS:
            raise ConfigError(sub(str(k)), f"unknown field (known: {', '.join(_ARG_KEYS)})")
    wait = raw.get("permitWaitingTimeSeconds")
    wait = (int(DEFAULT_PERMIT_WAITING_SECONDS) if wait is None
            else _seconds(wait, sub("permitWaitingTimeSeconds")))
    backoff = raw.get("podGroupBackoffSeconds")
    backoff = 0 if backoff is None else _seconds(backoff, sub("podGroupBackoffSeconds"))
    return CoschedulingArgs(wait, backoff)

__all__ = ["Coscheduling", "CoschedulingArgs", "PodGroup", "decode_args", "parse_pod_group", "register"]


def _unschedulable(message: str = ""):
    """A PostFilter outcome that nominates nothing."""
    return PreemptionResult(None, status=Status(Code.UNSCHEDULABLE,
                                                (message,) if message else (), NAME))


def _unresolvable(message: str):
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,), NAME), None


def _columns(a: np.ndarray, rows: np.ndarray, width: int) -> np.ndarray:
    """a[rows, :width], zero-padded when ``a`` has fewer columns."""
    out = np.zeros((rows.shape[0], width), np.int64)
    k = min(width, a.shape[1])
    out[:, :k] = a[rows, :k]
    return out


def _format_gap(gap: dict) -> str:
    return ", ".join(f"{n}={v}m" if n == "cpu" else f"{n}={v}" for n, v in sorted(gap.items()))


class Coscheduling(Plugin):
    name = NAME
    events = frozenset({POD_ADD, UNSCHEDULED_POD_ADD, POD_DELETE, NODE_ADD, NODE_UPDATE})

    def __init__(self, args=None):
        # decoded by the configuration (decode_args) or, given raw, here
        args = decode_args(args, f"pluginConfig[{NAME}].args")
        # 0 = the default wait (upstream's GetWaitTimeDuration): a member never
        # waits 0 seconds, which would reject it before its siblings arrive
        self.permit_timeout = float(args.permit_waiting_time_seconds
                                    or DEFAULT_PERMIT_WAITING_SECONDS)
        self.backoff = float(args.pod_group_backoff_seconds)
        self.groups: dict[tuple, PodGroup] = {}
        self.first_seen: dict[tuple, int] = {}
        self.counts: dict[tuple, int] = {}          # group -> members in the state
        self.permitted: dict[tuple, float] = {}     # group -> clock time its minResources check ends
        self.backed_off: dict[tuple, float] = {}    # group -> clock time its backoff ends
        self.handle: Handle | None = None

    # ----------------------------------------------------------- groups
    def set_handle(self, handle: Handle) -> None:
        """Called by the Scheduler: waiting pods, allow/reject, the queue,
        the clock; the cluster's PodGroup objects are registered."""
        if self.handle is handle:
            return
        self.handle = handle
        for pg in handle.pod_groups:
            self.add_pod_group(pg)
        state = handle.state
        self.counts = {}
        for record, row in state.pods.bound():
            self._on_state(record, row, 1)
        state.listeners.add(OnPod(self._on_state))

    def _on_state(self, pod, row, delta) -> None:
        g = self.group_key(pod)
        if g is not None:
            self.counts[g] = self.counts.get(g, 0) + delta

    def add_pod_group(self, group) -> PodGroup:
        """Register a PodGroup (a ``PodGroup`` or a PodGroup object dict)."""
        pg = group if isinstance(group, PodGroup) else parse_pod_group(group)
        self.groups[(pg.namespace, pg.name)] = pg
        return pg

    def group_key(self, pod):
        name = (pod.labels or {}).get(POD_GROUP_LABEL)
        return (pod.namespace, name) if name else None

    def group(self, pod) -> PodGroup | None:
        g = self.group_key(pod)
        if g is None:
            return None
        pg = self.groups.get(g)
        if pg is None:
            mm = (pod.labels or {}).get(MIN_MEMBER_LABEL)
            if mm is None:
                return None
            pg = PodGroup(g[0], g[1], int(mm))
            self.groups[g] = pg
        return pg

    def _siblings(self, pg: PodGroup, keys) -> list[str]:
        g = (pg.namespace, pg.name)
        h = self.handle
        out = []
        for k in keys:
            w = h.waiting.get(k)
            if w is not None and self.group_key(w.pod) == g:
                out.append(k)
        return out

    def _now(self) -> float | None:
        return self.handle.clock.now() if self.handle is not None else None

    def _cycle_extra(self, state) -> list[str]:
        """Pods the Scheduler added to the state for this cycle only (pods
        nominated elsewhere): upstream's snapshot does not hold them."""
        h = self.handle
        return [k for k in (h.cycle_nominated if h is not None else ()) if k in state.pods]

    def _assigned(self, g, state) -> int:
        """Members assumed or bound (upstream's CalculateAssignedPods)."""
        extra = sum(1 for k in self._cycle_extra(state)
                    if self.group_key(state.pods.record(k)) == g)
        return self.counts.get(g, 0) - extra

    def _members(self, g, pod, state) -> int:
        """Pods of the group known to the scheduler, ``pod`` included:
        assumed or bound, waiting, or in the scheduling queue."""
        total = self._assigned(g, state)
        extra = set(self._cycle_extra(state))
        seen_self = pod.key in state.pods and pod.key not in extra
        h = self.handle
        if h is not None:
            for queued in h.queued_pods():
                k = queued.key
                if self.group_key(queued) == g and (k not in state.pods or k in extra):
                    total += 1
                    seen_self |= k == pod.key
        return total + (0 if seen_self else 1)

    # --------------------------------------------------------- QueueSort
    def sort_key(self, pod) -> tuple:
        g = self.group_key(pod)
        if g is None:
            return (-pod_priority(pod), pod.creation_ns, pod.key, pod.creation_ns)
        pg = self.groups.get(g)
        if pg is not None and pg.creation_ns is not None:
            t = pg.creation_ns
        else:
            t = self.first_seen.setdefault(g, pod.creation_ns)
        return (-pod_priority(pod), t, f"{g[0]}/{g[1]}", pod.creation_ns)

    def less(self, a, b) -> bool:
        return self.sort_key(a) < self.sort_key(b)

    # ----------------------------------------------------------- PreFilter
    def pre_filter(self, ctx):
        pg = self.group(ctx.pod)
        if pg is None:
            return Status.OK, None
        g = (pg.namespace, pg.name)
        now = self._now()
        until = self.backed_off.get(g)
        if until is not None and now is not None:
            if now < until:
                return _unresolvable(f"podGroup {pg.full_name} failed recently")
            del self.backed_off[g]
        total = self._members(g, ctx.pod, ctx.state)
        if total < pg.min_member:
            return _unresolvable(f"pre-filter pod {ctx.pod.name} cannot find enough sibling pods, "
                                 f"current pods number: {total}, minMember of group: "
                                 f"{pg.min_member}")
        if pg.min_resources is None:
            return Status.OK, None
        if now is not None and self.permitted.get(g, -1.0) > now:
            return Status.OK, None
        gap = self.resource_gap(ctx.state, pg)
        if gap:
            return _unresolvable(f"resource gap: {_format_gap(gap)}")
        if now is not None:
            self.permitted[g] = now + self.permit_timeout
        return Status.OK, None

    def resource_gap(self, state, pg: PodGroup) -> dict[str, int]:
        """What the cluster's free capacity lacks for minResources plus
        ``pods: minMember`` (name -> amount still missing after every node;
        empty when it fits); see the module docstring for the rule."""
        need = dict(pg.min_resources or {})
        need["pods"] = pg.min_member
        rows = state.valid_rows()
        width = len(state.resources)
        free = _columns(state.allocatable, rows, width) - _columns(state.requested, rows, width)
        # the group's own members are part of the demand: their room counts as free;
        # pods added for this cycle only are not in upstream's snapshot
        g = (pg.namespace, pg.name)
        bound = state.pods
        # members by class (the group label is a class field), plus the
        # cycle's extra pods by key: no Python step per bound pod
        ours = np.fromiter((rec is not None and self.group_key(rec) == g
                            for rec in bound.classes), np.bool_, len(bound.classes))
        slots = bound.slots_of_classes(ours)
        extra = self._cycle_extra(state)
        if extra:
            slots = np.union1d(slots, bound.slots_of(extra))
        if slots.shape[0]:
            requests = np.zeros((len(bound.shapes), width), np.int64)
            for sid, (request, _) in enumerate(bound.shapes):
                k = min(width, request.shape[0])
                requests[sid, :k] = request[:k]
            pos = np.full(max(state.n_rows, 1), -1, np.int64)
            pos[rows] = np.arange(rows.shape[0])
            at = pos[bound.node_row[slots]]
            np.add.at(free, at, requests[bound.shape_id[slots]])
        if rows.shape[0]:
            reached = np.cumsum(free, axis=0).max(axis=0)
            total = free.sum(axis=0)
        else:
            reached = total = np.zeros(width, np.int64)
        gap = {}
        for name, amount in need.items():
            i = state.resources.get(name)                 # -1: no node has it, 0 free
            best = int(reached[i]) if i >= 0 else 0
            if not rows.shape[0] or best < amount:
                gap[name] = amount - (int(total[i]) if i >= 0 else 0)
        return gap

    # --------------------------------------------------------- PostFilter
    def post_filter(self, ctx, result=None, table=None, **_):
        """Reject the whole gang when a member cannot be placed and the
        group is not within 10% of its quorum (a PreemptionResult that
        nominates nothing)."""
        pg = self.group(ctx.pod)
        if pg is None:
            return _unschedulable("can not find pod group")
        g = (pg.namespace, pg.name)
        assigned = self._assigned(g, ctx.state)
        if assigned >= pg.min_member:
            return _unschedulable()
        # integer form of upstream's (minMember - assigned) / minMember <= 0.1
        if (pg.min_member - assigned) * 100 <= REJECT_GAP_PERCENT * pg.min_member:
            return _unschedulable()
        h = self.handle
        if h is not None:
            # it is inferred the other members would fail too: free their room now
            for k in self._siblings(pg, list(h.waiting)):
                h.reject(k, NAME, "optimistic rejection in PostFilter")
            if self.backoff > 0 and self._members(g, ctx.pod, ctx.state) >= pg.min_member:
                self.backed_off[g] = self._now() + self.backoff
        self.permitted.pop(g, None)
        return _unschedulable(f"PodGroup {pg.full_name} gets rejected due to Pod "
                              f"{ctx.pod.name} is unschedulable even after PostFilter")

    # ------------------------------------------------- Reserve / Permit
    def reserve(self, ctx, node_name):
        return Status.OK

    def unreserve(self, ctx, node_name) -> None:
        pg = self.group(ctx.pod)
        if pg is None or self.handle is None:
            return
        for k in self._siblings(pg, list(self.handle.waiting)):
            if k != ctx.pod.key:
                self.handle.reject(k, NAME, f"rejection in Unreserve: a member of pod group "
                                            f"{pg.full_name} was rejected")
        self.permitted.pop((pg.namespace, pg.name), None)

    def permit(self, ctx, node_name):
        pg = self.group(ctx.pod)
        if pg is None:
            if self.group_key(ctx.pod) is not None:
                # labelled with a group that does not exist: upstream rejects
                return Status(Code.UNSCHEDULABLE, ("PodGroup not found",), NAME)
            return Status.OK
        assigned = self.counts.get((pg.namespace, pg.name), 0)   # this pod is assumed
        if assigned >= pg.min_member:
            if self.handle is not None:
                for k in self._siblings(pg, list(self.handle.waiting)):
                    self.handle.allow(k, NAME)
            return Status.OK
        timeout = pg.timeout if pg.timeout is not None else self.permit_timeout
        return Status(Code.WAIT, ((f"waiting for pod group {pg.full_name}: {assigned}/"
                                  f"{pg.min_member} members reserved"),), NAME), timeout


def new(args, handle):
    return Coscheduling(args)


def register(registry) -> None:
    """Add Coscheduling to ``registry`` (an out-of-tree registration)."""
    register_args_decoder(NAME, decode_args)
    registry.register(NAME, new, POINTS)


register_args_decoder(NAME, decode_args)    # configs loaded after import decode the args

