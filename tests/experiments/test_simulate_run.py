"""``experiments.simulate_run``, one simulation from its input files: which
trace reader, which configuration, the GPU columns when the cluster has
GPUs, the progress horizon and the stepped run."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tensorsched.experiments import simulate_run as run
from tensorsched.framework.simulation.scenario import parse_scenario

ROOT = Path(__file__).resolve().parents[2]
OPENB_PODS = ROOT / "data/openb/csv/openb_pod_list_default.csv"
OPENB_NODES = ROOT / "data/openb/csv/openb_node_list_gpu_node.csv"
TRACE = ROOT / "data/examples/trace.csv"
CLUSTER = ROOT / "data/examples/cluster.yaml"


def test_which_reader(tmp_path):
    assert run.is_openb(OPENB_PODS) and not run.is_openb(TRACE)
    assert not run.is_openb(tmp_path / "missing.csv")
    parquet = tmp_path / "t.parquet"
    parquet.write_bytes(b"")
    assert not run.is_openb(parquet)
    openb = run.read_trace_file(str(OPENB_PODS))
    lines = OPENB_PODS.read_text().count("\n") - 1
    assert len(openb) == lines and openb.lines
    assert len(run.read_trace_file(str(TRACE))) == TRACE.read_text().count("\n") - 1


def test_typical_pods_and_configuration():
    assert run.typical_of(None) is None
    assert run.typical_of(run.read_trace_file(str(TRACE))) is None     # no GPU asks
    typical = run.typical_of(run.read_trace_file(str(OPENB_PODS)))
    assert typical and all(p["gpuCount"] >= 0 for p in typical)
    assert run.choose_config({"kind": "mine"}, "BestFit", True, typical) == {"kind": "mine"}
    assert run.choose_config(None, None, False, typical) is None
    cfg = run.choose_config(None, None, True, typical)
    args = cfg["profiles"][0]["pluginConfig"][0]["args"]
    assert args == {"policy": run.DEFAULT_POLICY, "typicalPods": typical}


def test_horizon():
    trace = run.read_trace_file(str(TRACE))
    assert run.horizon(trace, None, 50.0) == 50.0
    last = max(float(trace.arrival[-1]),
               max((d for d in trace.departure.tolist() if d == d), default=0.0))
    assert run.horizon(trace, None, None) == last
    sc = parse_scenario({"steps": [{"at": 10**6, "cordon": "worker-b1"}]})
    assert run.horizon(trace, sc, None) == 10**6
    assert run.horizon(None, None, None) == 0.0


def test_gpu_columns_only_with_gpus_and_the_stepped_run():
    plain = run.build_simulation(run.cluster_objects(cluster=str(CLUSTER)), None, "numpy", 0,
                                 interval=60.0)
    assert plain.metrics == {}
    nodes = run.cluster_objects(nodes=str(OPENB_NODES))
    gpu = run.build_simulation(nodes, run.choose_config(None, None, True, None), "numpy", 0,
                               interval=60.0)
    assert "gpu_alloc_pct" in gpu.metrics and "gpu_alloc_pct" in gpu.timeseries().column_names
    plain.submit(run.read_trace_file(str(TRACE)))
    steps = []
    summary = run.run_to_end(plain, 100.0, None, lambda k, sim: steps.append((k, sim.now)))
    assert [k for k, _ in steps] == list(range(1, run.STEPS + 1))
    assert steps[-1][1] == pytest.approx(100.0) and summary == plain.summary()
    # the trace's rows, and the cluster's pending pods at time 0
    assert summary["arrived"] == len(run.read_trace_file(str(TRACE))) + len(
        plain.cluster.pending)
    assert math.isfinite(summary["time"]) and summary["time"] >= 100.0
