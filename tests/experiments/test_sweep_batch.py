"""``tensorsched sweep`` over openb traces with departures (simulate jobs of
the openb profile) runs as one batched call: every row equals the row of
the run's own Simulation (``run_sweep`` with ``batch=False``, what
``tensorsched simulate`` runs) but ``wall_seconds``, on small random
clusters and traces whose pods retry, some after the last departure."""
import dataclasses

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorsched.cli import main
from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_batch as SB

HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time," \
         "deletion_time,scheduled_time\n"
ASKS = ((1, 1000), (1, 500), (1, 250), (2, 1000), (0, 0), (1, 700))


def _write(tmp, seed: int, n_nodes: int, n_pods: int) -> tuple:
    rng = np.random.default_rng(seed)
    nodes = tmp / f"nodes{seed}.csv"
    rows = ["sn,cpu_milli,memory_mib,gpu,model"]
    for i in range(n_nodes):
        rows.append(f"n{i},{int(rng.choice([8000, 16000, 32000]))},"
                    f"{int(rng.choice([16384, 65536]))},{int(rng.choice([1, 2, 4]))},"
                    f"{rng.choice(['V100M16', 'T4'])}")
    nodes.write_text("\n".join(rows) + "\n")
    pods = tmp / f"pods{seed}.csv"
    t = 0
    lines = []
    for j in range(n_pods):
        t += int(rng.choice([0, 0, 1, 3, 30, 400]))
        num, milli = ASKS[int(rng.integers(len(ASKS)))]
        stay = rng.choice([0, 5, 60, 700, -1])
        dep = "" if stay < 0 else str(t + int(stay))
        spec = "T4" if rng.random() < 0.1 else ""
        lines.append(f"p{j:03d},{int(rng.choice([0, 1000, 4000]))},"
                     f"{int(rng.choice([0, 2048, 8192]))},{num},{milli},{spec},LS,Running,"
                     f"{t},{dep},{t}")
    pods.write_text(HEADER + "\n".join(lines) + "\n")
    return str(nodes), str(pods)


def _write_generic(tmp, seed: int, n_nodes: int, n_pods: int) -> tuple:
    """A node CSV as ``_write``'s and a generic trace CSV of the same kind of
    pods, some leaving at a time, some a duration after their binding (odd
    seeds: pods of priorities 0, 10 and 1000)."""
    nodes, _pods = _write(tmp, seed, n_nodes, 1)
    rng = np.random.default_rng(seed + 1)
    t = 0
    prio = seed % 2 == 1        # pods of unequal priorities: activeQ a heap of ranks
    lines = ["name,arrival,departure,duration,cpu,memory,annotations" + (",priority" if prio
                                                                         else "")]
    for j in range(n_pods):
        t += int(rng.choice([0, 0, 1, 3, 30, 400]))
        num, milli = ASKS[int(rng.integers(len(ASKS)))]
        stay = int(rng.choice([0, 5, 60, 700, -1]))
        how = rng.choice(["departure", "duration"]) if stay >= 0 else ""
        dep = str(t + stay) if how == "departure" else ""
        dur = str(stay) if how == "duration" else ""
        anno = f'"alibabacloud.com/gpu-milli={milli};alibabacloud.com/gpu-count={num}' + (
            ';alibabacloud.com/gpu-card-model=T4"' if rng.random() < 0.1 else '"') \
            if num else ""
        lines.append(f"p{j:03d},{t},{dep},{dur},{int(rng.choice([0, 1000, 4000]))}m,"
                     f"{int(rng.choice([0, 2048, 8192]))}Mi,{anno}"
                     + (f",{int(rng.choice([0, 10, 1000]))}" if prio else ""))
    pods = tmp / f"generic{seed}.csv"
    pods.write_text("\n".join(lines) + "\n")
    return nodes, str(pods)


def _rows(jobs, batch: bool):
    jobs = [dataclasses.replace(j, batch=batch) for j in jobs]
    return S.run_sweep(jobs, workers=1).drop(["wall_seconds"]).to_pylist()


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 5), n_pods=st.integers(1, 40),
       interval=st.sampled_from([7.0, 60.0, 3600.0]))
def test_batched_rows_equal_each_simulation(tmp_path, seed, n_nodes, n_pods, interval):
    nodes, pods = _write(tmp_path, seed, n_nodes, n_pods)
    _batched_rows_equal(nodes, pods, seed, interval)


def _batched_rows_equal(nodes, pods, seed, interval):
    """Four policies' jobs over the trace, two seeds: every job batched (a
    trace without a GPU ask runs per run only) with each Simulation's row."""
    jobs = S.make_jobs([pods], [0, 1 + seed % 50],
                       policies=["FGD", "Random", "BestFit", "DotProd"], nodes=nodes,
                       interval=interval)
    inputs = S.load_inputs(jobs)
    if inputs[("typical", pods)] is None:       # no GPU ask: per run only
        assert not S.batchable(jobs[0], inputs)
        return
    assert all(S.batchable(j, inputs) for j in jobs)
    assert _rows(jobs, True) == _rows(jobs, False)


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 5), n_pods=st.integers(1, 40),
       interval=st.sampled_from([7.0, 60.0, 3600.0]))
def test_durations_batched_rows_equal_each_simulation(tmp_path, seed, n_nodes, n_pods,
                                                      interval):
    """A generic trace whose pods leave at a time or a duration after their
    binding (some of unequal priorities): the jobs the batched engine
    takes give each Simulation's row (a job whose series the Simulation
    samples after a later binding runs per job,
    ``sweep_local.samples_follow``)."""
    nodes, pods = _write_generic(tmp_path, seed, n_nodes, n_pods)
    _batched_rows_equal(nodes, pods, seed, interval)


