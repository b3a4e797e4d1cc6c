"""InterPodAffinity alone (PreFilter/Filter/PreScore/Score), after upstream's
interpodaffinity filtering_test.go and scoring_test.go (v1.32).

Filter, in order:
1. the pod's required affinity: the node has every term's topology key and
   each term's domain holds a pod matching all the terms, unless no such
   pod exists anywhere and the pod matches its own terms (first of a
   group) -> UnschedulableAndUnresolvable "node(s) didn't match pod
   affinity rules";
2. its required anti-affinity: no matching pod in the term's domain ->
   Unschedulable "node(s) didn't match pod anti-affinity rules";
3. bound pods' required anti-affinity terms matching the pod: the node is
   not in their domain -> Unschedulable "node(s) didn't satisfy existing
   pods anti-affinity rules".
A term without namespaces / namespaceSelector applies to its owner's
namespace; an empty namespaceSelector to every namespace.

Score: per domain, + weight of the pod's preferred affinity terms and -
weight of its preferred anti-affinity terms for each matching bound pod, +
hardPodAffinityWeight per bound pod's required affinity term matching the
pod, +/- the bound pods' preferred terms matching the pod; NormalizeScore
int64(100 * (s - min) / (max - min)) (0 when max == min).  PreScore Skips
when nothing contributes.
"""

from __future__ import annotations

import pytest
from support.builders import case, node, one_plugin_config, plugin_scores, pod, run

from tensorsched.framework.config.kube_config import load_config
from tensorsched.framework.errors import ConfigError

IPA = "InterPodAffinity"
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
AFF = {"code": "UnschedulableAndUnresolvable", "plugin": IPA,
       "reasons": ["node(s) didn't match pod affinity rules"]}
ANTI = {"code": "Unschedulable", "plugin": IPA,
        "reasons": ["node(s) didn't match pod anti-affinity rules"]}
EXISTING = {"code": "Unschedulable", "plugin": IPA,
            "reasons": ["node(s) didn't satisfy existing pods anti-affinity rules"]}


def term(app, key, **extra):
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key, **extra}


def affinity(required=(), anti=(), pref=(), pref_anti=()):
    out = {}
    if required or pref:
        out["podAffinity"] = {}
        if required:
            out["podAffinity"][REQ] = list(required)
        if pref:
            out["podAffinity"][PREF] = [{"weight": w, "podAffinityTerm": t} for w, t in pref]
    if anti or pref_anti:
        out["podAntiAffinity"] = {}
        if anti:
            out["podAntiAffinity"][REQ] = list(anti)
        if pref_anti:
            out["podAntiAffinity"][PREF] = [{"weight": w, "podAffinityTerm": t}
                                            for w, t in pref_anti]
    return {"affinity": out}


def incoming(app=None, **aff):
    return pod("p", labels={"app": app} if app else None, spec=affinity(**aff) if aff else None)


def bound(name, on, app, namespace="default", **aff):
    return pod(name, on=on, labels={"app": app}, namespace=namespace,
               spec=affinity(**aff) if aff else None)


def zone_node(name, zone=None):
    return node(name, labels={ZONE: zone} if zone else None)


# a1, a2 in z1; b1 in z2; d without a zone
A1, A2, B1, D = zone_node("a1", "z1"), zone_node("a2", "z1"), zone_node("b1", "z2"), zone_node("d")
NODES = [A1, A2, B1]

