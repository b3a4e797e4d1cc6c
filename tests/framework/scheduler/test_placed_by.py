"""``Scheduler.metrics()``'s ``placed_by`` / ``runs_by``: the pods each
placement path placed (``metrics.PLACEMENT_PATHS``), counted where their
attempts count ``scheduled``: runs of alike pods on numba by the sort path
(``sort``) or, with it off, the compiled run (``compiled_run``); with
batching off only ``cycle``; on cuda (simulator) ``sort`` or the device run
kernel (``device_run``); GPU pods through the queue as ``gpu_block``,
arrivals as ``arrival_block``.  The totals are the bound pods, and the
placements do not depend on the path."""

from __future__ import annotations

import importlib
import json
import math
from unittest.mock import patch

import pytest
import yaml
from support.backends import needs_cuda
from support.openb import openb_slice

from tensorsched import synthetic
from tensorsched.bench import workloads as W
from tensorsched.cli import main
from tensorsched.framework.scheduler.cluster import build_cluster, pod_columns_from
from tensorsched.framework.scheduler.metrics import PLACEMENT_PATHS, placed_by_line
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.framework.simulation import simulation as SM
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels.fused import run_sort
from tensorsched.kernels.fused.backends import CudaBackend, NumbaBackend
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb.trace import (
    experiment_registry,
    openb_config,
    openb_node_objects,
    read_openb_trace,
)
from tensorsched.topology.sim_metrics import trace_shapes, typical_shapes

CFG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
       "percentageOfNodesToScore": 100}
