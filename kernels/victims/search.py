"""DefaultPreemption's victim search (SelectVictimsOnNode) for many candidate
nodes in one kernel call, on three backends with identical answers:

* ``numpy``: array code over all candidate nodes at once, stepping through
  the reprieve order (one vectorized filter evaluation per step);
* ``numba``: ``victims._core.victims_node`` under ``njit``, ``prange`` over nodes;
* ``cuda``: the same core as a ``cuda.jit`` device function, one thread per node.

Inputs are the node columns, the preemptor's compiled ``PodQuery`` (its
built-in filters are what "the pod fits" means, see ``victims._core``), the
candidate rows in evaluation order, the preemptor's priority and a
``VictimPods`` table.  Output: ``VictimResult`` (see ``victims._core`` for
the meaning of every column).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tensorsched.kernels import layout as L
from tensorsched.kernels.fused import _core as fused_core
from tensorsched.kernels.fused import filters

from ._core import CODE_NO_VICTIMS, CODE_NONE_LEFT, PRIORITY_OFFSET, START_NOW

__all__ = [
    "CODE_NONE_LEFT",
    "CODE_NO_VICTIMS",
    "START_NOW",
    "STAT_CODE",
    "STAT_EARLIEST_START",
    "STAT_FILTER_CALLS",
    "STAT_N_VICTIMS",
    "STAT_N_VIOLATIONS",
    "STAT_PRIORITY_SUM",
    "STAT_TOP_PRIORITY",
    "VictimPods",
    "VictimResult",
    "fit_pods",
    "select_victims",
]

STAT_CODE = 0
STAT_N_VICTIMS = 1
STAT_N_VIOLATIONS = 2
STAT_FILTER_CALLS = 3
STAT_TOP_PRIORITY = 4
STAT_PRIORITY_SUM = 5
STAT_EARLIEST_START = 6
N_STATS = 7


class VictimPods(NamedTuple):
    """The bound pods per node row, C slots per row (slot order = pod key order).

    pod_count [N] int64; pod_prio, pod_start [N, C] int64; pod_req [N, C, R]
    int64; pod_ports [N, C, WP] int64; pod_pdb [N, C, WB] int64;
    pdb_allowed [P] int64 (P >= 1; unused entries are never referenced)."""

    pod_count: np.ndarray
    pod_prio: np.ndarray
    pod_start: np.ndarray
    pod_req: np.ndarray
    pod_ports: np.ndarray
    pod_pdb: np.ndarray
    pdb_allowed: np.ndarray


class VictimResult(NamedTuple):
    """stats [M, 7] int64 (STAT_* columns), victims [M, C] int64 slot ids."""

    stats: np.ndarray
    victims: np.ndarray


def filter_args(cols: L.NodeColumns, q: L.PodQuery) -> tuple:
    """The fused filter core's arguments (``node_reasons`` after ``i``)."""
    p = q.programs
    return (cols.allocatable, cols.requested, cols.unschedulable, cols.valid, cols.label_vals,
            cols.label_nums, cols.label_isnum, cols.taint_bits, cols.port_bits,
            np.int64(q.filter_flags), q.request, bool(q.requests_anything), q.fit_ignored,
            np.int64(q.node_name_row), q.prefilter_rows, bool(q.tolerates_unschedulable),
            q.taint_reject, bool(q.has_node_selector), bool(q.has_required),
            bool(q.has_added_required), q.program_terms, p.term_offsets, p.req_key, p.req_op,
            p.req_num, p.val_offsets, p.vals, q.port_conflicts)


def row_reasons(cols: L.NodeColumns, q: L.PodQuery, row: int) -> int:
    """The reason bits of node ``row`` alone (``filters.node_reasons``'s,
    0 = feasible) as an int64 value: the fused core's per-node rule
    (``fused._core.node_reasons``, the one the numba and cuda backends
    compile) run as plain Python on scalars, a few dozen element reads
    where the array twin pays a dozen NumPy calls on [1] arrays (a
    preemptor's one-row retry).  ``q``'s bitsets as wide as the node
    bitsets (``pad_query``)."""
    bits = int(fused_core.node_reasons(row, *filter_args(cols, q)))
    # Python's shift does not wrap: bit 63 (a 40th resource) reads as int64's sign
    return bits - (1 << 64) if bits >= 1 << 63 else bits


