"""The batched openb engine's CPU twin (``kernels.batch.cpu``): its cold
compile and its warm runs, for two choices of the rules and queue steps
compiled once and called rather than inlined (``cpu.compile_twin``):
``before`` inlines every one everywhere (as the twin did up to 97712c8),
``after`` is the module's own (DefaultPreemption's steps call
``cpu.COLD_CALLED``; the cluster loop inlines every one).

python -m tensorsched.bench.batch_compile [--cold 2 [--paired]] [--warm 3] [--data DIR]
        [--output bench/results/batch-compile-cold-numba.json]

``--cold N``: N fresh processes per choice, alternated (before, after,
before, ...), each with an empty cache directory of its own
(``TENSORSCHED_CACHE_DIR``), timing its first batch: a small preempting
trace (three nodes, two policies, DefaultPreemption on), whose
compilation is the twin's whole compile (one compiled variant: runs
without preemption pass a flag); the process's CPU seconds (all
threads), and its answers, equal across choices.  ``--paired``: each
round's two processes at the same time, under the same load.
``--warm N``: in this process, both choices compiled (or loaded from the
cache) first, then N alternated rounds of two batches: the openb default
trace's 12 runs (its 6 policies x seeds 42-43, every node of the openb
list, no departures) and ``openb_preempt``'s preempting workload (12
nodes, 400 pods, 6 policies x 2 seeds; 10 calls a timing); the CPU and
wall seconds of each timing and whether both choices give the same
outputs.  Recorded with the
load average before and after, since the machine may be shared.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from tensorsched.kernels.batch import cpu
from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.gpu import build_inventory
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import replay as R

from . import openb_preempt as OP
from .harness import cpu_seconds, git_commit, machine_info
from .openb_batch import DATA

CHOICES = ("before", "after")


def kernel_of(choice: str):
    """The twin's driver for ``choice`` (module doc)."""
    if choice == "before":
        return cpu.compile_twin(None)[-1]
    return cpu.compile_twin()[-1]


def digest(out, victim=None) -> str:
    """sha256 of every output array of ``out`` (``BatchOutputs``) and ``victim``."""
    h = hashlib.sha256()
    for x in (*vars(out).values(), victim):
        h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()


def small_batch() -> tuple:
    """(BatchArrays, BatchPreempt) of a small preempting trace: three nodes
    of 1-4 GPUs, shares and whole GPUs of unequal priorities, some
    leaving; FGD and Random, two candidate settings."""
    inv = build_inventory(["n0", "n1", "n2"], [16000] * 3, [65536] * 3, [2, 4, 1],
                          ["T4", "T4", "A10"])
    gpus = [(1, 500), (1, 1000), (2, 1000), (1, 250), (4, 1000), (1, 700)] * 2
    pods = R.TracePods([f"p{j}" for j in range(12)], np.full(12, 2000), np.full(12, 2048),
                       np.array([g[0] for g in gpus]), np.array([g[1] for g in gpus]),
                       [""] * 12)
    prio = np.array([0, 0, 3, 0, 9, 5, 0, 1, 9, 0, 20, 2])
    tw = B.TraceWorkload(pods, np.arange(12.0), np.array([np.inf, 30.0] * 6),
                         rank=np.unique(-prio, return_inverse=True)[1], priority=prio)
    return trace_batch_arrays([inv], [tw], [(0, 0, "FGD", 2), (0, 0, "Random", 5)],
                              [(10, 100), (50, 1)])


def trace_batch_arrays(clusters, traces, jobs, preempt) -> tuple:
    """``openb.batch.trace_batch``'s arrays for ``jobs`` (one chunk):
    (BatchArrays, BatchPreempt)."""
    workloads, wl_key = B.job_workloads(clusters, traces, jobs)
    a = B.trace_arrays(clusters, workloads, wl_key, jobs, B.DEFAULT_MAX_UNSCHED, (1.0, 10.0),
                       None)
    return a, B.preempt_arrays(workloads, wl_key, jobs, preempt, a)


def run(kernel, a, pre) -> tuple:
    """(outputs, victims) of ``a`` on ``kernel``."""
    victim = np.zeros(a.cls.shape[0], np.int64)
    return cpu.run_batch(a, preempt=pre, victim=victim, kernel=kernel), victim


def child(choice: str) -> dict:
    """One cold process's record (``--cold``)."""
    c0 = cpu_seconds()
    a, pre = small_batch()
    c1 = cpu_seconds()
    out, victim = run(kernel_of(choice), a, pre)
    c2 = cpu_seconds()
    return {"variant": choice, "setup_cpu_s": round(c1 - c0, 2),
            "compile_and_run_cpu_s": round(c2 - c1, 2), "answers_sha256": digest(out, victim)}


