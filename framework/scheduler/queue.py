"""The scheduling queue (kube-scheduler's PriorityQueue, pkg/scheduler/
internal/queue), on a clock the caller controls.

Three parts, as upstream:

- activeQ: a heap of ``(sort key, seq)`` entries.  The sort key comes from
  the profile's QueueSort plugin (``sort_key(pod)`` when it has one, else
  its ``less`` through ``cmp_to_key``); ``seq`` is a push counter, so ties
  pop first-in first-out and runs are deterministic (SimPy-like).
- backoffQ: a heap of ``(backoff expiry, seq)``.  A pod's backoff is
  ``podInitialBackoffSeconds * 2^(attempts-1)``, capped at
  ``podMaxBackoffSeconds``, counted from the time it was last put back.
- unschedulable pods, kept aside with the plugins that rejected them.  A
  cluster event (``"Node/Add"``, ``"Node/Update"``, ``"Node/Delete"``,
  ``"Pod/Add"``, ``"Pod/Update"``, ``"Pod/Delete"`` for assigned pods)
  moves the pods whose rejecting plugins declared interest in it (a
  plugin's ``events`` attribute, else ``DEFAULT_EVENTS``; a pod rejected by
  no named plugin moves on any event) to backoffQ while backing off, else
  to activeQ.  Pods left there longer than podMaxInUnschedulablePodsDuration
  (300 s) are flushed the same way.

PreEnqueue plugins (SchedulingGates) run when a pod is added or updated; a
gated pod waits among the unschedulable pods and only an update of the pod
itself can release it.  A pod that fails while a move request arrived
during its own cycle goes to backoffQ (or activeQ when its backoff is
over), not to the unschedulable pods, as upstream's moveRequestCycle does;
an error (not a rejection) always goes to backoffQ.

Deviation: upstream flushes backoffQ every second and the unschedulable
pods every 30 s; here both are checked exactly whenever the queue is read
(``flush``), which is deterministic on a simulated clock.
"""

from __future__ import annotations

import functools
import heapq
from collections import deque
from collections.abc import Callable
from itertools import repeat

from tensorsched.framework.objects.records import PodRecord
from tensorsched.framework.runtime.clock import Clock, SimulatedClock

DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS = 300.0

NODE_ADD, NODE_UPDATE, NODE_DELETE = "Node/Add", "Node/Update", "Node/Delete"
POD_ADD, POD_UPDATE, POD_DELETE = "Pod/Add", "Pod/Update", "Pod/Delete"
UNSCHEDULED_POD_ADD = "UnscheduledPod/Add"       # a pending pod joined the queue
ALL_EVENTS = frozenset({NODE_ADD, NODE_UPDATE, NODE_DELETE, POD_ADD, POD_UPDATE, POD_DELETE,
                        UNSCHEDULED_POD_ADD})

# Plugins without an ``events`` attribute (the ones this module may not
# edit, and the unmodeled volume plugins): what upstream's EventsToRegister
# says for them.
DEFAULT_EVENTS: dict[str, frozenset] = {
    "PodTopologySpread": frozenset({POD_ADD, POD_UPDATE, POD_DELETE, NODE_ADD, NODE_UPDATE,
                                    NODE_DELETE}),
    "InterPodAffinity": frozenset({POD_ADD, POD_UPDATE, POD_DELETE, NODE_ADD, NODE_UPDATE}),
}

ACTIVE, BACKOFF, UNSCHEDULABLE, IN_FLIGHT = "active", "backoff", "unschedulable", "in-flight"


def plugin_events(plugin) -> frozenset:
    """The cluster events that may make a pod rejected by ``plugin`` schedulable."""
    ev = getattr(plugin, "events", None)
    if ev is not None:
        return frozenset(ev)
    return DEFAULT_EVENTS.get(getattr(plugin, "name", ""), ALL_EVENTS)


