"""FGD's scores from kept per-node, per-typical-shape fragmentation terms.

A node's fragmentation under the typical pods is ``sum_p freq[p] * term_p``
(``gpu.share``'s module doc): ``term_p`` is an integer (the node's free milli,
or the free milli of its GPUs too small for shape p) that depends on the
node's row and shape p only, never on the frequencies.  When FGD learns its
typical pods, every new pod moves the frequencies; keeping the terms makes
that a re-combination of integers already known, and only a node whose row
changed (or a shape new to the table) has its terms computed again.

Terms of one scored pod shape (cpu_nz, num, milli, mask) on node i are
``terms[i, v, col]`` (int32 [cap, V, C]): v = 0 the node as it is; v = 1 + g
after a share of GPU g (a share, ``num == 1`` and ``0 < milli < 1000``), or
v = 1 after the pod's GPUs taken by the simulator's Sub rule (anything else;
the CPU left lowered by ``cpu_nz`` in every v >= 1); col = a typical shape's
column (``tp_*`` [C] by column, a column never changes meaning).
``term_ver[i]`` is the node version the terms were computed at (-1 none),
``term_cols[i]`` how many columns are computed.  The current table is
``order`` [P] (columns, in the table's order) with ``freq`` [P]: the sum
runs in table order with the same float operations as ``node_frag`` /
``frag_np``, so the scores equal a full recompute's bit for bit.

Two versions with identical answers: ``score_rows`` (njit) and
``score_rows_np`` (NumPy).  Both return the raw scores at ``rows`` (-1 for a
node the pod does not fit) and fill in the terms they lacked.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import share as K

MILLI = K.MILLI
_node_fits = K.node_fits
_model_ok = K.model_ok
_sigmoid = K.sigmoid_score
_take_shared = K.core["take_shared"]


def width(g: int) -> int:
    """Variants ``v`` per node for a table of ``g`` GPU columns."""
    return 1 + max(g, 1)


def is_share(num: int, milli: int) -> bool:
    return num == 1 and 0 < milli < MILLI


@njit(cache=True, nogil=True)
def _term(count, model, left, cpu_left, c, n, m, mask):
    """``node_frag``'s integer term of one typical shape (c cpu, n GPUs of
    m milli, model mask) on one node state."""
    total = 0
    for g in range(count):
        total += left[g]
    if m <= 0 or not _model_ok(model, mask):
        return total
    fit = 0
    small = 0
    for g in range(count):
        if left[g] >= m:
            fit += 1
        else:
            small += left[g]
    if fit >= n and cpu_left >= c:
        return small
    return total


@njit(cache=True, nogil=True)
def _fill(i, count, model, left, cpu_left, cpu_nz, num, milli, tp_cpu, tp_num, tp_milli,
          tp_mask, lo, hi, terms, work):
    """Columns lo..hi-1 of node i's terms (every variant)."""
    share = num == 1 and milli > 0 and milli < MILLI
    for col in range(lo, hi):
        terms[i, 0, col] = _term(count, model, left, cpu_left, tp_cpu[col], tp_num[col],
                                 tp_milli[col], tp_mask[col])
    for g in range(count):
        work[g] = left[g]
    cl = cpu_left - cpu_nz
    if share:
        for g in range(count):
            if left[g] < milli:
                continue
            work[g] -= milli
            for col in range(lo, hi):
                terms[i, 1 + g, col] = _term(count, model, work, cl, tp_cpu[col], tp_num[col],
                                             tp_milli[col], tp_mask[col])
            work[g] += milli
        return
    if num > 0 and milli > 0:
        _take_shared(count, left, work, num, milli)
    for col in range(lo, hi):
        terms[i, 1, col] = _term(count, model, work, cl, tp_cpu[col], tp_num[col],
                                 tp_milli[col], tp_mask[col])


@njit(cache=True, nogil=True)
def _score_rows(rows, gpu_count, model, gpu_left, allocatable, requested, node_ver,
                cpu_nz, num, milli, mask, tp_cpu, tp_num, tp_milli, tp_mask, n_cols,
                order, freq, terms, term_ver, term_cols, out, work):
    share = num == 1 and milli > 0 and milli < MILLI
    for j in range(rows.shape[0]):
        i = rows[j]
        c = gpu_count[i]
        left = gpu_left[i]
        cpu_left = allocatable[i, 0] - requested[i, 0]
        if not _node_fits(c, model[i], left, cpu_left, 0, 0, 0, num, milli, mask):
            out[j] = -1
            continue
        lo = term_cols[i]
        if term_ver[i] != node_ver[i]:
            lo = 0
        if lo < n_cols:
            _fill(i, c, model[i], left, cpu_left, cpu_nz, num, milli, tp_cpu, tp_num, tp_milli,
                  tp_mask, lo, n_cols, terms, work)
            term_ver[i] = node_ver[i]
            term_cols[i] = n_cols
        before = 0.0
        for p in range(order.shape[0]):
            before += freq[p] * terms[i, 0, order[p]]
        if share:
            best = -1
            best_g = -1
            for g in range(c):
                if left[g] < milli:
                    continue
                after = 0.0
                for p in range(order.shape[0]):
                    after += freq[p] * terms[i, 1 + g, order[p]]
                s = _sigmoid(before, after)
                if best_g == -1 or s > best:
                    best = s
                    best_g = g
            out[j] = best
        else:
            after = 0.0
            for p in range(order.shape[0]):
                after += freq[p] * terms[i, 1, order[p]]
            out[j] = _sigmoid(before, after)


