"""``tensorsched sweep`` jobs of the openb profile with a scenario of node
steps (nodes added, cordoned, uncordoned, drained, removed) and Pod steps
(GPU-share pods created, created pods deleted) run as one batched call
(``experiments.sweep_openb_events``): every row equals the row of the
job's own Simulation (``batch=False``) but ``wall_seconds``."""
import copy
import dataclasses
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sweep_batch import HEADER, _write, _write_generic

from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_openb_events as E
from tensorsched.framework.capacity.batch_probe import BatchProfileError
from tensorsched.framework.simulation.scenario import load_scenario
from tensorsched.topology.gpu import read_openb_nodes
from tensorsched.topology.gpu_table import GpuTable
from tensorsched.topology.openb.batch import trace_workload
from tensorsched.topology.openb.batch_sim import BatchProfileError as ConfigRefused
from tensorsched.topology.openb.batch_sim import batch_config
from tensorsched.topology.openb.trace import openb_config, read_openb_trace

POLICIES = ("FGD", "Random", "BestFit", "DotProd", "GpuPacking", "GpuClustering")
TIMES = (0, 1, 3, 5, 30, 60, 100, 400, 700)


def _node(name: str, gpus: int, model: str = "T4", cpu: str = "16", mem: str = "32Gi",
          unschedulable: bool = False, taint: str = "", tie: str | None = None) -> dict:
    alloc = {"cpu": cpu, "memory": mem, "pods": "110"}
    labels = {"kubernetes.io/hostname": name}
    if tie is not None:         # OpenbTieRank's rank label
        labels["openb.tensorsched.io/tie"] = tie
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
        labels["nvidia.com/gpu.product"] = model
    spec = {"unschedulable": True} if unschedulable else {}
    if taint:       # an effect: a taint no trace pod tolerates
        spec["taints"] = [{"key": "dedicated", "value": "x", "effect": taint}]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": spec, "status": {"allocatable": alloc}}


def _pod(name: str, num: int = 1, milli: int = 1000, cpu: str = "1", mem: str = "1Gi",
         model: str = "", priority: int | None = None) -> dict:
    """A GPU-share Pod manifest (``num`` GPUs of ``milli`` each; 0: none)."""
    annos = {}
    if num:
        annos = {"alibabacloud.com/gpu-milli": str(milli), "alibabacloud.com/gpu-count": str(num)}
        if model:
            annos["alibabacloud.com/gpu-card-model"] = model
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu,
                                                                   "memory": mem}}}]}
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "annotations": annos},
            "spec": spec}


