"""The sort path on the device: one thread per node writes its key
sequence, one device sort orders every (node, k) pair (``run_sort``).

The key kernel is ``run_sort.KEY_SOURCE`` compiled with
``cuda.jit(device=True)`` over the fused core's device rules (``_cuda.core``)
and called by a kernel that unpacks the stage from the packed node columns
and query buffer (``stage_args.unpack_source``), as the fused pass does:
the same source and rounding as the numba twin.

The row cache (reasons [N], raw scores [N, S]) stays on the device: the
normalization maxima are reduced there (``run_maxima_kernel``, into the slot
parameters the key kernel reads), the key kernel also counts the pairs and
the rows at each maximum, and ``order_result_kernel`` reads the order there
(positions and what the exact prefix needs).  Nothing is read back inside
a run: the key buffer is sized by the host's bound (M rows x W,
``run_sort.key_width``), the order taken at min(count, M x W) and cut to
the pairs afterwards, so a run copies back one buffer (``result_buffer``:
O(S) counts and the placements; ``sorted_positions``).

The order: CuPy's ``argsort`` of the negated flat keys where CuPy is
present (a stable sort: equal keys keep position then k order, as
``run_sort.order_by_sort``); under Numba's CUDA simulator, or without
CuPy, the keys are copied to the host, sorted there and the order sent
back (``_host_sort``, the simulator path: its copy is the sort's stand-in,
not the run's result).  Import this module only after
``_deps.cuda_unavailable_reason()`` said yes.
"""

from __future__ import annotations

import warnings

import numpy as np
from numba import cuda

from tensorsched.kernels._compile import compile_source
from tensorsched.kernels._deps import CUDA_SIMULATOR, cupy

from . import stage_args as SA
from ._cuda import core
from . import run_sort as RS
from .run_sort import KEY_SOURCE, key_namespace

THREADS_PER_BLOCK = 128

# The tie rank's hash wraps mod 2**64 by design; under the CUDA simulator it
# runs as NumPy scalar operations, which warn on every wrap (as in _cuda_run).
warnings.filterwarnings("ignore", r".*overflow encountered in scalar", RuntimeWarning,
                        module=r"tensorsched\.kernels\.fused\._core")

_keys = compile_source(f"{__name__}.keys", KEY_SOURCE, lambda f: cuda.jit(f, device=True),
                       ("run_key_sequence",), key_namespace(core),
                       filename="<run keys (cuda)>")

_KERNEL_SOURCE = """
def run_keys_kernel(rows, width, seed_mix, {packed}, base_reasons, raw_by_row, sparams,
                    req_scratch, nz_scratch, keys, lens, stats):
    j = cuda.grid(1)
    if j >= rows.shape[0]:
        return
{unpack}
    got = run_key_sequence(
        j, rows[j], width, seed_mix, allocatable, requested, nonzero_requested,
        filter_flags, score_flags, request, nonzero_request, requests_anything, fit_ignored,
        strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind,
        base_reasons, raw_by_row, sparams[0], sparams[1], sparams[2], sparams[3],
        req_scratch, nz_scratch, keys)
    lens[j] = got
    if got > 0:
        # a feasible row: its pairs count, and it may hold a slot's maximum
        cuda.atomic.add(stats, 0, got)
        i = rows[j]
        for s in range(raw_by_row.shape[1]):
            h = sparams[3, s]
            if h != 0 and sparams[0, s] != 0 and sparams[1, s] != 0 and raw_by_row[i, s] == h:
                cuda.atomic.add(stats, 1 + s, 1)
""".format(packed=SA.PACKED_PARAMETERS, unpack=SA.unpack_source("    "))

run_keys_kernel = compile_source(
    f"{__name__}.kernel", _KERNEL_SOURCE, cuda.jit, ("run_keys_kernel",),
    {"cuda": cuda, "run_key_sequence": _keys["run_key_sequence"]},
    filename="<run keys kernel (cuda)>")["run_keys_kernel"]


@cuda.jit
def run_maxima_kernel(rows, base_reasons, raw_by_row, sparams):
    """``run_sort.run_maxima`` into ``sparams[3]`` (zeros before): each
    normalized active slot's maximum over the feasible ``rows`` (from 0).
    One thread per row."""
    j = cuda.grid(1)
    if j >= rows.shape[0]:
        return
    i = rows[j]
    if base_reasons[i] != 0:
        return
    for s in range(raw_by_row.shape[1]):
        if sparams[0, s] != 0 and sparams[1, s] != 0:
            v = raw_by_row[i, s]
            if v > 0:
                cuda.atomic.max(sparams, (3, s), v)


