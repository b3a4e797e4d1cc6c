"""``tensorsched sweep --pod-max-in-unschedulable-seconds S`` and
``make_jobs(..., pod_max_in_unschedulable_seconds=S)``: every job's
Simulation gets S as its Scheduler's ``pod_max_in_unschedulable_seconds``
(a pod waiting S seconds in the unschedulable pool goes back to the queue
whatever the events), the jobs' metadata records it; the openb engine
(``trace_batch``'s ``max_unsched``) and its node-event form
(``openb_event_runs``' ``max_unsched``) run such jobs batched, grouped by
S, each row its Simulation's; so does the node-local kernel's sweep call
on manifests (``sweep_local.batched_local``: a ``run_setups`` call per
S, with a scenario and with preemption too).  The CLI flag end to end;
bad values, the flag twice and with ``--experiment`` refused in one line
naming it."""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda
from test_facade_openb_preempt_events import random_scenario
from test_sweep_openb_preempt import _jobs

from tensorsched.cli import main
from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_local as SL
from tensorsched.experiments import sweep_openb_events as SE
from tensorsched.framework.errors import TensorschedError
from tensorsched.generators.clusters import node_dict

GPU = '"alibabacloud.com/gpu-milli=1000;alibabacloud.com/gpu-count=1"'
FLAG = "--pod-max-in-unschedulable-seconds"


def _with(jobs, seconds: float, **changes):
    return [dataclasses.replace(j, pod_max_in_unschedulable_seconds=seconds, **changes)
            for j in jobs]


def _table(jobs):
    return S.run_sweep(jobs, workers=1).drop(["wall_seconds"])


def _per_job(jobs, monkeypatch):
    """The table with every job run per job (no engine takes one)."""
    with monkeypatch.context() as m:
        m.setattr(S, "batchable", lambda job, inputs: False)
        m.setattr(S, "unsched_goes", lambda job, engine: False)
        return _table(jobs)


def _unsched_of_calls(monkeypatch, module, name: str) -> list:
    """Per call of ``module.name`` (an engine's entry), its ``max_unsched``."""
    calls = []
    real = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: calls.append(k.get("max_unsched"))
                        or real(*a, **k))
    return calls


def _ran_per_job(monkeypatch) -> list:
    """The jobs (config, seed) the sweep ran per job."""
    ran = []
    real = S._run_local

    def record(jobs, *a, **k):
        ran.extend((j.config_name, j.seed) for j in jobs)
        return real(jobs, *a, **k)
    monkeypatch.setattr(S, "_run_local", record)
    return ran


def _flush_case(tmp_path, seconds: float | None = None):
    """One node of one GPU: ``a`` holds it from 0 to 60; ``x`` (1) and
    ``w`` (30) fail and wait in the unschedulable pool.  Under the default
    (300 s) both wait there till ``a``'s departure moves them and ``x``
    binds at 60, ``w`` never; flushed every 10 s, they retry on their
    own and ``w`` binds first, leaves after its 100 s, and ``x`` binds
    after it."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,1,T4\n")
    (tmp_path / "p.csv").write_text(
        "name,arrival,departure,duration,cpu,memory,annotations,priority\n"
        f"a,0,60,,1000m,1024Mi,{GPU},0\n"
        f"x,1,,,1000m,1024Mi,{GPU},0\n"
        f"w,30,,100,2000m,1024Mi,{GPU},0\n"
        "tail,200,,,1000m,1024Mi,,0\n")
    return S.make_jobs([str(tmp_path / "p.csv")], [0], policies=["FGD", "BestFit"],
                       nodes=str(tmp_path / "n.csv"), interval=5.0,
                       pod_max_in_unschedulable_seconds=seconds)


def test_the_flush_changes_the_outcome_batched_as_each_simulation(tmp_path, monkeypatch):
    """The built case: 10 s binds ``w`` and then ``x`` (4 scheduled), the
    default 300 s and inf bind ``x`` alone (3); every value batched (one
    ``trace_batch`` call given it), the table and metadata per job's."""
    calls = _unsched_of_calls(monkeypatch, S, "trace_batch")
    ran = _ran_per_job(monkeypatch)
    tables = {}
    for seconds in (None, 10.0, 0.0, math.inf):
        jobs = _flush_case(tmp_path, seconds)
        assert {j.pod_max_in_unschedulable_seconds for j in jobs} == {
            300.0 if seconds is None else seconds}
        table = _table(jobs)
        assert ran == []
        per_job = _per_job(jobs, monkeypatch)
        ran.clear()
        assert table.to_pylist() == per_job.to_pylist()
        assert table.schema.metadata == per_job.schema.metadata
        tables[seconds] = table.to_pylist()
    assert calls == [300.0, 10.0, 0.0, math.inf]
    assert [r["scheduled"] for r in tables[None]] == [3, 3]
    assert [r["scheduled"] for r in tables[10.0]] == [4, 4]
    assert tables[math.inf] == tables[None]
    assert tables[0.0][0]["failed_attempts"] > tables[10.0][0]["failed_attempts"]
    meta = json.loads(_table(_flush_case(tmp_path, 10.0)).schema.metadata[b"tensorsched.sweep"])
    assert [j["pod_max_in_unschedulable_seconds"] for j in meta["jobs"]] == [10.0, 10.0]


