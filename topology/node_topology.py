"""GPU interconnect topology of a node, and pods' topology asks.

Per node: the NVLink/NVSwitch island and the NUMA node of each GPU, the
CPU and memory of each NUMA node, the distances between NUMA nodes, and
whether the node's topology manager runs the single-numa-node policy.

Sources (documented contract; the first that is present wins):

1. A NodeResourceTopology object (``topology.node.k8s.io/v1alpha2``, named
   after the node): in the cluster manifests (``topology/nrt.py`` validates
   it and ``build_cluster`` attaches it to the state's GPU table), or given
   to ``GpuTable.set_node_resource_topologies``:

   - zones of ``type: Node`` are NUMA nodes, in list order; each one's
     resources ``cpu``, ``memory`` (``allocatable``, else ``capacity``) are
     that NUMA node's CPU (millicores) and memory (bytes); its
     ``nvidia.com/gpu`` count gives it the next GPU indices in order (or the
     zone attribute ``gpu-indices``, e.g. ``"0,1,2,3"``, names them);
     ``costs`` give the NUMA distances (10 = local, as the kubelet reports);
   - zones of ``type: NVLinkIsland`` (a tensorsched convention: NRT has no
     type for GPU interconnects) are NVLink/NVSwitch islands, GPUs named by
     the attribute ``gpu-indices`` or, failing that, by their
     ``nvidia.com/gpu`` count taking the next GPU indices in order;
   - ``topologyPolicies`` containing ``SingleNUMANodePodLevel`` or
     ``SingleNUMANodeContainerLevel``, or the attribute
     ``topologyManagerPolicy: single-numa-node``, sets the node's
     single-numa-node policy (Guaranteed pods must then fit one NUMA node,
     as scheduler-plugins' NodeResourceTopologyMatch filters).

2. The node annotation ``topology.tensorsched.io/gpu``, JSON, either an NRT
   ``zones`` list (same rules as above; also ``{"zones": [...],
   "topologyPolicies": [...]}``) or the compact form
   ``{"islands": [0,0,0,0,1,1,1,1], "numa": [0,0,0,0,1,1,1,1],
   "numaCpu": ["64", "64"], "numaMemory": ["512Gi", "512Gi"],
   "singleNumaNodePolicy": false}`` (one entry per GPU for islands/numa,
   -1 = unknown; one per NUMA node for numaCpu/numaMemory).

Without either the node's topology is unknown: every GPU pair counts as the
loosest link, a pod that asks for one island or one NUMA node does not fit
there (nothing can be guaranteed), and NUMA CPU/memory is unknown.  When the
GPUs' NUMA nodes are known but their CPU/memory is not, each NUMA node gets
an equal share of the node's allocatable CPU and memory (an approximation).

Pods ask through the annotation ``topology.tensorsched.io/gpu-placement``:
``nvlink-island`` (all GPUs in one island), ``single-numa-node`` (all GPUs
on one NUMA node, together with the pod's CPU and memory requests, which
are then accounted on that NUMA node), or both, comma-separated.  A
Guaranteed pod (every container's cpu and memory limits equal to its
requests) on a node with the single-numa-node policy gets
``single-numa-node`` too.  Only pods pinned this way consume a NUMA node's
CPU/memory here (other pods run in the shared pool, as with the kubelet's
CPU manager).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.meta import ObjectContext, join_path, type_name
from tensorsched.framework.parsing.quantity import parse_quantity, resource_value
from tensorsched.kernels.gpu.share import GPU_SLOTS
from tensorsched.kernels.gpu.subsets import C_ISLAND, C_NUMA

ANNO_NODE_TOPOLOGY = "topology.tensorsched.io/gpu"
ANNO_POD_PLACEMENT = "topology.tensorsched.io/gpu-placement"
NRT_API = "topology.node.k8s.io/v1alpha2"
ZONE_NUMA = "Node"
ZONE_ISLAND = "NVLinkIsland"
SINGLE_NUMA_POLICIES = ("SingleNUMANodePodLevel", "SingleNUMANodeContainerLevel")

MAX_ZONES = 8
MAX_GPUS = GPU_SLOTS
MAX_DISTANCE = 255                 # NUMA distances are a byte (ACPI SLIT)
MAX_QUANTITY = 1 << 62             # a NUMA node's CPU (millicores) / memory (bytes) bound
_QTY_FIELDS = ("capacity", "allocatable", "available")
_COMPACT_KEYS = ("islands", "numa", "numaCpu", "numaMemory", "distances", "singleNumaNodePolicy")


@dataclass
class NodeTopology:
    """One node's GPU topology; lists are per GPU / per NUMA node."""

    islands: list[int] = field(default_factory=list)       # per GPU, -1 unknown
    numa: list[int] = field(default_factory=list)          # per GPU, -1 unknown
    numa_cpu: list[int] = field(default_factory=list)      # millicores per NUMA node (-1 unknown)
    numa_mem: list[int] = field(default_factory=list)      # bytes per NUMA node (-1 unknown)
    distances: list[list[int]] | None = None               # NUMA distance matrix
    single_numa_policy: bool = False

    def signature(self, count: int) -> tuple:
        isl = tuple((self.islands + [-1] * count)[:count])
        nm = tuple((self.numa + [-1] * count)[:count])
        return isl, nm