def _fit_width(mask, width):
    if mask.shape[0] == width:
        return mask
    out = np.zeros(width, np.int64)
    out[: min(width, mask.shape[0])] = mask[:width]
    return out


def pad_query(cols: L.NodeColumns, q: L.PodQuery) -> L.PodQuery:
    """The query's bitsets as wide as the node bitsets (tables may have
    grown); ``q`` itself when they are already (no copy of its ~50 fields:
    a preemptor's retry and its device search ask once each)."""
    if q.taint_reject.shape[0] == cols.taint_bits.shape[1] \
            and q.port_conflicts.shape[0] == cols.port_bits.shape[1]:
        return q
    return q._replace(taint_reject=_fit_width(q.taint_reject, cols.taint_bits.shape[1]),
                      port_conflicts=_fit_width(q.port_conflicts, cols.port_bits.shape[1]))


def _prepare(cols, q, pods):
    """Query bitsets as wide as the node bitsets; pod tables as wide as the
    node columns."""
    return pad_query(cols, q), fit_pods(cols, pods)


def fit_pods(cols: L.NodeColumns, pods: VictimPods) -> VictimPods:
    """``pods`` with request / port columns as wide as the node columns
    (resources or port words added since the table was built; the same
    table when nothing was)."""
    r = cols.requested.shape[1]
    wp = cols.port_bits.shape[1]
    if pods.pod_req.shape[2] != r or pods.pod_ports.shape[2] != wp:
        req = np.zeros(pods.pod_req.shape[:2] + (r,), np.int64)
        m = min(r, pods.pod_req.shape[2])
        req[:, :, :m] = pods.pod_req[:, :, :m]
        ports = np.zeros(pods.pod_ports.shape[:2] + (wp,), np.int64)
        m = min(wp, pods.pod_ports.shape[2])
        ports[:, :, :m] = pods.pod_ports[:, :, :m]
        pods = pods._replace(pod_req=req, pod_ports=ports)
    return pods


def _scratch(cols, rows, pods):
    n, r = cols.requested.shape
    m = rows.shape[0]
    c = max(pods.pod_prio.shape[1], 1)
    wp = cols.port_bits.shape[1]
    return (np.zeros((n, r), np.int64), np.zeros((n, wp), np.int64),
            np.zeros((n, wp), np.int64), np.zeros((m, c), np.int64),
            np.zeros((m, c), np.int64), np.zeros((m, pods.pdb_allowed.shape[0]), np.int64),
            np.zeros((m, c), np.int64), np.zeros((m, N_STATS), np.int64))


