"""The batched openb engine with timed node events (a scenario's node
steps: nodes added, cordoned, uncordoned, drained, deleted; and its pod
deletes), on the CPU
twin: ``_openb_events.run_events_cluster`` (the engine's rules, decision
and queue) compiled with ``njit``, one run per ``prange`` iteration
(``_openb_events_driver``); ``openb_events_cuda`` runs the same source on
the device.

A call's runs share one cluster and its node events (``NodeEvents``);
their pods, policies and seeds are a ``BatchArrays``' (its node sets are
not read: the rows are ``NodeEvents``'), each run's static scores of the
universe's nodes (OpenbTieRank: ``u_static`` [B, U]) and the pods the
scenario creates (``made`` [B, K]: their rows among the run's pods),
DefaultPreemption's inputs where runs preempt (``BatchPreempt``: the same
compiled function, a flag per run).  ``run_openb_events`` answers
``EventOutputs``; ``deletes_missed`` reads from them, per run, the first
Pod delete whose pod was gone before it (preempted, evicted by a drain,
deleted with its node, its duration over: where the Simulation stops
with NotFound).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from tensorsched.kernels._compile import compile_module

from . import _openb_events, _openb_events_driver
from .arrays import MAX_GPUS, BatchArrays
from .cpu import env_ns, loop_base, preempt_ns, run_by_run
from .preempt_arrays import BatchPreempt, check_terminating, termination_grace

EV_ADD, EV_UPDATE, EV_EVICT, EV_DELETE = (_openb_events.EV_ADD, _openb_events.EV_UPDATE,
                                          _openb_events.EV_EVICT, _openb_events.EV_DELETE)
EV_POD_DELETE = _openb_events.EV_POD_DELETE
EV_KINDS = (EV_ADD, EV_UPDATE, EV_EVICT, EV_DELETE, EV_POD_DELETE)
WHY_DELETED, WHY_EVICTED = _openb_events.WHY_DELETED, _openb_events.WHY_EVICTED
WHY_POD_DELETED = _openb_events.WHY_POD_DELETED
WHY_PREEMPTED = _openb_events.WHY_PREEMPTED
I_POD_DELETE, I_NODE_ADD, I_NODE_UPDATE, I_NODE_DELETE = (
    _openb_events.I_POD_DELETE, _openb_events.I_NODE_ADD, _openb_events.I_NODE_UPDATE,
    _openb_events.I_NODE_DELETE)

# the cluster loop's steps that run per attempt (split for the CUDA form: its
# thread 0 runs them, the block the pick and the victim search between them)
# inlined into the twin's loop, one body as before the split (the loop passes
# one argument by keyword so that Numba's inliner takes a call of more than 30
# arguments); no reference counting in this module's functions (``_nrt``
# off: they allocate nothing, their arrays live in the driver's frame): a
# step taking a hundred arrays counted each one's references in and out,
# which cost the twin a fifth of its time
_STEPS = ("events_open", "events_close", "preempt_waits")


def _njit_step(f, **options):
    """``njit``, inlining the loop's steps (``_STEPS``) at their call sites."""
    return njit(f, inline="always" if f.__name__ in _STEPS else "never", **options)


# DefaultPreemption's steps as ``cpu`` compiled them (called, not inlined:
# compiled once for both engines), under the node events' cluster function
# (off per run by a flag: one compiled variant)
_events_ns = compile_module(_openb_events, _njit_step, base=loop_base(env_ns, preempt_ns),
                            options={"nogil": True, "_nrt": False}, cache=True)
_run_all = compile_module(_openb_events_driver, njit, base=_events_ns,
                          options={"nogil": True, "parallel": True}, cache=True)["run_events_all"]


