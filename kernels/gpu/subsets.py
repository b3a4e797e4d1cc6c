"""Topology-aware GPU subset feasibility and choice, for all nodes at once.

A node has at most 16 GPUs, so a pod asking for k GPUs is placed by
enumerating the k-subsets of the node's GPUs as bitmasks.  For each node
topology (a distinct (GPU count, islands, NUMA nodes) tuple, id ``t``) the
caller precomputes, per k, the subsets in ``itertools.combinations`` order:

  sub [T, S] int64    subset bitmask (padding: bit 62, never free)
  cost [T, S] int64   interconnect cost: 1000 x the loosest link level among
                      the subset's GPU pairs (0 one GPU, 1 same NVLink island,
                      2 same NUMA node, 3 across NUMA nodes or unknown) plus
                      the sum of the pair levels (tie-break)
  isl_ok [T, S] bool  every GPU in one known island (always for k = 1)
  numa_ok [T, S] bool every GPU on one known NUMA node

Per node: ``topo`` [N] (id), ``free`` [N] (bitmask of GPUs the pod may use:
enough free milli, and, for a single-numa-node pod, on a NUMA node with
room for its CPU and memory), ``cons`` [N] (C_ISLAND | C_NUMA bits that
apply on that node).  The answer per node is the cheapest allowed subset
(the first in enumeration order among equals) and its cost, or -1.

``best_subsets`` (numba) and ``best_subsets_np`` (NumPy: one evaluation per
distinct (topology, free mask, constraint) key) give identical answers; so
do ``subset_costs`` / ``subset_costs_np`` / ``subset_costs_cuda`` (NUMA
room, free mask and subset search fused per node; the cuda one runs
``gpu._core.subset_cost_node`` one thread per node), which the plugins use.
"""

from __future__ import annotations

import itertools

import numpy as np

from ._core import C_ISLAND, C_NUMA
from .share import core as _core
from .share import feasible_np

PAD = np.int64(1) << np.int64(62)
LEVEL = 1000


def link_levels(islands: np.ndarray, numa: np.ndarray) -> np.ndarray:
    """[G, G] link level between GPUs: 0 self, 1 same NVLink island, 2 same
    NUMA node (PCIe), 3 across NUMA nodes or unknown (-1 island / NUMA ids
    are unknown)."""
    g = islands.shape[0]
    lv = np.full((g, g), 3, np.int64)
    same_n = (numa[:, None] == numa[None, :]) & (numa[:, None] >= 0)
    same_i = (islands[:, None] == islands[None, :]) & (islands[:, None] >= 0)
    lv[same_n] = 2
    lv[same_i] = 1
    np.fill_diagonal(lv, 0)
    return lv


def subset_masks(count: int, k: int) -> np.ndarray:
    """k-subsets of ``count`` GPUs as bitmasks, in combinations order."""
    if k <= 0 or k > count:
        return np.zeros(0, np.int64)
    return np.array([sum(1 << g for g in c) for c in itertools.combinations(range(count), k)],
                    np.int64)


def topology_table(count: int, islands, numa, k: int):
    """(sub [S], cost [S], isl_ok [S], numa_ok [S]) of one node topology."""
    isl = np.asarray(list(islands)[:count] + [-1] * max(0, count - len(islands)), np.int64)
    nm = np.asarray(list(numa)[:count] + [-1] * max(0, count - len(numa)), np.int64)
    lv = link_levels(isl, nm)
    combos = list(itertools.combinations(range(count), k)) if 0 < k <= count else []
    s = len(combos)
    sub = np.zeros(s, np.int64)
    cost = np.zeros(s, np.int64)
    iok = np.zeros(s, np.bool_)
    nok = np.zeros(s, np.bool_)
    for j, c in enumerate(combos):
        sub[j] = sum(1 << g for g in c)
        pairs = [lv[a, b] for a, b in itertools.combinations(c, 2)]
        cost[j] = (max(pairs) * LEVEL + sum(pairs)) if pairs else 0
        iok[j] = k == 1 or (isl[list(c)].min() >= 0 and len(set(isl[list(c)].tolist())) == 1)
        nok[j] = nm[list(c)].min() >= 0 and len(set(nm[list(c)].tolist())) == 1
    return sub, cost, iok, nok


def stack_tables(tables):
    """Pad per-topology tables to [T, S_max] (padding never fits)."""
    t = len(tables)
    s = max([len(tb[0]) for tb in tables] + [1])
    sub = np.full((t, s), PAD, np.int64)
    cost = np.zeros((t, s), np.int64)
    iok = np.zeros((t, s), np.bool_)
    nok = np.zeros((t, s), np.bool_)
    for i, (a, b, c, d) in enumerate(tables):
        sub[i, :len(a)] = a
        cost[i, :len(a)] = b
        iok[i, :len(a)] = c
        nok[i, :len(a)] = d
    return sub, cost, iok, nok


