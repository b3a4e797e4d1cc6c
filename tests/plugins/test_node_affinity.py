"""NodeAffinity alone (PreFilter/Filter/PreScore/Score), after upstream's
node_affinity_test.go.

Filter: the scheduler-enforced ``addedAffinity`` first ("node(s) didn't
match scheduler-enforced node affinity"), then spec.nodeSelector AND the
required terms ("node(s) didn't match Pod's node affinity/selector"), both
UnschedulableAndUnresolvable.  Terms are ORed, a term's expressions ANDed;
an empty term matches nothing; NotIn / DoesNotExist hold on a node without
the key; Gt / Lt compare integers (a non-integer label never matches).
PreFilter narrows the nodes to matchFields ``metadata.name In`` when every
term has one; nodes left out are "node(s) didn't satisfy plugin(s)
[NodeAffinity]"; terms whose names do not intersect are "pod affinity terms
conflict".

Score: the sum of the weights of the matching preferred terms (the pod's
and addedAffinity's); NormalizeScore 100 * s // max (0 when max is 0).
PreScore Skips when there are no preferred terms at all.
"""

from __future__ import annotations

import pytest
from support.builders import case, node, one_plugin_config, plugin_scores, pod, run

from tensorsched.framework.config.kube_config import load_config
from tensorsched.framework.errors import ConfigError

NA = "NodeAffinity"
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
ZONE = "topology.kubernetes.io/zone"
POD_REASON = "node(s) didn't match Pod's node affinity/selector"
ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
PREFILTER_OUT = "node(s) didn't satisfy plugin(s) [NodeAffinity]"
CONFLICT = "pod affinity terms conflict"


def expr(key, op, *values):
    e = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def term(*exprs, fields=()):
    t = {}
    if exprs:
        t["matchExpressions"] = list(exprs)
    if fields:
        t["matchFields"] = list(fields)
    return t


def required(*terms):
    return {REQ: {"nodeSelectorTerms": list(terms)}}


def preferred(*weighted):
    return {PREF: [{"weight": w, "preference": t} for w, t in weighted]}


def affinity_pod(node_affinity=None, selector=None):
    spec = {}
    if node_affinity is not None:
        spec["affinity"] = {"nodeAffinity": node_affinity}
    if selector is not None:
        spec["nodeSelector"] = selector
    return pod("p", spec=spec)


# a: zone z1, cores 8; b: zone z2, gpu, cores 16; c: gpu, cores abc; d: no labels
NODES = [
    node("a", labels={ZONE: "z1", "cores": "8"}),
    node("b", labels={ZONE: "z2", "gpu": "true", "cores": "16"}),
    node("c", labels={"gpu": "true", "cores": "abc"}),
    node("d"),
]
ALL = ("a", "b", "c", "d")

FILTER_CASES = [
    # nodeSelector zone=z1: only a carries it; d lacks the key
    case(name="nodeSelector", pod=affinity_pod(selector={ZONE: "z1"}), args=None,
         fits=("a",)),
    # In [z1, z3]: a (z1); b is z2; c, d lack the key
    case(name="In operator", pod=affinity_pod(required(term(expr(ZONE, "In", "z1", "z3")))),
         args=None, fits=("a",)),
    # NotIn [z1]: a rejected; b (z2) and the nodes without the key (c, d) match
    case(name="NotIn matches nodes without the key",
         pod=affinity_pod(required(term(expr(ZONE, "NotIn", "z1")))), args=None,
         fits=("b", "c", "d")),
    # Exists gpu: b, c
    case(name="Exists", pod=affinity_pod(required(term(expr("gpu", "Exists")))), args=None,
         fits=("b", "c")),
    # DoesNotExist gpu: a, d
    case(name="DoesNotExist", pod=affinity_pod(required(term(expr("gpu", "DoesNotExist")))),
         args=None, fits=("a", "d")),
    # cores Gt 8: a 8 > 8 false, b 16 > 8 true, c 'abc' not an integer, d no key
    case(name="Gt compares integers", pod=affinity_pod(required(term(expr("cores", "Gt", "8")))),
         args=None, fits=("b",)),
    # cores Lt 16: a 8 < 16 true, b 16 < 16 false, c not an integer
    case(name="Lt compares integers", pod=affinity_pod(required(term(expr("cores", "Lt", "16")))),
         args=None, fits=("a",)),
    # two terms ORed: zone In [z1] (a) OR DoesNotExist gpu AND DoesNotExist zone (d)
    case(name="terms are ORed",
         pod=affinity_pod(required(term(expr(ZONE, "In", "z1")),
                                   term(expr("gpu", "DoesNotExist"), expr(ZONE, "DoesNotExist")))),
         args=None, fits=("a", "d")),
    # expressions ANDed: gpu Exists AND zone Exists -> b only (c has no zone)
    case(name="expressions are ANDed",
         pod=affinity_pod(required(term(expr("gpu", "Exists"), expr(ZONE, "Exists")))),
         args=None, fits=("b",)),
    # an empty term matches nothing: the other term (gpu Exists) still admits b, c
    case(name="empty term matches nothing",
         pod=affinity_pod(required(term(), term(expr("gpu", "Exists")))), args=None,
         fits=("b", "c")),
    # nodeSelector gpu=true AND required zone Exists: b only (c fails the term)
    case(name="nodeSelector and required affinity both apply",
         pod=affinity_pod(required(term(expr(ZONE, "Exists"))), selector={"gpu": "true"}),
         args=None, fits=("b",)),
    # addedAffinity requires gpu Exists: a, d are rejected with the enforced
    # reason (checked first, though a also fails the pod's zone In [z2]);
    # c passes the added term but fails the pod's zone In [z2]
    case(name="addedAffinity is checked first",
         pod=affinity_pod(required(term(expr(ZONE, "In", "z2")))),
         args={"addedAffinity": required(term(expr("gpu", "Exists")))},
         fits=("b",), enforced=("a", "d")),
    # addedAffinity alone constrains a pod without any affinity
    case(name="addedAffinity applies to a pod without affinity", pod=affinity_pod(),
         args={"addedAffinity": required(term(expr(ZONE, "Exists")))}, fits=("a", "b"),
         enforced=("c", "d")),
]


