"""Typed capacity reports and their versioned document form.

Every report's ``to_dict()`` is a ``CapacityReport`` document::

    apiVersion: tensorsched.io/v1alpha1
    kind: CapacityReport
    spec:   {mode, backend, seed, ...}       # what was asked
    status: {...}                            # the answer

``mode`` is ``HowManyFit``, ``Replicas``, ``NodesToAdd`` or ``Drain``; the
fields of each are documented in the README ("Capacity planning").  Keys
are camelCase as in Kubernetes objects; maps of node -> count are sorted by
node name, so equal answers give equal documents.  ``table()`` is the
terminal form.
"""

from __future__ import annotations

from dataclasses import dataclass, field

API_VERSION = "tensorsched.io/v1alpha1"
KIND = "CapacityReport"

__all__ = ["API_VERSION", "KIND", "TemplateFit", "FitReport", "Probe", "NodeTemplateResult",
           "NodesReport", "NodeDrain", "DrainReport"]


def _doc(mode: str, backend: str, seed: int, spec: dict, status: dict) -> dict:
    return {"apiVersion": API_VERSION, "kind": KIND,
            "spec": {"mode": mode, "backend": backend, "seed": seed, **spec},
            "status": status}


def _placement(moves: dict[str, str]) -> list[dict]:
    return [{"pod": p, "node": n} for p, n in moves.items()]


def _counts(per_node: dict[str, int]) -> dict[str, int]:
    return {n: per_node[n] for n in sorted(per_node)}


# ------------------------------------------------------------------ fit

@dataclass
class TemplateFit:
    """One Pod template's answer: ``count`` pods placed (on ``per_node``),
    and why the next one did not fit (``stop_reason``: its FailedScheduling
    message; None when it stopped at ``limit`` or all requested replicas
    fit).  In Replicas mode: ``replicas`` asked, ``not_scheduled`` of them
    (``replicas - count``), and ``unschedulable``: the first pod that fit
    nowhere, which ended the template (the pods after it are counted in
    ``not_scheduled``, not tried)."""

    name: str
    count: int = 0
    per_node: dict[str, int] = field(default_factory=dict)
    stop_reason: str | None = None
    replicas: int | None = None
    unschedulable: list[dict] = field(default_factory=list)   # {"pod", "message"}
    not_scheduled: int = 0

    def to_dict(self, replicas_mode: bool) -> dict:
        if replicas_mode:
            return {"name": self.name, "replicas": self.replicas, "scheduled": self.count,
                    "notScheduled": self.not_scheduled,
                    "unschedulable": list(self.unschedulable), "nodes": _counts(self.per_node)}
        return {"name": self.name, "count": self.count, "stopReason": self.stop_reason,
                "nodes": _counts(self.per_node)}


@dataclass
class FitReport:
    """``how_many_fit``: how many more of each template fit (HowManyFit), or
    whether a set of replicas fits (Replicas, ``fits`` set)."""

    mode: str
    backend: str
    seed: int
    templates: list[TemplateFit]
    fits: bool | None = None
    limit: int | None = None
    preemptions: list[dict] = field(default_factory=list)
    evictions: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(t.count for t in self.templates)

    def to_dict(self) -> dict:
        replicas = self.mode == "Replicas"
        if replicas:
            spec = {"templates": [{"name": t.name, "replicas": t.replicas}
                                  for t in self.templates]}
            status = {"fits": self.fits}
        else:
            spec = {"templates": [t.name for t in self.templates], "limit": self.limit}
            status = {"total": self.total}
        status["templates"] = [t.to_dict(replicas) for t in self.templates]
        status["preemptions"] = list(self.preemptions)
        status["evictions"] = list(self.evictions)
        return _doc(self.mode, self.backend, self.seed, spec, status)

    def table(self) -> list[str]:
        lines = []
        if self.mode == "Replicas":
            lines.append(f"{'template':<32} {'replicas':>9} {'scheduled':>9} {'unschedulable':>13}")
            for t in self.templates:
                lines.append(f"{t.name:<32} {t.replicas:>9} {t.count:>9} "
                             f"{t.not_scheduled:>13}")
            for t in self.templates:
                for u in t.unschedulable:
                    lines.append(f"  {u['pod']} !! {u['message']}")
                rest = t.not_scheduled - len(t.unschedulable)
                if rest > 0:
                    lines.append(f"  ... {rest} more of {t.name} not scheduled (counted, "
                                 "not tried: the first that fit nowhere ends the template)")
            lines.append("fits" if self.fits else "does not fit")
        else:
            lines.append(f"{'template':<32} {'fit':>9} {'nodes':>6}  stop reason")
            for t in self.templates:
                lines.append(f"{t.name:<32} {t.count:>9} {len(t.per_node):>6}  "
                             f"{t.stop_reason or ('limit reached' if self.limit else '-')}")
            lines.append(f"total {self.total}")
        if self.preemptions:
            lines.append(f"{len(self.preemptions)} preemptions, {len(self.evictions)} evictions")
        return lines


# ------------------------------------------------------------------ nodes to add

@dataclass
class Probe:
    """One trial schedule of the workloads with ``nodes`` template nodes added."""

    nodes: int
    scheduled: int
    unschedulable: int
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"nodes": self.nodes, "scheduled": self.scheduled,
                "unschedulable": self.unschedulable}


