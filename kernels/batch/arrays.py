"""The inputs of one batched call, as arrays with a leading axis per kind
of thing (no Kubernetes objects), and their checks.

- node sets [S, N] int64 (``n_nodes[s]`` rows used): ``gpu_count``,
  ``model`` (-1 none), ``cpu_cap`` (millicores), ``mem_cap`` (any unit,
  the pods' too), ``pods_cap``; every set starts empty;
- their summation trees [S, T] int64 (``pairwise.pairwise_tree``):
  ``t_lo``, ``t_len``, ``t_left``, ``t_right`` (``n_tree[s]`` used), and
  ``leaf_of`` [S, N];
- workloads [W, C] int64 (``n_classes[w]`` used): the pod classes
  ``c_cpu``, ``c_mem``, ``c_cpu_nz`` (the CPU the policies score with),
  ``c_num``, ``c_milli``, ``c_mask`` (model bit mask, 0 = any); and
  [W, P] the typical pods ``tp_cpu``, ``tp_num``, ``tp_milli``,
  ``tp_mask`` (int64), ``tp_freq`` (float64), ``n_typical[w]`` used;
- runs [B]: ``run_set``, ``run_workload``, ``policy`` (0..5,
  ``gpu._core.POLICIES``), ``sel`` (GPU pick: 0 best fit, 1 random, 2
  FGD), ``seed_mix`` uint64 (seed * 0x9E3779B97F4A7C15 mod 2**64),
  ``gpu_weight`` (GpuShareScore's weight), ``static_total`` [B, N] (the
  node-only scores, e.g. the tie rank), ``ev_off`` / ``ev_len``: run b's
  pods are events ``ev_off[b] .. ev_off[b] + ev_len[b]``;
- the queue's timers per run [B] float64 (seconds): ``backoff0``,
  ``backoff_max`` (podInitialBackoffSeconds, podMaxBackoffSeconds),
  ``max_unsched`` (podMaxInUnschedulablePodsDuration; inf: never
  flushed); default 1, 10 and inf;
- events [E], a pod each, a run's in arrival order: ``cls`` int64 (a class
  of the run's workload), ``u`` float64 in [0, 1) (Random's GPU pick),
  ``arrive`` float64 (seconds, non-decreasing in a run; default: pod k of
  a run at k + 1, the experiment's one per second), ``depart`` float64
  (seconds >= ``arrive``; inf, the default: no absolute departure; the
  queue keeps its departures in a heap by (time, push order)),
  ``duration`` float64 (seconds >= 0 the pod stays bound before it
  leaves, counted from its binding; inf, the default: stays; never with
  a finite ``depart``), ``rank`` int64 (each pod's place in activeQ's
  order before the push order, PrioritySort's: the dense rank of
  (-priority, creation time) in [0, 2^30); empty, the default: every
  pod ties, activeQ first in first out).

Outputs (``BatchOutputs``): per event ``node`` int64 (the row it was bound
to, -1 never), ``gmask`` int64 (the GPUs taken, bit g = GPU g), ``bind``
float64 (when, seconds; NaN never), ``tries`` int64 (its attempts); per
run b the changes of its cluster at ``2 * ev_off[b]``, ``n_log[b]`` of
them in order: ``log_t`` (seconds), ``log_pod`` (pod k of the run bound:
k; left: -1 - k), ``log_frag`` (the cluster's fragmentation in GPU milli
after it); ``frag0[b]`` the empty cluster's; ``end[b]`` float64 the
run's clock when nothing was left to do (seconds: its last event or
attempt).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from .pairwise import pairwise_tree

MAX_GPUS = 16
N_POLICIES = 6
N_SEL = 3


@dataclass
class BatchArrays:
    n_nodes: np.ndarray
    gpu_count: np.ndarray
    model: np.ndarray
    cpu_cap: np.ndarray
    mem_cap: np.ndarray
    pods_cap: np.ndarray
    n_tree: np.ndarray
    t_lo: np.ndarray
    t_len: np.ndarray
    t_left: np.ndarray
    t_right: np.ndarray
    leaf_of: np.ndarray
    n_classes: np.ndarray
    c_cpu: np.ndarray
    c_mem: np.ndarray
    c_cpu_nz: np.ndarray
    c_num: np.ndarray
    c_milli: np.ndarray
    c_mask: np.ndarray
    n_typical: np.ndarray
    tp_cpu: np.ndarray
    tp_num: np.ndarray
    tp_milli: np.ndarray
    tp_mask: np.ndarray
    tp_freq: np.ndarray
    run_set: np.ndarray
    run_workload: np.ndarray
    policy: np.ndarray
    sel: np.ndarray
    seed_mix: np.ndarray
    gpu_weight: np.ndarray
    static_total: np.ndarray
    ev_off: np.ndarray
    ev_len: np.ndarray
    cls: np.ndarray
    u: np.ndarray
    arrive: np.ndarray | None = None
    depart: np.ndarray | None = None
    duration: np.ndarray | None = None
    rank: np.ndarray | None = None
    backoff0: np.ndarray | None = None
    backoff_max: np.ndarray | None = None
    max_unsched: np.ndarray | None = None

    def __post_init__(self):
        b, e = self.run_set.shape[0], self.cls.shape[0]
        if self.arrive is None:
            self.arrive = np.zeros(e, np.float64)
            for o, k in zip(self.ev_off.tolist(), self.ev_len.tolist()):
                self.arrive[o:o + k] = np.arange(1, k + 1)
        if self.depart is None:
            self.depart = np.full(e, np.inf)
        if self.duration is None:
            self.duration = np.full(e, np.inf)
        if self.rank is None:
            self.rank = np.zeros(0, np.int64)
        for name, default in (("backoff0", 1.0), ("backoff_max", 10.0),
                              ("max_unsched", np.inf)):
            if getattr(self, name) is None:
                setattr(self, name, np.full(b, default))

    @property
    def n_runs(self) -> int:
        return int(self.run_set.shape[0])

    @property
    def gpu_slots(self) -> int:
        return max(1, int(self.gpu_count.max(initial=0)))

    def check(self) -> BatchArrays:
        """Shapes and ranges consistent, else ValueError naming the array."""
        if self.n_runs == 0:
            raise ValueError("no runs in the batch")
        s, n = self.gpu_count.shape
        for name in ("model", "cpu_cap", "mem_cap", "pods_cap", "leaf_of"):
            if getattr(self, name).shape != (s, n):
                raise ValueError(f"{name}: shape {getattr(self, name).shape}, expected ({s}, {n})")
        if self.n_nodes.shape != (s,) or (self.n_nodes < 0).any() or (self.n_nodes > n).any():
            raise ValueError(f"n_nodes: {s} counts in 0..{n} expected")
        if int(self.gpu_count.max(initial=0)) > MAX_GPUS or int(self.gpu_count.min(initial=0)) < 0:
            raise ValueError(f"gpu_count: 0..{MAX_GPUS} GPUs per node")
        w, c = self.c_cpu.shape
        for name in ("c_mem", "c_cpu_nz", "c_num", "c_milli", "c_mask"):
            if getattr(self, name).shape != (w, c):
                raise ValueError(f"{name}: shape {getattr(self, name).shape}, expected ({w}, {c})")
        p = self.tp_cpu.shape[1]
        for name in ("tp_num", "tp_milli", "tp_mask", "tp_freq"):
            if getattr(self, name).shape != (w, p):
                raise ValueError(f"{name}: shape {getattr(self, name).shape}, expected ({w}, {p})")
        b = self.n_runs
        for name in ("run_workload", "policy", "sel", "seed_mix", "gpu_weight", "ev_off", "ev_len"):
            if getattr(self, name).shape != (b,):
                raise ValueError(f"{name}: shape {getattr(self, name).shape}, expected ({b},)")
        if self.static_total.shape != (b, n):
            raise ValueError(f"static_total: shape {self.static_total.shape}, expected ({b}, {n})")
        if ((self.run_set < 0) | (self.run_set >= s)).any():
            raise ValueError(f"run_set: node set ids in 0..{s - 1}")
        if ((self.run_workload < 0) | (self.run_workload >= w)).any():
            raise ValueError(f"run_workload: workload ids in 0..{w - 1}")
        if ((self.policy < 0) | (self.policy >= N_POLICIES)).any():
            raise ValueError(f"policy: ids in 0..{N_POLICIES - 1}")
        if ((self.sel < 0) | (self.sel >= N_SEL)).any():
            raise ValueError(f"sel: ids in 0..{N_SEL - 1}")
        e = self.cls.shape[0]
        if self.u.shape != (e,):
            raise ValueError(f"u: shape {self.u.shape}, expected ({e},)")
        if (self.ev_len < 0).any() or (self.ev_off < 0).any() or (self.ev_off + self.ev_len > e).any():
            raise ValueError(f"ev_off/ev_len: every run's events within the {e} events")
        for name in ("backoff0", "backoff_max", "max_unsched"):
            v = getattr(self, name)
            if v.shape != (b,) or np.isnan(v).any() or (v < 0).any():
                raise ValueError(f"{name}: [{b}] seconds >= 0 expected")
        for name in ("arrive", "depart", "duration"):
            if getattr(self, name).shape != (e,):
                raise ValueError(f"{name}: shape {getattr(self, name).shape}, expected ({e},)")
        if np.isnan(self.arrive).any() or (self.arrive < 0).any() or np.isnan(self.depart).any() \
                or (self.depart < self.arrive).any():
            raise ValueError("arrive/depart: seconds, 0 <= arrive <= depart (inf: stays)")
        if np.isnan(self.duration).any() or (self.duration < 0).any():
            raise ValueError("duration: seconds >= 0 after the binding (inf: stays)")
        if (np.isfinite(self.duration) & np.isfinite(self.depart)).any():
            raise ValueError("duration: a pod leaves at its depart time or a duration after "
                             "its binding, not both")
        if self.rank.shape not in ((0,), (e,)) or (self.rank < 0).any() \
                or (self.rank >= 1 << 30).any():
            raise ValueError(f"rank: ({e},) ranks in [0, 2^30), or empty (all equal)")
        for b_ in range(b):
            seg = self.cls[self.ev_off[b_]:self.ev_off[b_] + self.ev_len[b_]]
            if seg.shape[0] and (int(seg.min()) < 0
                                 or int(seg.max()) >= int(self.n_classes[self.run_workload[b_]])):
                raise ValueError(f"cls: run {b_}'s pod classes outside its workload's "
                                 f"{int(self.n_classes[self.run_workload[b_]])} classes")
        self._check_orders()
        return self

    def _check_orders(self) -> None:
        """Each run's pods in arrival order: one pass over the events."""
        e = self.cls.shape[0]
        run_of = np.repeat(np.arange(self.n_runs), self.ev_len)
        at = np.concatenate([np.arange(o, o + k) for o, k in
                             zip(self.ev_off.tolist(), self.ev_len.tolist())]) \
            if e else np.zeros(0, np.int64)
        same_run = run_of[1:] == run_of[:-1]
        bad = same_run & (self.arrive[at][1:] < self.arrive[at][:-1])
        if bad.any():
            raise ValueError(f"arrive: run {int(run_of[1:][bad][0])}'s pods not in arrival order")

    def runs(self, idx) -> BatchArrays:
        """The same node sets and workloads, runs ``idx`` only (events
        renumbered): a chunk of the batch."""
        idx = np.asarray(idx, np.int64)
        off, ln = self.ev_off[idx], self.ev_len[idx]
        ev = np.concatenate([np.arange(o, o + k) for o, k in zip(off.tolist(), ln.tolist())]) \
            if idx.shape[0] else np.zeros(0, np.int64)
        new_off = np.concatenate([[0], np.cumsum(ln)[:-1]]).astype(np.int64) if idx.shape[0] \
            else np.zeros(0, np.int64)
        kw = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("run_set", "run_workload", "policy", "sel", "seed_mix", "gpu_weight",
                     "static_total", "backoff0", "backoff_max", "max_unsched"):
            kw[name] = kw[name][idx]
        kw.update(ev_off=new_off, ev_len=ln.astype(np.int64), cls=self.cls[ev], u=self.u[ev],
                  arrive=self.arrive[ev], depart=self.depart[ev], duration=self.duration[ev],
                  rank=self.rank[ev] if self.rank.shape[0] else self.rank)
        return BatchArrays(**kw)


