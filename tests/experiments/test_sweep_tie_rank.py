"""Tie-ranked ``tensorsched sweep`` jobs: the openb paper experiment's
profile (GpuShareScore with OpenbTieRank breaking its ties, the nodes
labelled ``batch.tie_of(n, seed)``) on ``--policy`` jobs (``--tie-rank``)
and on ``--config`` jobs that enable OpenbTieRank.  Batched rows (the
openb engine without a scenario, the node-event engine with one) equal
each job's own Simulation (``batch=False``) but ``wall_seconds``; the tie
order changes placements; manifests carry their own labels."""
import dataclasses
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sweep_batch import HEADER, _write, _write_generic
from test_sweep_openb_events import _node, _random_scenario

from tensorsched.cli import main
from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_openb_events as E
from tensorsched.framework.capacity.batch_probe import BatchProfileError
from tensorsched.framework.simulation.scenario import ScenarioError
from tensorsched.topology.gpu import read_openb_nodes
from tensorsched.topology.openb.batch import tie_of
from tensorsched.topology.openb.trace import TIE_LABEL, openb_config

POLICIES = ("FGD", "Random", "BestFit", "DotProd", "GpuPacking", "GpuClustering")
SLOW = settings(max_examples=6, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def _rows(jobs, batch: bool):
    jobs = [dataclasses.replace(j, batch=batch) for j in jobs]
    return S.run_sweep(jobs, workers=1).drop(["wall_seconds"]).to_pylist()


def _weights(monkeypatch, module, name: str) -> list:
    """Per call of ``module.name`` (``trace_batch`` or ``openb_event_runs``),
    the (GpuShareScore, OpenbTieRank) weights of its runs."""
    calls = []
    real = getattr(module, name)

    def counted(*a, **k):
        calls.append(list(k["weights"]))
        return real(*a, **k)
    monkeypatch.setattr(module, name, counted)
    return calls


def _tie_config(tmp_path, stem: str, policy: str, gpu_weight: int, tie_weight: int,
                typical=None) -> str:
    """A KubeSchedulerConfiguration file of the experiment's profile with
    the two score weights (``openb_config`` with OpenbTieRank)."""
    cfg = openb_config(policy, typical, gpu_weight)
    cfg["profiles"][0]["plugins"]["score"]["enabled"][1]["weight"] = tie_weight
    path = tmp_path / f"{stem}.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def _scenario(tmp_path, seed: int, n_nodes: int) -> str:
    sc = tmp_path / "scenario.json"
    sc.write_text(json.dumps(_random_scenario(np.random.default_rng(seed), n_nodes,
                                              pods=bool(seed % 2))))
    return str(sc)


def _refused(nodes: str, inputs: dict, sc: str, pods: str) -> bool:
    """The scenario is one the node-event engine refuses (the jobs run per job)."""
    try:
        plan = E.plan_openb(read_openb_nodes(nodes), inputs[("scenario", sc)],
                            inputs[("trace", pods)])
    except BatchProfileError:
        return True
    return plan.rank_problem is not None


@SLOW
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 5), n_pods=st.integers(1, 25),
       generic=st.booleans(), scenario=st.booleans())
def test_tie_ranked_policy_jobs_batched_equal_each_simulation(tmp_path, monkeypatch, seed,
                                                              n_nodes, n_pods, generic,
                                                              scenario):
    """``tie_rank`` policy jobs, with and without a random scenario of node
    and Pod steps (added nodes with and without a tie label): one batched
    call with the experiment's weights (n + 1, 1; Random (1, 0)), rows
    equal to each job's Simulation."""
    nodes, pods = (_write_generic if generic else _write)(tmp_path, seed, n_nodes, n_pods)
    sc = _scenario(tmp_path, seed, n_nodes) if scenario else None
    policies = list(POLICIES[seed % 3::3])
    jobs = S.make_jobs([pods], [seed % 5, 7], policies=policies, nodes=nodes, interval=60.0,
                       scenario=sc, tie_rank=True)
    inputs = S.load_inputs(jobs)
    if inputs[("typical", pods)] is None:           # no GPU ask: per job only
        return
    want = [(1, 0) if j.policy == "Random" else (n_nodes + 1, 1) for j in jobs]
    if scenario:
        calls = _weights(monkeypatch, E, "openb_event_runs")
        expected = [] if _refused(nodes, inputs, sc, pods) else [want]
    else:
        calls = _weights(monkeypatch, S, "trace_batch")
        expected = [want]
    assert _rows(jobs, True) == _rows(jobs, False)
    assert calls == expected


