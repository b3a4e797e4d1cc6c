"""The batched node-local engine's inputs (``LocalBatch``) and its CPU twin
(``run_local_batch``: ``_local_core.run_local_cluster`` compiled with
``njit``, one cluster per ``prange`` iteration of ``_local_driver``).

A batch is B clusters cut from one universe of U nodes (a shared base
cluster plus, for capacity probes, the nodes some probes add): cluster b is
the universe rows ``node_rows[node_ptr[b]:node_ptr[b+1]]`` in evaluation
order, with the pods ``pod_cls[pod_ptr[b]:pod_ptr[b+1]]`` (class ids, queue
order) to place.  Shapes and units (R resources, cpu in millicores, memory
in bytes, column 3 the pod count; C pod classes; S = 6 score slots):

- alloc, used0 [U, R] int64: allocatable, requested by the bound pods;
  nz0 [U, 2] int64: their non-zero cpu/memory (scoring's defaults);
- c_request [C, R] int64 (pods column 0), c_nonzero [C, 2], c_anything [C]
  bool (any resource asked), c_ignored [C, R] bool (Fit ignores it),
  c_fit_filter [C] bool (NodeResourcesFit filters the class);
- c_active [C, S] bool, c_norm [C, S] int64 (0 none, 1 normalize, 2
  reverse, 3 min-max: InterPodAffinity's), c_weights [C, S] int64: the
  profile's scoring per class (S = 6: ``kernels/layout.py``'s five
  built-in slots, then InterPodAffinity);
- static_bits [C, U] int64: the usage-independent filter reasons (0 =
  passes; InterPodAffinity's bit where it rejects); static_raw [C, U, 3]
  int64: TaintToleration's, NodeAffinity's and InterPodAffinity's raw
  scores; image_raw [G, C, U] int64: ImageLocality's score (0..100),
  group ``image_group[b]`` (it depends on which nodes a cluster has);
- strategy, fit_res/fit_kind/fit_weights [F], shape_util/shape_score [Q],
  bal_res/bal_kind [K]: the Fit and Balanced arguments (``PodQuery``);
- num_to_find [B] int64 (numFeasibleNodesToFind of each cluster's node
  count), seed (the Scheduler's: the tie rule's, ``fused.ties``; a
  cluster's node i, its row for the tie rank, is its i-th of
  ``node_rows``).

Failures (``fail_cap`` F per cluster, default 0): the first F pods of each
cluster that fit nowhere, with their FailedScheduling diagnosis at that
moment as counts (``_local_core.count_failure``): s_key [C, U] int64, the
status id (0..K-1) the usage-independent filters give class c on node u,
-1 when they pass it; key_first [K] bool, whether that status's filter
comes before NodeResourcesFit in the profile.

Groups (``pod_group`` [sum P] int64, optional): each pod's group (0..62)
or -1; once a pod of group g fits nowhere in a cluster, the cluster's later
pods of g are dropped, never attempted (row -1; the start index stays as
it was, no diagnosis): a template whose remaining
pods are deleted at its first failure.

Static groups (``static_group`` [B] int64, optional): a cluster whose
usage-independent answers are not the base's (a drain's removed nodes
held bound pods InterPodAffinity reads) reads group g =
``static_group[b]`` (-1: the base): ``group_bits`` [G, C, U] int64 in
place of ``static_bits``, ``group_raw`` [G, C, U] int64 in place of
``static_raw[:, :, 2]`` (InterPodAffinity's raw score), ``group_s_key``
[G, C, U] int64 in place of ``s_key`` (-1 everywhere when unset).

The trace form (``LocalTrace``, ``run_local_trace``): each cluster's pods
arrive and leave on a clock (``_local_trace``: the openb engine's queue,
``_queue``), with a seed per cluster.

Output (``LocalResult``): the universe row of each pod or -1 (fits
nowhere) [sum P] int64; the pods bound per cluster [B]; fail_pod [B * F]
int64, the index within its cluster's pods of each recorded failure (-1:
fewer failed), fail_counts [B * F, K + 65] int64 its counts (per status
id, then per Fit reason bit, then the nodes Fit decides).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import NamedTuple

import numba
import numpy as np
from numba import njit

from tensorsched.kernels._compile import compile_module
from tensorsched.kernels.fused import _numba as _fused
from tensorsched.kernels.fused import ties
from tensorsched.kernels.fused._core import NORM_MINMAX   # c_norm's min-max mode

from . import _local_core, _local_driver, _local_trace, _queue

N_SLOTS = _local_core.N_SLOTS          # score slots: layout's five, then InterPodAffinity
IPA_SLOT = _local_core.IPA_SLOT
MAX_GROUPS = 63            # pod groups a cluster tracks (bits of one int64)

_core = compile_module(_local_core, njit, base=_fused.core,
                       options={"nogil": True}, cache=True)
# the trace form: the openb engine's queue on top of the node-local rules
_queue_ns = compile_module(_queue, njit, base=_core, options={"nogil": True}, cache=True)
_trace_ns = compile_module(_local_trace, njit, base=_queue_ns, options={"nogil": True},
                           cache=True)
_drivers = compile_module(_local_driver, njit, base=_trace_ns,
                          options={"nogil": True, "parallel": True}, cache=True)
# the trace form's compiled functions (the node-local rules, the queue and
# the cluster functions), for the forms built on top (``local_preempt``)
TRACE_NAMESPACE = _trace_ns
_run_all = _drivers["run_local_all"]
_run_trace_all = _drivers["run_local_trace_all"]


class LocalBatch(NamedTuple):
    """The inputs of one call (see the module doc for shapes)."""

    alloc: np.ndarray
    used0: np.ndarray
    nz0: np.ndarray
    c_request: np.ndarray
    c_nonzero: np.ndarray
    c_anything: np.ndarray
    c_ignored: np.ndarray
    c_fit_filter: np.ndarray
    c_active: np.ndarray
    c_norm: np.ndarray
    c_weights: np.ndarray
    static_bits: np.ndarray
    static_raw: np.ndarray
    image_raw: np.ndarray
    strategy: int
    fit_res: np.ndarray
    fit_kind: np.ndarray
    fit_weights: np.ndarray
    shape_util: np.ndarray
    shape_score: np.ndarray
    bal_res: np.ndarray
    bal_kind: np.ndarray
    node_ptr: np.ndarray
    node_rows: np.ndarray
    pod_ptr: np.ndarray
    pod_cls: np.ndarray
    image_group: np.ndarray
    num_to_find: np.ndarray
    seed: int
    s_key: np.ndarray | None = None
    key_first: np.ndarray | None = None
    fail_cap: int = 0
    pod_group: np.ndarray | None = None
    static_group: np.ndarray | None = None
    group_bits: np.ndarray | None = None
    group_raw: np.ndarray | None = None
    group_s_key: np.ndarray | None = None

    @property
    def n_clusters(self) -> int:
        return int(self.node_ptr.shape[0]) - 1

    def check(self) -> None:
        """Shapes and ranges the kernels rely on; a ValueError naming
        the array otherwise."""
        u, r = self.alloc.shape
        c = self.c_request.shape[0]
        b = self.n_clusters
        want = {"used0": (u, r), "nz0": (u, 2), "c_nonzero": (c, 2), "c_anything": (c,),
                "c_ignored": (c, r), "c_fit_filter": (c,), "c_active": (c, N_SLOTS),
                "c_norm": (c, N_SLOTS), "c_weights": (c, N_SLOTS), "static_bits": (c, u),
                "static_raw": (c, u, 3), "c_request": (c, r), "pod_ptr": (b + 1,),
                "image_group": (b,), "num_to_find": (b,)}
        for name, shape in want.items():
            if getattr(self, name).shape != shape:
                raise ValueError(f"LocalBatch.{name}: shape "
                                          f"{getattr(self, name).shape}, expected {shape}")
        if self.image_raw.ndim != 3 or self.image_raw.shape[1:] != (c, u):
            raise ValueError(f"LocalBatch.image_raw: shape {self.image_raw.shape}, "
                                      f"expected (G, {c}, {u})")
        for name, top in (("node_ptr", self.node_rows.shape[0]),
                          ("pod_ptr", self.pod_cls.shape[0])):
            ptr = getattr(self, name)
            if ptr.shape[0] < 1 or ptr[0] != 0 or ptr[-1] != top or (np.diff(ptr) < 0).any():
                raise ValueError(f"LocalBatch.{name}: must rise from 0 to {top}")
        for name, hi in (("node_rows", u), ("pod_cls", c),
                         ("image_group", self.image_raw.shape[0])):
            v = getattr(self, name)
            if v.size and (v.min() < 0 or v.max() >= hi):
                raise ValueError(f"LocalBatch.{name}: values must be in 0..{hi - 1}")
        if r < 4:
            raise ValueError("LocalBatch.alloc: needs the pods column (index 3)")
        if self.fail_cap < 0:
            raise ValueError("LocalBatch.fail_cap: must be >= 0")
        if self.s_key is not None:
            k = self.key_first.shape[0] if self.key_first is not None else 0
            if self.s_key.shape != (c, u):
                raise ValueError(f"LocalBatch.s_key: shape {self.s_key.shape}, "
                                 f"expected {(c, u)}")
            if self.s_key.size and (self.s_key.min() < -1 or self.s_key.max() >= k):
                raise ValueError(f"LocalBatch.s_key: values must be in -1..{k - 1}")
        if self.pod_group is not None:
            g = self.pod_group
            if g.shape != self.pod_cls.shape:
                raise ValueError(f"LocalBatch.pod_group: shape {g.shape}, expected "
                                 f"{self.pod_cls.shape}")
            if g.size and (g.min() < -1 or g.max() >= MAX_GROUPS):
                raise ValueError(f"LocalBatch.pod_group: values must be in "
                                 f"-1..{MAX_GROUPS - 1}")
        self._check_static_groups(b, c, u)

    def _check_static_groups(self, b: int, c: int, u: int) -> None:
        if self.static_group is None:
            return
        grp = np.asarray(self.static_group)
        if grp.shape != (b,):
            raise ValueError(f"LocalBatch.static_group: shape {grp.shape}, expected ({b},)")
        if self.group_bits is None or self.group_raw is None:
            raise ValueError("LocalBatch.group_bits/group_raw: needed with static_group")
        g = self.group_bits.shape[0]
        for name in ("group_bits", "group_raw", "group_s_key"):
            v = getattr(self, name)
            if v is not None and v.shape != (g, c, u):
                raise ValueError(f"LocalBatch.{name}: shape {v.shape}, expected ({g}, {c}, {u})")
        if grp.size and (grp.min() < -1 or grp.max() >= g):
            raise ValueError(f"LocalBatch.static_group: values must be in -1..{g - 1}")
        if self.group_s_key is not None and self.group_s_key.size:
            k = self.key_first.shape[0] if self.key_first is not None else 0
            if self.group_s_key.min() < -1 or self.group_s_key.max() >= k:
                raise ValueError(f"LocalBatch.group_s_key: values must be in -1..{k - 1}")

    def static_groups(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(static_group [B], group_bits, group_raw, group_s_key [G, C, U])
        as contiguous int64: every cluster -1 and G = 0 when unset, s_key
        -1 where unset."""
        c, u = self.c_request.shape[0], self.alloc.shape[0]
        if self.static_group is None:
            empty = np.zeros((0, c, u), np.int64)
            return np.full(self.n_clusters, -1, np.int64), empty, empty, empty
        bits = np.ascontiguousarray(self.group_bits, np.int64)
        s_key = (np.full(bits.shape, -1, np.int64) if self.group_s_key is None
                 else np.ascontiguousarray(self.group_s_key, np.int64))
        return (np.ascontiguousarray(self.static_group, np.int64), bits,
                np.ascontiguousarray(self.group_raw, np.int64), s_key)

    def groups(self) -> np.ndarray:
        """``pod_group`` as int64, every pod -1 (no group) when unset."""
        if self.pod_group is None:
            return np.full(self.pod_cls.shape[0], -1, np.int64)
        return np.ascontiguousarray(self.pod_group, np.int64)

    def failure_keys(self) -> tuple[np.ndarray, np.ndarray]:
        """(s_key [C, U] int64, key_first [K] bool), -1 / empty when unset."""
        c, u = self.c_request.shape[0], self.alloc.shape[0]
        s_key = (np.full((c, u), -1, np.int64) if self.s_key is None
                 else np.ascontiguousarray(self.s_key, np.int64))
        first = (np.zeros(0, np.bool_) if self.key_first is None
                 else np.ascontiguousarray(self.key_first, np.bool_))
        return s_key, first


