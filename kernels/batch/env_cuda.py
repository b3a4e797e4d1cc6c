"""The vectorized environment's step on CUDA: one thread block per
environment, its threads over the environment's nodes, each block doing
what ``_env.step_env`` does for its environment (the CPU twin,
``env_step``): thread 0 applies the action (accounts the pod, refreshes
the fragmentation sum, writes the row's observation), then keeps the
run's queue (``_queue``: arrivals, departures it frees the nodes of,
retries, activeQ a heap in PrioritySort's order with ranks) and the
block decides each attempt as the batched engine's
kernel decides one (``cuda.block_decide``: warp-shuffle reductions, the
largest key of the total and the seeded tie rank; Random's drawn row by
a block scan), writing the filters' mask as it goes,
until an attempt some node takes is pending.

``EnvBatchCuda`` keeps the state in device memory between calls (the
inputs uploaded once); a step uploads the modes and actions (or reads
actions already on the device), launches once, and downloads the small
per-environment scalars (``ist``, ``fst``); the observations stay on the
device unless asked for (``observation(device=False)``).  Importing this
module without a device or the simulator raises ``BackendUnavailable``
(from ``cuda``).
"""

from __future__ import annotations

import numpy as np
from numba import cuda, int64

from . import _env
from .arrays import BatchArrays
from . import _queue
from .cuda import (
    AFF_TAGS,
    MAX_GPUS,
    QF_N,
    QI_N,
    block_decide,
    compile_device,
    device_rules,
)
from .env_step import STEP_HOLD, STEP_PLACE, STEP_RESET, check_env
from .warp import THREADS, WARPS

_account = device_rules["account"]
_init_node = device_rules["init_node"]
_node_frag_of = device_rules["node_frag_of"]
_release = device_rules["release"]
_tree_refresh = device_rules["tree_refresh"]
_q_bound = device_rules["q_bound"]
_q_failed = device_rules["q_failed"]
_q_init = device_rules["q_init"]
_q_next = device_rules["q_next"]
_env_ns = compile_device(_env)
_write_row = _env_ns["write_row"]
_gpus_of = _env_ns["gpus_of"]


