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
  plugin's ``events`` attribute, see ``runtime.cluster_events``; a pod rejected
  by no named plugin moves on any event) to backoffQ while backing off, else
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
from collections import deque
from collections.abc import Callable, Mapping
from itertools import repeat

from tensorsched.framework.records.pod_columns import PodColumns
from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.runtime.clock import Clock, SimulatedClock
from tensorsched.framework.runtime.cluster_events import (  # noqa: F401 (re-exported)
    ALL_EVENTS,
    NODE_ADD,
    NODE_DELETE,
    NODE_UPDATE,
    POD_ADD,
    POD_DELETE,
    POD_UPDATE,
    UNSCHEDULED_POD_ADD,
    plugin_events,
)

from .active_queue import ActiveQueue
from .backoff_queue import BackoffQueue
from .event_interest import EventInterest
from .nominator import Nominator
from .pre_enqueue_gate import PreEnqueueGate
from .queue_lane import ColumnKeys, QueueLane, QueueRun, column_order, columns_in_order
from .unschedulable_pool import UnschedulablePool

DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS = 300.0

ACTIVE, BACKOFF, UNSCHEDULABLE, IN_FLIGHT = "active", "backoff", "unschedulable", "in-flight"




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
_FOREVER = float("inf")


class SchedulingQueue:
    """activeQ + backoffQ + unschedulable pods on ``clock``, each its own
    part (``active_queue``, ``backoff_queue``, ``unschedulable_pool``),
    with PreEnqueue at the door (``pre_enqueue_gate``) and the plugins'
    event interest (``event_interest``) deciding what a cluster event moves.

    ``sort_plugin``: the QueueSort plugin (``sort_key(pod)`` or ``less(a,
    b)``); ``pre_enqueue(pod) -> Status`` runs the PreEnqueue plugins of the
    pod's profile and ``gate_free(pod) -> bool`` says when they certainly
    let it in; ``plugin_of(name)`` resolves a rejecting plugin's name to the
    plugin (for its events); ``run_key(pod)`` is the key ``pop_run`` forms
    runs of alike pods by (None: a pod on its own)."""

    def __init__(self, clock: Clock | None = None, *, sort_plugin,
                 pre_enqueue: Callable | None = None, plugin_of: Callable | None = None,
                 initial_backoff: float = 1.0, max_backoff: float = 10.0,
                 max_in_unschedulable: float = DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS,
                 nominator: Nominator | None = None, gate_free: Callable | None = None,
                 run_key: Callable | None = None):
        self.clock = clock or SimulatedClock()
        self.run_key = run_key or (lambda pod: None)
        # ``sort_keys(pods)``, when the plugin has it: the keys of many pods
        self.sort_keys = getattr(sort_plugin, "sort_keys", None)
        # ``sort_columns(pods)``: those keys as columns (pods as columns)
        self.sort_columns = getattr(sort_plugin, "sort_columns", None)
        if hasattr(sort_plugin, "sort_key"):
            self.sort_key = sort_plugin.sort_key
        else:
            less = sort_plugin.less
            cmp = lambda a, b: -1 if less(a, b) else (1 if less(b, a) else 0)  # noqa: E731
            self.sort_key = functools.cmp_to_key(cmp)
        self.gate = PreEnqueueGate(pre_enqueue, gate_free)
        self.interest = EventInterest(plugin_of or (lambda name: None), plugin_events)
        self.max_in_unschedulable = float(max_in_unschedulable)
        # key -> QueuedPodInfo, or the QueueLane of a pod without one yet
        # (``queue_lane``); ``infos`` reads it with every value an info
        self._infos: dict = {}
        self._token: dict[str, int] = {}           # key -> live heap entry token
        # Pods added together (``add_many``) wait in lane blocks beside the
        # heap: popping costs O(1) instead of a heap pop, and a run of them
        # is handed out without an info per pod.
        self.active = ActiveQueue(self._infos, self._token)
        self.backoff = BackoffQueue(self.clock, self._token, initial_backoff, max_backoff)
        self.unschedulable: UnschedulablePool = UnschedulablePool()
        self._seq = 0
        self.scheduling_cycle = 0
        self.move_request_cycle = -1
        self.nominator = nominator if nominator is not None else Nominator()
        # backoffQ's answers, under the names the queue has always had
        self.initial_backoff, self.max_backoff = self.backoff.initial, self.backoff.maximum
        self.backoff_duration = self.backoff.duration
        self.backoff_expiry = self.backoff.expiry
        self.backing_off = self.backoff.backing_off
        self.next_backoff_expiry = self.backoff.next_expiry

    # ------------------------------------------------------------ helpers
    def _push_active(self, pi: QueuedPodInfo) -> None:
        pi.where = ACTIVE
        self._seq += 1
        self._token[pi.key] = self._seq
        self.active.push((self.sort_key(pi.pod), self._seq, pi.key))

    def _push_backoff(self, pi: QueuedPodInfo) -> None:
        pi.where = BACKOFF
        self._seq += 1
        self._token[pi.key] = self._seq
        self.backoff.push(pi, self._seq)

    def _push_unschedulable(self, pi: QueuedPodInfo) -> None:
        pi.where = UNSCHEDULABLE
        self._token.pop(pi.key, None)
        self.unschedulable[pi.key] = pi

    def _detach(self, pi: QueuedPodInfo) -> None:
        """Out of whichever part holds it (heap entries die lazily)."""
        key = pi.key
        self._token.pop(key, None)
        if key in self.unschedulable:   # (its ``pop`` is Python: most pods are not there)
            self.unschedulable.pop(key)

    # ----------------------------------------------------- pods as columns
    @property
    def infos(self) -> InfoView:
        """key -> QueuedPodInfo of every pod in the queue (read-only; a pod
        still in a lane block gets its info when read)."""
        return InfoView(self._infos, self._pi)

    def _pi(self, key: str):
        """The info of ``key`` (made now for a pod still in a lane block),
        or None."""
        v = self._infos.get(key)
        if type(v) is not QueueLane:
            return v
        i = v.index(key)
        v.detach(i)
        if i >= v.pos:          # waiting in the lane: its position stays live
            pi = QueuedPodInfo(v.record(i), v.now, v.now)
            self._token[key] = v.seq0 + i
        else:                   # taken by a run: in flight
            pi = QueuedPodInfo(v.record(i), v.now, v.now, attempts=1,
                               cycle=self.scheduling_cycle, where=IN_FLIGHT)
        self._infos[key] = pi
        return pi

    # ---------------------------------------------------------------- API
    def __contains__(self, key: str) -> bool:
        return key in self._infos

    def __len__(self) -> int:
        return len(self._infos)

    def changes(self) -> tuple:
        """A stamp that moves whenever a pod is pushed into, added to or
        deleted from the queue (a caller tells whether anything happened
        to it meanwhile)."""
        return (self._seq, len(self._infos))

    def add(self, pod: PodRecord) -> QueuedPodInfo:
        """A new pending pod: PreEnqueue, then activeQ (or kept aside, gated)."""
        if pod.key in self._infos:
            raise KeyError(f"Pod {pod.key}: already in the scheduling queue")
        now = self.clock.now()
        pi = QueuedPodInfo(pod, now, now)
        self._infos[pod.key] = pi
        if self.gate.admits(pi):
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
        gate_free = self.gate.gate_free
        fast = gate_free is not None and all(map(gate_free, cols.classes))
        # a key twice in ``pods`` shows on the fast path when the block's keys
        # go in (no set of them made first)
        if ((infos and not infos.keys().isdisjoint(keys))
                or (not fast and len(set(keys)) != len(keys))):
            _refuse_queued(keys, infos)
        if not fast:
            # ask PreEnqueue pod by pod (pods of one class share gates and
            # profile: one gate_free answer for each stretch of them)
            active, pod_class, free = [], None, False
            admits = self.gate.admits
            for i, pod in enumerate(cols):
                if pod.pod_class is not pod_class:
                    pod_class = pod.pod_class
                    free = gate_free is not None and gate_free(pod)
                if free:
                    active.append(i)
                    continue
                pi = QueuedPodInfo(pod, now, now)
                infos[pi.key] = pi
                if admits(pi):
                    active.append(i)
                    del infos[pi.key]       # it goes into the block without an info
                else:
                    self._push_unschedulable(pi)
            if len(active) != len(cols):
                cols = cols.take(active)
        if not len(cols):
            return
        columns = self.sort_columns(cols) if self.sort_columns is not None else None
        if columns is not None:
            # the keys as columns: no tuple per pod
            if not columns_in_order(columns):
                order = column_order(columns)
                cols = cols.take(order.tolist())
                columns = tuple(c[order] for c in columns)
            sort_keys = ColumnKeys(columns)
        else:
            sort_keys = (self.sort_keys(cols) if self.sort_keys is not None
                         else [self.sort_key(p) for p in cols])
            if sorted(sort_keys) != sort_keys:       # C-level: cheap when already in order
                order = sorted(range(len(cols)), key=sort_keys.__getitem__)
                cols = cols.take(order)
                sort_keys = [sort_keys[i] for i in order]
        block = QueueLane(cols, sort_keys, self._seq + 1, now)
        had = len(infos)
        infos.update(zip(cols.keys, repeat(block)))
        if len(infos) != had + len(cols):
            # a key twice (the fast path; none was queued): none stays
            for k in cols.keys:
                infos.pop(k, None)
            _refuse_queued(keys, infos)
        self._seq += len(cols)
        self.active.add_block(block)

    def update(self, pod: PodRecord) -> QueuedPodInfo | None:
        """A pending pod changed: a gated or unschedulable pod is
        re-evaluated (PreEnqueue, then activeQ or backoffQ)."""
        pi = self._pi(pod.key)
        if pi is None:
            return None
        pi.pod = pod
        self.nominator.update(pod)
        if pi.where == ACTIVE:
            if self.gate.admits(pi):
                self._push_active(pi)              # the sort key may have changed
            else:
                self._push_unschedulable(pi)
        elif pi.where == UNSCHEDULABLE:
            was_gated = pi.gated
            if self.gate.admits(pi):
                self.unschedulable.pop(pi.key, None)
                if not was_gated and self.backoff.backing_off(pi):
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
        if self.backoff.earliest <= now:
            infos = self._infos
            for key in self.backoff.due(now):
                self._push_active(infos[key])
        pool, limit = self.unschedulable, self.max_in_unschedulable
        # skipped while the pool's last ``stale`` answer still holds
        # (``calm_since``: none stale while ``now - calm_since < limit``)
        if pool and limit != _FOREVER and (limit != pool.calm_limit
                                           or now - pool.calm_since >= limit):
            for pi in pool.stale(now, limit):
                self._move(pi)

    def _take(self, entry: tuple, block: QueueLane | None) -> QueuedPodInfo:
        """Take the head ``entry`` (from ``block`` or the heap) into flight."""
        key = entry[2]
        infos = self._infos
        pi = infos[key]
        if type(pi) is QueueLane:
            # a block's pod without an info: made here as ``_pi`` makes it
            # (without the token ``_pi`` sets, which is dropped just below)
            lane = pi
            i = entry[1] - lane.seq0 if block is lane else lane.index(key)
            lane.detach(i)
            pi = infos[key] = QueuedPodInfo(lane.record(i), lane.now, lane.now)
        self._token.pop(key, None)
        self.active.take(entry, block)
        pi.where = IN_FLIGHT
        self.scheduling_cycle += 1
        pi.cycle = self.scheduling_cycle
        pi.attempts += 1
        return pi

    def pop(self) -> QueuedPodInfo | None:
        """The head of activeQ (after a flush), now in flight; None when empty."""
        self.flush()
        entry, block = self.active.head()
        if entry is None:
            return None
        return self._take(entry, block)

    def pop_run(self, run_key: Callable | None, limit: int) -> QueueRun | None:
        """The head of activeQ (as ``pop``) and the heads after it, popped
        as ``pop`` would one by one, while ``run_key(pod)`` (None: the
        queue's own) is the head's and not None, at most ``limit`` pods;
        None when activeQ is empty.  ``run_key`` must read only what a pod's
        ``memo`` covers (pods sharing a memo share the key).

        When the heads after the first are a stretch of one lane block, the
        run is that stretch (no info is made for its pods); otherwise the
        heads one by one (``QueueRun.rest``)."""
        self.flush()
        run_key = run_key or self.run_key
        active = self.active
        entry, block = active.head()
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
        entry, block = active.head()
        if block is not None:
            # the fast form: the block's live positions from its head on,
            # while they stay below every other head (the heap's and the
            # other blocks')
            pods = block.pods
            start = block.pos
            stop = block.stretch_end(start, min(len(block), start + limit - 1),
                                     active.bound_besides(block))
            # a pod's record is built only when its class is not the head's
            classes, class_id = pods.classes, pods.class_id
            i = block.class_stretch_end(
                start, stop, lambda j: (classes[class_id[j]].pod_class is pod_class
                                        or run_key(pods[j]) == key))
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
            entry, block = active.head()
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
            self.active.put_back(run.block, run.start + max(start - 1, 0))
            self.scheduling_cycle -= min(n, run.stop - run.start)
            if start == 0:
                self._unpop_info(run.first, run.first_entry)
            return
        pis = [run.first] + run.rest
        entries = [run.first_entry] + run.entries
        for pi, entry in zip(pis[start:], entries[start:]):
            self._unpop_info(pi, entry)

    def _unpop_info(self, pi: QueuedPodInfo, entry: tuple) -> None:
        self.active.push(entry)
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
        if type(v) is not QueueLane:
            return v
        pi = QueuedPodInfo(run.block.pods[pos], run.block.now, run.block.now, attempts=1,
                           cycle=run.first.cycle + i, where=IN_FLIGHT)
        v.detach(pos if v is run.block else v.index(key))
        self._infos[key] = pi
        return pi

    def done(self, key: str) -> None:
        """The pod left the queue for good (assumed on a node)."""
        pi = self._infos.pop(key, None)
        if type(pi) is QueueLane:
            pi.detach(pi.index(key))
        elif pi is not None:
            self._detach(pi)

    def done_run(self, run: QueueRun, count: int) -> None:
        """``done`` for pods ``:count`` of a run (placed)."""
        if count <= 0:
            return
        self.done(run.first.key)
        if run.block is not None:
            infos = self._infos
            if len(infos) == count - 1:
                # the stretch's keys, all still mapped to its block, are
                # every key left: the queue empties at once
                infos.clear()
                return
            keys = run.block.keys[run.start:run.start + count - 1]
            # ``pop(key, None)`` of each, as one C-level pass
            deque(map(infos.pop, keys, repeat(None)), maxlen=0)
        else:
            for pi in run.rest[:count - 1]:
                self.done(pi.key)

    def requeue(self, pi: QueuedPodInfo, plugins=frozenset(), *, error: bool = False) -> None:
        """Upstream's AddUnschedulableIfNotPresent for a pod back from a
        failed attempt (scheduling, permit or binding)."""
        v = self._infos.get(pi.key)
        if type(v) is not QueuedPodInfo:
            if type(v) is QueueLane:
                v.detach(v.index(pi.key))
            self._infos[pi.key] = pi
        pi.timestamp = self.clock.now()
        pi.unschedulable_plugins = frozenset(plugins)
        if error:
            self._push_backoff(pi)
        elif self.move_request_cycle >= pi.cycle:
            self._move(pi)
        else:           # ``_push_unschedulable``, inline: once per failure
            pi.where = UNSCHEDULABLE
            self._token.pop(pi.key, None)
            self.unschedulable[pi.key] = pi

    def _move(self, pi: QueuedPodInfo) -> None:
        self.unschedulable.pop(pi.key, None)
        if self.backoff.backing_off(pi):
            self._push_backoff(pi)
        else:
            self._push_active(pi)

    def move_all(self, event: str, exclude: str | None = None) -> int:
        """A cluster event: unschedulable pods it may help go back to
        activeQ/backoffQ (all but the pod keyed ``exclude``).  Returns how
        many moved."""
        self.move_request_cycle = self.scheduling_cycle
        if not self.unschedulable:
            return 0
        interested = self.interest.interested
        moved = [pi for pi in self.unschedulable.interested(
                 lambda plugins: interested(plugins, event))
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

    def counts(self) -> dict:
        c = {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, IN_FLIGHT: 0}
        blocks = {}
        for v in self._infos.values():
            if type(v) is QueueLane:
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


def _refuse_queued(keys: list, infos: dict) -> None:
    """KeyError naming the first of ``keys`` already in ``infos`` or seen
    before in ``keys``."""
    seen: set = set()
    for k in keys:
        if k in infos or k in seen:
            raise KeyError(f"Pod {k}: already in the scheduling queue")
        seen.add(k)


class InfoView(Mapping):
    """``SchedulingQueue.infos``: key -> QueuedPodInfo, made on read for a
    pod still in a lane block (``queue_lane``): ``infos`` is the queue's
    key -> info or block map, ``info_of(key)`` makes the info."""

    __slots__ = ("_info_of", "_infos")

    def __init__(self, infos: dict, info_of: Callable):
        self._infos = infos
        self._info_of = info_of

    def __getitem__(self, key: str) -> QueuedPodInfo:
        pi = self._info_of(key)
        if pi is None:
            raise KeyError(key)
        return pi

    def __iter__(self):
        return iter(list(self._infos))

    def __len__(self) -> int:
        return len(self._infos)

    def __contains__(self, key) -> bool:
        return key in self._infos
