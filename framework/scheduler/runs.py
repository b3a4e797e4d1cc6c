"""Runs of alike pods scheduled in one compiled call (upstream's
opportunistic batching, KEP-5598, extended to every plugin that can sign a
pod).

The queue hands the loop the longest run of consecutive heads (QueueSort
order) that share a signature (``Framework.signature``: the compiled query's
signature and every deciding plugin's ``sign``): usually a stretch of a lane
block (``queue_lane``: pods added together, kept as columns, without a
QueuedPodInfo per pod).  ``Framework.place_run``
then places the run in one call exactly as one cycle after another would
(same nodes, same tie-breaks: attempt numbers advance per pod), accounts and
records each pod on its node, and stops before the first pod that fits
nowhere; that pod takes the usual cycle (diagnosis, PostFilter, preemption)
and the rest go back to the head of the queue untouched.

A run is not formed (the pod is scheduled on its own) when anything must
happen between two pods: pods nominated by preemption, pods waiting in
Permit, a binder that may fail, a binding-cycle plugin that is not
``run_safe``, a plugin that cannot sign the pod, a host plugin without a
compiled form for it (the GPU plugins, user plugins), a host plugin that
skipped the pod without promising the skip holds for the run
(``RunSkipPlugin``), or a backend without compiled runs (numpy).

The pod-to-pod plugins, which upstream's batching refuses, run inside the
compiled call: PodTopologySpread's DoNotSchedule constraints and
InterPodAffinity's required (anti-)affinity as per-domain rules
(``kernels.domain_rules``: the run counts each placed pod in its node's
domain and re-tests the domains whose answer flipped), their scores
(ScheduleAnyway spread, System defaults included, and pod affinity weights)
kept over score classes with every node scored (``kernels.fused._core``),
else recomputed over the scanned nodes for each pod.  A run's outcomes are
recorded in bulk (``Scheduler.outcomes`` keeps its bindings as node names,
read back as Bindings); its events go out after it, per pod and only when
someone listens, in the order one-by-one cycles would send them; a
subscriber that must see the state between two pods uses
``Scheduler(batch=False)``.

A head that forms no run (a pod of its own) starts a block of unlike pods
when its profile has a block form through the queue
(``runtime.blocks.place_block`` with ``stop_at_failure``: GPU-sharing
profiles, PostFilter plugins allowed): the heads of its profile are popped
as one stretch, placed in one compiled call as their cycles one after
another would place them, and the block stops before the first pod that
fits nowhere or cannot join it; that pod takes the usual cycle and the rest
go back untouched, as for a run.  A stretch shorter than ``_MIN_STRETCH``
forms no block: its first head takes its own cycle (``short_heads``).
"""

from __future__ import annotations

import time
from itertools import repeat

from tensorsched.framework.runtime.blocks import MAX_BLOCK, place_block, queue_block_setup
from tensorsched.framework.runtime.clock import Clock
from tensorsched.framework.runtime.framework import num_feasible_nodes_to_find
from tensorsched.framework.state.cluster_state import ClusterState

from .binding import BindingCycle
from .counters import CycleCounters
from .events import BOUND, Binding, EventBus, Outcomes
from .failure_memory import FailureMemory, failure_stamp, nominated_in
from .metrics import GPU_BLOCK_PATH, MetricsRecorder
from .nominator import Nominator
from .profiles import Profiles
from .queue import UNSCHEDULABLE, SchedulingQueue
from .run_keys import RunKeys
from .schedule_one import SchedulingCycle

_MIN_BLOCK = 64                 # heads a block pops at least
_MAX_BLOCK_BACKOFF = 64         # heads on their own after blocks that placed nothing
# heads of one profile a block needs: a shorter stretch takes its own
# cycles, as a block's setup costs about as much as two or three cycles
# (e.g. arrivals between departures, which reach the queue one at a time)
_MIN_STRETCH = 4


