"""The oracle against kube-scheduler's own unit-test expectations (golden data),
plus direct unit tests of the oracle's arithmetic and cycle.

Every golden case of the node-level plugins runs here; the few that cannot be
expressed are listed in LEFT_OUT with the reason, and that list must equal the
set of cases the loader marks with a skip_reason.
"""

from __future__ import annotations

import pytest
from reference.oracle import (
    OracleConfigError,
    broken_linear_function,
    go_div,
    go_round,
    normalized_image_name,
    oracle_explain,
    oracle_prefilter,
    oracle_raw_filter,
    oracle_raw_score,
    pick_tie,
    pod_nonzero_requests,
    pod_requests,
    splitmix64,
    tie_rank,
)
from support.golden import (
    EXPLAIN_KINDS,
    GOLDEN_FILES,
    LEFT_OUT,
    golden_available,
    golden_profile_to_config,
    load_cases,
)

_CASES = load_cases() if golden_available() else []
_RUNNABLE = [c for c in _CASES if c.skip_reason is None]

needs_golden = pytest.mark.skipif(not golden_available(), reason="golden data not found")


def _ids(cases):
    return [c.id for c in cases]


# ---------------------------------------------------------------------------
# golden cases
# ---------------------------------------------------------------------------

@needs_golden
def test_left_out_is_exactly_the_skipped_cases():
    skipped = {c.id: c.skip_reason for c in _CASES if c.skip_reason}
    assert set(skipped) == set(LEFT_OUT)
    ids = [c.id for c in _CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"


@needs_golden
def test_every_file_is_loaded():
    assert {c.file for c in _CASES} == set(GOLDEN_FILES)
    assert {c.kind for c in _CASES} <= set(EXPLAIN_KINDS) | {"helper"}


_FILTER = [c for c in _RUNNABLE if c.kind == "filter"]
_SCORE = [c for c in _RUNNABLE if c.kind == "score"]
_CONFIG = [c for c in _RUNNABLE if c.kind == "config_error"]
_HELPER = [c for c in _RUNNABLE if c.kind == "helper"]


@needs_golden
@pytest.mark.parametrize("case", _FILTER, ids=_ids(_FILTER))
def test_golden_filter(case):
    out = oracle_explain(case.objects, case.pod, case.profile)
    for node, want in case.expected["filter"].items():
        if want is None:
            assert node in out["feasible"], out["filter"].get(node)
            assert node not in out["filter"]
        else:
            assert node not in out["feasible"]
            assert out["filter"][node] == want
    plugin = case.plugin
    args = case.profile["args"].get(plugin)
    raw = case.expected.get("raw_filter")
    if raw:
        assert oracle_raw_filter(case.objects, case.pod, plugin, args) == raw
    pre = case.expected.get("prefilter")
    if pre:
        assert oracle_prefilter(case.pod, plugin, args) == pre
    # Fit's ordered InsufficientResource list names the same reasons.
    ins = case.expected.get("insufficient_resources")
    if ins is not None:
        (node,) = case.expected["filter"]
        reasons = (case.expected["filter"][node] or {}).get("reasons", [])
        assert [r["reason"] for r in ins] == [r for r in reasons if r != "Too many pods"]


@needs_golden
@pytest.mark.parametrize("case", _SCORE, ids=_ids(_SCORE))
def test_golden_score(case):
    plugin = case.plugin
    out = oracle_explain(case.objects, case.pod, case.profile)
    assert out["filter"] == {}
    if case.expected["prescore_skip"]:
        assert all(plugin not in s for s in out["scores"].values())
        assert all(t == 0 for t in out["total"].values())
    else:
        got = {n: s[plugin] for n, s in out["scores"].items()}
        assert got == case.expected["scores"]
        assert out["total"] == case.expected["scores"]     # weight 1
    raw = case.expected.get("raw_scores")
    if raw is not None:
        assert oracle_raw_score(case.objects, case.pod, plugin,
                                case.profile["args"].get(plugin)) == raw


@needs_golden
@pytest.mark.parametrize("case", _CONFIG, ids=_ids(_CONFIG))
def test_golden_config_error(case):
    with pytest.raises(OracleConfigError) as err:
        oracle_explain(case.objects, case.pod, case.profile)
    assert err.value.field == case.expected["field"]


@needs_golden
@pytest.mark.parametrize("case", _HELPER, ids=_ids(_HELPER))
def test_golden_helper(case):
    e = case.expected
    if e["helper"] == "broken_linear_function":
        f = broken_linear_function(e["points"])
        assert [f(v["p"]) for v in e["values"]] == [v["expected"] for v in e["values"]]
    else:
        assert normalized_image_name(e["input"]) == e["output"]


@needs_golden
@pytest.mark.parametrize("case", _RUNNABLE[:1] + _CONFIG[:1], ids=_ids(_RUNNABLE[:1] + _CONFIG[:1]))
def test_golden_profile_to_config_shape(case):
    cfg = golden_profile_to_config(case.profile)
    assert cfg["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert cfg["kind"] == "KubeSchedulerConfiguration"
    (prof,) = cfg["profiles"]
    assert prof["schedulerName"] == "default-scheduler"
    assert prof["plugins"]["multiPoint"] == {"disabled": [{"name": "*"}]}


def test_profile_to_config_lists_extension_points():
    cfg = golden_profile_to_config({
        "filters": ["NodeUnschedulable", "NodeResourcesFit"],
        "scores": {"NodeResourcesFit": 1, "ImageLocality": 3},
        "args": {"NodeResourcesFit": {"ignoredResources": ["example.com/x"]}},
    })
    plugins = cfg["profiles"][0]["plugins"]
    assert plugins["preFilter"] == {"enabled": [{"name": "NodeResourcesFit"}]}
    assert plugins["filter"] == {"enabled": [{"name": "NodeUnschedulable"},
                                             {"name": "NodeResourcesFit"}]}
    assert plugins["preScore"] == {"enabled": [{"name": "NodeResourcesFit"}]}
    assert plugins["score"] == {"enabled": [{"name": "NodeResourcesFit", "weight": 1},
                                            {"name": "ImageLocality", "weight": 3}]}
    (pc,) = cfg["profiles"][0]["pluginConfig"]
    assert pc["name"] == "NodeResourcesFit"
    assert pc["args"]["kind"] == "NodeResourcesFitArgs"
    assert pc["args"]["ignoredResources"] == ["example.com/x"]


# ---------------------------------------------------------------------------
# direct unit tests
# ---------------------------------------------------------------------------

def test_tie_rank_is_a_31_bit_seeded_rank_and_picks_the_highest():
    # splitmix64(0) is the well-known first output of the generator seeded with 0.
    assert splitmix64(0) == 0xE220A8397B1DCDAF
    for seed in (0, 1, 7, 2**63, 2**64 - 1):
        for row, pods in ((0, 0), (3, 5), (10_000, 110)):
            k = tie_rank(seed, row, pods)
            assert 0 <= k < 2 ** 31 and k == tie_rank(seed, row, pods)
    # different seeds and pod counts re-draw a node's rank
    assert len({tie_rank(s, 2, 0) for s in range(64)}) == 64
    assert len({tie_rank(5, 2, p) for p in range(64)}) == 64
    names = ["a", "b", "c"]
    row_of = {n: i for i, n in enumerate(names)}
    pods_of = dict.fromkeys(names, 0)
    got = pick_tie(9, names, row_of, pods_of)
    assert tie_rank(9, row_of[got], 0) == max(tie_rank(9, i, 0) for i in range(3))


def test_go_integer_semantics():
    assert go_div(-7, 2) == -3          # Python's -7 // 2 is -4
    assert go_div(7, -2) == -3
    assert go_div(7, 2) == 3
    assert go_round(2.5) == 3 and go_round(-2.5) == -3 and go_round(0.5) == 1
    assert go_round(37.5) == 38         # Python's round(37.5) == 38, round(36.5) == 36
    assert go_round(36.5) == 37


def _node(name, cpu="4", memory="8Gi", pods="110", **extra):
    alloc = {"cpu": cpu, "memory": memory, "pods": pods}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {}},
            "spec": {}, "status": {"allocatable": alloc, "capacity": dict(alloc)}}
    for k, v in extra.items():
        node["spec" if k in ("taints", "unschedulable") else "metadata"][k] = v
    return node


