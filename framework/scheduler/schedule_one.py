"""One scheduling cycle (upstream ``schedule_one.go``): the pods nominated
with equal or higher priority counted on their nodes, Filter/Score through
the profile's Framework, then assume-and-bind on the selected node, or
PostFilter (preemption: nominate, evict, requeue or retry) and the
FailedScheduling diagnosis.

Nominated pods are added to the state around the cycle (and its PostFilter)
and removed right after.  For the pod-count filters (resources, ports) this
is exactly upstream's two-pass RunFilterPluginsWithNominatedPods (a node
that passes with the nominated pods passes without them); scores also see
them (upstream scores without them) -- a documented deviation, only while
nominations are outstanding.
"""

from __future__ import annotations

import dataclasses
import heapq
import time

from tensorsched.framework.parsing.priorities import pod_priority
from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.preemption.evaluator import fits_on_row
from tensorsched.framework.runtime.framework import Framework
from tensorsched.framework.runtime.plugin import CycleContext

from .events import Binding
from .failure_memory import RememberedFailure
from .queue import POD_DELETE, QueuedPodInfo


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
    """The scheduling-cycle side of ``Scheduler``."""

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
            for p in fw.plugins_at("preEnqueue"):
                if hasattr(p, "pre_enqueue"):
                    st = p.pre_enqueue(pod)
                    if not st.ok:
                        self.latencies.append(time.perf_counter() - t0)
                        msg = "; ".join(st.reasons)
                        self._result("unschedulable")
                        self._emit("FailedScheduling", pod.key, None, msg)
                        return Binding(pod.key, None, msg)
        memory = self.failure_memory
        fkey = None
        if memory is not None and not self.nominator:
            fkey = memory.key(fw, pod)
            if fkey is not None:
                stamp = self._failure_stamp()
                got = memory.recall(fkey, stamp, self.next_start_index)
                if got is not None:
                    return self._fail_again(pod, pi, got, t0)
        start = self.next_start_index
        temp = self._add_nominated(pod) if self.nominator else ()
        # plugins that must see the state without them (Coscheduling) read this
        self.cycle_nominated = temp
        try:
            result = fw.run_cycle(state, pod, seed=self.seed, attempt=self.attempts,
                                  start_index=start, want_scores=False)
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
            row = result.selected_row
            if self.choose_node is not None:
                # a learning agent decides among the feasible nodes (gym_env)
                row = self.choose_node(pod, fw, result)
            node = state.node_name(row)
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
        rejectors = frozenset(self._rejectors(result, diag))
        if fkey is not None and self._failure_stamp() == stamp:
            # nothing (not even a plugin) changed the cluster in the cycle
            n = state.num_nodes
            memory.remember(fkey, stamp, RememberedFailure(
                msg, rejectors, result.processed % n if n else 0,
                -1 if result.processed >= n else start))
        if pi is not None:
            self.queue.requeue(pi, rejectors)
        self._emit("FailedScheduling", pod.key, None, msg)
        b = Binding(pod.key, None, msg)
        self.outcomes[pod.key] = b
        return b

    def _failure_stamp(self) -> tuple:
        """What a remembered failure holds for (``failure_memory``)."""
        return (self.cluster.state.version, self.nominator.version)

    def _fail_again(self, pod: PodRecord, pi: QueuedPodInfo | None, got, t0: float) -> Binding:
        """The end of a failed cycle, from a remembered failure: the same
        counters, rotation, requeue, event and outcome as ``_attempt``'s."""
        self.attempts += 1
        if got.advance:
            n = self.cluster.state.num_nodes
            self.next_start_index = (self.next_start_index + got.advance) % n
        self.failure_memory.hits += 1
        results = self.results              # (``_result``, ``timer.add`` inline: per pod)
        results["unschedulable"] = results.get("unschedulable", 0) + 1
        if pi is not None:
            self._queue.requeue(pi, got.rejectors)
        msg, key = got.message, pod.key
        self.events.emit("FailedScheduling", key, None, msg)
        b = Binding(key, None, msg)
        self.outcomes[key] = b
        dt = time.perf_counter() - t0
        stages = self.timer.seconds
        stages["diagnosis"] = stages.get("diagnosis", 0.0) + dt
        self.latencies.append(dt)
        return b

    @staticmethod
    def _rejectors(result, diag) -> set:
        plugins = diag.node_statuses.plugins()
        if not result.prefilter_status.ok and result.prefilter_status.plugin:
            plugins.add(result.prefilter_status.plugin)
        return plugins

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
            rec = state.pods.record(key)
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
