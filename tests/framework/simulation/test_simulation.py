"""Simulation: departures free exactly what arrivals took (the state equals a
fresh build of the pods alive), snapshot/restore continues identically,
determinism for a seed, scenario steps, time series."""
import datetime
import math

import numpy as np
import pyarrow as pa
import pytest

import tensorsched as ts
from tensorsched.framework.errors import ArgumentError
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.simulation.scenario import ScenarioError, load_scenario
from tensorsched.framework.simulation.simulation import (
    TIMESERIES_COLUMNS,
    Simulation,
    SimulationError,
)


def nodes(n=6):
    return [node_dict(f"n{i}", cpu="4", memory="16Gi", pods="30",
                      labels={"topology.kubernetes.io/zone": f"z{i % 2}"}) for i in range(n)]


def churn(n=300, seed=1):
    rng = np.random.default_rng(seed)
    arrival = np.sort(rng.integers(0, 200, n)).astype(float)
    dur = rng.integers(5, 60, n).astype(float)
    dep = np.where(rng.random(n) < 0.3, arrival + rng.integers(0, 80, n), np.nan)
    dur = np.where(np.isnan(dep), dur, np.nan)
    cpu = rng.choice([250, 500, 1000], n)
    return pa.table({"name": [f"p{i}" for i in range(n)], "arrival": arrival,
                     "departure": pa.array(dep, mask=np.isnan(dep)),
                     "duration": pa.array(dur, mask=np.isnan(dur)),
                     "cpu": cpu, "memory": cpu * (1 << 21),
                     "priority": rng.choice([0, 10], n)})


def bound(sim):
    st = sim.cluster.state
    return {k: st.node_name(e.node_row) for k, e in st.pods.items()}


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_state_equals_a_fresh_build_of_the_pods_alive(backend):
    sim = Simulation(nodes(), backend=backend, seed=3, interval=10)
    sim.submit(churn())
    for t in (17, 45, 80, 133, 190, 260):
        sim.step(until=t)
        st = sim.cluster.state
        alive = [dict(e.record.obj, spec=dict(e.record.obj["spec"],
                                              nodeName=st.node_name(e.node_row)))
                 for e in st.pods.values()]
        fresh = build_cluster(nodes() + alive).state
        assert set(fresh.pods) == set(st.pods)
        for name, row in st.node_rows.items():
            r2 = fresh.node_rows[name]
            np.testing.assert_array_equal(st.requested[row, :4], fresh.requested[r2, :4])
            np.testing.assert_array_equal(st.nonzero_requested[row], fresh.nonzero_requested[r2])
            assert st.pods_on_node[row] == fresh.pods_on_node[r2]
    s = sim.run()
    assert s["running"] == 0 and s["pending"] == 0
    assert s["departed"] + s["deleted"] + s["preemptions"] == s["arrived"] == 300
    assert not sim.cluster.state.requested.any()
    assert not sim.scheduler.outcomes            # nothing kept per departed pod


def test_events_and_determinism():
    def run(seed):
        sim = Simulation(nodes(4), backend="numpy", seed=seed, interval=20)
        sim.submit(churn(200, seed=2))
        got = []
        sim.on("*", got.append)
        sim.run()
        return got, sim.timeseries()
    a, ta = run(5)
    b, tb = run(5)
    assert a == b and ta.equals(tb)
    kinds = {e["event"] for e in a}
    assert {"Arrived", "Scheduled", "Bound", "Departed"} <= kinds
    times = [e["time"] for e in a]
    assert times == sorted(times)
    assert tuple(ta.column_names) == TIMESERIES_COLUMNS
    assert sum(ta.column("arrived").to_pylist()) == 200


def test_snapshot_restore_continues_identically():
    def fresh():
        sim = Simulation(nodes(4), backend="numba", seed=7, interval=15)
        sim.submit(churn(250, seed=4))
        sim.submit([pod_dict("late", cpu="2")], at=70, duration=30)
        sim.cordon("n1", at=40)
        return sim
    whole = fresh()
    whole.step(until=60)
    rest = []
    whole.on("*", rest.append)
    whole.run()
    part = fresh()
    part.step(until=60)
    snap = part.snapshot()
    assert isinstance(snap, pa.Table) and snap.schema.metadata
    back = Simulation.restore(snap)
    assert back.now == 60 and bound(back) == bound(part)
    got = []
    back.on("*", got.append)
    back.run()
    assert got == rest
    assert back.timeseries().equals(whole.timeseries())


