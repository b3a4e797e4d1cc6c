"""``bench.pod_count_index``: a record of the index's build and a new
key's counts; bad sizes refused."""

from __future__ import annotations

import pytest

from tensorsched.bench import pod_count_index


def test_a_record_times_the_build_and_counts_every_bound_pod():
    rec = pod_count_index.run(12, keys=2)
    assert rec["bound_pods"] == rec["pods_counted"] == 12 * 30
    assert rec["build_ms"] > 0 and rec["new_key_ms_p50"] > 0


def test_a_bad_size_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        pod_count_index.main(["--keys", "0"])
    assert exc.value.code == 2 and "must be at least 1" in capsys.readouterr().err
