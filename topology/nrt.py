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

from tensorsched.framework.parsing.meta import ObjectKind, identity

from .gpu_table import attach_node_topologies
from .node_topology import NodeTopology, validated_nrt

KIND = "NodeResourceTopology"
API_GROUP = "topology.node.k8s.io"


@dataclass
class NrtRecord:
    name: str                  # the node's name
    topology: NodeTopology
    obj: dict = field(repr=False, default_factory=dict)


def parse_nrt(obj: dict, *, where: str | None = None) -> NrtRecord:
    """An NrtRecord from a NodeResourceTopology object (module doc)."""
    ctx, _meta, _ns, name = identity(obj, KIND, False, where)
    api = obj.get("apiVersion")
    if api is not None:
        api = ctx.string(api, "apiVersion")
        if api.split("/")[0] != API_GROUP:
            ctx.fail("apiVersion", f"expected {API_GROUP}/v1alpha2, got {api!r}")
    topo = validated_nrt(ctx, obj)
    return NrtRecord(name, topo, obj)


def attach(state, records) -> None:
    """Give the loaded NRTs to ``state``'s GPU table (now, or when the first
    GPU plugin creates it)."""
    if records:
        attach_node_topologies(state, {r.name: r.topology for r in records})


#: How ``parse_objects`` reads the kind (the GPU plugin set registers it).
OBJECT_KIND = ObjectKind(KIND, parse_nrt, lambda r: r.name, KIND + " {}")
