"""The sort path on the device: one thread per node writes its key
sequence, one device sort orders every (node, k) pair (``run_sort``).

The key kernel is ``run_sort.KEY_SOURCE`` compiled with
``cuda.jit(device=True)`` over the fused core's device rules (``_cuda.core``)
and called by a kernel that unpacks the stage from the packed node columns
and query buffer (``stage_args.unpack_source``), as the fused pass does:
the same source and rounding as the numba twin.

The order: CuPy's ``argsort`` of the negated flat keys where CuPy is
present (a stable sort: equal keys keep position then k order, as
``run_sort.order_by_sort``); under Numba's CUDA simulator, or without
CuPy, the keys are copied to the host and sorted there
(``order_on_host``, the simulator path).  Import this module only after
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
from .run_sort import KEY_SOURCE, key_namespace, order_by_sort

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
                    req_scratch, nz_scratch, keys, lens):
    j = cuda.grid(1)
    if j >= rows.shape[0]:
        return
{unpack}
    lens[j] = run_key_sequence(
        j, rows[j], width, seed_mix, allocatable, requested, nonzero_requested,
        filter_flags, score_flags, request, nonzero_request, requests_anything, fit_ignored,
        strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind,
        base_reasons, raw_by_row, sparams[0], sparams[1], sparams[2], sparams[3],
        req_scratch, nz_scratch, keys)
""".format(packed=SA.PACKED_PARAMETERS, unpack=SA.unpack_source("    "))

run_keys_kernel = compile_source(
    f"{__name__}.kernel", _KERNEL_SOURCE, cuda.jit, ("run_keys_kernel",),
    {"cuda": cuda, "run_key_sequence": _keys["run_key_sequence"]},
    filename="<run keys kernel (cuda)>")["run_keys_kernel"]


def slot_params(active, norm, weights, hi) -> np.ndarray:
    """[4, S] int64: active (0/1), normalization mode, weight and the run's
    maximum of every slot (one argument instead of four)."""
    return np.ascontiguousarray(np.stack([np.asarray(a, np.int64)
                                          for a in (active, norm, weights, hi)]))


def run_keys(rows: np.ndarray, width: int, seed_mix: int, packs, qbuf, reasons_d, raw_d,
             sparams: np.ndarray, n_res: int):
    """(keys [M, W] on the device, lens [M] on the host): the key kernel
    over ``rows`` (ascending) with the device row cache (``reasons_d`` [N],
    ``raw_d`` [N, S]); ``packs`` the device node packs, ``qbuf`` the query
    buffer (``CudaBackend``'s mirror)."""
    m = rows.shape[0]
    n = raw_d.shape[0]
    keys = cuda.device_array((m, width), np.int64)
    lens = cuda.device_array(m, np.int64)
    blocks = max(1, (m + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK)
    run_keys_kernel[blocks, THREADS_PER_BLOCK](
        cuda.to_device(rows), np.int64(width), np.uint64(seed_mix), *packs, qbuf, reasons_d,
        raw_d, cuda.to_device(sparams), cuda.device_array((n, n_res), np.int64),
        cuda.device_array((n, 2), np.int64), keys, lens)
    return keys, lens.copy_to_host()


def order_on_host(keys_d, lens, count: int) -> np.ndarray:
    """The simulator path: the keys copied to the host and ordered by
    ``run_sort.order_by_sort``."""
    return order_by_sort(keys_d.copy_to_host(), lens, count)


def order_positions(keys_d, lens, count: int) -> np.ndarray:
    """[P] positions in placement order (``run_sort.order_by_sort``'s
    answer): CuPy's stable argsort on the device where CuPy runs, else
    ``order_on_host``."""
    if cupy is None or CUDA_SIMULATOR:
        return order_on_host(keys_d, lens, count)
    p = int(min(count, int(lens.sum())))
    flat = cupy.asarray(keys_d).reshape(-1)
    order = cupy.argsort(-flat)[:p]
    return cupy.asnumpy(order // keys_d.shape[1])