PREFER = [{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]


def _nodes(n=6):
    return [node_dict(f"n{i}", cpu=str(2 + i % 3), memory="4Gi", pods=str(3 + i % 4),
                      taints=PREFER if i % 4 == 0 else None) for i in range(n)]


def _pods(count, cpu="250m", prefix="p"):
    return [pod_dict(f"{prefix}{k}", cpu=cpu, memory="100Mi", created=k) for k in range(count)]


def _play(backend, batch, pods, nodes=None):
    sched = Scheduler(build_cluster(nodes or _nodes(), CFG), backend, 5, batch=batch)
    out = sched.schedule_pending(pods)[0]
    placed = [(b.pod, b.node) for b in out]
    m = sched.metrics()
    bound = sum(1 for b in out if b.node is not None)
    assert set(m["placed_by"]) == set(m["runs_by"]) == set(PLACEMENT_PATHS)
    assert sum(m["placed_by"].values()) == bound == m["attempts"].get("scheduled", 0)
    for path, pods_placed in m["placed_by"].items():
        assert (m["runs_by"][path] > 0) == (pods_placed > 0) and m["runs_by"][path] <= pods_placed
    return placed, {k: v for k, v in m["placed_by"].items() if v}, m["runs_by"]


def test_runs_report_the_sort_path_or_the_compiled_run_and_no_batch_only_cycles(monkeypatch):
    """27 alike pods, more than the 25 pod slots of the 6 nodes (a run
    stops before the first that fits nowhere, which takes its own cycle),
    then a pod of its own."""
    monkeypatch.setattr(run_sort, "ENABLED", True)
    monkeypatch.setattr(run_sort, "CPU_MIN_SHARE", 0.0)
    pods = _pods(27) + [pod_dict("solo", cpu="3", memory="100Mi", created=99)]
    sort, by_sort, runs = _play("numba", True, pods)
    assert by_sort["sort"] > 1 and set(by_sort) <= {"sort", "cycle"}
    assert runs["sort"] >= 1
    monkeypatch.setattr(run_sort, "ENABLED", False)
    compiled, by_run, _ = _play("numba", True, pods)
    assert by_run["compiled_run"] == by_sort["sort"] and "sort" not in by_run
    one, by_cycle, runs = _play("numba", False, pods)
    assert set(by_cycle) == {"cycle"} and runs["cycle"] == by_cycle["cycle"]
    assert sort == compiled == one
    assert sum(by_cycle.values()) == sum(by_sort.values()) == sum(by_run.values())


def test_the_switch_env_var_leaves_runs_to_the_compiled_run(monkeypatch):
    """``TENSORSCHED_SORT_RUNS=0`` as the module reads it at import."""
    monkeypatch.setenv("TENSORSCHED_SORT_RUNS", "0")
    assert importlib.reload(run_sort).ENABLED is False
    try:
        _, by, _ = _play("numba", True, _pods(12))
        assert set(by) == {"compiled_run"}
    finally:
        monkeypatch.delenv("TENSORSCHED_SORT_RUNS")
        importlib.reload(run_sort)


def test_backends_name_their_run_paths():
    assert NumbaBackend.run_path == "compiled_run" and CudaBackend.run_path == "device_run"
    assert placed_by_line({"sort": 398, "cycle": 2, "device_run": 0}, {"sort": 2, "cycle": 2}) \
        == "placed by cycle 2, sort 398 (2 runs)"
    assert placed_by_line({}, {}) == "placed by none"


@pytest.mark.cudasim
@needs_cuda
@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_cuda_reports_the_sort_path_or_the_device_run(monkeypatch):
    monkeypatch.setattr(run_sort, "ENABLED", True)
    pods = _pods(14)
    nodes = _nodes(4)
    sort, by_sort, _ = _play("cuda", True, pods, nodes)
    assert by_sort.get("sort", 0) > 1 and set(by_sort) <= {"sort", "cycle"}
    monkeypatch.setattr(run_sort, "ENABLED", False)
    device, by_device, _ = _play("cuda", True, pods, nodes)
    assert by_device["device_run"] == by_sort["sort"] and "sort" not in by_device
    one, by_cycle, _ = _play("numba", False, pods, nodes)
    assert set(by_cycle) == {"cycle"}
    assert sort == device == one


def test_gpu_pods_through_the_queue_report_gpu_blocks():
    def play(batch):
        node_objs, pod_objs = synthetic.workload("gpu", 20, 120, 0)
        cluster = build_cluster(node_objs, synthetic.config("gpu", 100))
        sched = Scheduler(cluster, "numba", 0, batch=batch)
        out = sched.schedule_pending(pod_columns_from(pod_objs, cluster.resolve))[0]
        bound = sum(1 for b in out if b.node is not None)
        m = sched.metrics()
        assert sum(m["placed_by"].values()) == bound
        return [(b.pod, b.node) for b in out], {k: v for k, v in m["placed_by"].items() if v}

    blocks, by_block = play(True)
    one, by_cycle = play(False)
    assert blocks == one
    assert by_block["gpu_block"] > 50 and set(by_block) <= {"gpu_block", "cycle"}
    assert set(by_cycle) == {"cycle"}


def test_arrivals_report_arrival_blocks(tmp_path):
    nodes_csv, pods_csv = openb_slice(tmp_path, "gpushare40", 6, 150, leave_every=10**9)
    tr = read_openb_trace(pods_csv)
    inv = R.read_openb_nodes(nodes_csv)
    cfg = openb_config("FGD", typical_shapes(trace_shapes(tr)), inv.n_nodes + 1)

    def run(batch):
        sim = Simulation(openb_node_objects(inv), cfg, "numba", 3, interval=None,
                         registry=experiment_registry(), batch=batch,
                         pod_max_in_unschedulable_seconds=math.inf)
        sim.submit(tr)
        sim.run()
        sched = sim.scheduler
        assert sum(sched.placed_by.values()) == sched.results.get("scheduled", 0) > 0
        return {k: v for k, v in sched.placed_by.items() if v}

    with patch.object(SM, "MIN_BLOCK", 1):
        by_block = run(True)
    by_cycle = run(False)
    assert by_block["arrival_block"] > 10
    assert set(by_block) <= {"arrival_block", "gpu_block", "cycle"}
    assert set(by_cycle) == {"cycle"}
    assert sum(by_block.values()) == sum(by_cycle.values())


def test_schedule_writes_placed_by_and_names_the_paths(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(run_sort, "ENABLED", True)
    monkeypatch.setattr(run_sort, "CPU_MIN_SHARE", 0.0)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(_nodes()))
    pods = tmp_path / "pods.yaml"
    pods.write_text(yaml.safe_dump_all(_pods(10)))
    out = tmp_path / "out.json"
    for batch, want in ((True, "sort"), (False, "cycle")):
        args = ["schedule", "--cluster", str(cluster), "--pods", str(pods), "--backend",
                "numba", "--output", str(out)] + ([] if batch else ["--no-batch"])
        assert main(args) == 0
        rec = json.loads(out.read_text())
        assert rec["placed_by"][want] == rec["summary"]["scheduled"] == 10
        assert sum(rec["placed_by"].values()) == 10 and rec["runs_by"][want] >= 1
        err = capsys.readouterr().err
        lines = err.splitlines()
        at = next(i for i, line in enumerate(lines) if "backend numba" in line)
        assert lines[at + 1].startswith(f"placed by {want} 10")


def test_bench_records_carry_placed_by(monkeypatch):
    monkeypatch.setattr(W, "_state_bytes_per_pod", lambda: 0.0)   # not what is tested here
    for batch in (True, False):
        rec = W.run_workload("basic", 6, 40, "numba", batch=batch)
        by = {k: v for k, v in rec["placed_by"].items() if v}
        assert sum(by.values()) == rec["scheduled"] > 0
        assert set(rec["runs_by"]) == set(PLACEMENT_PATHS)
        if batch:
            assert by.keys() & {"sort", "compiled_run"}
        else:
            assert set(by) == {"cycle"}
