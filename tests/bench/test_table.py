"""``bench.table``: the README's benchmark tables from the result records
(single records and records of several runs; records without a pods/s
figure are left out) and the openb comparison table."""

from __future__ import annotations

import json

import pytest

from tensorsched.bench import table as BT


def run(workload, pps, **extra):
    return {"workload": workload, "nodes": 10, "pods": 20, "backend": "numpy",
            "pods_per_second": pps, **extra}


@pytest.fixture
def results(tmp_path, monkeypatch):
    (tmp_path / "b-single.json").write_text(json.dumps(
        {**run("basic", 12345.6, p50_us=10.5, p99_us=20.0, placements_sha256="ab" * 32),
         "commit": "c1"}))
    (tmp_path / "a-runs.json").write_text(json.dumps(
        {"commit": "c2", "runs": [run("spread", 100.0, digest="cd" * 32), {"note": "skip"}]}))
    (tmp_path / "c-other.json").write_text(json.dumps({"rows": []}))
    monkeypatch.setattr(BT, "RESULTS", tmp_path)
    return tmp_path


def test_rows_in_file_order_skip_records_without_throughput(results):
    got = [(name, r["workload"], commit) for name, r, commit in BT.rows()]
    assert got == [("a-runs.json", "spread", "c2"), ("b-single.json", "basic", "c1")]


def test_workload_table(results, capsys):
    assert BT.main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| workload | nodes | pods |") and len(lines) == 4
    assert lines[2] == ("| spread | 10 | 20 | numpy | 100.0 | - | - | `cdcdcdcdcdcd` | c2 "
                        "| a-runs.json |")
    assert lines[3] == ("| basic | 10 | 20 | numpy | 12,345.6 | 10.5 | 20.0 | `abababababab` "
                        "| c1 | b-single.json |")


def test_openb_table(tmp_path, capsys):
    rec = {"rows": [{"trace": "default", "policy": "FGD", "ours_100": 80.123,
                     "published_100": 80.0, "ours_130": 90.5, "published_130": 91.0,
                     "seconds_per_run": 1.5, "seeds": "42-51"}],
           "max_abs_diff": 0.5, "runs": 20, "sweep_wall_seconds": 30, "workers": 2,
           "backend": "numba", "commit": "abc"}
    path = tmp_path / "openb-replay.json"
    path.write_text(json.dumps(rec))
    BT.openb_table(path)
    out = capsys.readouterr().out.splitlines()
    assert out[2] == "| default | FGD | 80.12 | 80.00 | 90.50 | 91.00 | 1.5 |"
    assert out[-1] == ("Largest difference 0.5 points; 20 runs, seeds 42-51, 30 s on 2 "
                       "workers, backend numba, commit abc.")
