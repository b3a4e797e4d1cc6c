"""GPU sharing kernels: feasibility, fragmentation, the openb score policies
and GPU selection, for all nodes at once.

Node columns (the caller's GPU inventory): gpu_count [N], model [N]
(-1 none), gpu_left [N, G] milli, cpu_left [N], mem_left [N] (MiB).
A pod is (cpu, cpu_nz, mem, num, milli, model_mask): cpu_nz is the CPU the
policies score with (kube-scheduler's non-zero default, 100m, when 0);
model_mask is a bitmask over model ids, 0 = any model.

Typical pods (the workload's pod-shape distribution for FGD) are arrays
tp_cpu, tp_num, tp_milli, tp_mask, tp_freq.

Definitions follow Weng et al., "Beware of Fragmentation" (USENIX ATC'23) and
its public simulator (hkust-adsl/kubernetes-scheduler-simulator); the code is
written from those definitions:

* fragmentation of a node for a typical pod p: all its free GPU milli when p
  cannot run there (needs no GPU, wrong model, too few GPUs with enough free
  milli, or not enough CPU), else the free milli of the GPUs too small for p;
  a node's fragmentation is the frequency-weighted sum over typical pods.
* FGD scores a node by sigmoid((F_before - F_after) / 1000) * 100 and, for a
  GPU share, picks the GPU that gives the best score.

Three versions with identical answers: the per-node rules of ``gpu._core``
compiled with njit (below: ``score_nodes``, ``select_gpus``, ...), the same
rules as CUDA device functions one thread per node (``score_nodes_cuda``,
``gpu._cuda``), and NumPy array code (``*_np``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from tensorsched.kernels._compile import compile_module

from . import _core as _gpu_core

MILLI = _gpu_core.MILLI
MAX_SPEC_CPU = _gpu_core.MAX_SPEC_CPU
MAX_SPEC_GPU = _gpu_core.MAX_SPEC_GPU
GPU_SLOTS = _gpu_core.GPU_SLOTS

POLICIES = _gpu_core.POLICIES
P_RANDOM, P_DOTPROD, P_CLUSTERING, P_PACKING, P_BESTFIT, P_FGD = range(6)
SEL_BEST, SEL_RANDOM, SEL_FGD = 0, 1, 2
assert (P_FGD, P_BESTFIT, SEL_RANDOM) == (_gpu_core.P_FGD, _gpu_core.P_BESTFIT,
                                          _gpu_core.SEL_RANDOM)

# ---------------------------------------------------------------------------
# per-node scalar rules and their CPU loops: ``gpu._core`` compiled with njit
# (the cuda backend compiles the same source as device functions,
# ``gpu._cuda``), kept on disk so that a CLI start does not recompile them
# (kernels/_compile.py).  The rules are inlined into the loops (a call per
# node with ~30 array arguments cost ~0.4 us, 7x the whole FGD-cached rule)
# and need no NRT (no allocation).
# ---------------------------------------------------------------------------


def _compile_njit() -> dict:
    return compile_module(_gpu_core, njit,
                          options={"nogil": True, "_nrt": False, "inline": "always"}, cache=True)


core = _compile_njit()
model_ok = core["model_ok"]
node_fits = core["node_fits"]
node_frag = core["node_frag"]
sigmoid_score = core["sigmoid_score"]   # FGD score of a frag change, one node
affinity_tag = core["affinity_tag"]
packing_node = core["packing_node"]
clustering_node = core["clustering_node"]
dotprod_node = core["dotprod_node"]
bestfit_raw = core["bestfit_raw"]
first_free_gpus = core["first_free_gpus"]
select_gpus = core["select_gpus"]


def fgd_node(count, model, left, cpu_left, cpu_nz, num, milli,
             tp_cpu, tp_num, tp_milli, tp_mask, tp_freq):
    """(score, gpu) of FGD for one feasible node; gpu = -1 when not a share."""
    return core["fgd_node"](count, model, left, cpu_left, cpu_nz, num, milli,
                            tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                            np.empty(GPU_SLOTS, np.int64))


def score_nodes(policy, gpu_count, model, gpu_left, cpu_left, mem_left, aff,
                cpu, cpu_nz, mem, num, milli, mask,
                tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                cache_score, cache_gpu, cache_ver, node_ver, out_gpu):
    """Score every node for one pod: out [N] int64, -1 = infeasible, else
    the policy's (normalized) score.  FGD results are cached per node by
    ``node_ver`` [N] (``cache_*`` [N] rows of this pod's shape, updated in
    place); ``out_gpu`` [N] gets FGD's share GPU (-2 feasible otherwise)."""
    out = np.empty(gpu_count.shape[0], np.int64)
    core["score_nodes_into"](policy, gpu_count, model, gpu_left, cpu_left, mem_left, aff,
                             cpu, cpu_nz, mem, num, milli, mask,
                             tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                             cache_score, cache_gpu, cache_ver, node_ver, out, out_gpu,
                             np.empty(GPU_SLOTS, np.int64))
    return out