@cuda.jit
def order_result_kernel(flat, width, lens, rows, raw_by_row, sparams, out):
    """The run's result buffer (``RESULT`` layout) from the order ``flat``
    [L] (flat key indices, position x width + k): out[head + t] the
    position of placement t, and what ``run_sort.exact_prefix`` reads, per
    slot s: out[filled + s] how many rows at s's maximum (normalized,
    nonzero) took their last pod within the order, out[latest + s] the
    latest index in the order of such a last pod (-1 before).  One thread
    per placement: the k-th pair of a position in the order is its pod k
    (a position's keys descend in k, the sort is stable); an infeasible
    pair (k >= lens) is never a last pod, so an order longer than the
    pairs reads as the pairs alone."""
    t = cuda.grid(1)
    if t >= flat.shape[0]:
        return
    n_slots = raw_by_row.shape[1]
    j = flat[t] // width
    out[1 + 3 * n_slots + t] = j
    if flat[t] - j * width != lens[j] - 1:
        return
    i = rows[j]
    for s in range(n_slots):
        h = sparams[3, s]
        if h != 0 and sparams[0, s] != 0 and sparams[1, s] != 0 and raw_by_row[i, s] == h:
            cuda.atomic.add(out, 1 + n_slots + s, 1)
            cuda.atomic.max(out, 1 + 2 * n_slots + s, t)


