"""The fused filter/score pass as a Numba CUDA kernel: one thread per node;
and compiled runs of alike pods as one block per run.

The device functions are ``fused._core`` compiled with
``cuda.jit(device=True)``; only this driver and its launcher are CUDA-specific.
Import this module only after ``_deps.cuda_unavailable_reason()`` said yes.
"""

from __future__ import annotations

import math
import warnings

from numba import cuda, int64, uint64

from tensorsched.kernels._compile import compile_module

from . import _core

THREADS_PER_BLOCK = 128

core = compile_module(_core, lambda f: cuda.jit(f, device=True))
node_reasons = core["node_reasons"]
node_raw_scores = core["node_raw_scores"]


@cuda.jit
def fused_pass_kernel(rows, allocatable, requested, nonzero_requested, unschedulable, valid,
                      label_vals, label_nums, label_isnum, taint_bits, image_bits, port_bits,
                      filter_flags, score_flags, request, nonzero_request, requests_anything,
                      fit_ignored, node_name_row, prefilter_rows, tolerates_unschedulable,
                      taint_reject, taint_prefer, has_node_selector, has_required,
                      has_added_required, program_terms, term_offsets, term_weights, req_key,
                      req_op, req_num, val_offsets, vals, port_conflicts, strategy, fit_res,
                      fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind,
                      image_entries, image_scaled, image_min, image_max, reasons_out, raw_out):
    j = cuda.grid(1)
    if j >= rows.shape[0]:
        return
    i = rows[j]
    r = node_reasons(i, allocatable, requested, unschedulable, valid, label_vals,
                     label_nums, label_isnum, taint_bits, port_bits, filter_flags,
                     request, requests_anything, fit_ignored, node_name_row,
                     prefilter_rows, tolerates_unschedulable, taint_reject,
                     has_node_selector, has_required, has_added_required,
                     program_terms, term_offsets, req_key, req_op, req_num,
                     val_offsets, vals, port_conflicts)
    reasons_out[j] = r
    if r == 0:
        node_raw_scores(i, j, raw_out, allocatable, requested, nonzero_requested,
                        label_vals, label_nums, label_isnum, taint_bits, image_bits,
                        score_flags, request, nonzero_request, taint_prefer,
                        program_terms, term_offsets, term_weights, req_key, req_op,
                        req_num, val_offsets, vals, strategy, fit_res, fit_kind,
                        fit_weights, shape_util, shape_score, bal_res, bal_kind,
                        image_entries, image_scaled, image_min, image_max)


def launch_fused_pass(n_rows: int, *args) -> None:
    """Run ``fused_pass_kernel`` over n_rows evaluated rows (ceil-divided grid)."""
    blocks = max(1, (n_rows + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK)
    fused_pass_kernel[blocks, THREADS_PER_BLOCK](*args)


# ---------------------------------------------------------------------------
# Compiled runs on the device: one block places a whole run of alike pods in
# one launch, each pod exactly as its own cycle would (``_numba``'s
# ``place_run_scan`` semantics, which with every node scored are also
# ``place_run``'s).  The block's threads split the evaluated positions into
# chunks; per pod they count feasible rows (percentageOfNodesToScore stop),
# take the normalization maxima, the top total and the ties in evaluation
# order; thread 0 draws the tie, accounts the pod on its row and recomputes
# that row of the device row cache.  Per-domain rules
# (``kernels.domain_rules``) are evaluated per row as the threads scan and
# counted by thread 0 after each placement.  The pod-to-pod scores
# (ScheduleAnyway spread, pod affinity weights) are recomputed per pod over
# the scanned feasible rows with ``_core``'s formulas, as the numba run
# does: each spread constraint's distinct domains counted by atomics (the
# first thread to stamp a domain for this pod counts it), the raw scores
# stored by position, their minima and maxima reduced by the block.

# The tie draw's arithmetic wraps mod 2**64 by design; under the CUDA
# simulator it runs as NumPy scalar operations (on the simulator's threads,
# so ``np.errstate`` cannot reach it), which warn on every wrap.
warnings.filterwarnings("ignore", r".*overflow encountered in scalar", RuntimeWarning,
                        module=__name__)

RUN_THREADS = 256           # the most threads a run block uses
MAX_RUN_SLOTS = 16          # score slots the block keeps maxima for

normalized = core["normalized"]
base_total = core["base_total"]
spread_raw = core["spread_raw"]
affinity_raw = core["affinity_raw"]
dense_total = core["dense_total"]
count_placed = core["count_placed"]
rule_fails_row = core["rule_fails_row"]
rule_thresholds = core["rule_thresholds"]
rule_count = core["rule_count"]
rules_group_placed = core["rules_group_placed"]


@cuda.jit(device=True)
def _tie_index(seed_mix, attempt, n):
    z = uint64(seed_mix) + uint64(attempt) + uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> uint64(30))) * uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> uint64(27))) * uint64(0x94D049BB133111EB)
    z = z ^ (z >> uint64(31))
    return int64(z % uint64(n))


