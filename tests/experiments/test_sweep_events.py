"""A scenario's node and pod steps inside the batched node-local trace
kernel's queue (``experiments/sweep_events.py``, ``kernels/batch/local_events``):
cordon, uncordon, drain, addNodes from a template, Node creates (into a
row a removal freed too, under a removed node's name too), removeNodes and
Node deletes, Pod creates and Pod deletes at times among the trace's
arrivals and departures, on small
random clusters and traces under the sweep's configurations; every
batched row equals the row of the run's own Simulation (``batch=False``)
but ``wall_seconds``.  A pod the usage-independent filters reject on
every node waits for a node event (or the pool's flush) and binds at the
event's time; what the kernel does not cover is refused by the step's
field and goes the per-run way."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorsched as ts
from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_local as SL
from tensorsched.framework.capacity.batch_probe import BatchProfileError
from tensorsched.framework.simulation.scenario import ScenarioError, load_scenario
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels.batch.local_events import WHY_DELETED, WHY_EVICTED

from support.local_clusters import config
from support.local_scenarios import scenario_steps
from support.local_traces import write_inputs


def _rows(jobs, batch: bool):
    jobs = [dataclasses.replace(j, batch=batch) for j in jobs]
    return S.run_sweep(jobs, workers=1).drop(["wall_seconds"]).to_pylist()


def _batched(jobs) -> tuple:
    inputs = S.load_inputs(jobs)
    got: dict = {}
    rest = SL.batched_local(jobs, inputs, 1, lambda i, row, e: got.__setitem__(i, row))
    return [got.get(i) for i in range(len(jobs))], rest


def _same(got, want) -> None:
    for g, w in zip(got, want):
        g = dict(g)
        g.pop("wall_seconds")
        assert g == w


def readd_steps(rng, node_steps: list) -> list:
    """Nodes removed by ``node_steps`` added again under their names (a
    Node create, random size), at the removal's time (after it) or later."""
    out = []
    for s in node_steps:
        gone = s.get("removeNodes") or ([s["delete"]["name"]] if "delete" in s else [])
        for name in gone:
            if rng.random() < 0.5:
                out.append({"at": int(s["at"]) + int(rng.choice([0, 1, 20])),
                            "create": node_dict(name, cpu=str(rng.choice(["1", "2", "4"])),
                                                memory="4Gi", pods=str(int(rng.integers(2, 7))))})
    return out


def pod_steps(rng, node_steps: list, cluster: str, n_pods: int,
              priorities: bool = False, gone: bool = False) -> list:
    """``n_pods`` Pod creates (some leaving a ``duration`` after binding,
    some too big for any node, some a DaemonSet's; priorities 0, 10 or
    1000 when ``priorities``) and deletes of created pods, of the manifests'
    pending pods and of their bound pods, at times among ``node_steps``'
    (ties included); a delete only where the Simulation finds the pod (no
    drain or removal since it arrived, its duration not over, its node
    still there; ``gone``: a queued pod's delete any time after its
    creation, the pod perhaps gone)."""
    objs = list(yaml.safe_load_all(Path(cluster).read_text()))
    bound = {o["metadata"]["name"]: o["spec"]["nodeName"] for o in objs
             if o.get("kind") == "Pod" and o["spec"].get("nodeName")}
    pending = [o["metadata"]["name"] for o in objs
               if o.get("kind") == "Pod" and not o["spec"].get("nodeName")]
    times = sorted({int(s["at"]) for s in node_steps} | {0, 1, 2, 40})

    def leaves(s):
        # (time, nodes) of the steps that take pods off nodes
        if "drain" in s:
            return [s["drain"]]
        if "removeNodes" in s:
            return list(s["removeNodes"])
        if "delete" in s:
            return [s["delete"]["name"]]
        return []

    left = [(int(s["at"]), leaves(s)) for s in node_steps if leaves(s)]
    steps, alive = [], {}          # pod -> (arrival, seconds bound or None)
    for k in range(n_pods):
        t = int(rng.choice(times)) + int(rng.choice([0, 0, 1, 30]))
        name = f"s{k}"
        pod = pod_dict(name, cpu=str(rng.choice(["300m", "1", "5"])), memory="512Mi",
                       priority=int(rng.choice([0, 10, 1000])) if priorities else None)
        if rng.random() < 0.25:
            # a DaemonSet's pod: a drain leaves it where it is bound
            pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                                   "name": "agent", "uid": "u1",
                                                   "controller": True}]
        step = {"at": t, "create": pod}
        dur = None
        if rng.random() < 0.4:
            dur = int(rng.choice([0, 5, 100]))
            step["duration"] = dur
        steps.append(step)
        alive[name] = (t, dur)
    for name in pending:
        alive[name] = (0, None)
    for _ in range(int(rng.integers(0, 4))):
        t = int(rng.choice(times)) + int(rng.choice([0, 1, 3, 60]))
        cands = [n for n, (t0, d) in alive.items() if t0 < t and (gone or (
            d is None or t <= t0 + d) and not any(t0 < g < t for g, _ in left))]
        cands += [n for n, node in bound.items()
                  if not any(g < t and node in names for g, names in left)]
        if not cands:
            continue
        name = str(rng.choice(sorted(cands)))
        alive.pop(name, None)
        bound.pop(name, None)
        steps.append({"at": t, "delete": {"kind": "Pod", "name": name}})
    return steps


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 4), n_pods=st.integers(1, 25),
       bound=st.integers(0, 3), n_steps=st.integers(1, 6), durations=st.booleans(),
       interval=st.sampled_from([7.0, 60.0]), n_created=st.integers(0, 4))
