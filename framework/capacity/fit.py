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

import numpy as np

from tensorsched.framework.arguments import MAX_ITEMS
from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.priorities import pod_priority
from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.scheduler.cluster import Cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.kernels.batch.local_cpu import MAX_GROUPS

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
from .limits import MAX_PODS
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
    the templates, one or several, with or without ``replicas``, run in
    the batched node-local kernel where it covers the profile and the pods
    (numba, auto: the CPU twin; cuda: the device; one call); False, or
    numpy: the Scheduler.  The answers, and the progress totals, are the
    same.  The cluster is not modified."""
    args = capacity_arguments("how_many_fit", cluster, backend, seed, progress)
    args.flag("batch", batch)
    templates = object_list(args, "templates", templates, PodRecord, "Pod", nonempty=True)
    limit = args.integer("limit", limit, 1, optional=True)
    if replicas is not None:
        replicas = [args.integer(f"replicas[{i}]", r, 0) for i, r in
                    enumerate(args.sequence("replicas", replicas, item="an integer",
                                            items="integers (one per template)",
                                            limit=MAX_ITEMS))]
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
        _check_placeable(args, work.state, recs, replicas, limit)
        report = None
        if batch:
            report = _batched(work, recs, replicas, limit, seed, batched_backend(backend),
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


def _check_placeable(args, state, recs, replicas, limit) -> None:
    """Refuse, before any pod is made, a call that could place more than
    ``MAX_PODS`` pods: per template what its room lets bind (``_room``),
    within ``limit`` or its replicas, summed over the templates."""
    rooms = [_room(state, r) for r in recs]
    if replicas is not None:
        total = sum(min(n, room) for n, room in zip(replicas, rooms))
        name, fix = "replicas", "fewer replicas"
    else:
        total = sum(room if limit is None else min(limit, room) for room in rooms)
        name, fix = "limit", f"a limit of at most {MAX_PODS // len(recs):,}"
    if total > MAX_PODS:
        raise args.error(name, f"up to {total:,} pods could be placed (the room the nodes' free "
                         f"resources and pod slots leave); one call places at most "
                         f"{MAX_PODS:,} ({fix})")


def _taken(cluster: Cluster) -> set[str]:
    """The pod names the cluster holds (generated names skip them)."""
    return {k.partition("/")[2] for k in cluster.state.pods} | {
        p.name for p in cluster.objects.pods}


def _replicas(sched: Scheduler, recs, replicas, progress) -> FitReport:
    f = _Filler(sched, recs, None, progress)
    # pods beyond a template's room can never bind: they are counted, not made
    made = [min(n, _room(sched.cluster.state, r) + 1) for r, n in zip(recs, replicas)]
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


def _room(state, rec) -> int:
    """An upper bound on how many pods like ``rec`` can ever bind: the free
    resources of the nodes, plus what pods it may preempt (lower priority)
    hold."""
    below = pod_priority(rec) if rec.preemption_policy != "Never" else None
    return free_bound(state, rec.requests, preemptible_below=below)


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
        self.taken = _taken(sched.cluster)
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


def _batched(work: Cluster, recs, replicas, limit, seed: int, device: str,
             progress) -> FitReport | None:
    """The fill (or the replicas) in the node-local kernel, in one call
    (``LocalProber.place_groups``): each template's pods in the order the
    Scheduler path attempts them -- the fill's round robin (pod i of every
    template, then pod i + 1; the Scheduler's chunks of a last template
    keep that order), the replicas' queue order (priority, creation, then
    the interleaved order) -- a template's pods after its first that fits
    nowhere dropped unattempted, as the Scheduler path deletes them (so the
    start indices are the same; a tie goes by the nodes' rows, their pods
    and the seed alone).  Each template gets
    ``free_bound + 1`` pods (``limit`` at most), or its replicas up to its
    room + 1: the usage only grows, so it stops within them.  None when the
    kernel does not cover the profile or the pods (the Scheduler
    answers)."""
    if not device or len(recs) > MAX_GROUPS:
        return None
    bound = [p for p in work.objects.pods if p.node_name]
    try:
        prober = LocalProber(work, list(work.objects.nodes), bound, recs, seed, device=device)
    except BatchProfileError:
        return None
    state = prober.universe.state
    if replicas is None:
        made = [free_bound(state, r.requests) + 1 for r in recs]
        if limit is not None:
            made = [min(m, limit) for m in made]
        rank = np.zeros(len(recs), np.int64)
    else:
        made = [min(n, _room(state, r) + 1) for r, n in zip(recs, replicas)]
        keys = [prober.sort_key(r) for r in recs]
        rank = np.asarray([sorted(set(keys)).index(k) for k in keys], np.int64)
    tmpl = np.repeat(np.arange(len(recs), dtype=np.int64), made)
    index = np.concatenate([np.arange(m, dtype=np.int64) for m in made])
    seq = np.lexsort((tmpl, index, rank[tmpl]))
    tmpl, index = tmpl[seq], index[seq]
    try:
        rows, fails = (prober.place_groups(tmpl) if tmpl.size
                       else (np.zeros(0, np.int64), []))
    except BatchProfileError:
        return None             # copies whose terms select each other
    if any(message is None for _, message in fails):
        return None             # a cluster without nodes: the Scheduler's own text
    failed = {int(tmpl[k]): (k, message) for k, message in fails}
    fits = []
    for t, rec in enumerate(recs):
        tf = TemplateFit(rec.key)
        got, n = np.unique(rows[(tmpl == t) & (rows >= 0)], return_counts=True)
        tf.per_node = {prober.row_name[int(r)]: int(c) for r, c in zip(got, n)}
        tf.count = int(n.sum())
        want = limit if replicas is None else replicas[t]
        if t in failed:
            tf.stop_reason = failed[t][1]
        elif want is None or tf.count < want:
            return None         # bound without a failure within the bound: ask
        fits.append(tf)
    if replicas is None:
        if progress is not None:
            progress(_fill_settled(prober, recs, tmpl, rows, failed, limit))
        report = FitReport("HowManyFit", "", 0, fits, limit=limit, preemptions=[])
    else:
        taken = _taken(work)
        for t, (tf, n) in enumerate(zip(fits, replicas)):
            tf.replicas = n
            tf.not_scheduled = n - tf.count
            if t in failed:
                k, message = failed[t]
                i = int(index[k])
                name = unique_names(recs[t].name, taken, i + 1)[i]
                tf.unschedulable = [{"pod": f"{recs[t].namespace}/{name}", "message": message}]
        if progress is not None and sum(replicas):
            progress(sum(replicas))
        report = FitReport("Replicas", "", 0, fits,
                           fits=all(tf.not_scheduled == 0 for tf in fits), preemptions=[])
    report.evictions = []
    return report


def _fill_settled(prober, recs, tmpl, rows, failed, limit) -> int:
    """How many pods the Scheduler path's fill makes, and settles, for the
    kernel's answer (its ``progress`` total): one at a time while two or
    more templates place, then the last template's chunks (``_Filler.run``'s
    sizes from the free resources after the pods placed so far), the chunk
    that holds its failure settled whole (the rest of it deleted)."""
    # where each template ends: its failure, else its last pod (its limit)
    last = {}
    for t in range(len(recs)):
        own = np.flatnonzero(tmpl == t)
        last[t] = failed[t][0] if t in failed else int(own[-1])
    ends = sorted(last.values())
    settled, lone = 0, max(last, key=last.get)
    boundary = ends[-2] if len(ends) > 1 else -1
    if boundary >= 0:
        head = np.arange(boundary + 1)
        attempted = np.ones(boundary + 1, np.bool_)
        for t, (k, _m) in failed.items():
            attempted &= ~((tmpl[head] == t) & (head > k))
        settled = int(attempted.sum())
    added = prober.added_usage(rows[:boundary + 1], tmpl[:boundary + 1])
    own = np.flatnonzero(tmpl == lone)
    tried = int((own <= boundary).sum())
    count = int((rows[own[:tried]] >= 0).sum())
    fail_at = int(np.searchsorted(own, failed[lone][0])) if lone in failed else None
    state, requests = prober.universe.state, recs[lone].requests
    while limit is None or tried < limit:
        k = min(free_bound(state, requests, added=added) + 1, max(MIN_CHUNK, count), MAX_CHUNK)
        if limit is not None:
            k = min(k, limit - tried)
        settled += k
        if fail_at is not None and fail_at < tried + k:
            break
        chunk = own[tried:tried + k]
        added += prober.added_usage(rows[chunk], tmpl[chunk])
        tried += k
        count += k
    return settled


def _fill(sched: Scheduler, recs, limit, progress) -> FitReport:
    f = _Filler(sched, recs, limit, progress)
    f.run()
    return FitReport("HowManyFit", "", 0, f.fits, limit=limit, preemptions=f.preemptions)
