"""PodTopologySpread alone (PreFilter/Filter/PreScore/Score), after
upstream's podtopologyspread filtering_test.go and scoring_test.go (v1.32,
NodeInclusionPolicy and MatchLabelKeys on).

Filter (DoNotSchedule): a node without the topology key is
UnschedulableAndUnresolvable "node(s) didn't match pod topology spread
constraints (missing required label)"; otherwise matching pods in the
node's domain + 1 if the pod matches its own selector - the global minimum
over the eligible domains (0 when fewer than minDomains) must be <= maxSkew,
else Unschedulable "node(s) didn't match pod topology spread constraints".
Eligible nodes have every key, match the pod's node affinity unless
nodeAffinityPolicy Ignore, and tolerate its taints only with
nodeTaintsPolicy Honor.  Pods count in the pod's namespace only.

Score (ScheduleAnyway): sum over constraints of
count * ln(domains + 2) + (maxSkew - 1), rounded (math.Round); domains =
distinct values among the scored nodes (kubernetes.io/hostname: the number
of scored nodes, counts per node); nodes without a key are ignored (0).
NormalizeScore: 100 * (max + min - s) // max; all 100 when max is 0.
"""

from __future__ import annotations

import pytest
from support.builders import case, node, one_plugin_config, plugin_scores, pod, run

from tensorsched.framework.config.kube_config import load_config
from tensorsched.framework.errors import ConfigError

PTS = "PodTopologySpread"
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
WEB = {"app": "web"}
SKEW = {"code": "Unschedulable", "plugin": PTS,
        "reasons": ["node(s) didn't match pod topology spread constraints"]}
MISSING = {"code": "UnschedulableAndUnresolvable", "plugin": PTS,
           "reasons": [SKEW["reasons"][0] + " (missing required label)"]}


def constraint(key=ZONE, max_skew=1, when="DoNotSchedule", selector=WEB, **extra):
    c = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
         "labelSelector": {"matchLabels": dict(selector)}}
    c.update(extra)
    return c


def spreading(*constraints, labels=WEB, spec=None, namespace="default"):
    s = {"topologySpreadConstraints": list(constraints), **(spec or {})}
    return pod("p", labels=dict(labels), spec=s, namespace=namespace)


def web(name, on, labels=WEB, namespace="default"):
    return pod(name, on=on, labels=dict(labels), namespace=namespace)


def zone_node(name, zone=None, **kw):
    return node(name, labels={ZONE: zone} if zone else None, **kw)


# a1, a2 in z1; b1 in z2; c1 in z3
A1, A2 = zone_node("a1", "z1"), zone_node("a2", "z1")
B1, C1 = zone_node("b1", "z2"), zone_node("c1", "z3")

# required node affinity: zone In [z1, z2]
IN_Z1_Z2 = {"affinity": {"nodeAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z1", "z2"]}]}]}}}}

