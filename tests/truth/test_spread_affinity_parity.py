"""PodTopologySpread and InterPodAffinity: the project's ``explain`` on every
backend against the scalar oracle on random clusters with zones, hostnames,
racks, taints, bound pods in two namespaces (some terminating, some with
pod (anti-)affinity of their own) and random selectors / constraints.

Also checks that the incremental per-node counts stay equal to a recount
after random binds and deletes.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.backends import backend_params
from support.parity import (
    SETTINGS,
    check_against_oracle,
    spread_scenarios,
)


@settings(max_examples=150, **SETTINGS)
@given(spread_scenarios())
def test_spread_affinity_numpy_and_numba_match_oracle(scenario):
    check_against_oracle(scenario, ("numpy", "numba"))


@pytest.mark.parametrize("backend", [p for p in backend_params() if p.values[0] == "cuda"])
@settings(max_examples=6, **SETTINGS)
@given(spread_scenarios(2, 4))
def test_spread_affinity_cudasim_matches_oracle(backend, scenario):
    check_against_oracle(scenario, ("numpy", backend))


@settings(max_examples=40, **SETTINGS)
@given(spread_scenarios(), st.lists(st.tuples(st.booleans(), st.integers(0, 50)), max_size=12))
def test_incremental_counts_equal_recount(scenario, ops):
    """Counts kept by the state listener equal a fresh count after binds/deletes."""
    import numpy as np

    from tensorsched.framework.parsing.manifests import parse_pod
    from tensorsched.framework.parsing.selectors import pod_terms
    from tensorsched.framework.scheduler.cluster import build_cluster
    from tensorsched.framework.state.domain_counts import PodCountIndex, pod_count_index
    objects, pod, _profile, _seed = scenario
    cluster = build_cluster(objects, None)
    state = cluster.state
    rec = parse_pod(pod)
    idx = pod_count_index(state)
    terms = [t for ts in pod_terms(rec).values() for t in ts]
    keys = [(("term", t), (lambda t: lambda r: t.matches(r.namespace, r.labels))(t))
            for t in terms]
    for k, pred in keys:
        idx.counts(k, pred)
    names = [state.node_name(int(r)) for r in state.valid_rows()]
    added = 0
    for add, x in ops:
        if add or not state.pods:
            p = dict(pod, metadata=dict(pod["metadata"], name=f"new-{added}"))
            added += 1
            state.add_pod(parse_pod(p), names[x % len(names)])
        else:
            state.remove_pod(sorted(state.pods)[x % len(state.pods)])
    fresh = PodCountIndex(state)
    for k, pred in keys:
        n = state.n_rows
        assert np.array_equal(idx.counts(k, pred)[:n], fresh.counts(k, pred)[:n])
    for kind in fresh.groups:
        got = {t: a[: state.n_rows].tolist() for t, a in idx.group_counts(kind).items()
               if a[: state.n_rows].any()}
        want = {t: a[: state.n_rows].tolist() for t, a in fresh.group_counts(kind).items()}
        assert got == want
