"""The DRA columns of the simulation time series: devices published,
devices allocated and their share, rising and falling exactly as pods with
device claims arrive and leave."""

from __future__ import annotations

import pytest

import tensorsched as ts
from tensorsched.framework.simulation.dra_series import DRA_COLUMNS

DRIVER = "gpu.example.com"


def _node(name):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}}


def _slice(node, gpus):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}"} for i in range(gpus)]}}


def _pod(name, gpus=1):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"resourceClaims": [{"name": "gpu",
                                         "resourceClaimTemplateName": f"gpus-{gpus}"}],
                     "containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": {"cpu": "1"},
                                                   "claims": [{"name": "gpu"}]}}]}}


def _template(gpus):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": f"gpus-{gpus}", "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": gpus}}]}}}}


def _cluster(slices=True):
    objs = [_node("n1"), _node("n2"),
            {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
             "metadata": {"name": "gpu"},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
            _template(1), _template(2)]
    if slices:
        objs += [_slice("n1", 4), _slice("n2", 2)]
    return objs


def _columns(sim):
    table = sim.timeseries()
    return {c: table.column(c).to_pylist() for c in ("time", *DRA_COLUMNS)}


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_devices_rise_and_fall_as_pods_come_and_go(backend):
    sim = ts.Simulation(_cluster(), backend=backend, interval=10.0)
    # 1 GPU at 5 s for 30 s, 2 GPUs at 15 s for 10 s, 2 GPUs at 25 s for 30 s
    sim.submit([_pod("a")], at=5, duration=30)
    sim.submit([_pod("b", 2)], at=15, duration=10)
    sim.submit([_pod("c", 2)], at=25, duration=30)
    sim.run()
    got = _columns(sim)
    # in use at each row's time: a [5, 35), b [15, 25), c [25, 55); the
    # last row is the run's end, when c leaves
    assert got["time"] == [10.0, 20.0, 30.0, 40.0, 50.0, 55.0]
    want = [1, 3, 3, 2, 2, 0]
    assert got["dra_devices_allocated"] == [float(w) for w in want]
    assert got["dra_devices"] == [6.0] * 6
    assert got["dra_alloc_pct"] == [100.0 * w / 6 for w in want]


def test_no_devices_published_yet_then_a_node_brings_them():
    sim = ts.Simulation(_cluster(slices=False), backend="numpy", interval=10.0)
    sim.submit([_pod("a")], at=0, duration=25)
    sim.add_node(_node("g1"), at=12, slices=[_slice("g1", 3)])
    sim.run()
    got = _columns(sim)
    assert got["time"] == [10.0, 20.0, 30.0, 37.0]
    assert got["dra_devices"] == [0.0, 3.0, 3.0, 3.0]
    # placed at 12 when the devices appear, gone at 37
    assert got["dra_devices_allocated"] == [0.0, 1.0, 1.0, 0.0]
    assert got["dra_alloc_pct"] == [None, 100 / 3, 100 / 3, 0.0]


def test_clusters_without_dra_objects_have_no_dra_columns():
    sim = ts.Simulation([_node("n1")], backend="numpy", interval=10.0)
    assert not set(DRA_COLUMNS) & set(sim.timeseries().column_names)


def test_a_metric_of_the_same_name_is_the_callers():
    sim = ts.Simulation(_cluster(), backend="numpy", interval=10.0,
                        metrics={"dra_devices": lambda cluster: 42.0})
    sim.run(until=20)
    table = sim.timeseries()
    assert table.num_rows >= 2
    assert table.column("dra_devices").to_pylist() == [42.0] * table.num_rows
    assert table.column("dra_devices_allocated").to_pylist() == [0.0] * table.num_rows


def test_simulate_command_writes_the_dra_columns(tmp_path):
    import csv
    import json

    import pyarrow.parquet as pq
    import yaml

    from tensorsched.cli import main

    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(_cluster()))
    trace = tmp_path / "trace.csv"
    with open(trace, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "namespace", "arrival", "duration", "template"])
        for name, at, gpus in (("a", 5, 1), ("b", 15, 2)):
            w.writerow([name, "ml", at, 20, json.dumps(_pod(name, gpus)["spec"])])
    out = tmp_path / "out"
    assert main(["simulate", "--cluster", str(cluster), "--trace", str(trace), "--output",
                 str(out), "--interval", "10", "--backend", "numpy"]) == 0
    ts = pq.read_table(out / "timeseries.parquet")
    # a [5, 25), b [15, 35): rows at 10, 20, 30 and the end (35)
    assert ts.column("time").to_pylist() == [10.0, 20.0, 30.0, 35.0]
    assert ts.column("dra_devices_allocated").to_pylist() == [1.0, 3.0, 2.0, 0.0]
    assert ts.column("dra_devices").to_pylist() == [6.0] * 4


