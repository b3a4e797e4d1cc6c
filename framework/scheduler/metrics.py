"""What the scheduler measures: attempts by result, host seconds per stage
and per plugin, end-to-end latency on the clock, queue sizes, preemptions,
evictions and binder failures (``Scheduler.metrics()``), and the CLI's
summary of a run's outcomes."""

from __future__ import annotations

from dataclasses import dataclass, field

from .events import Binding


@dataclass
class StageTimer:
    """Seconds spent per stage, summed over cycles."""

    seconds: dict = field(default_factory=dict)

    def add(self, stage: str, dt: float) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + dt


class MetricsRecorder:
    """What one scheduler counts and times: attempts by result, host
    seconds per stage (``timer``) and per plugin, per-attempt latencies
    (host seconds), end-to-end latencies (clock seconds, first enqueue ->
    bound), preemptions, evictions, binder failures, the pods placed per
    compiled run and by arrival blocks."""

    def __init__(self) -> None:
        self.results: dict[str, int] = {}
        self.timer = StageTimer()
        self.plugin_seconds: dict[str, float] = {}
        self.latencies: list[float] = []
        self.preemption_latencies: list[float] = []
        self.e2e_latencies: list[float] = []
        self.preemptions = 0
        self.evictions: list[dict] = []
        self.bind_failures = 0
        self.run_lengths: list[int] = []        # pods placed per compiled run
        self.block_pods = 0                     # pods arrival blocks handled

    def result(self, kind: str) -> None:
        """One attempt ended ``kind`` (scheduled, unschedulable, error)."""
        self.results[kind] = self.results.get(kind, 0) + 1

    def time_plugin(self, point: str, name: str, dt: float) -> None:
        k = f"{point}/{name}"
        self.plugin_seconds[k] = self.plugin_seconds.get(k, 0.0) + dt

    def report(self, queue_counts: dict, waiting: int, assumed: int, nominated: int) -> dict:
        """``Scheduler.metrics()``: the counters above with the queue's
        counts and the number of pods waiting on Permit, assumed but
        unconfirmed, and nominated."""
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
            "queue": queue_counts,
            "waiting_on_permit": waiting,
            "assumed_unconfirmed": assumed,
            "nominated": nominated,
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
    ignored = sum(1 for b in bindings if b.ignored)
    return {"pods": len(bindings), "scheduled": placed,
            "unschedulable": len(bindings) - placed - ignored, "ignored": ignored,
            "nodes_used": len(per_node),
            "preemptions": sum(1 for b in bindings if b.nominated_node is not None),
            "evictions": sum(len(b.victims) for b in bindings)}
