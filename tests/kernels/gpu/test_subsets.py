"""``kernels.gpu.subsets``: the subset tables of a node topology (masks in
combinations order, interconnect costs, island / NUMA flags), padding that
never fits, the topology score, and the numba kernels equal to their NumPy
twins on random nodes.  (The cheapest-subset search against brute force is
in tests/topology/test_node_topology.py.)"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings, strategies as st

from tensorsched.kernels.gpu import subsets as KS
from tensorsched.kernels.gpu._core import C_ISLAND, C_NUMA


def test_subset_masks_in_combinations_order():
    assert KS.subset_masks(3, 2).tolist() == [0b011, 0b101, 0b110]
    assert KS.subset_masks(4, 4).tolist() == [0b1111]
    assert KS.subset_masks(3, 0).shape == (0,) and KS.subset_masks(3, 4).shape == (0,)


@settings(max_examples=20)
@given(st.integers(1, 8), st.integers(1, 8))
def test_subset_masks_are_every_k_subset_once(count, k):
    masks = KS.subset_masks(count, k).tolist()
    want = [sum(1 << g for g in c) for c in itertools.combinations(range(count), k)]
    assert masks == want and len(set(masks)) == len(masks)
    assert all(bin(m).count("1") == k and m < (1 << count) for m in masks)


def test_link_levels():
    lv = KS.link_levels(np.array([0, 0, 1, -1]), np.array([0, 0, 0, 0]))
    assert lv.tolist() == [[0, 1, 2, 2], [1, 0, 2, 2], [2, 2, 0, 2], [2, 2, 2, 0]]
    unknown = KS.link_levels(np.array([-1, -1]), np.array([-1, -1]))
    assert unknown.tolist() == [[0, 3], [3, 0]]            # unknown ids are not "the same"


def test_topology_table_costs_and_flags():
    # 4 GPUs: islands {0,1} {2,3}, NUMA nodes {0,1,2,3} | none
    sub, cost, iok, nok = KS.topology_table(4, [0, 0, 1, 1], [0, 0, 0, 0], 2)
    assert sub.tolist() == KS.subset_masks(4, 2).tolist()
    by_mask = dict(zip(sub.tolist(), zip(cost.tolist(), iok.tolist(), nok.tolist())))
    assert by_mask[0b0011] == (1 * 1000 + 1, True, True)      # one island
    assert by_mask[0b0101] == (2 * 1000 + 2, False, True)     # two islands, one NUMA node
    sub3, cost3, iok3, _ = KS.topology_table(4, [0, 0, 1, 1], [0, 0, 0, 0], 3)
    # {0,1,2}: pairs 01 (1), 02 (2), 12 (2): loosest 2, sum 5
    assert dict(zip(sub3.tolist(), cost3.tolist()))[0b0111] == 2005 and not iok3.any()


def test_topology_table_pads_short_topologies_with_unknown_ids():
    sub, cost, iok, nok = KS.topology_table(3, [0], [], 1)
    assert sub.tolist() == [1, 2, 4] and cost.tolist() == [0, 0, 0]
    assert iok.all()                                     # one GPU: always one island
    assert not nok.any()                                 # NUMA unknown
    assert KS.topology_table(2, [0, 0], [0, 0], 3)[0].shape == (0,)


def test_stack_tables_pads_with_a_mask_that_never_fits():
    a = KS.topology_table(2, [0, 0], [0, 0], 1)
    b = KS.topology_table(4, [0, 0, 1, 1], [0, 0, 1, 1], 1)
    sub, cost, iok, nok = KS.stack_tables([a, b])
    assert sub.shape == (2, 4) and (sub[0, 2:] == KS.PAD).all()
    assert not iok[0, 2:].any() and not nok[0, 2:].any()
    topo = np.array([0], np.int64)
    free = np.array([(1 << 62) - 1], np.int64)           # everything but the padding bit
    out_c, out_i = np.empty(1, np.int64), np.empty(1, np.int64)
    KS.best_subsets_np(topo, free, np.zeros(1, np.int64), sub, cost, iok, nok, out_c, out_i)
    assert out_i[0] in (0, 1)
    assert KS.stack_tables([])[0].shape == (0, 1)


def test_mask_indices():
    assert KS.mask_indices(0) == [] and KS.mask_indices(0b101001) == [0, 3, 5]


def test_topology_score_by_loosest_link():
    cost = np.array([-1, 0, 1001, 2002, 3006], np.int64)
    assert KS.topology_score(cost).tolist() == [0, 100, 100, 50, 0]


def test_free_masks_np_counts_only_real_gpus_with_room():
    count = np.array([2, 4], np.int64)
    left = np.array([[1000, 200, 1000, 1000], [1000, 200, 1000, 0]], np.int64)
    got = KS.free_masks_np(count, left, 500, np.array([-1, 0b0101], np.int64))
    assert got.tolist() == [0b01, 0b0101]


def _random_nodes(rng, n, g=8):
    count = rng.choice([0, 2, 4, 8], n).astype(np.int64)
    left = rng.choice([0, 250, 500, 1000], (n, g)).astype(np.int64)
    numa = np.where(np.arange(g)[None, :] < 4, 0, 1).repeat(n, 0).astype(np.int64)
    zc = rng.integers(0, 8000, (n, 2)).astype(np.int64)
    zm = rng.integers(0, 8000, (n, 2)).astype(np.int64)
    return count, left, numa, zc, zm


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2 ** 31), st.integers(1, 4), st.sampled_from([250, 500, 1000]))
def test_subset_costs_numba_equals_numpy(seed, k, milli):
    rng = np.random.default_rng(seed)
    n = 12
    count, left, numa, zc, zm = _random_nodes(rng, n)
    tables = [KS.topology_table(8, [0, 0, 0, 0, 1, 1, 1, 1], [0] * 4 + [1] * 4, k),
              KS.topology_table(8, [0, 0, 1, 1, 2, 2, 3, 3], [0] * 4 + [1] * 4, k)]
    sub, cost, iok, nok = KS.stack_tables(tables)
    topo = np.where(count == 8, rng.integers(0, 2, n), -1).astype(np.int64)
    cons = rng.choice([0, C_ISLAND, C_NUMA, C_ISLAND | C_NUMA], n).astype(np.int64)
    outs = []
    for fn in (KS.subset_costs, KS.subset_costs_np):
        c, i = np.empty(n, np.int64), np.empty(n, np.int64)
        fn(count, left, numa, zc, zm, topo, cons, 4000, 4000, milli, sub, cost, iok, nok, c, i)
        outs.append((c.tolist(), i.tolist()))
    assert outs[0] == outs[1]
    assert all(c == -1 for c, t in zip(outs[0][0], topo) if t < 0)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2 ** 31), st.integers(-1, 4), st.sampled_from([-250, 0, 250, 1000]))
def test_gpu_fit_nodes_numba_equals_numpy(seed, num, milli):
    # asks of no GPU too (num or milli <= 0): GpuShareFit lets such a pod
    # through on every node, GPU-less and of any model alike
    rng = np.random.default_rng(seed)
    count, left, _, _, _ = _random_nodes(rng, 10)
    model = rng.integers(-1, 3, 10).astype(np.int64)
    for mask in (-1, 0b001, 0b110):
        a = KS.gpu_fit_nodes(count, model, left, num, milli, mask)
        b = KS.gpu_fit_nodes_np(count, model, left, num, milli, mask)
        assert a.tolist() == b.tolist()
        if num <= 0 or milli <= 0:
            assert a.all()


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2 ** 31), st.integers(1, 4), st.sampled_from([250, 500, 1000]),
       st.sampled_from([0, C_ISLAND, C_NUMA, C_ISLAND | C_NUMA]), st.booleans())
def test_rows_kernels_equal_the_full_ones_at_those_rows(seed, k, milli, base, guaranteed):
    """gpu_fit_rows / subset_rows (only the rows a placement changed, on
    full columns) answer as gpu_fit_nodes / subset_costs at those rows."""
    rng = np.random.default_rng(seed)
    n = 12
    count, left, numa, zc, zm = _random_nodes(rng, n)
    model = rng.integers(-1, 3, n).astype(np.int64)
    rows = np.flatnonzero(rng.random(n) < 0.5).astype(np.int64)
    fit = KS.gpu_fit_rows(rows, count, model, left, k, milli, 0b011, np.zeros(n, np.bool_))
    assert fit.tolist() == KS.gpu_fit_nodes(count, model, left, k, milli, 0b011)[rows].tolist()
    sub, cost, iok, nok = KS.stack_tables(
        [KS.topology_table(8, [0, 0, 0, 0, 1, 1, 1, 1], [0] * 4 + [1] * 4, k)])
    topo = np.where(count == 8, 0, -1).astype(np.int64)
    single = rng.random(n) < 0.5
    cons = np.full(n, base, np.int64) | np.where(single & guaranteed, C_NUMA, 0)
    zc_used = rng.integers(0, 2000, (n, 2)).astype(np.int64)
    zm_used = rng.integers(0, 2000, (n, 2)).astype(np.int64)
    c, i = np.empty(n, np.int64), np.empty(n, np.int64)
    KS.subset_costs(count, left, numa, zc - zc_used, zm - zm_used, topo, cons, 3000, 3000, milli,
                    sub, cost, iok, nok, c, i)
    got = KS.subset_rows(rows, base, guaranteed, single, count, left, numa, zc, zc_used, zm,
                         zm_used, topo, 3000, 3000, milli, sub, cost, iok, nok,
                         np.zeros(n, np.int64), np.zeros((n, 2), np.int64),
                         np.zeros((n, 2), np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64))
    assert [a.tolist() for a in got] == [cons[rows].tolist(), c[rows].tolist(), i[rows].tolist()]