@SLOW
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 4), n_pods=st.integers(2, 20),
       generic=st.booleans(), scenario=st.booleans())
def test_config_jobs_naming_openb_tie_rank_batched_equal_each_simulation(
        tmp_path, monkeypatch, seed, n_nodes, n_pods, generic, scenario):
    """``--config`` jobs enabling OpenbTieRank (its weight and
    GpuShareScore's from the file) beside a tie-ranked policy job, with
    and without a scenario: one batched call, each job's weights, rows
    equal to each job's Simulation."""
    nodes, pods = (_write_generic if generic else _write)(tmp_path, seed, n_nodes, n_pods)
    typical = run.typical_of(run.read_trace_file(pods))
    if typical is None:
        return
    configs = [_tie_config(tmp_path, "bestfit_tie", "BestFit", 50, 2),
               _tie_config(tmp_path, "fgd_tie", "FGD", n_nodes + 1, 1, typical)]
    sc = _scenario(tmp_path, seed, n_nodes) if scenario else None
    jobs = S.make_jobs([pods], [1 + seed % 5], configs=configs, policies=[POLICIES[seed % 6]],
                       nodes=nodes, interval=60.0, scenario=sc, tie_rank=True)
    inputs = S.load_inputs(jobs)
    assert [S.tie_ranked(j, inputs) for j in jobs] == [True, True, POLICIES[seed % 6] != "Random"]
    want = [(50, 2), (n_nodes + 1, 1), (1, 0) if jobs[2].policy == "Random"
            else (n_nodes + 1, 1)]
    if scenario:
        calls = _weights(monkeypatch, E, "openb_event_runs")
        expected = [] if _refused(nodes, inputs, sc, pods) else [want]
    else:
        calls = _weights(monkeypatch, S, "trace_batch")
        expected = [want]
    assert _rows(jobs, True) == _rows(jobs, False)
    assert calls == expected


def test_the_nodes_carry_the_seeds_ranks(tmp_path):
    """A tie-ranked job's Simulation labels node i ``tie_of(n, seed)[i]``
    (the batched kernel's ranks); GpuShareScore alone and Random: no label."""
    nodes, pods = _write(tmp_path, 2, 5, 4)
    jobs = S.make_jobs([pods], [3, 11], policies=["BestFit", "Random"], nodes=nodes,
                       tie_rank=True)
    inputs = S.load_inputs(jobs)
    for job in jobs:
        labels = [o["metadata"]["labels"].get(TIE_LABEL) for o in S._objects(job, inputs)]
        want = [str(int(r)) for r in tie_of(5, job.seed)] if job.policy == "BestFit" \
            else [None] * 5
        assert labels == want
    plain = S.make_jobs([pods], [3], policies=["BestFit"], nodes=nodes)[0]
    assert all(TIE_LABEL not in o["metadata"]["labels"] for o in S._objects(plain, inputs))


def _model_trap(tmp_path) -> tuple:
    """Two one-GPU nodes alike but their GPU model (V100M16, T4) and a trace
    of one pod of any model then one of T4 alone: under BestFit the first
    pod's node is a tie; on the T4 node it leaves the second pending."""
    nodes = tmp_path / "trap_nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,8000,16384,1,V100M16\n"
                     "n1,8000,16384,1,T4\n")
    pods = tmp_path / "trap_pods.csv"
    pods.write_text(HEADER + "p0,1000,1024,1,1000,,LS,Running,0,,0\n"
                    "p1,1000,1024,1,1000,T4,LS,Running,5,,5\n")
    return str(nodes), str(pods)


