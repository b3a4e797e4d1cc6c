"""Failures remembered (``Scheduler(remember_failures=...)``): a pod that
fits nowhere on a cluster unchanged since an alike pod failed is answered
without a cycle, and nothing observable differs from running every cycle:
outcomes, messages, events (with their times), preemptions, the queue's
bookkeeping (attempts, backoff, the unschedulable pool), the scheduler's
counters and rotation, the metrics and ``explain``, whatever events come
between the attempts."""

from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.checks import check

from tensorsched import synthetic
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.plugins.priority_sort import PrioritySort
from tensorsched.framework.runtime.clock import SimulatedClock
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod
from tensorsched.framework.scheduler.failure_memory import (
    FailureMemory,
    RememberedFailure,
    failure_stamp,
)
from tensorsched.framework.scheduler.nominator import Nominator
from tensorsched.framework.scheduler.profiles import Profiles
from tensorsched.framework.scheduler.queue import POD_ADD, SchedulingQueue, plugin_events
from tensorsched.framework.scheduler.scheduler import Scheduler

ALL_NODES = {"apiVersion": "kubescheduler.config.k8s.io/v1",
             "kind": "KubeSchedulerConfiguration", "percentageOfNodesToScore": 100}
HOST = "kubernetes.io/hostname"
TAINT = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
TOLERATE = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": HOST}]}}

# (cpu, priority, anti-affinity, node selector zone, tolerates the taint)
TEMPLATES = st.tuples(st.sampled_from(["300m", "1", "3", "16"]), st.sampled_from([None, 10, 100]),
                      st.booleans(), st.sampled_from([None, "z1", "z9"]), st.booleans())


def _pod(name, created, template, node=None):
    cpu, prio, anti, zone, tol = template
    spec = {}
    if anti:
        spec["affinity"] = ANTI
    if zone:
        spec["nodeSelector"] = {"zone": zone}
    if tol:
        spec["tolerations"] = TOLERATE
    if node:
        spec["nodeName"] = node
    return pod_dict(name, cpu=cpu, priority=prio, created=created, spec=spec,
                    labels={"color": "green"} if anti else {})


