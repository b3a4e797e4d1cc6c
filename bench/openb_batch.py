"""The openb experiment batched: every (trace, policy, seed) run in one
call (``openb.batch.sweep`` on numba / cuda), timed, against the per-run path
on the same jobs in the same process when asked.

python -m tensorsched.bench.openb_batch [--traces T1,T2|paper|all] [--seeds 42-51]
        [--backend numba|cuda] [--workers N] [--per-run] [--data DIR]
        [--output bench/results/openb-batch-<backend>.json]
python -m tensorsched.bench.openb_batch --durations [--traces default] [--pods 2000]
        [--seeds 0-1] [--policies ...] [--output bench/results/openb-batch-duration-numba.json]

``paper``: the 17 traces of the experiment's figure (1,020 runs with
seeds 42-51).  ``--per-run``: also the per-run path (``replay.sweep``: ``replay`` in
``--workers`` processes, numba) and whether the two sweep CSVs are equal in
every column but ``seconds`` (Random aside: its per-run streams are
``replay``'s own), recorded with the wall and CPU seconds and the load
average before and after, since this machine may be shared.

``--durations``: ``tensorsched sweep`` with ``--policy`` on the openb node
list over a generic trace of each trace's first ``--pods`` pods
(``duration_trace``: arrivals compressed ``--scale`` times, every other
pod that leaves doing so a ``duration`` after its binding, the others at
their compressed deletion time), batched (``openb.batch.trace_batch``, one
call) against one Simulation per job in this process; CPU and wall
seconds of both, whether the tables are equal (but ``wall_seconds``) and
how many jobs the batched path took.
"""
import argparse
import csv
import dataclasses
import json
import os
import resource
import tempfile
import time

from tensorsched.experiments import sweep as S
from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.gpu import ANNO_GPU_COUNT, ANNO_GPU_MILLI, ANNO_GPU_MODEL
from tensorsched.topology.openb import batch as RB
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb import trace as T

from .harness import git_commit, machine_info

HERE = os.path.dirname(os.path.realpath(__file__))
DATA = os.path.join(HERE, "..", "data", "openb")
PAPER = ("cpu050,cpu100,cpu200,cpu250,default,gpushare100,gpushare40,gpushare60,gpushare80,"
         "gpuspec10,gpuspec20,gpuspec25,gpuspec33,multigpu20,multigpu30,multigpu40,multigpu50")


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _timed(fn) -> tuple:
    load0, c0, t0 = os.getloadavg(), _cpu_seconds(), time.perf_counter()
    out = fn()
    return out, {"wall_seconds": round(time.perf_counter() - t0, 2),
                 "cpu_seconds": round(_cpu_seconds() - c0, 2),
                 "load_before": [round(x, 2) for x in load0],
                 "load_after": [round(x, 2) for x in os.getloadavg()]}