def test_dicts_changed_after_the_call_change_neither_the_run_nor_the_snapshot():
    # a script that reuses its dicts: the simulation keeps what was given
    objects = nodes(2)
    sim = Simulation(objects, backend="numpy", interval=None)
    node = node_dict("late", cpu="8", memory="16Gi")
    pod = pod_dict("web", cpu="1")
    sim.add_node(node, at=10)
    sim.submit([pod], at=20)
    node["metadata"]["name"] = "Not_A_Name"          # refused, had it been given
    node["status"]["capacity"]["cpu"] = "garbage"
    pod["metadata"]["name"] = "other"
    for o in objects:
        o["status"]["capacity"]["cpu"] = "1m"
    sim.run(until=30)
    assert "late" in sim.cluster.state.node_rows and "default/web" in sim.cluster.state.pods
    back = Simulation.restore(sim.snapshot())
    assert sorted(back.cluster.state.node_rows) == ["late", "n0", "n1"]
    assert bound(back) == bound(sim)


def test_a_snapshot_of_what_json_cannot_hold_is_refused_naming_it():
    sim = Simulation(nodes(1), backend="numpy", interval=None,
                     binder=lambda pod, node: None)
    with pytest.raises(SimulationError, match=r"^snapshot: binder: not a JSON value"):
        sim.snapshot()
    sim = Simulation(nodes(1), backend="numpy", interval=None)
    pod = pod_dict("web", cpu="1")      # as yaml.safe_load reads a timestamp
    pod["metadata"]["creationTimestamp"] = datetime.datetime(2026, 1, 1)
    sim.submit([pod], at=5)
    with pytest.raises(SimulationError, match=r"^snapshot: the submit call at 5s: not a JSON"):
        sim.snapshot()


def test_restore_of_a_malformed_file_names_it(tmp_path):
    sim = Simulation(nodes(1), backend="numpy", interval=None)
    table = sim.snapshot().drop(["blob"])
    path = str(tmp_path / "snap.arrow")
    with pa.ipc.new_file(path, table.schema) as w:
        w.write_table(table)
    with pytest.raises(SimulationError, match=f"^{path}: not a simulation snapshot "
                       r"\(no column 'blob'\)"):
        Simulation.restore(path)


def test_an_event_refused_in_a_run_stays_due_and_changes_nothing():
    sim = Simulation([node_dict("n0", cpu="4", memory="8Gi")], backend="numpy", interval=10)
    sim.submit([pod_dict("a")], at=1)
    sim.submit([pod_dict("dup")], at=2, duration=50)
    sim.submit([pod_dict("b"), pod_dict("dup")], at=5)     # dup is still there at 5 s
    sim.submit([pod_dict("c")], at=8)
    with pytest.raises(SimulationError, match="^Pod default/dup: submitted at 5s while"):
        sim.run()
    before, events = sim.digest(), len(sim.agenda)
    assert sim.now == 5 and "default/b" not in sim.cluster.state.pods    # none of that event
    # it was dropped: a second run went on without it; now it stops there again
    with pytest.raises(SimulationError, match="^Pod default/dup: submitted at 5s"):
        sim.run()
    assert sim.digest() == before and len(sim.agenda) == events
    # the snapshot of a simulation whose run failed restores (the replay meets the
    # same error where the original did)
    back = Simulation.restore(sim.snapshot())
    assert back.digest() == before
    sim.delete("dup")                   # what the error asks for, then the run goes on
    assert sim.run()["arrived"] == 5    # a, dup, then b and dup again, c


def _dup_trace(rows=12):
    """``rows`` pods arriving a second apart (blocks of arrivals), pod ``dup``
    the third, due to leave at 52 s."""
    dep = [52.0 if i == 2 else None for i in range(rows)]
    return pa.table({"name": ["dup" if i == 2 else f"t{i}" for i in range(rows)],
                     "arrival": [float(i) for i in range(rows)],
                     "departure": pa.array(dep, pa.float64()), "cpu": [100] * rows})


