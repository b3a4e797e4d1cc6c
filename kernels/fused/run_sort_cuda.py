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
(positions and what the exact prefix needs).  A run is one copy each way
(``sorted_positions``): one int64 buffer (``run_layout``) goes up with the
slot parameters, the run's rows (unless every row: the device arange), the
rows the row cache is behind on (staged as a placement cycle stages them,
``staged_rows``; written and recomputed by ``_cuda.staged_rows_kernel``)
and the result head; its tail comes back with the counts and the
placements.  Nothing is read back inside a run: the key buffer is sized by
the host's bound (M rows x W, ``run_sort.key_width``), the order taken at
min(count, M x W) and cut to the pairs and the exact prefix afterwards
from the counts that come back with it.  The keys, lengths and scratch
are kept between runs (``RunBuffers``: a warm run allocates nothing).

The order: CuPy's ``argsort`` of the negated flat keys where CuPy is
present (a stable sort: equal keys keep position then k order, as
``run_sort.order_by_sort``); under Numba's CUDA simulator, or without
CuPy, the keys are copied to the host, sorted there and the order sent
back (``_host_sort``, the simulator path: its copy is the sort's stand-in,
not the run's result).  Import this module only after
``_deps.cuda_unavailable_reason()`` said yes.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import cuda

from tensorsched.kernels._compile import compile_source
from tensorsched.kernels._deps import CUDA_SIMULATOR, cupy

from . import _cuda as _fused_cuda
from . import stage_args as SA
from ._cuda import core
from .run_sort import KEY_SOURCE, key_namespace

THREADS_PER_BLOCK = 128

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


class RunBuffers:
    """A sorted run's buffers, kept between runs and grown by doubling (a
    warm run allocates none): the run's one int64 buffer (``run_layout``)
    on the device and its pinned host twin, the keys [M x W] and lengths
    [M], the key kernel's scratch [N x R] and [N x 2].  ``allocations``
    counts the device arrays made.  A buffer of more than ``KEEP_MAX``
    values is made for its run alone (the keys of a huge run are not held
    between runs)."""

    KEEP_MAX = 1 << 23      # values (64 MiB)

    def __init__(self):
        self._kept: dict = {}
        self.allocations = 0

    def _get(self, name: str, size: int, pinned: bool = False):
        got = self._kept.get(name)
        if got is None or got.shape[0] < size:
            cap = max(size, min(2 * got.shape[0] if got is not None else 0, self.KEEP_MAX), 64)
            got = cuda.pinned_array(cap, np.int64) if pinned else cuda.device_array(cap, np.int64)
            self.allocations += not pinned
            if cap <= self.KEEP_MAX:
                self._kept[name] = got
        return got

    def run(self, size: int) -> tuple:
        """(pinned host, device) int64 buffers of at least ``size`` values."""
        return self._get("host", size, True), self._get("device", size)

    def keys(self, m: int, width: int) -> tuple:
        """(keys [m, width], lens [m]) int64 device views."""
        return (self._get("keys", m * width)[:m * width].reshape(m, width),
                self._get("lens", m)[:m])

    def scratch(self, n: int, n_res: int) -> tuple:
        """The key kernel's scratch ([n, n_res], [n, 2]) int64 device views."""
        return (self._get("req", n * n_res)[:n * n_res].reshape(n, n_res),
                self._get("nz", 2 * n)[:2 * n].reshape(n, 2))


class RunLayout(NamedTuple):
    """Where the parts of a sorted run's one int64 buffer sit (``run_layout``):

        [0, 4S)               the slot parameters [4, S] (``slot_params``, maxima 0)
        [rows_at, staged_at)  the run's rows [M] (empty when they are every row)
        [staged_at, head_at)  the rows the row cache is behind on (``staged_rows``)
        [head_at, pos_at)     the result head [1 + 3S] (``result_buffer``)
        [pos_at, end)         the first ``limit`` placements' positions

    The run copies [0, pos_at) up and [head_at, end) back: one copy each way."""
    n_slots: int
    rows_at: int
    staged_at: int
    head_at: int
    pos_at: int
    end: int


def run_layout(n_slots: int, n_rows: int, n_staged: int, limit: int) -> RunLayout:
    """The layout of a run over ``n_rows`` uploaded rows (0: every row),
    ``n_staged`` staged values and ``limit`` placements."""
    rows_at = 4 * n_slots
    head_at = rows_at + n_rows + n_staged
    pos_at = head_at + 1 + 3 * n_slots
    return RunLayout(n_slots, rows_at, rows_at + n_rows, head_at, pos_at, pos_at + limit)


def fill_run(host: np.ndarray, lay: RunLayout, active, norm, weights, rows=None) -> None:
    """The host side of a run's buffer (``run_layout``) but its staged rows:
    the slot parameters of ``active``/``norm``/``weights`` [>= S] with
    maxima 0 (reduced on the device), ``rows`` where given, the result
    head (zeros, the latest indices -1)."""
    s = lay.n_slots
    host[:4 * s] = slot_params(active[:s], norm[:s], weights[:s],
                               np.zeros(s, np.int64)).reshape(-1)
    if rows is not None:
        host[lay.rows_at:lay.staged_at] = rows
    host[lay.head_at:lay.head_at + 1 + 2 * s] = 0
    host[lay.head_at + 1 + 2 * s:lay.pos_at] = -1


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
             n_res: int, stats_d=None, kept=None):
    """(keys [M, W], lens [M], stats [1 + S]; all on the device): the key
    kernel over ``d_rows`` (device, ascending) with the device row cache
    (``reasons_d`` [N], ``raw_d`` [N, S]) and slot parameters ``sparams_d``
    [4, S] (``slot_params``, maxima included); ``packs`` the device node
    packs, ``qbuf`` the query buffer (``CudaBackend``'s mirror).  stats[0]
    is the number of (node, k) pairs, stats[1 + s] the feasible rows at
    slot s's maximum (normalized and nonzero, else 0), added into
    ``stats_d`` (zeros; the head of ``result_buffer``) where given.  The
    keys, lengths and the kernel's scratch are views of ``kept``'s buffers
    (``RunBuffers``: no allocation once they are large enough) where given.
    Nothing comes back: the sort takes every M x W key (W is the host's
    bound, ``run_sort.key_width``), infeasible ones last."""
    m = d_rows.shape[0]
    n, s = raw_d.shape
    kept = kept if kept is not None else RunBuffers()
    keys, lens = kept.keys(m, width)
    req_scratch, nz_scratch = kept.scratch(n, n_res)
    if stats_d is None:
        stats_d = cuda.to_device(np.zeros(1 + s, np.int64))
    run_keys_kernel[_grid(m), THREADS_PER_BLOCK](
        d_rows, np.int64(width), np.uint64(seed_mix), *packs, qbuf, reasons_d, raw_d,
        sparams_d, req_scratch, nz_scratch, keys, lens, stats_d)
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


