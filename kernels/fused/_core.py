"""Per-node scalar rules shared by the Numba CPU and Numba CUDA backends.

Plain Python on scalars and array rows, no NumPy calls: ``fused._numba``
compiles these function objects with ``njit`` and ``fused._cuda`` with
``cuda.jit(device=True)``.  Both execute this module's source in a fresh
namespace and replace each name by its compiled form, so the calls between
these functions resolve to compiled code on either target.

Integer semantics follow kube-scheduler (Go): ``tdiv`` truncates toward zero
where Python's ``//`` would floor.  The NumPy twin of every rule lives in
``filters.py`` / ``scores.py``; tests compare them.
"""

import math

from numba import int64, uint64

# Keep in step with kernels/layout.py (plain ints: device code has no globals
# of NumPy type).
MAX_NODE_SCORE = 100
R_UNSCHEDULABLE = 1
R_NODE_NAME = 2
R_TAINT = 4
R_ADDED_AFFINITY = 8
R_NODE_AFFINITY = 16
R_PREFILTER_NAMES = 32
R_PORTS = 64
R_TOO_MANY_PODS = 128
R_INVALID_ROW = 32768
INSUFFICIENT_SHIFT = 24
F_UNSCHEDULABLE = 1
F_NODE_NAME = 2
F_TAINT = 4
F_NODE_AFFINITY = 8
F_PORTS = 16
F_FIT = 32
RES_CPU = 0
RES_MEMORY = 1
RES_EPHEMERAL_STORAGE = 2
RES_PODS = 3
RK_NONZERO = 0
RK_NATIVE = 1
RK_SCALAR = 2
RK_SKIP = 3
OP_IN = 0
OP_NOT_IN = 1
OP_EXISTS = 2
OP_DOES_NOT_EXIST = 3
OP_GT = 4
OP_LT = 5
STRATEGY_LEAST = 0
STRATEGY_MOST = 1
STRATEGY_RATIO = 2
# A normalization mode beyond runtime/plugin.py's NORMALIZE_* (0 none, 1
# default, 2 reverse): InterPodAffinity's min-max over the scored rows, used
# where its raw score is a slot of the node-local batch kernels.
NORM_MINMAX = 3
MINMAX_BIG = 1 << 62


def tdiv(a, b):
    """Integer division truncating toward zero, as Go's ``/`` on int64."""
    q = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        return -q
    return q


def tie_rank(seed_mix, row, pods):
    """The tie rank of node ``row`` holding ``pods`` pods, in [0, 2**31):
    among the top-scored nodes a cycle takes the highest, the lower row on
    an equal rank (``fused.ties``: the rule and its NumPy twin).  Fewer
    pods rank higher (11 bits, 2,047 pods and more alike), then a seeded
    hash of (row, pods) (20 bits).  ``seed_mix`` = seed x
    0x9E3779B97F4A7C15 mod 2**64."""
    z = (uint64(seed_mix) + uint64(row) * uint64(0xD1B54A32D192ED03)
         + uint64(pods) * uint64(0x9E3779B97F4A7C15))
    z = (z ^ (z >> uint64(30))) * uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> uint64(27))) * uint64(0x94D049BB133111EB)
    z = z ^ (z >> uint64(31))
    few = 2047 - pods if pods < 2047 else 0
    return int64((few << 20) | int64(z >> uint64(44)))


def tied_position(ties, n_ties, rows, start, seed_mix, requested):
    """The position the tie rule takes among the tied positions
    ``ties[:n_ties]`` (evaluation order: position j is row
    ``rows[(start + j) % M]``): the highest ``tie_rank`` of the row with
    the pods it holds (``requested[row, RES_PODS]``), the lower row on an
    equal rank; -1 when ``n_ties`` is 0.  One pass, no array built: a
    cycle ranked on the host among thousands of equal nodes."""
    m = rows.shape[0]
    best = int64(-1)
    best_row = int64(-1)
    best_j = int64(-1)
    for x in range(n_ties):
        j = ties[x]
        p = start + j
        if p >= m:
            p -= m
        row = rows[p]
        r = tie_rank(seed_mix, row, requested[row, RES_PODS])
        if r > best or (r == best and row < best_row):
            best = r
            best_row = row
            best_j = j
    return best_j


def draw_index(seed_mix, attempt, n):
    """Which of ``n`` candidates (in evaluation order) a seeded uniform draw
    of attempt ``attempt`` takes: splitmix64 of seed x golden + attempt,
    mod n.  For policies that choose at random themselves (openb's
    Random), not for ties."""
    z = uint64(seed_mix) + uint64(attempt) + uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> uint64(30))) * uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> uint64(27))) * uint64(0x94D049BB133111EB)
    z = z ^ (z >> uint64(31))
    return int64(z % uint64(n))


def tie_key(total, rank):
    """A feasible node's order key: its total score, then its tie rank
    (``total`` < 2**32)."""
    return (total << 31) | rank


def popcount64(x):
    """Number of set bits of an int64 bitset word (clears the lowest bit per
    step; words hold a handful of bits, and this needs no unsigned type)."""
    n = 0
    while x != 0:
        x &= x - 1
        n += 1
    return n


def bits_intersect(row, mask):
    """True when a node's bitset row shares a bit with ``mask`` ([W] int64)."""
    for w in range(mask.shape[0]):
        if row[w] & mask[w]:
            return True
    return False


def bits_common_count(row, mask):
    """Number of bits a node's bitset row shares with ``mask``."""
    n = 0
    for w in range(mask.shape[0]):
        n += popcount64(row[w] & mask[w])
    return n


def requirement_matches(val, num, isnum, op, operand, vals, v0, v1):
    """One label requirement against one node's label (val -1 = absent)."""
    if op == OP_IN or op == OP_NOT_IN:
        found = False
        if val >= 0:
            for j in range(v0, v1):
                if vals[j] == val:
                    found = True
                    break
        return found if op == OP_IN else not found
    if op == OP_EXISTS:
        return val >= 0
    if op == OP_DOES_NOT_EXIST:
        return val < 0
    if op == OP_GT:
        return val >= 0 and isnum and num > operand
    if op == OP_LT:
        return val >= 0 and isnum and num < operand
    return False   # OP_INVALID


def term_matches(i, label_vals, label_nums, label_isnum, t,
                 term_offsets, req_key, req_op, req_num, val_offsets, vals):
    """Term t (an AND of requirements) on node row i; empty terms never match."""
    q0 = term_offsets[t]
    q1 = term_offsets[t + 1]
    if q0 == q1:
        return False
    for q in range(q0, q1):
        k = req_key[q]
        val = -1
        num = 0
        isnum = False
        if k >= 0:
            val = label_vals[i, k]
            num = label_nums[i, k]
            isnum = label_isnum[i, k]
        if not requirement_matches(val, num, isnum, req_op[q], req_num[q],
                                   vals, val_offsets[q], val_offsets[q + 1]):
            return False
    return True


def program_matches(i, label_vals, label_nums, label_isnum, t0, t1,
                    term_offsets, req_key, req_op, req_num, val_offsets, vals):
    """True when any of the terms t0..t1-1 matches node row i."""
    for t in range(t0, t1):
        if term_matches(i, label_vals, label_nums, label_isnum, t,
                        term_offsets, req_key, req_op, req_num, val_offsets, vals):
            return True
    return False


