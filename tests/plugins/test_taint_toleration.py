"""TaintToleration alone (Filter/PreScore/Score), after upstream's
taint_toleration_test.go.

Filter: the first NoSchedule / NoExecute taint of the node that no
toleration tolerates rejects it, UnschedulableAndUnresolvable,
"node(s) had untolerated taint {<key>: <value>}"; PreferNoSchedule taints
never filter.  A toleration tolerates a taint when its effect is empty or
equal, its key is empty (with Exists) or equal, and Exists, or Equal with
the same value.

Score: the number of PreferNoSchedule taints not tolerated by the
tolerations whose effect is empty or PreferNoSchedule; NormalizeScore
reversed: 100 - 100 * count // max (all 100 when max is 0).
"""

from __future__ import annotations

import pytest
from support.builders import (
    case,
    node,
    one_plugin_config,
    plugin_scores,
    pod,
    run,
    taint,
    toleration,
)

from tensorsched.framework.config.kube_config import load_config

TT = "TaintToleration"


def _untolerated(key, value):
    return {"code": "UnschedulableAndUnresolvable", "plugin": TT,
            "reasons": [f"node(s) had untolerated taint {{{key}: {value}}}"]}


def tolerating(*tols):
    return pod("p", spec={"tolerations": list(tols)})


GPU_NOSCHED = taint("dedicated", "gpu", "NoSchedule")

FILTER_CASES = [
    # a has no taints -> fits; b: dedicated=gpu:NoSchedule, no toleration -> rejected
    case(name="untolerated NoSchedule taint",
         nodes=[node("a"), node("b", taints=[GPU_NOSCHED])], pod=pod("p"),
         expected={"a": None, "b": ("dedicated", "gpu")}),
    # Equal, same key/value/effect -> tolerated
    case(name="Equal toleration with value and effect",
         nodes=[node("b", taints=[GPU_NOSCHED])],
         pod=tolerating(toleration("dedicated", "gpu", "NoSchedule")),
         expected={"b": None}),
    # Equal with another value (cpu != gpu) -> not tolerated
    case(name="Equal toleration with another value",
         nodes=[node("b", taints=[GPU_NOSCHED])],
         pod=tolerating(toleration("dedicated", "cpu", "NoSchedule")),
         expected={"b": ("dedicated", "gpu")}),
    # Exists on the key, empty effect -> any value, any effect -> tolerated
    case(name="Exists toleration on the key",
         nodes=[node("b", taints=[GPU_NOSCHED])], pod=tolerating(toleration("dedicated")),
         expected={"b": None}),
    # Exists with empty key tolerates every taint
    case(name="Exists toleration without key tolerates all",
         nodes=[node("b", taints=[GPU_NOSCHED, taint("spot", "true", "NoExecute")])],
         pod=tolerating(toleration()), expected={"b": None}),
    # toleration effect NoExecute does not tolerate a NoSchedule taint
    case(name="toleration effect mismatch",
         nodes=[node("b", taints=[GPU_NOSCHED])],
         pod=tolerating(toleration("dedicated", "gpu", "NoExecute")),
         expected={"b": ("dedicated", "gpu")}),
    # NoExecute taints filter too; the reason shows an empty value as '{key: }'
    case(name="untolerated NoExecute taint with empty value",
         nodes=[node("c", taints=[taint("maintenance", "", "NoExecute")])], pod=pod("p"),
         expected={"c": ("maintenance", "")}),
    # PreferNoSchedule never filters
    case(name="PreferNoSchedule does not filter",
         nodes=[node("d", taints=[taint("spot", "true", "PreferNoSchedule")])], pod=pod("p"),
         expected={"d": None}),
    # taints in node order: the first (dedicated) is tolerated, the second
    # (team=ml) is the first untolerated one -> reported
    case(name="first untolerated taint is reported",
         nodes=[node("e", taints=[GPU_NOSCHED, taint("team", "ml", "NoSchedule"),
                                  taint("zone", "x", "NoExecute")])],
         pod=tolerating(toleration("dedicated", "gpu", "NoSchedule")),
         expected={"e": ("team", "ml")}),
]