@pytest.mark.parametrize("case", FILTER_CASES, ids=[c["name"] for c in FILTER_CASES])
def test_filter(case, backend):
    rec = run(NODES, case["pod"], one_plugin_config(NA, case["args"]), backend)
    enforced = case.get("enforced", ())
    want = {n: {"code": "UnschedulableAndUnresolvable", "plugin": NA,
                "reasons": [ENFORCED if n in enforced else POD_REASON]}
            for n in ALL if n not in case["fits"]}
    assert rec["filter"] == want
    assert sorted(rec["feasible"]) == sorted(case["fits"])


def test_no_affinity_fits_everywhere(backend):
    # PreFilter Skip: nothing constrains the pod -> all four nodes fit
    rec = run(NODES, affinity_pod(), one_plugin_config(NA), backend)
    assert rec["filter"] == {} and sorted(rec["feasible"]) == list(ALL)


def name_in(*names):
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


def test_match_fields_prefilter_narrows_nodes(backend):
    # every term has metadata.name In: PreFilter keeps {b, c}; the others are
    # left out by PreFilter; b also passes Filter's gpu Exists, c too
    pod_ = affinity_pod(required(term(expr("gpu", "Exists"), fields=[name_in("b")]),
                                 term(fields=[name_in("c")])))
    rec = run(NODES, pod_, one_plugin_config(NA), backend)
    out = {"code": "UnschedulableAndUnresolvable", "plugin": NA, "reasons": [PREFILTER_OUT]}
    assert rec["filter"] == {"a": out, "d": out}
    assert sorted(rec["feasible"]) == ["b", "c"]


def test_match_fields_filter_rejects_inside_prefilter_result(backend):
    # PreFilter keeps {a, b} (the union of the terms' names); Filter then
    # checks the terms: a fails the first (no gpu) and the second (name b)
    # -> the Pod's affinity reason; b matches the second term
    pod_ = affinity_pod(required(term(expr("gpu", "Exists"), fields=[name_in("a")]),
                                 term(fields=[name_in("b")])))
    rec = run(NODES, pod_, one_plugin_config(NA), backend)
    out = {"code": "UnschedulableAndUnresolvable", "plugin": NA, "reasons": [PREFILTER_OUT]}
    assert rec["filter"] == {
        "a": {"code": "UnschedulableAndUnresolvable", "plugin": NA, "reasons": [POD_REASON]},
        "c": out, "d": out}
    assert rec["feasible"] == ["b"]


def test_match_fields_conflict(backend):
    # one term, metadata.name In [a] AND In [b]: the intersection is empty
    # -> PreFilter UnschedulableAndUnresolvable on every node
    pod_ = affinity_pod(required(term(fields=[name_in("a"), name_in("b")])))
    rec = run(NODES, pod_, one_plugin_config(NA), backend)
    conflict = {"code": "UnschedulableAndUnresolvable", "plugin": NA, "reasons": [CONFLICT]}
    assert rec["filter"] == dict.fromkeys(ALL, conflict)
    assert rec["feasible"] == [] and rec["selected"] is None


