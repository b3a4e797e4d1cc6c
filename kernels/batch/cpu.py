"""The CPU twin of the batched engine: ``_cluster.run_cluster`` (on the
rules of ``_rules``, inlined) compiled with ``njit``, one cluster per ``prange`` iteration (the machine's cores, or
``threads``), each with its own scratch allocated inside the iteration
(the per-(pod class, node) answer cache is [classes, nodes] per cluster:
memory grows with the threads, not with the batch)."""

from __future__ import annotations

import hashlib
import inspect

import numba
import numpy as np
from numba import njit, prange

from tensorsched.kernels._compile import COMPILED, KEY, compile_module
from tensorsched.kernels.gpu import _block as _gpu_block
from tensorsched.kernels.gpu import share as _share

from . import _cluster, _rules
from .arrays import BatchArrays

_FROM_SHARE = ("gpu_fit", "node_frag", "affinity_tag", "select_gpus", "dotprod_node",
               "clustering_node", "packing_node", "bestfit_raw", "fgd_node")
_FROM_BLOCK = ("tie_pick", "top_push")
AFF_TAGS = 18       # gpu._core.affinity_tag: 0 .. 17


def _base() -> dict:
    base = {name: _share.core[name] for name in _FROM_SHARE}
    # the block's tie rules, inlined here (they run once per node)
    base.update({name: njit(getattr(_gpu_block, name), inline="always") for name in _FROM_BLOCK})
    key = _share.core.get(KEY)
    src = hashlib.sha256(inspect.getsource(_gpu_block).encode()).hexdigest()
    base[KEY] = None if key is None else f"{key}+{src}"
    base[COMPILED] = _FROM_SHARE + _FROM_BLOCK
    return base


rules = compile_module(_rules, njit, base=_base(), options={"nogil": True, "inline": "always"},
                       cache=True)
_run_cluster = compile_module(_cluster, njit, base=rules, options={"nogil": True},
                              cache=True)["run_cluster"]


@njit(parallel=True, nogil=True)
def _run_all(n_nodes, gpu_count, model, cpu_cap, mem_cap, pods_cap, n_tree, t_lo, t_len,
             t_left, t_right, leaf_of, n_classes, c_cpu, c_mem, c_cpu_nz, c_num, c_milli, c_mask,
             n_typical, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, run_set, run_workload,
             policy, sel, seed_mix, gpu_weight, static_total, ev_off, ev_len, cls, u,
             gpu_slots, out_node, out_gmask, out_frag):
    for b in prange(run_set.shape[0]):
        s = run_set[b]
        w = run_workload[b]
        n = n_nodes[s]
        nt = n_tree[s]
        nc = n_classes[w]
        ntp = n_typical[w]
        o = ev_off[b]
        e = ev_len[b]
        cache_score = np.empty((max(nc, 1), n), np.int64)
        cache_gpu = np.empty((max(nc, 1), n), np.int64)
        cache_ver = np.empty((max(nc, 1), n), np.int64)
        _run_cluster(
            n, gpu_count[s, :n], model[s, :n], cpu_cap[s, :n], mem_cap[s, :n], pods_cap[s, :n],
            t_lo[s, :nt], t_len[s, :nt], t_left[s, :nt], t_right[s, :nt], leaf_of[s, :n],
            c_cpu[w, :nc], c_mem[w, :nc], c_cpu_nz[w, :nc], c_num[w, :nc], c_milli[w, :nc],
            c_mask[w, :nc], tp_cpu[w, :ntp], tp_num[w, :ntp], tp_milli[w, :ntp],
            tp_mask[w, :ntp], tp_freq[w, :ntp], policy[b], sel[b], seed_mix[b], gpu_weight[b],
            static_total[b, :n], cls[o:o + e], u[o:o + e], out_node[o:o + e],
            out_gmask[o:o + e], out_frag[o:o + e],
            np.empty((n, gpu_slots), np.int64), np.empty(n, np.int64), np.empty(n, np.int64),
            np.empty(n, np.int64), np.empty((n, 18), np.int64), np.empty(n, np.int64),
            np.zeros(1, np.int64), cache_score, cache_gpu, cache_ver, np.empty(n, np.int64),
            np.empty(16, np.int64), np.empty(16, np.int64), np.empty(n, np.float64),
            np.empty(max(nt, 1), np.float64))


def run_batch(a: BatchArrays, threads: int | None = None) -> tuple[np.ndarray, np.ndarray,
                                                                     np.ndarray]:
    """Every run of ``a`` (checked first): (out_node, out_gmask, out_frag)
    [E] (see ``arrays``), on ``threads`` cores (default: Numba's, all of
    them)."""
    a.check()
    e = a.cls.shape[0]
    out_node = np.full(e, -1, np.int64)
    out_gmask = np.zeros(e, np.int64)
    out_frag = np.zeros(e, np.float64)
    old = numba.get_num_threads()
    if threads is not None:
        numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))
    chunk = numba.get_parallel_chunksize()
    numba.set_parallel_chunksize(1)         # runs differ in length: hand them out one by one
    try:
        _run_all(a.n_nodes, a.gpu_count, a.model, a.cpu_cap, a.mem_cap, a.pods_cap, a.n_tree,
                 a.t_lo, a.t_len, a.t_left, a.t_right, a.leaf_of, a.n_classes, a.c_cpu, a.c_mem,
                 a.c_cpu_nz, a.c_num, a.c_milli, a.c_mask, a.n_typical, a.tp_cpu, a.tp_num,
                 a.tp_milli, a.tp_mask, a.tp_freq, a.run_set, a.run_workload, a.policy, a.sel,
                 a.seed_mix.astype(np.uint64), a.gpu_weight, a.static_total, a.ev_off, a.ev_len,
                 a.cls, a.u, a.gpu_slots, out_node, out_gmask, out_frag)
    finally:
        numba.set_parallel_chunksize(chunk)
        numba.set_num_threads(old)
    return out_node, out_gmask, out_frag
