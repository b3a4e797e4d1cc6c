"""A scenario's Pod delete of a queued pod (created by the scenario, or
the manifests' pending one) on the node-local engine
(``ts.simulate_batch`` on a manifest cluster, ``tensorsched sweep
--cluster``) where the pod may be gone before it: left, its duration
over; evicted by a drain; deleted with its node.  The run's Simulation
then stops at the step with ``SimulationError`` (NotFound): the batched
call raises that error, type and message, the sweep reports the job as
its per-job path does; where the delete finds its pod (also at its
departure's time, at a drain or removal of its node at the same time:
the delete comes first), every row is its Simulation's.  Targeted cases
and random clusters, traces and steps (``pod_steps(gone=True)``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sweep_events import _batched, _rows, _write, pod_steps
from test_sweep_preempt_events import _job_errors, _outcome, _per_run_error

import tensorsched as ts
from tensorsched.experiments import sweep as S
from tensorsched.experiments.results import SweepError
from tensorsched.framework.simulation.errors import SimulationError
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels.batch.local_events import WHY_DELETED

from support.local_scenarios import scenario_steps
from support.local_traces import write_inputs

NOT_FOUND = "Pod default/z: not found (NotFound): no such pod pending or bound at {}s"
LEFT = {"duration": "left (its duration over)", "drain": "was evicted (a drain)",
        "remove": "was deleted with its node"}


def _steps(delete_at: float, duration=None, node_step=None) -> list:
    """z (1 cpu: it binds on n0, the first node, at 1) created at 1
    (``duration`` after its binding), deleted at ``delete_at``;
    ``node_step`` too."""
    create = {"at": 1, "create": pod_dict("z", cpu="1", memory="1Gi")}
    if duration is not None:
        create["duration"] = duration
    steps = [create, {"at": delete_at, "delete": {"kind": "Pod", "name": "z"}}]
    return steps + ([node_step] if node_step else [])


@pytest.mark.parametrize("steps,missed", [
    (_steps(11, 10), None),                                    # its departure's time
    (_steps(12, 10), "duration"),
    (_steps(20, None, {"at": 20, "drain": "n0"}), None),       # the drain's time
    (_steps(20, None, {"at": 10, "drain": "n0"}), "drain"),
    (_steps(20, None, {"at": 10, "drain": "n1"}), None),
    (_steps(20, None, {"at": 20, "removeNodes": ["n0"]}), None),
    (_steps(20, None, {"at": 10, "delete": {"kind": "Node", "name": "n0"}}), "remove"),
])
def test_a_delete_of_a_pod_gone_before_it(tmp_path, steps, missed):
    """Each case's Simulation stops at z's delete with NotFound exactly when
    z left before it: the batched call raises that error (type, message;
    notes: how z left, the run), the sweep reports the job as per job;
    else the run is returned (z deleted by the step) and the rows equal."""
    objs = [node_dict("n0", cpu="4", memory="8Gi"), node_dict("n1", cpu="2", memory="4Gi")]
    trace = "name,arrival,cpu,memory\np0,0,500m,1Gi\n"
    cluster, tr, cfg, sc = _write(tmp_path, objs, trace, steps)
    msg = _per_run_error(cluster, tr, sc, cfg=cfg)
    at = next(s["at"] for s in steps if "delete" in s and s["delete"]["kind"] == "Pod")
    assert msg == (None if missed is None else NOT_FOUND.format(at))
    jobs = S.make_jobs([tr], [0, 1], configs=[cfg], cluster=cluster, scenario=sc,
                       interval=60.0)
    got, rest = _batched(jobs)
    assert rest == []
    if missed is None:
        (r,) = ts.simulate_batch(cluster, [tr], [cfg], seeds=[0], scenario=sc)
        assert r.why[1] == WHY_DELETED and r.node_names[r.node[1]] == "n0"
        want = _rows(jobs, False)
        for g, w in zip(got, want):
            g.pop("wall_seconds")
            assert g == w
        return
    with pytest.raises(SimulationError) as exc:
        ts.simulate_batch(cluster, [tr], [cfg], seeds=[0, 1], scenario=sc)
    assert type(exc.value) is SimulationError and str(exc.value) == msg
    assert exc.value.__notes__ == [f"the pod {LEFT[missed]} before its delete",
                                   "simulate_batch: run 0 (traces[0], configs[0], seed 0)"]
    with pytest.raises(SweepError) as per_job:
        S.run_sweep([dataclasses.replace(j, batch=False) for j in jobs], workers=1)
    with pytest.raises(SweepError) as batched:
        S.run_sweep(jobs, workers=1)
    assert str(batched.value) == str(per_job.value) and msg in str(per_job.value)


def test_a_pod_deleted_and_created_again_goes_per_run_and_keeps_its_own_lifetime(tmp_path):
    """dup is created at 2 s to stay 50 s once bound, deleted at 10 s and
    created again at 20 s (no duration): the engine refuses the name used
    twice (the batched call names the step, the sweep takes the per-run
    path), and there the first dup's departure at 52 s leaves the second
    alone (a pod's lifetime is its object's, not its name's)."""
    from tensorsched.framework.capacity.batch_probe import BatchProfileError
    objs = [node_dict("n0", cpu="4", memory="8Gi"), node_dict("n1", cpu="2", memory="4Gi")]
    steps = [{"at": 2, "create": pod_dict("dup", cpu="1", memory="1Gi"), "duration": 50},
             {"at": 10, "delete": {"kind": "Pod", "name": "dup"}},
             {"at": 20, "create": pod_dict("dup", cpu="2", memory="1Gi")}]
    cluster, tr, cfg, sc = _write(tmp_path, objs, "name,arrival,cpu,memory\np0,0,500m,1Gi\n",
                                  steps)
    with pytest.raises(BatchProfileError, match=r"^steps\[0\]\.create \(create Pod\): pod "
                       r"default/dup named as another pod \(or created again\)"):
        ts.simulate_batch(cluster, [tr], [cfg], seeds=[0], scenario=sc)
    jobs = S.make_jobs([tr], [0], configs=[cfg], cluster=cluster, scenario=sc, interval=60.0)
    assert _batched(jobs)[1] == [0]
    (row,) = _rows(jobs, True)
    assert row == _rows(jobs, False)[0]
    assert (row["running"], row["departed"], row["deleted"]) == (2, 0, 1)   # p0 and dup


def _jobs(tmp_path, seed, n_nodes, n_pods, n_bound, n_steps, n_created, durations=True):
    cluster, trace, configs = write_inputs(tmp_path, seed, n_nodes, n_pods, n_bound,
                                           durations=durations)
    rng = np.random.default_rng(seed + 7919)
    steps = scenario_steps(rng, n_nodes, n_steps)
    steps += pod_steps(rng, steps, cluster, n_created, gone=True)
    sc = tmp_path / f"scenario{seed}.yaml"
    sc.write_text(yaml.safe_dump({"steps": steps}))
    return S.make_jobs([trace], [0, 1 + seed % 7], configs=configs[:1], cluster=cluster,
                       scenario=str(sc), interval=60.0)


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_pods=st.integers(2, 16),
       n_bound=st.integers(0, 2), n_steps=st.integers(1, 5), n_created=st.integers(1, 4))
def test_random_gone_deletes_as_per_job(tmp_path, seed, n_nodes, n_pods, n_bound, n_steps,
                                        n_created):
    """Deletes of queued pods any time after their creation: each job's
    batched outcome (its row, or its Simulation's NotFound) is its per-job
    path's, and the batched call of one job raises that error or runs."""
    jobs = _jobs(tmp_path, seed, n_nodes, n_pods, n_bound, n_steps, n_created)
    assert _outcome(jobs, True) == _outcome(jobs, False)
    _job_errors(jobs)


def test_random_gone_draws_hit_both_outcomes(tmp_path):
    """The draws above give, through the batched call, jobs whose delete
    finds its pod gone and jobs that run."""
    seen = set()
    for seed in range(60):
        jobs = _jobs(tmp_path, seed, 2, 10, 1, 3, 4)
        seen |= {msg is None for msg, took in _job_errors(jobs) if took}
        if seen == {True, False}:
            break
    assert seen == {True, False}
