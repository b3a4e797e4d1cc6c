"""How many more pods of some templates fit (cluster-capacity's question),
answered by the Scheduler itself.

``how_many_fit(cluster, templates)`` copies the cluster (its bound pods;
pending pods are left out, as cluster-capacity leaves them) and places
pods of the templates one after another, round-robin over the templates,
each template until its first pod that does not fit: that pod's
FailedScheduling message is the template's stop reason.  A pod that
preempts (a template with a higher priority than pods on the nodes, when
the profile enables DefaultPreemption) is nominated, its victims are
evicted and it binds on a later attempt, as in ``schedule``; the report
lists the preemptions and evictions.

With a single template (or once only one is still placing) the pods go
into the scheduling queue in chunks and identical heads are placed by the
Scheduler's compiled runs (one call for a run of alike pods, exactly as
cycle after cycle would place them); a chunk is as large as the free
resources allow (plus one) and never more than twice what was placed so
far (at least 1,024), and the pods left after the stop are deleted from the
queue.  With several templates pods alternate, one at a time, so a
template's pod sees the pods of the others placed before it.

``how_many_fit(cluster, templates, replicas=[...])`` asks instead whether
that set of pods fits when it arrives at once (the replicas queued
together, interleaved over the templates), and what does not: the first
pod of a template that fits nowhere ends that template; its pods after it
are counted as not scheduled, not scheduled one by one.  Pods beyond a
template's room (free resources plus what lower-priority pods it may
preempt hold, ``free_bound``) are never made: they could not bind, so
10,000,000 replicas on a small cluster cost what its room costs.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.priorities import pod_priority
from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.scheduler.cluster import Cluster
from tensorsched.framework.scheduler.scheduler import Scheduler

from .batch_probe import BatchProfileError, LocalProber, batched_backend
from .common import (
    capacity_arguments,
    free_bound,
    fresh_cluster,
    no_gc,
    object_list,
    pod_copies,
    pod_template,
    unique_names,
)
from .report import FitReport, TemplateFit

__all__ = ["how_many_fit"]

MIN_CHUNK = 1024
MAX_CHUNK = 1 << 20
MAX_IDLE = 1000          # run_until_idle calls in a row that settle nothing


def how_many_fit(cluster: Cluster, templates, *, replicas=None, backend: str = "numba",
                 seed: int = 0, limit: int | None = None,
                 progress: Callable[[int], None] | None = None,
                 batch: bool = True) -> FitReport:
    """How many more pods of each template (Pod dicts or PodRecords) fit in
    ``cluster``; with ``replicas`` (one count per template) whether that set
    fits.  ``limit`` caps the pods tried per template; ``progress(n)`` is
    called with the number of pods settled since the last call.  ``batch``:
    one template (no ``replicas``) runs in the batched node-local kernel
    where it covers the profile and the pod (numba, auto: the CPU twin;
    cuda: the device); False, or numpy: the Scheduler.  The answers are the
    same.  The cluster is not modified."""
    args = capacity_arguments("how_many_fit", cluster, backend, seed, progress)
    args.flag("batch", batch)
    templates = object_list(args, "templates", templates, PodRecord, "Pod", nonempty=True)
    limit = args.integer("limit", limit, 1, optional=True)
    if replicas is not None:
        replicas = [args.integer(f"replicas[{i}]", r, 0) for i, r in
                    enumerate(args.sequence("replicas", replicas, item="an integer",
                                            items="integers (one per template)"))]
        if len(replicas) != len(templates):
            raise args.error("replicas", f"{len(replicas)} replica counts for "
                             f"{len(templates)} templates (one per template)")
    t0 = time.perf_counter()
    with no_gc():
        work = fresh_cluster(cluster, pods=[p for p in cluster.objects.pods if p.node_name])
        recs = [pod_template(work, t) for t in templates]
        names = [r.key for r in recs]
        seen: set[str] = set()
        for i, n in enumerate(names):
            if n in seen:
                raise ManifestError(f"Pod {n}", "metadata.name",
                                    f"template {i} has the name of an earlier template")
            seen.add(n)
        report = None
        if replicas is None and len(recs) == 1 and batch:
            report = _fill_batched(work, recs[0], limit, seed, batched_backend(backend),
                                   progress)
        if report is None:
            sched = Scheduler(work, backend, seed, batch=True)
            if replicas is not None:
                report = _replicas(sched, recs, replicas, progress)
            else:
                report = _fill(sched, recs, limit, progress)
            report.evictions = list(sched.evictions)
        report.backend, report.seed = backend, seed
    report.seconds = time.perf_counter() - t0
    return report


def _taken(sched: Scheduler) -> set[str]:
    state = sched.cluster.state
    return {k.partition("/")[2] for k in state.pods} | {
        p.name for p in sched.cluster.objects.pods}


def _replicas(sched: Scheduler, recs, replicas, progress) -> FitReport:
    f = _Filler(sched, recs, None, progress)
    # pods beyond a template's room can never bind: they are counted, not made
    made = [min(n, _room(sched, r) + 1) for r, n in zip(recs, replicas)]
    per = [f.make(t, n) if n else [] for t, n in enumerate(made)]
    order = []
    for i in range(max(made, default=0)):
        for t, pods in enumerate(per):
            if i < len(pods):
                order.append((t, pods[i]))
    if progress is not None and sum(replicas) > len(order):
        progress(sum(replicas) - len(order))
    f.active = [t for t, n in enumerate(replicas) if n]
    if order:
        f.drive(order, first_failure=f.first)
    for tf, n, first in zip(f.fits, replicas, f.first):
        tf.replicas = n
        tf.not_scheduled = n - tf.count
        tf.unschedulable = [first] if first is not None else []
    return FitReport("Replicas", "", 0, f.fits, fits=all(tf.not_scheduled == 0 for tf in f.fits),
                     preemptions=f.preemptions)


def _room(sched: Scheduler, rec) -> int:
    """An upper bound on how many pods like ``rec`` can ever bind: the free
    resources of the nodes, plus what pods it may preempt (lower priority)
    hold."""
    below = pod_priority(rec) if rec.preemption_policy != "Never" else None
    return free_bound(sched.cluster.state, rec.requests, preemptible_below=below)


class _Filler:
    """Places pods of the templates in turn until each stops."""

    def __init__(self, sched: Scheduler, recs, limit, progress):
        self.sched = sched
        self.recs = recs
        self.limit = limit
        self.progress = progress
        self.fits = [TemplateFit(r.key) for r in recs]
        self.tried = [0] * len(recs)          # pods of each template made so far
        self.active = list(range(len(recs)))
        self.taken = _taken(sched)
        self.next_index = [0] * len(recs)
        self.preemptions: list[dict] = []
        self.first: list[dict | None] = [None] * len(recs)   # first pod that fits nowhere

    def make(self, t: int, n: int):
        rec = self.recs[t]
        names = unique_names(rec.name, self.taken, n, self.next_index[t])
        self.next_index[t] = int(names[-1].rsplit("-", 1)[1]) + 1
        self.tried[t] += n
        return pod_copies(rec, names)

    def room(self, t: int) -> int:
        return None if self.limit is None else self.limit - self.tried[t]

    def stop(self, t: int, reason: str | None) -> None:
        if t in self.active:            # the first reason stays
            self.fits[t].stop_reason = reason
            self.active.remove(t)

    def run(self) -> None:
        last = -1
        while self.active:
            for t in list(self.active):
                if self.room(t) == 0:
                    self.stop(t, None)
            if not self.active:
                break
            if len(self.active) == 1:
                t = self.active[0]
                bound = free_bound(self.sched.cluster.state, self.recs[t].requests) + 1
                k = min(bound, max(MIN_CHUNK, self.fits[t].count), MAX_CHUNK)
                if self.room(t) is not None:
                    k = min(k, self.room(t))
                self.drive([(t, p) for p in self.make(t, k)])
            else:
                # the next active template after the last one, cyclically
                t = next((a for a in self.active if a > last), self.active[0])
                last = t
                self.drive([(t, p) for p in self.make(t, 1)])

    def drive(self, chunk, first_failure: list | None = None) -> None:
        """Add the chunk's pods to the queue, in order, and run the
        scheduler a cycle (or a compiled run) at a time until each is bound
        or its template stopped (its pods left are deleted from the queue,
        counted as settled).  ``first_failure[t]``: set to ``{"pod",
        "message"}`` of the pod that stopped template ``t``."""
        sched = self.sched
        pending = {pod.key: t for t, pod in chunk}
        pods = [pod for _, pod in chunk]
        if (not sched.queue.unschedulable and all(sched.handles(p) for p in self.recs)
                and not any(p.scheduling_gates for p in self.recs)):
            # what add_pod does for each, with one heapify (pods of a known
            # profile, no gates, nothing in the unschedulable pool to move)
            sched.queue.add_many(pods)
        else:
            for pod in pods:
                sched.add_pod(pod)
        idle = 0
        while pending:
            out = sched.run_until_idle(max_cycles=1)
            if not out:
                idle += 1
                if idle > MAX_IDLE:
                    for key, t in list(pending.items()):
                        if first_failure is not None and t in self.active:
                            first_failure[t] = {"pod": key, "message": "stalled: no binding "
                                                "after retries"}
                        self.stop(t, "stalled: no binding after retries")
                        sched.delete_pod(key)
                    pending.clear()
                continue
            idle = 0
            settled = 0
            for b in out:
                t = pending.get(b.pod)
                if t is None:
                    continue
                if b.node is not None:
                    pending.pop(b.pod)
                    settled += 1
                    tf = self.fits[t]
                    tf.count += 1
                    tf.per_node[b.node] = tf.per_node.get(b.node, 0) + 1
                    if b.nominated_node is not None:
                        self.preemptions.append({"preemptor": b.pod,
                                                 "nominated_node": b.nominated_node,
                                                 "victims": list(b.victims)})
                elif b.nominated_node is None:
                    # the template's first pod that does not fit: it stops
                    if first_failure is not None and t in self.active:
                        first_failure[t] = {"pod": b.pod, "message": b.message}
                    self.stop(t, b.message)
                    for key, tt in list(pending.items()):
                        if tt == t and (key == b.pod or key not in sched.outcomes):
                            pending.pop(key)
                            sched.delete_pod(key)
                            settled += 1
            if settled and self.progress is not None:
                self.progress(settled)


def _fill_batched(work: Cluster, rec, limit, seed: int, device: str,
                  progress) -> FitReport | None:
    """One template's fill in the node-local kernel (``LocalProber.fill``:
    ``free_bound + 1`` copies, or ``limit``, one after another; the first
    that fits nowhere stops it with its message); None when the kernel
    does not run or cover it (the Scheduler answers)."""
    if not device:
        return None
    bound = [p for p in work.objects.pods if p.node_name]
    try:
        prober = LocalProber(work, list(work.objects.nodes), bound, [rec], seed, device=device)
    except BatchProfileError:
        return None
    count = free_bound(work.state, rec.requests) + 1
    if limit is not None:
        count = min(count, limit)
    try:
        placed, message = prober.fill(count)
    except BatchProfileError:
        return None             # copies whose terms select each other
    if message is None and (limit is None or count < limit):
        return None             # the resource bound's pod bound: not expected, ask
    tf = TemplateFit(rec.key)
    for node in placed:
        tf.per_node[node] = tf.per_node.get(node, 0) + 1
    tf.count = len(placed)
    tf.stop_reason = message
    if progress is not None:
        progress(tf.count + (message is not None))
    report = FitReport("HowManyFit", "", 0, [tf], limit=limit, preemptions=[])
    report.evictions = []
    return report


def _fill(sched: Scheduler, recs, limit, progress) -> FitReport:
    f = _Filler(sched, recs, limit, progress)
    f.run()
    return FitReport("HowManyFit", "", 0, f.fits, limit=limit, preemptions=f.preemptions)
