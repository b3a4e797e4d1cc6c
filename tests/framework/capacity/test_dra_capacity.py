"""Capacity questions on a DRA cluster: how many more GPU pods fit, and how
many nodes of a template (with its ResourceSlice) to add."""

from __future__ import annotations

import pytest

from tensorsched.framework.capacity.fit import how_many_fit
from tensorsched.framework.capacity.node_search import nodes_to_add
from tensorsched.framework.errors import ManifestError
from tensorsched.generators import dra_clusters as DC
from tensorsched.framework.scheduler.cluster import build_cluster


def _cluster(nodes: int):
    objs, _ = DC.dra(nodes, 0)
    return build_cluster(objs)


def test_how_many_gpu_pods_fit():
    report = how_many_fit(_cluster(2), [DC.claim_pod("t", "one-gpu")], backend="numpy")
    fit = report.templates[0]
    assert fit.count == 16 and fit.per_node == {"node-0": 8, "node-1": 8}
    assert "cannot allocate all claims" in fit.stop_reason


def test_nodes_to_add_need_the_template_slice():
    cluster = _cluster(1)
    pods = [DC.claim_pod(f"w-{i}", "one-gpu") for i in range(12)]
    node = DC._nodes(1)[0]
    node["metadata"]["name"] = "gpu-template"
    with_slice = nodes_to_add(cluster, pods, [node], backend="numpy", max_nodes=2,
                              template_slices=[[DC.node_slice("gpu-template")]])
    best = with_slice.results[0]
    assert best.nodes_to_add == 1               # 8 + 8 GPUs for 12 pods
    assert set(best.placement.values()) == {"node-0", *best.added_nodes}
    bare = nodes_to_add(cluster, pods, [node], backend="numpy", max_nodes=2)
    assert bare.results[0].nodes_to_add is None  # added nodes without devices never help


def test_a_template_slice_of_another_node_is_refused():
    node = DC._nodes(1)[0]
    with pytest.raises(ManifestError, match="must be local to node 'node-0'"):
        nodes_to_add(_cluster(1), [DC.claim_pod("w", "one-gpu")], [node], backend="numpy",
                     template_slices=[[DC.node_slice("elsewhere")]])