@dataclass
class BatchOutputs:
    """What one call gives back (module doc)."""

    node: np.ndarray
    gmask: np.ndarray
    bind: np.ndarray
    tries: np.ndarray
    log_t: np.ndarray
    log_pod: np.ndarray
    log_frag: np.ndarray
    n_log: np.ndarray
    frag0: np.ndarray
    end: np.ndarray

    @classmethod
    def empty(cls, n_events: int, n_runs: int) -> BatchOutputs:
        e2 = 2 * n_events
        return cls(np.full(n_events, -1, np.int64), np.zeros(n_events, np.int64),
                   np.full(n_events, np.nan), np.zeros(n_events, np.int64), np.zeros(e2),
                   np.zeros(e2, np.int64), np.zeros(e2), np.zeros(n_runs, np.int64),
                   np.zeros(n_runs), np.zeros(n_runs))

    def log(self, a: BatchArrays, b: int) -> tuple:
        """Run ``b``'s changes: (times, pods, fragmentation) [n_log[b]]."""
        lo = 2 * int(a.ev_off[b])
        hi = lo + int(self.n_log[b])
        return self.log_t[lo:hi], self.log_pod[lo:hi], self.log_frag[lo:hi]

    def frag_at(self, a: BatchArrays, b: int, times: np.ndarray) -> np.ndarray:
        """Run ``b``'s fragmentation at each of ``times`` (seconds): after
        every change at or before it."""
        t, _pods, frag = self.log(a, b)
        k = np.searchsorted(t, np.asarray(times, np.float64), side="right")
        return np.concatenate([[self.frag0[b]], frag])[k]