@cuda.jit
def _step_kernel(mode_of, action_of, n_nodes, gpu_count, model, cpu_cap, mem_cap, pods_cap,
                 n_tree, t_lo, t_len, t_left, t_right, leaf_of, n_classes, c_cpu, c_mem,
                 c_cpu_nz, c_num, c_milli, c_mask, n_typical, tp_cpu, tp_num, tp_milli, tp_mask,
                 tp_freq, run_set, run_workload, policy_of, sel_of, seed_mix_of, gpu_weight_of,
                 static_of, ev_off, ev_len, cls_all, u_all, arrive, depart, duration, rank,
                 backoff0_of, backoff_max_of, max_unsched_of, out_node_all, out_gmask_all,
                 out_frag_all, gpu_left_all, cpu_left_all, mem_left_all, pods_left_all, aff_all,
                 node_ver_all, version_all, cache_score_all, cache_gpu_all, cache_ver_all,
                 nfrag_all, tree_all, feas_all, scale, obs_all, pod_obs_all, ist_all, fst_all,
                 qi_all, qf_all, pst_all, patt_all, pts_all, aq_all, up_all, hk_all, hs_all,
                 hp_all, dk_all, ds_all, dp_all, ak_all):
    b = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    mode = mode_of[b]
    if mode == STEP_HOLD:
        return
    buf = cuda.shared.array((3, THREADS), int64)     # the simulator's shuffles
    sh = cuda.shared.array((WARPS, 3), int64)
    cmd = cuda.shared.array(3, int64)                # thread 0's queue answer, for all
    work = cuda.local.array(MAX_GPUS, int64)
    gidx = cuda.local.array(MAX_GPUS, int64)
    s = run_set[b]
    w = run_workload[b]
    n = n_nodes[s]
    nt = n_tree[s]
    nc = n_classes[w]
    ntp = n_typical[w]
    policy = policy_of[b]
    count = gpu_count[s]
    mdl = model[s]
    tpc = tp_cpu[w, :ntp]
    tpn = tp_num[w, :ntp]
    tpm = tp_milli[w, :ntp]
    tpk = tp_mask[w, :ntp]
    tpf = tp_freq[w, :ntp]
    gpu_left = gpu_left_all[b]
    cpu_left = cpu_left_all[b]
    mem_left = mem_left_all[b]
    pods_left = pods_left_all[b]
    aff = aff_all[b]
    node_ver = node_ver_all[b]
    version = version_all[b]
    nfrag = nfrag_all[b]
    tree = tree_all[b]
    feas = feas_all[b]
    obs = obs_all[b]
    pod_obs = pod_obs_all[b]
    ist = ist_all[b]
    fst = fst_all[b]
    o = ev_off[b]
    e = ev_len[b]
    cls = cls_all[o:o + e]
    qi = qi_all[b]
    qf = qf_all[b]
    pst = pst_all[o:o + e]
    patt = patt_all[o:o + e]
    pts = pts_all[o:o + e]
    r2 = 2 * o
    aq = aq_all[r2:r2 + 2 * e]
    up = up_all[r2:r2 + 2 * e]
    hk = hk_all[r2:r2 + 2 * e]
    hs = hs_all[r2:r2 + 2 * e]
    hp = hp_all[r2:r2 + 2 * e]
    dk = dk_all[o:o + e]
    ds = ds_all[o:o + e]
    dp = dp_all[o:o + e]
    dur = duration[o:o + e]
    rk = rank[o:o + e] if rank.shape[0] > 0 else rank[:0]    # empty: first in first out
    ak = ak_all[r2:r2 + 2 * e] if rank.shape[0] > 0 else ak_all[:0]
    if mode == STEP_RESET:
        for i in range(tid, n, THREADS):
            _init_node(i, count, cpu_cap[s], mem_cap[s], pods_cap[s], mdl, gpu_left, cpu_left,
                       mem_left, pods_left, aff, node_ver, tpc, tpn, tpm, tpk, tpf, nfrag)
            _write_row(i, count, cpu_cap[s], mem_cap[s], gpu_left, cpu_left, mem_left, scale,
                       obs)
            for c in range(nc):
                cache_ver_all[b, c, i] = -1
        cuda.syncthreads()
        if tid == 0:
            version[0] = 0
            fst[0] = _tree_refresh(nfrag, -1, t_lo[s, :nt], t_len[s, :nt], t_left[s, :nt],
                                   t_right[s, :nt], tree)
            fst[1] = 0.0
            _q_init(qi, qf, pst, patt, pts)
            ist[0] = 0
            ist[3] = 0
            ist[4] = -1
        cuda.syncthreads()
        for j in range(tid, e, THREADS):
            out_node_all[o + j] = -1
            out_gmask_all[o + j] = 0
            out_frag_all[o + j] = fst[0]
    else:
        over = ist[2]
        cuda.syncthreads()
        if over == 1:
            if tid == 0:
                ist[3] = 0
                ist[4] = -1
            return
        if tid == 0:
            j = ist[0]
            c = cls[j]
            row = action_of[b]
            invalid = row < 0 or row >= n
            if not invalid:
                invalid = feas[row] == 0
            if invalid:
                row = ist[1]
            gm = _account(row, sel_of[b], count, c_cpu[w, c], c_mem[w, c], c_num[w, c],
                          c_milli[w, c], u_all[o + j], cache_gpu_all[b, c, row], gpu_left,
                          cpu_left, mem_left, pods_left, aff, node_ver, version, gidx)
            _q_bound(j, dur, qi, qf, pst, dk, ds, dp)
            out_node_all[o + j] = row
            out_gmask_all[o + j] = gm
            nfrag[row] = _node_frag_of(row, count, mdl, gpu_left, cpu_left, tpc, tpn, tpm, tpk,
                                       tpf)
            fst[0] = _tree_refresh(nfrag, leaf_of[s, row], t_lo[s, :nt], t_len[s, :nt],
                                   t_left[s, :nt], t_right[s, :nt], tree)
            out_frag_all[o + j] = fst[0]
            fst[1] += _gpus_of(gm) * c_milli[w, c]
            _write_row(row, count, cpu_cap[s], mem_cap[s], gpu_left, cpu_left, mem_left, scale,
                       obs)
            ist[3] = 1 if invalid else 0
            ist[4] = row
    while True:
        if tid == 0:
            cmd[0] = _q_next(arrive[o:o + e], depart[o:o + e],
                             backoff0_of[b], backoff_max_of[b], max_unsched_of[b], qi, qf, pst,
                             patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rk, ak)
            cmd[1] = qi[_queue.QI_POD]
            cmd[2] = qi[_queue.QI_ATTEMPT]
        cuda.syncthreads()
        kind = cmd[0]
        j = cmd[1]
        attempt = cmd[2]
        cuda.syncthreads()
        if kind == _queue.DONE:
            break
        c = cls[j]
        if kind == _queue.DEPART:
            if tid == 0:
                row = out_node_all[o + j]
                gm = out_gmask_all[o + j]
                _release(row, gm, c_cpu[w, c], c_mem[w, c], c_num[w, c], c_milli[w, c],
                         gpu_left, cpu_left, mem_left, pods_left, aff, node_ver, version)
                nfrag[row] = _node_frag_of(row, count, mdl, gpu_left, cpu_left, tpc, tpn, tpm,
                                           tpk, tpf)
                fst[0] = _tree_refresh(nfrag, leaf_of[s, row], t_lo[s, :nt], t_len[s, :nt],
                                       t_left[s, :nt], t_right[s, :nt], tree)
                fst[1] -= _gpus_of(gm) * c_milli[w, c]
                _write_row(row, count, cpu_cap[s], mem_cap[s], gpu_left, cpu_left, mem_left,
                           scale, obs)
            cuda.syncthreads()
            continue
        d = block_decide(n, policy, count, mdl, gpu_left, cpu_left, mem_left, pods_cap[s],
                         pods_left, aff, c_cpu[w, c], c_mem[w, c], c_cpu_nz[w, c], c_num[w, c],
                         c_milli[w, c], c_mask[w, c], tpc, tpn, tpm, tpk, tpf,
                         cache_score_all[b, c], cache_gpu_all[b, c], cache_ver_all[b, c],
                         node_ver, work, gpu_weight_of[b], static_of[b], seed_mix_of[b], attempt,
                         True, feas, buf, sh)
        if d >= 0:
            if tid == 0:
                ist[0] = j
                ist[1] = d
                ist[2] = 0
                num = c_num[w, c]
                milli = c_milli[w, c]
                pod_obs[0] = c_cpu[w, c] / scale[0]
                pod_obs[1] = c_mem[w, c] / scale[1]
                pod_obs[2] = (num * milli if milli > 0 else 0) / scale[2]
            return
        if tid == 0:
            _q_failed(j, qi, qf, pst, pts, up)
            out_frag_all[o + j] = fst[0]
        cuda.syncthreads()
    for i in range(tid, feas.shape[0], THREADS):
        feas[i] = 0
    if tid == 0:
        ist[0] = e
        ist[1] = -1
        ist[2] = 1
        for k in range(3):
            pod_obs[k] = 0.0


