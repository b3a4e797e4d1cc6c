"""The node-local trace form with DefaultPreemption in its queue, the CPU
twin (``_local_preempt.run_local_preempt_cluster`` compiled with ``njit``,
one cluster per ``prange`` iteration of ``_local_preempt_driver``):
``run_local_preempt(p)`` answers a ``LocalPreempt`` (a ``LocalTrace`` and
the pods' priorities) with the ``TraceResult`` of ``local_cpu.
run_local_trace`` and each pod's preemption (``PreemptResult``).

Inputs beside the trace: per pod, cluster b's queue pods (the order of
``trace.batch.pod_cls``) then its manifests' bound pods (in ``used0``
from the start, possible victims), rows ``vic_ptr[b]:vic_ptr[b+1]``
[sum (P + Bb)]: ``prio`` int64 the pod's priority; ``may`` int64 1 when
it may preempt (a queue pod whose preemptionPolicy is not Never, its
profile with DefaultPreemption); ``krank`` int64 its key's rank among the
cluster's pods (the victim table's slot order); ``pstart`` int64 its
``status.startTime`` in ns (``START_NOW``: none); ``preq`` [., R] int64
its requests (the pods column 0) and ``pnz`` [., 2] its non-zero cpu and
memory; ``bnode`` [sum Bb] int64 each bound pod's local node (its index
in the cluster's ``node_rows``); per cluster [B] ``pct`` / ``least``
int64: DefaultPreemption's minCandidateNodesPercentage and
minCandidateNodesAbsolute; PodDisruptionBudgets: per cluster [B]
``n_pdb`` int64 how many, ``pdb_kind`` / ``pdb_val`` [B, W] int64 how
each one's disruptionsAllowed comes (``_local_preempt.PDB_*``: the
status's number, maxUnavailable or minAvailable as a count or a
percentage, neither) and its number; ``pmatch`` [sum (P + Bb), W] int64
each pod under each of its cluster's PDBs (0 none, ``PDB_HEALTHY``,
``PDB_DELETING``, ``PDB_DISRUPTED``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from tensorsched.kernels._compile import compile_module

from . import _candidates, _local_preempt, _local_preempt_driver, preempt_arrays
from .local_cpu import (
    TRACE_NAMESPACE,
    LocalTrace,
    TraceResult,
    empty_trace_result,
    numba_threads,
    trace_inputs,
    trace_profiles,
)

START_NOW = _local_preempt.START_NOW
# pmatch codes and pdb_kind values
PDB_HEALTHY = _local_preempt.PDB_HEALTHY
PDB_DELETING = _local_preempt.PDB_DELETING
PDB_DISRUPTED = _local_preempt.PDB_DISRUPTED
PDB_FIXED = _local_preempt.PDB_FIXED
PDB_MAX_UNAVAILABLE = _local_preempt.PDB_MAX_UNAVAILABLE
PDB_MAX_UNAVAILABLE_PCT = _local_preempt.PDB_MAX_UNAVAILABLE_PCT
PDB_MIN_AVAILABLE = _local_preempt.PDB_MIN_AVAILABLE
PDB_MIN_AVAILABLE_PCT = _local_preempt.PDB_MIN_AVAILABLE_PCT
PDB_NEITHER = _local_preempt.PDB_NEITHER

# on numCandidates and the seeded offset (``_candidates``, the openb engines' too)
_cand_ns = compile_module(_candidates, njit, base=TRACE_NAMESPACE, options={"nogil": True},
                          cache=True)
_preempt_ns = compile_module(_local_preempt, njit, base=_cand_ns, options={"nogil": True},
                             cache=True)
_drivers = compile_module(_local_preempt_driver, njit, base=_preempt_ns,
                          options={"nogil": True, "parallel": True}, cache=True)
_run_all = _drivers["run_local_preempt_all"]
# the preemption form's compiled functions, for the form with node events
# (``local_preempt_events``)
PREEMPT_NAMESPACE = _preempt_ns


class LocalPreempt(NamedTuple):
    """A trace call with preemption (module doc)."""

    trace: LocalTrace
    vic_ptr: np.ndarray
    prio: np.ndarray
    may: np.ndarray
    krank: np.ndarray
    pstart: np.ndarray
    preq: np.ndarray
    pnz: np.ndarray
    bnode: np.ndarray
    pct: np.ndarray
    least: np.ndarray
    n_pdb: np.ndarray
    pdb_kind: np.ndarray
    pdb_val: np.ndarray
    pmatch: np.ndarray
    grace: float = 0.0

    def check(self) -> None:
        """``trace.check`` and the preemption arrays' shapes; a ValueError
        naming the array."""
        self.trace.check()
        a = self.trace.batch
        b = a.n_clusters
        ptr = np.asarray(self.vic_ptr)
        if ptr.shape != (b + 1,) or ptr[0] != 0 or (np.diff(ptr) < np.diff(a.pod_ptr)).any():
            raise ValueError("LocalPreempt.vic_ptr: each cluster's queue pods then its bound "
                             "pods, from 0")
        v = int(ptr[-1])
        nb = v - a.pod_cls.shape[0]
        r = a.alloc.shape[1]
        for name, shape in (("prio", (v,)), ("may", (v,)), ("krank", (v,)), ("pstart", (v,)),
                            ("preq", (v, r)), ("pnz", (v, 2)), ("bnode", (nb,)),
                            ("pct", (b,)), ("least", (b,))):
            if np.shape(getattr(self, name)) != shape:
                raise ValueError(f"LocalPreempt.{name}: shape {np.shape(getattr(self, name))}, "
                                 f"expected {shape}")
        w = np.shape(self.pdb_kind)[1] if np.ndim(self.pdb_kind) == 2 else -1
        for name, shape in (("n_pdb", (b,)), ("pdb_kind", (b, w)), ("pdb_val", (b, w)),
                            ("pmatch", (v, w))):
            if w < 1 or np.shape(getattr(self, name)) != shape:
                raise ValueError(f"LocalPreempt.{name}: shape {np.shape(getattr(self, name))}, "
                                 f"expected {shape} (W >= 1)")
        if ((np.asarray(self.n_pdb) < 0) | (np.asarray(self.n_pdb) > w)).any():
            raise ValueError(f"LocalPreempt.n_pdb: 0 to {w} per cluster")
        kinds = np.asarray(self.pdb_kind)
        if ((kinds < PDB_FIXED) | (kinds > PDB_NEITHER)).any():
            raise ValueError("LocalPreempt.pdb_kind: one of the PDB_* kinds")
        codes = np.asarray(self.pmatch)
        if ((codes < 0) | (codes > PDB_DISRUPTED)).any():
            raise ValueError("LocalPreempt.pmatch: 0 or one of PDB_HEALTHY, PDB_DELETING, "
                             "PDB_DISRUPTED")
        if (np.asarray(self.pct) < 0).any() or (np.asarray(self.least) < 0).any():
            raise ValueError("LocalPreempt.pct/least: >= 0")
        g = self.grace
        if not isinstance(g, (int, float, np.floating, np.integer)) or not g >= 0 \
                or not np.isfinite(g):
            raise ValueError(f"LocalPreempt.grace: a finite number of seconds >= 0, got {g!r}")
        nodes = np.diff(a.node_ptr)
        for k in range(b):
            lo = int(ptr[k] - a.pod_ptr[k])
            hi = int(ptr[k + 1] - a.pod_ptr[k + 1])
            got = np.asarray(self.bnode[lo:hi])
            if got.size and (got.min() < 0 or got.max() >= nodes[k]):
                raise ValueError(f"LocalPreempt.bnode: cluster {k}'s bound pods on its nodes")

    def inputs(self) -> tuple:
        """The preemption arrays as the kernels take them (contiguous int64)."""
        i64 = lambda x: np.ascontiguousarray(x, np.int64)   # noqa: E731
        return (i64(self.vic_ptr), i64(self.prio), i64(self.may), i64(self.krank),
                i64(self.pstart), i64(self.preq), i64(self.pnz), i64(self.bnode),
                i64(self.pct), i64(self.least))

    def pdb_inputs(self) -> tuple:
        """The PodDisruptionBudget arrays as the kernels take them."""
        i64 = lambda x: np.ascontiguousarray(x, np.int64)   # noqa: E731
        return i64(self.n_pdb), i64(self.pdb_kind), i64(self.pdb_val), i64(self.pmatch)


def log_rows(p: LocalPreempt) -> int:
    """The log's rows of every cluster: two per queue pod (bound, left),
    one per bound pod (preempted)."""
    return int(p.trace.batch.pod_cls.shape[0] + p.vic_ptr[-1])


def log_start(p: LocalPreempt, b: int) -> int:
    """Where cluster ``b``'s log rows start."""
    return int(p.trace.batch.pod_ptr[b] + p.vic_ptr[b])


