"""What every benchmark record shares: the machine, the commit, placement
hashes, a timed run with the cyclic GC kept out of it, and the JSON output."""

from __future__ import annotations

import argparse
import dataclasses
import gc
import hashlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
import tracemalloc
from itertools import islice

import numba
import numpy as np

from tensorsched.framework.scheduler.events import BindingList
from tensorsched.kernels.fused import run_sort
from tensorsched.kernels.fused.backends import WINDOW_TREE_MIN_RUN


_HASH_CHUNK = 1 << 16        # pairs joined into one string at a time


def placements_sha256(bindings) -> str:
    """sha256 over the ordered (pod, node) placements, one 'pod node' line
    each ('-' for no node).  The pods a ``BindingList`` holds as a ``key ->
    node`` dict are hashed from it in joined chunks (no Binding built per
    pod); the digest is the same, a hash of the lines' concatenation."""
    h = hashlib.sha256()
    bound, rest = (bindings.node_pairs() if isinstance(bindings, BindingList)
                   else ({}, bindings))
    pairs = iter(bound.items())
    while lines := "\n".join(map(" ".join, islice(pairs, _HASH_CHUNK))):
        h.update(lines.encode())
        h.update(b"\n")
    for b in rest:
        h.update(f"{b.pod} {b.node if b.node is not None else '-'}\n".encode())
    return h.hexdigest()


def preemption_sha256(bindings) -> str:
    """sha256 over 'pod node victim,victim,...' lines, in scheduling order."""
    h = hashlib.sha256()
    for b in bindings:
        h.update(f"{b.pod} {b.node if b.node is not None else '-'} "
                 f"{','.join(b.victims)}\n".encode())
    return h.hexdigest()


def machine_info() -> dict:
    return {"machine": platform.machine(), "processor": platform.processor() or "",
            "cpus": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "numba": numba.__version__}


def git_commit() -> str:
    try:
        here = os.path.dirname(os.path.realpath(__file__))
        out = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or "unknown"
    except Exception:
        return "unknown"


def tree_env(path: str | None) -> dict:
    """This process's environment with the tree at ``path`` first on
    ``PYTHONPATH`` (a base tree, the "before" of a before/after run in
    separate processes); as it is for None (this tree)."""
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_child(module: str, args, path: str | None = None) -> dict:
    """``python -m module *args`` in a child process under
    ``tree_env(path)``: the JSON object its last line of stdout holds, with
    ``load`` (the 1, 5 and 15 minute load averages as it started)."""
    load = list(os.getloadavg())
    out = subprocess.run([sys.executable, "-m", module, *map(str, args)], env=tree_env(path),
                         check=True, capture_output=True, text=True).stdout
    return {**json.loads(out.strip().splitlines()[-1]), "load": load}