class LocalResult(NamedTuple):
    """What one call answers (see the module doc for shapes)."""

    rows: np.ndarray
    bound: np.ndarray
    fail_pod: np.ndarray
    fail_counts: np.ndarray


def empty_result(a: LocalBatch) -> LocalResult:
    """The output arrays of ``a``, allocated (to be filled)."""
    s_key, first = a.failure_keys()
    f = a.n_clusters * int(a.fail_cap)
    return LocalResult(np.empty(a.pod_cls.shape[0], np.int64), np.zeros(a.n_clusters, np.int64),
                       np.full(f, -1, np.int64),
                       np.zeros((f, first.shape[0] + _local_core.FIT_SLOTS), np.int64))


def seed_mix(seed: int) -> np.uint64:
    """The kernels' form of a Scheduler seed (``fused.ties.seed_mix``), as
    the uint64 they take."""
    return np.uint64(ties.seed_mix(seed))


@contextmanager
def numba_threads(threads: int | None):
    """Numba's thread count set to ``threads`` (None: as it is; capped at
    the cores Numba started with) and its parallel chunk size to 1 (each
    cluster one chunk: clusters differ in cost) for the block, both put
    back after."""
    old = numba.get_num_threads()
    chunk = numba.get_parallel_chunksize()
    if threads is not None:
        numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))
    numba.set_parallel_chunksize(1)
    try:
        yield
    finally:
        numba.set_parallel_chunksize(chunk)
        numba.set_num_threads(old)


