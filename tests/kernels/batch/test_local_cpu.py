"""The batched node-local engine's CPU twin (``local_cpu``) on hand-made
inputs: LeastAllocated spreading two pods over two equal nodes, a pod
that fits nowhere (-1, the cluster goes on), clusters cut from one
universe, the failures' diagnosis counts (static statuses before and
after NodeResourcesFit, Fit's reason bits), and the checks naming a bad
array, groups dropped after their first failure.  Equality with the
Scheduler on random clusters is tests/framework/capacity/test_batch_probe.py."""

import numpy as np
import pytest

from tensorsched.framework.runtime.framework import tie_break_index
from tensorsched.kernels.batch.local_cpu import run_local_batch, seed_mix

from support.local_batches import hand_batch as _batch


def test_least_allocated_spreads_and_a_pod_that_fits_nowhere_is_skipped():
    rows, bound, _, _ = run_local_batch(_batch([[0, 1], [2], []], [[0, 1, 0], [0, 0], [0]]))
    # cluster 0: the first pod ties (a seeded pick), the third goes to the other node
    assert rows[1] == -1 and {rows[0], rows[2]} == {0, 1}
    assert rows[3:5].tolist() == [2, -1]      # 500m: one 400m pod, then no room
    assert rows[5] == -1                       # no nodes
    assert bound.tolist() == [2, 1, 0]


@pytest.mark.parametrize("seed", range(6))
def test_the_tie_break_is_the_runtimes_and_follows_the_attempt(seed):
    # two equal nodes: the pod takes tie_break_index(seed, attempt, 2); a pod
    # that fits nowhere before it still advances the attempt
    for pods, attempt in (([0], 0), ([1, 0], 1), ([1, 1, 1, 0], 3)):
        b = _batch([[0, 1]], [pods])._replace(seed=seed)
        assert run_local_batch(b)[0][-1] == tie_break_index(seed, attempt, 2)
    assert seed_mix(1) == np.uint64(0x9E3779B97F4A7C15)


@pytest.mark.parametrize("seed", range(4))
def test_a_group_stops_at_its_first_failure_without_attempts(seed):
    # group 0: class 1 fits nowhere, then two more of it (dropped: no
    # attempt, no diagnosis); group 1: class 0 on two equal nodes, its
    # tie-break at attempt 1 (the one failure before it), not 3; a pod
    # of no group (-1) is attempted, and fails, as before
    pods = [1, 1, 0, 1, 1]
    b = _batch([[0, 1]], [pods])._replace(
        seed=seed, pod_group=np.array([0, 0, 1, 0, -1]), fail_cap=3)
    rows, bound, fail_pod, _ = run_local_batch(b)
    assert rows.tolist()[:2] == [-1, -1] and rows.tolist()[3:] == [-1, -1]
    assert rows[2] == tie_break_index(seed, 1, 2)
    assert fail_pod.tolist() == [0, 4, -1] and bound.tolist() == [1]
    # without groups every pod is attempted: the tie-break at attempt 2
    rows = run_local_batch(b._replace(pod_group=None))[0]
    assert rows[2] == tie_break_index(seed, 2, 2)


@pytest.mark.parametrize("field, value, message", [
    ("node_rows", np.array([0, 5]), "node_rows"),
    ("pod_ptr", np.array([0, 9]), "pod_ptr"),
    ("c_weights", np.ones((3, 5), np.int64), "c_weights"),
    ("pod_group", np.array([63]), "pod_group"),
    ("pod_group", np.array([0, 0]), "pod_group"),
])
def test_bad_arrays_are_named(field, value, message):
    b = _batch([[0, 1]], [[0]])._replace(**{field: value})
    with pytest.raises(ValueError, match=message):
        run_local_batch(b)


def test_failures_count_the_status_that_decides_each_node():
    # class 1 (2000m) fits nowhere.  Node 0: a static status (key 0) from a
    # filter before NodeResourcesFit; node 1: a static status (key 1) after
    # Fit, which also rejects it (Fit decides); node 2: Fit alone.
    b = _batch([[0, 1, 2], [2]], [[1, 0, 1], [0, 0, 1]])
    sb = np.zeros((2, 3), np.int64)
    sb[1, 0] = 1 << 2
    sb[1, 1] = 1 << 4
    s_key = np.full((2, 3), -1, np.int64)
    s_key[1, 0], s_key[1, 1] = 0, 1
    b = b._replace(static_bits=sb, s_key=s_key, key_first=np.array([True, False]), fail_cap=2)
    res = run_local_batch(b)
    insufficient_cpu = 2 + 24          # the static keys, then bit 24 + resource 0
    assert res.fail_pod.tolist() == [0, 2, 1, 2]
    want = np.zeros(2 + 65, np.int64)
    want[0] = 1
    want[insufficient_cpu] = 2
    want[2 + 64] = 2
    np.testing.assert_array_equal(res.fail_counts[0], want)
    np.testing.assert_array_equal(res.fail_counts[1], want)   # nothing placed between
    # cluster 1 (node 2, 500m): the second 400m pod fails on cpu (400 + 400
    # > 500), then class 1 does
    one = np.zeros(2 + 65, np.int64)
    one[insufficient_cpu] = 1
    one[2 + 64] = 1
    np.testing.assert_array_equal(res.fail_counts[2:], [one, one])
    assert res.bound.tolist() == [1, 1]
    # one slot per cluster: the first failure only
    res = run_local_batch(b._replace(fail_cap=1))
    assert res.fail_pod.tolist() == [0, 1]


def test_failure_keys_are_checked():
    b = _batch([[0, 1]], [[0]])._replace(s_key=np.full((2, 3), 4, np.int64),
                                         key_first=np.zeros(2, np.bool_))
    with pytest.raises(ValueError, match="s_key"):
        run_local_batch(b)
