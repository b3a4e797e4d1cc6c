"""The victim search as a Numba CUDA kernel: one thread per candidate node,
running ``victims._core.victims_node`` compiled as a device function on top
of the fused filter core's device functions (``fused._cuda.core``)."""

from __future__ import annotations

from numba import cuda

from tensorsched.kernels._compile import compile_module
from tensorsched.kernels.fused import _cuda as _fused_cuda

from . import _core as _victims_core

THREADS_PER_BLOCK = 128

core = compile_module(_victims_core, lambda f: cuda.jit(f, device=True), _fused_cuda.core)
victims_node = core["victims_node"]


@cuda.jit
def victims_kernel(rows, allocatable, requested, unschedulable, valid, label_vals, label_nums,
                   label_isnum, taint_bits, port_bits, filter_flags, request, requests_anything,
                   fit_ignored, node_name_row, prefilter_rows, tolerates_unschedulable,
                   taint_reject, has_node_selector, has_required, has_added_required,
                   program_terms, term_offsets, req_key, req_op, req_num, val_offsets, vals,
                   port_conflicts, prio, pod_count, pod_prio, pod_start, pod_req, pod_ports,
                   pod_pdb, pdb_allowed, work_req, work_ports, save_ports, order, flags,
                   pdb_left, victims, stats):
    j = cuda.grid(1)
    if j >= rows.shape[0]:
        return
    victims_node(j, rows[j], allocatable, requested, unschedulable, valid, label_vals,
                 label_nums, label_isnum, taint_bits, port_bits, filter_flags, request,
                 requests_anything, fit_ignored, node_name_row, prefilter_rows,
                 tolerates_unschedulable, taint_reject, has_node_selector, has_required,
                 has_added_required, program_terms, term_offsets, req_key, req_op,
                 req_num, val_offsets, vals, port_conflicts, prio, pod_count, pod_prio,
                 pod_start, pod_req, pod_ports, pod_pdb, pdb_allowed, work_req,
                 work_ports, save_ports, order, flags, pdb_left, victims, stats)


def launch(n_rows: int, *args) -> None:
    blocks = max(1, (n_rows + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK)
    victims_kernel[blocks, THREADS_PER_BLOCK](*args)
