"""Node allocatable with some cells lifted out of reach: how the victim
search is told that NodeResourcesFit does not check a resource on a node
(an extended resource DRA serves there), without a change to the victim
kernels, which compare requests with ``allocatable`` on every backend.

``exempt`` [M] int64 holds, per row of ``rows``, reason bits in the fused
filters' layout: bit ``shift + r`` set means resource column r is not
checked on that row.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LIFTED", "lifted_allocatable", "lifted_allocatable_device"]

#: an allocatable no request reaches (requests and sums stay far below 2^62)
LIFTED = 1 << 62


def lifted_allocatable(allocatable: np.ndarray, rows: np.ndarray, exempt: np.ndarray,
                       shift: int) -> np.ndarray | None:
    """A copy of ``allocatable`` [N, R] int64 with ``allocatable[rows[i], r]``
    = LIFTED where ``exempt[i]`` has bit ``shift + r`` (r < 63 - shift);
    None when no such bit is set (the caller keeps the columns it has)."""
    rows = np.asarray(rows, np.int64)
    exempt = np.asarray(exempt, np.int64)
    r = max(0, min(allocatable.shape[1], 63 - shift))
    cells = (exempt[:, None] >> (shift + np.arange(r, dtype=np.int64))[None, :]) & 1
    if not cells.any():
        return None
    out = np.array(allocatable, np.int64, copy=True)
    i, k = np.nonzero(cells)
    out[rows[i], k] = LIFTED
    return out


def lifted_allocatable_device(allocatable: np.ndarray, rows: np.ndarray, exempt: np.ndarray,
                              shift: int):
    """``lifted_allocatable`` as a CUDA device array (None likewise)."""
    got = lifted_allocatable(allocatable, rows, exempt, shift)
    if got is None:
        return None
    from numba import cuda      # only with the cuda backend
    return cuda.to_device(got)