def _random_scenario(rng, n_nodes: int, pods: bool = False, gone: bool = False) -> dict:
    """Valid node steps in time order: never a step on an absent node; the
    last node removed now and then; a removed node's name now and then
    added again; added nodes now and then with an OpenbTieRank label.
    ``pods``: GPU-share pods created too (some with a duration or a
    priority), a created one now and then deleted later (while it cannot
    have left; ``gone``: any time after its creation, also when it may
    have left)."""
    present = [f"n{i}" for i in range(n_nodes)]
    steps, added, removed = [], 0, []
    made = []               # (name, created at, its duration or None), not deleted
    n_made = 0
    leaves = []             # times of drains and removals
    kinds = ["cordon", "uncordon", "drain", "add", "remove"] + (
        ["pod", "pod", "unpod", "unpod"] if pods else [])
    for t in sorted(rng.choice(TIMES, size=int(rng.integers(1, 7 + 3 * pods))).tolist()):
        what = rng.choice(kinds)
        if what == "pod":
            for _ in range(int(rng.integers(1, 3))):
                name = f"c{n_made}"
                n_made += 1
                num, milli = [(1, 1000), (1, 500), (2, 1000), (0, 0), (1, 300)][
                    int(rng.integers(5))]
                step = {"at": t, "create": _pod(
                    name, num, milli, str(rng.choice(["0", "1", "4"])),
                    str(rng.choice(["0", "2Gi", "8Gi"])), "T4" if rng.random() < 0.1 else "",
                    int(rng.choice([0, 10, 1000])) if rng.random() < 0.3 else None)}
                dur = float(rng.choice([5, 60, 700])) if rng.random() < 0.4 else None
                if dur is not None:
                    step["duration"] = dur
                steps.append(step)
                made.append((name, t, dur))
            continue
        if what == "unpod":
            ok = [m for m in made if m[1] < t and (gone or (
                m[2] is None or t <= m[1] + m[2]) and not any(m[1] < x < t for x in leaves))]
            if ok:
                m = ok[int(rng.integers(len(ok)))]
                made.remove(m)
                steps.append({"at": t, "delete": {"kind": "Pod", "name": m[0],
                                                  "namespace": "default"}})
            continue
        if what in ("drain", "remove"):
            leaves.append(t)
        if what == "add":
            names = [f"x{added + k}" for k in range(int(rng.integers(1, 3)))]
            added += len(names)
            if removed and rng.random() < 0.4:
                names[0] = removed.pop(0)
            for nm in names:
                steps.append({"at": t, "create": _node(
                    nm, int(rng.choice([0, 1, 2, 4])), str(rng.choice(["T4", "V100M16"])),
                    unschedulable=bool(rng.random() < 0.2), taint=str(rng.choice(
                        ["", "", "", "NoSchedule", "NoExecute", "PreferNoSchedule"])),
                    tie=str(int(rng.integers(0, 2 * n_nodes + 2))) if rng.random() < 0.5
                    else None)})
            present += names
        elif what == "remove":
            if len(present) > 1 or (present and rng.random() < 0.5):
                nm = present.pop(int(rng.integers(len(present))))
                removed.append(nm)
                steps.append({"at": t, "removeNodes": [nm]} if rng.random() < 0.5 else
                             {"at": t, "delete": {"kind": "Node", "name": nm}})
        elif present:
            steps.append({"at": t, what: str(rng.choice(present))})
    return {"steps": steps}


def _rows(jobs, batch: bool):
    jobs = [dataclasses.replace(j, batch=batch) for j in jobs]
    return S.run_sweep(jobs, workers=1).drop(["wall_seconds"]).to_pylist()


def _counted(monkeypatch) -> list:
    calls = []
    real = E.openb_event_runs
    monkeypatch.setattr(E, "openb_event_runs", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def _equal(tmp_path, monkeypatch, nodes, pods, scenario: dict, policies, seeds, interval):
    sc = tmp_path / "scenario.json"
    sc.write_text(json.dumps(scenario))
    jobs = S.make_jobs([pods], seeds, policies=list(policies), nodes=nodes, interval=interval,
                       scenario=str(sc))
    inputs = S.load_inputs(jobs)
    if inputs[("typical", pods)] is None:       # no GPU ask: per job only
        return None
    try:
        E.plan_openb(read_openb_nodes(nodes), inputs[("scenario", str(sc))],
                     inputs[("trace", pods)])
        refused = False
    except BatchProfileError:
        refused = True                          # (the per-job path runs them)
    calls = _counted(monkeypatch)
    b = _rows(jobs, True)
    assert calls == ([] if refused else [1])    # every job in one batched call
    assert b == _rows(jobs, False)
    return b


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 4), n_pods=st.integers(1, 30),
       interval=st.sampled_from([7.0, 60.0, 3600.0]), generic=st.booleans())
def test_rows_equal_each_simulation_under_node_steps(tmp_path, monkeypatch, seed, n_nodes,
                                                     n_pods, interval, generic):
    """Random node steps on random small CSV clusters and traces with
    departures (generic traces: durations, priorities); three of the six
    policies per example, in turn, two seeds."""
    write = _write_generic if generic else _write
    nodes, pods = write(tmp_path, seed, n_nodes, n_pods)
    scenario = _random_scenario(np.random.default_rng(seed), n_nodes)
    k = seed % 2
    _equal(tmp_path, monkeypatch, nodes, pods, scenario, POLICIES[k::2], [0, 1 + seed % 7],
           interval)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_pods=st.integers(1, 20),
       generic=st.booleans())
