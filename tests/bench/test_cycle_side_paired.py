"""``bench.cycle_side_paired`` (in a process of its own: it wraps the
simulator's kernels and the scheduler's functions): both sides' preemptors
timed, the first of each block left out, the placements the workload's."""

from __future__ import annotations

import pytest
from support.backends import needs_cuda
from support.bench_runs import bench_record

pytestmark = [pytest.mark.cudasim, needs_cuda]


def test_both_sides_are_timed_in_turn(tmp_path):
    rec = bench_record(tmp_path, "cycle_side_paired", "--workload", "preemption-spread",
                       "--nodes", "12", "--pods", "8", "--block", "2")
    assert rec["preemptions"] == 8
    # 8 preemptors in blocks of 2, each block's first left out: 2 a side
    for side in ("new", "old"):
        assert rec[side]["attempts"] == 2 and rec[side]["host_us_p50"] > 0, side
    plain = bench_record(tmp_path, "preempt_host", "--workload", "preemption-spread",
                         "--stub-all", "--nodes", "12", "--pods", "8")
    assert rec["placements_sha256"] == plain["placements_sha256"]
