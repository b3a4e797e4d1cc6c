"""``python -m tensorsched.bench.sweep_local`` at a tiny size: it writes
its record, the batched and per-run tables are equal, every job ran
(batched), with departures at a time or after a duration."""

import json

import pytest

from tensorsched.bench import sweep_local


@pytest.mark.parametrize("durations", [[], ["--durations"]])
def test_the_bench_records_equal_tables(tmp_path, durations):
    out = tmp_path / "r.json"
    rec = sweep_local.main(["--nodes", "3", "--pods", "12", "--seeds", "2", "--output", str(out)]
                           + durations)
    assert json.loads(out.read_text())["jobs"] == 6 == rec["jobs"] == rec["batched_jobs"]
    assert rec["durations"] == bool(durations)
    assert rec["tables_equal"] and len(rec["scheduled"]) == 6
    assert rec["batched"]["cpu_seconds"] > 0 and rec["per_run"]["cpu_seconds"] > 0
