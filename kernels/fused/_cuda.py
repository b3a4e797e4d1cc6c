"""The fused filter/score pass as a Numba CUDA kernel: one thread per node.

The device functions are ``fused._core`` compiled with
``cuda.jit(device=True)``.  The kernels take the stage packed
(``stage_args.PACKED_PARAMETERS``: three node packs and one query buffer);
``stage_reasons`` / ``stage_raw_scores`` are generated from the declared
argument lists and unpack them into the ``_core`` rules' arguments;
``write_staged_row`` puts one staged row (``staged_rows``) into the packs and
recomputes it (the one-at-a-time cycle's launch, ``_cuda_cycle``);
``staged_write_kernel`` only writes them (the victim search's stage).  Compiled
runs of alike pods are ``_cuda_run``.  Import this module only after
``_deps.cuda_unavailable_reason()`` said yes.
"""

from __future__ import annotations

from numba import cuda

from tensorsched.kernels._compile import compile_module, compile_source
from tensorsched.kernels.mod64 import FUSED_CORE_WRAPS, device_jit

from . import _core
from . import stage_args as SA

THREADS_PER_BLOCK = 128
_NCOLS = len(SA.NODE_COLUMNS)
_STAGED_ORDER = SA.STAGED_ORDER      # constant arrays in the kernel
_STAGED_PACK = SA.STAGED_PACK

core = compile_module(_core, device_jit(FUSED_CORE_WRAPS))
node_reasons = core["node_reasons"]
node_raw_scores = core["node_raw_scores"]

#: the stage wrappers' source over the packed parameters (``stage_args``),
#: formatted once here for the device and by a host stand-in for the host
STAGE_TEMPLATE = """
def stage_reasons(i, {packed}):
{unpack}
    return node_reasons(i, {reasons_args})


def stage_raw_scores(i, o, raw_out, {packed}):
{unpack}
    node_raw_scores(i, o, raw_out, {scores_args})
"""

_stage = compile_source(
    f"{__name__}.stage",
    STAGE_TEMPLATE.format(packed=SA.PACKED_PARAMETERS, unpack=SA.unpack_source("    "),
                          reasons_args=SA.call_arguments(_core.node_reasons, 1),
                          scores_args=SA.call_arguments(_core.node_raw_scores, 3)),
    lambda f: cuda.jit(f, device=True), ("stage_reasons", "stage_raw_scores"),
    namespace={"node_reasons": node_reasons, "node_raw_scores": node_raw_scores},
    filename="<fused stage (cuda)>")
stage_reasons = _stage["stage_reasons"]
stage_raw_scores = _stage["stage_raw_scores"]


@cuda.jit
def fused_pass_kernel(rows, node_i64, node_flags, label_vals, qbuf, by_row, reasons_out,
                      raw_out):
    """Reasons and raw scores of ``rows``: by position j (``reasons_out``
    [M], ``raw_out`` [M, S]), or by node row with ``by_row`` ([N], [N, S]:
    the device row cache, only the rows passed are rewritten)."""
    j = cuda.grid(1)
    if j >= rows.shape[0]:
        return
    i = rows[j]
    o = i if by_row else j
    r = stage_reasons(i, node_i64, node_flags, label_vals, qbuf)
    reasons_out[o] = r
    if r == 0:
        stage_raw_scores(i, o, raw_out, node_i64, node_flags, label_vals, qbuf)


