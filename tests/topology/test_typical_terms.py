"""A learning FGD's kept typical-pod terms against the full recompute, on
random GPU clusters with random placements, deletions, node changes and
failed cycles; numpy and numba."""

import types

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorsched.framework.parsing.manifests import parse_node, parse_pod
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.generators import gpu_clusters
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.topology import typical_terms
from tensorsched.topology.gpu_table import GpuTable
from tensorsched.topology.plugins import GpuShareScore

BACKENDS = ("numpy", "numba")


def learning_profile():
    cfg = gpu_clusters.gpu_config()
    cfg["profiles"][0]["pluginConfig"] = [{"name": "GpuShareScore", "args": {"policy": "FGD"}}]
    return cfg


def other_node(name, gpus, model):
    return node_dict(name, cpu="32", memory="256Gi", pods="110",
                     extra={"nvidia.com/gpu": str(gpus)} if gpus else None,
                     labels={"nvidia.com/gpu.product": model})


def huge_pod(name):
    """Fits no node: a cycle that fails (after FGD learnt its shape)."""
    return pod_dict(name, cpu="1000", memory="1Gi", extra={"nvidia.com/gpu": "1"})


EVENTS = st.lists(st.one_of(
    st.tuples(st.just("place"), st.integers(0, 10 ** 6)),
    st.tuples(st.just("place"), st.integers(0, 10 ** 6)),
    st.tuples(st.just("place"), st.integers(0, 10 ** 6)),
    st.tuples(st.just("delete"), st.integers(0, 50)),
    st.tuples(st.just("node"), st.integers(0, 11), st.sampled_from([0, 1, 2, 4, 8]),
              st.sampled_from(["A100", "T4"])),
    st.tuples(st.just("fail"), st.integers(0, 10 ** 6))),
    min_size=1, max_size=25)


def play(nodes, pods, events, backend, kept_terms):
    """Play ``events``; returns every cycle's (score answers, placement and
    GPU indices).  ``kept_terms`` False: the profile's GpuShareScore
    recomputes every node from scratch (its terms set aside)."""
    cl = build_cluster(nodes, learning_profile())
    state = cl.state
    fw = cl.framework_for(parse_pod(pods[0]), backend)
    sc = fw.plugins["GpuShareScore"]
    assert sc.learns_typical_pods and (sc._terms is not None) == (backend in BACKENDS)
    if not kept_terms:
        sc._terms = None
    bound, out = [], []
    for k, ev in enumerate(events):
        if ev[0] == "place":
            rec = parse_pod(dict(pods[ev[1] % len(pods)],
                                 metadata=dict(pods[ev[1] % len(pods)]["metadata"],
                                               name=f"p{k}")))
            ctx = CycleContext(state, rec, fw)
            rows = np.arange(state.n_rows, dtype=np.int64)
            answers = sc.score(ctx, rows).copy()
            res = fw.run_cycle(state, rec, seed=k)
            placed = None
            if res.selected_row >= 0:
                node = state.node_name(res.selected_row)
                state.add_pod(rec, node)
                for p in fw.plugins_at("reserve"):
                    p.reserve(CycleContext(state, rec, fw), node)
                a = GpuTable.of(state).alloc.get(rec.key)
                placed = (node, None if a is None else a.indices)
                bound.append(rec.key)
            out.append((answers.tolist(), placed))
        elif ev[0] == "delete" and bound:
            state.remove_pod(bound.pop(ev[1] % len(bound)))
        elif ev[0] == "node" and ev[1] < len(nodes):
            state.update_node(parse_node(other_node(f"dgx-{ev[1]}", ev[2], ev[3])))
        elif ev[0] == "fail":
            res = fw.run_cycle(state, parse_pod(huge_pod(f"f{k}")), seed=k)
            out.append(([], res.selected_row))
    GpuTable.of(state).check()
    return out


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_nodes=st.integers(1, 12), seed=st.integers(0, 2 ** 16), events=EVENTS)
def test_kept_terms_equal_the_full_recompute_numpy_and_numba(n_nodes, seed, events):
    nodes, pods = gpu_clusters.gpu(n_nodes, 40, seed)
    full = play(nodes, pods, events, "numpy", kept_terms=False)
    for backend in BACKENDS:
        assert play(nodes, pods, events, backend, kept_terms=True) == full


def test_terms_computed_again_only_for_changed_rows():
    nodes, pods = gpu_clusters.gpu(6, 20, 3)
    cl = build_cluster(nodes, learning_profile())
    state = cl.state
    handle = types.SimpleNamespace(backend_name="numba")
    sc = GpuShareScore({"policy": "FGD"}, handle)
    rows = np.arange(state.n_rows, dtype=np.int64)
    recs = [parse_pod(p) for p in pods]
    share = next(r for r in recs if GpuTable.of(state).pod_info(r).ask.is_share)
    sc.score(CycleContext(state, share, None), rows)
    kept = next(iter(sc._terms._shapes.values()))
    before = kept[1].copy()
    state.add_pod(share, state.node_name(2))
    other = next(r for r in recs if r is not share)
    sc.score(CycleContext(state, other, None), rows)     # new weights: a re-combination
    sc.score(CycleContext(state, share, None), rows)
    moved = np.flatnonzero(kept[1][:state.n_rows] != before[:state.n_rows])
    assert moved.tolist() == [2]


def test_terms_start_afresh_past_the_stale_columns():
    t = types.SimpleNamespace(model_mask=lambda models: 0)
    terms = typical_terms.TypicalTerms("numpy")
    terms._sig = ("t",)
    spec = [(c, 1, 100, "", 1.0) for c in range(typical_terms.MAX_STALE_COLS + 3)]
    terms._columns(t, spec)
    assert len(terms._cols) == len(spec)
    again = [(c, 1, 100, "", 1.0) for c in range(1000, 1002)]
    order = terms._columns(t, again)
    assert order.tolist() == [0, 1] and len(terms._cols) == 2


def test_terms_past_the_byte_bound_start_afresh_with_the_same_scores(monkeypatch):
    nodes, pods = gpu_clusters.gpu(5, 30, 7)
    cl = build_cluster(nodes, learning_profile())
    state = cl.state
    rows = np.arange(state.n_rows, dtype=np.int64)
    recs = [parse_pod(p) for p in pods]
    got = []
    for bound in (typical_terms.MAX_TERM_BYTES, 1):
        monkeypatch.setattr(typical_terms, "MAX_TERM_BYTES", bound)
        sc = GpuShareScore({"policy": "FGD"}, types.SimpleNamespace(backend_name="numba"))
        got.append([sc.score(CycleContext(state, r, None), rows).tolist() for r in recs])
        kept = len(sc._terms._shapes)
        assert kept == 1 if bound == 1 else kept > 1
    assert got[0] == got[1]
