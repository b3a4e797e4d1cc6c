"""``tensorsched sweep --config`` jobs whose config is the openb profile
plus DefaultPreemption at postFilter, under a scenario's node and Pod
steps: batched on the node-event engine (``sweep_openb_events``:
``job_profile`` takes them, ``job_preempt`` their arguments), each row
(preemptions counted) equal to the row of the job's own Simulation."""
import dataclasses
import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_facade_openb_preempt_events import random_scenario, write_cluster

from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_openb_events as E
from tensorsched.topology.openb.trace import openb_config


def _config(tmp_path, stem: str, policy: str, typical, args=None) -> str:
    """The sweep's openb profile (GpuShareScore alone, the trace's typical
    pods) plus DefaultPreemption (``args``: its two arguments)."""
    cfg = openb_config(policy, typical)
    prof = cfg["profiles"][0]
    prof["plugins"]["postFilter"] = {"disabled": [{"name": "*"}],
                                     "enabled": [{"name": "DefaultPreemption"}]}
    if args:
        prof["pluginConfig"].append({"name": "DefaultPreemption", "args": {
            "minCandidateNodesPercentage": args[0], "minCandidateNodesAbsolute": args[1]}})
    path = tmp_path / f"{stem}.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def _rows(jobs, batch: bool):
    jobs = [dataclasses.replace(j, batch=batch) for j in jobs]
    return S.run_sweep(jobs, workers=1).drop(["wall_seconds"]).to_pylist()


@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_pods=st.integers(6, 20))
def test_preempting_config_jobs_run_batched_equal_to_each_simulation(tmp_path, monkeypatch,
                                                                    seed, n_nodes, n_pods):
    rng = np.random.default_rng(seed)
    nodes, pods = write_cluster(tmp_path, rng, n_nodes, n_pods)
    typical = run.typical_of(run.read_trace_file(pods))
    configs = [_config(tmp_path, "bestfit", "BestFit", typical),
               _config(tmp_path, "fgd", "FGD", typical, (50, 1))]
    sc = tmp_path / "scenario.json"
    sc.write_text(json.dumps(random_scenario(rng, n_nodes)))
    jobs = S.make_jobs([pods], [seed % 5], configs=configs, nodes=nodes, interval=30.0,
                       scenario=str(sc))
    calls = []
    real = E.openb_event_runs
    monkeypatch.setattr(E, "openb_event_runs",
                        lambda *a, **k: calls.append(k.get("preempt")) or real(*a, **k))
    batched = _rows(jobs, True)
    assert calls == [[None, (50, 1)]] or calls == [[(10, 100), (50, 1)]]
    assert batched == _rows(jobs, False)


def test_rows_count_the_preemptions(tmp_path, monkeypatch):
    """A draw that preempts under both configs: the rows' ``preemptions``
    (the victims) and the rest are the Simulations'."""
    rng = np.random.default_rng(1)
    nodes, pods = write_cluster(tmp_path, rng, 2, 18)
    typical = run.typical_of(run.read_trace_file(pods))
    sc = tmp_path / "scenario.json"
    sc.write_text(json.dumps(random_scenario(rng, 2)))
    jobs = S.make_jobs([pods], [1], nodes=nodes, interval=30.0, scenario=str(sc), configs=[
        _config(tmp_path, "bestfit", "BestFit", typical),
        _config(tmp_path, "fgd", "FGD", typical, (50, 1))])
    calls = []
    real = E.openb_event_runs
    monkeypatch.setattr(E, "openb_event_runs", lambda *a, **k: calls.append(1) or real(*a, **k))
    rows = _rows(jobs, True)
    assert calls == [1] and all(r["preemptions"] > 0 for r in rows)
    assert rows == _rows(jobs, False)