def launch_fused_pass(n_rows: int, rows, packs, qbuf, by_row, reasons_out, raw_out) -> None:
    """Run ``fused_pass_kernel`` over n_rows rows (ceil-divided grid);
    ``packs``: the device (node_i64, node_flags, label_vals)."""
    blocks = max(1, (n_rows + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK)
    fused_pass_kernel[blocks, THREADS_PER_BLOCK](rows, *packs, qbuf, bool(by_row), reasons_out,
                                                 raw_out)



@cuda.jit(device=True)
def write_staged_values(j, k, staged, node_i64, node_flags, label_vals, qbuf):
    """Staged row j of ``k`` (``staged_rows``: rows [k], then each row's
    pack values) written into the packs (the mirror's copy of the host
    columns); returns its row."""
    i = staged[j]
    # the columns sit at the spans of the query buffer's header (the packs
    # may hold spare rows and columns: the mirror's capacity)
    width = 0
    for col in range(_NCOLS):
        width += qbuf[2 * col + 1] - qbuf[2 * col]
    at = k + j * width
    for t in range(_NCOLS):
        col = _STAGED_ORDER[t]
        pack = _STAGED_PACK[t]
        for c in range(qbuf[2 * col], qbuf[2 * col + 1]):
            if pack == 0:
                node_i64[i, c] = staged[at]
            elif pack == 1:
                node_flags[i, c] = staged[at]
            else:
                label_vals[i, c] = staged[at]
            at += 1
    return i


@cuda.jit(device=True)
def write_staged_row(j, k, staged, node_i64, node_flags, label_vals, qbuf, reasons_by_row,
                     raw_by_row):
    """Staged row j of ``k`` written into the packs (``write_staged_values``),
    then that row of the device row cache (``reasons_by_row`` [N],
    ``raw_by_row`` [N, S]) recomputed from them.  A row's rules read
    only that row's columns: the thread that writes a row is the only one
    reading it until the caller's barrier."""
    i = write_staged_values(j, k, staged, node_i64, node_flags, label_vals, qbuf)
    r = stage_reasons(i, node_i64, node_flags, label_vals, qbuf)
    reasons_by_row[i] = r
    if r == 0:
        stage_raw_scores(i, i, raw_by_row, node_i64, node_flags, label_vals, qbuf)


@cuda.jit
def staged_rows_kernel(staged, k, node_i64, node_flags, label_vals, qbuf, reasons_by_row,
                       raw_by_row, copy_out, out):
    """The ``k`` staged rows (``staged_rows``) written into the packs and
    recomputed in the device row cache, one thread a row
    (``write_staged_row``): a launch of its own where no pick follows (the
    sort path's run, a cycle ranked on the host).  With ``copy_out``, row
    j's reasons and raw scores after it also go to ``out`` [k x (1 + S)]
    (the host copy's update: one copy back of those rows alone)."""
    j = cuda.grid(1)
    if j < k:
        write_staged_row(j, k, staged, node_i64, node_flags, label_vals, qbuf, reasons_by_row,
                         raw_by_row)
        if copy_out:
            i = staged[j]
            n_slots = raw_by_row.shape[1]
            at = j * (1 + n_slots)
            out[at] = reasons_by_row[i]
            for s in range(n_slots):
                out[at + 1 + s] = raw_by_row[i, s]


def launch_staged_rows(k: int, staged, packs, qbuf, reasons_by_row, raw_by_row,
                       out=None) -> None:
    """``staged_rows_kernel`` over ``k`` >= 1 staged rows (one launch); the
    rows' reasons and raw scores into ``out`` where given."""
    blocks = max(1, (k + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK)
    staged_rows_kernel[blocks, THREADS_PER_BLOCK](
        staged, k, *packs, qbuf, reasons_by_row, raw_by_row, out is not None,
        staged[:1] if out is None else out)


@cuda.jit
def staged_write_kernel(staged, k, node_i64, node_flags, label_vals, qbuf):
    """The ``k`` staged rows written into the packs, one thread a row, no
    row cache recomputed: the mirror brought level for a kernel that reads
    the packs alone (the victim search's stage, ``CudaBackend.device_stage``)."""
    j = cuda.grid(1)
    if j < k:
        write_staged_values(j, k, staged, node_i64, node_flags, label_vals, qbuf)


def launch_staged_write(k: int, staged, packs, qbuf) -> None:
    """``staged_write_kernel`` over ``k`` >= 1 staged rows (one launch)."""
    blocks = max(1, (k + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK)
    staged_write_kernel[blocks, THREADS_PER_BLOCK](staged, k, *packs, qbuf)


@cuda.jit
def relayout_kernel(old_i64, old_flags, old_labels, new_i64, new_flags, new_labels, colmap):
    """The device packs moved into larger ones, one thread per new row:
    new column c of a pack (``colmap`` [W' + F' + K'], the three packs'
    columns in turn) takes old column ``colmap[c]`` of the same row, or the
    fill (0; label_vals -1) where it is -1 or the row is past the old packs'
    (the spare room: ``stage_args.FILLS``)."""
    r = cuda.grid(1)
    if r >= new_i64.shape[0]:
        return
    inside = r < old_i64.shape[0]
    w = new_i64.shape[1]
    f = new_flags.shape[1]
    for c in range(w):
        s = colmap[c]
        if inside and s >= 0:
            new_i64[r, c] = old_i64[r, s]
        else:
            new_i64[r, c] = 0
    for c in range(f):
        s = colmap[w + c]
        if inside and s >= 0:
            new_flags[r, c] = old_flags[r, s]
        else:
            new_flags[r, c] = 0
    for c in range(new_labels.shape[1]):
        s = colmap[w + f + c]
        if inside and s >= 0:
            new_labels[r, c] = old_labels[r, s]
        else:
            new_labels[r, c] = -1


def launch_relayout(old_packs, new_packs, colmap) -> None:
    """``relayout_kernel`` over the new packs' rows (one launch)."""
    rows = new_packs[0].shape[0]
    blocks = max(1, (rows + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK)
    relayout_kernel[blocks, THREADS_PER_BLOCK](*old_packs, *new_packs, colmap)
