"""The fewest nodes to add so that every pod of some workloads schedules
(cluster-autoscaler's scale-up question), answered by the Scheduler.

``nodes_to_add(cluster, workloads, node_templates)``: for each node
template on its own (a node group, as cluster-autoscaler's expanders choose
one), a lower bound from resources, then a search on the count of added
nodes in which every probe is a real ``schedule_pending`` of all the
workload pods on a fresh cluster (the loaded bound pods plus ``n`` nodes of
the template; the given cluster is never modified):

- lower bound: for every resource the pods request (and the pod count), the
  part of the pods' total that the existing nodes' free room (allocatable
  minus requested, plus what pods of lower priority than the workloads
  hold, which preemption may take) cannot take, divided by what one
  template node offers, rounded up; the largest over resources;
- the bound is probed; if some pod does not schedule, the count grows
  exponentially (steps 1, 2, 4, ..., each at least the nodes the pods left
  over by the last probe need by resources) until every pod schedules, and a
  binary search between the last failing and the first succeeding count
  finds the smallest count that schedules everything, at most ``max_nodes``
  (default: the bound plus the number of pods).

Scores and spreading make "schedules with n nodes" not monotone in n in
general; the answer ``n`` is verified (``search: "...verified"``): the
probe with ``n`` nodes scheduled every pod (its placement is the report's)
and the probe with ``n - 1`` did not (or ``n`` is the resource bound, below
which nothing can fit).  The best template is the one needing the fewest
nodes (the first given on a tie).

Workloads are Pod dicts, controllers (Deployments, ReplicaSets,
StatefulSets, Jobs, ReplicationControllers: expanded into their pods by
``parsing.controllers.expand_workloads``) or PodRecords; added nodes are
named ``<template>-<i>`` with ``kubernetes.io/hostname`` set to the name.
Pending pods of the cluster itself are not part of the question (as in
``how_many_fit``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping

from tensorsched.framework.arguments import MAX_ITEMS
from tensorsched.framework.parsing.controllers import MAX_EXPANDED_PODS, expand_workloads
from tensorsched.framework.parsing.manifests import parse_objects
from tensorsched.framework.parsing.priorities import pod_priority
from tensorsched.framework.records.dra_records import ResourceSliceRecord
from tensorsched.framework.records.records import NodeRecord, PodRecord
from tensorsched.framework.scheduler.cluster import Cluster
from tensorsched.framework.scheduler.events import Binding
from tensorsched.framework.scheduler.scheduler import Scheduler

from .common import (
    bound_pods,
    capacity_arguments,
    fresh_cluster,
    no_gc,
    node_copies,
    node_template,
    object_list,
    slice_copies,
    slice_template,
    unique_names,
)
from .batch_probe import (
    BatchProfileError,
    LocalProber,
    batched_backend,
    probe_path,
    speculation_levels,
)
from .limits import MAX_NODES
from .report import NodesReport, NodeTemplateResult, Probe

__all__ = ["nodes_to_add", "workload_pods", "lower_bound"]


def workload_pods(cluster: Cluster, workloads) -> list[PodRecord]:
    """The pods of ``workloads`` (dicts of Pods and controllers, or
    PodRecords), parsed and resolved against ``cluster``'s PriorityClasses."""
    records = [w for w in workloads if isinstance(w, PodRecord)]
    dicts = [w for w in workloads if not isinstance(w, PodRecord)]
    if dicts:
        pods, _ = expand_workloads(dicts)
        records.extend(parse_objects(pods).pods)
    return [cluster.resolve(p) for p in records]


