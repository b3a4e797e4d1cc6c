"""The node rows written since a version, found and packed for one upload.

A one-at-a-time cycle on the device needs the rows its row cache is behind
on: their new columns in the device packs (``stage_args.pack_nodes``) and
their reasons and raw scores recomputed.  ``stage`` finds them
(``row_version`` > ``seen``: from the source's write log when it can say,
else a compiled scan as the numba backend's ``dirty_rows``)
and writes, in the same compiled call, one int64 buffer
holding everything the device needs, so the cycle pays one host-to-device
copy however many packs there are:

    staged [k + k x (W + F + K)] int64 =
        rows [k] (ascending), then each row's node_i64 [W], node_flags [F]
        (0/1) and label_vals [K] values, row after row,

with W, F, K the packs' widths (the pack order of ``stage_args``).  The
cycle's launch (``_cuda_cycle.cycle_pick_kernel``, through
``_cuda.write_staged_row``) writes each row into the packs and recomputes
it before its pick.  The packer is generated from
``stage_args.NODE_COLUMNS`` (no hand-written column list).  Imports numba:
the cuda backend imports it lazily.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tensorsched.kernels import layout as L
from tensorsched.kernels._compile import KEY, compile_source

from . import _numba as _fused_numba
from . import stage_args as SA

_TEMPLATE = """
def stage_rows(row_version, n, seen, cap, out, found, n_found, log_rows, log_versions,
               log_length, log_floor, {params}):
    k = -1
    if n_found >= 0:
        k = n_found
        for j in range(min(k, cap)):
            out[j] = found[j]
    elif n_found == -2:
        # from the write log (-1: it cannot say, or more than ``cap``
        # entries: the scan)
        k = logged_rows(log_rows, log_versions, log_length, log_floor, seen, row_version,
                        cap, out)
    if k < 0:
        k = 0
        for i in range(n):
            if row_version[i] > seen:
                if k < cap:
                    out[k] = i
                k += 1
    if k > cap or k == 0:
        return k
    width = {width}
    at = k
    for j in range(k):
        i = out[j]
{body}    return k
"""


def _pack_lines(indent: str) -> tuple[str, str]:
    """(the width expression, the lines copying row i of every column into
    ``out`` from ``at`` in pack order: node_i64 columns, flags, labels)."""
    lines, widths = [], []
    order = ([c for c in SA.NODE_COLUMNS if c[1] == "i64"]
             + [c for c in SA.NODE_COLUMNS if c[1] == "flag"]
             + [c for c in SA.NODE_COLUMNS if c[1] == "labels"])
    for name, pack, dims in order:
        value = f"{name}[i, c]" if dims == 2 else f"{name}[i]"
        if pack == "flag":
            value = f"1 if {value} else 0"
        if dims == 2:
            widths.append(f"{name}.shape[1]")
            lines += [f"for c in range({name}.shape[1]):",
                      f"    out[at] = {value}",
                      "    at += 1"]
        else:
            widths.append("1")
            lines += [f"out[at] = {value}", "at += 1"]
    return " + ".join(widths), "".join(f"{indent}{line}\n" for line in lines)


_width, _body = _pack_lines(" " * 8)
_compiled = compile_source(
    f"{__name__}.stage", _TEMPLATE.format(params=", ".join(SA.NODE_NAMES), width=_width,
                                          body=_body),
    njit, ("stage_rows",), namespace={"logged_rows": _fused_numba.logged_rows},
    options={"nogil": True}, cache=True, depends=(_fused_numba.core[KEY],),
    filename="<staged rows>")
_stage_rows = _compiled["stage_rows"]
_FIELD_ORDER = SA.NODE_NAMES == L.NodeColumns._fields     # the columns pass as they are


def row_width(cols: L.NodeColumns) -> int:
    """Values per staged row: W + F + K (the packs' widths)."""
    _, w, f = SA.node_packs([getattr(cols, n).shape for n in SA.NODE_NAMES])
    return w + f + cols.label_vals.shape[1]


def staged_size(k: int, width: int) -> int:
    """Values of a staged buffer of ``k`` rows of ``width`` values."""
    return k * (1 + width)


_NONE_FOUND = np.zeros(1, np.int64)


def stage(row_version: np.ndarray, seen: int, cols: L.NodeColumns, out: np.ndarray,
          cap: int, found: np.ndarray | None = None, n_found: int = -1, log=None) -> int:
    """k, the rows among ``cols``' written after version ``seen``; when
    0 < k <= ``cap`` they are staged in ``out`` (module doc; ``out`` holds
    ``staged_size(cap, row_width(cols))`` values at least), else ``out``
    is left unspecified (more than ``cap``: the caller uploads otherwise).
    ``found[:n_found]``: those rows, ascending, when the caller knows them;
    else ``log``, the source's ``WriteLog``, finds them in the same compiled
    call (as ``fused._core.logged_rows``) when it holds every write after
    ``seen`` and at most ``cap`` entries after it; else (or n_found -1 and
    no log) a scan of ``row_version`` finds them."""
    columns = cols if _FIELD_ORDER else (getattr(cols, n) for n in SA.NODE_NAMES)
    if found is None and log is not None:
        return int(_stage_rows(row_version, cols.allocatable.shape[0], seen, cap, out,
                               _NONE_FOUND, -2, log.rows, log.versions, log.length,
                               log.floor, *columns))
    return int(_stage_rows(row_version, cols.allocatable.shape[0], np.int64(seen),
                           np.int64(cap), out, _NONE_FOUND if found is None else found,
                           np.int64(n_found), _NONE_FOUND, _NONE_FOUND, 0, 0, *columns))


def unstage(staged: np.ndarray, k: int, widths: tuple[int, int, int]) -> tuple:
    """(rows [k], node_i64 [k, W], node_flags [k, F] int8, label_vals [k, K]
    int32) of a staged buffer (tests: what the device receives)."""
    w, f, kk = widths
    rows = staged[:k]
    data = staged[k:k + k * (w + f + kk)].reshape(k, w + f + kk)
    return (rows, data[:, :w], data[:, w:w + f].astype(np.int8),
            data[:, w + f:].astype(np.int32))
