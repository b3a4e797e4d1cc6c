"""A scenario's Pod delete of a created pod on the openb node-event
engine (``ts.simulate_batch(..., scenario=)``, ``tensorsched sweep``):
where the created pod was gone before its delete -- preempted by a pod of
the run (DefaultPreemption), evicted by a drain, deleted with its node,
or left, its duration over -- the run's Simulation stops at the step with
``SimulationError`` (NotFound): the batched call raises that error, type
and message, and the sweep reports the job as its per-job path does;
where the delete finds its pod (also at the time of its departure, of a
drain or removal of its node: the delete comes first), every run (row) is
its Simulation's.  Targeted cases and random clusters, traces and steps
(created pods of random priorities and durations, deleted later)."""
import dataclasses
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda
from test_facade_openb_preempt_events import (
    _two_nodes,
    check,
    preempt_config,
    simulate,
    write_cluster,
)
from test_sweep_openb_events import _pod, _random_scenario
from test_sweep_openb_preempt_events import _config

import tensorsched as ts
from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_openb_events as E
from tensorsched.experiments.results import SweepError
from tensorsched.framework.simulation.errors import SimulationError
from tensorsched.framework.simulation.scenario import load_scenario
from tensorsched.kernels.batch.openb_events import (
    WHY_DELETED,
    WHY_EVICTED,
    WHY_POD_DELETED,
    WHY_PREEMPTED,
)
from tensorsched.topology.gpu import read_openb_nodes

# a (low, 6 cores: only n0) on n0; c0 (created at 0.5, low) on n1; b waits;
# h (high) at 10 preempts c0 on n1
ROWS = [("a", 0, 6, 1000, 0), ("b", 1, 1, 1000, 0), ("h", 10, 1, 1000, 100)]
NOT_FOUND = "Pod default/c0: not found (NotFound): no such pod pending or bound at 20s"


def _steps(priority: int, delete_at: float) -> dict:
    return {"steps": [{"at": 0.5, "create": _pod("c0", 1, 1000, priority=priority)},
                      {"at": delete_at, "delete": {"kind": "Pod", "name": "c0"}}]}


def deletes_scenario(rng, n_nodes: int) -> dict:
    """One to three GPU-share pods created early (mostly at priority 0, so
    that the trace's pods of priority 5 and 100 may preempt them), most of
    them deleted later; now and then a node cordoned and uncordoned."""
    steps = []
    for k in range(int(rng.integers(1, 4))):
        num, milli = [(1, 1000), (1, 500), (2, 1000), (1, 300)][int(rng.integers(4))]
        at = float(rng.choice([0.5, 1, 3, 5, 30]))
        steps.append({"at": at, "create": _pod(f"c{k}", num, milli,
                                                priority=int(rng.choice([0, 0, 5, 1000])))})
        if rng.random() < 0.8:
            steps.append({"at": at + float(rng.choice([2, 30, 60, 400])),
                          "delete": {"kind": "Pod", "name": f"c{k}"}})
    if rng.random() < 0.3:
        node = f"n{int(rng.integers(n_nodes))}"
        at = float(rng.choice([3, 30, 100]))
        steps += [{"at": at, "cordon": node}, {"at": at + 50, "uncordon": node}]
    return {"steps": sorted(steps, key=lambda st: st["at"])}


def _simulation_error(nodes, pods, sc, policy, seed, args=(10, 100), preempt=True, grace=0.0):
    """The message the run's Simulation stops with (``grace`` its
    termination grace), None when it runs."""
    try:
        simulate(nodes, run.read_trace_file(pods), policy, seed, load_scenario(sc), args,
                 preempt=preempt, grace=grace)
    except SimulationError as exc:
        return str(exc)
    return None


