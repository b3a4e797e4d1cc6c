"""NodeResourcesBalancedAllocation alone (PreScore/Score), after upstream's
balanced_allocation_test.go (v1.32).

Per configured resource with allocatable A > 0 (an extended resource only
when the pod requests it): f = (node requested + pod request) / A with
ACTUAL requests (no 100m / 200Mi defaults), capped at 1.  Two fractions:
std = |f1 - f2| / 2; more: population std; fewer: 0.  Score =
int64((1 - std) * 100); no NormalizeScore.  PreScore returns Skip for a pod
requesting none of the resources (the plugin then scores nothing).
"""

from __future__ import annotations

import pytest
from support.builders import case, node, one_plugin_config, plugin_scores, pod, run

from tensorsched.framework.config.kube_config import load_config
from tensorsched.framework.errors import ConfigError

BA = "NodeResourcesBalancedAllocation"
GPU = "example.com/gpu"
WITH_GPU = {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1},
                          {"name": GPU, "weight": 1}]}

CASES = [
    # pod 1 cpu, 2Gi
    # a (4 cpu, 8Gi): f = 1/4, 2/8 = 0.25, 0.25 -> std 0 -> 100
    # b (8 cpu, 8Gi): f = 0.125, 0.25 -> std 0.0625 -> int(93.75) = 93
    case(name="balanced node wins",
         nodes=[node("a", cpu="4", memory="8Gi"), node("b", cpu="8", memory="8Gi")],
         existing=[], pod=pod("p", cpu="1", memory="2Gi"), args=None,
         expected={"a": 100, "b": 93}),
    # existing pod on a requests 1 cpu and NO memory; actual requests are used
    # a: f = (1 + 1) / 4 = 0.5, 2/8 = 0.25 -> std 0.125 -> int(87.5) = 87
    # b: 93 as above
    case(name="existing pods count with actual requests",
         nodes=[node("a", cpu="4", memory="8Gi"), node("b", cpu="8", memory="8Gi")],
         existing=[pod("e1", cpu="1", on="a")], pod=pod("p", cpu="1", memory="2Gi"),
         args=None, expected={"a": 87, "b": 93}),
    # pod 2 cpu, 2Gi on c (1 cpu, 8Gi): cpu f = 2 / 1 capped at 1, mem 0.25
    # std = (1 - 0.25) / 2 = 0.375 -> int(62.5) = 62
    case(name="fraction capped at one",
         nodes=[node("c", cpu="1", memory="8Gi")], existing=[],
         pod=pod("p", cpu="2", memory="2Gi"), args=None, expected={"c": 62}),
    # pod requesting cpu only: memory f = 0 / 8Gi = 0 still counts
    # a: f = 0.25, 0 -> std 0.125 -> 87
    case(name="cpu-only pod, memory fraction zero",
         nodes=[node("a", cpu="4", memory="8Gi")], existing=[], pod=pod("p", cpu="1"),
         args=None, expected={"a": 87}),
    # node z has memory allocatable 0: memory is left out -> one fraction -> std 0 -> 100
    # a: f = 0.25, 0.25 -> 100 as well; d (4 cpu, 4Gi): f = 0.25, 0.5 -> std 0.125 -> 87
    case(name="zero allocatable resource is skipped",
         nodes=[node("z", cpu="4", memory="0"), node("d", cpu="4", memory="4Gi")],
         existing=[], pod=pod("p", cpu="1", memory="2Gi"), args=None,
         expected={"z": 100, "d": 87}),
    # three resources: g (4 cpu, 8Gi, 4 gpu), pod 1 cpu, 2Gi, 2 gpu
    # f = 0.25, 0.25, 0.5; mean 1/3; squares (1/12)^2 * 2 + (1/6)^2 = 6/144
    # std = sqrt(6/144 / 3) = sqrt(1/72) = 0.11785 -> int(88.21) = 88
    # h (4 cpu, 8Gi, no gpu): gpu allocatable 0 -> skipped; f = 0.25, 0.25 -> 100
    case(name="extended resource among three",
         nodes=[node("g", cpu="4", memory="8Gi", extra={GPU: "4"}),
                node("h", cpu="4", memory="8Gi")],
         existing=[], pod=pod("p", cpu="1", memory="2Gi", extra={GPU: "2"}), args=WITH_GPU,
         expected={"g": 88, "h": 100}),
    # same args, pod not requesting the gpu: the extended resource is
    # skipped -> f = 0.25, 0.25 on g -> 100 (the gpu on the node does not matter)
    case(name="extended resource not requested is skipped",
         nodes=[node("g", cpu="4", memory="8Gi", extra={GPU: "4"})],
         existing=[], pod=pod("p", cpu="1", memory="2Gi"), args=WITH_GPU,
         expected={"g": 100}),
    # only the gpu configured; the node's gpu usage counts
    # g: (1 used + 1) / 4 = 0.5 -> a single fraction -> 100
    case(name="single configured resource always 100",
         nodes=[node("g", cpu="4", memory="8Gi", extra={GPU: "4"})],
         existing=[pod("e1", extra={GPU: "1"}, on="g")],
         pod=pod("p", extra={GPU: "1"}), args={"resources": [{"name": GPU, "weight": 1}]},
         expected={"g": 100}),
]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_score(case, backend):
    rec = run(case["nodes"] + case["existing"], case["pod"], one_plugin_config(BA, case["args"]),
              backend)
    assert plugin_scores(rec, BA) == case["expected"]
    assert rec["total"] == case["expected"]