def test_rows_equal_each_simulation_under_node_and_pod_steps(tmp_path, monkeypatch, seed,
                                                             n_nodes, n_pods, generic):
    """Random node steps with Pod creates (GPU shares, durations,
    priorities) and deletes of the created pods; two of the six policies
    per example, in turn."""
    write = _write_generic if generic else _write
    nodes, pods = write(tmp_path, seed, n_nodes, n_pods)
    scenario = _random_scenario(np.random.default_rng(seed), n_nodes, pods=True)
    k = seed % 3
    _equal(tmp_path, monkeypatch, nodes, pods, scenario, POLICIES[k::3], [1 + seed % 7], 60.0)


def test_random_scenarios_are_mostly_covered():
    """The generator's scenarios are ones the engine takes (the equality
    tests above then run them batched), not refusals; half of them create
    pods, and delete some."""
    took = made = deleted = 0
    with tempfile.TemporaryDirectory() as d:
        for seed in range(20):
            nodes, pods = _write(Path(d), seed, 1 + seed % 4, 5)
            try:
                plan = E.plan_openb(read_openb_nodes(nodes), load_scenario(
                    _random_scenario(np.random.default_rng(seed), 1 + seed % 4, seed % 2 == 1)),
                    read_openb_trace(pods))
                took += 1
                made += len(plan.created)
                deleted += int((plan.events.ev_kind == E.EV_POD_DELETE).sum())
            except BatchProfileError:
                pass
    assert took >= 15 and made >= 5 and deleted >= 1


def _occupant(plan, row: int, t: float) -> str:
    """The node on local ``row`` at ``t`` (after that time's node events)."""
    ev = plan.events
    x = int(ev.row0[row])
    for te, kind, r, xe in zip(ev.ev_t.tolist(), ev.ev_kind.tolist(), ev.ev_row.tolist(),
                               ev.ev_x.tolist()):
        if te <= t and kind == E.EV_ADD and r == row:
            x = xe
    return plan.names[x]


@pytest.mark.parametrize("seed", [2, 9, 21])
def test_placements_and_gpu_indices_are_each_simulations(tmp_path, seed):
    """Each pod's node (by name) and GPU indices in the batched run are the
    ones its Simulation binds it to, under random node steps, six policies."""
    nodes, pods = _write_generic(tmp_path, seed, 3, 30)
    scenario = load_scenario(_random_scenario(np.random.default_rng(seed), 3))
    inv = read_openb_nodes(nodes)
    trace = run.read_trace_file(pods)
    plan = E.plan_openb(inv, scenario, trace)
    tw = trace_workload(trace)
    tw.typical = run.typical_of(trace)
    jobs = [(0, p, seed) for p in POLICIES]
    a, out = E.openb_event_runs(inv, plan, [tw], jobs)
    names = tw.pods.names
    for b, (_t, policy, s) in enumerate(jobs):
        sim = run.build_simulation(run.cluster_objects(nodes=nodes), run.choose_config(
            None, policy, True, tw.typical), "numba", s, interval=60.0, typical=tw.typical)
        sim.scenario(copy.deepcopy(scenario))
        got = {}

        def bound(e, sim=sim, got=got):
            gt = GpuTable.attached(sim.cluster.state)
            al = gt.alloc.get(e["pod"]) if gt is not None else None
            got[e["pod"].split("/", 1)[1]] = (e["node"], tuple(al.indices) if al is not None
                                              and al.indices else ())
        sim.on("Bound", bound)
        sim.submit(trace)
        sim.run()
        o = int(a.ev_off[b])
        mine = {}
        for j, name in enumerate(names):
            row = int(out.node[o + j])
            if row >= 0:
                gm = int(out.gmask[o + j])
                mine[name] = (_occupant(plan, row, float(out.bind[o + j])),
                              tuple(g for g in range(16) if (gm >> g) & 1))
        assert mine == got, policy
        assert got, policy


