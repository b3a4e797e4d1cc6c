"""One scheduling cycle (upstream ``schedule_one.go``): the pods nominated
with equal or higher priority counted on their nodes, Filter/Score through
the profile's Framework, then assume-and-bind on the selected node, or
PostFilter (preemption: nominate, evict, requeue or retry) and the
FailedScheduling diagnosis.

Upstream's rule (RunFilterPluginsWithNominatedPods, addGENominatedPods in
the framework runtime): when node X is filtered for pod P, the pods
nominated to X whose priority is at least P's (never P itself) are added
to a copy of X's NodeInfo and of the PreFilter cycle state; the filters
run with them and, if they pass, once more without them.  Score runs
without them; DefaultPreemption's dry run (SelectVictimsOnNode) filters
with them the same way.

Here, where every such nominated pod is plain and the cycle reads only
node columns (the fused filters and scores, the victim search's
NodeResourcesFit / NodePorts) besides host plugins that count the
nominated pods per node themselves (PodTopologySpread, from
``runtime.nominated_pods``), the cycle reads the nominator's overlay
(``nominated_overlay``: the requested columns with those pods counted on
their own nodes, kept level by the changes since the last cycle): exactly
the per-node rule for these filters (more requests never let a node pass,
so the second pass changes nothing).  Otherwise (the pod has pod affinity,
another host plugin runs, a nominee is not plain, the cuda backend, a pod
waits in Permit) the nominated pods are added to the state around the
cycle and its PostFilter and removed right after.  Two documented
deviations remain while nominations are outstanding: the resource scores
see the nominated pods (upstream scores without them), and on the state
path PodTopologySpread / InterPodAffinity count them in the whole domain
(upstream: only when their own node is evaluated).  A row
whose nominated pods one cycle took out and the next put back as they
were, untouched in between, is not re-read by the preemption victim table
(``PodTable.keep_rows``).
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import time
from collections.abc import Callable
from contextlib import contextmanager

from tensorsched.framework.parsing.priorities import pod_priority
from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.preemption.evaluator import fits_on_row
from tensorsched.framework.runtime.clock import Clock
from tensorsched.framework.runtime.framework import Framework
from tensorsched.framework.runtime.nominated_pods import NOMINATED_PODS, NominatedPods
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.state.cluster_state import add_pods, remove_pods

from .binding import BindingCycle
from .cluster import Cluster
from .counters import CycleCounters
from .events import Binding, EventBus, Outcomes
from .failure_memory import FailureMemory, RememberedFailure, failure_stamp
from .metrics import MetricsRecorder
from .nominator import Nominator
from .profiles import Profiles
from .queue import POD_DELETE, QueuedPodInfo, SchedulingQueue


#: fused backends whose row caches keep a source with a ``cache_tag`` apart
OVERLAY_BACKENDS = frozenset({"numpy", "numba"})

#: a failed cycle's failure-memory key, taken at its end (``defer_failure_keys``)
_KEY_LATER = object()


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


class SchedulingCycle:
    """One pod's scheduling cycle: its profile's Framework (``profiles``)
    filters and scores the nodes of ``cluster``'s state with the nominated
    pods counted, then ``binding`` takes a placed pod; a pod that fits
    nowhere runs PostFilter (preemption: victims evicted on ``clock`` after
    ``termination_grace_seconds``) and goes back to ``queue`` with its
    diagnosis.  ``failure_memory`` (or None) answers failures of alike pods
    on an unchanged cluster without a pass over the nodes.

    Each cycle advances ``counters`` (the attempt number, where the next
    cycle starts).  It owns ``cycle_nominated`` (keys of the pods
    nominated elsewhere that the current cycle added to the state),
    ``terminating`` (a heap of (deadline, seq, key) of evicted pods still
    terminating) and ``choose_node``, the decision hook: when set, a cycle
    that found a node binds the row ``choose_node(pod, fw, result)``
    returns (one that passed the filters) instead of the selected one."""

    def __init__(self, cluster: Cluster, profiles: Profiles, queue: SchedulingQueue,
                 binding: BindingCycle, metrics: MetricsRecorder, events: EventBus,
                 outcomes: Outcomes, nominator: Nominator, clock: Clock,
                 counters: CycleCounters, *, seed: int = 0,
                 failure_memory: FailureMemory | None = None,
                 termination_grace_seconds: float = 0.0):
        self.cluster = cluster
        self.state = cluster.state
        self.profiles = profiles
        self.queue = queue
        self.binding = binding
        self.metrics = metrics
        self.events = events
        self.outcomes = outcomes
        self.nominator = nominator
        self.clock = clock
        self.seed = seed
        self.failure_memory = failure_memory
        self.termination_grace_seconds = float(termination_grace_seconds)
        self.counters = counters
        self.cycle_nominated: tuple | list = ()
        # The victim table need not re-read a row whose nominated pods a
        # cycle took out and the next put back as they were (``add_nominated``
        # tells it which): ``_cycle_rows`` row -> the records this cycle
        # added there, ``_parked`` what the last cycle took out.
        self.keep_nominated_rows = True
        self._cycle_rows: dict = {}
        self._parked = None
        self.choose_node: Callable | None = None
        # Cycles read the nominated pods from the nominator's overlay where
        # they may (``nominated_overlay``); False: always added to the state
        # (the oracle of the tests, the before of the benchmarks).
        self.use_overlay = True
        self.terminating: list = []                    # heap (deadline, seq, key)
        # A preemptor's victims (and the terminated ones of an instant) move
        # the queue once (``_evict``); False: a move request each (the
        # tests' oracle).
        self.batch_evictions = True
        # A cycle on a cluster for which no failure is remembered takes the
        # pod's failure-memory key only when it remembers the pod's failure
        # (``FailureMemory.holds``); False: always at the start (the oracle
        # of the tests).
        self.defer_failure_keys = True
        # A preemptor whose victim search proved it fits on the nominated
        # node once the victims are gone is bound there without checking
        # the row again (``_retry_proved``); False: always checked (the
        # oracle of the tests).
        self.trust_victim_search = True
        self._seq = itertools.count(1)

    # ------------------------------------------------------ nominated pods
    def nominated_overlay(self, fw: Framework, pod: PodRecord):
        """The nominator's overlay for ``pod``'s priority, level with the
        state and leaving ``pod`` out, when the cycle may read the nominated
        pods from it instead of the state (``nominated_overlay``): a fused
        backend whose row caches keep sources apart (numpy, numba), no pod
        of the cycle's own with pod affinity, no pod assumed while
        nominated (waiting in Permit), and every counted pod plain.  None:
        they are added to the state."""
        if (not self.use_overlay or fw.backend_name not in OVERLAY_BACKENDS
                or pod.pod_affinity or pod.pod_anti_affinity
                or self.binding.waiting):
            return None
        overlay = self.nominator.overlay(pod_priority(pod))
        return overlay if overlay.refresh(self.state, pod) else None

    def nominated_pods(self, pod: PodRecord) -> NominatedPods:
        """The pods nominated elsewhere with priority >= pod's, by the row
        of their nominated node, for the host plugins that count them per
        node (``runtime.nominated_pods``; gathered when one first asks)."""
        return NominatedPods(make=lambda: self._nominated_by_row(pod))

    def _nominated_by_row(self, pod: PodRecord) -> dict:
        state = self.state
        prio = pod_priority(pod)
        nominated = self.nominator.pods
        in_state = state.pods
        by_row = {}
        for node, keys in self.nominator.by_node.items():
            row = state.node_rows.get(node)
            if row is None:
                continue
            put = tuple(nominated[k] for k in keys
                        if k != pod.key and k not in in_state
                        and pod_priority(nominated[k]) >= prio)
            if put:
                by_row[row] = put
        return by_row

    def add_nominated(self, pod: PodRecord) -> list[str]:
        """Pods nominated elsewhere with priority >= pod's, added to the
        state on their nominated nodes for this cycle (at once:
        ``cluster_state.add_pods``)."""
        state = self.state
        prio = pod_priority(pod)
        added = []
        records, nodes = [], []
        rows: dict = {}
        befores: dict = {}
        parked, self._parked = self._parked, None
        version = state.row_version
        nominated = self.nominator.pods
        for node, keys in self.nominator.by_node.items():
            row = state.node_rows.get(node)
            if row is None:
                continue
            put = []
            for k in keys:
                if k == pod.key or k in state.pods:
                    continue
                other = nominated[k]
                if pod_priority(other) >= prio:
                    added.append(k)
                    put.append(other)
            if put:
                rows[row] = put
                befores[row] = int(version[row])
                records.extend(put)
                nodes.extend([node] * len(put))
        if records:
            add_pods(state, records, nodes)
        if parked is not None:
            kept = {}
            for row, put in rows.items():
                got = parked[2].get(row)
                # untouched since the same records left it: as the table read it
                if (got is not None and got[0] == befores[row] and len(got[1]) == len(put)
                        and all(a is b for a, b in zip(got[1], put))):
                    kept[row] = int(version[row])
            if kept and parked[0].syncs == parked[1]:
                parked[0].keep_rows(kept)
        self._cycle_rows = rows
        return added

    def remove_nominated(self, keys) -> None:
        """Take the nominated pods added for this cycle back out (at once:
        ``cluster_state.remove_pods``)."""
        self.cycle_nominated = ()
        if not keys and not self._cycle_rows:
            self._parked = None         # nothing was added: nothing to keep
            return
        state = self.state
        table = self.cluster.pod_table() if self.keep_nominated_rows else None
        # the table read every row as it is now: it may keep the rows the
        # next cycle restores
        level = table is not None and table.seen == state.version
        if keys:
            remove_pods(state, keys)
        rows, self._cycle_rows = self._cycle_rows, {}
        if level and rows:
            version = state.row_version
            self._parked = (table, table.syncs,
                            {row: (int(version[row]), put) for row, put in rows.items()})
        else:
            self._parked = None

    @contextmanager
    def nominated_counted(self, pod: PodRecord):
        """Inside: the pods nominated elsewhere with priority >= ``pod``'s
        are in the state on their nominated nodes (``cycle_nominated``), as
        a cycle for ``pod`` counts them; taken out after."""
        temp = self.add_nominated(pod) if self.nominator else ()
        self.cycle_nominated = temp
        try:
            yield temp
        finally:
            self.remove_nominated(temp)

    # ----------------------------------------------------------- the cycle
    def attempt(self, pod: PodRecord, pi: QueuedPodInfo | None) -> Binding:
        """One cycle for ``pod`` (``pi``: its queue entry, None when the
        caller owns the pod)."""
        t0 = time.perf_counter()
        memory = self.failure_memory
        if memory is not None and pi is not None and not self.nominator.node_of:
            # a pod alike the last one asked about fails again without a
            # profile lookup (the failure memory keeps that class's key)
            got = memory.recall_alike(pod, self.state, self.nominator,
                                      self.counters.next_start_index)
            if got is not None:
                return self.fail_again(pod, pi, got, t0)
        fw = self.profiles.of(pod)
        state = self.state
        metrics = self.metrics
        if pi is None:
            for p in fw.plugins_at("preEnqueue"):
                if hasattr(p, "pre_enqueue"):
                    st = p.pre_enqueue(pod)
                    if not st.ok:
                        metrics.latencies.append(time.perf_counter() - t0)
                        msg = "; ".join(st.reasons)
                        metrics.result("unschedulable")
                        self.events.emit("FailedScheduling", pod.key, None, msg)
                        return Binding(pod.key, None, msg)
        fkey = None
        if memory is not None and not self.nominator.node_of:     # no pod nominated
            if self.defer_failure_keys and not memory.holds(state, self.nominator):
                # nothing remembered holds for this cluster (the cycle after
                # a bind or an eviction): no recall, and the pod's key (its
                # signature) is taken only if its failure is remembered
                fkey, stamp = _KEY_LATER, (state.version, self.nominator.version)
            else:
                fkey, stamp, got = memory.recall_pod(fw, pod, state, self.nominator,
                                                     self.counters.next_start_index)
                if got is not None:
                    return self.fail_again(pod, pi, got, t0)
        counters = self.counters
        start = counters.next_start_index
        result = None
        nominating = bool(self.nominator.node_of)       # ``bool(nominator)``, once
        overlay = self.nominated_overlay(fw, pod) if nominating else None
        nominated = None
        if overlay is not None:
            nominated = self.nominated_pods(pod)
            result = fw.run_cycle(state, pod, seed=self.seed, attempt=counters.attempts,
                                  start_index=start, want_scores=False, columns=overlay,
                                  nominated=nominated)
        temp = ()
        if result is None:
            overlay = None
            temp = self.add_nominated(pod) if nominating else ()
            # plugins that must see the state without them (Coscheduling) read this
            self.cycle_nominated = temp
            try:
                result = fw.run_cycle(state, pod, seed=self.seed, attempt=counters.attempts,
                                      start_index=start, want_scores=False)
            except BaseException:
                self.remove_nominated(temp)
                raise
        t1 = time.perf_counter()
        stages = metrics.timer.seconds      # ``timer.add``, inline: once per pod
        stages["filter_score"] = stages.get("filter_score", 0.0) + (t1 - t0)
        counters.attempts += 1
        n = state.num_nodes
        if n:
            counters.next_start_index = (counters.next_start_index + result.processed) % n
        if result.selected_row >= 0:
            self.remove_nominated(temp)
            row = result.selected_row
            if self.choose_node is not None:
                # a learning agent decides among the feasible nodes (gym_env)
                row = self.choose_node(pod, fw, result)
            node = state.node_name(row)
            binding = self.binding.assume_and_permit(fw, pod, node, pi)
            t2 = time.perf_counter()
            stages["reserve_bind"] = stages.get("reserve_bind", 0.0) + (t2 - t1)
            metrics.latencies.append(t2 - t0)
            return binding
        ctx = CycleContext(state, pod, fw)
        table = self.cluster.pod_table()
        if overlay is not None:
            table.nominated_columns = overlay.columns()
            ctx.data[NOMINATED_PODS] = nominated
        try:
            outcome = fw.run_post_filter(ctx, result, table, seed=self.seed,
                                         attempt=counters.attempts - 1)
        finally:
            table.nominated_columns = None
            self.remove_nominated(temp)
        t2 = time.perf_counter()
        metrics.timer.add("preemption", t2 - t1)
        if outcome is not None and outcome.nominated_node is not None:
            if pi is None:
                binding = self._preempt_and_retry(fw, pod, outcome)
            else:
                binding = self._preempt_and_requeue(fw, pod, pi, outcome, result)
            metrics.timer.add("evict_bind", time.perf_counter() - t2)
            metrics.latencies.append(time.perf_counter() - t0)
            metrics.preemption_latencies.append(time.perf_counter() - t0)
            return binding
        diag = fw.diagnosis(ctx, result)
        if outcome is not None and outcome.message:
            diag.post_filter_msg = outcome.message
        msg = diag.message()
        metrics.timer.add("diagnosis", time.perf_counter() - t2)
        metrics.latencies.append(time.perf_counter() - t0)
        metrics.result("unschedulable")
        rejectors = frozenset(self._rejectors(result, diag))
        if fkey is not None and self.failure_stamp() == stamp:
            # nothing (not even a plugin) changed the cluster in the cycle
            if fkey is _KEY_LATER:
                fkey = memory.key(fw, pod)      # as ``recall_pod`` would have given it
            if fkey is not None:
                n = state.num_nodes
                memory.remember(fkey, stamp, RememberedFailure(
                    msg, rejectors, result.processed % n if n else 0,
                    -1 if result.processed >= n else start))
        if pi is not None:
            self.queue.requeue(pi, rejectors)
        self.events.emit("FailedScheduling", pod.key, None, msg)
        b = Binding(pod.key, None, msg)
        self.outcomes[pod.key] = b
        return b

    def failure_stamp(self) -> tuple:
        """What a remembered failure holds for (``failure_memory``)."""
        return failure_stamp(self.state, self.nominator)

    def fail_again(self, pod: PodRecord, pi: QueuedPodInfo | None, got, t0: float) -> Binding:
        """The end of a failed cycle, from a remembered failure: the same
        counters, rotation, requeue, event and outcome as ``attempt``'s."""
        counters = self.counters
        counters.attempts += 1
        if got.advance:
            n = self.state.num_nodes
            counters.next_start_index = (counters.next_start_index + got.advance) % n
        self.failure_memory.hits += 1
        metrics = self.metrics
        results = metrics.results           # (``result``, ``timer.add`` inline: per pod)
        results["unschedulable"] = results.get("unschedulable", 0) + 1
        if pi is not None:
            self.queue.requeue(pi, got.rejectors)
        msg, key = got.message, pod.key
        self.events.emit("FailedScheduling", key, None, msg)
        b = Binding(key, None, msg)
        self.outcomes[key] = b
        dt = time.perf_counter() - t0
        stages = metrics.timer.seconds
        stages["diagnosis"] = stages.get("diagnosis", 0.0) + dt
        metrics.latencies.append(dt)
        return b

    @staticmethod
    def _rejectors(result, diag) -> set:
        plugins = diag.node_statuses.plugins()
        if not result.prefilter_status.ok and result.prefilter_status.plugin:
            plugins.add(result.prefilter_status.plugin)
        return plugins

    # ---------------------------------------------------------- preemption
    def terminate_due(self, now: float) -> None:
        """Victims whose grace period ended by ``now`` leave the state (an
        assigned-pod delete for the queue): all of them, then one move
        request (``_evict``'s doc: the same as one per pod)."""
        state = self.state
        terminating = self.terminating
        one_move = self.batch_evictions
        gone = False
        while terminating and terminating[0][0] <= now:
            _, _, key = heapq.heappop(terminating)
            if key in state.pods:
                state.remove_pod(key)
                gone = True
                if not one_move:
                    self.queue.move_all(POD_DELETE)
        if gone and one_move:
            self.queue.move_all(POD_DELETE)

    def _evict(self, victims, node: str, preemptor: PodRecord) -> None:
        """Evict ``victims`` (keys of pods bound on ``node``) for
        ``preemptor``: per victim, in order, an eviction metric and a
        Preempted event, and without a grace period its removal from the
        state; then the queue hears ONE assigned-pod delete.  Upstream each
        deletion is an event, but moving the unschedulable pods on the
        same event at the same instant twice is moving them once: the
        first move takes every pod interested in it (activeQ or backoffQ
        by the same clock) and sets the move request cycle, and nothing
        between the deletions puts a pod back among them.  With a grace
        period each victim is marked terminating (DisruptionTarget,
        deleting) and leaves at its deadline (``terminate_due``).
        ``batch_evictions`` False: a move request per victim (the oracle of
        the tests)."""
        state = self.state
        grace = self.termination_grace_seconds
        one_move = self.batch_evictions
        evictions = self.metrics.evictions
        # nobody listens: no message made per victim (and no subscriber can
        # come in the loop, where no callback runs)
        emit = self.events.emit if self.events.listening("Preempted") else None
        pkey = preemptor.key
        for key in victims:
            evictions.append({"pod": key, "node": node, "preemptor": pkey})
            if emit is not None:
                emit("Preempted", key, node, f"preempted by {pkey} on node {node}",
                     preemptor=pkey)
            if grace <= 0:
                state.remove_pod(key)
                if not one_move:
                    self.queue.move_all(POD_DELETE)
                continue
            rec = state.pods.record(key)
            cond = {"type": "DisruptionTarget", "status": "True",
                    "reason": "PreemptionByScheduler"}
            conds = [c for c in ((rec.obj or {}).get("status") or {}).get("conditions") or []
                     if c.get("type") != "DisruptionTarget"] + [cond]
            rec = dataclasses.replace(_with_status(rec, conditions=conds), deleting=True)
            state.update_pod(rec, node)
            heapq.heappush(self.terminating,
                           (self.clock.now() + grace, next(self._seq), key))
        if grace <= 0 and one_move and victims:
            self.queue.move_all(POD_DELETE)

    def _clear_lower_nominations(self, node: str, prio: int) -> None:
        for other in self.nominator.nominated_on(node):
            if pod_priority(other) < prio:
                self.nominator.delete(other.key)
                pi = self.queue.infos.get(other.key)
                if pi is not None:
                    pi.pod = _with_status(pi.pod, nominatedNodeName=None)

    def _preempt_and_requeue(self, fw, pod, pi, outcome, result) -> Binding:
        """Queue mode: nominate, evict, back to the queue (the victims'
        deletion is a move request during this cycle: backoffQ)."""
        node = outcome.nominated_node
        # the cycle's own diagnosis, on the state its filters saw (upstream
        # reports the FitError of the cycle, not the nodes after eviction)
        diag = fw.diagnosis(CycleContext(self.state, pod, fw), result)
        self.metrics.preemptions += 1
        self._clear_lower_nominations(node, pod_priority(pod))
        pi.pod = _with_status(pod, nominatedNodeName=node)
        self.nominator.add(pi.pod, node)
        self.binding.preempted_for[pod.key] = (node, list(outcome.victims))
        self._evict(outcome.victims, node, pod)
        msg = diag.message()
        self.metrics.result("unschedulable")
        self.queue.requeue(pi, self._rejectors(result, diag))
        self.events.emit("FailedScheduling", pod.key, None, msg, nominated_node=node,
                         victims=list(outcome.victims))
        b = Binding(pod.key, None, msg, node, list(outcome.victims))
        self.outcomes[pod.key] = b
        return b

    def _retry_proved(self, outcome, version: int) -> bool:
        """Whether DefaultPreemption's victim search already proved that
        the preemptor fits on its nominated node now that the victims are
        gone (``_evict`` from state ``version``), so that ``fits_on_row``
        would answer True there.  First: no grace period (the victims left
        the state) and the state changed by exactly the victims' removals
        since (a listener or subscriber that wrote anything else moves
        ``version`` further).  Between the search and here the cycle only
        took its nominated pods back out (those it added; the overlay's
        were never in).  Then either

        * no host filter ran (``outcome.host_filters`` empty): "fits" is
          the fused filter core alone (``victims._core``'s
          ``node_reasons``), which the search found 0 on that row with
          the victims' requests and ports taken off and the nominated pods
          counted; those filters ask only for requested resources, the pod
          count and host ports besides node columns pods never touch, and
          fewer pods on a row never fail a node that more passed; or
        * no pod is nominated: the search ran every filter, host ones
          included (exactly: the search on counts or ``HostVictimSearch``),
          on this very state (the victims taken off, nothing counted
          besides).  With nominated pods the host filters (PodTopologySpread,
          InterPodAffinity) are not monotone in the pods counted (a
          nominated pod elsewhere raises a domain minimum): the row is
          checked."""
        if not (self.trust_victim_search and outcome.query is not None
                and self.termination_grace_seconds <= 0
                and self.state.version == version + len(outcome.victims)):
            return False
        return not outcome.host_filters or not self.nominator.node_of

    def _preempt_and_retry(self, fw: Framework, pod: PodRecord, outcome) -> Binding:
        """Direct mode: delete the victims, then place the preemptor on its
        nominated node if it fits there now (``_retry_proved``, else the
        row checked: ``fits_on_row``), else one more full cycle."""
        state = self.state
        node = outcome.nominated_node
        version = state.version
        self._evict(outcome.victims, node, pod)
        self.metrics.preemptions += 1
        preempted_for = self.binding.preempted_for
        preempted_for[pod.key] = (node, list(outcome.victims))
        if outcome.query is not None and (
                self._retry_proved(outcome, version)
                or fits_on_row(state, outcome.query, state.node_rows[node],
                               outcome.host_filters, CycleContext(state, pod, fw))):
            b = self.binding.assume_and_permit(fw, pod, node, None)
        else:
            result = fw.run_cycle(state, pod, seed=self.seed, attempt=self.counters.attempts,
                                  want_scores=False)
            self.counters.attempts += 1
            if result.selected_row < 0:
                preempted_for.pop(pod.key, None)
                msg = fw.diagnosis(CycleContext(state, pod, fw), result).message()
                self.metrics.result("unschedulable")
                self.events.emit("FailedScheduling", pod.key, None, msg)
                return Binding(pod.key, None, msg, node, list(outcome.victims))
            b = self.binding.assume_and_permit(fw, pod, state.node_name(result.selected_row),
                                               None)
        b.nominated_node = node
        b.victims = list(outcome.victims)
        return b
