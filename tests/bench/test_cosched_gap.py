"""``bench.cosched_gap``: a record of the minResources check's time and
its answer; bad sizes refused."""

from __future__ import annotations

import pytest

from tensorsched.bench import cosched_gap


def test_a_record_times_the_check_and_gives_its_gap():
    rec = cosched_gap.run(12, calls=2)
    assert rec["bound_pods"] == 12 * 30 and rec["calls"] == 2
    assert rec["gap"] == {} and rec["ms_per_call_p50"] > 0


def test_a_bad_size_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        cosched_gap.main(["--calls", "0"])
    assert exc.value.code == 2 and "must be at least 1" in capsys.readouterr().err