def _one_gpu_cluster(tmp_path):
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,8000,16384,1,T4\n")
    return str(tmp_path / "n.csv")


def test_a_pod_waiting_for_gpus_binds_when_a_node_is_added(tmp_path, monkeypatch):
    nodes = _one_gpu_cluster(tmp_path)
    (tmp_path / "p.csv").write_text(HEADER + "a,1000,1024,1,1000,,LS,Running,0,,0\n"
                                    "b,1000,1024,1,1000,,LS,Running,2,,2\n")
    rows = _equal(tmp_path, monkeypatch, nodes, str(tmp_path / "p.csv"),
                  {"steps": [{"at": 50, "addNodes": {"template": _node("extra", 1),
                                                     "count": 1}}]}, POLICIES, [0], 10.0)
    for r in rows:
        # b fails at 2 and binds on the added node at 50: its latency is 48 s
        assert r["scheduled"] == 2 and r["failed_attempts"] == 1
        assert r["latency_p99"] == pytest.approx(48 * 0.99 + 0.0 * 0.01, rel=1e-9) \
            or r["latency_p99"] > 40


def test_a_drain_evicts_the_nodes_pods(tmp_path, monkeypatch):
    """n0 drained at 10: a and c evicted (not requeued), the node cordoned:
    b (arriving at 20) waits for the uncordon at 100."""
    nodes = _one_gpu_cluster(tmp_path)
    (tmp_path / "p.csv").write_text(HEADER + "a,1000,1024,1,1000,,LS,Running,0,,0\n"
                                    "b,1000,1024,1,1000,,LS,Running,20,,20\n"
                                    "c,0,0,0,0,,LS,Running,0,50,0\n")
    rows = _equal(tmp_path, monkeypatch, nodes, str(tmp_path / "p.csv"),
                  {"steps": [{"at": 10, "drain": "n0"}, {"at": 100, "uncordon": "n0"}]},
                  POLICIES, [0], 10.0)
    for r in rows:
        assert r["evicted"] == 2 and r["running"] == 1 and r["departed"] == 0
        assert r["scheduled"] == 3 and r["failed_attempts"] == 1