def test_the_tie_order_changes_placements(tmp_path):
    """Over ten seeds the tie-ranked job's outcome follows the seed's node
    order (the second pod binds iff the V100 node ranks first), and that
    differs from GpuShareScore alone (the scheduler's own seeded tie-break)
    for some seed."""
    nodes, pods = _model_trap(tmp_path)
    seeds = list(range(10))
    tied = S.make_jobs([pods], seeds, policies=["BestFit"], nodes=nodes, tie_rank=True)
    plain = S.make_jobs([pods], seeds, policies=["BestFit"], nodes=nodes)
    got = [r["scheduled"] for r in _rows(tied, True)]
    assert got == [r["scheduled"] for r in _rows(tied, False)]
    assert got == [2 if tie_of(2, s)[0] > tie_of(2, s)[1] else 1 for s in seeds]
    assert got != [r["scheduled"] for r in _rows(plain, True)]


def _manifests(tmp_path, tie: str | None) -> str:
    """Nodes as ``_model_trap``'s, in manifests: the V100 node labelled ``tie``."""
    path = tmp_path / "cluster.json"
    items = [_node("n0", 1, "V100M16", cpu="8", mem="16Gi", tie=tie),
             _node("n1", 1, "T4", cpu="8", mem="16Gi")]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


def test_manifests_rank_by_the_labels_they_carry(tmp_path):
    """On ``--cluster`` manifests OpenbTieRank reads the nodes' own labels
    (a node without one ranks 0): the labelled V100 node wins every seed's
    tie, and GpuShareScore alone loses it for some seed."""
    _nodes, pods = _model_trap(tmp_path)
    cluster = _manifests(tmp_path, "4")
    cfg = _tie_config(tmp_path, "bestfit_tie", "BestFit", 3, 1)
    alone = tmp_path / "bestfit.json"
    alone.write_text(json.dumps(openb_config("BestFit")))
    seeds = list(range(8))
    jobs = S.make_jobs([pods], seeds, configs=[cfg, str(alone)], cluster=cluster)
    rows = S.run_sweep(jobs, workers=1).to_pylist()
    assert [r["scheduled"] for r in rows[:8]] == [2] * 8
    assert 1 in [r["scheduled"] for r in rows[8:]]


def test_a_bad_tie_label_is_named(tmp_path):
    """A label OpenbTieRank cannot rank fails the run naming the node and
    the label; without OpenbTieRank the label is not read."""
    _nodes, pods = _model_trap(tmp_path)
    cluster = _manifests(tmp_path, "high")
    cfg = _tie_config(tmp_path, "bestfit_tie", "BestFit", 3, 1)
    with pytest.raises(S.SweepError, match=r"config bestfit_tie, seed 0: Node n0: "
                       r"metadata\.labels\[\"openb\.tensorsched\.io/tie\"\]: .*'high'"):
        S.run_sweep(S.make_jobs([pods], [0], configs=[cfg], cluster=cluster), workers=1)
    alone = tmp_path / "bestfit.json"
    alone.write_text(json.dumps(openb_config("BestFit")))
    assert S.run_sweep(S.make_jobs([pods], [0], configs=[str(alone)], cluster=cluster),
                       workers=1).num_rows == 1


