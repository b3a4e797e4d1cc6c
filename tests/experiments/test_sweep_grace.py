"""``tensorsched sweep --termination-grace-seconds S`` and ``make_jobs(...,
termination_grace_seconds=S)``: every job's Simulation gets the grace
(DefaultPreemption's victims stay on their node, terminating, until their
first eviction + S), the jobs' metadata records it; every batched engine
(``sweep.GRACE_ENGINES``: the openb engine without a scenario, its
node-event form under ``--scenario``, the node-local kernel on
``--cluster`` manifests with and without a scenario) runs those jobs
batched, grouped by grace, each row (every eviction a preemption, a
terminating victim chosen again counted again) and the metadata its
Simulation's; an openb run whose victim left at its own departure time
while it may have been terminating (``sweep_batch.departs_terminating``)
reruns on the node-event engine under a scenario of no steps;
refusals lose and duplicate no row; the CLI flag end to end and its bad
values refused in one line naming it."""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.preempt_inputs import write_inputs
from support.local_scenarios import scenario_steps
from test_facade_openb_preempt_events import random_scenario
from test_sweep_openb_preempt import _jobs
from test_sweep_openb_preempt_events import _config

from tensorsched.cli import main
from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_local as SL
from tensorsched.framework.errors import TensorschedError

GPU = '"alibabacloud.com/gpu-milli=1000;alibabacloud.com/gpu-count=1"'


def _graced(jobs, grace: float, **changes):
    return [dataclasses.replace(j, termination_grace_seconds=grace, **changes) for j in jobs]


def _table(jobs):
    return S.run_sweep(jobs, workers=1).drop(["wall_seconds"])


def _per_job(jobs, monkeypatch):
    """The table with every job run per job (no engine takes one)."""
    with monkeypatch.context() as m:
        m.setattr(S, "batchable", lambda job, inputs: False)
        m.setattr(S, "grace_goes", lambda job, inputs, engine: False)
        return _table(jobs)


def _graces_of_calls(monkeypatch) -> list:
    """Per ``trace_batch`` call, its (grace, preempt) arguments."""
    calls = []
    real = S.trace_batch
    monkeypatch.setattr(S, "trace_batch", lambda *a, **k: calls.append(
        (k.get("termination_grace_seconds"), k.get("preempt"))) or real(*a, **k))
    return calls


def _run_per_job(monkeypatch) -> list:
    """The jobs (config, seed) the sweep ran per job (no batched engine's)."""
    ran = []
    real = S._run_local

    def record(jobs, *a, **k):
        ran.extend((j.config_name, j.seed) for j in jobs)
        return real(jobs, *a, **k)
    monkeypatch.setattr(S, "_run_local", record)
    return ran