# --------------------------------------------------------------- numba
# Thin wrappers over ``gpu._core``'s njit loops (compiled once in
# ``gpu.share``); ``gpu._cuda`` runs the same per-node rules one thread per
# node.  The wrappers allocate the outputs.

def free_masks(gpu_count, gpu_left, milli, allowed):
    """[N] bitmask of the GPUs with at least ``milli`` free, within ``allowed``
    ([N] bitmask; -1 = all)."""
    out = np.zeros(gpu_count.shape[0], np.int64)
    _core["free_masks_into"](gpu_count, gpu_left, milli, allowed, out)
    return out


def best_subsets(topo, free, cons, sub, cost, isl_ok, numa_ok, out_cost, out_idx):
    _core["best_subsets_into"](topo, free, cons, sub, cost, isl_ok, numa_ok, out_cost, out_idx)
    return out_cost


def zone_allowed(gpu_count, numa, zone_cpu_free, zone_mem_free, cpu, mem):
    """[N] bitmask of GPUs whose NUMA node has room for (cpu, mem)."""
    out = np.zeros(gpu_count.shape[0], np.int64)
    _core["zone_allowed_into"](gpu_count, numa, zone_cpu_free, zone_mem_free, cpu, mem, out)
    return out


def subset_costs(gpu_count, gpu_left, numa, zone_cpu_free, zone_mem_free, topo, cons,
                 cpu, mem, milli, sub, cost, isl_ok, numa_ok, out_cost, out_idx):
    """Per node [N]: the cheapest allowed subset (cost, index into the
    table) for a pod asking ``milli`` per GPU with constraint bits
    ``cons`` [N]: ``zone_allowed`` (C_NUMA nodes only), ``free_masks`` and
    ``best_subsets`` fused into one pass; fills out_cost / out_idx."""
    _core["subset_costs_into"](gpu_count, gpu_left, numa, zone_cpu_free, zone_mem_free, topo,
                               cons, cpu, mem, milli, sub, cost, isl_ok, numa_ok, out_cost,
                               out_idx)
    return out_cost


def gpu_fit_rows(rows, gpu_count, model, gpu_left, num, milli, mask, out):
    """``gpu_fit_nodes`` for the nodes ``rows`` [k] int64 only, written
    into ``out`` [N] bool at those rows (full columns, no gather); returns
    ``out[rows]``."""
    _core["gpu_fit_rows_into"](rows, gpu_count, model, gpu_left, num, milli, mask, out)
    return out[rows]


def subset_rows(rows, base_cons, guaranteed, single_policy, gpu_count, gpu_left, numa, zcpu,
                zcpu_used, zmem, zmem_used, topo, cpu, mem, milli, sub, cost, isl_ok, numa_ok,
                cons, zone_cpu_free, zone_mem_free, out_cost, out_idx):
    """``subset_costs`` for the nodes ``rows`` [k] int64 only, on full
    columns (``gpu._core.subset_rows_into``; ``cons`` [N], the zone
    scratch [N, Z] and ``out_cost`` / ``out_idx`` [N] written at those
    rows); returns (cons, cost, idx) at ``rows``."""
    _core["subset_rows_into"](rows, base_cons, guaranteed, single_policy, gpu_count, gpu_left,
                              numa, zcpu, zcpu_used, zmem, zmem_used, topo, cpu, mem, milli, sub,
                              cost, isl_ok, numa_ok, cons, zone_cpu_free, zone_mem_free,
                              out_cost, out_idx)
    return cons[rows], out_cost[rows], out_idx[rows]


def subset_costs_np(gpu_count, gpu_left, numa, zone_cpu_free, zone_mem_free, topo, cons,
                    cpu, mem, milli, sub, cost, isl_ok, numa_ok, out_cost, out_idx):
    """NumPy twin of ``subset_costs``."""
    allowed = np.where((cons & C_NUMA) != 0,
                       zone_allowed_np(gpu_count, numa, zone_cpu_free, zone_mem_free, cpu, mem),
                       -1)
    free = free_masks_np(gpu_count, gpu_left, milli, allowed)
    return best_subsets_np(topo, free, cons, sub, cost, isl_ok, numa_ok, out_cost, out_idx)


def subset_costs_cuda(*args):
    """``subset_costs`` as a CUDA kernel, one thread per node (host arrays
    in and out; ``out_cost`` / ``out_idx`` are filled)."""
    from . import _cuda as _gpu_cuda     # numba-cuda: only with the cuda backend
    return _gpu_cuda.subset_costs(*args)


