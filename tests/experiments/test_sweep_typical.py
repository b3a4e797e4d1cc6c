"""``sweep --config`` jobs on openb nodes whose GpuShareScore has other
``typicalPods`` than the trace's: batched on the openb engine
(``sweep_openb_events.profile_typical``: under FGD the config's typical
pods the kernel's table for the run, its fragmentation measured again
under the trace's as the Simulation's GpuTracker does:
``sweep_batch.frag_under``; under another policy the typical pods are not
read), each row its Simulation's.  FGD without ``typicalPods`` learns them
from every new pod it scores (they change during the run): still per job.
Under a scenario the node-event engine takes them too, the fragmentation
replayed through the node events (``sweep_batch.frag_under_events``)."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_facade_openb_preempt_events import random_scenario, write_cluster
from test_sweep_openb_events import _node

from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_openb_events as SE
from tensorsched.experiments.sweep_batch import frag_under, frag_under_events
from tensorsched.framework.simulation.scenario import load_scenario
from tensorsched.topology.gpu import read_openb_nodes
from tensorsched.topology.openb.batch import trace_batch
from tensorsched.topology.openb.trace import openb_config


def _config(tmp_path, stem: str, policy: str, typical, preempt: bool = False) -> str:
    """The openb profile of ``policy`` with ``typical`` (None: no
    ``typicalPods``), with DefaultPreemption at postFilter when
    ``preempt``."""
    cfg = openb_config(policy, typical or [])
    prof = cfg["profiles"][0]
    if typical is None:
        for entry in prof["pluginConfig"]:
            if entry["name"] == "GpuShareScore":
                entry["args"].pop("typicalPods", None)
    if preempt:
        prof["plugins"]["postFilter"] = {"disabled": [{"name": "*"}],
                                         "enabled": [{"name": "DefaultPreemption"}]}
    path = tmp_path / f"{stem}.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def _other(rng, typical: list) -> list:
    """Other typical pods: the trace's reweighted, and a GPU share the
    trace may lack."""
    return [dict(p, weight=float(rng.integers(1, 9))) for p in typical] + [
        {"cpu": int(rng.choice([0, 500, 4000])), "gpuCount": 1,
         "gpuMilli": int(rng.choice([250, 700])), "models": str(rng.choice(["", "T4"])),
         "weight": 3.0}]


def _jobs(tmp_path, seed: int, n_nodes: int, n_pods: int):
    rng = np.random.default_rng(seed)
    nodes, pods = write_cluster(tmp_path, rng, n_nodes, n_pods)
    typical = run.typical_of(run.read_trace_file(pods))
    other = _other(rng, typical)
    configs = [_config(tmp_path, "own", "FGD", other),
               _config(tmp_path, "same", "FGD", typical),
               _config(tmp_path, "ownpre", "FGD", other, preempt=True),
               _config(tmp_path, "bestfit", "BestFit", other),
               _config(tmp_path, "learns", "FGD", None)]
    return S.make_jobs([pods], [seed % 7], configs=configs, nodes=nodes, interval=5.0), other


def _table(jobs):
    return S.run_sweep(jobs, workers=1).drop(["wall_seconds"])


def _per_job(jobs, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(S, "batchable", lambda job, inputs: False)
        m.setattr(S, "grace_goes", lambda job, inputs, engine: False)
        return _table(jobs)


def _ran_per_job(monkeypatch) -> list:
    ran = []
    real = S._run_local

    def record(jobs, *a, **k):
        ran.extend(j.config_name for j in jobs)
        return real(jobs, *a, **k)
    monkeypatch.setattr(S, "_run_local", record)
    return ran


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 4), n_pods=st.integers(4, 26),
       grace=st.sampled_from([0.0, 0.0, 3.0]))
def test_other_typical_pods_batched_equal_each_simulation(tmp_path, monkeypatch, seed, n_nodes,
                                                          n_pods, grace):
    """Random contending clusters: FGD with the config's own typical pods
    (with and without DefaultPreemption; a termination grace drawn), FGD
    with the trace's, BestFit with others go batched (but a preempting
    run whose victim left at its own departure time: per job, as
    ``departs_terminating`` sends it); FGD learning its typical pods per
    job; the table is the one of each job's Simulation."""
    jobs, _other_pods = _jobs(tmp_path, seed, n_nodes, n_pods)
    jobs = [dataclasses.replace(j, termination_grace_seconds=grace) for j in jobs]
    ran = _ran_per_job(monkeypatch)
    table = _table(jobs)
    assert "learns" in ran and set(ran) <= {"learns", "ownpre"}
    assert table.to_pylist() == _per_job(jobs, monkeypatch).to_pylist()


