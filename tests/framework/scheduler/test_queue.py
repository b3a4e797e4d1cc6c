"""The scheduling queue: activeQ order, backoff timings, unschedulable pods
moved by the events their plugins declare, the 5-minute flush, the move
request during a cycle, SchedulingGates -- checked after every step."""

import os

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.checks import check

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.plugins.priority_sort import PrioritySort
from tensorsched.framework.runtime.clock import SimulatedClock
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.queue import (
    ACTIVE,
    BACKOFF,
    NODE_ADD,
    POD_DELETE,
    UNSCHEDULABLE,
    SchedulingQueue,
)
from tensorsched.framework.scheduler.scheduler import Scheduler


def _q(**kw):
    kw.setdefault("sort_plugin", PrioritySort())
    return SchedulingQueue(SimulatedClock(), **kw)


def _p(name, prio=0, created=0, **kw):
    return parse_pod(pod_dict(name, priority=prio, created=created, **kw))


def test_active_order_priority_creation_then_fifo():
    q = _q()
    for name, prio, created in [("a", 0, 5), ("b", 10, 9), ("c", 0, 1), ("d", 0, 5),
                                ("e", 10, 9)]:
        q.add(_p(name, prio, created))
    order = []
    while (pi := q.pop()) is not None:
        order.append(pi.pod.name)
    assert order == ["b", "e", "c", "a", "d"]          # ties: first in, first out


@pytest.mark.parametrize("initial,maximum,want", [
    (1, 10, [1, 2, 4, 8, 10, 10]), (2, 5, [2, 4, 5, 5, 5, 5])])
def test_backoff_durations(initial, maximum, want):
    q = _q(initial_backoff=initial, max_backoff=maximum)
    pi = q.add(_p("a"))
    got = []
    for _ in want:
        pi.attempts += 1
        got.append(q.backoff_duration(pi))
    assert got == want


def test_backoff_from_config():
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "podInitialBackoffSeconds": 3, "podMaxBackoffSeconds": 7}
    sched = Scheduler(build_cluster([node_dict("n0")], cfg))
    assert (sched.queue.initial_backoff, sched.queue.max_backoff) == (3.0, 7.0)


def test_error_goes_to_backoff_then_active_on_time():
    q = _q()
    q.add(_p("a"))
    pi = q.pop()
    q.requeue(pi, error=True)
    assert pi.where == BACKOFF and q.next_backoff_expiry() == 1.0
    assert q.pop() is None
    q.clock.advance(0.999)
    assert q.pop() is None
    q.clock.advance(0.001)
    assert q.pop().pod.name == "a"
    q.requeue(pi, error=True)                      # second failure: 2 s
    q.clock.advance(1.5)
    assert q.pop() is None
    q.clock.advance(0.5)
    assert q.pop() is pi


def test_unschedulable_moved_only_by_interesting_events():
    class P:
        def __init__(self, name, events):
            self.name, self.events = name, frozenset(events)
    plugins = {"Fit": P("Fit", {POD_DELETE, NODE_ADD}), "Taint": P("Taint", {"Node/Update"})}
    q = _q(plugin_of=plugins.get)
    q.add(_p("fit"))
    q.add(_p("taint"))
    a, b = q.pop(), q.pop()
    q.requeue(a, {"Fit"})
    q.requeue(b, {"Taint"})
    assert (a.where, b.where) == (UNSCHEDULABLE, UNSCHEDULABLE)
    assert q.move_all(POD_DELETE) == 1
    assert a.where == BACKOFF and b.where == UNSCHEDULABLE       # 1 s backoff not over
    assert q.move_all("Node/Update") == 1 and b.where == BACKOFF
    q.clock.advance(1)
    assert {q.pop().pod.name, q.pop().pod.name} == {"fit", "taint"}


def test_move_request_during_cycle_goes_to_backoff():
    q = _q()
    q.add(_p("a"))
    pi = q.pop()
    q.move_all(NODE_ADD)                   # arrives while "a" is being scheduled
    q.requeue(pi, {"Whatever"})
    assert pi.where == BACKOFF


