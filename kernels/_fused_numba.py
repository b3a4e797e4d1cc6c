"""The fused per-node stages compiled for the CPU with Numba.

One ``prange`` pass over the evaluated rows runs every enabled filter and,
for feasible rows, every enabled score (``fused_pass``); a serial pass then
normalizes, weighs and finds the tied top rows (``finalize``).
"""

from __future__ import annotations

import os

from numba import njit, prange

from ._compile import compile_core

_PARALLEL = os.environ.get("TENSORSCHED_NUMBA_PARALLEL", "1") != "0"

core = compile_core(lambda f: njit(f, cache=False, nogil=True))
node_reasons = core["node_reasons"]
node_raw_scores = core["node_raw_scores"]
finalize = core["finalize_scores"]


@njit(parallel=_PARALLEL, nogil=True, cache=False)
def fused_pass(rows, allocatable, requested, nonzero_requested, unschedulable, valid,
               label_vals, label_nums, label_isnum, taint_bits, image_bits, port_bits,
               filter_flags, score_flags, request, nonzero_request, requests_anything,
               fit_ignored, node_name_row, prefilter_rows, tolerates_unschedulable,
               taint_reject, taint_prefer, has_node_selector, has_required,
               has_added_required, program_terms, term_offsets, term_weights, req_key,
               req_op, req_num, val_offsets, vals, port_conflicts, strategy, fit_res,
               fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind,
               image_entries, image_scaled, image_min, image_max, reasons_out, raw_out):
    """Filters then scores for rows[j] into reasons_out[j], raw_out[j, :].

    Shapes: rows [M] int64 node rows in evaluation order; reasons_out [M]
    int64; raw_out [M, S] int64 (untouched for infeasible rows).
    """
    for j in prange(rows.shape[0]):
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