def test_a_delete_of_a_preempted_pod_raises_the_simulations_error(tmp_path):
    """h preempts c0 before its delete at 20: the Simulation's NotFound,
    raised by the batched call (type and message; a note names the run,
    the first such in product order); without DefaultPreemption c0 is
    deleted and the run is returned."""
    nodes, pods = _two_nodes(tmp_path, ROWS)
    sc = _steps(0, 20)
    for policy in ("FGD", "BestFit"):
        assert _simulation_error(nodes, pods, sc, policy, 0) == NOT_FOUND
    with pytest.raises(SimulationError) as got:
        ts.simulate_batch(nodes, pods, ["FGD", preempt_config("FGD", 2),
                                        preempt_config("BestFit", 2)], [0, 1], scenario=sc,
                          workers=1)
    assert type(got.value) is SimulationError and str(got.value) == NOT_FOUND
    assert got.value.__notes__ == ["the pod was preempted before its delete",
                                   "simulate_batch: run 2 (nodes[0], traces[0], configs[1], "
                                   "seed 0)"]
    (r,) = ts.simulate_batch(nodes, pods, ["FGD"], scenario=sc, workers=1)
    assert r.why[r.pod_names.index("c0")] == WHY_POD_DELETED


@pytest.mark.parametrize("priority,delete_at", [(0, 5), (1000, 20)])
def test_a_delete_that_finds_its_pod_runs_batched(tmp_path, priority, delete_at):
    """c0 deleted before h comes (5), or above h (1000: h preempts a
    instead): every run its Simulation's, c0 deleted by the step, a pod
    preempted."""
    nodes, pods = _two_nodes(tmp_path, ROWS)
    for r in check(nodes, pods, _steps(priority, delete_at), ["FGD", "BestFit", "Random"],
                   [0, 2]):
        assert r.why[r.pod_names.index("c0")] == WHY_POD_DELETED
        assert (r.why == WHY_PREEMPTED).sum() == 1


@pytest.mark.cudasim
@needs_cuda
def test_cuda_form_raises_as_the_twin(tmp_path):
    """The device form (the simulator): the same error where h preempts c0
    before its delete, the twin's runs where the delete comes first."""
    nodes, pods = _two_nodes(tmp_path, ROWS)
    cfgs = [preempt_config("FGD", 2), "BestFit"]
    with pytest.raises(SimulationError) as got:
        ts.simulate_batch(nodes, pods, cfgs, [0], backend="cuda", scenario=_steps(0, 20))
    assert str(got.value) == NOT_FOUND
    twin, dev = (ts.simulate_batch(nodes, pods, cfgs, [0], backend=b, scenario=_steps(0, 5))
                 for b in ("numba", "cuda"))
    for x, y in zip(twin, dev):
        assert x.why.tolist() == y.why.tolist() and x.log_pod.tolist() == y.log_pod.tolist()
        assert x.log_t.tolist() == y.log_t.tolist() and x.node.tolist() == y.node.tolist()


def _facade_or_error(nodes, pods, sc, policies, seeds, args, preempt=True, grace=0.0):
    """The batched call raises the first (product order) failing
    Simulation's error, type and message, or every run is its
    Simulation's (``preempt``: with DefaultPreemption; ``grace`` the
    termination grace); the message or None."""
    n = read_openb_nodes(nodes).n_nodes
    try:
        ts.simulate_batch(nodes, [pods], [preempt_config(p, n, *args, preempt=preempt)
                                          for p in policies], seeds, scenario=sc, workers=1,
                          termination_grace_seconds=grace)
    except SimulationError as exc:
        assert type(exc) is SimulationError
        for p in policies:
            for s in seeds:
                msg = _simulation_error(nodes, pods, sc, p, s, args, preempt, grace)
                if msg is not None:
                    assert str(exc) == msg
                    return msg
        pytest.fail(f"the batched call raised {exc} where no Simulation does")
    check(nodes, pods, sc, policies, seeds, args, preempt=preempt, grace=grace)
    return None


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_pods=st.integers(6, 20))
def test_random_deletes_raise_or_equal_each_simulation(tmp_path, seed, n_nodes, n_pods):
    rng = np.random.default_rng(seed)
    nodes, pods = write_cluster(tmp_path, rng, n_nodes, n_pods)
    sc = deletes_scenario(rng, n_nodes) if seed % 3 else _random_scenario(rng, n_nodes, pods=True)
    _facade_or_error(nodes, pods, sc, ["FGD", "BestFit"][seed % 2:][:1 + seed % 2],
                     [seed % 5], [(10, 100), (50, 1)][seed % 2])