def test_node_events_rows_equal_each_simulation(tmp_path, seed, n_nodes, n_pods, bound, n_steps,
                                                durations, interval, n_created):
    # node steps (removed nodes added again under their names too) and pod
    # steps (creates, deletes of created, pending and bound pods) among the
    # trace's arrivals and departures
    cluster, trace, configs = write_inputs(tmp_path, seed, n_nodes, n_pods, bound,
                                           durations=durations)
    rng = np.random.default_rng(seed + 7919)
    steps = scenario_steps(rng, n_nodes, n_steps)
    steps += pod_steps(rng, steps, cluster, n_created) + readd_steps(rng, steps)
    scenario = tmp_path / f"scenario{seed}.yaml"
    scenario.write_text(yaml.safe_dump({"steps": steps}))
    scenario = str(scenario)
    jobs = S.make_jobs([trace], [0, 1 + seed % 7], configs=configs, cluster=cluster,
                       scenario=scenario, interval=interval)
    got, rest = _batched(jobs)
    assert rest == []
    want = _rows(jobs, False)
    _same(got, want)
    assert _rows(jobs, True) == want


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_pods=st.integers(1, 20))
def test_priorities_and_node_events_equal_each_simulation(tmp_path, seed, n_nodes, n_pods):
    # activeQ in PrioritySort's order while node events move the pool, the
    # scenario's created pods of their own priorities among the trace's
    cluster, trace, configs = write_inputs(tmp_path, seed, n_nodes, n_pods, 1,
                                           durations=True, priorities=True)
    rng = np.random.default_rng(seed + 7919)
    steps = scenario_steps(rng, n_nodes, 4)
    steps += pod_steps(rng, steps, cluster, 3, priorities=True)
    scenario = tmp_path / f"scenario{seed}.yaml"
    scenario.write_text(yaml.safe_dump({"steps": steps}))
    scenario = str(scenario)
    jobs = S.make_jobs([trace], [0], configs=configs[:2], cluster=cluster,
                       scenario=scenario, interval=60.0)
    got, rest = _batched(jobs)
    assert rest == []
    _same(got, _rows(jobs, False))


def _write(tmp_path, objs, trace: str, steps: list | None, cfg=None) -> tuple:
    c = tmp_path / "cluster.yaml"
    c.write_text(yaml.safe_dump_all(objs))
    t = tmp_path / "t.csv"
    t.write_text(trace)
    cf = tmp_path / "cfg.yaml"
    cf.write_text(yaml.safe_dump(cfg or config(0)))
    sc = None
    if steps is not None:
        sc = tmp_path / "sc.yaml"
        sc.write_text(yaml.safe_dump({"steps": steps}))
    return str(c), str(t), str(cf), None if sc is None else str(sc)


