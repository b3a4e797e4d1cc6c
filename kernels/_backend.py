"""Every NumPy/CuPy divergence, in one place."""

from __future__ import annotations

import numpy as np

from ._deps import cupy


def array_namespace(*arrays):
    """The array module of the inputs (CuPy when any input is a CuPy array).

    Mixed NumPy/CuPy inputs raise: no silent host/device copies."""
    if cupy is None:
        return np
    kinds = {isinstance(a, cupy.ndarray) for a in arrays if hasattr(a, "shape")}
    if kinds == {True}:
        return cupy
    if kinds == {True, False}:
        raise ValueError("Input arrays use different devices (NumPy and CuPy mixed)")
    return np


def to_host(a):
    """A NumPy array of ``a`` (copies from the device when needed)."""
    if cupy is not None and isinstance(a, cupy.ndarray):
        return cupy.asnumpy(a)
    if hasattr(a, "copy_to_host"):
        return a.copy_to_host()
    return np.asarray(a)