def test_flush_after_max_in_unschedulable():
    q = _q()
    q.add(_p("a"))
    pi = q.pop()
    q.requeue(pi, {"X"})
    q.clock.advance(299.9)
    assert q.pop() is None and pi.where == UNSCHEDULABLE
    q.clock.advance(0.1)
    assert q.pop() is pi


def _sched(nodes, **kw):
    return Scheduler(build_cluster(nodes), "numpy", 0, **kw)


def test_scheduler_requeue_and_event_moves():
    """A pod rejected by taints is not moved by a pod deletion; a node update
    that removes the taint moves it and it binds once its backoff ends."""
    taint = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    sched = _sched([node_dict("n0", cpu="2", taints=taint)])
    sched.add_pod(pod_dict("bound", cpu="100m", spec={"nodeName": "n0"}))
    sched.add_pod(pod_dict("p", cpu="500m"))
    keys = ["default/bound", "default/p"]
    b = sched.schedule_one()
    assert b.node is None and "untolerated taint" in b.message
    pi = sched.queue.infos["default/p"]
    assert pi.where == UNSCHEDULABLE and pi.unschedulable_plugins == {"TaintToleration"}
    check(sched, keys)
    sched.delete_pod("default/bound")
    assert pi.where == UNSCHEDULABLE                 # Pod/Delete: TaintToleration doesn't care
    check(sched, keys, deleted={"default/bound"})
    sched.update_node(node_dict("n0", cpu="2"))
    assert pi.where == BACKOFF
    assert sched.schedule_one() is None
    sched.advance(1.0)
    b = sched.schedule_one()
    assert b.node == "n0"
    check(sched, keys, deleted={"default/bound"})
    assert sched.metrics()["e2e_latency_seconds"]["max"] == 1.0


def test_scheduler_node_add_moves_insufficient_pod():
    sched = _sched([node_dict("n0", cpu="1")])
    sched.add_pod(pod_dict("big", cpu="2"))
    assert sched.schedule_one().node is None
    sched.advance(5)                                   # backoff over meanwhile
    sched.add_node(node_dict("n1", cpu="4"))
    assert sched.queue.infos["default/big"].where == ACTIVE
    assert sched.schedule_one().node == "n1"
    check(sched, ["default/big"])


def test_scheduling_gates_hold_until_update():
    sched = _sched([node_dict("n0")])
    gated = pod_dict("g", spec={"schedulingGates": [{"name": "wait"}]})
    sched.add_pod(gated)
    pi = sched.queue.infos["default/g"]
    assert pi.gated and pi.where == UNSCHEDULABLE
    assert sched.schedule_one() is None
    sched.add_node(node_dict("n1"))
    sched.advance(600)
    assert sched.run_until_idle() == [] and pi.where == UNSCHEDULABLE   # events, flush: still gated
    sched.update_pod(pod_dict("g"))
    assert pi.where == ACTIVE and not pi.gated
    assert sched.schedule_one().node in ("n0", "n1")
    check(sched, ["default/g"])


@pytest.mark.parametrize("gate_free", [None, lambda pod: True, lambda pod: pod.name != "m1"])
def test_add_many_interleaves_with_the_heap_and_refuses_duplicates_whole(gate_free):
    """Pods added together (the sorted lane) and one by one (the heap) pop
    in activeQ order; a batch with a pod already queued, or twice in it, is
    refused before any of it is added.  The same with every pod known to
    pass PreEnqueue (the bulk path) and with one that must be asked."""
    q = _q(gate_free=gate_free)
    q.add(_p("h1", 5, 3))
    q.add_many([_p(f"m{i}", prio, created) for i, (prio, created) in
                enumerate([(0, 1), (5, 2), (0, 0), (9, 7)])])
    q.add(_p("h2", 5, 2))
    q.add_many([_p("n0", 5, 1)])
    before = (q.changes(), q.counts())
    with pytest.raises(KeyError, match="h1"):
        q.add_many([_p("x", 0, 0), _p("h1", 0, 0)])
    with pytest.raises(KeyError, match="y"):
        q.add_many([_p("y", 0, 0), _p("y", 0, 0)])
    assert "default/x" not in q and "default/y" not in q
    assert (q.changes(), q.counts()) == before
    order = []
    while (pi := q.pop()) is not None:
        order.append(pi.pod.name)
    # priority, then creation, then arrival in the queue
    assert order == ["m3", "n0", "m1", "h2", "h1", "m2", "m0"]