@cuda.jit(device=True)
def _feasible(row, reasons_by_row, r_domp1, r_sums, r_params, r_thr):
    """The row passes the built-in filters and every per-domain rule
    (``kernels.domain_rules``; evaluated here, not kept per row)."""
    if reasons_by_row[row] != 0:
        return False
    for r in range(r_params.shape[0]):
        if rule_fails_row(r, row, r_domp1, r_sums, r_params, r_thr):
            return False
    return True


@cuda.jit(device=True)
def _rules_count(row, r_count_dom, r_sums, r_present, r_params, r_thr, r_at_min):
    """A pod placed on ``row``: counted in every rule that counts it (the
    numba run's ``rules_count`` without the flipped-row lists)."""
    for r in range(r_params.shape[0]):
        if r_params[r, 6] == 0:
            continue
        d = r_count_dom[r, row]
        if d < 0:
            continue
        if r_params[r, 8] != 0:
            rules_group_placed(r_params)
        rule_count(r, d, r_sums, r_present, r_params, r_thr, r_at_min)


@cuda.jit(device=True)
def _run_total(j, row, reasons_by_row, raw_by_row, active_slots, norm_mode, weights, hi0,
               r_domp1, r_sums, r_params, r_thr, skip_slot, dense, sp_has_all, sp_raw, dstat,
               sp_on, sp_w, af_raw, n_af, af_weight):
    """Position ``j`` (row ``row``)'s total for the pod at hand, -1 when it
    is not feasible; with the dense scores (``dense``) PodTopologySpread's
    and InterPodAffinity's normalized scores over the scanned rows
    (``dstat``: their minima and maxima) replace the spread slot."""
    if not _feasible(row, reasons_by_row, r_domp1, r_sums, r_params, r_thr):
        return -1
    t = base_total(row, raw_by_row, active_slots, norm_mode, weights, hi0, skip_slot)
    if dense:
        t = dense_total(t, sp_has_all[row], sp_raw[j], dstat[1], dstat[2], sp_on, sp_w,
                        af_raw[j] if n_af > 0 else 0, dstat[3],
                        dstat[4] - dstat[3] if n_af > 0 else 0, af_weight)
    return t


_BIG = 1 << 62


