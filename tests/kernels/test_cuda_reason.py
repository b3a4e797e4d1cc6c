"""kernels/_deps.py: why the cuda backend cannot run is a sentence, found
before any kernel compiles (no traceback from deep inside numba-cuda)."""

from __future__ import annotations

import sys

from numba import cuda

from tensorsched.kernels import _deps


def test_no_device_is_a_reason(monkeypatch):
    monkeypatch.setattr(_deps, "CUDA_SIMULATOR", False)
    monkeypatch.setattr(cuda, "is_available", lambda: False)
    assert "no CUDA device is available" in _deps.cuda_unavailable_reason()


def test_cuda_target_that_cannot_load_is_a_reason(monkeypatch):
    # A device answers, but numba-cuda's CUDA target fails to import (as
    # numba-cuda 0.30 does under NumPy 2.5): the reason names both versions.
    monkeypatch.setattr(_deps, "CUDA_SIMULATOR", False)
    monkeypatch.setattr(cuda, "is_available", lambda: True)
    monkeypatch.setitem(sys.modules, "numba.cuda.cudaimpl", None)
    reason = _deps.cuda_unavailable_reason()
    assert reason.startswith("numba-cuda ") and "cannot load its CUDA target" in reason
    assert "NumPy " in reason and "numba.cuda.cudaimpl" in reason


def test_simulator_is_no_reason(monkeypatch):
    monkeypatch.setattr(_deps, "CUDA_SIMULATOR", True)
    monkeypatch.setattr(cuda, "is_available", lambda: False)
    assert _deps.cuda_unavailable_reason() is None