def run_local_batch(a: LocalBatch, threads: int | None = None) -> LocalResult:
    """Every cluster of ``a`` (checked first), on ``threads`` cores (default:
    Numba's): the ``LocalResult`` (module doc)."""
    a.check()
    out = empty_result(a)
    if a.n_clusters == 0:
        return out
    s_key, first = a.failure_keys()
    i64 = lambda x: np.ascontiguousarray(x, np.int64)   # noqa: E731
    b8 = lambda x: np.ascontiguousarray(x, np.bool_)   # noqa: E731
    with numba_threads(threads):
        _run_all(i64(a.alloc), i64(a.used0), i64(a.nz0), i64(a.c_request), i64(a.c_nonzero),
                 b8(a.c_anything), b8(a.c_ignored), b8(a.c_fit_filter), b8(a.c_active),
                 i64(a.c_norm), i64(a.c_weights), i64(a.static_bits), i64(a.static_raw),
                 i64(a.image_raw), int(a.strategy), i64(a.fit_res), i64(a.fit_kind),
                 i64(a.fit_weights), i64(a.shape_util), i64(a.shape_score), i64(a.bal_res),
                 i64(a.bal_kind), i64(a.node_ptr), i64(a.node_rows), i64(a.pod_ptr),
                 i64(a.pod_cls), i64(a.image_group), i64(a.num_to_find), seed_mix(a.seed),
                 out.rows, out.bound, s_key, first, out.fail_pod,
                 out.fail_counts, a.groups(), *a.static_groups())
    return out


