"""A preemptor's failed cycle with its rules staging sent by one driver
copy and by the device array's copy, compared in one process as
``bench.preempt_retry_paired`` compares the retry (cuda under the
simulator, every launch a host stand-in with the kernels' outputs, the
kernels taken out; blocks of ``--block`` preemptors taking turns, each
block's first left out): ``new`` sends a rules cycle's staging by one
driver copy (``DeviceRuleTable.DRIVER_COPY``), ``old`` by the device
array's ``copy_to_device``.

python -m tensorsched.bench.cycle_side_paired --workload preemption-spread
        [--nodes 10000] [--pods 60] [--block 10] [--output FILE]
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

from tensorsched.bench.preempt_retry_paired import (  # noqa: E402
    paired, paired_main, paired_record)
from tensorsched.kernels import domain_rules_cycle as DRC  # noqa: E402


def _paths(_sched, new: bool) -> None:
    DRC.DeviceRuleTable.DRIVER_COPY = new


def run(workload: str, nodes: int, pods: int, block: int) -> dict:
    """The record of one paired run (module doc)."""
    try:
        rec, got = paired(workload, nodes, pods, block, _paths, ("new", "old"))
    finally:
        _paths(None, True)
    return paired_record("host CPU microseconds a preemptor, a failed cycle's rules staging "
                         "sent by one driver copy (new) or by the device array's copy (old), "
                         "blocks taking turns in one process (bench.cycle_side_paired)",
                         rec, got, workload, nodes, pods, block)


def main(argv=None) -> int:
    return paired_main(argv, __doc__, run, "preemption-spread")


if __name__ == "__main__":
    raise SystemExit(main())
