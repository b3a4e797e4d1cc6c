"""A preemptor's retry (direct mode, ``SchedulingCycle._preempt_and_retry``)
leaves what the slow way leaves: the row check that the victim search
already proved is left out (``trust_victim_search``).  Random clusters of
low-priority pods, preemptors of several shapes (host ports, spread
constraints: a host filter, pods that fit nowhere), some nominated first
through the queue (their pods counted by the later cycles' searches),
with and without a grace period, a subscriber and a subscriber that binds a pod when it
hears of an eviction: the outcomes, every event, the bound pods, what a
state listener hears and the metrics are the same; where the check is
left out it would have answered True; the fast way is taken (counted)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.heard_pods import bound_state, watch
from support.preemption import HOST, drawn_node, preemption_node, preemption_pod
from tensorsched.framework.preemption.evaluator import fits_on_row
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler import schedule_one as S1
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler


@st.composite
def workloads(draw):
    n = draw(st.integers(1, 5))
    objs = []
    for i in range(n):
        objs.append(preemption_node(f"n{i}", draw(st.sampled_from([300, 500, 1000])),
                                    draw(st.sampled_from([3, 6, 20])), f"z{i % 2}"))
        for k in range(draw(st.integers(0, 5))):
            objs.append(preemption_pod(
                f"low-{i}-{k}", f"n{i}", prio=draw(st.integers(0, 3)),
                cpu=draw(st.sampled_from([50, 100, 200])), app=draw(st.sampled_from("ab")),
                start=draw(st.integers(0, 50)),
                port=draw(st.sampled_from([None, None, 8080]))))
    pending = []
    for j in range(draw(st.integers(1, 6))):
        kind = draw(st.integers(0, 5))
        pending.append(preemption_pod(
            f"high-{j}", prio=draw(st.integers(2, 9)),
            cpu=draw(st.sampled_from([100, 250, 400, 2000])), app=draw(st.sampled_from("ab")),
            port=8080 if kind == 1 else None,
            spread=[(HOST, 1, "a")] if kind == 2 else ()))
    return (objs, pending, draw(st.sampled_from([0.0, 0.0, 0.0, 5.0])),
            draw(st.sampled_from([0, 0, 1, 1, 2])), draw(st.integers(0, 2)))


def _play(case, seed: int, fast: bool, proved: list) -> dict:
    objs, pending, grace, listen, queued = case
    sched = Scheduler(build_cluster(objs), "numba", seed, batch=False,
                      termination_grace_seconds=grace)
    sched.cycle.trust_victim_search = fast
    state = sched.cluster.state
    heard, events = watch(sched, listen >= 1)
    if listen == 2:
        # a subscriber that changes the state when it hears of an eviction
        extra = iter(range(1000))

        def bind_one(e):
            node = e["node"]
            if node is not None and node in state.node_rows:
                k = next(extra)
                state.add_pod(sched.cluster.resolve(
                    preemption_pod(f"late-{k}", node, prio=10, cpu=50)), node)
        sched.subscribe("Preempted", bind_one)
    cycle = sched.cycle
    proof, retry = cycle._retry_proved, cycle._preempt_and_retry
    now = []

    def retrying(fw, pod, outcome):
        now[:] = [fw, pod]
        return retry(fw, pod, outcome)

    def checked(outcome, version):
        got = proof(outcome, version)
        if got:                         # the row check would have said the same
            state = cycle.state
            node = outcome.nominated_node
            proved.append(fits_on_row(state, outcome.query, state.node_rows[node],
                                      outcome.host_filters,
                                      CycleContext(state, now[1], now[0])))
        return got
    cycle._retry_proved = checked
    cycle._preempt_and_retry = retrying
    # the first ``queued`` preemptors go through the queue: nominated (and
    # backing off) when they preempt, counted by the later ones' cycles
    out = []
    for p in pending[:queued]:
        sched.queue.add(sched.cluster.resolve(p))
        out.append(sched.schedule_one())
    out += [sched.schedule_one(sched.cluster.resolve(p)) for p in pending[queued:]]
    out = [b for b in out if b is not None]
    metrics = sched.metrics()
    metrics.pop("stage_seconds")
    metrics["plugin_seconds"] = sorted(metrics["plugin_seconds"])
    return {"outcomes": [(b.pod, b.node, b.message, b.nominated_node, b.victims) for b in out],
            "events": events, **bound_state(state), "heard": heard.events,
            "metrics": metrics, "terminating": sorted(k for _d, _s, k in cycle.terminating),
            "nominated": sorted(sched.nominator.node_of.items())}


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(workloads(), st.integers(0, 2**31))
def test_a_trusted_victim_search_equals_the_row_checked(case, seed):
    proved: list = []
    fast = _play(case, seed, True, proved)
    assert fast == _play(case, seed, False, [])
    assert all(proved)


APPS = st.sampled_from("ab")
KEYS = st.sampled_from(["zone", HOST, "rack"])


@st.composite
def host_filter_workloads(draw):
    """Preemptors with spread constraints and pod (anti-)affinity (host
    filters) on nodes in zones and racks, some tainted, among low pods
    of two apps, some with anti-affinity of their own."""
    n = draw(st.integers(1, 6))
    objs = []
    for i in range(n):
        node = drawn_node(draw, f"n{i}", draw(st.sampled_from([300, 500])), 20)
        objs.append(node)
        for k in range(draw(st.integers(0, 5))):
            anti = (HOST, draw(APPS)) if draw(st.integers(0, 6)) == 0 else None
            objs.append(preemption_pod(f"low-{i}-{k}", f"n{i}", prio=draw(st.integers(0, 2)),
                                       cpu=draw(st.sampled_from([50, 100, 200])),
                                       app=draw(APPS), start=draw(st.integers(0, 50)),
                                       anti=anti))
    pending = []
    for j in range(draw(st.integers(1, 5))):
        spread = [(key, draw(st.integers(1, 2)), draw(APPS))
                  for key in draw(st.lists(KEYS, max_size=2, unique=True))]
        kind = draw(st.sampled_from(["none", "anti", "aff"]))
        pending.append(preemption_pod(
            f"high-{j}", prio=draw(st.integers(3, 9)),
            cpu=draw(st.sampled_from([100, 250, 400])), app=draw(APPS), spread=spread,
            anti=(draw(KEYS), draw(APPS)) if kind == "anti" else None,
            aff=(draw(KEYS), draw(APPS)) if kind == "aff" else None))
    return objs, pending, 0.0, draw(st.sampled_from([0, 1])), draw(st.sampled_from([0, 0, 1]))


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(host_filter_workloads(), st.integers(0, 2**31))
def test_a_trusted_search_with_host_filters_equals_the_row_checked(case, seed):
    """Where no pod is nominated the search ran the host filters on the
    state the retry sees: where it proved the fit, the row check agrees."""
    proved: list = []
    fast = _play(case, seed, True, proved)
    assert fast == _play(case, seed, False, [])
    assert all(proved)


@pytest.fixture
def fits_calls(monkeypatch) -> list:
    """A list that gets one entry per ``fits_on_row`` call the retry makes."""
    calls: list = []
    fits = S1.fits_on_row

    def counted(*a, **k):
        calls.append(1)
        return fits(*a, **k)
    monkeypatch.setattr(S1, "fits_on_row", counted)
    return calls


def test_the_row_check_is_left_out_where_the_search_proved_it(fits_calls):
    """Where no pod is nominated the retry binds on the search's word, a
    spread constraint (a host filter) or not; with a grace period or a
    subscriber that binds a pod on the node meanwhile, the row is
    checked."""
    calls = fits_calls

    def run(spread=(), grace=0.0, meddle=False):
        objs = [preemption_node("n0", 300, 20, "z0")]
        objs += [preemption_pod(f"low-{k}", "n0", prio=0, cpu=100) for k in range(3)]
        sched = Scheduler(build_cluster(objs), "numba", 0, batch=False,
                          termination_grace_seconds=grace)
        if meddle:
            sched.subscribe("Preempted", lambda e: sched.cluster.state.add_pod(
                sched.cluster.resolve(preemption_pod("late", "n0", prio=10, cpu=1)), "n0")
                if "default/late" not in sched.cluster.state.pods else None)
        calls.clear()
        b = sched.schedule_one(sched.cluster.resolve(
            preemption_pod("high", prio=5, cpu=150, spread=spread)))
        return b, len(calls)

    b, n = run()
    assert (b.node, b.victims, n) == ("n0", ["default/low-1", "default/low-2"], 0)
    b, n = run(spread=[(HOST, 1, "a")])
    assert (b.node, n) == ("n0", 0)
    b, n = run(grace=5.0)
    assert (b.node, n) == (None, 1)                 # the victims are still terminating
    b, n = run(meddle=True)
    assert (b.node, n) == ("n0", 1)


def test_a_nominated_pod_counted_by_the_search_keeps_the_proof(fits_calls):
    """A preemptor nominated through the queue (its victims gone, itself
    backing off) is counted on its node by a later preemptor's search,
    which then preempts on the other node and binds there without the row
    check, as the row check would have bound it."""
    calls = fits_calls

    def run(fast, spread=()):
        objs = [preemption_node(f"n{i}", 300, 20, "z0") for i in range(2)]
        objs += [preemption_pod(f"low-{i}-{k}", f"n{i}", prio=0, cpu=100, start=k)
                 for i in range(2) for k in range(3)]
        sched = Scheduler(build_cluster(objs), "numba", 0, batch=False)
        sched.cycle.trust_victim_search = fast
        sched.queue.add(sched.cluster.resolve(preemption_pod("first", prio=9, cpu=250)))
        first = sched.schedule_one()
        calls.clear()
        b = sched.schedule_one(sched.cluster.resolve(
            preemption_pod("second", prio=5, cpu=250, spread=spread)))
        return ((first.pod, first.node, first.nominated_node, first.victims),
                (b.pod, b.node, b.nominated_node, b.victims),
                dict(sched.nominator.node_of), bound_state(sched.cluster.state)), len(calls)

    fast, n_fast = run(True)
    slow, n_slow = run(False)
    assert fast == slow and (n_fast, n_slow) == (0, 1)
    first, second, nominated, _ = fast
    assert first[1] is None and nominated == {"default/first": first[2]}
    assert second[1] == second[2] != first[2]
    # a host filter with a pod nominated: the row is checked
    fast, n_fast = run(True, spread=[("zone", 5, "a")])
    slow, n_slow = run(False, spread=[("zone", 5, "a")])
    assert fast == slow and (n_fast, n_slow) == (1, 1) and fast[1][1] is not None
