"""Raw per-plugin scores, normalization and host selection for all evaluated
nodes at once, written against the array namespace (NumPy or CuPy): the
NumPy twin of ``fused._core.node_raw_scores`` and ``finalize_scores``.

Shapes: rows [M] int64 node rows; score arrays [M] int64; raw [M, S] int64.
"""

from __future__ import annotations

from tensorsched.kernels import layout as L
from tensorsched.kernels._backend import array_namespace, popcount

from .filters import program_matches


def tdiv(a, b, *, xp):
    """Go's truncating integer division, elementwise."""
    q = xp.abs(a) // xp.abs(b)
    return xp.where((a < 0) != (b < 0), -q, q)


def resource_pair(cols, rows, q, r, kind, use_requested, *, xp):
    """([M] allocatable, [M] requested incl. the pod) of one scoring resource;
    zeros where upstream skips it."""
    m = rows.shape[0]
    zero = xp.zeros(m, dtype=xp.int64)
    if kind == L.RK_SKIP:
        return zero, zero
    if kind == L.RK_NONZERO and not use_requested:
        return cols.allocatable[rows, r], cols.nonzero_requested[rows, r] + int(q.nonzero_request[r])
    want = int(q.request[r])
    if kind == L.RK_SCALAR and want == 0:
        return zero, zero
    return cols.allocatable[rows, r], cols.requested[rows, r] + want


def broken_linear(p, util, score, *, xp):
    """RequestedToCapacityRatio shape at utilizations p ([M] int64)."""
    out = xp.full(p.shape, int(score[-1]), dtype=xp.int64)
    done = xp.zeros(p.shape, dtype=bool)
    for k in range(util.shape[0]):
        hit = (p <= int(util[k])) & ~done
        if k == 0:
            val = xp.full(p.shape, int(score[0]), dtype=xp.int64)
        else:
            val = int(score[k - 1]) + tdiv((int(score[k]) - int(score[k - 1])) * (p - int(util[k - 1])),
                                           xp.int64(int(util[k]) - int(util[k - 1])), xp=xp)
        out = xp.where(hit, val, out)
        done |= hit
    return out


