"""PodTopologySpread and InterPodAffinity: the project's ``explain`` on every
backend against the scalar oracle on random clusters with zones, hostnames,
racks, taints, bound pods in two namespaces (some terminating, some with
pod (anti-)affinity of their own) and random selectors / constraints.

Also checks that the incremental per-node counts stay equal to a recount
after random binds and deletes.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import backend_params
from test_backend_parity import check_against_oracle

_SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
                 print_blob=True)

KEYS = ("zone", "kubernetes.io/hostname", "rack")
APPS = ("a", "b")
NAMESPACES = ("default", "other")


@st.composite
def pod_selector(draw):
    kind = draw(st.sampled_from(("null", "empty", "labels", "exprs", "labels", "exprs")))
    if kind == "null":
        return None
    if kind == "empty":
        return {}
    if kind == "labels":
        return {"matchLabels": {"app": draw(st.sampled_from(APPS))}}
    op = draw(st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist")))
    key = draw(st.sampled_from(("app", "tier")))
    expr = {"key": key, "operator": op}
    if op in ("In", "NotIn"):
        expr["values"] = draw(st.lists(st.sampled_from(APPS + ("x", "y")), min_size=1,
                                       max_size=2, unique=True))
    return {"matchExpressions": [expr]}


@st.composite
def affinity_term(draw):
    t = {"topologyKey": draw(st.sampled_from(KEYS)), "labelSelector": draw(pod_selector())}
    ns = draw(st.sampled_from(("own", "own", "list", "selector", "all")))
    if ns == "list":
        t["namespaces"] = draw(st.lists(st.sampled_from(NAMESPACES), min_size=1, max_size=2,
                                        unique=True))
    elif ns == "selector":
        t["namespaceSelector"] = {"matchLabels": {
            "kubernetes.io/metadata.name": draw(st.sampled_from(NAMESPACES))}}
    elif ns == "all":
        t["namespaceSelector"] = {}
    return t


@st.composite
def pod_affinity(draw, p_required=0.5):
    out = {}
    for which in ("podAffinity", "podAntiAffinity"):
        body = {}
        if draw(st.integers(0, 9)) < 10 * p_required:
            body["requiredDuringSchedulingIgnoredDuringExecution"] = draw(
                st.lists(affinity_term(), min_size=1, max_size=2))
        if draw(st.booleans()):
            body["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": draw(st.integers(1, 100)), "podAffinityTerm": t}
                for t in draw(st.lists(affinity_term(), min_size=1, max_size=2))]
        if body:
            out[which] = body
    return out or None


@st.composite
def pod_labels(draw):
    labels = {}
    if draw(st.integers(0, 4)):
        labels["app"] = draw(st.sampled_from(APPS))
    if draw(st.booleans()):
        labels["tier"] = draw(st.sampled_from(("x", "y")))
    return labels


@st.composite
def spread_constraint(draw):
    c = {"maxSkew": draw(st.integers(1, 3)), "topologyKey": draw(st.sampled_from(KEYS)),
         "whenUnsatisfiable": draw(st.sampled_from(("DoNotSchedule", "ScheduleAnyway"))),
         "labelSelector": draw(pod_selector())}
    if c["whenUnsatisfiable"] == "DoNotSchedule" and draw(st.booleans()):
        c["minDomains"] = draw(st.integers(1, 4))
    if draw(st.booleans()):
        c["nodeAffinityPolicy"] = draw(st.sampled_from(("Honor", "Ignore")))
    if draw(st.booleans()):
        c["nodeTaintsPolicy"] = draw(st.sampled_from(("Honor", "Ignore")))
    if draw(st.integers(0, 3)) == 0:
        c["matchLabelKeys"] = ["tier"]
    return c


def _pod(name, ns, labels, spec_extra):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "pause",
                                     "resources": {"requests": {"cpu": "10m"}}}],
                     **spec_extra}}


@st.composite
def spread_scenarios(draw, min_nodes=2, max_nodes=10):
    n = draw(st.integers(min_nodes, max_nodes))
    nodes = []
    for i in range(n):
        name = f"node-{i}"
        labels = {}
        if draw(st.integers(0, 5)):
            labels["zone"] = draw(st.sampled_from(("z1", "z2", "z3")))
        if draw(st.integers(0, 6)):
            labels["kubernetes.io/hostname"] = name
        if draw(st.booleans()):
            labels["rack"] = draw(st.sampled_from(("r1", "r2")))
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                "spec": {}, "status": {"allocatable": {"cpu": "8", "memory": "8Gi",
                                                       "pods": "110"}}}
        if draw(st.integers(0, 4)) == 0:
            node["spec"]["taints"] = [{"key": "t", "effect": "NoSchedule"}]
        nodes.append(node)
    bound = []
    for j in range(draw(st.integers(0, 14))):
        extra = {"nodeName": f"node-{draw(st.integers(0, n - 1))}"}
        if draw(st.integers(0, 3)) == 0:
            aff = draw(pod_affinity(0.3))
            if aff:
                extra["affinity"] = aff
        p = _pod(f"e{j}", draw(st.sampled_from(NAMESPACES + ("default",))), draw(pod_labels()),
                 extra)
        if draw(st.integers(0, 7)) == 0:
            p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        bound.append(p)
    extra = {}
    if draw(st.booleans()):
        extra["topologySpreadConstraints"] = draw(st.lists(
            spread_constraint(), min_size=1, max_size=2,
            unique_by=lambda c: (c["topologyKey"], c["whenUnsatisfiable"])))
    if draw(st.booleans()):
        aff = draw(pod_affinity())
        if aff:
            extra["affinity"] = aff
    if draw(st.integers(0, 3)) == 0:
        extra["nodeSelector"] = {"zone": draw(st.sampled_from(("z1", "z2")))}
    if draw(st.integers(0, 3)) == 0:
        extra["tolerations"] = [{"key": "t", "operator": "Exists"}]
    pod = _pod("incoming", draw(st.sampled_from(NAMESPACES)), draw(pod_labels()), extra)
    if draw(st.booleans()):
        profile = None
    else:
        args = {}
        if draw(st.booleans()):
            args["InterPodAffinity"] = {
                "hardPodAffinityWeight": draw(st.integers(0, 100)),
                "ignorePreferredTermsOfExistingPods": draw(st.booleans())}
        profile = {"filters": draw(st.sampled_from((
                       ["PodTopologySpread", "InterPodAffinity"], ["PodTopologySpread"],
                       ["InterPodAffinity"], ["TaintToleration", "PodTopologySpread"]))),
                   "scores": {"PodTopologySpread": draw(st.integers(1, 3)),
                              "InterPodAffinity": draw(st.integers(1, 3))},
                   "args": args}
    return nodes + bound, pod, profile, draw(st.integers(0, 3))


@settings(max_examples=150, **_SETTINGS)
@given(spread_scenarios())
def test_spread_affinity_numpy_and_numba_match_oracle(scenario):
    check_against_oracle(scenario, ("numpy", "numba"))


@pytest.mark.parametrize("backend", [p for p in backend_params() if p.values[0] == "cuda"])
@settings(max_examples=6, **_SETTINGS)
@given(spread_scenarios(2, 4))
def test_spread_affinity_cudasim_matches_oracle(backend, scenario):
    check_against_oracle(scenario, ("numpy", backend))


@settings(max_examples=40, **_SETTINGS)
@given(spread_scenarios(), st.lists(st.tuples(st.booleans(), st.integers(0, 50)), max_size=12))
def test_incremental_counts_equal_recount(scenario, ops):
    """Counts kept by the state listener equal a fresh count after binds/deletes."""
    import numpy as np

    from tensorsched.framework.objects.manifests import parse_pod
    from tensorsched.framework.objects.selectors import pod_terms
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
