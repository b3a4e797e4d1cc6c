"""The DefaultPreemption golden cases (default_preemption.json,
preemption_framework.json) through the real code paths: manifests ->
ClusterState (priorities resolved, PDBs loaded) -> Framework.run_cycle ->
DefaultPreemption.post_filter -> the victim kernel on every backend.

How each upstream test maps here:
* TestDryRunPreemption: every node is a potential node (upstream passes all
  NodeInfos), offset from ``offsets_per_cycle`` (0 otherwise: the expected
  sets do not depend on it), candidates sorted by name, victims by name,
  and the Filter-call count of the visited nodes.
* TestSelectBestCandidate / TestPreempt: the whole PostFilter; the chosen node.
* TestPostFilter: the test's per-node statuses (absent nodes
  UnschedulableAndUnresolvable) replace the cycle's, as upstream feeds them;
  nominated node and status message.
* TestPodEligibleToPreemptOthers: the eligibility rule with the given
  nominated-node status.
* TestNodesWherePreemptionMightHelp: the rule on the given status codes.

Left out (listed in LEFT_OUT with the reason; the JSON's own ``skipped``
list covers cases that were never transcribed).
"""

from __future__ import annotations

import numpy as np
import pytest
from support.backends import backend_params
from support.golden import PREEMPTION_SKIPS, load_preemption_cases, preemption_golden_available

from tensorsched.framework.preemption.evaluator import (
    nodes_where_preemption_might_help,
    pod_eligible_to_preempt_others,
)
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.runtime.status import Code
from tensorsched.framework.scheduler.cluster import build_cluster

LEFT_OUT = dict(PREEMPTION_SKIPS)

_CODES = {"Unschedulable": Code.UNSCHEDULABLE,
          "UnschedulableAndUnresolvable": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
          "Success": Code.SUCCESS}

_CASES = load_preemption_cases() if preemption_golden_available() else []
needs_golden = pytest.mark.skipif(not preemption_golden_available(),
                                  reason="golden data not found")


def _by(test):
    return [pytest.param(c, id=c["id"]) for c in _CASES
            if c["test"] == test and c["skip_reason"] is None]


def _setup(case, pod, backend):
    cluster = build_cluster(case["objects"], case["config"])
    pod = cluster.resolve(pod)
    fw = cluster.framework_for(pod, backend)
    result = fw.run_cycle(cluster.state, pod, all_nodes=True)
    plugin = fw.plugins_at("postFilter")[0]
    return cluster, fw, CycleContext(cluster.state, pod, fw), result, plugin


@needs_golden
def test_left_out_cases_are_exactly_the_listed_ones():
    skipped = {c["raw"]["name"] for c in _CASES if c["skip_reason"] is not None}
    assert skipped == set(LEFT_OUT)
    assert len(_CASES) == 32


@needs_golden
@pytest.mark.parametrize("backend", backend_params())
@pytest.mark.parametrize("case", _by("TestDryRunPreemption"))
def test_dry_run_preemption(case, backend):
    raw = case["raw"]
    offsets = raw.get("offsets_per_cycle") or [0] * len(raw["preemptor_pods"])
    for k, (pod, want) in enumerate(zip(raw["preemptor_pods"], raw["expected"]["cycles"])):
        cluster, fw, ctx, result, plugin = _setup(case, pod, backend)
        rows = cluster.state.valid_rows()
        names = [cluster.state.node_name(int(r)) for r in rows]
        rows = rows[np.argsort(names, kind="stable")]
        out = plugin.post_filter(ctx, result, cluster.pod_table(), offset=offsets[k],
                                 dry_run_all=True, potential_rows=rows)
        got = sorted(({"node": c.node, "victims": sorted(v.split("/", 1)[1] for v in c.victims),
                       "num_pdb_violations": c.num_pdb_violations} for c in out.candidates),
                     key=lambda d: d["node"])
        assert got == sorted(want["candidates"], key=lambda d: d["node"]), f"cycle {k}"
        assert out.filter_calls == want["num_filter_calls"], f"cycle {k}"


@needs_golden
@pytest.mark.parametrize("backend", backend_params())
@pytest.mark.parametrize("case", _by("TestSelectBestCandidate"))
def test_select_best_candidate(case, backend):
    raw = case["raw"]
    cluster, fw, ctx, result, plugin = _setup(case, raw["pod"], backend)
    assert result.selected_row < 0
    out = plugin.post_filter(ctx, result, cluster.pod_table())
    assert out.nominated_node in raw["expected"]["selected_node_one_of"]


@needs_golden
@pytest.mark.parametrize("backend", backend_params())
@pytest.mark.parametrize("case", _by("TestPostFilter"))
def test_post_filter(case, backend):
    raw = case["raw"]
    cluster, fw, ctx, result, plugin = _setup(case, raw["pod"], backend)
    codes = {n: _CODES[c] for n, c in raw["filtered_node_statuses"].items()}
    absent = _CODES[raw.get("absent_nodes_status") or "UnschedulableAndUnresolvable"]
    out = plugin.post_filter(ctx, result, cluster.pod_table(), node_codes=codes,
                             absent_code=absent)
    want = raw["expected"]["postfilter"]
    assert (out.nominated_node or "") == want["nominated_node"]
    assert out.status.code.wire_name == want["status"]["code"]
    if "message" in want["status"]:
        assert out.message == want["status"]["message"]


@needs_golden
@pytest.mark.parametrize("backend", backend_params())
@pytest.mark.parametrize("case", _by("TestPreempt"))
def test_preempt(case, backend):
    raw = case["raw"]
    cluster, fw, ctx, result, plugin = _setup(case, raw["pod"], backend)
    codes = {n: _CODES[c] for n, c in raw["filtered_node_statuses"].items()}
    out = plugin.post_filter(ctx, result, cluster.pod_table(), node_codes=codes)
    assert out.nominated_node == raw["expected"]["result"]["nominated_node"]
    assert sorted(v.split("/", 1)[1] for v in out.victims) == sorted(raw["expected"]["victims"])


@needs_golden
@pytest.mark.parametrize("case", _by("TestPodEligibleToPreemptOthers"))
def test_pod_eligible_to_preempt_others(case):
    raw = case["raw"]
    cluster = build_cluster(case["objects"])
    pod = cluster.resolve(raw["pod"])
    st = raw.get("nominated_node_status")
    code = _CODES[st["code"]] if st else None
    ok, _why = pod_eligible_to_preempt_others(pod, cluster.state, code)
    assert ok == raw["expected"]["eligible"]


@needs_golden
@pytest.mark.parametrize("case", _by("TestNodesWherePreemptionMightHelp"))
def test_nodes_where_preemption_might_help(case):
    raw = case["raw"]
    names = [n["metadata"]["name"] for n in raw["nodes"]]
    codes = [_CODES[raw["node_statuses"][n]["code"]] if n in raw["node_statuses"]
             else Code.UNSCHEDULABLE_AND_UNRESOLVABLE for n in names]
    helps = nodes_where_preemption_might_help([int(c) for c in codes])
    assert sorted(n for n, h in zip(names, helps) if h) == sorted(raw["expected"]["candidate_nodes"])