@pytest.mark.parametrize("step", [
    {"at": 100, "uncordon": "n0"},
    {"at": 100, "addNodes": {"template": node_dict("x", cpu="2", memory="4Gi"), "count": 1}},
])
def test_a_pod_waiting_for_a_node_event_binds_at_its_time(tmp_path, step):
    # the only node is cordoned: p0 fails on NodeUnschedulable (no Pod/Delete
    # interest: q0's departure at 30 leaves it waiting), then the step
    # opens a node at 100 and p0 binds then, batched as in its Simulation
    objs = [node_dict("n0", cpu="2", memory="4Gi", unschedulable=True)]
    trace = "name,arrival,departure,cpu,memory\np0,1,,1,1Gi\nq0,2,30,1,1Gi\n"
    cluster, tr, cfg, sc = _write(tmp_path, objs, trace, [step])
    (r,) = ts.simulate_batch(cluster, [tr], [cfg], seeds=[0], scenario=sc)
    assert r.bind[0] == 100.0 and r.node[0] >= 0
    assert r.node_names[r.node[0]] == ("n0" if "uncordon" in step else "x-0")
    assert r.tries[0] == 2          # its failure at 1, its binding at 100
    jobs = S.make_jobs([tr], [0, 5], configs=[cfg], cluster=cluster, scenario=sc,
                       interval=20.0)
    got, rest = _batched(jobs)
    assert rest == []
    _same(got, _rows(jobs, False))


def test_a_pod_rejected_everywhere_runs_batched_without_a_scenario(tmp_path):
    # no scenario: the pod waits for the pool's flush (300 s), retries and
    # fails again; q0's departure does not move it (Pod/Delete: not its
    # rejectors' event), in the batch as in the Simulation
    objs = [node_dict("n0", cpu="2", memory="4Gi",
                      taints=[{"key": "spot", "effect": "NoSchedule"}])]
    trace = "name,arrival,departure,cpu,memory\np0,1,,1,1Gi\nq0,2,30,1,1Gi\nq1,700,,1,1Gi\n"
    cluster, tr, cfg, _ = _write(tmp_path, objs, trace, None)
    jobs = S.make_jobs([tr], [0], configs=[cfg], cluster=cluster, interval=60.0)
    got, rest = _batched(jobs)
    assert rest == []
    want = _rows(jobs, False)
    _same(got, want)
    assert want[0]["failed_attempts"] > 3


