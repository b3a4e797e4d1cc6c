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

from dataclasses import dataclass

import numpy as np

from tensorsched.framework.parsing.meta import identity
from tensorsched.framework.records.records import MemoKey
from tensorsched.framework.state.derived import StateKey
from tensorsched.kernels.gpu import share as K

from .gpu import MILLI
from .gpu_inputs import PodGpu, node_inputs, pod_gpu
from .gpu_pick import GpuPicker, key_uniform  # noqa: F401  (key_uniform: openb.batch)
from .node_topology import C_NUMA, MAX_ZONES, NodeTopology, validated_nrt
from .row_answers import RowAnswers

N_AFF = 18
EXTENSION = StateKey("gpu_table", __name__, "the state's GpuTable (``GpuTable.of``)")
EXTENSION_NRT = StateKey("node_topologies", __name__,
                         "node name -> NodeTopology from NodeResourceTopology objects "
                         "(``attach_node_topologies``), for a table made later")
_MEMO_INFO = MemoKey("gpu_table.pod_info", __name__,
                     "the pod's PodGpu (``GpuTable.pod_info``)")
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
    # the row's version right after the default rule (``GpuTable._place``:
    # the tightest subset) took these GPUs; -1 when taken otherwise
    default_at: int = -1


def _no_topologies(state) -> dict:
    return {}


class GpuTable:
    """The GPUs of every node row of one state and the pods holding them
    (see the module doc).  It follows the state as a ``PodListener``
    (``on_pod``) and a ``PodRestorer`` (``checkpoint`` / ``rollback`` /
    ``hold`` / ``regain``), the contracts ``framework.state.listeners``
    declares; GPU choices are its ``picker``'s (``gpu_pick``)."""

    def __init__(self, state):
        self.state = state
        self.cap = 0
        self.g = 1
        self.models: list[str] = []
        self.topos: list[tuple] = []              # (count, islands, numa)
        self.topo_ids: dict[tuple, int] = {}
        self.picker = GpuPicker(self)             # GPU choices on these rows
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
        self.use_topologies(dict(got))

    def use_topologies(self, topologies: dict) -> None:
        """Node name -> NodeTopology, taken over the nodes' own annotations
        (the rows of those nodes reload now)."""
        self.nrt.update(topologies)
        for name in topologies:
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
            self.picker.forget_tables()
        return t

    def _load_row(self, row: int, rec) -> None:
        inputs = node_inputs(rec, self.models, self.nrt) if rec is not None else None
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
        # The ask derives from the pod alone (annotations, spec, requests):
        # kept in its memo, which records share only when those are equal
        # (one table group with the same annotations: Trace.records).
        memo = getattr(rec, "memo", None)
        info = memo.get(_MEMO_INFO) if memo is not None else None
        if info is None:
            info = pod_gpu(rec)
            if memo is not None:
                memo[_MEMO_INFO] = info
        if len(self._asks) > 100000:
            self._asks.clear()
        self._asks[rec.key] = (rec, info)
        return info

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
            if want is not None and self.picker.valid_pick(row, info, cons, tuple(want)):
                pick = (tuple(want), self.picker.zone_of(row, info, cons, tuple(want)))
                break
        default = pick is None
        if default:
            pick = self.picker.pick(row, info, topology_aware=True)
        if pick is None:
            self.alloc[rec.key] = Allocation(row, (), info.ask.milli, unplaced=True)
            return
        a = self.apply(rec.key, row, info, cons, *pick)
        if default:
            a.default_at = int(self.ver[row])

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

    def adopt(self, keys: list, rows: list, gpus: list, milli: list,
              pins: list | None = None) -> None:
        """Pods a compiled block placed (``kernels.gpu.block``), which already
        took their GPUs in ``left``/``aff``/``ver`` (and their NUMA pins in
        ``zcpu_used``/``zmem_used``): pod ``keys[i]`` on row ``rows[i]``
        holds GPUs ``gpus[i]`` (a tuple, empty without GPUs) of
        ``milli[i]`` each, pinned by ``pins[i]`` = (zone or -1, millicores,
        bytes).  The state's add of each pod that follows is then a no-op
        here."""
        alloc, row_keys = self.alloc, self.row_keys
        if pins is None:
            pins = ((-1, 0, 0),) * len(keys)
        for key, row, idx, m, pin in zip(keys, rows, gpus, milli, pins):
            row_keys[row].add(key)
            if idx:
                alloc[key] = Allocation(row, idx, m, *pin)
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
        info = self.pod_info(rec)
        cons = self.constraint_at(info, row)
        if (a is not None and a.default_at == self.ver[row] and info.has_gpu
                and not info.ask.is_share and (kw.get("topology_aware") or cons)):
            # Whole GPUs, nothing changed on the row since the default rule
            # took them: the tightest subset again, which ``pick`` would
            # choose (the rule and the free GPUs are the same).
            return a
        self.release(key)
        p = self.picker.pick(row, info, key=key, **kw)
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
        t.use_topologies(topologies)


def binding_gpus(state) -> dict:
    """pod key -> {"node", "indices", "milli"} for every pod holding GPUs
    (empty when no GPU plugin ever ran on this state)."""
    t = GpuTable.attached(state)
    if t is None:
        return {}
    return {k: t.binding_gpus(k) for k, a in t.alloc.items() if a.indices}