def test_a_duration_trace_runs_batched(tmp_path, monkeypatch):
    """A pod bound at 0 that leaves 5 s later frees the GPU the second pod
    waits for: the departure comes from the duration (no departure column
    value), and ``tensorsched sweep`` runs the jobs in one batched call."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,8000,16384,1,T4\n")
    anno = '"alibabacloud.com/gpu-milli=1000;alibabacloud.com/gpu-count=1"'
    (tmp_path / "p.csv").write_text(
        "name,arrival,departure,duration,cpu,memory,annotations\n"
        f"a,0,,5,1,1Mi,{anno}\nb,1,,,1,1Mi,{anno}\n")
    calls = []
    real = S.trace_batch
    monkeypatch.setattr(S, "trace_batch", lambda *a, **k: calls.append(1) or real(*a, **k))
    jobs = S.make_jobs([str(tmp_path / "p.csv")], [0, 3], policies=["FGD", "BestFit"],
                       nodes=str(tmp_path / "n.csv"), interval=2.0)
    out = tmp_path / "r.parquet"
    assert main(["sweep", "--nodes", str(tmp_path / "n.csv"), "--trace",
                 str(tmp_path / "p.csv"), "--policy", "FGD", "BestFit", "--seeds", "0,3",
                 "--interval", "2", "--workers", "1", "--output", str(out)]) == 0
    b, p = pq.read_table(out).drop(["wall_seconds"]).to_pylist(), _rows(jobs, False)
    assert calls == [1] and b == p
    # b fails at 1 and binds when a leaves at 5
    assert b[0]["departed"] == 1 and b[0]["running"] == 1 and b[0]["sim_seconds"] == 5.0
    assert b[0]["scheduled"] == 2 and b[0]["failed_attempts"] == 1


def test_generic_traces_of_other_columns_run_per_simulation(tmp_path):
    nodes, _ = _write(tmp_path, 3, 2, 1)
    anno = '"alibabacloud.com/gpu-milli=1000;alibabacloud.com/gpu-count=1"'
    for column, value in (("scheduler_name", "other"), ("namespace", "x")):
        path = tmp_path / f"{column}.csv"
        path.write_text(f"name,arrival,duration,cpu,memory,annotations,{column}\n"
                        f"a,0,5,1,1Mi,{anno},{value}\n")
        job = S.make_jobs([str(path)], [0], policies=["FGD"], nodes=nodes)[0]
        inputs = S.load_inputs([job])
        assert not S.batchable(job, inputs)
        assert _rows([job], True) == _rows([job], False)


def test_retries_after_the_last_departure(tmp_path):
    # one node, one GPU: b fails at 8 (a holds the GPU), again at 9 when d
    # leaves, is moved to backoff when a leaves at 10 and binds at 11, after
    # the last event; c (two GPUs) never fits
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,8000,16384,1,T4\n")
    (tmp_path / "p.csv").write_text(
        HEADER + "a,1000,1024,1,1000,,LS,Running,0,10,0\n"
        "d,1000,1024,0,0,,LS,Running,0,9,0\n"
        "b,1000,1024,1,1000,,LS,Running,8,,8\n"
        "c,1000,1024,2,1000,,LS,Running,8,,8\n")
    jobs = S.make_jobs([str(tmp_path / "p.csv")], [0], policies=["FGD"],
                       nodes=str(tmp_path / "n.csv"), interval=4.0)
    b, p = _rows(jobs, True), _rows(jobs, False)
    assert b == p
    assert b[0]["sim_seconds"] == 11.0 and b[0]["scheduled"] == 3 and b[0]["pending"] == 1
    assert b[0]["failed_attempts"] == 5


def test_cli_sweep_with_departures_is_batched(tmp_path, monkeypatch, capsys):
    nodes, pods = _write(tmp_path, 5, 4, 30)
    out = tmp_path / "r.parquet"
    calls = []
    real = S.trace_batch
    monkeypatch.setattr(S, "trace_batch", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert main(["sweep", "--nodes", nodes, "--trace", pods, "--policy", "FGD", "BestFit",
                 "--seeds", "1-2", "--workers", "1", "--output", str(out)]) == 0
    assert calls == [1]                         # the four runs in one call
    got = pq.read_table(out).drop(["wall_seconds"]).to_pylist()
    jobs = S.make_jobs([pods], [1, 2], policies=["FGD", "BestFit"], nodes=nodes)
    assert got == _rows(jobs, False)


@pytest.mark.parametrize("change", [{"batch": False}, {"backend": "numpy"}, {"until": 50.0}])
def test_other_jobs_run_per_simulation(tmp_path, change):
    nodes, pods = _write(tmp_path, 1, 2, 5)
    job = dataclasses.replace(S.make_jobs([pods], [0], policies=["FGD"], nodes=nodes)[0],
                              **change)
    assert not S.batchable(job, S.load_inputs([job]))


def test_sample_times_and_time_mean():
    assert SB.sample_times(10.0, 35.0, 35.0).tolist() == [10.0, 20.0, 30.0, 35.0]
    assert SB.sample_times(10.0, 30.0, 30.0).tolist() == [10.0, 20.0, 30.0]
    assert SB.sample_times(10.0, 5.0, 42.0).tolist() == [42.0]
    t = np.array([10.0, 20.0, 25.0])
    assert SB.time_mean(t, np.array([1.0, np.nan, 4.0])) == (10 + 20) / 15
    assert SB.time_mean(np.zeros(0), np.zeros(0)) is None
