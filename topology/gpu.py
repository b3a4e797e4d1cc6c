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
    without them, the container request ``nvidia.com/gpu: N`` (its limit
    where the request leaves it out) -> num=N, milli=1000 (whole GPUs),
    allowed models from the pod's nodeSelector on ``nvidia.com/gpu.product``
    if present.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field

import numpy as np

from tensorsched.framework.errors import ManifestError, TensorschedError
from tensorsched.framework.parsing.meta import invalid_value, join_path, name_errors
from tensorsched.framework.parsing.quantity import parse_quantity, resource_value
from tensorsched.kernels.gpu.share import GPU_SLOTS, MILLI

ANNO_GPU_MILLI = "alibabacloud.com/gpu-milli"
ANNO_GPU_COUNT = "alibabacloud.com/gpu-count"
ANNO_GPU_MODEL = "alibabacloud.com/gpu-card-model"
ANNO_GPU_INDEX = "alibabacloud.com/gpu-index"
RES_NVIDIA_GPU = "nvidia.com/gpu"
LABEL_GFD_PRODUCT = "nvidia.com/gpu.product"
LABEL_GFD_MEMORY = "nvidia.com/gpu.memory"

MAX_NODE_GPUS = GPU_SLOTS          # GPUs per node (and per pod) supported
MAX_GPU_MEMORY_MIB = 1 << 30       # per-GPU memory label bound (1 PiB)
MAX_CPU_MILLI = 1 << 40            # CSV bounds: far above any real node, far below overflow
MAX_MEMORY_MIB = 1 << 40

# GPU memory (MiB) of the openb models, as the paper's simulator lists them
# (G2/G3 are undisclosed: unknown memory, 0).
MODEL_MEMORY_MIB = {"P4": 7611, "2080": 11019, "1080": 11178, "M40": 11448, "T4": 15109,
                    "V100M16": 16160, "P100": 16280, "A10": 22731, "3090": 24268,
                    "V100M32": 32510, "A100": 81251}


class CsvError(TensorschedError, ValueError):
    """An openb CSV that cannot be read: ``file:line: column: problem``
    (``line`` None for the file as a whole, ``column`` empty for a row)."""

    def __init__(self, path, line: int | None, column: str, problem: str):
        self.path = str(path)
        self.line = line
        self.column = column
        self.problem = problem
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {column}: {problem}" if column else f"{where}: {problem}")

    def __reduce__(self):                 # picklable across sweep worker processes
        return (type(self), (self.path, self.line, self.column, self.problem))


_INT_TEXT = re.compile(r"[+-]?[0-9]+")