class LocalTrace(NamedTuple):
    """A trace call's inputs: ``batch`` the clusters, nodes and classes
    (its ``seed`` and failure fields unused); per pod (the
    order of ``batch.pod_cls``: each cluster's pods in trace order)
    ``arrive`` and ``depart`` seconds [sum P] float64 (inf: stays; depart
    >= arrive); ``seeds`` [B] each cluster's Scheduler seed; the queue's
    ``backoff0`` / ``backoff_max`` seconds (podInitialBackoffSeconds,
    podMaxBackoffSeconds) and ``max_unsched`` (the unschedulable pool's
    flush, seconds; inf: never); ``profiles``: each cluster's scoring
    arguments (None: the batch's for all); ``duration`` [sum P] float64
    seconds each pod stays once bound (inf: stays, never with a finite
    ``depart``; None: every pod inf); ``rank`` [sum P] int64 each pod's
    place in activeQ's order within its cluster before the push order
    (the dense rank of (-priority, creation time); None: all equal)."""

    batch: LocalBatch
    arrive: np.ndarray
    depart: np.ndarray
    seeds: np.ndarray
    backoff0: float = 1.0
    backoff_max: float = 10.0
    max_unsched: float = 300.0
    profiles: LocalProfiles | None = None
    duration: np.ndarray | None = None
    rank: np.ndarray | None = None

    def ranks(self) -> np.ndarray:
        """``rank`` as int64, empty where None."""
        return np.zeros(0, np.int64) if self.rank is None else np.ascontiguousarray(
            self.rank, np.int64)

    def durations(self) -> np.ndarray:
        """[sum P] float64 ``duration`` (inf where None)."""
        if self.duration is None:
            return np.full(self.batch.pod_cls.shape[0], np.inf)
        return np.ascontiguousarray(self.duration, np.float64)

    def check(self) -> None:
        """``batch.check`` and the per-pod times; a ValueError naming the array."""
        a = self.batch
        a.check()
        p = a.pod_cls.shape[0]
        for name in ("arrive", "depart"):
            if getattr(self, name).shape != (p,):
                raise ValueError(f"LocalTrace.{name}: shape {getattr(self, name).shape}, "
                                 f"expected ({p},)")
        if self.profiles is not None and (
                self.profiles.profile.shape != (a.n_clusters,)
                or (self.profiles.profile < 0).any()
                or (self.profiles.profile >= self.profiles.strategy.shape[0]).any()):
            raise ValueError("LocalTrace.profiles.profile: one profile row per cluster")
        if self.seeds.shape != (a.n_clusters,):
            raise ValueError(f"LocalTrace.seeds: shape {self.seeds.shape}, "
                             f"expected ({a.n_clusters},)")
        arr = np.asarray(self.arrive, np.float64)
        dep = np.asarray(self.depart, np.float64)
        if (~np.isfinite(arr)).any() or (arr < 0).any() or (dep < arr).any():
            raise ValueError("LocalTrace.arrive/depart: finite arrivals >= 0, departures "
                             ">= their arrival")
        if self.duration is not None:
            dur = np.asarray(self.duration, np.float64)
            if dur.shape != (p,):
                raise ValueError(f"LocalTrace.duration: shape {dur.shape}, expected ({p},)")
            both = np.isfinite(dur) & np.isfinite(dep)
            if np.isnan(dur).any() or (dur < 0).any() or both.any():
                raise ValueError("LocalTrace.duration: seconds >= 0 (inf: stays), never with a "
                                 "finite departure")
        if self.rank is not None and (np.shape(self.rank) != (p,) or (self.ranks() < 0).any()
                                      or (self.ranks() >= 1 << 30).any()):
            raise ValueError(f"LocalTrace.rank: ({p},) ranks in [0, 2^30)")
        for b in range(a.n_clusters):
            seg = arr[a.pod_ptr[b]:a.pod_ptr[b + 1]]
            if (np.diff(seg) < 0).any():
                raise ValueError(f"LocalTrace.arrive: cluster {b}'s pods out of arrival order")


