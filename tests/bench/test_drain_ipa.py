"""``python -m tensorsched.bench.drain_ipa`` at a tiny size: it writes its
record, the drain runs batched (every removal reading its own
InterPodAffinity group) with the per-probe path's report."""

import json

from tensorsched.bench import drain_ipa


def test_the_bench_records_equal_reports(tmp_path):
    out = tmp_path / "r.json"
    drain_ipa.main(["--nodes", "10", "--repeats", "1", "--output", str(out)])
    case, = json.loads(out.read_text())["cases"]
    assert case["reports_equal"] and case["batched_path"] == "batched (cpu)"
    assert case["bound_pods"] == 10 * 4 + 2 and 0 < case["removable_set"] <= 10
    assert case["batched"]["cpu_seconds"] > 0 and case["per_probe"]["cpu_seconds"] > 0
