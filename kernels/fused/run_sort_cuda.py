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
the rows at each maximum, and ``exact_prefix`` reads the order there
(``last_pods_kernel``).  What comes back per run is O(S) counts and the
P placements (``sorted_positions``).

The order: CuPy's ``argsort`` of the negated flat keys where CuPy is
present (a stable sort: equal keys keep position then k order, as
``run_sort.order_by_sort``); under Numba's CUDA simulator, or without
CuPy, the keys are copied to the host, sorted there and the order sent
back (``flat_order``, the simulator path).  Import this module only after
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
def last_pods_kernel(flat, width, lens, rows, raw_by_row, sparams, out):
    """What ``run_sort.exact_prefix`` reads, per slot s: out[0, s] how many
    rows at s's maximum (normalized, nonzero) took their last pod within
    the order ``flat`` [P] (flat key indices, position x width + k), and
    out[1, s] the latest index in the order of such a last pod (-1 before).
    One thread per placement: the k-th pair of a position in the order is
    its pod k (a position's keys descend in k, the sort is stable)."""
    t = cuda.grid(1)
    if t >= flat.shape[0]:
        return
    j = flat[t] // width
    if flat[t] - j * width != lens[j] - 1:
        return
    i = rows[j]
    for s in range(raw_by_row.shape[1]):
        h = sparams[3, s]
        if h != 0 and sparams[0, s] != 0 and sparams[1, s] != 0 and raw_by_row[i, s] == h:
            cuda.atomic.add(out, (0, s), 1)
            cuda.atomic.max(out, (1, s), t)


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


def run_keys(d_rows, width: int, seed_mix: int, packs, qbuf, reasons_d, raw_d, sparams_d,
             n_res: int):
    """(keys [M, W], lens [M] on the device; stats [1 + S] on the host):
    the key kernel over ``d_rows`` (device, ascending) with the device row
    cache (``reasons_d`` [N], ``raw_d`` [N, S]) and slot parameters
    ``sparams_d`` [4, S] (``slot_params``, maxima included); ``packs`` the
    device node packs, ``qbuf`` the query buffer (``CudaBackend``'s
    mirror).  stats[0] is the number of (node, k) pairs, stats[1 + s] the
    feasible rows at slot s's maximum (normalized and nonzero, else 0)."""
    m = d_rows.shape[0]
    n, s = raw_d.shape
    keys = cuda.device_array((m, width), np.int64)
    lens = cuda.device_array(m, np.int64)
    stats = cuda.to_device(np.zeros(1 + s, np.int64))
    run_keys_kernel[_grid(m), THREADS_PER_BLOCK](
        d_rows, np.int64(width), np.uint64(seed_mix), *packs, qbuf, reasons_d, raw_d,
        sparams_d, cuda.device_array((n, n_res), np.int64), cuda.device_array((n, 2), np.int64),
        keys, lens, stats)
    return keys, lens, stats.copy_to_host()


def flat_order(keys_d, p: int):
    """The first ``p`` flat key indices (position x W + k) in placement
    order, by key descending then index (``run_sort.order_by_sort``'s
    order): (on the device, on the host // W = positions).  CuPy's stable
    argsort where CuPy runs; else (the simulator path) the keys copied to
    the host, sorted there and the order sent back."""
    w = keys_d.shape[1]
    if p == 0:
        return None, np.zeros(0, np.int64)
    if cupy is None or CUDA_SIMULATOR:
        flat = np.argsort(-keys_d.copy_to_host().reshape(-1), kind="stable")[:p]
        return cuda.to_device(np.ascontiguousarray(flat)), flat // w
    flat = cupy.argsort(-cupy.asarray(keys_d).reshape(-1))[:p]
    return flat, cupy.asnumpy(flat // w)


def exact_prefix(flat_d, p: int, width: int, lens_d, d_rows, raw_d, sparams_d,
                 at_max: np.ndarray) -> int:
    """``run_sort.exact_prefix`` from the device: one launch of
    ``last_pods_kernel`` over the order, [2, S] back.  A slot whose rows at
    the maximum (``at_max`` [S] of them) all took their last pod within
    the order moves after the latest of them; otherwise it never moves."""
    s = raw_d.shape[1]
    out = cuda.to_device(np.stack([np.zeros(s, np.int64), np.full(s, -1, np.int64)]))
    last_pods_kernel[_grid(p), THREADS_PER_BLOCK](flat_d, np.int64(width), lens_d, d_rows,
                                                  raw_d, sparams_d, out)
    filled, latest = out.copy_to_host()
    exact = p
    for slot in np.flatnonzero(at_max):
        if filled[slot] == at_max[slot]:
            exact = min(exact, int(latest[slot]) + 1)
    return exact


def sorted_positions(rows, d_rows, count: int, reasons_d, raw_d, active, norm, weights,
                     cols, q, seed_mix: int, packs, qbuf) -> tuple[np.ndarray | None, int]:
    """``run_sort.sorted_positions`` with the row cache left on the device:
    (the run's [P] positions into ``rows`` (host, ascending; ``d_rows`` its
    device copy) in placement order up to the exact prefix, or None when
    the keys would be too many; the kernels launched).  What comes back to
    the host: the maxima's at-max counts and the pair count (1 + S), the
    exact prefix's [2, S], and the order (P positions); never the reasons
    or raw scores by row."""
    width = RS.key_width(cols, rows, q, count)
    if width == 0:
        return None, 0
    s = raw_d.shape[1]
    sparams = slot_params(active[:s], norm[:s], weights[:s], np.zeros(s, np.int64))
    sparams_d = cuda.to_device(sparams)
    launches = 0
    if ((sparams[0] != 0) & (sparams[1] != 0)).any():
        run_maxima(d_rows, reasons_d, raw_d, sparams_d)
        launches += 1
    keys_d, lens_d, stats = run_keys(d_rows, width, seed_mix, packs, qbuf, reasons_d, raw_d,
                                     sparams_d, cols.requested.shape[1])
    launches += 1
    p = int(min(count, int(stats[0])))
    flat_d, pos = flat_order(keys_d, p)
    at_max = stats[1:]
    if p and at_max.any():
        pos = pos[:exact_prefix(flat_d, p, width, lens_d, d_rows, raw_d, sparams_d, at_max)]
        launches += 1
    return pos, launches
