"""The Scheduler: kube-scheduler's loop on columnar state (upstream
``scheduler.go``), a facade over collaborators, one module each as upstream
splits them, each given what it uses when it is made:

- ``profiles``: the Framework of a pod's profile, PreEnqueue, QueueSort;
- ``queue``: activeQ by QueueSort, backoffQ, the unschedulable pool moved by
  cluster events (``nominator``: the pods preemption nominated);
- ``schedule_one``: one scheduling cycle (Filter/Score with nominated pods,
  PostFilter/preemption, the FailedScheduling diagnosis);
- ``binding``: assume, Reserve, Permit (waiting pods), PreBind, Bind, PostBind;
- ``runs`` and ``arrival_blocks``: alike pods, or arrivals, placed by one
  compiled call with the bookkeeping one cycle after another would leave;
- ``event_handlers``: nodes and pods added, updated, deleted;
- ``events`` and ``metrics``: what it reports and measures.

A pod goes down that list and never back up: the facade adds it to the
queue, pops it (alone or in a run) into a cycle, the cycle asks the
Framework (and its kernels) and hands a placed pod to binding.

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

from collections.abc import Callable

from tensorsched.framework.arguments import MAX_OBJECTS, Arguments, shown
from tensorsched.framework.records.pod_columns import PodColumns
from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.runtime.clock import Clock, SimulatedClock
from tensorsched.framework.runtime.framework import Framework
from tensorsched.framework.runtime.gc_pacing import few_collections

from .arrival_blocks import ArrivalBlocks
from .binding import BindingCycle
from .cluster import Cluster, pod_columns_from
from .counters import CycleCounters
from .event_handlers import EventHandlers
from .events import BOUND, EVENTS, OUTCOME_EVENTS, Binding, BindingList, EventBus, Outcomes
from .failure_memory import FailureMemory
from .metrics import MetricsRecorder
from .nominator import Nominator
from .profiles import Profiles
from .queue import DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS, SchedulingQueue
from .run_keys import RunKeys
from .runs import CompiledRuns
from .schedule_one import SchedulingCycle


class _Forward:
    """A facade attribute (or method) that lives in a collaborator: reads
    and writes go to ``<collaborator>.<name>``."""

    __slots__ = ("name", "part")

    def __init__(self, part: str, name: str | None = None):
        self.part = part
        self.name = name

    def __set_name__(self, owner, name: str) -> None:
        if self.name is None:
            self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return getattr(getattr(obj, self.part), self.name)

    def __set__(self, obj, value) -> None:
        setattr(getattr(obj, self.part), self.name, value)


class Scheduler:
    """Drives the cycles for one cluster on one backend.

    ``next_start_index`` rotates as upstream's nextStartNodeIndex: after each
    cycle it advances by the number of nodes processed.

    The collaborators (module doc) are public: ``profiles``, ``run_keys``,
    ``queue``, ``cycle``, ``binding``, ``runs``, ``blocks``, ``handlers``,
    ``counters`` and ``recorder`` (the metrics); the attributes and methods
    below that name one of them live there.  The Scheduler is also the
    ``Handle`` its plugins get (``runtime.handle``)."""

    # what every placement advances
    attempts = _Forward("counters")
    next_start_index = _Forward("counters")
    # the scheduling cycle's hooks
    cycle_nominated = _Forward("cycle")
    # Decision hook (the Gymnasium environment): when set, a cycle that
    # found a node binds the row ``choose_node(pod, fw, result)`` returns
    # (one that passed the filters) instead of the selected one; runs are
    # then off, so every pod gets its own cycle.
    choose_node = _Forward("cycle")
    terminating = _Forward("cycle")
    termination_grace_seconds = _Forward("cycle")
    # the binding cycle's pods and settings
    waiting = _Forward("binding")
    assumed = _Forward("binding")
    preempted_for = _Forward("binding")
    longest_permit_wait = _Forward("binding")
    binder = _Forward("binding")
    binder_fault_rate = _Forward("binding")
    assume_ttl = _Forward("binding")
    allow = _Forward("binding")
    reject = _Forward("binding")
    waiting_pods = _Forward("binding")
    # runs of alike pods and arrival blocks
    batch = _Forward("runs")
    max_run = _Forward("runs")
    block_ready = _Forward("blocks")
    schedule_arrivals = _Forward("blocks")
    # what it measures
    results = _Forward("recorder")
    timer = _Forward("recorder")
    plugin_seconds = _Forward("recorder")
    latencies = _Forward("recorder")
    preemption_latencies = _Forward("recorder")
    e2e_latencies = _Forward("recorder")            # clock seconds, enqueue -> bound
    preemptions = _Forward("recorder")
    evictions = _Forward("recorder")
    bind_failures = _Forward("recorder")
    run_lengths = _Forward("recorder")              # pods placed per compiled run
    block_pods = _Forward("recorder")               # pods arrival blocks handled
    placed_by = _Forward("recorder")                # placement path -> pods it placed
    runs_by = _Forward("recorder")                  # placement path -> calls that placed
    # the embedding API's cluster events
    ignored = _Forward("handlers")                  # key -> why no profile takes it
    add_node = _Forward("handlers")
    update_node = _Forward("handlers")
    delete_node = _Forward("handlers")
    add_pod = _Forward("handlers")
    update_pod = _Forward("handlers")
    delete_pod = _Forward("handlers")
    confirm = _Forward("handlers")

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
        self.state = cluster.state
        self.pod_groups = getattr(cluster.objects, "pod_groups", ())
        self.backend = backend
        self.seed = seed
        self.clock = clock or SimulatedClock()
        cfg = cluster.config
        self._max_backoff = float(pod_max_backoff_seconds if pod_max_backoff_seconds is not None
                                  else cfg.pod_max_backoff_seconds)
        self._max_in_unschedulable = float(pod_max_in_unschedulable_seconds)
        self.nominator = Nominator()
        self.events = EventBus(self.clock)
        self.outcomes: Outcomes = Outcomes()           # key -> latest outcome
        self.recorder = MetricsRecorder()
        # Failures of alike pods on an unchanged cluster answered again
        # without a cycle (``failure_memory``): on by default; off (None),
        # every attempt runs its full cycle (what the tests compare with).
        self.failure_memory = FailureMemory() if remember_failures else None
        self.counters = CycleCounters()
        self.profiles = Profiles(cluster, backend, self)
        self.run_keys = RunKeys(cluster.state, self.profiles, self.nominator, self.counters,
                                self.clock, failure_memory=self.failure_memory,
                                max_in_unschedulable=self._max_in_unschedulable)
        # the QueueSort plugin is the first profile's (upstream requires it
        # be the same in all): that profile's Framework is made here
        self.queue = SchedulingQueue(
            self.clock, sort_plugin=self.profiles.queue_sort(),
            pre_enqueue=self.profiles.pre_enqueue, gate_free=self.profiles.gate_free,
            plugin_of=self.profiles.plugin_of, run_key=self.run_keys.key,
            initial_backoff=float(pod_initial_backoff_seconds
                                  if pod_initial_backoff_seconds is not None
                                  else cfg.pod_initial_backoff_seconds),
            max_backoff=self._max_backoff, max_in_unschedulable=self._max_in_unschedulable,
            nominator=self.nominator)
        state, recorder = cluster.state, self.recorder
        events, outcomes = self.events, self.outcomes
        self.binding = BindingCycle(
            state, self.clock, self.queue, recorder, events, outcomes, self.nominator,
            binder=binder, binder_fault_rate=binder_fault_rate, seed=seed,
            assume_ttl=assume_ttl)
        self.cycle = SchedulingCycle(
            cluster, self.profiles, self.queue, self.binding, recorder, events, outcomes,
            self.nominator, self.clock, self.counters, seed=seed,
            failure_memory=self.failure_memory,
            termination_grace_seconds=termination_grace_seconds)
        # Runs of alike pods in one compiled call (``runs``): on by default.
        self.runs = CompiledRuns(
            state, self.clock, self.queue, self.run_keys, self.profiles, self.cycle,
            self.binding, self.counters, recorder, events, outcomes, self.nominator,
            failure_memory=self.failure_memory, batch=batch, max_run=max_run, seed=seed)
        self.blocks = ArrivalBlocks(
            state, self.clock, self.queue, self.profiles, self.cycle, self.binding, self.runs,
            self.counters, recorder, events, outcomes, seed=seed)
        self.handlers = EventHandlers(cluster, self.queue, self.profiles, self.binding,
                                      self.nominator)
        # run_until_idle's (pods bound, clock) at its last progress, and the
        # wakeup it was heading to when a simulation paused it (resume)
        self._progress: tuple = (0, 0.0)
        self._wakeup: float | None = None

    # ----------------------------------------------------------- plumbing
    def _fw(self, pod) -> Framework:
        return self.profiles.of(pod)

    def subscribe(self, event: str, callback: Callable) -> Callable:
        """Call ``callback(dict)`` on each ``event`` (one of ``events.EVENTS``,
        or "*" for all); returns a function that unsubscribes."""
        args = Arguments("Scheduler.subscribe")
        if not isinstance(event, str) or event not in EVENTS and event != "*":
            raise args.error("event", f"unknown event {shown(event)}; known: "
                             f"{', '.join(EVENTS)}, *")
        return self.events.subscribe(event, args.callback("callback", callback))

    def handles(self, pod) -> bool:
        """A profile of this scheduler has the pod's ``spec.schedulerName``."""
        if not isinstance(pod, PodRecord):
            raise Arguments("Scheduler.handles").error(
                "pod", f"must be a PodRecord, got {shown(pod)}")
        return pod.scheduler_name in self.profiles.names

    def queue_order(self, pods: list[PodRecord]) -> list[PodRecord]:
        """Pods in activeQ order (the QueueSort plugin's order)."""
        return sorted(pods, key=self.queue.sort_key)

    def queued_pods(self) -> list[PodRecord]:
        """The pods in the scheduling queue (``Handle``)."""
        return [pi.pod for pi in self.queue.infos.values()]

    def nominated_counted(self, pod: PodRecord):
        """A context inside which the pods nominated elsewhere with priority
        >= ``pod``'s are in the state on their nominated nodes, as a cycle
        for ``pod`` counts them (``cycle_nominated`` lists them)."""
        return self.cycle.nominated_counted(pod)

    def metrics(self) -> dict:
        """Attempts by result, per-stage and per-plugin seconds (host time),
        end-to-end latency in clock seconds (first enqueue -> bound), queue
        sizes, preemptions, evictions, binder failures."""
        binding = self.binding
        return self.recorder.report(self.queue.counts(), len(binding.waiting),
                                    len(binding.assumed), len(self.nominator.node_of))

    def advance(self, seconds: float) -> None:
        """Move the (simulated) clock and fire what fell due."""
        seconds = Arguments("Scheduler.advance").number("seconds", seconds, 0.0,
                                                        unit="seconds")
        self.clock.advance(seconds)
        self._tick()

    # ------------------------------------------------------------ timers
    def _tick(self) -> None:
        now = self.clock.now()
        # each step is a no-op while its collection is empty (asked per pod)
        cycle, binding = self.cycle, self.binding
        if cycle.terminating:
            cycle.terminate_due(now)
        if binding.waiting or binding.assumed:
            binding.expire(now)
        if binding.to_bind:
            binding.drain()

    def _next_wakeup(self) -> float | None:
        times = []
        t = self.queue.next_backoff_expiry()
        if t is not None:
            times.append(t)
        waiting = self.binding.waiting
        if waiting:
            times.append(min(w.deadline for w in waiting.values()))
        terminating = self.cycle.terminating
        if terminating:
            times.append(terminating[0][0])
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
            b = self.cycle.attempt(pod, None)
            if self.binding.to_bind:
                self.binding.drain()
            return b
        self._tick()
        return self.schedule_head()

    def schedule_head(self) -> Binding | None:
        """Pop the head of activeQ and schedule it (``schedule_one`` after
        the timers fired)."""
        pi = self.queue.pop()
        if pi is None:
            return None
        b = self.cycle.attempt(pi.pod, pi)
        if self.binding.to_bind:
            self.binding.drain()
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
        runs, results, cycle = self.runs, self.recorder.results, self.cycle
        self.run_keys.unrunnable.clear()
        if resume:
            if self._wakeup is None:
                return out
            self._set_clock(self._wakeup)
        else:
            # a fresh run recomputes its timers: the time a paused run was
            # heading to may be gone since (a pending pod deleted at the pause
            # leaves no backoff timer), and this run may end without pausing
            self._wakeup = None
            self._progress = (results.get("scheduled", 0), self.clock.now())
        bound, progress_at = self._progress
        for _ in range(max_cycles):
            if runs.batch:
                self._tick()
                if runs.batching():
                    done = runs.schedule_run(collect)
                    self.binding.drain()
                    if done:
                        if collect:
                            out.extend(done)
                        continue
                    b = None
                else:
                    b = self.schedule_head()
            else:
                self._tick()            # ``schedule_one()``, inline
                b = self.schedule_head()
            if b is not None:
                out.append(b)
                continue
            t = self._next_wakeup()
            if t is None or not self.clock.simulated:
                break
            now_bound = results.get("scheduled", 0)
            if now_bound != bound:
                bound, progress_at = now_bound, self.clock.now()
                self._progress = (bound, progress_at)
            elif not cycle.terminating and t - progress_at > self.stall_horizon():
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
        names = self.profiles.names
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
                queue.add_many(batch)
                batch = []
            self.handlers.add_pod(pod)
        if batch:
            queue.add_many(batch)

    def stall_horizon(self) -> float:
        """Clock seconds without a binding after which a simulated run stops:
        twice the longest retry cycle (the unschedulable pool's flush, the
        longest backoff and the longest Permit wait seen)."""
        return 2.0 * (self._max_in_unschedulable + self._max_backoff
                      + self.binding.longest_permit_wait)

    def schedule_pending(self, pods) -> tuple[BindingList, list[dict]]:
        """Add ``pods`` (Pod dicts or PodRecords) to the scheduling queue and run until idle on the
        clock (what ``tensorsched schedule`` does).  Returns the final
        Binding of each pod, in the order those final outcomes happened
        (pods never attempted, e.g. gated ones, last, with their PreEnqueue
        message; pods of another scheduler, left alone, with ``ignored``),
        and the preemptions in the order they happened:
        ``{"preemptor", "nominated_node", "victims"}``.  The Bindings come
        as an ``events.BindingList`` (a list in all but its type): those of
        pods that compiled runs bound are built when first read."""
        with few_collections():
            return self._schedule_pending(pods)

    def _schedule_pending(self, pods) -> tuple[BindingList, list[dict]]:
        if not isinstance(pods, PodColumns):
            # a cluster's bound (MAX_OBJECTS): pending pods past it, or an
            # endless iterator, are refused before any is read into the queue
            pods = Arguments("schedule_pending").sequence(
                "pods", pods, items="Pod dicts or PodRecords (or a PodColumns)",
                limit=MAX_OBJECTS)
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

        # Bindings go to ``last`` directly (``BindingCycle.bound_log``): a
        # run of alike pods then builds no event for a caller that only
        # wants outcomes.
        unsubscribes = [self.subscribe(event, on_event) for event in OUTCOME_EVENTS
                        if event != "Bound"]
        binding = self.binding
        outer, binding.bound_log = binding.bound_log, last
        try:
            self._add_pending(pods)
            self.run_until_idle(collect=False)
        finally:
            binding.bound_log = outer
            for unsubscribe in unsubscribes:
                unsubscribe()
        infos = self.queue.infos
        ignored = self.handlers.ignored
        keys = pods.keys
        # the usual end: every pod has an outcome (a C-level check first)
        left = (() if all(map(last.__contains__, keys))
                else list(pods.take([i for i, k in enumerate(keys) if k not in last])))
        tail = []
        for pod in self.queue_order(left):
            if pod.key in ignored:
                tail.append(Binding(pod.key, None, ignored[pod.key], ignored=True))
                continue
            pi = infos.get(pod.key)
            tail.append(Binding(pod.key, None, (pi.gated_message if pi is not None else "")
                                or "not attempted"))
        if set(map(type, last.values())) <= {str}:
            # every outcome a pod bound by a compiled run, without a
            # nomination (a C-level check): ``last`` becomes the list's own
            return BindingList.of_nodes(last, tail), preemptions
        out = []
        append = out.append
        outcomes = self.outcomes
        raw = dict.__getitem__      # what Outcomes keeps: a Binding or a node name
        for key, e in last.items():
            if type(e) is str:                  # bound by a run, no nomination
                append(Binding(key, e))
            elif e is BOUND:
                b = raw(outcomes, key)          # carries the nomination and victims
                append(Binding(key, b) if type(b) is str else b)
            else:
                append(Binding(key, None, e["message"], e.get("nominated_node"),
                               list(e.get("victims") or ())))
        out.extend(tail)
        return BindingList.holding(out), preemptions
