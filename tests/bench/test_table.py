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
    # a comparison's runs (a round, no backend) are left out of the table
    (results / "d-before-after.json").write_text(json.dumps(
        {"runs": [{"round": 1, "workload": "basic", "pods_per_second": 5.0}]}))
    # ... and so is a before/after record with pods/s by side and no workload
    (results / "e-sides.json").write_text(json.dumps(
        {"backend": "numba", "commit": "c3", "pods_per_second": {"base": [1.0], "this": [2.0]}}))
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


def queued(workload, batch, sha, stamp, **extra):
    return {**run(workload, 10.0, p50_us=1.5, cpu_seconds=0.25, placements_sha256=sha,
                  load=[0.5, 0.4, 0.3], commit="c3", timestamp=stamp),
            "table": "queue", "batch": batch, **extra}


def test_queue_table_pairs_the_latest_runs_batch_on_and_off(tmp_path):
    for name, rec in {"b-on-old.json": queued("basic", True, "11" * 32, "2026-01-01T00:00:00Z"),
                      "b-on.json": queued("basic", True, "aa" * 32, "2026-01-02T00:00:00Z"),
                      "b-off.json": queued("basic", False, "aa" * 32, "2026-01-01T00:00:00Z",
                                           pods_per_second=2.5, commit="c4"),
                      "s-on.json": queued("spread", True, "bb" * 32, "2026-01-01T00:00:00Z"),
                      "s-off.json": queued("spread", False, "cc" * 32, "2026-01-01T00:00:00Z"),
                      "u-off.json": queued("unschedulable", False, "dd" * 32, "x",
                                           percentage_of_nodes_to_score=0),
                      "other.json": run("gpu", 5.0, placements_sha256="ee" * 32),
                      "cmp.json": {"runs": [run("gpu", 6.0, round=0), run("gpu", 7.0, round=1)]},
                      # rounds of queue runs compared: no single run's batch
                      "q-cmp.json": {"workload": "gpu", "nodes": 10, "pods": 20,
                                     "backend": "numba", "table": "queue",
                                     "rounds": [run("gpu", 8.0)]},
                      }.items():
        (tmp_path / name).write_text(json.dumps(rec))
    lines = BT.queue_lines(tmp_path)
    assert lines[2] == ("| basic | 10 | 20 | 10.0 | 1.5 | 0.25 | 2.5 | 1.5 | 0.25 "
                        "| `aaaaaaaaaaaa` | c3 / c4 | 0.5 |")
    assert lines[3] == ("| spread | 10 | 20 | 10.0 | 1.5 | 0.25 | 10.0 | 1.5 | 0.25 "
                        "| `bbbbbbbbbbbb` / `cccccccccccc` | c3 | 0.5 |")
    assert lines[4] == ("| unschedulable (adaptive %) | 10 | 20 | - | - | - | 10.0 | 1.5 | 0.25 "
                        "| `dddddddddddd` | c3 | 0.5 |")
    section = BT.readme_section(tmp_path)
    assert section.startswith(BT.BEGIN) and section.endswith(BT.END)
    # the older basic run and the other records go to the table below it;
    # the comparison's runs are only named
    below = section.split("Every other record:")[1]
    assert "b-on-old.json |" in below and "other.json |" in below
    assert "| b-on.json |" not in below and "| cmp.json |" not in below
    assert "`cmp.json`" in below
    assert not any(line.startswith("| gpu |") for line in lines)


def test_readme_without_a_table_section_is_refused(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n")
    with pytest.raises(SystemExit, match="no table section"):
        BT.update_readme(readme, tmp_path)
    assert readme.read_text() == "no markers\n"