@st.composite
def scenarios(draw):
    """(nodes, steps, seed, batch, grace): pods added in batches (alike
    pods in stretches, many fitting nowhere), and between them node
    adds/updates/deletes, pod deletes, bound pods added, direct attempts
    and the clock moved (backoff, the unschedulable pool's flush)."""
    n = draw(st.integers(1, 6))
    nodes = [node_dict(f"n{i}", cpu=str(draw(st.sampled_from([1, 2, 4]))),
                       labels={"zone": f"z{i % 3}"},
                       taints=TAINT if draw(st.integers(0, 4)) == 0 else None)
             for i in range(n)]
    templates = draw(st.lists(TEMPLATES, min_size=1, max_size=3))
    steps, created = [], 0
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["pods", "pods", "pods", "delete", "add_node",
                                     "update_node", "delete_node", "advance", "bind",
                                     "direct"]))
        if kind in ("pods", "direct", "bind"):
            count = draw(st.integers(1, 12)) if kind == "pods" else 1
            pods, t = [], draw(st.integers(0, len(templates) - 1))
            for _ in range(count):
                if draw(st.integers(0, 3)) == 0:
                    t = draw(st.integers(0, len(templates) - 1))
                node = f"n{draw(st.integers(0, n - 1))}" if kind == "bind" else None
                pods.append(_pod(f"p{created}", created // 2, templates[t], node))
                created += 1
            steps.append((kind, pods))
        elif kind == "advance":
            steps.append((kind, draw(st.sampled_from([0.5, 2.0, 20.0, 400.0]))))
        else:
            steps.append((kind, draw(st.integers(0, 7))))
    return (nodes, steps, draw(st.integers(0, 2**32)), draw(st.booleans()),
            draw(st.sampled_from([0.0, 5.0])))


def _play(nodes, steps, seed, batch, grace, remember, defer=True):
    cluster = build_cluster(nodes, ALL_NODES)
    sched = Scheduler(cluster, "numba", seed, batch=batch, remember_failures=remember,
                      termination_grace_seconds=grace)
    sched.cycle.defer_failure_keys = defer
    log = []
    sched.subscribe("*", lambda e: log.append(dict(e)))
    keys = []
    for i, (kind, arg) in enumerate(steps):
        state = sched.cluster.state
        if kind == "pods":
            outcomes, preemptions = sched.schedule_pending(arg)
            log.append([b.to_dict() for b in outcomes])
            log.append(preemptions)
            keys += [f"default/{p['metadata']['name']}" for p in arg]
        elif kind == "direct":
            b = sched.schedule_one(cluster.resolve(arg[0]))
            log.append(b.to_dict())
        elif kind == "bind":
            if arg[0]["spec"]["nodeName"] in state.node_rows:
                try:
                    sched.add_pod(arg[0])
                except Exception as exc:        # refused (no room): state unchanged
                    log.append(type(exc).__name__)
        elif kind == "delete" and state.pods:
            sched.delete_pod(sorted(state.pods)[arg % len(state.pods)])
        elif kind == "add_node":
            sched.add_node(node_dict(f"extra{i}", cpu=str(1 + arg % 4),
                                     labels={"zone": f"z{arg % 3}"}))
        elif kind == "update_node" and state.num_nodes:
            name = state.node_name(int(state.valid_rows()[arg % state.num_nodes]))
            sched.update_node(node_dict(name, cpu=str(1 + arg % 8),
                                        labels={"zone": f"z{(arg + 1) % 3}"},
                                        taints=TAINT if arg % 2 else None))
        elif kind == "delete_node" and state.num_nodes > 1:
            sched.delete_node(state.node_name(int(state.valid_rows()[arg % state.num_nodes])))
        elif kind == "advance":
            sched.advance(arg)
            log.append([b.to_dict() for b in sched.run_until_idle()])
        check(sched, [k for k in keys if k in sched.queue or k in sched.cluster.state.pods])
    q = sched.queue
    m = sched.metrics()
    stages = sorted(m.pop("stage_seconds"))
    m.pop("plugin_seconds")
    probe = _pod("probe", 0, ("1", None, True, None, False))
    final = {
        "attempts": sched.attempts, "start": sched.next_start_index,
        "results": dict(sched.results), "metrics": m, "stages": stages,
        "latencies": len(sched.latencies),
        "queue": sorted((pi.key, pi.where, pi.attempts, pi.timestamp, pi.cycle,
                         sorted(pi.unschedulable_plugins)) for pi in q.pending()),
        "unschedulable": list(q.unschedulable), "cycle": q.scheduling_cycle,
        "pods": sorted((k, e.node_row) for k, e in sched.cluster.state.pods.items()),
        "explain": explain_pod(cluster, probe, "numba", seed),
        "outcomes": sorted((k, b.to_dict()) for k, b in sched.outcomes.items()),
    }
    return log, final, sched


SETTINGS = settings(max_examples=int(os.environ.get("FAILURE_MEMORY_EXAMPLES", "40")),
                    deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(scenarios())
def test_remembered_failures_are_indistinguishable_from_full_cycles(case):
    nodes, steps, seed, batch, grace = case
    off = _play(nodes, steps, seed, batch, grace, remember=False)
    on = _play(nodes, steps, seed, batch, grace, remember=True)
    assert on[0] == off[0]
    assert on[1] == off[1]
    assert off[2].failure_memory is None


@SETTINGS
@given(scenarios())
def test_keys_taken_at_the_end_of_a_failed_cycle_change_nothing(case):
    """A cycle on a cluster no remembered failure holds for takes the pod's
    key only to remember its failure (``defer_failure_keys``): outcomes,
    events, queue, metrics, the failures remembered and the hits are those
    of taking it at the start of every cycle."""
    nodes, steps, seed, batch, grace = case
    at_start = _play(nodes, steps, seed, batch, grace, remember=True, defer=False)
    at_end = _play(nodes, steps, seed, batch, grace, remember=True)
    assert at_end[0] == at_start[0]
    assert at_end[1] == at_start[1]
    late, early = at_end[2].failure_memory, at_start[2].failure_memory
    assert late.hits == early.hits and len(late) == len(early)


def test_a_cycle_after_a_change_takes_no_key_unless_it_fails():
    """Direct attempts, each after the previous one changed the cluster:
    a pod that fits (or preempts) never asks the failure memory for its
    key (its signature); one that fails takes it to remember its failure,
    and the next alike pod, asking while that failure holds, is answered
    from memory."""
    nodes = [node_dict(f"n{i}", cpu="1") for i in range(3)]
    low = [pod_dict(f"low-{i}", cpu="800m", priority=0, spec={"nodeName": f"n{i}"})
           for i in range(2)]
    sched = Scheduler(build_cluster(nodes + low, ALL_NODES), "numba", 0)
    memory = sched.failure_memory
    asked = []
    key = memory.key
    memory.key = lambda fw, pod: asked.append(pod.key) or key(fw, pod)
    cluster = sched.cluster
    placed = sched.schedule_one(cluster.resolve(pod_dict("fits", cpu="500m")))
    assert placed.node == "n2" and asked == []
    high = sched.schedule_one(cluster.resolve(pod_dict("high", cpu="800m", priority=100)))
    assert high.node is not None and high.victims and asked == []
    big = [cluster.resolve(pod_dict(f"big-{i}", cpu="4")) for i in range(2)]
    assert [sched.schedule_one(p).node for p in big] == [None, None]
    # big-1 asks as a remembered failure holds (it is answered from it)
    assert asked == ["default/big-0", "default/big-1"] and memory.hits == 1


def _unschedulable(n_nodes, n_pods, remember, batch=True):
    objs, pods = synthetic.workload("unschedulable", n_nodes, n_pods)
    cluster = build_cluster(objs, ALL_NODES)
    sched = Scheduler(cluster, "numba", 0, batch=batch, remember_failures=remember)
    events = []
    sched.subscribe("FailedScheduling", lambda e: events.append(dict(e)))
    outcomes, _ = sched.schedule_pending(pods)
    return sched, [b.to_dict() for b in outcomes], events


def test_alike_pods_that_fit_nowhere_fail_from_memory_after_the_first():
    """20 nodes each holding an anti-affinity pod, 15 more alike: the first
    runs the diagnosis and DefaultPreemption's dry run, the other 14 get its
    answer, and every outcome and event is the full cycle's."""
    for batch in (True, False):
        on, outcomes, events = _unschedulable(20, 15, True, batch)
        off, outcomes_off, events_off = _unschedulable(20, 15, False, batch)
        assert on.failure_memory.hits == 14
        assert outcomes == outcomes_off and events == events_off
        assert outcomes[0]["message"] == (
            "0/20 nodes are available: 20 node(s) didn't match pod anti-affinity rules. "
            "no new claims to deallocate, preemption: 0/20 nodes are available: 20 No preemption victims found for "
            "incoming pod.")
        assert on.attempts == off.attempts == 15
        assert on.queue.counts() == off.queue.counts() == {
            "active": 0, "backoff": 0, "unschedulable": 15, "in-flight": 0}
        assert [pi.attempts for pi in on.queue.pending()] == [1] * 15


def test_any_cluster_change_forgets_and_a_different_pod_is_not_alike():
    sched, _, _ = _unschedulable(6, 3, True)
    memory = sched.failure_memory
    assert memory.hits == 2 and len(memory) == 1
    # a node added: the unschedulable pods move; anti-0 takes it (a full
    # cycle), anti-1 fails on the changed cluster (a full cycle) and anti-2
    # gets anti-1's answer
    sched.add_node(node_dict("n-new", labels={"zone": "z0"}))
    out = sched.run_until_idle()
    assert [b.node for b in out] == ["n-new", None, None]
    assert out[1].message == out[2].message and out[1].message.startswith("0/7 nodes")
    assert memory.hits == 3
    # alike pods of another priority and preemptionPolicy are not answered
    # from their memory (they may not preempt: another message)
    before = memory.hits
    objs = [pod_dict(f"hi-{i}", priority=5, labels={"color": "green"},
                     spec={"affinity": ANTI, "preemptionPolicy": "Never"}) for i in range(2)]
    out, pre = sched.schedule_pending(objs)
    assert [b.pod for b in out] == ["default/hi-0", "default/hi-1"] and not pre
    assert [b.node for b in out] == [None, None]
    assert memory.hits == before + 1        # hi-1 after hi-0 (alike)
    assert out[0].message == out[1].message == (
        "0/7 nodes are available: 7 node(s) didn't match pod anti-affinity rules. "
        "no new claims to deallocate, not eligible due to preemptionPolicy=Never.")


def test_a_preemption_is_never_remembered():
    """Preemptors that find victims change the cluster: each gets its own
    cycle and its own victims, as without the memory."""
    nodes = [node_dict(f"n{i}", cpu="1") for i in range(3)]
    low = [pod_dict(f"low-{i}", cpu="800m", priority=0, spec={"nodeName": f"n{i}"})
           for i in range(3)]
    high = [pod_dict(f"high-{i}", cpu="800m", priority=100) for i in range(4)]
    got = []
    for remember in (True, False):
        sched = Scheduler(build_cluster(nodes + low, ALL_NODES), "numba", 1,
                          remember_failures=remember)
        out, pre = sched.schedule_pending(high)
        got.append(([b.to_dict() for b in out], pre, sched.attempts))
        if remember:
            # high-3 finds no victim left: remembered, never used (nothing alike came)
            assert sched.failure_memory.hits == 0
    assert got[0] == got[1]
    assert len(got[0][1]) == 3


def test_the_unschedulable_pool_flushes_only_its_stale_head():
    """The pool keeps arrival order = timestamp order: the flush before
    every pop reads the pods that waited too long and stops at the first
    that did not; a pod put back with an older timestamp turns the early
    stop off."""

    clock = SimulatedClock()
    q = SchedulingQueue(clock, sort_plugin=PrioritySort(), max_in_unschedulable=10.0)
    pods = [parse_pod(pod_dict(f"u{i}")) for i in range(4)]
    for i, p in enumerate(pods):
        q.add(p)
    for i in range(4):
        pi = q.pop()
        clock.advance(3.0)
        q.requeue(pi)
    assert [pi.timestamp for pi in q.unschedulable.values()] == [3.0, 6.0, 9.0, 12.0]
    assert q.unschedulable._ordered
    clock.advance(4.0)                      # now 16: u0 (3) and u1 (6) waited 10 s or more
    assert [pi.key for pi in q.unschedulable.stale(clock.now(), 10.0)] == [
        "default/u0", "default/u1"]
    q.flush()
    assert list(q.unschedulable) == ["default/u2", "default/u3"]
    pi = q.pop()
    pi.timestamp = 0.0                       # an older stamp put back: full scans from now
    q.unschedulable[pi.key] = pi
    assert not q.unschedulable._ordered
    assert [p.key for p in q.unschedulable.stale(clock.now(), 10.0)] == [pi.key]


def test_diagnosis_by_arrays_equals_node_by_node():
    """InterPodAffinity and PodTopologySpread explain their rejected nodes
    by arrays (``explain_many``): the same statuses as ``node_status``."""
    nodes = [node_dict(f"n{i}", labels={"zone": f"z{i % 3}"}) for i in range(9)]
    bound = [pod_dict(f"b{i}", labels={"color": "green", "app": "web"},
                      spec={"nodeName": f"n{i}"}) for i in range(0, 9, 2)]
    spread = {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "web"}}},
        {"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "web"}}}]}
    cluster = build_cluster(nodes + bound, ALL_NODES)
    for spec in ({"affinity": ANTI}, spread):
        pod = cluster.resolve(pod_dict("x", labels={"app": "web"}, spec=spec))
        fw = cluster.framework_for(pod, "numpy")
        state = cluster.state
        result = fw.run_cycle(state, pod)
        ctx = CycleContext(state, pod, fw)
        diag = fw.diagnosis(ctx, result)
        one_by_one = {}
        for j, row in enumerate(result.rows.tolist()):
            st_ = fw.node_status(ctx, result, j)
            if st_ is not None:
                one_by_one[state.node_name(row)] = st_
        assert one_by_one and dict(diag.node_statuses) == one_by_one
        assert np.all(np.asarray(result.reasons) != 0) == (result.selected_row < 0)


def test_a_subscriber_changing_the_cluster_cuts_a_stretch_of_failures():
    """Alike heads failing from memory go as a stretch; a FailedScheduling
    subscriber that adds a node after the third failure changes the cluster
    there, and the rest see it exactly as one cycle after another would."""
    got = []
    for remember in (True, False):
        objs, pods = synthetic.workload("unschedulable", 5, 8)
        sched = Scheduler(build_cluster(objs, ALL_NODES), "numba", 0,
                          remember_failures=remember)
        log = []

        def on_fail(e, sched=sched, log=log):
            log.append((e["pod"], e["message"], sched.queue.scheduling_cycle))
            if len(log) == 3:
                sched.add_node(node_dict("late", labels={"zone": "z0"}))
        sched.subscribe("FailedScheduling", on_fail)
        out, _ = sched.schedule_pending(pods)
        q = sched.queue
        got.append(([b.to_dict() for b in out], log, q.move_request_cycle, q.scheduling_cycle,
                    sorted((pi.key, pi.where, pi.attempts, pi.cycle) for pi in q.pending())))
        if remember:
            assert sched.failure_memory.hits >= 5
    assert got[0] == got[1]
    assert [b["node"] for b in got[0][0]].count("late") == 1


def test_a_bound_pod_no_queueing_hint_cares_about_still_forgets():
    """NodeResourcesFit's queueing hints ignore Pod/Add (a pod added cannot
    free room), yet the message of a pod rejected for cpu changes when a
    pod bound meanwhile also takes a node's memory: the memory forgets on
    every change, so the next failure says it."""
    nodes = [node_dict(f"n{i}", cpu="1", memory="2Gi") for i in range(2)]
    sched = Scheduler(build_cluster(nodes, ALL_NODES), "numba", 0)
    fit = sched._fw(sched.cluster.resolve(pod_dict("x"))).plugins["NodeResourcesFit"]
    assert POD_ADD not in plugin_events(fit)
    big = [pod_dict(f"big-{i}", cpu="2", memory="1Gi") for i in range(2)]
    out, _ = sched.schedule_pending(big[:1])
    assert out[0].message.startswith("0/2 nodes are available: 2 Insufficient cpu.")
    sched.add_pod(pod_dict("hog", cpu="100m", memory="1536Mi", spec={"nodeName": "n0"}))
    out, _ = sched.schedule_pending(big[1:])
    assert out[0].message.startswith(
        "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu.")
    assert sched.failure_memory.hits == 0


def test_a_subscriber_adding_or_deleting_pending_pods_cuts_a_stretch():
    """A FailedScheduling subscriber that adds a pending pod of higher
    priority (it is the next head) or deletes one of the stretch's pods:
    the same outcomes, events and queue as one cycle after another."""
    got = []
    for remember in (True, False):
        objs, pods = synthetic.workload("unschedulable", 4, 8)
        sched = Scheduler(build_cluster(objs, ALL_NODES), "numba", 0,
                          remember_failures=remember)
        log = []

        def on_fail(e, sched=sched, log=log):
            log.append((e["pod"], e["message"]))
            if len(log) == 2:
                sched.add_pod(pod_dict("urgent", cpu="64", priority=50))
            if len(log) == 4:
                sched.delete_pod("default/anti-6")
        sched.subscribe("FailedScheduling", on_fail)
        out, _ = sched.schedule_pending(pods)
        q = sched.queue
        got.append(([b.to_dict() for b in out], log, q.scheduling_cycle,
                     sorted((pi.key, pi.where, pi.attempts, pi.cycle) for pi in q.pending())))
    assert got[0] == got[1]
    assert [p for p, _ in got[0][1]][:4] == ["default/anti-0", "default/anti-1",
                                             "default/urgent", "default/anti-2"]
    assert "default/anti-6" not in [p for p, _ in got[0][1]]


def test_recall_pod_is_key_stamp_and_recall_in_one():
    """The cycle's one call gives what ``key``, the stamp and ``recall``
    give: for a pod never asked, asked again, nominated by its manifest, at
    another start index, under a moved stamp, and in a profile without the
    promise (no key)."""
    cluster = build_cluster([node_dict("n0", cpu="1")])
    fw = Profiles(cluster, "numba", SimpleNamespace()).of(parse_pod(pod_dict("x")))
    state, nominator, memory = cluster.state, Nominator(), FailureMemory()
    big = parse_pod(pod_dict("big", cpu="8"))
    nominated = parse_pod({**pod_dict("nom", cpu="8"), "status": {"nominatedNodeName": "n0"}})

    def both(pod, start, fw=fw):
        key = memory.key(fw, pod)
        stamp = failure_stamp(state, nominator)
        want = (key, stamp if key is not None else None,
                memory.recall(key, stamp, start) if key is not None else None)
        assert memory.recall_pod(fw, pod, state, nominator, start) == want
        return want

    assert both(big, 0)[2] is None                  # nothing remembered yet
    key, stamp, _ = both(big, 0)
    failure = RememberedFailure("no", frozenset({"NodeResourcesFit"}), 0, 0)
    memory.remember(key, stamp, failure)
    assert both(big, 0)[2] is failure and both(big, 1)[2] is None
    assert both(nominated, 0) == (None, None, None)
    state.version += 1                              # the cluster changed
    assert both(big, 0)[2] is None
    assert both(big, 0, fw=SimpleNamespace(failures_repeat=False)) == (None, None, None)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 2), st.booleans()),
                min_size=1, max_size=25))
