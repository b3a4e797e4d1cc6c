"""Filter reasons for all evaluated nodes at once, written against the array
namespace (NumPy or CuPy): the NumPy twin of ``fused._core.node_reasons``.

Shapes: rows [M] int64 node rows; every function returns [M] arrays.
"""

from __future__ import annotations

from tensorsched.kernels import layout as L
from tensorsched.kernels._backend import array_namespace


def any_common_bit(bits, mask, *, xp):
    """[M] bool: the bitset rows ([M, W] int64) share a bit with mask [W]."""
    if mask.shape[0] == 0:
        return xp.zeros(bits.shape[0], dtype=bool)
    return ((bits[:, : mask.shape[0]] & mask[None, :]) != 0).any(axis=1)


def term_matches(lv, ln, lisnum, prog, t, *, xp):
    """[M] bool: selector term t of ``prog`` on the label rows lv/ln/lisnum."""
    q0, q1 = int(prog.term_offsets[t]), int(prog.term_offsets[t + 1])
    m = lv.shape[0]
    if q0 == q1:
        return xp.zeros(m, dtype=bool)
    ok = xp.ones(m, dtype=bool)
    for q in range(q0, q1):
        k, op = int(prog.req_key[q]), int(prog.req_op[q])
        if k >= 0:
            val, num, isnum = lv[:, k], ln[:, k], lisnum[:, k]
        else:
            val = xp.full(m, -1, dtype=lv.dtype)
            num = xp.zeros(m, dtype=ln.dtype)
            isnum = xp.zeros(m, dtype=bool)
        present = val >= 0
        if op in (L.OP_IN, L.OP_NOT_IN):
            v = prog.vals[int(prog.val_offsets[q]): int(prog.val_offsets[q + 1])]
            found = present & xp.isin(val, xp.asarray(v)) if v.shape[0] else xp.zeros(m, dtype=bool)
            ok &= found if op == L.OP_IN else ~found
        elif op == L.OP_EXISTS:
            ok &= present
        elif op == L.OP_DOES_NOT_EXIST:
            ok &= ~present
        elif op == L.OP_GT:
            ok &= present & isnum & (num > int(prog.req_num[q]))
        elif op == L.OP_LT:
            ok &= present & isnum & (num < int(prog.req_num[q]))
        else:
            ok &= False
    return ok


def program_matches(lv, ln, lisnum, prog, t0, t1, *, xp):
    """[M] bool: any of the terms t0..t1-1 matches."""
    out = xp.zeros(lv.shape[0], dtype=bool)
    for t in range(t0, t1):
        out |= term_matches(lv, ln, lisnum, prog, t, xp=xp)
    return out


def fit_reasons(alloc, used, q, *, xp):
    """[M] int64 NodeResourcesFit bits (Too many pods, Insufficient r)."""
    bits = xp.where(used[:, L.RES_PODS] + 1 > alloc[:, L.RES_PODS],
                    L.R_TOO_MANY_PODS, 0).astype(xp.int64)
    if not q.requests_anything:
        return bits
    for r in range(q.request.shape[0]):
        want = int(q.request[r])
        if r == L.RES_PODS or want <= 0 or bool(q.fit_ignored[r]):
            continue
        short = want > alloc[:, r] - used[:, r]
        bits |= xp.where(short, xp.int64(1) << (L.INSUFFICIENT_SHIFT + r), 0).astype(xp.int64)
    return bits


def node_reasons(cols: L.NodeColumns, rows, q: L.PodQuery, *, xp=None):
    """[M] int64 reason bitmask of every enabled built-in filter (0 = feasible)."""
    xp = xp or array_namespace(cols.allocatable)
    m = rows.shape[0]
    bits = xp.zeros(m, dtype=xp.int64)
    valid = cols.valid[rows]
    flags = q.filter_flags
    if q.prefilter_rows.shape[0]:
        bits |= xp.where(xp.asarray(q.prefilter_rows)[rows], 0, L.R_PREFILTER_NAMES)
    if flags & L.F_UNSCHEDULABLE and not q.tolerates_unschedulable:
        bits |= xp.where(cols.unschedulable[rows], L.R_UNSCHEDULABLE, 0)
    if flags & L.F_NODE_NAME and q.node_name_row != -1:
        bits |= xp.where(rows != q.node_name_row, L.R_NODE_NAME, 0)
    if flags & L.F_TAINT:
        bits |= xp.where(any_common_bit(cols.taint_bits[rows], xp.asarray(q.taint_reject), xp=xp),
                         L.R_TAINT, 0)
    if flags & L.F_NODE_AFFINITY:
        lv, ln, li = cols.label_vals[rows], cols.label_nums[rows], cols.label_isnum[rows]
        pt = [int(t) for t in q.program_terms]
        if q.has_added_required:
            ok = program_matches(lv, ln, li, q.programs, pt[2], pt[3], xp=xp)
            bits |= xp.where(ok, 0, L.R_ADDED_AFFINITY)
        ok = xp.ones(m, dtype=bool)
        if q.has_node_selector:
            ok &= program_matches(lv, ln, li, q.programs, pt[0], pt[1], xp=xp)
        if q.has_required:
            ok &= program_matches(lv, ln, li, q.programs, pt[1], pt[2], xp=xp)
        bits |= xp.where(ok, 0, L.R_NODE_AFFINITY)
    if flags & L.F_PORTS:
        bits |= xp.where(any_common_bit(cols.port_bits[rows], xp.asarray(q.port_conflicts), xp=xp),
                         L.R_PORTS, 0)
    if flags & L.F_FIT:
        bits |= fit_reasons(cols.allocatable[rows], cols.requested[rows], q, xp=xp)
    return xp.where(valid, bits, L.R_INVALID_ROW).astype(xp.int64)
