"""Schedule pending pods: kube-scheduler's loop on columnar state.

Two ways to drive it:

- ``schedule_one(pod)`` / ``run(pods)`` (the CLI and the benchmarks): one
  attempt per pod, in queue order, the caller owning pods that fail.  A pod
  that fits nowhere runs the PostFilter plugins (DefaultPreemption): when a
  node is nominated the victims are deleted at once and the pod is retried
  immediately on its nominated node (the simulator's shortcut for "victims
  gone, preemptor back from the queue"); otherwise it gets kube-scheduler's
  FailedScheduling message, preemption's message appended as upstream does.
- the embedding API: ``add_pod``/``update_pod``/``delete_pod``,
  ``add_node``/``update_node``/``delete_node`` (each a cluster event for
  the queue), ``schedule_one()`` (pop the head of the scheduling queue,
  ``framework.queue``), ``run_until_idle()``, ``advance(seconds)`` on the
  clock, ``subscribe(event, callback)`` and ``metrics()``.  Here a
  preemptor is nominated (``status.nominatedNodeName``), its victims are
  deleted (after ``termination_grace_seconds`` on the clock, marked
  terminating with a DisruptionTarget condition meanwhile) and it goes back
  to the queue; it binds on a later attempt once room exists.

Every attempt is one scheduling cycle, then the binding cycle:

- Filter/Score (``Framework.run_cycle``) with the pods nominated to each
  node with equal or higher priority counted there: they are added to the
  state around the cycle (and its PostFilter) and removed right after.  For
  the pod-count filters (resources, ports) this is exactly upstream's
  two-pass RunFilterPluginsWithNominatedPods (a node that passes with the
  nominated pods passes without them); scores also see them (upstream
  scores without them) -- a documented deviation, only while nominations
  are outstanding.
- assume (the state counts the pod at once), Reserve (Unreserve in reverse
  on failure), Permit (``permit(ctx, node) -> Status`` or ``(Status,
  timeout_seconds)``: Allow, Reject, or Wait until ``allow``/``reject`` or
  the timeout on the clock), then PreBind, Bind, PostBind.  A failure after
  assume (Reserve, Permit reject or timeout, PreBind, Bind, including the
  injectable binder failure: ``binder_fault_rate`` with a seeded RNG or a
  ``binder(pod, node)`` callback) unreserves, forgets the pod (the state no
  longer counts it), and requeues it with backoff: nothing is counted
  twice and nothing is lost.
- with ``assume_ttl`` set, a bound pod stays assumed until confirmed
  (``confirm(key)`` or ``update_pod`` of the pod with its nodeName: the
  informer's event upstream); unconfirmed ones expire on the clock, are
  forgotten and requeued (upstream's cache drops them; a simulator without
  an API server treats the binding as lost).  Default: confirmed at bind.

Events (``subscribe``): Scheduled (node chosen and assumed), Bound,
FailedScheduling, Preempted (one per victim), BindFailed, AssumeExpired.
Each callback gets a dict: event, pod, node, message, time (clock seconds),
plus ``victims``/``preemptor`` where they apply.
"""

from __future__ import annotations

import dataclasses
import heapq
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace

from tensorsched.framework.objects.manifests import parse_node
from tensorsched.framework.objects.priorities import pod_priority
from tensorsched.framework.objects.records import NodeRecord, PodRecord
from tensorsched.framework.preemption.evaluator import fits_on_row
from tensorsched.framework.runtime.clock import Clock, SimulatedClock
from tensorsched.framework.runtime.framework import Framework
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.runtime.status import Code, Status

from .cluster import Cluster, pod_from
from .queue import (
    DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS,
    NODE_ADD,
    NODE_DELETE,
    NODE_UPDATE,
    POD_ADD,
    POD_DELETE,
    POD_UPDATE,
    UNSCHEDULED_POD_ADD,
    Nominator,
    QueuedPodInfo,
    SchedulingQueue,
)

EVENTS = ("Scheduled", "Bound", "FailedScheduling", "Preempted", "BindFailed",
          "AssumeExpired")
DEFAULT_PERMIT_TIMEOUT = 60.0


@dataclass
class Binding:
    """One scheduling outcome: a node, or the FailedScheduling message."""

    pod: str
    node: str | None
    message: str = ""
    nominated_node: str | None = None
    victims: list = field(default_factory=list)     # "ns/name" evicted for this pod

    def to_dict(self) -> dict:
        d = {"pod": self.pod, "node": self.node}
        if self.node is None:
            d["message"] = self.message
        if self.nominated_node is not None:
            d["nominated_node"] = self.nominated_node
            d["preempted"] = list(self.victims)
        return d