def _one_gpu_case(tmp_path, interval: float = 5.0):
    """One node of one GPU; a pod of priority 0 takes it at 0, one of
    priority 100 arrives at 10 and preempts it, staying 600 s: with a
    grace the victim holds the GPU until 10 + grace, the preemptor waits;
    a CPU pod arrives at 100 (the agenda is never empty before: the time
    series' rows are the states at their times, ``samples_follow``).  A
    preempting config's job and the openb profile's (no preemption)."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,1,T4\n")
    (tmp_path / "p.csv").write_text(
        "name,arrival,departure,duration,cpu,memory,annotations,priority\n"
        f"low,0,,,1000m,1024Mi,{GPU},0\n"
        f"high,10,,600,1000m,1024Mi,{GPU},100\n"
        "tail,100,,,1000m,1024Mi,,0\n")
    pods = str(tmp_path / "p.csv")
    typical = run.typical_of(run.read_trace_file(pods))
    cfg = _config(tmp_path, "fgd", "FGD", typical)
    return S.make_jobs([pods], [0], configs=[cfg], policies=["FGD"],
                       nodes=str(tmp_path / "n.csv"), interval=interval)


def test_a_grace_delays_the_preemptor_batched_as_each_simulation(tmp_path, monkeypatch):
    """The built case: the grace changes the preempting job's row (the
    preemptor binds at 10 + grace, the victim's GPU held till then), not
    the other's; batched (one call with the grace for the preempting job,
    one with 0 for the other) and per job the same table, metadata too."""
    jobs = _one_gpu_case(tmp_path)
    calls = _graces_of_calls(monkeypatch)
    ran = _run_per_job(monkeypatch)
    zero = _table(jobs).to_pylist()
    assert calls == [(0.0, [(10, 100), None])]
    calls.clear()
    table = _table(_graced(jobs, 30.0))
    assert calls == [(30.0, [(10, 100)]), (0.0, [None])] and ran == []
    rows = table.to_pylist()
    assert rows[0]["preemptions"] == 1 and zero[0]["preemptions"] == 1
    assert rows[0] != zero[0] and rows[1] == zero[1]
    assert rows[0]["latency_p99"] > zero[0]["latency_p99"] + 20
    assert rows[0]["sim_seconds"] == 640.0 and zero[0]["sim_seconds"] < 615    # 10 + 30 + 600
    per_job = _per_job(_graced(jobs, 30.0), monkeypatch)
    assert per_job.to_pylist() == rows
    assert per_job.schema.metadata == table.schema.metadata
    meta = json.loads(table.schema.metadata[b"tensorsched.sweep"])
    assert [j["termination_grace_seconds"] for j in meta["jobs"]] == [30.0, 30.0]


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_pods=st.integers(4, 22),
       grace=st.sampled_from([0.5, 3.0, 30.0]), interval=st.sampled_from([5.0, 30.0]))
def test_graced_jobs_batched_equal_each_simulation(tmp_path, monkeypatch, seed, n_nodes, n_pods,
                                                   grace, interval):
    """Random preempting clusters: the jobs with a grace go to the openb
    engine (the policy job's run, which preempts nothing, with grace 0),
    and the table is the one of each job's Simulation; the runs the
    engine's rows cannot vouch for went per job."""
    jobs = _graced(_jobs(tmp_path, np.random.default_rng(seed), n_nodes, n_pods, seed % 5,
                         interval), grace)
    calls = _graces_of_calls(monkeypatch)
    table = _table(jobs)
    assert sorted(g for g, _p in calls) == [0.0, grace]
    assert table.to_pylist() == _per_job(jobs, monkeypatch).to_pylist()


def test_a_victim_evicted_twice_stays_batched(tmp_path, monkeypatch):
    """Two pods of priority 5 arrive while the first's victim terminates
    and each evicts it: the engine counts 2 evictions of it, as the
    Simulation's 2 Preempted events; every run stays batched, its row
    the Simulation's."""
    jobs = _graced(_jobs(tmp_path, np.random.default_rng(4), 2, 18, 4), 3.0)
    ran = _run_per_job(monkeypatch)
    rows = _table(jobs).to_pylist()
    assert ran == []
    assert [r["preemptions"] for r in rows] == [2, 2, 0]
    assert rows == _per_job(jobs, monkeypatch).to_pylist()


def _departure_case(tmp_path, departure: float):
    """One GPU: low (priority 0, leaving at ``departure``) holds it; high
    (100) arrives at 10 and evicts it: under a grace of 5 low terminates
    until 15."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,1,T4\n")
    (tmp_path / "p.csv").write_text(
        "name,arrival,departure,duration,cpu,memory,annotations,priority\n"
        f"low,0,{departure:g},,1000m,1024Mi,{GPU},0\n"
        f"high,10,,600,1000m,1024Mi,{GPU},100\n"
        "tail,100,,,1000m,1024Mi,,0\n")
    pods = str(tmp_path / "p.csv")
    cfg = _config(tmp_path, "fgd", "FGD", run.typical_of(run.read_trace_file(pods)))
    return _graced(S.make_jobs([pods], [0], configs=[cfg], nodes=str(tmp_path / "n.csv"),
                               interval=5.0), 5.0)


@pytest.mark.parametrize("departure, unclear", [(12.0, True), (15.0, True), (40.0, False)])
def test_a_victim_leaving_at_its_departure_reruns_on_node_events(tmp_path, monkeypatch,
                                                                departure, unclear):
    """low departs at 12, while terminating: the Simulation counts it
    departed; at 15 its grace ends first and its departure finds nothing.
    Both are a leaving at its departure time in the openb engine's log
    (its eviction time not among the outputs), so both rerun on the
    node-event engine under a scenario of no steps (its ``why`` tells
    them apart); at 40 it left at 15, before its departure: kept.  None
    per job, every row the Simulation's."""
    jobs = _departure_case(tmp_path, departure)
    ran = _run_per_job(monkeypatch)
    sent = _sent(monkeypatch, "batched_openb_events")
    rows = _table(jobs).to_pylist()
    assert ran == [] and [c for c in sent if c] == ([[("fgd", 5.0)]] if unclear else [])
    assert rows == _per_job(jobs, monkeypatch).to_pylist()
    assert rows[0]["departed"] == (1 if departure == 12.0 else 0) + 1
    assert rows[0]["preemptions"] == 1


def _scenario(tmp_path) -> str:
    path = tmp_path / "no-steps.json"
    path.write_text(json.dumps({"steps": []}))
    return str(path)


def _sent(monkeypatch, name: str) -> list:
    """The jobs each call of the batched engine ``name`` got."""
    sent = []
    real = getattr(S, name)

    def record(jobs, *a, **k):
        sent.append([(j.config_name, j.termination_grace_seconds) for j in jobs])
        return real(jobs, *a, **k)
    monkeypatch.setattr(S, name, record)
    return sent


def test_every_engine_gets_the_preempting_jobs(tmp_path, monkeypatch):
    """With a scenario (the node-event engine) and on manifests (the
    node-local kernel), both in ``GRACE_ENGINES``: the preempting
    config's job goes batched with its grace, the calls grouped by it;
    its row its Simulation's."""
    assert S.GRACE_ENGINES == {"openb", "openb_events", "local"}
    jobs = [dataclasses.replace(j, scenario=_scenario(tmp_path)) for j in _one_gpu_case(tmp_path)]
    sent = _sent(monkeypatch, "batched_openb_events")
    ran = _run_per_job(monkeypatch)
    rows = _table(_graced(jobs, 30.0)).to_pylist()
    assert sent == [[("fgd", 30.0), ("FGD", 30.0)]] and ran == []
    assert rows == _per_job(_graced(jobs, 30.0), monkeypatch).to_pylist()
    assert rows[0]["latency_p99"] > 20


def test_manifest_jobs_with_a_grace_go_batched(tmp_path, monkeypatch):
    """On manifests (the node-local kernel): the default profile's job
    (it preempts) and a configuration's without DefaultPreemption go
    batched, each row its Simulation's."""
    cfg = tmp_path / "nopreempt.json"
    cfg.write_text(json.dumps({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler",
                      "plugins": {"postFilter": {"disabled": [{"name": "*"}]}}}]}))
    jobs = S.make_jobs(["data/examples/trace.csv"], [1],
                       configs=["data/examples/spread.yaml", str(cfg)],
                       cluster="data/examples/cluster.yaml", termination_grace_seconds=5.0)
    sent = _sent(monkeypatch, "batched_local")
    rows = _table(jobs).to_pylist()
    assert sent == [[("spread", 5.0), ("nopreempt", 5.0)]]
    assert rows == _per_job(jobs, monkeypatch).to_pylist()
    inputs = S.load_inputs(jobs)
    assert [S.preempts(j, inputs) for j in jobs] == [True, False]


