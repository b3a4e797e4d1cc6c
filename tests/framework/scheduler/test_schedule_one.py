"""SchedulingCycle's contract: a placed pod advances the attempt counter and
the rotating start index and goes to binding; a pod that fits nowhere goes
back to the queue with its rejecting plugins and its failure is remembered
for alike pods; nominated pods are counted only inside a cycle; victims of a
preemption with a grace period leave the state when it ends."""

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.queue import UNSCHEDULABLE
from tensorsched.framework.scheduler.scheduler import Scheduler

PREEMPT_CFG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler", "plugins": {
        "multiPoint": {"disabled": [{"name": "*"}]},
        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
        "bind": {"enabled": [{"name": "DefaultBinder"}]},
        "preFilter": {"enabled": [{"name": "NodeResourcesFit"}]},
        "filter": {"enabled": [{"name": "NodeResourcesFit"}]},
        "postFilter": {"enabled": [{"name": "DefaultPreemption"}]}}}],
}


def _cycle(nodes=2, **kw):
    sched = Scheduler(build_cluster([node_dict(f"n{i}", cpu="1") for i in range(nodes)]), **kw)
    return sched.cycle


def test_a_placed_pod_advances_the_counters_and_binds():
    cycle = _cycle()
    b = cycle.attempt(parse_pod(pod_dict("p", cpu="500m")), None)
    assert b.node in ("n0", "n1") and "default/p" in cycle.state.pods
    counters = cycle.counters
    assert counters.attempts == 1 and counters.next_start_index == 0     # 2 of 2 nodes processed
    assert cycle.metrics.results == {"scheduled": 1}


def test_a_failure_is_requeued_and_remembered_for_alike_pods():
    cycle = _cycle()
    queue = cycle.queue
    for name in ("big-a", "big-b"):
        queue.add(parse_pod(pod_dict(name, cpu="2", created=int(name[-1] == "b"))))
    first = queue.pop()
    b = cycle.attempt(first.pod, first)
    assert b.node is None and "Insufficient cpu" in b.message
    assert first.where == UNSCHEDULABLE
    assert first.unschedulable_plugins == {"NodeResourcesFit"}
    assert len(cycle.failure_memory) == 1 and cycle.failure_memory.hits == 0
    second = queue.pop()
    again = cycle.attempt(second.pod, second)
    assert again.message == b.message and cycle.failure_memory.hits == 1
    assert cycle.counters.attempts == 2 and second.where == UNSCHEDULABLE


def test_nominated_pods_are_counted_inside_the_cycle_only():
    cycle = _cycle()
    nominee = parse_pod(pod_dict("nominee", cpu="1", priority=10))
    cycle.nominator.add(nominee, "n0")
    low = parse_pod(pod_dict("low", cpu="1"))
    with cycle.nominated_counted(low) as added:
        assert added == ["default/nominee"] == list(cycle.cycle_nominated)
        assert cycle.state.pods["default/nominee"].node_row == cycle.state.node_rows["n0"]
    assert cycle.cycle_nominated == () and "default/nominee" not in cycle.state.pods
    b = cycle.attempt(low, None)               # n0 is held for the nominee
    assert b.node == "n1" and "default/nominee" not in cycle.state.pods


def test_victims_terminate_after_their_grace_period():
    sched = Scheduler(build_cluster([node_dict("n0", cpu="1"),
                                     pod_dict("victim", cpu="1", spec={"nodeName": "n0"})], PREEMPT_CFG),
                      termination_grace_seconds=30)
    cycle = sched.cycle
    sched.add_pod(pod_dict("boss", cpu="1", priority=100))
    b = sched.schedule_one()
    assert b.nominated_node == "n0" and b.victims == ["default/victim"]
    assert cycle.terminating == [(30.0, 1, "default/victim")]
    assert cycle.state.pods.record("default/victim").deleting
    assert cycle.metrics.preemptions == 1 and len(cycle.metrics.evictions) == 1
    cycle.terminate_due(29.0)
    assert "default/victim" in cycle.state.pods
    cycle.terminate_due(30.0)
    assert not cycle.terminating and "default/victim" not in cycle.state.pods


# ------------------------------------------- nominated rows kept in the table
# The victim table keeps the rows whose nominated pods one cycle took out and
# the next put back as they were (``PodTable.keep_rows``): after every sync
# it holds what a table reading every row afresh holds, and the outcomes,
# nominations, victims and messages are those of re-reading the rows.

import dataclasses  # noqa: E402

import numpy as np  # noqa: E402
from hypothesis import given, settings, strategies as hs  # noqa: E402

from tensorsched.bench.preemption import build as build_preemption  # noqa: E402
from tensorsched.framework.preemption.evaluator import PodTable  # noqa: E402

_TABLE_ARRAYS = ("count", "prio", "start", "req", "ports", "pdb", "shp", "dying", "order",
                 "alike_from")