def program_weight(i, label_vals, label_nums, label_isnum, t0, t1, term_offsets,
                   term_weights, req_key, req_op, req_num, val_offsets, vals):
    """Sum of the weights of the terms t0..t1-1 that match node row i."""
    s = 0
    for t in range(t0, t1):
        if term_matches(i, label_vals, label_nums, label_isnum, t,
                        term_offsets, req_key, req_op, req_num, val_offsets, vals):
            s += term_weights[t]
    return s


def fit_reasons(i, allocatable, requested, request, requests_anything, fit_ignored):
    """NodeResourcesFit filter bits for row i (Too many pods, Insufficient r)."""
    bits = 0
    if requested[i, RES_PODS] + 1 > allocatable[i, RES_PODS]:
        bits |= R_TOO_MANY_PODS
    if not requests_anything:
        return bits
    for r in range(request.shape[0]):
        want = request[r]
        if r == RES_PODS or want <= 0 or fit_ignored[r]:
            continue
        if want > allocatable[i, r] - requested[i, r]:
            bits |= 1 << (INSUFFICIENT_SHIFT + r)
    return bits


def resource_pair(i, r, kind, use_requested, allocatable, requested,
                  nonzero_requested, request, nonzero_request):
    """(allocatable, requested incl. the pod) of one scoring resource, or
    (0, 0) when upstream skips it (scalar not requested by the pod, pods)."""
    if kind == RK_SKIP:
        return 0, 0
    if kind == RK_NONZERO and not use_requested:
        return allocatable[i, r], nonzero_requested[i, r] + nonzero_request[r]
    want = request[r]
    if kind == RK_SCALAR and want == 0:
        return 0, 0
    return allocatable[i, r], requested[i, r] + want


def broken_linear(p, shape_util, shape_score):
    """RequestedToCapacityRatio's piecewise-linear shape at utilization p."""
    n = shape_util.shape[0]
    for k in range(n):
        if p <= shape_util[k]:
            if k == 0:
                return shape_score[0]
            return shape_score[k - 1] + tdiv(
                (shape_score[k] - shape_score[k - 1]) * (p - shape_util[k - 1]),
                shape_util[k] - shape_util[k - 1])
    return shape_score[n - 1]


