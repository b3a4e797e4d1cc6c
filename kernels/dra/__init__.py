"""Dynamic Resource Allocation kernels: the per-node feasibility pass of the
structured allocator over device columns: ``feasible`` (first fit of plain
requests, NumPy twin and Numba in ``_numba``) and ``search`` (the
allocator's depth-first search with constraints and counters: per-node
rules in ``_search_core``, compiled for the CPU by ``_search_numba`` and as
a CUDA kernel by ``_search_cuda``)."""

from .feasible import FIT, NO_FIT, UNDECIDED, greedy_first_fit, greedy_first_fit_numpy
from .search import first_fit_search

__all__ = [
    "FIT",
    "NO_FIT",
    "UNDECIDED",
    "greedy_first_fit",
    "greedy_first_fit_numpy",
    "first_fit_search",
]