def _table_view(table):
    n = table.state.n_rows
    out = {a: getattr(table, a)[:n].tolist() for a in _TABLE_ARRAYS}
    recs = table.class_records
    out["cls"] = [[None if c < 0 else (recs[c].namespace, sorted((recs[c].labels or {}).items()))
                   for c in row] for row in table.cls[:n].tolist()]
    out["keys"] = [list(k) for k in table.keys[:n]]
    return out


def _assert_as_read_afresh(cluster, table):
    fresh = PodTable(cluster.state, table.pdbs)
    fresh.sync()
    view, want = _table_view(table), _table_view(fresh)
    c = min(table.cls.shape[1], fresh.cls.shape[1])
    for a in (*_TABLE_ARRAYS, "cls"):       # slot widths may differ: compare the used part
        if a not in ("count", "alike_from"):
            view[a] = [r[:c] for r in view[a]]
            want[a] = [r[:c] for r in want[a]]
    assert view == want


def _queue_run(variant, nodes, prios, grace, keep, backend):
    cluster, pending = build_preemption(nodes, len(prios), 100, variant)
    pending = [dataclasses.replace(p, priority=pr) for p, pr in zip(pending, prios)]
    sched = Scheduler(cluster, backend, 0, termination_grace_seconds=grace)
    sched.cycle.keep_nominated_rows = keep
    table = cluster.pod_table()
    sync = table.sync
    checked = []

    def checked_sync():
        got = sync()
        _assert_as_read_afresh(cluster, table)
        checked.append(1)
        return got

    table.sync = checked_sync
    outcomes, preemptions = sched.schedule_pending(pending)
    state = cluster.state
    final = sorted((k, row) for row, on in enumerate(state.pods_on_node[: state.n_rows])
                   for k in on)
    return ([(b.pod, b.node, b.message, b.nominated_node, b.victims) for b in outcomes],
            preemptions, final, state.requested[: state.n_rows].tolist(),
            sched.counters.attempts, dict(sched.recorder.results)), len(checked)


@settings(max_examples=12, deadline=None)
@given(variant=hs.sampled_from(["", "spread", "antiaffinity"]),
       nodes=hs.integers(2, 7),
       prios=hs.lists(hs.sampled_from([500, 1000, 2000]), min_size=1, max_size=9),
       grace=hs.sampled_from([0.0, 30.0]),
       backend=hs.sampled_from(["numpy", "numba"]))
def test_rows_kept_for_restored_nominated_pods_are_as_read_afresh(variant, nodes, prios, grace,
                                                                  backend):
    kept, n_kept = _queue_run(variant, nodes, prios, grace, True, backend)
    fresh, _ = _queue_run(variant, nodes, prios, grace, False, backend)
    assert kept == fresh and n_kept > 0


def test_a_kept_row_is_read_again_when_it_changed_between_cycles():
    cluster, pending = build_preemption(3, 2, 100, "")
    sched = Scheduler(cluster, "numpy", 0)
    cycle, table, state = sched.cycle, cluster.pod_table(), cluster.state
    sched.nominator.add(pending[0], "node-0")
    row = state.node_rows["node-0"]
    keys = cycle.add_nominated(pending[1])
    table.sync()
    cycle.remove_nominated(keys)
    stamp = int(table.row_stamp[row])
    keys = cycle.add_nominated(pending[1])       # put back as it was: kept
    table.sync()
    assert int(table.row_stamp[row]) == stamp
    _assert_as_read_afresh(cluster, table)
    cycle.remove_nominated(keys)
    state.remove_pod("default/low-0-0")          # the row changes between cycles
    keys = cycle.add_nominated(pending[1])
    table.sync()
    assert int(table.row_stamp[row]) > stamp
    _assert_as_read_afresh(cluster, table)
    cycle.remove_nominated(keys)


# ------------------------------------------------------ evictions at once
# A preemption with several victims removes them at once and moves the
# unschedulable pods once (``SchedulingCycle._evict``): the queue (where each
# pod is, its attempts, timestamp and backoff), the events, the metrics and
# every later outcome are those of one victim at a time with a move each
# (``batch_evictions`` False).