def test_a_pod_rejected_by_cordons_only_waits_for_a_node_event(tmp_path, monkeypatch):
    """Both nodes cordoned at 10: b (arriving at 20) is rejected by
    NodeUnschedulable alone, so d's departure at 50 (a Pod/Delete) leaves
    it waiting; the uncordons at 100 (Node/Update) bind it."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                                    "n0,8000,16384,1,T4\nn1,8000,16384,1,T4\n")
    (tmp_path / "p.csv").write_text(HEADER + "a,1000,1024,1,1000,,LS,Running,0,,0\n"
                                    "d,1000,1024,1,1000,,LS,Running,0,50,0\n"
                                    "b,1000,1024,1,1000,,LS,Running,20,,20\n")
    rows = _equal(tmp_path, monkeypatch, str(tmp_path / "n.csv"), str(tmp_path / "p.csv"),
                  {"steps": [{"at": 10, "cordon": ["n0", "n1"]},
                             {"at": 100, "uncordon": ["n0", "n1"]}]}, POLICIES, [0, 2], 10.0)
    for r in rows:
        assert r["scheduled"] == 3 and r["failed_attempts"] == 1 and r["departed"] == 1


def test_an_added_node_tainted_unschedulable_or_without_pod_slots(tmp_path, monkeypatch):
    """A node added with the unschedulable taint takes no pod until its
    uncordon; one without ``pods`` allocatable takes none at all (the
    Simulation's NodeResourcesFit): b binds at 70, on the first."""
    nodes = _one_gpu_cluster(tmp_path)
    (tmp_path / "p.csv").write_text(HEADER + "a,1000,1024,1,1000,,LS,Running,0,,0\n"
                                    "b,1000,1024,1,1000,,LS,Running,2,,2\n")
    tainted = _node("x0", 2)
    tainted["spec"] = {"taints": [{"key": "node.kubernetes.io/unschedulable",
                                   "effect": "NoSchedule"}]}
    slotless = _node("x1", 2)
    del slotless["status"]["allocatable"]["pods"]
    rows = _equal(tmp_path, monkeypatch, nodes, str(tmp_path / "p.csv"),
                  {"steps": [{"at": 50, "create": tainted}, {"at": 60, "create": slotless},
                             {"at": 70, "uncordon": "x0"}]}, POLICIES, [0], 10.0)
    for r in rows:
        assert r["scheduled"] == 2 and r["latency_p99"] > 60


def test_a_pod_asking_for_a_new_gpu_model_binds_on_the_added_node(tmp_path, monkeypatch):
    """b asks for an A100, a model the node list lacks: it waits until a
    node of that model joins at 40 (typical pods of that model count
    in the fragmentation from then on)."""
    nodes = _one_gpu_cluster(tmp_path)
    (tmp_path / "p.csv").write_text(HEADER + "a,1000,1024,1,500,,LS,Running,0,,0\n"
                                    "b,1000,1024,1,500,A100,LS,Running,2,,2\n"
                                    "c,1000,1024,1,300,A100,LS,Running,3,90,3\n")
    rows = _equal(tmp_path, monkeypatch, nodes, str(tmp_path / "p.csv"),
                  {"steps": [{"at": 40, "create": _node("x0", 2, model="A100")}]}, POLICIES,
                  [0], 10.0)
    for r in rows:
        assert r["scheduled"] == 3 and r["latency_p99"] > 30


def test_curves_after_a_removal(tmp_path, monkeypatch):
    """A node removed with its pods: they are deleted, the GPU curves then
    divide by the GPUs left."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                                    "n0,8000,16384,2,T4\nn1,8000,16384,4,T4\n")
    (tmp_path / "p.csv").write_text(HEADER + "".join(
        f"p{k},1000,1024,1,{500 + 100 * k},,LS,Running,{k},,{k}\n" for k in range(5)))
    rows = _equal(tmp_path, monkeypatch, str(tmp_path / "n.csv"), str(tmp_path / "p.csv"),
                  {"steps": [{"at": 30, "removeNodes": ["n1"]}]}, POLICIES, [0, 5], 10.0)
    assert any(r["deleted"] > 0 for r in rows)
    assert all(r["deleted"] + r["running"] == 5 for r in rows)


def test_a_node_added_again_under_a_removed_name(tmp_path, monkeypatch):
    """n1 removed at 10 with its pod, added again at 20 with 4 GPUs (the
    universe's ``n1.1``), cordoned at 40 (the new one): rows equal each
    job's Simulation."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                                    "n0,8000,16384,1,T4\nn1,8000,16384,1,T4\n")
    (tmp_path / "p.csv").write_text(HEADER + "".join(
        f"p{k},1000,1024,1,1000,,LS,Running,{k},,{k}\n" for k in range(2)) + "".join(
        f"q{k},1000,1024,1,1000,,LS,Running,{30 + 20 * k},,{30 + 20 * k}\n"
        for k in range(4)))
    steps = [{"at": 10, "removeNodes": ["n1"]}, {"at": 20, "create": _node("n1", 4)},
             {"at": 40, "cordon": "n1"}]
    rows = _equal(tmp_path, monkeypatch, str(tmp_path / "n.csv"), str(tmp_path / "p.csv"),
                  {"steps": steps}, POLICIES, [0, 3], 10.0)
    for r in rows:
        # q0 binds on the new n1 at 30, q1..q3 wait: n0 full, n1 cordoned
        assert r["deleted"] == 1 and r["scheduled"] == 3
    plan = _plan(tmp_path, [{"at": 10, "create": _node("x", 1)},
                            {"at": 11, "removeNodes": ["x"]}, {"at": 12, "create": _node("x", 2)},
                            {"at": 13, "removeNodes": ["x"]}, {"at": 14, "create": _node("x", 1)},
                            {"at": 15, "cordon": "x"}])
    assert plan.names == ["n0", "x", "x.1", "x.2"]
    assert plan.events.ev_row.tolist() == [1, 1, 1, 1, 1, 1]


def test_nodes_added_with_taints(tmp_path, monkeypatch):
    """x0 (NoSchedule) and x1 (NoExecute) take no trace pod, not even after
    an uncordon or a drain of theirs; x2 (PreferNoSchedule) takes them."""
    nodes = _one_gpu_cluster(tmp_path)
    (tmp_path / "p.csv").write_text(HEADER + "a,1000,1024,1,1000,,LS,Running,0,,0\n" + "".join(
        f"b{k},1000,1024,1,1000,,LS,Running,{2 + k},,{2 + k}\n" for k in range(3)))
    steps = [{"at": 10, "create": _node("x0", 2, taint="NoSchedule")},
             {"at": 10, "create": _node("x1", 2, taint="NoExecute", unschedulable=True)},
             {"at": 20, "uncordon": ["x0", "x1"]}, {"at": 30, "drain": "x0"},
             {"at": 40, "cordon": "x1"}, {"at": 50, "uncordon": "x1"},
             {"at": 60, "create": _node("x2", 1, taint="PreferNoSchedule")}]
    rows = _equal(tmp_path, monkeypatch, nodes, str(tmp_path / "p.csv"), {"steps": steps},
                  POLICIES, [0, 4], 10.0)
    for r in rows:
        assert r["scheduled"] == 2 and r["latency_p99"] > 50


def test_pods_wait_while_no_node_is_left(tmp_path, monkeypatch):
    """n0 removed at 5: b (arriving at 10) fails where no node is and is
    moved by c's arrival at 20 (fails again) and by x0's add at 50."""
    nodes = _one_gpu_cluster(tmp_path)
    (tmp_path / "p.csv").write_text(HEADER + "a,1000,1024,1,1000,,LS,Running,0,,0\n"
                                    "b,1000,1024,1,1000,,LS,Running,10,,10\n"
                                    "c,1000,1024,1,500,,LS,Running,20,,20\n")
    rows = _equal(tmp_path, monkeypatch, nodes, str(tmp_path / "p.csv"),
                  {"steps": [{"at": 5, "removeNodes": ["n0"]},
                             {"at": 50, "create": _node("x0", 2)}]}, POLICIES, [0, 1], 10.0)
    for r in rows:
        assert r["scheduled"] == 3 and r["deleted"] == 1 and r["failed_attempts"] >= 3


def _plan(tmp_path, steps, trace_lines="a,1000,1024,1,1000,,LS,Running,0,,0\n"):
    nodes = _one_gpu_cluster(tmp_path)
    (tmp_path / "p.csv").write_text(HEADER + trace_lines)
    sc = load_scenario({"steps": steps})
    return E.plan_openb(read_openb_nodes(nodes), sc, read_openb_trace(tmp_path / "p.csv"))


@pytest.mark.parametrize("steps,field", [
    ([{"at": 1, "create": {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": "x", "namespace": "default"},
                           "spec": {"containers": [{"name": "c"}]}}}], "steps[0].create"),
    ([{"at": 1, "create": _node("y", 1, model="")}], "steps[0].create"),
    ([{"at": 1, "cordon": "nope"}], "steps[0].cordon"),
    ([{"at": 1, "create": _node("n0", 1)}], "steps[0].create"),
    ([{"at": 1, "create": _node("y", 1, mem="1000")}], "steps[0].create"),
])
def test_refused_steps_name_their_field(tmp_path, steps, field):
    with pytest.raises(BatchProfileError, match=rf"^{field.replace('[', '.').replace(']', '.')}"):
        _plan(tmp_path, steps)


def test_refused_jobs_run_per_simulation(tmp_path):
    """A refused scenario's jobs take the per-job path (the same rows as
    ``batch=False``)."""
    nodes = _one_gpu_cluster(tmp_path)
    (tmp_path / "p.csv").write_text(HEADER + "a,1000,1024,1,1000,,LS,Running,0,,0\n")
    sc = tmp_path / "s.json"
    sc.write_text(json.dumps({"steps": [{"at": 1, "create": {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "default"},
        "spec": {"containers": [{"name": "c"}]}}}]}))
    jobs = S.make_jobs([str(tmp_path / "p.csv")], [0], policies=["FGD"], nodes=nodes,
                       scenario=str(sc))
    assert _rows(jobs, True) == _rows(jobs, False)


def _config(tmp_path, stem: str, policy: str, typical=None, weight: int = 1,
            backoff: tuple | None = None, preempt: bool = False) -> str:
    """A KubeSchedulerConfiguration file of the openb profile (``openb_config``)
    with GpuShareScore's ``weight``, the queue's ``backoff`` (initial, max
    seconds), ``preempt``: DefaultPreemption at postFilter."""
    cfg = openb_config(policy, typical)
    prof = cfg["profiles"][0]
    prof["plugins"]["score"]["enabled"][0]["weight"] = weight
    if backoff:
        cfg["podInitialBackoffSeconds"], cfg["podMaxBackoffSeconds"] = backoff
    if preempt:
        prof["plugins"]["postFilter"] = {"enabled": [{"name": "DefaultPreemption"}]}
    path = tmp_path / f"{stem}.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def _weights_counted(monkeypatch) -> list:
    """Per batched call, the (GpuShareScore, OpenbTieRank) weight of each run."""
    calls = []
    real = E.openb_event_runs

    def counted(*a, **k):
        calls.append(list(k.get("weights") or [(1, 0)] * len(a[3])))
        return real(*a, **k)
    monkeypatch.setattr(E, "openb_event_runs", counted)
    return calls


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_pods=st.integers(2, 20),
       generic=st.booleans())