def test_best_effort_pod_skips(backend):
    # the pod requests neither cpu nor memory: PreScore Skip -> the plugin
    # scores nothing on any node, even with a loaded node (a: 3/4 cpu used)
    nodes = [node("a", cpu="4", memory="8Gi"), node("b", cpu="8", memory="8Gi")]
    rec = run(nodes + [pod("e1", cpu="3", on="a")], pod("p"), one_plugin_config(BA), backend)
    assert plugin_scores(rec, BA) == {}
    assert rec["total"] == {"a": 0, "b": 0}
    assert sorted(rec["feasible"]) == ["a", "b"]


def test_best_effort_for_configured_resources_only(backend):
    # resources: gpu only; the pod requests cpu but no gpu -> Skip
    nodes = [node("g", extra={GPU: "4"})]
    rec = run(nodes, pod("p", cpu="1", memory="1Gi"),
              one_plugin_config(BA, {"resources": [{"name": GPU, "weight": 1}]}), backend)
    assert plugin_scores(rec, BA) == {}


def test_weight_scales_total(backend):
    # weight 2: a 100 * 2 = 200, b 93 * 2 = 186 (see "balanced node wins")
    nodes = [node("a", cpu="4", memory="8Gi"), node("b", cpu="8", memory="8Gi")]
    rec = run(nodes, pod("p", cpu="1", memory="2Gi"), one_plugin_config(BA, weight=2), backend)
    assert rec["total"] == {"a": 200, "b": 186}
    assert rec["selected"] == "a"


ARGS_PATH = "profiles[0].pluginConfig[0].args"
CONFIG_ERROR_CASES = [
    # every weight must be 1 for this plugin
    case(name="weight other than 1",
         args={"resources": [{"name": "cpu", "weight": 2}]}, field="resources[0].weight"),
    # a resource named twice
    case(name="duplicate resource",
         args={"resources": [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}]},
         field="resources[1].name"),
    # strict decoding: unknown field
    case(name="unknown field", args={"scoringStrategy": {}}, field="scoringStrategy"),
]


@pytest.mark.parametrize("case", CONFIG_ERROR_CASES, ids=[c["name"] for c in CONFIG_ERROR_CASES])
def test_args_validation(case):
    with pytest.raises(ConfigError) as err:
        load_config(one_plugin_config(BA, case["args"]))
    assert err.value.field == f"{ARGS_PATH}.{case['field']}"


def test_default_args():
    prof = load_config(one_plugin_config(BA)).profiles[0]
    assert [(r.name, r.weight) for r in prof.args[BA].resources] == [("cpu", 1), ("memory", 1)]
    assert prof.names("preScore") == (BA,) and prof.names("score") == (BA,)
    assert prof.names("filter") == ()
