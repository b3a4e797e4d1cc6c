"""GPU inventory, sharing kernels (numpy == numba == scalar oracle) and placement safety."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import gpu_oracle as GO

from tensorsched.kernels.gpu import share as K
from tensorsched.topology.gpu import (
    GpuAsk,
    build_inventory,
    inventory_from_nodes,
    pod_gpu_ask,
    read_openb_nodes,
)

MODELS = ["A10", "T4", "V100M32"]


@st.composite
def cluster(draw):
    n = draw(st.integers(1, 12))
    counts = draw(st.lists(st.sampled_from([0, 1, 2, 4, 8]), min_size=n, max_size=n))
    models = [draw(st.sampled_from(MODELS)) if c else "" for c in counts]
    inv = build_inventory([f"n{i}" for i in range(n)], [draw(st.integers(0, 64000)) for _ in range(n)],
                          [10 ** 6] * n, counts, models)
    for i in range(n):
        for g in range(counts[i]):
            inv.gpu_left[i, g] = draw(st.sampled_from([0, 100, 250, 500, 730, 1000]))
    return inv


@st.composite
def pod(draw):
    kind = draw(st.sampled_from(["cpu", "share", "whole"]))
    cpu = draw(st.integers(0, 32000))
    models = tuple(draw(st.lists(st.sampled_from(MODELS), max_size=2, unique=True)))
    if kind == "cpu":
        return dict(cpu=cpu, num=0, milli=0, models=())
    if kind == "share":
        return dict(cpu=cpu, num=1, milli=draw(st.integers(1, 999)), models=models)
    return dict(cpu=cpu, num=draw(st.sampled_from([1, 2, 4, 8])), milli=1000, models=models)


def oracle_node(inv, i):
    return dict(left=[int(x) for x in inv.gpu_left[i, :inv.gpu_count[i]]],
                model=inv.models[inv.model[i]] if inv.model[i] >= 0 else None,
                cpu=int(inv.cpu_left[i]))


@settings(max_examples=60, deadline=None)
@given(cluster(), pod(), st.lists(pod(), min_size=1, max_size=5))
def test_feasibility_and_frag_match_oracle(inv, p, typ):
    mask = inv.model_mask(p["models"])
    np_ok = K.feasible_np(inv.gpu_count, inv.model, inv.gpu_left, inv.cpu_left, inv.mem_left,
                          p["cpu"], 0, p["num"], p["milli"], mask)
    for i in range(inv.n_nodes):
        nb = K.node_fits(inv.gpu_count[i], inv.model[i], inv.gpu_left[i], inv.cpu_left[i],
                         inv.mem_left[i], p["cpu"], 0, p["num"], p["milli"], mask)
        assert bool(np_ok[i]) == nb == GO.fits(oracle_node(inv, i), p)
    freq = np.full(len(typ), 1.0 / len(typ))
    tp = (np.array([t["cpu"] for t in typ], np.int64), np.array([t["num"] for t in typ], np.int64),
          np.array([t["milli"] for t in typ], np.int64),
          np.array([inv.model_mask(t["models"]) for t in typ], np.int64), freq)
    f_np = K.frag_np(inv.gpu_count, inv.model, inv.gpu_left, inv.cpu_left, *tp)
    f_nb = K.cluster_frag(inv.gpu_count, inv.model, inv.gpu_left, inv.cpu_left, *tp,
                          np.zeros(inv.n_nodes))
    for i in range(inv.n_nodes):
        ref = GO.frag(oracle_node(inv, i), list(zip(typ, freq)))
        assert f_np[i] == pytest.approx(ref) and f_nb[i] == pytest.approx(ref)


@settings(max_examples=60, deadline=None)
@given(cluster(), pod())
def test_gpu_selection_matches_oracle(inv, p):
    out = np.empty(16, np.int64)
    for i in range(inv.n_nodes):
        c = int(inv.gpu_count[i])
        if p["milli"] == 0 or not GO.fits(dict(oracle_node(inv, i), cpu=10 ** 9), dict(p, models=())):
            continue
        k = K.select_gpus(K.SEL_BEST, c, inv.gpu_left[i], p["num"], p["milli"], 0.0, out)
        left = [int(x) for x in inv.gpu_left[i, :c]]
        if p["milli"] < 1000:
            assert k == 1 and out[0] == GO.best_fit_gpu(left, p["milli"])
        else:
            assert list(out[:k]) == GO.first_free(left, p["num"])


@settings(max_examples=40, deadline=None)
@given(cluster(), st.lists(pod(), min_size=1, max_size=25), st.sampled_from(K.POLICIES),
       st.integers(0, 2 ** 31))
def test_random_arrivals_never_overallocate(inv, pods, policy, seed):
    """Place a random arrival sequence with any policy: every pick is
    feasible and no GPU ever goes below 0 or above 1000 milli free."""
    rng = np.random.default_rng(seed)
    n = inv.n_nodes
    tp = (np.array([4000], np.int64), np.array([1], np.int64), np.array([500], np.int64),
          np.array([0], np.int64), np.array([1.0]))
    cs, cg, cv = np.zeros(n, np.int64), np.zeros(n, np.int64), np.full(n, -1, np.int64)
    ver, aff, og, out = np.zeros(n, np.int64), np.zeros((n, 18), np.int64), np.empty(n, np.int64), np.empty(16, np.int64)
    pid = K.POLICIES.index(policy)
    for p in pods:
        mask = inv.model_mask(p["models"])
        cpu_nz = p["cpu"] or 100
        sc = K.score_nodes(pid, inv.gpu_count, inv.model, inv.gpu_left, inv.cpu_left, inv.mem_left,
                           aff, p["cpu"], cpu_nz, 0, p["num"], p["milli"], mask, *tp, cs, cg, cv, ver, og)
        cs[:] = 0; cv[:] = -1   # shapes differ: no cache reuse across pods here
        feas = K.feasible_np(inv.gpu_count, inv.model, inv.gpu_left, inv.cpu_left, inv.mem_left,
                             p["cpu"], 0, p["num"], p["milli"], mask)
        assert np.array_equal(sc >= 0, feas)
        if not feas.any():
            continue
        cand = np.flatnonzero(sc == sc.max())
        i = int(cand[rng.integers(len(cand))])
        if policy == "FGD" and p["num"] == 1 and 0 < p["milli"] < 1000:
            out[0] = og[i]; k = 1
        else:
            k = K.select_gpus(K.SEL_RANDOM if policy == "Random" else K.SEL_BEST, int(inv.gpu_count[i]),
                              inv.gpu_left[i], p["num"], p["milli"], rng.random(), out)
        assert k == (p["num"] if p["milli"] else 0)
        assert len(set(out[:k].tolist())) == k
        for g in out[:k]:
            assert g < inv.gpu_count[i] and inv.gpu_left[i, g] >= p["milli"]
            inv.gpu_left[i, g] -= p["milli"]
        inv.cpu_left[i] -= p["cpu"]
        ver[i] += 1
        aff[i, K.affinity_tag(p["num"], p["milli"])] += 1
        assert (inv.gpu_left >= 0).all() and (inv.gpu_left <= 1000).all() and (inv.cpu_left >= 0).all()


def test_fgd_prefers_less_fragmenting_gpu():
    # a 0.5-GPU pod next to typical 0.5-GPU pods: putting it on the GPU with 500 free
    # leaves no fragment; on a whole GPU it strands 500 milli that still fit the typical pod
    tp = (np.array([0], np.int64), np.array([1], np.int64), np.array([600], np.int64),
          np.array([0], np.int64), np.array([1.0]))
    left = np.array([1000, 600, 700], np.int64)
    s, g = K.fgd_node(3, 0, left, 10000, 100, 1, 600, *tp)
    assert g == 1


def test_inventory_from_openb_csv():
    inv = read_openb_nodes("data/openb/csv/openb_node_list_all_node.csv")
    assert inv.n_nodes == 1523 and inv.total_gpus == 6212
    assert inv.gpu_left.shape == (1523, 8)
    assert (inv.gpu_left.sum(1) == inv.gpu_count * 1000).all()
    assert set(inv.models) == {"P100", "T4", "V100M16", "V100M32", "A10", "G2", "G3"}


def test_inventory_and_asks_from_objects():
    nodes = [{"kind": "Node", "metadata": {"name": "a", "labels": {"nvidia.com/gpu.product": "A10"}},
              "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "4"}}},
             {"kind": "Node", "metadata": {"name": "b"},
              "status": {"allocatable": {"cpu": "8000m", "memory": "64Gi"}}}]
    inv = inventory_from_nodes(nodes)
    assert inv.gpu_count.tolist() == [4, 0] and inv.models == ["A10"]
    assert inv.cpu_left.tolist() == [32000, 8000] and inv.mem_left.tolist() == [131072, 65536]
    assert inv.gpu_mem[0, 0] == 22731
    share = {"metadata": {"name": "p", "annotations": {"alibabacloud.com/gpu-milli": "460",
             "alibabacloud.com/gpu-count": "1", "alibabacloud.com/gpu-card-model": "V100M16|V100M32"}}}
    assert pod_gpu_ask(share) == GpuAsk(1, 460, ("V100M16", "V100M32"))
    whole = {"metadata": {"name": "w"}, "spec": {"containers": [
        {"resources": {"requests": {"nvidia.com/gpu": 2}}}]}}
    assert pod_gpu_ask(whole) == GpuAsk(2, 1000, ())
    assert pod_gpu_ask({"metadata": {"name": "c"}, "spec": {"containers": [{}]}}) == GpuAsk()
    with pytest.raises(ValueError):
        pod_gpu_ask({"metadata": {"name": "x", "annotations": {"alibabacloud.com/gpu-milli": "500",
                     "alibabacloud.com/gpu-count": "2"}}})


@settings(max_examples=60, deadline=None)
@given(cluster(), pod(), st.lists(pod(), min_size=1, max_size=5), st.sampled_from(K.POLICIES))
def test_numpy_scores_equal_numba(inv, p, typ, policy):
    """score_nodes_np is the array twin of score_nodes: same scores, same FGD GPU."""
    n = inv.n_nodes
    mask = inv.model_mask(p["models"])
    tp = (np.array([t["cpu"] or 100 for t in typ], np.int64), np.array([t["num"] for t in typ], np.int64),
          np.array([t["milli"] for t in typ], np.int64),
          np.array([inv.model_mask(t["models"]) for t in typ], np.int64), np.full(len(typ), 1.0 / len(typ)))
    aff = np.zeros((n, 18), np.int64)
    for i in range(n):
        aff[i, (i * 7) % 18] += i % 3          # some affinity history
    ver = np.zeros(n, np.int64)
    outs = []
    for fn in (K.score_nodes, K.score_nodes_np):
        og = np.empty(n, np.int64)
        sc = fn(K.POLICIES.index(policy), inv.gpu_count, inv.model, inv.gpu_left, inv.cpu_left, inv.mem_left,
                aff, p["cpu"], p["cpu"] or 100, 0, p["num"], p["milli"], mask, *tp,
                np.zeros(n, np.int64), np.zeros(n, np.int64), np.full(n, -1, np.int64), ver, og)
        outs.append((sc, og))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    if policy == "FGD":
        np.testing.assert_array_equal(outs[0][1], outs[1][1])
    gi, gj = np.empty(16, np.int64), np.empty(16, np.int64)
    for i in np.flatnonzero(outs[0][0] >= 0):
        for sel in (K.SEL_BEST, K.SEL_RANDOM):
            ka = K.select_gpus(sel, int(inv.gpu_count[i]), inv.gpu_left[i], p["num"], p["milli"], 0.37, gi)
            kb = K.select_gpus_np(sel, int(inv.gpu_count[i]), inv.gpu_left[i], p["num"], p["milli"], 0.37, gj)
            assert ka == kb and list(gi[:ka]) == list(gj[:kb])


@settings(max_examples=40, deadline=None)
@given(cluster(), pod(), st.lists(pod(), min_size=1, max_size=5),
       st.sampled_from([p for p in K.POLICIES if p != "BestFit"]), st.data())
def test_score_rows_equals_score_nodes_at_those_rows(inv, p, typ, policy, data):
    """score_rows (the nodes a placement changed, on full columns) gives
    score_nodes' answers at those rows, and fills the FGD cache there."""
    n = inv.n_nodes
    rows = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1))), np.int64)
    mask = inv.model_mask(p["models"])
    tp = (np.array([t["cpu"] or 100 for t in typ], np.int64), np.array([t["num"] for t in typ], np.int64),
          np.array([t["milli"] for t in typ], np.int64),
          np.array([inv.model_mask(t["models"]) for t in typ], np.int64), np.full(len(typ), 1.0 / len(typ)))
    aff = np.zeros((n, 18), np.int64)
    for i in range(n):
        aff[i, (i * 5) % 18] += i % 4
    ver = np.arange(n, dtype=np.int64) + 3
    pol = K.POLICIES.index(policy)
    cache = (np.zeros(n, np.int64), np.zeros(n, np.int64), np.full(n, -1, np.int64))
    og = np.empty(n, np.int64)
    full = K.score_nodes(pol, inv.gpu_count, inv.model, inv.gpu_left, inv.cpu_left,
                         np.zeros(n, np.int64), aff, 0, p["cpu"] or 100, 0, p["num"], p["milli"],
                         mask, *tp, *cache, ver, og)
    # the node columns as a state holds them: cpu left = allocatable - requested
    allocatable = np.zeros((n, 4), np.int64)
    requested = np.zeros((n, 4), np.int64)
    allocatable[:, 0] = inv.cpu_left + 7
    requested[:, 0] = 7
    kept = (np.zeros(n, np.int64), np.zeros(n, np.int64), np.full(n, -1, np.int64))
    og2 = np.empty(n, np.int64)
    got = K.score_rows(rows, pol, inv.gpu_count, inv.model, inv.gpu_left, allocatable, requested,
                       np.zeros(n, np.int64), np.zeros(n, np.int64), aff, 0, p["cpu"] or 100, 0,
                       p["num"], p["milli"], mask, *tp, *kept, ver, np.zeros(n, np.int64), og2)
    np.testing.assert_array_equal(got, full[rows])
    np.testing.assert_array_equal(og2[rows], og[rows])
    for a, b in zip(kept, cache):
        np.testing.assert_array_equal(a[rows], b[rows])