class UnschedulablePool(dict):
    """The unschedulable pods, ``{key: QueuedPodInfo}`` in arrival order,
    also grouped by the plugins that rejected them: a cluster event visits
    only the groups whose plugins care about it, so a pod arriving while
    thousands wait costs a few set lookups, not a scan of them all.

    A pod's group is its ``unschedulable_plugins`` when it entered (they
    do not change while it waits).  Pods enter and leave through ``[]=``,
    ``pop`` and ``del`` only."""

    def __init__(self):
        super().__init__()
        self.groups: dict[frozenset, dict[str, int]] = {}   # plugins -> {key: order}
        self._group_of: dict[str, frozenset] = {}
        self._order = 0

    def __setitem__(self, key: str, pi) -> None:
        if key in self:
            super().__setitem__(key, pi)        # keeps its place, as dict does
            return
        super().__setitem__(key, pi)
        self._order += 1
        plugins = pi.unschedulable_plugins
        self.groups.setdefault(plugins, {})[key] = self._order
        self._group_of[key] = plugins

    def pop(self, key: str, *default):
        if key in self:
            plugins = self._group_of.pop(key)
            group = self.groups[plugins]
            del group[key]
            if not group:
                del self.groups[plugins]
        return super().pop(key, *default)

    def __delitem__(self, key: str) -> None:
        self.pop(key)

    def interested(self, wants: Callable[[frozenset], bool]) -> list:
        """The waiting pods whose group ``wants(plugins)``, in arrival order."""
        hits = [g for plugins, g in self.groups.items() if wants(plugins)]
        if len(hits) == 1:
            return [self[k] for k in hits[0]]
        return [self[k] for k, _ in sorted(((k, o) for g in hits for k, o in g.items()),
                                           key=lambda ko: ko[1])]


class QueuedPodInfo:
    """A pending pod and its queue bookkeeping (upstream's QueuedPodInfo).

    A plain slots class (not a dataclass): the queue makes one per pending
    pod, and a run of alike pods makes thousands per call."""

    __slots__ = ("pod", "key", "initial_timestamp", "timestamp", "attempts",
                 "unschedulable_plugins", "gated", "gated_message", "where", "cycle")

    def __init__(self, pod: PodRecord, initial_timestamp: float, timestamp: float,
                 attempts: int = 0, cycle: int = 0, where: str = ACTIVE):
        self.pod = pod
        # "namespace/name": the queue reads it at every step, and a pod's
        # later versions (status updates) keep it
        self.key = pod.key
        self.initial_timestamp = initial_timestamp   # first time it entered the queue
        self.timestamp = timestamp                   # last time it was (re)queued
        self.attempts = attempts                     # scheduling attempts so far
        self.unschedulable_plugins: frozenset = _NO_PLUGINS
        self.gated = False
        self.gated_message = ""
        self.where = where
        self.cycle = cycle                           # scheduling cycle of its last pop

    def __repr__(self) -> str:
        return (f"QueuedPodInfo({self.key}, {self.where}, attempts={self.attempts}, "
                f"timestamp={self.timestamp:g})")


_NO_PLUGINS: frozenset = frozenset()


class Nominator:
    """Pods nominated to nodes by preemption (upstream's nominator)."""

    def __init__(self) -> None:
        self.node_of: dict[str, str] = {}
        self.pods: dict[str, PodRecord] = {}
        self.by_node: dict[str, list[str]] = {}

    def __bool__(self) -> bool:
        return bool(self.node_of)

    def add(self, pod: PodRecord, node: str) -> None:
        self.delete(pod.key)
        self.node_of[pod.key] = node
        self.pods[pod.key] = pod
        self.by_node.setdefault(node, []).append(pod.key)

    def update(self, pod: PodRecord) -> None:
        if pod.key in self.pods:
            self.pods[pod.key] = pod

    def delete(self, key: str) -> None:
        node = self.node_of.pop(key, None)
        if node is None:
            return
        self.pods.pop(key, None)
        keys = self.by_node.get(node, [])
        if key in keys:
            keys.remove(key)
        if not keys:
            self.by_node.pop(node, None)

    def nominated_on(self, node: str) -> list[PodRecord]:
        return [self.pods[k] for k in self.by_node.get(node, ())]


