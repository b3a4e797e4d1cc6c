"""A one-at-a-time cycle's finalize over the row cache, as the pieces one
thread of a block runs over its chunk of evaluation positions.

Plain scalar code compiled like ``fused._core`` on top of its compiled
rules (``slot_score``, ``tie_key``, ``tie_rank``, ``rule_fails_row``
resolve to the same target's): ``_cuda_cycle`` calls it from a one-block kernel, ``cycle`` from
a host twin that runs the chunks one after another, and from the numba
backend's one-thread scan that stops at the ``num_to_find``-th feasible row
(``scan_in_order`` then ``best_in_order``: the same answer).  The answer is the
numba backend's ``finalize_rows`` followed by the tie rule
(``ties.pick_tied`` among its tied rows): the same rows scanned, the same
maxima, the same totals, the same pick.

Evaluation position j is row rows[(start + j) % M]; thread t of T owns the
positions [t x C, (t + 1) x C) with C = ceil(M / T), so thread order is
evaluation order and a prefix count over the threads says which thread
holds the ``num_to_find``-th feasible row.

Slot parameters ``sparams`` [3, S] int64: active (0/1), normalization mode,
weight.  Extremes ``ext`` [2 S]: ext[s] the maximum of a normalized active
slot (from 0, or from -MINMAX_BIG for a min-max slot), ext[S + s] a
min-max slot's minimum negated (so both halves combine by a maximum);
``extremes_finish`` turns the second half into the minimum ``slot_score``
reads.  A tie key is ``tie_key(total, tie_rank(seed_mix, row, pods))``;
totals are >= 0 (normalized scores times non-negative weights), so -1
means "none".

Per-domain rules (``rl`` below: n_rules, r_domp1 [R, N], r_sums [R, D],
r_params [R, domain_rules.N_PARAMS], r_thr [>= R] int64; R = n_rules may
be 0, the arrays then at least one row each): a row is feasible when its
cached reasons are 0 and no rule fails it (``_core.rule_fails_row``, the
run kernel's test: a host filter such as PodTopologySpread's
DoNotSchedule skew answered on the device, ``domain_rules_cycle``).
"""

MINMAX = 3                  # fused._core.NORM_MINMAX
BIG = 1 << 62               # fused._core.MINMAX_BIG


def position_row(rows, start, j):
    """The node row at evaluation position j."""
    m = rows.shape[0]
    jj = start + j
    if jj >= m:
        jj -= m
    return rows[jj]


def row_feasible(i, reasons_by_row, n_rules, r_domp1, r_sums, r_params, r_thr):
    """Row i passes the fused filters (its cached reasons) and every rule."""
    if reasons_by_row[i] != 0:
        return False
    for r in range(n_rules):
        if rule_fails_row(r, i, r_domp1, r_sums, r_params, r_thr):  # noqa: F821
            return False
    return True


def chunk_feasible(rows, start, lo, hi, reasons_by_row, n_rules, r_domp1, r_sums, r_params,
                   r_thr):
    """Feasible rows at positions [lo, hi)."""
    c = 0
    for j in range(lo, hi):
        if row_feasible(position_row(rows, start, j), reasons_by_row, n_rules, r_domp1, r_sums,
                        r_params, r_thr):
            c += 1
    return c


def chunk_stop(rows, start, lo, hi, reasons_by_row, need, n_rules, r_domp1, r_sums, r_params,
               r_thr):
    """One past the position of the ``need``-th feasible row at positions
    [lo, hi) (need >= 1; hi when there are fewer)."""
    for j in range(lo, hi):
        if row_feasible(position_row(rows, start, j), reasons_by_row, n_rules, r_domp1, r_sums,
                        r_params, r_thr):
            need -= 1
            if need == 0:
                return j + 1
    return hi


def start_extremes(sparams, n_slots, ext):
    """``ext`` [2 S] before any row (``_core.start_extremes``'s values, a
    min-max slot's minimum negated)."""
    for s in range(n_slots):
        ext[s] = 0
        ext[n_slots + s] = 0
        if sparams[0, s] != 0 and sparams[1, s] == MINMAX:
            ext[s] = -BIG
            ext[n_slots + s] = -BIG


