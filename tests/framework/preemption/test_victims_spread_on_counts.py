"""The PodTopologySpread-only victim search on counts
(``HostVictimSearch.batch`` with ``kernels.victims.on_counts`` and
``SpreadProbe``), and the search on the state that answers the spread
filter from a ``SpreadProbe`` (beside InterPodAffinity), give what the
search on the real state with the plugin's own filter gives:
same code, stats (filter calls included) and victims on every node, on
random clusters with PDBs, host ports, nodes lacking the zone key,
minDomains, node affinity / taint policies and several constraints."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.preemption import HOST, PREEMPTION_CONFIG, drawn_node, preemption_pod

from tensorsched.framework.parsing.priorities import pod_priority
from tensorsched.framework.preemption.host_search import HostVictimSearch, active_host_filters
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster

KEYS = st.sampled_from(["zone", HOST, "rack"])
APPS = st.sampled_from(["a", "b"])


@st.composite
def cases(draw):
    objs = []
    for i in range(draw(st.integers(1, 7))):
        node = drawn_node(draw, f"n{i}", draw(st.sampled_from([400, 600, 1000])),
                          draw(st.integers(3, 8)))
        objs.append(node)
        for k in range(draw(st.integers(0, 6))):
            objs.append(preemption_pod(f"p{i}-{k}", f"n{i}", prio=draw(st.sampled_from([-5, 0, 3, 7])),
                             cpu=draw(st.sampled_from([50, 100, 200])), app=draw(APPS),
                             start=draw(st.one_of(st.none(), st.integers(0, 5))),
                             port=draw(st.sampled_from([None, None, None, 8080]))))
    for j in range(draw(st.integers(0, 2))):
        objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": f"pdb{j}", "namespace": "default"},
                     "spec": {"selector": {"matchLabels": {"app": draw(APPS)}}},
                     "status": {"disruptionsAllowed": draw(st.integers(0, 2))}})
    pre = preemption_pod("preemptor", prio=draw(st.sampled_from([3, 7, 10])),
               cpu=draw(st.sampled_from([50, 200, 400])), app=draw(APPS),
               port=draw(st.sampled_from([None, None, 8080])))
    cons = []
    for key in draw(st.lists(KEYS, min_size=1, max_size=3, unique=True)):
        c = {"maxSkew": draw(st.integers(1, 2)), "topologyKey": key,
             "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": draw(APPS)}}}
        if draw(st.booleans()):
            c["minDomains"] = draw(st.integers(1, 4))
        if draw(st.booleans()):
            c["nodeTaintsPolicy"] = "Honor"
        cons.append(c)
    pre["spec"]["topologySpreadConstraints"] = cons
    if draw(st.integers(0, 3)) == 0:         # InterPodAffinity beside it
        pre["spec"]["affinity"] = {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": draw(APPS)}},
                 "topologyKey": draw(st.sampled_from(["zone", HOST]))}]}}
    if draw(st.booleans()):
        pre["spec"]["tolerations"] = [{"key": "t", "operator": "Exists"}]
    return objs, pre


def _searches(objs, pre, backend):
    cluster = build_cluster(objs, PREEMPTION_CONFIG)
    pod = cluster.resolve(pre)
    fw = cluster.framework_for(pod, backend)
    state = cluster.state
    result = fw.run_cycle(state, pod, all_nodes=True)
    ctx = CycleContext(state, pod, fw)
    host = active_host_filters(fw, ctx, result.skipped_filters)
    table = cluster.pod_table()
    pods = table.sync()
    prio = pod_priority(pod)
    make = lambda: HostVictimSearch(ctx, result.query, host, prio, pods, table.keys)  # noqa: E731
    return state, host, make


def _same(a, b):
    assert isinstance(a[0], tuple) == isinstance(b[0], tuple)
    assert a[0] == b[0]
    assert np.array_equal(a[1], b[1])
    assert np.array_equal(a[2], b[2])


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases())
def test_batch_matches_search_on_state(case):
    objs, pre = case
    for backend in ("numpy", "numba"):
        state, host, make = _searches(objs, pre, backend)
        names = [p.name for p in host]
        if "PodTopologySpread" not in names:
            continue
        rows = state.valid_rows()
        fast = make()                       # the batch on counts (spread alone)
        assert fast.on_counts == (set(names) <= {"PodTopologySpread", "InterPodAffinity"})
        fast.batch(rows)
        probed = make()                     # on the state, spread from a probe
        probed.spread = probed.affinity = None
        ref = make()                        # on the state, the plugin's filter
        ref.spread = ref.spread_any = ref.affinity = ref.affinity_any = None
        try:
            for row in rows.tolist():
                want = ref.on_node(row)
                _same(probed.on_node(row), want)
                _same(fast.on_node(row), want)
        finally:
            for s in (ref, probed, fast):
                s.close()


def test_preemption_spread_bench_same_with_search_on_state(tmp_path, monkeypatch):
    """The ``preemption-spread`` workload: numpy and numba agree, and both
    agree with the search on the state (batch and probe turned off)."""
    import json

    from tensorsched.cli import main
    from tensorsched.framework.preemption import host_search

    def run(backend):
        out = tmp_path / f"{backend}.json"
        assert main(["bench", "--workload", "preemption-spread", "--nodes", "60",
                     "--pods", "8", "--backend", backend, "--output", str(out)]) == 0
        return json.loads(out.read_text())

    recs = [run(b) for b in ("numpy", "numba")]
    assert recs[0]["workload"] == "preemption-spread"
    assert recs[0]["preemptions"] == recs[0]["scheduled"] == 8
    assert recs[0]["placements_sha256"] == recs[1]["placements_sha256"]
    init = host_search.HostVictimSearch.__init__

    def on_state(self, *a, **k):
        init(self, *a, **k)
        self.spread = self.spread_any = self.affinity = self.affinity_any = None

    monkeypatch.setattr(host_search.HostVictimSearch, "__init__", on_state)
    assert run("numpy")["placements_sha256"] == recs[0]["placements_sha256"]