def _pod(name="p", node=None, containers=None, **spec):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"},
           "spec": {"containers": containers if containers is not None else []}}
    if node:
        pod["spec"]["nodeName"] = node
    pod["spec"].update(spec)
    return pod


def _req(**r):
    return {"name": "c", "image": "img", "resources": {"requests": r}}


@pytest.mark.parametrize("strategy, cpu_used, want", [
    # LeastAllocated cpu: (4000-3000)*100/4000 = 25; memory (8Gi-4Gi)*100/8Gi = 50;
    # (25*1 + 50*1) / 2 = 37 (integer division)
    ("LeastAllocated", "2", 37),
    # MostAllocated cpu: 3000*100/4000 = 75; memory 4Gi*100/8Gi = 50; (75+50)/2 = 62
    ("MostAllocated", "2", 62),
    # cpu over capacity: requested 5000m > 4000m -> Least 0, memory 50 -> 25
    ("LeastAllocated", "4", 25),
    # Most clamps requested to capacity: 100, memory 50 -> 75
    ("MostAllocated", "4", 75),
])
def test_fit_score_table(strategy, cpu_used, want):
    objects = [_node("n1"),
               _pod("existing", node="n1", containers=[_req(cpu=cpu_used, memory="2Gi")])]
    pod = _pod(containers=[_req(cpu="1", memory="2Gi")])
    profile = {"filters": [], "scores": {"NodeResourcesFit": 1},
               "args": {"NodeResourcesFit": {"scoringStrategy": {
                   "type": strategy,
                   "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}}}
    out = oracle_explain(objects, pod, profile)
    assert out["scores"]["n1"]["NodeResourcesFit"] == want


def test_requested_to_capacity_ratio_rounds_half_away_from_zero():
    # shape (0,0)->(100,10) scaled to (0,0)->(100,100).
    # cpu 1/4 -> f(25) = 25; memory 2Gi/8Gi -> f(25) = 25 ... use weights to get .5:
    # cpu 3/4 -> f(75) = 75 (weight 1); memory 2Gi/8Gi -> 25 (weight 1): (75+25)/2 = 50.
    # cpu 1/4 -> 25 (w1), memory 4Gi/8Gi -> 50 (w1): 75/2 = 37.5 -> 38.
    objects = [_node("n1")]
    pod = _pod(containers=[_req(cpu="1", memory="4Gi")])
    profile = {"filters": [], "scores": {"NodeResourcesFit": 1},
               "args": {"NodeResourcesFit": {"scoringStrategy": {
                   "type": "RequestedToCapacityRatio",
                   "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
                   "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0},
                                                          {"utilization": 100, "score": 10}]}}}}}
    assert oracle_explain(objects, pod, profile)["scores"]["n1"]["NodeResourcesFit"] == 38


def test_broken_linear_truncates_toward_zero():
    # Between (0, 100) and (100, 0): 100 + (0-100)*(33-0)/100 = 100 + (-3300/100) = 100 - 33 = 67;
    # at 1: 100 + (-100/100) = 99; with floor division (-1) it would also be 99, but at
    # (10, 0)->(13, 10) and p=11: 0 + 10*1/3 = 3; falling (10,10)->(13,0), p=11:
    # 10 + (-10*1)/3 = 10 - 3 = 7 (floor would give 10 - 4 = 6).
    f = broken_linear_function([{"utilization": 10, "score": 10}, {"utilization": 13, "score": 0}])
    assert f(11) == 7
    assert f(0) == 10 and f(20) == 0


def test_pod_requests_aggregation():
    sidecar = {"name": "s", "restartPolicy": "Always",
               "resources": {"requests": {"cpu": "200m", "memory": "100Mi"}}}
    init = {"name": "i", "resources": {"requests": {"cpu": "1", "memory": "50Mi"}}}
    pod = _pod(containers=[_req(cpu="300m", memory="200Mi"),
                           {"name": "lim", "resources": {"limits": {"cpu": "100m"}}}],
               initContainers=[sidecar, init], overhead={"cpu": "10m"})
    r = pod_requests(pod)
    # containers: 300m + 100m (request defaulted from limit) = 400m; sidecar adds 200m -> 600m;
    # init peak: 1000m + sidecar 200m = 1200m > 600m -> 1200m; overhead +10m = 1210m.
    assert r["cpu"] == 1210
    # memory: 200Mi + 100Mi (sidecar) = 300Mi vs init 50Mi+100Mi = 150Mi -> 300Mi.
    assert r["memory"] == 300 * 1024 * 1024
    # non-zero defaults: the "lim" container has no memory key -> +200Mi; init has both keys.
    nz = pod_nonzero_requests(pod)
    assert nz["memory"] == 500 * 1024 * 1024
    assert pod_nonzero_requests(_pod(containers=[])) == {}


def test_explain_cycle_filters_scores_and_tie_break():
    nodes = [
        _node("a", unschedulable=True),
        _node("b", taints=[{"key": "dedicated", "value": "", "effect": "NoSchedule"}]),
        _node("c", labels={"zone": "z1"}),
        _node("d", labels={"zone": "z1"}),
        _node("e", labels={"zone": "z2"}),
        _node("f", labels={"zone": "z1"}, cpu="1"),
    ]
    pod = _pod(containers=[_req(cpu="2", memory="1Gi")],
               affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                   "nodeSelectorTerms": [{"matchExpressions": [
                       {"key": "zone", "operator": "In", "values": ["z1"]}]}]}}})
    profile = {"filters": ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
                           "NodePorts", "NodeResourcesFit"],
               "scores": {"NodeResourcesFit": 1, "NodeResourcesBalancedAllocation": 1,
                          "TaintToleration": 3, "NodeAffinity": 2, "ImageLocality": 1},
               "args": {}}
    out = oracle_explain(nodes, pod, profile, seed=3)
    assert out["pod"] == "ns/p" and out["backend"] == "oracle"
    assert out["profile"] == "default-scheduler"
    assert out["nodes_evaluated"] == 6
    assert out["filter"] == {
        "a": {"code": "UnschedulableAndUnresolvable", "plugin": "NodeUnschedulable",
              "reasons": ["node(s) were unschedulable"]},
        "b": {"code": "UnschedulableAndUnresolvable", "plugin": "TaintToleration",
              "reasons": ["node(s) had untolerated taint {dedicated: }"]},
        "e": {"code": "UnschedulableAndUnresolvable", "plugin": "NodeAffinity",
              "reasons": ["node(s) didn't match Pod's node affinity/selector"]},
        "f": {"code": "Unschedulable", "plugin": "NodeResourcesFit",
              "reasons": ["Insufficient cpu"]},
    }
    assert out["feasible"] == ["c", "d"]
    # NodeAffinity has no preferred terms -> PreScore Skip -> absent.
    # Fit: cpu (4000-2000)*100/4000 = 50, memory (8Gi-1Gi)*100/8Gi = 87 -> (50+87)/2 = 68.
    # Balanced: |0.5 - 0.125| / 2 = 0.1875 -> int((1-0.1875)*100) = 81.
    # TaintToleration: no PreferNoSchedule taints -> all 100 (reverse normalization).
    # ImageLocality: no images -> 0.
    want = {"NodeResourcesFit": 68, "NodeResourcesBalancedAllocation": 81,
            "TaintToleration": 100, "ImageLocality": 0}
    assert out["scores"] == {"c": want, "d": want}
    assert out["total"] == {"c": 68 + 81 + 300, "d": 68 + 81 + 300}
    # c and d tie; the rule takes the higher seeded rank (rows 2 and 3, no pods)
    assert out["selected"] == ("c" if tie_rank(3, 2, 0) > tie_rank(3, 3, 0) else "d")


