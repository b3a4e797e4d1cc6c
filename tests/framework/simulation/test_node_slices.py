"""Nodes added during a simulation publish ResourceSlices: a scenario's
``addNodes.slices`` (a copy per added node) and ``Simulation.add_node``'s
``slices``; pods whose GPU claims nothing can satisfy wait until then."""

from __future__ import annotations

import pytest
import yaml

import tensorsched as ts
from tensorsched.framework.errors import ArgumentError
from tensorsched.framework.simulation.scenario import ScenarioError, load_scenario
from tensorsched.framework.state.dra_claims import ClaimState

DRIVER = "gpu.example.com"


def _node(name, cpu="8"):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}}}


def _slice(node, gpus=1, name=None):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name or f"{node}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}"} for i in range(gpus)]}}


def _gpu_pod(name):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                     "containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": {"cpu": "1"},
                                                   "claims": [{"name": "gpu"}]}}]}}


def _cluster(pods=3):
    return [
        _node("cpu-1"),
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "one-gpu", "namespace": "ml"},
         "spec": {"spec": {"devices": {"requests": [
             {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}},
        *[_gpu_pod(f"train-{i}") for i in range(pods)],
    ]


def _steps(slices, count=2):
    return {"steps": [{"at": 60, "addNodes": {"template": _node("gpu"), "count": count,
                                               "slices": slices}}]}


def _placed(sim):
    out = {}
    sim.on("Bound", lambda e: out.setdefault(e["pod"], (e["node"], e["time"])))
    return out


def test_pending_gpu_pods_are_placed_when_nodes_with_slices_join():
    sim = ts.Simulation(_cluster(3), backend="numpy")
    placed = _placed(sim)
    sim.scenario(_steps([_slice("gpu", gpus=1)]))
    sim.run()
    # two nodes of one GPU each at t=60: two pods then, the third never
    assert sorted(placed.values()) == [("gpu-0", 60.0), ("gpu-1", 60.0)]
    assert sim.summary()["scheduled"] == 2
    slices = ClaimState.attached(sim.cluster.state).slices
    assert sorted((s.name, s.node_name, s.pool.name) for s in slices) == [
        ("gpu-0-gpus", "gpu-0", "gpu-0"), ("gpu-1-gpus", "gpu-1", "gpu-1")]


def test_without_slices_the_added_nodes_hold_no_devices():
    sim = ts.Simulation(_cluster(1), backend="numpy")
    placed = _placed(sim)
    steps = _steps(None)
    del steps["steps"][0]["addNodes"]["slices"]
    sim.scenario(steps)
    sim.run()
    assert placed == {}


def test_scenario_file_and_snapshot(tmp_path):
    path = tmp_path / "steps.yaml"
    path.write_text(yaml.safe_dump(_steps([_slice("gpu", gpus=2)], count=1)))
    sc = load_scenario(str(path))
    (step,) = sc.steps
    assert [[s["metadata"]["name"] for s in per] for per in step.slices] == [["gpu-0-gpus"]]
    assert step.slices[0][0]["spec"]["nodeName"] == "gpu-0"
    assert step.slices[0][0]["spec"]["pool"]["name"] == "gpu-0"
    sim = ts.Simulation(_cluster(3), backend="numpy")
    sim.scenario(str(path))
    sim.run()
    assert sim.summary()["scheduled"] == 2           # one node of two GPUs
    again = ts.Simulation.restore(sim.snapshot())
    assert again.summary()["scheduled"] == 2


def test_add_node_takes_slices():
    sim = ts.Simulation(_cluster(1), backend="numpy")
    placed = _placed(sim)
    sim.add_node(_node("g7"), at=30, slices=[_slice("g7")])
    sim.run()
    assert placed == {"ml/train-0": ("g7", 30.0)}


@pytest.mark.parametrize("slices, field, problem", [
    ("x", "steps[0].addNodes.slices", "must be a list of ResourceSlice manifests"),
    ([{"kind": "Node"}], "steps[0].addNodes.slices[0].kind", "must be ResourceSlice"),
    ([dict(_slice("gpu"), apiVersion="resource.k8s.io/v1beta1")],
     "steps[0].addNodes.slices[0].apiVersion", "must be resource.k8s.io/v1"),
    ([_slice("other")], "steps[0].addNodes.slices[0].spec.nodeName",
     "must be the template node's name 'gpu'"),
    ([_slice("gpu"), _slice("gpu")], "steps[0].addNodes.slices[1].metadata.name",
     "given twice"),
])
def test_bad_slices_name_file_step_and_field(tmp_path, slices, field, problem):
    path = tmp_path / "steps.yaml"
    path.write_text(yaml.safe_dump(_steps(slices)))
    with pytest.raises(ScenarioError) as exc:
        load_scenario(str(path))
    assert exc.value.source == str(path) and exc.value.field == field
    assert problem in exc.value.problem


def test_a_malformed_slice_names_its_field(tmp_path):
    bad = _slice("gpu")
    bad["spec"]["pool"]["generation"] = "one"
    path = tmp_path / "steps.yaml"
    path.write_text(yaml.safe_dump(_steps([bad])))
    with pytest.raises(ScenarioError) as exc:
        load_scenario(str(path))
    assert str(exc.value).startswith(f"{path}: steps[0].addNodes.slices[0]: ResourceSlice "
                                     "gpu-gpus: spec.pool.generation")


def test_add_node_refuses_bad_slices_and_changes_nothing():
    sim = ts.Simulation(_cluster(1), backend="numpy")
    for slices, field in (([_slice("elsewhere")], "slices[0].spec.nodeName"),
                          ({"kind": "ResourceSlice"}, "slices"),
                          ([{"kind": "Pod"}], "slices[0].kind")):
        with pytest.raises(ArgumentError, match=field.replace("[", r"\[").replace("]", r"\]")):
            sim.add_node(_node("g7"), at=30, slices=slices)
    assert len(sim.agenda) == 0 or all(k != "add_node" for _t, k, _p in sim.agenda)


def test_a_removed_node_takes_its_slices_and_may_join_again():
    sim = ts.Simulation(_cluster(2), backend="numpy")
    placed = _placed(sim)
    sim.add_node(_node("g7"), at=10, slices=[_slice("g7")])
    sim.delete_node("g7", at=20)              # train-0 deleted with it
    sim.add_node(_node("g7"), at=30, slices=[_slice("g7")])
    sim.run()
    assert placed == {"ml/train-0": ("g7", 10.0), "ml/train-1": ("g7", 30.0)}
    assert [s.name for s in ClaimState.attached(sim.cluster.state).slices] == ["g7-gpus"]