def select_victims(backend: str, cols: L.NodeColumns, q: L.PodQuery, rows: np.ndarray,
                   priority: int, pods: VictimPods) -> VictimResult:
    """Victims of the preemptor (query ``q``, ``priority``) on every node row
    of ``rows``; identical results on ``numpy``, ``numba`` and ``cuda``."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    q, pods = _prepare(cols, q, pods)
    if backend == "numpy":
        return _select_numpy(cols, q, rows, int(priority), pods)
    args = (rows, *filter_args(cols, q), np.int64(priority), *pods)
    work_req, work_ports, save_ports, order, flags, pdb_left, victims, stats = \
        _scratch(cols, rows, pods)
    if backend == "numba":
        from . import _numba as _victims_numba   # numba: compiled when first used
        _victims_numba.victims_pass(*args, work_req, work_ports, save_ports, order, flags,
                                    pdb_left, victims, stats)
        return VictimResult(stats, victims)
    if backend == "cuda":
        from numba import cuda

        from . import _cuda as _victims_cuda     # numba-cuda: only with the cuda backend
        stage = _victims_cuda.pack_stage(cols, q)
        head, size = _victims_cuda.work_layout(
            cols.requested.shape[0], rows.shape[0], cols.requested.shape[1],
            cols.port_bits.shape[1], victims.shape[1], pdb_left.shape[1], N_STATS)
        work = np.zeros(size, np.int64)
        work[:head.shape[0]] = head
        d_work = cuda.to_device(work)
        _victims_cuda.launch(rows.shape[0], cuda.to_device(rows.reshape(-1, 1)), 0,
                             int(priority), stage.packs,
                             stage.qbuf, stage.allocatable,
                             tuple(cuda.to_device(np.ascontiguousarray(a)) for a in pods[:6]),
                             cuda.to_device(np.ascontiguousarray(pods.pdb_allowed)), d_work)
        got = _victims_cuda.work_views(d_work.copy_to_host(), head)
        return VictimResult(got["stats"], got["victims"])
    raise ValueError(f"unknown backend {backend!r}")


# ---------------------------------------------------------------------------
# NumPy: every candidate node at once, one reprieve step at a time.
# ---------------------------------------------------------------------------

def _reasons_with(cols, q, rows, req_rows, port_rows):
    """Filter reasons of ``rows`` with their requested / port columns replaced."""
    req = cols.requested.copy()
    req[rows] = req_rows
    ports = cols.port_bits.copy()
    ports[rows] = port_rows
    return filters.node_reasons(cols._replace(requested=req, port_bits=ports), rows, q, xp=np)


def _pdb_violating(o_lower, o_pdb, allowed, m: int, c: int) -> np.ndarray:
    """[M, C] bool: the lower-priority pod at each importance position would
    violate a PDB, on running copies of disruptionsAllowed ([P] int64)."""
    left = np.broadcast_to(allowed, (m, allowed.shape[0])).copy()
    violating = np.zeros((m, c), bool)
    for a in range(c):
        active = o_lower[:, a]
        for p in range(allowed.shape[0]):
            member = active & (((o_pdb[:, a, p >> 6] >> (p & 63)) & 1) == 1)
            left[:, p] -= member
            violating[:, a] |= member & (left[:, p] < 0)
    return violating


def _victim_stats(stats, victims, order, is_victim, p_prio, p_start, k, fits0, reasons0,
                  n_viol, calls) -> None:
    """Write each row's victims (importance order) and ranking statistics."""
    m, c = is_victim.shape
    slot = np.arange(c)
    idx = np.arange(m)
    o_victim = np.take_along_axis(is_victim, order, axis=1)
    nv = o_victim.sum(axis=1)
    vpos = np.argsort(~o_victim, axis=1, kind="stable")
    victims[:] = np.where(slot[None, :] < nv[:, None], np.take_along_axis(order, vpos, axis=1), 0)
    first = victims[:, 0]
    top = np.where(nv > 0, p_prio[idx, first], 0)
    v_prio = np.take_along_axis(p_prio, victims, axis=1)
    v_start = np.take_along_axis(p_start, victims, axis=1)
    valid_v = slot[None, :] < nv[:, None]
    total = np.where(valid_v, v_prio + PRIORITY_OFFSET, 0).sum(axis=1)
    earliest = np.where(valid_v & (v_prio == top[:, None]), v_start, START_NOW).min(axis=1)
    code = np.where(k == 0, CODE_NO_VICTIMS,
                    np.where(~fits0, reasons0, np.where(nv == 0, CODE_NONE_LEFT, 0)))
    ok = code == 0
    stats[:, STAT_CODE] = code
    stats[:, STAT_N_VICTIMS] = np.where(ok, nv, 0)
    stats[:, STAT_N_VIOLATIONS] = np.where(ok, n_viol, 0)
    stats[:, STAT_FILTER_CALLS] = calls
    stats[:, STAT_TOP_PRIORITY] = np.where(ok, top, 0)
    stats[:, STAT_PRIORITY_SUM] = np.where(ok, total, 0)
    stats[:, STAT_EARLIEST_START] = np.where(ok, earliest, 0)
    victims[~ok] = 0