@pytest.mark.parametrize("bulk", [False, True])
def test_pop_run_takes_alike_heads_across_lane_and_heap_in_order(bulk):
    """pop_run hands out the heads one by one as pop would (lane blocks and
    heap interleaved in activeQ order) while the run key holds; unpop puts
    them back exactly: the next pops see the same order, attempts and
    cycles; done_run removes the placed ones."""
    def fresh():
        q = _q(gate_free=(lambda pod: True) if bulk else None)
        q.add_many([_p(f"a{i}", 0, c) for i, c in enumerate([3, 1, 2, 5])])
        q.add(_p("h", 0, 4))
        q.add_many([_p(f"b{i}", 1, c) for i, c in enumerate([9, 8])])
        return q

    q = fresh()
    want = []
    while (pi := q.pop()) is not None:
        want.append((pi.pod.name, pi.attempts, pi.cycle))
    assert [w[0] for w in want] == ["b1", "b0", "a1", "a2", "a0", "h", "a3"]
    for cut in range(4):
        q = fresh()
        run = q.pop_run(lambda pod: "k", 4)       # a run ends with its lane block
        assert [p.name for p in run.pods] == ["b1", "b0"]
        q.done_run(run, 2)
        run = q.pop_run(lambda pod: "k", 4)       # ... or below the heap's head (h)
        assert [p.name for p in run.pods] == ["a1", "a2", "a0"]
        infos = [q.info(run, i) for i in range(cut)]
        assert [(pi.pod.name, pi.attempts, pi.cycle) for pi in infos] == want[2:2 + cut]
        q.unpop(run, cut)
        got = want[:2] + [(pi.pod.name, pi.attempts, pi.cycle) for pi in infos]
        while (pi := q.pop()) is not None:
            got.append((pi.pod.name, pi.attempts, pi.cycle))
        assert got == want
    q = fresh()
    run = q.pop_run(lambda pod: pod.priority, 10)        # stops where the key changes
    assert [p.name for p in run.pods] == ["b1", "b0"]
    q.done_run(run, 2)
    assert "default/b1" not in q and len(q) == 5
    assert q.counts()["active"] == 5


@pytest.mark.parametrize("touch", ["update", "delete", "read", "activate"])
def test_lane_pods_read_updated_or_deleted_keep_their_place(touch):
    """A pod still in a lane block gets its info when something looks at it
    alone; reading it changes nothing, updating a priority moves it, deleting
    it drops it; runs stop at it and pops go on in activeQ order."""
    q = _q(gate_free=lambda pod: True)
    q.add_many([_p(f"a{i}", 0, i) for i in range(6)])
    if touch == "update":
        q.update(_p("a3", 5, 3))
    elif touch == "delete":
        q.delete("default/a3")
    elif touch == "read":
        assert q.infos["default/a3"].where == ACTIVE and q.infos["default/a1"].attempts == 0
    else:
        q.activate(["default/a3"])
    run = q.pop_run(lambda pod: "k", 10)
    names = [p.name for p in run.pods]
    q.done_run(run, len(run))
    while (pi := q.pop()) is not None:
        names.append(pi.pod.name)
        q.done(pi.key)
    expect = {"update": ["a3", "a0", "a1", "a2", "a4", "a5"],
              "delete": ["a0", "a1", "a2", "a4", "a5"]}.get(touch, [f"a{i}" for i in range(6)])
    assert names == expect and len(q) == 0


_OPS = st.lists(st.one_of(
    st.tuples(st.just("add_many"), st.lists(st.tuples(st.integers(0, 2), st.integers(0, 4)),
                                             min_size=1, max_size=6)),
    st.tuples(st.just("pop"), st.booleans()),
    st.tuples(st.just("run"), st.integers(1, 6), st.integers(0, 6), st.booleans()),
    st.tuples(st.just("update"), st.integers(0, 30), st.integers(0, 2)),
    st.tuples(st.just("delete"), st.integers(0, 30)),
    st.tuples(st.just("activate"), st.integers(0, 30)),
    st.tuples(st.just("move"))), max_size=25)