def check_terminating(over: np.ndarray) -> None:
    """``preempt_arrays.check_terminating`` naming the node-local kernel."""
    preempt_arrays.check_terminating(over, "the node-local kernel")


def run_local_preempt(p: LocalPreempt, threads: int | None = None
                      ) -> tuple[TraceResult, np.ndarray, np.ndarray]:
    """Every cluster of ``p`` (checked first) on ``threads`` cores
    (default: Numba's): the ``TraceResult``, ``victim`` [sum (P + Bb)]
    int64 (``vic_ptr``'s rows), for each pod how many times it was
    preempted (1; with ``p.grace`` above 0 a victim terminating may be
    chosen again): it left at its log entry (pod k of the cluster's rows,
    a bound pod P + b), at once, when its grace ended (its first
    eviction's time + ``p.grace``) or, earlier, at its own departure; and
    ``evicted_at`` [sum (P + Bb)] float64 each pod's first eviction's time
    (seconds, NaN never).  Cluster b's log rows ``log_start(p, b)``
    onwards (two per queue pod, one per bound pod)."""
    p.check()
    t = p.trace
    a = t.batch
    out = empty_trace_result(a.pod_cls.shape[0], a.n_clusters)
    victim = np.zeros(int(p.vic_ptr[-1]), np.int64)
    evicted_at = np.full(int(p.vic_ptr[-1]), np.nan)
    out = out._replace(log_t=np.zeros(max(log_rows(p), 1), np.float64),
                       log_pod=np.zeros(max(log_rows(p), 1), np.int64))
    if a.n_clusters == 0:
        return out, victim, evicted_at
    pr = trace_profiles(t)
    i64 = lambda x: np.ascontiguousarray(x, np.int64)   # noqa: E731
    over = np.zeros(a.n_clusters, np.int64)
    with numba_threads(threads):
        _run_all(*trace_inputs(t, pr), out.node, out.bind, out.tries, out.log_t,
                 out.log_pod, out.n_log, out.end, i64(pr.profile), i64(pr.n_fit),
                 i64(pr.n_shape), i64(pr.n_bal), *p.inputs(), victim, evicted_at,
                 *p.pdb_inputs(), float(p.grace), over)
    check_terminating(over)
    return out, victim, evicted_at