def score_rows(rows, policy, gpu_count, model, gpu_left, allocatable, requested,
               cpu_left, mem_left, aff, cpu, cpu_nz, mem, num, milli, mask,
               tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
               cache_score, cache_gpu, cache_ver, node_ver, out, out_gpu):
    """``score_nodes`` for the nodes ``rows`` [k] int64 only, in place on
    full [N] columns (``gpu._core.score_rows_into``): a node that changed
    costs one compiled call, not a gather and scatter of every column.
    Returns the raw scores at ``rows`` [k] (no BestFit normalization)."""
    core["score_rows_into"](rows, policy, gpu_count, model, gpu_left, allocatable, requested,
                            cpu_left, mem_left, aff, cpu, cpu_nz, mem, num, milli, mask,
                            tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                            cache_score, cache_gpu, cache_ver, node_ver, out, out_gpu,
                            np.empty(GPU_SLOTS, np.int64))
    return out[rows]


def score_nodes_cuda(policy, gpu_count, model, gpu_left, cpu_left, mem_left, aff,
                     cpu, cpu_nz, mem, num, milli, mask,
                     tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                     cache_score, cache_gpu, cache_ver, node_ver, out_gpu):
    """``score_nodes`` as a CUDA kernel, one thread per node (same arguments,
    results and FGD cache protocol; host arrays in and out).  Raises
    ``BackendUnavailable`` without a device or the simulator."""
    from . import _cuda as _gpu_cuda     # numba-cuda: only with the cuda backend
    return _gpu_cuda.score_nodes(policy, gpu_count, model, gpu_left, cpu_left, mem_left, aff,
                                 cpu, cpu_nz, mem, num, milli, mask,
                                 tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                                 cache_score, cache_gpu, cache_ver, node_ver, out_gpu)


def cluster_frag(gpu_count, model, gpu_left, cpu_left, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                 out):
    """[N] float fragmentation of every node (into ``out``)."""
    core["cluster_frag_into"](gpu_count, model, gpu_left, cpu_left, tp_cpu, tp_num, tp_milli,
                              tp_mask, tp_freq, out)
    return out


# ---------------------------------------------------------------------------
# NumPy versions (array code over all nodes; the same answers)
# ---------------------------------------------------------------------------


def _valid_gpu(gpu_count, gpu_left):
    g = gpu_left.shape[1]
    return np.arange(g)[None, :] < gpu_count[:, None]


def _model_ok_np(model, mask):
    if mask == 0:
        return np.ones(model.shape[0], bool)
    return (model >= 0) & (((np.int64(mask) >> np.maximum(model, 0)) & 1) == 1)


model_ok_np = _model_ok_np


def feasible_np(gpu_count, model, gpu_left, cpu_left, mem_left, cpu, mem, num, milli, mask):
    ok = (cpu_left >= cpu) & (mem_left >= mem)
    if milli <= 0 or num <= 0:
        return ok
    valid = _valid_gpu(gpu_count, gpu_left)
    fit = ((gpu_left >= milli) & valid).sum(axis=1)
    return ok & (gpu_count > 0) & _model_ok_np(model, mask) & (fit >= num)