def test_profile_typical_tells_what_the_kernel_scores_with(tmp_path):
    """The config's own typical pods under FGD, None where the trace's or
    none are read, refused where FGD learns them; ``job_profile`` (the
    node-event engine) takes FGD's own too (its table, not the typical
    pods)."""
    jobs, other = _jobs(tmp_path, 3, 2, 10)
    inputs = S.load_inputs(jobs)
    got = {j.config_name: SE.profile_typical(j, inputs, "FGD") for j in jobs}
    assert [p["weight"] for p in got["own"][3]] == [p["weight"] for p in other]
    assert got["own"][3] == got["ownpre"][3]
    assert got["same"][3] is None and got["bestfit"][3] is None and got["learns"] is None
    events = {j.config_name: SE.job_profile(j, inputs, "FGD") for j in jobs}
    assert events.pop("learns") is None
    assert events == {name: got[name][:3] for name in events}


def test_frag_under_replays_the_kernels_own_log(tmp_path):
    """``frag_under`` under the table the kernel ran with gives the
    kernel's own fragmentation log (at each time's last change, what the
    time series read); under the trace's typical pods a run scored
    against others measures differently, which the row takes."""
    jobs, other = _jobs(tmp_path, 1, 3, 24)
    inputs = S.load_inputs(jobs)
    tw = S._workload(jobs[0].trace, inputs)
    inv = read_openb_nodes(jobs[0].nodes)
    own = dataclasses.replace(tw, typical=other)
    got = trace_batch([inv], [tw, own], [(0, 0, "FGD", 0), (0, 1, "FGD", 0)])
    differs = False
    for res, typical in zip(got, (tw.typical, other)):
        last = np.append(res.log_t[1:] != res.log_t[:-1], True)
        f0, log = frag_under(inv, tw.pods, res, typical)
        assert f0 == res.frag0
        assert np.array_equal(log[last], res.log_frag[last])
        f0, log = frag_under(inv, tw.pods, res, tw.typical)
        differs |= not np.array_equal(log[last], res.log_frag[last])
    assert differs


def _under_scenario(jobs, tmp_path, scenario: dict, grace: float = 0.0) -> list:
    sc = tmp_path / "scenario.json"
    sc.write_text(json.dumps(scenario))
    return [dataclasses.replace(j, scenario=str(sc), termination_grace_seconds=grace)
            for j in jobs]


def _replays_counted(monkeypatch, replay=None) -> list:
    """The node-event engine's fragmentation replays, one entry each
    (``replay`` instead of the real one where given)."""
    calls = []
    real = replay or SE.frag_under_events

    def counted(*a, **k):
        calls.append(a[2])
        return real(*a, **k)
    monkeypatch.setattr(SE, "frag_under_events", counted)
    return calls


OWN = ("own", "ownpre")


@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 4), n_pods=st.integers(4, 22),
       grace=st.sampled_from([0.0, 0.0, 3.0]))
def test_fgds_own_typical_pods_under_a_scenario_equal_each_simulation(
        tmp_path, monkeypatch, seed, n_nodes, n_pods, grace):
    """Random scenarios (nodes added, some with a new GPU model, tainted,
    cordoned; cordons, drains, removals, a removed name added again in a
    freed row; pods created and deleted) under FGD with the config's own
    typical pods, with and without DefaultPreemption (a termination grace
    drawn): each of those jobs the node-event engine runs has its
    fragmentation replayed, and the table is the one of each job's
    Simulation; FGD learning its typical pods per job."""
    jobs, _other_pods = _jobs(tmp_path, seed, n_nodes, n_pods)
    jobs = _under_scenario(jobs, tmp_path, random_scenario(np.random.default_rng(seed + 1),
                                                           n_nodes), grace)
    ran = _ran_per_job(monkeypatch)
    replays = _replays_counted(monkeypatch)
    table = _table(jobs)
    assert "learns" in ran
    assert len(replays) == sum(j.config_name in OWN for j in jobs) - sum(
        ran.count(name) for name in OWN)
    assert table.to_pylist() == _per_job(jobs, monkeypatch).to_pylist()


