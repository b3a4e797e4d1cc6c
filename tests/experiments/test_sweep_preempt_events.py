"""DefaultPreemption together with a scenario's node and pod steps inside
the batched node-local trace kernel (``kernels/batch/_local_preempt_events.py``,
``experiments/sweep_preempt.py``'s event arrays and row): on small random
clusters with priorities, PodDisruptionBudgets and low-priority bound pods,
under cordon, uncordon, drain, addNodes, Node creates, removeNodes and
Node deletes and Pod creates / deletes, every batched row equals the row
of the job's own Simulation (``batch=False``) but ``wall_seconds``;
targeted cases: a nominated node deleted or cordoned before its preemptor
binds, a drain evicting a node whose bound pods were victims' neighbours,
a pod the usage-independent filters reject everywhere while others
preempt; what stays refused is refused by name."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tensorsched as ts
from tensorsched.experiments import sweep as S
from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep_local as SL
from tensorsched.experiments.results import SweepError
from tensorsched.framework.capacity.batch_probe import BatchProfileError
from tensorsched.framework.simulation.errors import SimulationError
from tensorsched.generators.clusters import node_dict, pod_dict

from support.local_scenarios import scenario_steps
from support.preempt_inputs import write_inputs

DAEMON = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u1",
           "controller": True}]


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


def _pod_steps(rng, node_steps: list, cluster: str, n_pods: int,
               preempted: bool = False) -> list:
    """Pod creates of priorities 0, 10, 1000 (some a DaemonSet's, some
    leaving a ``duration`` after binding) and deletes of pods no preemption
    can remove first (created ones of priority 1000, bound ones of 5000),
    where the Simulation finds them then; ``preempted``: a created one of
    any priority, any time after its creation (it may be gone: preempted,
    left, drained, removed with its node)."""
    objs = list(yaml.safe_load_all(Path(cluster).read_text()))
    top = 0 if preempted else 5000
    bound = {o["metadata"]["name"]: o["spec"]["nodeName"] for o in objs
             if o.get("kind") == "Pod" and o["spec"].get("nodeName")
             and o["spec"].get("priority", 0) >= top}
    times = sorted({int(s["at"]) for s in node_steps} | {0, 1, 40})

    def leaves(s):
        for k in ("drain", "removeNodes"):
            if k in s:
                return [s[k]] if k == "drain" else list(s[k])
        return [s["delete"]["name"]] if "delete" in s else []

    gone = [(int(s["at"]), leaves(s)) for s in node_steps if leaves(s)]
    steps, alive = [], {}
    for k in range(n_pods):
        t = int(rng.choice(times)) + int(rng.choice([0, 1, 30]))
        prio = int(rng.choice([0, 10, 1000]))
        pod = pod_dict(f"s{k}", cpu=str(rng.choice(["300m", "1", "2"])), memory="512Mi",
                       priority=prio)
        if rng.random() < 0.25:
            pod["metadata"]["ownerReferences"] = DAEMON
        step = {"at": t, "create": pod}
        if rng.random() < 0.3:
            step["duration"] = int(rng.choice([5, 100]))
            if preempted:
                alive[f"s{k}"] = t
        elif prio == 1000 or preempted:
            alive[f"s{k}"] = t
        steps.append(step)
    for _ in range(int(rng.integers(0, 3))):
        t = int(rng.choice(times)) + int(rng.choice([1, 3, 60]))
        cands = [n for n, t0 in alive.items() if t0 < t and (
            preempted or not any(t0 < g < t for g, _ in gone))]
        cands += [n for n, node in bound.items()
                  if not any(g < t and node in names for g, names in gone)]
        if cands:
            name = str(rng.choice(sorted(cands)))
            alive.pop(name, None)
            bound.pop(name, None)
            steps.append({"at": t, "delete": {"kind": "Pod", "name": name}})
    return steps


def _jobs(tmp_path, seed, n_nodes, n_pods, n_bound, n_steps, n_created, interval=60.0,
          configs=None, preempted: bool = False):
    cluster, trace, cfgs = write_inputs(tmp_path, seed, n_nodes, n_pods, n_bound)
    rng = np.random.default_rng(seed + 7919)
    steps = scenario_steps(rng, n_nodes, n_steps)
    steps += _pod_steps(rng, steps, cluster, n_created, preempted)
    sc = tmp_path / f"scenario{seed}.yaml"
    sc.write_text(yaml.safe_dump({"steps": steps}))
    return S.make_jobs([trace], [0, 1 + seed % 7], configs=cfgs[:configs], cluster=cluster,
                       scenario=str(sc), interval=interval)


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 4), n_pods=st.integers(1, 25),
       n_bound=st.integers(0, 3), n_steps=st.integers(1, 5), n_created=st.integers(0, 3),
       interval=st.sampled_from([7.0, 60.0]))
def test_preempting_rows_with_node_events_equal_each_simulation(tmp_path, seed, n_nodes, n_pods,
                                                               n_bound, n_steps, n_created,
                                                               interval):
    jobs = _jobs(tmp_path, seed, n_nodes, n_pods, n_bound, n_steps, n_created, interval)
    got, rest = _batched(jobs)
    want = _rows(jobs, False)
    # a job whose samples the agenda does not cover goes the per-run way;
    # a draw where every job does compares nothing (not a failure: the
    # batching itself is checked on fixed inputs,
    # ``test_random_inputs_preempt_and_meet_node_events``)
    assume(len(rest) < len(jobs))
    for i, (g, w) in enumerate(zip(got, want)):
        if i not in rest:
            assert g == w


def test_random_inputs_preempt_and_meet_node_events(tmp_path):
    # the inputs above do both (the equality is not vacuous): preemptions,
    # evictions and deletions in the same runs
    totals = {"preemptions": 0, "evicted": 0, "deleted": 0, "both": 0}
    for seed in range(6):
        jobs = _jobs(tmp_path, seed, 3, 25, 2, 5, 2, configs=1)
        got, rest = _batched(jobs)
        assert rest == []
        for g in got:
            for k in ("preemptions", "evicted", "deleted"):
                totals[k] += g[k]
            totals["both"] += bool(g["preemptions"] and (g["evicted"] or g["deleted"]))
    assert all(v > 0 for v in totals.values()), totals


def _write(tmp_path, objs, trace: str, steps: list | None) -> tuple:
    c = tmp_path / "cluster.yaml"
    c.write_text(yaml.safe_dump_all(objs))
    t = tmp_path / "t.csv"
    t.write_text(trace)
    sc = None
    if steps is not None:
        sc = tmp_path / "sc.yaml"
        sc.write_text(yaml.safe_dump({"steps": steps}))
        sc = str(sc)
    return str(c), str(t), sc


def _check(tmp_path, objs, trace: str, steps: list | None, seeds=(0, 3)):
    """The batched run (``ts.simulate_batch``, seed 0) and the rows of a
    sweep of ``objs`` / ``trace`` / ``steps``: batched equal to per run."""
    cluster, tr, sc = _write(tmp_path, objs, trace, steps)
    (r,) = ts.simulate_batch(cluster, [tr], [None], seeds=[0], scenario=sc)
    jobs = S.make_jobs([tr], list(seeds), cluster=cluster, scenario=sc, interval=10.0)
    got, rest = _batched(jobs)
    assert rest == []
    want = _rows(jobs, False)
    assert got == want
    return r, want


def _bound(name: str, node: str, cpu: str, prio: int, daemon: bool = False) -> dict:
    p = pod_dict(name, cpu=cpu, memory="256Mi", priority=prio)
    p["spec"]["nodeName"] = node
    if daemon:
        p["metadata"]["ownerReferences"] = DAEMON
    return p


def _full_pair() -> list:
    # n0 full of a low bound pod, n1 of one no queued pod may preempt: hi
    # (2 cpu, priority 1000) arriving at 5 preempts on n0, is nominated
    # there and backs off (1 s)
    return [node_dict("n0", cpu="2", memory="4Gi"), node_dict("n1", cpu="2", memory="4Gi"),
            _bound("low", "n0", "2", 0), _bound("top", "n1", "2", 5000)]


def test_a_deleted_nominated_node_ends_the_nomination(tmp_path):
    # at 5.5 n0 is deleted and c added in its freed row, mid (priority 10)
    # arrives: the nomination died with n0 (it would hold c's room if the
    # row kept it), mid binds on c; hi then preempts mid there
    trace = "name,arrival,cpu,priority\nhi,5,2,1000\nmid,5.5,2,10\n"
    steps = [{"at": 5.5, "delete": {"kind": "Node", "name": "n0"}},
             {"at": 5.5, "create": node_dict("c", cpu="2", memory="4Gi")}]
    r, want = _check(tmp_path, _full_pair(), trace, steps)
    names = r.node_names
    assert r.victim.tolist() == [0, 1, 1, 0]     # mid, then the bound low
    assert names[r.node[1]] == "c" and r.bind[1] == 5.5
    assert names[r.node[0]] == "c" and r.bind[0] > 5.5
    assert want[0]["preemptions"] == 2 and want[0]["deleted"] == 0


def test_a_cordoned_nominated_node_keeps_its_preemptor_out_until_uncordoned(tmp_path):
    # n0 is cordoned while hi backs off: hi fails there (NodeUnschedulable)
    # and finds no other candidate; it binds on n0 when uncordoned at 30
    trace = "name,arrival,cpu,priority\nhi,5,2,1000\n"
    steps = [{"at": 5.5, "cordon": "n0"}, {"at": 30, "uncordon": "n0"}]
    r, want = _check(tmp_path, _full_pair(), trace, steps)
    assert r.victim.tolist() == [0, 1, 0]
    assert r.node_names[r.node[0]] == "n0" and r.bind[0] == 30.0
    assert want[0]["preemptions"] == 1 and want[0]["failed_attempts"] >= 2


def test_a_drain_evicts_what_preemption_left_on_a_node(tmp_path):
    # hi preempts b0 (priority 0) on n0, b1 (priority 10) and the DaemonSet's
    # ds (100) are reprieved; the drain at 20 evicts b1 and hi, ds stays
    # (the bound pods leave one by one, not as n0's total)
    objs = [node_dict("n0", cpu="3", memory="4Gi"), node_dict("n1", cpu="1", memory="4Gi"),
            _bound("b0", "n0", "1", 0), _bound("b1", "n0", "1", 10),
            _bound("ds", "n0", "500m", 100, daemon=True), _bound("top", "n1", "1", 5000)]
    trace = "name,arrival,cpu,priority\nhi,5,1,1000\n"
    r, want = _check(tmp_path, objs, trace, [{"at": 20, "drain": "n0"}])
    assert r.victim.tolist() == [0, 1, 0, 0, 0]
    assert r.why.tolist() == [3, 0, 3, 0, 0]          # hi and b1 evicted
    assert want[0]["preemptions"] == 1 and want[0]["evicted"] == 2
    assert want[0]["running"] == 2                    # ds and top


def test_a_pod_rejected_everywhere_waits_while_others_preempt(tmp_path):
    # no scenario: w's node selector matches no node (it waits for a node
    # event or the pool's flush, not for the victims' deletion), hi
    # preempts low meanwhile
    objs = [node_dict("n0", cpu="2", memory="4Gi"),
            pod_dict("w", cpu="1", memory="1Gi", priority=0,
                     spec={"nodeSelector": {"zone": "nowhere"}})]
    trace = "name,arrival,cpu,priority\nlow,1,2,0\nhi,3,2,1000\n"
    cluster, tr, _ = _write(tmp_path, objs, trace, None)
    jobs = S.make_jobs([tr], [0, 2], cluster=cluster, interval=60.0)
    got, rest = _batched(jobs)
    assert rest == []
    want = _rows(jobs, False)
    assert got == want and want[0]["preemptions"] == 1 and want[0]["pending"] == 1


NOT_FOUND = "Pod default/low: not found (NotFound): no such pod pending or bound at 9s"


def _per_run_error(cluster, tr, sc, seed=0, cfg=None):
    """The message the run's own Simulation stops with (``cfg`` a config
    path, None the default profile), None when it runs."""
    objs = list(yaml.safe_load_all(Path(cluster).read_text()))
    sim = ts.Simulation(objs, yaml.safe_load(Path(cfg).read_text()) if cfg else None, "numpy",
                        seed)
    sim.scenario(sc)
    sim.submit(run.read_trace_file(tr))
    try:
        sim.run()
    except SimulationError as exc:
        assert type(exc) is SimulationError
        return str(exc)
    return None


@pytest.mark.parametrize("at,missed", [(9, True), (5, False), (4, False)])
def test_a_delete_of_a_pod_preempted_first_raises_the_simulations_error(tmp_path, at, missed):
    """hi (at 5) preempts low on n0: low's delete at 9 finds it gone, the
    Simulation's NotFound, raised by the batched call (type, message; a
    note names the run) and reported by the sweep as per job; at 5 (the
    delete before hi's attempt at its time) or 4 it finds low, and hi
    binds without preempting."""
    trace = "name,arrival,cpu,priority\nhi,5,2,1000\n"
    steps = [{"at": at, "delete": {"kind": "Pod", "name": "low"}}]
    cluster, tr, sc = _write(tmp_path, _full_pair(), trace, steps)
    msg = _per_run_error(cluster, tr, sc)
    assert msg == (NOT_FOUND.replace("9s", f"{at}s") if missed else None)
    jobs = S.make_jobs([tr], [0, 2], cluster=cluster, scenario=sc, interval=60.0)
    got, rest = _batched(jobs)
    assert rest == []
    if not missed:
        (r,) = ts.simulate_batch(cluster, [tr], [None], seeds=[0], scenario=sc)
        assert r.victim.tolist() == [0, 0, 0] and r.why.tolist() == [0, 2, 0]
        assert got == _rows(jobs, False) and got[0]["preemptions"] == 0
        return
    with pytest.raises(SimulationError) as exc:
        ts.simulate_batch(cluster, [tr], [None], seeds=[0, 2], scenario=sc)
    assert type(exc.value) is SimulationError and str(exc.value) == msg
    assert exc.value.__notes__ == ["the pod was preempted before its delete",
                                   "simulate_batch: run 0 (traces[0], configs[0], seed 0)"]
    with pytest.raises(SweepError) as per_job:
        S.run_sweep([dataclasses.replace(j, batch=False) for j in jobs], workers=1)
    with pytest.raises(SweepError) as batched:
        S.run_sweep(jobs, workers=1)
    assert str(batched.value) == str(per_job.value) and msg in str(per_job.value)


def _outcome(jobs, batch: bool):
    """The sweep's rows but ``wall_seconds``, or its SweepError's message."""
    try:
        return _rows(jobs, batch), None
    except SweepError as exc:
        return None, str(exc)


def _job_errors(jobs) -> list:
    """Per job (the per-job path's message: its Simulation's error, None
    where it runs; whether the batched call took it); ``ts.simulate_batch``
    of the job alone raises that error, type and message, or runs."""
    inputs = S.load_inputs(jobs)
    out = []
    for job in jobs:
        _row, msg = S._guarded(dataclasses.replace(job, batch=False), inputs)
        took = True
        try:
            ts.simulate_batch(job.cluster, [job.trace], [job.config], [job.seed],
                              scenario=job.scenario)
            assert msg is None, msg
        except SimulationError as exc:
            assert type(exc) is SimulationError and msg == f"{job.label}: {exc}"
        except BatchProfileError:
            took = False        # refused: the sweep runs it per job
        out.append((msg, took))
    return out


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_pods=st.integers(4, 20),
       n_bound=st.integers(1, 3), n_steps=st.integers(1, 4), n_created=st.integers(1, 3))
def test_random_deletes_of_pods_preemption_may_take_as_per_job(tmp_path, seed, n_nodes, n_pods,
                                                                n_bound, n_steps, n_created):
    """Deletes of pods of any priority: each job's batched outcome (its
    row, or its Simulation's NotFound) is its per-job path's, and the
    batched call of one job raises that error or runs."""
    jobs = _jobs(tmp_path, seed, n_nodes, n_pods, n_bound, n_steps, n_created, configs=1,
                 preempted=True)
    assert _outcome(jobs, True) == _outcome(jobs, False)
    _job_errors(jobs)


def test_random_preempted_deletes_hit_both_outcomes(tmp_path):
    """The draws above give jobs whose delete finds its pod preempted and
    jobs that run, both through the batched call."""
    seen = set()
    for seed in range(40):
        jobs = _jobs(tmp_path, seed, 2, 16, 2, 2, 3, configs=1, preempted=True)
        seen |= {msg is None for msg, took in _job_errors(jobs) if took}
        if seen == {True, False}:
            break
    assert seen == {True, False}
