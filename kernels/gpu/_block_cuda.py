"""GPU blocks on the cuda backend: ``_block.place_block`` (the very source
``gpu.block`` compiles with ``njit``) compiled with
``cuda.jit(device=True)`` on top of the GPU rules' and the fused rules'
device functions, run by one device thread.

A block is a chain of decisions (each pod scored against the rows the
pods before it changed), so one thread walks it as the CPU does; the
point is the backend's parity (the cuda backend forms the same blocks
with the same placements), not speed.  Host arrays in and out: the launch
uploads the columns and copies them back (a strided view goes through a
contiguous copy, written back after).  Importing this module without a
device or the simulator raises ``BackendUnavailable``.
"""

from __future__ import annotations

import inspect

import numpy as np

from tensorsched.kernels._deps import cuda_unavailable_reason
from tensorsched.kernels._errors import BackendUnavailable

_reason = cuda_unavailable_reason()
if _reason is not None:
    raise BackendUnavailable(f"backend 'cuda' cannot run: {_reason}")

from numba import cuda  # noqa: E402

from tensorsched.kernels._compile import (  # noqa: E402
    COMPILED,
    KEY,
    compile_module,
    compile_source,
)
from tensorsched.kernels.fused import _cuda as _fused_cuda  # noqa: E402

from . import _block  # noqa: E402
from . import _cuda as _gpu_cuda  # noqa: E402
from ._block import EX_LEN, FUSED, INHERITED  # noqa: E402


def _base() -> dict:
    base = {name: _gpu_cuda.core[name] for name in INHERITED}
    base.update({name: _fused_cuda.core[name] for name in FUSED})
    base[KEY] = None
    base[COMPILED] = INHERITED + FUSED
    return base


_ns = compile_module(_block, lambda f: cuda.jit(f, device=True), base=_base())

# The kernel: place_block's parameters, its ``ex`` tuple flattened into
# EX_LEN arrays (built again on the device), and ``result`` [2] for its
# answer (pods handled, failures).
_PARAMS = [p for p in inspect.signature(_block.place_block).parameters if p != "ex"]
_EX = [f"ex{k}" for k in range(EX_LEN)]
_SOURCE = f'''
def place_block_kernel({", ".join(_PARAMS + _EX)}, result):
    ex = ({", ".join(_EX)},)
    handled, failures = place_block({", ".join(_PARAMS)}, ex)
    result[0] = handled
    result[1] = failures
'''
_kernel = compile_source(f"{__name__}.kernel", _SOURCE, cuda.jit, ("place_block_kernel",),
                         namespace={"place_block": _ns["place_block"]})["place_block_kernel"]


def place_block(*args) -> tuple[int, int]:
    """``gpu.block.place_block`` (same arguments, results and in-place
    updates) on the device, one thread."""
    *head, ex = args
    args = list(head) + list(ex)
    strided = []
    for k, a in enumerate(args):
        if isinstance(a, np.ndarray) and not a.flags.c_contiguous:
            args[k] = np.ascontiguousarray(a)
            strided.append((a, args[k]))
    result = np.zeros(2, np.int64)
    _kernel[1, 1](*args, result)
    for view, copy in strided:
        view[...] = copy
    return int(result[0]), int(result[1])