def test_config_jobs_run_batched_equal_to_each_simulation(tmp_path, monkeypatch, seed, n_nodes,
                                                          n_pods, generic):
    """``--config`` jobs of the openb profile (GpuShareScore's weight, its
    policy, FGD with the trace's own typical pods, another backoff) beside
    a policy job, under random node and Pod steps: one batched call per
    backoff, each with the configs' weights, rows equal to each job's own
    Simulation."""
    write = _write_generic if generic else _write
    nodes, pods = write(tmp_path, seed, n_nodes, n_pods)
    typical = run.typical_of(run.read_trace_file(pods))
    if typical is None:                         # no GPU ask: per job only
        return
    configs = [_config(tmp_path, "bestfit3", "BestFit", weight=3),
               _config(tmp_path, "dotprod", "DotProd", typical, weight=2),
               _config(tmp_path, "fgd_own", "FGD", typical, backoff=(2, 20))]
    sc = tmp_path / "scenario.json"
    sc.write_text(json.dumps(_random_scenario(np.random.default_rng(seed), n_nodes, pods=True)))
    jobs = S.make_jobs([pods], [1 + seed % 5], configs=configs, policies=[POLICIES[seed % 6]],
                       nodes=nodes, interval=60.0, scenario=str(sc))
    inputs = S.load_inputs(jobs)
    try:
        E.plan_openb(read_openb_nodes(nodes), inputs[("scenario", str(sc))],
                     inputs[("trace", pods)])
        refused = False
    except BatchProfileError:
        refused = True
    calls = _weights_counted(monkeypatch)
    assert _rows(jobs, True) == _rows(jobs, False)
    assert sorted(calls) == ([] if refused else [[(1, 0)], [(3, 0), (2, 0), (1, 0)]])