@pytest.mark.parametrize("form", ["duration", "bound", "trace"])
def test_a_departure_leaves_only_the_pod_it_was_scheduled_for(form):
    # a pod's lifetime is the pod object's (its UID), not its name's: the
    # departure of a pod deleted and created again under its name (52 s) leaves
    # the new pod alone
    def fresh():
        sim = Simulation(nodes(2), backend="numpy", interval=10)
        if form == "trace":                 # an absolute departure, at its arrival
            sim.submit(_dup_trace())
        else:                               # counted from its binding (or its arrival
            spec = {"nodeName": "n0"} if form == "bound" else {}    # bound already)
            sim.submit([pod_dict("dup", cpu="100m", spec=spec)], at=2, duration=50)
        sim.delete("dup", at=10)
        sim.submit([pod_dict("dup", cpu="200m")], at=20)
        return sim
    sim = fresh()
    events = []
    sim.on("*", events.append)
    sim.step(until=30)
    snap = sim.snapshot()
    sim.run()
    assert "default/dup" in sim.cluster.state.pods
    assert sim.cluster.state.pods.record("default/dup").obj["spec"]["containers"][0][
        "resources"]["requests"]["cpu"] == "200m"
    assert not [e for e in events if e["pod"] == "default/dup" and e["time"] > 20
                and e["event"] in ("Departed", "Deleted")]
    assert sim.totals["deleted"] == 1 and sim.summary()["departed"] == 0
    # a restored run goes on exactly as the original (the departure still void)
    back = Simulation.restore(snap)
    assert back.now == 30 and back.digest() == Simulation.restore(snap).digest()
    back.run()
    assert back.digest() == sim.digest()
    assert back.timeseries().equals(sim.timeseries())


def test_a_departure_still_leaves_a_pod_that_stayed():
    # the departure of a pod not replaced applies, also after another pod of
    # another name came and went
    sim = Simulation(nodes(2), backend="numpy", interval=None)
    sim.submit([pod_dict("keep", cpu="100m")], at=2, duration=50)
    sim.submit([pod_dict("other", cpu="100m")], at=5, duration=1)
    sim.run()
    assert sim.summary()["departed"] == 2 and not sim.cluster.state.pods
    assert len(sim._lifetimes) == 0                 # nothing kept for pods gone


@pytest.mark.timeout(30)
def test_endless_generators_are_refused_not_listed(monkeypatch):
    # submit(itertools.repeat(pod)) listed pods until the machine ran out of
    # memory; now at most the bound plus one is read, then refused naming the
    # argument, nothing changed (the objects' bound of ten million made a
    # thousand here: listing ten million takes a second)
    import itertools

    from tensorsched.framework.arguments import MAX_LISTED_PODS
    from tensorsched.framework.simulation import simulation as simulation_module
    monkeypatch.setattr(simulation_module, "MAX_OBJECTS", 1000)
    with pytest.raises(ArgumentError, match="^Simulation: cluster: at most 1,000 object dicts "
                       r"\(or a Cluster, or a path of manifests\), got more$"):
        Simulation(itertools.repeat(node_dict("n0")), backend="numpy")
    sim = Simulation(nodes(1), backend="numpy", interval=None)
    before = sim.digest()
    with pytest.raises(ArgumentError, match=f"^Simulation.submit: pods: at most "
                       f"{MAX_LISTED_PODS:,} Pod dicts or PodRecords"):
        sim.submit(itertools.repeat(pod_dict("p")))
    with pytest.raises(ArgumentError, match=f"^Simulation.submit: templates: at most "
                       f"{MAX_LISTED_PODS:,} pod specs, got more$"):
        sim.submit(pa.table({"name": ["a"], "arrival": [0.0], "template": [0]}),
                   templates=itertools.repeat(pod_dict("t")))
    assert sim.digest() == before and len(sim.agenda) == 0 and sim.snapshot().num_rows == 1


def test_a_pod_given_twice_in_one_submit_is_refused_at_the_call():
    sim = Simulation([node_dict("n0")], backend="numpy", interval=None)
    before = sim.digest()
    with pytest.raises(ArgumentError, match=r"^Simulation.submit: pods\[2\]: Pod default/x is "
                       r"given twice \(also pods\[0\]\)"):
        sim.submit([pod_dict("x"), pod_dict("y"), pod_dict("x")], at=1)
    assert sim.digest() == before and len(sim.agenda) == 0 and not sim.snapshot().num_rows > 1


