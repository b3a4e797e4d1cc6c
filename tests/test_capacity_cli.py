from __future__ import annotations

import json

import pytest
import yaml

from tensorsched.cli import main

CLUSTER = "data/examples/cluster.yaml"
POD = """apiVersion: v1
kind: Pod
metadata: {name: cap, namespace: default}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
"""
NODE = """apiVersion: v1
kind: Node
metadata: {name: pool, labels: {topology.kubernetes.io/zone: zone-a}}
status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
"""
DEPLOY = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 12
  template:
    metadata: {labels: {app: web2}}
    spec:
      containers: [{name: c, image: x, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "pod.yaml").write_text(POD)
    (tmp_path / "node.yaml").write_text(NODE)
    (tmp_path / "wl").mkdir()
    (tmp_path / "wl" / "web.yaml").write_text(DEPLOY)
    return tmp_path


def _run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_how_many_and_replicas(files, capsys):
    out_file = files / "r.json"
    rc, out, _ = _run(capsys, "capacity", "--cluster", CLUSTER, "--pod", str(files / "pod.yaml"),
                      "--backend", "numpy", "--output", str(out_file))
    assert rc == 0 and "default/cap" in out and "total" in out
    doc = json.loads(out_file.read_text())
    assert doc["kind"] == "CapacityReport" and doc["spec"]["mode"] == "HowManyFit"
    assert doc["status"]["total"] > 0 and doc["status"]["templates"][0]["stopReason"]
    rc, out, _ = _run(capsys, "capacity", "--cluster", CLUSTER, "--pod", str(files / "pod.yaml"),
                      "--replicas", "2", "--backend", "numpy")
    assert rc == 0 and out.strip().endswith("fits")


def test_nodes_to_add_and_drain(files, capsys):
    out_file = files / "r.yaml"
    rc, out, _ = _run(capsys, "capacity", "--cluster", CLUSTER, "--workloads", str(files / "wl"),
                      "--node-template", str(files / "node.yaml"), "--backend", "numpy",
                      "--output", str(out_file))
    assert rc == 0 and "add " in out
    doc = yaml.safe_load(out_file.read_text())
    assert doc["spec"]["mode"] == "NodesToAdd" and doc["status"]["fits"] is True
    assert len(doc["status"]["placement"]) == 12
    rc, out, _ = _run(capsys, "capacity", "--cluster", CLUSTER, "--drain", "--backend", "numpy")
    assert rc == 0 and "removable together" in out


def test_the_path_the_probes_took_is_said(files, capsys):
    # numba batches the Deployment's probes (no Service or ReplicaSet selects
    # its pods: no default spreading); the example cluster's drain moves a
    # pod with a volume claim, so it takes a Scheduler per probe
    out_files = [files / "a.json", files / "b.json"]
    for backend, out_file in zip(("numba", "numpy"), out_files):
        rc, _, err = _run(capsys, "capacity", "--cluster", CLUSTER, "--workloads",
                          str(files / "wl"), "--node-template", str(files / "node.yaml"),
                          "--backend", backend, "--output", str(out_file))
        assert rc == 0
        assert ("probes batched (cpu)" in err) == (backend == "numba")
    docs = [json.loads(f.read_text()) for f in out_files]
    assert docs[0]["status"] == docs[1]["status"]
    rc, _, err = _run(capsys, "capacity", "--cluster", CLUSTER, "--drain")
    assert rc == 0 and "probes per probe (VolumeBinding" in err


@pytest.mark.parametrize("argv, words", [
    (["--pod", "missing.yaml"], "missing.yaml"),
    (["--pod", "{node}"], "expected exactly one Pod"),
    (["--pod", "{bad}"], "bad.yaml"),
    (["--pod", "{pod}", "--replicas", "-1"], "--replicas"),
    (["--pod", "{pod}", "--replicas", "1", "--replicas", "2"], "one per --pod"),
    ([], "exactly one of"),
    (["--workloads", "{wl}"], "--node-template"),
    (["--workloads", "{wl}", "--node-template", "{pod}"], "expected exactly one Node"),
    (["--drain", "--nodes", "nope"], "Node nope"),
    (["--drain", "--output", "/no/such/dir/r.json"], "does not exist"),
])
def test_bad_input_is_one_line_exit_2(files, capsys, argv, words):
    (files / "bad.yaml").write_text("kind: Pod\nmetadata: {name: x\n")
    subs = {"{node}": str(files / "node.yaml"), "{pod}": str(files / "pod.yaml"),
            "{bad}": str(files / "bad.yaml"), "{wl}": str(files / "wl")}
    argv = [subs.get(a, a) for a in argv]
    with pytest.raises(SystemExit) as exc:
        rc = main(["capacity", "--cluster", CLUSTER, "--backend", "numpy", *argv])
        raise SystemExit(rc)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


def test_replicas_far_beyond_the_room_end_at_once(tmp_path, capsys):
    import time
    out_file = tmp_path / "r.json"
    t0 = time.perf_counter()
    rc, out, _ = _run(capsys, "capacity", "--cluster", "data/examples/cluster.yaml",
                      "--pod", "data/examples/pod.yaml", "--replicas", "10000000",
                      "--backend", "numpy", "--output", str(out_file))
    assert time.perf_counter() - t0 < 10
    assert rc == 0 and out.strip().endswith("does not fit")
    t = json.loads(out_file.read_text())["status"]["templates"][0]
    assert t["replicas"] == 10_000_000 and t["scheduled"] + t["notScheduled"] == 10_000_000
    assert t["scheduled"] > 0 and len(t["unschedulable"]) == 1
    assert "Insufficient cpu" in t["unschedulable"][0]["message"]


def test_template_asks_the_profile_cannot_see_are_warned(tmp_path, capsys):
    tmpl = tmp_path / "gpu.yaml"
    tmpl.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "g", "annotations": {"alibabacloud.com/gpu-milli": "250"}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}))
    rc, _, err = _run(capsys, "capacity", "--cluster", "data/examples/cluster.yaml",
                      "--pod", str(tmpl), "--replicas", "2", "--backend", "numpy")
    assert rc == 0 and "ask for GPUs in annotations" in err and "GpuShareFit" in err
