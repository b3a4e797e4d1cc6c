"""PodTopologySpread and InterPodAffinity keep per-domain counts and per-node
answers across cycles (``state.domain_counts.DomainSums``, the plugins' by-row
caches) and the numba backend reads the built-in part of a cycle with an
array plugin from its per-row cache.  These tests check that

* after random binds and deletes, a cycle on the incrementally kept state
  answers exactly as one on a cluster built fresh from the same objects;
* a sequence of placements is the same on numpy and numba, and the same
  whether the cycle asks for scores (explain path) or not (placement path),
  also when percentageOfNodesToScore stops the scan early;
* removing the last pod with affinity terms (InterPodAffinity's PreScore
  then skips) leaves no score of an earlier cycle behind: a skipped
  plugin's slot reads 0 on every backend, as on a fresh cluster.
"""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st
from support.golden import golden_profile_to_config
from support.parity import (
    NAMESPACES,
    SETTINGS,
    cycle_answers,
    pod_affinity,
    pod_labels,
    same_answers,
    scenario_pod,
    spread_scenarios,
)

from tensorsched.generators import clusters as synthetic
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod


def _config(profile):
    return golden_profile_to_config(profile) if profile is not None else None


def _named(pod: dict, name: str, node: str | None = None) -> dict:
    p = copy.deepcopy(pod)
    p["metadata"]["name"] = name
    if node is not None:
        p["spec"]["nodeName"] = node
    return p


@settings(max_examples=40, **SETTINGS)
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
    cycle_answers(cluster, rec, backend, seed)                  # fill the caches
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
        got = cycle_answers(cluster, rec, backend, seed)
        fresh = build_cluster(nodes + list(bound.values()), config)
        want = cycle_answers(fresh, parse_pod(pod), backend, seed)
        same_answers(got, want)


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


@settings(max_examples=25, **SETTINGS)
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


# ------------------------------------------------------------------------
# Removing pods with affinity terms: no stale scores
# ------------------------------------------------------------------------

_NO_SPREAD = {"apiVersion": "kubescheduler.config.k8s.io/v1",
              "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "default-scheduler", "plugins": {
                  "multiPoint": {"disabled": [{"name": "PodTopologySpread"}]}}}]}


def _zone_node(name: str, zone: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"zone": zone,
                                                  "kubernetes.io/hostname": name}},
            "spec": {}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi",
                                                   "pods": "110"}}}


def _explain_view(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "backend"}


def _cycle_view(res) -> tuple:
    """A cycle's answer on every evaluated row: reasons, every slot's score of
    the scored rows (a skipped plugin's slot included), totals, selection."""
    scored = res.total >= 0
    return (res.prefilter_status.code, res.reasons.tolist(),
            res.scores[scored].tolist(), res.total.tolist(), res.selected_row,
            sorted(p.name for p in res.active_score_plugins))


def test_removed_pod_with_terms_leaves_no_stale_affinity_score():
    """node-0 (zone z1) holds the only bound pod, terminating, with required
    affinity and anti-affinity terms on ``zone``; the incoming pod selects
    zone z1 and prefers e0's hostname, so InterPodAffinity scores node-0 100
    before e0 goes.  Afterwards no bound pod has terms: InterPodAffinity's
    PreScore skips, and its slot must read 0 (not the previous cycle's 100)
    on every backend, on the mutated state as on a fresh cluster."""
    nodes = [_zone_node("node-0", "z1"), _zone_node("node-1", "z1"),
             _zone_node("node-2", "z2")]
    e0 = scenario_pod("e0", "default", {"app": "e"}, {"nodeName": "node-0", "affinity": {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "e"}}, "topologyKey": "zone"}]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}]}}})
    e0["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    pod = scenario_pod("incoming", "default", {"app": "e"}, {
        "nodeSelector": {"zone": "z1"},
        "affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "e"}},
                                              "topologyKey": "kubernetes.io/hostname"}}]}}})
    fresh = build_cluster(nodes, _NO_SPREAD)
    want = {b: _cycle_view(cycle_answers(fresh, parse_pod(pod), b, 0)) for b in ("numpy", "numba")}
    assert want["numba"] == want["numpy"]
    want_explain = _explain_view(explain_pod(fresh, pod, "numpy"))
    for backend in ("numpy", "numba"):
        cluster = build_cluster(nodes + [e0], _NO_SPREAD)
        rec = parse_pod(pod)
        before = cycle_answers(cluster, rec, backend, 0)
        ipa = before.active_score_plugins[
            [p.name for p in before.active_score_plugins].index("InterPodAffinity")]
        assert before.scores[0, ipa.score_slot] == 100          # node-0, before e0 goes
        cluster.state.remove_pod("default/e0")
        got = cycle_answers(cluster, rec, backend, 0)
        assert got.scores[0, ipa.score_slot] == 0, backend
        assert _cycle_view(got) == want["numpy"], backend
        assert _explain_view(explain_pod(cluster, pod, backend)) == want_explain, backend


_OP = st.tuples(st.booleans(), st.integers(0, 50), pod_affinity(0.5), pod_labels(),
                st.booleans(), st.booleans())


@settings(max_examples=25, **SETTINGS)
@given(spread_scenarios(2, 6), st.lists(_OP, min_size=1, max_size=6))
def test_explain_after_adds_and_removes_of_pods_with_terms(scenario, ops):
    """Random adds (pods with required/preferred (anti-)affinity, terminating
    or not) and removes: after each, explain and the cycle itself (every
    slot of the scored rows) agree on numpy, numba and a cluster built fresh
    from the same objects; placement cycles on numba in between keep its
    caches and buffers in use."""
    objects, pod, profile, seed = scenario
    config = _config(profile)
    nodes = [o for o in objects if o["kind"] == "Node"]
    bound = {f'{o["metadata"].get("namespace", "default")}/{o["metadata"]["name"]}': o
             for o in objects if o["kind"] == "Pod"}
    cluster = build_cluster(objects, config)
    state = cluster.state
    rec = parse_pod(pod)
    names = [n["metadata"]["name"] for n in nodes]
    for b in ("numpy", "numba"):
        explain_pod(cluster, pod, b, seed)                # fill the caches
    for i, (add, x, aff, labels, terminating, place) in enumerate(ops):
        if add or not state.pods:
            p = scenario_pod(f"op-{i}", NAMESPACES[x % len(NAMESPACES)], labels,
                     {"nodeName": names[x % len(names)]})
            if aff:
                p["spec"]["affinity"] = aff
            if terminating:
                p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
            r = parse_pod(p)
            state.add_pod(r)
            bound[r.key] = p
        else:
            key = sorted(state.pods)[x % len(state.pods)]
            state.remove_pod(key)
            bound.pop(key)
        if place:
            fw = cluster.framework_for(rec, "numba")
            fw.run_cycle(state, rec, seed=seed, attempt=i, start_index=x, want_scores=False)
        fresh = build_cluster(nodes + list(bound.values()), config)
        want = _explain_view(explain_pod(fresh, pod, "numpy", seed))
        want_cycle = _cycle_view(cycle_answers(fresh, parse_pod(pod), "numpy", seed))
        for b in ("numpy", "numba"):
            assert _explain_view(explain_pod(cluster, pod, b, seed)) == want, (b, i)
            assert _cycle_view(cycle_answers(cluster, rec, b, seed)) == want_cycle, (b, i)
