"""A preemptor's victim side with this round's paths and with the ways
before them, compared in one process: the host's share of each preemptor
as ``bench.preempt_host`` times it (cuda under the simulator, every launch
a host stand-in with the kernels' outputs: ``--stub-all``), for blocks of
``--block`` preemptors in turn, the first of each block left out (what the
previous block left warm or cold is not its own).  Side ``new``: a failed
cycle's helpful rows in one pass (``evaluator.ONE_PASS_HELPFUL``) and a
few rows' slots from the rows' pods (``evaluator.ROWS_FROM_BOUND_PODS``);
side ``old``: both False (codes and helpful rows together; every slot from
the whole key index).  What neither flag turns off is on both sides: the
row write's start times gathered by slot, and the bound pods' per-row
bookkeeping on binds and removals (``BoundPods.pods_on_rows``' dicts, kept
once a sync has read them).  Whole attempts of two processes swing by
more than the difference; in one process, blocks taking turns, both sides
see the same machine.

python -m tensorsched.bench.victim_sync_paired --workload preemption
        [--nodes 10000] [--pods 60] [--block 10] [--output FILE]
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

from tensorsched.bench.preempt_retry_paired import (  # noqa: E402
    paired, paired_main, paired_record)
from tensorsched.framework.preemption import evaluator as EV  # noqa: E402

_FLAGS = ("ONE_PASS_HELPFUL", "ROWS_FROM_BOUND_PODS")


def _paths(_sched, new: bool) -> None:
    for f in _FLAGS:
        setattr(EV, f, new)


def run(workload: str, nodes: int, pods: int, block: int) -> dict:
    """The record of one paired run (module doc)."""
    kept = {f: getattr(EV, f) for f in _FLAGS}
    try:
        rec, got = paired(workload, nodes, pods, block, _paths, ("new", "old"))
    finally:
        for f, v in kept.items():
            setattr(EV, f, v)
    return paired_record("host CPU microseconds a preemptor, the victim side's one-pass "
                         "helpful rows and rows' slots from the bound pods (new) or the ways "
                         "before (old), blocks taking turns in one process "
                         "(bench.victim_sync_paired)",
                         rec, got, workload, nodes, pods, block, flags=list(_FLAGS))


def main(argv=None) -> int:
    return paired_main(argv, __doc__, run)


if __name__ == "__main__":
    raise SystemExit(main())
