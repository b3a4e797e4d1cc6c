"""``search.first_fit_search`` compiled for the CPU: ``_search_core``'s
rules under ``njit``, one node after another.  Serial on purpose: a pod's
pass is typically a few nodes (the rest is remembered) or microseconds per
thousand nodes, less than waking a thread pool."""

from __future__ import annotations

import inspect

import numpy as np
from numba import njit

from tensorsched.kernels._compile import KEY, compile_module, compile_source

from . import _search_core

core = compile_module(_search_core, njit, options={"nogil": True}, cache=True)
search_node = core["search_node"]


def _drive(
    ptr,
    rows,
    status,
    counts,
    req_claim,
    req_of,
    total,
    in_use,
    blocked,
    con_first,
    con_applies,
    con_code,
    con_kind,
    ctr_ptr,
    ctr_slot,
    ctr_amt,
    slot_cap,
    budget,
    out,
    picks,
    taken,
    used,
    con_count,
    con_stack,
    pos,
):  # pragma: no cover - compiled
    for node in range(out.shape[0]):
        out[node] = search_node(
            node,
            ptr,
            rows,
            status,
            counts,
            req_claim,
            req_of,
            total,
            in_use,
            blocked,
            con_first,
            con_applies,
            con_code,
            con_kind,
            ctr_ptr,
            ctr_slot,
            ctr_amt,
            slot_cap,
            budget,
            taken,
            used,
            con_count,
            con_stack,
            pos,
            picks[node],
        )


# The driver compiles from its source text like the rules, so that its
# on-disk cache is keyed by the rules it calls too.
_drive = compile_source(
    f"{__name__}._drive",
    inspect.getsource(_drive),
    njit,
    ("_drive",),
    {"search_node": search_node},
    options={"nogil": True},
    cache=True,
    depends=(core[KEY],),
)["_drive"]


def first_fit_search_numba(
    ptr,
    rows,
    status,
    counts,
    req_claim,
    in_use,
    blocked,
    con_first,
    con_applies,
    con_code,
    con_kind,
    ctr_ptr,
    ctr_slot,
    ctr_amt,
    slot_cap,
    budget,
):
    n = ptr.shape[0] - 1
    total = int(counts.sum())
    req_of = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    width = max(total, 1)
    n_con = max(con_code.shape[0], 1)
    out = np.empty(n, np.int8)
    picks = np.full((n, width), -1, np.int64)
    _drive(
        ptr,
        rows,
        status,
        counts,
        req_claim,
        req_of,
        total,
        in_use,
        blocked,
        con_first,
        con_applies,
        con_code,
        con_kind,
        ctr_ptr,
        ctr_slot,
        ctr_amt,
        slot_cap,
        budget,
        out,
        picks,
        np.zeros(rows.shape[0], np.bool_),
        np.zeros(max(slot_cap.shape[0], 1), np.int64),
        np.zeros(n_con, np.int64),
        np.zeros((n_con, width), np.int64),
        np.zeros(width + 1, np.int64),
    )
    return out, picks
