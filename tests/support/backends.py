"""Which backends a test runs on: numpy and numba always; cuda under
Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, as CI runs ``-m cudasim``)
or on a machine with a CUDA device.  The one CUDA gate of the test suite."""

from __future__ import annotations

import functools
import os

import pytest

BACKENDS = ("numpy", "numba", "cuda")


def cudasim_enabled() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "") not in ("", "0")


@functools.lru_cache(maxsize=1)
def cuda_available() -> bool:
    """The cuda backend can run here: the simulator is on, or a device answers."""
    if cudasim_enabled():
        return True
    try:
        from numba import cuda
        return bool(cuda.is_available())
    except Exception:
        return False


_SKIP_CUDA = ("cuda backend needs NUMBA_ENABLE_CUDASIM=1 (simulator) or a CUDA device")


def backend_params(backends=BACKENDS):
    """pytest params for ``backends``; cuda is marked ``cudasim`` and skipped
    when it cannot run here."""
    out = []
    for b in backends:
        if b == "cuda":
            out.append(pytest.param(b, id=b, marks=[
                pytest.mark.cudasim,
                pytest.mark.skipif(not cuda_available(), reason=_SKIP_CUDA)]))
        else:
            out.append(pytest.param(b, id=b))
    return out


needs_cuda = pytest.mark.skipif(not cuda_available(), reason=_SKIP_CUDA)
