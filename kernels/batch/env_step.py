"""The vectorized environment's kernel (CPU twin): B openb clusters, each
stepped one decision per call, all in one ``prange`` over environments
(``_env`` on the batched engine's rules, compiled as ``cpu`` compiles
``_cluster``).  ``EnvBatch`` keeps the state arrays ([B, ...], see
``_env``) between calls; its outputs per event (node, GPUs, the
fragmentation after the pod) are the batched engine's placements when a
batch is stepped with its default actions (the experiment's runs, and
traces with departures, retries and pods of unequal priorities as
``trace_batch`` runs them: activeQ in the order of ``BatchArrays.rank``)."""

from __future__ import annotations

import numba
import numpy as np
from numba import njit

from tensorsched.kernels._compile import compile_module

from . import _env, _env_driver
from .arrays import BatchArrays
from ._queue import QF_N, QI_N
from .cpu import AFF_TAGS, env_ns

_step_all = compile_module(_env_driver, njit, base=env_ns,
                           options={"nogil": True, "parallel": True}, cache=True)["step_all"]


STEP_PLACE, STEP_RESET, STEP_HOLD = 0, 1, _env.HOLD


def check_env(a: BatchArrays, scale) -> np.ndarray:
    """``a`` checked as environments take it (every run on node set 0,
    unpadded) and ``scale`` as [3] positive float64."""
    a.check()
    if (a.run_set != 0).any() or int(a.n_nodes[0]) != a.gpu_count.shape[1]:
        raise ValueError("run_set: every environment runs on node set 0, unpadded")
    scale = np.asarray(scale, np.float64)
    if scale.shape != (3,) or not (scale > 0).all():
        raise ValueError("scale: three positive divisors (cpu, memory, GPU milli)")
    return scale