# --------------------------------------------------------------- numpy

def free_masks_np(gpu_count, gpu_left, milli, allowed):
    g = gpu_left.shape[1]
    valid = np.arange(g)[None, :] < gpu_count[:, None]
    ok = valid & (gpu_left >= milli)
    bits = np.int64(1) << np.arange(g, dtype=np.int64)
    return (ok * bits[None, :]).sum(axis=1).astype(np.int64) & allowed


def zone_allowed_np(gpu_count, numa, zone_cpu_free, zone_mem_free, cpu, mem):
    n, g = numa.shape
    valid = (np.arange(g)[None, :] < gpu_count[:, None]) & (numa >= 0)
    z = np.maximum(numa, 0)
    rows = np.arange(n)[:, None]
    fits = (zone_cpu_free[rows, z] >= cpu) & (zone_mem_free[rows, z] >= mem) & valid
    bits = np.int64(1) << np.arange(g, dtype=np.int64)
    return (fits * bits[None, :]).sum(axis=1).astype(np.int64)


def best_subsets_np(topo, free, cons, sub, cost, isl_ok, numa_ok, out_cost, out_idx,
                    chunk_cells: int = 1 << 22):
    """NumPy twin of ``best_subsets``: evaluated once per distinct
    (topology, free mask, constraint) key, then mapped back to the nodes."""
    out_cost[:] = -1
    out_idx[:] = -1
    live = np.flatnonzero(topo >= 0)
    if live.shape[0] == 0 or sub.shape[1] == 0:
        return out_cost
    key = (topo[live] << np.int64(24)) | (cons[live] << np.int64(20)) | (free[live] & 0xFFFFF)
    uniq, inv = np.unique(key, return_inverse=True)
    ut = uniq >> np.int64(24)
    uc = (uniq >> np.int64(20)) & 0xF
    ue = uniq & 0xFFFFF
    s = sub.shape[1]
    big = np.iinfo(np.int64).max
    best_c = np.empty(uniq.shape[0], np.int64)
    best_i = np.empty(uniq.shape[0], np.int64)
    step = max(1, chunk_cells // max(s, 1))
    for a in range(0, uniq.shape[0], step):
        t = ut[a:a + step]
        m = sub[t]
        ok = (m & ~ue[a:a + step, None]) == 0
        ok &= ((uc[a:a + step, None] & C_ISLAND) == 0) | isl_ok[t]
        ok &= ((uc[a:a + step, None] & C_NUMA) == 0) | numa_ok[t]
        cst = np.where(ok, cost[t], big)
        bi = np.argmin(cst, axis=1)
        bc = cst[np.arange(t.shape[0]), bi]
        best_c[a:a + step] = np.where(bc == big, -1, bc)
        best_i[a:a + step] = np.where(bc == big, -1, bi)
    out_cost[live] = best_c[inv.reshape(-1)]
    out_idx[live] = best_i[inv.reshape(-1)]
    return out_cost


def mask_indices(mask: int) -> list[int]:
    out, g = [], 0
    while mask:
        if mask & 1:
            out.append(g)
        mask >>= 1
        g += 1
    return out


def topology_score(cost):
    """0..100 from a subset cost: one island (or one GPU) 100, one NUMA node
    50, looser 0; -1 (infeasible) stays 0."""
    lv = np.where(cost < 0, 3, cost // LEVEL)
    return np.where(cost < 0, 0, np.where(lv <= 1, 100, np.where(lv == 2, 50, 0))).astype(np.int64)


def gpu_fit_nodes(gpu_count, model, gpu_left, num, milli, mask):
    """[N] bool: ``num`` GPUs with ``milli`` free each, of an allowed model
    (the GPU part of ``gpu.share.node_fits``)."""
    out = np.zeros(gpu_count.shape[0], np.bool_)
    _core["gpu_fit_into"](gpu_count, model, gpu_left, num, milli, mask, out)
    return out


def gpu_fit_nodes_cuda(gpu_count, model, gpu_left, num, milli, mask):
    """``gpu_fit_nodes`` as a CUDA kernel, one thread per node."""
    from . import _cuda as _gpu_cuda     # numba-cuda: only with the cuda backend
    return _gpu_cuda.gpu_fit_nodes(gpu_count, model, gpu_left, num, milli, mask)


def gpu_fit_nodes_np(gpu_count, model, gpu_left, num, milli, mask):
    z = np.zeros(gpu_count.shape[0], np.int64)
    return feasible_np(gpu_count, model, gpu_left, z, z, 0, 0, num, milli, mask)