FILTER_CASES = [
    # z1: 2 matching pods, z2: 0; min 0
    # a1, a2: 2 + 1 - 0 = 3 > 1 -> rejected; b1: 0 + 1 - 0 = 1 <= 1 -> fits
    case(name="skew above maxSkew",
         objects=[A1, A2, B1, web("w1", "a1"), web("w2", "a2")],
         pod=spreading(constraint()), rejected={"a1": SKEW, "a2": SKEW}),
    # maxSkew 2, z1: 1, z2: 0 -> a1: 1 + 1 - 0 = 2 <= 2 fits; b1 fits
    case(name="skew within maxSkew",
         objects=[A1, B1, web("w1", "a1")],
         pod=spreading(constraint(max_skew=2)), rejected={}),
    # d has no zone label -> missing required label; others as usual
    # z1: 0, z2: 0 -> 0 + 1 - 0 = 1 fits
    case(name="node without the topology key",
         objects=[A1, B1, zone_node("d")],
         pod=spreading(constraint()), rejected={"d": MISSING}),
    # the pod does not match its own selector (app=other): no +1
    # z1: 1, z2: 0 -> a1: 1 + 0 - 0 = 1 <= 1 fits (with +1 it would be 2)
    case(name="pod not matching its own selector",
         objects=[A1, B1, web("w1", "a1")],
         pod=spreading(constraint(), labels={"app": "other"}), rejected={}),
    # z1: 1, z2: 1 -> min 1: 1 + 1 - 1 = 1 fits everywhere; but minDomains 3 > 2
    # domains -> global min 0: 1 + 1 - 0 = 2 > 1 on a1 and b1
    case(name="minDomains above the number of domains",
         objects=[A1, B1, web("w1", "a1"), web("w2", "b1")],
         pod=spreading(constraint(minDomains=3)), rejected={"a1": SKEW, "b1": SKEW}),
    # same without minDomains: min 1 -> fits
    case(name="without minDomains",
         objects=[A1, B1, web("w1", "a1"), web("w2", "b1")],
         pod=spreading(constraint()), rejected={}),
    # hostname: a1 1 pod, a2 0, b1 0 -> a1: 1 + 1 - 0 = 2 > 1
    case(name="hostname topology",
         objects=[A1, A2, B1, web("w1", "a1")],
         pod=spreading(constraint(HOST)), rejected={"a1": SKEW}),
    # pods in namespace 'other' do not count: z1 0 -> fits
    case(name="other namespaces do not count",
         objects=[A1, B1, web("w1", "a1", namespace="other"), web("w2", "a1", namespace="other")],
         pod=spreading(constraint()), rejected={}),
    # matchLabelKeys [version]: selector app=web AND version=v2; the two pods
    # on a1 are version v1 -> not counted -> fits; (without it: 2 + 1 > 1)
    case(name="matchLabelKeys narrows the selector",
         objects=[A1, B1, web("w1", "a1", {"app": "web", "version": "v1"}),
                  web("w2", "a1", {"app": "web", "version": "v1"})],
         pod=spreading(constraint(matchLabelKeys=["version"]),
                       labels={"app": "web", "version": "v2"}), rejected={}),
    # z1: 1 (a1), z2: 1 (b1), z3: 0 (c1); the pod requires zone In [z1, z2]
    # nodeAffinityPolicy Honor (default): c1 is not eligible, z3 not a domain
    # -> min 1: a1 1 + 1 - 1 = 1 fits, b1 fits, c1 0 + 1 - 1 = 0 fits
    case(name="nodeAffinityPolicy Honor excludes unmatched domains",
         objects=[A1, B1, C1, web("w1", "a1"), web("w2", "b1")],
         pod=spreading(constraint(), spec=IN_Z1_Z2),
         rejected={}),
    # same with nodeAffinityPolicy Ignore: z3 counts with 0 -> min 0
    # a1: 1 + 1 - 0 = 2 > 1, b1 likewise; c1 fits
    case(name="nodeAffinityPolicy Ignore counts every domain",
         objects=[A1, B1, C1, web("w1", "a1"), web("w2", "b1")],
         pod=spreading(constraint(nodeAffinityPolicy="Ignore"), spec=IN_Z1_Z2),
         rejected={"a1": SKEW, "b1": SKEW}),
    # c1 (z3) has an untolerated NoSchedule taint; nodeTaintsPolicy Ignore
    # (default): z3 counts -> min 0 -> a1, b1: 1 + 1 - 0 = 2 > 1
    case(name="nodeTaintsPolicy Ignore counts tainted domains",
         objects=[A1, B1, zone_node("c1", "z3", taints=[{"key": "k", "effect": "NoSchedule"}]),
                  web("w1", "a1"), web("w2", "b1")],
         pod=spreading(constraint()), rejected={"a1": SKEW, "b1": SKEW}),
    # nodeTaintsPolicy Honor: c1 not eligible -> min 1 -> all fit (c1: 0 + 1 - 1 = 0)
    case(name="nodeTaintsPolicy Honor excludes tainted domains",
         objects=[A1, B1, zone_node("c1", "z3", taints=[{"key": "k", "effect": "NoSchedule"}]),
                  web("w1", "a1"), web("w2", "b1")],
         pod=spreading(constraint(nodeTaintsPolicy="Honor")), rejected={}),
    # two constraints: zone maxSkew 1 and hostname maxSkew 1
    # zone: z1 1 (a1), z2 0 -> a1, a2: 1 + 1 - 0 = 2 > 1; b1 fits zone
    # hostname on b1: 0 + 1 - 0 = 1 fits
    case(name="every constraint must hold",
         objects=[A1, A2, B1, web("w1", "a1")],
         pod=spreading(constraint(), constraint(HOST)), rejected={"a1": SKEW, "a2": SKEW}),
]