def test_jobs_of_several_values_go_one_call_each(tmp_path, monkeypatch):
    """One sweep of jobs with 300 and 10: two calls, each job's row equal
    to the sweep of its value alone."""
    calls = _unsched_of_calls(monkeypatch, S, "trace_batch")
    jobs = _flush_case(tmp_path) + _flush_case(tmp_path, 10.0)
    rows = _table(jobs).to_pylist()
    assert sorted(calls) == [10.0, 300.0]
    assert rows[:2] == _table(jobs[:2]).to_pylist()
    assert rows[2:] == _table(jobs[2:]).to_pylist()
    assert rows[:2] != rows[2:]


@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_pods=st.integers(4, 22),
       seconds=st.sampled_from([0.0, 2.0, 7.5, 40.0, math.inf]),
       grace=st.sampled_from([0.0, 0.0, 3.0]))
def test_random_jobs_batched_equal_each_simulation(tmp_path, monkeypatch, seed, n_nodes, n_pods,
                                                   seconds, grace):
    """Random contending clusters, two preempting configs and a policy
    job, the value and a termination grace drawn: the openb engine's
    table is the one of each job's Simulation."""
    jobs = _with(_jobs(tmp_path, np.random.default_rng(seed), n_nodes, n_pods, seed % 5, 5.0),
                 seconds, termination_grace_seconds=grace)
    calls = _unsched_of_calls(monkeypatch, S, "trace_batch")
    table = _table(jobs)
    assert calls and set(calls) == {seconds}
    assert table.to_pylist() == _per_job(jobs, monkeypatch).to_pylist()


@settings(max_examples=3, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_pods=st.integers(6, 18),
       seconds=st.sampled_from([0.0, 4.0, 30.0]))
def test_random_jobs_under_a_scenario_batched_equal_each_simulation(tmp_path, monkeypatch, seed,
                                                                    n_nodes, n_pods, seconds):
    """The node-event engine (a ``--scenario`` on openb nodes): random
    node and Pod steps, the value given to its one call, equal to per
    job."""
    rng = np.random.default_rng(seed)
    jobs = _jobs(tmp_path, rng, n_nodes, n_pods, seed % 5, 5.0)
    sc = tmp_path / "scenario.json"
    sc.write_text(json.dumps(random_scenario(rng, n_nodes)))
    jobs = _with(jobs, seconds, scenario=str(sc))
    calls = _unsched_of_calls(monkeypatch, SE, "openb_event_runs")
    table = _table(jobs)
    assert set(calls) <= {seconds}
    assert table.to_pylist() == _per_job(jobs, monkeypatch).to_pylist()


