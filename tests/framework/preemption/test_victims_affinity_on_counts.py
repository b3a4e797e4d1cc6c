"""The victim search on counts with InterPodAffinity (alone or beside
PodTopologySpread: ``HostVictimSearch.batch`` with ``AffinityProbe`` and
``kernels.victims.on_counts``) gives what the search on the real state with
the plugins' own filters gives: same code, stats (Filter calls included)
and victims on every node, on random clusters with required affinity
(several terms, self-affinity: the first-pod-of-a-group rule), own and
bound pods' required anti-affinity, namespaces / namespaceSelector,
terminating pods, nodes lacking a key, PDBs and host ports; either profile
order of the two plugins; pods matched per victim-table class or one by
one.  Small cases also against the scalar oracle (through DefaultPreemption,
numpy and numba)."""

from __future__ import annotations

import copy

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.preemption import HOST, PREEMPTION_CONFIG, check_victims, preemption_node

from tensorsched.framework.parsing.priorities import pod_priority
from tensorsched.framework.preemption.host_search import HostVictimSearch, active_host_filters
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster

KEYS = st.sampled_from(["zone", HOST, "rack"])
APPS = st.sampled_from(["a", "b"])
NSS = st.sampled_from(["default", "default", "other"])

# The same profile with InterPodAffinity's Filter before PodTopologySpread's.
CONFIG_IPA_FIRST = copy.deepcopy(PREEMPTION_CONFIG)
_plugins = CONFIG_IPA_FIRST["profiles"][0]["plugins"]
_plugins["filter"]["enabled"] = [{"name": n} for n in
                                 ["NodePorts", "NodeResourcesFit", "InterPodAffinity",
                                  "PodTopologySpread"]]


@st.composite
def terms(draw, max_terms):
    out = []
    for _ in range(draw(st.integers(0, max_terms))):
        t = {"labelSelector": {"matchLabels": {"app": draw(APPS)}}, "topologyKey": draw(KEYS)}
        ns = draw(st.sampled_from(["own", "own", "list", "selector", "all"]))
        if ns == "list":
            t["namespaces"] = [draw(NSS)]
        elif ns == "selector":
            t["namespaceSelector"] = {"matchLabels": {
                "kubernetes.io/metadata.name": draw(NSS)}}
        elif ns == "all":
            t["namespaceSelector"] = {}
        out.append(t)
    return out


def _pod(draw, name, node, prio, aff_terms=(), anti_terms=()):
    c = {"name": "c", "image": "pause",
         "resources": {"requests": {"cpu": f"{draw(st.sampled_from([50, 100, 200]))}m",
                                    "memory": "1Mi"}}}
    if draw(st.integers(0, 5)) == 0:
        c["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
    spec = {"containers": [c], "priority": prio}
    if node:
        spec["nodeName"] = node
    aff = {}
    if aff_terms:
        aff["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(aff_terms)}
    if anti_terms:
        aff["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(anti_terms)}
    if aff:
        spec["affinity"] = aff
    meta = {"name": name, "namespace": draw(NSS), "labels": {"app": draw(APPS)}}
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    if node and draw(st.integers(0, 5)) == 0:
        meta["deletionTimestamp"] = "2024-01-01T00:00:30Z"
    start = draw(st.one_of(st.none(), st.integers(0, 5)))
    if start is not None:
        obj["status"] = {"startTime": f"2024-01-01T00:00:{start:02d}Z"}
    return obj


@st.composite
def cases(draw, max_nodes=7, max_pods=6):
    objs = []
    for i in range(draw(st.integers(1, max_nodes))):
        node = preemption_node(f"n{i}", draw(st.sampled_from([400, 600, 1000])),
                     draw(st.integers(3, 8)), draw(st.sampled_from(["z1", "z2", "z3", None])))
        if draw(st.booleans()):
            node["metadata"]["labels"]["rack"] = draw(st.sampled_from(["r1", "r2"]))
        objs.append(node)
        for k in range(draw(st.integers(0, max_pods))):
            anti = draw(terms(1)) if draw(st.integers(0, 4)) == 0 else ()
            objs.append(_pod(draw, f"p{i}-{k}", f"n{i}",
                             draw(st.sampled_from([-5, 0, 3, 7])), anti_terms=anti))
    for j in range(draw(st.integers(0, 2))):
        objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": f"pdb{j}", "namespace": "default"},
                     "spec": {"selector": {"matchLabels": {"app": draw(APPS)}}},
                     "status": {"disruptionsAllowed": draw(st.integers(0, 2))}})
    pre = _pod(draw, "preemptor", None, draw(st.sampled_from([3, 7, 10])),
               draw(terms(draw(st.sampled_from([1, 1, 2])))), draw(terms(2)))
    pre["metadata"].pop("deletionTimestamp", None)
    if draw(st.integers(0, 2)) == 0:
        pre["spec"]["topologySpreadConstraints"] = [
            {"maxSkew": draw(st.integers(1, 2)), "topologyKey": draw(KEYS),
             "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": draw(APPS)}}}]
    return objs, pre, draw(st.booleans())