def _local_graces(monkeypatch) -> list:
    """Per node-local call with preemption, its grace."""
    graces = []
    for name in ("_run_preempt", "_run_preempt_events"):
        real = getattr(SL, name)

        def record(*a, _real=real, **k):
            graces.append(k.get("grace", a[-1] if a else None))
            return _real(*a, **k)
        monkeypatch.setattr(SL, name, record)
    return graces


@settings(max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_pods=st.integers(6, 18),
       grace=st.sampled_from([0.5, 3.0, 30.0]))
def test_graced_jobs_under_a_scenario_batched_equal_each_simulation(tmp_path, monkeypatch, seed,
                                                                   n_nodes, n_pods, grace):
    """The node-event engine (``--scenario`` on openb nodes): random
    steps, two preempting configs and a policy job with a grace, batched
    (one call per grace: the policy job's 0) equal to per job."""
    rng = np.random.default_rng(seed)
    jobs = _jobs(tmp_path, rng, n_nodes, n_pods, seed % 5)
    sc = tmp_path / "scenario.json"
    sc.write_text(json.dumps(random_scenario(rng, n_nodes)))
    jobs = _graced(jobs, grace, scenario=str(sc))
    sent = _sent(monkeypatch, "batched_openb_events")
    table = _table(jobs)
    assert len(sent) == 1 and len(sent[0]) == 3
    assert table.to_pylist() == _per_job(jobs, monkeypatch).to_pylist()