class CompiledRuns:
    """Runs of alike heads of ``queue`` (the queue forms them by
    ``run_keys``) placed by one compiled call of their profile's Framework
    (module doc), advancing ``counters`` as one cycle per pod would; the pod
    that ends a run, and a head that forms none, gets ``cycle``'s one-pod
    cycle; placed pods go through ``binding``'s bookkeeping in bulk (their
    plugins are ``run_safe``).  ``batch`` turns runs on, ``max_run`` caps
    their length."""

    def __init__(self, state: ClusterState, clock: Clock, queue: SchedulingQueue,
                 run_keys: RunKeys, profiles: Profiles, cycle: SchedulingCycle,
                 binding: BindingCycle, counters: CycleCounters, metrics: MetricsRecorder,
                 events: EventBus, outcomes: Outcomes, nominator: Nominator, *,
                 failure_memory: FailureMemory | None = None, batch: bool = True,
                 max_run: int = 1_000_000, seed: int = 0):
        self.state = state
        self.clock = clock
        self.queue = queue
        self.run_keys = run_keys
        self.profiles = profiles
        self.cycle = cycle
        self.binding = binding
        self.counters = counters
        self.metrics = metrics
        self.events = events
        self.outcomes = outcomes
        self.nominator = nominator
        self.failure_memory = failure_memory
        self.batch = bool(batch)
        self.max_run = int(max_run)
        self.seed = seed
        self._no_block: dict = {}       # framework id -> node layout it had no block form on
        # how many heads the next block pops: halved towards where the last
        # one stopped, doubled after one that took them all (a block that
        # ends early puts the rest back, and pays its per-block setup anew)
        self._block_limit = MAX_BLOCK
        # after a block whose head could not be placed (it fits nowhere, as
        # the next heads then often do), this many heads take their own
        # cycles first, doubling while blocks keep placing nothing
        self._block_skip = 0
        self._block_backoff = 0
        # heads that took their own cycle, not a block, their stretch being
        # shorter than _MIN_STRETCH
        self.short_heads = 0

    def batching(self) -> bool:
        """Runs may be formed now: nothing must happen between two pods
        (module doc)."""
        binding = self.binding
        return (self.batch and not self.nominator and not binding.waiting
                and not binding.to_bind and not binding.may_fail()
                and self.cycle.choose_node is None)

    def schedule_run(self, collect: bool = True) -> list:
        """Pop the longest run of alike heads and schedule it: the Bindings
        (``collect``; else a list as long, of keys); [] when activeQ is
        empty."""
        queue, cycle, counters, run_keys = self.queue, self.cycle, self.counters, self.run_keys
        run = queue.pop_run(None, self.max_run)
        if run is None:
            return []
        first = run.first
        recalled = run_keys.recalled
        if recalled is not None:
            run_keys.recalled = None
            if (recalled[0] is first.pod
                    and recalled[2] == failure_stamp(self.state, self.nominator)
                    and recalled[3] == counters.next_start_index):
                return self._fail_run(run, recalled[1], collect)
        if len(run) == 1:
            got = self._schedule_block(run, collect)
            if got is not None:
                return got
            return [cycle.attempt(first.pod, first)]
        t0 = time.perf_counter()
        fw = self.profiles.of(first.pod)
        pods = run.pods
        got = fw.place_run(self.state, pods, seed=self.seed,
                           attempt=counters.attempts, start_index=counters.next_start_index)
        if got is None:
            run_keys.unrunnable.add(run_keys.key(first.pod))
            queue.unpop(run, 1)
            return [cycle.attempt(first.pod, first)]
        rows, counters.next_start_index = got
        placed = rows.shape[0]
        counters.attempts += placed
        t1 = time.perf_counter()
        metrics = self.metrics
        metrics.timer.add("filter_score", t1 - t0)
        # (nothing placed: no binding stage, as for the lone cycle the
        # failing head then gets -- or a remembered failure instead of it)
        out = self._bind_run(run, placed, rows, fw.last_run_path, collect) if placed else []
        t2 = time.perf_counter()
        if placed:
            metrics.timer.add("reserve_bind", t2 - t1)
            metrics.latencies.extend([(t2 - t0) / placed] * placed)
            metrics.run_lengths.append(placed)
        if placed < len(run):
            failed = queue.info(run, placed)
            queue.unpop(run, placed + 1)
            out.append(cycle.attempt(failed.pod, failed))
        return out

    def _block_form(self, pod):
        """The pod's Framework when its profile may place a block through
        the queue now (every node scored, a block form, not refused on this
        node layout), else None."""
        profiles, state = self.profiles, self.state
        if pod.scheduler_name not in profiles.names:
            return None
        fw = profiles.of(pod)
        n = state.num_nodes
        if (n == 0 or num_feasible_nodes_to_find(fw.percentage, n) < n
                or self._no_block.get(id(fw)) == self._layout()
                or queue_block_setup(fw) is None):
            return None
        return fw

    def _layout(self) -> tuple:
        st = self.state
        return (st.layout_version, st.epoch, st.n_rows, st.num_nodes)

    def _schedule_block(self, run, collect: bool) -> list | None:
        """A block of unlike heads of one profile from ``run``'s lone head
        (module doc): the Bindings (or keys) of the pods it handled, the
        pod that ended it scheduled by its own cycle; None (``run`` as it
        was) when its profile has no block form or the head cannot join
        one."""
        first = run.first
        if self._block_skip:
            self._block_skip -= 1
            return None
        queue, counters = self.queue, self.counters
        if queue.active.head()[0] is None:      # a stretch of one (_MIN_STRETCH)
            self.short_heads += 1
            return None
        fw = self._block_form(first.pod)
        if fw is None:
            return None
        name = first.pod.scheduler_name

        def same_profile(pod):
            return name if pod.scheduler_name == name else None
        queue.unpop(run, 0)
        run = queue.pop_run(same_profile, min(self.max_run, self._block_limit))
        first = run.first
        if len(run) < _MIN_STRETCH:
            self.short_heads += 1
            queue.unpop(run, 1)
            return [self.cycle.attempt(first.pod, first)]
        t0 = time.perf_counter()
        got = place_block(fw, self.state, run.pods, seed=self.seed, attempt=counters.attempts,
                          start_index=counters.next_start_index, stop_at_failure=True)
        placed = 0 if got is None else got.rows.shape[0]
        self._block_limit = (min(2 * self._block_limit, MAX_BLOCK) if placed == len(run)
                             else max(2 * placed, _MIN_BLOCK))
        if placed == 0:
            self._block_backoff = min(2 * self._block_backoff or 1, _MAX_BLOCK_BACKOFF)
            self._block_skip = self._block_backoff
            if got is None:         # no block form on these nodes: not asked again
                self._no_block[id(fw)] = self._layout()
            queue.unpop(run, 1)
            return [self.cycle.attempt(first.pod, first)]
        self._block_backoff = 0
        rows = got.rows
        counters.attempts += placed
        t1 = time.perf_counter()
        metrics = self.metrics
        metrics.timer.add("filter_score", t1 - t0)
        out = self._bind_run(run, placed, rows, GPU_BLOCK_PATH, collect)
        t2 = time.perf_counter()
        metrics.timer.add("reserve_bind", t2 - t1)
        metrics.latencies.extend([(t2 - t0) / placed] * placed)
        metrics.run_lengths.append(placed)
        if placed < len(run):
            nxt = queue.info(run, placed)
            queue.unpop(run, placed + 1)
            out.append(self.cycle.attempt(nxt.pod, nxt))
        return out

    def _fail_run(self, run, got, collect: bool = True) -> list:
        """Alike heads that fail again (``failure_memory``): each gets the
        end of a failed cycle (``SchedulingCycle.fail_again``) in queue
        order, with the scheduling cycle number its own pop would have had,
        as one cycle after another would on an unchanged simulated clock
        (each goes to the unschedulable pool; the next head is the next of
        the run).  The stretch stops, its rest put back untouched, before a
        pod with a nomination of its own or once the cluster or the queue's
        pods changed (a subscriber's doing), and after a pod that did not go
        to the pool.  As for a run, a subscriber that must act between two
        pods otherwise uses ``Scheduler(batch=False)``."""
        queue, counters, metrics = self.queue, self.counters, self.metrics
        stamp = failure_stamp(self.state, self.nominator)
        state, nominator = self.state, self.nominator
        top, first_cycle = queue.scheduling_cycle, run.first.cycle
        block, rest = run.block, run.rest
        n = len(run)
        done = n
        out = []
        append = out.append
        info, requeue = queue.info, queue.requeue
        emit, outcomes, results = self.events.emit, self.outcomes, metrics.results
        msg, rejectors, advance = got.message, got.rejectors, got.advance
        # pods added to or deleted from the queue by a subscriber meanwhile
        # cut the stretch too (the next head may then be another pod)
        changes = queue.changes()
        t0 = time.perf_counter()
        for i in range(n):
            if i:
                obj = (block.pods.manifests[run.start + i - 1] if block is not None
                       else rest[i - 1].pod.obj)
                if (nominated_in(obj) or (state.version, nominator.version) != stamp
                        or queue.changes() != changes):
                    done = i
                    break
            pi = info(run, i)
            queue.scheduling_cycle = first_cycle + i
            # the end of its failed cycle, as ``fail_again`` (latencies,
            # the stage timer and the memory's hits in bulk below)
            counters.attempts += 1
            if advance:
                counters.next_start_index = (counters.next_start_index + advance) % state.num_nodes
            results["unschedulable"] = results.get("unschedulable", 0) + 1
            requeue(pi, rejectors)
            key = pi.key
            emit("FailedScheduling", key, None, msg)
            b = Binding(key, None, msg)
            outcomes[key] = b
            append(b if collect else key)
            if pi.where != UNSCHEDULABLE:
                done = i + 1
                break
        count = min(done, n)
        dt = time.perf_counter() - t0
        self.failure_memory.hits += count
        metrics.timer.add("diagnosis", dt)
        metrics.latencies.extend([dt / count] * count)
        queue.scheduling_cycle = top
        if done < n:
            queue.unpop(run, done)
        return out

    def _bind_run(self, run, placed: int, rows, path: str, collect: bool = True) -> list:
        """The binding cycles of the first ``placed`` pods of a run (its
        plugins are ``run_safe``: nothing to call), in order: outcomes,
        latencies and events; ``path`` placed them (``metrics.PLACEMENT_PATHS``).
        Returns the Bindings (``collect``), else the pods' keys."""
        state, now = self.state, self.clock.now()
        binding = self.binding
        names = state.node_names[rows].tolist()
        keys = run.keys[:placed]
        self.queue.done_run(run, placed)
        events = self.events
        # asked once per run: no subscriber appears between two pods of it
        scheduled, bound = events.listening("Scheduled"), events.listening("Bound")
        ttl = binding.assume_ttl
        if ttl is not None:
            binding.assumed.update(zip(keys, repeat(now + ttl)))
        preempted = binding.preempted_for
        outcomes = self.outcomes
        if scheduled or bound or (preempted and not preempted.keys().isdisjoint(keys)):
            emit = events.emit
            for key, node in zip(keys, names):
                b = Binding(key, node)
                if scheduled:
                    emit("Scheduled", key, node)
                pre = preempted.pop(key, None) if preempted else None
                if pre is not None:
                    b.nominated_node, b.victims = pre[0], list(pre[1])
                if bound:
                    emit("Bound", key, node)
                outcomes[key] = b if pre is not None else node
            logged = repeat(BOUND)
        else:
            # the Binding is the node's name alone: one key -> node dict,
            # merged into both (a dict merges into another at C level with
            # its hashes, and is copied whole into an empty one)
            logged = dict(zip(keys, names))
            outcomes.update(logged)     # as ``Outcomes.bound``: node names
        log = binding.bound_log
        if log is not None:
            if log and not log.keys().isdisjoint(keys):
                drop = log.pop
                for key in keys:
                    drop(key, None)     # re-insert: dict order = outcome order
            log.update(logged if type(logged) is dict else zip(keys, logged))
        metrics = self.metrics
        if run.block is not None and placed:
            # a stretch's pods entered the queue together
            metrics.e2e_latencies.append(now - run.first.initial_timestamp)
            metrics.e2e_latencies.extend(repeat(now - run.block.now, placed - 1))
        else:
            metrics.e2e_latencies.extend([now - t for t in run.initial_timestamps()[:placed]])
        metrics.results["scheduled"] = metrics.results.get("scheduled", 0) + len(keys)
        metrics.placed(path, len(keys))
        if collect:
            return [outcomes[key] for key in keys]
        return keys