def test_recall_pod_and_alike_over_mixed_pods_equal_key_then_recall(steps):
    """Pods of several classes (some nominated) asked in any order, with
    failures remembered and the cluster changing between: ``recall_pod``'s
    kept class key answers as ``key`` and ``recall`` do, and
    ``recall_alike`` gives the same failure or None."""
    cluster = build_cluster([node_dict("n0", cpu="1")])
    profiles = Profiles(cluster, "numba", SimpleNamespace())
    state, nominator, memory = cluster.state, Nominator(), FailureMemory()
    sizes = ["8", "16", "32"]
    pods = [parse_pod(pod_dict(f"p{i}", cpu=sizes[i % 3])) for i in range(3)]
    pods += [parse_pod({**pod_dict(f"n{i}", cpu=sizes[i]),
                        "status": {"nominatedNodeName": "n0"}}) for i in range(3)]
    fw = profiles.of(pods[0])
    for which, start, change in steps:
        pod = pods[which]
        key = memory.key(fw, pod)
        stamp = failure_stamp(state, nominator)
        want = (key, stamp if key is not None else None,
                memory.recall(key, stamp, start) if key is not None else None)
        alike = memory.recall_alike(pod, state, nominator, start)
        assert alike is None or alike is want[2]
        assert memory.recall_pod(fw, pod, state, nominator, start) == want
        if key is not None and want[2] is None:
            memory.remember(key, stamp, RememberedFailure(pod.key, frozenset(), 0, start))
        # the pod just asked is of the class kept: answered without its key
        assert memory.recall_alike(pod, state, nominator, start) is (
            memory.recall_pod(fw, pod, state, nominator, start)[2])
        if change:
            state.version += 1
