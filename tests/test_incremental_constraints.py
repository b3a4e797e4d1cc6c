"""PodTopologySpread and InterPodAffinity keep per-domain counts and per-node
answers across cycles (``pod_counts.DomainSums``, the plugins' by-row
caches) and the numba backend reads the built-in part of a cycle with an
array plugin from its per-row cache.  These tests check that

* after random binds and deletes, a cycle on the incrementally kept state
  answers exactly as one on a cluster built fresh from the same objects;
* a sequence of placements is the same on numpy and numba, and the same
  whether the cycle asks for scores (explain path) or not (placement path),
  also when percentageOfNodesToScore stops the scan early.
"""

from __future__ import annotations

import copy

import numpy as np
from golden import golden_profile_to_config
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorsched.framework import synthetic
from tensorsched.framework.cluster import build_cluster
from tensorsched.framework.manifests import parse_pod
from test_spread_affinity_parity import _SETTINGS, spread_scenarios


def _config(profile):
    return golden_profile_to_config(profile) if profile is not None else None


def _named(pod: dict, name: str, node: str | None = None) -> dict:
    p = copy.deepcopy(pod)
    p["metadata"]["name"] = name
    if node is not None:
        p["spec"]["nodeName"] = node
    return p


def _cycle(cluster, rec, backend, seed):
    fw = cluster.framework_for(rec, backend)
    return fw.run_cycle(cluster.state, rec, seed=seed, all_nodes=True)


def _same(a, b) -> None:
    assert a.prefilter_status.code == b.prefilter_status.code
    assert a.selected_row == b.selected_row
    if a.reasons is not None or b.reasons is not None:
        assert np.array_equal(a.reasons, b.reasons)
    if a.total is not None and b.total is not None:
        assert np.array_equal(a.total, b.total)
    if a.scores is not None and b.scores is not None:
        fs = a.reasons == 0
        assert np.array_equal(a.scores[fs], b.scores[fs])


@settings(max_examples=40, **_SETTINGS)
@given(spread_scenarios(), st.lists(st.tuples(st.booleans(), st.integers(0, 50)),
                                    min_size=1, max_size=10),
       st.sampled_from(("numpy", "numba")))
def test_cycles_after_binds_and_deletes_equal_fresh_cluster(scenario, ops, backend):
    objects, pod, profile, seed = scenario
    config = _config(profile)
    nodes = [o for o in objects if o["kind"] == "Node"]
    bound = {f'{o["metadata"].get("namespace", "default")}/{o["metadata"]["name"]}': o
             for o in objects if o["kind"] == "Pod"}
    cluster = build_cluster(objects, config)
    state = cluster.state
    rec = parse_pod(pod)
    _cycle(cluster, rec, backend, seed)                  # fill the caches
    names = [state.node_name(int(r)) for r in state.valid_rows()]
    added = 0
    for add, x in ops:
        if add or not state.pods:
            node = names[x % len(names)]
            p = _named(pod, f"new-{added}", node)
            added += 1
            r = parse_pod(p)
            state.add_pod(r, node)
            bound[r.key] = p
        else:
            key = sorted(state.pods)[x % len(state.pods)]
            state.remove_pod(key)
            bound.pop(key)
        got = _cycle(cluster, rec, backend, seed)
        fresh = build_cluster(nodes + list(bound.values()), config)
        want = _cycle(fresh, parse_pod(pod), backend, seed)
        _same(got, want)


def _sequence(objects, pods, config, backend, want_scores, seed=0):
    cluster = build_cluster(objects, config)
    state = cluster.state
    start = 0
    out = []
    for attempt, p in enumerate(pods):
        rec = parse_pod(p)
        fw = cluster.framework_for(rec, backend)
        res = fw.run_cycle(state, rec, seed=seed, attempt=attempt, start_index=start,
                           want_scores=want_scores)
        n = state.num_nodes
        start = (start + res.processed) % n if n else 0
        if res.selected_row < 0:
            out.append(None)
            continue
        node = state.node_name(res.selected_row)
        state.add_pod(rec, node)
        out.append(node)
    return out


@settings(max_examples=25, **_SETTINGS)
@given(spread_scenarios(), st.integers(2, 8))
def test_placement_sequences_agree(scenario, count):
    objects, pod, profile, seed = scenario
    config = _config(profile)
    pods = [_named(pod, f"seq-{i}") for i in range(count)]
    want = _sequence(objects, pods, config, "numpy", True, seed)
    assert _sequence(objects, pods, config, "numpy", False, seed) == want
    assert _sequence(objects, pods, config, "numba", False, seed) == want
    assert _sequence(objects, pods, config, "numba", True, seed) == want


def test_workload_sequences_agree_with_percentage():
    """300 nodes, percentageOfNodesToScore 10: the scan stops early, so the
    placement path's processed rows and the host plugins' scored rows matter."""
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1",
              "kind": "KubeSchedulerConfiguration", "percentageOfNodesToScore": 10}
    for workload in ("spread", "antiaffinity", "affinity", "preferred-affinity"):
        nodes, pods = synthetic.pod_to_pod(workload, 300, 120)
        want = _sequence(nodes, pods, config, "numpy", True)
        assert _sequence(nodes, pods, config, "numba", False) == want, workload
        assert _sequence(nodes, pods, config, "numba", True) == want, workload
        assert _sequence(nodes, pods, config, "numpy", False) == want, workload
