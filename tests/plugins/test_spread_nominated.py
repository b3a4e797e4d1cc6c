"""PodTopologySpread with nominated pods, upstream's per-node rule
(``reference.nominated``): filtering node N counts only the pods nominated
to N with priority >= the pod's (never the pod itself), in N's topology
values, and N passes only if it passes with and without them.  Random
clusters (missing zone labels, other namespaces and labels, node affinity
with the Honor policy, minDomains): the plugin's filter and its statuses,
and whole cycles on numpy and numba reading the nominator's overlay, equal
the scalar reference on every node."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as hs
from reference import oracle as O
from reference.nominated import filter_with_nominated

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.runtime.nominated_pods import NOMINATED_PODS
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.runtime.status import Code
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
LABELS = ({"app": "web"}, {"app": "web"}, {"app": "db"}, {})
CODES = {Code.UNSCHEDULABLE: O.UNSCHEDULABLE,
         Code.UNSCHEDULABLE_AND_UNRESOLVABLE: O.UNRESOLVABLE}

_node = hs.sampled_from(["z1", "z2", "z3", None])
_other_ns = hs.sampled_from([False, False, False, True])
_placed = hs.tuples(hs.integers(0, 6), hs.integers(0, 3), _other_ns)
_nominee = hs.tuples(hs.integers(0, 6), hs.integers(0, 3), _other_ns,
                     hs.sampled_from([500, 1000, 1000, 2000]))


def _constraints(zone_skew, host_skew, min_domains):
    out = [{"maxSkew": zone_skew, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}}}]
    if min_domains > 1:
        out[0]["minDomains"] = min_domains
    if host_skew:
        out.append({"maxSkew": host_skew, "topologyKey": HOST,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "web"}}})
    return out


def _objects(zones, placed, nominees, affinity):
    nodes = [node_dict(f"n{i}", cpu="64", memory="256Gi",
                       labels={ZONE: z} if z else None) for i, z in enumerate(zones)]
    n = len(nodes)
    bound = []
    for j, (at, lab, other_ns) in enumerate(placed):
        d = pod_dict(f"b{j}", namespace="other" if other_ns else "default",
                     labels=dict(LABELS[lab]), priority=0)
        d["spec"]["nodeName"] = f"n{at % n}"
        bound.append(d)
    noms = [(pod_dict(f"m{j}", namespace="other" if other_ns else "default",
                      labels=dict(LABELS[lab]), priority=prio), f"n{at % n}")
            for j, (at, lab, other_ns, prio) in enumerate(nominees)]
    spec = {}
    if affinity:
        # Honor: nodes outside z1/z2 are not counted
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": ZONE, "operator": "In", "values": ["z1", "z2"]}]}]}}}
    return nodes, bound, noms, spec


@settings(max_examples=40, deadline=None)
@given(zones=hs.lists(_node, min_size=2, max_size=7),
       placed=hs.lists(_placed, max_size=10), nominees=hs.lists(_nominee, max_size=10),
       zone_skew=hs.integers(1, 2), host_skew=hs.sampled_from([0, 1]),
       min_domains=hs.sampled_from([1, 1, 4]), affinity=hs.booleans(),
       own_nomination=hs.booleans())
def test_filter_counts_nominated_pods_on_their_own_node(zones, placed, nominees, zone_skew,
                                                        host_skew, min_domains, affinity,
                                                        own_nomination):
    nodes, bound, noms, spec = _objects(zones, placed, nominees, affinity)
    spec["topologySpreadConstraints"] = _constraints(zone_skew, host_skew, min_domains)
    me = pod_dict("me", labels={"app": "web"}, priority=1000, spec=spec)
    if own_nomination:
        noms.append((me, nodes[0]["metadata"]["name"]))   # never counted for itself
    by_node = {O._name(nd): [] for nd in nodes}
    for b in bound:
        by_node[b["spec"]["nodeName"]].append(b)
    octx = {"all_nodes": nodes, "bound": by_node, "args": None}
    want = {O._name(nd): filter_with_nominated(O.filter_pod_topology_spread, me, nd, octx, noms)
            for nd in nodes}
    for backend in ("numpy", "numba"):
        cluster = build_cluster(nodes + bound)
        sched = Scheduler(cluster, backend, 0)
        cycle = sched.cycle
        for d, on in noms:
            cycle.nominator.add(cluster.resolve(parse_pod(d)), on)
        pod = cluster.resolve(parse_pod(me))
        state = cluster.state
        fw = cycle.profiles.of(pod)
        pts = next(p for p in fw.filters if p.name == names.POD_TOPOLOGY_SPREAD)
        nominated = cycle.nominated_pods(pod)
        ctx = CycleContext(state, pod, fw)
        ctx.data[NOMINATED_PODS] = nominated
        rows = np.array([state.node_rows[O._name(nd)] for nd in nodes], np.int64)
        ok = np.asarray(pts.filter(ctx, rows))
        for nd, r, fits in zip(nodes, rows.tolist(), ok.tolist()):
            w = want[O._name(nd)]
            assert fits == (w is None), (O._name(nd), w)
            if w is not None:
                st = pts.explain_status(ctx, r)
                assert (CODES[st.code], list(st.reasons)) == (w[0], w[1])
        # a whole cycle reading the overlay: the same feasible nodes
        overlay = cycle.nominated_overlay(fw, pod)
        assert overlay is not None
        # (scores asked for: every node's reasons come back; a placement
        # cycle may bring back its pick alone)
        res = fw.run_cycle(state, pod, all_nodes=True, want_scores=True, columns=overlay,
                           nominated=nominated)
        feasible = {state.node_name(int(r)) for r, b in zip(res.rows, res.reasons) if b == 0}
        assert feasible == {O._name(nd) for nd in nodes if want[O._name(nd)] is None
                            and O.pod_required_affinity_matches(me, nd)}
        pick = fw.run_cycle(state, pod, all_nodes=True, want_scores=False, columns=overlay,
                            nominated=nominated)
        if feasible:
            assert state.node_name(pick.selected_row) in feasible
        else:
            assert pick.selected_row < 0


def _filter_on(zones, nominees):
    """{node: fits} of PodTopologySpread (zone maxSkew 1, app: web) for a
    priority-1000 pod with ``nominees`` [(node index, priority)] nominated."""
    nodes, bound, noms, spec = _objects(zones, [], [(i, 0, False, p) for i, p in nominees],
                                        False)
    spec["topologySpreadConstraints"] = _constraints(1, 0, 1)
    cluster = build_cluster(nodes)
    cycle = Scheduler(cluster, "numpy", 0).cycle
    for d, on in noms:
        cycle.nominator.add(cluster.resolve(parse_pod(d)), on)
    pod = cluster.resolve(parse_pod(pod_dict("me", labels={"app": "web"}, priority=1000,
                                             spec=spec)))
    state = cluster.state
    fw = cycle.profiles.of(pod)
    pts = next(p for p in fw.filters if p.name == names.POD_TOPOLOGY_SPREAD)
    ctx = CycleContext(state, pod, fw)
    ctx.data[NOMINATED_PODS] = cycle.nominated_pods(pod)
    rows = np.arange(len(nodes), dtype=np.int64)
    return dict(zip((state.node_name(r) for r in rows.tolist()),
                    np.asarray(pts.filter(ctx, rows)).tolist()))


def test_a_nominated_pod_counts_on_its_own_node_only():
    # n0, n2 in z1, n1 in z2; a web pod nominated to n0: n0 sees z1 at 1
    # (1 + 1 - 0 > 1), n2 does not (upstream adds it on n0 only)
    assert _filter_on(["z1", "z2", "z1"], [(0, 1000)]) == {"n0": False, "n1": True,
                                                          "n2": True}
    # lower priority: not counted anywhere
    assert _filter_on(["z1", "z2", "z1"], [(0, 500)]) == {"n0": True, "n1": True, "n2": True}
