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


def popcount(words, *, xp):
    """Set bits per element of an int64 array, as int64."""
    count = getattr(xp, "bitwise_count", None)       # NumPy >= 2.0
    if count is not None:
        return count(words.astype(xp.uint64)).astype(xp.int64)   # two's complement bits
    x = words.astype(xp.uint64)
    n = xp.zeros(x.shape, dtype=xp.int64)
    for _ in range(64):
        n += (x & xp.uint64(1)).astype(xp.int64)
        x = x >> xp.uint64(1)
    return n