def _select_numpy(cols, q, rows, prio, pods) -> VictimResult:
    m = rows.shape[0]
    c = max(pods.pod_prio.shape[1], 1)
    stats = np.zeros((m, N_STATS), np.int64)
    victims = np.zeros((m, c), np.int64)
    if m == 0 or pods.pod_prio.shape[1] == 0:
        stats[:, STAT_CODE] = CODE_NO_VICTIMS
        return VictimResult(stats, victims)
    slot = np.arange(c)
    cnt = pods.pod_count[rows]
    present = slot[None, :] < cnt[:, None]
    p_prio = pods.pod_prio[rows]
    p_start = pods.pod_start[rows]
    p_req = pods.pod_req[rows]                       # [M, C, R]
    p_ports = pods.pod_ports[rows]                   # [M, C, WP]
    lower = present & (p_prio < prio)
    k = lower.sum(axis=1)
    work_req = cols.requested[rows] - (p_req * lower[:, :, None]).sum(axis=1)
    keep = present & ~lower
    work_ports = np.bitwise_or.reduce(np.where(keep[:, :, None], p_ports, 0), axis=1)
    reasons0 = _reasons_with(cols, q, rows, work_req, work_ports)
    # Importance order of the lower-priority pods (others sorted last).
    key_prio = np.where(lower, -p_prio, np.iinfo(np.int64).max)
    order = _lexsort_rows(key_prio, p_start, slot, m, c)
    o_lower = np.take_along_axis(lower, order, axis=1)
    o_pdb = np.take_along_axis(pods.pod_pdb[rows], order[:, :, None], axis=1)   # [M, C, WB]
    violating = _pdb_violating(o_lower, o_pdb, pods.pdb_allowed, m, c)
    # Reprieve order: violating ones first, then the rest, each by importance.
    rank = np.where(o_lower, np.where(violating, 0, 1), 2)
    perm = np.argsort(rank, axis=1, kind="stable")
    r_slot = np.take_along_axis(order, perm, axis=1)
    r_lower = np.take_along_axis(o_lower, perm, axis=1)
    r_viol = np.take_along_axis(violating, perm, axis=1)
    fits0 = reasons0 == 0
    is_victim = np.zeros((m, c), bool)               # by slot
    calls = np.where(k > 0, 1, 0)
    n_viol = np.zeros(m, np.int64)
    idx = np.arange(m)
    for a in range(c):
        step = r_lower[:, a] & fits0
        if not step.any():
            continue
        s = r_slot[:, a]
        trial_req = work_req + p_req[idx, s] * step[:, None]
        trial_ports = work_ports | np.where(step[:, None], p_ports[idx, s], 0)
        sub = np.flatnonzero(step)
        bits = _reasons_with(cols, q, rows[sub], trial_req[sub], trial_ports[sub])
        fits = np.zeros(m, bool)
        fits[sub] = bits == 0
        calls += step
        keep_it = step & fits
        work_req = np.where(keep_it[:, None], trial_req, work_req)
        work_ports = np.where(keep_it[:, None], trial_ports, work_ports)
        lost = step & ~fits
        is_victim[idx[lost], s[lost]] = True
        n_viol += lost & r_viol[:, a]
    _victim_stats(stats, victims, order, is_victim, p_prio, p_start, k, fits0, reasons0,
                  n_viol, calls)
    return VictimResult(stats, victims)


def _lexsort_rows(key_prio, start, slot, m, c):
    """Per row: argsort by (key_prio, start, slot) ascending."""
    keys = np.lexsort((np.broadcast_to(slot, (m, c)).ravel(), start.ravel(),
                       key_prio.ravel(), np.repeat(np.arange(m), c)))
    return (keys.reshape(m, c) - (np.arange(m) * c)[:, None]).astype(np.int64)