def fit_score(cols, rows, q, *, xp):
    """NodeResourcesFit score, [M] int64 in 0..100."""
    m = rows.shape[0]
    total = xp.zeros(m, dtype=xp.int64)
    wsum = xp.zeros(m, dtype=xp.int64)
    for f in range(q.fit_res.shape[0]):
        alloc, req = resource_pair(cols, rows, q, int(q.fit_res[f]), int(q.fit_kind[f]), False, xp=xp)
        counted = alloc != 0
        safe = xp.where(counted, alloc, 1)
        w = int(q.fit_weights[f])
        if q.fit_strategy == L.STRATEGY_LEAST:
            s = xp.where(req > alloc, 0, ((alloc - req) * L.MAX_NODE_SCORE) // safe)
        elif q.fit_strategy == L.STRATEGY_MOST:
            s = (xp.minimum(req, alloc) * L.MAX_NODE_SCORE) // safe
        else:
            util = xp.where(req > alloc, 100, (req * 100) // safe)
            s = broken_linear(util, q.shape_util, q.shape_score, xp=xp)
            counted &= s > 0
        total += xp.where(counted, s * w, 0)
        wsum += xp.where(counted, w, 0)
    safe_w = xp.where(wsum == 0, 1, wsum)
    if q.fit_strategy == L.STRATEGY_RATIO:
        x = total / safe_w
        r = xp.floor(x)
        out = (r + (x - r >= 0.5)).astype(xp.int64)
    else:
        out = total // safe_w
    return xp.where(wsum == 0, 0, out)


def balanced_score(cols, rows, q, *, xp):
    """NodeResourcesBalancedAllocation score, [M] int64."""
    m = rows.shape[0]
    fracs, counted = [], []
    for b in range(q.bal_res.shape[0]):
        alloc, req = resource_pair(cols, rows, q, int(q.bal_res[b]), int(q.bal_kind[b]), True, xp=xp)
        ok = alloc != 0
        f = xp.minimum(req / xp.where(ok, alloc, 1), 1.0)
        fracs.append(f)
        counted.append(ok)
    n = xp.zeros(m, dtype=xp.int64)
    total = xp.zeros(m, dtype=xp.float64)
    f0 = xp.zeros(m, dtype=xp.float64)
    f1 = xp.zeros(m, dtype=xp.float64)
    for f, ok in zip(fracs, counted):
        f0 = xp.where(ok & (n == 0), f, f0)
        f1 = xp.where(ok & (n == 1), f, f1)
        total = xp.where(ok, total + f, total)
        n = n + ok
    mean = total / xp.where(n == 0, 1, n)
    acc = xp.zeros(m, dtype=xp.float64)
    for f, ok in zip(fracs, counted):
        acc = xp.where(ok, acc + (f - mean) * (f - mean), acc)
    std = xp.where(n == 2, xp.abs((f0 - f1) / 2),
                   xp.where(n > 2, xp.sqrt(acc / xp.where(n == 0, 1, n)), 0.0))
    return ((1.0 - std) * L.MAX_NODE_SCORE).astype(xp.int64)


def taint_count(cols, rows, q, *, xp):
    """TaintToleration raw score: untolerated PreferNoSchedule taints, [M]."""
    w = q.taint_prefer.shape[0]
    if not q.taint_prefer.any():          # host array: no device sync
        return xp.zeros(rows.shape[0], dtype=xp.int64)
    common = cols.taint_bits[rows][:, :w] & xp.asarray(q.taint_prefer)[None, :]
    return popcount(common, xp=xp).sum(axis=1)


def affinity_weight(cols, rows, q, *, xp):
    """NodeAffinity raw score: weight sum of matching preferred terms, [M]."""
    lv, ln, li = cols.label_vals[rows], cols.label_nums[rows], cols.label_isnum[rows]
    out = xp.zeros(rows.shape[0], dtype=xp.int64)
    for t in range(int(q.program_terms[3]), int(q.program_terms[4])):
        hit = program_matches(lv, ln, li, q.programs, t, t + 1, xp=xp)
        out += xp.where(hit, int(q.programs.term_weights[t]), 0)
    return out


def image_score(cols, rows, q, *, xp):
    """ImageLocality score, [M] int64 in 0..100."""
    s = xp.zeros(rows.shape[0], dtype=xp.int64)
    bits = cols.image_bits[rows]
    for e in range(q.image_entries.shape[0]):
        ent = int(q.image_entries[e])
        has = ((bits[:, ent >> 6] >> (ent & 63)) & 1) == 1
        s += xp.where(has, int(q.image_scaled[e]), 0)
    lo, hi = L.IMAGE_MIN_THRESHOLD, int(q.image_max)
    s = xp.where(s < lo, lo, xp.where(s > hi, hi, s))
    return tdiv(L.MAX_NODE_SCORE * (s - lo), xp.int64(hi - lo), xp=xp)


_SLOT_FUNCS = ((L.S_FIT, fit_score), (L.S_BALANCED, balanced_score),
               (L.S_TAINT, taint_count), (L.S_NODE_AFFINITY, affinity_weight),
               (L.S_IMAGE, image_score))


def raw_scores(cols, rows, q, raw, feasible, *, xp=None):
    """Fill raw[M, S] for feasible rows and enabled built-in slots."""
    xp = xp or array_namespace(cols.allocatable)
    for slot, fn in _SLOT_FUNCS:
        if q.score_flags & (1 << slot):
            raw[:, slot] = xp.where(feasible, fn(cols, rows, q, xp=xp), raw[:, slot])
    return raw


def finalize(reasons, scores, num_to_find, active_slots, norm_mode, weights, *, xp=None):
    """Array form of ``fused._core.finalize_scores``.

    Returns (scores normalized in place, total [M] (-1 where not scored),
    ties [T] positions tied at the top total in order, processed, found)."""
    xp = xp or array_namespace(reasons)
    m = reasons.shape[0]
    feasible = reasons == 0
    csum = xp.cumsum(feasible)
    found_all = int(csum[-1]) if m else 0
    if found_all >= num_to_find > 0:
        processed = int(xp.argmax(csum >= num_to_find)) + 1
    else:
        processed = m
    scored = feasible & (xp.arange(m) < processed)
    for s in range(scores.shape[1]):
        if not active_slots[s] or norm_mode[s] == 0:
            continue
        col = scores[:, s]
        hi = int(xp.max(xp.where(scored, col, 0))) if m else 0
        if hi == 0:
            new = xp.full(m, L.MAX_NODE_SCORE if norm_mode[s] == 2 else 0, dtype=xp.int64)
        else:
            v = (L.MAX_NODE_SCORE * col) // hi
            new = L.MAX_NODE_SCORE - v if norm_mode[s] == 2 else v
        scores[:, s] = xp.where(scored, new, col)
    total = xp.zeros(m, dtype=xp.int64)
    for s in range(scores.shape[1]):
        if active_slots[s]:
            total += scores[:, s] * int(weights[s])
    total = xp.where(scored, total, -1)
    if not bool(scored.any()):
        return scores, total, xp.zeros(0, dtype=xp.int64), processed, min(found_all, int(csum[processed - 1]) if m else 0)
    best = xp.max(total)
    ties = xp.flatnonzero(total == best)
    return scores, total, ties, processed, int(csum[processed - 1])