def read_csv_rows(path, required: tuple[str, ...]):
    """Yield (line number, row dict) of a CSV whose header has every
    ``required`` column; a row with fewer or more fields than the header,
    a missing column or unreadable text is a CsvError."""
    try:
        # utf-8-sig: the byte-order mark a spreadsheet writes first is no part of
        # the first column's name (it was 'missing' from the header)
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            try:
                header = reader.fieldnames
            except csv.Error as exc:
                raise CsvError(path, 1, "", f"not a CSV file: {exc}") from None
            if not header:
                raise CsvError(path, 1, "", "empty file: expected a header row with the columns "
                               + ", ".join(required))
            missing = [c for c in required if c not in header]
            if missing:
                raise CsvError(path, 1, ", ".join(missing),
                               f"missing column{'s' if len(missing) > 1 else ''} in the header "
                               f"(it has: {', '.join(str(h) for h in header)})")
            while True:
                try:
                    row = next(reader)
                except StopIteration:
                    return
                except csv.Error as exc:
                    raise CsvError(path, reader.line_num, "", f"not a CSV row: {exc}") from None
                line = reader.line_num
                if None in row:
                    raise CsvError(path, line, "", f"{len(row[None])} more field(s) than the "
                                   f"header's {len(header)}")
                for c in required:
                    if row[c] is None:
                        raise CsvError(path, line, c, f"missing: the row has fewer fields than "
                                       f"the header's {len(header)}")
                yield line, row
    except UnicodeDecodeError as exc:
        raise CsvError(path, None, "", f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def csv_int(path, line: int, column: str, text, lo: int, hi: int, default: int | None = None) -> int:
    """A whole number lo..hi from a CSV cell (``default`` when empty, if given)."""
    s = (text or "").strip()
    if s == "" and default is not None:
        return default
    if not _INT_TEXT.fullmatch(s):
        raise CsvError(path, line, column, f"must be an integer {lo}..{hi}, got {text!r}")
    v = int(s)
    if not lo <= v <= hi:
        raise CsvError(path, line, column, f"must be an integer {lo}..{hi}, got {v}")
    return v


def csv_name(path, line: int, column: str, text, kind: str = "Pod") -> str:
    """A pod's or node's name (``kind``) in a CSV cell, stripped: not empty,
    and a name the API server gives that kind (a DNS-1123 subdomain for
    both), else CsvError naming the file, line and column."""
    s = (text or "").strip()
    if not s:
        raise CsvError(path, line, column, "must not be empty")
    errs = name_errors(kind, s)
    if errs:
        raise CsvError(path, line, column, f"{invalid_value(s, errs)} (the API server's rule "
                       f"for a {kind}'s name)")
    return s


def _object_ident(obj: dict, kind: str) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    name = meta.get("name") or "<unnamed>"
    if kind == "Node":
        return f"Node {name}"
    return f"{kind} {meta.get('namespace') or 'default'}/{name}"


def sourced(err: ManifestError, obj) -> ManifestError:
    """``err`` naming the file and document ``obj`` was read from, when the
    object carries one (manifests read from files do)."""
    src = getattr(obj, "source", None)
    add = getattr(err, "with_source", None)
    return add(src) if src and add is not None else err


def _int_field(ident: str, path: str, value, lo: int, hi: int, what: str = "an integer") -> int:
    """A whole number lo..hi given as text (an annotation/label) or an integer."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ManifestError(ident, path, f"must be {what} {lo}..{hi}, got {value!r}")
    s = value.strip() if isinstance(value, str) else str(value)
    if not _INT_TEXT.fullmatch(s):
        raise ManifestError(ident, path, f"must be {what} {lo}..{hi}, got {value!r}")
    v = int(s)
    if not lo <= v <= hi:
        raise ManifestError(ident, path, f"must be {what} {lo}..{hi}, got {value!r}")
    return v


def _anno_path(where: str, key: str) -> str:
    return join_path(f"metadata.{where}", key)


def gpu_indices(ident: str, value) -> tuple[int, ...]:
    """The annotation ``alibabacloud.com/gpu-index`` ("0-1" or "0,1") of a pod."""
    path = _anno_path("annotations", ANNO_GPU_INDEX)
    s = str(value)
    out = []
    for part in s.replace(",", "-").split("-"):
        part = part.strip()
        if part == "":
            continue
        if not part.isdigit() or int(part) >= MAX_NODE_GPUS:
            raise ManifestError(ident, path, f"must be GPU indices 0..{MAX_NODE_GPUS - 1} "
                                f"separated by ',' or '-', got {s!r}")
        out.append(int(part))
    return tuple(out)


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
    source: str = ""            # the CSV it was read from, for error messages

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
                            self.cpu_cap.copy(), self.mem_cap.copy(), self.source)

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


NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu")


def read_openb_nodes(path) -> GpuInventory:
    """Nodes from the openb node CSV (sn, cpu_milli, memory_mib, gpu, model).
    A malformed cell, a missing column or a file without nodes is a
    CsvError naming the file, line and column."""
    names, cpu, mem, cnt, mdl = [], [], [], [], []
    seen: dict[str, int] = {}
    for line, row in read_csv_rows(path, NODE_COLUMNS):
        name = csv_name(path, line, "sn", row["sn"], "Node")
        if name in seen:
            raise CsvError(path, line, "sn", f"duplicate node {name!r} (first on line {seen[name]})")
        seen[name] = line
        names.append(name)
        cpu.append(csv_int(path, line, "cpu_milli", row["cpu_milli"], 0, MAX_CPU_MILLI))
        mem.append(csv_int(path, line, "memory_mib", row["memory_mib"], 0, MAX_MEMORY_MIB))
        cnt.append(csv_int(path, line, "gpu", row["gpu"], 0, MAX_NODE_GPUS, default=0))
        mdl.append((row.get("model") or "").strip())
    if not names:
        raise CsvError(path, None, "", "no nodes: the file has a header but no rows")
    if len({m for m in mdl if m}) > 62:
        raise CsvError(path, None, "model", "more than 62 GPU models")
    inv = build_inventory(names, cpu, mem, cnt, mdl)
    inv.source = str(path)
    return inv


def _cpu_milli(ident: str, path: str, v) -> int:
    try:
        return resource_value("cpu", v)
    except ValueError as exc:
        raise ManifestError(ident, path, str(exc)) from None


def _mem_mib(ident: str, path: str, v) -> int:
    try:
        return resource_value("memory", v) // 1048576
    except ValueError as exc:
        raise ManifestError(ident, path, str(exc)) from None


def _gpu_quantity(ident: str, path: str, v, hi: int | None = None) -> int:
    """A whole number of GPUs (``nvidia.com/gpu`` quantity)."""
    try:
        q = parse_quantity(v)
    except ValueError as exc:
        raise ManifestError(ident, path, str(exc)) from None
    if q < 0 or q.denominator != 1:
        raise ManifestError(ident, path, f"must be a whole number of GPUs, got {v!r}")
    n = int(q)
    if hi is not None and n > hi:
        raise ManifestError(ident, path, f"{n} GPUs; at most {hi} per node are supported")
    return n


def node_gpu_count(ident: str, alloc: dict, alloc_path: str, labels: dict, annos: dict,
                   count=None) -> int:
    """The GPU count of a node: ``alloc_path["nvidia.com/gpu"]`` (``count``
    when already parsed), else the label / annotation ``alibabacloud.com/gpu-count``;
    at most MAX_NODE_GPUS."""
    path = join_path(alloc_path, RES_NVIDIA_GPU)
    if count is None and RES_NVIDIA_GPU in alloc:
        count = _gpu_quantity(ident, path, alloc[RES_NVIDIA_GPU])
    if count is None and ANNO_GPU_COUNT in alloc:
        path = join_path(alloc_path, ANNO_GPU_COUNT)
        count = _gpu_quantity(ident, path, alloc[ANNO_GPU_COUNT])
    if count is not None:
        if count > MAX_NODE_GPUS:
            raise ManifestError(ident, path, f"{count} GPUs; at most {MAX_NODE_GPUS} per node "
                                "are supported")
        return int(count)
    for where, src in (("labels", labels), ("annotations", annos)):
        v = src.get(ANNO_GPU_COUNT)
        if v not in (None, ""):
            return _int_field(ident, _anno_path(where, ANNO_GPU_COUNT), v, 0, MAX_NODE_GPUS)
    return 0


def node_gpu_memory(ident: str, labels: dict, model: str) -> int:
    v = labels.get(LABEL_GFD_MEMORY)
    if v in (None, ""):
        return MODEL_MEMORY_MIB.get(model, 0)
    return _int_field(ident, _anno_path("labels", LABEL_GFD_MEMORY), v, 0, MAX_GPU_MEMORY_MIB,
                      "an integer number of MiB")


def _meta(obj: dict) -> tuple[dict, dict, dict]:
    meta = obj.get("metadata") or {}
    return meta, meta.get("labels") or {}, meta.get("annotations") or {}


def node_gpu_info(node: dict) -> tuple[int, str, int]:
    """(gpu count, model, per-GPU memory MiB) of a Node object; malformed
    GPU fields are a ManifestError naming the node and the field."""
    try:
        return _node_gpu_info(node)
    except ManifestError as exc:
        raise sourced(exc, node) from None


def _node_gpu_info(node: dict) -> tuple[int, str, int]:
    ident = _object_ident(node, "Node")
    _meta_, labels, annos = _meta(node)
    status = node.get("status") or {}
    alloc_path = "status.allocatable" if status.get("allocatable") is not None else "status.capacity"
    alloc = status.get("allocatable") if status.get("allocatable") is not None else (
        status.get("capacity") or {})
    count = node_gpu_count(ident, alloc, alloc_path, labels, annos)
    model = (labels.get(LABEL_GFD_PRODUCT) or labels.get(ANNO_GPU_MODEL)
             or annos.get(ANNO_GPU_MODEL) or "")
    mem = node_gpu_memory(ident, labels, model)
    return count, (model if count else ""), mem


def inventory_from_nodes(nodes: list[dict]) -> GpuInventory:
    names, cpu, mem, cnt, mdl, gm = [], [], [], [], [], []
    for node in nodes:
        ident = _object_ident(node, "Node")
        meta = node.get("metadata") or {}
        alloc = ((node.get("status") or {}).get("allocatable") or {})
        names.append(meta.get("name", ""))
        cpu.append(_cpu_milli(ident, "status.allocatable.cpu", alloc.get("cpu", "0")))
        mem.append(_mem_mib(ident, "status.allocatable.memory", alloc.get("memory", "0")))
        c, m, g = node_gpu_info(node)
        cnt.append(c)
        mdl.append(m)
        gm.append(g)
    return build_inventory(names, cpu, mem, cnt, mdl, gm)


def pod_gpu_ask(pod: dict) -> GpuAsk:
    """The GPU ask of a Pod object (see the module doc for the mapping);
    malformed GPU fields are a ManifestError naming the pod and the field."""
    try:
        return _pod_gpu_ask(pod)
    except ManifestError as exc:
        raise sourced(exc, pod) from None


def _pod_gpu_ask(pod: dict) -> GpuAsk:
    ident = _object_ident(pod, "Pod")
    _meta_, _labels, annos = _meta(pod)
    spec = pod.get("spec") or {}
    if ANNO_GPU_MILLI in annos or ANNO_GPU_COUNT in annos:
        milli_path = _anno_path("annotations", ANNO_GPU_MILLI)
        count_path = _anno_path("annotations", ANNO_GPU_COUNT)
        v = annos.get(ANNO_GPU_MILLI)
        milli = 0 if v in (None, "") else _int_field(ident, milli_path, v, 0, MILLI)
        v = annos.get(ANNO_GPU_COUNT)
        num = (1 if milli > 0 else 0) if v in (None, "") else _int_field(
            ident, count_path, v, 0, MAX_NODE_GPUS)
        if num == 0 or milli == 0:
            return GpuAsk(0, 0, ())
        if milli < MILLI and num != 1:
            raise ManifestError(ident, count_path, f"a GPU share ({milli} milli) must ask for "
                                f"exactly one GPU, not {num}")
        models = tuple(m for m in str(annos.get(ANNO_GPU_MODEL, "")).split("|") if m)
        return GpuAsk(num, milli, models)
    num = 0
    for i, c in enumerate(spec.get("containers") or []):
        res = c.get("resources") or {}
        # a request left out defaults to its limit, resource by resource (as
        # Kubernetes defaults it): requests {cpu} with a GPU limit asks GPUs
        for key in ("requests", "limits"):
            value = (res.get(key) or {}).get(RES_NVIDIA_GPU)
            if value is not None:
                num += _gpu_quantity(ident, join_path(f"spec.containers[{i}].resources.{key}",
                                                      RES_NVIDIA_GPU), value)
                break
    if num == 0:
        return GpuAsk(0, 0, ())
    # more GPUs than any node has fits nowhere; kept bounded for the kernels
    num = min(num, MAX_NODE_GPUS + 1)
    sel = (spec.get("nodeSelector") or {}).get(LABEL_GFD_PRODUCT)
    return GpuAsk(num, MILLI, (sel,) if sel else ())