FILTER_CASES = [
    # affinity to app=db by zone; db runs on a1 (z1) -> z1 nodes fit, b1 does not
    case(name="required affinity by zone",
         objects=NODES + [bound("db", "a1", "db")],
         pod=incoming("web", required=[term("db", ZONE)]), rejected={"b1": AFF}),
    # no app=db pod anywhere and the pod (app=web) does not match its term -> nowhere
    case(name="required affinity with no matching pod",
         objects=NODES + [bound("x", "a1", "cache")],
         pod=incoming("web", required=[term("db", ZONE)]),
         rejected={"a1": AFF, "a2": AFF, "b1": AFF}),
    # first of its group: no app=db pod anywhere, the pod is app=db itself ->
    # every node with the zone key fits; d lacks the key -> rejected
    case(name="first pod of a self-affine group",
         objects=NODES + [D], pod=incoming("db", required=[term("db", ZONE)]),
         rejected={"d": AFF}),
    # anti-affinity to app=web by hostname; web on a1 -> only a1 rejected
    case(name="required anti-affinity by hostname",
         objects=NODES + [bound("w", "a1", "web")],
         pod=incoming("web", anti=[term("web", HOST)]), rejected={"a1": ANTI}),
    # by zone: a1 and a2 share z1 -> both rejected; d has no zone -> fits
    case(name="required anti-affinity by zone",
         objects=NODES + [D, bound("w", "a1", "web")],
         pod=incoming("web", anti=[term("web", ZONE)]), rejected={"a1": ANTI, "a2": ANTI}),
    # a bound pod on b1 refuses app=web in its zone; the incoming pod is app=web
    case(name="existing pod's anti-affinity",
         objects=NODES + [bound("guard", "b1", "guard", anti=[term("web", ZONE)])],
         pod=incoming("web"), rejected={"b1": EXISTING}),
    # the existing pod's term does not match the incoming app=api -> fits everywhere
    case(name="existing pod's anti-affinity not matching",
         objects=NODES + [bound("guard", "b1", "guard", anti=[term("web", ZONE)])],
         pod=incoming("api"), rejected={}),
    # term without namespaces: the pod's namespace (default); the web pod is
    # in 'other' -> not counted -> no rejection
    case(name="term defaults to the pod's namespace",
         objects=NODES + [bound("w", "a1", "web", namespace="other")],
         pod=incoming("web", anti=[term("web", HOST)]), rejected={}),
    # namespaces: [other] -> the web pod in 'other' on a1 counts
    case(name="term namespaces",
         objects=NODES + [bound("w", "a1", "web", namespace="other")],
         pod=incoming("web", anti=[term("web", HOST, namespaces=["other"])]),
         rejected={"a1": ANTI}),
    # empty namespaceSelector: every namespace -> counts too
    case(name="empty namespaceSelector selects all namespaces",
         objects=NODES + [bound("w", "a1", "web", namespace="other")],
         pod=incoming("web", anti=[term("web", HOST, namespaceSelector={})]),
         rejected={"a1": ANTI}),
    # affinity (db by zone: z1 holds db on a2) and anti-affinity (web by
    # hostname: web on a2) -> a1 fits; a2 fails anti; b1 fails affinity first
    case(name="affinity and anti-affinity together",
         objects=NODES + [bound("db", "a2", "db"), bound("w", "a2", "web")],
         pod=incoming("web", required=[term("db", ZONE)], anti=[term("web", HOST)]),
         rejected={"a2": ANTI, "b1": AFF}),
]


@pytest.mark.parametrize("case", FILTER_CASES, ids=[c["name"] for c in FILTER_CASES])
def test_filter(case, backend):
    rec = run(case["objects"], case["pod"], one_plugin_config(IPA), backend)
    assert rec["filter"] == case["rejected"]
    nodes = [o["metadata"]["name"] for o in case["objects"] if o["kind"] == "Node"]
    assert sorted(rec["feasible"]) == sorted(n for n in nodes if n not in case["rejected"])


C1 = zone_node("c1", "z3")

