"""Reading a 100,000-pod dump with strict decoding: CPU seconds of
``load_objects`` + ``parse_objects`` of a JSON ``kind: List``, this tree and
a base tree, alternated in separate processes.

Two dumps of ``--pods`` pods: ``pending`` (``bench.ingest``'s pods of one
ReplicaSet as ``kubectl get pods -o json`` prints them: a kube-api-access
volume of their own, no status but the phase) and ``running`` (the same
pods stored and bound: ``resourceVersion``, managed fields, a node name and
a kubelet's status: conditions, container statuses, pod IPs), each read by
a process of its own (``time.process_time`` of the read, the file written
once by the parent).  JSON, as the reading itself is cheapest there (a YAML
file of the same pods reads about ten times slower: the same added cost
is a smaller share of it).

python -m tensorsched.bench.strict_fields_load --base-commit C [--rounds 3]
        [--pods 100000] [--dir DIR] [--output bench/results/strict-fields-load-before-after.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import tempfile
import time

from tensorsched.bench.harness import git_commit, machine_info, run_child
from tensorsched.bench.ingest import replica_pods
from tensorsched.bench.openb_nominees import base_tree

DUMPS = ("pending", "running")
_T = "2024-05-01T10:00:00Z"


def running(pods: list[dict]) -> list[dict]:
    """``pods`` stored, bound and running, as a dump of a live cluster
    holds them (a node per 100 pods)."""
    out = []
    for i, p in enumerate(pods):
        p = copy.deepcopy(p)
        meta = p["metadata"]
        meta["resourceVersion"] = str(1000 + i)
        meta["generateName"] = "web-7d4b9c-"
        meta["managedFields"] = [
            {"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kube-controller-manager",
             "operation": "Update", "time": _T,
             "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}},
            {"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kubelet",
             "operation": "Update", "subresource": "status", "time": _T,
             "fieldsV1": {"f:status": {"f:conditions": {}}}}]
        p["spec"]["nodeName"] = f"node-{i // 100:05d}"
        ip = f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}"
        p["status"] = {
            "phase": "Running", "qosClass": "Burstable", "startTime": _T,
            "hostIP": "192.168.0.1", "hostIPs": [{"ip": "192.168.0.1"}],
            "podIP": ip, "podIPs": [{"ip": ip}],
            "conditions": [{"type": t, "status": "True", "lastProbeTime": None,
                            "lastTransitionTime": _T}
                           for t in ("PodReadyToStartContainers", "Initialized", "Ready",
                                     "ContainersReady", "PodScheduled")],
            "containerStatuses": [{
                "name": "web", "image": "docker.io/library/nginx:1.25",
                "imageID": "docker.io/library/nginx@sha256:0123", "ready": True,
                "containerID": f"containerd://{i:064x}", "restartCount": 0, "started": True,
                "lastState": {}, "state": {"running": {"startedAt": _T}},
                "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                  "name": p["spec"]["volumes"][0]["name"], "readOnly": True,
                                  "recursiveReadOnly": "Disabled"}]}]}
        out.append(p)
    return out


def _child(path: str) -> None:
    from tensorsched.framework.parsing.manifests import load_objects, parse_objects
    t0 = time.process_time()
    got = parse_objects(load_objects(path))
    cpu = time.process_time() - t0
    print(json.dumps({"cpu_seconds": round(cpu, 4), "pods": len(got.pods)}))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.strict_fields_load",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--base-commit")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pods", type=int, default=100_000)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--output")
    ap.add_argument("--dir", help="keep the base tree and the dumps here (reused when there: "
                                   "the base tree must be --base-commit's)")
    a = ap.parse_args(argv)
    if a.child:
        _child(a.child)
        return
    if not a.base_commit:
        ap.error("--base-commit is required")
    tmp = a.dir or tempfile.mkdtemp(prefix="strict-fields-load-")
    base = os.path.join(tmp, "base")
    if not os.path.isdir(base):
        base_tree(a.base_commit, base)
    files = {d: os.path.join(tmp, f"{d}-{a.pods}.json") for d in DUMPS}
    if not all(os.path.exists(f) for f in files.values()):
        pods = replica_pods(a.pods)
        for dump, objs in (("pending", pods), ("running", running(pods))):
            with open(files[dump], "w") as f:
                json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, f)
        del pods
    runs = {d: {"before": [], "after": []} for d in DUMPS}
    for _ in range(a.rounds):
        for dump in DUMPS:
            for side, tree in (("before", base), ("after", None)):
                runs[dump][side].append(run_child("tensorsched.bench.strict_fields_load",
                                                  ["--child", files[dump]], tree))
    summary = {}
    for d in DUMPS:
        before = min(r["cpu_seconds"] for r in runs[d]["before"])
        after = min(r["cpu_seconds"] for r in runs[d]["after"])
        summary[d] = {"before": before, "after": after,
                      "slower_percent": round(100 * (after / before - 1), 2),
                      "file_bytes": os.path.getsize(files[d])}
    record = {"benchmark": "strict_fields_load", "pods": a.pods, "rounds": a.rounds,
              "what": "CPU seconds of load_objects + parse_objects of a JSON List of the "
                      "pods, one process each (min over rounds)",
              "base_commit": a.base_commit, "commit": git_commit(),
              "machine": machine_info(), "backend": "python (parsing only)",
              "min_cpu_seconds": summary, "runs": runs}
    if a.output:
        with open(a.output, "w") as f:
            f.write(json.dumps(record, indent=2) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