def _grid(n: int) -> int:
    return max(1, (n + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK)


def slot_params(active, norm, weights, hi) -> np.ndarray:
    """[4, S] int64: active (0/1), normalization mode, weight and the run's
    maximum of every slot (one argument instead of four)."""
    return np.ascontiguousarray(np.stack([np.asarray(a, np.int64)
                                          for a in (active, norm, weights, hi)]))


def run_maxima(d_rows, reasons_d, raw_d, sparams_d) -> None:
    """The normalization maxima into the device slot parameters
    ``sparams_d`` [4, S] (row 3 zero before): one launch of
    ``run_maxima_kernel``, nothing back."""
    run_maxima_kernel[_grid(d_rows.shape[0]), THREADS_PER_BLOCK](d_rows, reasons_d, raw_d,
                                                                 sparams_d)


def result_buffer(n_slots: int, limit: int, pairs: int = 0, at_max=None):
    """A run's result buffer on the device, [1 + 3S + limit] int64 (the
    one array a run copies back): [0] the number of (node, k) pairs,
    [1, 1 + S) the feasible rows at each slot's maximum, [1 + S, 1 + 2S)
    and [1 + 2S, 1 + 3S) the exact prefix's filled counts and latest
    indices, then the first ``limit`` placements' positions.  One upload
    of the 1 + 3S head (zeros, latest -1; ``pairs`` and ``at_max`` where
    given: the key kernel adds its counts there)."""
    head = np.zeros(1 + 3 * n_slots, np.int64)
    head[0] = pairs
    head[1 + 2 * n_slots:] = -1
    if at_max is not None:
        head[1:1 + n_slots] = at_max
    out = cuda.device_array(head.shape[0] + limit, np.int64)
    out[:head.shape[0]].copy_to_device(head)
    return out


def run_keys(d_rows, width: int, seed_mix: int, packs, qbuf, reasons_d, raw_d, sparams_d,
             n_res: int, stats_d=None):
    """(keys [M, W], lens [M], stats [1 + S]; all on the device): the key
    kernel over ``d_rows`` (device, ascending) with the device row cache
    (``reasons_d`` [N], ``raw_d`` [N, S]) and slot parameters ``sparams_d``
    [4, S] (``slot_params``, maxima included); ``packs`` the device node
    packs, ``qbuf`` the query buffer (``CudaBackend``'s mirror).  stats[0]
    is the number of (node, k) pairs, stats[1 + s] the feasible rows at
    slot s's maximum (normalized and nonzero, else 0), added into
    ``stats_d`` (zeros; the head of ``result_buffer``) where given.
    Nothing comes back: the sort takes every M x W key (W is the host's
    bound, ``run_sort.key_width``), infeasible ones last."""
    m = d_rows.shape[0]
    n, s = raw_d.shape
    keys = cuda.device_array((m, width), np.int64)
    lens = cuda.device_array(m, np.int64)
    if stats_d is None:
        stats_d = cuda.to_device(np.zeros(1 + s, np.int64))
    run_keys_kernel[_grid(m), THREADS_PER_BLOCK](
        d_rows, np.int64(width), np.uint64(seed_mix), *packs, qbuf, reasons_d, raw_d,
        sparams_d, cuda.device_array((n, n_res), np.int64), cuda.device_array((n, 2), np.int64),
        keys, lens, stats_d)
    return keys, lens, stats_d


def _host_sort(keys_d, limit: int):
    """The simulator path's stand-in for the device sort: the keys copied
    to the host, sorted there (stable, key descending) and the first
    ``limit`` flat indices sent back."""
    flat = np.argsort(-keys_d.copy_to_host().reshape(-1), kind="stable")[:limit]
    return cuda.to_device(np.ascontiguousarray(flat))


def flat_order(keys_d, limit: int):
    """The first ``limit`` flat key indices (position x W + k) in placement
    order, by key descending then index (``run_sort.order_by_sort``'s
    order), on the device; infeasible pairs (key -1) come after every
    feasible one.  CuPy's stable argsort where CuPy runs; else
    ``_host_sort`` (the simulator path)."""
    if cupy is None or CUDA_SIMULATOR:
        return _host_sort(keys_d, limit)
    return cupy.argsort(-cupy.asarray(keys_d).reshape(-1))[:limit]


def order_result(flat_d, width: int, lens_d, d_rows, raw_d, sparams_d, out_d) -> None:
    """One launch of ``order_result_kernel`` over the order ``flat_d``
    into the result buffer ``out_d`` (``result_buffer``); nothing back."""
    if flat_d.shape[0]:
        order_result_kernel[_grid(flat_d.shape[0]), THREADS_PER_BLOCK](
            flat_d, np.int64(width), lens_d, d_rows, raw_d, sparams_d, out_d)


def read_result(host: np.ndarray, count: int, n_slots: int) -> np.ndarray:
    """The run's positions in placement order up to the exact prefix, from
    the result buffer copied back (``result_buffer``): P = min(count,
    pairs) placements; a slot whose rows at the maximum all took their
    last pod within them moves after the latest of them (the pods after
    take their own cycles); otherwise it never moves."""
    p = int(min(count, int(host[0])))
    at_max = host[1:1 + n_slots]
    filled = host[1 + n_slots:1 + 2 * n_slots]
    latest = host[1 + 2 * n_slots:1 + 3 * n_slots]
    exact = p
    for slot in np.flatnonzero(at_max):
        if filled[slot] == at_max[slot]:
            exact = min(exact, int(latest[slot]) + 1)
    return host[1 + 3 * n_slots:1 + 3 * n_slots + exact]


def exact_prefix(flat_d, p: int, width: int, lens_d, d_rows, raw_d, sparams_d,
                 at_max: np.ndarray) -> int:
    """``run_sort.exact_prefix`` from the device for an order of ``p``
    feasible pairs ``flat_d`` whose rows at each slot's maximum number
    ``at_max`` [S]: ``order_result`` into a buffer, copied back, read by
    ``read_result``."""
    s = raw_d.shape[1]
    at_max = np.asarray(at_max, np.int64)
    out = result_buffer(s, p, p, at_max)
    order_result(flat_d, width, lens_d, d_rows, raw_d, sparams_d, out)
    return read_result(out.copy_to_host(), p, s).shape[0]


def sorted_positions(rows, d_rows, count: int, reasons_d, raw_d, active, norm, weights,
                     cols, q, seed_mix: int, packs, qbuf) -> tuple[np.ndarray | None, int]:
    """``run_sort.sorted_positions`` with the row cache left on the device:
    (the run's [P] positions into ``rows`` (host, ascending; ``d_rows`` its
    device copy) in placement order up to the exact prefix, or None when
    the keys would be too many; the kernels launched).  One copy back a
    run (the simulator path's host sort aside): the result buffer
    (``result_buffer``: the pair and at-maximum counts, the exact prefix's
    [2, S] and the first min(count, M x W) positions); never the reasons
    or raw scores by row, and nothing read back before the sort: the
    order is taken at the host's bound min(count, M x W) and cut to the
    pairs after."""
    width = RS.key_width(cols, rows, q, count)
    if width == 0:
        return None, 0
    s = raw_d.shape[1]
    sparams = slot_params(active[:s], norm[:s], weights[:s], np.zeros(s, np.int64))
    sparams_d = cuda.to_device(sparams)
    limit = int(min(count, rows.shape[0] * width))
    out_d = result_buffer(s, limit)
    launches = 0
    if ((sparams[0] != 0) & (sparams[1] != 0)).any():
        run_maxima(d_rows, reasons_d, raw_d, sparams_d)
        launches += 1
    keys_d, lens_d, _ = run_keys(d_rows, width, seed_mix, packs, qbuf, reasons_d, raw_d,
                                 sparams_d, cols.requested.shape[1], out_d[:1 + s])
    launches += 1
    if limit:
        order_result(flat_order(keys_d, limit), width, lens_d, d_rows, raw_d, sparams_d, out_d)
        launches += 1
    return read_result(out_d.copy_to_host(), count, s), launches