def test_random_draws_hit_both_outcomes(tmp_path):
    """The generator's draws give both: a delete finding its pod preempted
    and runs that end (so the property above checks both)."""
    seen = set()
    for seed in range(40):
        rng = np.random.default_rng(seed)
        nodes, pods = write_cluster(tmp_path, rng, 2, 16)
        seen.add(_facade_or_error(nodes, pods, deletes_scenario(rng, 2), ["FGD"], [0],
                                  (10, 100)) is None)
        if seen == {True, False}:
            break
    assert seen == {True, False}


# ---------------------------------------------------------------------------
# a created pod gone another way before its delete: its duration over, its
# node drained or removed (with or without DefaultPreemption)

# a (6 cores: only n0) takes n0's GPU; c0 (created at 0.5) binds on n1 at 0.5
GONE_ROWS = [("a", 0, 6, 1000, 0)]


def _gone_steps(delete_at: float, duration: float | None = None, node_step=None) -> dict:
    """c0 created at 0.5 (``duration`` after its binding), deleted at
    ``delete_at``; ``node_step`` (a step dict) too."""
    create = {"at": 0.5, "create": _pod("c0", 1, 1000)}
    if duration is not None:
        create["duration"] = duration
    steps = [create, {"at": delete_at, "delete": {"kind": "Pod", "name": "c0"}}]
    return {"steps": steps + ([node_step] if node_step else [])}


@pytest.mark.parametrize("sc,missed,why", [
    # c0 leaves at 10.5: a delete then comes first (the agenda's order)
    (_gone_steps(10.5, 10), None, WHY_POD_DELETED),
    (_gone_steps(11, 10), "at 11s", 0),
    # a drain or removal of n1 at the delete's time comes after it
    (_gone_steps(20, None, {"at": 20, "drain": "n1"}), None, WHY_POD_DELETED),
    (_gone_steps(20, None, {"at": 10, "drain": "n1"}), "at 20s", WHY_EVICTED),
    (_gone_steps(20, None, {"at": 10, "drain": "n0"}), None, WHY_POD_DELETED),
    (_gone_steps(20, None, {"at": 20, "removeNodes": ["n1"]}), None, WHY_POD_DELETED),
    (_gone_steps(20, None, {"at": 10, "delete": {"kind": "Node", "name": "n1"}}), "at 20s",
     WHY_DELETED),
])
@pytest.mark.parametrize("preempt", [False, True])
def test_a_delete_of_a_pod_gone_another_way(tmp_path, sc, missed, why, preempt):
    """Each case's Simulation (FGD, BestFit) stops at c0's delete with
    NotFound exactly when c0 left before it (the batched call raises that
    error); else every run is its Simulation's, c0 deleted by the step."""
    nodes, pods = _two_nodes(tmp_path, GONE_ROWS)
    msg = _facade_or_error(nodes, pods, sc, ["FGD", "BestFit"], [0, 1], (10, 100), preempt)
    if missed is None:
        assert msg is None
    else:
        assert msg == NOT_FOUND.replace("at 20s", missed)
    runs = None
    try:
        runs = ts.simulate_batch(nodes, pods, [preempt_config("FGD", 2, preempt=preempt)],
                                 scenario=sc, workers=1)
    except SimulationError as exc:
        assert exc.__notes__[0] == f"the pod {LEFT[why]} before its delete"
    assert (runs is None) == (missed is not None)
    if runs is not None:
        assert runs[0].why[runs[0].pod_names.index("c0")] == why


