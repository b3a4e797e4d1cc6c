"""The cycle pick by chunks (``fused.cycle``, the host twin of the device
finalize) answers what the numba backend's ``finalize_rows`` and the tie
rule answer: the picked row and position, rows processed, feasible found,
whatever the number of chunks the rows are split into."""

import numpy as np
from cycle_cases import cycles, numba_answer
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.kernels.fused import cycle
from tensorsched.kernels.fused._core import RES_PODS


@settings(max_examples=150, deadline=None)
@given(cycles(), st.sampled_from([1, 2, 3, 7, 64]))
def test_pick_by_chunks_equals_finalize_rows_and_the_tie_rule(case, threads):
    rows, start, reasons, raw, to_find, active, norm, weights, mix, requested = case
    sp = cycle.slot_params(active, norm, weights, raw.shape[1])
    got = cycle.pick(rows, start, reasons, raw, to_find, sp, mix, requested, RES_PODS, threads)
    assert tuple(int(v) for v in got) == numba_answer(*case)


def test_pick_ties_go_to_the_tie_rule_not_the_first_row():
    """Every row scores the same: the pick is the tie rule's (the highest
    rank, fewest pods first), not the first position."""
    n = 9
    rows = np.arange(n, dtype=np.int64)
    reasons = np.zeros(n, np.int64)
    raw = np.full((n, 1), 7, np.int64)
    requested = np.zeros((n, 4), np.int64)
    requested[:, RES_PODS] = 3
    requested[5, RES_PODS] = 0          # fewest pods: ranks above every other
    sp = cycle.slot_params(np.ones(1, bool), np.ones(1, np.int64), np.ones(1, np.int64), 1)
    got = cycle.pick(rows, 2, reasons, raw, n, sp, 12345, requested, RES_PODS, 4)
    assert list(got) == [5, n, n, 3]
