"""The fused filter/score pass as a Numba CUDA kernel: one thread per node;
and compiled runs of alike pods as one block per run.

The device functions are ``fused._core`` compiled with
``cuda.jit(device=True)``; only this driver and its launcher are CUDA-specific.
Import this module only after ``_deps.cuda_unavailable_reason()`` said yes.
"""

from __future__ import annotations

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
# counted by thread 0 after each placement.

# The tie draw's arithmetic wraps mod 2**64 by design; under the CUDA
# simulator it runs as NumPy scalar operations (on the simulator's threads,
# so ``np.errstate`` cannot reach it), which warn on every wrap.
warnings.filterwarnings("ignore", r".*overflow encountered in scalar", RuntimeWarning,
                        module=__name__)

RUN_THREADS = 256           # the most threads a run block uses
MAX_RUN_SLOTS = 16          # score slots the block keeps maxima for

normalized = core["normalized"]
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
def _row_total(row, reasons_by_row, raw_by_row, active_slots, norm_mode, weights, hi,
               r_domp1, r_sums, r_params, r_thr):
    if not _feasible(row, reasons_by_row, r_domp1, r_sums, r_params, r_thr):
        return -1
    t = 0
    for s in range(raw_by_row.shape[1]):
        if active_slots[s]:
            t += normalized(raw_by_row[row, s], norm_mode[s], hi[0, s]) * weights[s]
    return t


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
                     r_at_min):
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    m = rows.shape[0]
    n_slots = raw_by_row.shape[1]
    per_a = cuda.shared.array(RUN_THREADS, int64)
    per_b = cuda.shared.array(RUN_THREADS, int64)
    hi = cuda.shared.array((RUN_THREADS, MAX_RUN_SLOTS), int64)
    run = cuda.shared.array(4, int64)       # start, placed, stop, rows processed
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
        # the top total and its ties, per chunk
        best = -1
        cnt = 0
        for j in range(lo, stop):
            jj = start + j
            if jj >= m:
                jj -= m
            t = _row_total(rows[jj], reasons_by_row, raw_by_row, active_slots, norm_mode,
                           weights, hi, r_domp1, r_sums, r_params, r_thr)
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
                        if _row_total(rows[jj], reasons_by_row, raw_by_row, active_slots,
                                      norm_mode, weights, hi, r_domp1, r_sums, r_params,
                                      r_thr) == top:
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