@settings(max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 4), n_pods=st.integers(4, 24),
       steps=st.sampled_from([0, 0, 3]), grace=st.sampled_from([0.5, 3.0, 30.0]))
def test_graced_manifest_jobs_batched_equal_each_simulation(tmp_path, monkeypatch, seed,
                                                            n_nodes, n_pods, steps, grace):
    """The node-local kernel (``--cluster`` manifests, a ``--scenario`` of
    node steps or none): random preempting clusters and traces, every
    configuration with a grace, batched (its calls given the grace) equal
    to per job, metadata too."""
    cluster, trace, configs = write_inputs(tmp_path, seed, n_nodes, n_pods, seed % 3)
    sc = None
    if steps:
        sc = tmp_path / f"scenario{seed}.yaml"
        sc.write_text(json.dumps({"steps": scenario_steps(np.random.default_rng(seed), n_nodes,
                                                          steps)}))
        sc = str(sc)
    jobs = S.make_jobs([trace], [0, 1 + seed % 7], configs=configs, cluster=cluster,
                       scenario=sc, interval=7.0, termination_grace_seconds=grace)
    graces = _local_graces(monkeypatch)
    sent = _sent(monkeypatch, "batched_local")
    table = _table(jobs)
    assert len(sent) == 1 and set(graces) <= {grace}
    per_job = _per_job(jobs, monkeypatch)
    assert table.to_pylist() == per_job.to_pylist()
    assert table.schema.metadata == per_job.schema.metadata


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 12), data=st.data())
def test_a_refusing_engine_loses_and_duplicates_no_job(n, data):
    """``_engine_rest``: the jobs ``grace_goes`` lets go reach the engine,
    whatever it gives back and the ones held back come back once each, in
    order; the ones it ran (``done``) do not."""
    jobs = [S.Job("simulate", "t.csv", s, termination_grace_seconds=float(s % 2))
            for s in range(n)]
    rest = sorted(data.draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=n))) if n else []
    goes = data.draw(st.sets(st.integers(0, 12)))
    ran = data.draw(st.sets(st.integers(0, 12)))
    done, got = [], []

    def engine(sub, sub_done):
        got.extend(j.seed for j in sub)
        for k, j in enumerate(sub):
            if j.seed in ran:
                sub_done(k, {}, None)
        return [k for k, j in enumerate(sub) if j.seed not in ran]

    inputs = {("preempts", None, None, False): True}
    orig = S.GRACE_ENGINES
    try:
        S.GRACE_ENGINES = frozenset({"x"} if 1 in goes else ())
        left = S._engine_rest(jobs, rest, inputs, "x", engine, lambda i, r, e: done.append(i))
    finally:
        S.GRACE_ENGINES = orig
    held = [i for i in rest if jobs[i].termination_grace_seconds > 0 and 1 not in goes]
    assert got == [jobs[i].seed for i in rest if i not in held]
    assert sorted(done) == done == [i for i in rest if i not in held and jobs[i].seed in ran]
    assert left == sorted(left) and sorted(left + done) == rest


