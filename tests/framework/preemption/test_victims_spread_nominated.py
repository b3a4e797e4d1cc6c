"""The victim search (SelectVictimsOnNode) with nominated pods, upstream's
way: on node N only the pods nominated to N with priority >= the
preemptor's count, in N's resources and in PodTopologySpread's count of
N's topology values.  The search on counts reading the cycle's nominated
pods (``NominatedPods``) and the nominator's overlay of the requested
columns gives, on every node N, what the search gives on a cluster where
exactly N's counted nominees are bound to N (code, stats, victims)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.preemption import HOST, PREEMPTION_CONFIG, preemption_node, preemption_pod

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.parsing.priorities import pod_priority
from tensorsched.framework.preemption.host_search import HostVictimSearch, active_host_filters
from tensorsched.framework.runtime.nominated_pods import NOMINATED_PODS
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler

APPS = st.sampled_from(["a", "a", "b"])
PRIO = 10


@st.composite
def cases(draw):
    objs = []
    n = draw(st.integers(1, 5))
    for i in range(n):
        node = preemption_node(f"n{i}", draw(st.sampled_from([400, 600, 1000])),
                               draw(st.integers(3, 8)),
                               draw(st.sampled_from(["z1", "z2", "z3", None])))
        if draw(st.integers(0, 2)) == 0:
            # not counted under nodeTaintsPolicy Honor (TaintToleration is off)
            node["spec"] = {"taints": [{"key": "t", "value": "x", "effect": "NoSchedule"}]}
        objs.append(node)
        for k in range(draw(st.integers(0, 5))):
            objs.append(preemption_pod(f"p{i}-{k}", f"n{i}", prio=draw(st.sampled_from([0, 3])),
                                       cpu=draw(st.sampled_from([50, 100, 200])),
                                       app=draw(APPS), start=draw(st.integers(0, 5))))
    nominees = [(preemption_pod(f"m{j}", prio=draw(st.sampled_from([5, PRIO, PRIO, 20])),
                                cpu=draw(st.sampled_from([50, 100])), app=draw(APPS)),
                 f"n{draw(st.integers(0, n - 1))}")
                for j in range(draw(st.integers(0, 6)))]
    spread = [(key, draw(st.integers(1, 2)), draw(APPS))
              for key in draw(st.lists(st.sampled_from(["zone", HOST]), min_size=1,
                                       max_size=2, unique=True))]
    pre = preemption_pod("preemptor", prio=PRIO, cpu=draw(st.sampled_from([100, 300])),
                         app=draw(APPS), spread=spread)
    if draw(st.booleans()):
        for c in pre["spec"]["topologySpreadConstraints"]:
            c["nodeTaintsPolicy"] = "Honor"
    return objs, nominees, pre


def _answers(objs, pre, backend, nominees=(), rows=None):
    """{node: (code, stats, victim keys)} of the search on ``rows`` (node
    names; None: every node), with ``nominees`` [(pod dict, node)] nominated."""
    cluster = build_cluster(objs, PREEMPTION_CONFIG)
    cycle = Scheduler(cluster, backend, 0).cycle
    for d, on in nominees:
        cycle.nominator.add(cluster.resolve(parse_pod(d)), on)
    pod = cluster.resolve(parse_pod(pre))
    state = cluster.state
    fw = cycle.profiles.of(pod)
    nominated = overlay = None
    if nominees:
        nominated = cycle.nominated_pods(pod)
        overlay = cycle.nominated_overlay(fw, pod)
        assert overlay is not None
    result = fw.run_cycle(state, pod, all_nodes=True, columns=overlay, nominated=nominated)
    ctx = CycleContext(state, pod, fw)
    if nominated is not None:
        ctx.data[NOMINATED_PODS] = nominated
    host = active_host_filters(fw, ctx, result.skipped_filters)
    table = cluster.pod_table()
    pods = table.sync()
    search = HostVictimSearch(ctx, result.query, host, pod_priority(pod), pods, table.keys,
                              columns=overlay.columns() if overlay is not None else None)
    assert search.on_counts
    out = {}
    try:
        for name in rows if rows is not None else list(state.node_rows):
            row = state.node_rows[name]
            code, stats, slots = search.on_node(row)
            out[name] = (code, stats.tolist(), [table.keys[row][int(s)] for s in slots])
    finally:
        search.close()
    return out


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases())
def test_search_counts_nominated_pods_on_their_own_node(case):
    objs, nominees, pre = case
    for backend in ("numpy", "numba"):
        got = _answers(objs, pre, backend, nominees)
        for name in got:
            # upstream's clone of N: its counted nominees bound to N
            on_n = []
            for d, on in nominees:
                if on == name and d["spec"]["priority"] >= PRIO:
                    b = {**d, "spec": {**d["spec"], "nodeName": name}}
                    on_n.append(b)
            want = _answers(objs + on_n, pre, backend, rows=[name])[name]
            code, stats, victims = got[name]
            assert (code, victims) == (want[0], want[2]), name
            assert stats == want[1], name
