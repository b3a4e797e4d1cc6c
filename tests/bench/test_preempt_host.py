"""``bench.preempt_host`` (in a process of its own: it wraps the
simulator's kernels and the scheduler's functions): a preemption-spread
record itemizes a preemptor's host work with the kernels taken out, the
kept probe tables among the items, and the A/B reads two domain rows a
preemptor after the first."""

from __future__ import annotations

import json

import pytest
from support.backends import needs_cuda
from support.bench_runs import bench_record

pytestmark = [pytest.mark.cudasim, needs_cuda]


def _run(tmp_path, *args) -> dict:
    return bench_record(tmp_path, "preempt_host", *args)


def test_a_record_itemizes_a_preemptors_host_work(tmp_path):
    rec = _run(tmp_path, "--workload", "preemption-spread", "--nodes", "12", "--pods", "2")
    assert rec["attempts"] == 2 and rec["preemptions"] == 2
    assert rec["host_us_per_attempt"]["p50"] > 0 and rec["kernels_per_attempt"] > 0
    items = rec["items"]
    for name in ("> preempt", "> preempt > device_counts > ProbeTables.update",
                 "> preempt > counts_search_and_pick > _following (probe tables)"):
        assert items[name]["calls"] >= 1 and items[name]["host_us"] > 0, name
    # the tables' device copy is not compared whole any more
    assert "> preempt > counts_search_and_pick > _resident (probe tables before; visit order)" \
        not in items


def test_the_tables_ab_reads_the_changed_domains_only(tmp_path):
    rec = _run(tmp_path, "--tables-ab", "--workload", "preemption-spread", "--nodes", "12",
               "--pods", "3")
    assert rec["preemptors"] == 3
    # after the first preemptor: its node's hostname and zone domains
    assert rec["each"]["after_rows_read"][1:] == [2, 2]
    assert all(x > 0 for x in rec["each"]["before"] + rec["each"]["after"])


def test_a_spread_cycle_record_itemizes_the_device_rules_pick(tmp_path):
    """One cycle a pod with PodTopologySpread's DoNotSchedule filter: its
    per-domain rules tested in the device pick (the rules staged, no host
    finalize, no filter over the rows), and per cycle at most the one row
    the last pod was placed on uploaded and none copied back."""
    rec = _run(tmp_path, "--workload", "spread-nobatch", "--nodes", "12", "--pods", "4")
    items = rec["items"]
    for name in ("> run_cycle > evaluate > _rules_pick",
                 "> run_cycle > evaluate > _rules_pick > stage the rules",
                 "> run_cycle > PodTopologySpread.cycle_rules", "> assume_and_permit"):
        assert items[name]["calls"] >= 1, name
    assert "> run_cycle > evaluate > host finalize" not in items
    per = rec["device_counters_per_cycle"]
    assert per["rows_uploaded"] <= 1 and per["rows_downloaded"] == 0, per


def test_combine_puts_the_numba_records_beside(tmp_path):
    """``--combine`` reads ``numba-{base,after}-W-R.json`` records too."""
    for side, p50 in (("base", 150.0), ("after", 120.0)):
        (tmp_path / f"numba-{side}-spread-1.json").write_text(json.dumps(
            {"nodes": 10, "pods": 5, "p50_us": p50, "p99_us": 2 * p50, "cpu_seconds": 1.0,
             "cpu_per_attempt_us": {"p50": p50 / 2, "mean": p50},
             "placements_sha256": "x", "commit": side, "load": [1.0]}))
    rec = _run(tmp_path, "--combine", *sorted(str(p) for p in tmp_path.glob("numba-*.json")))
    got = rec["numba_no_batch"]["spread"]
    assert got["same_placements"] and got["base_p50_us_median_of_rounds"] == 150.0
    assert got["after_p50_us_median_of_rounds"] == 120.0
    assert got["base_cpu_per_attempt_us_p50_median_of_rounds"] == 75.0
    assert got["after_cpu_per_attempt_us_p50_median_of_rounds"] == 60.0


def test_a_no_items_record_counts_a_cycles_device_calls(tmp_path):
    """``--no-items``: a basic cycle's whole host work with the kernels and
    the simulator's array machinery taken out, and its device calls: once
    warm, one launch, at most one copy up, one back, no allocation and no
    device array view; the numba backend's record has no device calls and
    its framework share; ``--combine`` sets them beside each other."""
    rec = _run(tmp_path, "--no-items", "--workload", "basic-nobatch", "--nodes", "12",
               "--pods", "3")
    assert rec["cycles"] == 3 and rec["kernels_us"] > 0
    assert rec["per_cycle_p50_us"]["host_outside_machinery"] > 0
    calls = rec["device_calls_per_cycle"]
    assert calls["launches"] == 1 and calls["up"] <= 1 and calls["down"] == 1, calls
    assert calls["alloc"] == 0 and calls["view"] == 0 and calls["sync"] == 0, calls
    stub = _run(tmp_path, "--no-items", "--stub-kernel", "--workload", "basic-nobatch",
                "--nodes", "12", "--pods", "3")
    assert stub["kernels_us"] == 0 and stub["device_calls_per_cycle"]["launches"] == 1
    numba = _run(tmp_path, "--no-items", "--backend", "numba", "--workload", "basic-nobatch",
                 "--nodes", "12", "--pods", "3")
    assert numba["backend"] == "numba" and not any(numba["device_calls_per_cycle"].values())
    assert numba["placements_sha256"] == rec["placements_sha256"]
    for side in ("base", "after"):
        (tmp_path / f"totals-{side}-cuda-stub-basic-nobatch-1.json").write_text(
            json.dumps(stub))
        (tmp_path / f"totals-{side}-numba-basic-nobatch-1.json").write_text(json.dumps(numba))
    got = _run(tmp_path, "--combine", *sorted(str(p) for p in tmp_path.glob("totals-*.json")))
    w = got["no_items"]["cuda-stub basic-nobatch"]
    assert w["same_placements"] and w["after_gap_us"] == round(
        stub["per_cycle_p50_us"]["host_outside_machinery"]
        - numba["per_cycle_p50_us"]["framework"], 1)


