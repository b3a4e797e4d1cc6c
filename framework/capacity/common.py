"""What the capacity analyses share: fresh copies of a cluster (an analysis
never mutates the Cluster it is given), templates parsed and copied into
many pods or nodes cheaply, resource bounds, and the cyclic GC held off
while hundreds of thousands of records are made."""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Mapping
from contextlib import contextmanager

import numpy as np

from tensorsched.framework.arguments import MAX_ITEMS, Arguments
from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.dra import load_resource_slice
from tensorsched.framework.records.dra_records import ResourceSliceRecord
from tensorsched.framework.parsing.manifests import Objects, parse_node, parse_pod
from tensorsched.framework.parsing.meta import source_of
from tensorsched.framework.parsing.node_lifecycle import uncordoned_record
from tensorsched.framework.records.records import NodeRecord, PodRecord
from tensorsched.framework.scheduler.cluster import TERMINAL_PHASES, Cluster, build_cluster
from tensorsched.framework.state.volumes import volume_catalog
from tensorsched.kernels import layout as L

HOSTNAME_LABEL = "kubernetes.io/hostname"

_new = object.__new__


@contextmanager
def no_gc():
    """The cyclic GC off (records are acyclic; a gen-2 pass over 400,000
    of them costs more than the scheduling)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def fresh_cluster(cluster: Cluster, nodes=None, pods=None, slices=None) -> Cluster:
    """A new Cluster of ``cluster``'s objects (its configuration and
    registry), with ``nodes`` / ``pods`` / ResourceSlice ``slices`` (records)
    in place of the loaded ones when given.  The given cluster is not touched."""
    objs: Objects = cluster.objects
    changes = {}
    if nodes is not None:
        changes["nodes"] = list(nodes)
    if pods is not None:
        changes["pods"] = list(pods)
    if slices is not None:
        changes["resource_slices"] = list(slices)
    if changes:
        objs = dataclasses.replace(objs, **changes)
    fresh = build_cluster(objs, cluster.config, cluster.registry)
    # claims keep the volumes scheduling bound them to: their pods follow them
    volume_catalog(fresh.state).adopt(volume_catalog(cluster.state))
    return fresh


def bound_pods(cluster: Cluster) -> list[PodRecord]:
    """The loaded pods bound to a node (not in a terminal phase)."""
    return [p for p in cluster.objects.pods if p.node_name and p.phase not in TERMINAL_PHASES]


def pod_template(cluster: Cluster, template, what: str = "template") -> PodRecord:
    """A Pod template (a dict or a PodRecord) parsed, checked and resolved
    (priority) against ``cluster``.  A template must be a pending Pod."""
    if isinstance(template, PodRecord):
        rec = template
    else:
        if not isinstance(template, dict):
            raise ManifestError(what, "", f"expected a Pod object, got {type(template).__name__}")
        kind = template.get("kind", "Pod")
        if kind != "Pod":
            raise ManifestError(source_of(template) or what, "kind",
                                f"a {what} must be a Pod, got {kind!r}")
        rec = parse_pod(template)
    if rec.node_name:
        raise ManifestError(f"Pod {rec.key}", "spec.nodeName",
                            f"a {what} must not be bound to a node", source_of(rec.obj))
    return cluster.resolve(rec)


def node_template(template, what: str = "node template") -> NodeRecord:
    """A Node template (a dict or a NodeRecord), parsed."""
    if isinstance(template, NodeRecord):
        return template
    if not isinstance(template, dict):
        raise ManifestError(what, "", f"expected a Node object, got {type(template).__name__}")
    kind = template.get("kind", "Node")
    if kind != "Node":
        raise ManifestError(source_of(template) or what, "kind",
                            f"a {what} must be a Node, got {kind!r}")
    return parse_node(template)


def pod_copies(template: PodRecord, names) -> list[PodRecord]:
    """Pods of ``template`` named ``names`` (same namespace).  Copies share
    the template's fields, its object and its memo (derived values: the
    query signature, compiled terms; none depends on the name), so a
    copy costs a dict copy."""
    base = dict(template.__dict__)
    base["uid"] = ""
    out = []
    for name in names:
        fields = base.copy()
        fields["name"] = name
        fields["key"] = f"{template.namespace}/{name}"
        rec = _new(PodRecord)
        rec.__dict__ = fields
        out.append(rec)
    return out


def node_copies(template: NodeRecord, names) -> list[NodeRecord]:
    """Nodes of ``template`` named ``names`` (``kubernetes.io/hostname`` set
    to each name, as the kubelet sets it), joining uncordoned: a template
    copied from a cordoned node gives nodes without ``spec.unschedulable``
    and its taint."""
    template = uncordoned_record(template)
    out = []
    for name in names:
        labels = dict(template.labels)
        labels[HOSTNAME_LABEL] = name
        out.append(dataclasses.replace(template, name=name, labels=labels))
    return out


def slice_template(template, node: NodeRecord, what: str = "node template") -> list:
    """The ResourceSlices (dicts or records) that come with a node template:
    parsed with the API server's checks, each local to the template node
    (``spec.nodeName`` its name)."""
    out = []
    for s in template or ():
        rec = s if isinstance(s, ResourceSliceRecord) else load_resource_slice(s)
        if rec.node_name != node.name:
            raise ManifestError(f"ResourceSlice {rec.name}", "spec.nodeName",
                                f"a {what}'s slice must be local to node {node.name!r}, "
                                f"got {rec.node_name!r}", source_of(rec.obj))
        out.append(rec)
    return out


def slice_copies(slices: list, template: NodeRecord, names) -> list:
    """The slices of each added node ``names[i]``: the template's with the
    node, and the template node's name in the slice and pool names, replaced."""
    out = []
    for name in names:
        for rec in slices:
            pool = rec.pool
            pool_name = (name if pool.name == template.name
                         else pool.name.replace(template.name, name))
            if pool_name == pool.name:
                pool_name = f"{pool.name}-{name}"
            slice_name = (rec.name.replace(template.name, name) if template.name in rec.name
                          else f"{rec.name}-{name}")
            out.append(dataclasses.replace(
                rec, name=slice_name, node_name=name,
                pool=dataclasses.replace(pool, name=pool_name)))
    return out


