"""``search.first_fit_search`` as a Numba CUDA kernel: one thread per node
running ``_search_core.search_node`` as a device function.  Each thread has
its own rows of the constraint and depth scratch; ``taken`` (per candidate
entry) and ``used`` (per node-local counter slot) are shared, their cells
belonging to one node each.  The kernel's parameter and call lists come
from ``search_args``."""

from __future__ import annotations

import numpy as np
from numba import cuda

from tensorsched.kernels._compile import compile_module, compile_source

from . import _search_core
from . import search_args

THREADS_PER_BLOCK = 128

core = compile_module(_search_core, lambda f: cuda.jit(f, device=True))
search_node = core["search_node"]

_PARAMETERS = search_args.parameters()

_KERNEL_SOURCE = f"""
def search_kernel({_PARAMETERS}):  # pragma: no cover - compiled
    node = cuda.grid(1)
    if node >= out.shape[0]:
        return
    out[node] = search_node(node, {search_args.call_arguments(own_rows=True)})
"""

search_kernel = compile_source(
    f"{__name__}.search_kernel",
    _KERNEL_SOURCE,
    cuda.jit,
    ("search_kernel",),
    {"search_node": search_node, "cuda": cuda},
)["search_kernel"]


def first_fit_search_cuda(*arrays_and_budget):
    """Host arrays in, host arrays out (the kernel's inputs are uploaded once
    per call; the caller keeps the status columns resident when it repeats)."""
    *arrays, budget = arrays_and_budget
    args = search_args.prepare(arrays, budget, per_node_scratch=True)
    n = args["out"].shape[0]
    if n == 0:
        return args["out"], args["picks"]
    dev = {name: cuda.to_device(a) if isinstance(a, np.ndarray) else a
           for name, a in args.items()}
    blocks = (n + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
    search_kernel[blocks, THREADS_PER_BLOCK](*(dev[name] for name in _PARAMETERS.split(", ")))
    return dev["out"].copy_to_host(), dev["picks"].copy_to_host()
