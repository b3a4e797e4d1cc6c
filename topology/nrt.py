"""NodeResourceTopology objects (``topology.node.k8s.io/v1alpha2``, as the
NFD topology-updater or the resource-topology-exporter publish them):
read by ``manifests.parse_objects`` when the GPU plugin set is registered
(``topology.plugins.register``) and attached to the ClusterState by
``build_cluster``, so the GPU plugins' table (``topology.gpu_table``) takes
each node's NUMA nodes, NVLink islands and single-numa-node policy from the
NRT named after it, with no extra flag.  The field mapping is the one of
``topology.node_topology`` (module doc); an NRT wins over the node's
``topology.tensorsched.io/gpu`` annotation.

Validated here, with the object and field path in the error (the parser in
``topology.node_topology`` then trusts its input): ``apiVersion`` (group
``topology.node.k8s.io``), ``metadata.name``, ``topologyPolicies`` (strings),
``attributes`` and each zone's ``attributes`` ({name, value} strings; a
zone's ``gpu-indices`` a comma list of GPU indices 0..15), ``zones[i]``
(``name`` and ``type`` strings, ``parent``), ``costs`` ({name, integer
value}), ``resources`` ({name, capacity / allocatable / available
quantities}; ``nvidia.com/gpu`` a whole number).  An NRT for a node that is
not loaded is kept and ignored (upstream keeps stale NRTs too).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tensorsched.framework.objects.meta import ObjectKind, identity
from tensorsched.framework.objects.quantity import parse_quantity

from .gpu_table import attach_node_topologies
from .node_topology import MAX_GPUS, NodeTopology, from_nrt

KIND = "NodeResourceTopology"
API_GROUP = "topology.node.k8s.io"
_QTY_FIELDS = ("capacity", "allocatable", "available")
_MAX_GPU_INDEX = MAX_GPUS - 1


@dataclass
class NrtRecord:
    name: str                  # the node's name
    topology: NodeTopology
    obj: dict = field(repr=False, default_factory=dict)


def _attributes(ctx, value, path: str) -> None:
    for j, a in enumerate(ctx.list(value, path)):
        apath = f"{path}[{j}]"
        a = ctx.mapping(a, apath)
        name = ctx.string(a.get("name"), f"{apath}.name", required=True)
        text = ctx.string(a.get("value"), f"{apath}.value")
        if name == "gpu-indices":
            for part in text.replace("-", ",").split(","):
                part = part.strip()
                if part == "":
                    continue
                if not part.isdigit() or int(part) > _MAX_GPU_INDEX:
                    ctx.fail(f"{apath}.value", f"GPU indices must be integers 0..{_MAX_GPU_INDEX} "
                             f"separated by commas, got {text!r}")


def _resources(ctx, value, path: str) -> None:
    for j, r in enumerate(ctx.list(value, path)):
        rpath = f"{path}[{j}]"
        r = ctx.mapping(r, rpath)
        name = ctx.string(r.get("name"), f"{rpath}.name", required=True)
        for key in _QTY_FIELDS:
            v = r.get(key)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                ctx.fail(f"{rpath}.{key}", f"must be a quantity, got {v!r}")
            try:
                q = parse_quantity(v)
            except ValueError as exc:
                ctx.fail(f"{rpath}.{key}", str(exc))
            if q < 0:
                ctx.fail(f"{rpath}.{key}", f"must be non-negative, got {v!r}")
            if name == "nvidia.com/gpu" and not str(v).strip().isdigit():
                ctx.fail(f"{rpath}.{key}", f"a GPU count must be a whole number, got {v!r}")


def parse_nrt(obj: dict, *, where: str | None = None) -> NrtRecord:
    """An NrtRecord from a NodeResourceTopology object (module doc)."""
    ctx, _meta, _ns, name = identity(obj, KIND, False, where)
    api = obj.get("apiVersion")
    if api is not None:
        api = ctx.string(api, "apiVersion")
        if api.split("/")[0] != API_GROUP:
            ctx.fail("apiVersion", f"expected {API_GROUP}/v1alpha2, got {api!r}")
    ctx.str_list(obj.get("topologyPolicies"), "topologyPolicies")
    _attributes(ctx, obj.get("attributes"), "attributes")
    for i, z in enumerate(ctx.list(obj.get("zones"), "zones")):
        zpath = f"zones[{i}]"
        z = ctx.mapping(z, zpath)
        ctx.string(z.get("name"), f"{zpath}.name", required=True)
        ctx.string(z.get("type"), f"{zpath}.type", required=True)
        ctx.string(z.get("parent"), f"{zpath}.parent")
        for j, c in enumerate(ctx.list(z.get("costs"), f"{zpath}.costs")):
            cpath = f"{zpath}.costs[{j}]"
            c = ctx.mapping(c, cpath)
            ctx.string(c.get("name"), f"{cpath}.name", required=True)
            ctx.integer(c.get("value"), f"{cpath}.value", lo=0)
        _resources(ctx, z.get("resources"), f"{zpath}.resources")
        _attributes(ctx, z.get("attributes"), f"{zpath}.attributes")
    try:
        _, topo = from_nrt(dict(obj, kind=KIND))
    except ValueError as exc:
        ctx.fail("zones", str(exc))
    if len(topo.islands) > MAX_GPUS:
        ctx.fail("zones", f"{len(topo.islands)} GPUs; at most {MAX_GPUS} are supported")
    return NrtRecord(name, topo, obj)


def attach(state, records) -> None:
    """Give the loaded NRTs to ``state``'s GPU table (now, or when the first
    GPU plugin creates it)."""
    if records:
        attach_node_topologies(state, {r.name: r.topology for r in records})


#: How ``parse_objects`` reads the kind (the GPU plugin set registers it).
OBJECT_KIND = ObjectKind(KIND, parse_nrt, lambda r: r.name, KIND + " {}")
