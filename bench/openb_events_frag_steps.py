"""The openb node-event engine's CUDA form under Numba's simulator
(``NUMBA_ENABLE_CUDASIM=1``), its serial work counted: the Python lines
each simulated thread executes (a line of the engine's source is one
step of its thread; the simulator's own lines are not counted), per
change the run logs.  Thread 0 runs the serial steps, the others only
the block's parts, so thread 0's count per change is the run's serial
path; the lines it spends in the fragmentation each change logs
(``live_frag`` and its sum, or ``block_frag`` and what it calls) are
counted apart.  ``openb_preempt_events``' workload and scenario (node and
Pod steps, DefaultPreemption), one run per (policy, seed).  Prints one
JSON line: the counts, the log rows, the CPU seconds of the traced call
(the simulator's, not a device's) and a digest of the answers
(``openb_events_steps.digest``) for the equality of both sides.  Run it
with ``PYTHONPATH`` naming another tree's package to count that one.

NUMBA_ENABLE_CUDASIM=1 python bench/openb_events_frag_steps.py [--nodes 120] [--pods 40]
        [--scale 60] [--seeds 1] [--policies FGD]
"""
import argparse
import json
import os
import sys
import sysconfig
import threading

import tensorsched as ts
from tensorsched.bench.harness import cpu_seconds
from tensorsched.bench.openb_batch import DATA
from tensorsched.bench.openb_events_steps import digest
from tensorsched.bench.openb_preempt import preempt_config, workload
from tensorsched.bench.openb_preempt_events import scenario
from tensorsched.topology.openb import replay as R

#: the functions a change's fragmentation runs in (serial: ``live_frag``;
#: deferred: ``block_frag``), with everything they call
FRAG = frozenset({"live_frag", "block_frag", "frag_flush"})


class LineCount:
    """Lines executed per simulated thread (``threadIdx.x``), all and
    inside ``FRAG``; lines of files under ``skip`` not counted."""

    def __init__(self, skip: tuple):
        self.skip = skip
        self.total = {}
        self.frag = {}
        self.lock = threading.Lock()
        self.local = threading.local()

    def call(self, frame, event, arg):
        code = frame.f_code
        if code.co_filename.startswith(self.skip):
            return None
        idx = getattr(threading.current_thread(), "threadIdx", None)
        if idx is None:
            return None
        depth = getattr(self.local, "depth", 0)
        inside = code.co_name in FRAG
        if inside:
            self.local.depth = depth + 1
        tid = idx.x

        def line(frame, event, arg):
            if event == "line":
                with self.lock:
                    self.total[tid] = self.total.get(tid, 0) + 1
                    if getattr(self.local, "depth", 0) > 0:
                        self.frag[tid] = self.frag.get(tid, 0) + 1
            elif event == "return" and inside:
                self.local.depth -= 1
            return line
        return line


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", default="gpushare40")
    ap.add_argument("--nodes", type=int, default=120)
    ap.add_argument("--pods", type=int, default=40)
    ap.add_argument("--scale", type=float, default=60.0)
    ap.add_argument("--high", type=float, default=0.3)
    ap.add_argument("--stay", type=float, default=30.0)
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--policies", default="FGD")
    ap.add_argument("--data", default=DATA)
    a = ap.parse_args(argv)
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        sys.exit("openb_events_frag_steps: run it with NUMBA_ENABLE_CUDASIM=1 (the simulator)")
    inv, trace = workload(a.data, a.trace, a.nodes, a.pods, a.scale, a.high, a.stay)
    sc = scenario(inv, trace)
    configs = [preempt_config(p, inv.n_nodes) for p in a.policies.split(",")]
    seeds = R.parse_seeds(a.seeds)

    def call():
        return ts.simulate_batch(inv, trace, configs, seeds, backend="cuda", workers=1,
                                 scenario=sc)
    call()                      # the imports and compiles outside the count
    paths = sysconfig.get_paths()
    count = LineCount(tuple({paths["stdlib"], paths["purelib"], paths["platlib"]}))
    threading.settrace(count.call)
    c0 = cpu_seconds()
    try:
        runs = call()
    finally:
        threading.settrace(None)
    cpu = round(cpu_seconds() - c0, 3)
    rows = int(sum(len(r.log_t) for r in runs))
    others = [t for t in count.total if t != 0]
    per = lambda x: round(x / max(rows, 1), 1)         # noqa: E731
    print(json.dumps({
        "tree": os.path.dirname(os.path.dirname(ts.__file__)), "runs": len(runs),
        "nodes": inv.n_nodes, "log_rows": rows,
        "thread0_lines_per_row": per(count.total.get(0, 0)),
        "thread0_frag_lines_per_row": per(count.frag.get(0, 0)),
        "other_thread_max_lines_per_row": per(max((count.total[t] for t in others),
                                                  default=0)),
        "other_thread_max_frag_lines_per_row": per(max((count.frag.get(t, 0) for t in others),
                                                       default=0)),
        "simulator_cpu_seconds": cpu, "digest": digest(runs)}))


if __name__ == "__main__":
    main()