# QUEUE_EXAMPLES=N (with HYPOTHESIS_RANDOM=1) explores more
@settings(max_examples=int(os.environ.get("QUEUE_EXAMPLES", "1000")), deadline=None)
@given(_OPS)
@example([("add_many", [(2, 0), (2, 1)]), ("add_many", [(2, 0), (2, 1)]), ("run", 3, 3, False)])
def test_lane_blocks_and_runs_equal_one_by_one_adds_and_pops(ops):
    """A queue fed by add_many (lane blocks, pods without infos) and read by
    pop_run / info / unpop / done_run hands out the same pods, attempts and
    cycles as one fed pod by pod (the heap) and read by pop, through
    updates, deletes, requeues, moves and activations."""
    lane, heap = _q(gate_free=lambda pod: True), _q()
    made = 0
    names: list[str] = []

    def seen(pi):
        return (pi.pod.name, pi.attempts, pi.cycle, pi.where)

    def finish(a, b, requeue):
        for q, pi in ((lane, a), (heap, b)):
            if requeue:
                q.requeue(pi, frozenset({"NodeResourcesFit"}))
            else:
                q.done(pi.key)

    for op in ops:
        kind = op[0]
        if kind == "add_many":
            pods = []
            for prio, created in op[1]:
                pods.append(_p(f"p{made}", prio, created))
                names.append(f"p{made}")
                made += 1
            lane.add_many(pods)
            for pod in pods:
                heap.add(pod)
        elif kind == "pop":
            a, b = lane.pop(), heap.pop()
            assert (a and seen(a)) == (b and seen(b))
            if a is not None:
                finish(a, b, op[1])
        elif kind == "run":
            run = lane.pop_run(lambda pod: pod.priority, op[1])
            if run is None:
                assert heap.pop() is None
                continue
            cut = min(op[2], len(run))
            counts = lane.counts()              # mid-run: every pod counted once
            assert sum(counts.values()) == len(lane) and counts["in-flight"] == len(run)
            got = [lane.info(run, i) for i in range(max(cut, 1))]
            lane.unpop(run, max(cut, 1))
            want = [heap.pop() for _ in range(max(cut, 1))]
            assert [seen(p) for p in got] == [seen(p) for p in want]
            for a, b in zip(got, want):
                finish(a, b, op[3])
        elif names and kind != "move":
            key = f"default/{names[op[1] % len(names)]}"
            if kind == "update":
                pod = _p(key.split("/")[1], op[2], 0)
                for q in (lane, heap):
                    q.update(pod)
            elif kind == "delete":
                for q in (lane, heap):
                    q.delete(key)
            elif kind == "activate":
                for q in (lane, heap):
                    q.activate([key])
        if kind == "move":
            assert lane.move_all(NODE_ADD) == heap.move_all(NODE_ADD)
        assert len(lane) == len(heap) and lane.counts() == heap.counts()
    while True:
        a, b = lane.pop(), heap.pop()
        assert (a and seen(a)) == (b and seen(b))
        if a is None:
            break
        lane.done(a.key)
        heap.done(b.key)


@pytest.mark.parametrize("others, placed", [(0, 6), (0, 4), (1, 6), (1, 3)])
def test_done_run_leaves_the_queue_as_done_of_each_pod(others, placed):
    """``done_run`` of a lane run's placed pods (the whole queue, when the
    run took every pod, is emptied at once) leaves what ``done`` of each
    leaves: the same keys, counts and next heads."""
    def fresh():
        q = _q(gate_free=lambda pod: True)
        q.add_many([_p(f"r{i}", 0, i) for i in range(6)])
        for j in range(others):
            q.add(_p(f"later{j}", 0, 100 + j))
        return q

    bulk, one = fresh(), fresh()
    run = bulk.pop_run(lambda pod: "k", 6)
    assert len(run) == 6 and run.block is not None
    bulk.done_run(run, placed)
    bulk.unpop(run, placed)
    run1 = one.pop_run(lambda pod: "k", 6)
    for key in run1.keys[:placed]:
        one.done(key)
    one.unpop(run1, placed)
    assert list(bulk.infos) == list(one.infos) and len(bulk) == len(one)
    assert bulk.counts() == one.counts()
    heads = []
    for q in (bulk, one):
        got = []
        while (pi := q.pop()) is not None:
            got.append((pi.key, pi.attempts, pi.cycle))
        heads.append(got)
    assert heads[0] == heads[1]


