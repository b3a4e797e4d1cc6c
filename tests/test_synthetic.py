"""synthetic: seeded workloads and configs by name, arguments checked."""

from __future__ import annotations

import pytest

from tensorsched import synthetic
from tensorsched.framework.errors import ArgumentError


@pytest.mark.parametrize("name", ["basic", "spread", "preemption", "volumes", "dra"])
def test_workload_is_seeded_and_sized(name):
    nodes, pods = synthetic.workload(name, 4, 6, seed=3)
    # the first list is the cluster: its nodes plus any cluster-scoped objects
    # the workload needs (StorageClasses, ResourceSlices, ...)
    assert sum(1 for n in nodes if n["kind"] == "Node") == 4
    assert sum(1 for p in pods if p.get("kind") == "Pod") >= 1
    assert synthetic.workload(name, 4, 6, seed=3) == (nodes, pods)


def test_unknown_name_lists_the_choices():
    with pytest.raises(ArgumentError, match=r"synthetic.workload: name: .*'nope'.*basic"):
        synthetic.workload("nope", 1, 1)
    with pytest.raises(ArgumentError, match=r"synthetic.config: name"):
        synthetic.config("nope")


@pytest.mark.parametrize("field,args", [("n_nodes", (0, 1)), ("n_pods", (1, -1))])
def test_sizes_are_range_checked(field, args):
    with pytest.raises(ArgumentError, match=f"synthetic.workload: {field}:"):
        synthetic.workload("basic", *args)


def test_config_carries_the_percentage_and_gpu_adds_profiles():
    cfg = synthetic.config("basic", 40)
    assert cfg["kind"] == "KubeSchedulerConfiguration"
    assert cfg["percentageOfNodesToScore"] == 40
    assert "profiles" not in cfg
    gpu = synthetic.config("gpu", 50)
    assert gpu["percentageOfNodesToScore"] == 50 and gpu["profiles"]
    with pytest.raises(ArgumentError, match="synthetic.config: percentage:"):
        synthetic.config("basic", 101)


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such"):
        synthetic.no_such  # noqa: B018
    assert callable(synthetic.node_dict)
