"""Optional dependencies, probed once.

``cupy`` is the module or None.  ``TENSORSCHED_DISABLE_CUPY=1`` hides an
installed CuPy (useful to test the NumPy twin of CuPy paths)."""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec

cupy = None
if os.environ.get("TENSORSCHED_DISABLE_CUPY", "0") != "1" and find_spec("cupy") is not None:
    try:
        import cupy  # noqa: F811
    except Exception:   # a broken CUDA install must not break the CPU backends
        cupy = None

CUDA_SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"


_compile_only = False


def allow_compile_without_device() -> None:
    """From now on the cuda modules import where no device answers (they
    otherwise refuse to, ``BackendUnavailable``): for compiling their kernels
    ahead of a device only (``bench.cuda_ptx``), never for running them."""
    global _compile_only
    _compile_only = True


def cuda_unavailable_reason() -> str | None:
    """Why the ``cuda`` backend cannot run here, or None when it can (or
    when only compiling: ``allow_compile_without_device``)."""
    if CUDA_SIMULATOR or _compile_only:
        return None
    try:
        from numba import cuda
    except Exception as exc:  # pragma: no cover - numba-cuda is a core dependency
        return f"numba-cuda is not importable: {exc}"
    try:
        if not cuda.is_available():
            return ("no CUDA device is available (no GPU or no driver); run on a GPU "
                    "machine, or set NUMBA_ENABLE_CUDASIM=1 to use Numba's CUDA simulator")
    except Exception as exc:
        return f"CUDA initialisation failed: {exc}"
    try:
        # numba-cuda loads its CUDA target at the first kernel compile; load it
        # here so a numba-cuda / NumPy mismatch is a reason, not a traceback
        # mid-run (numba-cuda 0.30 reads numpy.row_stack, gone in NumPy 2.5).
        import numba.cuda.cudaimpl  # noqa: F401
    except Exception as exc:
        return (f"numba-cuda {_version('numba-cuda')} cannot load its CUDA target with "
                f"NumPy {_version('numpy')}: {type(exc).__name__}: {exc}")
    return None


def _version(distribution: str) -> str:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "(version unknown)"


_gpu_present = None


def gpu_present() -> bool:
    """A real CUDA device answers here (Numba's simulator is not one), probed
    once per process: ``--backend auto`` sends the GPU stages there."""
    global _gpu_present
    if _gpu_present is None:
        _gpu_present = (not CUDA_SIMULATOR and not _compile_only
                        and cuda_unavailable_reason() is None)
    return _gpu_present