def _bound(name: str, node: str, daemon: bool = False) -> dict:
    p = pod_dict(name, cpu="500m", memory="1Gi")
    p["spec"]["nodeName"] = node
    if daemon:
        p["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                             "name": "agent", "uid": "u1", "controller": True}]
    return p


def test_drain_and_node_delete_free_bound_pods(tmp_path):
    # n0's drain evicts the trace's pods and the manifests' b1 on it (its
    # DaemonSet pod stays, still requesting), its uncordon lets pods in
    # again, n1's delete deletes the manifests' b0 and whatever is on it:
    # counts and curves as the Simulation's
    objs = [node_dict("n0", cpu="2", memory="4Gi"), node_dict("n1", cpu="1", memory="2Gi"),
            _bound("b0", "n1"), _bound("b1", "n0"), _bound("ds0", "n0", daemon=True)]
    trace = ("name,arrival,departure,cpu,memory\np0,1,,1500m,1Gi\np1,2,,1500m,1Gi\n"
             "p2,3,,500m,1Gi\n")
    steps = [{"at": 50, "drain": "n0"}, {"at": 80, "uncordon": "n0"},
             {"at": 120, "delete": {"kind": "Node", "name": "n1"}}]
    cluster, tr, cfg, sc = _write(tmp_path, objs, trace, steps)
    jobs = S.make_jobs([tr], [0, 1], configs=[cfg], cluster=cluster, scenario=sc,
                       interval=30.0)
    got, rest = _batched(jobs)
    assert rest == []
    want = _rows(jobs, False)
    _same(got, want)
    assert want[0]["evicted"] >= 2 and want[0]["deleted"] >= 1


def _daemon_pod(name: str) -> dict:
    p = pod_dict(name, cpu="100m", memory="128Mi")
    p["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                         "name": "agent", "uid": "u1", "controller": True}]
    return p


@pytest.mark.parametrize("steps, what", [
    ([{"at": 5, "create": {**pod_dict("z", cpu="1", memory="1Gi"),
                           "spec": {**pod_dict("z")["spec"], "nodeName": "n0"}}}],
     "created bound"),
    # (a delete of a pod that may have left before it runs batched:
    # test_local_gone_deletes.py)
    # p0 created and deleted before the trace's p0 arrives (at 1)
    ([{"at": 0, "create": pod_dict("p0", cpu="1", memory="1Gi")},
      {"at": 0.5, "delete": {"kind": "Pod", "name": "p0"}}], "named as another pod"),
])
def test_uncovered_steps_are_refused_by_name(tmp_path, steps, what):
    objs = [node_dict("n0", cpu="2", memory="4Gi"), node_dict("n1", cpu="2", memory="4Gi")]
    trace = "name,arrival,departure,cpu,memory\np0,1,,1,1Gi\n"
    cluster, tr, cfg, sc = _write(tmp_path, objs, trace, steps)
    with pytest.raises(BatchProfileError, match=what):
        ts.simulate_batch(cluster, [tr], [cfg], seeds=[0], scenario=sc)
    jobs = S.make_jobs([tr], [0], configs=[cfg], cluster=cluster, scenario=sc, interval=60.0)
    got, rest = _batched(jobs)
    assert rest == [0]          # the per-run path takes it
    assert S.run_sweep(jobs, workers=1).num_rows == 1


def test_cordoned_variants_keep_classes(tmp_path):
    # the universe holds each node once per variant; an event swaps rows
    objs = [node_dict("n0", cpu="2", memory="4Gi"), node_dict("n1", cpu="2", memory="4Gi")]
    trace = "name,arrival,departure,cpu,memory\np0,1,,1,1Gi\n"
    steps = [{"at": 0, "cordon": ["n0", "n1"]}, {"at": 10, "uncordon": "n1"},
             {"at": 20, "cordon": "n1"}]
    cluster, tr, cfg, sc = _write(tmp_path, objs, trace, steps)
    objects = S.run.cluster_objects(cluster=cluster)
    s = SL.trace_setup(objects, yaml.safe_load(Path(cfg).read_text()), ts.read_trace(tr),
                       load_scenario(sc))
    assert len(s.events.probers) == 2
    assert s.events.rej.shape[1] == 4
    (r,) = ts.simulate_batch(copy.deepcopy(objects), [tr], [cfg], seeds=[0], scenario=sc)
    assert r.bind[0] == 10.0 and r.node_names[r.node[0]] == "n1"
    assert np.array_equal(r.why, [0])


@pytest.mark.parametrize("seed", [1, 2])
def test_scan_window_follows_the_live_nodes(tmp_path, seed):
    # over 100 nodes percentageOfNodesToScore scans a window from the
    # rotating start: nodes removed (rows left free), cordoned and added
    # change the live rows, the count the window and the start's modulus
    rng = np.random.default_rng(seed)
    objs = [node_dict(f"n{i}", cpu=str(rng.choice(["1", "2"])), memory="4Gi", pods="4")
            for i in range(150)]
    trace = "name,arrival,departure,cpu,memory\n" + "".join(
        f"p{j},{1 + j // 3},{'' if j % 4 else 40 + j},{rng.choice(['500m', '1'])},1Gi\n"
        for j in range(60))
    steps = [{"at": 3, "addNodes": {"template": node_dict("x", cpu="2", memory="4Gi"),
                                    "count": 3}},
             {"at": 5, "removeNodes": [f"n{i}" for i in range(0, 30, 3)]},
             {"at": 7, "cordon": [f"n{i}" for i in range(40, 60)]},
             {"at": 9, "drain": "x-1"}, {"at": 15, "uncordon": "n41"}]
    cluster, tr, cfg, sc = _write(tmp_path, objs, trace, steps, config(seed % 3, pct=40))
    jobs = S.make_jobs([tr], [0, 7], configs=[cfg], cluster=cluster, scenario=sc,
                       interval=10.0)
    got, rest = _batched(jobs)
    assert rest == []
    _same(got, _rows(jobs, False))


def test_a_departure_does_not_move_a_pod_waiting_for_a_node(tmp_path):
    # w (the manifests' pending pod) wants a disk=ssd node: NodeAffinity
    # rejects it everywhere, and NodeAffinity listens to Node/Add and
    # Node/Update, not Pod/Delete: q0's departure at 30 leaves it waiting,
    # the ssd node added at 100 moves it and it binds then (2 attempts)
    objs = [node_dict("n0", cpu="2", memory="4Gi"),
            pod_dict("w", cpu="1", memory="1Gi", spec={"nodeSelector": {"disk": "ssd"}})]
    trace = "name,arrival,departure,cpu,memory\nq0,2,30,1,1Gi\n"
    steps = [{"at": 100, "addNodes": {"template": node_dict(
        "x", cpu="2", memory="4Gi", labels={"disk": "ssd"}), "count": 1}}]
    cluster, tr, cfg, sc = _write(tmp_path, objs, trace, steps)
    (r,) = ts.simulate_batch(cluster, [tr], [cfg], seeds=[0], scenario=sc)
    assert r.bind[0] == 100.0 and r.node_names[r.node[0]] == "x-0" and r.tries[0] == 2
    jobs = S.make_jobs([tr], [0], configs=[cfg], cluster=cluster, scenario=sc,
                       interval=20.0)
    got, rest = _batched(jobs)
    assert rest == []
    _same(got, _rows(jobs, False))


def test_a_node_added_after_a_removal_takes_the_freed_row(tmp_path):
    # n0's removal frees row 0 and y takes it at 40 (the last freed row
    # first, as the cluster state reuses rows): the tie rank and the scan
    # read that row; p2 waits for y and binds on it then
    objs = [node_dict(f"n{i}", cpu="1", memory="4Gi") for i in range(3)]
    trace = ("name,arrival,departure,cpu,memory\np0,1,,1,1Gi\np1,1,,1,1Gi\np2,20,,1,1Gi\n"
             "p3,41,,500m,1Gi\n")
    steps = [{"at": 10, "removeNodes": ["n0", "n2"]},
             {"at": 40, "create": node_dict("y", cpu="2", memory="4Gi")},
             {"at": 40, "addNodes": {"template": node_dict("z", cpu="1", memory="4Gi")}}]
    cluster, tr, cfg, sc = _write(tmp_path, objs, trace, steps)
    objects = S.run.cluster_objects(cluster=cluster)
    s = SL.trace_setup(objects, yaml.safe_load(Path(cfg).read_text()), ts.read_trace(tr),
                       load_scenario(sc))
    assert s.events.plan.local_rows == [0, 1, 2]
    assert s.events.plan.node[-2:] == [2, 0]        # y takes n2's row, z n0's
    (r,) = ts.simulate_batch(cluster, [tr], [cfg], seeds=[0], scenario=sc)
    assert r.bind[2] == 40.0 and r.node_names[r.node[2]] in ("y", "z")
    # each pod's node and binding time as the Simulation's Bound events say
    sim = ts.Simulation(copy.deepcopy(objects), yaml.safe_load(Path(cfg).read_text()), "numba", 0)
    bound = {}
    sim.scheduler.subscribe("Bound", lambda e: bound.__setitem__(
        e["pod"], (e["node"], sim.clock.now())))
    sim.scenario(sc)
    sim.submit(ts.read_trace(tr))
    sim.run()
    keys = [p.key for p in s.prober.pods]
    assert bound == {k: (r.node_names[n], float(t)) for k, n, t in zip(keys, r.node, r.bind)
                     if n >= 0}
    for seed in (0, 1, 2, 3):
        jobs = S.make_jobs([tr], [seed], configs=[cfg], cluster=cluster, scenario=sc,
                           interval=15.0)
        got, rest = _batched(jobs)
        assert rest == []
        _same(got, _rows(jobs, False))


def _no_preemption() -> dict:
    cfg = config(0)
    cfg["profiles"][0]["plugins"] = {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}
    return cfg


def _check(tmp_path, objs, trace, steps, cfg=None, seeds=(0, 3), interval=10.0):
    """Write the inputs, run ``simulate_batch`` (seed 0), compare each
    job's batched row with its Simulation's; the LocalRun and the rows."""
    cluster, tr, cf, sc = _write(tmp_path, objs, trace, steps, cfg)
    (r,) = ts.simulate_batch(cluster, [tr], [cf], seeds=[0], scenario=sc)
    jobs = S.make_jobs([tr], list(seeds), configs=[cf], cluster=cluster, scenario=sc,
                       interval=interval)
    got, rest = _batched(jobs)
    assert rest == []
    want = _rows(jobs, False)
    _same(got, want)
    return r, want


@pytest.mark.parametrize("holder", ["bound", "created"])
def test_a_deleted_pod_wakes_a_pod_waiting_on_resources(tmp_path, holder):
    # ``big`` holds 1500m of n0's 2 cpus (the manifests' bound pod, or a
    # pod the scenario created at 0); p0 (1 cpu) fails on NodeResourcesFit
    # at 1 and waits; ``big``'s delete at 50 frees n0 (Pod/Delete) and p0
    # binds then, on its second attempt
    objs = [node_dict("n0", cpu="2", memory="4Gi")]
    steps = [{"at": 50, "delete": {"kind": "Pod", "name": "big"}}]
    if holder == "bound":
        objs.append(_bound("big", "n0"))
        objs[-1]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1500m"
    else:
        steps.insert(0, {"at": 0, "create": pod_dict("big", cpu="1500m", memory="1Gi")})
    trace = "name,arrival,departure,cpu,memory\np0,1,,1,1Gi\n"
    r, want = _check(tmp_path, objs, trace, steps)
    p0 = 0 if holder == "bound" else 1      # a pod created at 0 comes first
    assert r.bind[p0] == 50.0 and r.tries[p0] == 2
    assert want[0]["deleted"] == 1 and want[0]["pending"] == 0
    if holder == "created":
        assert r.why[0] == WHY_DELETED and r.bind[0] == 0.0


def test_a_created_high_priority_pod_jumps_the_queue(tmp_path):
    # at 10 the scenario creates lo (priority 0) and then hi (1000), each
    # 1500m of n0's 2 cpus: PrioritySort pops hi first and it binds, lo
    # waits; created before the trace's p1 arriving then too (p1 fits
    # beside hi only: 500m)
    objs = [node_dict("n0", cpu="2", memory="4Gi")]
    steps = [{"at": 10, "create": pod_dict("lo", cpu="1500m", memory="1Gi")},
             {"at": 10, "create": pod_dict("hi", cpu="1500m", memory="1Gi", priority=1000)}]
    trace = "name,arrival,departure,cpu,memory\np0,1,5,100m,1Gi\np1,10,,500m,1Gi\n"
    r, want = _check(tmp_path, objs, trace, steps, _no_preemption())
    # the pods: p0, then at 10 the created lo and hi before the trace's p1
    assert r.bind[2] == 10.0 and r.node[1] == -1 and r.bind[3] == 10.0
    assert want[0]["pending"] == 1 and want[0]["scheduled"] == 3


def test_deleting_a_pending_pod_removes_it(tmp_path):
    # w0 (the manifests') and huge (created at 3) fit nowhere and wait;
    # their deletes at 20 take them out of the queue (no cluster event:
    # nothing else moves), counted deleted, not pending
    objs = [node_dict("n0", cpu="2", memory="4Gi"), pod_dict("w0", cpu="5", memory="1Gi")]
    steps = [{"at": 3, "create": pod_dict("huge", cpu="9", memory="1Gi")},
             {"at": 20, "delete": {"kind": "Pod", "name": "huge"}},
             {"at": 20, "delete": {"kind": "Pod", "name": "w0"}}]
    trace = "name,arrival,departure,cpu,memory\np0,1,,1,1Gi\np1,20,,3,1Gi\n"
    r, want = _check(tmp_path, objs, trace, steps)
    assert list(r.why) == [WHY_DELETED, 0, WHY_DELETED, 0]
    assert want[0]["deleted"] == 2 and want[0]["pending"] == 1


def test_a_delete_the_simulation_cannot_find_is_its_error(tmp_path):
    # the scenario is checked before the trace is submitted: a trace pod
    # is not found (the Simulation's ScenarioError), batched or not
    objs = [node_dict("n0", cpu="2", memory="4Gi")]
    trace = "name,arrival,departure,cpu,memory\np0,1,,1,1Gi\n"
    steps = [{"at": 5, "delete": {"kind": "Pod", "name": "p0"}}]
    cluster, tr, cfg, sc = _write(tmp_path, objs, trace, steps)
    with pytest.raises(ScenarioError, match="not found"):
        ts.simulate_batch(cluster, [tr], [cfg], seeds=[0], scenario=sc)
    with pytest.raises(ScenarioError, match="not found"):
        sim = ts.Simulation(S.run.cluster_objects(cluster=cluster),
                            yaml.safe_load(Path(cfg).read_text()))
        sim.scenario(sc)


def test_a_delete_goes_before_a_departure_of_its_time(tmp_path):
    # d binds at 0 and is due to leave at 50 (its duration); its delete at
    # 50 is on the agenda first (pushed with the scenario): Deleted, not
    # Departed, in the batch as in the Simulation
    objs = [node_dict("n0", cpu="2", memory="4Gi")]
    steps = [{"at": 0, "create": pod_dict("d", cpu="1", memory="1Gi"), "duration": 50},
             {"at": 50, "delete": {"kind": "Pod", "name": "d"}}]
    trace = "name,arrival,departure,cpu,memory\np0,1,,1500m,1Gi\n"
    r, want = _check(tmp_path, objs, trace, steps)
    assert r.why[0] == WHY_DELETED and r.bind[1] == 50.0
    assert want[0]["deleted"] == 1 and want[0]["departed"] == 0


def test_a_node_added_again_under_a_removed_name(tmp_path):
    # n1 (1 cpu) goes at 10 with its pod; n1 comes back at 20 with 4 cpus
    # (the universe holds it as n1.1, in the row n1 freed): p2 (2 cpus,
    # waiting for a node event) binds on it then
    objs = [node_dict("n0", cpu="1", memory="4Gi"), node_dict("n1", cpu="1", memory="4Gi")]
    steps = [{"at": 10, "removeNodes": ["n1"]},
             {"at": 20, "create": node_dict("n1", cpu="4", memory="4Gi")}]
    trace = "name,arrival,departure,cpu,memory\np0,1,,1,1Gi\np1,2,,1,1Gi\np2,3,,2,1Gi\n"
    r, want = _check(tmp_path, objs, trace, steps)
    assert r.bind[2] == 20.0 and r.node_names[r.node[2]] == "n1.1"
    assert r.node_names[r.node[0]] != r.node_names[r.node[1]]
    assert want[0]["deleted"] == 1 and want[0]["running"] == 2


@pytest.mark.parametrize("back", [50, 12])
def test_pods_failing_where_no_node_is_wait_for_any_event(tmp_path, back):
    # every node goes at 10: p1 and p2 fail with no node (rejected by no
    # plugin), each later arrival (p2's, the created s0's) moves them, a
    # bound pod's departure too; the node added back at ``back`` takes them
    objs = [node_dict("n0", cpu="4", memory="4Gi"), node_dict("n1", cpu="4", memory="4Gi")]
    steps = [{"at": 10, "removeNodes": ["n0", "n1"]},
             {"at": 14, "create": pod_dict("s0", cpu="1", memory="1Gi")},
             {"at": back, "addNodes": {"template": node_dict("x", cpu="4", memory="4Gi")}}]
    trace = ("name,arrival,departure,cpu,memory\np0,1,,1,1Gi\np1,11,,1,1Gi\n"
             "p2,13,,1,1Gi\np3,30,,1,1Gi\n")
    r, want = _check(tmp_path, objs, trace, steps, interval=5.0)
    assert want[0]["deleted"] == 1 and want[0]["pending"] == 0
    assert (r.bind[1:] >= back).all() and r.tries[1] >= 2
    if back == 50:
        # p1 tried at 11, again after the arrivals at 13 and 14 (backing
        # off), at 30 (p3's arrival), then at 50 on the node added
        assert r.tries[1] == 5 and want[0]["failed_attempts"] >= 8


def test_a_drain_leaves_a_queued_daemonset_pod(tmp_path):
    # agent-x (a DaemonSet's pod, created at 1) and p0 bind on n0, the one
    # schedulable node; n0's drain at 20 evicts p0 and leaves agent-x (its
    # requests still count: p1, arriving at 21, does not fit beside it)
    objs = [node_dict("n0", cpu="2", memory="4Gi"),
            node_dict("n1", cpu="2", memory="4Gi", unschedulable=True)]
    agent = _daemon_pod("agent-x")
    agent["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
    steps = [{"at": 1, "create": agent}, {"at": 20, "drain": "n0"},
             {"at": 30, "uncordon": "n0"}]
    trace = "name,arrival,departure,cpu,memory\np0,2,,1,1Gi\np1,21,,1500m,1Gi\n"
    r, want = _check(tmp_path, objs, trace, steps, interval=5.0)
    assert list(r.why) == [0, WHY_EVICTED, 0]
    assert r.node_names[r.node[0]] == "n0" and np.isnan(r.bind[2])
    assert want[0]["evicted"] == 1 and want[0]["running"] == 1 and want[0]["pending"] == 1
