"""Choosing GPUs for a pod on one node of a GPU table.

``GpuPicker`` answers, from a ``GpuTable``'s current rows, which GPUs (and
which NUMA zone) a pod would get on a node: the tightest allowed subset of
the node's topology for whole GPUs, best fit / random / FGD for a share.
It changes nothing in the table (``GpuTable.apply`` takes a pick); it
keeps the topology tables it searches, per subset size, until the table
learns a new topology (``forget_tables``).
"""

from __future__ import annotations

import hashlib

import numpy as np

from tensorsched.kernels.gpu import share as K
from tensorsched.kernels.gpu import subsets as KT

from .gpu_inputs import PodGpu
from .node_topology import C_NUMA


def key_uniform(key: str) -> float:
    """A uniform number in [0, 1) drawn from the pod key (Random's GPU pick)."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2.0 ** 64


class GpuPicker:
    """GPU choices on the rows of one table (read, never written)."""

    def __init__(self, table) -> None:
        self.table = table
        self._tables: dict[int, tuple] = {}       # k -> stacked tables
        self._subsets: dict[int, tuple] = {}      # k -> (its sub table, {(t, free, cons): idx})

    def forget_tables(self) -> None:
        """The table learnt a new topology: the stacked tables are stale."""
        self._tables.clear()

    def zone_of(self, row, info, cons, indices) -> int:
        """The NUMA zone pod ``info`` is pinned to on ``row`` with GPUs
        ``indices`` under constraint bits ``cons`` (-1: none)."""
        t = self.table
        if not (cons & C_NUMA):
            return -1
        if indices:
            return int(t.numa[row, indices[0]])
        return self.cpu_zone(row, info)

    def cpu_zone(self, row, info) -> int:
        """The first NUMA zone of ``row`` with room for the pod's CPU and
        memory, or -1."""
        t = self.table
        for z in range(int(t.nzones[row])):
            if (t.zcpu[row, z] - t.zcpu_used[row, z] >= info.cpu
                    and t.zmem[row, z] - t.zmem_used[row, z] >= info.mem):
                return z
        return -1

    def valid_pick(self, row, info, cons, indices) -> bool:
        """Whether GPUs ``indices`` on ``row`` are a pick the pod may hold
        now (free enough, one island / NUMA node when constrained)."""
        t = self.table
        c = int(t.count[row])
        if len(indices) != (info.ask.num if info.has_gpu else 0) or len(set(indices)) != len(indices):
            return False
        for g in indices:
            if not (0 <= g < c) or t.left[row, g] < info.ask.milli:
                return False
        if (cons & 1) and len(indices) > 1:
            isl = {int(t.island[row, g]) for g in indices}
            if len(isl) != 1 or -1 in isl:
                return False
        if cons & C_NUMA:
            if indices:
                nm = {int(t.numa[row, g]) for g in indices}
                if len(nm) != 1 or -1 in nm:
                    return False
                z = nm.pop()
                if (t.zcpu[row, z] - t.zcpu_used[row, z] < info.cpu
                        or t.zmem[row, z] - t.zmem_used[row, z] < info.mem):
                    return False
            elif self.cpu_zone(row, info) < 0:
                return False
        return True

    def tables(self, k: int):
        """The stacked topology tables of ``k``-subsets of every topology
        the table knows (``kernels.gpu.subsets.stack_tables``)."""
        t = self.table
        got = self._tables.get(k)
        if got is None:
            got = KT.stack_tables([KT.topology_table(c, isl, nm, k) for c, isl, nm in t.topos])
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
        t = self.table
        cons = t.constraint_at(info, row)
        c = int(t.count[row])
        if not info.has_gpu:
            if cons & C_NUMA:
                z = self.cpu_zone(row, info)
                return ((), z) if z >= 0 else None
            return (), -1
        ask = info.ask
        if c == 0 or not K.model_ok(int(t.model[row]), t.model_mask(ask.models)):
            return None
        allowed = (1 << c) - 1
        if cons & C_NUMA:
            allowed = 0
            for g in range(c):
                z = int(t.numa[row, g])
                if z >= 0 and (t.zcpu[row, z] - t.zcpu_used[row, z] >= info.cpu
                               and t.zmem[row, z] - t.zmem_used[row, z] >= info.mem):
                    allowed |= 1 << g
        free = 0
        lv = t.left[row, :c].tolist()
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
            return (g,), (int(t.numa[row, g]) if cons & C_NUMA else -1)
        if topology_aware or cons:
            idx = self._best_subset(ask.num, int(t.topo[row]), free, cons)
            if idx is None:
                return None
        else:
            cands = KT.mask_indices(free)
            if len(cands) < ask.num:
                return None
            idx = tuple(cands[:ask.num])
        return idx, (int(t.numa[row, idx[0]]) if cons & C_NUMA else -1)

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
        """The GPU of ``cand`` whose take scores best under FGD."""
        t = self.table
        typical, frag = fgd
        c = int(t.count[row])
        left = t.left[row, :c].copy()
        cl = int(cpu_left if cpu_left is not None else 0)
        before = frag(c, int(t.model[row]), left, cl, typical)
        best, best_g = None, None
        for g in cand:
            left[g] -= info.ask.milli
            after = frag(c, int(t.model[row]), left, cl - info.cpu_nz, typical)
            left[g] += info.ask.milli
            s = int(K.sigmoid_score.py_func(before, after))
            if best is None or s > best:
                best, best_g = s, g
        return best_g