def lower_bound(cluster: Cluster, pods: list[PodRecord], template) -> int | None:
    """The resource lower bound on template nodes to add (see the module
    doc); None when the template lacks a resource the pods need beyond the
    existing nodes' room."""
    need: dict[str, int] = {"pods": len(pods)}
    for p in pods:
        for name, amount in p.requests.items():
            if name != "pods" and amount > 0:
                need[name] = need.get(name, 0) + amount
    # pods of lower priority than a preempting workload pod may be evicted
    preempting = [pod_priority(p) for p in pods if p.preemption_policy != "Never"]
    top = max(preempting, default=None)
    room: dict[str, int] = {}
    for node in cluster.objects.nodes:
        if node.unschedulable:
            continue
        for name in need:
            room[name] = room.get(name, 0) + node.allocatable.get(name, 0)
    schedulable = {n.name for n in cluster.objects.nodes if not n.unschedulable}
    held: dict[str, int] = {}
    for p in bound_pods(cluster):
        if p.node_name not in schedulable or (top is not None and pod_priority(p) < top):
            continue
        held["pods"] = held.get("pods", 0) + 1
        for name, amount in p.requests.items():
            if name in need:
                held[name] = held.get(name, 0) + amount
    best = 0
    for name, total in need.items():
        short = total - max(room.get(name, 0) - held.get(name, 0), 0)
        if short <= 0:
            continue
        per_node = template.allocatable.get(name, 0)
        if per_node <= 0:
            return None
        best = max(best, math.ceil(short / per_node))
    return best


