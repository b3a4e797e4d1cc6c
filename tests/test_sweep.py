"""``tensorsched sweep`` and ``tensorsched.sweep``: rows equal the runs made
one by one (the Simulation API, ``tensorsched simulate``,
``simulate_replay``), the same table on one process, on two and on Ray, the
comparison table and plot, and input refused in one line (exit 2) before
any run."""
import json
import math
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from tensorsched.experiments import sweep as S
from tensorsched.cli import main
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb.trace import (
    openb_node_objects,
    read_openb_trace,
    simulate_replay,
)
from tensorsched.topology.sim_metrics import gpu_metrics, trace_shapes, typical_shapes

NODES = "data/openb/csv/openb_node_list_gpu_node.csv"
DEFAULT = "data/openb/csv/openb_pod_list_default.csv"
MULTIGPU = "data/openb/csv/openb_pod_list_multigpu20.csv"
CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    filter: {{enabled: [{{name: GpuShareFit}}]}}
    reserve: {{enabled: [{{name: GpuShareFit}}]}}
  pluginConfig:
  - name: NodeResourcesFit
    args: {{scoringStrategy: {{type: {strategy}}}}}
"""
INTERVAL = 86400.0


def _head(src, dst, n):
    with open(src) as f:
        dst.write_text("".join(f.readlines()[:n + 1]))
    return str(dst)


@pytest.fixture
def openb(tmp_path):
    """10 GPU nodes, 400 pods with departures (some cannot be placed), and
    two configurations: spread (LeastAllocated) and pack (MostAllocated)."""
    nodes = _head(NODES, tmp_path / "nodes.csv", 10)
    pods = _head(DEFAULT, tmp_path / "default.csv", 400)
    configs = []
    for name, strategy in (("spread", "LeastAllocated"), ("pack", "MostAllocated")):
        (tmp_path / f"{name}.yaml").write_text(CONFIG.format(strategy=strategy))
        configs.append(str(tmp_path / f"{name}.yaml"))
    return nodes, pods, configs


def _direct(nodes, pods, config, seed):
    """One Simulation through the public API, driven as ``simulate`` drives
    it (100 steps to the last departure, then to the end)."""
    trace = read_openb_trace(pods)
    typical = typical_shapes(trace_shapes(trace))
    sim = Simulation(openb_node_objects(nodes), config, "numba", seed, interval=INTERVAL,
                     metrics=gpu_metrics(typical))
    sim.submit(trace)
    end = float(np.nanmax(trace.departure))
    for k in range(1, 101):
        sim.run(until=end * k / 100)
    summary = sim.run()
    ts = sim.timeseries()
    w = np.diff(ts.column("time").to_numpy(), prepend=0.0)

    def mean(col):
        return float((ts.column(col).to_numpy() * w).sum() / w.sum())
    return summary, {c: mean(c) for c in ("cpu_alloc_pct", "memory_alloc_pct",
                                         "gpu_alloc_pct", "gpu_frag_pct")}


def _same(a, b):
    return a.drop(["wall_seconds"]).equals(b.drop(["wall_seconds"]))


def test_local_sweep_equals_each_run(openb, tmp_path):
    nodes, pods, configs = openb
    jobs = S.make_jobs([pods], [1, 2], configs=configs, nodes=nodes, interval=INTERVAL)
    one = S.run_sweep(jobs, workers=1)
    assert [(r["config"], r["seed"]) for r in one.to_pylist()] == [
        ("spread", 1), ("spread", 2), ("pack", 1), ("pack", 2)]
    assert one.schema.remove_metadata().equals(S.SIMULATE_SCHEMA)
    two = S.run_sweep(jobs, workers=2)
    assert _same(one, two)
    rows = one.to_pylist()
    assert rows[0]["scheduled"] != rows[2]["scheduled"] or \
        rows[0]["mean_gpu_frag_pct"] != rows[2]["mean_gpu_frag_pct"]   # the configs differ
    for row in rows:
        config = configs[0] if row["config"] == "spread" else configs[1]
        summary, means = _direct(nodes, pods, config, row["seed"])
        for k in ("arrived", "scheduled", "failed_attempts", "preemptions", "departed",
                  "deleted", "evicted", "pending", "running", "latency_p50", "latency_p99"):
            assert row[k] == summary[k], (row["config"], row["seed"], k)
        assert row["sim_seconds"] == summary["time"]
        for c, v in means.items():
            assert math.isclose(row[f"mean_{c}"], v, rel_tol=1e-12), c
    # the same as ``tensorsched simulate`` writes for that run
    out = tmp_path / "sim"
    assert main(["simulate", "--nodes", nodes, "--trace", pods, "--config", configs[1],
                 "--seed", "2", "--interval", str(INTERVAL), "--output", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert {k: rows[3][k] for k in ("scheduled", "failed_attempts", "deleted")} == \
        {k: summary[k] for k in ("scheduled", "failed_attempts", "deleted")}


def test_experiment_rows_equal_simulate_replay(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    nodes = _head(NODES, tmp_path / "nodes.csv", 60)
    pods = _head(MULTIGPU, tmp_path / "multigpu20.csv", 300)
    out = tmp_path / "exp.parquet"
    assert main(["sweep", "--experiment", "--nodes", nodes, "--trace", pods, "--policy", "FGD",
                 "BestFit", "--seeds", "3,7", "--workers", "2", "--output", str(out),
                 "--plot"]) == 0
    table = pq.read_table(out)
    assert table.num_rows == 4
    meta = json.loads(table.schema.metadata[b"tensorsched.sweep"])
    assert meta["kind"] == "experiment" and len(meta["jobs"]) == 4
    inv, tp = R.read_openb_nodes(nodes), R.read_openb_pods(pods)
    for row in table.to_pylist():
        res = simulate_replay(inv, tp, row["policy"], seed=row["seed"], tune=1.3)
        assert (row["trace"], row["tune"], row["pods"], row["scheduled"]) == \
            ("multigpu20", 1.3, res.pods, res.scheduled)
        assert row["alloc_at_100"] == res.alloc[100] and row["alloc_at_130"] == res.alloc[130]
        assert row["frag_at_100"] == res.frag_amount[100]
        np.testing.assert_array_equal(np.array(row["alloc_curve"], float), res.alloc)
    printed = capsys.readouterr()
    assert "alloc_at_100 (mean ± std over 2 seeds)" in printed.out
    assert "multigpu20" in printed.out and "4 runs on 2 process(es)" in printed.err
    header = (tmp_path / "exp.csv").read_text().splitlines()[0]
    assert header == "metric,trace,FGD_mean,FGD_std,BestFit_mean,BestFit_std"
    assert (tmp_path / "exp.png").read_bytes()[:4] == b"\x89PNG"


def test_manifests_generic_trace_scenario(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_text("name,arrival,duration,cpu,memory\n" +
                     "".join(f"p{i},{i},{30 + i % 5},500m,1Gi\n" for i in range(40)))
    sc = tmp_path / "s.yaml"
    sc.write_text("steps:\n- {at: 10, cordon: worker-a1}\n- {at: 20, drain: worker-b1}\n")
    out = tmp_path / "r.parquet"
    assert main(["sweep", "--cluster", "data/examples/cluster.yaml", "--trace", str(trace),
                 "--config", "data/examples/scheduler-config.yaml", "--scenario", str(sc),
                 "--seeds", "0-1", "--interval", "5", "--backend", "numpy", "--workers", "1",
                 "--metric", "scheduled", "evicted", "--output", str(out)]) == 0
    rows = pq.read_table(out).to_pylist()
    assert [(r["config"], r["seed"]) for r in rows] == [("scheduler-config", 0),
                                                        ("scheduler-config", 1)]
    assert rows[0]["mean_gpu_alloc_pct"] is None and rows[0]["evicted"] > 0
    sim_out = tmp_path / "sim"
    assert main(["simulate", "--cluster", "data/examples/cluster.yaml", "--trace", str(trace),
                 "--config", "data/examples/scheduler-config.yaml", "--scenario", str(sc),
                 "--seed", "1", "--interval", "5", "--backend", "numpy",
                 "--output", str(sim_out)]) == 0
    summary = json.loads((sim_out / "summary.json").read_text())
    for k in ("scheduled", "evicted", "departed", "failed_attempts", "latency_p99"):
        assert rows[1][k] == summary[k], k
    assert "evicted (mean ± std over 2 seeds)" in capsys.readouterr().out


def test_ray_equals_local(openb, tmp_path, capsys):
    ray = pytest.importorskip("ray")
    nodes, pods, configs = openb
    jobs = S.make_jobs([pods], [1, 2], configs=configs, nodes=nodes, interval=INTERVAL)
    local = S.run_sweep(jobs, workers=2)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        assert _same(S.run_sweep(jobs, ray="auto"), local)
        out = tmp_path / "r.parquet"           # the CLI finds the instance started here
        assert main(["sweep", "--nodes", nodes, "--trace", pods, "--config", *configs,
                     "--seeds", "1-2", "--interval", str(INTERVAL), "--ray", "--output",
                     str(out)]) == 0
        assert _same(pq.read_table(out), local)
        assert "4 runs on Ray (auto)" in capsys.readouterr().err
    finally:
        ray.shutdown()


def test_without_ray_one_line(openb, tmp_path, capsys, monkeypatch):
    nodes, pods, _ = openb
    monkeypatch.setitem(sys.modules, "ray", None)      # import ray -> ImportError
    assert main(["sweep", "--nodes", nodes, "--trace", pods, "--ray", "local",
                 "--output", str(tmp_path / "r.parquet")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'tensorsched[ray]'" in err


@pytest.mark.parametrize("extra, msg", [
    (["--seeds", "51-42"], "--seeds: seed range '51-42' runs backwards"),
    (["--seeds", "x"], "--seeds: seeds 'x': expected a non-negative integer"),
    (["--trace", "nowhere.csv"], "--trace: 'nowhere.csv' does not exist"),
    (["--policy", "Best"], "--policy: invalid choice"),
    (["--workers", "0"], "--workers: must be 1..1024"),
])
def test_bad_flags_refused(openb, tmp_path, capsys, extra, msg):
    nodes, pods, _ = openb
    with pytest.raises(SystemExit) as e:
        main(["sweep", "--nodes", nodes, "--trace", pods, "--output",
              str(tmp_path / "r.parquet")] + extra)
    err = capsys.readouterr().err
    assert e.value.code == 2 and msg in err and err.count("\n") == 1


def test_bad_output_refused(openb, tmp_path, capsys):
    nodes, pods, _ = openb
    with pytest.raises(SystemExit) as e:
        main(["sweep", "--nodes", nodes, "--trace", pods, "--output", str(tmp_path / "r.csv")])
    assert e.value.code == 2 and "expected a .parquet file name" in capsys.readouterr().err


def test_bad_inputs_one_line_before_any_run(openb, tmp_path, capsys):
    nodes, pods, configs = openb
    out = tmp_path / "r.parquet"
    bad_cfg = tmp_path / "bad.yaml"
    bad_cfg.write_text(CONFIG.format(strategy="Sideways"))
    bad_trace = tmp_path / "bad.csv"
    bad_trace.write_text("name,arrival,cpu\na,1,2\nb,later,1\n")
    (tmp_path / "other").mkdir()
    twin = tmp_path / "other" / "pack.yaml"
    twin.write_text(CONFIG.format(strategy="MostAllocated"))
    cases = [
        (["--config", configs[0], str(bad_cfg)], f"{bad_cfg}: profiles[0].pluginConfig[0]"),
        (["--trace", str(bad_trace)], f"{bad_trace}:3: arrival:"),
        (["--config", configs[1], str(twin)], "two configs named 'pack'"),
        (["--trace", pods, pods], f"trace {pods} is given twice"),
        (["--tune", "2"], "--tune goes with --experiment"),
        (["--experiment", "--config", configs[0]], "--config does not apply"),
        (["--experiment", "--tune", "11"], "tune must be a finite number in (0, 10]"),
        (["--metric", "nope"], "--metric 'nope': not a result column"),
    ]
    for extra, msg in cases:
        args = ["sweep", "--nodes", nodes, "--output", str(out)]
        args += extra if "--trace" in extra else ["--trace", pods] + extra
        assert main(args) == 2, extra
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1, (extra, err)
        assert not out.exists()


def test_unreachable_ray_address_one_line(openb, tmp_path, capsys):
    """A dead address is refused in seconds, not after Ray's retries."""
    pytest.importorskip("ray")
    nodes, pods, _ = openb
    assert main(["sweep", "--nodes", nodes, "--trace", pods, "--ray", "127.0.0.1:1",
                 "--output", str(tmp_path / "r.parquet")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot connect to 127.0.0.1:1" in err


def test_configs_blind_to_the_trace_asks_are_warned(openb, tmp_path, capsys):
    # a default profile on the openb GPU nodes does not read the GPU asks in
    # the trace's annotations: said once per config and trace, naming the plugin
    nodes, pods, configs = openb
    blind = tmp_path / "default.yaml"
    blind.write_text("apiVersion: kubescheduler.config.k8s.io/v1\n"
                     "kind: KubeSchedulerConfiguration\n")
    jobs = S.make_jobs([pods], [1], configs=[configs[0], str(blind)], nodes=nodes,
                       interval=INTERVAL)
    warnings = S.load_inputs(jobs)[("warnings", "")]
    assert len(warnings) == 1
    assert "GpuShareFit" in warnings[0] and warnings[0].endswith("[config default, trace "
                                                                 "default]")
    assert "which profile default-scheduler does not read" in warnings[0]
