"""``bench.victim_sync_paired`` (in a process of its own: it wraps the
simulator's kernels and the scheduler's functions): both sides' preemptors
timed, the first of each block left out, the placements the workload's."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support.backends import needs_cuda
from support.bench_runs import bench_record

pytestmark = [pytest.mark.cudasim, needs_cuda]


def _run(tmp_path, *args) -> dict:
    return bench_record(tmp_path, "victim_sync_paired", *args)


def test_both_sides_are_timed_in_turn(tmp_path):
    rec = _run(tmp_path, "--workload", "preemption", "--nodes", "12", "--pods", "8",
               "--block", "2")
    assert rec["preemptions"] == 8
    # 8 preemptors in blocks of 2, each block's first left out: 2 a side
    for side in ("new", "old"):
        assert rec[side]["attempts"] == 2 and rec[side]["host_us_p50"] > 0, side
    plain = bench_record(tmp_path, "preempt_host", "--workload", "preemption", "--stub-all",
                         "--nodes", "12", "--pods", "8")
    assert rec["placements_sha256"] == plain["placements_sha256"]
    assert rec["flags"] == ["ONE_PASS_HELPFUL", "ROWS_FROM_BOUND_PODS"]


def test_bad_blocks_are_refused():
    got = subprocess.run([sys.executable, "-m", "tensorsched.bench.victim_sync_paired",
                          "--pods", "3", "--block", "2"], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"})
    assert got.returncode == 2 and "--pods at least twice --block" in got.stderr
