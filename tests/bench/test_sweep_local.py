"""``python -m tensorsched.bench.sweep_local`` at a tiny size: it writes
its record, the batched and per-run tables are equal, every job ran."""

import json

from tensorsched.bench import sweep_local


def test_the_bench_records_equal_tables(tmp_path):
    out = tmp_path / "r.json"
    rec = sweep_local.main(["--nodes", "3", "--pods", "12", "--seeds", "2", "--output", str(out)])
    assert json.loads(out.read_text())["jobs"] == 6 == rec["jobs"]
    assert rec["tables_equal"] and len(rec["scheduled"]) == 6
    assert rec["batched"]["cpu_seconds"] > 0 and rec["per_run"]["cpu_seconds"] > 0
