"""``tensorsched simulate``: outputs and their columns, openb node lists and
traces, scenarios, and input refused in one line (exit 2)."""
import json

import pyarrow.parquet as pq
import pytest

from tensorsched.cli import main

NODES = "data/openb/csv/openb_node_list_gpu_node.csv"
DEFAULT = "data/openb/csv/openb_pod_list_default.csv"


def _slice(tmp_path, n_nodes=60, n_pods=400):
    paths = []
    for src, name, n in ((NODES, "nodes.csv", n_nodes), (DEFAULT, "pods.csv", n_pods)):
        with open(src) as f:
            (tmp_path / name).write_text("".join(f.readlines()[:n + 1]))
        paths.append(str(tmp_path / name))
    return paths


def test_openb_trace_with_departures_and_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    nodes, pods = _slice(tmp_path)
    out = tmp_path / "out"
    assert main(["simulate", "--nodes", nodes, "--trace", pods, "--output", str(out),
                 "--interval", "86400", "--plot"]) == 0
    ts = pq.read_table(out / "timeseries.parquet")
    for c in ("time", "nodes", "running", "pending", "arrived", "departed", "failed_attempts",
              "preemptions", "cpu_alloc_pct", "memory_alloc_pct", "gpu_alloc_pct",
              "gpu_frag_pct", "latency_p50", "latency_p99"):
        assert c in ts.column_names
    ev = pq.read_table(out / "events.parquet")
    assert ev.column_names == ["time", "event", "pod", "node", "message"]
    s = json.loads((out / "summary.json").read_text())
    assert s["arrived"] == 400 and s["departed"] + s["deleted"] == s["scheduled"] + s["deleted"]
    assert sum(ts.column("arrived").to_pylist()) == 400
    assert (out / "simulation.png").read_bytes()[:4] == b"\x89PNG"
    assert "400 pods arrived" in capsys.readouterr().err


def test_manifests_generic_trace_and_scenario(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("name,arrival,duration,cpu,memory\n" +
                     "".join(f"p{i},{i},{30 + i % 5},500m,1Gi\n" for i in range(40)))
    sc = tmp_path / "s.yaml"
    sc.write_text("steps:\n- {at: 10, cordon: worker-a1}\n- {at: 20, drain: worker-b1}\n")
    out = tmp_path / "o"
    assert main(["simulate", "--cluster", "data/examples/cluster.yaml", "--trace", str(trace),
                 "--scenario", str(sc), "--output", str(out), "--interval", "5",
                 "--backend", "numpy"]) == 0
    ts = pq.read_table(out / "timeseries.parquet")
    assert ts.column("time").to_pylist()[:3] == [5.0, 10.0, 15.0]
    kinds = set(pq.read_table(out / "events.parquet").column("event").to_pylist())
    assert {"Bound", "Departed", "NodeUpdated"} <= kinds


@pytest.mark.parametrize("extra, msg", [
    (["--interval", "0"], "--interval: must be a finite number > 0"),
    (["--seed", "-1"], "--seed"),
    (["--backend", "tpu"], "--backend"),
    (["--until", "nan"], "--until"),
])
def test_bad_flags_refused(tmp_path, capsys, extra, msg):
    nodes, pods = _slice(tmp_path, 5, 5)
    with pytest.raises(SystemExit) as e:
        main(["simulate", "--nodes", nodes, "--trace", pods, "--output", str(tmp_path / "o")]
             + extra)
    assert e.value.code == 2 and msg in capsys.readouterr().err


def test_bad_inputs_name_file_and_field(tmp_path, capsys):
    nodes, _ = _slice(tmp_path, 5, 5)
    bad = tmp_path / "bad.csv"
    bad.write_text("name,arrival,cpu\na,1,2\nb,later,1\n")
    assert main(["simulate", "--nodes", nodes, "--trace", str(bad), "--output",
                 str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{bad}:3: arrival:" in err
    sc = tmp_path / "s.yaml"
    sc.write_text("steps:\n- {at: 1, cordon: nowhere}\n")
    assert main(["simulate", "--nodes", nodes, "--scenario", str(sc), "--output",
                 str(tmp_path / "o")]) == 2
    assert "s.yaml: steps[0].cordon: node 'nowhere'" in capsys.readouterr().err
    assert main(["simulate", "--nodes", nodes, "--output", str(tmp_path / "o")]) == 2
    assert "--trace, --scenario or both" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["simulate", "--nodes", str(tmp_path / "none.csv"), "--trace", str(bad),
              "--output", str(tmp_path / "o")])
    assert "does not exist" in capsys.readouterr().err


def test_profile_blind_to_gpu_annotations_is_warned(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_text("name,arrival,cpu,memory,annotations,example.com/foo\n"
                     "a,0,500m,1Gi,alibabacloud.com/gpu-milli=500,\n"
                     "b,1,500m,1Gi,,1\n")
    out = tmp_path / "o"
    assert main(["simulate", "--cluster", "data/examples/cluster.yaml", "--trace", str(trace),
                 "--output", str(out), "--backend", "numpy"]) == 0
    err = capsys.readouterr().err
    assert "warning: 1 pod(s) ask for GPUs in annotations" in err and "GpuShareFit" in err
    assert "warning: 1 pod(s) request example.com/foo, which no node offers" in err


def test_nan_arrival_and_unknown_pod_end_cleanly(tmp_path, capsys):
    import pyarrow as pa
    t = tmp_path / "t.parquet"
    pq.write_table(pa.table({"name": ["a", "b"], "arrival": [0.0, float("nan")],
                             "cpu": [100, 100]}), t)
    args = ["--cluster", "data/examples/cluster.yaml", "--output", str(tmp_path / "o"),
            "--backend", "numpy"]
    assert main(["simulate", "--trace", str(t), *args]) == 2
    assert f"{t}: row 1: arrival: must be a number of seconds" in capsys.readouterr().err
    sc = tmp_path / "s.yaml"
    sc.write_text("steps:\n- at: 5\n  delete: {kind: Pod, name: nosuch, namespace: shop}\n")
    assert main(["simulate", "--scenario", str(sc), *args]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (f"tensorsched: error: {sc}: steps[0].delete: pod shop/nosuch not "
                           "found (NotFound): not in the simulation before 5s")
