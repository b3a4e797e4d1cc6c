"""Warm cost of the compiled runs' one signature for any layout: one run
of alike pods on the basic workload (``nodes`` nodes) placed by
``Framework.place_run`` on the numba backend (the sort path off, so the
compiled run places it: ``place_run`` with every node scored, or
``place_run_window`` with ``--percentage`` below 100), its call's
arguments kept, then that call repeated through the signature
``_compile.AnyLayout`` compiles for it (the stage arguments' arrays typed
``A``, the rest as they are), through the signature of the arguments' own
types (what the dispatcher compiled for them before: the state's 2-D
views A, the rest C) and through the signature with every array typed
``A`` (``every_array_a``), alternated in one process, every argument
array restored in place before each call (the run writes the state's
requested columns and its caches); process CPU seconds per call.  The
answers and the arrays the three write must be equal.

python -m tensorsched.bench.run_layout [--nodes 10000] [--pods 2000]
        [--percentage 100] [--calls 5] [--rounds 6] [--output FILE]
python -m tensorsched.bench.run_layout --second-layout [--nodes 50]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import numpy as np
from numba import typeof

from tensorsched import synthetic
from tensorsched.framework.records.pod_columns import PodColumns, build_record
from tensorsched.framework.scheduler.cluster import build_cluster, pods_from
from tensorsched.kernels._compile import array_types, with_layout
from tensorsched.kernels.fused import run_sort
from tensorsched.kernels.fused.backends import numba_runs

from .fused_layout import both_signatures
from .harness import record_stamp, write_record


def _arrays(x):
    """The arrays in an argument (inside tuples too)."""
    if isinstance(x, np.ndarray):
        yield x
    elif isinstance(x, tuple):
        for y in x:
            yield from _arrays(y)


class _Recording:
    """A Numba dispatcher that keeps the arguments of its first call (and
    a copy of their arrays then), put as an ``AnyLayout``'s ``dispatcher``
    while a run places pods; anything else is the dispatcher's."""

    def __init__(self, dispatcher, seen: list):
        self.inner = dispatcher
        self.seen = seen

    def __call__(self, *args):
        if not self.seen:
            self.seen.append((args, [a.copy() for a in _arrays(args)]))
        return self.inner(*args)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _recorded(wrappers, call) -> list:
    """[(wrapper, its first call's arguments, their arrays' copies)] of
    the ``AnyLayout`` wrappers ``call()`` called."""
    seen = {w: [] for w in wrappers}
    for w in wrappers:
        w.dispatcher = _Recording(w.dispatcher, seen[w])
    try:
        call()
    finally:
        for w in wrappers:
            w.dispatcher = w.dispatcher.inner
    return [(w, *got[0]) for w, got in seen.items() if got]


def _captured_run(nodes: int, pods: int, percentage: int, seed: int):
    """(the run's entry point, its arguments, a copy of every argument
    array before the call) of one ``Framework.place_run`` on a fresh
    cluster."""
    node_objs, _ = synthetic.workload("basic", nodes, 1, seed)
    cluster = build_cluster(node_objs, synthetic.config("basic", percentage))
    template = pods_from([synthetic.pod_dict("warm-up")], cluster.resolve)[0]
    fw = cluster.framework_for(template, "numba")
    state = cluster.state
    keep_sort = run_sort.ENABLED
    run_sort.ENABLED = False
    try:
        warm = [dataclasses.replace(template, name=f"warm-up-{i}") for i in range(2)]
        fw.place_run(state, warm, seed=seed, attempt=0, start_index=0)
        run = PodColumns.from_records([build_record(template, f"{template.namespace}/pod-{i}",
                                                    template.creation_ns or 0, template.obj)
                                       for i in range(pods)])
        seen = _recorded(numba_runs(), lambda: fw.place_run(state, run, seed=seed, attempt=0,
                                                             start_index=0))
    finally:
        run_sort.ENABLED = keep_sort
    if not seen:
        raise SystemExit("run_layout: no compiled run placed the pods")
    return seen[0]


def _compile_cpu(dispatcher, sig) -> float:
    """Process CPU seconds ``dispatcher`` takes to compile (or load from
    the cache) signature ``sig``."""
    dispatcher.disable_compile(False)
    try:
        c0 = time.process_time()
        dispatcher.compile(sig)
        return time.process_time() - c0
    finally:
        dispatcher.disable_compile()


