"""The scheduling queue (kube-scheduler's PriorityQueue, pkg/scheduler/
internal/queue), on a clock the caller controls.

Three parts, as upstream:

- activeQ: a heap of ``(sort key, seq)`` entries.  The sort key comes from
  the profile's QueueSort plugin (``sort_key(pod)`` when it has one, else
  its ``less`` through ``cmp_to_key``); ``seq`` is a push counter, so ties
  pop first-in first-out and runs are deterministic (SimPy-like).  Pods
  added together (``add_many``) wait beside the heap in lane blocks, as
  columns (``queue_lane``), and activeQ's head is the smallest of the
  heads; ``pop_run`` hands out a stretch of a block without a
  QueuedPodInfo per pod.
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
from collections.abc import Callable, Mapping
from itertools import repeat

from tensorsched.framework.objects.pod_columns import PodColumns
from tensorsched.framework.objects.records import PodRecord
from tensorsched.framework.runtime.clock import Clock, SimulatedClock

from .queue_lane import LaneBlock, QueueRun

DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS = 300.0

NODE_ADD, NODE_UPDATE, NODE_DELETE = "Node/Add", "Node/Update", "Node/Delete"
POD_ADD, POD_UPDATE, POD_DELETE = "Pod/Add", "Pod/Update", "Pod/Delete"
UNSCHEDULED_POD_ADD = "UnscheduledPod/Add"       # a pending pod joined the queue
ALL_EVENTS = frozenset({NODE_ADD, NODE_UPDATE, NODE_DELETE, POD_ADD, POD_UPDATE, POD_DELETE,
                        UNSCHEDULED_POD_ADD})

# Plugins without an ``events`` attribute (the ones this module may not
# edit): what upstream's EventsToRegister
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
    ``pop`` and ``del`` only.

    Pods requeued on a clock that only moves forward enter in the order of
    their timestamps: the ones waiting too long (``stale``) are then the
    first ones, and the flush before every pop reads only those, not every
    waiting pod (``_ordered`` says whether that holds; gated pods, never
    flushed, are left out of it)."""

    def __init__(self):
        super().__init__()
        self.groups: dict[frozenset, dict[str, int]] = {}   # plugins -> {key: order}
        self._group_of: dict[str, frozenset] = {}
        self._order = 0
        self._ordered = True            # non-gated pods in timestamp order
        self._last = float("-inf")      # the latest non-gated pod's timestamp

    def __setitem__(self, key: str, pi) -> None:
        if key in self:
            super().__setitem__(key, pi)        # keeps its place, as dict does
            if not pi.gated:
                self._ordered = False
            return
        super().__setitem__(key, pi)
        if not pi.gated:
            if pi.timestamp < self._last:
                self._ordered = False
            else:
                self._last = pi.timestamp
        self._order += 1
        plugins = pi.unschedulable_plugins
        group = self.groups.get(plugins)
        if group is None:
            group = self.groups[plugins] = {}
        group[key] = self._order
        self._group_of[key] = plugins

    def pop(self, key: str, *default):
        if key in self:
            plugins = self._group_of.pop(key)
            group = self.groups[plugins]
            del group[key]
            if not group:
                del self.groups[plugins]
        got = super().pop(key, *default)
        if not self:
            self._ordered, self._last = True, float("-inf")
        return got

    def stale(self, now: float, limit: float) -> list:
        """The non-gated pods that have waited ``limit`` seconds or more at
        ``now``, in arrival order."""
        out = []
        for pi in self.values():
            if pi.gated:
                continue
            if now - pi.timestamp >= limit:
                out.append(pi)
            elif self._ordered:
                break           # the later ones entered later still
        return out

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
        self.version = 0        # counts changes (a remembered failure's stamp)

    def __bool__(self) -> bool:
        return bool(self.node_of)

    def add(self, pod: PodRecord, node: str) -> None:
        self.delete(pod.key)
        self.version += 1
        self.node_of[pod.key] = node
        self.pods[pod.key] = pod
        self.by_node.setdefault(node, []).append(pod.key)

    def update(self, pod: PodRecord) -> None:
        if pod.key in self.pods:
            self.pods[pod.key] = pod
            self.version += 1

    def delete(self, key: str) -> None:
        node = self.node_of.pop(key, None)
        if node is None:
            return
        self.version += 1
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
        # key -> QueuedPodInfo, or the LaneBlock of a pod without one yet
        # (``queue_lane``); ``infos`` reads it with every value an info
        self._infos: dict = {}
        self._active: list = []
        # Pods added together (``add_many``) wait in lane blocks beside the
        # heap: popping costs O(1) instead of a heap pop, and a run of them
        # is handed out without an info per pod; the head of activeQ is the
        # smallest of the heads.
        self._lane: list[LaneBlock] = []
        self._backoff: list = []
        self._token: dict[str, int] = {}           # key -> live heap entry token
        self.unschedulable: UnschedulablePool = UnschedulablePool()
        self._seq = 0
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

    # ----------------------------------------------------- pods as columns
    @property
    def infos(self) -> InfoView:
        """key -> QueuedPodInfo of every pod in the queue (read-only; a pod
        still in a lane block gets its info when read)."""
        return InfoView(self)

    def _pi(self, key: str):
        """The info of ``key`` (made now for a pod still in a lane block),
        or None."""
        v = self._infos.get(key)
        if type(v) is not LaneBlock:
            return v
        i = v.index(key)
        if i >= v.pos:          # waiting in the lane: its position stays live
            pi = QueuedPodInfo(v.pods[i], v.now, v.now)
            self._token[key] = v.seq0 + i
        else:                   # taken by a run: in flight
            pi = QueuedPodInfo(v.pods[i], v.now, v.now, attempts=1,
                               cycle=self.scheduling_cycle, where=IN_FLIGHT)
        self._infos[key] = pi
        return pi

    def _lane_live(self, b: LaneBlock, i: int) -> bool:
        k = b.keys[i]
        v = self._infos.get(k)
        return v is b or (v is not None and self._token.get(k) == b.seq0 + i)

    def _lane_head(self):
        """(entry, block) of the smallest live lane position, dead positions
        and spent blocks dropped on the way; (None, None) when none."""
        best = best_b = None
        lane = self._lane
        for b in list(lane):
            i, n = b.pos, len(b.keys)
            while i < n and not self._lane_live(b, i):
                i += 1
            b.pos = i
            if i == n:
                lane.remove(b)
                continue
            e = b.entry(i)
            if best is None or e < best:
                best, best_b = e, b
        return best, best_b

    # ---------------------------------------------------------------- API
    def __contains__(self, key: str) -> bool:
        return key in self._infos

    def __len__(self) -> int:
        return len(self._infos)

    def add(self, pod: PodRecord) -> QueuedPodInfo:
        """A new pending pod: PreEnqueue, then activeQ (or kept aside, gated)."""
        if pod.key in self._infos:
            raise KeyError(f"Pod {pod.key}: already in the scheduling queue")
        now = self.clock.now()
        pi = QueuedPodInfo(pod, now, now)
        self._infos[pod.key] = pi
        if self._gate(pi):
            self._push_active(pi)
        else:
            self._push_unschedulable(pi)
        return pi

    def add_many(self, pods) -> None:
        """``add`` for many new pods at once (records, or ``PodColumns``), as
        adding them one by one would leave the queue: those that pass
        PreEnqueue go into one lane block, as columns (stably sorted by sort
        key: equal keys keep their order, as their increasing heap sequence
        numbers would), the others aside.  A pod already queued (or twice in
        ``pods``) is refused before any is added."""
        now = self.clock.now()
        infos = self._infos
        cols = PodColumns.from_records(pods)
        keys = cols.keys
        if len(set(keys)) != len(keys) or not infos.keys().isdisjoint(keys):
            seen: set = set()
            for k in keys:
                if k in infos or k in seen:
                    raise KeyError(f"Pod {k}: already in the scheduling queue")
                seen.add(k)
        gate_free = self.gate_free
        if not (gate_free is not None and all(map(gate_free, cols.classes))):
            # ask PreEnqueue pod by pod (pods of one class share gates and
            # profile: one gate_free answer for each stretch of them)
            active, pod_class, free = [], None, False
            for i, pod in enumerate(cols):
                if pod.pod_class is not pod_class:
                    pod_class = pod.pod_class
                    free = gate_free is not None and gate_free(pod)
                if free:
                    active.append(i)
                    continue
                pi = QueuedPodInfo(pod, now, now)
                infos[pi.key] = pi
                if self._gate(pi):
                    active.append(i)
                    del infos[pi.key]       # it goes into the block without an info
                else:
                    self._push_unschedulable(pi)
            if len(active) != len(cols):
                cols = cols.take(active)
        if not len(cols):
            return
        sort_keys = (self.sort_keys(cols) if self.sort_keys is not None
                     else [self.sort_key(p) for p in cols])
        if sorted(sort_keys) != sort_keys:       # C-level: cheap when already in order
            order = sorted(range(len(cols)), key=sort_keys.__getitem__)
            cols = cols.take(order)
            sort_keys = [sort_keys[i] for i in order]
        block = LaneBlock(cols, sort_keys, self._seq + 1, now)
        self._seq += len(cols)
        infos.update(zip(cols.keys, repeat(block)))
        self._lane.append(block)

    def update(self, pod: PodRecord) -> QueuedPodInfo | None:
        """A pending pod changed: a gated or unschedulable pod is
        re-evaluated (PreEnqueue, then activeQ or backoffQ)."""
        pi = self._pi(pod.key)
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
        pi = self._pi(key)
        if pi is not None:
            del self._infos[key]
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
                self._push_active(self._infos[key])
        if self.unschedulable and self.max_in_unschedulable != float("inf"):
            for pi in self.unschedulable.stale(now, self.max_in_unschedulable):
                self._move(pi)

    def _head(self) -> tuple:
        """The smallest live activeQ entry (dead ones are dropped on the way)
        and the lane block it heads (None: the heap); (None, None) when
        activeQ is empty."""
        h = self._live_heap_head()
        e, b = self._lane_head() if self._lane else (None, None)
        if e is not None and (h is None or e < h):
            return e, b
        return h, None

    def _live_heap_head(self):
        """The heap's smallest live entry (dead ones dropped), or None."""
        aq, token = self._active, self._token
        while aq and token.get(aq[0][2]) != aq[0][1]:
            heapq.heappop(aq)
        return aq[0] if aq else None

    def _take(self, entry: tuple, block: LaneBlock | None) -> QueuedPodInfo:
        """Take the head ``entry`` (from ``block`` or the heap) into flight."""
        key = entry[2]
        if block is None:
            heapq.heappop(self._active)
            pi = self._infos[key]
        else:
            pi = self._pi(key)      # made while its position is still ahead: active
            block.pos = entry[1] - block.seq0 + 1
        self._token.pop(key, None)
        pi.where = IN_FLIGHT
        self.scheduling_cycle += 1
        pi.cycle = self.scheduling_cycle
        pi.attempts += 1
        return pi

    def pop(self) -> QueuedPodInfo | None:
        """The head of activeQ (after a flush), now in flight; None when empty."""
        self.flush()
        entry, block = self._head()
        if entry is None:
            return None
        return self._take(entry, block)

    def pop_run(self, run_key, limit: int) -> QueueRun | None:
        """The head of activeQ (as ``pop``) and the heads after it, popped
        as ``pop`` would one by one, while ``run_key(pod)`` is the head's
        and not None, at most ``limit`` pods; None when activeQ is empty.
        ``run_key`` must read only what a pod's ``memo`` covers (pods
        sharing a memo share the key).

        When the heads after the first are a stretch of one lane block, the
        run is that stretch (no info is made for its pods); otherwise the
        heads one by one (``QueueRun.rest``)."""
        self.flush()
        entry, block = self._head()
        if entry is None:
            return None
        first = self._take(entry, block)
        run = QueueRun(first, entry)
        key = run_key(first.pod)
        if key is None or limit <= 1:
            return run
        # Pods sharing the first one's memo (one template, equal annotations)
        # have its run key: ``run_key`` reads only what the memo covers.
        pod_class = first.pod.pod_class
        entry, block = self._head()
        if block is not None:
            # the fast form: the block's live positions from its head on,
            # while they stay below every other head (the heap's and the
            # other blocks')
            others = [self._live_heap_head()]
            others += [o.entry(o.pos) for o in self._lane if o is not block and o.pos < len(o)]
            bound = min((o for o in others if o is not None), default=None)
            infos, keys, pods, sort_keys = self._infos, block.keys, block.pods, block.sort_keys
            start = i = block.pos
            stop = min(len(keys), start + limit - 1)
            seq0 = block.seq0
            # a pod's record is built only when its class is not the head's
            classes, class_id = pods.classes, pods.class_id
            while i < stop and infos.get(keys[i]) is block:
                if bound is not None and (sort_keys[i], seq0 + i) > bound[:2]:
                    break
                if classes[class_id[i]].pod_class is not pod_class and run_key(pods[i]) != key:
                    break
                i += 1
            if i > start:
                block.pos = i
                self.scheduling_cycle += i - start
                run.block, run.start, run.stop = block, start, i
                return run
        while entry is not None and 1 + len(run.rest) < limit:
            pi = self._pi(entry[2])
            if pi.pod.pod_class is not pod_class and run_key(pi.pod) != key:
                break
            run.rest.append(self._take(entry, block))
            run.entries.append(entry)
            entry, block = self._head()
        return run

    def unpop(self, run: QueueRun, start: int) -> None:
        """Put pods ``start:`` of a run ``pop_run`` handed out (and nothing
        happened to) back at the head of activeQ exactly as they were: same
        entries, attempts and cycle counter."""
        n = len(run) - start
        if n <= 0:
            return
        if run.block is not None:
            # the stretch's pods have no info: their positions come back
            run.block.pos = run.start + max(start - 1, 0)
            if run.block not in self._lane:
                self._lane.append(run.block)
            self.scheduling_cycle -= min(n, run.stop - run.start)
            if start == 0:
                self._unpop_info(run.first, run.first_entry)
            return
        pis = [run.first] + run.rest
        entries = [run.first_entry] + run.entries
        for pi, entry in zip(pis[start:], entries[start:]):
            self._unpop_info(pi, entry)

    def _unpop_info(self, pi: QueuedPodInfo, entry: tuple) -> None:
        heapq.heappush(self._active, entry)
        self._token[pi.key] = entry[1]
        pi.where = ACTIVE
        pi.attempts -= 1
        self.scheduling_cycle -= 1

    def info(self, run: QueueRun, i: int) -> QueuedPodInfo:
        """The info of pod ``i`` of ``run`` (in flight; made now for a pod
        of a stretch)."""
        if i == 0:
            return run.first
        if run.block is None:
            return run.rest[i - 1]
        pos = run.start + i - 1
        key = run.block.keys[pos]
        v = self._infos.get(key)
        if type(v) is not LaneBlock:
            return v
        pi = QueuedPodInfo(run.block.pods[pos], run.block.now, run.block.now, attempts=1,
                           cycle=run.first.cycle + i, where=IN_FLIGHT)
        self._infos[key] = pi
        return pi

    def done(self, key: str) -> None:
        """The pod left the queue for good (assumed on a node)."""
        pi = self._infos.pop(key, None)
        if pi is not None and type(pi) is not LaneBlock:
            self._detach(pi)

    def done_run(self, run: QueueRun, count: int) -> None:
        """``done`` for pods ``:count`` of a run (placed)."""
        if count <= 0:
            return
        self.done(run.first.key)
        if run.block is not None:
            keys = run.block.keys[run.start:run.start + count - 1]
            pop = self._infos.pop
            for key in keys:
                pop(key, None)
        else:
            for pi in run.rest[:count - 1]:
                self.done(pi.key)

    def requeue(self, pi: QueuedPodInfo, plugins=frozenset(), *, error: bool = False) -> None:
        """Upstream's AddUnschedulableIfNotPresent for a pod back from a
        failed attempt (scheduling, permit or binding)."""
        if type(self._infos.get(pi.key)) is not QueuedPodInfo:
            self._infos[pi.key] = pi
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
            pi = self._pi(key)
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
        blocks = {}
        for v in self._infos.values():
            if type(v) is LaneBlock:
                blocks[id(v)] = v
            else:
                c[v.where] = c.get(v.where, 0) + 1
        # pods without an info: waiting ahead of their block's position, or
        # taken by a run (even from a block no longer in the lane)
        for b in blocks.values():
            for i, k in enumerate(b.keys):
                if self._infos.get(k) is b:
                    c[ACTIVE if i >= b.pos else IN_FLIGHT] += 1
        return c

    def pending(self, where: str | None = None) -> list[QueuedPodInfo]:
        return [pi for pi in self.infos.values() if where is None or pi.where == where]


class InfoView(Mapping):
    """``SchedulingQueue.infos``: key -> QueuedPodInfo, made on read for a
    pod still in a lane block (``queue_lane``)."""

    __slots__ = ("_q",)

    def __init__(self, queue: SchedulingQueue):
        self._q = queue

    def __getitem__(self, key: str) -> QueuedPodInfo:
        pi = self._q._pi(key)
        if pi is None:
            raise KeyError(key)
        return pi

    def __iter__(self):
        return iter(list(self._q._infos))

    def __len__(self) -> int:
        return len(self._q._infos)

    def __contains__(self, key) -> bool:
        return key in self._q._infos
