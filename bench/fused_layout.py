"""Warm cost of the fused pass's one signature for any layout on
C-contiguous inputs: the numba ``fused_pass`` over every node of a basic
cluster, called through the signature with every array typed ``A`` (what
``_compile.AnyLayout`` compiles) and through the signature of the inputs'
own C layout (what the dispatcher compiled for them before), alternated
in one process; CPU seconds per call.

python -m tensorsched.bench.fused_layout [--nodes 10000] [--calls 200]
        [--rounds 6] [--output FILE]
"""
import argparse
import json
import os
import statistics
import time

import numpy as np
from numba import typeof

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.state.query import QueryOptions, compile_query
from tensorsched.kernels._compile import AnyLayout
from tensorsched.kernels.fused.backends import kernel_args, numba_fused_pass

from .harness import git_commit, machine_info


def _objects(n: int, seed: int = 0) -> list:
    """``n`` nodes of mixed sizes, some labeled, with requests already
    on them (bound pods), and nothing else."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        cpu = int(rng.choice([4, 8, 16, 32]))
        out.append({"kind": "Node", "metadata": {"name": f"n{i}", "labels": {
            "zone": f"z{i % 3}"}}, "status": {"allocatable": {
                "cpu": str(cpu), "memory": f"{cpu * 4}Gi", "pods": "110"}}})
    for j in range(n // 2):
        out.append({"kind": "Pod", "metadata": {"name": f"b{j}", "namespace": "default"},
                    "spec": {"nodeName": f"n{int(rng.integers(0, n))}", "containers": [{
                        "name": "c", "resources": {"requests": {
                            "cpu": f"{int(rng.integers(1, 8)) * 250}m",
                            "memory": f"{int(rng.integers(1, 8))}Gi"}}}]}})
    return out


def _pod() -> dict:
    return {"kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {
                "requests": {"cpu": "1", "memory": "2Gi"}}}]}}


def both_signatures(dispatcher, call: tuple) -> tuple:
    """(the entry point of the signature ``AnyLayout`` compiles for the
    arguments ``call``, that of their own types), both compiled here
    (``dispatcher`` compiles nothing when called)."""
    dispatcher.disable_compile(False)
    try:
        return (dispatcher.compile(AnyLayout.signature_of(call)),
                dispatcher.compile(tuple(typeof(x) for x in call)))
    finally:
        dispatcher.disable_compile()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.fused_layout",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--output", default=None)
    a = ap.parse_args(argv)
    state = build_cluster(_objects(a.nodes)).state
    cols = state.columns()
    q = compile_query(state, parse_pod(_pod()), QueryOptions())
    if (q.taint_reject.shape[0] != cols.taint_bits.shape[1]
            or q.port_conflicts.shape[0] != cols.port_bits.shape[1]):
        raise SystemExit("fused_layout: the query's bitsets are narrower than the columns'")
    args = tuple(np.ascontiguousarray(x) if isinstance(x, np.ndarray) else x
                 for x in kernel_args(cols, q))
    n = cols.allocatable.shape[0]
    rows = np.arange(n, dtype=np.int64)
    reasons = np.zeros(n, np.int64)
    raw = np.zeros((n, 5), np.int64)
    call = (rows, *args, reasons, raw)
    any_layout, own = both_signatures(numba_fused_pass().dispatcher, call)
    entries = {"any_layout": any_layout, "c_layout": own}
    answers = {}
    for name, fn in entries.items():
        fn(*call)
        answers[name] = (reasons.copy(), raw.copy())
    same = all(np.array_equal(x, y) for x, y in zip(answers["any_layout"], answers["c_layout"]))
    per_call: dict = {name: [] for name in entries}
    for _ in range(a.rounds):
        for name, fn in entries.items():
            c0 = time.process_time()
            for _ in range(a.calls):
                fn(*call)
            per_call[name].append((time.process_time() - c0) / a.calls)
    record = {
        "bench": "fused_pass warm on C-contiguous inputs: the any-layout signature against "
                 "the C-layout one, alternated in one process (python -m "
                 "tensorsched.bench.fused_layout)",
        "backend": "numba (CPU)", "commit": git_commit(), "machine": machine_info(),
        "load_at_end": os.getloadavg(),
        "nodes": n, "calls_per_round": a.calls, "rounds": a.rounds,
        "feasible_rows": int((answers["c_layout"][0] == 0).sum()), "same_answers": same,
        "cpu_seconds_per_call": {k: [round(v, 7) for v in vs] for k, vs in per_call.items()},
        "median_cpu_seconds_per_call": {k: round(statistics.median(vs), 7)
                                        for k, vs in per_call.items()},
    }
    med = record["median_cpu_seconds_per_call"]
    record["any_over_c"] = round(med["any_layout"] / med["c_layout"], 3)
    print(json.dumps({k: record[k] for k in ("nodes", "same_answers",
                                             "median_cpu_seconds_per_call", "any_over_c")}))
    if a.output:
        with open(a.output, "w") as f:
            json.dump(record, f, indent=1)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