# --------------------------------------------------------------- validation
# Everything below ``from_zones`` trusts its input: NRT objects (``nrt``) and
# the node annotation are validated here first, with the object and field.


def validate_attributes(ctx: ObjectContext, value, path: str) -> None:
    """NRT ``attributes``: {name, value} strings; ``gpu-indices`` a comma
    list of GPU indices 0..MAX_GPUS-1."""
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
                if not part.isdigit() or int(part) > MAX_GPUS - 1:
                    ctx.fail(f"{apath}.value", f"GPU indices must be integers 0..{MAX_GPUS - 1} "
                             f"separated by commas, got {text!r}")


def validate_resources(ctx: ObjectContext, value, path: str) -> None:
    """NRT zone ``resources``: {name, capacity / allocatable / available};
    ``nvidia.com/gpu`` a whole number 0..MAX_GPUS."""
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
            if q * 1000 > MAX_QUANTITY:
                ctx.fail(f"{rpath}.{key}", f"{v!r} is too large")
            if name == "nvidia.com/gpu":
                if not str(v).strip().isdigit():
                    ctx.fail(f"{rpath}.{key}", f"a GPU count must be a whole number, got {v!r}")
                if int(str(v).strip()) > MAX_GPUS:
                    ctx.fail(f"{rpath}.{key}", f"{v} GPUs; at most {MAX_GPUS} are supported")


def validate_zones(ctx: ObjectContext, value, path: str) -> None:
    """NRT ``zones`` (names, types, costs, resources, attributes), at most
    MAX_ZONES NUMA nodes (zones of type Node)."""
    numa = 0
    for i, z in enumerate(ctx.list(value, path)):
        zpath = f"{path}[{i}]"
        z = ctx.mapping(z, zpath)
        ctx.string(z.get("name"), f"{zpath}.name", required=True)
        if ctx.string(z.get("type"), f"{zpath}.type", required=True) == ZONE_NUMA:
            numa += 1
            if numa > MAX_ZONES:
                ctx.fail(zpath, f"more than {MAX_ZONES} NUMA nodes (zones of type {ZONE_NUMA}) "
                         "are not supported")
        ctx.string(z.get("parent"), f"{zpath}.parent")
        for j, c in enumerate(ctx.list(z.get("costs"), f"{zpath}.costs")):
            cpath = f"{zpath}.costs[{j}]"
            c = ctx.mapping(c, cpath)
            ctx.string(c.get("name"), f"{cpath}.name", required=True)
            ctx.integer(c.get("value"), f"{cpath}.value", lo=0, hi=MAX_DISTANCE)
        validate_resources(ctx, z.get("resources"), f"{zpath}.resources")
        validate_attributes(ctx, z.get("attributes"), f"{zpath}.attributes")


