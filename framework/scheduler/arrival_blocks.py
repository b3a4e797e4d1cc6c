"""Arrivals in blocks: pods that arrive one after another, each into an idle
scheduler, placed by one compiled call (``Framework.place_block``) with the
outcomes, queue bookkeeping and events each pod's own arrival and cycle
would have left, at its own arrival time.

An embedding simulation (``Simulation``) hands the scheduler the arrivals it
has up to its next other event; ``schedule_arrivals`` takes the longest
prefix it can place as a block and leaves the rest.  Equivalence holds
because nothing but the arrival itself happens between two of them:
activeQ and backoffQ are empty, no pod waits in Permit, is nominated,
terminating, assumed with a TTL or due to bind, and the unschedulable pool
holds no pod that an arriving pod (``UnscheduledPod/Add``) would move back,
nor one that its flush interval would move back before the last arrival.
A pod that fits nowhere goes to the unschedulable pool as its cycle would
send it (the block's profile has no PostFilter, and none of its filters
asks to retry a pod it rejected when another pod arrives).
"""

from __future__ import annotations

import time

import numpy as np

from tensorsched.framework.runtime.clock import Clock, SimulatedClock
from tensorsched.framework.runtime.framework import num_feasible_nodes_to_find
from tensorsched.framework.state.cluster_state import ClusterState

from .binding import BindingCycle
from .counters import CycleCounters
from .events import BOUND, Binding, EventBus, Outcomes
from .metrics import ARRIVAL_BLOCK_PATH, MetricsRecorder
from .profiles import Profiles
from .queue import UNSCHEDULED_POD_ADD, SchedulingQueue
from .runs import CompiledRuns
from .schedule_one import SchedulingCycle


