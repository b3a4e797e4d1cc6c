"""The node-local trace form with DefaultPreemption and timed node events
together, on the CPU twin (``_local_preempt_events.
run_local_preempt_events_cluster``, a ``prange`` over clusters:
``_local_preempt_events_driver``, compiled by ``local_events``, whose
form runs it without preemption).

``LocalPreemptEvents`` is a ``local_events.LocalEvents`` and a
``local_preempt.LocalPreempt`` on the same ``LocalTrace``: where a cluster
has bound pods of the preemption's rows the events' ``ev_used`` /
``ev_nz`` are not read (they leave one by one), and a pod delete or a drain's keep
may name cluster b's bound pod k as ``ev_bound`` P + k (P its queue pods).
``run_local_preempt_events`` answers a ``local_cpu.TraceResult`` (``node``
in local rows, the log as ``local_preempt``'s: two rows per queue pod, one
per bound pod, from ``local_preempt.log_start``), ``why`` and ``victim``
[sum (P + Bb)] (``vic_ptr``'s rows): how each pod left with its node
(``WHY_DELETED``, ``WHY_EVICTED``, also a Pod delete's; 0 otherwise), the
times each pod was preempted, and ``evicted_at`` [sum (P + Bb)] float64
its first eviction's time (seconds, NaN never; a victim with ``why`` 0
left at its log entry: its grace's end, ``evicted_at`` + the grace, or
its own departure before that).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .local_cpu import empty_trace_result, numba_threads, trace_inputs, trace_profiles
from .local_events import RUN_PREEMPT_EVENTS_ALL, LocalEvents
from .local_preempt import LocalPreempt, check_terminating, log_rows


class LocalPreemptEvents(NamedTuple):
    """A call with node events and preemption (module doc): ``events``
    and ``preempt`` share one ``trace``."""

    events: LocalEvents
    preempt: LocalPreempt

    def check(self) -> None:
        """Both parts' checks (a bound pod named by an event allowed); a
        ValueError naming the array."""
        if self.events.trace is not self.preempt.trace:
            raise ValueError("LocalPreemptEvents: events and preempt on one LocalTrace")
        self.preempt.check()
        a = self.preempt.trace.batch
        self.events.check(np.diff(self.preempt.vic_ptr) - np.diff(a.pod_ptr))

    def inputs(self) -> tuple:
        """The event arrays as the kernels take them (after the trace's
        outputs and profiles), then the preemption's."""
        ev = self.events
        i64 = lambda x: np.ascontiguousarray(x, np.int64)   # noqa: E731
        return (np.ascontiguousarray(ev.valid0, np.bool_), i64(ev.rej), int(ev.fit_interest),
                i64(ev.korder), i64(ev.ev_ptr), np.ascontiguousarray(ev.ev_t, np.float64),
                i64(ev.ev_kind), i64(ev.ev_node), i64(ev.ev_x), i64(ev.ev_find),
                i64(ev.ev_bound), i64(ev.ev_used), i64(ev.ev_nz))


def run_local_preempt_events(pe: LocalPreemptEvents, threads: int | None = None
                             ) -> tuple:
    """Every cluster of ``pe`` (checked first) on ``threads`` cores
    (default: Numba's): (``TraceResult``, ``why``, ``victim``,
    ``evicted_at``) (module doc)."""
    pe.check()
    p = pe.preempt
    t = p.trace
    a = t.batch
    n_vic = int(p.vic_ptr[-1])
    out = empty_trace_result(a.pod_cls.shape[0], a.n_clusters)
    out = out._replace(log_t=np.zeros(max(log_rows(p), 1), np.float64),
                       log_pod=np.zeros(max(log_rows(p), 1), np.int64))
    why = np.zeros(n_vic, np.int64)
    victim = np.zeros(n_vic, np.int64)
    evicted_at = np.full(n_vic, np.nan)
    if a.n_clusters == 0:
        return out, why, victim, evicted_at
    pr = trace_profiles(t)
    i64 = lambda x: np.ascontiguousarray(x, np.int64)   # noqa: E731
    with numba_threads(threads):
        over = RUN_PREEMPT_EVENTS_ALL(*trace_inputs(t, pr), out.node, out.bind, out.tries, why,
                                      out.log_t, out.log_pod, out.n_log, out.end,
                                      i64(pr.profile), i64(pr.n_fit), i64(pr.n_shape),
                                      i64(pr.n_bal), *pe.inputs(), *p.inputs(), victim,
                                      evicted_at, *p.pdb_inputs(), float(p.grace))
    check_terminating([over])
    return out, why, victim, evicted_at


__all__ = ["LocalPreemptEvents", "run_local_preempt_events"]
