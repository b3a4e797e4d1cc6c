"""``tensorsched sweep --config`` jobs whose config is the openb profile
plus DefaultPreemption at postFilter, without a scenario: batched on the
openb engine (``trace_batch`` with ``preempt``: ``sweep.batchable`` takes
them, ``sweep_batch.simulate_row`` counts the victims), each row
(preemptions, departures, running, latencies, the time series' means) and
the table's metadata equal to those of the job's own Simulation
(``batch=False``)."""
import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_facade_openb_preempt_events import write_cluster
from test_sweep_openb_preempt_events import _config

from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep as S


def _table(jobs, batch: bool):
    jobs = [dataclasses.replace(j, batch=batch) for j in jobs]
    return S.run_sweep(jobs, workers=1).drop(["wall_seconds"])


def _rows(jobs, batch: bool):
    return _table(jobs, batch).to_pylist()


def _jobs(tmp_path, rng, n_nodes: int, n_pods: int, seed: int, interval: float = 30.0):
    """A BestFit config and an FGD one (DefaultPreemption's (50, 1)), both
    preempting, and a policy job beside them, on a random cluster."""
    nodes, pods = write_cluster(tmp_path, rng, n_nodes, n_pods)
    typical = run.typical_of(run.read_trace_file(pods))
    configs = [_config(tmp_path, "bestfit", "BestFit", typical),
               _config(tmp_path, "fgd", "FGD", typical, (50, 1))]
    return S.make_jobs([pods], [seed], configs=configs, policies=["GpuPacking"], nodes=nodes,
                       interval=interval)


def _counted(monkeypatch) -> list:
    """Per ``trace_batch`` call, its ``preempt`` argument."""
    calls = []
    real = S.trace_batch
    monkeypatch.setattr(S, "trace_batch",
                        lambda *a, **k: calls.append(k.get("preempt")) or real(*a, **k))
    return calls


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_pods=st.integers(4, 22),
       interval=st.sampled_from([5.0, 30.0, 600.0]))
def test_preempting_config_jobs_run_batched_equal_to_each_simulation(tmp_path, monkeypatch,
                                                                    seed, n_nodes, n_pods,
                                                                    interval):
    jobs = _jobs(tmp_path, np.random.default_rng(seed), n_nodes, n_pods, seed % 5, interval)
    calls = _counted(monkeypatch)
    batched = _rows(jobs, True)
    # one call, the policy job's run without preemption
    assert calls == [[(10, 100), (50, 1), None]]
    assert batched == _rows(jobs, False)


def test_rows_count_the_preemptions(tmp_path, monkeypatch):
    """A draw that preempts under both configs: every job batched (one
    call), the rows' ``preemptions`` (the victims) and every other column,
    and the Parquet metadata, the Simulations'."""
    jobs = _jobs(tmp_path, np.random.default_rng(1), 2, 18, 1)
    calls = _counted(monkeypatch)
    table = _table(jobs, True)
    rows = table.to_pylist()
    assert calls == [[(10, 100), (50, 1), None]]
    assert [r["preemptions"] > 0 for r in rows] == [True, True, False]
    # the victims leave the running pods: more bound than departed and running
    assert all(r["scheduled"] > r["departed"] + r["running"] for r in rows[:2])
    assert rows == _rows(jobs, False)
    # the same jobs run per job (the batched engine refusing them all): the
    # table, its metadata (the jobs) too, is the batched one
    monkeypatch.setattr(S, "batchable", lambda job, inputs: False)
    per_job = S.run_sweep(jobs, workers=1).drop(["wall_seconds"])
    assert len(calls) == 1 and per_job.to_pylist() == rows
    assert table.schema.metadata == per_job.schema.metadata