class LocalProfiles(NamedTuple):
    """The scoring arguments of K profiles (``PodQuery``'s), one row each,
    padded: ``strategy`` [K]; ``fit_res`` / ``fit_kind`` / ``fit_weights``
    [K, F] (the first ``n_fit[k]`` used), ``shape_util`` / ``shape_score``
    [K, Q] (``n_shape``), ``bal_res`` / ``bal_kind`` [K, B'] (``n_bal``);
    ``profile`` [B] each cluster's row."""

    strategy: np.ndarray
    fit_res: np.ndarray
    fit_kind: np.ndarray
    fit_weights: np.ndarray
    n_fit: np.ndarray
    shape_util: np.ndarray
    shape_score: np.ndarray
    n_shape: np.ndarray
    bal_res: np.ndarray
    bal_kind: np.ndarray
    n_bal: np.ndarray
    profile: np.ndarray

    @staticmethod
    def of(rows: list, profile) -> "LocalProfiles":
        """From one dict per profile (``strategy``, ``fit_res``, ...: the
        ``LocalBatch`` fields) and each cluster's profile index."""
        def pad(names):
            width = max([1] + [len(r[names[0]]) for r in rows])
            out = [np.zeros((len(rows), width), np.int64) for _ in names]
            n = np.zeros(len(rows), np.int64)
            for k, r in enumerate(rows):
                n[k] = len(r[names[0]])
                for o, name in zip(out, names):
                    o[k, :n[k]] = np.asarray(r[name], np.int64)
            return (*out, n)
        fit = pad(("fit_res", "fit_kind", "fit_weights"))
        shape = pad(("shape_util", "shape_score"))
        bal = pad(("bal_res", "bal_kind"))
        return LocalProfiles(np.asarray([int(r["strategy"]) for r in rows], np.int64), *fit,
                             *shape, *bal, np.asarray(profile, np.int64))