def unique_names(prefix: str, taken, count: int, start: int = 0) -> list[str]:
    """``count`` names ``<prefix>-<i>`` (i from ``start``) not in ``taken``."""
    out = []
    i = start
    while len(out) < count:
        name = f"{prefix}-{i}"
        if name not in taken:
            out.append(name)
        i += 1
    return out


def free_bound(state, requests: dict[str, int], *, preemptible_below: int | None = None,
               added: np.ndarray | None = None) -> int:
    """An upper bound on how many more pods requesting ``requests`` fit on
    the state's nodes by resources alone (per node the least of free /
    request over the requested resources and the free pod slots).
    ``preemptible_below``: a priority; what the bound pods of lower
    priority hold counts as free (a preemptor may evict them).  ``added``:
    [node rows, resources] int64 requested on top of the state's (pods
    placed since, the pods column counting them)."""
    rows = state.valid_rows()
    if rows.size == 0:
        return 0
    cols = state.columns()
    nres = cols.allocatable.shape[1]
    used = cols.requested[rows]
    if added is not None:
        used = used + added[rows, :nres]
    if preemptible_below is not None:
        used = used - _held_below(state, preemptible_below, nres)[rows]
    free = np.maximum(cols.allocatable[rows] - used, 0)
    per_node = free[:, L.RES_PODS].copy()
    for name, amount in requests.items():
        if amount <= 0 or name == "pods":
            continue
        col = state.resources.get(name)
        if col < 0 or col >= nres:
            return 0
        per_node = np.minimum(per_node, free[:, col] // amount)
    per_node[state.unschedulable[rows]] = 0
    return int(per_node.sum())


def _held_below(state, priority: int, nres: int) -> np.ndarray:
    """[node rows, resources] int64: what the bound pods of priority below
    ``priority`` request (the ``pods`` column counts them)."""
    held = np.zeros((state.allocatable.shape[0], nres), np.int64)
    cols = state.pods.arrays()
    low = cols["priority"] < priority
    if low.any():
        req = cols["request"][low]
        width = min(req.shape[1], nres)
        np.add.at(held[:, :width], cols["node_row"][low], req[:, :width])
    return held


def node_utilization(state, name: str) -> float:
    """The node's largest requested / allocatable share over cpu and memory
    (cluster-autoscaler's utilization)."""
    row = state.node_rows[name]
    best = 0.0
    for col in (L.RES_CPU, L.RES_MEMORY):
        alloc = int(state.allocatable[row, col])
        if alloc > 0:
            best = max(best, int(state.requested[row, col]) / alloc)
    return best



def capacity_arguments(function: str, cluster, backend, seed, progress) -> Arguments:
    """The arguments every capacity question shares, checked in the name of
    ``function``; returns its :class:`Arguments` for the rest."""
    args = Arguments(function)
    args.instance("cluster", cluster, Cluster, "a Cluster (build_cluster)")
    args.backend(backend)
    args.seed(seed)
    args.callback("progress", progress, optional=True)
    return args


def object_list(args: Arguments, name: str, value, record: type, kind: str, *,
                nonempty: bool = False) -> list:
    """A list of ``kind`` dicts or records (``record``): templates, at most
    ``MAX_ITEMS`` (an endless generator of them is refused, not listed)."""
    return args.sequence(name, value, (Mapping, record), f"a {kind} dict or {record.__name__}",
                         f"{kind} dicts or {record.__name__}s", nonempty=nonempty,
                         limit=MAX_ITEMS)
