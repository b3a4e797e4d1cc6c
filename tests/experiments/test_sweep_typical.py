"""``sweep --config`` jobs on openb nodes whose GpuShareScore has other
``typicalPods`` than the trace's: batched on the openb engine
(``sweep_openb_events.profile_typical``: under FGD the config's typical
pods the kernel's table for the run, its fragmentation measured again
under the trace's as the Simulation's GpuTracker does:
``sweep_batch.frag_under``; under another policy the typical pods are not
read), each row its Simulation's.  FGD without ``typicalPods`` learns them
from every new pod it scores (they change during the run): still per job.
The node-event engine takes the other policies' but not FGD's own
typical pods."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_facade_openb_preempt_events import random_scenario, write_cluster

from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_openb_events as SE
from tensorsched.experiments.sweep_batch import frag_under
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
    node-event engine) takes all but FGD's own."""
    jobs, other = _jobs(tmp_path, 3, 2, 10)
    inputs = S.load_inputs(jobs)
    got = {j.config_name: SE.profile_typical(j, inputs, "FGD") for j in jobs}
    assert [p["weight"] for p in got["own"][3]] == [p["weight"] for p in other]
    assert got["own"][3] == got["ownpre"][3]
    assert got["same"][3] is None and got["bestfit"][3] is None and got["learns"] is None
    events = {j.config_name: SE.job_profile(j, inputs, "FGD") for j in jobs}
    assert events["own"] is None and events["ownpre"] is None and events["learns"] is None
    assert events["same"] == got["same"][:3] and events["bestfit"] == got["bestfit"][:3]


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


def test_the_node_event_engine_takes_all_but_fgds_own(tmp_path, monkeypatch):
    """Under a scenario: BestFit with other typical pods and FGD with the
    trace's go to the node-event engine, FGD's own and the learning one
    per job; every row its Simulation's."""
    rng = np.random.default_rng(5)
    jobs, _other_pods = _jobs(tmp_path, 5, 3, 18)
    sc = tmp_path / "scenario.json"
    sc.write_text(json.dumps(random_scenario(rng, 3)))
    jobs = [dataclasses.replace(j, scenario=str(sc)) for j in jobs]
    ran = _ran_per_job(monkeypatch)
    table = _table(jobs)
    assert sorted(ran) == ["learns", "own", "ownpre"]
    assert table.to_pylist() == _per_job(jobs, monkeypatch).to_pylist()
