"""Preemption's retry checks one node row (``evaluator.fits_on_row``):
PodTopologySpread's and InterPodAffinity's ``filter_row`` equal their
``filter`` over every row at that row, on random clusters with pods bound
and evicted between the checks (the kept minimum follows them) and with
nominated pods; and the retry evaluates the preemptor's spread filter on
one row, not on N."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.preemption import (
    HOST,
    PREEMPTION_CONFIG,
    drawn_node,
    preemption_node,
    preemption_pod,
)

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.preemption.evaluator import fits_on_row
from tensorsched.framework.preemption.host_search import active_host_filters
from tensorsched.framework.runtime.nominated_pods import NOMINATED_PODS, NominatedPods
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster

APPS = st.sampled_from(["a", "b"])
KEYS = st.sampled_from(["zone", HOST, "rack"])


@st.composite
def cases(draw):
    objs = []
    n = draw(st.integers(1, 7))
    for i in range(n):
        node = drawn_node(draw, f"n{i}", 1000, 20)
        objs.append(node)
        for k in range(draw(st.integers(0, 5))):
            objs.append(preemption_pod(f"p{i}-{k}", f"n{i}", app=draw(APPS), cpu=10))
    pre = preemption_pod("preemptor", prio=5, cpu=10, app=draw(APPS))
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
    kind = draw(st.sampled_from(["none", "anti", "aff"]))
    if kind != "none":
        rule = "podAntiAffinity" if kind == "anti" else "podAffinity"
        pre["spec"]["affinity"] = {rule: {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": draw(APPS)}},
             "topologyKey": draw(st.sampled_from(["zone", HOST, "rack"]))}]}}
    # binds (node index, app) and evictions (pod index) between checks
    steps = draw(st.lists(st.one_of(
        st.tuples(st.just("bind"), st.integers(0, n - 1), APPS),
        st.tuples(st.just("evict"), st.integers(0, 40), st.just(""))), max_size=6))
    nominees = draw(st.lists(st.tuples(st.integers(0, n - 1), APPS), max_size=2))
    return objs, pre, steps, nominees


def _check_every_row(fw, state, pod, nominated=None) -> set:
    """The plugins checked (PodTopologySpread always: the preemptor has
    constraints)."""
    rows = state.valid_rows()
    checked = set()
    for p in fw.filters:
        if p.name not in (names.POD_TOPOLOGY_SPREAD, names.INTER_POD_AFFINITY):
            continue
        ctx = CycleContext(state, pod, fw)
        if nominated is not None:
            ctx.data[NOMINATED_PODS] = nominated
        if p.pre_filter(ctx)[0].code.name == "SKIP":
            continue
        one = [p.filter_row(ctx, int(r)) for r in rows.tolist()]     # before any whole pass
        whole = np.asarray(p.filter(ctx, rows), bool)
        assert one == whole.tolist(), p.name
        checked.add(p.name)
    assert names.POD_TOPOLOGY_SPREAD in checked
    return checked


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases())
def test_one_row_equals_the_whole_filter_at_that_row(case):
    objs, pre, steps, nominees = case
    cluster = build_cluster(objs, PREEMPTION_CONFIG)
    pod = cluster.resolve(pre)
    fw = cluster.framework_for(pod, "numpy")
    state = cluster.state
    _check_every_row(fw, state, pod)
    for j, (what, at, app) in enumerate(steps):
        if what == "bind":
            state.add_pod(cluster.resolve(preemption_pod(f"x{j}", app=app, cpu=10)), f"n{at}")
        else:
            keys = sorted(k for k, _ in ((r.key, row) for r, row in state.pods.bound()))
            if keys:
                state.remove_pod(keys[at % len(keys)])
        _check_every_row(fw, state, pod)
    if nominees:
        by_row: dict = {}
        for j, (at, app) in enumerate(nominees):
            rec = cluster.resolve(preemption_pod(f"nom{j}", prio=9, app=app, cpu=10))
            by_row.setdefault(state.node_rows[f"n{at}"], []).append(rec)
        _check_every_row(fw, state, pod, NominatedPods({r: tuple(v) for r, v in by_row.items()}))


def test_the_retry_evaluates_the_spread_filter_on_one_row():
    nodes = 12
    objs = []
    for i in range(nodes):
        objs.append(preemption_node(f"n{i}", 400, 10, f"z{i % 3}"))
        objs += [preemption_pod(f"p{i}-{k}", f"n{i}", cpu=100, start=k) for k in range(4)]
    pre = preemption_pod("preemptor", prio=10, cpu=100,
                         spread=(("zone", 1, "a"), (HOST, 1, "a")),
                         anti=(HOST, "b"))
    cluster = build_cluster(objs, PREEMPTION_CONFIG)
    pod = cluster.resolve(pre)
    fw = cluster.framework_for(pod, "numpy")
    state = cluster.state
    result = fw.run_cycle(state, pod, all_nodes=True)
    assert result.selected_row < 0
    ctx = CycleContext(state, pod, fw)
    host = active_host_filters(fw, ctx, result.skipped_filters)
    by_name = {p.name: p for p in host}
    assert set(by_name) == {names.POD_TOPOLOGY_SPREAD, names.INTER_POD_AFFINITY}
    state.remove_pod("default/p5-0")        # the eviction: the counts moved since the cycle
    before = {k: p.rows_evaluated for k, p in by_name.items()}
    assert fits_on_row(state, result.query, state.node_rows["n5"], host, ctx)
    assert {k: p.rows_evaluated - before[k] for k, p in by_name.items()} == {
        names.POD_TOPOLOGY_SPREAD: 1, names.INTER_POD_AFFINITY: 1}
    # the whole filter agrees, and evaluates every row
    spread = by_name[names.POD_TOPOLOGY_SPREAD]
    whole = spread.filter(ctx, state.valid_rows())
    assert whole[state.node_rows["n5"]]
    assert spread.rows_evaluated - before[names.POD_TOPOLOGY_SPREAD] == 1 + nodes