def _manifest_flush_case(tmp_path, seconds: float | None = None, scenario=None):
    """``_flush_case`` on manifests: n0 (2 cpu) taken by ``a`` (0 to 60);
    ``x`` (1 cpu, at 1) and ``w`` (2 cpu, at 30, staying 100 s) wait in
    the unschedulable pool; ``tail`` comes at 200."""
    (tmp_path / "c.yaml").write_text(yaml.safe_dump_all([node_dict("n0", cpu="2",
                                                                   memory="4Gi")]))
    (tmp_path / "t.csv").write_text(
        "name,arrival,departure,duration,cpu,memory,priority\n"
        "a,0,60,,2,1Gi,0\nx,1,,,1,1Gi,0\nw,30,,100,2,1Gi,0\ntail,200,,,100m,64Mi,0\n")
    return S.make_jobs([str(tmp_path / "t.csv")], [0, 1], cluster=str(tmp_path / "c.yaml"),
                       interval=5.0, scenario=scenario,
                       pod_max_in_unschedulable_seconds=seconds)


def _sent_local(monkeypatch) -> tuple[list, list]:
    """(the seeds of each ``batched_local`` call's jobs, each node-local
    ``run_setups`` call's ``max_unsched``)."""
    sent = []
    real = S.batched_local
    monkeypatch.setattr(S, "batched_local", lambda sub, *a: sent.append(
        [j.seed for j in sub]) or real(sub, *a))
    return sent, _unsched_of_calls(monkeypatch, SL, "run_setups")


@pytest.mark.parametrize("scenario", [False, True])
def test_manifest_jobs_of_another_value_batched_as_each_simulation(tmp_path, monkeypatch,
                                                                   scenario):
    """On manifests the node-local kernel's sweep call takes the value (a
    call per value): 10 s and 0 s bind ``w`` and then ``x`` (4 scheduled),
    the default and inf ``x`` alone (3); every job batched, each row its
    Simulation's; with a scenario (a node added at 250) on the node-event
    form too."""
    assert "local" in S.UNSCHED_ENGINES
    sc = None
    if scenario:
        sc = tmp_path / "scenario.json"
        sc.write_text(json.dumps({"steps": [
            {"at": 250, "create": node_dict("c", cpu="1", memory="1Gi")}]}))
        sc = str(sc)
    sent, calls = _sent_local(monkeypatch)
    ran = _ran_per_job(monkeypatch)
    tables = {}
    for seconds in (None, 10.0, 0.0, math.inf):
        jobs = _manifest_flush_case(tmp_path, seconds, sc)
        rows = _table(jobs).to_pylist()
        assert ran == [] and sent == [[0, 1]]
        assert rows == _per_job(jobs, monkeypatch).to_pylist()
        sent.clear()
        ran.clear()
        tables[seconds] = rows
    assert calls == [300.0, 10.0, 0.0, math.inf]
    assert [r["scheduled"] for r in tables[None]] == [3, 3]
    assert [r["scheduled"] for r in tables[10.0]] == [4, 4]
    assert tables[math.inf] == tables[None]
    assert tables[0.0][0]["failed_attempts"] > tables[10.0][0]["failed_attempts"]


def test_manifest_jobs_of_several_values_go_one_call_each(monkeypatch):
    """The example cluster, one job at the default and one at 5 s: two
    node-local calls, nothing per job, each row its Simulation's."""
    jobs = S.make_jobs(["data/examples/trace.csv"], [1], configs=["data/examples/spread.yaml"],
                       cluster="data/examples/cluster.yaml")
    jobs = jobs + _with(jobs, 5.0, seed=2)
    sent, calls = _sent_local(monkeypatch)
    ran = _ran_per_job(monkeypatch)
    rows = _table(jobs).to_pylist()
    assert sent == [[1, 2]] and ran == [] and sorted(calls) == [5.0, 300.0]
    assert rows == _per_job(jobs, monkeypatch).to_pylist()


