"""Comparisons of every backend with the scalar oracle and of incremental answers with fresh ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck
from hypothesis import strategies as st
from reference.oracle import OracleConfigError, oracle_explain

from support import strategies as ST
from support.golden import golden_profile_to_config
from tensorsched.framework.errors import ConfigError
from tensorsched.framework.scheduler.explain import explain

COMPARED = ("pod", "nodes_evaluated", "feasible", "filter", "scores", "total", "selected")


def _oracle(objects, pod, profile, seed):
    return oracle_explain(objects, pod, profile if profile is not None else ST.DEFAULT_PROFILE,
                          seed=seed)


def _project(objects, pod, profile, seed, backend):
    config = golden_profile_to_config(profile) if profile is not None else None
    return explain(objects, pod, config, backend=backend, seed=seed)


def _view(out):
    return {k: out[k] for k in COMPARED}


def check_against_oracle(scenario, backends):
    objects, pod, profile, seed = scenario
    try:
        want = _oracle(objects, pod, profile, seed)
    except OracleConfigError as err:
        for b in backends:
            with pytest.raises(ConfigError):
                _project(objects, pod, profile, seed, b)
        return err
    first = None
    for b in backends:
        got = _project(objects, pod, profile, seed, b)
        assert got["backend"] == b
        assert _view(got) == _view(want), f"backend {b} differs from the oracle"
        if first is None:
            first = got
        else:
            assert _view(got) == _view(first)
    return want



SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
                 print_blob=True)


APPS = ("a", "b")


NAMESPACES = ("default", "other")


KEYS = ("zone", "kubernetes.io/hostname", "rack")


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


def scenario_pod(name, ns, labels, spec_extra):
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
        p = scenario_pod(f"e{j}", draw(st.sampled_from(NAMESPACES + ("default",))), draw(pod_labels()),
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
    pod = scenario_pod("incoming", draw(st.sampled_from(NAMESPACES)), draw(pod_labels()), extra)
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



def cycle_answers(cluster, rec, backend, seed):
    fw = cluster.framework_for(rec, backend)
    return fw.run_cycle(cluster.state, rec, seed=seed, all_nodes=True)


def same_answers(a, b) -> None:
    assert a.prefilter_status.code == b.prefilter_status.code
    assert a.selected_row == b.selected_row
    if a.reasons is not None or b.reasons is not None:
        assert np.array_equal(a.reasons, b.reasons)
    if a.total is not None and b.total is not None:
        assert np.array_equal(a.total, b.total)
    if a.scores is not None and b.scores is not None:
        fs = a.reasons == 0
        assert np.array_equal(a.scores[fs], b.scores[fs])