def test_explain_node_affinity_prefilter_and_conflict():
    nodes = [_node("n1"), _node("n2"), _node("n3")]
    terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]
    pod = _pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": terms}}})
    profile = {"filters": ["NodeUnschedulable", "NodeAffinity"], "scores": {}, "args": {}}
    out = oracle_explain(nodes, pod, profile)
    outside = {"code": "UnschedulableAndUnresolvable", "plugin": "NodeAffinity",
               "reasons": ["node(s) didn't satisfy plugin(s) [NodeAffinity]"]}
    assert out["filter"] == {"n1": outside, "n3": outside}
    assert out["feasible"] == ["n2"] and out["selected"] == "n2"

    terms[0]["matchFields"].append({"key": "metadata.name", "operator": "In", "values": ["n3"]})
    out = oracle_explain(nodes, pod, profile)
    conflict = {"code": "UnschedulableAndUnresolvable", "plugin": "NodeAffinity",
                "reasons": ["pod affinity terms conflict"]}
    assert out["filter"] == {"n1": conflict, "n2": conflict, "n3": conflict}
    assert out["feasible"] == [] and out["selected"] is None and out["scores"] == {}


def test_node_ports_and_node_name():
    port = {"containerPort": 80, "hostPort": 8080}
    nodes = [_node("n1"), _node("n2"), _node("n3")]
    objects = nodes + [
        _pod("x", node="n1", containers=[{"name": "c", "ports": [dict(port, hostIP="10.0.0.1")]}]),
        _pod("y", node="n2", containers=[{"name": "c", "ports": [dict(port, protocol="UDP")]}]),
    ]
    pod = _pod(containers=[{"name": "c", "ports": [port]}])
    out = oracle_explain(objects, pod, {"filters": ["NodePorts"], "scores": {}, "args": {}})
    # 0.0.0.0/TCP/8080 conflicts with 10.0.0.1/TCP/8080 but not with UDP.
    assert out["filter"] == {"n1": {"code": "Unschedulable", "plugin": "NodePorts",
                                    "reasons": ["node(s) didn't have free ports for the requested pod ports"]}}
    pod2 = _pod(nodeName="n3")
    out = oracle_explain(objects, pod2, {"filters": ["NodeName"], "scores": {}, "args": {}})
    assert out["feasible"] == ["n3"]
    assert out["filter"]["n1"] == {"code": "UnschedulableAndUnresolvable", "plugin": "NodeName",
                                   "reasons": ["node(s) didn't match the requested node name"]}