class _Search:
    def __init__(self, cluster, pods, template, backend, seed, progress, slices=(),
                 batch=True):
        self.cluster = cluster
        self.slices = list(slices)        # the template's ResourceSlices (DRA devices)
        self.base_slices = list(cluster.objects.resource_slices)
        self.pods = pods
        self.template = template
        self.backend = backend
        self.seed = seed
        self.progress = progress
        taken = {n.name for n in cluster.objects.nodes}
        self.taken = taken
        self.names: list[str] = []
        self.nodes: list = []
        self.base_nodes = list(cluster.objects.nodes)
        self.base_pods = bound_pods(cluster)
        self.probes: dict[int, tuple[Probe, list]] = {}
        self.cap = 0                    # the largest count the search may probe
        # the batched path: a LocalProber over the base nodes and the first
        # ``len(prober nodes) - len(base)`` template nodes; None per probe
        self.batched = batched_backend(backend) if batch else ""
        self.prober: LocalProber | None = None
        self.refused: str = ""          # why the batch was refused ("" = not refused)
        self.speculated: dict[int, tuple[Probe, list]] = {}
        # levels of the binary search evaluated per batched call (2**levels - 1
        # counts): wide on a GPU, about the cores on the CPU twin
        self.levels = speculation_levels(self.batched)

    def added(self, n: int) -> list:
        if n > len(self.nodes):
            more = unique_names(self.template.name, self.taken | set(self.names),
                                n - len(self.nodes),
                                start=len(self.nodes) and int(self.names[-1].rsplit("-", 1)[1]) + 1)
            self.names.extend(more)
            self.nodes.extend(node_copies(self.template, more))
        return self.nodes[:n]

    def probe(self, n: int) -> bool:
        got = self.probes.get(n)
        if got is None:
            got = self.speculated.pop(n, None)
            if got is None and self._prober_for([n]) is not None:
                self._batch([n])
                got = self.speculated.pop(n)
            if got is None:
                got = self._schedule(n)
            self.probes[n] = got
            if self.progress is not None:
                self.progress(n)
        return got[0].unschedulable == 0

    def _schedule(self, n: int) -> tuple[Probe, list]:
        """Probe ``n`` through the Scheduler: a fresh cluster, ``schedule_pending``."""
        t0 = time.perf_counter()
        added = self.added(n)
        slices = (self.base_slices + slice_copies(self.slices, self.template,
                                                  [a.name for a in added])
                  if self.slices else None)
        work = fresh_cluster(self.cluster, nodes=self.base_nodes + added,
                             pods=self.base_pods, slices=slices)
        sched = Scheduler(work, self.backend, self.seed, batch=True)
        bindings, _ = sched.schedule_pending(self.pods)
        ok = sum(1 for b in bindings if b.node is not None)
        return Probe(n, ok, len(bindings) - ok, time.perf_counter() - t0), bindings

    def _prober_for(self, counts) -> LocalProber | None:
        """The batched prober covering ``counts`` added nodes (built, or
        rebuilt larger, on demand); None when the batch does not run."""
        if not self.batched or self.refused or self.slices:
            return None
        top = max(counts)
        have = self.prober
        if have is not None and len(have.universe.objects.nodes) - len(self.base_nodes) >= top:
            return have
        # room to grow (a rebuild costs a cluster build): twice what is asked
        size = min(2 * top + 16, max(top, self.cap))
        if have is not None:
            size = max(size, 2 * (len(have.universe.objects.nodes) - len(self.base_nodes)))
        try:
            self.prober = LocalProber(self.cluster, self.base_nodes + self.added(size),
                                      self.base_pods, self.pods, self.seed,
                                      device=self.batched)
        except BatchProfileError as exc:
            self.refused = str(exc)
            self.prober = None
        return self.prober

    def _batch(self, counts) -> None:
        """Probes ``counts`` as one batched call, kept in ``speculated``
        until the search asks for them.  Pods that do not fit get their
        message when a report shows them (``_result``)."""
        counts = [n for n in dict.fromkeys(counts)
                  if n not in self.probes and n not in self.speculated]
        prober = self._prober_for(counts) if counts else None
        if prober is None:
            return
        t0 = time.perf_counter()
        everyone = list(range(len(self.pods)))
        base = [n.name for n in self.base_nodes]
        runs = prober.run([base + self.names[:n] for n in counts], [everyone] * len(counts))
        each = (time.perf_counter() - t0) / len(counts)
        for n, placed in zip(counts, runs):
            bindings = [Binding(self.pods[i].key, node) for i, node in placed]
            ok = sum(1 for b in bindings if b.node is not None)
            self.speculated[n] = (Probe(n, ok, len(bindings) - ok, each), bindings)

    def _messages(self, n: int) -> list | None:
        """Probe ``n``'s Bindings with every failed pod's FailedScheduling
        message, in the order of the attempts, from one batched call; None
        when the batch does not cover it (or the probe has no node)."""
        prober = self._prober_for([n])
        if prober is None:
            return None
        base = [x.name for x in self.base_nodes]
        placed, fails = prober.run_failures([base + self.names[:n]],
                                            [list(range(len(self.pods)))], len(self.pods))[0]
        message = dict(fails)
        if None in message.values():
            return None
        return [Binding(self.pods[i].key, node) if node is not None
                else Binding(self.pods[i].key, None, message[i]) for i, node in placed]

    def path(self) -> str:
        """Which path answered this template's probes."""
        if self.prober is not None:
            return f"batched ({self.batched})"
        return f"per probe ({self.refused})" if self.refused else "per probe"

    def speculate(self, lo: int, hi: int) -> None:
        """The counts the binary search between ``lo`` (fails) and ``hi``
        (schedules every pod) may visit in its next levels, as one batch."""
        if not self.batched or self.refused or self.slices:
            return
        levels = self.levels
        todo = []
        spans = [(lo, hi)]
        for _ in range(levels):
            nxt = []
            for a, b in spans:
                if b - a > 1:
                    mid = (a + b) // 2
                    todo.append(mid)
                    nxt.extend(((a, mid), (mid, b)))
            spans = nxt
        if len(todo) > 1:
            self._batch(todo)

    def shortfall(self, n: int) -> int:
        """Template nodes the pods left unscheduled by probe ``n`` need by
        resources (a step for the search, not a bound)."""
        left = {b.pod for b in self.probes[n][1] if b.node is None}
        need: dict[str, int] = {"pods": len(left)}
        for p in self.pods:
            if p.key in left:
                for name, amount in p.requests.items():
                    need[name] = need.get(name, 0) + amount
        best = 0
        for name, total in need.items():
            per_node = self.template.allocatable.get(name, 0)
            if per_node > 0 and total > 0:
                best = max(best, math.ceil(total / per_node))
        return best

    def run(self, max_nodes: int | None) -> NodeTemplateResult:
        name = self.template.name
        lb = lower_bound(self.cluster, self.pods, self.template)
        if lb is None:
            return NodeTemplateResult(name, False, None, 0,
                                      "none: the template lacks a resource the pods need")
        cap = max_nodes if max_nodes is not None else lb + len(self.pods)
        self.cap = cap
        if lb > cap:
            self.probe(cap)                 # to say which pods do not fit
            return self._result(None, lb, f"none: the resource bound {lb} is above "
                                          f"max nodes {cap}")
        if self.probe(lb):
            return self._result(lb, lb, "resource lower bound, verified (schedules every pod)")
        lo, step = lb, 1
        hi = None
        while True:
            # grow exponentially, at least by what the pods left over need
            n = min(lo + max(step, self.shortfall(lo)), cap)
            if self.probe(n):
                hi = n
                break
            lo = n
            if n >= cap:
                break
            step *= 2
        if hi is None:
            res = self._result(None, lb, f"exponential up to max nodes {cap}: "
                                         "some pods never schedule")
            return res
        while hi - lo > 1:
            if (lo + hi) // 2 not in self.speculated:
                self.speculate(lo, hi)
            mid = (lo + hi) // 2
            if self.probe(mid):
                hi = mid
            else:
                lo = mid
        return self._result(hi, lb, f"exponential+binary, verified ({hi} schedules every pod, "
                                    f"{hi - 1} does not)")

    def _result(self, n: int | None, lb: int, search: str) -> NodeTemplateResult:
        probes = [p for p, _ in self.probes.values()]
        shown = n if n is not None else max(self.probes)
        probe, bindings = self.probes[shown]
        if probe.unschedulable:
            # the messages (and their order: the attempts') are the
            # Scheduler's own, from the kernel's diagnosis where it covers
            bindings = self._messages(shown) or self._schedule(shown)[1]
        placement = {b.pod: b.node for b in bindings if b.node is not None}
        unsched = [{"pod": b.pod, "message": b.message} for b in bindings if b.node is None]
        return NodeTemplateResult(self.template.name, n is not None, n, lb, search, probes,
                                  self.names[:n] if n is not None else [], placement, unsched)