def cpu_seconds() -> float:
    """This process's user + system CPU seconds (all its threads)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def base_tree(commit: str, dest: str) -> str:
    """Commit ``commit`` of the repository this module is in, laid out
    under ``dest`` as an importable ``tensorsched`` (the package-dir map
    of pyproject.toml), its ``bench`` this tree's (so both trees run the
    same timing and cases); returns ``dest``."""
    repo = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    src = os.path.join(dest, "src")
    os.makedirs(src)
    tar = subprocess.run(["git", "-C", repo, "archive", commit], capture_output=True,
                         check=True).stdout
    subprocess.run(["tar", "-x", "-C", src], input=tar, check=True)
    pkg = os.path.join(dest, "tensorsched")
    os.rename(os.path.join(src, "tensorsched_pkg"), pkg)
    for sub in ("kernels", "framework", "topology", "experiments"):
        os.rename(os.path.join(src, sub), os.path.join(pkg, sub))
    shutil.copytree(os.path.dirname(os.path.realpath(__file__)), os.path.join(pkg, "bench"),
                    ignore=shutil.ignore_patterns("results", "__pycache__"))
    return dest


def alternated(trees, rounds: int, measure) -> dict:
    """``{tree name: [measure(path) for each round]}`` over ``trees``
    ``[(name, path or None), ...]``, the order reversed in odd rounds (the
    base tree first in every other round, so a drift in the machine's
    load does not favour one tree)."""
    got = {name: [] for name, _ in trees}
    for r in range(rounds):
        for name, path in (trees if r % 2 == 0 else trees[::-1]):
            got[name].append(measure(path))
    return got


def timed_schedule(sched, pods) -> tuple[list, float]:
    """(bindings, seconds) of ``sched.schedule_one`` over ``pods`` in order
    (``timed_schedule_cpu``'s run)."""
    bindings, elapsed, _ = timed_schedule_cpu(sched, pods)
    return bindings, elapsed


def timed_schedule_cpu(sched, pods) -> tuple[list, float, float]:
    """(bindings, wall seconds, process CPU seconds) of ``sched.schedule_one``
    over ``pods`` in order.

    The set-up's objects are long-lived: freezing them keeps the cyclic
    GC's full collections, which walk every one of them, out of the timing;
    both clocks are read inside the frozen region, so the collection before
    the run is not counted either."""
    gc.collect()
    gc.freeze()
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        bindings = [sched.schedule_one(p) for p in pods]
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        gc.unfreeze()
    return bindings, elapsed, cpu


def timed_pending(sched, pods) -> tuple[list, float]:
    """(outcomes, seconds) of ``sched.schedule_pending(pods)``: the pods
    added to the scheduling queue and the scheduler run until idle, as
    scheduler_perf measures (GC kept out as in ``timed_schedule``)."""
    outcomes, elapsed, _ = timed_pending_cpu(sched, pods)
    return outcomes, elapsed


def timed_pending_clocks(sched, pods) -> tuple[list, tuple, tuple]:
    """(outcomes, (wall, process CPU) seconds at the start, the same at the
    end) of ``timed_pending``'s run; the clocks are read inside the
    frozen-GC region, so the collection before the run and the unfreeze
    after it are not counted."""
    gc.collect()
    gc.freeze()
    try:
        start = (time.perf_counter(), time.process_time())
        outcomes, _ = sched.schedule_pending(pods)
        end = (time.perf_counter(), time.process_time())
    finally:
        gc.unfreeze()
    return outcomes, start, end


def timed_pending_cpu(sched, pods) -> tuple[list, float, float]:
    """(outcomes, wall seconds, process CPU seconds) of
    ``timed_pending_clocks``'s run."""
    outcomes, start, end = timed_pending_clocks(sched, pods)
    return outcomes, end[0] - start[0], end[1] - start[1]


def rss_bytes() -> int:
    """The process's resident set size now (Linux), 0 where unknown."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def peak_rss_bytes() -> int:
    """The process's peak resident set size so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def state_bytes_per_pod(add_pod, pods: list) -> float:
    """Bytes the cluster state keeps per bound pod, its name included:
    Python allocations (tracemalloc) while ``add_pod`` binds ``pods``,
    plus the ``namespace/name`` key string the state's maps hold (the
    record makes it when parsed, before this count starts), divided by
    their number.  The parsed record (the input) is not counted."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for pod in pods:
            add_pod(pod)
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    names = sum(sys.getsizeof(pod.key) for pod in pods)
    return round((after - before + names) / max(len(pods), 1), 1)


def latency_fields(seconds) -> dict:
    """p50_us / p99_us of per-attempt latencies given in seconds."""
    lat = np.asarray(seconds, np.float64) * 1e6
    return {"p50_us": round(float(np.percentile(lat, 50)), 1) if lat.size else None,
            "p99_us": round(float(np.percentile(lat, 99)), 1) if lat.size else None}


def record_stamp(seed: int) -> dict:
    """The fields that say where and when a record was taken."""
    return {"seed": seed, "commit": git_commit(), "machine": machine_info(),
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            # the machine is shared: its 1/5/15-minute load when the run ended
            "load": [round(x, 2) for x in os.getloadavg()]}


def write_record(record: dict, path: str | None) -> None:
    text = json.dumps(record, indent=2, sort_keys=True)
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            f.write(text + "\n")
    print(text)


def sized_main(argv, doc: str, prog: str, run, sizes: dict, choices: dict | None = None) -> int:
    """The command line of a bench whose record is ``run(**options)``
    (written by ``write_record`` to ``--output``, and printed): each of
    ``sizes`` (name -> default) an integer option of at least 1, each of
    ``choices`` (name -> (default, allowed values)) one of its values."""
    ap = argparse.ArgumentParser(prog=prog, description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in sizes.items():
        ap.add_argument(f"--{name}", type=int, default=default)
    for name, (default, allowed) in (choices or {}).items():
        ap.add_argument(f"--{name}", type=type(default), default=default, choices=allowed)
    ap.add_argument("--output", default=None)
    args = vars(ap.parse_args(argv))
    for name in sizes:
        if args[name] < 1:
            ap.error(f"--{name} must be at least 1 (got {args[name]})")
    output = args.pop("output")
    write_record(run(**args), output)
    return 0


def warm_up_run(cluster, fw, pod, seed: int) -> None:
    """Compile the run kernels outside the timed run (two pods placed in one
    run, then a run long enough for the window trees of a percentage below
    every node, then two pods by the sort path, which long runs take, each
    taken off again)."""
    for count in (2, WINDOW_TREE_MIN_RUN):
        _warm_up_run(cluster, fw, pod, seed, count)
    keep = run_sort.CPU_MIN_SHARE
    run_sort.CPU_MIN_SHARE = 0.0
    try:
        _warm_up_run(cluster, fw, pod, seed, 2)
    finally:
        run_sort.CPU_MIN_SHARE = keep


def _warm_up_run(cluster, fw, pod, seed: int, count: int) -> None:
    state = cluster.state
    pods = [dataclasses.replace(pod, name=f"warm-up-run-{i}") for i in range(count)]
    got = fw.place_run(state, pods, seed=seed, attempt=0, start_index=0)
    for p in pods[: 0 if got is None else got[0].shape[0]]:
        state.remove_pod(p.key)
