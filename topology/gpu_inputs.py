"""What the GPU table reads of node and pod records, validated.

``node_inputs`` gives a node's GPUs (count, model, memory per GPU) and its
topology; ``pod_gpu`` a pod's ask, placement constraint and QoS
(``PodGpu``).  Malformed fields are a ManifestError naming the object, the
field and the manifest it came from; nothing here changes a table.
"""

from __future__ import annotations

from dataclasses import dataclass

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.meta import join_path

from .gpu import (
    ANNO_GPU_INDEX,
    ANNO_GPU_MODEL,
    LABEL_GFD_PRODUCT,
    RES_NVIDIA_GPU,
    GpuAsk,
    gpu_indices,
    node_gpu_count,
    node_gpu_memory,
    pod_gpu_ask,
    sourced,
)
from .node_topology import NodeTopology, node_topology, pod_constraint

MAX_MODELS = 62         # model bits of a mask; bit 62 stands for "a model no node has"


@dataclass(frozen=True)
class PodGpu:
    """What the table needs of a pod: its ask, constraint bits, QoS."""

    ask: GpuAsk
    cons: int
    guaranteed: bool
    cpu: int
    mem: int
    cpu_nz: int
    fixed: tuple[int, ...] | None = None   # alibabacloud.com/gpu-index

    @property
    def has_gpu(self) -> bool:
        return self.ask.num > 0 and self.ask.milli > 0


def node_gpu(rec) -> tuple[int, str, int]:
    """(count, model, MiB per GPU) of a node record; malformed GPU fields
    are a ManifestError naming the node and the field."""
    ident = f"Node {rec.name}"
    status = (rec.obj or {}).get("status") or {}
    alloc_path = ("status.allocatable" if status.get("allocatable") is not None
                  else "status.capacity")
    annos = ((rec.obj or {}).get("metadata") or {}).get("annotations") or {}
    raw = status.get("allocatable") if status.get("allocatable") is not None else (
        status.get("capacity") or {})
    if not isinstance(raw, dict) or RES_NVIDIA_GPU not in raw:
        raw = {}
    count = node_gpu_count(ident, {RES_NVIDIA_GPU: raw[RES_NVIDIA_GPU]} if raw else {},
                           alloc_path, rec.labels, annos,
                           count=None if raw else rec.allocatable.get(RES_NVIDIA_GPU))
    model = rec.labels.get(LABEL_GFD_PRODUCT) or rec.labels.get(ANNO_GPU_MODEL) \
        or annos.get(ANNO_GPU_MODEL) or ""
    mem = node_gpu_memory(ident, rec.labels, model)
    return int(count), (model if count else ""), mem


def node_inputs(rec, models: list, nrt: dict) -> tuple[int, str, int, NodeTopology | None]:
    """Everything a table row takes of node ``rec``, validated before the
    row changes: (count, model, memory, topology).  ``models``: the models
    the table knows (a new one past ``MAX_MODELS`` is refused); ``nrt``:
    topologies from NodeResourceTopology objects by node name, which win
    over the node's own annotations."""
    try:
        count, model, mem = node_gpu(rec)
        if model and model not in models and len(models) >= MAX_MODELS:
            where = ("labels", LABEL_GFD_PRODUCT) if rec.labels.get(LABEL_GFD_PRODUCT) else (
                ("labels", ANNO_GPU_MODEL) if rec.labels.get(ANNO_GPU_MODEL)
                else ("annotations", ANNO_GPU_MODEL))
            raise ManifestError(f"Node {rec.name}", join_path(f"metadata.{where[0]}", where[1]),
                                f"GPU model {model!r}: at most {MAX_MODELS} GPU models are "
                                "supported")
        topo = nrt.get(rec.name) or node_topology(rec.obj)
    except ManifestError as exc:
        raise sourced(exc, rec.obj) from None
    return count, model, mem, topo


def pod_gpu(rec) -> PodGpu:
    """The ``PodGpu`` of pod record ``rec`` (read from its object)."""
    obj = rec.obj or {}
    try:
        ask = pod_gpu_ask(obj)
        cons, guaranteed = pod_constraint(obj)
        annos = (obj.get("metadata") or {}).get("annotations") or {}
        fixed = None
        s = annos.get(ANNO_GPU_INDEX)
        if s:
            fixed = gpu_indices(f"Pod {rec.key}", s)
    except ManifestError as exc:
        raise sourced(exc, obj) from None
    return PodGpu(ask, cons, guaranteed, int(rec.requests.get("cpu", 0)),
                  int(rec.requests.get("memory", 0)), int(rec.nonzero_cpu), fixed)