def test_unschedulable_pool_moves_on_departures():
    sim = Simulation([node_dict("only", cpu="2", memory="8Gi")], backend="numpy", interval=None)
    sim.submit([pod_dict("big-a", cpu="2")], at=0, duration=100)
    sim.submit([pod_dict("big-b", cpu="2")], at=1)
    ev = sim.step(until=50)
    assert any(e["event"] == "FailedScheduling" and e["pod"] == "default/big-b" for e in ev)
    ev = sim.step(until=500)
    dep = next(e for e in ev if e["event"] == "Departed")
    bnd = next(e for e in ev if e["event"] == "Bound" and e["pod"] == "default/big-b")
    assert dep["time"] == 100 and bnd["time"] == 100       # the Pod/Delete moved it at once


def test_scenario_steps(tmp_path):
    p = tmp_path / "sc.yaml"
    p.write_text("""
steps:
- at: 0
  create: {apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}
  replicas: 4
  duration: 300
- {at: 10, cordon: n0}
- {at: 20, drain: n1}
- at: 30
  addNodes: {template: {apiVersion: v1, kind: Node, metadata: {name: extra}, status: {allocatable: {cpu: "8", memory: 8Gi, pods: "10"}}}, count: 2}
- {at: 40, uncordon: n0}
- {at: 50, removeNodes: [extra-1]}
- at: 5
  delete: {kind: Pod, name: web, namespace: default}
  replicas: 2
""")
    sim = Simulation(nodes(2), backend="numpy", interval=10)
    assert sim.scenario(str(p)) == 7
    ev = sim.step(until=100)
    names = [(e["event"], e["pod"] or e["node"]) for e in ev]
    assert ("NodeUpdated", "n0") in names and ("NodeAdded", "extra-0") in names
    assert ("NodeDeleted", "extra-1") in names
    evicted = [e for e in ev if e["event"] == "Evicted"]
    assert all(e["node"] == "n1" for e in evicted)
    assert [e["pod"] for e in ev if e["event"] == "Deleted"] == ["default/web-0", "default/web-1"]
    assert sim.cluster.state.node("n1").unschedulable
    assert not sim.cluster.state.node("n0").unschedulable
    assert sim.summary()["nodes"] == 3


@pytest.mark.parametrize("doc, where", [
    ({"steps": [{"at": -1, "cordon": "n0"}]}, "steps[0].at"),
    ({"steps": [{"at": 0}]}, "steps[0]: needs exactly one action"),
    ({"steps": [{"at": 0, "cordon": 7}]}, "steps[0].cordon"),
    ({"steps": [{"at": 0, "cordon": "n0", "drain": "n1"}]}, "steps[0]: needs exactly one"),
    ({"steps": [{"at": 0, "create": {"kind": "Pod", "metadata": {"name": "x"},
                                    "spec": {"containers": [{"name": "c", "resources": {
                                        "requests": {"cpu": "abc"}}}]}}}]},
     "steps[0].create: Pod default/x: spec.containers[0].resources.requests.cpu"),
    ({"steps": [{"at": 0, "uncordon": "n0", "replicas": 2}]}, "steps[0].replicas"),
    ({"steps": [{"at": 0, "addNodes": {"template": {"kind": "Pod"}, "count": 1}}]},
     "steps[0].addNodes.template.kind"),
    ({"steps": [{"at": 0, "delete": {"kind": "Secret", "name": "x"}}]}, "steps[0].delete.kind"),
    ({"stepz": []}, "stepz: unknown field"),
])
def test_scenario_errors_name_the_field(doc, where):
    with pytest.raises(ScenarioError) as e:
        load_scenario(doc)
    assert where in str(e.value)


