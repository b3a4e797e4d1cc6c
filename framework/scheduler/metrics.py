"""What the scheduler measures: attempts by result, host seconds per stage
and per plugin, end-to-end latency on the clock, queue sizes, preemptions,
evictions, binder failures and the pods each placement path placed
(``Scheduler.metrics()``), and the CLI's summary of a run's outcomes."""

from __future__ import annotations

from dataclasses import dataclass, field

from tensorsched.kernels.fused.backends import COMPILED_RUN_PATH, DEVICE_RUN_PATH, SORT_PATH

from .events import Binding

CYCLE_PATH = "cycle"
"""One pod's scheduling cycle (the fused filter + score stage, then binding)."""
GPU_BLOCK_PATH = "gpu_block"
"""A block of unlike pods through the queue (``runtime.blocks``, ``scheduler.runs``)."""
ARRIVAL_BLOCK_PATH = "arrival_block"
"""A block of arriving pods placed before they queue (``scheduler.arrival_blocks``)."""
PLACEMENT_PATHS = (CYCLE_PATH, COMPILED_RUN_PATH, SORT_PATH, DEVICE_RUN_PATH, GPU_BLOCK_PATH,
                   ARRIVAL_BLOCK_PATH)
"""Every path that places pods, by its stable name in ``placed_by`` / ``runs_by``:
``cycle``; runs of alike pods by the numba compiled run (``compiled_run``),
the sort path (``sort``) or the cuda device run kernel (``device_run``);
blocks of unlike pods through the queue (``gpu_block``) or on arrival
(``arrival_block``)."""


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
    compiled run and by arrival blocks, and per placement path
    (``PLACEMENT_PATHS``) the pods it placed and the calls that placed
    them."""

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
        self.placed_by = dict.fromkeys(PLACEMENT_PATHS, 0)     # path -> pods placed
        self.runs_by = dict.fromkeys(PLACEMENT_PATHS, 0)       # path -> calls placing >= 1

    def placed(self, path: str, pods: int = 1) -> None:
        """``pods`` pods (> 0) placed by one call of ``path`` (one of
        ``PLACEMENT_PATHS``; a cycle is a call of one pod), counted where
        their attempts are counted ``scheduled``."""
        if pods > 0:
            self.placed_by[path] += pods
            self.runs_by[path] += 1

    def scheduled_by(self, path: str) -> None:
        """One attempt ended scheduled, its pod placed by one call of
        ``path``: ``result("scheduled")`` and ``placed(path)`` in one call
        (a binding cycle's end, once per pod)."""
        self.results["scheduled"] = self.results.get("scheduled", 0) + 1
        self.placed_by[path] += 1
        self.runs_by[path] += 1

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
            "placed_by": dict(self.placed_by),
            "runs_by": dict(self.runs_by),
        }


def placed_by_line(placed_by: dict, runs_by: dict) -> str:
    """The CLI's line of the paths that placed pods, in ``PLACEMENT_PATHS``
    order, those that placed none left out: ``placed by sort 398 (2 runs),
    cycle 2`` (a cycle is one pod: no run count)."""
    parts = []
    for path in PLACEMENT_PATHS:
        pods = placed_by.get(path, 0)
        if pods:
            runs = runs_by.get(path, 0)
            shown = f"{path} {pods}"
            if path != CYCLE_PATH:
                shown += f" ({runs} run{'s' if runs != 1 else ''})"
            parts.append(shown)
    return "placed by " + (", ".join(parts) if parts else "none")


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