def cold(n: int, paired: bool = False) -> list:
    """``n`` alternated fresh processes per choice (module doc); with
    ``paired`` each round's two processes run at the same time (the same
    load on a shared machine)."""
    runs = []
    for k in range(n):
        with tempfile.TemporaryDirectory(prefix="ts-cold-") as root:
            procs = []
            for choice in CHOICES:
                env = dict(os.environ, TENSORSCHED_CACHE_DIR=os.path.join(root, choice))
                env.pop("NUMBA_CACHE_DIR", None)
                load = os.getloadavg()
                t0 = time.perf_counter()
                proc = subprocess.Popen([sys.executable, "-m", "tensorsched.bench.batch_compile",
                                         "--child", choice], env=env, stdout=subprocess.PIPE,
                                        text=True)
                procs.append((choice, proc, load, t0))
                if not paired:
                    proc.wait()
            ended = {}
            while len(ended) < len(procs):      # each process's end, as it comes
                for choice, proc, _load, _t0 in procs:
                    if choice not in ended and proc.poll() is not None:
                        ended[choice] = time.perf_counter()
                time.sleep(0.2)
            for choice, proc, load, t0 in procs:
                out, _ = proc.communicate()
                if proc.returncode:
                    raise RuntimeError(f"{choice}: the cold process failed ({proc.returncode})")
                rec = json.loads(out.strip().splitlines()[-1])
                rec.update(run=k + 1, paired=paired,
                           process_wall_s=round(ended[choice] - t0, 2),
                           load_before=[round(x, 2) for x in load])
                print(json.dumps(rec), flush=True)
                runs.append(rec)
    return runs


def warm_batches(data: str) -> dict:
    """The two warm batches (module doc): name -> (BatchArrays, BatchPreempt or None)."""
    csv_dir = os.path.join(data, "csv")
    nodes = R.read_openb_nodes(os.path.join(csv_dir, "openb_node_list_gpu_node.csv"))
    pods = R.load_cached("pods", os.path.join(csv_dir, "openb_pod_list_default.csv"))
    wl = [B.workload_of(nodes, pods)]
    runs = []
    for pol in POLICIES:
        for seed in (42, 43):
            seq, tie = B.arrival_and_ties(nodes, pods, seed, 1.3)
            runs.append(B.Run(0, pol, seed, seq, tie))
    inv, trace = OP.workload(data, "gpushare40", 12, 400, 600.0, 0.3, 30.0)
    tw = B.trace_workload(trace)
    jobs = [(0, 0, pol, s) for pol in POLICIES for s in (1, 2)]
    return {"default-12-runs": (B.batch_arrays(nodes, wl, runs), None),
            "openb-preempt-12-runs": trace_batch_arrays([inv], [tw], jobs, [(10, 100)] * 12)}


REPEATS = {"default-12-runs": 1, "openb-preempt-12-runs": 10}   # calls per timing


def warm(n: int, data: str) -> dict:
    """Both choices on the warm batches, ``n`` alternated rounds (module doc)."""
    kernels = {choice: kernel_of(choice) for choice in CHOICES}
    batches = warm_batches(data)
    rec = {"rounds": [], "same_outputs": {}}
    for name, (a, pre) in batches.items():
        shas = {}
        for choice in CHOICES:       # the first call compiles or loads from the cache
            c0 = cpu_seconds()
            out, victim = run(kernels[choice], a, pre)
            shas[choice] = digest(out, victim)
            rec.setdefault("first_call_cpu_s", {})[f"{name}/{choice}"] = round(
                cpu_seconds() - c0, 2)
        rec["same_outputs"][name] = shas["before"] == shas["after"]
    for k in range(n):
        for name, (a, pre) in batches.items():
            for choice in (CHOICES if k % 2 == 0 else CHOICES[::-1]):
                load = os.getloadavg()
                c0, t0 = cpu_seconds(), time.perf_counter()
                for _ in range(REPEATS[name]):
                    run(kernels[choice], a, pre)
                rec["rounds"].append({"round": k + 1, "batch": name, "variant": choice,
                                      "calls": REPEATS[name],
                                      "cpu_s": round(cpu_seconds() - c0, 3),
                                      "wall_s": round(time.perf_counter() - t0, 3),
                                      "load_before": round(load[0], 2)})
                print(json.dumps(rec["rounds"][-1]), flush=True)
    return rec


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cold", type=int, default=0)
    ap.add_argument("--paired", action="store_true",
                    help="--cold: each round's two processes at the same time")
    ap.add_argument("--warm", type=int, default=0)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--child", choices=CHOICES, help=argparse.SUPPRESS)
    ap.add_argument("--output")
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)))
        return
    result = {"bench": "batched openb twin: cold compile (fresh process, empty cache dir) "
                       "and warm runs, rules/queue steps all inlined (before) or "
                       "cpu.COLD_CALLED called in DefaultPreemption's steps (after)",
              "backend": "numba (CPU twin, kernels.batch.cpu)", "commit": git_commit(),
              "machine": machine_info(),
              "cold_called_after": list(cpu.COLD_CALLED),
              "load_start": [round(x, 2) for x in os.getloadavg()]}
    if args.cold:
        result["cold"] = cold(args.cold, args.paired)
    if args.warm:
        result["warm"] = warm(args.warm, args.data)
    result["load_end"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(result, indent=1)
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
