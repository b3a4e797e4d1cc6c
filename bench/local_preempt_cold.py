"""Cold compile of the node-local engines with DefaultPreemption (the CPU
twin: ``local_preempt``'s and ``local_preempt_events``' drivers and the
cluster functions under them) under two trees, alternated: each run is
one Python process with empty ``TENSORSCHED_CACHE_DIR`` and
``NUMBA_CACHE_DIR`` that imports ``tensorsched`` from the tree's site
folder (a folder whose ``tensorsched`` links to the tree's source) and
runs one tiny ``ts.simulate_batch`` on a manifest cluster where a pod
preempts, without and with a scenario (each compiles its engine once);
CPU seconds are the child's user + sys (``resource.getrusage``), with the
load average at each start.

python -m tensorsched.bench.local_preempt_cold --tree before=SITE
        --tree after=SITE [--rounds 3] [--output FILE]
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

# the child: a 2-node cluster full of low pods, a high pod preempting
_CHILD = '''
import tempfile, os
import tensorsched as ts
from tensorsched.generators.clusters import node_dict, pod_dict
objs = [node_dict("n0", cpu="2", memory="4Gi"), node_dict("n1", cpu="2", memory="4Gi")]
for k, node in enumerate(["n0", "n1"]):
    p = pod_dict(f"low{k}", cpu="2", memory="256Mi", priority=0)
    p["spec"]["nodeName"] = node
    objs.append(p)
tr = os.path.join(tempfile.mkdtemp(), "t.csv")
open(tr, "w").write("name,arrival,cpu,priority\\nhi,5,2,1000\\n")
(r,) = ts.simulate_batch(objs, [tr], [None], seeds=[0])
assert r.victim.sum() == 1
(r,) = ts.simulate_batch(objs, [tr], [None], seeds=[0],
                         scenario={"steps": [{"at": 9, "cordon": "n1"}]})
assert r.victim.sum() == 1
'''


def _run(site: str) -> dict:
    caches = tempfile.mkdtemp(prefix="local-preempt-cold-")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [site] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
        TENSORSCHED_CACHE_DIR=os.path.join(caches, "ts"),
        NUMBA_CACHE_DIR=os.path.join(caches, "numba"))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                          text=True, cwd=caches)
    wall = time.perf_counter() - w0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(caches, ignore_errors=True)
    return {"user_cpu_s": round(r1.ru_utime - r0.ru_utime, 3),
            "sys_cpu_s": round(r1.ru_stime - r0.ru_stime, 3), "wall_s": round(wall, 3),
            "load_at_start": load, "rc": proc.returncode,
            "stderr_tail": proc.stderr.strip().splitlines()[-1:]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.local_preempt_cold",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", required=True, help="NAME=SITE")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--output", default=None)
    ap.add_argument("--commit", default="", help="the commits compared, for the record")
    a = ap.parse_args(argv)
    trees = dict(spec.partition("=")[::2] for spec in a.tree)
    runs = []
    for k in range(a.rounds):
        for name in (list(trees) if k % 2 == 0 else list(reversed(trees))):
            got = {"variant": name, "round": k + 1, **_run(os.path.abspath(trees[name]))}
            print(json.dumps(got), flush=True)
            runs.append(got)
    cpu = {name: [r["user_cpu_s"] + r["sys_cpu_s"] for r in runs if r["variant"] == name]
           for name in trees}
    record = {"bench": "cold compile of the node-local preemption engines' CPU twin (one "
                       "tiny simulate_batch without and with a scenario, empty caches, trees "
                       "alternated: python -m tensorsched.bench.local_preempt_cold)",
              "backend": "numba (CPU)", "machine": machine_info(), "commits": a.commit,
              "median_cpu_s": {k: round(statistics.median(v), 2) for k, v in cpu.items()},
              "runs": runs}
    if a.output:
        with open(a.output, "w") as f:
            json.dump(record, f, indent=1)
    print(json.dumps(record["median_cpu_s"]))
    return 0 if all(r["rc"] == 0 for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