def check_gpu_count(ctx: ObjectContext, topo: "NodeTopology", path: str) -> None:
    if len(topo.islands) > MAX_GPUS:
        ctx.fail(path, f"{len(topo.islands)} GPUs; at most {MAX_GPUS} are supported")


def validated_nrt(ctx: ObjectContext, obj: dict) -> "NodeTopology":
    """The topology of a NodeResourceTopology object after validating the
    fields ``from_zones`` reads (policies, attributes, zones, GPU count)."""
    ctx.str_list(obj.get("topologyPolicies"), "topologyPolicies")
    validate_attributes(ctx, obj.get("attributes"), "attributes")
    validate_zones(ctx, obj.get("zones"), "zones")
    try:
        _, topo = from_nrt(dict(obj, kind="NodeResourceTopology"))
    except ValueError as exc:
        ctx.fail("zones", str(exc))
    check_gpu_count(ctx, topo, "zones")
    return topo


def _compact_quantities(ctx: ObjectContext, value, path: str, kind: str) -> list[int]:
    out = []
    items = ctx.list(value, path)
    if len(items) > MAX_ZONES:
        ctx.fail(path, f"{len(items)} NUMA nodes; at most {MAX_ZONES} are supported")
    for i, v in enumerate(items):
        p = f"{path}[{i}]"
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            ctx.fail(p, f"must be a quantity, got {type_name(v)} {v!r}")
        try:
            q = resource_value("cpu" if kind == "cpu" else "memory", v)
        except ValueError as exc:
            ctx.fail(p, str(exc))
        if q < 0 or q > MAX_QUANTITY:
            ctx.fail(p, f"must be a non-negative quantity up to {MAX_QUANTITY}, got {v!r}")
        out.append(q)
    return out


def _compact_ints(ctx: ObjectContext, value, path: str, lo: int, hi: int, most: int) -> list[int]:
    items = ctx.list(value, path)
    if len(items) > most:
        ctx.fail(path, f"{len(items)} entries; at most {most} are supported")
    return [ctx.integer(v, f"{path}[{i}]", lo=lo, hi=hi) for i, v in enumerate(items)]