def nodes_to_add(cluster: Cluster, workloads, node_templates, *, backend: str = "numba",
                 seed: int = 0, max_nodes: int | None = None,
                 progress: Callable[[int], None] | None = None,
                 template_slices=None, batch: bool = True) -> NodesReport:
    """The fewest nodes of the template(s) (Node dicts or NodeRecords) to add
    to ``cluster`` so every pod of ``workloads`` schedules; see the module
    doc.  ``progress(n)`` is called after each probe (``n`` nodes added).
    ``template_slices[i]``: the ResourceSlices (dicts or records, local to
    template ``i``'s node) every added node of that template publishes, so
    DRA pods can use its devices.  ``batch``: probes run as batches of the
    node-local kernel where it covers the profile and the pods (numba, auto:
    the CPU twin; cuda: the device; ``probe_path`` of the report says which
    ran); False, or numpy: every probe through the Scheduler.  The answers
    are the same.  The cluster is not modified."""
    args = capacity_arguments("nodes_to_add", cluster, backend, seed, progress)
    workloads = args.sequence("workloads", workloads, (Mapping, PodRecord),
                              "a Pod or controller dict, or a PodRecord",
                              "Pod and controller dicts or PodRecords",
                              limit=MAX_EXPANDED_PODS)   # each at least one pod, or none
    node_templates = object_list(args, "node_templates", node_templates, NodeRecord, "Node",
                                 nonempty=True)
    max_nodes = args.integer("max_nodes", max_nodes, 0, MAX_NODES, optional=True)
    args.flag("batch", batch)
    template_slices = args.sequence("template_slices", template_slices, object,
                                    "a list of ResourceSlices", "lists of ResourceSlices",
                                    optional=True, limit=MAX_ITEMS) or []
    template_slices = [object_list(args, f"template_slices[{i}]", each, ResourceSliceRecord,
                                   "ResourceSlice") for i, each in enumerate(template_slices)]
    if len(template_slices) > len(node_templates):
        raise args.error("template_slices", f"has {len(template_slices)} lists for "
                         f"{len(node_templates)} node templates")
    t0 = time.perf_counter()
    with no_gc():
        templates = [node_template(t) for t in node_templates]
        slices = list(template_slices)
        slices += [()] * (len(templates) - len(slices))
        slices = [slice_template(s, t) for s, t in zip(slices, templates)]
        pods = workload_pods(cluster, workloads)
        searches = [_Search(cluster, pods, t, backend, seed, progress, s, batch)
                    for t, s in zip(templates, slices)]
        results = [s.run(max_nodes) for s in searches]
    report = NodesReport(backend, seed, len(pods), results, max_nodes,
                         time.perf_counter() - t0)
    report.probe_path = probe_path(s.path() for s in searches)
    return report
