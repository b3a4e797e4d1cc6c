"""NodeResourcesFit alone (PreFilter/Filter/PreScore/Score), after upstream's
fit_test.go, least_allocated_test.go, most_allocated_test.go and
requested_to_capacity_ratio_test.go.

Filter: 'Too many pods' when pods on the node + 1 > allocatable pods; a pod
requesting nothing stops there; otherwise 'Insufficient <r>' for each
requested resource with request > allocatable - requested (actual
requests), cpu, memory, ephemeral-storage, then extended resources not
ignored.  Status Unschedulable.

Score (v1.32): per resource, requested = node's non-zero requested + the
pod's non-zero request (cpu 100m, memory 200Mi when a container sets none);
LeastAllocated (capacity - requested) * 100 // capacity (0 when requested >
capacity), MostAllocated requested * 100 // capacity (requested capped at
capacity), combined as sum(score * weight) // sum(weight);
RequestedToCapacityRatio: utilization = requested * 100 // capacity on the
shape (scores x10, Go integer division), resources scoring 0 left out,
math.Round(sum / weight sum).
"""

from __future__ import annotations

import pytest
from support.builders import case, node, one_plugin_config, plugin_scores, pod, run

from tensorsched.framework.config.kube_config import load_config
from tensorsched.framework.errors import ConfigError

FIT = "NodeResourcesFit"
INSUFFICIENT = "Unschedulable"


def _rejected(reasons):
    return {"code": INSUFFICIENT, "plugin": FIT, "reasons": reasons}


# ---------------------------------------------------------------------------
# Filter
# ---------------------------------------------------------------------------

FILTER_CASES = [
    # node a: cpu 4000m, 1 pod of 3000m on it -> 1000m free.
    # incoming 1000m: 1000 > 1000 is false -> fits (an exact fit is a fit)
    case(name="exact fit",
         nodes=[node("a", cpu="4")], existing=[pod("e1", cpu="3", on="a")],
         pod=pod("p", cpu="1"), args=None,
         expected={"a": None}),
    # incoming 1500m > 4000 - 3000 = 1000 free -> Insufficient cpu
    case(name="insufficient cpu",
         nodes=[node("a", cpu="4")], existing=[pod("e1", cpu="3", on="a")],
         pod=pod("p", cpu="1500m"), args=None,
         expected={"a": ["Insufficient cpu"]}),
    # node b: cpu 4000 - 3000 = 1000 free, memory 1Gi - 512Mi = 512Mi free;
    # incoming 2 cpu > 1000m and 1Gi > 512Mi -> both reasons, cpu first.
    # node c: 8 cpu, 32Gi, empty -> fits
    case(name="insufficient cpu and memory, reasons in order",
         nodes=[node("b", cpu="4", memory="1Gi"), node("c", cpu="8")],
         existing=[pod("e1", cpu="3", memory="512Mi", on="b")],
         pod=pod("p", cpu="2", memory="1Gi"), args=None,
         expected={"b": ["Insufficient cpu", "Insufficient memory"], "c": None}),
    # allocatable pods 1, one pod there: 1 + 1 > 1 -> Too many pods; the
    # incoming pod requests nothing, so the resource checks stop there even
    # though the node's cpu is fully used
    case(name="too many pods only, pod requests nothing",
         nodes=[node("a", cpu="1", pods="1")], existing=[pod("e1", cpu="1", on="a")],
         pod=pod("p"), args=None,
         expected={"a": ["Too many pods"]}),
    # pods: 1 + 1 > 1 -> Too many pods; cpu 2000 > 4000 - 3000 -> Insufficient
    # cpu: all failures are collected, pods first
    case(name="too many pods and insufficient cpu",
         nodes=[node("a", cpu="4", pods="1")], existing=[pod("e1", cpu="3", on="a")],
         pod=pod("p", cpu="2"), args=None,
         expected={"a": ["Too many pods", "Insufficient cpu"]}),
    # cpu fully used (4000 - 4000 = 0 free) but the pod requests nothing
    # -> fits (no non-zero defaults in Filter)
    case(name="zero-request pod fits a full node",
         nodes=[node("a", cpu="4")], existing=[pod("e1", cpu="4", on="a")],
         pod=pod("p"), args=None,
         expected={"a": None}),
    # example.com/foo: allocatable 2, 1 used -> 1 free; request 2 > 1
    case(name="insufficient extended resource",
         nodes=[node("a", extra={"example.com/foo": "2"})],
         existing=[pod("e1", extra={"example.com/foo": "1"}, on="a")],
         pod=pod("p", cpu="1", extra={"example.com/foo": "2"}), args=None,
         expected={"a": ["Insufficient example.com/foo"]}),
    # same, with example.com/foo in ignoredResources -> not checked -> fits
    case(name="ignoredResources skips the extended resource",
         nodes=[node("a", extra={"example.com/foo": "2"})],
         existing=[pod("e1", extra={"example.com/foo": "1"}, on="a")],
         pod=pod("p", cpu="1", extra={"example.com/foo": "2"}),
         args={"ignoredResources": ["example.com/foo"]},
         expected={"a": None}),
    # ignoredResourceGroups ["example.com"]: prefix of example.com/foo -> skipped;
    # other.io/bar (absent from the node: allocatable 0, request 1 > 0) still fails
    case(name="ignoredResourceGroups skips by prefix only",
         nodes=[node("a", extra={"example.com/foo": "2"})],
         existing=[pod("e1", extra={"example.com/foo": "1"}, on="a")],
         pod=pod("p", extra={"example.com/foo": "2", "other.io/bar": "1"}),
         args={"ignoredResourceGroups": ["example.com"]},
         expected={"a": ["Insufficient other.io/bar"]}),
]


