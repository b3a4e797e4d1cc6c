"""Dynamic Resource Allocation kernels: the per-node feasibility pass of the
structured allocator over device columns (``feasible``: NumPy twin and Numba
``prange`` over nodes)."""

from .feasible import FIT, NO_FIT, UNDECIDED, greedy_first_fit, greedy_first_fit_numpy

__all__ = ["FIT", "NO_FIT", "UNDECIDED", "greedy_first_fit", "greedy_first_fit_numpy"]