def test_config_jobs_the_kernel_does_not_run_go_per_job(tmp_path, monkeypatch):
    """FGD learning its typical pods (no ``typicalPods``), DefaultPreemption
    (refused by name), a profile of another scheduler: those jobs run per
    job (rows equal to ``batch=False``); the policy job and FGD with other
    typical pods than the trace's (``test_sweep_typical``) batched."""
    nodes, pods = _write(tmp_path, 3, 2, 12)
    typical = run.typical_of(run.read_trace_file(pods))
    other = _config(tmp_path, "other_sched", "BestFit")
    cfg = json.loads(Path(other).read_text())
    cfg["profiles"][0]["schedulerName"] = "mine"
    Path(other).write_text(json.dumps(cfg))
    configs = [_config(tmp_path, "fgd_learns", "FGD"),
               _config(tmp_path, "fgd_other", "FGD", typical[:1]),
               _config(tmp_path, "preempts", "BestFit", preempt=True), other]
    sc = tmp_path / "scenario.json"
    sc.write_text(json.dumps({"steps": [{"at": 5, "cordon": "n0"},
                                        {"at": 10, "create": _pod("c0", 1, 500)},
                                        {"at": 40, "create": _node("x0", 2)},
                                        {"at": 90, "uncordon": "n0"}]}))
    jobs = S.make_jobs([pods], [0], configs=configs, policies=["GpuPacking"], nodes=nodes,
                       interval=30.0, scenario=str(sc))
    inputs = S.load_inputs(jobs)
    assert [E.job_profile(j, inputs, run.DEFAULT_POLICY) for j in jobs[:4]] == \
        [None, ("FGD", (1, 0), (1.0, 10.0)), None, None]
    with pytest.raises(ConfigRefused, match="DefaultPreemption"):
        batch_config(inputs[("config", configs[2])], configs[2])
    calls = _weights_counted(monkeypatch)
    assert _rows(jobs, True) == _rows(jobs, False)
    assert calls == [[(1, 0), (1, 0)]]