@pytest.mark.parametrize("value", [-1.0, math.nan, math.inf, "3", True, None])
def test_make_jobs_refuses_a_bad_grace(tmp_path, value):
    jobs = _one_gpu_case(tmp_path)
    with pytest.raises(TensorschedError, match="termination_grace_seconds"):
        S.make_jobs([jobs[0].trace], [0], policies=["FGD"], nodes=jobs[0].nodes,
                    termination_grace_seconds=value)
    with pytest.raises(TensorschedError, match=r"jobs\[0\]\.termination_grace_seconds"):
        S.load_inputs([dataclasses.replace(jobs[0], termination_grace_seconds=value)])


def test_the_experiment_takes_no_grace(tmp_path):
    jobs = _one_gpu_case(tmp_path)
    with pytest.raises(TensorschedError, match="experiment preempts nothing"):
        S.make_jobs([jobs[0].trace], [0], experiment=True, nodes=jobs[0].nodes,
                    termination_grace_seconds=1.0)
    job = S.Job("experiment", jobs[0].trace, 0, policy="FGD", nodes=jobs[0].nodes,
                termination_grace_seconds=1.0)
    with pytest.raises(TensorschedError, match=r"jobs\[0\]: the experiment preempts nothing"):
        S.load_inputs([job])


def _cli(argv, capsys) -> tuple:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


def test_the_cli_flag_end_to_end(tmp_path, capsys):
    """``sweep --termination-grace-seconds 30``: the rows of
    ``run_sweep`` with that grace (the preempting job's unlike grace
    0's), the grace in the Parquet's metadata."""
    jobs = _one_gpu_case(tmp_path)
    out = tmp_path / "r.parquet"
    argv = ["sweep", "--nodes", jobs[0].nodes, "--trace", jobs[0].trace, "--config",
            jobs[0].config, "--policy", "FGD", "--interval", "5", "--workers", "1",
            "--output", str(out)]
    code, err = _cli(argv + ["--termination-grace-seconds", "30"], capsys)
    assert code == 0, err
    table = pq.read_table(out)
    assert table.drop(["wall_seconds"]).to_pylist() == _table(_graced(jobs, 30.0)).to_pylist()
    meta = json.loads(table.schema.metadata[b"tensorsched.sweep"])
    assert {j["termination_grace_seconds"] for j in meta["jobs"]} == {30.0}
    assert _cli(argv, capsys)[0] == 0
    zero = pq.read_table(out)
    assert zero.drop(["wall_seconds"]).to_pylist() == _table(jobs).to_pylist()
    assert zero.column("latency_p99")[0] != table.column("latency_p99")[0]


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(value=st.sampled_from(["-1", "-0.5", "nan", "inf", "-inf", "1e400", "x", "", "3s",
                              "∞", "0x10"]))
def test_the_cli_refuses_bad_values_in_one_line(tmp_path_factory, capsys, value):
    tmp = tmp_path_factory.mktemp("grace")
    jobs = _one_gpu_case(tmp)
    out = tmp / "r.parquet"
    code, err = _cli(["sweep", "--nodes", jobs[0].nodes, "--trace", jobs[0].trace,
                      "--workers", "1", "--output", str(out),
                      "--termination-grace-seconds", value], capsys)
    assert code == 2 and "Traceback" not in err
    assert len([x for x in err.splitlines() if x.strip()]) == 1, err
    assert "--termination-grace-seconds" in err and not out.exists()


@pytest.mark.parametrize("extra, match", [
    (["--termination-grace-seconds", "1", "--termination-grace-seconds", "1"],
     "--termination-grace-seconds: given more than once"),
    (["--experiment", "--termination-grace-seconds", "0"],
     "--termination-grace-seconds does not apply"),
])
def test_the_cli_refuses_the_flag_twice_or_with_the_experiment(tmp_path, capsys, extra, match):
    jobs = _one_gpu_case(tmp_path)
    code, err = _cli(["sweep", "--nodes", jobs[0].nodes, "--trace", jobs[0].trace,
                      "--workers", "1", "--output", str(tmp_path / "r.parquet")] + extra,
                     capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and match in err, err