class NodeEvents(NamedTuple):
    """A cluster and its node events, as arrays: ``row0`` [N] int64 each
    local row's node at the start (a universe index; -1: the row is
    empty until a node is added there), ``cord0`` [N] int8 cordoned at
    the start; the universe's nodes [U] int64: ``u_gpu_count``,
    ``u_model`` (-1 none), ``u_cpu_cap`` (millicores), ``u_mem_cap`` (the
    pods' unit), ``u_pods_cap``; the events [E] in time order: ``ev_t``
    (seconds), ``ev_kind`` (``EV_KINDS``), ``ev_row`` (local row),
    ``ev_x`` (EV_ADD: the universe node; EV_POD_DELETE: the k-th pod the
    scenario creates, its row ``ev_row`` unread), ``ev_flag`` (EV_ADD,
    EV_UPDATE: cordoned after it), a time's EV_POD_DELETE events before
    its others; ``fit_interest`` / ``cordon_interest``
    the cluster events (``_queue``'s bits) NodeResourcesFit and
    GpuShareFit / NodeUnschedulable listen to; ``u_name`` [U] int64 each
    universe node's name as a number (a node added again under a removed
    node's name: that node's; None: every node its own), read where a
    removal ended a preemptor's nomination and its status still names
    the node (a termination grace above 0)."""

    row0: np.ndarray
    cord0: np.ndarray
    u_gpu_count: np.ndarray
    u_model: np.ndarray
    u_cpu_cap: np.ndarray
    u_mem_cap: np.ndarray
    u_pods_cap: np.ndarray
    ev_t: np.ndarray
    ev_kind: np.ndarray
    ev_row: np.ndarray
    ev_x: np.ndarray
    ev_flag: np.ndarray
    fit_interest: int
    cordon_interest: int
    u_name: np.ndarray | None = None

    @property
    def n_events(self) -> int:
        return int(np.shape(self.ev_t)[0])

    def check(self) -> None:
        """Shapes and ranges, else a ValueError naming the array."""
        n = np.shape(self.row0)[0]
        u = np.shape(self.u_gpu_count)[0]
        if np.shape(self.cord0) != (n,):
            raise ValueError(f"NodeEvents.cord0: shape {np.shape(self.cord0)}, expected ({n},)")
        for name in ("u_model", "u_cpu_cap", "u_mem_cap", "u_pods_cap"):
            if np.shape(getattr(self, name)) != (u,):
                raise ValueError(f"NodeEvents.{name}: shape {np.shape(getattr(self, name))}, "
                                 f"expected ({u},)")
        row0 = np.asarray(self.row0)
        if ((row0 < -1) | (row0 >= u)).any():
            raise ValueError(f"NodeEvents.row0: universe nodes 0..{u - 1} or -1")
        g = np.asarray(self.u_gpu_count)
        if ((g < 0) | (g > MAX_GPUS)).any():
            raise ValueError(f"NodeEvents.u_gpu_count: 0..{MAX_GPUS} GPUs a node")
        e = self.n_events
        for name in ("ev_kind", "ev_row", "ev_x", "ev_flag"):
            if np.shape(getattr(self, name)) != (e,):
                raise ValueError(f"NodeEvents.{name}: shape {np.shape(getattr(self, name))}, "
                                 f"expected ({e},)")
        t = np.asarray(self.ev_t, np.float64)
        if (~np.isfinite(t)).any() or (t < 0).any() or (np.diff(t) < 0).any():
            raise ValueError("NodeEvents.ev_t: finite seconds >= 0 in time order")
        if not np.isin(self.ev_kind, EV_KINDS).all():
            raise ValueError(f"NodeEvents.ev_kind: kinds {EV_KINDS}")
        if ((np.asarray(self.ev_row) < 0) | (np.asarray(self.ev_row) >= n)).any():
            raise ValueError(f"NodeEvents.ev_row: local rows 0..{n - 1}")
        kind = np.asarray(self.ev_kind)
        add = kind == EV_ADD
        x = np.asarray(self.ev_x)[add]
        if ((x < 0) | (x >= u)).any():
            raise ValueError(f"NodeEvents.ev_x: an EV_ADD's universe node 0..{u - 1}")
        if self.u_name is not None:
            nm = np.asarray(self.u_name)
            if nm.shape != (u,) or ((nm < 0) | (nm >= max(u, 1))).any():
                raise ValueError(f"NodeEvents.u_name: shape ({u},), numbers 0..{u - 1}")
        lead = kind == EV_POD_DELETE
        if (lead[1:] & ~lead[:-1] & (t[1:] == t[:-1])).any():
            raise ValueError("NodeEvents.ev_kind: a time's EV_POD_DELETE events come before "
                             "its other events")

    def gpu_slots(self) -> int:
        return max(1, int(np.max(self.u_gpu_count, initial=0)))

    def i64(self) -> tuple:
        """The arrays as the kernels take them (contiguous; ``cord0`` and
        ``ev_flag`` int8, ``ev_t`` float64)."""
        c = np.ascontiguousarray
        return (c(self.row0, np.int64), c(self.cord0, np.int8), c(self.u_gpu_count, np.int64),
                c(self.u_model, np.int64), c(self.u_cpu_cap, np.int64),
                c(self.u_mem_cap, np.int64), c(self.u_pods_cap, np.int64),
                c(self.ev_t, np.float64), c(self.ev_kind, np.int64), c(self.ev_row, np.int64),
                c(self.ev_x, np.int64), c(self.ev_flag, np.int8), int(self.fit_interest),
                int(self.cordon_interest), self.names_i64())

    def names_i64(self) -> np.ndarray:
        """``u_name`` as the kernels take it (None: 0 .. U - 1)."""
        u = int(np.shape(self.u_gpu_count)[0])
        if self.u_name is None:
            return np.arange(u, dtype=np.int64)
        return np.ascontiguousarray(self.u_name, np.int64)