def _evictions_run(batch: bool, grace: float, direct: bool):
    objs = [node_dict("n0", cpu="1"), node_dict("n1", cpu="1")]
    objs += [pod_dict(f"v{k}", cpu="300m", priority=5 + k, spec={"nodeName": "n0"},
                      created=k) for k in range(3)]
    objs += [pod_dict("keep", cpu="1", priority=1000, spec={"nodeName": "n1"})]
    sched = Scheduler(build_cluster(objs, PREEMPT_CFG), termination_grace_seconds=grace)
    sched.cycle.batch_evictions = batch
    events = []
    sched.subscribe("*", lambda e: events.append(dict(e)))
    queue = sched.queue
    # waiting pods that may not preempt (priority below the victims'):
    # rejected by NodeResourcesFit, which an assigned-pod delete may help,
    # tried at different times
    for j, cpu in enumerate(("2", "3", "800m")):
        sched.add_pod(pod_dict(f"wait{j}", cpu=cpu, priority=j, created=j))
        sched.clock.advance(0.25)
    for _ in range(3):
        sched.schedule_one()
    assert sorted(queue.unschedulable) == ["default/wait0", "default/wait1", "default/wait2"]
    boss = pod_dict("boss", cpu="900m", priority=100)
    if direct:
        b = sched.schedule_one(parse_pod(boss))
    else:
        sched.add_pod(boss)
        b = sched.schedule_one()
    assert b.victims == ["default/v2", "default/v1", "default/v0"]

    def queue_view():
        return (queue.move_request_cycle, queue.scheduling_cycle,
                sorted((k, pi.where, pi.attempts, pi.timestamp, pi.cycle,
                        queue.backoff_expiry(pi), sorted(pi.unschedulable_plugins))
                       for k, pi in queue.infos.items()))
    after_evict = (queue_view(), sorted(sched.state.pods),
                   sched.state.requested[:2].tolist(), sched.state.version)
    if grace:
        sched.clock.advance(grace)
        sched.cycle.terminate_due(sched.clock.now())
        after_evict += (queue_view(), sorted(sched.state.pods), sched.state.version)
    outcomes = sched.run_until_idle()
    return (after_evict, [(o.pod, o.node, o.message, o.nominated_node, o.victims)
                          for o in outcomes],
            events, list(sched.evictions), sched.preemptions, dict(sched.results),
            sorted(sched.state.pods), queue_view())


def test_victims_evicted_at_once_move_the_queue_as_one_at_a_time():
    for grace in (0.0, 30.0):
        for direct in (False, True):
            at_once = _evictions_run(True, grace, direct)
            one = _evictions_run(False, grace, direct)
            assert at_once == one, (grace, direct)
            moved = at_once[0][0] if not grace else at_once[0][4]
            # the victims' deletion moved the waiting pods out of the pool
            assert not [k for k, where, *_ in moved[2]
                        if k.startswith("default/wait") and where == UNSCHEDULABLE]
            assert len(at_once[3]) == 3 and [e["pod"] for e in at_once[2]
                                              if e["event"] == "Preempted"] == \
                ["default/v2", "default/v1", "default/v0"]


def test_evicting_victims_moves_the_queue_once():
    calls = []
    objs = [node_dict("n0", cpu="1")] + [pod_dict(f"v{k}", cpu="300m", spec={"nodeName": "n0"})
                                         for k in range(3)]
    sched = Scheduler(build_cluster(objs, PREEMPT_CFG))
    state = sched.state
    one, move = state.remove_pod, sched.queue.move_all
    state.remove_pod = lambda key: calls.append(("remove_pod", key)) or one(key)
    sched.queue.move_all = lambda *a, **k: calls.append(("move_all",) + a) or move(*a, **k)
    b = sched.schedule_one(parse_pod(pod_dict("boss", cpu="900m", priority=100)))
    assert b.node == "n0"
    assert calls == [("remove_pod", "default/v0"), ("remove_pod", "default/v1"),
                     ("remove_pod", "default/v2"), ("move_all", "Pod/Delete")]


def test_evictions_nobody_listens_to_are_the_same_unannounced():
    """``_evict`` makes no Preempted event (nor its message) when nobody
    listens to it or to every event: the placement, victims, eviction
    metrics and state are those of a run with a listener, which hears one
    event per victim, in order."""
    objs = [node_dict("n0", cpu="1")] + [pod_dict(f"v{k}", cpu="300m", spec={"nodeName": "n0"},
                                                  created=k) for k in range(3)]
    got = {}
    for listen in (None, "Bound", "Preempted", "*"):
        sched = Scheduler(build_cluster(objs, PREEMPT_CFG))
        heard = []
        if listen is not None:
            sched.subscribe(listen, lambda e, heard=heard: heard.append(dict(e)))
        b = sched.schedule_one(parse_pod(pod_dict("boss", cpu="900m", priority=100)))
        state = sched.state
        got[listen] = (b.node, b.victims, list(sched.evictions), sorted(state.pods),
                       state.requested[:1].tolist(), state.version)
        preempted = [(e["pod"], e["node"], e["message"], e["preemptor"])
                     for e in heard if e["event"] == "Preempted"]
        if listen in ("Preempted", "*"):
            assert preempted == [(k, "n0", "preempted by default/boss on node n0",
                                  "default/boss") for k in b.victims]
        else:
            assert preempted == []
    assert got[None] == got["Bound"] == got["Preempted"] == got["*"]
    assert got[None][0] == "n0" and len(got[None][1]) == 3
