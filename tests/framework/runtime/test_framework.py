"""``runtime.framework``: the cycle's arithmetic as kube-scheduler has it
(how many feasible nodes a cycle looks for, how many rows it scans, the
seeded tie rule), and a profile's plugins built into a Framework that
filters and scores one pod.  (The diagnosis of rejected nodes is in
test_diagnosis.py; compiled runs in tests/framework/scheduler/test_runs.py.)"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from reference import oracle
from support.builders import node, one_plugin_config, pod

from tensorsched.framework.errors import ConfigError
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.runtime import framework as F
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.kernels import layout as L
from tensorsched.kernels.fused._numba import core
from tensorsched.kernels.fused.ties import draw_index, pick_tied, seed_mix, tie_ranks


def upstream_num_feasible(percentage, n):
    """numFeasibleNodesToFind, read off schedule_one.go."""
    if n < 100:
        return n
    p = percentage or 0
    if p == 0:
        p = max(50 - n // 125, 5)
    return max(n * p // 100, 100)


@settings(max_examples=30)
@given(st.one_of(st.none(), st.integers(0, 100)), st.integers(0, 20000))
def test_num_feasible_nodes_to_find_is_upstreams(percentage, n):
    assert F.num_feasible_nodes_to_find(percentage, n) == upstream_num_feasible(percentage, n)


@pytest.mark.parametrize("percentage, n, want", [
    (None, 99, 99), (0, 100, 100), (0, 1000, 420), (0, 6000, 300), (10, 5000, 500),
    (1, 1000, 100), (100, 5000, 5000), (50, 150, 100)])
def test_num_feasible_nodes_to_find_cases(percentage, n, want):
    assert F.num_feasible_nodes_to_find(percentage, n) == want


def test_processed_rows_stop_at_the_last_feasible_one_needed():
    feasible = np.array([0, 1, 0, 1, 1, 0], np.bool_)
    assert F.processed_rows(feasible, 1) == 2
    assert F.processed_rows(feasible, 2) == 4
    assert F.processed_rows(feasible, 3) == 5
    assert F.processed_rows(feasible, 4) == 6            # never found: every row
    assert F.processed_rows(feasible, 0) == 6
    assert F.processed_rows(np.zeros(0, np.bool_), 1) == 0


def test_splitmix64_matches_the_reference_generator():
    # SplitMix64 (Steele, Lea, Flood) seeded 0: its first two outputs
    assert F.splitmix64(0) == 0xE220A8397B1DCDAF
    assert F.splitmix64(0x9E3779B97F4A7C15) == 0x6E789E6AA1B965F4


@settings(max_examples=30)
@given(st.integers(0, 2 ** 63 - 1), st.lists(st.integers(0, 5000), min_size=1, max_size=40,
                                             unique=True), st.integers(0, 200))
def test_tied_node_takes_the_highest_rank_then_the_lowest_row(seed, rows, pods):
    rows = np.asarray(rows, np.int64)
    pods_on = (rows * 7 + pods) % 111
    state = SimpleNamespace(requested=np.zeros((5001, 8), np.int64))   # what tied_node reads
    state.requested[rows, L.RES_PODS] = pods_on
    got = F.tied_node(state, seed, rows)
    ranks = tie_ranks(seed_mix(seed), rows, pods_on)
    assert got in rows.tolist()
    assert ranks[rows.tolist().index(got)] == ranks.max()
    assert got == min(int(r) for r, k in zip(rows, ranks) if k == ranks.max())
    # the answer does not depend on the order the tied rows come in
    assert F.tied_node(state, seed, rows[::-1].copy()) == got


def test_tie_ranks_take_the_fewest_pods_then_spread_over_nodes():
    rows = np.arange(4)
    picks = [rows[pick_tied(seed_mix(7), rows, np.full(4, k))] for k in range(400)]
    counts = np.bincount(picks, minlength=4)
    assert counts.min() > 60                               # each of 4 ties about 100 times
    # fewer pods rank higher, whatever the hash
    assert pick_tied(seed_mix(7), rows, np.array([3, 2, 5, 2])) in (1, 3)
    # alike pods on tied nodes: a round over them before any takes a second
    pods = np.zeros(50, np.int64)
    for _ in range(120):
        pods[pick_tied(seed_mix(3), np.arange(50), pods)] += 1
    assert pods.min() == 2 and pods.max() == 3
    a = tie_ranks(seed_mix(7), np.arange(1000), np.zeros(1000, np.int64))
    b = tie_ranks(seed_mix(7), np.arange(1000), np.ones(1000, np.int64))
    assert (a >= 0).all() and (a < 2 ** 31).all() and (a > b).all()


def test_draw_index_is_the_seeded_uniform_draw():
    got = [draw_index(7, a, 4) for a in range(400)]
    assert np.bincount(got, minlength=4).min() > 60
    mix = np.uint64(seed_mix(7))
    assert [core["draw_index"](mix, a, 4) for a in range(50)] == got[:50]
    assert F.splitmix64((7 * 0x9E3779B97F4A7C15 + 5) % 2 ** 64) % 4 == got[5]


def test_tie_rank_compiled_equals_the_numpy_twin():
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 1 << 20, 200)
    pods = rng.integers(0, 300, 200)
    mix = seed_mix(12345)
    want = tie_ranks(mix, rows, pods)
    got = [core["tie_rank"](np.uint64(mix), int(r), int(p)) for r, p in zip(rows, pods)]
    assert got == want.tolist()
    assert [oracle.tie_rank(12345, int(r), int(p)) for r, p in zip(rows, pods)] == want.tolist()


def framework(config, backend="numpy", objects=()):
    cluster = build_cluster([node("a", cpu="2"), node("b", cpu="4"), *objects], config)
    fw = cluster.framework_for(parse_pod(pod("x")), backend)
    return cluster, fw


def test_a_cycle_filters_scores_and_selects_a_feasible_node():
    cluster, fw = framework(one_plugin_config("NodeResourcesFit"))
    state = cluster.state
    rec = cluster.resolve(parse_pod(pod("p", cpu="3")))
    res = fw.run_cycle(state, rec, seed=0)
    assert res.prefilter_status.ok
    assert state.node_name(res.selected_row) == "b"        # a lacks the cpu
    assert res.found == 1 and res.processed == 2
    assert state.pods == {}                                  # nothing reserved
    none_fit = fw.run_cycle(state, cluster.resolve(parse_pod(pod("q", cpu="5"))))
    assert none_fit.selected_row == -1 and none_fit.found == 0


def test_plugins_at_points_and_signatures():
    cluster, fw = framework(one_plugin_config("NodeResourcesFit"))
    assert [p.name for p in fw.plugins_at("filter")] == ["NodeResourcesFit"]
    assert fw.plugins_at("permit") == []
    a = cluster.resolve(parse_pod(pod("a", cpu="1")))
    b = cluster.resolve(parse_pod(pod("b", cpu="1")))
    c = cluster.resolve(parse_pod(pod("c", cpu="2")))
    assert fw.signature(a) is not None and fw.signature(a) == fw.signature(b)
    assert fw.signature(a) != fw.signature(c)
    assert fw.backend_for("cycle") == "numpy" and fw.backend_name == "numpy"


def test_an_unknown_plugin_names_the_extension_point():
    config = one_plugin_config("NodeResourcesFit")
    config["profiles"][0]["plugins"]["permit"] = {"enabled": [{"name": "NoSuchPlugin"}]}
    with pytest.raises(ConfigError) as info:
        framework(config)
    assert "NoSuchPlugin" in str(info.value)