def test_policy_jobs_score_with_gpushare_alone(tmp_path):
    """The sweep's policy job is ``openb_config(policy)``: GpuShareScore
    alone; with ``tie_rank`` the experiment's profile (OpenbTieRank under
    GpuShareScore's weight n + 1; Random without it), and a config
    enabling OpenbTieRank gives its two weights."""
    nodes, pods = _write(tmp_path, 4, 2, 5)
    sc = tmp_path / "scenario.json"
    sc.write_text(json.dumps({"steps": [{"at": 5, "cordon": "n0"}]}))
    jobs = S.make_jobs([pods], [7], policies=["Random"], nodes=nodes, scenario=str(sc))
    assert E.job_profile(jobs[0], S.load_inputs(jobs), run.DEFAULT_POLICY) == \
        ("Random", (1, 0), (1.0, 10.0))
    jobs = S.make_jobs([pods], [7], policies=["Random", "BestFit"], nodes=nodes,
                       scenario=str(sc), tie_rank=True)
    inputs = S.load_inputs(jobs)
    assert [E.job_profile(j, inputs, run.DEFAULT_POLICY) for j in jobs] == \
        [("Random", (1, 0), (1.0, 10.0)), ("BestFit", (3, 1), (1.0, 10.0))]
    tie = tmp_path / "tie.json"
    tie.write_text(json.dumps(openb_config("BestFit", None, 3)))
    jobs = S.make_jobs([pods], [0], configs=[str(tie)], nodes=nodes, scenario=str(sc))
    assert E.job_profile(jobs[0], S.load_inputs(jobs), run.DEFAULT_POLICY) == \
        ("BestFit", (3, 1), (1.0, 10.0))
