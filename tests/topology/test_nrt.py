"""NodeResourceTopology objects in the cluster manifests: loaded by the
manifest loader (field-path errors for malformed ones) and honoured by the
GPU plugins of ``explain`` / ``schedule --cluster DIR`` with no extra flag."""
import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml

from tensorsched.cli import main
from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import load_objects, parse_objects
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod
from tensorsched.topology import nrt
from tensorsched.topology.gpu_table import GpuTable, attach_node_topologies
from tensorsched.topology.node_topology import from_annotation

FIX = Path(__file__).parent / "fixtures" / "gpu_nrt"


def _parse(objs):
    """parse_objects with the kind the GPU plugin set registers."""
    return parse_objects(objs, kinds=[nrt.OBJECT_KIND])


def _objs():
    return load_objects(FIX / "cluster.yaml")


def _nrt():
    return next(o for o in _objs() if o["kind"] == "NodeResourceTopology")


def test_loader_keeps_nrt_objects():
    objs = _parse(_objs())
    assert "NodeResourceTopology" not in objs.ignored_kinds
    (rec,) = objs.extra["NodeResourceTopology"]
    assert rec.name == "dgx-a"
    assert rec.topology.islands == [0, 0, 0, 0, 1, 1, 1, 1]
    assert rec.topology.numa == [0, 0, 0, 0, 1, 1, 1, 1]
    assert rec.topology.numa_cpu == [64000, 64000]
    cl = build_cluster(objs)
    t = GpuTable.of(cl.state)
    row = cl.state.node_rows["dgx-a"]
    assert t.island[row, :8].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert t.alloc["default/busy"].indices == (1,)
    assert (t.island[cl.state.node_rows["dgx-b"], :8] == -1).all()


def _cluster_dir(tmp_path, with_nrt=True, pods=False):
    d = tmp_path / ("cluster" if with_nrt else "cluster-without-nrt")
    d.mkdir()
    objs = [o for o in _objs() if with_nrt or o["kind"] != "NodeResourceTopology"]
    (d / "objects.yaml").write_text(yaml.safe_dump_all(objs))
    if pods:
        shutil.copy(FIX / "pod.yaml", d / "pod.yaml")
    return d


def test_explain_cli_honours_nrt_in_cluster_dir(tmp_path, capsys):
    args = ["--pod", str(FIX / "pod.yaml"), "--config", str(FIX / "config.yaml"),
            "--format", "json"]
    assert main(["explain", "--cluster", str(_cluster_dir(tmp_path)), *args]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["selected"] == "dgx-a"
    assert out["gpus"] == {"node": "dgx-a", "indices": [4, 5, 6, 7], "milli": 1000}
    assert out["filter"]["dgx-b"]["reasons"] == [
        "node(s) couldn't fit the pod's GPUs in one NVLink island"]
    # the same cluster without its NRT: no node can promise one island
    main(["explain", "--cluster", str(_cluster_dir(tmp_path, with_nrt=False)), *args])
    assert json.loads(capsys.readouterr().out)["selected"] is None


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_schedule_cli_honours_nrt(tmp_path, backend):
    out = tmp_path / "out.json"
    assert main(["schedule", "--cluster", str(_cluster_dir(tmp_path, pods=True)), "--config",
                 str(FIX / "config.yaml"), "--backend", backend, "--output", str(out)]) == 0
    got = {b["pod"]: b for b in json.loads(out.read_text())["bindings"]}
    assert got["default/train"]["node"] == "dgx-a"
    assert got["default/train"]["gpus"] == [4, 5, 6, 7]


def _bad(path, value):
    obj = copy.deepcopy(_nrt())
    *head, last = path
    cur = obj
    for k in head:
        cur = cur[k]
    cur[last] = value
    return obj


@pytest.mark.parametrize("path,value,field", [
    (("apiVersion",), "v1", "apiVersion"),
    (("zones",), {"name": "x"}, "zones"),
    (("zones", 0, "type"), None, "zones[0].type"),
    (("zones", 0, "resources", 0, "allocatable"), "6x4", "zones[0].resources[0].allocatable"),
    (("zones", 1, "resources", 2, "capacity"), "1.5", "zones[1].resources[2].capacity"),
    (("zones", 1, "costs", 0, "value"), "far", "zones[1].costs[0].value"),
    (("zones", 3, "attributes", 0, "value"), "4,five", "zones[3].attributes[0].value"),
    (("zones", 2, "attributes", 0, "value"), "0,16", "zones[2].attributes[0].value"),
    (("topologyPolicies",), "None", "topologyPolicies"),
    (("attributes",), [{"value": "x"}], "attributes[0].name"),
])
def test_malformed_nrt_names_object_and_field(path, value, field):
    with pytest.raises(ManifestError) as exc:
        _parse([_bad(path, value)])
    assert exc.value.obj == "NodeResourceTopology dgx-a"
    assert exc.value.field == field


def test_duplicate_nrt_is_refused():
    with pytest.raises(ManifestError, match="duplicate NodeResourceTopology"):
        _parse([_nrt(), _nrt()])


def test_nrt_wins_over_annotation_and_reaches_an_attached_table():
    objs = [o for o in _objs() if o["kind"] != "NodeResourceTopology"]
    node = next(o for o in objs if o["metadata"]["name"] == "dgx-b")
    node["metadata"]["annotations"] = {"topology.tensorsched.io/gpu": json.dumps(
        {"islands": [0] * 8, "numa": [0] * 8})}
    nrt = copy.deepcopy(_nrt())
    nrt["metadata"]["name"] = "dgx-b"
    cl = build_cluster(objs + [nrt])
    t = GpuTable.of(cl.state)
    assert t.island[cl.state.node_rows["dgx-b"], :8].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    # a table created before the topology arrives picks it up
    cl = build_cluster(objs)
    t = GpuTable.of(cl.state)
    row = cl.state.node_rows["dgx-a"]
    assert (t.island[row, :8] == -1).all()
    attach_node_topologies(cl.state, {"dgx-a": from_annotation(json.dumps(
        {"islands": [0, 0, 1, 1, 2, 2, 3, 3], "numa": [0] * 8}))})
    assert t.island[row, :8].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert t.alloc["default/busy"].indices == (1,)
    t.check()
    cl = build_cluster(objs, yaml.safe_load((FIX / "config.yaml").read_text()))
    attach_node_topologies(cl.state, {"dgx-a": from_annotation(json.dumps(
        {"islands": [0, 0, 1, 1, 2, 2, 3, 3], "numa": [0] * 8}))})
    out = explain_pod(cl, load_objects(FIX / "pod.yaml")[0])
    # dgx-a's islands of two never hold 4 GPUs; dgx-b's annotation has one island
    assert out["filter"]["dgx-a"]["reasons"] == [
        "node(s) couldn't fit the pod's GPUs in one NVLink island"]
    assert out["selected"] == "dgx-b"
