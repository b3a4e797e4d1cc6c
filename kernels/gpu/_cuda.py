"""The GPU-sharing and GPU-topology kernels as Numba CUDA kernels: one
thread per node, running ``gpu._core``'s per-node rules compiled with
``cuda.jit(device=True)`` (the njit versions in ``gpu.share`` /
``gpu.subsets`` compile the same source).

Host arrays in, host arrays out: each call uploads the columns it reads
(the GPU table is host state, edited per pod) and copies the outputs back;
array-level steps (BestFit's min-max normalization) run on the host with
the same integer arithmetic as the njit driver.  Importing this module
without a device or the simulator raises ``BackendUnavailable``.
"""

from __future__ import annotations

import numpy as np

from tensorsched.kernels._deps import cuda_unavailable_reason
from tensorsched.kernels._errors import BackendUnavailable

_reason = cuda_unavailable_reason()
if _reason is not None:
    raise BackendUnavailable(f"backend 'cuda' cannot run: {_reason}")

from numba import cuda, int64

from tensorsched.kernels._compile import compile_module

from . import _core as _gpu_core

GPU_SLOTS = _gpu_core.GPU_SLOTS

core = compile_module(_gpu_core, lambda f: cuda.jit(f, device=True))
_score_node = core["score_node"]
_gpu_fit = core["gpu_fit"]
_subset_cost_node = core["subset_cost_node"]
_affinity_tag = _gpu_core.affinity_tag          # host-side scalar, plain Python


#: the most threads per block a launch asks
MAX_THREADS = 128


def _grid(n: int) -> tuple[int, int]:
    """(blocks, threads per block): whole warps, at most MAX_THREADS per
    block (a small cluster does not start 128 simulator threads for 5 nodes)."""
    tpb = min(MAX_THREADS, 32 * max(1, (n + 31) // 32))
    return max(1, (n + tpb - 1) // tpb), tpb


def _dev(a):
    return cuda.to_device(np.ascontiguousarray(a))


@cuda.jit
def score_kernel(policy, gpu_count, model, gpu_left, cpu_left, mem_left, aff,
                 cpu, cpu_nz, mem, num, milli, mask, tag, pod_gpu,
                 tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                 cache_score, cache_gpu, cache_ver, node_ver, out, out_gpu):
    i = cuda.grid(1)
    if i >= gpu_count.shape[0]:
        return
    work = cuda.local.array(GPU_SLOTS, int64)       # FGD's what-if row
    _score_node(i, policy, gpu_count, model, gpu_left, cpu_left, mem_left, aff,
                cpu, cpu_nz, mem, num, milli, mask, tag, pod_gpu,
                tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                cache_score, cache_gpu, cache_ver, node_ver, out, out_gpu, work)


@cuda.jit
def fit_kernel(gpu_count, model, gpu_left, num, milli, mask, out):
    i = cuda.grid(1)
    if i >= gpu_count.shape[0]:
        return
    out[i] = _gpu_fit(gpu_count[i], model[i], gpu_left[i], num, milli, mask)


@cuda.jit
def subset_kernel(gpu_count, gpu_left, numa, zone_cpu_free, zone_mem_free, topo, cons,
                  cpu, mem, milli, sub, cost, isl_ok, numa_ok, out_cost, out_idx):
    i = cuda.grid(1)
    if i >= gpu_count.shape[0]:
        return
    _subset_cost_node(i, gpu_count, gpu_left, numa, zone_cpu_free, zone_mem_free, topo, cons,
                      cpu, mem, milli, sub, cost, isl_ok, numa_ok, out_cost, out_idx)


def score_nodes(policy, gpu_count, model, gpu_left, cpu_left, mem_left, aff,
                cpu, cpu_nz, mem, num, milli, mask,
                tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                cache_score, cache_gpu, cache_ver, node_ver, out_gpu):
    """Same contract as ``gpu.share.score_nodes``: returns out [N] int64,
    fills ``out_gpu`` [N] and updates the FGD cache rows in place."""
    n = gpu_count.shape[0]
    if n == 0:
        return np.empty(0, np.int64)
    if gpu_left.shape[1] > GPU_SLOTS:
        raise ValueError(f"at most {GPU_SLOTS} GPUs per node")
    pod_gpu = num * milli if milli > 0 else 0
    d_cache = [_dev(a) for a in (cache_score, cache_gpu, cache_ver)]
    d_out = cuda.device_array(n, np.int64)
    d_out_gpu = cuda.device_array(n, np.int64)
    blocks, tpb = _grid(n)
    score_kernel[blocks, tpb](
        policy, _dev(gpu_count), _dev(model), _dev(gpu_left), _dev(cpu_left), _dev(mem_left),
        _dev(aff), cpu, cpu_nz, mem, num, milli, mask, _affinity_tag(num, milli), pod_gpu,
        _dev(tp_cpu), _dev(tp_num), _dev(tp_milli), _dev(tp_mask), _dev(tp_freq),
        *d_cache, _dev(node_ver), d_out, d_out_gpu)
    out = d_out.copy_to_host()
    out_gpu[:] = d_out_gpu.copy_to_host()
    # the caller's cache rows are views into its per-shape cache: write back
    for host, dev in zip((cache_score, cache_gpu, cache_ver), d_cache):
        host[:] = dev.copy_to_host()
    if policy == _gpu_core.P_BESTFIT:
        ok = out_gpu != -1
        if ok.any():
            lo, hi = out[ok].min(), out[ok].max()
            rng = hi - lo
            out[ok] = 0 if rng == 0 else (out[ok] - lo) * 100 // rng
    return out


def gpu_fit_nodes(gpu_count, model, gpu_left, num, milli, mask):
    """Same contract as ``gpu.subsets.gpu_fit_nodes``: [N] bool."""
    n = gpu_count.shape[0]
    d_out = cuda.device_array(n, np.bool_)
    if n:
        blocks, tpb = _grid(n)
        fit_kernel[blocks, tpb](_dev(gpu_count), _dev(model), _dev(gpu_left), num, milli, mask,
                                d_out)
    return d_out.copy_to_host()


def subset_costs(gpu_count, gpu_left, numa, zone_cpu_free, zone_mem_free, topo, cons,
                 cpu, mem, milli, sub, cost, isl_ok, numa_ok, out_cost, out_idx):
    """Same contract as ``gpu.subsets.subset_costs``: fills out_cost /
    out_idx [N] and returns out_cost."""
    n = gpu_count.shape[0]
    if n == 0:
        return out_cost
    d_c = cuda.device_array(n, np.int64)
    d_i = cuda.device_array(n, np.int64)
    blocks, tpb = _grid(n)
    subset_kernel[blocks, tpb](_dev(gpu_count), _dev(gpu_left), _dev(numa), _dev(zone_cpu_free),
                               _dev(zone_mem_free), _dev(topo), _dev(cons), cpu, mem, milli,
                               _dev(sub), _dev(cost), _dev(isl_ok), _dev(numa_ok), d_c, d_i)
    out_cost[:] = d_c.copy_to_host()
    out_idx[:] = d_i.copy_to_host()
    return out_cost
