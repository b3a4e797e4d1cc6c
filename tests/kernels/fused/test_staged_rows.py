"""The rows a device cycle uploads (``staged_rows``): exactly the rows
written after a version, in ascending order, each carrying its values of
the three device packs as ``stage_args.pack_nodes`` lays them out; more
rows than the buffer holds are counted and left unstaged."""

import numpy as np
from hypothesis import given, settings, strategies as st

from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.generators.clusters import sample
from tensorsched.kernels.fused import stage_args as SA
from tensorsched.kernels.fused import staged_rows as SR


def _cluster(seed):
    nodes, pods = sample(seed=seed, nodes=9, pods=14)
    return build_cluster(nodes + pods)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 3), versions=st.lists(st.integers(0, 6), min_size=9, max_size=9),
       seen=st.integers(-1, 6), cap=st.integers(1, 10))
def test_staged_rows_are_the_written_rows_packed(seed, versions, seen, cap):
    cols = _cluster(seed).state.columns()
    n = cols.allocatable.shape[0]
    row_version = np.zeros(n + 3, np.int64)        # a source's row_version may be longer
    row_version[:n] = versions[:n]
    row_version[n:] = 99                           # rows past the columns never count
    width = SR.row_width(cols)
    out = np.full(SR.staged_size(cap, width), -7, np.int64)
    k = SR.stage(row_version, seen, cols, out, cap)
    written = np.flatnonzero(row_version[:n] > seen)
    assert k == written.shape[0]
    if not 0 < k <= cap:
        return
    packs = SA.pack_nodes(cols)
    widths = (packs[0].shape[1], packs[1].shape[1], packs[2].shape[1])
    assert width == sum(widths)
    rows, i64, flags, labels = SR.unstage(out, k, widths)
    assert rows.tolist() == written.tolist()
    for got, want in zip((i64, flags, labels), packs):
        assert np.array_equal(got, want[written]), (got, want[written])
    assert (out[SR.staged_size(k, width):] == -7).all()     # nothing past the k rows