def test_scenario_refers_to_known_nodes(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("steps:\n- {at: 5, drain: ghost}\n")
    sim = Simulation(nodes(2), backend="numpy")
    with pytest.raises(ScenarioError, match=r"s.yaml: steps\[0\].drain: node 'ghost'"):
        sim.scenario(str(p))
    p.write_text("steps:\n- {at: 5, drain: n0}\n  cordon: x\n")
    with pytest.raises(ScenarioError, match="s.yaml"):
        load_scenario(str(p))


def test_inputs_refused():
    sim = Simulation(nodes(2), backend="numpy")
    sim.step(until=10)
    with pytest.raises(SimulationError, match="before the simulation's time"):
        sim.submit([pod_dict("x")], at=5)
    with pytest.raises(ArgumentError, match="Simulation: interval: must be a finite number"):
        Simulation(nodes(2), interval=0)
    with pytest.raises(ValueError, match="unknown event"):
        sim.on("Nope", print)
    assert ts.Simulation is Simulation
    assert math.isinf(float("inf"))


def test_a_departure_due_mid_pass_comes_before_the_schedulers_later_timers():
    """At 1 s, B preempts A (its victim terminates for 30 s) and E binds,
    due to leave at 3 s: the pass stops at 3 s, E leaves then, and the clock
    goes on to A's termination (events in time order)."""
    one = [node_dict("n0", cpu="1", memory="4Gi", pods="10")]
    sim = Simulation(one, backend="numpy", interval=None, termination_grace_seconds=30)
    sim.submit([pod_dict("a", cpu="1", priority=0)], at=0)
    sim.submit([pod_dict("b", cpu="1", priority=100)], at=1)
    sim.submit([pod_dict("e", cpu="0", memory="1Mi", priority=0)], at=1, duration=2)
    seen = []
    sim.on("*", lambda e: seen.append((e["time"], e["event"], e["pod"])))
    sim.run()
    times = [t for t, _, _ in seen]
    assert times == sorted(times)
    assert (3.0, "Departed", "default/e") in seen
    assert [t for t, ev, p in seen if ev == "Bound" and p == "default/b"] == [31.0]


def test_runs_freeze_nothing_so_earlier_garbage_is_collected():
    """The GC tuning raises the young-generation threshold only: freezing
    would also freeze earlier runs' garbage (a sweep of 500 runs in one
    process grew to 12 GB that way)."""
    import gc

    seen = []
    sim = Simulation(nodes(2), backend="numpy", interval=5,
                     metrics={"frozen": lambda c: seen.append(gc.get_freeze_count()) or 0})
    sim.submit([pod_dict(f"p{i}") for i in range(3)], at=1, duration=3)
    before = gc.get_threshold()
    frozen = gc.get_freeze_count()      # the test process's own (tests/conftest.py)
    sim.run()
    assert seen and set(seen) == {frozen}
    assert gc.get_threshold() == before


@pytest.mark.parametrize("batch", [True, False])
def test_a_pod_bound_after_the_last_arrival_does_not_carry_the_clock_past_a_sample(batch):
    """The trace is exhausted when its last pod is bound; the pod leaves at
    5 s: the sample at 4 s still comes (the pod running), then the one at
    the end."""
    sim = Simulation(nodes(1), backend="numba", interval=4.0, batch=batch)
    sim.submit([pod_dict("a", cpu="1")], at=0, duration=5)
    sim.run()
    ts = sim.timeseries().to_pydict()
    assert ts["time"] == [4.0, 5.0]
    assert ts["running"] == [1, 0] and ts["departed"] == [0, 1]


def test_deleting_what_does_not_exist_is_not_found(tmp_path):
    sim = Simulation(nodes(2), backend="numpy")
    sim.submit([pod_dict("a", namespace="shop", cpu="3")])
    for call, arg in [("delete", "shop/nosuch"), ("delete", "nosuch"), ("cordon", "ghost"),
                      ("uncordon", "ghost"), ("drain", "ghost"), ("delete_node", "ghost")]:
        with pytest.raises(SimulationError, match=r"not found \(NotFound\)"):
            getattr(sim, call)(arg)
    with pytest.raises(SimulationError, match="a pod key is 'namespace/name'"):
        sim.delete("a/b/c")
    with pytest.raises(SimulationError, match=r"Node n0: already exists \(AlreadyExists\)"):
        sim.add_node(node_dict("n0"))
    # the pod submitted now arrives after a deletion at the same time
    with pytest.raises(SimulationError, match="Pod shop/a: not found"):
        sim.delete("shop/a")
    sim.delete("shop/a", at=1)
    assert sim.scenario({"steps": [{"at": 2, "create": pod_dict("b")},
                                   {"at": 3, "delete": {"kind": "Pod", "name": "b"}}]}) == 2
    sim.run()
    assert sim.totals["deleted"] == 2 and not sim.cluster.state.pods
    sim.delete_node("n1", at=3)
    sim.add_node(node_dict("n1", cpu="8"), at=3)        # replaced: deleted first
    sim.run()
    assert sim.cluster.state.node("n1").allocatable["cpu"] == 8000
    # a pod gone by the time of its deletion: the run stops there, NotFound
    sim.submit([pod_dict("c")], at=5, duration=1)
    sim.delete("default/c", at=10)
    with pytest.raises(SimulationError, match="Pod default/c: not found"):
        sim.run()


@pytest.mark.parametrize("steps, expect", [
    ([{"at": 1, "delete": {"kind": "Pod", "name": "nosuch", "namespace": "shop"}}],
     "steps[0].delete: pod shop/nosuch not found (NotFound)"),
    ([{"at": 1, "create": pod_dict("x")},
      {"at": 1, "delete": {"kind": "Pod", "name": "x"}}],
     "steps[1].delete: pod default/x not found"),
    ([{"at": 1, "create": pod_dict("x")}, {"at": 2, "delete": {"kind": "Pod", "name": "x"}},
      {"at": 3, "delete": {"kind": "Pod", "name": "x"}}],
     "steps[2].delete: pod default/x not found"),
])
def test_scenario_delete_of_an_unknown_pod_is_refused_up_front(steps, expect):
    sim = Simulation(nodes(2), backend="numpy")
    with pytest.raises(ScenarioError) as e:
        sim.scenario({"steps": steps})
    assert expect in str(e.value)
    sim.run()                                     # nothing of the scenario was scheduled
    assert sim.totals["arrived"] == 0 and sim.totals["deleted"] == 0


def test_trace_pods_can_be_deleted_by_name():
    sim = Simulation(nodes(2), backend="numpy")
    sim.submit(pa.table({"name": ["t0", "t1"], "arrival": [0.0, 4.0], "cpu": [100, 100]}))
    sim.scenario({"steps": [{"at": 5, "delete": {"kind": "Pod", "name": "t1"}}]})
    with pytest.raises(ScenarioError, match="t1 not found"):
        sim.scenario({"steps": [{"at": 3, "delete": {"kind": "Pod", "name": "t1"}}]})
    sim.run()
    assert set(sim.cluster.state.pods) == {"default/t0"}


def _bound_pod(name, node, **meta):
    p = pod_dict(name, cpu="100m")
    p["spec"]["nodeName"] = node
    p["metadata"].update(meta)
    return p


def test_drain_leaves_daemonset_and_static_pods_and_cordon_keeps_the_taint():
    ds = {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "proxy",
                               "uid": "u", "controller": True}]}
    static = {"ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n0",
                                   "uid": "u", "controller": True}]}
    mirror = {"annotations": {"kubernetes.io/config.mirror": "x"}}
    pods = [_bound_pod("proxy", "n0", **ds), _bound_pod("etcd", "n0", **static),
            _bound_pod("apiserver", "n0", **mirror), _bound_pod("web", "n0")]
    sim = Simulation(nodes(2) + pods, backend="numpy")
    sim.drain("n0")
    ev = sim.step(until=1)
    assert [e["pod"] for e in ev if e["event"] == "Evicted"] == ["default/web"]
    assert set(sim.cluster.state.pods) == {"default/proxy", "default/etcd", "default/apiserver"}
    node = sim.cluster.state.node("n0")
    assert node.unschedulable and "node.kubernetes.io/unschedulable" in [t.key for t in node.taints]


def test_uncordon_clears_the_taint_a_dump_carries():
    dumped = nodes(1)
    dumped[0]["spec"] = {"unschedulable": True, "taints": [
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
         "timeAdded": "2024-05-01T10:00:00Z"}]}
    sim = Simulation(dumped, backend="numpy")
    sim.uncordon("n0", at=1)
    sim.submit([pod_dict("web")], at=2)
    sim.run()
    node = sim.cluster.state.node("n0")
    assert not node.unschedulable and not node.taints
    assert set(sim.cluster.state.pods) == {"default/web"}
    sim.cordon("n0")
    sim.submit([pod_dict("late")], at=sim.now + 1)
    sim.run()
    assert "default/late" not in sim.cluster.state.pods
    assert [t.key for t in sim.cluster.state.node("n0").taints] == [
        "node.kubernetes.io/unschedulable"]
