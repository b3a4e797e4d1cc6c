"""The node-local trace form with DefaultPreemption in its queue, the CPU
twin (``_local_preempt.run_local_preempt_cluster`` compiled with ``njit``,
one cluster per ``prange`` iteration of ``_local_preempt_driver``):
``run_local_preempt(p)`` answers a ``LocalPreempt`` (a ``LocalTrace`` and
the pods' priorities) with the ``TraceResult`` of ``local_cpu.
run_local_trace`` and each pod's preemption (``PreemptResult``).

Inputs beside the trace (per pod, the order of ``trace.batch.pod_cls``):
``prio`` [sum P] int64 the pod's priority; ``may`` [sum P] int64 1 when
it may preempt (its preemptionPolicy is not Never and its profile has
DefaultPreemption); ``krank`` [sum P] int64 its key's rank among its
cluster's pods (the victim table's slot order); ``pstart`` [sum P] int64
its ``status.startTime`` in ns (``START_NOW``: none); per cluster [B]
``pct`` / ``least`` int64: DefaultPreemption's minCandidateNodesPercentage
and minCandidateNodesAbsolute.  The manifests' bound pods are never
victims (the caller's rule: none has a priority below a pod that may
preempt).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from tensorsched.kernels._compile import compile_module

from . import _local_preempt, _local_preempt_driver
from .local_cpu import (
    LocalTrace,
    TraceResult,
    _trace_ns,
    empty_trace_result,
    numba_threads,
    trace_inputs,
    trace_profiles,
)

START_NOW = _local_preempt.START_NOW

_preempt_ns = compile_module(_local_preempt, njit, base=_trace_ns, options={"nogil": True},
                             cache=True)
_drivers = compile_module(_local_preempt_driver, njit, base=_preempt_ns,
                          options={"nogil": True, "parallel": True}, cache=True)
_run_all = _drivers["run_local_preempt_all"]


class LocalPreempt(NamedTuple):
    """A trace call with preemption (module doc)."""

    trace: LocalTrace
    prio: np.ndarray
    may: np.ndarray
    krank: np.ndarray
    pstart: np.ndarray
    pct: np.ndarray
    least: np.ndarray

    def check(self) -> None:
        """``trace.check`` and the preemption arrays' shapes; a ValueError
        naming the array."""
        self.trace.check()
        p = self.trace.batch.pod_cls.shape[0]
        b = self.trace.batch.n_clusters
        for name, shape in (("prio", (p,)), ("may", (p,)), ("krank", (p,)), ("pstart", (p,)),
                            ("pct", (b,)), ("least", (b,))):
            if np.shape(getattr(self, name)) != shape:
                raise ValueError(f"LocalPreempt.{name}: shape {np.shape(getattr(self, name))}, "
                                 f"expected {shape}")
        if (np.asarray(self.pct) < 0).any() or (np.asarray(self.least) < 0).any():
            raise ValueError("LocalPreempt.pct/least: >= 0")

    def inputs(self) -> tuple:
        """The preemption arrays as the kernels take them (contiguous int64)."""
        i64 = lambda x: np.ascontiguousarray(x, np.int64)   # noqa: E731
        return (i64(self.prio), i64(self.may), i64(self.krank), i64(self.pstart),
                i64(self.pct), i64(self.least))


def run_local_preempt(p: LocalPreempt, threads: int | None = None
                      ) -> tuple[TraceResult, np.ndarray]:
    """Every cluster of ``p`` (checked first) on ``threads`` cores
    (default: Numba's): the ``TraceResult`` and ``victim`` [sum P] int64,
    1 for each pod preempted (it left at its log entry)."""
    p.check()
    t = p.trace
    a = t.batch
    out = empty_trace_result(a.pod_cls.shape[0], a.n_clusters)
    victim = np.zeros(a.pod_cls.shape[0], np.int64)
    if a.n_clusters == 0:
        return out, victim
    pr = trace_profiles(t)
    i64 = lambda x: np.ascontiguousarray(x, np.int64)   # noqa: E731
    with numba_threads(threads):
        _run_all(*trace_inputs(t, pr), out.node, out.bind, out.tries, out.log_t,
                 out.log_pod, out.n_log, out.end, i64(pr.profile), i64(pr.n_fit),
                 i64(pr.n_shape), i64(pr.n_bal), *p.inputs(), victim)
    return out, victim