class TraceResult(NamedTuple):
    """A trace call's outputs: per pod ``node`` (universe row, -1 never
    bound), ``bind`` (seconds, NaN never), ``tries`` (attempts); per
    cluster b its changes ``log_t`` / ``log_pod`` rows ``2 * pod_ptr[b]``
    onwards (``n_log[b]`` of them; j bound, -1 - j left, j the pod's index
    within its cluster), ``end[b]`` the clock when nothing was left."""

    node: np.ndarray
    bind: np.ndarray
    tries: np.ndarray
    log_t: np.ndarray
    log_pod: np.ndarray
    n_log: np.ndarray
    end: np.ndarray


def empty_trace_result(p: int, b: int) -> TraceResult:
    """The output arrays of a trace call of ``p`` pods in ``b`` clusters,
    allocated (to be filled)."""
    return TraceResult(np.empty(p, np.int64), np.empty(p, np.float64), np.zeros(p, np.int64),
                       np.zeros(max(2 * p, 1), np.float64), np.zeros(max(2 * p, 1), np.int64),
                       np.zeros(b, np.int64), np.zeros(b, np.float64))


def trace_profiles(t: LocalTrace) -> LocalProfiles:
    """``t``'s scoring profiles: its own, else one made of the batch's
    fields that every cluster runs."""
    if t.profiles is not None:
        return t.profiles
    a = t.batch
    return LocalProfiles.of([{f: getattr(a, f) for f in (
        "strategy", "fit_res", "fit_kind", "fit_weights", "shape_util", "shape_score",
        "bal_res", "bal_kind")}], np.zeros(a.n_clusters, np.int64))


def trace_inputs(t: LocalTrace, pr: LocalProfiles) -> tuple:
    """The leading arguments every trace-form driver takes (the clusters'
    nodes and classes, the profiles' scoring arrays, the pods' times and
    the queue's parameters), contiguous in the kernels' dtypes."""
    a = t.batch
    i64 = lambda x: np.ascontiguousarray(x, np.int64)   # noqa: E731
    b8 = lambda x: np.ascontiguousarray(x, np.bool_)   # noqa: E731
    f64 = lambda x: np.ascontiguousarray(x, np.float64)   # noqa: E731
    return (i64(a.alloc), i64(a.used0), i64(a.nz0), i64(a.c_request), i64(a.c_nonzero),
            b8(a.c_anything), b8(a.c_ignored), b8(a.c_fit_filter), b8(a.c_active),
            i64(a.c_norm), i64(a.c_weights), i64(a.static_bits), i64(a.static_raw),
            i64(a.image_raw), i64(pr.strategy), i64(pr.fit_res), i64(pr.fit_kind),
            i64(pr.fit_weights), i64(pr.shape_util), i64(pr.shape_score), i64(pr.bal_res),
            i64(pr.bal_kind), i64(a.node_ptr), i64(a.node_rows), i64(a.pod_ptr),
            i64(a.pod_cls), i64(a.image_group), i64(a.num_to_find),
            np.asarray([seed_mix(s) for s in t.seeds], np.uint64), f64(t.arrive),
            f64(t.depart), t.durations(), t.ranks(), float(t.backoff0), float(t.backoff_max),
            float(t.max_unsched))


def run_local_trace(t: LocalTrace, threads: int | None = None) -> TraceResult:
    """Every cluster of ``t`` (checked first) on ``threads`` cores
    (default: Numba's): the ``TraceResult``."""
    t.check()
    a = t.batch
    out = empty_trace_result(a.pod_cls.shape[0], a.n_clusters)
    if a.n_clusters == 0:
        return out
    pr = trace_profiles(t)
    i64 = lambda x: np.ascontiguousarray(x, np.int64)   # noqa: E731
    with numba_threads(threads):
        _run_trace_all(*trace_inputs(t, pr), out.node, out.bind, out.tries, out.log_t,
                       out.log_pod, out.n_log, out.end, i64(pr.profile), i64(pr.n_fit),
                       i64(pr.n_shape), i64(pr.n_bal))
    return out
