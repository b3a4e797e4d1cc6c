"""Nested-comprehension DRA selectors and the ordinary DRA workloads, this
tree and a base tree, alternated in separate processes.

The selectors (five 10-element list literals nested with ``all``, a
comparison at the bottom; each under the API's cost estimate, 655,551 and
855,569 units, so the API server accepts them and cel-go evaluates them):

- ``const``: ``[1..10].all(a, ... [1..10].all(e, e < 100))``: reads no
  device;
- ``device``: ``[<the device's index attribute>].all(i, [1..10].all(a, ...
  [1..10].all(e, i < e + 100)))``: the innermost comparison reads the
  device.

Cases: ``one`` (each selector on one device: seconds, answer, cost units),
``claim`` (``device`` over ``--nodes`` nodes of 8 devices, indexes 0..7:
one ``CompiledSelector.evaluate`` over all their columns), ``workloads``
(``tensorsched bench --workload dra`` and ``dra-gpu``: CPU seconds of the
timed run, pods per second, placements digest).

python -m tensorsched.bench.dra_cel_before_after --base-commit C
        [--cases one,claim,workloads] [--rounds 3] [--claim-rounds 1]
        [--nodes 500] [--output bench/results/dra-cel-nested-before-after.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from tensorsched.bench.harness import (
    alternated,
    base_tree,
    git_commit,
    machine_info,
    tree_env,
)

DRIVER = "gpu.example.com"
L10 = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"


def nested(inner: str) -> str:
    """Five ``L10.all(v, ...)`` around ``inner`` (variables a..e)."""
    for v in reversed("abcde"):
        inner = f"{L10}.all({v}, {inner})"
    return inner


SELECTORS = {
    "const": nested("e < 100"),
    "device": f'[device.attributes["{DRIVER}"].index].all(i, {nested("i < e + 100")})',
}
#: the ordinary workloads: (workload, nodes, pods)
WORKLOADS = (("dra", 500, 5000), ("dra-gpu", 1000, 2000))


def _columns(nodes: int, per_node: int = 8):
    from tensorsched.framework.parsing.dra import parse_resource_slice
    from tensorsched.framework.state.dra_devices import DeviceColumns

    names = [f"node-{n}" for n in range(nodes)]
    slices = [parse_resource_slice({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": f"s-{n}"},
        "spec": {"driver": DRIVER, "nodeName": name,
                 "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}}}
                             for i in range(per_node)]}})
        for n, name in enumerate(names)]
    return DeviceColumns(slices, names)


def _child(case: str, nodes: int) -> dict:
    """One case in this process's tree (a fresh process: nothing cached)."""
    from tensorsched.framework.state.dra_cel import compile_selector

    out: dict = {}
    if case == "one":
        cols = _columns(1, 1)
        for name, expr in SELECTORS.items():
            sel = compile_selector(expr)
            t0 = time.perf_counter()
            col = sel.evaluate(cols.values)
            out[f"{name}_seconds"] = round(time.perf_counter() - t0, 4)
            out[f"{name}_answer"] = (col.messages[col.error[0]] if col.error[0] >= 0
                                     else bool(col.value[0]))
    elif case == "claim":
        cols = _columns(nodes)
        sel = compile_selector(SELECTORS["device"])
        t0 = time.perf_counter()
        col = sel.evaluate(cols.values)
        out["claim_seconds"] = round(time.perf_counter() - t0, 4)
        out["devices"] = int(cols.values.n)
        out["matched"] = int(col.value.sum())
        out["errors"] = int((col.error >= 0).sum())
    return out


def _run_case(path, case: str, nodes: int) -> dict:
    load = [round(x, 2) for x in os.getloadavg()]
    text = subprocess.run([sys.executable, "-m", "tensorsched.bench.dra_cel_before_after",
                           "--child", case, "--nodes", str(nodes)], env=tree_env(path),
                          check=True, capture_output=True, text=True).stdout
    return {**json.loads(text.strip().splitlines()[-1]), "load": load}


def _run_workloads(path) -> dict:
    got = {}
    for workload, nodes, pods in WORKLOADS:
        load = [round(x, 2) for x in os.getloadavg()]
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            subprocess.run([sys.executable, "-m", "tensorsched.cli", "bench", "--workload",
                            workload, "--nodes", str(nodes), "--pods", str(pods),
                            "--backend", "numba", "--output", f.name], env=tree_env(path),
                           check=True, capture_output=True)
            with open(f.name) as fh:
                rec = json.load(fh)
        got[workload] = {"nodes": nodes, "pods": pods, "load": load,
                         **{k: rec.get(k) for k in ("cpu_seconds", "pods_per_second",
                                                    "scheduled", "placements_sha256")}}
    return got


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.dra_cel_before_after",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--base-commit")
    ap.add_argument("--cases", default="one,claim,workloads")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--claim-rounds", type=int, default=1)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--output")
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(_child(a.child, a.nodes)))
        return 0
    if not a.base_commit:
        ap.error("--base-commit is required")
    base = base_tree(a.base_commit, tempfile.mkdtemp(prefix="dra-cel-base-"))
    trees = [("before", base), ("after", None)]
    cases = a.cases.split(",")
    record = {"base_commit": a.base_commit, "commit": git_commit(), "machine": machine_info(),
              "backend": "numba (the workloads); the selectors run in Python",
              "selectors": SELECTORS, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                 time.gmtime())}
    if "one" in cases:
        record["one_device"] = alternated(trees, a.rounds,
                                          lambda p: _run_case(p, "one", a.nodes))
    if "claim" in cases:
        record["claim"] = {"nodes": a.nodes, "devices_per_node": 8,
                           "runs": alternated(trees, a.claim_rounds,
                                              lambda p: _run_case(p, "claim", a.nodes))}
    if "workloads" in cases:
        _run_workloads(base)                # numba's compile cache filled, both trees
        _run_workloads(None)
        record["workloads"] = alternated(trees, a.rounds, _run_workloads)
    record["load_end"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(record, indent=2, sort_keys=True)
    print(text)
    if a.output:
        with open(a.output, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
