"""``python -m tensorsched.bench.ipa_static`` at a tiny size: it writes its
record, the README example sweep takes the batched path with the per-job
path's table, the affinity probe's documents are equal both ways."""

import json

from tensorsched.bench import ipa_static


def test_the_bench_records_equal_results(tmp_path):
    out = tmp_path / "r.json"
    rec = ipa_static.main(["--nodes", "12", "--repeats", "1", "--output", str(out)])
    sweep, probe = json.loads(out.read_text())["cases"]
    assert sweep["tables_equal"] and sweep["batched_jobs"] == sweep["jobs"] == 4
    assert probe["documents_equal"] and probe["ipa_scored"] and probe["ipa_filtered_nodes"] == 2
    assert probe["fit"] > 0 and rec["cases"][1]["batched"]["cpu_seconds"] > 0