LEFT = {WHY_EVICTED: "was evicted (a drain)", WHY_DELETED: "was deleted with its node",
        0: "left (its duration over)"}


def gone_scenario(rng, n_nodes: int) -> dict:
    """One to three created pods (some with a duration, some of low
    priority), each deleted later on a coarse grid of times, so that the
    deletes meet their pods' departures, and a drain or removal of a node
    now and then, at those times too (equal times: a delete before a
    departure, before a node step)."""
    steps = []
    for k in range(int(rng.integers(1, 4))):
        num, milli = [(1, 1000), (1, 500), (2, 1000), (1, 300)][int(rng.integers(4))]
        at = float(rng.choice([0.5, 1, 3]))
        step = {"at": at, "create": _pod(f"c{k}", num, milli,
                                         priority=int(rng.choice([0, 5, 1000])))}
        if rng.random() < 0.5:
            step["duration"] = float(rng.choice([2, 5, 9.5]))
        steps.append(step)
        if rng.random() < 0.9:
            steps.append({"at": at + float(rng.choice([2, 5, 9.5, 30])),
                          "delete": {"kind": "Pod", "name": f"c{k}"}})
    names = [f"n{i}" for i in range(n_nodes)]
    for _ in range(int(rng.integers(0, 3))):
        if not names:
            break
        nm = names.pop(int(rng.integers(len(names))))
        at = float(rng.choice([3, 5, 10.5, 31]))
        steps.append({"at": at, "drain": nm} if rng.random() < 0.5 else
                     {"at": at, "removeNodes": [nm]})
    return {"steps": sorted(steps, key=lambda x: x["at"])}


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_pods=st.integers(4, 16))
def test_random_gone_deletes_raise_or_equal_each_simulation(tmp_path, seed, n_nodes, n_pods):
    """Created pods deleted after they may have left (their duration, a
    drain, a removal, a preemption; ``_random_scenario``'s steps now and
    then): the batched call raises the first failing Simulation's error,
    or every run is its Simulation's."""
    rng = np.random.default_rng(seed)
    nodes, pods = write_cluster(tmp_path, rng, n_nodes, n_pods)
    sc = gone_scenario(rng, n_nodes) if seed % 4 else _random_scenario(rng, n_nodes, pods=True,
                                                                        gone=True)
    _facade_or_error(nodes, pods, sc, ["FGD", "BestFit"][seed % 2:][:1 + seed % 2],
                     [seed % 5], [(10, 100), (50, 1)][seed % 2], preempt=bool(seed % 3))


def test_random_gone_draws_hit_both_outcomes(tmp_path):
    """The generator above gives, without preemption, deletes finding their
    pod gone by each way (its duration, a drain, a removal) and runs that
    end."""
    seen = {}                   # outcome -> the first seed giving it
    for seed in range(80):
        rng = np.random.default_rng(seed)
        nodes, pods = write_cluster(tmp_path, rng, 2, 10)
        sc = gone_scenario(rng, 2)
        try:
            ts.simulate_batch(nodes, pods, [preempt_config("FGD", 2, preempt=False)],
                              scenario=sc, workers=1)
            how = None
        except SimulationError as exc:
            how = exc.__notes__[0]
        if how not in seen:
            with open(nodes) as fn, open(pods) as fp:
                seen[how] = (fn.read(), fp.read(), sc)
        if len(seen) == 4:
            break
    assert set(seen) == {None} | {f"the pod {w} before its delete" for w in LEFT.values()}
    for how, (nodes, pods, sc) in seen.items():     # each the Simulation's
        (tmp_path / "n.csv").write_text(nodes)
        (tmp_path / "p.csv").write_text(pods)
        msg = _facade_or_error(str(tmp_path / "n.csv"), str(tmp_path / "p.csv"), sc, ["FGD"],
                               [0], (10, 100), False)
        assert (msg is None) == (how is None)