def chunk_extremes(rows, start, lo, stop, reasons_by_row, raw_by_row, sparams, ext, n_rules,
                   r_domp1, r_sums, r_params, r_thr):
    """The feasible rows at positions [lo, stop) folded into ``ext`` (as
    ``finalize_rows`` folds the scanned rows into its maxima)."""
    n_slots = raw_by_row.shape[1]
    for j in range(lo, stop):
        i = position_row(rows, start, j)
        if not row_feasible(i, reasons_by_row, n_rules, r_domp1, r_sums, r_params, r_thr):
            continue
        for s in range(n_slots):
            if sparams[0, s] == 0 or sparams[1, s] == 0:
                continue
            v = raw_by_row[i, s]
            if v > ext[s]:
                ext[s] = v
            if sparams[1, s] == MINMAX and -v > ext[n_slots + s]:
                ext[n_slots + s] = -v


def extremes_finish(sparams, n_slots, ext):
    """``ext`` combined over every chunk -> the ``hi`` ``slot_score`` reads
    (a min-max slot's minimum back to its sign)."""
    for s in range(n_slots):
        if sparams[0, s] != 0 and sparams[1, s] == MINMAX:
            ext[n_slots + s] = -ext[n_slots + s]


def row_total(i, raw_by_row, sparams, hi):
    """Weighted total of feasible row i under the extremes ``hi``
    (``finalize_rows``'s sum)."""
    n_slots = raw_by_row.shape[1]
    t = 0
    for s in range(n_slots):
        if sparams[0, s] != 0:
            v = slot_score(raw_by_row[i, s], sparams[1, s], hi, s, n_slots)  # noqa: F821
            t += v * sparams[2, s]
    return t


def chunk_best(rows, start, lo, stop, reasons_by_row, raw_by_row, sparams, hi, seed_mix,
               pods_src, pods_at, best, n_rules, r_domp1, r_sums, r_params, r_thr):
    """The best feasible row at positions [lo, stop): the largest tie key,
    the lower row on an equal key, into ``best`` [3] = (key, row, position)
    (key -1 when none).  ``pods_src[row, pods_at]``: the pods on a row."""
    best[0] = -1
    best[1] = -1
    best[2] = -1
    for j in range(lo, stop):
        i = position_row(rows, start, j)
        if not row_feasible(i, reasons_by_row, n_rules, r_domp1, r_sums, r_params, r_thr):
            continue
        t = row_total(i, raw_by_row, sparams, hi)
        key = tie_key(t, tie_rank(seed_mix, i, pods_src[i, pods_at]))  # noqa: F821
        if key > best[0] or (key == best[0] and i < best[1]):
            best[0] = key
            best[1] = i
            best[2] = j


def combine_best(best, other):
    """``other`` [3] folded into ``best`` [3]: the larger key, the lower row
    on an equal key."""
    if other[0] > best[0] or (other[0] == best[0] and other[0] >= 0 and other[1] < best[1]):
        best[0] = other[0]
        best[1] = other[1]
        best[2] = other[2]