def _hand_built(tmp_path) -> tuple:
    """Two T4 nodes (n0: 2 GPUs, n1: 1), nine GPU-share and whole-GPU pods;
    the scenario: a node of a new model (V100M16) added, n1 cordoned, n0
    drained, n1 removed and added again (its freed row), n0 uncordoned.
    FGD with the trace's typical pods and with whole-GPU pairs of its own."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                                    "n0,16000,65536,2,T4\nn1,8000,65536,1,T4\n")
    anno = '"alibabacloud.com/gpu-milli={};alibabacloud.com/gpu-count={}"'
    rows = [("a", 0, 50, 1000, 500, 1), ("b", 1, 60, 2000, 300, 1), ("c", 2, "", 1000, 1000, 1),
            ("d", 6, 80, 4000, 250, 1), ("e", 9, "", 1000, 700, 1), ("f", 16, 45, 2000, 1000, 2),
            ("g", 21, "", 1000, 400, 1), ("h", 26, 90, 500, 600, 1), ("i", 41, "", 1000, 200, 1)]
    (tmp_path / "p.csv").write_text(
        "name,arrival,departure,duration,cpu,memory,annotations,priority\n" + "".join(
            f"{nm},{t},{dep},,{c}m,1024Mi,{anno.format(m, n)},0\n"
            for nm, t, dep, c, m, n in rows))
    nodes, pods = str(tmp_path / "n.csv"), str(tmp_path / "p.csv")
    typical = run.typical_of(run.read_trace_file(pods))
    whole = [{"cpu": 0, "gpuCount": 2, "gpuMilli": 1000, "models": "", "weight": 3.0},
             {"cpu": 8000, "gpuCount": 1, "gpuMilli": 1000, "models": "T4", "weight": 1.0}]
    configs = [_config(tmp_path, "own", "FGD", whole), _config(tmp_path, "same", "FGD", typical)]
    jobs = S.make_jobs([pods], [0, 3], configs=configs, nodes=nodes, interval=5.0)
    scenario = {"steps": [{"at": 5, "create": _node("x0", 2, "V100M16")},
                          {"at": 8, "cordon": "n1"}, {"at": 15, "drain": "n0"},
                          {"at": 20, "removeNodes": ["n1"]},
                          {"at": 25, "create": _node("n1", 1, "T4")},
                          {"at": 40, "uncordon": "n0"}]}
    return _under_scenario(jobs, tmp_path, scenario), whole


def test_hand_built_scenario_fgds_own_typical_pods(tmp_path, monkeypatch):
    """The hand-built case (``_hand_built``): every job batched, each row
    its Simulation's; without the replay (the fragmentation measured under
    the kernel's table, the config's typical pods) the FGD rows of its own
    typical pods would differ."""
    jobs, _whole = _hand_built(tmp_path)
    ran = _ran_per_job(monkeypatch)
    replays = _replays_counted(monkeypatch)
    table = _table(jobs).to_pylist()
    assert ran == [] and len(replays) == 2
    assert table == _per_job(jobs, monkeypatch).to_pylist()
    _replays_counted(monkeypatch, lambda *a: None)
    unreplayed = _table(jobs).to_pylist()
    for row, raw in zip(table, unreplayed):
        same = row["config"] != "own"
        assert (row["mean_gpu_frag_pct"] == raw["mean_gpu_frag_pct"]) == same
        assert dict(row, mean_gpu_frag_pct=0) == dict(raw, mean_gpu_frag_pct=0)


def _last(log_t) -> np.ndarray:
    """Each time's last change in a change log."""
    return np.append(log_t[1:] != log_t[:-1], True)


def test_frag_under_events_replays_the_kernels_own_log(tmp_path):
    """``frag_under_events`` under the table the node-event engine ran
    with gives its own fragmentation log (at each time's last change, what
    the time series read) through random scenarios' node events, with and
    without DefaultPreemption under a termination grace; under the
    trace's typical pods a run scored against others measures
    differently."""
    differs = False
    for seed in range(3):
        where = tmp_path / str(seed)
        where.mkdir()
        jobs, other = _jobs(where, seed, 2 + seed % 2, 20)
        rng = np.random.default_rng(seed + 1)
        jobs = _under_scenario(jobs, where, random_scenario(rng, 2 + seed % 2))
        inputs = S.load_inputs(jobs)
        inv = read_openb_nodes(jobs[0].nodes)
        trace = inputs[("trace", jobs[0].trace)]
        plan = SE.plan_openb(inv, load_scenario(jobs[0].scenario), trace)
        tw, made = plan.workload(S._workload(jobs[0].trace, inputs), trace)
        mine = dataclasses.replace(tw, typical=other)
        pre = SE.job_preempt(jobs[2], inputs)
        runs = [(t, "FGD", s) for t in (0, 1) for s in (0, 1)]
        a, out = SE.openb_event_runs(inv, plan, [tw, mine], runs, made=[made, made],
                                     preempt=[None, pre, None, pre], grace=3.0, workers=1)
        tables = [SE.trace_typical(inv, plan, w) for w in (tw, mine)]
        for b, (t, _p, _s) in enumerate(runs):
            o, p = int(a.ev_off[b]), int(a.ev_len[b])
            log_t, log_pod, log_frag = out.log(a, b, plan.events.n_events)
            args = (tw.pods, out.node[o:o + p], out.gmask[o:o + p], log_pod)
            f0, log = frag_under_events(plan.events, tables[t], *args)
            assert f0 == out.frag0[b]
            assert np.array_equal(log[_last(log_t)], log_frag[_last(log_t)])
            f0, log = frag_under_events(plan.events, tables[0], *args)
            differs |= not np.array_equal(log[_last(log_t)], log_frag[_last(log_t)])
    assert differs
