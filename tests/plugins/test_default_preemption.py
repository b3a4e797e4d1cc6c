"""DefaultPreemption (PostFilter), after upstream's default_preemption_test.go
(SelectVictimsOnNode, pickOneNodeForPreemption) through explain's
"preemption" field.  The profile runs NodeResourcesFit as the filter that
fails (and TaintToleration where a case needs an unresolvable node).

Victims on a node: every lower-priority pod is removed; then, from the most
important (higher priority, then earlier start time), each is put back
(reprieved) when the preemptor still fits; the rest are victims.  Node
choice among candidates: fewest PDB violations, then lowest highest-victim
priority, then smallest sum of (priority + 2^31), then fewest victims, then
latest start time of the highest-priority victims, then the first.  Nodes
rejected UnschedulableAndUnresolvable are never candidates; a pod with
preemptionPolicy Never does not preempt.
"""

from __future__ import annotations

import pytest
from support.builders import case, node, pod, profile_config, run

from tensorsched.framework.config.kube_config import load_config
from tensorsched.framework.errors import ConfigError

DP = "DefaultPreemption"
CONFIG = profile_config(["NodeResourcesFit", DP])
WITH_TAINTS = profile_config(["NodeResourcesFit", "TaintToleration", DP])


def victim(name, on, cpu, priority, start, labels=None):
    """A bound pod with a priority and status.startTime (t seconds)."""
    p = pod(name, cpu=cpu, on=on, priority=priority, labels=labels)
    p["status"] = {"phase": "Running", "startTime": f"2026-01-01T00:00:{start:02d}Z"}
    return p


PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
       "metadata": {"name": "db", "namespace": "default"},
       "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
       "status": {"disruptionsAllowed": 0}}

