"""``tensorsched sweep`` over default-profile configurations on a manifest
cluster (``experiments/sweep_local.py``): the jobs run as batched calls of
the node-local kernel's trace form and every row equals the row of the
run's own Simulation (``batch=False``) but ``wall_seconds``, on small
random clusters (bound and pending pods, taints, unschedulable nodes,
labels, images) and
traces (arrivals at once and apart, departures at a time or a duration
after the binding, pods too big to fit that retry), under
configurations that differ in NodeResourcesFit's strategy,
BalancedAllocation's resources, score weights and
percentageOfNodesToScore, with bound pods' InterPodAffinity terms and a
pending pod whose terms select itself (the README example's sweep
included); what it does not cover is refused by name and goes the
per-run way."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorsched as ts
from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_local as SL
from tensorsched.framework.errors import ArgumentError
from tensorsched.generators.clusters import node_dict, pod_dict

from support.local_clusters import config
from support.local_traces import write_inputs as _write


def _rows(jobs, batch: bool):
    jobs = [dataclasses.replace(j, batch=batch) for j in jobs]
    return S.run_sweep(jobs, workers=1).drop(["wall_seconds"]).to_pylist()


def _batched(jobs) -> list:
    """The rows ``sweep_local.batched_local`` makes (and the jobs it leaves)."""
    inputs = S.load_inputs(jobs)
    got: dict = {}
    rest = SL.batched_local(jobs, inputs, 1, lambda i, row, e: got.__setitem__(i, row))
    return [got.get(i) for i in range(len(jobs))], rest


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 5), n_pods=st.integers(1, 25),
       bound=st.integers(0, 3), interval=st.sampled_from([7.0, 60.0]))
def test_batched_rows_equal_each_simulation(tmp_path, seed, n_nodes, n_pods, bound, interval):
    cluster, trace, configs = _write(tmp_path, seed, n_nodes, n_pods, bound)
    jobs = S.make_jobs([trace], [0, 1 + seed % 7], configs=configs, cluster=cluster,
                       interval=interval)
    got, rest = _batched(jobs)
    assert rest == []
    want = _rows(jobs, False)
    for g, w in zip(got, want):
        g = dict(g)
        g.pop("wall_seconds")
        assert g == w
    assert _rows(jobs, True) == want


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 4), n_pods=st.integers(1, 25),
       bound=st.integers(0, 2))
def test_duration_departures_equal_each_simulation(tmp_path, seed, n_nodes, n_pods, bound):
    # some pods leave a duration after their binding (0 s included, ties
    # with absolute departures and arrivals): the departure heap's order
    cluster, trace, configs = _write(tmp_path, seed, n_nodes, n_pods, bound, durations=True)
    jobs = S.make_jobs([trace], [0, 1 + seed % 7], configs=configs[:2], cluster=cluster,
                       interval=60.0)
    got, rest = _batched(jobs)
    assert rest == []
    want = _rows(jobs, False)
    for g, w in zip(got, want):
        g = dict(g)
        g.pop("wall_seconds")
        assert g == w


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 4), n_pods=st.integers(1, 25),
       bound=st.integers(0, 2))
def test_priorities_and_creation_times_equal_each_simulation(tmp_path, seed, n_nodes, n_pods,
                                                             bound):
    # activeQ in PrioritySort's order: trace pods of priorities 0, 10 and
    # 1000 (DefaultPreemption off), the manifests' pending pods (created
    # before them: after them in activeQ) beside trace pods at time 0
    cluster, trace, configs = _write(tmp_path, seed, n_nodes, n_pods, bound, durations=True,
                                     priorities=True)
    jobs = S.make_jobs([trace], [0, 1 + seed % 7], configs=configs[:2], cluster=cluster,
                       interval=60.0)
    got, rest = _batched(jobs)
    assert rest == []
    want = _rows(jobs, False)
    for g, w in zip(got, want):
        g = dict(g)
        g.pop("wall_seconds")
        assert g == w


def test_active_q_order_decides_who_binds(tmp_path):
    # one node of 1 cpu; at time 0 the manifests' pending pod w (created
    # before the trace's pods: behind them), p0 (priority 0) and p1
    # (priority 1000) want all of it: p1 binds, in the batch as in the
    # Simulation (first-in first-out would bind w)

    pending = pod_dict("w", cpu="1", memory="1Gi")
    objs = [node_dict("n0", cpu="1", memory="4Gi"), pending]
    tr = tmp_path / "t.csv"
    tr.write_text("name,arrival,cpu,priority\np0,0,1,0\np1,0,1,1000\n")
    cfg = config(0)
    cfg["profiles"][0]["plugins"] = {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}
    (r,) = ts.simulate_batch(objs, [str(tr)], [cfg], seeds=[0])
    assert r.node.tolist() == [-1, -1, 0]
    sim = ts.Simulation(objs, cfg, "numba", 0)
    sim.submit(run.read_trace_file(str(tr)))
    sim.run()
    assert sorted(sim.cluster.state.pods.keys()) == ["default/p1"]


def test_pending_pods_of_no_profile_stay_pending(tmp_path):
    # the manifests' pod of schedulerName "other" is never queued: the
    # batched rows count it arrived (not pending), as the Simulation does
    other = pod_dict("x", cpu="100m", memory="64Mi")
    other["spec"]["schedulerName"] = "other"
    cl = tmp_path / "c.yaml"
    cl.write_text(yaml.safe_dump_all([node_dict("n0", cpu="2", memory="4Gi"), other]))
    tr = tmp_path / "t.csv"
    tr.write_text("name,arrival,duration,cpu\np0,0,30,1\np1,0,,1\np2,5,,1\n")
    jobs = S.make_jobs([str(tr)], [0], cluster=str(cl), interval=10.0)
    got, rest = _batched(jobs)
    assert rest == []
    got[0].pop("wall_seconds")
    want = _rows(jobs, False)
    assert got == want and want[0]["pending"] == 0 and want[0]["arrived"] == 4


def test_a_sample_the_simulation_takes_after_a_later_binding_runs_per_job(tmp_path):
    # p0 leaves at 101 (duration 100); p1 failed at 100.5 and backs off to
    # 101.5: the agenda is empty from 101 until p1 binds at 101.5, and the
    # Simulation's row at 101 (interval 50.5) shows that binding: the job
    # goes the per-run way, and a batched row would have differed there
    cl = tmp_path / "c.yaml"
    cl.write_text(yaml.safe_dump_all([node_dict("n0", cpu="1", memory="4Gi")]))
    tr = tmp_path / "t.csv"
    tr.write_text("name,arrival,duration,cpu\np0,1,100,1\np1,100.5,50,1\n")
    jobs = S.make_jobs([str(tr)], [0], cluster=str(cl), interval=50.5)
    got, rest = _batched(jobs)
    assert rest == [0] and got == [None]
    want = _rows(jobs, False)
    assert _rows(jobs, True) == want and want[0]["departed"] == 2
    jobs = S.make_jobs([str(tr)], [0], cluster=str(cl), interval=50.0)
    got, rest = _batched(jobs)
    assert rest == []
    got[0].pop("wall_seconds")
    assert got == _rows(jobs, False)


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 4), n_pods=st.integers(1, 15),
       bound=st.integers(1, 4))
def test_pod_affinity_rows_equal_each_simulation(tmp_path, seed, n_nodes, n_pods, bound):
    cluster, trace, configs = _write(tmp_path, seed, n_nodes, n_pods, bound, affinity=True)
    jobs = S.make_jobs([trace], [0, 1 + seed % 7], configs=configs[:2], cluster=cluster,
                       interval=60.0)
    got, rest = _batched(jobs)
    assert rest == []
    for g in got:
        g.pop("wall_seconds")
    assert got == _rows(jobs, False)


def test_the_readme_example_sweep_is_batched():
    jobs = S.make_jobs(["data/examples/trace.csv"], [1, 2],
                       configs=["data/examples/spread.yaml", "data/examples/pack.yaml"],
                       cluster="data/examples/cluster.yaml")
    got, rest = _batched(jobs)
    assert rest == [] and None not in got
    for g in got:
        g.pop("wall_seconds")
    assert got == _rows(jobs, False)


def _trace(tmp_path, text: str):
    tr = tmp_path / "x.csv"
    tr.write_text(text)
    return run.read_trace_file(str(tr))


def _refusal(tmp_path, objs, trace: str, cfg=None) -> str:
    cl = tmp_path / "c.yaml"
    cl.write_text(yaml.safe_dump_all(objs))
    tr = tmp_path / "t.csv"
    tr.write_text(trace)
    with pytest.raises(SL.BatchProfileError) as err:
        SL.trace_runs(yaml.safe_load_all(cl.read_text()), cfg, run.read_trace_file(str(tr)),
                      [0])
    return str(err.value)


def test_what_is_not_covered_is_refused_by_name_and_runs_per_job(tmp_path):
    nodes = [node_dict("n0", taints=[{"key": "gpu", "effect": "NoSchedule"}]),
             node_dict("n1", unschedulable=True)]
    plain = "name,arrival,cpu\np0,0,100m\n"
    # unequal priorities with DefaultPreemption on: the higher could
    # preempt, in the kernel's queue (``test_sweep_preempt``); with a pod
    # the usage-independent filters reject everywhere, with the node
    # events' form (``test_sweep_preempt_events``)
    (r,) = SL.trace_runs(nodes[:1], None, _trace(tmp_path, "name,arrival,cpu,priority\n"
                                                           "p0,0,1,1\np1,0,1,2\n"), [0])
    assert r.victim is not None and r.why is not None and r.node.tolist() == [-1, -1]
    cfg = config(0)
    cfg["profiles"][0]["plugins"] = {"filter": {"enabled": [{"name": "GpuShareFit"}]}}
    assert "not of the default profile" in _refusal(tmp_path, nodes[:1], plain, cfg)
    # a pending pod whose terms select the trace's pods
    near = pod_dict("near", spec={"affinity": {"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": {
            "topologyKey": "kubernetes.io/hostname",
            "labelSelector": {"matchExpressions": [
                {"key": "app", "operator": "DoesNotExist"}]}}}]}}})
    msg = _refusal(tmp_path, [node_dict("n2"), near], plain)
    assert msg.startswith("InterPodAffinity") and "default/near selects pod" in msg
    # a sweep over a cluster whose nodes all reject the pod (it waits for
    # a node event or the pool's flush): batched, the per-run rows
    cl = tmp_path / "tainted.yaml"
    cl.write_text(yaml.safe_dump_all(nodes))
    tr = tmp_path / "t.csv"
    tr.write_text(plain)
    jobs = S.make_jobs([str(tr)], [0], cluster=str(cl))
    got, rest = _batched(jobs)
    assert rest == [] and got[0]["scheduled"] == 0
    assert _rows(jobs, True) == _rows(jobs, False)


def test_configurations_share_one_call_each_with_its_profile(tmp_path):
    cluster, trace, configs = _write(tmp_path, 5, 4, 20, 1)
    objs = list(yaml.safe_load_all(Path(cluster).read_text()))
    tr = run.read_trace_file(trace)
    setups = [SL.trace_setup(objs, yaml.safe_load(Path(c).read_text()), tr) for c in configs]
    assert SL.share_call(setups)
    seeds = [[0, 3], [1], [2, 4]]
    together = SL.run_setups(setups, seeds)
    for s, sd, got in zip(setups, seeds, together):
        alone = SL.run_setups([s], [sd])[0]
        assert len(got) == len(sd)
        for a, b in zip(got, alone):
            np.testing.assert_array_equal(a.node, b.node)
            np.testing.assert_array_equal(a.tries, b.tries)
            np.testing.assert_array_equal(a.log_pod, b.log_pod)


@pytest.mark.parametrize("durations,priorities", [(False, False), (True, False), (True, True)])
def test_simulate_batch_on_manifests_equals_each_simulation(tmp_path, durations, priorities):
    import tensorsched as ts

    cluster, trace, configs = _write(tmp_path, 11, 4, 18, 1, durations, priorities)
    objs = list(yaml.safe_load_all(Path(cluster).read_text()))
    runs = ts.simulate_batch(cluster, [trace], configs[:2], seeds=[0, 5])
    assert [(r.trace, r.config, r.seed) for r in runs] == [(0, 0, 0), (0, 0, 5), (0, 1, 0),
                                                          (0, 1, 5)]
    tr = run.read_trace_file(trace)
    for r in runs:
        cfg = yaml.safe_load(Path(configs[r.config]).read_text())
        sim = ts.Simulation(objs, cfg, "numba", r.seed)
        bound = {}
        sim.scheduler.subscribe("Bound", lambda e: bound.__setitem__(
            e["pod"], (e["node"], sim.clock.now())))
        sim.submit(tr)
        sim.run()
        keys = [p.key for p in SL.trace_setup(objs, cfg, tr).prober.pods]
        got = {k: (r.node_names[n], float(t)) for k, n, t in zip(keys, r.node, r.bind) if n >= 0}
        assert got == bound and len(bound) > 5
    with pytest.raises(ts.ArgumentError, match="backend"):
        ts.simulate_batch(cluster, [trace], backend="numpy")


@pytest.mark.timeout(30)
def test_an_endless_generator_of_objects_is_refused_not_listed(tmp_path, monkeypatch):
    # trace_runs(<endless generator>) listed objects until the machine ran out
    # of memory; now at most the bound plus one is read (ten million made a
    # thousand here: listing ten million takes a second)
    import itertools

    monkeypatch.setattr(SL, "MAX_OBJECTS", 1000)
    trace = _trace(tmp_path, "name,arrival,cpu\np0,0,100m\n")
    for function in ("trace_runs", "trace_setup"):
        with pytest.raises(ArgumentError, match=f"^{function}: objects: at most 1,000 object "
                           "dicts, got more$"):
            if function == "trace_runs":
                SL.trace_runs(itertools.repeat(node_dict("n0")), None, trace, [0])
            else:
                SL.trace_setup(itertools.repeat(node_dict("n0")), None, trace)