def frag_np(gpu_count, model, gpu_left, cpu_left, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq):
    valid = _valid_gpu(gpu_count, gpu_left)
    left = np.where(valid, gpu_left, 0)
    total = left.sum(axis=1).astype(np.float64)
    out = np.zeros(gpu_count.shape[0])
    for p in range(len(tp_freq)):
        m = tp_milli[p]
        if m <= 0:
            out += tp_freq[p] * total
            continue
        acc = _model_ok_np(model, int(tp_mask[p]))
        fit = ((left >= m) & valid).sum(axis=1)
        small = np.where(left < m, left, 0).sum(axis=1).astype(np.float64)
        q3 = acc & (fit >= tp_num[p]) & (cpu_left >= tp_cpu[p])
        out += tp_freq[p] * np.where(q3, small, total)
    return np.where(total == 0, 0.0, out)


# ---------------------------------------------------------------------------
# NumPy score policies: the same answers as ``score_nodes`` (same float
# operations in the same order, so the integer scores are identical), as
# array code over all nodes at once.
# ---------------------------------------------------------------------------

_exp = np.frompyfunc(math.exp, 1, 1)   # libm exp, as the njit code calls it


def _sigmoid_score_np(before, after):
    e = _exp(-(before - after) / 1000.0).astype(np.float64)
    return (100.0 / (1.0 + e)).astype(np.int64)


sigmoid_score_np = _sigmoid_score_np      # FGD's 0..100 score, [M] before / after


def pack_take_np(gpu_count, gpu_left, num, milli):
    """Boolean [N, G]: the GPUs the simulator's Sub rule takes on each node
    (ascending free milli, stable, the first ``num`` with enough free)."""
    valid = _valid_gpu(gpu_count, gpu_left)
    big = np.iinfo(np.int64).max
    order = np.argsort(np.where(valid, gpu_left, big), axis=1, kind="stable")
    sl = np.take_along_axis(gpu_left, order, axis=1)
    sv = np.take_along_axis(valid, order, axis=1)
    ok = sv & (sl >= milli)
    take_sorted = ok & (np.cumsum(ok, axis=1) <= num)
    take = np.zeros_like(take_sorted)
    np.put_along_axis(take, order, take_sorted, axis=1)
    return take


