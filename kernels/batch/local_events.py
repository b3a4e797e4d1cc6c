"""The node-local trace form with timed node events, on the CPU twin: each
cluster's nodes join, change (cordon, uncordon), are drained and deleted at
their times, and pods are deleted at theirs (a scenario's pod deletes),
while its pods arrive and leave (``_local_preempt_events.
run_local_preempt_events_cluster`` without preemption, a ``prange`` over
clusters: ``_local_preempt_events_driver``, its preemption arrays empty).

``LocalEvents`` is a ``local_cpu.LocalTrace`` and, per cluster, its local
nodes' presence at the start and its node events; ``run_local_events``
answers a ``local_cpu.TraceResult`` (``node`` in local rows: the rows the
cluster's Scheduler gives its nodes) and each pod's ``why`` (how it left
with its node: ``WHY_DELETED``, ``WHY_EVICTED``; 0 otherwise).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from tensorsched.kernels._compile import compile_module

from . import _local_preempt_events, _local_preempt_events_driver, _local_trace
from .local_cpu import (
    LocalTrace,
    TraceResult,
    empty_trace_result,
    numba_threads,
    trace_inputs,
    trace_profiles,
)
from .local_preempt import PREEMPT_NAMESPACE

EV_ADD, EV_UPDATE, EV_EVICT, EV_DELETE = (_local_trace.EV_ADD, _local_trace.EV_UPDATE,
                                          _local_trace.EV_EVICT, _local_trace.EV_DELETE)
EV_POD_DELETE = _local_trace.EV_POD_DELETE
EV_KEEP = _local_trace.EV_KEEP
I_POD_DELETE, I_NODE_ADD, I_NODE_UPDATE, I_NODE_DELETE = (
    _local_trace.I_POD_DELETE, _local_trace.I_NODE_ADD, _local_trace.I_NODE_UPDATE,
    _local_trace.I_NODE_DELETE)
REJ_FIRST = _local_trace.REJ_FIRST
WHY_DELETED, WHY_EVICTED = _local_trace.WHY_DELETED, _local_trace.WHY_EVICTED
EV_KINDS = (EV_ADD, EV_UPDATE, EV_EVICT, EV_DELETE, EV_POD_DELETE, EV_KEEP)

# the cluster function of the form with preemption (``_local_preempt_events``),
# without it here: one compiled function for both forms
_pe_ns = compile_module(_local_preempt_events, njit, base=PREEMPT_NAMESPACE,
                        options={"nogil": True}, cache=True)
PREEMPT_EVENTS_NAMESPACE = _pe_ns
# and the driver of both (``local_preempt_events``): one compiled prange
# loop, which this form calls with the preemption's arrays empty
_drivers = compile_module(_local_preempt_events_driver, njit, base=_pe_ns,
                          options={"nogil": True, "parallel": True}, cache=True)
RUN_PREEMPT_EVENTS_ALL = _drivers["run_local_preempt_events_all"]


class LocalEvents(NamedTuple):
    """A node-event call's inputs: ``trace`` (its batch's universe holds
    every node variant the events name: ``static_bits`` / ``static_raw``
    [C, U]); ``valid0`` [sum n] bool beside ``batch.node_rows``: the local
    node is in its cluster at the start; ``rej`` [C, U] int64 each class's
    rejector code per universe row (the interest bits of the static
    status's plugin, ``REJ_FIRST`` when that filter runs before
    NodeResourcesFit; 0 where the static filters pass); ``fit_interest``
    NodeResourcesFit's interest bits; ``korder`` [sum P] each cluster's
    pods (local indices) in key order; per cluster b its events
    ``ev_ptr[b]:ev_ptr[b+1]`` of ``ev_t`` (seconds, nondecreasing),
    ``ev_kind`` (``EV_KINDS``), ``ev_node`` (local node), ``ev_x``
    (universe row: EV_ADD's and EV_UPDATE's answers), ``ev_find`` (nodes
    to find after it), ``ev_bound`` (the manifests' bound pods it
    removes; ``EV_POD_DELETE``: the pod deleted, a local pod index, or -1
    for a manifests' bound pod; ``EV_KEEP``: a pod the drain next leaves
    on the node, when bound there), ``ev_used`` [E, R] / ``ev_nz`` [E, 2]
    what a drain leaves requested on its node (the pods a drain leaves;
    ``EV_POD_DELETE`` of a bound pod of the manifests: its requests; zeros
    otherwise).  A time's pod deletes come first in the stream: they go
    before the departures of their time (``_queue.q_next_steps``)."""

    trace: LocalTrace
    valid0: np.ndarray
    rej: np.ndarray
    fit_interest: int
    korder: np.ndarray
    ev_ptr: np.ndarray
    ev_t: np.ndarray
    ev_kind: np.ndarray
    ev_node: np.ndarray
    ev_x: np.ndarray
    ev_find: np.ndarray
    ev_bound: np.ndarray
    ev_used: np.ndarray
    ev_nz: np.ndarray

    def check(self, bound: np.ndarray | None = None) -> None:
        """``trace.check`` and the event arrays; a ValueError naming the
        array.  ``bound`` [B]: each cluster's bound pods a pod delete or
        keep may also name (P + b; the form with preemption)."""
        self.trace.check()
        a = self.trace.batch
        u = a.static_bits.shape[1]
        if np.shape(self.valid0) != a.node_rows.shape:
            raise ValueError("LocalEvents.valid0: one flag per local node")
        if np.shape(self.rej) != a.static_bits.shape:
            raise ValueError(f"LocalEvents.rej: shape {np.shape(self.rej)}, expected "
                             f"{a.static_bits.shape}")
        if np.shape(self.korder) != a.pod_cls.shape:
            raise ValueError("LocalEvents.korder: one entry per pod")
        ptr = np.asarray(self.ev_ptr)
        if ptr.shape != (a.n_clusters + 1,) or ptr[0] != 0 or (np.diff(ptr) < 0).any():
            raise ValueError("LocalEvents.ev_ptr: [B + 1] offsets from 0")
        e = int(ptr[-1])
        for name in ("ev_t", "ev_kind", "ev_node", "ev_x", "ev_find", "ev_bound"):
            if np.shape(getattr(self, name)) != (e,):
                raise ValueError(f"LocalEvents.{name}: shape {np.shape(getattr(self, name))}, "
                                 f"expected ({e},)")
        if np.shape(self.ev_used) != (e, a.alloc.shape[1]) or np.shape(self.ev_nz) != (e, 2):
            raise ValueError("LocalEvents.ev_used / ev_nz: [E, R] and [E, 2]")
        if not np.isin(self.ev_kind, EV_KINDS).all():
            raise ValueError(f"LocalEvents.ev_kind: kinds {EV_KINDS}")
        if ((np.asarray(self.ev_x) < 0) | (np.asarray(self.ev_x) >= u)).any():
            raise ValueError("LocalEvents.ev_x: universe rows")
        for b in range(a.n_clusters):
            n = int(a.node_ptr[b + 1] - a.node_ptr[b])
            t = np.asarray(self.ev_t)[ptr[b]:ptr[b + 1]]
            nodes = np.asarray(self.ev_node)[ptr[b]:ptr[b + 1]]
            if (~np.isfinite(t)).any() or (t < 0).any() or (np.diff(t) < 0).any():
                raise ValueError(f"LocalEvents.ev_t: cluster {b}'s events: finite seconds "
                                 ">= 0 in time order")
            if ((nodes < 0) | (nodes >= n)).any():
                raise ValueError(f"LocalEvents.ev_node: cluster {b}'s local nodes 0..{n - 1}")
            kinds = np.asarray(self.ev_kind)[ptr[b]:ptr[b + 1]]
            keep = kinds == EV_KEEP
            pods = np.asarray(self.ev_bound)[ptr[b]:ptr[b + 1]][(kinds == EV_POD_DELETE) | keep]
            n_pods = int(a.pod_ptr[b + 1] - a.pod_ptr[b])
            if bound is not None:
                n_pods += int(bound[b])
            if ((pods < -1) | (pods >= n_pods)).any() or (
                    np.asarray(self.ev_bound)[ptr[b]:ptr[b + 1]][keep] < 0).any():
                raise ValueError(f"LocalEvents.ev_bound: cluster {b}'s pod deletes name its "
                                 f"pods 0..{n_pods - 1} (or -1)")
            lead = kinds == EV_POD_DELETE
            same = t[1:] == t[:-1]
            if (same & lead[1:] & ~lead[:-1]).any():
                raise ValueError(f"LocalEvents.ev_kind: cluster {b}'s pod deletes come first "
                                 "at their time")


def run_local_events(ev: LocalEvents, threads: int | None = None) -> tuple[TraceResult,
                                                                           np.ndarray]:
    """Every cluster of ``ev`` (checked first) on ``threads`` cores
    (default: Numba's): the ``TraceResult`` (``node`` local rows) and
    ``why`` [sum P]."""
    ev.check()
    t = ev.trace
    a = t.batch
    out = empty_trace_result(a.pod_cls.shape[0], a.n_clusters)
    why = np.zeros(a.pod_cls.shape[0], np.int64)
    if a.n_clusters == 0:
        return out, why
    pr = trace_profiles(t)
    i64 = lambda x: np.ascontiguousarray(x, np.int64)   # noqa: E731
    b8 = lambda x: np.ascontiguousarray(x, np.bool_)   # noqa: E731
    f64 = lambda x: np.ascontiguousarray(x, np.float64)   # noqa: E731
    # no preemption: every pod's preemption rows are its queue rows
    # (``vic_ptr`` = ``pod_ptr``: no bound pod of its own, the manifests'
    # bound pods in the nodes' totals), each array of them empty, so no pod
    # may preempt; the types those of ``local_preempt_events``' call
    b = a.n_clusters
    none = np.zeros(0, np.int64)
    with numba_threads(threads):
        RUN_PREEMPT_EVENTS_ALL(
            *trace_inputs(t, pr), out.node, out.bind, out.tries, why, out.log_t, out.log_pod,
            out.n_log, out.end, i64(pr.profile), i64(pr.n_fit), i64(pr.n_shape),
            i64(pr.n_bal), b8(ev.valid0), i64(ev.rej), int(ev.fit_interest), i64(ev.korder),
            i64(ev.ev_ptr), f64(ev.ev_t), i64(ev.ev_kind), i64(ev.ev_node), i64(ev.ev_x),
            i64(ev.ev_find), i64(ev.ev_bound), i64(ev.ev_used), i64(ev.ev_nz),
            i64(a.pod_ptr), none, none, none, none, np.zeros((0, 1), np.int64),
            np.zeros((0, 2), np.int64), none, np.zeros(b, np.int64), np.zeros(b, np.int64),
            none, np.zeros(0, np.float64), np.zeros(b, np.int64), np.zeros((b, 1), np.int64),
            np.zeros((b, 1), np.int64), np.zeros((0, 1), np.int64))
    return out, why


__all__ = ["EV_ADD", "EV_DELETE", "EV_EVICT", "EV_KEEP", "EV_KINDS", "EV_POD_DELETE",
           "EV_UPDATE", "I_NODE_ADD", "I_NODE_DELETE", "I_NODE_UPDATE", "I_POD_DELETE",
           "LocalEvents", "REJ_FIRST", "WHY_DELETED", "WHY_EVICTED", "run_local_events"]