@pytest.mark.cudasim
@needs_cuda
def test_manifest_jobs_of_another_value_on_cuda_as_the_twin(tmp_path, monkeypatch):
    """The device forms (the simulator) of the node-local call given 10 s,
    with a scenario (the node-event form) and without: the twin's rows,
    nothing per job."""
    _sent_local(monkeypatch)
    ran = _ran_per_job(monkeypatch)
    sc = tmp_path / "scenario.json"
    sc.write_text(json.dumps({"steps": [
        {"at": 250, "create": node_dict("c", cpu="1", memory="1Gi")}]}))
    for scenario in (None, str(sc)):
        jobs = _manifest_flush_case(tmp_path, 10.0, scenario)[:1]
        twin = _table(jobs).to_pylist()
        dev = _table([dataclasses.replace(j, backend="cuda") for j in jobs]).to_pylist()
        assert dev == twin and twin[0]["scheduled"] == 4 and ran == []


def _random_manifests(tmp_path, rng, n_nodes: int, n_pods: int, scenario: bool) -> tuple:
    """``n_nodes`` nodes of 2 cpu; pods of 1 to 3 cpu (3 never fits)
    arriving in the first 30 s at priority 0, 10 or 1000 (a preemptor),
    staying a duration, until a departure time or for good; with
    ``scenario`` a cordon, an uncordon and a node added."""
    (tmp_path / "c.yaml").write_text(yaml.safe_dump_all(
        [node_dict(f"n{i}", cpu="2", memory="4Gi") for i in range(n_nodes)]))
    lines = ["name,arrival,departure,duration,cpu,memory,priority"]
    for k in range(n_pods):
        a = int(rng.integers(0, 30))
        stay = int(rng.integers(1, 40))
        leaves = rng.choice([f"{a + stay},", f",{stay}", ","])
        lines.append(f"p{k},{a},{leaves},{rng.choice(['1', '2', '3'])},256Mi,"
                     f"{rng.choice([0, 10, 1000], p=[0.45, 0.35, 0.2])}")
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n")
    sc = None
    if scenario:
        node = f"n{int(rng.integers(n_nodes))}"
        sc = tmp_path / "scenario.json"
        sc.write_text(json.dumps({"steps": [
            {"at": int(rng.integers(1, 20)), "cordon": node},
            {"at": int(rng.integers(20, 45)), "uncordon": node},
            {"at": int(rng.integers(5, 50)), "create": node_dict("extra", cpu="2",
                                                                 memory="4Gi")}]}))
        sc = str(sc)
    return str(tmp_path / "c.yaml"), str(tmp_path / "t.csv"), sc


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_pods=st.integers(3, 14),
       seconds=st.sampled_from([0.0, 2.0, 7.5, 40.0, math.inf]),
       grace=st.sampled_from([0.0, 0.0, 3.0]), scenario=st.booleans())
def test_random_manifest_jobs_batched_equal_each_simulation(tmp_path, monkeypatch, seed, n_nodes,
                                                            n_pods, seconds, grace, scenario):
    """Random manifest clusters whose pods wait, retry and preempt (the
    default profile's DefaultPreemption), a scenario or none, the value
    and a termination grace drawn: the node-local call given the value,
    the table each job's Simulation's."""
    cluster, trace, sc = _random_manifests(tmp_path, np.random.default_rng(seed), n_nodes,
                                           n_pods, scenario)
    jobs = S.make_jobs([trace], [0, 1 + seed % 5], cluster=cluster, scenario=sc, interval=60.0,
                       pod_max_in_unschedulable_seconds=seconds,
                       termination_grace_seconds=grace)
    sent, calls = _sent_local(monkeypatch)
    table = _table(jobs)
    assert sent and set(calls) <= {seconds}
    assert table.to_pylist() == _per_job(jobs, monkeypatch).to_pylist()