CASES = [
    # a (4 cpu): l1 (2 cpu, prio 0, t1), l2 (2 cpu, prio 0, t2); preemptor 2 cpu, prio 100
    # remove both -> 0 used; reprieve l1 (earlier start, more important):
    # 2 + 2 = 4 <= 4 keep; l2: 2 + 2 + 2 = 6 > 4 -> victim
    case(name="reprieve the more important pod", config=CONFIG,
         objects=[node("a", cpu="4"), victim("l1", "a", "2", 0, 1), victim("l2", "a", "2", 0, 2)],
         pod=pod("p", cpu="2", priority=100), nominated="a", victims=["default/l2"]),
    # a (4 cpu): v1 (1 cpu, prio 5), v2 (1 cpu, prio 1), v3 (2 cpu, prio 3); preemptor 2 cpu
    # reprieve by priority: v1 -> 1 + 2 = 3 keep; v3 -> 1 + 2 + 2 = 5 > 4 victim;
    # v2 -> 1 + 1 + 2 = 4 keep => victims [v3] (not the lowest priority v2)
    case(name="reprieve in priority order", config=CONFIG,
         objects=[node("a", cpu="4"), victim("v1", "a", "1", 5, 1), victim("v2", "a", "1", 1, 2),
                  victim("v3", "a", "2", 3, 3)],
         pod=pod("p", cpu="2", priority=100), nominated="a", victims=["default/v3"]),
    # a (4 cpu) full with h (prio 200 >= 100): nothing can be preempted
    case(name="higher priority pods are not victims", config=CONFIG,
         objects=[node("a", cpu="4"), victim("h", "a", "4", 200, 1)],
         pod=pod("p", cpu="2", priority=100), nominated=None, victims=[]),
    # equal priority is not lower: e (prio 100) stays
    case(name="equal priority pods are not victims", config=CONFIG,
         objects=[node("a", cpu="4"), victim("e", "a", "4", 100, 1)],
         pod=pod("p", cpu="2", priority=100), nominated=None, victims=[]),
    # a: va prio 50 (4 cpu); b: vb prio 10 (4 cpu); preemptor 4 cpu prio 100
    # highest victim priority: a 50, b 10 -> b
    case(name="lowest highest-victim priority wins", config=CONFIG,
         objects=[node("a", cpu="4"), node("b", cpu="4"), victim("va", "a", "4", 50, 1),
                  victim("vb", "b", "4", 10, 1)],
         pod=pod("p", cpu="4", priority=100), nominated="b", victims=["default/vb"]),
    # a: va prio 0 guarded by a PDB allowing 0 disruptions; b: vb prio 50
    # PDB violations: a 1, b 0 -> b, although a's victim has the lower priority
    case(name="fewest PDB violations wins", config=CONFIG,
         objects=[node("a", cpu="4"), node("b", cpu="4"),
                  victim("va", "a", "4", 0, 1, labels={"app": "db"}),
                  victim("vb", "b", "4", 50, 1), PDB],
         pod=pod("p", cpu="4", priority=100), nominated="b", victims=["default/vb"]),
    # a: two victims prio 10 (2 cpu each); b: one victim prio 10 (4 cpu); both max 10
    # sums: a 2 * (10 + 2^31), b 1 * (10 + 2^31) -> b
    case(name="smallest priority sum wins", config=CONFIG,
         objects=[node("a", cpu="4"), node("b", cpu="4"), victim("a1", "a", "2", 10, 1),
                  victim("a2", "a", "2", 10, 1), victim("vb", "b", "4", 10, 1)],
         pod=pod("p", cpu="4", priority=100), nominated="b", victims=["default/vb"]),
    # a: va prio 10 started t1; b: vb prio 10 started t5; equal on every
    # earlier criterion -> the latest start time of the highest-priority victims: b
    case(name="latest start time wins", config=CONFIG,
         objects=[node("a", cpu="4"), node("b", cpu="4"), victim("va", "a", "4", 10, 1),
                  victim("vb", "b", "4", 10, 5)],
         pod=pod("p", cpu="4", priority=100), nominated="b", victims=["default/vb"]),
    # a is tainted (untolerated NoSchedule: UnschedulableAndUnresolvable), its
    # victim would have prio 0; b's victim has prio 50 -> only b is a candidate
    case(name="unresolvable nodes are not candidates", config=WITH_TAINTS,
         objects=[node("a", cpu="4", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
                  node("b", cpu="4"), victim("va", "a", "4", 0, 1), victim("vb", "b", "4", 50, 1)],
         pod=pod("p", cpu="4", priority=100), nominated="b", victims=["default/vb"]),
    # preemptionPolicy Never: not eligible -> nothing nominated
    case(name="preemptionPolicy Never", config=CONFIG,
         objects=[node("a", cpu="4"), victim("l1", "a", "4", 0, 1)],
         pod=pod("p", cpu="2", priority=100, spec={"preemptionPolicy": "Never"}),
         nominated=None, victims=[]),
    # the preemptor (8 cpu) does not fit a (4 cpu) even on an empty node -> no candidate
    case(name="no node fits even without victims", config=CONFIG,
         objects=[node("a", cpu="4"), victim("l1", "a", "4", 0, 1)],
         pod=pod("p", cpu="8", priority=100), nominated=None, victims=[]),
]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_preemption(case, backend):
    rec = run(case["objects"], case["pod"], case["config"], backend)
    assert rec["selected"] is None
    assert rec["preemption"] == {"nominated_node": case["nominated"], "victims": case["victims"]}


def test_no_preemption_when_the_pod_fits(backend):
    # b has room (4 cpu free): selected, nothing preempted
    objects = [node("a", cpu="4"), node("b", cpu="4"), victim("va", "a", "4", 0, 1)]
    rec = run(objects, pod("p", cpu="2", priority=100), CONFIG, backend)
    assert rec["selected"] == "b" and rec["preemption"] is None


def test_several_victims(backend):
    # a (4 cpu): v2 (2 cpu, prio 1, t2), v1 (2 cpu, prio 5, t1); preemptor 4 cpu
    # reprieve in importance order: v1: 2 + 4 = 6 > 4 victim; v2: 2 + 4 > 4
    # victim -> both, listed in that order (upstream appends as it reprieves)
    objects = [node("a", cpu="4"), victim("v2", "a", "2", 1, 2), victim("v1", "a", "2", 5, 1)]
    rec = run(objects, pod("p", cpu="4", priority=100), CONFIG, backend)
    assert rec["preemption"] == {"nominated_node": "a", "victims": ["default/v1", "default/v2"]}


ARGS_PATH = "profiles[0].pluginConfig[0].args"
CONFIG_ERROR_CASES = [
    # percentage in [0, 100]
    case(name="percentage above 100", args={"minCandidateNodesPercentage": 101},
         field="minCandidateNodesPercentage"),
    # absolute >= 0
    case(name="negative absolute", args={"minCandidateNodesAbsolute": -1},
         field="minCandidateNodesAbsolute"),
    # both zero at once
    case(name="both zero", args={"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
         field="minCandidateNodesPercentage"),
]


@pytest.mark.parametrize("case", CONFIG_ERROR_CASES, ids=[c["name"] for c in CONFIG_ERROR_CASES])
def test_args_validation(case):
    with pytest.raises(ConfigError) as err:
        load_config(profile_config(["NodeResourcesFit", DP], {DP: case["args"]}))
    assert err.value.field == f"{ARGS_PATH}.{case['field']}"


def test_default_args():
    # defaults: 10 % and 100 nodes
    prof = load_config(CONFIG).profiles[0]
    assert prof.names("postFilter") == (DP,)
    a = prof.args[DP]
    assert (a.min_candidate_nodes_percentage, a.min_candidate_nodes_absolute) == (10, 100)
