"""Cold compile of a pytest selection under two (or more) laid-out trees,
alternated: each run is one pytest process with empty
``TENSORSCHED_CACHE_DIR`` and ``NUMBA_CACHE_DIR`` (fresh temporary
folders), the tree's ``site`` folder first on ``PYTHONPATH`` (a tree laid
out as ``bench/gpu_check.sh`` lays the project out) and its tests run
from its source folder; CPU seconds are the pytest process's user + sys
(``resource.getrusage`` of the child), with the load average at each
start.  One more run per tree afterwards (``--signatures``, its own
empty caches) counts the signatures each compiled fused entry point (the
fused passes, the key tree, the runs, the sort path's keys) took over
the selection: a pytest plugin written to a temporary folder (so that a
tree from before this module has it too) lists ``fn.signatures`` at the
session's end.

python -m tensorsched.bench.compile_cold --tree before=SRC:SITE
        --tree after=SRC:SITE [--rounds 3] [--signatures] [--output FILE] -- TESTS...
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from .harness import machine_info

# The plugin ``--signatures`` runs: every compiled fused entry point's
# signatures (the Numba dispatcher under an ``AnyLayout`` wrapper) at the
# session's end, as JSON {name: [[type, ...], ...]} to $COMPILE_COLD_SIGNATURES.
_PLUGIN = '''
import json, os


def _entry_points():
    from numba.core.registry import CPUDispatcher
    from tensorsched.kernels.fused import _numba as FN, run_sort as RS
    out = {}
    def add(name, obj):
        obj = getattr(obj, "dispatcher", obj)
        if isinstance(obj, CPUDispatcher) and obj.signatures:
            out.setdefault(name, [[str(t) for t in s] for s in obj.signatures])
    for fns in FN._runs.values():
        for f in fns:
            add("run." + f.py_func.__name__, f)
    for f in FN._classes_runs.values():
        add("run.place_run_classes", f)
    for k, v in sorted(vars(FN).items()):
        add("fused." + k, v)
    add("run_sort.run_keys", getattr(RS, "keys_kernel", None) or RS._run_keys)
    return out


def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["COMPILE_COLD_SIGNATURES"], "w") as f:
        json.dump(_entry_points(), f)
'''


def _run(src: str, site: str, tests: list, extra_env: dict | None = None,
         plugin: str | None = None) -> dict:
    """One pytest process over ``tests`` in tree ``src`` with empty caches
    (``plugin``: a module on ``PYTHONPATH`` it loads)."""
    caches = tempfile.mkdtemp(prefix="compile-cold-")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [site] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
        TENSORSCHED_CACHE_DIR=os.path.join(caches, "ts"),
        NUMBA_CACHE_DIR=os.path.join(caches, "numba"), **(extra_env or {}))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    more = ["-p", plugin] if plugin else []
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *more, *tests], cwd=src, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - w0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(caches, ignore_errors=True)
    tail = proc.stdout.strip().splitlines()[-1:] or [""]
    return {"user_cpu_s": round(r1.ru_utime - r0.ru_utime, 3),
            "sys_cpu_s": round(r1.ru_stime - r0.ru_stime, 3), "wall_s": round(wall, 3),
            "load_at_start": load, "rc": proc.returncode, "pytest": tail[0]}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.compile_cold",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", required=True,
                    help="NAME=SRC:SITE (the tree's source folder and its site folder)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--signatures", action="store_true")
    ap.add_argument("--output", default=None)
    ap.add_argument("tests", nargs="+")
    a = ap.parse_args(argv)
    trees = {}
    for spec in a.tree:
        name, _, paths = spec.partition("=")
        src, _, site = paths.partition(":")
        trees[name] = (os.path.abspath(src), os.path.abspath(site))
    runs = []
    for k in range(a.rounds):
        order = list(trees) if k % 2 == 0 else list(reversed(trees))
        for name in order:
            got = {"variant": name, "round": k + 1, **_run(*trees[name], a.tests)}
            print(json.dumps(got), flush=True)
            runs.append(got)
    signatures = {}
    if a.signatures:
        folder = tempfile.mkdtemp(prefix="compile-cold-plugin-")
        with open(os.path.join(folder, "_compile_cold_signatures.py"), "w") as f:
            f.write(_PLUGIN)
        for name, (src, site) in trees.items():
            out = os.path.join(folder, f"{name}.json")
            _run(src, site + os.pathsep + folder, a.tests,
                 {"COMPILE_COLD_SIGNATURES": out}, plugin="_compile_cold_signatures")
            with open(out) as f:
                signatures[name] = {k: len(v) for k, v in json.load(f).items()}
        shutil.rmtree(folder, ignore_errors=True)
    cpu = {name: [r["user_cpu_s"] + r["sys_cpu_s"] for r in runs if r["variant"] == name]
           for name in trees}
    record = {
        "bench": "cold compile of a pytest selection, one process a run, empty "
                 "TENSORSCHED_CACHE_DIR and NUMBA_CACHE_DIR, trees alternated (python -m "
                 "tensorsched.bench.compile_cold)",
        "backend": "numba (CPU)", "machine": machine_info(), "tests": a.tests,
        "median_cpu_s": {k: round(statistics.median(v), 2) for k, v in cpu.items()},
        "signatures": signatures, "runs": runs,
    }
    if a.output:
        with open(a.output, "w") as f:
            json.dump(record, f, indent=1)
    print(json.dumps(record["median_cpu_s"]))
    return 0 if all(r["rc"] == 0 for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