def test_an_added_nodes_bad_label_runs_per_job_and_is_named(tmp_path, monkeypatch):
    """A scenario's added node with a rank label that is no rank: the
    tie-ranked jobs are refused before any run naming the scenario's step
    and the label (as their per-job OpenbTieRank would); GpuShareScore
    alone does not read it (batched)."""
    nodes, pods = _model_trap(tmp_path)
    sc = tmp_path / "scenario.json"
    sc.write_text(json.dumps({"steps": [{"at": 1, "create": _node("x0", 1, tie="1_000")}]}))
    jobs = S.make_jobs([pods], [0], policies=["BestFit"], nodes=nodes, scenario=str(sc),
                       tie_rank=True)
    with pytest.raises(ScenarioError, match=r"scenario\.json: steps\[0\]\.create: Node x0: "
                                            r".*openb\.tensorsched\.io/tie.*'1_000'"):
        S.run_sweep(jobs, workers=1)
    calls = _weights(monkeypatch, E, "openb_event_runs")
    plain = S.make_jobs([pods], [0], policies=["BestFit"], nodes=nodes, scenario=str(sc))
    assert S.run_sweep(plain, workers=1).num_rows == 1 and calls == [[(1, 0)]]


@pytest.mark.parametrize("kwargs,message", [
    ({"experiment": True}, "experiment's runs rank their ties already"),
    ({"cluster": "CLUSTER"}, "enable OpenbTieRank"),
    ({"configs": ["CONFIG"]}, "tie_rank goes with policies"),
    ({"tie_rank": "yes"}, "tie_rank"),
])
def test_bad_tie_rank_requests_are_named(tmp_path, kwargs, message):
    nodes, pods = _write(tmp_path, 1, 2, 3)
    cfg = _tie_config(tmp_path, "c", "FGD", 3, 1)
    args = {"nodes": nodes, "tie_rank": True}
    args.update({k: [cfg] if v == ["CONFIG"] else v for k, v in kwargs.items()})
    if args.get("cluster") == "CLUSTER":
        args.pop("nodes")
        args["cluster"] = _manifests(tmp_path, None)
        args["configs"] = [cfg]
    with pytest.raises((S.SweepError, TypeError, ValueError), match=message):
        S.make_jobs([pods], [0], **args)


def test_cli_tie_rank(tmp_path, monkeypatch):
    """``sweep --tie-rank``: the policy jobs tie-ranked (the Parquet's job
    metadata records it), batched, rows equal to each job's Simulation."""
    nodes, pods = _write(tmp_path, 5, 3, 12)
    out = tmp_path / "r.parquet"
    calls = _weights(monkeypatch, S, "trace_batch")
    assert main(["sweep", "--nodes", nodes, "--trace", pods, "--policy", "FGD", "Random",
                 "--seeds", "1-2", "--tie-rank", "--workers", "1", "--output", str(out)]) == 0
    assert calls == [[(4, 1), (4, 1), (1, 0), (1, 0)]]
    table = pq.read_table(out)
    meta = json.loads(table.schema.metadata[b"tensorsched.sweep"])
    assert [j["tie_rank"] for j in meta["jobs"]] == [True] * 4
    jobs = S.make_jobs([pods], [1, 2], policies=["FGD", "Random"], nodes=nodes, tie_rank=True)
    assert table.drop(["wall_seconds"]).to_pylist() == _rows(jobs, False)


@pytest.mark.parametrize("argv,message", [
    (["--experiment", "--tie-rank"], "--tie-rank does not apply"),
    (["--tie-rank", "--config", "C"], "--tie-rank goes with --policy"),
])
def test_cli_tie_rank_refused_with(tmp_path, argv, message, capsys):
    nodes, pods = _write(tmp_path, 5, 2, 3)
    cfg = _tie_config(tmp_path, "c", "FGD", 3, 1)
    argv = [cfg if a == "C" else a for a in argv]
    assert main(["sweep", "--nodes", nodes, "--trace", pods, *argv,
                 "--output", str(tmp_path / "r.parquet")]) == 2
    assert message in capsys.readouterr().err


def test_cli_tie_rank_needs_nodes(tmp_path, capsys):
    _nodes, pods = _model_trap(tmp_path)
    assert main(["sweep", "--cluster", _manifests(tmp_path, None), "--trace", pods,
                 "--tie-rank", "--output", str(tmp_path / "r.parquet")]) == 2
    assert "--tie-rank goes with --nodes" in capsys.readouterr().err