class EnvBatch:
    """The state of ``a.n_runs`` environments on one node set (``a``
    checked; every run on set 0's nodes).  ``scale`` [3]: the cpu, memory
    and GPU-milli divisors of the observations (> 0).

    Arrays read by callers after ``step``: ``feas`` [B, N] int8 (the
    mask), ``obs`` [B, N, 6] float32, ``pod_obs`` [B, 3] float32,
    ``ist`` [B, 5] int64 and ``fst`` [B, 2] float64 (``_env``), and the
    outputs per event ``out_node``, ``out_gmask``, ``out_frag`` [E]."""

    def __init__(self, a: BatchArrays, scale: np.ndarray, threads: int | None = None):
        self.scale = check_env(a, scale)
        self.a = a
        self.threads = threads
        b, n = a.static_total.shape
        c = max(1, int(a.c_cpu.shape[1]))
        t = max(1, int(a.t_lo.shape[1]))
        e = a.cls.shape[0]
        self.out_node = np.full(e, -1, np.int64)
        self.out_gmask = np.zeros(e, np.int64)
        self.out_frag = np.zeros(e, np.float64)
        self.gpu_left = np.zeros((b, n, a.gpu_slots), np.int64)
        self.cpu_left = np.zeros((b, n), np.int64)
        self.mem_left = np.zeros((b, n), np.int64)
        self.pods_left = np.zeros((b, n), np.int64)
        self.aff = np.zeros((b, n, AFF_TAGS), np.int64)
        self.node_ver = np.zeros((b, n), np.int64)
        self.version = np.zeros((b, 1), np.int64)
        self.cache_score = np.zeros((b, c, n), np.int64)
        self.cache_gpu = np.zeros((b, c, n), np.int64)
        self.cache_ver = np.full((b, c, n), -1, np.int64)
        self.work = np.zeros((b, 16), np.int64)
        self.gidx = np.zeros((b, 16), np.int64)
        self.nfrag = np.zeros((b, n), np.float64)
        self.tree_val = np.zeros((b, t), np.float64)
        self.feas = np.zeros((b, n), np.int8)
        self.obs = np.zeros((b, n, 6), np.float32)
        self.pod_obs = np.zeros((b, 3), np.float32)
        self.ist = np.zeros((b, 5), np.int64)
        self.ist[:, 2] = 1
        self.fst = np.zeros((b, 2), np.float64)
        self._seed_mix = a.seed_mix.astype(np.uint64)
        # the queue's inputs, in the order ``_env_driver.step_all`` takes them
        self._queue_in = (a.arrive.astype(np.float64), a.depart.astype(np.float64),
                          a.duration.astype(np.float64), a.rank.astype(np.int64),
                          a.backoff0.astype(np.float64), a.backoff_max.astype(np.float64),
                          a.max_unsched.astype(np.float64))
        r = max(2 * e, 1)
        self._queue = (np.zeros((b, QI_N), np.int64), np.zeros((b, QF_N), np.float64),
                       np.zeros(e, np.int64), np.zeros(e, np.int64), np.zeros(e, np.float64),
                       np.zeros(r, np.int64), np.zeros(r, np.int64), np.zeros(r, np.float64),
                       np.zeros(r, np.int64), np.zeros(r, np.int64), np.zeros(e, np.float64),
                       np.zeros(e, np.int64), np.zeros(e, np.int64),
                       # activeQ's heap keys (``_queue``), with ranks only
                       np.zeros(r if a.rank.shape[0] else 0, np.int64))

    def step(self, reset: np.ndarray, action: np.ndarray, hold: np.ndarray | None = None) -> None:
        """Environments with ``reset[b]`` start their run again, those with
        ``hold[b]`` stay as they are; the others place their pending pod on
        ``action[b]`` (a row; the default row when outside the mask).
        ``reset``, ``hold`` [B] bool, ``action`` [B] int64."""
        mode = np.where(np.asarray(reset, bool), STEP_RESET, STEP_PLACE).astype(np.int64)
        if hold is not None:
            mode[np.asarray(hold, bool) & (mode == STEP_PLACE)] = STEP_HOLD
        a = self.a
        old = numba.get_num_threads()
        if self.threads is not None:
            numba.set_num_threads(max(1, min(int(self.threads), numba.config.NUMBA_NUM_THREADS)))
        try:
            _step_all(mode,
                      np.ascontiguousarray(action, np.int64), a.n_nodes, a.gpu_count, a.model,
                      a.cpu_cap, a.mem_cap, a.pods_cap, a.n_tree, a.t_lo, a.t_len, a.t_left,
                      a.t_right, a.leaf_of, a.n_classes, a.c_cpu, a.c_mem, a.c_cpu_nz, a.c_num,
                      a.c_milli, a.c_mask, a.n_typical, a.tp_cpu, a.tp_num, a.tp_milli,
                      a.tp_mask, a.tp_freq, a.run_set, a.run_workload, a.policy, a.sel,
                      self._seed_mix, a.gpu_weight, a.static_total, a.ev_off, a.ev_len, a.cls,
                      a.u, *self._queue_in, self.out_node, self.out_gmask, self.out_frag,
                      self.gpu_left,
                      self.cpu_left, self.mem_left, self.pods_left, self.aff, self.node_ver,
                      self.version, self.cache_score, self.cache_gpu, self.cache_ver,
                      self.work, self.gidx, self.nfrag, self.tree_val, self.feas, self.scale,
                      self.obs, self.pod_obs, self.ist, self.fst, *self._queue)
        finally:
            numba.set_num_threads(old)

    def observation(self, device: bool = False) -> dict:
        """Copies of the observations as ``nodes`` (``obs``), ``pod``
        (``pod_obs``) and ``action_mask`` (``feas``); host arrays
        (``device``: refused, the twin has none)."""
        if device:
            raise ValueError("device arrays: the numba twin keeps its state on the host "
                             "(backend 'cuda' keeps it on the device)")
        return {"nodes": self.obs.copy(), "pod": self.pod_obs.copy(),
                "action_mask": self.feas.copy()}