SCORE_CASES = [
    # weights: 20 for zone In [z1], 50 for gpu Exists
    # raw a 20, b 50, c 50, d 0; max 50
    # a: 100 * 20 // 50 = 40, b, c: 100, d: 0
    case(name="sum of matching weights normalized to the best",
         pod=affinity_pod(preferred((20, term(expr(ZONE, "In", "z1"))),
                                    (50, term(expr("gpu", "Exists"))))),
         args=None, expected={"a": 40, "b": 100, "c": 100, "d": 0}),
    # weights: 30 zone Exists, 40 gpu Exists, 5 cores Gt 10
    # raw a 30, b 30 + 40 + 5 = 75, c 40, d 0; max 75
    # a: 3000 // 75 = 40, b: 100, c: 4000 // 75 = 53 (53.3), d: 0
    case(name="terms add up, integer division",
         pod=affinity_pod(preferred((30, term(expr(ZONE, "Exists"))),
                                    (40, term(expr("gpu", "Exists"))),
                                    (5, term(expr("cores", "Gt", "10"))))),
         args=None, expected={"a": 40, "b": 100, "c": 53, "d": 0}),
    # an empty preference matches nothing: weight 5 empty, 10 zone In [z1]
    # raw a 10, others 0 -> a 100, others 0 (were the empty term matching all,
    # b would get 100 * 5 // 15 = 33)
    case(name="empty preference matches nothing",
         pod=affinity_pod(preferred((5, term()), (10, term(expr(ZONE, "In", "z1"))))),
         args=None, expected={"a": 100, "b": 0, "c": 0, "d": 0}),
    # addedAffinity preferred (10, zone In [z2]) plus the pod's (30, zone In [z1])
    # raw a 30, b 10; max 30: a 100, b 100 * 10 // 30 = 33
    case(name="addedAffinity preferred terms add to the pod's",
         pod=affinity_pod(preferred((30, term(expr(ZONE, "In", "z1"))))),
         args={"addedAffinity": preferred((10, term(expr(ZONE, "In", "z2"))))},
         expected={"a": 100, "b": 33, "c": 0, "d": 0}),
    # addedAffinity preferred only: the pod has none, PreScore does not Skip
    # raw b 60, c 60 (gpu Exists), others 0 -> 100, 100, 0, 0
    case(name="addedAffinity preferred terms alone",
         pod=affinity_pod(), args={"addedAffinity": preferred((60, term(expr("gpu", "Exists"))))},
         expected={"a": 0, "b": 100, "c": 100, "d": 0}),
]


@pytest.mark.parametrize("case", SCORE_CASES, ids=[c["name"] for c in SCORE_CASES])
def test_score(case, backend):
    rec = run(NODES, case["pod"], one_plugin_config(NA, case["args"]), backend)
    assert plugin_scores(rec, NA) == case["expected"]
    assert rec["total"] == case["expected"]


def test_no_preferred_terms_skips_score(backend):
    # only a required term: PreScore Skip -> no NodeAffinity score anywhere
    rec = run(NODES, affinity_pod(required(term(expr("gpu", "Exists")))),
              one_plugin_config(NA), backend)
    assert plugin_scores(rec, NA) == {}
    assert rec["total"] == {"b": 0, "c": 0}


def test_weight_two(backend):
    # default weight 2: a 40 * 2 = 80, b and c 200 (first score case); b or c selected
    rec = run(NODES, SCORE_CASES[0]["pod"], one_plugin_config(NA, weight=2), backend)
    assert rec["total"] == {"a": 80, "b": 200, "c": 200, "d": 0}
    assert rec["selected"] in ("b", "c")


ARGS_PATH = "profiles[0].pluginConfig[0].args.addedAffinity"
CONFIG_ERROR_CASES = [
    # preferred weights are 1..100
    case(name="preferred weight 0",
         args={"addedAffinity": preferred((0, term(expr(ZONE, "Exists"))))},
         field=f"{PREF}[0].weight"),
    # required needs at least one term
    case(name="required without terms", args={"addedAffinity": required()},
         field=f"{REQ}.nodeSelectorTerms"),
    # Gt takes one integer value
    case(name="Gt with a non-integer",
         args={"addedAffinity": required(term(expr("cores", "Gt", "many")))},
         field=f"{REQ}.nodeSelectorTerms[0].matchExpressions[0].values[0]"),
    # In needs values
    case(name="In without values",
         args={"addedAffinity": required(term(expr(ZONE, "In")))},
         field=f"{REQ}.nodeSelectorTerms[0].matchExpressions[0].values"),
]


@pytest.mark.parametrize("case", CONFIG_ERROR_CASES, ids=[c["name"] for c in CONFIG_ERROR_CASES])
def test_args_validation(case):
    with pytest.raises(ConfigError) as err:
        load_config(one_plugin_config(NA, case["args"]))
    assert err.value.field == f"{ARGS_PATH}.{case['field']}"