@pytest.mark.parametrize("value", [-1.0, math.nan, "3", True])
def test_make_jobs_and_load_inputs_refuse_a_bad_value(tmp_path, value):
    jobs = _flush_case(tmp_path)
    with pytest.raises(TensorschedError, match="pod_max_in_unschedulable_seconds"):
        S.make_jobs([jobs[0].trace], [0], policies=["FGD"], nodes=jobs[0].nodes,
                    pod_max_in_unschedulable_seconds=value)
    with pytest.raises(TensorschedError, match=r"jobs\[0\]\.pod_max_in_unschedulable_seconds"):
        S.load_inputs([dataclasses.replace(jobs[0], pod_max_in_unschedulable_seconds=value)])


def test_the_experiment_takes_none(tmp_path):
    jobs = _flush_case(tmp_path)
    with pytest.raises(TensorschedError, match="no unschedulable pool"):
        S.make_jobs([jobs[0].trace], [0], experiment=True, nodes=jobs[0].nodes,
                    pod_max_in_unschedulable_seconds=300.0)
    job = S.Job("experiment", jobs[0].trace, 0, policy="FGD", nodes=jobs[0].nodes,
                pod_max_in_unschedulable_seconds=10.0)
    with pytest.raises(TensorschedError, match=r"jobs\[0\]: the experiment has no unschedulable"):
        S.load_inputs([job])


def _cli(argv, capsys) -> tuple:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


def test_the_cli_flag_end_to_end(tmp_path, capsys):
    """``sweep --pod-max-in-unschedulable-seconds 10``: the rows of
    ``run_sweep`` with 10 (unlike the default's), 10 in the metadata;
    ``inf`` taken."""
    jobs = _flush_case(tmp_path)
    out = tmp_path / "r.parquet"
    argv = ["sweep", "--nodes", jobs[0].nodes, "--trace", jobs[0].trace, "--policy", "FGD",
            "BestFit", "--interval", "5", "--workers", "1", "--output", str(out)]
    code, err = _cli(argv + [FLAG, "10"], capsys)
    assert code == 0, err
    table = pq.read_table(out)
    assert table.drop(["wall_seconds"]).to_pylist() == _table(_with(jobs, 10.0)).to_pylist()
    meta = json.loads(table.schema.metadata[b"tensorsched.sweep"])
    assert {j["pod_max_in_unschedulable_seconds"] for j in meta["jobs"]} == {10.0}
    assert _cli(argv, capsys)[0] == 0
    default = pq.read_table(out)
    assert default.drop(["wall_seconds"]).to_pylist() == _table(jobs).to_pylist()
    assert default.column("scheduled")[0] != table.column("scheduled")[0]
    assert _cli(argv + [FLAG, "inf"], capsys)[0] == 0
    meta = json.loads(pq.read_table(out).schema.metadata[b"tensorsched.sweep"])
    assert {j["pod_max_in_unschedulable_seconds"] for j in meta["jobs"]} == {math.inf}


@pytest.mark.parametrize("value", ["-1", "-0.5", "nan", "-inf", "x", "", "3s", "∞"])
def test_the_cli_refuses_bad_values_in_one_line(tmp_path, capsys, value):
    jobs = _flush_case(tmp_path)
    out = tmp_path / "r.parquet"
    code, err = _cli(["sweep", "--nodes", jobs[0].nodes, "--trace", jobs[0].trace,
                      "--workers", "1", "--output", str(out), FLAG, value], capsys)
    assert code == 2 and "Traceback" not in err
    assert len([x for x in err.splitlines() if x.strip()]) == 1, err
    assert FLAG in err and not out.exists()


@pytest.mark.parametrize("extra, match", [
    ([FLAG, "1", FLAG, "1"], f"{FLAG}: given more than once"),
    (["--experiment", FLAG, "300"], f"{FLAG} does not apply"),
])
def test_the_cli_refuses_the_flag_twice_or_with_the_experiment(tmp_path, capsys, extra, match):
    jobs = _flush_case(tmp_path)
    code, err = _cli(["sweep", "--nodes", jobs[0].nodes, "--trace", jobs[0].trace,
                      "--workers", "1", "--output", str(tmp_path / "r.parquet")] + extra,
                     capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and match in err, err