class EventOutputs(NamedTuple):
    """Per pod (``BatchArrays``' events): ``node`` (local row, -1 never),
    ``gmask`` (its GPUs, bit g = GPU g), ``bind`` (seconds, NaN never),
    ``tries``, ``why`` (0, or how it left with its node: ``WHY_DELETED``,
    ``WHY_EVICTED``; by a scenario's delete: ``WHY_POD_DELETED``;
    preempted: ``WHY_PREEMPTED``, at its eviction, or with a termination
    grace when its grace ended on its node; a victim still terminating
    that left otherwise before keeps that way's), ``victim`` (the times
    DefaultPreemption evicted it, 0 never, however it left after); per
    run b its change log from ``2 * ev_off[b] + b * E``, ``n_log[b]``
    entries: ``log_t`` (seconds), ``log_pod`` (k bound, -1 - k left, P + e
    event e, after the pods it freed; P the run's pods), ``log_frag`` (GPU
    milli fragmented after it); ``frag0`` [B] at the start, ``end`` [B] the
    clock when nothing was left to do."""

    node: np.ndarray
    gmask: np.ndarray
    bind: np.ndarray
    tries: np.ndarray
    why: np.ndarray
    log_t: np.ndarray
    log_pod: np.ndarray
    log_frag: np.ndarray
    n_log: np.ndarray
    frag0: np.ndarray
    end: np.ndarray
    victim: np.ndarray

    @classmethod
    def empty(cls, n_pods: int, n_runs: int, n_events: int) -> EventOutputs:
        m = 2 * n_pods + n_runs * n_events
        i64, f64 = np.int64, np.float64
        return cls(np.full(n_pods, -1, i64), np.zeros(n_pods, i64),
                   np.full(n_pods, np.nan, f64), np.zeros(n_pods, i64), np.zeros(n_pods, i64),
                   np.zeros(m, f64), np.zeros(m, i64), np.zeros(m, f64), np.zeros(n_runs, i64),
                   np.zeros(n_runs, f64), np.zeros(n_runs, f64), np.zeros(n_pods, i64))

    def log(self, a: BatchArrays, b: int, n_events: int) -> tuple:
        """Run b's (log_t, log_pod, log_frag)."""
        lo = 2 * int(a.ev_off[b]) + b * n_events
        k = int(self.n_log[b])
        return self.log_t[lo:lo + k], self.log_pod[lo:lo + k], self.log_frag[lo:lo + k]


