"""Shared fixtures: the ``backend`` fixture runs a test on every backend.

numpy and numba always run.  cuda runs under Numba's CUDA simulator when
``NUMBA_ENABLE_CUDASIM=1`` is set (CI runs ``-m cudasim`` separately with it)
or on a machine with a real CUDA device; otherwise it is skipped.  The cuda
parameter carries the ``cudasim`` mark so ``-m cudasim`` selects it.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import pytest

# tests/ holds helper modules (golden.py, strategies.py, reference/).
_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

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


@pytest.fixture(params=backend_params())
def backend(request) -> str:
    """Every backend name: numpy, numba, cuda (cuda only where it can run)."""
    return request.param
