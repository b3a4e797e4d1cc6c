"""framework/preemption/visit.py: DefaultPreemption's PostFilter through the
compiled visit (numba backend) gives what the search-then-pick path gives
with every node searched on the real state (numpy backend, counts and
probes off): same nominated node, victims, message and Filter calls, on
random clusters with runs of alike pods (some terminating), priorities,
PDBs, host ports,
spread and (anti-)affinity preemptors, any offset and candidate count."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.preemption import HOST, PREEMPTION_CONFIG, preemption_node, preemption_pod

from tensorsched.bench import preempt_pdb
from tensorsched.framework.preemption import host_search
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.kernels.victims import on_counts as VS

APPS = st.sampled_from(["a", "b"])
KEYS = st.sampled_from(["zone", HOST])


@st.composite
def cases(draw):
    objs = []
    n = draw(st.integers(1, 6))
    for i in range(n):
        objs.append(preemption_node(f"n{i}", draw(st.sampled_from([400, 600, 1000])),
                                    draw(st.integers(3, 9)),
                                    draw(st.sampled_from(["z1", "z2", None]))))
        k = 0
        for _ in range(draw(st.integers(0, 3))):
            # a run of alike pods (one template), then maybe an odd one
            tpl = dict(prio=draw(st.sampled_from([-5, 0, 3])), cpu=draw(st.sampled_from([50, 100])),
                       app=draw(APPS), port=draw(st.sampled_from([None, None, None, 8080])))
            for _ in range(draw(st.integers(1, 3))):
                pod = preemption_pod(f"p{i}-{k}", f"n{i}", start=draw(st.integers(0, 5)), **tpl)
                if draw(st.integers(0, 2)) == 0:    # terminating: counted by no constraint
                    pod["metadata"]["deletionTimestamp"] = "2024-01-01T00:01:00Z"
                objs.append(pod)
                k += 1
    for j in range(draw(st.integers(0, 1))):
        objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": f"pdb{j}", "namespace": "default"},
                     "spec": {"selector": {"matchLabels": {"app": draw(APPS)}}},
                     "status": {"disruptionsAllowed": draw(st.integers(0, 2))}})
    kind = draw(st.sampled_from(["plain", "spread", "spread", "anti", "aff"]))
    kw = {}
    if kind == "spread":
        kw["spread"] = [(draw(KEYS), draw(st.integers(1, 2)), draw(APPS))]
    elif kind in ("anti", "aff"):
        kw[kind] = (draw(KEYS), draw(APPS))
    pre = preemption_pod("preemptor", prio=draw(st.sampled_from([3, 7])),
                         cpu=draw(st.sampled_from([100, 300])), app=draw(APPS),
                         port=draw(st.sampled_from([None, None, 8080])), **kw)
    return objs, pre, draw(st.integers(0, n - 1)), draw(st.integers(1, n))


def _preempt(objs, pre, backend, offset, cands):
    cluster = build_cluster(objs, PREEMPTION_CONFIG)
    pod = cluster.resolve(pre)
    fw = cluster.framework_for(pod, backend)
    result = fw.run_cycle(cluster.state, pod, all_nodes=True)
    out = fw.plugins_at("postFilter")[0].post_filter(
        CycleContext(cluster.state, pod, fw), result, cluster.pod_table(), offset=offset,
        num_cands=cands)
    return out.nominated_node, out.victims, out.message, out.filter_calls


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases())
def test_visit_equals_search_on_state_then_pick(case):
    objs, pre, offset, cands = case
    got = _preempt(objs, pre, "numba", offset, cands)
    init = host_search.HostVictimSearch.__init__

    def on_state(self, *a, **k):
        init(self, *a, **k)
        self.spread = self.spread_any = self.affinity = self.affinity_any = None

    host_search.HostVictimSearch.__init__ = on_state
    try:
        want = _preempt(objs, pre, "numpy", offset, cands)
    finally:
        host_search.HostVictimSearch.__init__ = init
    assert got == want


def test_lists_full_of_violating_candidates_visit_in_doubling_batches(monkeypatch):
    """Every candidate breaks a PDB (``bench.preempt_pdb``'s ``fixed``
    budget allows 2 disruptions, a preemptor needs 4 victims), so the
    visit goes on past numCandidates looking for a non-violating one and
    reaches every node: after the first batch (numCandidates, 100) the
    batches double, 5 in all at 700 nodes (100, 100, 200, 300 left), not
    100 + 600 / 64; the preemptions equal the numpy backend's search on
    the state."""
    calls = []
    real = VS.visit

    def counted(*args, **kwargs):
        calls.append(args[5].shape[0])          # the batch's rows
        return real(*args, **kwargs)

    monkeypatch.setattr(VS, "visit", counted)
    numba = preempt_pdb.run(700, 3, 3, "numba")
    per_preemptor = len(calls) // 4                 # the warm-up and 3 preemptors
    assert calls[:per_preemptor] == [100, 100, 200, 300], calls
    numpy = preempt_pdb.run(700, 3, 3, "numpy")
    assert numba["preemptions"] == numpy["preemptions"] == 3
    assert numba["placements_sha256"] == numpy["placements_sha256"]