def test_pop_run_uses_the_run_key_given_at_construction():
    asked = []

    def run_key(pod):
        asked.append(pod.name)
        return pod.labels.get("k")

    q = _q(run_key=run_key)
    q.add_many([_p(f"p{i}", created=i, labels={"k": "a" if i < 3 else "b"}) for i in range(5)])
    run = q.pop_run(None, 10)
    assert [k.split("/")[1] for k in run.keys] == ["p0", "p1", "p2"] and asked
    assert q.pop_run(None, 10).keys == ["default/p3", "default/p4"]
    assert _q().run_key(_p("x")) is None          # none given: every pod on its own


_FLUSH_OPS = st.lists(st.one_of(
    st.tuples(st.just("add"), st.integers(0, 2)),
    st.tuples(st.just("pop")),
    st.tuples(st.just("fail"), st.sampled_from(["X", "Y", "error"])),
    st.tuples(st.just("advance"), st.sampled_from([0.0, 0.5, 1.0, 2.5, 4.0, 5.0, 7.25])),
    st.tuples(st.just("move"))), max_size=40)


@settings(max_examples=150, deadline=None)
@given(_FLUSH_OPS)
@example([("add", 0), ("add", 0), ("pop",), ("fail", "X"), ("advance", 1.0), ("pop",),
          ("fail", "X"), ("pop",), ("advance", 4.0), ("pop",), ("advance", 1.0), ("pop",)])
@example([("add", 0), ("pop",), ("fail", "error"), ("advance", 0.5), ("pop",),
          ("advance", 0.5), ("pop",), ("fail", "error"), ("advance", 1.0), ("pop",),
          ("advance", 1.0), ("pop",)])
def test_flush_skipped_while_nothing_is_due_equals_a_full_flush(ops):
    """The flush before every pop skips backoffQ while its first expiry is
    ahead and the unschedulable pods while the pool's last ``stale`` answer
    holds (``calm_since``): the same pops, places, attempts and pool order
    as a queue that asks ``due`` and ``stale`` every time."""
    fast, full = (_q(max_in_unschedulable=5.0, initial_backoff=1.0, max_backoff=4.0)
                  for _ in range(2))
    made, flying = 0, []

    def forget(q):             # the answers the skip relies on, unknown again
        q.unschedulable.calm_since = float("-inf")
        q.backoff.earliest = float("-inf")

    def seen(q):
        return ([(k, pi.where, pi.attempts, pi.timestamp) for k, pi in q.infos.items()],
                list(q.unschedulable), q.counts())

    for op in ops:
        if op[0] == "add":
            pod = _p(f"p{made}", prio=op[1])
            made += 1
            fast.add(pod)
            full.add(pod)
        elif op[0] == "pop":
            forget(full)
            a, b = fast.pop(), full.pop()
            assert (a and a.key) == (b and b.key)
            if a is not None:
                flying.append((a, b))
        elif op[0] == "fail" and flying:
            a, b = flying.pop(0)
            error = op[1] == "error"
            fast.requeue(a, set() if error else {op[1]}, error=error)
            full.requeue(b, set() if error else {op[1]}, error=error)
        elif op[0] == "advance":
            fast.clock.advance(op[1])
            full.clock.advance(op[1])
        elif op[0] == "move":
            assert fast.move_all(NODE_ADD) == full.move_all(NODE_ADD)
        assert seen(fast) == seen(full)
    forget(full)
    fast.flush()
    full.flush()
    assert seen(fast) == seen(full)
