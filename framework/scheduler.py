"""Schedule pending pods one by one, each placement updating the state.

Queue order is the profile's QueueSort (PrioritySort: priority, then
creation time).  Each cycle filters and scores from the rotating start
index with percentageOfNodesToScore, draws among tied nodes with the seed,
assumes the pod on the chosen node (the state counts it at once), runs
Reserve and Bind.  A pod that fits nowhere runs the PostFilter plugins
(DefaultPreemption): when a node is nominated, the victims are deleted from
the state at once and the pod is retried immediately, bound on its
nominated node if it fits there (this simple loop has no queue, backoff or
graceful termination); otherwise it gets kube-scheduler's FailedScheduling
message, with preemption's message appended as upstream does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .cluster import Cluster
from .explainer import run_post_filter
from .plugins.priority_sort import PrioritySort
from .preemption import fits_on_row
from .records import PodRecord
from .runtime import CycleContext, Framework
from .status import Code


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


class Scheduler:
    """Drives the cycles for one cluster on one backend.

    ``next_start_index`` rotates as upstream's nextStartNodeIndex: after each
    cycle it advances by the number of nodes processed."""

    def __init__(self, cluster: Cluster, backend: str = "numpy", seed: int = 0):
        self.cluster = cluster
        self.backend = backend
        self.seed = seed
        self.next_start_index = 0
        self.attempts = 0
        self.timer = StageTimer()
        self.latencies: list[float] = []
        self.preemption_latencies: list[float] = []
        self.preemptions = 0
        self.evictions: list[dict] = []

    def queue_order(self, pods: list[PodRecord]) -> list[PodRecord]:
        """Pods in activeQ order (the QueueSort plugin's order)."""
        return sorted(pods, key=PrioritySort.sort_key)

    def schedule_one(self, pod: PodRecord) -> Binding:
        """One scheduling cycle plus binding for ``pod``."""
        t0 = time.perf_counter()
        fw: Framework = self.cluster.framework_for(pod, self.backend)
        state = self.cluster.state
        gates = [p for p in fw._point.get("preEnqueue", []) if hasattr(p, "pre_enqueue")]
        for p in gates:
            st = p.pre_enqueue(pod)
            if not st.ok:
                self.latencies.append(time.perf_counter() - t0)
                return Binding(pod.key, None, "; ".join(st.reasons))
        result = fw.run_cycle(state, pod, seed=self.seed, attempt=self.attempts,
                              start_index=self.next_start_index, want_scores=False)
        t1 = time.perf_counter()
        self.timer.add("filter_score", t1 - t0)
        self.attempts += 1
        n = state.num_nodes
        if n:
            self.next_start_index = (self.next_start_index + result.processed) % n
        if result.selected_row < 0:
            ctx = CycleContext(state, pod, fw)
            outcome = run_post_filter(self.cluster, fw, ctx, result, seed=self.seed,
                                      attempt=self.attempts - 1)
            t2 = time.perf_counter()
            self.timer.add("preemption", t2 - t1)
            if outcome is not None and outcome.nominated_node is not None:
                binding = self._preempt_and_retry(fw, pod, outcome)
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
            return Binding(pod.key, None, msg)
        node = state.node_name(result.selected_row)
        binding = self._reserve_and_bind(fw, pod, node)
        t2 = time.perf_counter()
        self.timer.add("reserve_bind", t2 - t1)
        self.latencies.append(t2 - t0)
        return binding

    def _preempt_and_retry(self, fw: Framework, pod: PodRecord, outcome) -> Binding:
        """Delete the victims, then place the preemptor on its nominated
        node if it fits there now (else one more full cycle)."""
        state = self.cluster.state
        node = outcome.nominated_node
        for key in outcome.victims:
            state.remove_pod(key)
            self.evictions.append({"pod": key, "node": node, "preemptor": pod.key})
        self.preemptions += 1
        if outcome.query is not None and fits_on_row(state, outcome.query,
                                                     state.node_rows[node]):
            b = self._reserve_and_bind(fw, pod, node)
            b.nominated_node = node
            b.victims = list(outcome.victims)
            return b
        result = fw.run_cycle(state, pod, seed=self.seed, attempt=self.attempts,
                              want_scores=False)
        self.attempts += 1
        if result.selected_row < 0:
            msg = fw.diagnosis(CycleContext(state, pod, fw), result).message()
            return Binding(pod.key, None, msg, node, list(outcome.victims))
        b = self._reserve_and_bind(fw, pod, state.node_name(result.selected_row))
        b.nominated_node = node
        b.victims = list(outcome.victims)
        return b

    def _reserve_and_bind(self, fw: Framework, pod: PodRecord, node: str) -> Binding:
        state = self.cluster.state
        ctx = CycleContext(state, pod, fw)
        state.add_pod(pod, node)                       # assume: counted at once
        reserved = []
        for p in fw._point.get("reserve", []):
            st = p.reserve(ctx, node)
            if not st.ok:
                for q in reversed(reserved + [p]):
                    q.unreserve(ctx, node)
                state.remove_pod(pod.key)
                return Binding(pod.key, None, f"running Reserve plugin {p.name!r}: "
                               + "; ".join(st.reasons))
            reserved.append(p)
        for p in fw._point.get("bind", []):
            st = p.bind(ctx, node)
            if st.code == Code.SKIP:
                continue
            if not st.ok:
                for q in reversed(reserved):
                    q.unreserve(ctx, node)
                state.remove_pod(pod.key)
                return Binding(pod.key, None, f"running Bind plugin {p.name!r}: "
                               + "; ".join(st.reasons))
            break
        return Binding(pod.key, node)

    def run(self, pods: list[PodRecord]) -> list[Binding]:
        """Schedule ``pods`` in queue order; returns one Binding per pod."""
        return [self.schedule_one(p) for p in self.queue_order(pods)]


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