@pytest.mark.parametrize("case", FILTER_CASES, ids=[c["name"] for c in FILTER_CASES])
def test_filter(case, backend):
    rec = run(case["nodes"] + case["existing"], case["pod"], one_plugin_config(FIT, case["args"]),
              backend)
    want_rejected = {n: _rejected(r) for n, r in case["expected"].items() if r is not None}
    assert rec["filter"] == want_rejected
    assert sorted(rec["feasible"]) == sorted(n for n, r in case["expected"].items() if r is None)


# ---------------------------------------------------------------------------
# Score (PreScore + Score only, as upstream calls Score on every node)
# ---------------------------------------------------------------------------

SCORE_POINTS = ("preScore", "score")


def _strategy(type_, resources=None, shape=None):
    s = {"type": type_}
    if resources is not None:
        s["resources"] = resources
    if shape is not None:
        s["requestedToCapacityRatio"] = {"shape": shape}
    return {"scoringStrategy": s}


SCORE_CASES = [
    # default args: LeastAllocated, cpu:1 memory:1; pod 1 cpu, 2Gi
    # a (4 cpu, 8Gi): cpu (4000 - 1000) * 100 // 4000 = 75, mem (8 - 2) * 100 // 8 = 75
    #                 (75 + 75) // 2 = 75
    # b (8 cpu, 8Gi): cpu (8000 - 1000) * 100 // 8000 = 87, mem 75 -> 162 // 2 = 81
    case(name="least allocated, default args",
         nodes=[node("a", cpu="4", memory="8Gi"), node("b", cpu="8", memory="8Gi")],
         existing=[], pod=pod("p", cpu="1", memory="2Gi"), args=None,
         expected={"a": 75, "b": 81}),
    # existing pod (2 cpu, 4Gi) on a: requested cpu 3000, mem 6Gi
    # a: cpu (4000 - 3000) * 100 // 4000 = 25, mem (8 - 6) * 100 // 8 = 25 -> 25
    # b: 81 as above
    case(name="least allocated counts existing pods",
         nodes=[node("a", cpu="4", memory="8Gi"), node("b", cpu="8", memory="8Gi")],
         existing=[pod("e1", cpu="2", memory="4Gi", on="a")],
         pod=pod("p", cpu="1", memory="2Gi"), args=None,
         expected={"a": 25, "b": 81}),
    # pod without requests scores with the non-zero defaults 100m / 200Mi
    # a (1 cpu, 1000Mi): cpu (1000 - 100) * 100 // 1000 = 90,
    #                    mem (1000 - 200) * 100 // 1000 = 80 -> (90 + 80) // 2 = 85
    case(name="least allocated, non-zero request defaults",
         nodes=[node("a", cpu="1", memory="1000Mi")], existing=[], pod=pod("p"), args=None,
         expected={"a": 85}),
    # MostAllocated: a: cpu 1000 * 100 // 4000 = 25, mem 2 * 100 // 8 = 25 -> 25
    #                b: cpu 1000 * 100 // 8000 = 12, mem 25 -> 37 // 2 = 18
    case(name="most allocated",
         nodes=[node("a", cpu="4", memory="8Gi"), node("b", cpu="8", memory="8Gi")],
         existing=[], pod=pod("p", cpu="1", memory="2Gi"),
         args=_strategy("MostAllocated"),
         expected={"a": 25, "b": 18}),
    # MostAllocated, defaults 100m / 200Mi on (1 cpu, 1000Mi):
    # cpu 100 * 100 // 1000 = 10, mem 200 * 100 // 1000 = 20 -> 30 // 2 = 15
    case(name="most allocated, non-zero request defaults",
         nodes=[node("a", cpu="1", memory="1000Mi")], existing=[], pod=pod("p"),
         args=_strategy("MostAllocated"),
         expected={"a": 15}),
    # weights cpu 3, memory 1; pod 1 cpu, 6Gi on (4 cpu, 8Gi):
    # cpu (4000 - 1000) * 100 // 4000 = 75, mem (8 - 6) * 100 // 8 = 25
    # (75 * 3 + 25 * 1) // (3 + 1) = 250 // 4 = 62
    case(name="least allocated, resource weights",
         nodes=[node("a", cpu="4", memory="8Gi")], existing=[],
         pod=pod("p", cpu="1", memory="6Gi"),
         args=_strategy("LeastAllocated", [{"name": "cpu", "weight": 3},
                                           {"name": "memory", "weight": 1}]),
         expected={"a": 62}),
    # request above capacity (no Filter here): node 500m cpu, 8Gi; pod 1 cpu, 2Gi
    # Least: cpu 1000 > 500 -> 0, mem (8 - 2) * 100 // 8 = 75 -> 75 // 2 = 37
    case(name="least allocated, request over capacity scores 0",
         nodes=[node("a", cpu="500m", memory="8Gi")], existing=[],
         pod=pod("p", cpu="1", memory="2Gi"), args=None,
         expected={"a": 37}),
    # Most: cpu requested capped at 500 -> 500 * 100 // 500 = 100, mem 25 -> 125 // 2 = 62
    case(name="most allocated, request over capacity capped",
         nodes=[node("a", cpu="500m", memory="8Gi")], existing=[],
         pod=pod("p", cpu="1", memory="2Gi"), args=_strategy("MostAllocated"),
         expected={"a": 62}),
    # RequestedToCapacityRatio, shape (0,0) (100,10) -> x10: (0,0) (100,100)
    # a (4 cpu, 8Gi): util cpu 1000 * 100 // 4000 = 25 -> 25, mem 25 -> 25
    #                 round((25 + 25) / 2) = 25
    # b (8 cpu, 8Gi): util cpu 1000 * 100 // 8000 = 12 -> 12, mem 25
    #                 round((12 + 25) / 2) = round(18.5) = 19 (half away from zero)
    case(name="requested to capacity ratio, rounding half away from zero",
         nodes=[node("a", cpu="4", memory="8Gi"), node("b", cpu="8", memory="8Gi")],
         existing=[], pod=pod("p", cpu="1", memory="2Gi"),
         args=_strategy("RequestedToCapacityRatio",
                        [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
                        [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]),
         expected={"a": 25, "b": 19}),
    # RequestedToCapacityRatio on cpu only, shape (0,10) (30,0) -> x10: (0,100) (30,0)
    # a (4 cpu): util 25 -> 100 + (0 - 100) * (25 - 0) / 30 = 100 + (-2500 / 30 -> -83,
    #            Go truncates toward zero) = 17
    # b (8 cpu): util 12 -> 100 + (-1200 / 30 = -40) = 60
    # c (2 cpu): util 50 > 30 -> last point's score 0; a resource scoring 0 is
    #            left out, weight sum 0 -> 0
    case(name="requested to capacity ratio, truncation and zero resource score",
         nodes=[node("a", cpu="4"), node("b", cpu="8"), node("c", cpu="2")],
         existing=[], pod=pod("p", cpu="1"),
         args=_strategy("RequestedToCapacityRatio", [{"name": "cpu", "weight": 1}],
                        [{"utilization": 0, "score": 10}, {"utilization": 30, "score": 0}]),
         expected={"a": 17, "b": 60, "c": 0}),
]


@pytest.mark.parametrize("case", SCORE_CASES, ids=[c["name"] for c in SCORE_CASES])
def test_score(case, backend):
    rec = run(case["nodes"] + case["existing"], case["pod"],
              one_plugin_config(FIT, case["args"], points=SCORE_POINTS), backend)
    assert plugin_scores(rec, FIT) == case["expected"]
    assert rec["total"] == case["expected"]        # weight 1
    best = max(case["expected"].values())
    assert case["expected"][rec["selected"]] == best


def test_score_weight_multiplies_total(backend):
    # weight 5: a scores 75 (see "least allocated, default args") -> total 5 * 75 = 375,
    # b 81 -> 405; b selected
    nodes = [node("a", cpu="4", memory="8Gi"), node("b", cpu="8", memory="8Gi")]
    rec = run(nodes, pod("p", cpu="1", memory="2Gi"),
              one_plugin_config(FIT, weight=5, points=SCORE_POINTS), backend)
    assert rec["scores"] == {"a": {FIT: 75}, "b": {FIT: 81}}
    assert rec["total"] == {"a": 375, "b": 405}
    assert rec["selected"] == "b"


# ---------------------------------------------------------------------------
# Args validation
# ---------------------------------------------------------------------------

ARGS_PATH = "profiles[0].pluginConfig[0].args"
CONFIG_ERROR_CASES = [
    # an unknown strategy type
    case(name="unknown scoring strategy type",
         args=_strategy("Balanced"), field="scoringStrategy.type"),
    # weights must be in (0, 100]
    case(name="resource weight above 100",
         args=_strategy("LeastAllocated", [{"name": "cpu", "weight": 101}]),
         field="scoringStrategy.resources[0].weight"),
    # RequestedToCapacityRatio needs its shape
    case(name="ratio strategy without requestedToCapacityRatio",
         args=_strategy("RequestedToCapacityRatio"),
         field="scoringStrategy.requestedToCapacityRatio"),
    # utilization must increase strictly: 50 then 50
    case(name="shape utilization not increasing",
         args=_strategy("RequestedToCapacityRatio", None,
                        [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]),
         field="scoringStrategy.requestedToCapacityRatio.shape[1].utilization"),
    # scores are 0..10
    case(name="shape score above 10",
         args=_strategy("RequestedToCapacityRatio", None,
                        [{"utilization": 0, "score": 11}]),
         field="scoringStrategy.requestedToCapacityRatio.shape[0].score"),
    # a resource group name has no '/'
    case(name="ignoredResourceGroups with a slash",
         args={"ignoredResourceGroups": ["example.com/foo"]},
         field="ignoredResourceGroups[0]"),
]


@pytest.mark.parametrize("case", CONFIG_ERROR_CASES, ids=[c["name"] for c in CONFIG_ERROR_CASES])
def test_args_validation(case):
    with pytest.raises(ConfigError) as err:
        load_config(one_plugin_config(FIT, case["args"]))
    assert err.value.field == f"{ARGS_PATH}.{case['field']}"


def test_default_args():
    # no pluginConfig: LeastAllocated over cpu:1, memory:1, nothing ignored
    prof = load_config(one_plugin_config(FIT)).profiles[0]
    s = prof.args[FIT].scoring_strategy
    assert s.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in s.resources] == [("cpu", 1), ("memory", 1)]
    assert prof.args[FIT].ignored_resources == ()
    assert prof.names("filter") == (FIT,) and prof.names("preFilter") == (FIT,)
    assert prof.score_weights() == {FIT: 1}