@pytest.mark.parametrize("case", FILTER_CASES, ids=[c["name"] for c in FILTER_CASES])
def test_filter(case, backend):
    rec = run(case["objects"], case["pod"], one_plugin_config(PTS), backend)
    assert rec["filter"] == case["rejected"]
    nodes = [o["metadata"]["name"] for o in case["objects"] if o["kind"] == "Node"]
    assert sorted(rec["feasible"]) == sorted(n for n in nodes if n not in case["rejected"])


SCORE_CASES = [
    # zone, maxSkew 1: z1 2 pods, z2 0; 2 domains -> weight ln(4) = 1.3863
    # a1, a2: 2 * 1.3863 = 2.77 -> 3; b1: 0
    # normalize max 3, min 0: a: 100 * (3 + 0 - 3) // 3 = 0; b1: 100 * 3 // 3 = 100
    case(name="emptier zone scores higher",
         objects=[A1, A2, B1, web("w1", "a1"), web("w2", "a1")],
         pod=spreading(constraint(when="ScheduleAnyway")),
         expected={"a1": 0, "a2": 0, "b1": 100}),
    # hostname, maxSkew 1: a1 2, a2 1, b1 0; 3 scored nodes -> ln(5) = 1.6094
    # a1: 3.22 -> 3; a2: 1.61 -> 2; b1 0; max 3 min 0
    # a1: 0; a2: 100 * (3 - 2) // 3 = 33; b1: 100
    case(name="hostname counts per node",
         objects=[A1, A2, B1, web("w1", "a1"), web("w2", "a1"), web("w3", "a2")],
         pod=spreading(constraint(HOST, when="ScheduleAnyway")),
         expected={"a1": 0, "a2": 33, "b1": 100}),
    # maxSkew 3 adds 3 - 1 = 2: a: 2 * 1.3863 + 2 = 4.77 -> 5; b1: 2
    # max 5, min 2: a: 100 * (5 + 2 - 5) // 5 = 40; b1: 100 * (5 + 2 - 2) // 5 = 100
    case(name="maxSkew offsets every score",
         objects=[A1, A2, B1, web("w1", "a1"), web("w2", "a1")],
         pod=spreading(constraint(max_skew=3, when="ScheduleAnyway")),
         expected={"a1": 40, "a2": 40, "b1": 100}),
    # d has no zone: ignored (0), not a domain; z1 2, z2 0 -> ln(4)
    # a1: 3, b1: 0; max 3 min 0 -> a1 0, b1 100, d 0
    case(name="node without the key is ignored",
         objects=[A1, B1, zone_node("d"), web("w1", "a1"), web("w2", "a1")],
         pod=spreading(constraint(when="ScheduleAnyway")),
         expected={"a1": 0, "b1": 100, "d": 0}),
    # zone and hostname, maxSkew 1 each; one pod on each of a1, a2, b1
    # zone: z1 2, z2 1, ln(4) = 1.3863; hostname: 1 each, ln(5) = 1.6094
    # a1, a2: 2 * 1.3863 + 1.6094 = 4.38 -> 4; b1: 1.3863 + 1.6094 = 3.00 -> 3
    # max 4, min 3: a: 100 * (4 + 3 - 4) // 4 = 75; b1: 100 * (4 + 3 - 3) // 4 = 100
    case(name="two constraints add up",
         objects=[A1, A2, B1, web("w1", "a1"), web("w2", "a2"), web("w3", "b1")],
         pod=spreading(constraint(when="ScheduleAnyway"), constraint(HOST, when="ScheduleAnyway")),
         expected={"a1": 75, "a2": 75, "b1": 100}),
    # no matching pod anywhere: every score 0 -> max 0 -> all 100
    case(name="all zero gives 100",
         objects=[A1, B1, web("w1", "a1", labels={"app": "db"})],
         pod=spreading(constraint(when="ScheduleAnyway")),
         expected={"a1": 100, "b1": 100}),
]


