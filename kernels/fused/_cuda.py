"""The fused filter/score pass as a Numba CUDA kernel: one thread per node.

The device functions are ``fused._core`` compiled with
``cuda.jit(device=True)``; only this driver and its launcher are CUDA-specific.
Import this module only after ``_deps.cuda_unavailable_reason()`` said yes.
"""

from __future__ import annotations

from numba import cuda

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