def score_rows(rows, gpu_count, model, gpu_left, allocatable, requested, node_ver,
               cpu_nz, num, milli, mask, tp_cpu, tp_num, tp_milli, tp_mask, n_cols,
               order, freq, terms, term_ver, term_cols):
    """FGD's raw scores (int64 [k], -1 = the pod does not fit) of the nodes
    ``rows`` (int64 [k]) for one pod shape, from the kept ``terms`` (see the
    module doc), computing the columns a node lacks (all of them when its
    version moved).  Node columns are the GPU table's full ones: gpu_count,
    model, node_ver [N]; gpu_left [N, G] milli; allocatable / requested
    [N, R] (column 0 cpu, millicores).  ``tp_*`` [C] by column (``n_cols``
    valid); ``order`` int64 [P] columns in table order, ``freq`` [P]."""
    out = np.empty(rows.shape[0], np.int64)
    _score_rows(rows, gpu_count, model, gpu_left, allocatable, requested, node_ver,
                cpu_nz, num, milli, mask, tp_cpu, tp_num, tp_milli, tp_mask, n_cols,
                order, freq, terms, term_ver, term_cols, out, np.empty(K.GPU_SLOTS, np.int64))
    return out


# ---------------------------------------------------------------------------
# NumPy version
# ---------------------------------------------------------------------------


def _terms_np(count, model, left, cpu_left, tp_cpu, tp_num, tp_milli, tp_mask):
    """[R, C] terms of node states (count [R], model [R], left [R, G],
    cpu_left [R]) for the typical columns given."""
    valid = np.arange(left.shape[1])[None, :] < count[:, None]
    lv = np.where(valid, left, 0)
    total = lv.sum(axis=1)
    out = np.empty((count.shape[0], tp_cpu.shape[0]), np.int64)
    for k in range(tp_cpu.shape[0]):
        m = int(tp_milli[k])
        if m <= 0:
            out[:, k] = total
            continue
        fit = ((lv >= m) & valid).sum(axis=1)
        small = np.where(lv < m, lv, 0).sum(axis=1)
        ok = K.model_ok_np(model, int(tp_mask[k])) & (fit >= tp_num[k]) & (cpu_left >= tp_cpu[k])
        out[:, k] = np.where(ok, small, total)
    return out


def _fill_np(rows, count, model, left, cpu_left, cpu_nz, num, milli, tp_cpu, tp_num, tp_milli,
             tp_mask, lo, hi, terms):
    """Columns lo..hi-1 of the terms of nodes ``rows`` (their columns given
    at those rows: count, model, left, cpu_left)."""
    cols = slice(lo, hi)
    tp = (tp_cpu[cols], tp_num[cols], tp_milli[cols], tp_mask[cols])
    terms[rows, 0, cols] = _terms_np(count, model, left, cpu_left, *tp)
    cl = cpu_left - cpu_nz
    if is_share(num, milli):
        for g in range(left.shape[1]):
            cand = (count > g) & (left[:, g] >= milli)
            if not cand.any():
                continue
            work = left[cand].copy()
            work[:, g] -= milli
            terms[rows[cand], 1 + g, cols] = _terms_np(count[cand], model[cand], work, cl[cand],
                                                       *tp)
        return
    work = left
    if num > 0 and milli > 0:
        work = left - np.where(K.pack_take_np(count, left, num, milli), milli, 0)
    terms[rows, 1, cols] = _terms_np(count, model, work, cl, *tp)


def score_rows_np(rows, gpu_count, model, gpu_left, allocatable, requested, node_ver,
                  cpu_nz, num, milli, mask, tp_cpu, tp_num, tp_milli, tp_mask, n_cols,
                  order, freq, terms, term_ver, term_cols):
    """NumPy twin of ``score_rows`` (same arguments, answers and terms)."""
    count, mdl, left = gpu_count[rows], model[rows], gpu_left[rows]
    cpu_left = (allocatable[rows, 0] - requested[rows, 0]).astype(np.int64, copy=False)
    ok = K.feasible_np(count, mdl, left, cpu_left, np.zeros(rows.shape[0], np.int64), 0, 0,
                       num, milli, mask)
    lo = np.where(term_ver[rows] != node_ver[rows], 0, term_cols[rows])
    need = ok & (lo < n_cols)
    if need.any():
        # columns from the lowest missing one: the others are computed again
        # to the same values (a node's terms depend on its row alone)
        nr = np.flatnonzero(need)
        _fill_np(rows[nr], count[nr], mdl[nr], left[nr], cpu_left[nr], cpu_nz, num, milli,
                 tp_cpu, tp_num, tp_milli, tp_mask, int(lo[nr].min()), n_cols, terms)
        term_ver[rows[nr]] = node_ver[rows[nr]]
        term_cols[rows[nr]] = n_cols
    fr = terms[rows]                                    # [k, V, C]
    frag = np.zeros(fr.shape[:2], np.float64)
    for p in range(order.shape[0]):
        frag += freq[p] * fr[:, :, order[p]].astype(np.float64)
    before = frag[:, 0]
    if is_share(num, milli):
        g = left.shape[1]
        cand = (np.arange(g)[None, :] < count[:, None]) & (left >= milli)
        sc = K.sigmoid_score_np(np.repeat(before, g), frag[:, 1:1 + g].reshape(-1))
        sc = np.where(cand, sc.reshape(-1, g), -1)
        s = sc.max(axis=1) if g else np.zeros(rows.shape[0], np.int64)
    else:
        s = K.sigmoid_score_np(before, frag[:, 1])
    return np.where(ok, s, -1).astype(np.int64)
