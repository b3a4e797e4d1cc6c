"""The paired benchmarks (``bench.preempt_retry_paired``,
``bench.victim_sync_paired``, ``bench.cycle_side_paired``), each in a
process of its own (they wrap the simulator's kernels and the scheduler's
functions): both sides' preemptors timed, the first of each block left
out, the placements the workload's, bad blocks refused."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support.backends import needs_cuda
from support.bench_runs import bench_record

pytestmark = [pytest.mark.cudasim, needs_cuda]

# module, workload, its two sides, fields the record adds
PAIRED = [
    ("preempt_retry_paired", "preemption", ("trusted", "checked"), {}),
    ("victim_sync_paired", "preemption", ("new", "old"),
     {"flags": ["ONE_PASS_HELPFUL", "ROWS_FROM_BOUND_PODS"]}),
    ("cycle_side_paired", "preemption-spread", ("new", "old"), {}),
]


@pytest.mark.parametrize("module, workload, sides, extra", PAIRED, ids=[p[0] for p in PAIRED])
def test_both_sides_are_timed_in_turn(tmp_path, module, workload, sides, extra):
    rec = bench_record(tmp_path, module, "--workload", workload, "--nodes", "12",
                       "--pods", "8", "--block", "2")
    assert rec["preemptions"] == 8
    # 8 preemptors in blocks of 2, each block's first left out: 2 a side
    for side in sides:
        assert rec[side]["attempts"] == 2 and rec[side]["host_us_p50"] > 0, side
    for field, want in extra.items():
        assert rec[field] == want, field
    plain = bench_record(tmp_path, "preempt_host", "--workload", workload, "--stub-all",
                         "--nodes", "12", "--pods", "8")
    assert rec["placements_sha256"] == plain["placements_sha256"]


@pytest.mark.parametrize("module", [p[0] for p in PAIRED])
def test_bad_blocks_are_refused(module):
    got = subprocess.run([sys.executable, "-m", f"tensorsched.bench.{module}",
                          "--pods", "3", "--block", "2"], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"})
    assert got.returncode == 2 and "--pods at least twice --block" in got.stderr
