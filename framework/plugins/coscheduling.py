"""Coscheduling (gang scheduling), after kubernetes-sigs/scheduler-plugins'
pkg/coscheduling -- out of tree: not in the in-tree registry nor the default
profile; ``register(registry)`` adds it (or use ``registry()``), then a
profile enables it at queueSort (instead of PrioritySort), preFilter,
reserve and permit.

A pod belongs to the PodGroup named by its label
``scheduling.x-k8s.io/pod-group`` (same namespace).  The group's
``minMember`` comes from a PodGroup object given to ``add_pod_group``
(``spec.minMember``, ``spec.scheduleTimeoutSeconds``, creation time); for
a label without such an object, from the pod label
``scheduling.x-k8s.io/min-member`` (a convenience of this port; without
either the pod is scheduled alone).

- QueueSort: priority (higher first), then the group's creation time (the
  PodGroup's, else the first member's creation time seen), then the group's
  (or the pod's) namespaced name, so members of a group pop together.
- PreFilter: a pod whose group has fewer than minMember pods known to the
  scheduler (pending, waiting, assumed or bound) is UnschedulableAndUnresolvable.
- Permit: when the group's assumed-or-bound members (this pod included)
  reach minMember, every waiting member is allowed and the pod passes;
  otherwise it waits (scheduleTimeoutSeconds, else the args'
  ``permitWaitingTimeSeconds``, 60 by default).
- Unreserve (a member rejected, timed out or failed to bind): every waiting
  member of the group is rejected, so their reservations are released and
  they go back to the queue.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..plugin import Plugin
from ..priorities import pod_priority
from ..status import Code, Status

NAME = "Coscheduling"
POINTS = frozenset({"queueSort", "preFilter", "reserve", "permit"})
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
MIN_MEMBER_LABEL = "scheduling.x-k8s.io/min-member"
DEFAULT_PERMIT_WAITING_SECONDS = 60.0


@dataclass
class PodGroup:
    namespace: str
    name: str
    min_member: int
    creation_ns: int | None = None
    timeout: float | None = None          # spec.scheduleTimeoutSeconds

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"


def parse_pod_group(obj: dict) -> PodGroup:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    created = None
    ts = meta.get("creationTimestamp")
    if ts:
        from ..manifests import parse_timestamp
        created = parse_timestamp(ts)
    to = spec.get("scheduleTimeoutSeconds")
    return PodGroup(meta.get("namespace") or "default", meta["name"],
                    int(spec.get("minMember") or 0), created,
                    float(to) if to is not None else None)


class Coscheduling(Plugin):
    name = NAME
    events = frozenset({"Pod/Add", "UnscheduledPod/Add", "Pod/Delete", "Node/Add",
                        "Node/Update"})

    def __init__(self, args=None):
        args = args or {}
        get = args.get if isinstance(args, dict) else (lambda k, d=None: getattr(args, k, d))
        self.permit_timeout = float(get("permitWaitingTimeSeconds",
                                        DEFAULT_PERMIT_WAITING_SECONDS))
        self.groups: dict[tuple, PodGroup] = {}
        self.first_seen: dict[tuple, int] = {}
        self.counts: dict[tuple, int] = {}          # group -> members in the state
        self.handle = None

    # ----------------------------------------------------------- groups
    def set_handle(self, scheduler) -> None:
        """Called by the Scheduler: waiting pods, allow/reject, the queue."""
        if self.handle is scheduler:
            return
        self.handle = scheduler
        state = scheduler.cluster.state
        self.counts = {}
        for entry in state.pods.values():
            self._on_state(entry.record, entry.node_row, 1)
        state.listeners.append(self._on_state)

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
        total = self.counts.get((pg.namespace, pg.name), 0)
        h = self.handle
        key = ctx.pod.key
        seen_self = key in ctx.state.pods
        if h is not None and h._queue is not None:
            g = (pg.namespace, pg.name)
            for k, pi in h._queue.infos.items():
                if self.group_key(pi.pod) == g and k not in ctx.state.pods:
                    total += 1
                    seen_self |= k == key
        if not seen_self:
            total += 1
        if total < pg.min_member:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                          ((f"pre-filter pod {ctx.pod.name} cannot find enough sibling pods, "
                           f"current pods number: {total}, minMember of group: "
                           f"{pg.min_member}"),), NAME), None
        return Status.OK, None

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

    def permit(self, ctx, node_name):
        pg = self.group(ctx.pod)
        if pg is None:
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
    registry.register(NAME, new, POINTS)


def registry():
    """The in-tree registry plus Coscheduling."""
    from . import in_tree_registry
    reg = in_tree_registry()
    register(reg)
    return reg
