"""Per-node GPU state that follows a ClusterState.

``GpuTable.of(state)`` attaches one table to a state (an extension under
``EXTENSION``; a ``PodListener`` and ``PodRestorer`` of its ``listeners``
and ``restorers``, the contracts ``framework.state.listeners`` declares):
a pod added to or removed from a node updates only that node's GPUs (its
milli per GPU, its NUMA node's pinned CPU/memory, the per-node count of
pod shapes GpuClustering scores with, and the node's version the FGD
cache keys on).  Node adds/updates/removals are picked up
lazily (by the state's ``epoch``) on the next use.

Every GPU pod on the state holds an allocation: concrete GPU indices.  When
the scheduler assumes a pod, the listener allocates provisionally (the
default rule: the tightest topology subset for whole GPUs, best fit for a
share); the Reserve plugin then re-picks with its profile's policy rule
(``GpuTable.repick``).  A pod bound with the openb annotation
``alibabacloud.com/gpu-index`` ("0-1" or "0,1") gets those GPUs when they
are free.  A pod whose GPUs cannot be found (a bound pod over the node's
GPUs) holds none (``unplaced``): GPUs are never over-allocated.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from tensorsched.kernels.gpu import share as K
from tensorsched.kernels.gpu import subsets as KT

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.objects.meta import identity, join_path
from tensorsched.framework.state.derived import StateKey

from .gpu import (
    ANNO_GPU_INDEX,
    ANNO_GPU_MODEL,
    LABEL_GFD_PRODUCT,
    MILLI,
    RES_NVIDIA_GPU,
    GpuAsk,
    gpu_indices,
    node_gpu_count,
    node_gpu_memory,
    pod_gpu_ask,
    sourced,
)
from .node_topology import (
    C_NUMA,
    MAX_ZONES,
    NodeTopology,
    node_topology,
    pod_constraint,
    validated_nrt,
)
from .row_answers import RowAnswers

N_AFF = 18
EXTENSION = StateKey("gpu_table", __name__, "the state's GpuTable (``GpuTable.of``)")
EXTENSION_NRT = StateKey("node_topologies", __name__,
                         "node name -> NodeTopology from NodeResourceTopology objects "
                         "(``attach_node_topologies``), for a table made later")
_MEMO_INFO = "gpu_table.pod_info"           # PodRecord.memo key of pod_info's answers
LOG_CHUNK = 4096                            # change-log entries kept at first


@dataclass
class Allocation:
    row: int
    indices: tuple[int, ...]
    milli: int
    zone: int = -1             # NUMA node pinned (single-numa-node), -1 none
    cpu: int = 0               # millicores pinned on ``zone``
    mem: int = 0               # bytes pinned on ``zone``
    unplaced: bool = False


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


def _no_topologies(state) -> dict:
    return {}


def key_uniform(key: str) -> float:
    """A uniform number in [0, 1) drawn from the pod key (Random's GPU pick)."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2.0 ** 64


class GpuTable:
    def __init__(self, state):
        self.state = state
        self.cap = 0
        self.g = 1
        self.models: list[str] = []
        self.topos: list[tuple] = []              # (count, islands, numa)
        self.topo_ids: dict[tuple, int] = {}
        self._tables: dict[int, tuple] = {}       # k -> stacked tables
        self._subsets: dict[int, tuple] = {}      # k -> (its sub table, {(t, free, cons): idx})
        # NodeResourceTopology objects loaded with the cluster (framework.nrt)
        self.nrt: dict[str, NodeTopology] = dict(
            state.derived.extension(EXTENSION_NRT, _no_topologies))
        self.alloc: dict[str, Allocation] = {}
        self.version = 0
        self._seen = (-1, -1)
        self._asks: dict[str, tuple] = {}
        self._just_released: tuple | None = None
        self._adding: str | None = None
        self._adopted: set = set()     # pods a compiled block placed (``adopt``)
        self._answers: dict[str, RowAnswers] = {}
        # the rows bumped, in order: entry i is the row version
        # ``_log_base + 1 + i`` went to (``rows_changed_since``)
        self._log = np.empty(LOG_CHUNK, np.int64)
        self._log_len = 0
        self._log_base = self.version
        self._alloc_arrays(max(state.allocatable.shape[0], 1), 1)
        self.node_recs: list = [None] * self.cap
        self.row_keys: list[set] = [set() for _ in range(self.cap)]
        self.sync()                 # loads every node and the pods already on it
        state.listeners.add(self)
        state.restorers.append(self)

    # ----------------------------------------------------------- attach
    @classmethod
    def of(cls, state) -> GpuTable:
        t = state.derived.extension(EXTENSION, cls)
        t.sync()
        return t

    @staticmethod
    def attached(state) -> GpuTable | None:
        return state.derived.extension_if_any(EXTENSION)

    def set_node_resource_topologies(self, objects) -> None:
        """Topology from NodeResourceTopology objects (by node name)."""
        got = []
        for i, obj in enumerate(objects):       # all validated before any is applied
            ctx, _meta, _ns, name = identity(obj, "NodeResourceTopology", False,
                                             f"<NodeResourceTopology>#{i}")
            got.append((name, validated_nrt(ctx, obj)))
        for name, topo in got:
            self.nrt[name] = topo
            row = self.state.node_rows.get(name)
            if row is not None:
                self.node_recs[row] = None     # reload on the next sync
        self._seen = (-1, -1)
        self.sync()

    def answers(self, name: str, width: int, dtypes: tuple | None = None) -> RowAnswers:
        """The per-node answers named ``name`` kept on this table (shared by
        the plugins that ask the same question: GpuShareFit's filter and
        GpuTopologyScore both read the cheapest GPU subsets)."""
        got = self._answers.get(name)
        if got is None:
            got = self._answers[name] = RowAnswers(width, dtypes)
        return got

    # ----------------------------------------------------------- arrays
    def _alloc_arrays(self, cap: int, g: int) -> None:
        old = getattr(self, "count", None)      # None on the first call
        n_old = self.cap
        g_old = self.g
        self.cap, self.g = cap, g

        def grow(name, shape, dtype, fill=0):
            shape = shape if isinstance(shape, tuple) else (shape,)
            a = np.full(shape, fill, dtype)
            if old is not None:
                prev = getattr(self, name)
                sl = tuple(slice(0, min(s, p)) for s, p in zip(shape, prev.shape))
                a[sl] = prev[sl]
            setattr(self, name, a)
        z = MAX_ZONES
        grow("count", cap, np.int64)
        grow("model", cap, np.int64, -1)
        grow("left", (cap, g), np.int64)
        grow("gmem", (cap, g), np.int64)
        grow("island", (cap, g), np.int64, -1)
        grow("numa", (cap, g), np.int64, -1)
        grow("topo", cap, np.int64, -1)
        grow("zcpu", (cap, z), np.int64)
        grow("zmem", (cap, z), np.int64)
        grow("zcpu_used", (cap, z), np.int64)
        grow("zmem_used", (cap, z), np.int64)
        grow("nzones", cap, np.int64)
        grow("single_policy", cap, np.bool_)
        grow("aff", (cap, N_AFF), np.int64)
        grow("ver", cap, np.int64)
        if old is not None and cap > n_old:
            self.node_recs.extend([None] * (cap - n_old))
            self.row_keys.extend(set() for _ in range(cap - n_old))
        del g_old

    def _bump(self, row: int) -> None:
        self.version += 1
        self.ver[row] = self.version
        if self._log_len < self._log.shape[0]:
            self._log[self._log_len] = row
            self._log_len += 1
        else:
            self._log_rows(np.array([row], np.int64))

    def _log_rows(self, rows: np.ndarray) -> None:
        """Append ``rows`` (int64 [k], the rows of the next k versions in
        order) to the change log; a full log starts over (whoever reads
        from before its start then compares every row's version)."""
        k = rows.shape[0]
        if self._log_len + k > self._log.shape[0]:
            if self._log_len + k > max(LOG_CHUNK, 4 * self.cap):
                self._log_base += self._log_len
                self._log_len = 0
            if k > self._log.shape[0] - self._log_len:
                grown = np.empty(max(2 * self._log.shape[0], self._log_len + k), np.int64)
                grown[:self._log_len] = self._log[:self._log_len]
                self._log = grown
        self._log[self._log_len:self._log_len + k] = rows
        self._log_len += k

    def log_placed(self, rows: np.ndarray) -> None:
        """Rows a compiled block bumped in order (one version each, as
        ``_bump`` would have), for the change log."""
        self._log_rows(np.ascontiguousarray(rows, np.int64))

    def rows_changed_since(self, version: int) -> np.ndarray | None:
        """The rows whose version moved after table version ``version``
        (int64, possibly repeated, in bump order): O(changes), not a pass
        over the rows; None when the log no longer reaches back that far."""
        if version < self._log_base or version > self.version:
            return None
        return self._log[version - self._log_base:self._log_len]

    # ------------------------------------------------------------- nodes
    def sync(self) -> None:
        st = self.state
        seen = (st.layout_version, st.epoch)
        if seen == self._seen:
            return
        if st.allocatable.shape[0] > self.cap:
            self._alloc_arrays(st.allocatable.shape[0], self.g)
        for row in range(st.n_rows):
            rec = st.nodes[row]
            if rec is not self.node_recs[row]:
                self._load_row(row, rec)
        self._seen = seen            # not before: a refused node is refused again next time

    def _node_gpu(self, rec) -> tuple[int, str, int]:
        """(count, model, MiB per GPU) of a node record; malformed GPU
        fields are a ManifestError naming the node and the field."""
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

    def _node_inputs(self, rec) -> tuple:
        """Everything ``_load_row`` reads of a node, validated before the
        row changes: (count, model, memory, topology)."""
        try:
            return self._node_inputs_of(rec)
        except ManifestError as exc:
            raise sourced(exc, rec.obj) from None

    def _node_inputs_of(self, rec) -> tuple:
        count, model, mem = self._node_gpu(rec)
        if model and model not in self.models and len(self.models) >= 62:
            where = ("labels", LABEL_GFD_PRODUCT) if rec.labels.get(LABEL_GFD_PRODUCT) else (
                ("labels", ANNO_GPU_MODEL) if rec.labels.get(ANNO_GPU_MODEL)
                else ("annotations", ANNO_GPU_MODEL))
            raise ManifestError(f"Node {rec.name}", join_path(f"metadata.{where[0]}", where[1]),
                                f"GPU model {model!r}: at most 62 GPU models are supported")
        topo = self.nrt.get(rec.name) or node_topology(rec.obj)
        return count, model, mem, topo

    def _topo_id(self, count: int, topo: NodeTopology | None) -> int:
        if topo is None:
            key = (count, (-1,) * count, (-1,) * count)
        else:
            isl, nm = topo.signature(count)
            key = (count, isl, nm)
        t = self.topo_ids.get(key)
        if t is None:
            t = len(self.topos)
            self.topos.append(key)
            self.topo_ids[key] = t
            self._tables.clear()
        return t

    def _load_row(self, row: int, rec) -> None:
        inputs = self._node_inputs(rec) if rec is not None else None
        prev = {k: self.alloc[k].indices for k in self.row_keys[row]
                if k in self.alloc and self.alloc[k].row == row}
        self.node_recs[row] = rec
        for key in self.row_keys[row]:
            a = self.alloc.get(key)
            if a is not None and a.row == row:
                del self.alloc[key]
        self.row_keys[row] = set()
        self.count[row] = 0
        self.model[row] = -1
        self.left[row] = 0
        self.gmem[row] = 0
        self.island[row] = -1
        self.numa[row] = -1
        self.topo[row] = -1
        self.zcpu[row] = 0
        self.zmem[row] = 0
        self.zcpu_used[row] = 0
        self.zmem_used[row] = 0
        self.nzones[row] = 0
        self.single_policy[row] = False
        self.aff[row] = 0
        self._bump(row)
        if rec is None:
            return
        count, model, mem, topo = inputs
        if count > self.g:
            self._alloc_arrays(self.cap, count)
        if model:
            if model not in self.models:
                self.models.append(model)
            self.model[row] = self.models.index(model)
        self.count[row] = count
        self.left[row, :count] = MILLI
        self.gmem[row, :count] = mem
        if topo is not None:
            isl, nm = topo.signature(count)
            self.island[row, :count] = isl
            self.numa[row, :count] = nm
            nz = max([len(topo.numa_cpu), len(topo.numa_mem)] + [x + 1 for x in nm])
            nz = min(nz, MAX_ZONES)
            self.nzones[row] = nz
            cpu_all = rec.allocatable.get("cpu", 0)
            mem_all = rec.allocatable.get("memory", 0)
            for z in range(nz):
                c = topo.numa_cpu[z] if z < len(topo.numa_cpu) else -1
                m = topo.numa_mem[z] if z < len(topo.numa_mem) else -1
                self.zcpu[row, z] = c if c >= 0 else cpu_all // max(nz, 1)
                self.zmem[row, z] = m if m >= 0 else mem_all // max(nz, 1)
            self.single_policy[row] = topo.single_numa_policy
        self.topo[row] = self._topo_id(count, topo)
        # re-apply the pods already on the node
        for key in sorted(self.state.pods_on_node[row]):
            if key in self.state.pods and key != self._adding:
                self._place(self.state.pods.record(key), row, prefer=prev.get(key))

    # -------------------------------------------------------------- pods
    def pod_info(self, rec) -> PodGpu:
        got = self._asks.get(rec.key)
        if got is not None and got[0] is rec:
            return got[1]
        obj = rec.obj or {}
        # The ask derives from the pod alone (annotations, spec, requests):
        # kept in its memo, which records share only when those are equal
        # (one table group with the same annotations: Trace.records).
        memo = getattr(rec, "memo", None)
        info = memo.get(_MEMO_INFO) if memo is not None else None
        if info is None:
            info = self._pod_info_of(rec, obj)
            if memo is not None:
                memo[_MEMO_INFO] = info
        if len(self._asks) > 100000:
            self._asks.clear()
        self._asks[rec.key] = (rec, info)
        return info

    @staticmethod
    def _pod_info_of(rec, obj) -> PodGpu:
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

    def constraint_at(self, info: PodGpu, row: int) -> int:
        c = info.cons
        if info.guaranteed and self.single_policy[row]:
            c |= C_NUMA
        return c

    def on_pod(self, rec, row: int, delta: int) -> None:
        if delta > 0 and self._adopted and rec.key in self._adopted:
            self._adopted.discard(rec.key)      # its GPUs were taken by the block
            return
        self._adding = rec.key if delta > 0 else None
        try:
            self.sync()
        finally:
            self._adding = None
        if delta > 0:
            prefer = None
            jr = self._just_released
            if jr is not None and jr[0] == rec.key and jr[1] == row:
                prefer = jr[2]
            self._just_released = None
            self._place(rec, row, prefer=prefer)
        else:
            a = self.release(rec.key)
            self._just_released = (rec.key, row, a.indices) if a is not None else None
            if rec.key in self.row_keys[row]:
                self.row_keys[row].discard(rec.key)
                info = self.pod_info(rec)
                self.aff[row, K.affinity_tag(info.ask.num, info.ask.milli)] -= 1
            self._bump(row)

    # ------------------------------------------- ClusterState ``PodRestorer``
    def checkpoint(self):
        return self._just_released

    def rollback(self, mark) -> None:
        self._just_released = mark

    def hold(self, key: str):
        """The allocation ``key`` holds now (before a temporary removal)."""
        return self.alloc.get(key)

    def regain(self, key: str, rec, row: int, held) -> None:
        """After a temporary removal: the GPUs (and NUMA pin) the pod held
        before, which the table may not have picked again."""
        got = self.alloc.get(key)
        if held is None or got is None or (got.indices, got.zone, got.unplaced) == \
                (held.indices, held.zone, held.unplaced):
            return
        self.release(key)
        if held.indices or held.zone >= 0:
            info = self.pod_info(rec)
            self.apply(key, row, info, self.constraint_at(info, row), held.indices, held.zone)
        self.alloc[key] = held

    def _place(self, rec, row: int, prefer=None) -> None:
        info = self.pod_info(rec)
        self.row_keys[row].add(rec.key)
        self.aff[row, K.affinity_tag(info.ask.num, info.ask.milli)] += 1
        self._bump(row)
        cons = self.constraint_at(info, row)
        if not info.has_gpu and not (cons & C_NUMA):
            return
        pick = None
        for want in (info.fixed, prefer):
            if want is not None and self._valid_pick(row, info, cons, tuple(want)):
                pick = (tuple(want), self._zone_of(row, info, cons, tuple(want)))
                break
        if pick is None:
            pick = self.pick(row, info, topology_aware=True)
        if pick is None:
            self.alloc[rec.key] = Allocation(row, (), info.ask.milli, unplaced=True)
            return
        self.apply(rec.key, row, info, cons, *pick)

    def _zone_of(self, row, info, cons, indices) -> int:
        if not (cons & C_NUMA):
            return -1
        if indices:
            return int(self.numa[row, indices[0]])
        return self._cpu_zone(row, info)

    def _cpu_zone(self, row, info) -> int:
        for z in range(int(self.nzones[row])):
            if (self.zcpu[row, z] - self.zcpu_used[row, z] >= info.cpu
                    and self.zmem[row, z] - self.zmem_used[row, z] >= info.mem):
                return z
        return -1

    def _valid_pick(self, row, info, cons, indices) -> bool:
        c = int(self.count[row])
        if len(indices) != (info.ask.num if info.has_gpu else 0) or len(set(indices)) != len(indices):
            return False
        for g in indices:
            if not (0 <= g < c) or self.left[row, g] < info.ask.milli:
                return False
        if (cons & 1) and len(indices) > 1:
            isl = {int(self.island[row, g]) for g in indices}
            if len(isl) != 1 or -1 in isl:
                return False
        if cons & C_NUMA:
            if indices:
                nm = {int(self.numa[row, g]) for g in indices}
                if len(nm) != 1 or -1 in nm:
                    return False
                z = nm.pop()
                if (self.zcpu[row, z] - self.zcpu_used[row, z] < info.cpu
                        or self.zmem[row, z] - self.zmem_used[row, z] < info.mem):
                    return False
            elif self._cpu_zone(row, info) < 0:
                return False
        return True

    def apply(self, key, row, info: PodGpu, cons, indices, zone) -> Allocation:
        for g in indices:
            if self.left[row, g] < info.ask.milli:        # never over-allocate
                raise AssertionError(f"GPU {g} of row {row} over-allocated by {key}")
        for g in indices:
            self.left[row, g] -= info.ask.milli
        a = Allocation(row, tuple(int(g) for g in indices), info.ask.milli)
        if zone >= 0:
            a.zone, a.cpu, a.mem = zone, info.cpu, info.mem
            self.zcpu_used[row, zone] += info.cpu
            self.zmem_used[row, zone] += info.mem
        self.alloc[key] = a
        self._bump(row)
        return a

    def adopt(self, keys: list, rows: list, gpus: list, milli: list) -> None:
        """Pods a compiled block placed (``kernels.gpu.block``), which already
        took their GPUs in ``left``/``aff``/``ver``: pod ``keys[i]`` on row
        ``rows[i]`` holds GPUs ``gpus[i]`` (a tuple, empty without GPUs) of
        ``milli[i]`` each.  The state's add of each pod that follows is
        then a no-op here."""
        alloc, row_keys = self.alloc, self.row_keys
        for key, row, idx, m in zip(keys, rows, gpus, milli):
            row_keys[row].add(key)
            if idx:
                alloc[key] = Allocation(row, idx, m)
        self._adopted.update(keys)

    def release(self, key) -> Allocation | None:
        a = self.alloc.pop(key, None)
        if a is None:
            return None
        for g in a.indices:
            self.left[a.row, g] += a.milli
        if a.zone >= 0:
            self.zcpu_used[a.row, a.zone] -= a.cpu
            self.zmem_used[a.row, a.zone] -= a.mem
        self._bump(a.row)
        return a

    # ------------------------------------------------------------ choice
    def tables(self, k: int):
        got = self._tables.get(k)
        if got is None:
            got = KT.stack_tables([KT.topology_table(c, isl, nm, k) for c, isl, nm in self.topos])
            self._tables[k] = got
        return got

    def pick(self, row: int, info: PodGpu, *, topology_aware: bool, sel: int = K.SEL_BEST,
             key: str = "", fgd=None, cpu_left: int | None = None):
        """(indices, zone) for ``info`` on ``row`` given the current GPUs
        (the pod itself not allocated), or None.  Whole GPUs: the tightest
        allowed subset when ``topology_aware`` or constrained, else the
        first free GPUs.  A share: among the allowed GPUs, best fit
        (SEL_BEST), uniform by the pod key (SEL_RANDOM) or the best FGD
        score (SEL_FGD with ``fgd`` = (typical arrays, frag function))."""
        cons = self.constraint_at(info, row)
        c = int(self.count[row])
        if not info.has_gpu:
            if cons & C_NUMA:
                z = self._cpu_zone(row, info)
                return ((), z) if z >= 0 else None
            return (), -1
        ask = info.ask
        if c == 0 or not K.model_ok(int(self.model[row]), self.model_mask(ask.models)):
            return None
        allowed = (1 << c) - 1
        if cons & C_NUMA:
            allowed = 0
            for g in range(c):
                z = int(self.numa[row, g])
                if z >= 0 and (self.zcpu[row, z] - self.zcpu_used[row, z] >= info.cpu
                               and self.zmem[row, z] - self.zmem_used[row, z] >= info.mem):
                    allowed |= 1 << g
        free = 0
        lv = self.left[row, :c].tolist()
        milli = ask.milli
        for g in range(c):
            if lv[g] >= milli:
                free |= 1 << g
        free &= allowed
        if ask.is_share:
            cand = KT.mask_indices(free)
            if not cand:
                return None
            if sel == K.SEL_RANDOM:
                g = cand[int(key_uniform(key) * len(cand))]
            elif sel == K.SEL_FGD and fgd is not None:
                g = self._fgd_pick(row, info, cand, fgd, cpu_left)
            else:
                g = min(cand, key=lambda x: (lv[x], x))
            return (g,), (int(self.numa[row, g]) if cons & C_NUMA else -1)
        if topology_aware or cons:
            idx = self._best_subset(ask.num, int(self.topo[row]), free, cons)
            if idx is None:
                return None
        else:
            cands = KT.mask_indices(free)
            if len(cands) < ask.num:
                return None
            idx = tuple(cands[:ask.num])
        return idx, (int(self.numa[row, idx[0]]) if cons & C_NUMA else -1)

    def _best_subset(self, k: int, t: int, free: int, cons: int):
        """The GPU indices of the tightest allowed ``k``-subset of topology
        ``t`` within ``free`` (``best_subsets_np`` for one node), or None;
        kept per (k, t, free, cons) for as long as the tables stand."""
        sub, cost, iok, nok = self.tables(k)
        memo = self._subsets.get(k)
        if memo is None or memo[0] is not sub:
            memo = self._subsets[k] = (sub, {})
        key = (t, free, cons)
        got = memo[1].get(key, False)
        if got is False:
            oc = np.empty(1, np.int64)
            oi = np.empty(1, np.int64)
            KT.best_subsets_np(np.array([t], np.int64), np.array([free], np.int64),
                               np.array([cons], np.int64), sub, cost, iok, nok, oc, oi)
            got = None if oi[0] < 0 else tuple(KT.mask_indices(int(sub[t, oi[0]])))
            memo[1][key] = got
        return got

    def _fgd_pick(self, row, info, cand, fgd, cpu_left):
        typical, frag = fgd
        c = int(self.count[row])
        left = self.left[row, :c].copy()
        cl = int(cpu_left if cpu_left is not None else 0)
        before = frag(c, int(self.model[row]), left, cl, typical)
        best, best_g = None, None
        for g in cand:
            left[g] -= info.ask.milli
            after = frag(c, int(self.model[row]), left, cl - info.cpu_nz, typical)
            left[g] += info.ask.milli
            s = int(K.sigmoid_score.py_func(before, after))
            if best is None or s > best:
                best, best_g = s, g
        return best_g

    def model_mask(self, models) -> int:
        mask = 0
        for m in models:
            if m:
                mask |= (1 << self.models.index(m)) if m in self.models else (1 << 62)
        return mask

    def repick(self, key: str, rec, **kw) -> Allocation | None:
        """Release ``key``'s allocation and allocate again with ``pick(**kw)``
        (Reserve); None (nothing held) when no choice fits."""
        a = self.alloc.get(key)
        row = a.row if a is not None else self.state.pods.row_of(key)
        self.release(key)
        info = self.pod_info(rec)
        cons = self.constraint_at(info, row)
        p = self.pick(row, info, key=key, **kw)
        if p is None:
            return None
        return self.apply(key, row, info, cons, *p)

    # ------------------------------------------------------------ checks
    def check(self) -> None:
        """Invariants: no GPU over-allocated, usage = allocations."""
        n = self.state.n_rows
        used = np.zeros((self.cap, self.g), np.int64)
        zc = np.zeros((self.cap, MAX_ZONES), np.int64)
        for a in self.alloc.values():
            for g in a.indices:
                used[a.row, g] += a.milli
            if a.zone >= 0:
                zc[a.row, a.zone] += a.cpu
        valid = np.arange(self.g)[None, :] < self.count[:n, None]
        assert (self.left[:n] >= 0).all(), "negative free milli"
        assert (np.where(valid, self.left[:n] + used[:n], 0) == valid * MILLI).all(), \
            "GPU accounting mismatch"
        assert (self.zcpu_used[:n] == zc[:n]).all()

    def binding_gpus(self, key: str) -> dict | None:
        a = self.alloc.get(key)
        if a is None or not a.indices:
            return None
        return {"node": self.state.node_name(a.row), "indices": list(a.indices),
                "milli": a.milli}


def attach_node_topologies(state, topologies: dict) -> None:
    """Node name -> NodeTopology (from NodeResourceTopology objects) for the
    GPU table of ``state``: kept on the state for a table created later, and
    applied now to a table already attached."""
    state.derived.extension(EXTENSION_NRT, _no_topologies).update(topologies)
    t = GpuTable.attached(state)
    if t is not None:
        t.nrt.update(topologies)
        for name in topologies:
            row = state.node_rows.get(name)
            if row is not None:
                t.node_recs[row] = None     # reload on the next sync
        t._seen = (-1, -1)
        t.sync()


def binding_gpus(state) -> dict:
    """pod key -> {"node", "indices", "milli"} for every pod holding GPUs
    (empty when no GPU plugin ever ran on this state)."""
    t = GpuTable.attached(state)
    if t is None:
        return {}
    return {k: t.binding_gpus(k) for k, a in t.alloc.items() if a.indices}