def _same(a, b):
    assert isinstance(a[0], tuple) == isinstance(b[0], tuple)
    assert a[0] == b[0]
    assert np.array_equal(a[1], b[1])
    assert np.array_equal(a[2], b[2])


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases())
def test_affinity_batch_matches_search_on_state(case):
    objs, pre, ipa_first = case
    cluster = build_cluster(objs, CONFIG_IPA_FIRST if ipa_first else PREEMPTION_CONFIG)
    pod = cluster.resolve(pre)
    fw = cluster.framework_for(pod, "numpy")
    state = cluster.state
    result = fw.run_cycle(state, pod, all_nodes=True)
    ctx = CycleContext(state, pod, fw)
    host = active_host_filters(fw, ctx, result.skipped_filters)
    if "InterPodAffinity" not in [p.name for p in host]:
        return
    table = cluster.pod_table()
    pods = table.sync()
    prio = pod_priority(pod)
    # On counts, matching the victim table's pod classes or each pod.
    fast = HostVictimSearch(ctx, result.query, host, prio, pods, table.keys,
                            classes=(table.cls, table.class_records))
    per_pod = HostVictimSearch(ctx, result.query, host, prio, pods, table.keys)
    assert fast.on_counts and per_pod.on_counts
    rows = state.valid_rows()
    fast.batch(rows)
    per_pod.batch(rows)
    # The probe in Python on the baseline: the plugin's own codes.
    ia = fast.ia_probe
    valid, base = ia.arrays(rows)
    want_codes = fast.affinity.filter_codes(state, pod, rows)
    for i in range(rows.shape[0]):
        assert ia.code(valid[i], base[i], [0] * len(ia.parts)) == int(want_codes[i])
    # On the state, the filters answered from the probes (as beside other
    # host filters), and with the plugins' own filters.
    probed = HostVictimSearch(ctx, result.query, host, prio, pods, table.keys)
    probed.spread = probed.affinity = None
    ref = HostVictimSearch(ctx, result.query, host, prio, pods, table.keys)
    ref.spread = ref.spread_any = ref.affinity = ref.affinity_any = None
    try:
        for row in rows.tolist():
            want = ref.on_node(row)
            _same(fast.on_node(row), want)
            _same(per_pod.on_node(row), want)
            _same(probed.on_node(row), want)
    finally:
        for s in (ref, probed, per_pod, fast):
            s.close()


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(max_nodes=4, max_pods=4))
def test_affinity_victims_match_oracle(case):
    objs, pre, _ = case
    for backend in ("numpy", "numba"):
        check_victims(objs, pre, backend)


def test_preemption_antiaffinity_bench_same_with_search_on_state(tmp_path, monkeypatch):
    """The ``preemption-antiaffinity`` workload: numpy and numba agree, and
    both agree with the search on the state (counts and probes off)."""
    import json

    from tensorsched.cli import main
    from tensorsched.framework.preemption import host_search

    def run(backend):
        out = tmp_path / f"{backend}.json"
        assert main(["bench", "--workload", "preemption-antiaffinity", "--nodes", "60",
                     "--pods", "8", "--backend", backend, "--output", str(out)]) == 0
        return json.loads(out.read_text())

    recs = [run(b) for b in ("numpy", "numba")]
    assert recs[0]["workload"] == "preemption-antiaffinity"
    assert recs[0]["preemptions"] == recs[0]["scheduled"] == 8
    assert recs[1]["cpu_per_attempt_us"]["p50"] > 0
    assert recs[0]["placements_sha256"] == recs[1]["placements_sha256"]
    init = host_search.HostVictimSearch.__init__

    def on_state(self, *a, **k):
        init(self, *a, **k)
        self.spread = self.spread_any = self.affinity = self.affinity_any = None

    monkeypatch.setattr(host_search.HostVictimSearch, "__init__", on_state)
    assert run("numpy")["placements_sha256"] == recs[0]["placements_sha256"]