def packing_np(gpu_count, gpu_left, num, milli):
    n = gpu_count.shape[0]
    if milli <= 0:
        return np.zeros(n, np.int64)
    valid = _valid_gpu(gpu_count, gpu_left)
    full = ((gpu_left == MILLI) & valid).sum(axis=1)
    take = pack_take_np(gpu_count, gpu_left, num, milli)
    k = take.sum(axis=1)
    full_used = (take & (gpu_left == MILLI)).sum(axis=1)
    ratio = np.where(take, gpu_left * 100 // MILLI, 0).sum(axis=1)
    s = np.where(full_used > 0, np.maximum(50 - full_used, 33), np.maximum(100 - ratio // 10, 50))
    s = np.where(k < num, 0, s)
    return np.where(full == gpu_count, np.maximum(33 - full, full), s).astype(np.int64)


def clustering_np(left_total, aff, tag):
    n = left_total.shape[0]
    if tag == 0:
        return np.zeros(n, np.int64)
    distinct = (aff[:, 1:] > 0).sum(axis=1)
    base = 25 * (8000 - left_total) // 8000
    same = aff[:, tag] > 0
    return (base + np.where(same, np.where(distinct == 1, 75, 50),
                            np.where(distinct == 0, 25, 0))).astype(np.int64)


def dotprod_np(cpu_left, left_total, cpu_nz, pod_gpu):
    dot = (cpu_left / MAX_SPEC_CPU) * (cpu_nz / MAX_SPEC_CPU) + \
          (left_total / MAX_SPEC_GPU) * (pod_gpu / MAX_SPEC_GPU)
    s = (100.0 * (1.0 - dot / 2.0)).astype(np.int64)
    return np.where(cpu_left < cpu_nz, 0, s)


def bestfit_raw_np(cpu_left, left_total, cpu_nz, pod_gpu):
    s = 0.0 + (cpu_left - cpu_nz) / MAX_SPEC_CPU * 0.5
    s = s + (left_total - pod_gpu) / MAX_SPEC_GPU * 0.5
    return ((1.0 - s) * 100.0).astype(np.int64)


def fgd_np(gpu_count, model, gpu_left, cpu_left, cpu_nz, num, milli,
           tp_cpu, tp_num, tp_milli, tp_mask, tp_freq):
    """(score [M], gpu [M]) of FGD for M feasible nodes; gpu = -1 unless a share."""
    m, g = gpu_left.shape
    before = frag_np(gpu_count, model, gpu_left, cpu_left, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq)
    cpu_after = cpu_left - cpu_nz
    if num == 1 and 0 < milli < MILLI:
        # every candidate GPU at once: rows (node, gpu) with that GPU reduced
        valid = _valid_gpu(gpu_count, gpu_left)
        cand = valid & (gpu_left >= milli)
        work = np.repeat(gpu_left[:, None, :], g, axis=1)           # [M, G(cand), G]
        work[:, np.arange(g), np.arange(g)] -= milli
        after = frag_np(np.repeat(gpu_count, g), np.repeat(model, g), work.reshape(m * g, g),
                        np.repeat(cpu_after, g), tp_cpu, tp_num, tp_milli, tp_mask, tp_freq)
        sc = _sigmoid_score_np(np.repeat(before, g), after).reshape(m, g)
        sc = np.where(cand, sc, -1)
        best_g = np.argmax(sc, axis=1)                                # first maximum
        return sc[np.arange(m), best_g], best_g.astype(np.int64)
    work = gpu_left
    if num > 0 and milli > 0:
        work = gpu_left - np.where(pack_take_np(gpu_count, gpu_left, num, milli), milli, 0)
    after = frag_np(gpu_count, model, work, cpu_after, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq)
    return _sigmoid_score_np(before, after), np.full(m, -1, np.int64)


def score_nodes_np(policy, gpu_count, model, gpu_left, cpu_left, mem_left, aff,
                   cpu, cpu_nz, mem, num, milli, mask,
                   tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                   cache_score, cache_gpu, cache_ver, node_ver, out_gpu):
    """NumPy twin of ``score_nodes`` (same arguments, same results, same
    FGD cache protocol)."""
    n = gpu_count.shape[0]
    ok = feasible_np(gpu_count, model, gpu_left, cpu_left, mem_left, cpu, mem, num, milli, mask)
    valid = _valid_gpu(gpu_count, gpu_left)
    lt = np.where(valid, gpu_left, 0).sum(axis=1)
    pod_gpu = num * milli if milli > 0 else 0
    out_gpu[:] = np.where(ok, -2, -1)
    if policy == P_RANDOM:
        s = np.zeros(n, np.int64)
    elif policy == P_DOTPROD:
        s = dotprod_np(cpu_left, lt, cpu_nz, pod_gpu)
    elif policy == P_CLUSTERING:
        s = clustering_np(lt, aff, affinity_tag(num, milli))
    elif policy == P_PACKING:
        s = packing_np(gpu_count, gpu_left, num, milli)
    elif policy == P_BESTFIT:
        s = bestfit_raw_np(cpu_left, lt, cpu_nz, pod_gpu)
        if ok.any():
            lo, hi = s[ok].min(), s[ok].max()
            rng = hi - lo
            s = np.zeros(n, np.int64) if rng == 0 else (s - lo) * 100 // rng
    else:
        stale = np.flatnonzero(ok & (cache_ver != node_ver))
        if len(stale):
            c = gpu_count[stale]
            sc, gg = fgd_np(c, model[stale], gpu_left[stale], cpu_left[stale], cpu_nz, num, milli,
                            tp_cpu, tp_num, tp_milli, tp_mask, tp_freq)
            cache_score[stale] = sc
            cache_gpu[stale] = gg
            cache_ver[stale] = node_ver[stale]
        s = cache_score
        out_gpu[ok] = cache_gpu[ok]
    return np.where(ok, s, -1).astype(np.int64)


def select_gpus_np(sel, count, left, num, milli, u, out):
    """Python twin of ``select_gpus`` for one node."""
    if num <= 0 or milli <= 0:
        return 0
    lv = left[:count]
    if not (num == 1 and milli < MILLI):
        free = np.flatnonzero(lv == MILLI)[:num]
        out[:len(free)] = free
        return len(free)
    fit = np.flatnonzero(lv >= milli)
    if len(fit) == 0:
        return 0
    if sel == SEL_RANDOM:
        out[0] = fit[int(u * len(fit))]
    else:
        out[0] = fit[np.argmin(lv[fit])]
    return 1