def on_device(x) -> bool:
    """``x`` is a device array: a Numba one (the simulator's too) or any
    array with ``__cuda_array_interface__`` (CuPy, PyTorch, ...)."""
    return hasattr(x, "__cuda_array_interface__") or (
        hasattr(x, "copy_to_host") and hasattr(x, "shape"))


def _device_copy(x, cupy):
    """A copy of device array ``x`` on the device: a CuPy array when
    ``cupy`` is the module, else a Numba device array."""
    if cupy is not None:
        return cupy.array(cupy.asarray(x), copy=True)
    out = cuda.device_array(x.shape, x.dtype)
    out.copy_to_device(x)
    return out


def _cupy():
    try:
        import cupy
    except ImportError:
        return None
    return cupy


class EnvBatchCuda:
    """``env_step.EnvBatch`` on the device: the same state (``_env``), kept
    in device memory between calls, one block per environment.  After
    ``step``: ``ist`` [B, 5] int64 and ``fst`` [B, 2] float64 on the host;
    ``observation()`` the observations; ``out_node``, ``out_gmask``,
    ``out_frag`` [E] the outputs per event (downloaded when read)."""

    def __init__(self, a: BatchArrays, scale: np.ndarray, threads: int | None = None):
        self.scale = check_env(a, scale)
        self.a = a
        b, n = a.static_total.shape
        c = max(1, int(a.c_cpu.shape[1]))
        t = max(1, int(a.t_lo.shape[1]))
        e = a.cls.shape[0]
        d = cuda.to_device
        self._ins = [d(np.ascontiguousarray(x)) for x in (
            a.n_nodes, a.gpu_count, a.model, a.cpu_cap, a.mem_cap, a.pods_cap, a.n_tree, a.t_lo,
            a.t_len, a.t_left, a.t_right, a.leaf_of, a.n_classes, a.c_cpu, a.c_mem, a.c_cpu_nz,
            a.c_num, a.c_milli, a.c_mask, a.n_typical, a.tp_cpu, a.tp_num, a.tp_milli,
            a.tp_mask, a.tp_freq, a.run_set, a.run_workload, a.policy, a.sel,
            a.seed_mix.astype(np.uint64), a.gpu_weight, a.static_total, a.ev_off, a.ev_len,
            a.cls, a.u, a.arrive.astype(np.float64), a.depart.astype(np.float64),
            a.duration.astype(np.float64), a.rank.astype(np.int64),
            a.backoff0.astype(np.float64),
            a.backoff_max.astype(np.float64), a.max_unsched.astype(np.float64))]
        i64 = np.int64
        self._outs = [d(np.full(e, -1, i64)), d(np.zeros(e, i64)), d(np.zeros(e))]
        self.ist = np.zeros((b, 5), i64)
        self.ist[:, 2] = 1
        self.fst = np.zeros((b, 2))
        # the first step resets every environment (OpenbVectorEnv.reset), which
        # writes every row of the state: allocated on the device, not uploaded
        da = cuda.device_array
        self._state = [da((b, n, a.gpu_slots), i64), da((b, n), i64), da((b, n), i64),
                       da((b, n), i64), da((b, n, AFF_TAGS), i64), da((b, n), i64),
                       da((b, 1), i64), da((b, c, n), i64), da((b, c, n), i64),
                       da((b, c, n), i64), da((b, n)), da((b, t))]
        self._feas = d(np.zeros((b, n), np.int8))
        self._scale = d(self.scale)
        self._obs = d(np.zeros((b, n, 6), np.float32))
        self._pod_obs = d(np.zeros((b, 3), np.float32))
        self._ist = d(self.ist)
        self._fst = d(self.fst)
        r = max(2 * e, 1)
        self._queue = [da((b, QI_N), i64), da((b, QF_N)), da(max(e, 1), i64),
                       da(max(e, 1), i64), da(max(e, 1)), da(r, i64), da(r, i64), da(r),
                       da(r, i64), da(r, i64), da(max(e, 1)), da(max(e, 1), i64),
                       da(max(e, 1), i64),
                       # activeQ's heap keys (``_queue``), with ranks only
                       da(r if a.rank.shape[0] else 1, i64)]
        self._b = b
        self._cupy = _cupy()

    def step(self, reset, action, hold=None) -> None:
        """``EnvBatch.step`` on the device: ``action`` [B] int64 on the host
        or on the device (a Numba device array or any ``__cuda_array_interface__``
        array, e.g. CuPy)."""
        mode = np.where(np.asarray(reset, bool), STEP_RESET, STEP_PLACE).astype(np.int64)
        if hold is not None:
            mode[np.asarray(hold, bool) & (mode == STEP_PLACE)] = STEP_HOLD
        if on_device(action):
            act = action if hasattr(action, "copy_to_host") else cuda.as_cuda_array(action)
            if act.dtype != np.int64 or act.shape != (self._b,):
                raise ValueError(f"action: a device array of {self._b} int64, got "
                                 f"{act.shape} {act.dtype}")
        else:
            act = cuda.to_device(np.ascontiguousarray(action, np.int64))
        _step_kernel[self._b, THREADS](cuda.to_device(mode), act, *self._ins, *self._outs,
                                       *self._state, self._feas, self._scale, self._obs,
                                       self._pod_obs, self._ist, self._fst, *self._queue)
        self._ist.copy_to_host(self.ist)
        self._fst.copy_to_host(self.fst)

    def observation(self, device: bool = False) -> dict:
        """Copies of the observations (``_env``'s ``obs``, ``pod_obs``,
        ``feas``) as ``nodes``, ``pod``, ``action_mask``: on the device
        (CuPy arrays when CuPy is installed, else Numba device arrays) or
        on the host."""
        parts = {"nodes": self._obs, "pod": self._pod_obs, "action_mask": self._feas}
        if device:
            return {k: _device_copy(v, self._cupy) for k, v in parts.items()}
        return {k: v.copy_to_host() for k, v in parts.items()}

    @property
    def out_node(self) -> np.ndarray:
        return self._outs[0].copy_to_host()

    @property
    def out_gmask(self) -> np.ndarray:
        return self._outs[1].copy_to_host()

    @property
    def out_frag(self) -> np.ndarray:
        return self._outs[2].copy_to_host()
