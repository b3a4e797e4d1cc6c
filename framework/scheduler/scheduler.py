"""The Scheduler: kube-scheduler's loop on columnar state (upstream
``scheduler.go``), its parts in one module each as upstream splits them:

- ``queue``: activeQ by QueueSort, backoffQ, the unschedulable pool moved by
  cluster events, the nominator;
- ``schedule_one``: one scheduling cycle (Filter/Score with nominated pods,
  PostFilter/preemption, the FailedScheduling diagnosis);
- ``binding``: assume, Reserve, Permit (waiting pods), PreBind, Bind, PostBind;
- ``event_handlers``: nodes and pods added, updated, deleted;
- ``events`` and ``metrics``: what it reports and measures.

Two ways to drive it:

- ``schedule_one(pod)`` / ``run(pods)`` (the benchmarks): one attempt per
  pod, in queue order, the caller owning pods that fail.  A pod that fits
  nowhere runs the PostFilter plugins (DefaultPreemption): when a node is
  nominated the victims are deleted at once and the pod is retried
  immediately on its nominated node (the simulator's shortcut for "victims
  gone, preemptor back from the queue"); otherwise it gets kube-scheduler's
  FailedScheduling message, preemption's message appended as upstream does.
- the embedding API: ``add_pod``/``update_pod``/``delete_pod``,
  ``add_node``/``update_node``/``delete_node`` (each a cluster event for
  the queue), ``schedule_one()`` (pop the head of the scheduling queue),
  ``run_until_idle()``, ``schedule_pending(pods)`` (what ``tensorsched
  schedule`` runs), ``advance(seconds)`` on the clock, ``subscribe(event,
  callback)`` and ``metrics()``.  Here a preemptor is nominated
  (``status.nominatedNodeName``), its victims are deleted (after
  ``termination_grace_seconds`` on the clock, marked terminating with a
  DisruptionTarget condition meanwhile) and it goes back to the queue; it
  binds on a later attempt once room exists.

With ``assume_ttl`` set, a bound pod stays assumed until confirmed
(``confirm(key)`` or ``update_pod`` of the pod with its nodeName: the
informer's event upstream); unconfirmed ones expire on the clock, are
forgotten and requeued (upstream's cache drops them; a simulator without an
API server treats the binding as lost).  Default: confirmed at bind.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from types import SimpleNamespace

from tensorsched.framework.arguments import Arguments, shown
from tensorsched.framework.records.pod_columns import PodColumns
from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.runtime.clock import Clock, SimulatedClock
from tensorsched.framework.runtime.framework import Framework
from tensorsched.framework.runtime.gc_pacing import few_collections
from tensorsched.framework.runtime.status import Status

from .arrival_blocks import ArrivalBlocks
from .binding import BindingCycle, WaitingPod
from .cluster import Cluster, pod_columns_from
from .event_handlers import EventHandlers
from .events import BOUND, EVENTS, OUTCOME_EVENTS, Binding, EventBus, Outcomes
from .failure_memory import FailureMemory
from .metrics import Metrics, StageTimer
from .queue import (
    DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS,
    POD_DELETE,
    Nominator,
    QueuedPodInfo,
    SchedulingQueue,
)
from .runs import CompiledRuns
from .schedule_one import SchedulingCycle


class Scheduler(EventHandlers, SchedulingCycle, BindingCycle, CompiledRuns, ArrivalBlocks,
                Metrics):
    """Drives the cycles for one cluster on one backend.

    ``next_start_index`` rotates as upstream's nextStartNodeIndex: after each
    cycle it advances by the number of nodes processed."""

    def __init__(self, cluster: Cluster, backend: str = "numpy", seed: int = 0, *,
                 clock: Clock | None = None, binder_fault_rate: float = 0.0,
                 binder: Callable | None = None, assume_ttl: float | None = None,
                 termination_grace_seconds: float = 0.0,
                 pod_initial_backoff_seconds: float | None = None,
                 pod_max_backoff_seconds: float | None = None,
                 pod_max_in_unschedulable_seconds: float = DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS,
                 batch: bool = True, max_run: int = 1_000_000,
                 remember_failures: bool = True):
        args = Arguments("Scheduler")
        args.instance("cluster", cluster, Cluster, "a Cluster (build_cluster)")
        backend, seed = args.backend(backend), args.seed(seed)
        args.instance("clock", clock, Clock, "a Clock or None", optional=True)
        binder_fault_rate = args.number("binder_fault_rate", binder_fault_rate, 0.0, 1.0)
        args.callback("binder", binder, optional=True)
        assume_ttl = args.number("assume_ttl", assume_ttl, 0.0, above=True, optional=True,
                                 infinite=True, unit="seconds")
        for name, value, optional in (
                ("termination_grace_seconds", termination_grace_seconds, False),
                ("pod_initial_backoff_seconds", pod_initial_backoff_seconds, True),
                ("pod_max_backoff_seconds", pod_max_backoff_seconds, True),
                ("pod_max_in_unschedulable_seconds", pod_max_in_unschedulable_seconds, False)):
            args.number(name, value, 0.0, optional=optional, infinite=True,
                        unit="seconds")
        batch = args.flag("batch", batch)
        max_run = args.integer("max_run", max_run, 1)
        remember_failures = args.flag("remember_failures", remember_failures)
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
        self.events = EventBus(self.clock)
        self._handled: set = set()
        self._fw_by_name: dict[str, Framework] = {}      # schedulerName -> its Framework
        self.preempted_for: dict[str, tuple] = {}      # key -> (node, victims)
        self.outcomes: Outcomes = Outcomes()           # key -> latest outcome
        self._bound_log: dict | None = None     # schedule_pending's outcome order
        self._gates_only: dict = {}             # framework -> its PreEnqueue reads gates only
        self.cycle_nominated: tuple | list = ()        # keys added by _add_nominated now
        self.ignored: dict[str, str] = {}              # key -> why no profile takes it
        # Runs of alike pods in one compiled call (``runs``): on by default.
        self.batch = bool(batch)
        self.max_run = int(max_run)
        self.run_lengths: list[int] = []               # pods placed per compiled run
        self._unrunnable: set = set()                  # run keys that did not compile
        # Failures of alike pods on an unchanged cluster answered again
        # without a cycle (``failure_memory``): on by default; off (None),
        # every attempt runs its full cycle (what the tests compare with).
        self.failure_memory = FailureMemory() if remember_failures else None
        # (pod, failure, stamp, start index) ``_run_key`` last recalled
        self._recalled: tuple | None = None
        self._blocks_refused: dict = {}     # framework id -> node layout it had no block form on
        self.block_pods = 0                 # pods arrival blocks handled (``arrival_blocks``)
        self.longest_permit_wait = 0.0                 # seconds, the longest Permit Wait seen
        # Decision hook (the Gymnasium environment): when set, a cycle that
        # found a node binds the row ``choose_node(pod, fw, result)`` returns
        # (one that passed the filters) instead of the selected one; runs are
        # then off, so every pod gets its own cycle.
        self.choose_node: Callable | None = None
        # run_until_idle's (pods bound, clock) at its last progress, and the
        # wakeup it was heading to when a simulation paused it (resume)
        self._progress: tuple = (0, 0.0)
        self._wakeup: float | None = None
        self._profile_names = frozenset(p.scheduler_name for p in cluster.config.profiles)

    # ----------------------------------------------------------- plumbing
    def _fw(self, pod) -> Framework:
        fw = self._fw_by_name.get(pod.scheduler_name)
        if fw is not None:
            return fw
        fw = self.cluster.framework_for(pod, self.backend)
        self._fw_by_name[pod.scheduler_name] = fw
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
            (sort,) = fw.plugins_at("queueSort")
            self._queue = SchedulingQueue(
                self.clock, sort_plugin=sort,
                pre_enqueue=self._pre_enqueue, gate_free=self._gate_free,
                plugin_of=self._plugin_of,
                initial_backoff=self._backoff[0], max_backoff=self._backoff[1],
                max_in_unschedulable=self._max_in_unschedulable, nominator=self.nominator)
        return self._queue

    def _gate_free(self, pod: PodRecord) -> bool:
        """No PreEnqueue plugin of the pod's profile needs asking: it has no
        scheduling gates and every plugin there reads gates only or, asked
        ``lets_in(pod)`` (DynamicResources: the pod has no claims), admits
        it for sure."""
        if pod.scheduling_gates:
            return False
        fw = self._fw(pod)
        got = self._gates_only.get(fw)
        if got is None:
            # (every plugin reads gates only or can say per pod, the ones that can)
            plugins = [p for p in fw.plugins_at("preEnqueue") if hasattr(p, "pre_enqueue")]
            got = (all(getattr(p, "gates_only", False) or hasattr(p, "lets_in")
                       for p in plugins),
                   [p for p in plugins if hasattr(p, "lets_in")])
            self._gates_only[fw] = got
        free, askers = got
        return free and all(p.lets_in(pod) for p in askers)

    def _pre_enqueue(self, pod: PodRecord) -> Status:
        fw = self._fw(pod)
        gated = bool(pod.scheduling_gates)
        for p in fw.plugins_at("preEnqueue"):
            if hasattr(p, "pre_enqueue") and (gated or not getattr(p, "gates_only", False)):
                st = p.pre_enqueue(pod)
                if not st.ok:
                    return st if st.plugin else st.with_plugin(p.name)
        return Status.OK

    def _plugin_of(self, name: str):
        for fw in self.cluster.frameworks.values():
            if name in fw.plugins:
                return fw.plugins[name]
        return None

    def subscribe(self, event: str, callback: Callable) -> Callable:
        """Call ``callback(dict)`` on each ``event`` (one of ``events.EVENTS``,
        or "*" for all); returns a function that unsubscribes."""
        args = Arguments("Scheduler.subscribe")
        if not isinstance(event, str) or event not in EVENTS and event != "*":
            raise args.error("event", f"unknown event {shown(event)}; known: "
                             f"{', '.join(EVENTS)}, *")
        return self.events.subscribe(event, args.callback("callback", callback))

    def _emit(self, event: str, pod: str, node: str | None = None, message: str = "",
              **extra) -> None:
        self.events.emit(event, pod, node, message, **extra)

    def handles(self, pod) -> bool:
        """A profile of this scheduler has the pod's ``spec.schedulerName``."""
        if not isinstance(pod, PodRecord):
            raise Arguments("Scheduler.handles").error(
                "pod", f"must be a PodRecord, got {shown(pod)}")
        return pod.scheduler_name in self._profile_names

    def queue_order(self, pods: list[PodRecord]) -> list[PodRecord]:
        """Pods in activeQ order (the QueueSort plugin's order)."""
        return sorted(pods, key=self.queue.sort_key)

    def advance(self, seconds: float) -> None:
        """Move the (simulated) clock and fire what fell due."""
        seconds = Arguments("Scheduler.advance").number("seconds", seconds, 0.0,
                                                        unit="seconds")
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
            self._poll_prebind(now)
            for key, w in sorted(self.waiting.items(), key=lambda kv: kv[1].deadline):
                if w.deadline <= now and key in self.waiting and w.at_prebind < 0:
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
            if not isinstance(pod, PodRecord):
                raise Arguments("Scheduler.schedule_one").error(
                    "pod", f"must be a PodRecord or None, got {shown(pod)}")
            b = self._attempt(pod, None)
            if self._to_bind:
                self._drain()
            return b
        self._tick()
        return self._schedule_head()

    def _schedule_head(self) -> Binding | None:
        """Pop the head of activeQ and schedule it (``schedule_one`` after
        the timers fired)."""
        pi = self.queue.pop()
        if pi is None:
            return None
        b = self._attempt(pi.pod, pi)
        self._drain()
        return b

    def run(self, pods: list[PodRecord]) -> list[Binding]:
        """Schedule ``pods`` in queue order; returns one Binding per pod."""
        pods = Arguments("Scheduler.run").sequence("pods", pods, PodRecord, "a PodRecord",
                                                   "PodRecords")
        return [self.schedule_one(p) for p in self.queue_order(pods)]

    def run_until_idle(self, max_cycles: int = 1_000_000, *,
                       resume: bool = False, collect: bool = True) -> list[Binding]:
        """Pop and schedule until activeQ is empty; while pods back off,
        wait in Permit or victims terminate, a simulated clock jumps to the
        next of those times.  Pods left unschedulable stay aside.

        A simulated run also stops when nothing can change any more: no pod
        was bound for ``stall_horizon()`` seconds of clock and no victim is
        still terminating (e.g. a gang that can never reach its quorum keeps
        cycling through Permit waits and backoff, as it would forever in a
        real cluster; every pending pod has been retried more than once
        against the same cluster by then).

        ``resume=True`` continues a run that an embedding simulation paused
        (its clock refused to be set past the next event): the run goes on
        waiting for the time it was heading to, with its stall measured from
        where it started or last bound a pod, exactly as if never paused; a
        run that had ended (idle or stalled) stays ended until the caller
        changes something and calls without ``resume``.

        ``collect=False``: return [] (the outcomes are in ``outcomes`` and
        the events): a compiled run then builds no Binding per pod."""
        args = Arguments("Scheduler.run_until_idle")
        max_cycles = args.integer("max_cycles", max_cycles, 1)
        args.flag("resume", resume)
        args.flag("collect", collect)
        out = []
        self._unrunnable.clear()
        if resume:
            if self._wakeup is None:
                return out
            self._set_clock(self._wakeup)
        else:
            self._progress = (self.results.get("scheduled", 0), self.clock.now())
        bound, progress_at = self._progress
        for _ in range(max_cycles):
            if self.batch:
                self._tick()
                if self._batching():
                    done = self._schedule_run(collect)
                    self._drain()
                    if done:
                        if collect:
                            out.extend(done)
                        continue
                    b = None
                else:
                    b = self._schedule_head()
            else:
                b = self.schedule_one()
            if b is not None:
                out.append(b)
                continue
            t = self._next_wakeup()
            if t is None or not self.clock.simulated:
                break
            now_bound = self.results.get("scheduled", 0)
            if now_bound != bound:
                bound, progress_at = now_bound, self.clock.now()
                self._progress = (bound, progress_at)
            elif not self.terminating and t - progress_at > self.stall_horizon():
                break
            self._set_clock(t)
        return out

    def _set_clock(self, t: float) -> None:
        """Move the simulated clock to wakeup ``t``; ``_wakeup`` keeps ``t``
        while a simulation's clock refuses it (see ``resume``)."""
        self._wakeup = t
        self.clock.set(max(t, self.clock.now()))
        self._wakeup = None

    def _add_pending(self, pods: PodColumns) -> None:
        """``add_pod`` of each pod (resolved already: ``cluster.resolve``), in
        order; pending pods of a known profile without scheduling gates go
        into the queue at once (``add_many``) while no pod waits in the
        unschedulable pool (adding them one by one would then move nothing
        either)."""
        queue = self.queue
        names = self._profile_names
        if (not queue.unschedulable and not pods.has_node_names()
                and all(not p.scheduling_gates and p.scheduler_name in names
                        for p in pods.classes)):
            # the usual call: every pod goes in at once (pods of one class
            # share their gates and scheduler name; a node name is per pod)
            queue.add_many(pods)
            return
        batch: list[PodRecord] = []
        for pod in pods:
            if (not pod.node_name and not pod.scheduling_gates and pod.scheduler_name in names
                    and not queue.unschedulable):
                batch.append(pod)
                continue
            if batch:
                self.queue.add_many(batch)
                batch = []
            self.add_pod(pod)
        if batch:
            self.queue.add_many(batch)

    def stall_horizon(self) -> float:
        """Clock seconds without a binding after which a simulated run stops:
        twice the longest retry cycle (the unschedulable pool's flush, the
        longest backoff and the longest Permit wait seen)."""
        return 2.0 * (self._max_in_unschedulable + self._backoff[1] + self.longest_permit_wait)

    def schedule_pending(self, pods) -> tuple[list[Binding], list[dict]]:
        """Add ``pods`` (Pod dicts or PodRecords) to the scheduling queue and run until idle on the
        clock (what ``tensorsched schedule`` does).  Returns the final
        Binding of each pod, in the order those final outcomes happened
        (pods never attempted, e.g. gated ones, last, with their PreEnqueue
        message; pods of another scheduler, left alone, with ``ignored``),
        and the preemptions in the order they happened:
        ``{"preemptor", "nominated_node", "victims"}``."""
        with few_collections():
            return self._schedule_pending(pods)

    def _schedule_pending(self, pods) -> tuple[list[Binding], list[dict]]:
        if not isinstance(pods, PodColumns):
            pods = Arguments("schedule_pending").sequence(
                "pods", pods, items="Pod dicts or PodRecords (or a PodColumns)")
        pods = pod_columns_from(pods, self.cluster.resolve)   # the queue keeps columns
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

        # Bindings go to ``last`` directly (``_bound_log``): a run of alike
        # pods then builds no event for a caller that only wants outcomes.
        unsubscribes = [self.subscribe(event, on_event) for event in OUTCOME_EVENTS
                        if event != "Bound"]
        outer, self._bound_log = self._bound_log, last
        try:
            self._add_pending(pods)
            self.run_until_idle(collect=False)
        finally:
            self._bound_log = outer
            for unsubscribe in unsubscribes:
                unsubscribe()
        out = []
        append = out.append
        outcomes = self.outcomes
        raw = dict.__getitem__      # what Outcomes keeps: a Binding or a node name
        for key, e in last.items():
            if e is BOUND:
                b = raw(outcomes, key)          # carries the nomination and victims
                append(Binding(key, b) if type(b) is str else b)
            else:
                out.append(Binding(key, None, e["message"], e.get("nominated_node"),
                                   list(e.get("victims") or ())))
        infos = self.queue.infos
        left = pods.take([i for i, k in enumerate(pods.keys) if k not in last])
        for pod in self.queue_order(list(left)):
            if pod.key in self.ignored:
                out.append(Binding(pod.key, None, self.ignored[pod.key], ignored=True))
                continue
            pi = infos.get(pod.key)
            out.append(Binding(pod.key, None, (pi.gated_message if pi is not None else "")
                               or "not attempted"))
        return out, preemptions