def node_sets(sets: list[dict]) -> dict:
    """Padded [S, N] node columns and their summation trees from per-set
    dicts of [n] arrays (gpu_count, model, cpu_cap, mem_cap, pods_cap)."""
    s = len(sets)
    n = max([len(d["gpu_count"]) for d in sets] + [1])
    out = {k: np.zeros((s, n), np.int64) for k in ("gpu_count", "cpu_cap", "mem_cap",
                                                   "pods_cap", "leaf_of")}
    out["model"] = np.full((s, n), -1, np.int64)
    trees = [pairwise_tree(len(d["gpu_count"])) for d in sets]
    t = max(tr[0].shape[0] for tr in trees)
    for k in ("t_lo", "t_len", "t_left", "t_right"):
        out[k] = np.full((s, t), -1, np.int64)
    out["n_nodes"] = np.zeros(s, np.int64)
    out["n_tree"] = np.array([tr[0].shape[0] for tr in trees], np.int64)
    for i, (d, tr) in enumerate(zip(sets, trees)):
        m = len(d["gpu_count"])
        out["n_nodes"][i] = m
        for k in ("gpu_count", "model", "cpu_cap", "mem_cap", "pods_cap"):
            out[k][i, :m] = d[k]
        for k, a in zip(("t_lo", "t_len", "t_left", "t_right"), tr[:4]):
            out[k][i, :a.shape[0]] = a
        out["leaf_of"][i, :m] = tr[4]
    return out
