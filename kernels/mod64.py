"""Device functions whose unsigned 64-bit arithmetic wraps modulo 2**64
by design: the splitmix64 hashes of the seeded choices (``fused._core``'s
tie rank and uniform draw, ``batch._candidates``' preemption offset) and
``fused._core``'s bit count of an int64 word.

On a GPU, as in Numba's CPU code, a uint64 add or multiply past 2**64
keeps the low 64 bits without a word; the hashes rely on it.  Under
Numba's CUDA simulator the same source runs on NumPy scalars, which give
the same low 64 bits but warn ("overflow encountered in scalar add",
"... multiply") at every wrap.  ``device_jit`` is the decorator
``compile_module`` takes for a module of device functions:
``cuda.jit(f, device=True)`` for each function; under the simulator the
functions named in ``wraps`` run under ``np.errstate(over="ignore")``,
entered in the simulated thread itself (NumPy's error state is per
thread: a launch's caller cannot set it for a block's threads).  The
device code is the same either way, and only the named functions are
quiet: an overflow anywhere else still warns.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

import numpy as np

from ._deps import CUDA_SIMULATOR

#: ``fused._core``'s functions that wrap by design: the tie rank and the
#: uniform draw, and ``popcount64`` (``x - 1`` of a word with only the sign
#: bit left wraps to INT64_MAX; the AND then clears it) (``batch._candidates``
#: names its own, ``WRAPS_MOD_2_64``)
FUSED_CORE_WRAPS = ("tie_rank", "draw_index", "popcount64")


def device_jit(wraps: Iterable[str] = ()) -> Callable:
    """The decorator of a module's device functions (for
    ``compile_module``): ``cuda.jit(f, device=True)``, and under the CUDA
    simulator the functions named in ``wraps`` quiet about wrapping mod
    2**64 (see the module docstring)."""
    from numba import cuda     # the cuda target (or its simulator) only where it compiles

    quiet = frozenset(wraps)

    def decorate(f):
        device = cuda.jit(f, device=True)
        if not CUDA_SIMULATOR or f.__name__ not in quiet:
            return device

        @functools.wraps(f)
        def wrapping(*args):
            with np.errstate(over="ignore"):
                return device(*args)
        return cuda.jit(wrapping, device=True)

    return decorate