def deletes_missed(out: EventOutputs, a: BatchArrays, ev: NodeEvents,
                   made: np.ndarray) -> np.ndarray:
    """[B] per run the first ``EV_POD_DELETE`` event (an index into
    ``ev``'s events, their order the Simulation's) whose pod was gone
    before it, -1 none; ``made`` [B, K] as the run took it.  The
    Simulation stops there (NotFound).

    Read from ``out.why``: the delete of a pod pending or bound marks it
    ``WHY_POD_DELETED``, and nothing takes it after; a pod gone before
    its delete (the step is after its creation, and a pod is deleted once:
    ``check_steps``) keeps how it left: ``WHY_PREEMPTED``,
    ``WHY_EVICTED`` (a drain), ``WHY_DELETED`` (its node removed), or 0
    (its ``duration`` over: a departure at the delete's time comes after
    it, on the Simulation's agenda as in the kernel), the delete finding
    nothing."""
    b = a.n_runs
    kind = np.asarray(ev.ev_kind)
    dels = np.flatnonzero(kind == EV_POD_DELETE)
    first = np.full(b, -1, np.int64)
    if dels.shape[0] == 0 or b == 0:
        return first
    hit = np.asarray(out.why)[delete_pods(a, ev, made)[:, dels]] != WHY_POD_DELETED
    some = hit.any(axis=1)
    first[some] = dels[np.argmax(hit[some], axis=1)]
    return first


def delete_pods(a: BatchArrays, ev: NodeEvents, made: np.ndarray) -> np.ndarray:
    """[B, E] per run and event the run's pod an ``EV_POD_DELETE`` deletes
    (an index into ``a``'s pods; -1 at the other events); ``made`` [B, K]."""
    kind = np.asarray(ev.ev_kind)
    x = np.where(kind == EV_POD_DELETE, np.asarray(ev.ev_x, np.int64), 0)
    mk = np.asarray(made, np.int64).reshape(a.n_runs, -1)
    if mk.shape[1] == 0:
        return np.full((a.n_runs, kind.shape[0]), -1, np.int64)
    pods = np.asarray(a.ev_off, np.int64)[:, None] + mk[:, x]
    return np.where(kind == EV_POD_DELETE, pods, -1)


def run_scenario(a: BatchArrays, ev: NodeEvents, u_static: np.ndarray | None,
                 made: np.ndarray | None) -> tuple:
    """(``u_static`` [B, U], ``made`` [B, K]) as the kernels take them
    (None: zeros, no created pod), checked against ``a`` and ``ev``, else
    a ValueError naming the array."""
    b = a.n_runs
    u = int(np.shape(ev.u_gpu_count)[0])
    st = np.zeros((b, u), np.int64) if u_static is None else \
        np.ascontiguousarray(u_static, np.int64)
    if st.shape != (b, u):
        raise ValueError(f"u_static: shape {st.shape}, expected ({b}, {u})")
    if ((st < 0) | (st >= 1 << 31)).any():
        raise ValueError("u_static: static scores 0 .. 2**31 - 1")
    mk = np.zeros((b, 0), np.int64) if made is None else np.ascontiguousarray(made, np.int64)
    if mk.ndim != 2 or mk.shape[0] != b:
        raise ValueError(f"made: shape {mk.shape}, expected ({b}, K)")
    if ((mk < 0) | (mk >= a.ev_len[:, None])).any():
        raise ValueError("made: a pod index of its run")
    x = np.asarray(ev.ev_x)[np.asarray(ev.ev_kind) == EV_POD_DELETE]
    if ((x < 0) | (x >= mk.shape[1])).any():
        raise ValueError(f"NodeEvents.ev_x: an EV_POD_DELETE's created pod 0..{mk.shape[1] - 1}")
    return st, mk


