"""The victim search compiled for the CPU with Numba: one ``prange`` over
the candidate nodes, each running ``victims._core.victims_node`` (which
calls the fused filter core compiled by ``fused._numba``); and
``victims._counts_core`` (the search on counts with the visit) on the same
fused core."""

from __future__ import annotations

import inspect
import os

from numba import njit, prange

from tensorsched.kernels._compile import KEY, AnyLayout, compile_module, compile_source
from tensorsched.kernels.fused import _numba as _fused_numba

from . import _core as _victims_core
from . import _counts_core

_PARALLEL = os.environ.get("TENSORSCHED_NUMBA_PARALLEL", "0") == "1"

# Compiled once per machine, like the fused rules (kernels/_compile.py).
core = compile_module(_victims_core, njit, _fused_numba.core,
                      options={"nogil": True, "_nrt": False}, cache=True)
victims_node = core["victims_node"]

# The search on counts with the visit (``victims.on_counts``): one serial
# pass, since the visit stops where upstream's serial visit does.
# Its per-step rules are inlined (numba IR): as calls, passing their dozens
# of array arguments costs more than the rules.
def _njit_inlined(f, **options):
    top = f.__name__ in ("visit_rows", "row_victims", "alike_victims", "index_rows")
    return njit(f, inline="never" if top else "always", **options)


counts_core = compile_module(_counts_core, _njit_inlined, _fused_numba.core,
                             options={"nogil": True, "_nrt": False}, cache=True)


visit_rows = AnyLayout(counts_core["visit_rows"])
index_rows = AnyLayout(counts_core["index_rows"])


def victims_pass(rows, allocatable, requested, unschedulable, valid, label_vals, label_nums,
                 label_isnum, taint_bits, port_bits, filter_flags, request, requests_anything,
                 fit_ignored, node_name_row, prefilter_rows, tolerates_unschedulable,
                 taint_reject, has_node_selector, has_required, has_added_required,
                 program_terms, term_offsets, req_key, req_op, req_num, val_offsets, vals,
                 port_conflicts, prio, pod_count, pod_prio, pod_start, pod_req, pod_ports,
                 pod_pdb, pdb_allowed, work_req, work_ports, save_ports, order, flags,
                 pdb_left, victims, stats):
    for j in prange(rows.shape[0]):
        victims_node(j, rows[j], allocatable, requested, unschedulable, valid, label_vals,
                     label_nums, label_isnum, taint_bits, port_bits, filter_flags, request,
                     requests_anything, fit_ignored, node_name_row, prefilter_rows,
                     tolerates_unschedulable, taint_reject, has_node_selector, has_required,
                     has_added_required, program_terms, term_offsets, req_key, req_op,
                     req_num, val_offsets, vals, port_conflicts, prio, pod_count, pod_prio,
                     pod_start, pod_req, pod_ports, pod_pdb, pdb_allowed, work_req,
                     work_ports, save_ports, order, flags, pdb_left, victims, stats)


# The driver compiles from its source text like the rules, so that its
# on-disk cache is keyed by the rules it calls too.
victims_pass = compile_source(
    f"{__name__}.victims_pass", inspect.getsource(victims_pass), njit, ("victims_pass",),
    {"prange": prange, "victims_node": victims_node},
    options={"parallel": _PARALLEL, "nogil": True, "_nrt": False}, cache=True,
    depends=(core[KEY],))["victims_pass"]
victims_pass = AnyLayout(victims_pass)