def test_the_cycle_stand_in_runs_a_spread_cycle(tmp_path):
    """``--stub-kernel`` on spread-nobatch: the spread cycle's launch passes
    its rule table, which the stand-in takes (it raised a TypeError), one
    launch a cycle and no kernel time."""
    rec = _run(tmp_path, "--no-items", "--stub-kernel", "--workload", "spread-nobatch",
               "--nodes", "12", "--pods", "3")
    assert rec["cycles"] == 3 and rec["kernels_us"] == 0
    assert rec["device_calls_per_cycle"]["launches"] == 1


def test_the_victim_stand_ins_place_as_the_simulator(tmp_path):
    """``--stub-victims``: the victim search's and pick's launches host
    stand-ins (the numba twins): the same placements as the simulator's
    kernels, the launches still counted, the host items still itemized."""
    args = ("--workload", "preemption", "--nodes", "40", "--pods", "3")
    sim = _run(tmp_path, *args)
    stub = _run(tmp_path, *args, "--stub-victims")
    assert stub["stub_victims"] and "stub_victims" not in sim
    assert stub["preemptions"] == sim["preemptions"] == 3
    assert stub["placements_sha256"] == sim["placements_sha256"]
    assert stub["kernels_per_attempt"] == sim["kernels_per_attempt"]
    assert stub["items"]["> preempt > DeviceVictims.search_and_pick"]["calls"] == 1


@pytest.mark.parametrize("workload", ["preemption", "preemption-spread",
                                      "preemption-antiaffinity"])
def test_the_host_stand_ins_place_as_the_simulator(tmp_path, workload):
    """``--stub-cycle``: the placement cycle's launch a host stand-in with
    the kernel's outputs (the numba twins), so a preemptor's cycle fails
    as it must (the first-row stand-in of ``--stub-kernel`` would place it
    without preempting); ``--stub-all``: every launch of a preemptor a host
    stand-in (the search on counts and the tables' scatters as host loops
    of the kernels' own source).  The same placements and preemptions as
    the simulator's kernels, the stand-ins answering, the launches still
    counted."""
    args = ("--workload", workload, "--nodes", "12", "--pods", "3")
    sim = _run(tmp_path, *args)
    cycle = _run(tmp_path, *args, "--stub-victims", "--stub-cycle")
    every = _run(tmp_path, *args, "--stub-all")
    assert cycle["stub_cycle"] and "stub_cycle" not in sim and "stub_rest" not in cycle
    assert every["stub_cycle"] and every["stub_victims"] and every["stub_rest"]
    for rec in (cycle, every):
        assert rec["stub_cycle_launches"] >= rec["attempts"]   # each preemptor's failed cycle
        assert rec["preemptions"] == sim["preemptions"] == 3
        assert rec["placements_sha256"] == sim["placements_sha256"]
        assert rec["kernels_per_attempt"] == sim["kernels_per_attempt"]


def test_an_attempt_timed_without_the_item_wrappers(tmp_path):
    """``--no-item-wrappers``: the attempts timed whole with no item
    wrapped (no item clock reads inside them), the same placements; an
    itemized record says how many item calls an attempt holds and what one
    clock read costs here."""
    args = ("--workload", "preemption", "--nodes", "40", "--pods", "3", "--stub-all")
    whole = _run(tmp_path, *args, "--no-item-wrappers")
    itemized = _run(tmp_path, *args)
    assert whole["items_wrapped"] is False and whole["items"] == {}
    assert whole["item_calls_per_attempt"] == 0
    assert whole["attempts"] == 3 and whole["host_us_per_attempt"]["p50"] > 0
    assert whole["placements_sha256"] == itemized["placements_sha256"]
    assert "items_wrapped" not in itemized and itemized["item_calls_per_attempt"] > 1
    assert itemized["thread_time_call_us"] > 0


def test_combine_puts_the_whole_attempts_beside(tmp_path):
    """``--combine`` reads ``whole-{base,after}-W-R.json`` records (the
    attempts timed whole) too: per workload the rounds and each side's
    median of the rounds' p50."""
    for side, p50s in (("base", (1000.0, 1200.0, 1100.0)), ("after", (900.0, 950.0, 990.0))):
        for rnd, p50 in enumerate(p50s, 1):
            (tmp_path / f"whole-{side}-preemption-{rnd}.json").write_text(json.dumps(
                {"host_us_per_attempt": {"p50": p50, "mean": p50 + 1, "each": [p50]},
                 "attempts": 3, "placements_sha256": "x", "commit": side, "load": [1.0]}))
    rec = _run(tmp_path, "--combine", *sorted(str(p) for p in tmp_path.glob("whole-*.json")))
    got = rec["whole_attempts"]["preemption"]
    assert got["same_placements"] and len(got["rounds"]) == 3
    assert got["base_host_us_p50_median_of_rounds"] == 1100.0
    assert got["after_host_us_p50_median_of_rounds"] == 950.0
    assert "each" not in got["rounds"]["1"]["base"]["host_us_per_attempt"]