class ArrivalBlocks:
    """Arrivals placed as blocks (module doc) on ``state`` by their
    profile's Framework (``profiles``), when ``queue``, ``binding``,
    ``cycle`` (its terminating victims) and ``runs`` (whether pods may be
    batched) say the scheduler is idle; outcomes, ``counters``, metrics and
    events as each pod's own arrival and cycle would have left them."""

    def __init__(self, state: ClusterState, clock: Clock, queue: SchedulingQueue,
                 profiles: Profiles, cycle: SchedulingCycle, binding: BindingCycle,
                 runs: CompiledRuns, counters: CycleCounters, metrics: MetricsRecorder,
                 events: EventBus, outcomes: Outcomes, *, seed: int = 0):
        self.state = state
        self.clock = clock
        self.queue = queue
        self.profiles = profiles
        self.cycle = cycle
        self.binding = binding
        self.runs = runs
        self.counters = counters
        self.metrics = metrics
        self.events = events
        self.outcomes = outcomes
        self.seed = seed
        self._refused: dict = {}     # framework id -> node layout it had no block form on

    def _idle(self, until: float) -> bool:
        """Whether arrivals up to time ``until`` can be placed as a block
        (module doc)."""
        q = self.queue
        if not (self.runs.batch and self.runs.batching() and self.binding.assume_ttl is None
                and not self.cycle.terminating and len(q) == len(q.unschedulable)):
            return False
        pool = q.unschedulable
        if not pool:
            return True
        if any(q.interest.interested(plugins, UNSCHEDULED_POD_ADD) for plugins in pool.groups):
            return False
        if q.max_in_unschedulable != float("inf"):
            oldest = min(pi.timestamp for pi in pool.values())
            if until >= oldest + q.max_in_unschedulable:
                return False
        return True

    def _layout(self) -> tuple:
        st = self.state
        return (st.layout_version, st.epoch, st.n_rows, st.num_nodes)

    def block_ready(self, pod, at: float) -> bool:
        """A quick test before a caller gathers arrivals from time ``at``
        for ``schedule_arrivals``: the pod's profile has a block form with
        every node scored and the scheduler is idle."""
        profiles = self.profiles
        if pod.scheduler_name not in profiles.names:
            return False
        fw = profiles.of(pod)
        n = self.state.num_nodes
        refused = self._refused.get(id(fw))
        if refused is not None and refused == self._layout():
            return False
        if fw.block_setup is not None and self.queue.interest.interested(
                frozenset(p.name for p in fw.filters if getattr(p, "reason_bits", 0)),
                UNSCHEDULED_POD_ADD):
            # a pod failing in the block would be moved back by the next
            # arrival: no block for this profile
            self._refused[id(fw)] = self._layout()
            return False
        return (fw.block_setup is not None and n > 0
                and num_feasible_nodes_to_find(fw.percentage, n) >= n and self._idle(at))

    def schedule_arrivals(self, pods: list, times, on_outcome=None) -> np.ndarray:
        """Place ``pods`` (resolved PodRecords, pending, in arrival order)
        arriving at ``times`` (seconds, non-decreasing, the first >= now) as
        a block when possible: the rows of the pods handled, a prefix of
        them ([k] int64, -1 for a pod left unschedulable; k = 0 when none
        could be).  The clock ends at the last handled pod's time;
        ``on_outcome(i)`` is called with the clock at pod i's time before
        its outcome events go out (the simulation's Arrived event)."""
        none = np.zeros(0, np.int64)
        if not pods:
            return none
        times = np.asarray(times, np.float64)
        limit = float(times[-1])
        q = self.queue
        if q.max_in_unschedulable != float("inf"):
            # a pod failing in the block must not flush back before its end
            limit_rows = int(np.searchsorted(times, times[0] + q.max_in_unschedulable,
                                             side="left"))
            pods, times = pods[:limit_rows], times[:limit_rows]
            limit = float(times[-1]) if len(times) else limit
        if not pods or not self._idle(limit):
            return none
        name = pods[0].scheduler_name
        profiles = self.profiles
        if name not in profiles.names:
            return none
        count = 0
        seen: set = set()
        state = self.state
        for pod in pods:
            if (pod.scheduler_name != name or pod.node_name or not profiles.gate_free(pod)
                    or pod.key in q or pod.key in state.pods or pod.key in seen):
                break
            seen.add(pod.key)
            count += 1
        if count == 0:
            return none
        fw = profiles.of(pods[0])
        counters = self.counters
        t0 = time.perf_counter()
        got = fw.place_block(state, pods[:count], seed=self.seed,
                             attempt=counters.attempts, start_index=counters.next_start_index)
        if got is None:
            # the profile or the state has no block form: not asked again
            # until the nodes change
            self._refused[id(fw)] = self._layout()
            return none
        rows = got.rows
        k = rows.shape[0]
        if k == 0:
            return none
        counters.attempts += k
        self.metrics.block_pods += k
        wall = (time.perf_counter() - t0) / k
        self.metrics.timer.add("filter_score", wall * k)
        self._outcomes(pods[:k], times[:k], rows, got.diagnoses, wall, on_outcome)
        return rows

    def _outcomes(self, pods, times, rows, diagnoses, wall, on_outcome) -> None:
        """Each pod's outcome in order at its own time (see
        ``CompiledRuns._bind_run`` and ``SchedulingCycle.attempt``): queue
        cycles, bindings, unschedulable entries, events."""
        q = self.queue
        clock = self.clock
        events = self.events
        metrics = self.metrics
        scheduled, bound = events.listening("Scheduled"), events.listening("Bound")
        failed_ev = events.listening("FailedScheduling")
        # a placed pod needs the clock at its time only for its events
        timed = scheduled or bound or on_outcome is not None
        nodes = self.state.nodes
        outcomes = self.outcomes
        log = self.binding.bound_log
        placed = 0
        set_clock = SimulatedClock.set if clock.simulated else None
        for i, row in enumerate(rows.tolist()):
            pod = pods[i]
            key = pod.key
            if row < 0 or timed:
                t = float(times[i])
                if set_clock is not None and t > clock.now():
                    set_clock(clock, t)
            if q.unschedulable:             # the arrival's UnscheduledPod/Add (moves none)
                q.move_request_cycle = q.scheduling_cycle
            if on_outcome is not None:
                on_outcome(i)
            if row >= 0:
                q.scheduling_cycle += 1
                node = nodes[row].name
                outcomes[key] = node
                placed += 1
                if scheduled:
                    events.emit("Scheduled", key, node)
                if bound:
                    events.emit("Bound", key, node)
                if log is not None:
                    log.pop(key, None)
                    log[key] = BOUND
                continue
            msg, plugins = diagnoses[i]
            pi = q.add(pod)
            q.pop()
            q.requeue(pi, plugins)
            metrics.result("unschedulable")
            if failed_ev:
                events.emit("FailedScheduling", key, None, msg)
            outcomes[key] = Binding(key, None, msg)
        if set_clock is not None and float(times[-1]) > clock.now():
            set_clock(clock, float(times[-1]))
        if placed:
            metrics.results["scheduled"] = metrics.results.get("scheduled", 0) + placed
            metrics.placed(ARRIVAL_BLOCK_PATH, placed)
            metrics.e2e_latencies.extend([0.0] * placed)
            metrics.run_lengths.append(placed)
        metrics.latencies.extend([wall] * len(pods))
