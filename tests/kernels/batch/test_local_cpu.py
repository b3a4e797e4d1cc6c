"""The batched node-local engine's CPU twin (``local_cpu``) on hand-made
inputs: LeastAllocated spreading two pods over two equal nodes, a pod
that fits nowhere (-1, the cluster goes on), clusters cut from one
universe, the seeded tie rule (``fused.ties``) on a cluster's local
nodes, many identical nodes tied pod after pod (every node scored, and a
scan window), the failures' diagnosis counts (static statuses before and
after NodeResourcesFit, Fit's reason bits), and the checks naming a bad
array, groups dropped after their first failure, clusters reading a
static group's constants (``static_group``) as if they were the base.  Equality with the
Scheduler on random clusters is tests/framework/capacity/test_batch_probe.py."""

import numpy as np
import pytest

from tensorsched.kernels import layout as L
from tensorsched.kernels.batch import _local_core
from tensorsched.kernels.batch.local_cpu import run_local_batch, seed_mix
from tensorsched.kernels.fused import _core as fused_core
from tensorsched.kernels.fused import ties

from support.local_batches import hand_batch as _batch


def test_least_allocated_spreads_and_a_pod_that_fits_nowhere_is_skipped():
    rows, bound, _, _ = run_local_batch(_batch([[0, 1], [2], []], [[0, 1, 0], [0, 0], [0]]))
    # cluster 0: the first pod ties (a seeded pick), the third goes to the other node
    assert rows[1] == -1 and {rows[0], rows[2]} == {0, 1}
    assert rows[3:5].tolist() == [2, -1]      # 500m: one 400m pod, then no room
    assert rows[5] == -1                       # no nodes
    assert bound.tolist() == [2, 1, 0]


def _tie_pick(seed, local_rows, pods):
    """The local node the tie rule takes among ``local_rows`` holding ``pods``."""
    local_rows = np.asarray(local_rows)
    return int(local_rows[ties.pick_tied(ties.seed_mix(seed), local_rows, np.asarray(pods))])


@pytest.mark.parametrize("seed", range(6))
def test_the_tie_rule_ranks_the_local_nodes_whatever_was_attempted_before(seed):
    # two equal nodes: the pod takes the tie rule's pick of local nodes 0
    # and 1 (no pods on them); pods that fit nowhere before it change
    # nothing.  The cluster lists universe rows 1, 0: the rank is the
    # local node's (its row in the cluster's own Scheduler), the answer
    # the universe row.
    local = _tie_pick(seed, [0, 1], [0, 0])
    for pods in ([0], [1, 0], [1, 1, 1, 0]):
        b = _batch([[1, 0]], [pods])._replace(seed=seed)
        assert run_local_batch(b)[0][-1] == [1, 0][local]
    assert seed_mix(1) == np.uint64(0x9E3779B97F4A7C15)
    assert seed_mix(12345) == np.uint64(ties.seed_mix(12345))


def _identical_nodes_expected(seed, n, n_pods, to_find):
    """Where ``n_pods`` 400m pods go on n identical 1000m nodes (two fit
    on each), cycle by cycle: the scan window from the start index up to
    the ``to_find``-th feasible node; LeastAllocated makes the window's
    nodes with the fewest pods the top-scored ones; the tie rule picks
    among them (``ties.pick_tied``)."""
    pods_on = np.zeros(n, np.int64)
    start, out = 0, []
    for _ in range(n_pods):
        order = (start + np.arange(n)) % n
        feasible = pods_on[order] < 2
        if not feasible.any():
            out.append(-1)
            continue
        seen = np.cumsum(feasible)
        processed = int(np.searchsorted(seen, to_find)) + 1 if seen[-1] >= to_find else n
        window = order[:processed][feasible[:processed]]
        tied = window[pods_on[window] == pods_on[window].min()]
        i = _tie_pick(seed, tied, pods_on[tied])
        pods_on[i] += 1
        out.append(i)
        start = (start + processed) % n
    return out


@pytest.mark.parametrize("seed, to_find", [(0, 40), (11, 40), (3, 7), (5, 1)])
def test_many_identical_nodes_take_the_tie_rules_pick_pod_after_pod(seed, to_find):
    # 40 identical nodes, 90 pods of 400m: each cycle ties every node of
    # its window with the fewest pods (all 40 at first); 80 bind, 10 fit
    # nowhere.  to_find = 40: every node scored (the key tree); fewer: the
    # scan window from the rotating start index.
    n = 40
    b = _batch([list(range(n))], [[0] * 90], alloc_cpu=(1000,) * n)._replace(
        seed=seed, num_to_find=np.array([to_find]))
    rows, bound, _, _ = run_local_batch(b)
    want = _identical_nodes_expected(seed, n, 90, to_find)
    assert rows.tolist() == want
    assert bound.tolist() == [80]
    if to_find == n:
        # every node once before any twice, in the ranks' order (not the rows')
        assert sorted(want[:n]) == list(range(n)) and want[:n] != list(range(n))