@pytest.mark.parametrize("case", SCORE_CASES, ids=[c["name"] for c in SCORE_CASES])
def test_score(case, backend):
    rec = run(case["objects"], case["pod"], one_plugin_config(PTS), backend)
    assert rec["filter"] == {}
    assert plugin_scores(rec, PTS) == case["expected"]
    assert rec["total"] == case["expected"]


SERVICE = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": dict(WEB)}}
LIST_DEFAULTS = {"defaultingType": "List", "defaultConstraints": [
    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]}


def test_list_default_constraints_with_a_service(backend):
    # no constraints on the pod: the List default (zone, maxSkew 1,
    # DoNotSchedule) applies with the Service's selector app=web
    # z1 2 pods, z2 0 -> a1: 2 + 1 - 0 = 3 > 1; b1 fits
    objects = [A1, B1, SERVICE, web("w1", "a1"), web("w2", "a1")]
    rec = run(objects, pod("p", labels=dict(WEB)), one_plugin_config(PTS, LIST_DEFAULTS), backend)
    assert rec["filter"] == {"a1": SKEW}
    assert rec["selected"] == "b1"


def test_default_constraints_need_a_selector(backend):
    # same without the Service: no selector can be deduced -> no constraints
    # -> PreFilter and PreScore Skip: both fit, no score
    objects = [A1, B1, web("w1", "a1"), web("w2", "a1")]
    rec = run(objects, pod("p", labels=dict(WEB)), one_plugin_config(PTS, LIST_DEFAULTS), backend)
    assert rec["filter"] == {}
    assert plugin_scores(rec, PTS) == {}


ARGS_PATH = "profiles[0].pluginConfig[0].args"
CONFIG_ERROR_CASES = [
    # defaultConstraints need defaultingType List
    case(name="constraints with System defaulting",
         args={"defaultingType": "System",
               "defaultConstraints": LIST_DEFAULTS["defaultConstraints"]},
         field="defaultingType"),
    # default constraints get their selector per pod
    case(name="default constraint with a selector",
         args={"defaultingType": "List", "defaultConstraints": [
             {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
              "labelSelector": {"matchLabels": WEB}}]},
         field="defaultConstraints[0].labelSelector"),
    # maxSkew > 0
    case(name="maxSkew zero",
         args={"defaultingType": "List", "defaultConstraints": [
             {"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]},
         field="defaultConstraints[0].maxSkew"),
    # minDomains only with DoNotSchedule
    case(name="minDomains with ScheduleAnyway",
         args={"defaultingType": "List", "defaultConstraints": [
             {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
              "minDomains": 2}]},
         field="defaultConstraints[0].minDomains"),
    # the same {key, whenUnsatisfiable} twice
    case(name="duplicate constraint",
         args={"defaultingType": "List", "defaultConstraints": [
             {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
             {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]},
         field="defaultConstraints[1]"),
]


@pytest.mark.parametrize("case", CONFIG_ERROR_CASES, ids=[c["name"] for c in CONFIG_ERROR_CASES])
def test_args_validation(case):
    with pytest.raises(ConfigError) as err:
        load_config(one_plugin_config(PTS, case["args"]))
    assert err.value.field == f"{ARGS_PATH}.{case['field']}"


def test_default_args():
    # System defaulting, no explicit constraints
    a = load_config(one_plugin_config(PTS)).profiles[0].args[PTS]
    assert a.defaulting_type == "System" and a.default_constraints == ()
