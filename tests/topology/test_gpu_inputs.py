"""topology/gpu_inputs.py: what the GPU table reads of node and pod
records: a node's GPU count, model, memory and topology; a pod's ask and
fixed indices; malformed fields are ManifestErrors naming the object and
the field, and a 63rd model is refused."""

from __future__ import annotations

import pytest

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import parse_node, parse_pod
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.topology.gpu_inputs import MAX_MODELS, node_inputs, pod_gpu
from tensorsched.generators.gpu_clusters import GPU_PRODUCT, gpu_node


def test_node_inputs_of_a_gpu_node_and_a_cpu_node():
    count, model, mem, topo = node_inputs(parse_node(gpu_node("a")), [], {})
    assert (count, model) == (8, GPU_PRODUCT) and mem >= 0
    assert topo is not None                     # the DGX annotation
    assert node_inputs(parse_node(node_dict("c")), [], {})[:2] == (0, "")


def test_a_new_model_past_the_limit_is_refused():
    models = [f"m{i}" for i in range(MAX_MODELS)]
    with pytest.raises(ManifestError, match="at most 62 GPU models") as e:
        node_inputs(parse_node(gpu_node("a")), models, {})
    assert "Node a" in str(e.value) and "nvidia.com/gpu.product" in str(e.value)
    assert node_inputs(parse_node(gpu_node("a")), models + [GPU_PRODUCT], {})[1] == GPU_PRODUCT


def test_pod_gpu_reads_the_share_ask_and_fixed_indices():
    p = pod_dict("s", cpu="2", memory="1Gi")
    p["metadata"]["annotations"] = {"alibabacloud.com/gpu-milli": "250",
                                    "alibabacloud.com/gpu-index": "3"}
    info = pod_gpu(parse_pod(p))
    assert (info.ask.num, info.ask.milli, info.fixed) == (1, 250, (3,))
    assert info.has_gpu and info.cpu == 2000
    assert not pod_gpu(parse_pod(pod_dict("cpu-only"))).has_gpu


def test_a_malformed_pod_annotation_names_the_pod():
    p = pod_dict("bad")
    p["metadata"]["annotations"] = {"alibabacloud.com/gpu-index": "x"}
    with pytest.raises(ManifestError, match="default/bad"):
        pod_gpu(parse_pod(p))
