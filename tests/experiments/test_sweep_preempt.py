"""DefaultPreemption inside the node-local trace kernel's queue
(``experiments/sweep_preempt.py``, ``kernels/batch/_local_preempt.py``):
jobs where a pod could preempt run batched and every row equals the row
of the job's own Simulation (``batch=False``) but ``wall_seconds``, on
small random clusters (tainted and unschedulable nodes: candidates whose
status is unresolvable; high-priority bound pods; pending pods of the
manifests with priorities, some with preemptionPolicy Never) and traces
with priorities (high-priority pods arriving when the cluster is full,
departures at a time or a duration after the binding), under
configurations that differ in scoring, percentageOfNodesToScore and
DefaultPreemption's candidate count; targeted cases of the nomination;
PodDisruptionBudgets (random ones in the manifests; targeted: a node whose
victims violate one loses, violating victims reprieved first, the
allowance recounted as pods leave); what the kernel does not cover is
refused by name."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import tensorsched as ts
from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_local as SL
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels.batch import local_preempt as LP

from support.local_clusters import config
from support.preempt_inputs import write_inputs as _inputs


def _rows(jobs, batch: bool):
    jobs = [dataclasses.replace(j, batch=batch) for j in jobs]
    return S.run_sweep(jobs, workers=1).drop(["wall_seconds"]).to_pylist()


def _batched(jobs) -> tuple[list, list]:
    inputs = S.load_inputs(jobs)
    got: dict = {}
    rest = SL.batched_local(jobs, inputs, 1, lambda i, row, e: got.__setitem__(i, row))
    rows = [got.get(i) for i in range(len(jobs))]
    for r in rows:
        if r is not None:
            r.pop("wall_seconds")
    return rows, rest


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 5), n_pods=st.integers(1, 30),
       n_bound=st.integers(0, 2), interval=st.sampled_from([7.0, 60.0]))
# every job of this draw samples where the agenda is empty: all per run
@example(seed=9562, n_nodes=3, n_pods=23, n_bound=0, interval=7.0)
def test_preempting_rows_equal_each_simulation(tmp_path, seed, n_nodes, n_pods, n_bound,
                                               interval):
    cluster, trace, configs = _inputs(tmp_path, seed, n_nodes, n_pods, n_bound)
    jobs = S.make_jobs([trace], [0, 1 + seed % 7], configs=configs, cluster=cluster,
                       interval=interval)
    got, rest = _batched(jobs)
    want = _rows(jobs, False)
    # a job whose samples the agenda does not cover goes the per-run way;
    # a draw where every job does compares nothing (not a failure: the
    # batching itself is checked on fixed inputs, ``test_random_inputs_preempt``)
    assume(len(rest) < len(jobs))
    for i, (g, w) in enumerate(zip(got, want)):
        if i not in rest:
            assert g == w


def test_random_inputs_preempt(tmp_path):
    # the inputs above do preempt (the equality is not vacuous)
    total = 0
    for seed in range(4):
        cluster, trace, configs = _inputs(tmp_path, seed, 3, 25, 1)
        jobs = S.make_jobs([trace], [0], configs=configs[:1], cluster=cluster, interval=60.0)
        got, rest = _batched(jobs)
        assert rest == []
        total += got[0]["preemptions"]
    assert total > 0


def _one(tmp_path, objs, trace: str, cfg=None, seeds=(0,)):
    """The batched rows and per-run rows of a sweep of ``objs`` and ``trace``."""
    cl = tmp_path / "c.yaml"
    cl.write_text(yaml.safe_dump_all(objs))
    tr = tmp_path / "t.csv"
    tr.write_text(trace)
    more = {}
    if cfg is not None:
        (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
        more["configs"] = [str(tmp_path / "cfg.yaml")]
    jobs = S.make_jobs([str(tr)], list(seeds), cluster=str(cl), interval=10.0, **more)
    got, rest = _batched(jobs)
    assert rest == []
    return got, _rows(jobs, False)


def _placements(objs, trace_text: str, tmp_path, seed: int = 0):
    """(batched LocalRun, the Simulation's {pod: node} bound at the end, its
    Preempted pods)."""
    tr = tmp_path / "p.csv"
    tr.write_text(trace_text)
    (r,) = ts.simulate_batch(objs, [str(tr)], [None], seeds=[seed])
    sim = ts.Simulation(objs, None, "numba", seed)
    gone = []
    sim.scheduler.subscribe("Preempted", lambda e: gone.append(e["pod"]))
    sim.submit(run.read_trace_file(str(tr)))
    sim.run()
    state = sim.cluster.state
    bound = {k: state.node_name(state.pods.row_of(k)) for k in state.pods.keys()}
    return r, bound, gone


def test_preemptor_binds_on_its_nominated_node_after_its_victims_go(tmp_path):
    # two full nodes; hi (priority 1000) preempts the low pod of n1 (the
    # lower priority sum there), waits out its backoff and binds on n1
    objs = [node_dict("n0", cpu="2", memory="4Gi"), node_dict("n1", cpu="2", memory="4Gi")]
    trace = ("name,arrival,cpu,priority\na,0,2,10\nb,0,2,0\nhi,5,2,1000\n")
    r, bound, gone = _placements(objs, trace, tmp_path)
    names = r.node_names
    got = {f"default/{k}": names[n] for k, n, v in zip("ab", r.node[:2], r.victim[:2])
           if n >= 0 and not v}
    got["default/hi"] = names[r.node[2]]
    assert got == bound and gone == ["default/b"]
    assert r.victim.tolist() == [0, 1, 0] and names[r.node[1]] == names[r.node[2]]
    assert r.bind[2] > 5.0          # after its backoff, not in the preempting cycle
    got_rows, want = _one(tmp_path, objs, trace)
    assert got_rows == want and want[0]["preemptions"] == 1


def test_a_lower_priority_pod_cannot_take_the_nominated_room(tmp_path):
    # hi preempts v at 5 and backs off; lo (priority 10 > v's 0, below
    # hi's) arrives in between and would fit the freed room: the
    # nomination keeps it out (it waits), hi binds there
    objs = [node_dict("n0", cpu="2", memory="4Gi")]
    trace = "name,arrival,cpu,priority\nv,0,2,0\nhi,5,2,1000\nlo,5.2,2,10\n"
    r, bound, gone = _placements(objs, trace, tmp_path)
    assert gone == ["default/v"] and bound == {"default/hi": "n0"}
    assert r.victim.tolist() == [1, 0, 0] and r.node[1] == 0 and r.node[2] == -1
    got_rows, want = _one(tmp_path, objs, trace)
    assert got_rows == want
    # without the nomination lo would have bound first (it is attempted first)
    assert want[0]["scheduled"] == 2 and want[0]["pending"] == 1


def test_a_preemptor_whose_candidates_are_all_unresolvable_waits(tmp_path):
    # the only node with a low pod is tainted for hi: no candidate, no
    # preemption; hi waits until the low pod leaves
    taint = [{"key": "spot", "effect": "NoSchedule"}]
    low = pod_dict("low", cpu="2", memory="1Gi", priority=0,
                   spec={"tolerations": [{"key": "spot", "operator": "Exists"}]})
    objs = [node_dict("n0", cpu="2", memory="4Gi", taints=taint), low]
    objs.append(node_dict("n1", cpu="1", memory="4Gi"))
    trace = "name,arrival,departure,cpu,priority\nhi,5,,2,1000\nx,6,40,500m,0\n"
    got, want = _one(tmp_path, objs, trace)
    assert got == want and want[0]["preemptions"] == 0


def test_the_manifests_bound_pods_are_victims_too(tmp_path):
    # b0 (priority 0) and b2 (10) fill n0, b1 (5000) half of n1; hi
    # (1000, 2 cpu) can only take n0: both go, most important first; the
    # rows count them preempted and no longer running
    objs = [node_dict("n0", cpu="2", memory="4Gi"), node_dict("n1", cpu="2", memory="4Gi")]
    for name, cpu, prio, node in (("b0", "1", 0, "n0"), ("b1", "1", 5000, "n1"),
                                  ("b2", "1", 10, "n0")):
        p = pod_dict(name, cpu=cpu, memory="256Mi", priority=prio)
        p["spec"]["nodeName"] = node
        objs.append(p)
    trace = "name,arrival,cpu,priority\nhi,5,2,1000\n"
    r, bound, gone = _placements(objs, trace, tmp_path)
    assert gone == ["default/b2", "default/b0"] and bound["default/hi"] == "n0"
    assert r.victim.tolist() == [0, 1, 0, 1] and r.node_names[r.node[0]] == "n0"
    got, want = _one(tmp_path, objs, trace, seeds=(0, 4))
    assert got == want and want[0]["preemptions"] == 2 and want[0]["running"] == 2


@pytest.mark.parametrize("policy,preempted", [("Never", 0), ("PreemptLowerPriority", 1)])
def test_never_policy_does_not_preempt(tmp_path, policy, preempted):
    # x (2000) binds first, "w" (1000) fails, v (0) takes the rest; when x
    # leaves, w could preempt v: only without preemptionPolicy Never
    objs = [node_dict("n0", cpu="2", memory="4Gi"),
            pod_dict("w", cpu="2", memory="1Gi", priority=1000,
                     spec={"preemptionPolicy": policy})]
    trace = "name,arrival,departure,cpu,priority\nx,0,30,1,2000\nv,0,,1,0\n"
    got, want = _one(tmp_path, objs, trace, seeds=(0, 1))
    assert got == want and want[0]["preemptions"] == preempted
    assert want[0]["pending"] == 1 - preempted


def test_a_partial_scan_of_a_full_cluster_equals_each_simulation(tmp_path):
    # 102 one-cpu nodes (over 100: percentageOfNodesToScore 50 scans from
    # the rotating start, nominated nodes counted in the scan), filled by
    # low pods, then high ones preempting among few candidates
    rng = np.random.default_rng(7)
    objs = [node_dict(f"n{i:03d}", cpu="1", memory="4Gi", pods="3") for i in range(102)]
    rows = ["name,arrival,departure,cpu,priority"]
    for j in range(150):
        low = j < 105
        dep = str(j // 2 + int(rng.integers(5, 90))) if not low and rng.random() < 0.3 else ""
        prio = 0 if low else int(rng.choice([10, 1000]))
        rows.append(f"p{j},{j // 2},{dep},{'1' if low else rng.choice(['500m', '1'])},{prio}")
    cfg = config(1, pct=50)
    cfg["profiles"][0]["pluginConfig"].append({"name": "DefaultPreemption", "args": {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "DefaultPreemptionArgs",
        "minCandidateNodesPercentage": 2, "minCandidateNodesAbsolute": 1}})
    got, want = _one(tmp_path, objs, "\n".join(rows) + "\n", cfg, seeds=(0, 9))
    assert got == want and min(w["preemptions"] for w in want) > 10


def _pdb(name: str, app: str, **spec) -> dict:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": dict(spec, selector={"matchLabels": {"app": app}})}


def _bound(name: str, node: str, cpu: str, prio: int, app: str = "none") -> dict:
    p = pod_dict(name, cpu=cpu, memory="256Mi", priority=prio, labels={"app": app})
    p["spec"]["nodeName"] = node
    return p


def _two_nodes() -> list:
    return [node_dict("n0", cpu="2", memory="4Gi"), node_dict("n1", cpu="2", memory="4Gi")]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_node_whose_victims_violate_a_pdb_loses(tmp_path, seed):
    # n0's victim (priority 0) beats n1's (10) on priority, but a PDB
    # (minAvailable 1 of 1: no disruption allowed) covers it: n1 wins
    objs = _two_nodes() + [_bound("a", "n0", "2", 0, "guard"), _bound("b", "n1", "2", 10),
                           _pdb("keep", "guard", minAvailable=1)]
    trace = "name,arrival,cpu,priority\nhi,5,2,1000\n"
    r, bound, gone = _placements(objs, trace, tmp_path, seed)
    assert gone == ["default/b"] and bound["default/hi"] == "n1"
    assert r.victim.tolist() == [0, 0, 1]
    got, want = _one(tmp_path, objs, trace, seeds=(seed,))
    assert got == want and want[0]["preemptions"] == 1


def test_pdb_violating_victims_are_reprieved_first(tmp_path):
    # hi needs 1 of n0's 2 cpus: b (priority 5) is more important than a
    # (0) and would be reprieved first, leaving a the victim; a violates
    # its PDB (disruptionsAllowed 0 in its status), so a is reprieved
    # first and b goes
    objs = [node_dict("n0", cpu="2", memory="4Gi"), _bound("a", "n0", "1", 0, "guard"),
            _bound("b", "n0", "1", 5),
            dict(_pdb("keep", "guard", maxUnavailable=3), status={"disruptionsAllowed": 0})]
    trace = "name,arrival,cpu,priority\nhi,5,1,1000\n"
    r, bound, gone = _placements(objs, trace, tmp_path)
    assert gone == ["default/b"] and bound["default/hi"] == "n0"
    got, want = _one(tmp_path, objs, trace, seeds=(0, 3))
    assert got == want and want[0]["preemptions"] == 1


def test_a_pdbs_allowance_is_recounted_after_its_pods_leave(tmp_path):
    # minAvailable 1 over a0 and a1 allows one disruption: the first
    # preemptor takes an app=guard pod (priority 0 beats c's 10), after
    # which the PDB allows none, so the second takes c
    objs = [node_dict(f"n{i}", cpu="2", memory="4Gi") for i in range(3)]
    objs += [_bound("a0", "n0", "2", 0, "guard"), _bound("a1", "n1", "2", 0, "guard"),
             _bound("c", "n2", "2", 10), _pdb("keep", "guard", minAvailable=1)]
    trace = "name,arrival,cpu,priority\nh0,5,2,1000\nh1,50,2,1000\n"
    r, bound, gone = _placements(objs, trace, tmp_path)
    assert len(gone) == 2 and gone[0] in ("default/a0", "default/a1") and gone[1] == "default/c"
    assert r.victim[2:].sum() == 2 and r.victim[4] == 1
    got, want = _one(tmp_path, objs, trace, seeds=(0, 5))
    assert got == want and want[0]["preemptions"] == 2


def _refusal(tmp_path, objs, trace: str, cfg=None) -> str:
    cl = tmp_path / "r.yaml"
    cl.write_text(yaml.safe_dump_all(objs))
    tr = tmp_path / "r.csv"
    tr.write_text(trace)
    with pytest.raises(SL.BatchProfileError) as err:
        SL.trace_runs(yaml.safe_load_all(cl.read_text()), cfg, run.read_trace_file(str(tr)),
                      [0])
    return str(err.value)


def test_what_preemption_does_not_cover_is_refused_by_name(tmp_path):
    trace = "name,arrival,cpu,priority\np0,0,1,0\np1,0,1,1000\n"
    node = node_dict("n0", cpu="2", memory="4Gi")
    low = pod_dict("low", priority=0)
    low["spec"]["nodeName"] = "n0"
    dying = dict(low, metadata=dict(low["metadata"], deletionTimestamp="2026-01-01T00:00:00Z"))
    msg = _refusal(tmp_path, [node, dying], trace)
    assert msg.startswith("metadata.deletionTimestamp: bound pod default/low is terminating")
    web = pod_dict("web", labels={"app": "web"}, spec={"affinity": {"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": {
            "topologyKey": "kubernetes.io/hostname",
            "labelSelector": {"matchLabels": {"app": "web"}}}}]}}})
    assert _refusal(tmp_path, [node, web], trace).startswith("InterPodAffinity: pod default/web")
    nominated = pod_dict("nom", priority=5)
    nominated["status"] = {"nominatedNodeName": "n0"}
    assert _refusal(tmp_path, [node, nominated], trace).startswith("status.nominatedNodeName")
    late = config(0)
    late["profiles"][0]["plugins"] = {"filter": {"disabled": [{"name": "*"}], "enabled": [
        {"name": "NodeResourcesFit"}, {"name": "TaintToleration"}]}}
    assert _refusal(tmp_path, [node], trace, late).startswith(
        "NodeResourcesFit: filters before TaintToleration")
    # a pod rejected on every node by the usage-independent filters runs
    # with the node events' form (``test_sweep_preempt_events``)
    tainted = node_dict("n1", taints=[{"key": "k", "effect": "NoSchedule"}])
    (r,) = SL.trace_runs([tainted], None, _trace_of(tmp_path, trace), [0])
    assert r.node.tolist() == [-1, -1] and r.victim is not None
    # without DefaultPreemption (or with equal priorities) nothing is refused
    cfg = config(0)
    cfg["profiles"][0]["plugins"] = {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}
    assert SL.trace_runs([node, low], cfg, _trace_of(tmp_path, trace), [0])[0].victim is None


def _trace_of(tmp_path, text: str):
    tr = tmp_path / "x.csv"
    tr.write_text(text)
    return run.read_trace_file(str(tr))


def test_bad_pdb_arrays_are_refused_by_name(tmp_path, monkeypatch):
    # the LocalPreempt sweep_local hands the kernel, its PDB arrays spoiled
    objs = _two_nodes() + [_bound("a", "n0", "2", 0, "guard"), _bound("b", "n1", "2", 10),
                           _pdb("keep", "guard", minAvailable=1)]
    setup = SL.trace_setup(objs, None, _trace_of(tmp_path, "name,arrival,cpu,priority\n"
                                                           "hi,5,2,1000\n"))
    calls = []
    monkeypatch.setattr(SL, "run_local_preempt", lambda p, threads=None: calls.append(p) or
                        LP.run_local_preempt(p, threads))
    SL.run_setups([setup], [[0]])
    p = calls[0]
    assert p.n_pdb.tolist() == [1] and p.pmatch[:, 0].tolist() == [0, LP.PDB_HEALTHY, 0]
    for field, bad, msg in (("pdb_kind", p.pdb_kind + 9, "LocalPreempt.pdb_kind"),
                            ("pmatch", p.pmatch + 4, "LocalPreempt.pmatch"),
                            ("n_pdb", p.n_pdb + 1, "LocalPreempt.n_pdb"),
                            ("pmatch", p.pmatch[:1], "LocalPreempt.pmatch: shape")):
        with pytest.raises(ValueError, match=msg):
            LP.run_local_preempt(p._replace(**{field: bad}))
