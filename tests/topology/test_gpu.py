"""``topology.gpu``: the GPU inventory as columns (from Node objects or the
openb node CSV) and pods' GPU asks, with every malformed field a
ManifestError naming the object and field, or a CsvError naming the file,
line and column.  (More malformed inputs through the CLI are in
test_input_errors.py.)"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.meta import SourcedObject
from tensorsched.topology import gpu as G

MILLI = 1000


def gpu_node(name, count=None, labels=None, annotations=None, status=None):
    alloc = {"cpu": "8", "memory": "16Gi"}
    if count is not None:
        alloc[G.RES_NVIDIA_GPU] = str(count)
    return {"kind": "Node", "metadata": {"name": name, "labels": labels or {},
                                         "annotations": annotations or {}},
            "status": status if status is not None else {"allocatable": alloc}}


def gpu_pod(annotations=None, containers=None, selector=None, name="p"):
    spec = {"containers": containers or [{"name": "c"}]}
    if selector:
        spec["nodeSelector"] = selector
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns",
                                        "annotations": annotations or {}}, "spec": spec}


# ------------------------------------------------------------------ CSV

def test_csv_error_text_and_pickling():
    err = G.CsvError("n.csv", 3, "gpu", "bad")
    assert str(err) == "n.csv:3: gpu: bad"
    assert str(G.CsvError("n.csv", None, "", "empty")) == "n.csv: empty"
    back = pickle.loads(pickle.dumps(err))
    assert (back.path, back.line, back.column, back.problem) == ("n.csv", 3, "gpu", "bad")


def test_csv_int_and_name():
    assert G.csv_int("f", 2, "gpu", " 4 ", 0, 8) == 4
    assert G.csv_int("f", 2, "gpu", "", 0, 8, default=0) == 0
    with pytest.raises(G.CsvError, match=r"f:2: gpu: must be an integer 0..8, got 9"):
        G.csv_int("f", 2, "gpu", "9", 0, 8)
    with pytest.raises(G.CsvError, match="got '1.5'"):
        G.csv_int("f", 2, "gpu", "1.5", 0, 8)
    with pytest.raises(G.CsvError, match="got ''"):
        G.csv_int("f", 2, "gpu", "", 0, 8)
    assert G.csv_name("f", 2, "sn", " n0 ") == "n0"
    with pytest.raises(G.CsvError, match="sn: must not be empty"):
        G.csv_name("f", 2, "sn", "  ")


def write(tmp_path, text, name="nodes.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_read_openb_nodes(tmp_path):
    path = write(tmp_path, "sn,cpu_milli,memory_mib,gpu,model\n"
                           "n0,32000,65536,2,V100M16\nn1,16000,32768,,\nn2,8000,4096,1,T4\n")
    inv = G.read_openb_nodes(path)
    assert inv.names == ["n0", "n1", "n2"] and inv.source == str(path)
    assert inv.models == ["T4", "V100M16"]                 # sorted
    assert inv.model.tolist() == [1, -1, 0] and inv.gpu_count.tolist() == [2, 0, 1]
    assert inv.gpu_left.tolist() == [[MILLI, MILLI], [0, 0], [MILLI, 0]]
    assert inv.gpu_mem[0].tolist() == [G.MODEL_MEMORY_MIB["V100M16"]] * 2
    assert inv.cpu_cap.tolist() == [32000, 16000, 8000] and inv.total_gpus == 3


@pytest.mark.parametrize("text, where", [
    ("", ":1: empty file"),
    ("sn,cpu_milli\n", ":1: memory_mib, gpu: missing columns"),
    ("sn,cpu_milli,memory_mib,gpu\n", ": no nodes"),
    ("sn,cpu_milli,memory_mib,gpu\nn0,1,1,1,extra\n", ":2: 1 more field(s)"),
    ("sn,cpu_milli,memory_mib,gpu\nn0,1,1\n", ":2: gpu: missing"),
    ("sn,cpu_milli,memory_mib,gpu\nn0,1,1,1\nn0,1,1,1\n", ":3: sn: duplicate node 'n0'"),
    ("sn,cpu_milli,memory_mib,gpu\nn0,1,1,17\n", ":2: gpu: must be an integer 0..16"),
])
def test_bad_node_csv_names_file_line_and_column(tmp_path, text, where):
    path = write(tmp_path, text)
    with pytest.raises(G.CsvError) as info:
        G.read_openb_nodes(path)
    assert str(info.value).startswith(str(path) + where)


def test_a_file_that_is_not_utf8(tmp_path):
    path = tmp_path / "n.csv"
    path.write_bytes(b"sn,cpu_milli,memory_mib,gpu\n\xff\xfe,1,1,1\n")
    with pytest.raises(G.CsvError, match="not UTF-8 text"):
        G.read_openb_nodes(path)


# ------------------------------------------------------------- inventory

def test_inventory_model_mask_copy_and_used():
    inv = G.build_inventory(["a", "b"], [1000, 2000], [10, 20], [2, 1], ["A100", "T4"])
    assert inv.models == ["A100", "T4"] and inv.n_nodes == 2
    assert inv.model_mask([]) == 0 and inv.model_mask(["", "T4"]) == 0b10
    assert inv.model_mask(["A100", "T4"]) == 0b11
    assert inv.model_mask(["H200"]) == 1 << 62                 # no node has it
    twin = inv.copy()
    twin.gpu_left[0, 0] = 250
    assert inv.gpu_left[0, 0] == MILLI and twin.used_milli() == 750 and inv.used_milli() == 0
    assert inv.gpu_mem[1].tolist() == [G.MODEL_MEMORY_MIB["T4"], 0]


def test_an_inventory_without_gpus_has_one_padding_slot():
    inv = G.build_inventory(["a"], [1], [1], [0], [""])
    assert inv.gpu_left.shape == (1, 1) and inv.model.tolist() == [-1] and inv.models == []


def test_inventory_from_nodes_reads_cpu_memory_and_gpus():
    inv = G.inventory_from_nodes([gpu_node("a", 2, labels={G.LABEL_GFD_PRODUCT: "A100"}),
                                  gpu_node("b")])
    assert inv.cpu_left.tolist() == [8000, 8000] and inv.mem_left.tolist() == [16384, 16384]
    assert inv.gpu_count.tolist() == [2, 0] and inv.models == ["A100"]
    with pytest.raises(ManifestError) as info:
        G.inventory_from_nodes([{"metadata": {"name": "x"},
                                 "status": {"allocatable": {"cpu": "lots"}}}])
    assert (info.value.obj, info.value.field) == ("Node x", "status.allocatable.cpu")


# -------------------------------------------------------------- node info

def test_node_gpu_info_sources_and_precedence():
    # GFD's product label wins over the openb model label
    node = gpu_node("a", 4, labels={G.LABEL_GFD_PRODUCT: "H100", G.ANNO_GPU_MODEL: "A100",
                                    G.LABEL_GFD_MEMORY: "81559"})
    assert G.node_gpu_info(node) == (4, "H100", 81559)
    node = gpu_node("b", labels={G.ANNO_GPU_COUNT: "2", G.ANNO_GPU_MODEL: "T4"})
    assert G.node_gpu_info(node) == (2, "T4", G.MODEL_MEMORY_MIB["T4"])
    # a node without GPUs has no model, whatever its labels say
    assert G.node_gpu_info(gpu_node("c", labels={G.ANNO_GPU_MODEL: "T4"}))[:2] == (0, "")
    # capacity when allocatable is absent
    node = gpu_node("d", status={"capacity": {G.RES_NVIDIA_GPU: "1"}})
    assert G.node_gpu_info(node)[0] == 1


@pytest.mark.parametrize("node, field", [
    (gpu_node("a", "1.5"), 'status.allocatable["nvidia.com/gpu"]'),
    (gpu_node("a", 17), 'status.allocatable["nvidia.com/gpu"]'),
    (gpu_node("a", labels={G.ANNO_GPU_COUNT: "two"}),
     'metadata.labels["alibabacloud.com/gpu-count"]'),
    (gpu_node("a", 1, labels={G.LABEL_GFD_MEMORY: "-1"}),
     'metadata.labels["nvidia.com/gpu.memory"]'),
])
def test_bad_node_gpu_fields_name_the_field(node, field):
    with pytest.raises(ManifestError) as info:
        G.node_gpu_info(node)
    assert (info.value.obj, info.value.field) == ("Node a", field)


def test_node_errors_name_the_source_file():
    node = SourcedObject(gpu_node("a", "x"), "nodes.yaml#2")
    with pytest.raises(ManifestError) as info:
        G.node_gpu_info(node)
    assert str(info.value).startswith("nodes.yaml#2: Node a: ")


# ---------------------------------------------------------------- pod asks

def test_annotation_asks():
    ask = G.pod_gpu_ask(gpu_pod({G.ANNO_GPU_MILLI: "250"}))
    assert (ask.num, ask.milli, ask.models) == (1, 250, ()) and ask.is_share
    ask = G.pod_gpu_ask(gpu_pod({G.ANNO_GPU_MILLI: "1000", G.ANNO_GPU_COUNT: "4",
                                 G.ANNO_GPU_MODEL: "A100|V100M32"}))
    assert ask == G.GpuAsk(4, MILLI, ("A100", "V100M32")) and not ask.is_share
    assert ask.total_milli == 4000
    assert G.pod_gpu_ask(gpu_pod({G.ANNO_GPU_COUNT: "2"})) == G.GpuAsk()     # no milli
    assert G.pod_gpu_ask(gpu_pod({G.ANNO_GPU_MILLI: "0"})) == G.GpuAsk()


@pytest.mark.parametrize("annotations, key, problem", [
    ({G.ANNO_GPU_MILLI: "1001"}, G.ANNO_GPU_MILLI, "must be an integer 0..1000"),
    ({G.ANNO_GPU_MILLI: "half"}, G.ANNO_GPU_MILLI, "must be an integer 0..1000"),
    ({G.ANNO_GPU_MILLI: "500", G.ANNO_GPU_COUNT: "2"}, G.ANNO_GPU_COUNT,
     "a GPU share (500 milli) must ask for exactly one GPU, not 2"),
    ({G.ANNO_GPU_MILLI: "1000", G.ANNO_GPU_COUNT: "17"}, G.ANNO_GPU_COUNT, "0..16"),
])
def test_bad_annotations_name_the_annotation(annotations, key, problem):
    with pytest.raises(ManifestError) as info:
        G.pod_gpu_ask(gpu_pod(annotations))
    assert info.value.obj == "Pod ns/p"
    assert info.value.field == f'metadata.annotations["{key}"]' and problem in info.value.problem


def test_container_requests_add_up_as_whole_gpus():
    containers = [{"name": "a", "resources": {"requests": {G.RES_NVIDIA_GPU: "2"}}},
                  {"name": "b", "resources": {"limits": {G.RES_NVIDIA_GPU: "1"}}},
                  {"name": "c"}]
    ask = G.pod_gpu_ask(gpu_pod(containers=containers,
                                selector={G.LABEL_GFD_PRODUCT: "A100"}))
    assert ask == G.GpuAsk(3, MILLI, ("A100",))
    huge = [{"name": "a", "resources": {"requests": {G.RES_NVIDIA_GPU: "100"}}}]
    assert G.pod_gpu_ask(gpu_pod(containers=huge)).num == G.MAX_NODE_GPUS + 1   # fits nowhere
    with pytest.raises(ManifestError) as info:
        G.pod_gpu_ask(gpu_pod(containers=[{"name": "a", "resources": {"requests": {
            G.RES_NVIDIA_GPU: "500m"}}}]))
    assert info.value.field == 'spec.containers[0].resources.requests["nvidia.com/gpu"]'



def test_a_gpu_limit_is_the_ask_when_requests_leave_the_gpu_out():
    # requests default to limits resource by resource: cpu requested, GPUs only limited
    mixed = [{"name": "a", "resources": {"requests": {"cpu": "1"},
                                         "limits": {G.RES_NVIDIA_GPU: "2"}}}]
    assert G.pod_gpu_ask(gpu_pod(containers=mixed)) == G.GpuAsk(2, MILLI, ())
    # a GPU request present wins over the GPU limit
    both = [{"name": "a", "resources": {"requests": {G.RES_NVIDIA_GPU: "1"},
                                        "limits": {G.RES_NVIDIA_GPU: "1", "cpu": "2"}}},
            {"name": "b", "resources": {"requests": {"memory": "1Gi"},
                                        "limits": {G.RES_NVIDIA_GPU: "3"}}}]
    assert G.pod_gpu_ask(gpu_pod(containers=both)).num == 4
    with pytest.raises(ManifestError) as info:
        G.pod_gpu_ask(gpu_pod(containers=[{"name": "a", "resources": {
            "requests": {"cpu": "1"}, "limits": {G.RES_NVIDIA_GPU: "half"}}}]))
    assert info.value.field == 'spec.containers[0].resources.limits["nvidia.com/gpu"]'


def test_gpu_indices():
    assert G.gpu_indices("Pod ns/p", "0-1") == (0, 1)
    assert G.gpu_indices("Pod ns/p", "3,5") == (3, 5)
    with pytest.raises(ManifestError) as info:
        G.gpu_indices("Pod ns/p", "0,16")
    assert info.value.field == 'metadata.annotations["alibabacloud.com/gpu-index"]'