def second_layout(nodes: int, seed: int) -> dict:
    """What a second layout cost before the wrappers: the CPU seconds to
    compile, in this process, the signature with every array C-contiguous
    (what a caller with C columns compiled next to the state's) of the
    whole run (``place_run``) and of the sort path's keys (``run_keys``),
    each after its any-layout signature (compiled by a run on a fresh
    cluster).  Meaningful with empty caches (``NUMBA_CACHE_DIR``,
    ``TENSORSCHED_CACHE_DIR``)."""
    out = {}
    wrapper, args, _ = _captured_run(nodes, 40, 100, seed)
    c_sig = tuple(with_layout(typeof(x), "C") for x in args)
    out["place_run"] = round(_compile_cpu(wrapper.dispatcher, c_sig), 3)
    node_objs, _ = synthetic.workload("basic", nodes, 1, seed)
    cluster = build_cluster(node_objs, synthetic.config("basic", 100))
    template = pods_from([synthetic.pod_dict("warm-up")], cluster.resolve)[0]
    fw = cluster.framework_for(template, "numba")
    kept = run_sort.ENABLED, run_sort.CPU_MIN_SHARE
    run_sort.ENABLED, run_sort.CPU_MIN_SHARE = True, 0.0
    try:
        pods = [dataclasses.replace(template, name=f"p-{i}") for i in range(40)]
        seen = _recorded([run_sort.keys_kernel], lambda: fw.place_run(
            cluster.state, pods, seed=seed, attempt=0, start_index=0))
    finally:
        run_sort.ENABLED, run_sort.CPU_MIN_SHARE = kept
    if not seen:
        raise SystemExit("run_layout: the sort path computed no keys")
    keys, key_args, _ = seen[0]
    c_sig = tuple(with_layout(typeof(x), "C") for x in key_args)
    out["run_keys"] = round(_compile_cpu(keys.dispatcher, c_sig), 3)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.run_layout",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--percentage", type=int, default=100)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--second-layout", action="store_true",
                    help="only the compile CPU seconds of a second (C) layout's signatures "
                         "(run it with empty caches)")
    ap.add_argument("--output", default=None)
    a = ap.parse_args(argv)
    if a.second_layout:
        record = {"bench": "compile CPU s of the all-C signature after the any-layout one "
                           "(python -m tensorsched.bench.run_layout --second-layout)",
                  "backend": "numba (CPU)", **record_stamp(a.seed), "nodes": a.nodes,
                  "compile_cpu_seconds": second_layout(a.nodes, a.seed)}
        write_record(record, a.output)
        return 0
    wrapper, args, before = _captured_run(a.nodes, a.pods, a.percentage, a.seed)
    d = wrapper.dispatcher
    all_a, own = both_signatures(d, args)
    d.disable_compile(False)
    try:
        entries = {"any_layout": d.compile(wrapper.signature_of(args, wrapper.positions)),
                   "own_types": own, "every_array_a": all_a}
    finally:
        d.disable_compile()
    live = list(_arrays(args))

    def restore():
        for dst, src in zip(live, before):
            np.copyto(dst, src)
    answers = {}
    for name, fn in entries.items():
        restore()
        got = fn(*args)
        answers[name] = (got, [x.copy() for x in live])
    same = all(answers[k][0] == answers["own_types"][0] and all(
        np.array_equal(x, y) for x, y in zip(answers[k][1], answers["own_types"][1]))
        for k in entries)
    per_call: dict = {name: [] for name in entries}
    for _ in range(a.rounds):
        for name, fn in entries.items():
            spent = 0.0
            for _ in range(a.calls):
                restore()
                c0 = time.process_time()
                fn(*args)
                spent += time.process_time() - c0
            per_call[name].append(spent / a.calls)
    layouts = sorted({x.layout for x in array_types(typeof(args))})
    record = {
        "bench": "a compiled run warm on the state's arguments: the any-layout signature "
                 "against the arguments' own types, alternated in one process (python -m "
                 "tensorsched.bench.run_layout)",
        "backend": "numba (CPU)", **record_stamp(a.seed),
        "run": d.py_func.__name__, "nodes": a.nodes, "pods": a.pods,
        "percentage": a.percentage, "placed": int(answers["own_types"][0][0]),
        "own_type_layouts": layouts,
        "calls_per_round": a.calls, "rounds": a.rounds, "same_answers": bool(same),
        "cpu_seconds_per_call": {k: [round(v, 6) for v in vs] for k, vs in per_call.items()},
        "median_cpu_seconds_per_call": {k: round(statistics.median(vs), 6)
                                        for k, vs in per_call.items()},
    }
    med = record["median_cpu_seconds_per_call"]
    record["any_over_own"] = round(med["any_layout"] / med["own_types"], 3)
    record["every_array_a_over_own"] = round(med["every_array_a"] / med["own_types"], 3)
    write_record(record, a.output)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