def _rows(path: str) -> list:
    """The sweep CSV's rows without the ``seconds`` column."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    k = rows[0].index("seconds")
    return [r[:k] + r[k + 1:] for r in rows]


def duration_trace(src: str, out: str, pods: int, scale: float) -> str:
    """A generic trace CSV at ``out`` (``read_trace``'s columns) of the
    first ``pods`` pods of openb pod CSV ``src``: arrival its creation time
    over ``scale`` (whole seconds); of the pods with a deletion time, every
    other one leaves its compressed lifetime after its binding (a
    ``duration``), the others at their compressed deletion time; cpu,
    memory and the GPU ask as the CSV's."""
    tr = T.read_openb_trace(src)
    tw = RB.trace_workload(tr)
    n = min(pods, len(tw.arrival))
    arrival = (tw.arrival[:n] // scale).astype(int)
    life = (tw.departure[:n] - tw.arrival[:n]) // scale
    leaves = [j for j in range(n) if life[j] < float("inf")]
    timed = set(leaves[::2])
    lines = ["name,arrival,departure,duration,cpu,memory,annotations"]
    p = tw.pods
    for j in range(n):
        dep = str(int(arrival[j] + life[j])) if j in leaves and j not in timed else ""
        dur = str(int(life[j])) if j in timed else ""
        anno = ""
        if p.num[j] and p.milli[j]:
            pairs = [f"{ANNO_GPU_MILLI}={int(p.milli[j])}", f"{ANNO_GPU_COUNT}={int(p.num[j])}"]
            if p.spec[j]:
                pairs.append(f"{ANNO_GPU_MODEL}={p.spec[j]}")
            anno = '"' + ";".join(pairs) + '"'
        lines.append(f"{p.names[j]},{int(arrival[j])},{dep},{dur},{int(p.cpu[j])}m,"
                     f"{int(p.mem[j])}Mi,{anno}")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return out


def _sweep_timed(jobs, batch: bool) -> tuple:
    """``run_sweep`` of ``jobs`` in this process: (timing, rows but
    ``wall_seconds``)."""
    jobs = [dataclasses.replace(j, batch=batch) for j in jobs]
    table, timing = _timed(lambda: S.run_sweep(jobs, workers=1))
    return timing, table.drop(["wall_seconds"]).to_pylist()


def durations_main(a) -> dict:
    """The ``--durations`` record (module doc)."""
    csv_dir = os.path.join(a.data, "csv")
    nodes = os.path.join(csv_dir, "openb_node_list_gpu_node.csv")
    traces = ("default" if a.traces == "paper" else a.traces).split(",")
    policies = a.policies.split(",")
    seeds = R.parse_seeds(a.seeds)
    tmp = tempfile.mkdtemp(prefix="openb-duration-")
    paths = [duration_trace(os.path.join(csv_dir, f"openb_pod_list_{t}.csv"),
                            os.path.join(tmp, f"{t}.csv"), a.pods, a.scale) for t in traces]
    jobs = S.make_jobs(paths, seeds, policies=policies, nodes=nodes, backend=a.backend)
    inputs = S.load_inputs(jobs)
    taken = [j for j in jobs if S.batchable(j, inputs)]
    # compile (or load the compiled kernels) outside the timing
    _sweep_timed(jobs[:1], True)
    batched, rows_b = _sweep_timed(jobs, True)
    per_run, rows_p = _sweep_timed(jobs, False)
    with open(paths[0]) as fh:
        timed = sum(1 for line in fh.read().splitlines()[1:] if line.split(",")[3])
    return {"experiment": "tensorsched sweep --policy on the openb node list, generic traces "
                          "with duration departures (duration_trace)",
            "traces": traces, "pods": a.pods, "scale": a.scale,
            "pods_with_duration_first_trace": timed, "policies": policies, "seeds": a.seeds,
            "backend": a.backend, "jobs": len(jobs), "batched_jobs": len(taken),
            "batched": batched, "per_run": per_run, "tables_equal": rows_b == rows_p,
            "cpu_ratio": round(per_run["cpu_seconds"] / max(batched["cpu_seconds"], 1e-9), 2),
            "scheduled": [r["scheduled"] for r in rows_b]}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", default="paper")
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--backend", default="numba", choices=("numba", "cuda"))
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--per-run", action="store_true")
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--output")
    ap.add_argument("--durations", action="store_true")
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--scale", type=float, default=600.0)
    a = ap.parse_args(argv)
    if a.durations:
        if a.seeds == "42-51":
            a.seeds = "0-1"
        record = durations_main(a)
        record.update(commit=git_commit(), machine=machine_info(),
                      timestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        out = a.output or os.path.join(HERE, "results",
                                       f"openb-batch-duration-{a.backend}.json")
        with open(out, "w") as f:
            json.dump(record, f, indent=1)
        print(json.dumps({k: v for k, v in record.items() if k != "scheduled"}, indent=1))
        return record
    csv_dir = os.path.join(a.data, "csv")
    nodes = os.path.join(csv_dir, "openb_node_list_gpu_node.csv")
    if a.traces == "all":
        traces = sorted(f[len("openb_pod_list_"):-4] for f in os.listdir(csv_dir)
                        if f.startswith("openb_pod_list_") and f.endswith(".csv"))
    else:
        traces = (PAPER if a.traces == "paper" else a.traces).split(",")
    pods = [os.path.join(csv_dir, f"openb_pod_list_{t}.csv") for t in traces]
    policies = a.policies.split(",")
    seeds = R.parse_seeds(a.seeds)
    tmp = tempfile.mkdtemp(prefix="openb-batch-")
    batched_csv = os.path.join(tmp, "batched.csv")
    # compile (or load the compiled kernels) outside the timing
    RB.sweep(nodes, pods[:1], policies[:1], seeds[:1], backend=a.backend, workers=a.workers)
    _, batched = _timed(lambda: RB.sweep(nodes, pods, policies, seeds, backend=a.backend,
                                        workers=a.workers, output=batched_csv))
    record = {"experiment": "openb, arrivals only (simulate_replay per run)",
              "runs": len(traces) * len(policies) * len(seeds), "traces": traces,
              "policies": policies, "seeds": a.seeds, "backend": a.backend,
              "workers": a.workers or os.cpu_count(), "batched": batched}
    if a.per_run:
        per_csv = os.path.join(tmp, "per-run.csv")
        _, per = _timed(lambda: R.sweep(nodes, pods, policies, seeds, backend="numba",
                                        workers=a.workers, output=per_csv))
        record["per_run"] = per
        mine, theirs = _rows(batched_csv), _rows(per_csv)
        pol = mine[0].index("sc_policy")
        same = [x == y for x, y in zip(mine[1:], theirs[1:]) if x[pol] != R.POLICY_DIR["Random"]]
        record["csv_rows_equal_but_random"] = f"{sum(same)}/{len(same)}"
        record["speedup_wall"] = round(per["wall_seconds"] / batched["wall_seconds"], 2)
    record.update(commit=git_commit(), machine=machine_info(),
                  timestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    out = a.output or os.path.join(HERE, "results", f"openb-batch-{a.backend}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
