"""``python -m tensorsched.bench.batch_check`` at its tiny sizes: every part
runs to its end on numba and writes its record; a deadline skips the
parts it leaves no time for and says so; on cuda (the simulator in CI) the
parts this check gained (the node-local kernel's probe and trace forms,
the openb engine with durations, how_many_fit of several templates, the
openb engine with DefaultPreemption) equal numba, one part a test."""

import json

import pytest
from support.backends import needs_cuda

from tensorsched.bench import batch_check


def _record(tmp_path, *args):
    rc = batch_check.main(["--tiny", "--traces", "default", "--out", str(tmp_path), *args])
    return rc, json.loads((tmp_path / "batch-check.json").read_text())


# runs_late: its four batched engines are compiled by their own tests
# (tests/bench/test_batch_local.py, tests/kernels/batch, the facade's
# simulate_batch); after them this test loads them from the kernel cache
# instead of being the one that compiles all four on an empty cache
@pytest.mark.runs_late
def test_every_part_runs_on_numba(tmp_path):
    rc, rec = _record(tmp_path, "--backends", "numba")
    assert rc == 0 and rec["tiny"] and rec["not_run"] == []
    # no deadline: no seconds left to name (and nothing JSON cannot hold)
    assert "Infinity" not in (tmp_path / "batch-check.json").read_text()
    assert rec["parts"]["basic"]["seconds_left_at_start"] is None
    assert list(rec["parts"]) == list(batch_check.PARTS)
    for name, part in rec["parts"].items():
        assert part["numba"]["seconds"] >= 0 and "equal" not in part, name
    assert rec["parts"]["basic"]["numba"]["scheduled"] == 18
    probe = rec["parts"]["local_probe"]
    assert probe["ipa_filtered_nodes"] > 0 and probe["numba"]["bound"] > 0
    dur = rec["parts"]["durations"]
    assert dur["with_duration"] > 0 and dur["priority_ranks"] > 1
    # pods that fit nowhere retry: more attempts than bindings
    assert dur["numba"]["attempts"] > dur["numba"]["scheduled"]
    fit = rec["parts"]["fit_multi"]["numba"]
    assert fit["fill_total"] > 0 and fit["replicas_fit"] is False
    assert rec["parts"]["preemption"]["numba"]["victims"] > 0


def test_a_deadline_skips_parts_and_says_so(tmp_path):
    rc, rec = _record(tmp_path, "--backends", "numba", "--seconds", "0",
                      "--parts", "basic,fit_multi")
    assert rc == 0 and rec["equal"] is None and rec["deadline_seconds"] == 0
    assert set(rec["not_run"]) == set(batch_check.PARTS)
    assert all(p["skipped"].startswith("deadline") for p in rec["parts"].values())


def test_an_unknown_part_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="unknown part 'nope'"):
        batch_check.main(["--tiny", "--parts", "nope", "--out", str(tmp_path)])


@pytest.mark.cudasim
@needs_cuda
@pytest.mark.parametrize("part", ["local_probe", "local_trace", "durations", "fit_multi",
                                  "preemption"])
def test_cuda_equals_numba_on_the_new_parts(tmp_path, part):
    # no untimed warm-up: under the simulator it would double the time
    rc, rec = _record(tmp_path, "--parts", part, "--no-warmup")
    assert rc == 0 and rec["equal"] is True and rec["not_run"] == [
        p for p in batch_check.PARTS if p != part]
    assert rec["parts"][part]["cuda"]["seconds"] > 0


@pytest.mark.runs_late
def test_a_part_cut_by_a_kill_is_listed_as_not_run(tmp_path, monkeypatch):
    def killed(*_args):
        raise KeyboardInterrupt       # what a timeout's kill leaves: no more writes
    monkeypatch.setattr(batch_check.BL, "run_fit", killed)
    with pytest.raises(KeyboardInterrupt):
        _record(tmp_path, "--backends", "numba", "--parts", "basic,fit_multi")
    rec = json.loads((tmp_path / "batch-check.json").read_text())
    assert rec["parts"]["basic"]["numba"]["seconds"] >= 0
    cut = rec["parts"]["fit_multi"]["numba"]
    assert "started_with_seconds_left" in cut and "seconds" not in cut
    assert "fit_multi" in rec["not_run"] and "basic" not in rec["not_run"]