def pick_by_chunks(rows, start, reasons_by_row, raw_by_row, num_to_find, sparams, seed_mix,
                   pods_src, pods_at, threads, ext, part, best, other, out, n_rules, r_domp1,
                   r_sums, r_params, r_thr):
    """The block's answer with its ``threads`` chunks run one after another
    (the host twin of ``_cuda_cycle.cycle_pick_kernel``; scratch ``ext``,
    ``part`` [2 S], ``best``, ``other`` [3]; the rules ``rl``): out [4] =
    (picked row or -1, rows processed, feasible found, the picked row's
    position or -1)."""
    m = rows.shape[0]
    n_slots = raw_by_row.shape[1]
    chunk = (m + threads - 1) // threads
    found = 0
    processed = m
    for t in range(threads):
        lo = min(m, t * chunk)
        hi = min(m, lo + chunk)
        c = chunk_feasible(rows, start, lo, hi, reasons_by_row, n_rules, r_domp1, r_sums,
                           r_params, r_thr)
        if num_to_find > 0 and found < num_to_find and found + c >= num_to_find:
            processed = chunk_stop(rows, start, lo, hi, reasons_by_row, num_to_find - found,
                                   n_rules, r_domp1, r_sums, r_params, r_thr)
        found += c
    if num_to_find > 0 and found >= num_to_find:
        found = num_to_find
    start_extremes(sparams, n_slots, ext)
    for t in range(threads):
        lo = min(m, t * chunk)
        start_extremes(sparams, n_slots, part)
        chunk_extremes(rows, start, lo, min(processed, lo + chunk), reasons_by_row, raw_by_row,
                       sparams, part, n_rules, r_domp1, r_sums, r_params, r_thr)
        for k in range(2 * n_slots):
            if part[k] > ext[k]:
                ext[k] = part[k]
    extremes_finish(sparams, n_slots, ext)
    best[0] = -1
    best[1] = -1
    best[2] = -1
    for t in range(threads):
        lo = min(m, t * chunk)
        chunk_best(rows, start, lo, min(processed, lo + chunk), reasons_by_row, raw_by_row,
                   sparams, ext, seed_mix, pods_src, pods_at, other, n_rules, r_domp1, r_sums,
                   r_params, r_thr)
        combine_best(best, other)
    out[0] = best[1]
    out[1] = processed
    out[2] = found
    out[3] = best[2]





def scan_in_order(rows, start, reasons_by_row, raw_by_row, num_to_find, sparams, ext, feas,
                  out, n_rules, r_domp1, r_sums, r_params, r_thr):
    """The first half of ``pick_by_chunks``'s answer from one thread that
    stops where the ``num_to_find``-th feasible row is: each row tested
    once (its cached reasons, then the rules) and the feasible positions
    kept in ``feas`` [>= M]; then, slot by slot (the inactive ones
    skipped), the extremes over those rows into ``ext`` [2 S] (finished
    for ``slot_score``); out[1], out[2] = rows processed, feasible found
    (no count of the rows past the stop).  The numba backend's cycle with
    per-domain rules."""
    m = rows.shape[0]
    n_slots = raw_by_row.shape[1]
    start_extremes(sparams, n_slots, ext)
    found = 0
    processed = m
    for j in range(m):
        if row_feasible(position_row(rows, start, j), reasons_by_row, n_rules, r_domp1, r_sums,
                        r_params, r_thr):
            feas[found] = j
            found += 1
            if found == num_to_find:
                processed = j + 1
                break
    for s in range(n_slots):
        if sparams[0, s] == 0 or sparams[1, s] == 0:
            continue
        hi = ext[s]
        lo = ext[n_slots + s]
        for f in range(found):
            v = raw_by_row[position_row(rows, start, feas[f]), s]
            if v > hi:
                hi = v
            if -v > lo:
                lo = -v
        ext[s] = hi
        if sparams[1, s] == MINMAX:
            ext[n_slots + s] = lo
    extremes_finish(sparams, n_slots, ext)
    out[1] = processed
    out[2] = found


def best_in_order(rows, start, feas, found, total_by_row, use_totals, raw_by_row, sparams, ext,
                  seed_mix, pods_src, pods_at, out):
    """The second half: among the ``found`` feasible positions ``feas``,
    the largest total (``total_by_row[row]`` when ``use_totals``, a cache
    kept under these extremes, else ``row_total`` under ``ext``), then the
    largest tie rank, then the lower row (the order of ``tie_key``; a rank
    is computed only for a row at the running largest total); out[0],
    out[3] = its row and position (-1, -1 when none)."""
    top = -1
    best_rank = -1
    best_row = -1
    best_j = -1
    for f in range(found):
        j = feas[f]
        i = position_row(rows, start, j)
        if use_totals:
            t = total_by_row[i]
        else:
            t = row_total(i, raw_by_row, sparams, ext)
        if t < top:
            continue
        rank = tie_rank(seed_mix, i, pods_src[i, pods_at])  # noqa: F821
        if t > top or rank > best_rank or (rank == best_rank and i < best_row):
            top = t
            best_rank = rank
            best_row = i
            best_j = j
    out[0] = best_row
    out[3] = best_j