@pytest.mark.parametrize("case", FILTER_CASES, ids=[c["name"] for c in FILTER_CASES])
def test_filter(case, backend):
    rec = run(case["nodes"], case["pod"], one_plugin_config(TT), backend)
    assert rec["filter"] == {n: _untolerated(*kv) for n, kv in case["expected"].items()
                             if kv is not None}
    assert sorted(rec["feasible"]) == sorted(n for n, kv in case["expected"].items()
                                             if kv is None)
    if not rec["feasible"]:
        assert rec["selected"] is None


def _prefer(*keys):
    return [taint(k, "1", "PreferNoSchedule") for k in keys]


SCORE_CASES = [
    # untolerated PreferNoSchedule counts: a 0, b 1, c 2; max 2
    # a: 100 - 100 * 0 // 2 = 100, b: 100 - 100 * 1 // 2 = 50, c: 100 - 100 = 0
    case(name="fewest untolerated PreferNoSchedule taints wins",
         nodes=[node("a"), node("b", taints=_prefer("x")), node("c", taints=_prefer("x", "y"))],
         pod=pod("p"), expected={"a": 100, "b": 50, "c": 0}),
    # counts a 0, b 1, d 3; max 3
    # b: 100 - 100 * 1 // 3 = 100 - 33 = 67, d: 100 - 100 = 0
    case(name="integer division in the reversed normalization",
         nodes=[node("a"), node("b", taints=_prefer("x")),
                node("d", taints=_prefer("x", "y", "z"))],
         pod=pod("p"), expected={"a": 100, "b": 67, "d": 0}),
    # tolerations: x (effect PreferNoSchedule) and y (empty effect) count
    # for scoring, z (effect NoSchedule) does not
    # a: taints x, y, z -> only z untolerated -> 1; b: z -> 1; c: none -> 0; max 1
    # a: 100 - 100 = 0, b: 0, c: 100
    case(name="only empty or PreferNoSchedule tolerations count",
         nodes=[node("a", taints=_prefer("x", "y", "z")), node("b", taints=_prefer("z")),
                node("c")],
         pod=tolerating(toleration("x", "1", "PreferNoSchedule"), toleration("y"),
                        toleration("z", "1", "NoSchedule")),
         expected={"a": 0, "b": 0, "c": 100}),
    # no node has an untolerated PreferNoSchedule taint (max 0) -> all 100;
    # a tolerated NoSchedule taint on b does not count
    case(name="all zero counts give 100",
         nodes=[node("a"), node("b", taints=[GPU_NOSCHED])],
         pod=tolerating(toleration("dedicated", "gpu", "NoSchedule")),
         expected={"a": 100, "b": 100}),
]


@pytest.mark.parametrize("case", SCORE_CASES, ids=[c["name"] for c in SCORE_CASES])
def test_score(case, backend):
    rec = run(case["nodes"], case["pod"], one_plugin_config(TT), backend)
    assert rec["filter"] == {}
    assert plugin_scores(rec, TT) == case["expected"]
    assert rec["total"] == case["expected"]


def test_weight_three_multiplies(backend):
    # weight 3 (TaintToleration's default weight): a 100 * 3 = 300, b 50 * 3 = 150
    nodes = [node("a"), node("b", taints=_prefer("x")), node("c", taints=_prefer("x", "y"))]
    rec = run(nodes, pod("p"), one_plugin_config(TT, weight=3), backend)
    assert rec["total"] == {"a": 300, "b": 150, "c": 0}
    assert rec["selected"] == "a"
    # the default profile gives TaintToleration weight 3
    assert load_config(None).profiles[0].score_weights()[TT] == 3
