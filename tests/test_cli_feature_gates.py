"""``--feature-gates`` (kube-scheduler's flag) and the facade's
``feature_gates``: the DRA gates reach the DynamicResources plugin on every
path that builds a Scheduler (schedule, explain, capacity, simulate, sweep's
per-job runs), and bad gates are refused naming the flag or argument."""

from __future__ import annotations

import json
import textwrap

import pyarrow.parquet as pq
import yaml
import pytest

import tensorsched as ts
from tensorsched.cli import main
from tensorsched.framework.errors import ArgumentError

# One node whose only GPU carries a NoExecute taint, and a pod claiming one
# GPU: placed with DRADeviceTaints off (the taint is not read), refused on.
CLUSTER = textwrap.dedent("""\
    apiVersion: v1
    kind: Node
    metadata: {name: g1, labels: {kubernetes.io/hostname: g1}}
    status: {allocatable: {cpu: '8', memory: 32Gi, pods: '110'}}
    ---
    apiVersion: resource.k8s.io/v1
    kind: DeviceClass
    metadata: {name: gpu}
    spec:
      selectors:
      - cel: {expression: 'device.driver == "gpu.example.com"'}
    ---
    apiVersion: resource.k8s.io/v1
    kind: ResourceSlice
    metadata: {name: g1-gpus}
    spec:
      driver: gpu.example.com
      nodeName: g1
      pool: {name: g1, generation: 1, resourceSliceCount: 1}
      devices:
      - name: gpu-0
        taints:
        - {key: example.com/broken, value: "true", effect: NoExecute}
    ---
    apiVersion: resource.k8s.io/v1
    kind: ResourceClaimTemplate
    metadata: {name: one-gpu, namespace: ml}
    spec:
      spec:
        devices:
          requests:
          - name: gpu
            exactly: {deviceClassName: gpu}
    """)
POD = textwrap.dedent("""\
    apiVersion: v1
    kind: Pod
    metadata: {name: p, namespace: ml}
    spec:
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
      containers:
      - name: c
        image: x
        resources:
          requests: {cpu: '1'}
          claims: [{name: gpu}]
    """)
ON = ["--feature-gates", "DRADeviceTaints=true"]
REFUSED = "cannot allocate all claims"


@pytest.fixture
def files(tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER + "---\n" + POD)
    nodes_only = tmp_path / "nodes.yaml"
    nodes_only.write_text(CLUSTER)
    pod = tmp_path / "pod.yaml"
    pod.write_text(POD)
    return tmp_path, str(cluster), str(nodes_only), str(pod)


@pytest.mark.parametrize("gates", [[], ON])
def test_schedule_reads_the_gate(files, gates, capsys):
    _, cluster, _, _ = files
    assert main(["schedule", "--cluster", cluster, *gates]) == 0
    out = capsys.readouterr().out
    if gates:
        assert "ml/p" in out and REFUSED in out and "-> g1" not in out
    else:
        assert "-> g1" in out