@cuda.jit
def place_run_kernel(count, seed_mix, attempt0, rows, start0, num_to_find, pod_request,
                     pod_nonzero, allocatable, requested, nonzero_requested, unschedulable,
                     valid, label_vals, label_nums, label_isnum, taint_bits, image_bits,
                     port_bits, filter_flags, score_flags, request, nonzero_request,
                     requests_anything, fit_ignored, node_name_row, prefilter_rows,
                     tolerates_unschedulable, taint_reject, taint_prefer, has_node_selector,
                     has_required, has_added_required, program_terms, term_offsets,
                     term_weights, req_key, req_op, req_num, val_offsets, vals, port_conflicts,
                     strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score, bal_res,
                     bal_kind, image_entries, image_scaled, image_min, image_max,
                     reasons_by_row, raw_by_row, active_slots, norm_mode, weights, out_rows,
                     out_meta, r_domp1, r_count_dom, r_sums, r_present, r_params, r_thr,
                     r_at_min, sp_domp1, sp_count_dom, sp_size_dom, sp_sums, sp_params,
                     sp_has_all, sp_meta, sp_marks, sp_sizes, sp_weights, sp_raw, af_domp1,
                     af_count_dom, af_sums, af_params, af_meta, af_raw):
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    m = rows.shape[0]
    n_slots = raw_by_row.shape[1]
    per_a = cuda.shared.array(RUN_THREADS, int64)
    per_b = cuda.shared.array(RUN_THREADS, int64)
    hi = cuda.shared.array((RUN_THREADS, MAX_RUN_SLOTS), int64)
    run = cuda.shared.array(4, int64)       # start, placed, stop, rows processed
    # the dense scores' per-pod figures: rows counted, spread min / max,
    # affinity min / max (over the scanned feasible rows)
    dstat = cuda.shared.array(5, int64)
    n_terms = sp_meta[2]
    n_af = af_meta[1]
    dense = n_terms > 0 or n_af > 0
    sp_slot = sp_meta[0]
    require_all = sp_meta[1] != 0
    sp_on = n_terms > 0 and active_slots[sp_slot]
    sp_w = weights[sp_slot] if sp_on else 0
    skip_slot = sp_slot if n_terms > 0 else -1
    chunk = (m + nt - 1) // nt
    lo = tid * chunk
    hi_pos = min(m, lo + chunk)
    if tid == 0:
        run[0] = start0
        run[1] = 0
        run[2] = 0
        rule_thresholds(r_sums, r_present, r_params, r_thr, r_at_min)
    cuda.syncthreads()
    for i in range(count):
        start = run[0]
        # feasible rows per chunk of positions -> where the scan stops
        c = 0
        for j in range(lo, hi_pos):
            jj = start + j
            if jj >= m:
                jj -= m
            if _feasible(rows[jj], reasons_by_row, r_domp1, r_sums, r_params, r_thr):
                c += 1
        per_a[tid] = c
        cuda.syncthreads()
        if tid == 0:
            processed = m
            acc = 0
            for t in range(nt):
                if acc + per_a[t] >= num_to_find:
                    need = num_to_find - acc
                    f = 0
                    for j in range(t * chunk, min(m, t * chunk + chunk)):
                        jj = start + j
                        if jj >= m:
                            jj -= m
                        if _feasible(rows[jj], reasons_by_row, r_domp1, r_sums, r_params,
                                     r_thr):
                            f += 1
                            if f == need:
                                processed = j + 1
                                break
                    break
                acc += per_a[t]
            run[3] = processed
        cuda.syncthreads()
        processed = run[3]
        stop = min(hi_pos, processed)
        # normalization maxima over the scanned feasible rows
        for s in range(n_slots):
            hi[tid, s] = 0
        for j in range(lo, stop):
            jj = start + j
            if jj >= m:
                jj -= m
            row = rows[jj]
            if not _feasible(row, reasons_by_row, r_domp1, r_sums, r_params, r_thr):
                continue
            for s in range(n_slots):
                if active_slots[s] and norm_mode[s] != 0 and raw_by_row[row, s] > hi[tid, s]:
                    hi[tid, s] = raw_by_row[row, s]
        cuda.syncthreads()
        for s in range(tid, n_slots, nt):
            v = hi[0, s]
            for t in range(1, nt):
                if hi[t, s] > v:
                    v = hi[t, s]
            hi[0, s] = v
        cuda.syncthreads()
        hi0 = hi[0]
        if dense:
            # the spread constraints' weights: log(domains counted + 2)
            if tid == 0:
                dstat[0] = 0
                for c in range(n_terms):
                    sp_sizes[c] = 0
            cuda.syncthreads()
            counted = 0
            for j in range(lo, stop if n_terms > 0 else lo):
                jj = start + j
                if jj >= m:
                    jj -= m
                row = rows[jj]
                if not (sp_has_all[row] and _feasible(row, reasons_by_row, r_domp1, r_sums,
                                                      r_params, r_thr)):
                    continue
                counted += 1
                for c in range(n_terms):
                    if sp_params[c, 0] == 0:
                        # the first thread to mark a domain for this pod counts it
                        if cuda.atomic.max(sp_marks, (c, sp_size_dom[c, row]), i + 1) < i + 1:
                            cuda.atomic.add(sp_sizes, c, 1)
            cuda.atomic.add(dstat, 0, counted)
            cuda.syncthreads()
            if tid == 0:
                for c in range(n_terms):
                    size = dstat[0] if sp_params[c, 0] != 0 else sp_sizes[c]
                    sp_weights[c] = math.log(float(size + 2))
            cuda.syncthreads()
            # raw scores by position, and their minima and maxima per chunk
            s_lo = _BIG
            s_hi = -_BIG
            a_lo = _BIG
            a_hi = -_BIG
            for j in range(lo, stop):
                jj = start + j
                if jj >= m:
                    jj -= m
                row = rows[jj]
                if not _feasible(row, reasons_by_row, r_domp1, r_sums, r_params, r_thr):
                    continue
                if n_terms > 0 and sp_has_all[row]:
                    r = spread_raw(row, sp_domp1, sp_sums, sp_params, sp_weights, require_all,
                                   n_terms)
                    sp_raw[j] = r
                    s_lo = min(s_lo, r)
                    s_hi = max(s_hi, r)
                if n_af > 0:
                    r = affinity_raw(row, af_domp1, af_sums, af_params, n_af)
                    af_raw[j] = r
                    a_lo = min(a_lo, r)
                    a_hi = max(a_hi, r)
            for k in range(2):
                per_a[tid] = s_lo if k == 0 else a_lo
                per_b[tid] = s_hi if k == 0 else a_hi
                cuda.syncthreads()
                if tid == 0:
                    v_lo = _BIG
                    v_hi = -_BIG
                    for t in range(nt):
                        v_lo = min(v_lo, per_a[t])
                        v_hi = max(v_hi, per_b[t])
                    if v_lo == _BIG:        # nothing scored: both 0
                        v_lo = 0
                        v_hi = 0
                    dstat[1 + 2 * k] = v_lo
                    dstat[2 + 2 * k] = v_hi
                cuda.syncthreads()
        # the top total and its ties, per chunk
        best = -1
        cnt = 0
        for j in range(lo, stop):
            jj = start + j
            if jj >= m:
                jj -= m
            t = _run_total(j, rows[jj], reasons_by_row, raw_by_row, active_slots, norm_mode,
                           weights, hi0, r_domp1, r_sums, r_params, r_thr, skip_slot, dense,
                           sp_has_all, sp_raw, dstat, sp_on, sp_w, af_raw, n_af, af_meta[2])
            if t > best:
                best = t
                cnt = 1
            elif t == best and t >= 0:
                cnt += 1
        per_a[tid] = best
        per_b[tid] = cnt
        cuda.syncthreads()
        if tid == 0:
            top = -1
            for t in range(nt):
                if per_a[t] > top:
                    top = per_a[t]
            if top < 0:
                run[2] = 1
            else:
                n_ties = 0
                for t in range(nt):
                    if per_a[t] == top:
                        n_ties += per_b[t]
                k = _tie_index(seed_mix, attempt0 + i, n_ties)
                row = -1
                for t in range(nt):
                    if per_a[t] != top:
                        continue
                    if k >= per_b[t]:
                        k -= per_b[t]
                        continue
                    for j in range(t * chunk, min(processed, t * chunk + chunk)):
                        jj = start + j
                        if jj >= m:
                            jj -= m
                        if _run_total(j, rows[jj], reasons_by_row, raw_by_row,
                                      active_slots, norm_mode, weights, hi0, r_domp1, r_sums,
                                      r_params, r_thr, skip_slot, dense, sp_has_all, sp_raw,
                                      dstat, sp_on, sp_w, af_raw, n_af, af_meta[2]) == top:
                            if k == 0:
                                row = rows[jj]
                                break
                            k -= 1
                    break
                out_rows[i] = row
                for r in range(pod_request.shape[0]):
                    requested[row, r] += pod_request[r]
                nonzero_requested[row, 0] += pod_nonzero[0]
                nonzero_requested[row, 1] += pod_nonzero[1]
                rr = node_reasons(row, allocatable, requested, unschedulable, valid,
                                  label_vals, label_nums, label_isnum, taint_bits, port_bits,
                                  filter_flags, request, requests_anything, fit_ignored,
                                  node_name_row, prefilter_rows, tolerates_unschedulable,
                                  taint_reject, has_node_selector, has_required,
                                  has_added_required, program_terms, term_offsets, req_key,
                                  req_op, req_num, val_offsets, vals, port_conflicts)
                reasons_by_row[row] = rr
                if rr == 0:
                    node_raw_scores(row, row, raw_by_row, allocatable, requested,
                                    nonzero_requested, label_vals, label_nums, label_isnum,
                                    taint_bits, image_bits, score_flags, request,
                                    nonzero_request, taint_prefer, program_terms, term_offsets,
                                    term_weights, req_key, req_op, req_num, val_offsets, vals,
                                    strategy, fit_res, fit_kind, fit_weights, shape_util,
                                    shape_score, bal_res, bal_kind, image_entries, image_scaled,
                                    image_min, image_max)
                _rules_count(row, r_count_dom, r_sums, r_present, r_params, r_thr, r_at_min)
                count_placed(row, sp_count_dom, sp_sums, sp_params, n_terms, 2)
                count_placed(row, af_count_dom, af_sums, af_params, n_af, 1)
                run[0] = (start + processed) % m
                run[1] = i + 1
        cuda.syncthreads()
        if run[2] != 0:
            break
    if tid == 0:
        out_meta[0] = run[1]
        out_meta[1] = run[0]


def launch_place_run(n_rows: int, *args) -> None:
    """Run ``place_run_kernel`` as one block (at most RUN_THREADS threads,
    no more than the evaluated rows need)."""
    threads = 1
    while threads < min(n_rows, RUN_THREADS):
        threads *= 2
    place_run_kernel[1, threads](*args)