def fit_score(i, allocatable, requested, nonzero_requested, request, nonzero_request,
              strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score):
    """NodeResourcesFit score of row i (LeastAllocated, MostAllocated or
    RequestedToCapacityRatio), 0..100, upstream integer arithmetic."""
    total = 0
    weight_sum = 0
    for f in range(fit_res.shape[0]):
        alloc, req = resource_pair(i, fit_res[f], fit_kind[f], False, allocatable,
                                   requested, nonzero_requested, request, nonzero_request)
        if alloc == 0:
            continue
        w = fit_weights[f]
        if strategy == STRATEGY_LEAST:
            s = 0 if req > alloc else ((alloc - req) * MAX_NODE_SCORE) // alloc
        elif strategy == STRATEGY_MOST:
            s = (min(req, alloc) * MAX_NODE_SCORE) // alloc
        else:
            if req > alloc:
                s = broken_linear(100, shape_util, shape_score)
            else:
                s = broken_linear((req * 100) // alloc, shape_util, shape_score)
            if s <= 0:
                continue      # RTCR counts only resources that score above 0
        total += s * w
        weight_sum += w
    if weight_sum == 0:
        return 0
    if strategy == STRATEGY_RATIO:
        x = total / weight_sum            # float64, then round half away from 0
        r = math.floor(x)
        if x - r >= 0.5:
            r += 1
        return int(r)
    return total // weight_sum


def balanced_score(i, allocatable, requested, nonzero_requested, request,
                   nonzero_request, bal_res, bal_kind):
    """NodeResourcesBalancedAllocation score of row i: (1 - std of the
    requested fractions) * 100, float64 then truncated, as upstream."""
    n = 0
    total = 0.0
    f0 = 0.0
    f1 = 0.0
    for b in range(bal_res.shape[0]):
        alloc, req = resource_pair(i, bal_res[b], bal_kind[b], True, allocatable,
                                   requested, nonzero_requested, request, nonzero_request)
        if alloc == 0:
            continue
        f = req / alloc
        if f > 1.0:
            f = 1.0
        if n == 0:
            f0 = f
        elif n == 1:
            f1 = f
        total += f
        n += 1
    std = 0.0
    if n == 2:
        std = abs((f0 - f1) / 2)
    elif n > 2:
        mean = total / n
        acc = 0.0
        for b in range(bal_res.shape[0]):
            alloc, req = resource_pair(i, bal_res[b], bal_kind[b], True, allocatable,
                                       requested, nonzero_requested, request,
                                       nonzero_request)
            if alloc == 0:
                continue
            f = req / alloc
            if f > 1.0:
                f = 1.0
            acc += (f - mean) * (f - mean)
        std = math.sqrt(acc / n)
    return int((1.0 - std) * MAX_NODE_SCORE)


def image_score(i, image_bits, image_entries, image_scaled, image_min, image_max):
    """ImageLocality score of row i from the pod's (entry, scaled size) pairs."""
    s = 0
    for e in range(image_entries.shape[0]):
        ent = image_entries[e]
        if (image_bits[i, ent >> 6] >> (ent & 63)) & 1:
            s += image_scaled[e]
    if s < image_min:
        s = image_min
    elif s > image_max:
        s = image_max
    return tdiv(MAX_NODE_SCORE * (s - image_min), image_max - image_min)


def node_reasons(i, allocatable, requested, unschedulable, valid, label_vals,
                 label_nums, label_isnum, taint_bits, port_bits,
                 filter_flags, request, requests_anything, fit_ignored, node_name_row,
                 prefilter_rows, tolerates_unschedulable, taint_reject,
                 has_node_selector, has_required, has_added_required, program_terms,
                 term_offsets, req_key, req_op, req_num, val_offsets, vals,
                 port_conflicts):
    """Every enabled built-in filter on node row i, as a reason bitmask
    (0 = feasible).  All checks run, so ``explain`` can name every reason."""
    if not valid[i]:
        return R_INVALID_ROW
    bits = 0
    if prefilter_rows.shape[0] > 0 and not prefilter_rows[i]:
        bits |= R_PREFILTER_NAMES
    if filter_flags & F_UNSCHEDULABLE:
        if unschedulable[i] and not tolerates_unschedulable:
            bits |= R_UNSCHEDULABLE
    if filter_flags & F_NODE_NAME:
        if node_name_row == -2 or (node_name_row >= 0 and node_name_row != i):
            bits |= R_NODE_NAME
    if filter_flags & F_TAINT:
        if bits_intersect(taint_bits[i], taint_reject):
            bits |= R_TAINT
    if filter_flags & F_NODE_AFFINITY:
        if has_added_required and not program_matches(
                i, label_vals, label_nums, label_isnum, program_terms[2],
                program_terms[3], term_offsets, req_key, req_op, req_num,
                val_offsets, vals):
            bits |= R_ADDED_AFFINITY
        pod_ok = True
        if has_node_selector:
            pod_ok = program_matches(i, label_vals, label_nums, label_isnum,
                                     program_terms[0], program_terms[1], term_offsets,
                                     req_key, req_op, req_num, val_offsets, vals)
        if pod_ok and has_required:
            pod_ok = program_matches(i, label_vals, label_nums, label_isnum,
                                     program_terms[1], program_terms[2], term_offsets,
                                     req_key, req_op, req_num, val_offsets, vals)
        if not pod_ok:
            bits |= R_NODE_AFFINITY
    if filter_flags & F_PORTS:
        if bits_intersect(port_bits[i], port_conflicts):
            bits |= R_PORTS
    if filter_flags & F_FIT:
        bits |= fit_reasons(i, allocatable, requested, request, requests_anything,
                            fit_ignored)
    return bits


def node_raw_scores(i, j, raw_out, allocatable, requested, nonzero_requested,
                    label_vals, label_nums, label_isnum, taint_bits, image_bits,
                    score_flags, request, nonzero_request, taint_prefer, program_terms,
                    term_offsets, term_weights, req_key, req_op, req_num, val_offsets,
                    vals, strategy, fit_res, fit_kind, fit_weights, shape_util,
                    shape_score, bal_res, bal_kind, image_entries, image_scaled,
                    image_min, image_max):
    """Raw per-plugin scores of node row i into raw_out[j, slot] (slots in
    kernels/layout.py); disabled slots are left untouched."""
    if score_flags & 1:
        raw_out[j, 0] = fit_score(i, allocatable, requested, nonzero_requested,
                                  request, nonzero_request, strategy, fit_res,
                                  fit_kind, fit_weights, shape_util, shape_score)
    if score_flags & 2:
        raw_out[j, 1] = balanced_score(i, allocatable, requested, nonzero_requested,
                                       request, nonzero_request, bal_res, bal_kind)
    if score_flags & 4:
        raw_out[j, 2] = bits_common_count(taint_bits[i], taint_prefer)
    if score_flags & 8:
        raw_out[j, 3] = program_weight(i, label_vals, label_nums, label_isnum,
                                       program_terms[3], program_terms[4],
                                       term_offsets, term_weights, req_key, req_op,
                                       req_num, val_offsets, vals)
    if score_flags & 16:
        raw_out[j, 4] = image_score(i, image_bits, image_entries, image_scaled,
                                    image_min, image_max)


def scan_limit(reasons, num_to_find):
    """(rows processed, feasible rows found) when scanning reasons [M] in
    evaluation order stops at the ``num_to_find``-th feasible row, as
    kube-scheduler's percentageOfNodesToScore does (all M rows otherwise)."""
    m = reasons.shape[0]
    found = 0
    for j in range(m):
        if reasons[j] == 0:
            found += 1
            if found == num_to_find:
                return j + 1, found
    return m, found


def normalized(v, mode, hi):
    """DefaultNormalizeScore of raw score v given the maximum hi over the
    scored rows: mode 0 leaves v as is, 1 scales to [0, MAX_NODE_SCORE], 2 scales
    and reverses (all zero maxima give 0, or MAX_NODE_SCORE reversed)."""
    if mode == 0:
        return v
    if hi == 0:
        return MAX_NODE_SCORE if mode == 2 else 0
    v = (MAX_NODE_SCORE * v) // hi
    return MAX_NODE_SCORE - v if mode == 2 else v


def minmax_scaled(v, lo, span):
    """InterPodAffinity's NormalizeScore of raw score v over scored rows
    whose raw scores span [lo, lo + span]: int64(MAX_NODE_SCORE * (v - lo)
    / span) in float64, truncated (0 everywhere when span is 0)."""
    if span <= 0:
        return 0
    return int(math.trunc(float(MAX_NODE_SCORE) * (float(v - lo) / float(span))))


def slot_score(v, mode, hi, s, n_slots):
    """Slot s's normalized score of raw v under the extremes ``hi`` over the
    scored rows: ``normalized`` by the maximum hi[s], or, for a min-max
    slot (mode NORM_MINMAX), ``minmax_scaled`` between the minimum
    hi[n_slots + s] and hi[s] (such a caller's hi has 2 x n_slots entries)."""
    if mode == NORM_MINMAX:
        lo = hi[n_slots + s]
        return minmax_scaled(v, lo, hi[s] - lo)
    return normalized(v, mode, hi[s])


def start_extremes(active_slots, norm_mode, hi, cnt, n_slots):
    """Extremes before any row: maxima 0 (the default normalization counts
    from 0), a min-max slot's maximum below and minimum above every score;
    their counts 0."""
    for s in range(n_slots):
        hi[s] = 0
        cnt[s] = 0
        if active_slots[s] and norm_mode[s] == NORM_MINMAX:
            hi[s] = -MINMAX_BIG
            hi[n_slots + s] = MINMAX_BIG
            cnt[n_slots + s] = 0


def finalize_scores(reasons, scores, total, num_to_find, active_slots, norm_mode,
                    weights, ties_scratch):
    """Normalize, weigh, sum and pick the host, serially over the evaluated rows.

    reasons [M] from the filter pass (0 = feasible); scores [M, S] raw in,
    normalized out (feasible rows of active slots only); total [M] weighted
    sum (-1 for rows not scored); norm_mode [S] 0 none, 1 default, 2 reverse
    (DefaultNormalizeScore); weights [S]; ties_scratch [M] int64 receives
    the positions of the rows tied at the top total, in order.

    Rows are scanned in evaluation order and scanning stops at the
    ``num_to_find``-th feasible row, as kube-scheduler's
    percentageOfNodesToScore does.  Returns (number of tied top rows, rows
    processed, feasible rows found); the caller takes the tie rule among the ties.
    """
    m = reasons.shape[0]
    processed, found = scan_limit(reasons, num_to_find)
    n_slots = scores.shape[1]
    for s in range(n_slots):
        if not active_slots[s] or norm_mode[s] == 0:
            continue
        hi = 0
        for j in range(processed):
            if reasons[j] == 0 and scores[j, s] > hi:
                hi = scores[j, s]
        for j in range(processed):
            if reasons[j] != 0:
                continue
            scores[j, s] = normalized(scores[j, s], norm_mode[s], hi)
    best = -1
    n_ties = 0
    for j in range(m):
        if j >= processed or reasons[j] != 0:
            total[j] = -1
            continue
        t = 0
        for s in range(n_slots):
            if active_slots[s]:
                t += scores[j, s] * weights[s]
        total[j] = t
        if t > best:
            best = t
            n_ties = 0
        if t == best:
            ties_scratch[n_ties] = j
            n_ties += 1
    return n_ties, processed, found


def dirty_rows(row_version, n, seen, out):
    """Rows among the first n written after version ``seen`` into out; count."""
    k = 0
    for i in range(n):
        if row_version[i] > seen:
            out[k] = i
            k += 1
    return k


def logged_rows(log_rows, log_versions, length, floor, seen, row_version, cap, out):
    """The rows written after version ``seen`` from a write log
    (``source.WriteLog``: ``length`` entries of (row, version), versions
    non-decreasing, complete above ``floor``) into out, ascending, each row
    once (the entry whose version is still the row's ``row_version``): their
    count, or -1 when the log cannot say (``seen`` below ``floor``) or more
    than ``cap`` entries came after ``seen`` (a scan is cheaper)."""
    if seen < floor:
        return -1
    lo = 0
    hi = length
    while lo < hi:                      # the first entry after ``seen``
        mid = (lo + hi) // 2
        if log_versions[mid] > seen:
            hi = mid
        else:
            lo = mid + 1
    if length - lo > cap:
        return -1
    k = 0
    for j in range(lo, length):
        i = log_rows[j]
        if log_versions[j] == row_version[i]:
            # insertion into the ascending prefix (k <= cap, a few rows)
            at = k
            while at > 0 and out[at - 1] > i:
                out[at] = out[at - 1]
                at -= 1
            out[at] = i
            k += 1
    return k


def scan_stop(rows, start, reasons_by_row, num_to_find):
    """``scan_limit`` over results cached by node row, read in evaluation
    order (position j is row rows[(start + j) % M]): (rows processed,
    feasible found)."""
    m = rows.shape[0]
    found = 0
    for j in range(m):
        jj = start + j
        if jj >= m:
            jj -= m
        if reasons_by_row[rows[jj]] == 0:
            found += 1
            if found == num_to_find:
                return j + 1, found
    return m, found


def finalize_rows(rows, start, reasons_by_row, raw_by_row, num_to_find, active_slots,
                  norm_mode, weights, want_scores, out_scores, out_total, ties_scratch,
                  hi_scratch):
    """``finalize_scores`` over results cached by node row, read in evaluation
    order: position j is row rows[(start + j) % M].  The cache is not
    modified; weighted totals go to out_total [M] (-1 = not scored) and,
    when want_scores, every element of out_scores [M, S] is written as
    ``gather_rows`` + ``finalize_scores`` would leave it (normalized scores
    of active slots on scored rows, the cached raw value on other feasible
    rows and slots, 0 on infeasible rows): the caller reuses out_scores
    across cycles, so a slot left unwritten (a plugin skipped this cycle)
    would show an earlier cycle's score.  hi_scratch [S] receives each
    slot's maximum.  Returns (number of tied top positions in ties_scratch,
    rows processed, feasible found)."""
    m = rows.shape[0]
    n_slots = raw_by_row.shape[1]
    processed, found = scan_stop(rows, start, reasons_by_row, num_to_find)
    minmax = False
    for s in range(n_slots):
        hi_scratch[s] = 0
        if active_slots[s] and norm_mode[s] == NORM_MINMAX:
            minmax = True
            hi_scratch[s] = -MINMAX_BIG
            hi_scratch[n_slots + s] = MINMAX_BIG
    for j in range(processed):
        jj = start + j
        if jj >= m:
            jj -= m
        i = rows[jj]
        if reasons_by_row[i] != 0:
            continue
        for s in range(n_slots):
            if active_slots[s] and norm_mode[s] != 0 and raw_by_row[i, s] > hi_scratch[s]:
                hi_scratch[s] = raw_by_row[i, s]
            if minmax and active_slots[s] and norm_mode[s] == NORM_MINMAX and \
                    raw_by_row[i, s] < hi_scratch[n_slots + s]:
                hi_scratch[n_slots + s] = raw_by_row[i, s]
    best = -1
    n_ties = 0
    for j in range(m):
        if j >= processed and not want_scores:
            out_total[j] = -1
            continue
        jj = start + j
        if jj >= m:
            jj -= m
        i = rows[jj]
        if reasons_by_row[i] != 0:
            out_total[j] = -1
            if want_scores:
                for s in range(n_slots):
                    out_scores[j, s] = 0
            continue
        if j >= processed:
            out_total[j] = -1
            for s in range(n_slots):
                out_scores[j, s] = raw_by_row[i, s]
            continue
        t = 0
        for s in range(n_slots):
            if not active_slots[s]:
                if want_scores:
                    out_scores[j, s] = raw_by_row[i, s]
                continue
            v = slot_score(raw_by_row[i, s], norm_mode[s], hi_scratch, s, n_slots)
            if want_scores:
                out_scores[j, s] = v
            t += v * weights[s]
        out_total[j] = t
        if t > best:
            best = t
            n_ties = 0
        if t == best:
            ties_scratch[n_ties] = j
            n_ties += 1
    return n_ties, processed, found


# ---------------------------------------------------------------------------
# Incremental top selection (every node scored): a segment tree over node
# rows of each row's tie key (``tie_key(total, tie_rank)``, -1 infeasible;
# the max is the row the tie rule takes) keeps each cycle O(changed rows x
# log N) instead of O(N) while the normalization maxima stay put.
# ---------------------------------------------------------------------------

def row_total(i, reasons_by_row, raw_by_row, active_slots, norm_mode, weights, hi):
    """Weighted total of row i under the maxima ``hi`` (``slot_score``; -1
    when infeasible)."""
    if reasons_by_row[i] != 0:
        return -1
    t = 0
    n_slots = raw_by_row.shape[1]
    for s in range(n_slots):
        if not active_slots[s]:
            continue
        t += slot_score(raw_by_row[i, s], norm_mode[s], hi, s, n_slots) * weights[s]
    return t


def top_maxima(n, reasons_by_row, raw_by_row, active_slots, norm_mode, hi, hi_cnt):
    """Each normalized slot's maximum over the feasible rows and how many
    reach it into hi, hi_cnt [S] ([2S] with a min-max slot: its minimum and
    count at S + s); returns the feasible rows."""
    n_slots = raw_by_row.shape[1]
    start_extremes(active_slots, norm_mode, hi, hi_cnt, n_slots)
    feasible = 0
    for i in range(n):
        if reasons_by_row[i] != 0:
            continue
        feasible += 1
        for s in range(n_slots):
            if active_slots[s] and norm_mode[s] != 0:
                v = raw_by_row[i, s]
                if v > hi[s]:
                    hi[s] = v
                    hi_cnt[s] = 1
                elif v == hi[s]:
                    hi_cnt[s] += 1
                if norm_mode[s] == NORM_MINMAX:
                    lo = n_slots + s
                    if v < hi[lo]:
                        hi[lo] = v
                        hi_cnt[lo] = 1
                    elif v == hi[lo]:
                        hi_cnt[lo] += 1
    return feasible


def row_key(i, total, seed_mix, requested):
    """Row i's tie key for ``total`` (-1: infeasible) with the pods it holds
    now (``requested[i, RES_PODS]``)."""
    if total < 0:
        return -1
    return tie_key(total, tie_rank(seed_mix, i, requested[i, RES_PODS]))


def key_set(tkey, size, i, value):
    """Leaf i of a key tree [2 size] := value; its ancestors refreshed up to
    the first one that keeps its max."""
    p = size + i
    tkey[p] = value
    p >>= 1
    while p >= 1:
        v = max(tkey[2 * p], tkey[2 * p + 1])
        if tkey[p] == v:
            break
        tkey[p] = v
        p >>= 1


def key_pull_all(tkey, size):
    """Every inner node of a key tree from its leaves."""
    for p in range(size - 1, 0, -1):
        tkey[p] = max(tkey[2 * p], tkey[2 * p + 1])


def key_top_row(tkey, size):
    """The row of a key tree's largest leaf, the lowest row among equal
    ones (the tie rule's pick; meaningful when ``tkey[1]`` >= 0)."""
    p = 1
    while p < size:
        a = 2 * p
        p = a if tkey[a] == tkey[p] else a + 1
    return p - size


def rebuild_keys(n, reasons_by_row, raw_by_row, active_slots, norm_mode, weights, hi, hi_cnt,
                 total_by_row, seed_mix, requested, tkey, size):
    """Recompute maxima (``top_maxima``), totals [N] and the key tree tkey
    [2 size] (leaf i: ``row_key``); returns feasible rows."""
    feasible = top_maxima(n, reasons_by_row, raw_by_row, active_slots, norm_mode, hi, hi_cnt)
    for i in range(n):
        t = row_total(i, reasons_by_row, raw_by_row, active_slots, norm_mode, weights, hi)
        total_by_row[i] = t
        tkey[size + i] = row_key(i, t, seed_mix, requested)
    for i in range(n, size):
        tkey[size + i] = -1
    key_pull_all(tkey, size)
    return feasible


def fold_maxima(dirty, k, old_reasons, old_raw, reasons_by_row, raw_by_row, active_slots,
                norm_mode, hi, hi_cnt):
    """The normalization maxima after the k re-evaluated rows dirty[:k]
    (previous reasons/raw in old_reasons/old_raw [k], [k, S]): updates
    hi_cnt and returns the change in feasible rows, or -1000000000 when a
    maximum moved (every total changes: the caller rebuilds)."""
    n_slots = raw_by_row.shape[1]
    delta = 0
    for d in range(k):
        i = dirty[d]
        was = old_reasons[d] == 0
        now = reasons_by_row[i] == 0
        if was:
            delta -= 1
        if now:
            delta += 1
    for s in range(n_slots):
        if not active_slots[s] or norm_mode[s] == 0:
            continue
        if norm_mode[s] == NORM_MINMAX:
            if fold_extreme(dirty, k, old_reasons, old_raw, reasons_by_row, raw_by_row, s,
                            hi, hi_cnt, s, 1) or fold_extreme(
                                dirty, k, old_reasons, old_raw, reasons_by_row, raw_by_row, s,
                                hi, hi_cnt, n_slots + s, -1):
                return -1000000000
            continue
        cnt = hi_cnt[s]
        new_hi = -1
        new_at = 0
        for d in range(k):
            if old_reasons[d] == 0 and old_raw[d, s] == hi[s]:
                cnt -= 1
            i = dirty[d]
            if reasons_by_row[i] == 0:
                v = raw_by_row[i, s]
                if v > new_hi:
                    new_hi = v
                    new_at = 1
                elif v == new_hi:
                    new_at += 1
        if new_hi > hi[s]:
            return -1000000000
        if new_hi == hi[s]:
            cnt += new_at
        if cnt <= 0 and hi[s] != 0:
            return -1000000000
        hi_cnt[s] = cnt
    return delta


def fold_extreme(dirty, k, old_reasons, old_raw, reasons_by_row, raw_by_row, s, ext, cnt,
                 at, sign):
    """A min-max slot's extreme ``ext[at]`` (sign 1 its maximum, -1 its
    minimum; ``cnt[at]`` rows reach it) after the k re-evaluated rows
    dirty[:k]: True when it moved (a row beyond it, or none left at it),
    else its count updated."""
    c = cnt[at]
    e = ext[at]
    for d in range(k):
        if old_reasons[d] == 0 and old_raw[d, s] == e:
            c -= 1
        i = dirty[d]
        if reasons_by_row[i] == 0:
            v = raw_by_row[i, s]
            if v == e:
                c += 1
            elif (v - e) * sign > 0:
                return True
    # no feasible row before (the sentinel) and none now: nothing moved
    if c <= 0 and e != -sign * MINMAX_BIG:
        return True
    cnt[at] = c
    return False


def update_keys(dirty, k, old_reasons, old_raw, reasons_by_row, raw_by_row, active_slots,
                norm_mode, weights, hi, hi_cnt, total_by_row, seed_mix, requested, tkey, size):
    """The k re-evaluated rows dirty[:k] folded into maxima, totals and
    the key tree's leaves (their keys with the pods they
    hold now).  Returns the change in feasible rows, or -1000000000 when a
    normalization maximum moved (the caller rebuilds)."""
    delta = fold_maxima(dirty, k, old_reasons, old_raw, reasons_by_row, raw_by_row,
                        active_slots, norm_mode, hi, hi_cnt)
    if delta == -1000000000:
        return delta
    for d in range(k):
        i = dirty[d]
        t = row_total(i, reasons_by_row, raw_by_row, active_slots, norm_mode, weights, hi)
        total_by_row[i] = t
        if k * 16 > size:
            tkey[size + i] = row_key(i, t, seed_mix, requested)
        else:
            key_set(tkey, size, i, row_key(i, t, seed_mix, requested))
    if k * 16 > size:
        key_pull_all(tkey, size)
    return delta


# ---------------------------------------------------------------------------
# Per-domain rules of a compiled run (``kernels.domain_rules``: params
# columns bit, thresh, track_min, fail_absent, fail_above, fail_not_above,
# increment, n_domains, first_group), shared by the numba and cuda runs.
# ---------------------------------------------------------------------------

def rule_fails_count(r, s, params, thr):
    """Rule r's answer for a domain holding s counted pods."""
    if s > thr[r]:
        return params[r, 4] != 0
    return params[r, 5] != 0


def rule_fails_row(r, i, domp1, sums, params, thr):
    """Rule r's answer for node row i (by its domain; a row lacking the
    key fails when fail_absent)."""
    d1 = domp1[r, i]
    if d1 == 0:
        return params[r, 3] != 0
    return rule_fails_count(r, sums[r, d1 - 1], params, thr)


def rule_min(r, sums, present, params):
    """(least count over rule r's present domains or -1, domains at it)."""
    lo = -1
    cnt = 0
    for d in range(params[r, 7]):
        if present[r, d]:
            v = sums[r, d]
            if lo < 0 or v < lo:
                lo = v
                cnt = 1
            elif v == lo:
                cnt += 1
    return lo, cnt


def rule_thresholds(sums, present, params, thr, at_min):
    """Each rule's threshold (+ the least count where it tracks one)."""
    for r in range(params.shape[0]):
        thr[r] = params[r, 1]
        at_min[r] = 0
        if params[r, 2] != 0:
            lo, cnt = rule_min(r, sums, present, params)
            if lo >= 0:
                thr[r] += lo
                at_min[r] = cnt


def rule_count(r, d, sums, present, params, thr, at_min):
    """Count a placed pod in domain d of rule r, keeping its threshold
    (the least count moves only when the last domain at it grows);
    returns the threshold before."""
    old_thr = thr[r]
    sums[r, d] += 1
    if params[r, 2] != 0 and present[r, d] and sums[r, d] - 1 == old_thr - params[r, 1]:
        at_min[r] -= 1
        if at_min[r] == 0:
            lo, cnt = rule_min(r, sums, present, params)
            thr[r] = params[r, 1] + lo
            at_min[r] = cnt
    return old_thr


def rules_group_placed(params):
    """The first pod of a required-affinity group is placed: domains without
    a matching pod now fail, for every such rule."""
    for r in range(params.shape[0]):
        if params[r, 8] != 0:
            params[r, 8] = 0
            params[r, 5] = 1


def snapshot_rows(dirty, k, reasons_by_row, raw_by_row, old_reasons, old_raw):
    """Copy the cached results of rows dirty[:k] before they are recomputed."""
    for d in range(k):
        i = dirty[d]
        old_reasons[d] = reasons_by_row[i]
        for s in range(raw_by_row.shape[1]):
            old_raw[d, s] = raw_by_row[i, s]


def gather_rows(rows, start, reasons_by_row, raw_by_row, reasons_out, raw_out):
    """Cached results by node row -> evaluation order (position j is row
    rows[(start + j) % M]), as the positional fused pass leaves them: raw
    scores of infeasible rows are 0."""
    m = rows.shape[0]
    n_slots = raw_by_row.shape[1]
    for j in range(m):
        jj = start + j
        if jj >= m:
            jj -= m
        i = rows[jj]
        r = reasons_by_row[i]
        reasons_out[j] = r
        if r == 0:
            for s in range(n_slots):
                raw_out[j, s] = raw_by_row[i, s]
        else:
            for s in range(n_slots):
                raw_out[j, s] = 0


# ---------------------------------------------------------------------------
# Cycles with host (array) plugins on the per-row cache: the built-in slots'
# weighted, normalized sum is kept per row (``partial``) for given
# normalization maxima, so a cycle adds only the host plugins' slots.
# ---------------------------------------------------------------------------

def scan_mixed(rows, start, reasons, raw_by_row, raw_pos, from_pos, num_to_find,
               active_slots, norm_mode, hi_scratch):
    """Rows processed and feasible found (as ``finalize_scores`` scans), and
    each normalized active slot's maximum over the processed feasible rows
    into hi_scratch (raw_pos[j, s] when from_pos[s], else the cached row)."""
    m = rows.shape[0]
    n_slots = raw_by_row.shape[1]
    processed, found = scan_limit(reasons, num_to_find)
    for s in range(n_slots):
        hi_scratch[s] = 0
    for s in range(n_slots):
        if not active_slots[s] or norm_mode[s] == 0:
            continue
        h = 0
        if from_pos[s]:
            for j in range(processed):
                if reasons[j] == 0 and raw_pos[j, s] > h:
                    h = raw_pos[j, s]
        else:
            for j in range(processed):
                if reasons[j] != 0:
                    continue
                jj = start + j
                if jj >= m:
                    jj -= m
                v = raw_by_row[rows[jj], s]
                if v > h:
                    h = v
        hi_scratch[s] = h
    return processed, found


def partial_totals(dirty, k, raw_by_row, use_slot, norm_mode, weights, hi, out):
    """out[i] for the rows dirty[:k]: the weighted sum of the slots in
    use_slot, normalized under the maxima hi (as ``finalize_scores``)."""
    n_slots = raw_by_row.shape[1]
    for d in range(k):
        i = dirty[d]
        t = 0
        for s in range(n_slots):
            if not use_slot[s]:
                continue
            v = normalized(raw_by_row[i, s], norm_mode[s], hi[s])
            t += v * weights[s]
        out[i] = t


def finalize_partial(rows, start, reasons, partial, raw_pos, pos_slots, norm_mode, weights,
                     hi, processed, out_total, ties_scratch):
    """Totals in evaluation order: partial[row] plus the slots listed in
    pos_slots [P] read from raw_pos; -1 for rows not scored.  Returns the
    number of tied top positions written to ties_scratch."""
    m = rows.shape[0]
    n_pos = pos_slots.shape[0]
    best = -1
    n_ties = 0
    for j in range(m):
        if j >= processed or reasons[j] != 0:
            out_total[j] = -1
            continue
        jj = start + j
        if jj >= m:
            jj -= m
        t = partial[rows[jj]]
        for p in range(n_pos):
            s = pos_slots[p]
            v = normalized(raw_pos[j, s], norm_mode[s], hi[s])
            t += v * weights[s]
        out_total[j] = t
        if t > best:
            best = t
            n_ties = 0
        if t == best:
            ties_scratch[n_ties] = j
            n_ties += 1
    return n_ties


# ----------------------------------------------------------- dense run scores
# PodTopologySpread's ScheduleAnyway score and InterPodAffinity's score in a
# compiled run (``kernels.domain_rules`` packs their arrays): recomputed over
# the scanned feasible rows for each pod (their normalization, and the
# spread's per-constraint weights, depend on that set) where no score
# classes keep them (below).  The numba run and the device run both call
# these.

def go_round(x):
    """math.Round of Go: half away from zero."""
    t = float(int(x))
    frac = x - t
    if abs(frac) >= 0.5:
        if x > 0:
            t += 1.0
        elif x < 0:
            t -= 1.0
    return int(t)


def base_total(i, raw_by_row, active_slots, norm_mode, weights, hi, skip_slot):
    """Row ``i``'s weighted sum of the normalized active slots but ``skip_slot``."""
    t = 0
    for s in range(raw_by_row.shape[1]):
        if active_slots[s] and s != skip_slot:
            t += normalized(raw_by_row[i, s], norm_mode[s], hi[s]) * weights[s]
    return t


def spread_raw(i, domp1, sums, params, term_weights, require_all, n_terms):
    """Row ``i``'s raw spread score: per constraint, the matching pods in its
    domain times the constraint's weight (log(domains + 2)) plus its skew
    offset, summed and rounded."""
    acc = 0.0
    for c in range(n_terms):
        d1 = domp1[c, i]
        if d1 == 0 and not require_all:
            term = 0.0
        else:
            cnt = sums[c, d1 - 1] if d1 > 0 else 0
            term = float(cnt) * term_weights[c] + float(params[c, 1])
        acc = acc + term
    return go_round(acc)


def affinity_raw(i, domp1, sums, params, n_terms):
    """Row ``i``'s raw pod affinity score: each term's weight times the
    matching pods in the row's domain of its key."""
    r = 0
    for c in range(n_terms):
        d1 = domp1[c, i]
        if d1 > 0:
            r += params[c, 0] * sums[c, d1 - 1]
    return r


def dense_total(base, has_all, sp_raw, sp_lo, sp_hi, sp_on, sp_weight, af_raw, af_lo, af_span,
                af_weight):
    """A row's total: ``base`` (the other slots) plus InterPodAffinity's
    min-max normalized score and PodTopologySpread's (lower raw is better,
    normalized by the maximum; a row without every key gets none)."""
    t = base
    if af_span > 0:
        t += minmax_scaled(af_raw, af_lo, af_span) * af_weight
    if sp_on and has_all:
        if sp_hi == 0:
            t += MAX_NODE_SCORE * sp_weight
        else:
            t += ((MAX_NODE_SCORE * (sp_hi + sp_lo - sp_raw)) // sp_hi) * sp_weight
    return t


def count_placed(row, count_dom, sums, params, n_terms, counts_col):
    """A pod placed on ``row``: one more in the domain of each term that
    counts it (``params[c, counts_col]`` set: the spread's column 2, the
    affinity's column 1)."""
    for c in range(n_terms):
        if params[c, counts_col] != 0:
            d = count_dom[c, row]
            if d >= 0:
                sums[c, d] += 1



# ------------------------------------------------------------- score classes
# A compiled run with every node scored keeps rows in score classes: rows
# whose pod-to-pod terms read the same counts -- per spread or affinity term
# the row's domain id, or, for a term whose domains hold one row each
# (hostname), the row's own count; per class rule (a per-domain filter of
# few domains) the row's domain id -- and share ``has_all``.  A class's raw
# spread and affinity scores, hence its normalized part of the total, and
# its class rules' answer are one value; each class keeps a segment tree
# over node rows of its leaf-feasible members' tie keys of the other slots'
# total (``base``: ``row_key(i, base)``; -1 elsewhere; leaf-feasible: the
# built-in reasons and the per-row rules pass).  A class's term adds
# ``cterm << 31`` to each of its keys, so a pod's best key comes from the
# classes' roots (O(classes)) and the row the tie rule takes from a walk
# down one class's tree (O(log N)).  Each class also keeps the largest raw score of
# every slot over its leaf-feasible members and how many reach it: the
# normalization maxima over the feasible rows are those of the classes
# whose rules pass.
# Key columns: the C spread terms, the A affinity terms, has_all, then the
# class rules (``r_col[r]``: rule r's column, -1 for a per-row rule).

def class_key_into(i, mode, sp_domp1, sp_sums, n_sp, af_domp1, af_sums, n_af, has_all,
                   r_domp1, r_col, out):
    """Row i's class key into out [K]: per term its domain id + 1
    (``mode`` 0) or its own domain's count (mode 1; -1 without the key),
    1 when the row has every spread key, each class rule's domain id + 1."""
    for c in range(n_sp):
        d1 = sp_domp1[c, i]
        if mode[c] == 0:
            out[c] = d1
        else:
            out[c] = sp_sums[c, d1 - 1] if d1 > 0 else -1
    for c in range(n_af):
        d1 = af_domp1[c, i]
        if mode[n_sp + c] == 0:
            out[n_sp + c] = d1
        else:
            out[n_sp + c] = af_sums[c, d1 - 1] if d1 > 0 else -1
    out[n_sp + n_af] = 1 if has_all[i] else 0
    for r in range(r_col.shape[0]):
        if r_col[r] >= 0:
            out[r_col[r]] = r_domp1[r, i]


def class_lookup(key, ckey, cmembers, chw, cap, ctkey):
    """The class of ``key`` [K]: an existing one with members, else a free
    slot (no members; a slot beyond the high-water mark ``chw[0]`` gets its
    tree cleared), its key written; -1 when all ``cap`` slots are taken."""
    n_key = key.shape[0]
    free = -1
    for c in range(chw[0]):
        if cmembers[c] == 0:
            if free < 0:
                free = c
            continue
        same = True
        for x in range(n_key):
            if ckey[c, x] != key[x]:
                same = False
                break
        if same:
            return c
    if free < 0:
        if chw[0] >= cap:
            return -1
        free = chw[0]
        chw[0] += 1
        for p in range(ctkey.shape[1]):
            ctkey[free, p] = -1
    for x in range(n_key):
        ckey[free, x] = key[x]
    return free


def ctree_set(ctkey, c, size, i, value):
    """Class c's leaf i set to value, its ancestors refreshed up to the
    first one that keeps its max."""
    p = size + i
    ctkey[c, p] = value
    p >>= 1
    while p >= 1:
        v = max(ctkey[c, 2 * p], ctkey[c, 2 * p + 1])
        if ctkey[c, p] == v:
            break
        ctkey[c, p] = v
        p >>= 1


def ctree_top_row(ctkey, c, size):
    """The row of class c's largest leaf, the lowest row among equal ones."""
    p = 1
    while p < size:
        a = 2 * p
        p = a if ctkey[c, a] == ctkey[c, p] else a + 1
    return p - size


def class_sizes_add(i, step, sp_size_dom, sp_params, sp_has_all, n_sp, sd_cnt, sizes, counted):
    """Leaf-feasible row i enters (step 1) or leaves (-1) the spread's
    counted rows: counted[0] counts them, sd_cnt [C, K] per size domain,
    sizes [C] the distinct size domains held (non-hostname constraints).
    (A run with class rules has no spread terms: leaf-feasible rows are
    then the feasible ones wherever spread sizes are read.)"""
    if not sp_has_all[i]:
        return
    counted[0] += step
    for c in range(n_sp):
        if sp_params[c, 0] == 0:
            d = sp_size_dom[c, i]
            if step > 0:
                if sd_cnt[c, d] == 0:
                    sizes[c] += 1
                sd_cnt[c, d] += 1
            else:
                sd_cnt[c, d] -= 1
                if sd_cnt[c, d] == 0:
                    sizes[c] -= 1


def class_slots_add(c, i, raw_by_row, cshi, cscnt, cstale):
    """Leaf-feasible row i joins class c's slot maxima (a stale class is
    rescanned instead)."""
    if cstale[c] != 0:
        return
    for s in range(raw_by_row.shape[1]):
        v = raw_by_row[i, s]
        if cscnt[c, s] == 0 or v > cshi[c, s]:
            cshi[c, s] = v
            cscnt[c, s] = 1
        elif v == cshi[c, s]:
            cscnt[c, s] += 1


def class_slots_rescan(c, n, row_class, reasons_by_row, raw_by_row, cshi, cscnt, cstale):
    """Class c's slot maxima again from its leaf-feasible members."""
    for s in range(raw_by_row.shape[1]):
        cshi[c, s] = 0
        cscnt[c, s] = 0
    cstale[c] = 0
    for i in range(n):
        if row_class[i] == c and reasons_by_row[i] == 0:
            class_slots_add(c, i, raw_by_row, cshi, cscnt, cstale)


def class_rules_ok(c, ckey, r_col, r_sums, r_params, r_thr):
    """Whether class c's rows pass every class rule (``rule_fails_row`` on
    the domain in its key)."""
    for r in range(r_col.shape[0]):
        x = r_col[r]
        if x < 0:
            continue
        d1 = ckey[c, x]
        if d1 == 0:
            if r_params[r, 3] != 0:
                return False
        elif rule_fails_count(r, r_sums[r, d1 - 1], r_params, r_thr):
            return False
    return True


def row_rule_bits(i, domp1, sums, params, thr, r_col):
    """Row i's reason bits from the per-row rules (class rules left out)."""
    bits = 0
    for r in range(params.shape[0]):
        if r_col[r] < 0 and rule_fails_row(r, i, domp1, sums, params, thr):
            bits |= params[r, 0]
    return bits


def classes_usable(chw, cmembers, cfeas, ckey, cok, r_col, r_sums, r_params, r_thr):
    """cok [cap]: each class holds feasible rows now (members, leaf-feasible
    ones, its class rules pass)."""
    for c in range(chw):
        cok[c] = (cmembers[c] > 0 and cfeas[c] > 0
                  and class_rules_ok(c, ckey, r_col, r_sums, r_params, r_thr))


def classes_maxima(chw, cok, cshi, active_slots, norm_mode, out):
    """The normalization maxima over the feasible rows into out [S] (0 for
    slots not normalized); returns whether they differ from out's before."""
    moved = False
    for s in range(out.shape[0]):
        v = 0
        if active_slots[s] and norm_mode[s] != 0:
            for c in range(chw):
                if cok[c] and cshi[c, s] > v:
                    v = cshi[c, s]
        if v != out[s]:
            moved = True
            out[s] = v
    return moved


def classes_rebase(n, reasons_by_row, raw_by_row, active_slots, norm_mode, weights, hi,
                   skip_slot, base, row_class, chw, seed_mix, requested, ctkey, size):
    """Every row's base under the maxima ``hi`` and every class tree again
    (leaves: ``row_key`` of the base, the pods each row holds now)."""
    for c in range(chw):
        for p in range(2 * size):
            ctkey[c, p] = -1
    for i in range(n):
        b = base_total(i, raw_by_row, active_slots, norm_mode, weights, hi, skip_slot)
        base[i] = b
        if reasons_by_row[i] == 0:
            ctkey[row_class[i], size + i] = row_key(i, b, seed_mix, requested)
    for c in range(chw):
        for p in range(size - 1, 0, -1):
            ctkey[c, p] = max(ctkey[c, 2 * p], ctkey[c, 2 * p + 1])


def classes_build(n, reasons_by_row, raw_by_row, active_slots, norm_mode, weights, hi,
                  skip_slot, base, row_class, mode, sp_domp1, sp_sums, sp_size_dom, sp_params,
                  sp_has_all, n_sp, af_domp1, af_sums, n_af, r_domp1, r_sums, r_params, r_thr,
                  r_col, ckey, cmembers, cfeas, cok, cshi, cscnt, cstale, chw, seed_mix,
                  requested, ctkey, size, sd_cnt, sizes, counted, key):
    """Every row's class, base and leaf from scratch (``reasons_by_row``:
    the leaf reasons, built-in | per-row rules), the maxima ``hi`` over the
    feasible rows; False when more classes than the trees hold
    (``ckey.shape[0]``)."""
    cap = ckey.shape[0]
    for c in range(cap):
        cmembers[c] = 0
        cfeas[c] = 0
        cstale[c] = 0
        for s in range(cshi.shape[1]):
            cshi[c, s] = 0
            cscnt[c, s] = 0
    chw[0] = 0
    counted[0] = 0
    for c in range(sd_cnt.shape[0]):
        sizes[c] = 0
        for d in range(sd_cnt.shape[1]):
            sd_cnt[c, d] = 0
    for i in range(n):
        class_key_into(i, mode, sp_domp1, sp_sums, n_sp, af_domp1, af_sums, n_af, sp_has_all,
                       r_domp1, r_col, key)
        c = class_lookup(key, ckey, cmembers, chw, cap, ctkey)
        if c < 0:
            return False
        cmembers[c] += 1
        row_class[i] = c
        if reasons_by_row[i] == 0:
            cfeas[c] += 1
            class_slots_add(c, i, raw_by_row, cshi, cscnt, cstale)
            class_sizes_add(i, 1, sp_size_dom, sp_params, sp_has_all, n_sp, sd_cnt, sizes,
                            counted)
    classes_usable(chw[0], cmembers, cfeas, ckey, cok, r_col, r_sums, r_params, r_thr)
    for s in range(hi.shape[0]):
        hi[s] = -1
    classes_maxima(chw[0], cok, cshi, active_slots, norm_mode, hi)
    classes_rebase(n, reasons_by_row, raw_by_row, active_slots, norm_mode, weights, hi,
                   skip_slot, base, row_class, chw[0], seed_mix, requested, ctkey, size)
    return True


def class_move(i, x, old_reasons, old_raw, reasons_by_row, raw_by_row, active_slots, norm_mode,
               weights, hi, skip_slot, base, row_class, mode, sp_domp1, sp_sums, sp_size_dom,
               sp_params, sp_has_all, n_sp, af_domp1, af_sums, n_af, r_domp1, r_col, ckey,
               cmembers, cfeas, cshi, cscnt, cstale, chw, seed_mix, requested, ctkey, size,
               sd_cnt, sizes, counted, key):
    """Row i re-evaluated (its leaf reasons and raw scores before:
    old_reasons[x], old_raw[x]): its class, slot maxima, base and leaf
    follow; False when its new class finds no slot."""
    old = row_class[i]
    if old_reasons[x] == 0:
        cfeas[old] -= 1
        class_sizes_add(i, -1, sp_size_dom, sp_params, sp_has_all, n_sp, sd_cnt, sizes,
                        counted)
        if cfeas[old] == 0:
            cstale[old] = 0
            for s in range(cshi.shape[1]):
                cshi[old, s] = 0
                cscnt[old, s] = 0
        elif cstale[old] == 0:
            for s in range(cshi.shape[1]):
                if old_raw[x, s] == cshi[old, s]:
                    cscnt[old, s] -= 1
                    if cscnt[old, s] == 0:
                        cstale[old] = 1
    class_key_into(i, mode, sp_domp1, sp_sums, n_sp, af_domp1, af_sums, n_af, sp_has_all,
                   r_domp1, r_col, key)
    c = class_lookup(key, ckey, cmembers, chw, ckey.shape[0], ctkey)
    if c < 0:
        return False
    if c != old:
        ctree_set(ctkey, old, size, i, -1)
        cmembers[old] -= 1
        cmembers[c] += 1
        row_class[i] = c
    b = base_total(i, raw_by_row, active_slots, norm_mode, weights, hi, skip_slot)
    base[i] = b
    if reasons_by_row[i] == 0:
        ctree_set(ctkey, c, size, i, row_key(i, b, seed_mix, requested))
        if cfeas[c] == 0:
            cstale[c] = 0
            for s in range(cshi.shape[1]):
                cscnt[c, s] = 0
        cfeas[c] += 1
        class_slots_add(c, i, raw_by_row, cshi, cscnt, cstale)
        class_sizes_add(i, 1, sp_size_dom, sp_params, sp_has_all, n_sp, sd_cnt, sizes, counted)
    else:
        ctree_set(ctkey, c, size, i, -1)
    return True


def class_terms(chw, cok, ckey, mode, sp_sums, sp_params, term_weights, require_all, n_sp,
                af_sums, af_params, n_af, sp_on, sp_weight, af_weight, craw_sp, craw_af, cterm):
    """Each usable class's pod-to-pod part of the total into cterm [cap]
    (``dense_total`` over a zero base), normalized over the usable classes
    (``cok``) as the dense path normalizes over feasible rows."""
    lo = 0
    hi = 0
    seen = False
    af_lo = 0
    af_hi = 0
    af_seen = False
    k_all = n_sp + n_af
    for c in range(chw):
        if not cok[c]:
            continue
        if n_sp > 0 and ckey[c, k_all] != 0:
            r = class_spread_raw(c, ckey, mode, sp_sums, sp_params, term_weights, require_all,
                                 n_sp)
            craw_sp[c] = r
            if not seen:
                lo = r
                hi = r
                seen = True
            elif r < lo:
                lo = r
            elif r > hi:
                hi = r
        if n_af > 0:
            r = class_affinity_raw(c, ckey, mode, n_sp, af_sums, af_params, n_af)
            craw_af[c] = r
            if not af_seen:
                af_lo = r
                af_hi = r
                af_seen = True
            elif r < af_lo:
                af_lo = r
            elif r > af_hi:
                af_hi = r
    af_span = af_hi - af_lo if n_af > 0 else 0
    for c in range(chw):
        if not cok[c]:
            continue
        cterm[c] = dense_total(0, ckey[c, k_all] != 0, craw_sp[c], lo, hi, sp_on, sp_weight,
                               craw_af[c] if n_af > 0 else 0, af_lo, af_span, af_weight)


def class_spread_raw(c, ckey, mode, sp_sums, sp_params, term_weights, require_all, n_sp):
    """``spread_raw`` of the rows of class c, read from its key."""
    acc = 0.0
    for x in range(n_sp):
        v = ckey[c, x]
        if mode[x] == 0:
            absent = v == 0
            cnt = sp_sums[x, v - 1] if v > 0 else 0
        else:
            absent = v < 0
            cnt = v if v > 0 else 0
        if absent and not require_all:
            term = 0.0
        else:
            term = float(cnt) * term_weights[x] + float(sp_params[x, 1])
        acc = acc + term
    return go_round(acc)


def class_affinity_raw(c, ckey, mode, n_sp, af_sums, af_params, n_af):
    """``affinity_raw`` of the rows of class c, read from its key."""
    r = 0
    for x in range(n_af):
        v = ckey[c, n_sp + x]
        if mode[n_sp + x] == 0:
            if v > 0:
                r += af_params[x, 0] * af_sums[x, v - 1]
        elif v > 0:
            r += af_params[x, 0] * v
    return r