# ---------------------------------------------------------------------------
# tensorsched sweep


def _sweep(jobs, batch: bool):
    """(rows but ``wall_seconds``, None) or (None, the SweepError's message)."""
    jobs = [dataclasses.replace(j, batch=batch) for j in jobs]
    try:
        return S.run_sweep(jobs, workers=1).drop(["wall_seconds"]).to_pylist(), None
    except SweepError as exc:
        return None, str(exc)


def _counted(monkeypatch) -> list:
    calls = []
    real = E.openb_event_runs
    monkeypatch.setattr(E, "openb_event_runs", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def _sweep_jobs(tmp_path, nodes, pods, sc: dict, seeds):
    typical = run.typical_of(run.read_trace_file(pods))
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(sc))
    return S.make_jobs([pods], seeds, nodes=nodes, interval=5.0, scenario=str(path),
                       policies=["FGD"],
                       configs=[_config(tmp_path, "bestfit", "BestFit", typical),
                                _config(tmp_path, "fgd", "FGD", typical, (50, 1))])


def test_sweep_reports_the_job_whose_delete_misses_as_per_job(tmp_path, monkeypatch):
    """The preempting config jobs' Simulations stop at c0's delete: the
    batched sweep's SweepError is the per-job path's (the job's label and
    the Simulation's message); c0 deleted first: rows equal, one call."""
    nodes, pods = _two_nodes(tmp_path, ROWS)
    jobs = _sweep_jobs(tmp_path, nodes, pods, _steps(0, 20), [0])
    calls = _counted(monkeypatch)
    rows, error = _sweep(jobs, True)
    assert calls == [1] and rows is None
    assert error == _sweep(jobs, False)[1] and error.endswith(NOT_FOUND)
    assert error.startswith(jobs[0].label + ": ")
    jobs = _sweep_jobs(tmp_path, nodes, pods, _steps(0, 5), [0])
    rows, error = _sweep(jobs, True)
    assert calls == [1, 1] and error is None and sum(r["preemptions"] for r in rows) > 0
    assert rows == _sweep(jobs, False)[0]


@pytest.mark.parametrize("node_step,missed", [({"at": 10, "drain": "n1"}, True),
                                               ({"at": 20, "drain": "n1"}, False)])
def test_sweep_reports_a_delete_of_a_drained_pod_as_per_job(tmp_path, monkeypatch, node_step,
                                                            missed):
    """c0's node drained before its delete: every job's Simulation (the
    policy job's too: no preemption) stops there, the batched sweep's
    SweepError the per-job path's; drained at the delete's time: rows
    equal, one call."""
    nodes, pods = _two_nodes(tmp_path, GONE_ROWS)
    jobs = _sweep_jobs(tmp_path, nodes, pods, _gone_steps(20, None, node_step), [0])
    calls = _counted(monkeypatch)
    rows, error = _sweep(jobs, True)
    assert calls == [1]
    per_job = _sweep(jobs, False)
    assert (rows, error) == per_job
    assert (error is not None) == missed
    if missed:
        assert error.endswith(NOT_FOUND)


@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_pods=st.integers(6, 20))
def test_sweep_random_deletes_as_per_job(tmp_path, seed, n_nodes, n_pods):
    rng = np.random.default_rng(seed)
    nodes, pods = write_cluster(tmp_path, rng, n_nodes, n_pods)
    sc = [deletes_scenario, gone_scenario][seed % 2](rng, n_nodes) if seed % 3 else \
        _random_scenario(rng, n_nodes, pods=True, gone=bool(seed % 2))
    jobs = _sweep_jobs(tmp_path, nodes, pods, sc, [seed % 5])
    assert _sweep(jobs, True) == _sweep(jobs, False)
