"""GPU inventory as columns, and pods' GPU asks.

Columns (one row per node, GPUs padded to the largest per-node count G):

  gpu_count [N] int64    GPUs on the node (0 = CPU-only node)
  model     [N] int64    index into ``models`` (-1 = no GPU)
  gpu_left  [N, G] int64 free share of each GPU in milli-GPU (1000 = a whole
                         GPU); padding slots hold 0 and are never used
  gpu_mem   [N, G] int64 memory of each GPU, MiB (0 when the model is unknown)
  cpu_left  [N] int64    free CPU, millicores
  mem_left  [N] int64    free memory, MiB

A pod's GPU ask is ``GpuAsk(num, milli, models)``: ``num`` GPUs each with
``milli`` milli-GPU free (``milli < 1000`` only for a GPU-sharing pod, which
always has ``num == 1``), on a node whose model is one of ``models`` (empty =
any).

Mapping from Kubernetes objects (documented contract):

  Node
    ``status.allocatable["nvidia.com/gpu"]`` (or the openb simulator's
    ``alibabacloud.com/gpu-count``)        -> gpu_count
    label ``nvidia.com/gpu.product`` (NVIDIA GPU Feature Discovery), else
    label/annotation ``alibabacloud.com/gpu-card-model`` -> model
    label ``nvidia.com/gpu.memory`` (GFD, MiB)            -> gpu_mem
  Pod
    annotation ``alibabacloud.com/gpu-milli``  -> milli (per GPU, 0..1000)
    annotation ``alibabacloud.com/gpu-count``  -> num
    annotation ``alibabacloud.com/gpu-card-model`` -> allowed models, '|'-separated
    (these are the names the openb trace's public simulator, hkust-adsl
    kubernetes-scheduler-simulator, reads, so its pod YAML loads unchanged);
    without them, the container request ``nvidia.com/gpu: N`` -> num=N,
    milli=1000 (whole GPUs), allowed models from the pod's nodeSelector on
    ``nvidia.com/gpu.product`` if present.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field

import numpy as np

from tensorsched.kernels.gpu.share import MILLI

ANNO_GPU_MILLI = "alibabacloud.com/gpu-milli"
ANNO_GPU_COUNT = "alibabacloud.com/gpu-count"
ANNO_GPU_MODEL = "alibabacloud.com/gpu-card-model"
ANNO_GPU_INDEX = "alibabacloud.com/gpu-index"
RES_NVIDIA_GPU = "nvidia.com/gpu"
LABEL_GFD_PRODUCT = "nvidia.com/gpu.product"
LABEL_GFD_MEMORY = "nvidia.com/gpu.memory"

# GPU memory (MiB) of the openb models, as the paper's simulator lists them
# (G2/G3 are undisclosed: unknown memory, 0).
MODEL_MEMORY_MIB = {"P4": 7611, "2080": 11019, "1080": 11178, "M40": 11448, "T4": 15109,
                    "V100M16": 16160, "P100": 16280, "A10": 22731, "3090": 24268,
                    "V100M32": 32510, "A100": 81251}


@dataclass(frozen=True)
class GpuAsk:
    num: int = 0
    milli: int = 0
    models: tuple[str, ...] = ()

    @property
    def is_share(self) -> bool:
        return self.num == 1 and 0 < self.milli < MILLI

    @property
    def total_milli(self) -> int:
        return self.num * self.milli


@dataclass
class GpuInventory:
    names: list[str]
    models: list[str]
    gpu_count: np.ndarray
    model: np.ndarray
    gpu_left: np.ndarray
    gpu_mem: np.ndarray
    cpu_left: np.ndarray
    mem_left: np.ndarray
    cpu_cap: np.ndarray = field(default=None)
    mem_cap: np.ndarray = field(default=None)

    def __post_init__(self):
        if self.cpu_cap is None:
            self.cpu_cap = self.cpu_left.copy()
        if self.mem_cap is None:
            self.mem_cap = self.mem_left.copy()

    @property
    def n_nodes(self) -> int:
        return len(self.names)

    @property
    def total_gpus(self) -> int:
        return int(self.gpu_count.sum())

    def copy(self) -> "GpuInventory":
        return GpuInventory(list(self.names), list(self.models), self.gpu_count.copy(),
                            self.model.copy(), self.gpu_left.copy(), self.gpu_mem.copy(),
                            self.cpu_left.copy(), self.mem_left.copy(),
                            self.cpu_cap.copy(), self.mem_cap.copy())

    def model_mask(self, models) -> int:
        """Bitmask over ``self.models`` of the allowed models (0 = any).
        A model no node has gets bit 62, which no node carries."""
        mask = 0
        for m in models:
            if not m:
                continue
            mask |= (1 << self.models.index(m)) if m in self.models else (1 << 62)
        return mask

    def used_milli(self) -> int:
        return int(self.gpu_count.sum() * MILLI - self.gpu_left.sum())


def build_inventory(names, cpu, mem, counts, models_per_node, gpu_mem_per_node=None) -> GpuInventory:
    n = len(names)
    counts = np.asarray(counts, dtype=np.int64)
    g = max(int(counts.max()) if n else 0, 1)
    models = sorted({m for m in models_per_node if m})
    model = np.array([models.index(m) if m else -1 for m in models_per_node], dtype=np.int64)
    left = np.zeros((n, g), dtype=np.int64)
    gmem = np.zeros((n, g), dtype=np.int64)
    for i in range(n):
        left[i, :counts[i]] = MILLI
        mm = (gpu_mem_per_node[i] if gpu_mem_per_node is not None
              else MODEL_MEMORY_MIB.get(models_per_node[i], 0))
        gmem[i, :counts[i]] = mm
    return GpuInventory(list(names), models, counts, model, left, gmem,
                        np.asarray(cpu, dtype=np.int64), np.asarray(mem, dtype=np.int64))


def read_openb_nodes(path) -> GpuInventory:
    """Nodes from the openb node CSV (sn, cpu_milli, memory_mib, gpu, model)."""
    names, cpu, mem, cnt, mdl = [], [], [], [], []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            names.append(row["sn"])
            cpu.append(int(row["cpu_milli"]))
            mem.append(int(row["memory_mib"]))
            cnt.append(int(row["gpu"] or 0))
            mdl.append((row.get("model") or "").strip())
    return build_inventory(names, cpu, mem, cnt, mdl)

def _to_int(v, default=0) -> int:
    if v is None or v == "":
        return default
    try:
        return int(str(v))
    except ValueError:
        return int(float(str(v)))


def _cpu_milli(v) -> int:
    s = str(v)
    if s.endswith("m"):
        return int(s[:-1])
    return int(round(float(s) * 1000))


def _mem_mib(v) -> int:
    s = str(v)
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024,
             "K": 1000 / 1048576, "M": 1e6 / 1048576, "G": 1e9 / 1048576}
    for u in ("Ki", "Mi", "Gi", "Ti", "K", "M", "G"):
        if s.endswith(u):
            return int(float(s[: -len(u)]) * units[u])
    return int(float(s) / 1048576)


def node_gpu_info(node: dict) -> tuple[int, str, int]:
    """(gpu count, model, per-GPU memory MiB) of a Node object."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    annos = meta.get("annotations") or {}
    alloc = ((node.get("status") or {}).get("allocatable") or {})
    count = _to_int(alloc.get(RES_NVIDIA_GPU, alloc.get(ANNO_GPU_COUNT,
                    labels.get(ANNO_GPU_COUNT, annos.get(ANNO_GPU_COUNT)))))
    model = (labels.get(LABEL_GFD_PRODUCT) or labels.get(ANNO_GPU_MODEL)
             or annos.get(ANNO_GPU_MODEL) or "")
    mem = _to_int(labels.get(LABEL_GFD_MEMORY), MODEL_MEMORY_MIB.get(model, 0))
    return count, (model if count else ""), mem