def test_fit_filter_reason_order_and_ignored_groups():
    node = _node("n1", cpu="1", memory="1Gi", pods="1")
    node["status"]["allocatable"].update({"example.com/b": "1", "example.com/a": "1",
                                          "other.io/gpu": "0"})
    objects = [node, _pod("x", node="n1", containers=[_req(cpu="500m")])]
    pod = _pod(containers=[_req(**{"cpu": "1", "memory": "2Gi", "example.com/b": "2",
                                   "example.com/a": "2", "other.io/gpu": "1"})])
    profile = {"filters": ["NodeResourcesFit"], "scores": {}, "args": {}}
    out = oracle_explain(objects, pod, profile)
    assert out["filter"]["n1"]["reasons"] == [
        "Too many pods", "Insufficient cpu", "Insufficient memory",
        "Insufficient example.com/a", "Insufficient example.com/b", "Insufficient other.io/gpu"]
    profile["args"]["NodeResourcesFit"] = {"ignoredResourceGroups": ["example.com"],
                                           "ignoredResources": ["other.io/gpu"]}
    out = oracle_explain(objects, pod, profile)
    assert out["filter"]["n1"]["reasons"] == ["Too many pods", "Insufficient cpu",
                                              "Insufficient memory"]


def test_config_validation():
    prof = {"filters": [], "scores": {"NodeResourcesFit": 1},
            "args": {"NodeResourcesFit": {"scoringStrategy": {
                "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 101}]}}}}
    with pytest.raises(OracleConfigError) as err:
        oracle_explain([], _pod(), prof)
    assert err.value.field == "scoringStrategy.resources[0].weight"
    # v1 defaulting: weight 0 becomes 1, an empty list becomes cpu:1, memory:1.
    prof["args"]["NodeResourcesFit"]["scoringStrategy"]["resources"] = [{"name": "cpu", "weight": 0}]
    oracle_explain([], _pod(), prof)
    prof["args"]["NodeResourcesFit"]["scoringStrategy"]["resources"] = []
    oracle_explain([], _pod(), prof)
