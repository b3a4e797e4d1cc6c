"""``bench.queue_table``: every workload through the queue with batch on and
off (the same placements both ways), one record per run, the README's table
section rewritten from them; a workload whose placements differ fails the
run (exit status 1)."""

from __future__ import annotations

import json

from tensorsched.bench import queue_table as QT
from tensorsched.bench import table as BT


def _in_this_process(workload, nodes, pods, backend, batch, path):
    record = QT.run_one(workload, nodes, pods, backend, batch)
    path.write_text(json.dumps(record))
    return record


def test_quick_table_runs_both_ways_and_rewrites_the_readme(tmp_path, monkeypatch):
    # the children's work in this process (its compiled kernels are shared)
    monkeypatch.setattr(QT, "run_in_process", _in_this_process)
    monkeypatch.setattr(QT, "QUICK_SIZES", {**QT.QUICK_SIZES, "preemption": 3})
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{BT.BEGIN}\nold table\n{BT.END}\nafter\n")
    results = tmp_path / "results"
    assert QT.main(["--quick", "--workloads", "basic,preemption", "--backend", "numba",
                    "--results", str(results), "--readme", str(readme)]) == 0
    names = sorted(p.name for p in results.iterdir())
    assert names == ["basic-100x40-numba-queue-nobatch.json", "basic-100x40-numba-queue.json",
                     "preemption-100x3-numba-queue-nobatch.json",
                     "preemption-100x3-numba-queue.json"]
    recs = {n: json.loads((results / n).read_text()) for n in names}
    for n, rec in recs.items():
        assert rec["table"] == "queue" and rec["queue"] is True
        assert rec["batch"] is not n.endswith("-nobatch.json")
        assert rec["machine"] and rec["commit"] and rec["backend"] == "numba"
    basic = recs["basic-100x40-numba-queue.json"]
    assert basic["placements_sha256"] == recs["basic-100x40-numba-queue-nobatch.json"][
        "placements_sha256"]
    assert basic["scheduled"] == 40 and basic["mean_run_length"] > 1
    assert recs["basic-100x40-numba-queue-nobatch.json"]["compiled_runs"] == 0
    text = readme.read_text()
    assert text.startswith(f"before\n{BT.BEGIN}\n") and text.endswith(f"{BT.END}\nafter\n")
    assert "old table" not in text
    row = next(line for line in text.splitlines() if line.startswith("| basic | 100 | 40 |"))
    assert row.split(" | ")[9] == f"`{basic['placements_sha256'][:12]}`"     # one: the same


def test_placements_that_differ_fail_the_run(tmp_path, monkeypatch, capsys):
    def fake(workload, nodes, pods, backend, batch, path):
        rec = {"workload": workload, "nodes": nodes, "pods": pods, "backend": backend,
               "batch": batch, "table": "queue", "pods_per_second": 1.0,
               "placements_sha256": ("a" if batch else "b") * 64}
        path.write_text(json.dumps(rec))
        return rec

    monkeypatch.setattr(QT, "run_in_process", fake)
    assert QT.main(["--quick", "--workloads", "spread", "--results", str(tmp_path)]) == 1
    assert "differ between batch on and off: spread" in capsys.readouterr().err


def test_unknown_workload_is_refused(capsys):
    try:
        QT.main(["--quick", "--workloads", "basic,nope"])
    except SystemExit as exc:
        assert exc.code == 2
    assert "unknown nope" in capsys.readouterr().err