def parse_annotation(value, ctx: ObjectContext, path: str) -> "NodeTopology":
    """The node annotation ``topology.tensorsched.io/gpu`` (module doc),
    validated: anything malformed is a ManifestError at ``path`` (plus the
    position inside the JSON)."""
    if not isinstance(value, str):
        ctx.fail(path, f"must be a JSON string, got {type_name(value)}")
    try:
        data = json.loads(value)
    except (ValueError, RecursionError) as exc:
        ctx.fail(path, f"invalid JSON: {exc}")
    if isinstance(data, list):
        validate_zones(ctx, data, f"{path}.zones")
        topo = from_zones(data)
        check_gpu_count(ctx, topo, path)
        return topo
    if not isinstance(data, dict):
        ctx.fail(path, "must be a JSON list of NRT zones or an object with 'zones' or "
                 f"{', '.join(_COMPACT_KEYS)}; got {type_name(data)}")
    if "zones" in data:
        for k in data:
            if k not in ("zones", "topologyPolicies", "attributes"):
                ctx.fail(join_path(path, k), "unknown field (known: zones, topologyPolicies, "
                         "attributes)")
        validate_zones(ctx, data["zones"], f"{path}.zones")
        ctx.str_list(data.get("topologyPolicies"), f"{path}.topologyPolicies")
        validate_attributes(ctx, data.get("attributes"), f"{path}.attributes")
        topo = from_zones(data["zones"] or [], data.get("topologyPolicies") or (),
                          data.get("attributes") or ())
        check_gpu_count(ctx, topo, path)
        return topo
    for k in data:
        if k not in _COMPACT_KEYS:
            ctx.fail(join_path(path, str(k)), f"unknown field (known: zones, {', '.join(_COMPACT_KEYS)})")
    t = NodeTopology(
        islands=_compact_ints(ctx, data.get("islands"), f"{path}.islands", -1, MAX_GPUS - 1,
                              MAX_GPUS),
        numa=_compact_ints(ctx, data.get("numa"), f"{path}.numa", -1, MAX_ZONES - 1, MAX_GPUS),
        single_numa_policy=ctx.boolean(data.get("singleNumaNodePolicy"),
                                       f"{path}.singleNumaNodePolicy"))
    t.numa_cpu = _compact_quantities(ctx, data.get("numaCpu"), f"{path}.numaCpu", "cpu")
    t.numa_mem = _compact_quantities(ctx, data.get("numaMemory"), f"{path}.numaMemory", "mem")
    if data.get("distances"):
        rows = ctx.list(data["distances"], f"{path}.distances")
        if len(rows) > MAX_ZONES:
            ctx.fail(f"{path}.distances", f"{len(rows)} rows; at most {MAX_ZONES} are supported")
        t.distances = [_compact_ints(ctx, row, f"{path}.distances[{i}]", 0, MAX_DISTANCE,
                                     MAX_ZONES) for i, row in enumerate(rows)]
    return t


def _qty_int(v, kind: str) -> int:
    """cpu -> millicores, memory -> bytes; -1 when absent."""
    if v is None:
        return -1
    return resource_value("cpu" if kind == "cpu" else "memory", str(v))


def _zone_res(zone: dict, name: str):
    for r in zone.get("resources") or []:
        if r.get("name") == name:
            return r.get("allocatable", r.get("capacity"))
    return None


def _indices(zone: dict) -> list[int] | None:
    for a in zone.get("attributes") or []:
        if a.get("name") == "gpu-indices":
            s = str(a.get("value", "")).strip()
            return [int(x) for x in s.replace("-", ",").split(",") if x.strip() != ""]
    return None


def _count(zone: dict) -> int:
    v = _zone_res(zone, "nvidia.com/gpu")
    return int(str(v)) if v is not None else 0


def from_zones(zones: list, policies=(), attributes=()) -> NodeTopology:
    """A NodeTopology from NRT ``zones`` (see the module doc)."""
    numa_zones = [z for z in zones if z.get("type") == ZONE_NUMA]
    islands = [z for z in zones if z.get("type") == ZONE_ISLAND]
    topo = NodeTopology()
    gpu_numa: dict[int, int] = {}
    nxt = 0
    for zi, z in enumerate(numa_zones):
        idx = _indices(z)
        if idx is None:
            idx = list(range(nxt, nxt + _count(z)))
        for g in idx:
            gpu_numa[g] = zi
        nxt = max([nxt] + [g + 1 for g in idx])
        topo.numa_cpu.append(_qty_int(_zone_res(z, "cpu"), "cpu"))
        topo.numa_mem.append(_qty_int(_zone_res(z, "memory"), "mem"))
    gpu_island: dict[int, int] = {}
    nxt = 0
    for ii, z in enumerate(islands):
        idx = _indices(z)
        if idx is None:
            idx = list(range(nxt, nxt + _count(z)))
        for g in idx:
            gpu_island[g] = ii
        nxt = max([nxt] + [g + 1 for g in idx])
    n = max([g + 1 for g in list(gpu_numa) + list(gpu_island)] + [0])
    topo.islands = [gpu_island.get(g, -1) for g in range(n)]
    topo.numa = [gpu_numa.get(g, -1) for g in range(n)]
    names = [z.get("name") for z in numa_zones]
    if any(z.get("costs") for z in numa_zones):
        d = [[10 if i == j else 20 for j in range(len(names))] for i in range(len(names))]
        for i, z in enumerate(numa_zones):
            for c in z.get("costs") or []:
                if c.get("name") in names:
                    d[i][names.index(c["name"])] = int(c.get("value", 20))
        topo.distances = d
    single = any(p in SINGLE_NUMA_POLICIES for p in (policies or ()))
    for a in attributes or ():
        if a.get("name") == "topologyManagerPolicy" and a.get("value") == "single-numa-node":
            single = True
    topo.single_numa_policy = single
    return topo