@pytest.mark.parametrize("gates", [[], ON])
def test_explain_reads_the_gate(files, gates, capsys):
    _, _, nodes_only, pod = files
    assert main(["explain", "--cluster", nodes_only, "--pod", pod, *gates]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["selected"] == (None if gates else "g1")


@pytest.mark.parametrize("gates", [[], ON])
def test_capacity_reads_the_gate(files, gates):
    tmp, _, nodes_only, pod = files
    out = tmp / "report.json"
    assert main(["capacity", "--cluster", nodes_only, "--pod", pod, "--backend", "numpy",
                 "--output", str(out), *gates]) == 0
    report = json.loads(out.read_text())
    assert report["status"]["total"] == (0 if gates else 1)


@pytest.mark.parametrize("gates", [[], ON])
def test_simulate_reads_the_gate(files, gates):
    tmp, cluster, _, _ = files
    scenario = tmp / "steps.yaml"
    scenario.write_text("steps: []\n")
    out = tmp / "sim"
    assert main(["simulate", "--cluster", cluster, "--scenario", str(scenario),
                 "--backend", "numpy", "--output", str(out), *gates]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["scheduled"] == (0 if gates else 1)
    assert summary["inputs"]["feature_gates"] == ({"DRADeviceTaints": True} if gates else None)


@pytest.mark.parametrize("gates", [[], ON])
def test_sweep_runs_read_the_gate(files, gates):
    tmp, cluster, _, _ = files
    trace = tmp / "t.csv"
    trace.write_text("name,arrival,duration,cpu,memory\nweb,5,10,1,1Gi\n")
    out = tmp / "r.parquet"
    assert main(["sweep", "--cluster", cluster, "--trace", str(trace), "--workers", "1",
                 "--output", str(out), *gates]) == 0
    row = pq.read_table(out).to_pylist()[0]
    assert row["scheduled"] == (1 if gates else 2)      # the trace's pod places either way


@pytest.mark.parametrize("command", [
    ["schedule"], ["explain", "--cluster", "c", "--pod", "p"],
    ["capacity", "--cluster", "c", "--pod", "p"],
    ["simulate", "--cluster", "c", "--scenario", "s", "--output", "o"],
    ["sweep", "--cluster", "c", "--trace", "t", "--output", "o.parquet"],
])
@pytest.mark.parametrize("value, problem", [
    ("NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
    ("DRADeviceTaints=yes", "DRADeviceTaints=yes: the value must be true or false"),
    ("DRADeviceTaints", "missing bool value for 'DRADeviceTaints'"),
    ("DRADeviceTaints=true,DRADeviceTaints=false", "feature gate DRADeviceTaints is given twice"),
])
def test_bad_gates_are_one_line_naming_the_flag(command, value, problem, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command[0], "--feature-gates", value, *command[1:]])   # before the paths
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "argument --feature-gates:" in err and problem in err


def test_gate_values_as_kube_scheduler_reads_them():
    from tensorsched.cli_args import feature_gates
    assert feature_gates("DRADeviceTaints=True, DRAAdminAccess=0,") == {
        "DRADeviceTaints": True, "DRAAdminAccess": False}


def _objects(files):
    _, cluster, _, _ = files
    return ts.load_manifests(cluster)


def test_facade_takes_feature_gates(files):
    objects = _objects(files)
    pod = next(o for o in objects if o["kind"] == "Pod")
    rest = [o for o in objects if o["kind"] != "Pod"]
    assert ts.explain(rest, pod)["selected"] == "g1"
    assert ts.explain(rest, pod, feature_gates={"DRADeviceTaints": True})["selected"] is None
    cluster = ts.build_cluster(objects, feature_gates={"DRADeviceTaints": True})
    outcomes, _ = ts.Scheduler(cluster).schedule_pending(cluster.pending)
    assert [o.node for o in outcomes] == [None]
    sim = ts.Simulation(objects, backend="numpy", feature_gates={"DRADeviceTaints": True})
    sim.run()
    assert sim.summary()["scheduled"] == 0
    again = ts.Simulation.restore(sim.snapshot())       # the gates travel in the snapshot
    assert again.summary()["scheduled"] == 0


@pytest.mark.parametrize("gates, problem", [
    ({"NoSuchGate": True}, "feature_gates: unknown feature gate 'NoSuchGate'"),
    ({"DRADeviceTaints": "yes"}, "feature_gates['DRADeviceTaints']: must be True or False"),
    (["DRADeviceTaints"], "feature_gates: must be a mapping"),
])
def test_facade_refuses_bad_gates(files, gates, problem):
    objects = _objects(files)
    for call in (lambda: ts.build_cluster(objects, feature_gates=gates),
                 lambda: ts.Simulation(objects, feature_gates=gates),
                 lambda: ts.explain(objects, objects[-1], feature_gates=gates)):
        with pytest.raises(ArgumentError, match=problem.replace("[", r"\[").replace("]", r"\]")):
            call()


def test_a_loaded_config_carries_its_own_gates(files):
    cfg = ts.load_config(None, feature_gates={"DRADeviceTaints": True})
    objects = _objects(files)
    cluster = ts.build_cluster(objects, cfg)
    assert [o.node for o in ts.Scheduler(cluster).schedule_pending(cluster.pending)[0]] == [None]
    with pytest.raises(ArgumentError, match="a loaded SchedulerConfig has its own"):
        ts.build_cluster(objects, cfg, feature_gates={"DRADeviceTaints": False})


def test_compiled_runs_and_cycles_read_the_gate_alike():
    """24 alike GPU pods on two nodes of 16 GPUs, every other one tainted
    NoExecute: 24 placed with the gate off, 16 with it on, by compiled runs
    (numba) as by one cycle per pod (numpy, no batch), on the same devices."""
    import copy

    objects = [o for o in yaml.safe_load_all(CLUSTER)
               if o["kind"] in ("DeviceClass", "ResourceClaimTemplate")]
    pod = yaml.safe_load(POD)
    for i in range(24):
        p = copy.deepcopy(pod)
        p["metadata"]["name"] = f"p{i}"
        objects.append(p)
    for n in ("g1", "g2"):
        objects.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n},
                        "status": {"allocatable": {"cpu": "64", "memory": "64Gi",
                                                   "pods": "110"}}})
        objects.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                        "metadata": {"name": f"{n}-gpus"},
                        "spec": {"driver": "gpu.example.com", "nodeName": n,
                                 "pool": {"name": n, "generation": 1, "resourceSliceCount": 1},
                                 "devices": [{"name": f"gpu-{i}", **({"taints": [
                                     {"key": "k", "value": "v", "effect": "NoExecute"}]}
                                     if i % 2 else {})} for i in range(16)]}})
    for gates, placed in ((None, 24), ({"DRADeviceTaints": True}, 16)):
        got = []
        for backend, batch in (("numba", True), ("numpy", False)):
            cluster = ts.build_cluster(copy.deepcopy(objects), feature_gates=gates)
            sched = ts.Scheduler(cluster, backend=backend, batch=batch)
            outcomes, _ = sched.schedule_pending(cluster.pending)
            got.append(([o.node for o in outcomes], dict(sched.placed_by)))
        assert got[0][0] == got[1][0]
        assert sum(n is not None for n in got[0][0]) == placed
        assert got[0][1]["compiled_run"] == placed and got[1][1]["cycle"] == placed


def test_the_experiment_takes_no_gates(tmp_path, capsys):
    """The openb experiment runs no scheduler profile: --feature-gates is
    refused before anything is read (and by make_jobs)."""
    from tensorsched.experiments.sweep import SweepError, make_jobs
    trace, nodes = tmp_path / "pods.csv", tmp_path / "nodes.csv"
    trace.write_text("x\n")
    nodes.write_text("x\n")
    assert main(["sweep", "--experiment", "--nodes", str(nodes), "--trace", str(trace),
                 "--output", str(tmp_path / "r.parquet"), *ON]) == 2
    assert "--feature-gates does not apply" in capsys.readouterr().err
    with pytest.raises(SweepError, match="takes no feature_gates"):
        make_jobs([str(trace)], [1], experiment=True, nodes=str(nodes),
                  feature_gates={"DRADeviceTaints": True})