SCORE_CASES = [
    # preferred affinity 10 to db by zone; db on a1 -> z1 +10
    # raw a1 10, a2 10, b1 0; min 0 max 10 -> 100, 100, 0
    case(name="preferred affinity",
         objects=NODES + [bound("db", "a1", "db")],
         pod=incoming("web", pref=[(10, term("db", ZONE))]), args=None,
         expected={"a1": 100, "a2": 100, "b1": 0}),
    # preferred anti-affinity 5 to web by hostname; web on a1 -> a1 -5
    # min -5 max 0: a1 100 * 0 / 5 = 0, others 100 * 5 / 5 = 100
    case(name="preferred anti-affinity",
         objects=NODES + [bound("w", "a1", "web")],
         pod=incoming("web", pref_anti=[(5, term("web", HOST))]), args=None,
         expected={"a1": 0, "a2": 100, "b1": 100}),
    # each matching pod adds the weight: 3 to db by zone; one db in z1 (a1),
    # two in z2 (b1) -> z1 3, z2 6, z3 0; min 0 max 6
    # a1: 100 * 3 / 6 = 50, b1: 100, c1: 0
    case(name="weights add per matching pod",
         objects=[A1, B1, C1, bound("db1", "a1", "db"), bound("db2", "b1", "db"),
                  bound("db3", "b1", "db")],
         pod=incoming("web", pref=[(3, term("db", ZONE))]), args=None,
         expected={"a1": 50, "b1": 100, "c1": 0}),
    # affinity 10 to db by zone (db on b1: z2 +10) and anti 4 to web by
    # hostname (web on a2 and b1: -4 each) -> a1 0, a2 -4, b1 6
    # min -4 max 6 (diff 10): a1 100 * 4 / 10 = 40, a2 0, b1 100
    case(name="affinity and anti-affinity mixed",
         objects=NODES + [bound("db", "b1", "db"), bound("w1", "a2", "web"),
                          bound("w2", "b1", "web")],
         pod=incoming("web", pref=[(10, term("db", ZONE))], pref_anti=[(4, term("web", HOST))]),
         args=None, expected={"a1": 40, "a2": 0, "b1": 100}),
    # a bound pod on a1 has REQUIRED affinity to app=web by zone; the incoming
    # pod is app=web: + hardPodAffinityWeight (default 1) to z1
    # a1 1, a2 1, b1 0 -> 100, 100, 0
    case(name="existing pod's required affinity, hard weight 1",
         objects=NODES + [bound("e", "a1", "e", required=[term("web", ZONE)])],
         pod=incoming("web"), args=None, expected={"a1": 100, "a2": 100, "b1": 0}),
    # same with hardPodAffinityWeight 5: a1 5, a2 5, b1 0 -> same normalized
    # scores; plus the pod's own preferred anti 2 to e by hostname (e on a1):
    # a1 5 - 2 = 3, a2 5, b1 0; min 0 max 5: a1 100 * 3 / 5 = 60, a2 100, b1 0
    case(name="hardPodAffinityWeight",
         objects=NODES + [bound("e", "a1", "e", required=[term("web", ZONE)])],
         pod=incoming("web", pref_anti=[(2, term("e", HOST))]),
         args={"hardPodAffinityWeight": 5}, expected={"a1": 60, "a2": 100, "b1": 0}),
    # a bound pod on a1 prefers (7) to avoid app=web on its host: a1 -7
    # min -7 max 0: a1 0, others 100
    case(name="existing pod's preferred anti-affinity",
         objects=NODES + [bound("e", "a1", "e", pref_anti=[(7, term("web", HOST))])],
         pod=incoming("web"), args=None, expected={"a1": 0, "a2": 100, "b1": 100}),
]


@pytest.mark.parametrize("case", SCORE_CASES, ids=[c["name"] for c in SCORE_CASES])
def test_score(case, backend):
    rec = run(case["objects"], case["pod"], one_plugin_config(IPA, case["args"]), backend)
    assert rec["filter"] == {}
    assert plugin_scores(rec, IPA) == case["expected"]
    assert rec["total"] == case["expected"]


SKIP_CASES = [
    # hardPodAffinityWeight 0: the existing pod's required affinity no longer
    # contributes; nothing else does -> Skip
    case(name="hard weight 0",
         objects=NODES + [bound("e", "a1", "e", required=[term("web", ZONE)])],
         pod=incoming("web"), args={"hardPodAffinityWeight": 0}),
    # ignorePreferredTermsOfExistingPods and no preferred terms of its own -> Skip
    case(name="ignore existing pods' preferred terms",
         objects=NODES + [bound("e", "a1", "e", pref_anti=[(7, term("web", HOST))])],
         pod=incoming("web"), args={"ignorePreferredTermsOfExistingPods": True}),
    # preferred term matching no pod: nothing contributes -> Skip
    case(name="preferred term matching nothing",
         objects=NODES + [bound("x", "a1", "cache")],
         pod=incoming("web", pref=[(10, term("db", ZONE))]), args=None),
]


@pytest.mark.parametrize("case", SKIP_CASES, ids=[c["name"] for c in SKIP_CASES])
def test_prescore_skip(case, backend):
    rec = run(case["objects"], case["pod"], one_plugin_config(IPA, case["args"]), backend)
    assert plugin_scores(rec, IPA) == {}
    assert rec["total"] == {"a1": 0, "a2": 0, "b1": 0}


ARGS_PATH = "profiles[0].pluginConfig[0].args"


@pytest.mark.parametrize("weight", [-1, 101])
def test_hard_pod_affinity_weight_range(weight):
    # hardPodAffinityWeight in [0, 100]
    with pytest.raises(ConfigError) as err:
        load_config(one_plugin_config(IPA, {"hardPodAffinityWeight": weight}))
    assert err.value.field == f"{ARGS_PATH}.hardPodAffinityWeight"


def test_default_args():
    a = load_config(one_plugin_config(IPA)).profiles[0].args[IPA]
    assert a.hard_pod_affinity_weight == 1
    assert a.ignore_preferred_terms_of_existing_pods is False