def inventory_from_nodes(nodes: list[dict]) -> GpuInventory:
    names, cpu, mem, cnt, mdl, gm = [], [], [], [], [], []
    for node in nodes:
        meta = node.get("metadata") or {}
        alloc = ((node.get("status") or {}).get("allocatable") or {})
        names.append(meta.get("name", ""))
        cpu.append(_cpu_milli(alloc.get("cpu", "0")))
        mem.append(_mem_mib(alloc.get("memory", "0")))
        c, m, g = node_gpu_info(node)
        cnt.append(c)
        mdl.append(m)
        gm.append(g)
    return build_inventory(names, cpu, mem, cnt, mdl, gm)


def pod_gpu_ask(pod: dict) -> GpuAsk:
    """The GPU ask of a Pod object (see the module doc for the mapping)."""
    meta = pod.get("metadata") or {}
    annos = meta.get("annotations") or {}
    spec = pod.get("spec") or {}
    if ANNO_GPU_MILLI in annos or ANNO_GPU_COUNT in annos:
        milli = _to_int(annos.get(ANNO_GPU_MILLI))
        num = _to_int(annos.get(ANNO_GPU_COUNT), 1 if milli > 0 else 0)
        if num == 0 or milli == 0:
            return GpuAsk(0, 0, ())
        if milli > MILLI or milli < 0:
            raise ValueError(f"Pod {meta.get('name')}: metadata.annotations[{ANNO_GPU_MILLI}]: "
                             f"{milli} is outside 0..1000")
        if milli < MILLI and num != 1:
            raise ValueError(f"Pod {meta.get('name')}: a GPU share ({milli} milli) must ask for "
                             f"exactly one GPU, not {num}")
        models = tuple(m for m in str(annos.get(ANNO_GPU_MODEL, "")).split("|") if m)
        return GpuAsk(num, milli, models)
    num = 0
    for c in spec.get("containers") or []:
        req = ((c.get("resources") or {}).get("requests") or
               (c.get("resources") or {}).get("limits") or {})
        num += _to_int(req.get(RES_NVIDIA_GPU))
    if num == 0:
        return GpuAsk(0, 0, ())
    sel = (spec.get("nodeSelector") or {}).get(LABEL_GFD_PRODUCT)
    return GpuAsk(num, MILLI, (sel,) if sel else ())