@dataclass
class StageTimer:
    """Seconds spent per stage, summed over cycles."""

    seconds: dict = field(default_factory=dict)

    def add(self, stage: str, dt: float) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + dt


@dataclass
class WaitingPod:
    """An assumed pod between Permit and its binding cycle."""

    pod: PodRecord
    node: str
    fw: Framework
    ctx: CycleContext
    pi: QueuedPodInfo | None
    deadline: float = 0.0
    timeout: float = 0.0
    pending: set = field(default_factory=set)       # plugins that said Wait


def _with_status(pod: PodRecord, **status) -> PodRecord:
    obj = dict(pod.obj or {})
    st = dict(obj.get("status") or {})
    for k, v in status.items():
        if v is None:
            st.pop(k, None)
        else:
            st[k] = v
    obj["status"] = st
    return dataclasses.replace(pod, obj=obj)


# The events that end a pod's attempt; the last one is its outcome.
OUTCOME_EVENTS = ("Bound", "FailedScheduling", "BindFailed")


class Scheduler:
    """Drives the cycles for one cluster on one backend.

    ``next_start_index`` rotates as upstream's nextStartNodeIndex: after each
    cycle it advances by the number of nodes processed."""

    def __init__(self, cluster: Cluster, backend: str = "numpy", seed: int = 0, *,
                 clock: Clock | None = None, binder_fault_rate: float = 0.0,
                 binder: Callable | None = None, assume_ttl: float | None = None,
                 termination_grace_seconds: float = 0.0,
                 pod_initial_backoff_seconds: float | None = None,
                 pod_max_backoff_seconds: float | None = None,
                 pod_max_in_unschedulable_seconds: float = DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS):
        self.cluster = cluster
        self.backend = backend
        self.seed = seed
        self.clock = clock or SimulatedClock()
        self.binder_fault_rate = float(binder_fault_rate)
        self.binder = binder
        self.assume_ttl = assume_ttl
        self.termination_grace_seconds = float(termination_grace_seconds)
        cfg = cluster.config
        self._backoff = (float(pod_initial_backoff_seconds
                               if pod_initial_backoff_seconds is not None
                               else cfg.pod_initial_backoff_seconds),
                         float(pod_max_backoff_seconds if pod_max_backoff_seconds is not None
                               else cfg.pod_max_backoff_seconds))
        self._max_in_unschedulable = float(pod_max_in_unschedulable_seconds)
        self._rng = random.Random(seed)
        self.next_start_index = 0
        self.attempts = 0
        self.timer = StageTimer()
        self.plugin_seconds: dict[str, float] = {}
        self.latencies: list[float] = []
        self.preemption_latencies: list[float] = []
        self.e2e_latencies: list[float] = []           # clock seconds, enqueue -> bound
        self.results: dict[str, int] = {}
        self.preemptions = 0
        self.evictions: list[dict] = []
        self.bind_failures = 0
        self.nominator = Nominator()
        self._queue: SchedulingQueue | None = None
        self.waiting: dict[str, WaitingPod] = {}
        self.assumed: dict[str, float] = {}            # key -> expiry (unconfirmed binds)
        self.terminating: list = []                    # heap (deadline, seq, key)
        self._seq = 0
        self._to_bind: list[WaitingPod] = []
        self._subs: dict[str, list] = {}
        self._handled: set = set()
        self.preempted_for: dict[str, tuple] = {}      # key -> (node, victims)
        self.outcomes: dict[str, Binding] = {}         # key -> latest outcome
        self.cycle_nominated: tuple | list = ()        # keys added by _add_nominated now

    # ----------------------------------------------------------- plumbing
    def _fw(self, pod) -> Framework:
        fw = self.cluster.framework_for(pod, self.backend)
        if id(fw) not in self._handled:
            self._handled.add(id(fw))
            for p in fw.plugins.values():
                hook = getattr(p, "set_handle", None)
                if hook is not None:
                    hook(self)
        return fw

    @property
    def queue(self) -> SchedulingQueue:
        """The scheduling queue (built on first use: the QueueSort plugin
        is the first profile's; upstream requires it be the same in all)."""
        if self._queue is None:
            name = self.cluster.config.profiles[0].scheduler_name
            fw = self._fw(SimpleNamespace(scheduler_name=name))
            # The configuration has checked that every profile has exactly one.
            (sort,) = fw._point["queueSort"]
            self._queue = SchedulingQueue(
                self.clock, sort_plugin=sort,
                pre_enqueue=self._pre_enqueue, plugin_of=self._plugin_of,
                initial_backoff=self._backoff[0], max_backoff=self._backoff[1],
                max_in_unschedulable=self._max_in_unschedulable, nominator=self.nominator)
        return self._queue

    def _pre_enqueue(self, pod: PodRecord) -> Status:
        fw = self._fw(pod)
        for p in fw._point.get("preEnqueue", []):
            if hasattr(p, "pre_enqueue"):
                st = p.pre_enqueue(pod)
                if not st.ok:
                    return st if st.plugin else st.with_plugin(p.name)
        return Status.OK

    def _plugin_of(self, name: str):
        for fw in self.cluster._frameworks.values():
            if name in fw.plugins:
                return fw.plugins[name]
        return None

    def subscribe(self, event: str, callback: Callable) -> Callable:
        """Call ``callback(dict)`` on each ``event`` (one of EVENTS, or "*"
        for all); returns a function that unsubscribes."""
        if event not in EVENTS and event != "*":
            raise ValueError(f"unknown event {event!r}; known: {', '.join(EVENTS)}")
        self._subs.setdefault(event, []).append(callback)
        return lambda: self._subs[event].remove(callback)

    def _emit(self, event: str, pod: str, node: str | None = None, message: str = "",
              **extra) -> None:
        if not self._subs:
            return
        subs = self._subs.get(event, []) + self._subs.get("*", [])
        if not subs:
            return
        payload = {"event": event, "pod": pod, "node": node, "message": message,
                   "time": self.clock.now(), **extra}
        for cb in subs:
            cb(payload)

    def _result(self, kind: str) -> None:
        self.results[kind] = self.results.get(kind, 0) + 1

    def _time_plugin(self, point: str, name: str, dt: float) -> None:
        k = f"{point}/{name}"
        self.plugin_seconds[k] = self.plugin_seconds.get(k, 0.0) + dt

    def queue_order(self, pods: list[PodRecord]) -> list[PodRecord]:
        """Pods in activeQ order (the QueueSort plugin's order)."""
        return sorted(pods, key=self.queue.sort_key)

    # -------------------------------------------------------- cluster API
    def _node(self, node) -> NodeRecord:
        return node if isinstance(node, NodeRecord) else parse_node(node)

    def add_node(self, node) -> None:
        self.cluster.state.add_node(self._node(node))
        self.queue.move_all(NODE_ADD)

    def update_node(self, node) -> None:
        self.cluster.state.update_node(self._node(node))
        self.queue.move_all(NODE_UPDATE)

    def delete_node(self, name: str) -> None:
        state = self.cluster.state
        for key, w in list(self.waiting.items()):
            if w.node == name:
                self.reject(key, "", f"node {name!r} deleted")
        row = state.node_rows.get(name)
        if row is not None:
            for key in list(state.pods_on_node[row]):
                self.assumed.pop(key, None)
        state.remove_node(name)
        for pod in self.nominator.nominated_on(name):
            self.nominator.delete(pod.key)
        self.queue.move_all(NODE_DELETE)

    def add_pod(self, pod) -> None:
        """A pod bound with spec.nodeName joins the state (an assigned-pod
        add event); any other joins the scheduling queue."""
        pod = self.cluster.resolve(pod)
        if pod.node_name:
            self.cluster.state.add_pod(pod)
            self.queue.move_all(POD_ADD)
        else:
            self.queue.add(pod)
            if self.queue.unschedulable:
                self.queue.move_all(UNSCHEDULED_POD_ADD)

    def update_pod(self, pod) -> None:
        """A pending pod is re-evaluated by the queue (PreEnqueue: gates);
        a bound one is replaced in the state (confirming it when assumed)."""
        pod = self.cluster.resolve(pod)
        key = pod.key
        if key in self.queue:
            self.queue.update(pod)
            return
        state = self.cluster.state
        if key in state.pods:
            if key in self.assumed and pod.node_name:
                self.assumed.pop(key)
            state.update_pod(pod, pod.node_name or None)
            self.queue.move_all(POD_UPDATE)
            return
        if key in self.waiting:
            self.waiting[key].pod = pod
            return
        raise KeyError(f"Pod {key}: not known to the scheduler")

    def delete_pod(self, key: str) -> None:
        """Delete a pod wherever it is (queue, permit wait, assumed, bound)."""
        if not isinstance(key, str):
            key = self.cluster.resolve(key).key
        self.nominator.delete(key)
        w = self.waiting.pop(key, None)
        if w is not None:
            self._unreserve(w.fw, w.ctx, w.node)
        self._to_bind = [x for x in self._to_bind if x.pod.key != key]
        if self._queue is not None:
            self._queue.delete(key)
        self.assumed.pop(key, None)
        self.preempted_for.pop(key, None)
        if key in self.cluster.state.pods:
            self.cluster.state.remove_pod(key)
            self.queue.move_all(POD_DELETE)

    def confirm(self, key: str) -> None:
        """The binding of an assumed pod is confirmed (informer add)."""
        self.assumed.pop(key, None)

    def advance(self, seconds: float) -> None:
        """Move the (simulated) clock and fire what fell due."""
        self.clock.advance(seconds)
        self._tick()

    # ------------------------------------------------------------ timers
    def _tick(self) -> None:
        now = self.clock.now()
        state = self.cluster.state
        while self.terminating and self.terminating[0][0] <= now:
            _, _, key = heapq.heappop(self.terminating)
            if key in state.pods:
                state.remove_pod(key)
                self.queue.move_all(POD_DELETE)
        if self.waiting:
            for key, w in sorted(self.waiting.items(), key=lambda kv: kv[1].deadline):
                if w.deadline <= now and key in self.waiting:
                    self.reject(key, ",".join(sorted(w.pending)),
                                f"rejected due to timeout after waiting {w.timeout:g}s at "
                                f"plugin {','.join(sorted(w.pending))}")
        if self.assumed:
            for key, dl in sorted(self.assumed.items(), key=lambda kv: kv[1]):
                if dl <= now:
                    self.assumed.pop(key)
                    entry = state.remove_pod(key)
                    node = state.node_name(entry.node_row)
                    self.queue.move_all(POD_DELETE)
                    pi = QueuedPodInfo(entry.record, now, now, attempts=1)
                    self.queue.requeue(pi, error=True)
                    self._emit("AssumeExpired", key, node, "assumed pod expired")
        self._drain()

    def _next_wakeup(self) -> float | None:
        times = []
        if self._queue is not None:
            t = self._queue.next_backoff_expiry()
            if t is not None:
                times.append(t)
        if self.waiting:
            times.append(min(w.deadline for w in self.waiting.values()))
        if self.terminating:
            times.append(self.terminating[0][0])
        return min(times) if times else None

    # ------------------------------------------------------------- loops
    def schedule_one(self, pod: PodRecord | None = None) -> Binding | None:
        """One scheduling cycle (plus binding when permitted).  With
        ``pod``: for that pod, which the caller owns if it fails.  Without:
        for the head of the scheduling queue (None when activeQ is empty)."""
        if pod is not None:
            b = self._attempt(pod, None)
            if self._to_bind:
                self._drain()
            return b
        self._tick()
        pi = self.queue.pop()
        if pi is None:
            return None
        b = self._attempt(pi.pod, pi)
        self._drain()
        return b

    def run(self, pods: list[PodRecord]) -> list[Binding]:
        """Schedule ``pods`` in queue order; returns one Binding per pod."""
        return [self.schedule_one(p) for p in self.queue_order(pods)]

    def run_until_idle(self, max_cycles: int = 1_000_000) -> list[Binding]:
        """Pop and schedule until activeQ is empty; while pods back off,
        wait in Permit or victims terminate, a simulated clock jumps to the
        next of those times.  Pods left unschedulable stay aside."""
        out = []
        for _ in range(max_cycles):
            b = self.schedule_one()
            if b is not None:
                out.append(b)
                continue
            t = self._next_wakeup()
            if t is None or not self.clock.simulated:
                break
            self.clock.set(max(t, self.clock.now()))
        return out

    def schedule_pending(self, pods) -> tuple[list[Binding], list[dict]]:
        """Add ``pods`` (Pod dicts or PodRecords) to the scheduling queue and run until idle on the
        clock (what ``tensorsched schedule`` does).  Returns the final
        Binding of each pod, in the order those final outcomes happened
        (pods never attempted, e.g. gated ones, last, with their PreEnqueue
        message), and the preemptions in the order they happened:
        ``{"preemptor", "nominated_node", "victims"}``."""
        pods = [pod_from(p) for p in pods]
        last: dict[str, dict] = {}                    # pod -> its latest outcome event
        preemptions: list[dict] = []

        def on_event(e: dict) -> None:
            if e["event"] not in OUTCOME_EVENTS:
                return
            last.pop(e["pod"], None)              # re-insert: dict order = outcome order
            last[e["pod"]] = e
            if e.get("nominated_node") is not None:
                preemptions.append({"preemptor": e["pod"], "nominated_node": e["nominated_node"],
                                    "victims": list(e.get("victims") or ())})

        unsubscribe = self.subscribe("*", on_event)
        try:
            for pod in pods:
                self.add_pod(pod)
            self.run_until_idle()
        finally:
            unsubscribe()
        out = []
        for key, e in last.items():
            if e["event"] == "Bound":
                out.append(self.outcomes[key])   # carries the nomination and victims
            else:
                out.append(Binding(key, None, e["message"], e.get("nominated_node"),
                                   list(e.get("victims") or ())))
        infos = self.queue.infos
        for pod in self.queue_order([p for p in pods if p.key not in last]):
            pi = infos.get(pod.key)
            out.append(Binding(pod.key, None, (pi.gated_message if pi is not None else "")
                               or "not attempted"))
        return out, preemptions

    # ----------------------------------------------------------- a cycle
    def _add_nominated(self, pod: PodRecord) -> list[str]:
        """Pods nominated elsewhere with priority >= pod's, added to the
        state on their nominated nodes for this cycle."""
        state = self.cluster.state
        prio = pod_priority(pod)
        added = []
        for node, keys in self.nominator.by_node.items():
            if node not in state.node_rows:
                continue
            for k in keys:
                if k == pod.key or k in state.pods:
                    continue
                other = self.nominator.pods[k]
                if pod_priority(other) >= prio:
                    state.add_pod(other, node)
                    added.append(k)
        return added

    def _remove(self, keys) -> None:
        """Take the nominated pods added for this cycle back out."""
        self.cycle_nominated = ()
        for k in keys:
            self.cluster.state.remove_pod(k)

    def _attempt(self, pod: PodRecord, pi: QueuedPodInfo | None) -> Binding:
        t0 = time.perf_counter()
        fw = self._fw(pod)
        state = self.cluster.state
        if pi is None:
            for p in fw._point.get("preEnqueue", ()):
                if hasattr(p, "pre_enqueue"):
                    st = p.pre_enqueue(pod)
                    if not st.ok:
                        self.latencies.append(time.perf_counter() - t0)
                        msg = "; ".join(st.reasons)
                        self._result("unschedulable")
                        self._emit("FailedScheduling", pod.key, None, msg)
                        return Binding(pod.key, None, msg)
        temp = self._add_nominated(pod) if self.nominator else ()
        # plugins that must see the state without them (Coscheduling) read this
        self.cycle_nominated = temp
        try:
            result = fw.run_cycle(state, pod, seed=self.seed, attempt=self.attempts,
                                  start_index=self.next_start_index, want_scores=False)
        except BaseException:
            self._remove(temp)
            raise
        t1 = time.perf_counter()
        self.timer.add("filter_score", t1 - t0)
        self.attempts += 1
        n = state.num_nodes
        if n:
            self.next_start_index = (self.next_start_index + result.processed) % n
        if result.selected_row >= 0:
            self._remove(temp)
            node = state.node_name(result.selected_row)
            binding = self._assume_and_permit(fw, pod, node, pi)
            t2 = time.perf_counter()
            self.timer.add("reserve_bind", t2 - t1)
            self.latencies.append(t2 - t0)
            return binding
        ctx = CycleContext(state, pod, fw)
        try:
            outcome = fw.run_post_filter(ctx, result, self.cluster.pod_table(), seed=self.seed,
                                      attempt=self.attempts - 1)
        finally:
            self._remove(temp)
        t2 = time.perf_counter()
        self.timer.add("preemption", t2 - t1)
        if outcome is not None and outcome.nominated_node is not None:
            if pi is None:
                binding = self._preempt_and_retry(fw, pod, outcome)
            else:
                binding = self._preempt_and_requeue(fw, pod, pi, outcome, result)
            self.timer.add("evict_bind", time.perf_counter() - t2)
            self.latencies.append(time.perf_counter() - t0)
            self.preemption_latencies.append(time.perf_counter() - t0)
            return binding
        diag = fw.diagnosis(ctx, result)
        if outcome is not None and outcome.message:
            diag.post_filter_msg = outcome.message.rstrip(".")
        msg = diag.message()
        self.timer.add("diagnosis", time.perf_counter() - t2)
        self.latencies.append(time.perf_counter() - t0)
        self._result("unschedulable")
        if pi is not None:
            self.queue.requeue(pi, self._rejectors(result, diag))
        self._emit("FailedScheduling", pod.key, None, msg)
        b = Binding(pod.key, None, msg)
        self.outcomes[pod.key] = b
        return b

    @staticmethod
    def _rejectors(result, diag) -> set:
        plugins = {st.plugin for st in diag.node_statuses.values() if st.plugin}
        if not result.prefilter_status.ok and result.prefilter_status.plugin:
            plugins.add(result.prefilter_status.plugin)
        return plugins

    # -------------------------------------------------------- preemption
    def _evict(self, victims, node: str, preemptor: PodRecord) -> None:
        state = self.cluster.state
        grace = self.termination_grace_seconds
        for key in victims:
            self.evictions.append({"pod": key, "node": node, "preemptor": preemptor.key})
            self._emit("Preempted", key, node, f"preempted by {preemptor.key} on node {node}",
                       preemptor=preemptor.key)
            if grace <= 0:
                state.remove_pod(key)
                if self._queue is not None:
                    self._queue.move_all(POD_DELETE)
                continue
            rec = state.pods[key].record
            cond = {"type": "DisruptionTarget", "status": "True",
                    "reason": "PreemptionByScheduler"}
            conds = [c for c in ((rec.obj or {}).get("status") or {}).get("conditions") or []
                     if c.get("type") != "DisruptionTarget"] + [cond]
            rec = dataclasses.replace(_with_status(rec, conditions=conds), deleting=True)
            state.update_pod(rec, node)
            self._seq += 1
            heapq.heappush(self.terminating, (self.clock.now() + grace, self._seq, key))

    def _clear_lower_nominations(self, node: str, prio: int) -> None:
        for other in self.nominator.nominated_on(node):
            if pod_priority(other) < prio:
                self.nominator.delete(other.key)
                pi = self._queue.infos.get(other.key) if self._queue is not None else None
                if pi is not None:
                    pi.pod = _with_status(pi.pod, nominatedNodeName=None)

    def _preempt_and_requeue(self, fw, pod, pi, outcome, result) -> Binding:
        """Queue mode: nominate, evict, back to the queue (the victims'
        deletion is a move request during this cycle: backoffQ)."""
        node = outcome.nominated_node
        self.preemptions += 1
        self._clear_lower_nominations(node, pod_priority(pod))
        pi.pod = _with_status(pod, nominatedNodeName=node)
        self.nominator.add(pi.pod, node)
        self.preempted_for[pod.key] = (node, list(outcome.victims))
        self._evict(outcome.victims, node, pod)
        diag = fw.diagnosis(CycleContext(self.cluster.state, pod, fw), result)
        msg = diag.message()
        self._result("unschedulable")
        self.queue.requeue(pi, self._rejectors(result, diag))
        self._emit("FailedScheduling", pod.key, None, msg, nominated_node=node,
                   victims=list(outcome.victims))
        b = Binding(pod.key, None, msg, node, list(outcome.victims))
        self.outcomes[pod.key] = b
        return b

    def _preempt_and_retry(self, fw: Framework, pod: PodRecord, outcome) -> Binding:
        """Direct mode: delete the victims, then place the preemptor on its
        nominated node if it fits there now (else one more full cycle)."""
        state = self.cluster.state
        node = outcome.nominated_node
        self._evict(outcome.victims, node, pod)
        self.preemptions += 1
        self.preempted_for[pod.key] = (node, list(outcome.victims))
        if outcome.query is not None and fits_on_row(state, outcome.query,
                                                     state.node_rows[node],
                                                     outcome.host_filters,
                                                     CycleContext(state, pod, fw)):
            b = self._assume_and_permit(fw, pod, node, None)
        else:
            result = fw.run_cycle(state, pod, seed=self.seed, attempt=self.attempts,
                                  want_scores=False)
            self.attempts += 1
            if result.selected_row < 0:
                self.preempted_for.pop(pod.key, None)
                msg = fw.diagnosis(CycleContext(state, pod, fw), result).message()
                self._result("unschedulable")
                self._emit("FailedScheduling", pod.key, None, msg)
                return Binding(pod.key, None, msg, node, list(outcome.victims))
            b = self._assume_and_permit(fw, pod, state.node_name(result.selected_row), None)
        b.nominated_node = node
        b.victims = list(outcome.victims)
        return b

    # ---------------------------------------------- reserve, permit, bind
    def _unreserve(self, fw, ctx, node, upto=None) -> None:
        """Unreserve (reverse order) and forget the assumed pod."""
        plugins = fw._point.get("reserve", [])
        if upto is not None:
            plugins = plugins[: upto + 1]
        for q in reversed(plugins):
            q.unreserve(ctx, node)
        key = ctx.pod.key
        self.assumed.pop(key, None)
        if key in self.cluster.state.pods:
            self.cluster.state.remove_pod(key)

    def _requeue_after_assume(self, pod, pi, status: Status, error: bool,
                              in_cycle: bool = False) -> None:
        """Forgotten after assume: the freed room is a move request (an
        assigned-pod delete) and the pod goes back to the queue.  As
        upstream, a failure inside the scheduling cycle (Reserve, Permit)
        requeues the pod first and then moves every other pod, so a pod a
        plugin rejected waits in the unschedulable pool; a failure in the
        binding cycle moves first, so the pod itself backs off."""
        q = self.queue
        if not in_cycle:
            q.move_all(POD_DELETE)
        if pi is None:
            now = self.clock.now()
            pi = QueuedPodInfo(pod, now, now, attempts=1, cycle=q.scheduling_cycle)
        else:
            pi.pod = pod
        q.requeue(pi, {status.plugin} if status.plugin else (), error=error)
        if in_cycle:
            q.move_all(POD_DELETE, exclude=pod.key)

    def _assume_and_permit(self, fw: Framework, pod: PodRecord, node: str,
                           pi: QueuedPodInfo | None) -> Binding:
        state = self.cluster.state
        ctx = CycleContext(state, pod, fw)
        state.add_pod(pod, node)                       # assume: counted at once
        if pi is not None:
            self.queue.done(pod.key)
        for i, p in enumerate(fw._point.get("reserve", ())):
            t = time.perf_counter()
            st = p.reserve(ctx, node)
            self._time_plugin("Reserve", p.name, time.perf_counter() - t)
            if not st.ok:
                self._unreserve(fw, ctx, node, upto=i)
                msg = f"running Reserve plugin {p.name!r}: " + "; ".join(st.reasons)
                self._result("error")
                if pi is not None:
                    self._requeue_after_assume(pod, pi, st.with_plugin(p.name), error=True,
                                               in_cycle=True)
                self._emit("FailedScheduling", pod.key, node, msg)
                return Binding(pod.key, None, msg)
        self._emit("Scheduled", pod.key, node)
        permits = fw._point.get("permit", ())
        if permits:
            w = WaitingPod(pod, node, fw, ctx, pi)
            timeout = None
            for p in permits:
                t = time.perf_counter()
                r = p.permit(ctx, node)
                self._time_plugin("Permit", p.name, time.perf_counter() - t)
                st, to = r if isinstance(r, tuple) else (r, DEFAULT_PERMIT_TIMEOUT)
                if st.code == Code.WAIT:
                    w.pending.add(p.name)
                    timeout = to if timeout is None else min(timeout, to)
                elif not st.ok:
                    st = st if st.plugin else st.with_plugin(p.name)
                    msg = "; ".join(st.reasons) or f"rejected by Permit plugin {p.name!r}"
                    self._fail_permit(w, st, msg, in_cycle=True)
                    return Binding(pod.key, None, msg)
            if w.pending:
                w.timeout = float(timeout)
                w.deadline = self.clock.now() + w.timeout
                self.waiting[pod.key] = w
                return Binding(pod.key, None, "waiting on permit plugin(s) "
                               + ", ".join(sorted(w.pending)))
            return self._binding_cycle(w)
        return self._binding_cycle(WaitingPod(pod, node, fw, ctx, pi))

    def allow(self, key: str, plugin: str) -> None:
        """A Permit plugin lets a waiting pod go (it binds when every
        waiting plugin has allowed it; the binding cycle runs after the
        current step)."""
        w = self.waiting.get(key)
        if w is None:
            return
        w.pending.discard(plugin)
        if not w.pending:
            del self.waiting[key]
            self._to_bind.append(w)

    def reject(self, key: str, plugin: str, message: str) -> None:
        """Reject a waiting pod: unreserve, forget, requeue."""
        w = self.waiting.pop(key, None)
        if w is None:
            return
        self._fail_permit(w, Status(Code.UNSCHEDULABLE, (message,), plugin), message)

    def waiting_pods(self) -> list[str]:
        return list(self.waiting)

    def _fail_permit(self, w: WaitingPod, st: Status, msg: str, in_cycle: bool = False) -> None:
        self._unreserve(w.fw, w.ctx, w.node)
        self._result("unschedulable")
        self._requeue_after_assume(w.pod, w.pi, st, error=False, in_cycle=in_cycle)
        b = Binding(w.pod.key, None, msg)
        self.outcomes[w.pod.key] = b
        self._emit("FailedScheduling", w.pod.key, w.node, msg)

    def _drain(self) -> None:
        while self._to_bind:
            self._binding_cycle(self._to_bind.pop(0))

    def _binder_fails(self, pod, node) -> Status | None:
        if self.binder is not None:
            r = self.binder(pod, node)
            if isinstance(r, Status):
                return None if r.ok else r
            return None if r in (True, None) else Status(Code.ERROR, ("binder failed",),
                                                         "binder")
        if self.binder_fault_rate > 0 and self._rng.random() < self.binder_fault_rate:
            return Status(Code.ERROR, ("injected binder failure",), "binder")
        return None

    def _binding_cycle(self, w: WaitingPod) -> Binding:
        fw, ctx, node, pod = w.fw, w.ctx, w.node, w.pod
        failed = None
        for p in fw._point.get("preBind", ()):
            t = time.perf_counter()
            st = p.pre_bind(ctx, node)
            self._time_plugin("PreBind", p.name, time.perf_counter() - t)
            if not st.ok:
                failed = (st if st.plugin else st.with_plugin(p.name), "PreBind", p.name)
                break
        if failed is None:
            st = self._binder_fails(pod, node)
            if st is not None:
                failed = (st, "Bind", "binder")
        if failed is None:
            for p in fw._point.get("bind", ()):
                t = time.perf_counter()
                st = p.bind(ctx, node)
                self._time_plugin("Bind", p.name, time.perf_counter() - t)
                if st.code == Code.SKIP:
                    continue
                if not st.ok:
                    failed = (st if st.plugin else st.with_plugin(p.name), "Bind", p.name)
                break
        if failed is not None:
            st, point, name = failed
            msg = f"running {point} plugin {name!r}: " + "; ".join(st.reasons)
            self._unreserve(fw, ctx, node)
            self.bind_failures += 1
            self._result("error")
            self._requeue_after_assume(pod, w.pi, st, error=True)
            self._emit("BindFailed", pod.key, node, msg)
            b = Binding(pod.key, None, msg)
            self.outcomes[pod.key] = b
            return b
        for p in fw._point.get("postBind", ()):
            t = time.perf_counter()
            p.post_bind(ctx, node)
            self._time_plugin("PostBind", p.name, time.perf_counter() - t)
        if self.assume_ttl is not None:
            self.assumed[pod.key] = self.clock.now() + self.assume_ttl
        self._result("scheduled")
        if self.nominator:
            self.nominator.delete(pod.key)
        now = self.clock.now()
        if w.pi is not None:
            self.e2e_latencies.append(now - w.pi.initial_timestamp)
        b = Binding(pod.key, node)
        pre = self.preempted_for.pop(pod.key, None) if self.preempted_for else None
        if pre is not None:
            b.nominated_node, b.victims = pre[0], list(pre[1])
        if self._subs:
            self._emit("Bound", pod.key, node)
        if w.pi is not None or self.waiting or self._subs:
            self.outcomes[pod.key] = b
        return b

    # ------------------------------------------------------------ metrics
    def metrics(self) -> dict:
        """Attempts by result, per-stage and per-plugin seconds (host time),
        end-to-end latency in clock seconds (first enqueue -> bound), queue
        sizes, preemptions, evictions, binder failures."""
        lat = sorted(self.e2e_latencies)

        def pct(q):
            if not lat:
                return None
            return lat[min(len(lat) - 1, round(q / 100 * (len(lat) - 1)))]
        return {
            "attempts": dict(self.results),
            "stage_seconds": dict(self.timer.seconds),
            "plugin_seconds": dict(self.plugin_seconds),
            "e2e_latency_seconds": {"count": len(lat), "p50": pct(50), "p99": pct(99),
                                    "max": lat[-1] if lat else None,
                                    "mean": sum(lat) / len(lat) if lat else None},
            "queue": self._queue.counts() if self._queue is not None else {},
            "waiting_on_permit": len(self.waiting),
            "assumed_unconfirmed": len(self.assumed),
            "nominated": len(self.nominator.node_of),
            "preemptions": self.preemptions,
            "evictions": len(self.evictions),
            "bind_failures": self.bind_failures,
        }


def summarize(bindings: list[Binding]) -> dict:
    """Counts for the CLI summary."""
    placed = sum(1 for b in bindings if b.node is not None)
    per_node: dict[str, int] = {}
    for b in bindings:
        if b.node is not None:
            per_node[b.node] = per_node.get(b.node, 0) + 1
    return {"pods": len(bindings), "scheduled": placed, "unschedulable": len(bindings) - placed,
            "nodes_used": len(per_node),
            "preemptions": sum(1 for b in bindings if b.nominated_node is not None),
            "evictions": sum(len(b.victims) for b in bindings)}