@pytest.mark.parametrize("seed", range(4))
def test_a_group_stops_at_its_first_failure_without_attempts(seed):
    # group 0: class 1 fits nowhere, then two more of it (dropped: no
    # attempt, no diagnosis); group 1: class 0 on two equal nodes, the tie
    # rule's pick; a pod of no group (-1) is attempted, and fails, as before
    pods = [1, 1, 0, 1, 1]
    b = _batch([[0, 1]], [pods])._replace(
        seed=seed, pod_group=np.array([0, 0, 1, 0, -1]), fail_cap=3)
    rows, bound, fail_pod, _ = run_local_batch(b)
    assert rows.tolist()[:2] == [-1, -1] and rows.tolist()[3:] == [-1, -1]
    assert rows[2] == _tie_pick(seed, [0, 1], [0, 0])
    assert fail_pod.tolist() == [0, 4, -1] and bound.tolist() == [1]
    # without groups every pod is attempted and fails but the two
    rows, bound, fail_pod, _ = run_local_batch(b._replace(pod_group=None))
    assert rows[2] == _tie_pick(seed, [0, 1], [0, 0])
    assert fail_pod.tolist() == [0, 1, 3] and bound.tolist() == [1]


def test_the_cores_constants_are_the_fused_cores():
    assert _local_core.NORM_MINMAX == fused_core.NORM_MINMAX
    assert _local_core.RES_PODS_COL == L.RES_PODS


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


def _static_group_batch(to_find=3):
    """Three clusters of the three nodes, class 0 scored by InterPodAffinity
    (min-max, weight 2) beside Fit; cluster 0 reads the base constants
    (node 0 rejected by the plugin's bit, raw scores favouring node 1),
    clusters 1 and 2 group 1 (node 2 rejected, node 0 favoured) and
    group 0 (nothing rejected, equal scores); 400m pods and one 2000m pod
    that fits nowhere (its statuses per group)."""
    b = _batch([[0, 1, 2]] * 3, [[0, 0, 1, 0]] * 3)
    c, u = 2, 3
    active = b.c_active.copy()
    active[:, 5] = True
    norm = np.zeros((c, 6), np.int64)
    norm[:, 5] = _local_core.NORM_MINMAX
    weights = b.c_weights.copy()
    weights[:, 5] = 2
    ipa = np.int64(1) << 30
    sb = np.zeros((c, u), np.int64)
    sb[:, 0] = ipa
    raw = np.zeros((c, u, 3), np.int64)
    raw[:, :, 2] = (0, 9, 3)
    s_key = np.where(sb != 0, 0, -1)
    g_bits = np.zeros((2, c, u), np.int64)
    g_bits[1, :, 2] = ipa
    g_raw = np.zeros((2, c, u), np.int64)
    g_raw[1] = (8, 0, 1)
    g_key = np.where(g_bits != 0, 1, -1)
    return b._replace(c_active=active, c_norm=norm, c_weights=weights, static_bits=sb,
                      static_raw=raw, s_key=s_key, key_first=np.array([True, True]),
                      fail_cap=1, num_to_find=np.full(3, to_find, np.int64),
                      static_group=np.array([-1, 1, 0]), group_bits=g_bits,
                      group_raw=g_raw, group_s_key=g_key)


@pytest.mark.parametrize("to_find", [3, 1])
def test_a_static_group_reads_its_own_constants(to_find):
    # each cluster equals the same cluster alone with its group's tables
    # as the base ones
    b = _static_group_batch(to_find)
    res = run_local_batch(b)
    raw = b.static_raw
    for k, g in enumerate(b.static_group.tolist()):
        one = b._replace(node_ptr=b.node_ptr[:2], pod_ptr=b.pod_ptr[:2],
                         node_rows=b.node_rows[:3], pod_cls=b.pod_cls[:4],
                         image_group=b.image_group[:1], num_to_find=b.num_to_find[:1],
                         static_group=None, group_bits=None, group_raw=None,
                         group_s_key=None)
        if g >= 0:
            alone_raw = raw.copy()
            alone_raw[:, :, 2] = b.group_raw[g]
            one = one._replace(static_bits=b.group_bits[g], static_raw=alone_raw,
                               s_key=b.group_s_key[g])
        want = run_local_batch(one)
        np.testing.assert_array_equal(res.rows[4 * k:4 * k + 4], want.rows)
        np.testing.assert_array_equal(res.fail_counts[k], want.fail_counts[0])
    # the groups decide: node 0 closed to cluster 0, node 2 to cluster 1
    assert 0 not in res.rows[:4].tolist() and 2 not in res.rows[4:8].tolist()
    assert res.fail_counts[0, 0] == 1 and res.fail_counts[1, 1] == 1


@pytest.mark.parametrize("field, value", [
    ("static_group", np.array([-1, 2, 0])),
    ("static_group", np.array([0, 0])),
    ("group_raw", np.zeros((1, 2, 3), np.int64)),
    ("group_s_key", np.full((2, 2, 3), 5, np.int64)),
])
def test_bad_static_groups_are_named(field, value):
    b = _static_group_batch()._replace(**{field: value})
    with pytest.raises(ValueError, match=field):
        run_local_batch(b)
