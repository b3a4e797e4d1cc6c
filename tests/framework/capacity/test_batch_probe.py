"""Capacity probes as one batch (``framework/capacity/batch_probe.py``): the
node-local kernel's placements equal ``schedule_pending``'s on random
clusters (every Fit strategy, Balanced, taints, node affinity,
unschedulable nodes, images, an extended resource, node subsets, the
percentage of nodes to score; bound pods with InterPodAffinity terms and
pending pods those terms select), ``nodes_to_add``, ``removable_nodes``
and ``how_many_fit`` give the same documents batched and per probe (with
and without pod affinity), and what the kernel does not cover is refused
naming the plugin (pending pods whose terms select each other:
InterPodAffinity)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorsched.framework.capacity.batch_probe import BatchProfileError, LocalProber
from tensorsched.framework.capacity.common import bound_pods as bound_of
from tensorsched.framework.capacity.drain import removable_nodes
from tensorsched.framework.capacity.fit import how_many_fit
from tensorsched.framework.capacity.node_search import nodes_to_add
from tensorsched.framework.parsing.manifests import parse_objects
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.generators.clusters import node_dict, pod_dict

from reference import oracle as O
from support.local_clusters import (
    EXT,
    affinity_bound_pods,
    affinity_pending,
    bound_pods,
    config,
    make_pod,
    nodes,
    pod_class,
    scheduler_bindings,
    scheduler_placements,
    workloads,
)

SLOW = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


def _prober(objects, cfg, pending, seed):
    cl = build_cluster(copy.deepcopy(list(objects)), cfg)
    pods = [cl.resolve(p) for p in parse_objects(copy.deepcopy(pending)).pods]
    return cl, pods, LocalProber(cl, list(cl.objects.nodes), bound_of(cl), pods, seed)


@SLOW
@given(st.data())
def test_probes_equal_the_scheduler_on_random_clusters(data):
    ns = data.draw(nodes(min_size=2))
    bd = bound_pods(data.draw, ns)
    pending = data.draw(workloads())
    cfg = config(data.draw(st.integers(0, 2)), data.draw(st.booleans()))
    seed = data.draw(st.integers(0, 9))
    cl, pods, prober = _prober(ns + bd, cfg, pending, seed)
    names = [n["metadata"]["name"] for n in ns]
    # the whole cluster and two subsets (a drain's or a smaller probe's
    # cluster), each with its own pods, in one call
    subsets = [names] + [[n for n in names if data.draw(st.booleans())] for _ in range(2)]
    lists = [list(range(len(pods)))] + [
        sorted(data.draw(st.sets(st.integers(0, len(pods) - 1)))) for _ in range(2)]
    got = prober.run(subsets, lists)
    for subset, pl, placed in zip(subsets, lists, got):
        objs = [n for n in ns if n["metadata"]["name"] in subset]
        objs += [p for p in bd if p["spec"]["nodeName"] in subset]
        want = scheduler_placements(objs, cfg, [pending[i] for i in pl], seed)
        assert {pods[i].key: node for i, node in placed} == want


@pytest.mark.parametrize("strategy,affinity", [(0, False), (2, False), (0, True)])
def test_the_percentage_of_nodes_to_score_rotates_the_start(strategy, affinity):
    # 130 nodes: 100 to find at 50%, so every pod scans from where the last
    # one stopped; the nodes within the scan are normalized among themselves
    # (InterPodAffinity's min-max too, with bound pods' terms on the web pods)
    ns = [node_dict(f"n{i:03d}", cpu="12"[i % 2], labels={"zone": "abcd"[i % 4]},
                    taints=[{"key": "spot", "effect": "PreferNoSchedule"}] if i % 5 == 0 else None)
          for i in range(130)]
    pref = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 7, "preference": {"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["b"]}]}}]}}}
    pending = [pod_dict(f"p{k}", cpu=("300m", "700m")[k % 2], spec=pref if k % 3 else None,
                        labels={"app": "web"} if affinity else None) for k in range(60)]
    bound = []
    if affinity:
        for k in range(12):
            term = {"topologyKey": ("zone", "kubernetes.io/hostname")[k % 2],
                    "labelSelector": {"matchLabels": {"app": "web"}}}
            kind = ("podAffinity", "podAntiAffinity")[k % 3 == 0]
            rule = {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5 + 8 * k, "podAffinityTerm": term}]}
            if k % 4 == 3:
                rule["requiredDuringSchedulingIgnoredDuringExecution"] = [term]
            bound.append(pod_dict(f"b{k}", cpu="100m", spec={
                "nodeName": f"n{11 * k:03d}", "affinity": {kind: rule}}))
    cfg = config(strategy, pct=50)
    cl, pods, prober = _prober(ns + bound, cfg, pending, 3)
    assert prober.base["c_active"][:, 5].all() == affinity
    placed = prober.run([[n["metadata"]["name"] for n in ns]], [list(range(60))])[0]
    got = {pods[i].key: n for i, n in placed}
    assert got == scheduler_placements(ns + bound, cfg, pending, 3)
    assert len(set(got.values())) > 20


def _search_cluster(data):
    ns = data.draw(nodes(min_size=1, max_size=4))
    bd = bound_pods(data.draw, ns, max_pods=4)
    cfg = config(data.draw(st.integers(0, 2)))
    return ns, bd, cfg


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_nodes_to_add_batched_equals_per_probe(data):
    ns, bd, cfg = _search_cluster(data)
    pending = data.draw(workloads(max_pods=10))
    template = node_dict("pool", cpu=data.draw(st.sampled_from(["1", "2"])), memory="4Gi",
                         pods="4", extra={EXT: "2"}, labels={"zone": "a", "tier": "9"})
    seed = data.draw(st.integers(0, 3))
    cl = build_cluster(copy.deepcopy(ns + bd), cfg)
    reports = [nodes_to_add(cl, copy.deepcopy(pending), [template], seed=seed, max_nodes=12,
                            batch=batch) for batch in (True, False)]
    assert reports[0].to_dict() == reports[1].to_dict()
    assert reports[0].probe_path.startswith("batched")
    assert reports[1].probe_path == "per probe"


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_removable_nodes_batched_equals_per_probe(data):
    ns = data.draw(nodes(min_size=2, max_size=5))
    bd = bound_pods(data.draw, ns, max_pods=8)
    cfg = config(data.draw(st.integers(0, 2)))
    cl = build_cluster(copy.deepcopy(ns + bd), cfg)
    limit = data.draw(st.sampled_from([0, 8]))          # greedy or every subset
    seed = data.draw(st.integers(0, 3))
    reports = [removable_nodes(cl, seed=seed, exact_limit=limit, batch=batch)
               for batch in (True, False)]
    assert reports[0].to_dict() == reports[1].to_dict()
    assert reports[0].probe_path.startswith("batched")


def _refusal(pending, extra=(), cfg=None):
    ns = [node_dict(f"n{i}", labels={"zone": "a"}) for i in range(2)]
    cfg = cfg or config(0)
    with pytest.raises(BatchProfileError) as err:
        _prober(ns + list(extra), cfg, pending, 0)
    return str(err.value)


def test_refusals_name_the_plugin():
    spread = pod_dict("s", spec={"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "s"}}}]}, labels={"app": "s"})
    assert _refusal([spread]).startswith("PodTopologySpread")
    # the System default spreading, for a pod a Service selects
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "d", "namespace": "default"},
           "spec": {"selector": {"app": "d"}}}
    owned = pod_dict("d", labels={"app": "d"})
    assert _refusal([owned], extra=[svc]).startswith("PodTopologySpread")
    _prober([node_dict("n0")], config(0), [owned], 0)     # no Service: no spreading
    anti = pod_dict("a", labels={"app": "a"}, spec={"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname",
             "labelSelector": {"matchLabels": {"app": "a"}}}]}}})
    # one pod whose terms select itself: its answers are the initial state's
    _prober([node_dict("n0")], config(0), [anti], 0)
    msg = _refusal([anti, {**anti, "metadata": {**anti["metadata"], "name": "a2"}}])
    assert msg.startswith("InterPodAffinity") and "default/a selects pod default/a" in msg
    ports = pod_dict("p")
    ports["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    assert _refusal([ports]).startswith("NodePorts")
    low = pod_dict("low", priority=-5)
    low["spec"]["nodeName"] = "n0"
    assert _refusal([pod_dict("hi", priority=10)], extra=[low]).startswith("DefaultPreemption")
    gated = pod_dict("g", spec={"schedulingGates": [{"name": "wait"}]})
    assert _refusal([gated]).startswith("SchedulingGates")
    named = pod_dict("b", spec={"nodeName": "n1"})
    assert _refusal([named]).startswith("NodeName")
    other = pod_dict("o", spec={"schedulerName": "elsewhere"})
    assert _refusal([other]).startswith("profiles")
    cfg = config(0)
    cfg["profiles"][0]["plugins"] = {"filter": {"enabled": [{"name": "GpuShareFit"}]}}
    msg = _refusal([pod_dict("x")], cfg=cfg)
    assert msg.startswith("GpuShareFit") and "not of the default profile" in msg


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_how_many_fit_batched_equals_the_scheduler(data):
    ns = data.draw(nodes(min_size=1, max_size=5))
    bd = bound_pods(data.draw, ns)
    cfg = config(data.draw(st.integers(0, 2)), pct=data.draw(st.sampled_from([100, 50])))
    cls = data.draw(pod_class())
    if cls["cpu"] == "0" and cls["memory"] == "0":
        cls["cpu"] = "100m"
    template = make_pod("t", cls)
    limit = data.draw(st.sampled_from([None, 3]))
    seed = data.draw(st.integers(0, 5))
    cl = build_cluster(copy.deepcopy(ns + bd), cfg)
    got = [how_many_fit(cl, [copy.deepcopy(template)], seed=seed, limit=limit,
                        batch=batch).to_dict() for batch in (True, False)]
    assert got[0] == got[1]


def _affinity_cluster(data, max_nodes=5):
    ns = data.draw(nodes(min_size=1, max_size=max_nodes))
    for n in ns:
        n["spec"].pop("taints", None)       # let the affinity rules decide
        n["spec"].pop("unschedulable", None)
    return ns, affinity_bound_pods(data.draw, ns)


@SLOW
@given(st.data())
def test_pod_affinity_probes_and_messages_equal_the_scheduler(data):
    """Bound pods' required anti-affinity (existing pods' rules), required
    affinity (hardPodAffinityWeight's symmetric part), preferred terms
    across namespaces; pending pods they select with terms of their own on
    bound pods: placements and FailedScheduling messages are the
    Scheduler's, on the whole cluster and on subsets keeping the nodes
    with bound pods."""
    ns, bd = _affinity_cluster(data)
    pending = data.draw(affinity_pending())
    cfg = config(data.draw(st.integers(0, 2)), pct=data.draw(st.sampled_from([100, 50])))
    if data.draw(st.booleans()):
        cfg["profiles"][0]["pluginConfig"].append({"name": "InterPodAffinity", "args": {
            "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "InterPodAffinityArgs",
            "hardPodAffinityWeight": data.draw(st.sampled_from([0, 5, 100]))}})
    seed = data.draw(st.integers(0, 9))
    cl, pods, prober = _prober(ns + bd, cfg, pending, seed)
    names = [n["metadata"]["name"] for n in ns]
    hosts = {p["spec"]["nodeName"] for p in bd}
    subsets = [names, [n for n in names if n in hosts or data.draw(st.booleans())]]
    everyone = list(range(len(pods)))
    got = prober.run_failures(subsets, [everyone] * 2, len(pods))
    for subset, (placed, fails) in zip(subsets, got):
        objs = [n for n in ns if n["metadata"]["name"] in subset] + bd
        want = scheduler_bindings(objs, cfg, pending, seed)
        assert [(pods[i].key, node) for i, node in placed] == [(k, n) for k, n, _ in want]
        assert [(pods[i].key, msg) for i, msg in fails] == [
            (k, m) for k, n, m in want if n is None]


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_pod_affinity_columns_equal_the_scalar_reference(data):
    """Each class's InterPodAffinity columns: the filter bit where the
    scalar reference rejects the node, the raw score whose min-max over
    the nodes is the reference's normalized score, inactive where its
    PreScore skips."""
    ns, bd = _affinity_cluster(data)
    pending = data.draw(affinity_pending())
    hard = data.draw(st.sampled_from([0, 1, 7]))
    cfg = config(0)
    cfg["profiles"][0]["pluginConfig"].append({"name": "InterPodAffinity", "args": {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "InterPodAffinityArgs",
        "hardPodAffinityWeight": hard}})
    cl, pods, prober = _prober(ns + bd, cfg, pending, 0)
    bound = {n["metadata"]["name"]: [p for p in bd if p["spec"]["nodeName"] ==
                                     n["metadata"]["name"]] for n in ns}
    ctx = {"all_nodes": ns, "bound": bound}
    rows = prober.rows_of([n["metadata"]["name"] for n in ns])
    base = prober.base
    for c, rep in enumerate(prober.class_pods):
        pod = next(p for p in pending if p["metadata"]["name"] == rep.name)
        ipa_bits = [bit for _p, bit in prober.ipa[c][1]]
        mine = (base["static_bits"][c][rows] & sum(1 << b for b in ipa_bits)) != 0
        assert mine.tolist() == [O.filter_inter_pod_affinity(pod, n, ctx) is not None
                                 for n in ns]
        skip = O.prescore_inter_pod_affinity_full(pod, ns, bound, {
            "hardPodAffinityWeight": hard}) == O.SKIP
        assert bool(base["c_active"][c, 5]) == (not skip)
        if not skip:
            want = O.scores_inter_pod_affinity(pod, ns, ns, bound, {"hardPodAffinityWeight": hard})
            raw = base["static_raw"][c, rows, 2]
            span = raw.max() - raw.min()
            got = [int(100.0 * ((r - raw.min()) / span)) if span else 0 for r in raw.tolist()]
            assert got == [want[n["metadata"]["name"]] for n in ns]


def test_pod_affinity_messages_name_each_rule():
    # web needs a db pod in its zone and no cache pod there: n0 has a db pod
    # and a guard whose anti-affinity repels web, n1 no db pod, n2 a db and
    # a cache pod
    ns = [node_dict(f"n{i}", labels={"zone": f"z{i}"}) for i in range(3)]
    def on(name, node, app, spec=None):
        return pod_dict(name, labels={"app": app}, spec={"nodeName": node, **(spec or {})})
    def rule(app):
        return {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": app}}}]}
    bound = [on("guard", "n0", "guard", {"affinity": {"podAntiAffinity": rule("web")}}),
             on("db0", "n0", "db"), on("db2", "n2", "db"), on("cache", "n2", "cache")]
    web = pod_dict("web", labels={"app": "web"}, spec={"affinity": {
        "podAffinity": rule("db"), "podAntiAffinity": rule("cache")}})
    cfg = config(0)
    cl, pods, prober = _prober(ns + bound, cfg, [web], 0)
    (placed, fails), = prober.run_failures([["n0", "n1", "n2"]], [[0]], 1)
    want = scheduler_bindings(ns + bound, cfg, [web], 0)
    assert placed == [(0, None)] and fails == [(0, want[0][2])]
    for reason in ("1 node(s) didn't satisfy existing pods anti-affinity rules",
                   "1 node(s) didn't match pod affinity rules",
                   "1 node(s) didn't match pod anti-affinity rules",
                   "1 Preemption is not helpful", "2 No preemption victims"):
        assert reason in fails[0][1]


def test_the_first_pod_of_its_own_affinity_group_is_placed():
    # one pod whose required affinity selects itself and no pod anywhere:
    # the filter's special case lets it on every node with the term's key
    ns = [node_dict(f"n{i}", labels={"zone": "ab"[i % 2]} if i else None) for i in range(3)]
    lead = pod_dict("lead", labels={"app": "lead"}, spec={"affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "lead"}}}]}}})
    for seed in range(4):
        cl, pods, prober = _prober(ns, config(0), [lead], seed)
        placed = prober.run([["n0", "n1", "n2"]], [[0]])[0]
        assert placed[0][1] in ("n1", "n2")
        assert {pods[0].key: placed[0][1]} == scheduler_placements(ns, config(0), [lead], seed)


def test_pod_affinity_probes_that_change_the_answers_read_their_groups_constants():
    # the guard on n0 repels web from zone a; a probe without n0 has no
    # guard: its group's constants let web into zone a, as the Scheduler
    ns = [node_dict(f"n{i}", labels={"zone": "aab"[i]}) for i in range(3)]
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}]}}
    guard = pod_dict("guard", spec={"nodeName": "n0", "affinity": anti})
    web = pod_dict("web", labels={"app": "web"})
    cl, pods, prober = _prober(ns + [guard], config(0), [web], 0)
    sets = [["n0", "n1", "n2"], ["n1"], ["n1", "n2"], ["n0", "n1"]]
    got = prober.run_failures(sets, [[0]] * 4, 1)
    for subset, (placed, fails) in zip(sets, got):
        objs = [n for n in ns if n["metadata"]["name"] in subset]
        objs += [guard] if "n0" in subset else []
        want = scheduler_bindings(objs, config(0), [web], 0)
        assert placed == [(0, want[0][1])]
        assert fails == ([(0, want[0][2])] if want[0][1] is None else [])
    assert [got[j][0] for j in (0, 1, 3)] == [[(0, "n2")], [(0, "n1")], [(0, None)]]
    batch, _ = prober.batch(sets, [[0]] * 4)
    assert batch.static_group.tolist() == [-1, 0, 0, -1]
    # beyond the budget for constants: refused, or left out with partial
    prober.group_budget = 0
    with pytest.raises(BatchProfileError, match="InterPodAffinity: 2 probe"):
        prober.run(sets, [[0]] * 4)
    assert prober.run(sets, [[0]] * 4, partial=True) == [[(0, "n2")], None, None, [(0, None)]]
    assert prober.left_out.startswith("InterPodAffinity")
    assert "fits in 0 bytes" in prober.left_out
    # a budget of one group: one group per call, every probe answered
    prober.group_budget = prober._group_bytes
    assert prober.run_failures(sets, [[0]] * 4, 1) == got
    # a pending pod that selects another pending pod (its class's answers
    # move as the batch places it)
    api = pod_dict("api", labels={"app": "api"}, spec={"affinity": anti})
    msg = _refusal([web, api])
    assert msg.startswith("InterPodAffinity") and "default/api selects pod default/web" in msg
    self_anti = pod_dict("s", labels={"app": "web"}, spec={"affinity": anti})
    _, _, alone = _prober(ns, config(0), [self_anti], 0)
    with pytest.raises(BatchProfileError, match="select itself"):
        alone.place_groups(np.zeros(2, np.int64))
    # how_many_fit of that template (one per node) takes the Scheduler
    cl = build_cluster(copy.deepcopy(ns), config(0))
    got = [how_many_fit(cl, [copy.deepcopy(self_anti)], seed=0, batch=batch).to_dict()
           for batch in (True, False)]
    assert got[0] == got[1] and got[0]["status"]["total"] == 2


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_how_many_fit_with_pod_affinity_batched_equals_the_scheduler(data):
    ns, bd = _affinity_cluster(data, max_nodes=4)
    template = data.draw(affinity_pending(max_pods=1, max_classes=1))[0]
    cfg = config(data.draw(st.integers(0, 2)))
    _prober(ns + bd, cfg, [template], 1)         # the batch covers it
    cl = build_cluster(copy.deepcopy(ns + bd), cfg)
    got = [how_many_fit(cl, [copy.deepcopy(template)], seed=1, limit=None,
                        batch=batch).to_dict() for batch in (True, False)]
    assert got[0] == got[1]


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_nodes_to_add_with_pod_affinity_batched_equals_per_probe(data):
    ns, bd = _affinity_cluster(data, max_nodes=3)
    pending = data.draw(affinity_pending(max_pods=10))
    template = node_dict("pool", cpu="2", memory="4Gi", pods="4",
                         labels={"zone": data.draw(st.sampled_from("abc"))})
    cl = build_cluster(copy.deepcopy(ns + bd), config(0))
    reports = [nodes_to_add(cl, copy.deepcopy(pending), [template], seed=1, max_nodes=12,
                            batch=batch) for batch in (True, False)]
    assert reports[0].to_dict() == reports[1].to_dict()
    assert reports[0].probe_path.startswith("batched")


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_removable_nodes_with_pod_affinity_batched_equals_per_probe(data):
    ns, bd = _affinity_cluster(data, max_nodes=4)
    cl = build_cluster(copy.deepcopy(ns + bd), config(0))
    reports = [removable_nodes(cl, seed=0, exact_limit=8, batch=batch) for batch in (True, False)]
    assert reports[0].to_dict() == reports[1].to_dict()