def run_inputs(a: BatchArrays, ev: NodeEvents, u_static: np.ndarray | None = None,
               made: np.ndarray | None = None, preempt: BatchPreempt | None = None,
               grace: np.ndarray | None = None) -> tuple:
    """The arguments both forms take before the outputs (``run_scenario``;
    ``preempt`` None: no run preempts; ``grace`` [B] each run's termination
    grace in seconds, None: 0), checked."""
    f64 = np.float64
    st, mk = run_scenario(a, ev, u_static, made)
    pre = BatchPreempt.off(a.n_runs) if preempt is None else preempt
    pre.check(a.n_runs, a.cls.shape[0])
    grace = termination_grace(grace, a.n_runs)
    return (*ev.i64(), a.n_classes, a.c_cpu, a.c_mem, a.c_cpu_nz, a.c_num, a.c_milli, a.c_mask,
            a.n_typical, a.tp_cpu, a.tp_num, a.tp_milli, a.tp_mask, a.tp_freq, a.run_workload,
            a.policy, a.sel, a.seed_mix.astype(np.uint64), a.gpu_weight, st, mk,
            a.backoff0.astype(f64), a.backoff_max.astype(f64), a.max_unsched.astype(f64),
            a.ev_off, a.ev_len, a.cls, a.u, a.arrive.astype(f64), a.depart.astype(f64),
            a.duration.astype(f64), a.rank.astype(np.int64), *pre.inputs(), grace)


def run_openb_events(a: BatchArrays, ev: NodeEvents, threads: int | None = None,
                     u_static: np.ndarray | None = None,
                     made: np.ndarray | None = None,
                     preempt: BatchPreempt | None = None,
                     grace: np.ndarray | None = None) -> EventOutputs:
    """Every run of ``a`` (its pods, policy, seed; checked first) on the
    cluster and node events ``ev``, on ``threads`` cores (default:
    Numba's); ``u_static`` [B, U] each run's static score of each
    universe node (OpenbTieRank's weight times the node's rank; None:
    zeros); ``made`` [B, K] each run's pod index of the k-th pod the
    scenario creates (None: none); ``preempt`` DefaultPreemption's inputs
    (``preempt_arrays.BatchPreempt``; None: no run preempts; a victim's
    ``victim`` its evictions, ``why`` ``WHY_PREEMPTED`` when it left by preemption);
    ``grace`` [B] each run's termination grace in seconds (None: 0, the
    victims leave at once; above 0 they stay on their node, holding it,
    until their first eviction + grace: ``_openb_events``).  A
    RuntimeError where a run had more termination deadlines pending at
    once than it holds (``preempt_arrays.check_terminating``)."""
    a.check()
    ev.check()
    out = EventOutputs.empty(a.cls.shape[0], a.n_runs, ev.n_events)
    inputs = run_inputs(a, ev, u_static, made, preempt, grace)
    over = np.zeros(a.n_runs, np.int64)
    with run_by_run(threads):
        _run_all(*inputs, ev.gpu_slots(), *out, over)
    check_terminating(over)
    return out


__all__ = [
    "EV_ADD",
    "EV_DELETE",
    "EV_EVICT",
    "EV_KINDS",
    "EV_POD_DELETE",
    "EV_UPDATE",
    "I_NODE_ADD",
    "I_NODE_DELETE",
    "I_NODE_UPDATE",
    "I_POD_DELETE",
    "WHY_DELETED",
    "WHY_EVICTED",
    "WHY_POD_DELETED",
    "WHY_PREEMPTED",
    "EventOutputs",
    "delete_pods",
    "deletes_missed",
    "NodeEvents",
    "run_inputs",
    "run_scenario",
    "run_openb_events",
]