def sorted_positions(host: np.ndarray, dev, lay: RunLayout, n_staged_rows: int, all_rows_d,
                     count: int, width: int, reasons_d, raw_d, n_res: int, seed_mix: int,
                     packs, qbuf, kept: RunBuffers) -> tuple[np.ndarray, int]:
    """``run_sort.sorted_positions`` with the row cache left on the device:
    (the run's [P] positions into its rows (ascending) in placement order
    up to the exact prefix; the kernels launched).  ``host`` holds the
    run's buffer (``run_layout``: ``fill_run`` and the ``n_staged_rows``
    staged rows), ``dev`` its device twin; ``all_rows_d`` the device
    ``arange(N)`` when the run's rows are every row (none in the buffer),
    else None; W = ``width`` (``run_sort.key_width``).

    One copy up (the buffer's [0, pos_at)) and one back ([head_at, end):
    the pair and at-maximum counts, the exact prefix's [2, S] and the
    first min(count, M x W) positions), the simulator path's host sort
    aside; nothing is read back before the sort (the order is taken at
    the host's bound and cut to the pairs after) and the cut to the exact
    prefix is read from the counts that come back with the positions.
    Launches: the staged rows written and recomputed (when any), the
    maxima (a normalized slot), the keys, the order's result."""
    s = lay.n_slots
    dev[:lay.pos_at].copy_to_device(host[:lay.pos_at])
    sparams_d = dev[:4 * s].reshape(4, s)
    d_rows = all_rows_d if all_rows_d is not None else dev[lay.rows_at:lay.staged_at]
    launches = 0
    if n_staged_rows:
        _fused_cuda.launch_staged_rows(n_staged_rows, dev[lay.staged_at:lay.head_at], packs,
                                       qbuf, reasons_d, raw_d)
        launches += 1
    sp = host[:4 * s].reshape(4, s)
    if ((sp[0] != 0) & (sp[1] != 0)).any():
        run_maxima(d_rows, reasons_d, raw_d, sparams_d)
        launches += 1
    out_d = dev[lay.head_at:lay.end]
    keys_d, lens_d, _ = run_keys(d_rows, width, seed_mix, packs, qbuf, reasons_d, raw_d,
                                 sparams_d, n_res, out_d[:1 + s], kept)
    launches += 1
    limit = lay.end - lay.pos_at
    if limit:
        order_result(flat_order(keys_d, limit), width, lens_d, d_rows, raw_d, sparams_d, out_d)
        launches += 1
    back = out_d.copy_to_host(host[lay.head_at:lay.end])
    return read_result(back, count, s).copy(), launches