@dataclass
class NodeTemplateResult:
    """The search for one node template: the fewest nodes of it to add
    (``nodes_to_add``; None when even ``max_nodes`` does not schedule every
    pod), the resource lower bound, every probe, and the placement of the
    answer (or of the last probe when none schedules everything)."""

    template: str
    fits: bool
    nodes_to_add: int | None
    lower_bound: int
    search: str
    probes: list[Probe] = field(default_factory=list)
    added_nodes: list[str] = field(default_factory=list)
    placement: dict[str, str] = field(default_factory=dict)
    unschedulable: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"name": self.template, "fits": self.fits, "nodesToAdd": self.nodes_to_add,
                "lowerBound": self.lower_bound, "search": self.search,
                "probes": [p.to_dict() for p in sorted(self.probes, key=lambda p: p.nodes)]}


@dataclass
class NodesReport:
    """``nodes_to_add``: the best node template (fewest nodes; the first
    given on a tie) and every template's search."""

    backend: str
    seed: int
    pods: int
    results: list[NodeTemplateResult]
    max_nodes: int | None = None
    seconds: float = 0.0
    # which path ran the probes (not part of the document: both give it)
    probe_path: str = "per probe"

    @property
    def best(self) -> NodeTemplateResult | None:
        ok = [r for r in self.results if r.fits]
        return min(ok, key=lambda r: r.nodes_to_add) if ok else None

    @property
    def fits(self) -> bool:
        return self.best is not None

    @property
    def nodes_to_add(self) -> int | None:
        b = self.best
        return None if b is None else b.nodes_to_add

    def to_dict(self) -> dict:
        b = self.best
        shown = b if b is not None else (self.results[-1] if self.results else None)
        status = {"fits": b is not None,
                  "nodesToAdd": None if b is None else b.nodes_to_add,
                  "nodeTemplate": None if b is None else b.template,
                  "search": None if shown is None else shown.search,
                  "lowerBound": None if shown is None else shown.lower_bound,
                  "addedNodes": [] if b is None else list(b.added_nodes),
                  "placement": [] if shown is None else _placement(shown.placement),
                  "unschedulable": [] if shown is None else list(shown.unschedulable),
                  "nodeTemplates": [r.to_dict() for r in self.results]}
        spec = {"pods": self.pods, "nodeTemplates": [r.template for r in self.results],
                "maxNodes": self.max_nodes}
        return _doc("NodesToAdd", self.backend, self.seed, spec, status)

    def table(self) -> list[str]:
        lines = [f"{'node template':<32} {'nodes to add':>12} {'lower bound':>11} {'probes':>6}  search"]
        for r in self.results:
            n = r.nodes_to_add if r.fits else "-"
            lines.append(f"{r.template:<32} {n!s:>12} {r.lower_bound:>11} {len(r.probes):>6}  "
                         f"{r.search}")
        b = self.best
        if b is None:
            last = self.results[-1] if self.results else None
            lines.append(f"no node template schedules all {self.pods} pods")
            if last is not None:
                for u in last.unschedulable[:10]:
                    lines.append(f"  {u['pod']} !! {u['message']}")
        else:
            per_node: dict[str, int] = {}
            for node in b.placement.values():
                per_node[node] = per_node.get(node, 0) + 1
            on_new = sum(per_node.get(n, 0) for n in b.added_nodes)
            lines.append(f"add {b.nodes_to_add} x {b.template}: all {self.pods} pods schedule "
                         f"({on_new} on the added nodes)")
        return lines


# ------------------------------------------------------------------ drain

@dataclass
class NodeDrain:
    """One node: whether it can go with every pod it runs rescheduled
    elsewhere (``moves``: pod -> new node) and no PodDisruptionBudget
    violated; ``reason`` says why not; ``staying`` are its DaemonSet and
    mirror pods (they go with the node)."""

    node: str
    removable: bool
    reason: str = ""
    moves: dict[str, str] = field(default_factory=dict)
    staying: list[str] = field(default_factory=list)
    utilization: float = 0.0
    # pods whose bound volumes' node affinity decides where they can go
    # (pod -> those volumes): they move only where their disks reach
    pinned: dict[str, list] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"name": self.node, "removable": self.removable, "reason": self.reason,
                "utilization": round(self.utilization, 4), "pods": _placement(self.moves),
                "staying": list(self.staying),
                "pinnedByVolumes": [{"pod": k, "volumes": list(v)}
                                    for k, v in sorted(self.pinned.items())]}


@dataclass
class DrainReport:
    """``removable_nodes``: each candidate on its own, and the largest set
    found that can go together (``set_search`` says how it was searched)."""

    backend: str
    seed: int
    nodes: list[NodeDrain]
    removable_set: list[str] = field(default_factory=list)
    set_search: str = ""
    set_moves: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    # which path ran the trials (not part of the document: both give it)
    probe_path: str = "per probe"

    @property
    def removable(self) -> list[str]:
        return [n.node for n in self.nodes if n.removable]

    def to_dict(self) -> dict:
        spec = {"candidates": [n.node for n in self.nodes]}
        status = {"removable": self.removable,
                  "nodes": [n.to_dict() for n in self.nodes],
                  "removableSet": {"nodes": list(self.removable_set), "search": self.set_search,
                                   "pods": _placement(self.set_moves)}}
        return _doc("Drain", self.backend, self.seed, spec, status)

    def table(self) -> list[str]:
        width = max([len("node")] + [len(n.node) for n in self.nodes]) + 1
        lines = [f"{'node':<{width}} {'util':>5} {'removable':>9} {'pods':>5}  reason"]
        for n in self.nodes:
            lines.append(f"{n.node:<{width}} {n.utilization:>5.2f} "
                         f"{'yes' if n.removable else 'no':>9} {len(n.moves):>5}  {n.reason}")
        lines.append(f"removable together ({self.set_search}): "
                     + (", ".join(self.removable_set) or "none"))
        return lines
