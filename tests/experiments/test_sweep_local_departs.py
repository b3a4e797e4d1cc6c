"""A victim that departs (its trace departure, or its duration after its
binding) while it terminates under a termination grace, on the node-local
preemption engines (``sweep_local``, ``--cluster`` manifests, with and
without a scenario): the Simulation counts it departed, while one whose
grace ends at that same time leaves by its termination first (its
departure finds nothing).  Both are a leaving at the victim's departure
time in the run's log; the engines' ``evicted_at`` (each pod's first
eviction's time) tells them apart (``sweep_preempt.departed_terminating``),
so those jobs run batched and each row equals the job's own Simulation
(``batch=False``) but ``wall_seconds``: a hand-built case (departure
before, at and after the grace's end; by a duration too) and random
clusters where low-priority pods with short stays are preempted by
high-priority ones."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import tensorsched as ts
from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_local as SL
from tensorsched.generators.clusters import node_dict

GRACE = 10.0


def _rows(jobs) -> list:
    """Each job's row from its own Simulation (no batched engine)."""
    jobs = [dataclasses.replace(j, batch=False) for j in jobs]
    return S.run_sweep(jobs, workers=1).drop(["wall_seconds"]).to_pylist()


def _batched(jobs) -> tuple[list, list]:
    """The rows ``sweep_local.batched_local`` makes and the jobs it leaves."""
    inputs = S.load_inputs(jobs)
    got: dict = {}
    rest = SL.batched_local(jobs, inputs, 1, lambda i, row, e: got.__setitem__(i, row))
    rows = [got.get(i) for i in range(len(jobs))]
    for r in rows:
        if r is not None:
            r.pop("wall_seconds")
    return rows, rest


def _case(tmp_path, stay: str, scenario: bool) -> list:
    """n0 (2 cpu) taken by v (priority 0) at 0, whose ``stay`` is its trace
    row's departure and duration columns; hi (1000, 2 cpu) comes at 3 and
    preempts v, which terminates until 3 + GRACE = 13; a scenario adds a
    small node at 50."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([node_dict("n0", cpu="2", memory="4Gi")]))
    trace = tmp_path / "trace.csv"
    trace.write_text("name,arrival,departure,duration,cpu,memory,priority\n"
                     f"v,0,{stay},2,256Mi,0\nhi,3,,,2,256Mi,1000\n")
    sc = None
    if scenario:
        sc = tmp_path / "scenario.json"
        sc.write_text(json.dumps({"steps": [
            {"at": 50, "create": node_dict("c", cpu="1", memory="1Gi")}]}))
        sc = str(sc)
    return S.make_jobs([str(trace)], [0, 3], cluster=str(cluster), scenario=sc,
                       interval=4.0, termination_grace_seconds=GRACE)


@pytest.mark.parametrize("scenario", [False, True])
@pytest.mark.parametrize("stay, departed", [("5,", 1), (",5", 1), ("13,", 0), (",13", 0),
                                            ("40,", 0)])
def test_a_victim_departing_while_terminating_is_batched(tmp_path, stay, departed, scenario):
    """v departs at 5 (before its grace ends at 13: departed), at 13 (its
    termination first: not departed) or at 40 (gone at 13): every job
    batched, each row its Simulation's; ``evicted_at`` holds v's eviction
    time 3."""
    jobs = _case(tmp_path, stay, scenario)
    rows, rest = _batched(jobs)
    assert rest == []
    assert rows == _rows(jobs)
    assert [r["departed"] for r in rows] == [departed] * 2
    assert [r["preemptions"] for r in rows] == [1, 1]
    got = ts.simulate_batch(jobs[0].cluster, [jobs[0].trace], [None], seeds=[0],
                            scenario=jobs[0].scenario, termination_grace_seconds=GRACE)
    assert got[0].victim.tolist() == [1, 0]
    assert got[0].evicted_at[0] == 3.0 and math.isnan(got[0].evicted_at[1])


def _random_case(tmp_path, rng, n_nodes: int, n_low: int, n_high: int) -> tuple:
    """``n_nodes`` nodes of 2 cpu filled by low-priority pods (priority 0
    or 10) arriving in the first seconds, each leaving soon after its
    binding (a duration) or at a departure time (a pending one is deleted
    then, the last of them at the per-job path's last step); high-priority
    pods (1000) arriving while they stay preempt them."""
    objs = [node_dict(f"n{i}", cpu="2", memory="4Gi") for i in range(n_nodes)]
    lines = ["name,arrival,departure,duration,cpu,memory,priority"]
    for k in range(n_low):
        t = int(rng.integers(0, 4))
        stay = int(rng.integers(1, 25))
        leaves = f"{t + stay}," if rng.random() < 0.5 else f",{stay}"
        lines.append(f"l{k},{t},{leaves},{rng.choice(['1', '2', '3'])},256Mi,"
                     f"{rng.choice([0, 10])}")
    for k in range(n_high):
        lines.append(f"h{k},{int(rng.integers(1, 15))},,,{rng.choice(['1', '2'])},256Mi,1000")
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(objs))
    trace = tmp_path / "trace.csv"
    trace.write_text("\n".join(lines) + "\n")
    return str(cluster), str(trace)


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_low=st.integers(2, 8),
       n_high=st.integers(1, 4), grace=st.sampled_from([3.0, 10.0, 30.0]),
       scenario=st.booleans())
# a pending pod deleted at the last step's end, once a stale wakeup there
@example(seed=65535, n_nodes=2, n_low=4, n_high=2, grace=10.0, scenario=True)
def test_random_victims_departing_batched_equal_each_simulation(tmp_path, seed, n_nodes, n_low,
                                                                n_high, grace, scenario):
    """Random clusters of short-staying victims (some never fitting: 3 cpu)
    under a grace, with a scenario step or none: every job batched, each
    row its Simulation's."""
    rng = np.random.default_rng(seed)
    cluster, trace = _random_case(tmp_path, rng, n_nodes, n_low, n_high)
    sc = None
    if scenario:
        sc = tmp_path / "scenario.json"
        sc.write_text(json.dumps({"steps": [{"at": int(rng.integers(1, 20)),
                                             "cordon": f"n{int(rng.integers(n_nodes))}"}]}))
        sc = str(sc)
    # (a sample interval past the last event: no run goes per job to be sampled)
    jobs = S.make_jobs([trace], [0, 1 + seed % 5], cluster=cluster, scenario=sc, interval=60.0,
                       termination_grace_seconds=grace)
    rows, rest = _batched(jobs)
    assert rest == []
    assert rows == _rows(jobs)