class SchedulingQueue:
    """activeQ + backoffQ + unschedulable pods on ``clock``.

    ``sort_plugin``: the QueueSort plugin (``sort_key(pod)`` or ``less(a,
    b)``); ``pre_enqueue(pod) -> Status``
    runs the PreEnqueue plugins of the pod's profile; ``plugin_of(name)``
    resolves a rejecting plugin's name to the plugin (for its events)."""

    def __init__(self, clock: Clock | None = None, *, sort_plugin,
                 pre_enqueue: Callable | None = None, plugin_of: Callable | None = None,
                 initial_backoff: float = 1.0, max_backoff: float = 10.0,
                 max_in_unschedulable: float = DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS,
                 nominator: Nominator | None = None, gate_free: Callable | None = None):
        self.clock = clock or SimulatedClock()
        # gate_free(pod) -> True when PreEnqueue certainly lets the pod in
        # (no plugin to ask): the call is left out
        self.gate_free = gate_free
        # ``sort_keys(pods)``, when the plugin has it: the keys of many pods
        self.sort_keys = getattr(sort_plugin, "sort_keys", None)
        if hasattr(sort_plugin, "sort_key"):
            self.sort_key = sort_plugin.sort_key
        else:
            less = sort_plugin.less
            cmp = lambda a, b: -1 if less(a, b) else (1 if less(b, a) else 0)  # noqa: E731
            self.sort_key = functools.cmp_to_key(cmp)
        self.pre_enqueue = pre_enqueue
        self.plugin_of = plugin_of or (lambda name: None)
        self.initial_backoff = float(initial_backoff)
        self.max_backoff = float(max_backoff)
        self.max_in_unschedulable = float(max_in_unschedulable)
        self.infos: dict[str, QueuedPodInfo] = {}
        self._active: list = []
        # Pods added together (``add_many``) wait in a sorted lane beside the
        # heap: popping its head costs O(1) instead of a heap pop; the head
        # of activeQ is the smaller of the two heads.
        self._lane: deque = deque()
        self._backoff: list = []
        self._token: dict[str, int] = {}           # key -> live heap entry token
        self.unschedulable: UnschedulablePool = UnschedulablePool()
        self._seq = 0
        self._seq_of_pop = 0                        # heap token of the last pod popped
        self.scheduling_cycle = 0
        self.move_request_cycle = -1
        self.nominator = nominator if nominator is not None else Nominator()
        self._interest_cache: dict = {}

    # ------------------------------------------------------------ helpers
    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _push_active(self, pi: QueuedPodInfo) -> None:
        pi.where = ACTIVE
        seq = self._next_seq()
        self._token[pi.key] = seq
        heapq.heappush(self._active, (self.sort_key(pi.pod), seq, pi.key))

    def _push_backoff(self, pi: QueuedPodInfo) -> None:
        pi.where = BACKOFF
        seq = self._next_seq()
        self._token[pi.key] = seq
        heapq.heappush(self._backoff, (self.backoff_expiry(pi), seq, pi.key))

    def _push_unschedulable(self, pi: QueuedPodInfo) -> None:
        pi.where = UNSCHEDULABLE
        self._token.pop(pi.key, None)
        self.unschedulable[pi.key] = pi

    def _detach(self, pi: QueuedPodInfo) -> None:
        """Out of whichever part holds it (heap entries die lazily)."""
        self._token.pop(pi.key, None)
        self.unschedulable.pop(pi.key, None)

    def backoff_duration(self, pi: QueuedPodInfo) -> float:
        d = self.initial_backoff
        for _ in range(1, pi.attempts):
            d *= 2
            if d >= self.max_backoff:
                return self.max_backoff
        return min(d, self.max_backoff)

    def backoff_expiry(self, pi: QueuedPodInfo) -> float:
        return pi.timestamp + (self.backoff_duration(pi) if pi.attempts else 0.0)

    def backing_off(self, pi: QueuedPodInfo) -> bool:
        return pi.attempts > 0 and self.backoff_expiry(pi) > self.clock.now()

    def _gate(self, pi: QueuedPodInfo) -> bool:
        """Run PreEnqueue; True when the pod may enter activeQ."""
        if self.pre_enqueue is None:
            pi.gated = False
            return True
        st = self.pre_enqueue(pi.pod)
        pi.gated = not st.ok
        pi.gated_message = "; ".join(st.reasons) if pi.gated else ""
        if pi.gated:
            pi.unschedulable_plugins = frozenset({st.plugin}) if st.plugin else frozenset()
        return not pi.gated

    # ---------------------------------------------------------------- API
    def __contains__(self, key: str) -> bool:
        return key in self.infos

    def __len__(self) -> int:
        return len(self.infos)

    def add(self, pod: PodRecord) -> QueuedPodInfo:
        """A new pending pod: PreEnqueue, then activeQ (or kept aside, gated)."""
        if pod.key in self.infos:
            raise KeyError(f"Pod {pod.key}: already in the scheduling queue")
        now = self.clock.now()
        pi = QueuedPodInfo(pod, now, now)
        self.infos[pod.key] = pi
        if self._gate(pi):
            self._push_active(pi)
        else:
            self._push_unschedulable(pi)
        return pi

    def add_many(self, pods: list[PodRecord]) -> None:
        """``add`` for many new pods at once, as adding them one by one would
        leave the queue (sorted into the lane instead of a push per pod).
        A pod already queued (or twice in ``pods``) is refused before any
        is added."""
        now = self.clock.now()
        infos = self.infos
        keys = [pod.key for pod in pods]
        if len(set(keys)) != len(keys) or not infos.keys().isdisjoint(keys):
            seen: set = set()
            for k in keys:
                if k in infos or k in seen:
                    raise KeyError(f"Pod {k}: already in the scheduling queue")
                seen.add(k)
        gate_free = self.gate_free
        if gate_free is not None and self.sort_keys is not None and self._gate_free_all(pods):
            self._add_active_many(pods, keys, now)
            return
        token = self._token
        sort_key = self.sort_key
        entries = []
        append = entries.append
        seq = self._seq
        # pods sharing a memo (one template) share gates and profile: one
        # gate_free answer for each stretch of them
        memo, free = None, False
        for pod in pods:
            pi = QueuedPodInfo(pod, now, now)
            key = pi.key
            infos[key] = pi
            if pod.memo is not memo:
                memo = pod.memo
                free = gate_free is not None and gate_free(pod)
            if free or self._gate(pi):
                seq += 1
                token[key] = seq
                append((sort_key(pod), seq, key))
            else:
                self._push_unschedulable(pi)
        self._seq = seq
        entries.sort()
        lane = self._lane
        self._lane = deque(heapq.merge(lane, entries) if lane else entries)

    def _gate_free_all(self, pods: list[PodRecord]) -> bool:
        """Whether no pod of ``pods`` needs PreEnqueue asked (asked once per
        memo: pods sharing one share their gates and profile)."""
        gate_free = self.gate_free
        return all(gate_free(p) for p in {id(p.memo): p for p in pods}.values())

    def _add_active_many(self, pods: list[PodRecord], keys: list[str], now: float) -> None:
        """``add_many`` for pods that all go to activeQ: the per-pod steps
        as bulk dict updates and one sort."""
        n = len(pods)
        self.infos.update(zip(keys, map(QueuedPodInfo, pods, repeat(now), repeat(now))))
        seqs = range(self._seq + 1, self._seq + n + 1)
        self._seq += n
        self._token.update(zip(keys, seqs))
        entries = list(zip(self.sort_keys(pods), seqs, keys))
        entries.sort()
        lane = self._lane
        self._lane = deque(heapq.merge(lane, entries) if lane else entries)

    def update(self, pod: PodRecord) -> QueuedPodInfo | None:
        """A pending pod changed: a gated or unschedulable pod is
        re-evaluated (PreEnqueue, then activeQ or backoffQ)."""
        pi = self.infos.get(pod.key)
        if pi is None:
            return None
        pi.pod = pod
        self.nominator.update(pod)
        if pi.where == ACTIVE:
            if self._gate(pi):
                self._push_active(pi)              # the sort key may have changed
            else:
                self._push_unschedulable(pi)
        elif pi.where == UNSCHEDULABLE:
            was_gated = pi.gated
            if self._gate(pi):
                self.unschedulable.pop(pi.key, None)
                if not was_gated and self.backing_off(pi):
                    self._push_backoff(pi)
                else:
                    self._push_active(pi)
        return pi

    def delete(self, key: str) -> QueuedPodInfo | None:
        pi = self.infos.pop(key, None)
        if pi is not None:
            self._detach(pi)
        self.nominator.delete(key)
        return pi

    def flush(self) -> None:
        """Backoff over -> activeQ; unschedulable too long -> activeQ/backoffQ."""
        now = self.clock.now()
        bq = self._backoff
        while bq and bq[0][0] <= now:
            _, seq, key = heapq.heappop(bq)
            if self._token.get(key) == seq:
                self._push_active(self.infos[key])
        if self.unschedulable and self.max_in_unschedulable != float("inf"):
            stale = [pi for pi in self.unschedulable.values()
                     if not pi.gated and now - pi.timestamp >= self.max_in_unschedulable]
            for pi in stale:
                self._move(pi)

    def _head(self) -> tuple:
        """The smallest live activeQ entry (dead ones are dropped on the way)
        and whether it heads the lane; (None, False) when activeQ is empty."""
        aq, lane, token = self._active, self._lane, self._token
        while aq and token.get(aq[0][2]) != aq[0][1]:
            heapq.heappop(aq)
        while lane and token.get(lane[0][2]) != lane[0][1]:
            lane.popleft()
        if lane and (not aq or lane[0] < aq[0]):
            return lane[0], True
        return (aq[0], False) if aq else (None, False)

    def _take(self, in_lane: bool) -> None:
        if in_lane:
            self._lane.popleft()
        else:
            heapq.heappop(self._active)

    def pop(self) -> QueuedPodInfo | None:
        """The head of activeQ (after a flush), now in flight; None when empty."""
        self.flush()
        entry, in_lane = self._head()
        if entry is None:
            return None
        self._take(in_lane)
        _, seq, key = entry
        self._seq_of_pop = seq
        del self._token[key]
        pi = self.infos[key]
        pi.where = IN_FLIGHT
        self.scheduling_cycle += 1
        pi.cycle = self.scheduling_cycle
        pi.attempts += 1
        return pi

    def pop_run(self, run_key, limit: int) -> tuple[list[QueuedPodInfo], list[tuple]]:
        """The head of activeQ (as ``pop``) and the heads after it, popped
        one by one as ``pop`` would, while ``run_key(pod)`` is the head's and
        not None, at most ``limit`` pods: (pods, their heap entries for
        ``unpop``).  Empty lists when activeQ is empty.  ``run_key`` must
        read only what a pod's ``memo`` covers (pods sharing a memo share
        the key)."""
        first = self.pop()
        if first is None:
            return [], []
        key = run_key(first.pod)
        run, entries = [first], [(self.sort_key(first.pod), self._seq_of_pop, first.key)]
        if key is None:
            return run, entries
        # Pods sharing the first one's memo (one template, equal annotations)
        # have its run key: ``run_key`` reads only what the memo covers.
        memo = first.pod.memo
        aq, lane, token, infos = self._active, self._lane, self._token, self.infos
        cycle = self.scheduling_cycle
        heap_head = self._live_heap_head()
        append_run, append_entry = run.append, entries.append
        while len(run) < limit:
            # ``_head`` inlined: the heap is only read again after a pod is
            # taken from it
            while lane and token.get(lane[0][2]) != lane[0][1]:
                lane.popleft()
            if lane and (heap_head is None or lane[0] < heap_head):
                entry, in_lane = lane[0], True
            elif heap_head is not None:
                entry, in_lane = heap_head, False
            else:
                break
            k = entry[2]
            pi = infos[k]
            if pi.pod.memo is not memo and run_key(pi.pod) != key:
                break
            if in_lane:
                lane.popleft()
            else:
                heapq.heappop(aq)
                heap_head = self._live_heap_head()
            del token[k]
            pi.where = IN_FLIGHT
            cycle += 1
            pi.cycle = cycle
            pi.attempts += 1
            append_run(pi)
            append_entry(entry)
        self.scheduling_cycle = cycle
        return run, entries

    def _live_heap_head(self):
        """The heap's smallest live entry (dead ones dropped), or None."""
        aq, token = self._active, self._token
        while aq and token.get(aq[0][2]) != aq[0][1]:
            heapq.heappop(aq)
        return aq[0] if aq else None

    def unpop(self, pods: list[QueuedPodInfo], entries: list[tuple]) -> None:
        """Put pods that ``pop_run`` handed out (and nothing happened to)
        back at the head of activeQ exactly as they were: same heap entries,
        attempts and cycle counter."""
        for pi, entry in zip(pods, entries):
            heapq.heappush(self._active, entry)
            self._token[pi.key] = entry[1]
            pi.where = ACTIVE
            pi.attempts -= 1
            self.scheduling_cycle -= 1

    def done(self, key: str) -> None:
        """The pod left the queue for good (assumed on a node)."""
        pi = self.infos.pop(key, None)
        if pi is not None:
            self._detach(pi)

    def done_many(self, pis: list[QueuedPodInfo]) -> None:
        """``done`` for the pods of a placed run (popped by ``pop_run``)."""
        infos, token, unschedulable = self.infos, self._token, self.unschedulable
        pop, drop = infos.pop, token.pop
        for pi in pis:
            key = pi.key
            if pop(key, None) is not None:
                drop(key, None)
                if unschedulable:
                    unschedulable.pop(key, None)

    def requeue(self, pi: QueuedPodInfo, plugins=frozenset(), *, error: bool = False) -> None:
        """Upstream's AddUnschedulableIfNotPresent for a pod back from a
        failed attempt (scheduling, permit or binding)."""
        if pi.key not in self.infos:
            self.infos[pi.key] = pi
        pi.timestamp = self.clock.now()
        pi.unschedulable_plugins = frozenset(plugins)
        if error:
            self._push_backoff(pi)
        elif self.move_request_cycle >= pi.cycle:
            self._move(pi)
        else:
            self._push_unschedulable(pi)

    def _move(self, pi: QueuedPodInfo) -> None:
        self.unschedulable.pop(pi.key, None)
        if self.backing_off(pi):
            self._push_backoff(pi)
        else:
            self._push_active(pi)

    def _interested(self, plugins: frozenset, event: str) -> bool:
        if not plugins:
            return True
        got = self._interest_cache.get((plugins, event))
        if got is None:
            got = any(event in plugin_events(self.plugin_of(n)) for n in plugins)
            self._interest_cache[(plugins, event)] = got
        return got

    def move_all(self, event: str, exclude: str | None = None) -> int:
        """A cluster event: unschedulable pods it may help go back to
        activeQ/backoffQ (all but the pod keyed ``exclude``).  Returns how
        many moved."""
        self.move_request_cycle = self.scheduling_cycle
        if not self.unschedulable:
            return 0
        moved = [pi for pi in self.unschedulable.interested(
                 lambda plugins: self._interested(plugins, event))
                 if not pi.gated and pi.key != exclude]
        for pi in moved:
            self._move(pi)
        return len(moved)

    def activate(self, keys) -> None:
        """Move the named pods (unschedulable or backing off) to activeQ."""
        for key in keys:
            pi = self.infos.get(key)
            if pi is not None and pi.where in (UNSCHEDULABLE, BACKOFF) and not pi.gated:
                self.unschedulable.pop(key, None)
                self._push_active(pi)

    def next_backoff_expiry(self) -> float | None:
        bq = self._backoff
        while bq and self._token.get(bq[0][2]) != bq[0][1]:
            heapq.heappop(bq)
        return bq[0][0] if bq else None

    def counts(self) -> dict:
        c = {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, IN_FLIGHT: 0}
        for pi in self.infos.values():
            c[pi.where] = c.get(pi.where, 0) + 1
        return c

    def pending(self, where: str | None = None) -> list[QueuedPodInfo]:
        return [pi for pi in self.infos.values() if where is None or pi.where == where]