def from_nrt(obj: dict) -> tuple[str, NodeTopology]:
    """(node name, topology) of a NodeResourceTopology object."""
    if obj.get("kind") != "NodeResourceTopology":
        raise ValueError(f"expected a NodeResourceTopology, got {obj.get('kind')!r}")
    name = (obj.get("metadata") or {}).get("name", "")
    return name, from_zones(obj.get("zones") or [], obj.get("topologyPolicies") or (),
                            obj.get("attributes") or ())


def from_annotation(value: str, ident: str = "Node <annotation>") -> NodeTopology:
    """The node annotation ``topology.tensorsched.io/gpu`` (module doc) of
    the node ``ident`` (``"Node name"``); malformed: a ManifestError."""
    return parse_annotation(value, ObjectContext(ident),
                            join_path("metadata.annotations", ANNO_NODE_TOPOLOGY))


def node_topology(node_obj: dict) -> NodeTopology | None:
    meta = (node_obj or {}).get("metadata") or {}
    annos = meta.get("annotations") or {}
    v = annos.get(ANNO_NODE_TOPOLOGY)
    if not v:
        return None
    return from_annotation(v, f"Node {meta.get('name') or '<unnamed>'}")


def _guaranteed(pod_obj: dict) -> bool:
    spec = (pod_obj or {}).get("spec") or {}
    cs = spec.get("containers") or []
    if not cs:
        return False
    for c in cs + list(spec.get("initContainers") or []):
        res = c.get("resources") or {}
        lim = res.get("limits") or {}
        req = res.get("requests") or lim
        for r in ("cpu", "memory"):
            if r not in lim or str(req.get(r)) != str(lim.get(r)):
                return False
    return True


def pod_constraint(pod_obj: dict) -> tuple[int, bool]:
    """(constraint bits C_ISLAND | C_NUMA asked by annotation, Guaranteed QoS)."""
    annos = ((pod_obj or {}).get("metadata") or {}).get("annotations") or {}
    bits = 0
    for part in str(annos.get(ANNO_POD_PLACEMENT, "")).split(","):
        p = part.strip()
        if p in ("nvlink-island", "island"):
            bits |= C_ISLAND
        elif p in ("single-numa-node", "numa"):
            bits |= C_NUMA
        elif p:
            meta = (pod_obj or {}).get("metadata") or {}
            raise ManifestError(f"Pod {meta.get('namespace') or 'default'}/"
                                f"{meta.get('name') or '<unnamed>'}",
                                join_path("metadata.annotations", ANNO_POD_PLACEMENT),
                                f"unknown value {p!r} (nvlink-island, single-numa-node)")
    return bits, _guaranteed(pod_obj)


def dgx_annotation(gpus: int = 8, islands: int = 2, numa: int = 2,
                   numa_cpu: str = "64", numa_memory: str = "512Gi") -> str:
    """The compact annotation of a DGX-like node (GPUs split evenly)."""
    per_i = max(gpus // islands, 1)
    per_n = max(gpus // numa, 1)
    return json.dumps({"islands": [g // per_i for g in range(gpus)],
                       "numa": [g // per_n for g in range(gpus)],
                       "numaCpu": [numa_cpu] * numa, "numaMemory": [numa_memory] * numa},
                      separators=(",", ":"))