def test_a_deleted_node_takes_its_devices_with_it():
    sim = ts.Simulation(_cluster(slices=False), backend="numpy", interval=10.0)
    sim.add_node(_node("g1"), at=5, slices=[_slice("g1", 3)])
    sim.submit([_pod("a")], at=6, duration=100)
    sim.delete_node("g1", at=25)
    sim.run(until=40)
    got = _columns(sim)
    assert got["time"] == [10.0, 20.0, 30.0, 40.0]
    assert got["dra_devices"] == [3.0, 3.0, 0.0, 0.0]
    assert got["dra_devices_allocated"] == [1.0, 1.0, 0.0, 0.0]
    assert got["dra_alloc_pct"] == [100 / 3, 100 / 3, None, None]


def _columns_all(sim):
    table = sim.timeseries()
    return {c: table.column(c).to_pylist() for c in table.column_names}


def test_columns_appear_when_a_cluster_without_dra_objects_gets_slices():
    """No DRA object when the simulation is made: the device columns start
    once a node joins with slices, the rows before reading no device."""
    sim = ts.Simulation([_node("n1")], backend="numpy", interval=10.0)
    sim.add_node(_node("g1"), at=15, slices=[_slice("g1", 3)])
    sim.run(until=30)
    got = _columns_all(sim)
    assert got["time"] == [10.0, 20.0, 30.0]
    assert got["dra_devices"] == [0.0, 3.0, 3.0]
    assert got["dra_devices_allocated"] == [0.0, 0.0, 0.0]
    assert got["dra_alloc_pct"] == [None, 0.0, 0.0]
    assert all(len(v) == 3 for v in got.values())


def test_scenario_nodes_with_slices_bring_the_columns_after_the_callers():
    sim = ts.Simulation([_node("n1")], backend="numpy", interval=10.0,
                        metrics={"half": lambda cluster: 0.5})
    sim.scenario({"steps": [{"at": 12, "addNodes": {"template": _node("gpu"), "count": 2,
                                                     "slices": [_slice("gpu", 2)]}}]})
    sim.run(until=30)
    table = sim.timeseries()
    assert table.column_names[-4:] == ["half", *DRA_COLUMNS]
    got = _columns_all(sim)
    assert got["time"] == [10.0, 20.0, 30.0]
    assert got["dra_devices"] == [0.0, 4.0, 4.0]
    assert got["dra_devices_allocated"] == [0.0, 0.0, 0.0]
    assert got["dra_alloc_pct"] == [None, 0.0, 0.0]
    assert got["half"] == [0.5] * 3


def test_late_columns_survive_snapshot_and_restore():
    sim = ts.Simulation([_node("n1")], backend="numpy", interval=10.0)
    sim.add_node(_node("g1"), at=15, slices=[_slice("g1", 3)])
    sim.run(until=30)
    again = ts.Simulation.restore(sim.snapshot())
    assert again.timeseries().equals(sim.timeseries())


def test_a_table_read_between_samples_has_the_columns_once_slices_are_there():
    sim = ts.Simulation([_node("n1")], backend="numpy", interval=10.0)
    sim.run(until=10)
    assert not set(DRA_COLUMNS) & set(sim.timeseries().column_names)
    sim.add_node(_node("g1"), at=12, slices=[_slice("g1", 2)])
    sim.run(until=15)
    got = _columns_all(sim)
    assert got["time"] == [10.0]
    assert got["dra_devices"] == [0.0]
    assert got["dra_alloc_pct"] == [None]
