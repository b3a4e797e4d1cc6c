"""A one-at-a-time cycle's pick over the row cache by chunks: the host twin
of the device finalize (``_cuda_cycle``), compiled with ``njit`` from the
same source (``_cycle_core``).

``pick`` answers what ``finalize_rows`` and the tie rule answer together
for a placement (no per-row output): the row the cycle takes, its
position, rows processed and feasible found, whatever the number of
chunks.  The tests hold it, and the device kernel, to ``finalize_rows``
(with per-domain rules, ``domain_rules_cycle``, to ``finalize`` over the
host filter's answers).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tensorsched.kernels import domain_rules_cycle as DRC
from tensorsched.kernels._compile import compile_module

from . import _cycle_core
from . import _numba

core = compile_module(_cycle_core, njit, _numba.core, options={"nogil": True}, cache=True)
_pick_by_chunks = core["pick_by_chunks"]
_scan_in_order = core["scan_in_order"]
_best_in_order = core["best_in_order"]

# result fields: out[k]
OUT_ROW, OUT_PROCESSED, OUT_FOUND, OUT_POSITION, OUT_LEN = range(5)


def slot_params(active, norm, weights, n_slots: int) -> np.ndarray:
    """[3, S] int64: each slot's active (0/1), normalization mode and weight
    (one array for the kernels)."""
    return np.ascontiguousarray(np.stack([np.asarray(a[:n_slots], np.int64)
                                          for a in (active, norm, weights)]))


def pick(rows, start: int, reasons_by_row, raw_by_row, num_to_find: int, sparams, mix: int,
         pods_src, pods_at: int, threads: int = 1, rules=None) -> np.ndarray:
    """[4] int64 (``OUT_*``): the row the cycle over ``rows`` [M] (evaluation
    order from ``start``) takes and its position (-1, -1 when no scanned row
    is feasible), rows processed, feasible found; the row cache
    ``reasons_by_row`` [N], ``raw_by_row`` [N, S]; ``sparams``
    (``slot_params``); ``mix`` the seed's ``ties.seed_mix``;
    ``pods_src[row, pods_at]`` the pods on a row; ``threads`` chunks;
    ``rules`` (``domain_rules_cycle.host_rules``, None: none) fail rows
    besides their cached reasons."""
    s = raw_by_row.shape[1]
    if rules is None:
        rules = DRC.no_rules()
    out = np.zeros(OUT_LEN, np.int64)
    _pick_by_chunks(rows, np.int64(start), reasons_by_row, raw_by_row, np.int64(num_to_find),
                    sparams, np.uint64(mix), pods_src, np.int64(pods_at),
                    np.int64(max(1, threads)), np.zeros(2 * s, np.int64),
                    np.zeros(2 * s, np.int64), np.zeros(3, np.int64), np.zeros(3, np.int64), out,
                    np.int64(rules.n_rules), rules.domp1, rules.sums, rules.params, rules.thr)
    return out


def pick_scratch(m: int, n_slots: int) -> tuple:
    """Scratch of ``pick_in_order`` for up to ``m`` rows and ``n_slots``
    slots: (ext [2 S], feasible positions [M], out [OUT_LEN]) int64."""
    return (np.zeros(2 * n_slots, np.int64), np.zeros(m, np.int64),
            np.zeros(OUT_LEN, np.int64))


def scan_in_order(rows, start: int, reasons_by_row, raw_by_row, num_to_find: int, sparams,
                  rules, scratch) -> tuple:
    """(rows processed, feasible found) of a placement cycle with per-domain
    ``rules`` (``domain_rules_cycle.HostRules``) in one scan that stops at
    the ``num_to_find``-th feasible row (``_cycle_core.scan_in_order``);
    ``scratch`` (``pick_scratch``) then holds the extremes and the
    feasible positions for ``best_in_order``."""
    ext, feas, out = scratch
    _scan_in_order(rows, np.int64(start), reasons_by_row, raw_by_row, np.int64(num_to_find),
                   sparams, ext, feas, out, np.int64(rules.n_rules), rules.domp1, rules.sums,
                   rules.params, rules.thr)
    return int(out[OUT_PROCESSED]), int(out[OUT_FOUND])


def best_in_order(rows, start: int, raw_by_row, sparams, mix: int, pods_src, pods_at: int,
                  scratch, total_by_row=None) -> np.ndarray:
    """The tie rule's row among the feasible rows ``scan_in_order`` left in
    ``scratch``: [OUT_LEN] (``OUT_*``; the scratch's own).
    ``total_by_row`` [N]: each row's total under the scan's extremes, kept
    by the caller (None: computed here from ``raw_by_row``)."""
    ext, feas, out = scratch
    use = total_by_row is not None
    _best_in_order(rows, np.int64(start), feas, out[OUT_FOUND],
                   total_by_row if use else feas, use, raw_by_row, sparams, ext,
                   np.uint64(mix), pods_src, np.int64(pods_at), out)
    return out


def pick_in_order(rows, start: int, reasons_by_row, raw_by_row, num_to_find: int, sparams,
                  mix: int, pods_src, pods_at: int, rules) -> np.ndarray:
    """``pick``'s answer (``OUT_*``) from ``scan_in_order`` then
    ``best_in_order`` (one thread, a scan that stops at the
    ``num_to_find``-th feasible row)."""
    scratch = pick_scratch(rows.shape[0], raw_by_row.shape[1])
    scan_in_order(rows, start, reasons_by_row, raw_by_row, num_to_find, sparams, rules,
                  scratch)
    return best_in_order(rows, start, raw_by_row, sparams, mix, pods_src, pods_at, scratch)
