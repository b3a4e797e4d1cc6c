"""Reading DRA clusters with the API server's checks: CPU seconds of
``parse_objects`` over 5,000 ResourceSlices, this tree and a base tree,
alternated in separate processes.

Two clusters of ``--slices`` node-local slices: ``gpu`` (the ``dra-gpu``
generator's slice per node: 6 GPUs and 2 GPUs as 7 MIG devices each, the
same few device shapes on every node) and ``unique`` (8 GPUs each carrying a
``uuid`` attribute of its own, as NVIDIA's driver publishes them: every
device a shape of its own, so every device is checked).  Objects are built
in memory in each process (no YAML reading: the part that changed is the
parsing); each process times one ``parse_objects`` (``time.process_time``).
On a loaded machine the processes' times scatter, so the record also
has, in one process of this tree, the parser alone (``parse_resource_slice``)
and with the checks (``load_resource_slice``) over the same slices,
alternated ``--rounds`` times with the memos emptied before each: the
checks' own cost, measured side by side.

python -m tensorsched.bench.dra_validation_load --base-commit C [--rounds 3]
        [--slices 5000] [--output bench/results/dra-validation-load-before-after.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from tensorsched.bench.harness import alternated, base_tree, git_commit, machine_info, run_child
from tensorsched.framework.parsing import dra
from tensorsched.framework.parsing.manifests import parse_objects
from tensorsched.generators.dra_clusters import node_slice

CLUSTERS = ("gpu", "unique")


def _objects(cluster: str, slices: int) -> list[dict]:
    out = []
    for n in range(slices):
        s = node_slice(f"node-{n}", mig_gpus=2 if cluster == "gpu" else 0)
        if cluster == "unique":
            for i, d in enumerate(s["spec"]["devices"]):
                d["attributes"]["uuid"] = {"string": f"GPU-{n:08x}-{i:04x}-4d2c-9c1e-5b7f3a2e"}
        out.append(s)
    return out


def _child(cluster: str, slices: int) -> None:
    objs = _objects(cluster, slices)
    t0 = time.process_time()
    got = parse_objects(objs)
    cpu = time.process_time() - t0
    devices = sum(len(s.devices) for s in got.resource_slices)
    print(json.dumps({"cpu_seconds": round(cpu, 4), "devices": devices}))


def _side_by_side(cluster: str, slices: int, rounds: int) -> dict:
    """CPU seconds of the parser alone and with the checks, alternated in
    this process, the memos emptied before each pass."""
    objs = _objects(cluster, slices)
    out = {"parse": [], "parse_and_check": []}
    for _ in range(rounds):
        for side, fn in (("parse", dra.parse_resource_slice),
                         ("parse_and_check", dra.load_resource_slice)):
            dra.clear_parse_memos()
            t0 = time.process_time()
            for o in objs:
                fn(o)
            out[side].append(round(time.process_time() - t0, 4))
    return out


def _run(path: str | None, cluster: str, slices: int) -> dict:
    return run_child("tensorsched.bench.dra_validation_load",
                     ["--child", cluster, "--slices", slices], path)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.dra_validation_load",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--base-commit")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--slices", type=int, default=5000)
    ap.add_argument("--child", choices=CLUSTERS, help=argparse.SUPPRESS)
    ap.add_argument("--output")
    a = ap.parse_args(argv)
    if a.child:
        _child(a.child, a.slices)
        return
    if not a.base_commit:
        ap.error("--base-commit is required")
    base = base_tree(a.base_commit, tempfile.mkdtemp(prefix="dra-validation-base-"))
    runs = {c: alternated([("before", base), ("after", None)], a.rounds,
                          lambda path, c=c: _run(path, c, a.slices)) for c in CLUSTERS}
    summary = {c: {side: min(r["cpu_seconds"] for r in runs[c][side])
                   for side in ("before", "after")} for c in CLUSTERS}
    side_by_side = {c: _side_by_side(c, a.slices, a.rounds) for c in CLUSTERS}
    for c in CLUSTERS:
        summary[c].update({f"{k}_min": min(v) for k, v in side_by_side[c].items()})
    record = {"benchmark": "dra_validation_load", "slices": a.slices, "rounds": a.rounds,
              "what": "CPU seconds of one parse_objects over the slices (min over rounds)",
              "base_commit": a.base_commit, "commit": git_commit(),
              "machine": machine_info(), "backend": "python (parsing only)",
              "min_cpu_seconds": summary, "runs": runs,
              "same_process_cpu_seconds": side_by_side}
    text = json.dumps(record, indent=2)
    if a.output:
        with open(a.output, "w") as f:
            f.write(text + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
