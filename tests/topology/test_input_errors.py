"""Bad input on the GPU, openb-trace and GPU-plugin-args paths is refused
with one TensorschedError naming the file / object and the field (never a
traceback, never a hang, never a number computed from nonsense), and a
refused operation leaves the state as it was."""
import copy
import json
import pickle

import numpy as np
import pytest
import yaml

from tensorsched.cli import main
from tensorsched.framework.errors import ConfigError, ManifestError, TensorschedError
from tensorsched.framework.parsing.manifests import parse_node, parse_objects
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.plugins import default_registry
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain
from tensorsched.topology import gpu as G
from tensorsched.topology.gpu import LABEL_GFD_PRODUCT
from tensorsched.topology.gpu_table import GpuTable
from tensorsched.topology.node_topology import ANNO_NODE_TOPOLOGY, from_annotation
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb.trace import openb_node_objects, read_openb_trace
from tensorsched.generators.gpu_clusters import gpu_config, gpu_node

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

MILLI_KEY = 'metadata.annotations["alibabacloud.com/gpu-milli"]'
COUNT_KEY = 'metadata.annotations["alibabacloud.com/gpu-count"]'


def _pod(annos=None, extra=None, name="p"):
    p = pod_dict(name, cpu="1", memory="1Gi", extra=extra)
    if annos:
        p["metadata"]["annotations"] = dict(annos)
    return p


OK_POD = _pod({"alibabacloud.com/gpu-milli": "500"}, name="ok")


def _refused(objects, pod, cfg=None) -> ManifestError:
    with pytest.raises(ManifestError) as exc:
        explain(objects, pod, config=cfg or gpu_config(), backend="numpy")
    return exc.value


# ------------------------------------------------------------------ case 1: GPU objects


@pytest.mark.parametrize("annos, field, text", [
    ({"alibabacloud.com/gpu-milli": "lots"}, MILLI_KEY, "must be an integer 0..1000, got 'lots'"),
    ({"alibabacloud.com/gpu-milli": "-5"}, MILLI_KEY, "0..1000"),
    ({"alibabacloud.com/gpu-milli": "1500"}, MILLI_KEY, "0..1000"),
    ({"alibabacloud.com/gpu-milli": "9" * 30}, MILLI_KEY, "0..1000"),
    ({"alibabacloud.com/gpu-milli": "1000", "alibabacloud.com/gpu-count": "eight"}, COUNT_KEY,
     "got 'eight'"),
    ({"alibabacloud.com/gpu-milli": "1000", "alibabacloud.com/gpu-count": "9" * 25}, COUNT_KEY,
     "0..16"),
    ({"alibabacloud.com/gpu-milli": "500", "alibabacloud.com/gpu-count": "2"}, COUNT_KEY,
     "exactly one GPU"),
    ({"alibabacloud.com/gpu-milli": "500", "alibabacloud.com/gpu-index": "a-b"},
     'metadata.annotations["alibabacloud.com/gpu-index"]', "GPU indices"),
    ({"topology.tensorsched.io/gpu-placement": "rack"},
     'metadata.annotations["topology.tensorsched.io/gpu-placement"]', "unknown value 'rack'"),
])
def test_pod_gpu_annotations_refused(annos, field, text):
    err = _refused([gpu_node("n1")], _pod(annos))
    assert err.obj == "Pod default/p" and err.field == field and text in err.problem


@pytest.mark.parametrize("value, text", [("0.5", "whole number"), ("lots", "invalid quantity")])
def test_pod_gpu_request_refused(value, text):
    err = _refused([gpu_node("n1")], _pod(extra={"nvidia.com/gpu": value}))
    assert err.obj == "Pod default/p"
    assert err.field.startswith("spec.containers[") and "nvidia.com/gpu" in err.field
    assert text in err.problem


def test_pod_asking_more_gpus_than_any_node_is_unschedulable_not_refused():
    out = explain([gpu_node("n1")], _pod(extra={"nvidia.com/gpu": "40"}), config=gpu_config())
    assert out["selected"] is None


def _node_with(labels=None, annos=None, gpus=None, name="n2"):
    n = node_dict(name, cpu="8", memory="8Gi", labels=labels,
                  extra={"nvidia.com/gpu": gpus} if gpus is not None else None)
    if annos:
        n["metadata"]["annotations"] = dict(annos)
    return n


@pytest.mark.parametrize("node, field, text", [
    (_node_with(labels={"alibabacloud.com/gpu-count": "eight"}),
     'metadata.labels["alibabacloud.com/gpu-count"]', "must be an integer 0..16, got 'eight'"),
    (_node_with(annos={"alibabacloud.com/gpu-count": "99"}),
     'metadata.annotations["alibabacloud.com/gpu-count"]', "0..16"),
    (_node_with(gpus="32"), 'status.allocatable["nvidia.com/gpu"]', "at most 16"),
    (_node_with(gpus="1500m"), 'status.allocatable["nvidia.com/gpu"]', "whole number"),
    (_node_with(gpus="8", labels={"nvidia.com/gpu.memory": "huge"}),
     'metadata.labels["nvidia.com/gpu.memory"]', "got 'huge'"),
])
def test_node_gpu_fields_refused(node, field, text):
    err = _refused([node], OK_POD)
    assert err.obj == "Node n2" and err.field == field and text in err.problem


TOPO = f'metadata.annotations["{ANNO_NODE_TOPOLOGY}"]'


@pytest.mark.parametrize("value, field, text", [
    ("{not json", TOPO, "invalid JSON"),
    ('"x"', TOPO, "got a string"),
    ("[1, 2]", TOPO + ".zones[0]", "must be a mapping"),
    ('{"islands": "abc"}', TOPO + ".islands", "must be a list"),
    ('{"islands": [0, "a"]}', TOPO + ".islands[1]", "must be an integer"),
    ('{"islands": [99]}', TOPO + ".islands[0]", "-1..15"),
    ('{"numa": [0, 8]}', TOPO + ".numa[1]", "-1..7"),
    ('{"numaCpu": ["lots"]}', TOPO + ".numaCpu[0]", "invalid quantity"),
    ('{"numaMemory": ["1e40"]}', TOPO + ".numaMemory[0]", ""),
    ('{"distances": [[10, "far"]]}', TOPO + ".distances[0][1]", "must be an integer"),
    ('{"singleNumaNodePolicy": "yes"}', TOPO + ".singleNumaNodePolicy", "true or false"),
    ('{"island": [0]}', TOPO + ".island", "unknown field"),
    ('{"zones": [{"name": "a", "type": "Node", "resources": [{"name": "nvidia.com/gpu", '
     '"capacity": "99999999999"}]}]}', TOPO + ".zones[0].resources[0].capacity", "at most 16"),
])
def test_node_topology_annotation_refused(value, field, text):
    node = gpu_node("n4")
    node["metadata"]["annotations"][ANNO_NODE_TOPOLOGY] = value
    err = _refused([node], OK_POD)
    assert err.obj == "Node n4" and err.field == field and text in err.problem


def test_from_annotation_is_a_value_error_naming_the_field():
    with pytest.raises(ManifestError) as exc:
        from_annotation("{")
    assert isinstance(exc.value, ValueError) and exc.value.field == TOPO


@pytest.mark.timeout(30)
def test_nrt_with_a_huge_gpu_count_is_refused_at_parse():
    nrt = {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
           "metadata": {"name": "n1"},
           "zones": [{"name": "numa-0", "type": "Node",
                      "resources": [{"name": "nvidia.com/gpu", "capacity": "99999999999"}]}]}
    with pytest.raises(ManifestError) as exc:
        parse_objects([nrt], kinds=default_registry().object_kinds())
    assert exc.value.obj == "NodeResourceTopology n1"
    assert exc.value.field == "zones[0].resources[0].capacity"
    nine = copy.deepcopy(nrt)
    nine["zones"] = [{"name": f"numa-{i}", "type": "Node"} for i in range(9)]
    with pytest.raises(ManifestError, match="NUMA nodes"):
        parse_objects([nine], kinds=default_registry().object_kinds())


def test_refused_node_update_leaves_the_gpu_table_as_it_was():
    cl = build_cluster([gpu_node("n1"), gpu_node("n2")], gpu_config())
    t = GpuTable.of(cl.state)
    row = cl.state.node_rows["n2"]
    before = (t.count.copy(), t.left.copy(), t.island.copy())
    bad = gpu_node("n2")
    bad["metadata"]["annotations"][ANNO_NODE_TOPOLOGY] = "{oops"
    cl.state.update_node(parse_node(bad))
    for _ in range(2):                     # refused every time, not only the first
        with pytest.raises(ManifestError) as exc:
            GpuTable.of(cl.state)
        assert exc.value.obj == "Node n2"
    assert (t.count == before[0]).all() and (t.left == before[1]).all()
    assert (t.island == before[2]).all() and t.count[row] == 8


def test_cli_names_the_file_and_exits_2(tmp_path, capsys):
    cluster = tmp_path / "cluster.yaml"
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump(gpu_config()))
    cluster.write_text(yaml.safe_dump_all([gpu_node("n1"),
                                          _pod({"alibabacloud.com/gpu-milli": "lots"})]))
    assert main(["schedule", "--cluster", str(cluster), "--config", str(cfg)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0]
    assert str(cluster) in err[0] and "Pod default/p" in err[0] and MILLI_KEY in err[0]


def test_inventory_from_raw_objects_refuses_bad_fields():
    with pytest.raises(ManifestError) as exc:
        G.inventory_from_nodes([{"kind": "Node", "metadata": {"name": "a"},
                                 "status": {"allocatable": {"cpu": "lots", "memory": "1Gi"}}}])
    assert exc.value.obj == "Node a" and exc.value.field == "status.allocatable.cpu"
    with pytest.raises(ManifestError) as exc:
        G.node_gpu_info({"metadata": {"name": "b", "labels": {"alibabacloud.com/gpu-count": "x"}}})
    assert exc.value.obj == "Node b"


# ------------------------------------------------------------------ case 6: plugin args


def _score_args(mutate):
    cfg = gpu_config()
    mutate(cfg["profiles"][0]["pluginConfig"][0]["args"])
    return cfg


ARGS = "profiles[0].pluginConfig[0].args"


@pytest.mark.parametrize("mutate, field, text", [
    (lambda a: a.__setitem__("typicalPods", "lots"), ARGS + ".typicalPods", "must be a list"),
    (lambda a: a.__setitem__("typicalPods", ["x"]), ARGS + ".typicalPods[0]", "must be an object"),
    (lambda a: a["typicalPods"][0].__setitem__("cpu", "abc"), ARGS + ".typicalPods[0].cpu",
     "invalid quantity"),
    (lambda a: a["typicalPods"][0].__setitem__("cpu", -1), ARGS + ".typicalPods[0].cpu", ""),
    (lambda a: a["typicalPods"][1].__setitem__("gpuMilli", 5000),
     ARGS + ".typicalPods[1].gpuMilli", "0..1000"),
    (lambda a: a["typicalPods"][1].__setitem__("gpuCount", "2"),
     ARGS + ".typicalPods[1].gpuCount", "must be an integer"),
    (lambda a: a["typicalPods"][0].__setitem__("weight", float("nan")),
     ARGS + ".typicalPods[0].weight", "> 0"),
    (lambda a: a["typicalPods"][0].__setitem__("models", 7), ARGS + ".typicalPods[0].models",
     "string"),
    (lambda a: a["typicalPods"][0].__setitem__("gpus", 1), ARGS + ".typicalPods[0].gpus",
     "unknown field"),
    (lambda a: a.__setitem__("policy", "Best"), ARGS + ".policy", "must be one of"),
    (lambda a: a.__setitem__("policy", 3), ARGS + ".policy", "must be one of"),
    (lambda a: a.__setitem__("polcy", "FGD"), ARGS + ".polcy", "unknown field"),
    (lambda a: a.__setitem__("typicalPods", []), ARGS + ".typicalPods",
     "GpuShareScore: an empty list scores every node alike; leave typicalPods out to learn"),
])
def test_gpu_share_score_args_name_the_field(mutate, field, text):
    with pytest.raises(ConfigError) as exc:
        build_cluster([gpu_node("n1")], _score_args(mutate))
    assert exc.value.field == field and text in exc.value.problem
    assert "object has no attribute" not in str(exc.value)


def test_cli_names_the_config_file_plugin_and_field_of_empty_typical_pods(tmp_path, capsys):
    cluster, cfg = tmp_path / "cluster.yaml", tmp_path / "cfg.yaml"
    config = gpu_config()
    config["profiles"][0]["pluginConfig"][0]["args"] = {"policy": "FGD", "typicalPods": []}
    cfg.write_text(yaml.safe_dump(config))
    cluster.write_text(yaml.safe_dump_all([gpu_node("n1"), _pod()]))
    assert main(["schedule", "--cluster", str(cluster), "--config", str(cfg)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    for part in (str(cfg), ARGS + ".typicalPods", "GpuShareScore", "leave typicalPods out"):
        assert part in err[0], (part, err[0])


def test_gpu_fit_takes_no_args():
    cfg = gpu_config()
    cfg["profiles"][0]["pluginConfig"].append({"name": "GpuShareFit", "args": {"x": 1}})
    with pytest.raises(ConfigError) as exc:
        build_cluster([gpu_node("n1")], cfg)
    assert exc.value.field == "profiles[0].pluginConfig[1].args.x"


def test_valid_score_args_still_schedule():
    out = explain([gpu_node("n1")], OK_POD, config=gpu_config(policy="BestFit"))
    assert out["selected"] == "n1"


# ------------------------------------------------------------------ case 2: openb CSVs

NODES_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
PODS_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _nodes(tmp_path, rows=("n0,32000,65536,4,T4", "n1,32000,65536,2,T4")):
    return _write(tmp_path, "nodes.csv", NODES_HEADER + "".join(r + "\n" for r in rows))


def _pods(tmp_path, rows=None, n=40):
    rows = rows if rows is not None else [f"p{i:03d},1000,1024,1,{250 * (1 + i % 4)},"
                                          for i in range(n)]
    return _write(tmp_path, "pods.csv", PODS_HEADER + "".join(r + "\n" for r in rows))


@pytest.mark.parametrize("text, line, column, problem", [
    (NODES_HEADER + "n0,abc,1,1,T4\n", 2, "cpu_milli", "got 'abc'"),
    (NODES_HEADER + "n0,1000,1,eight,T4\n", 2, "gpu", "got 'eight'"),
    (NODES_HEADER + "n0,1000,1,32,T4\n", 2, "gpu", "0..16"),
    (NODES_HEADER + "n0,1000,-4,1,T4\n", 2, "memory_mib", "got -4"),
    (NODES_HEADER + "n0,1000,1,1,T4\nn1,1000,1e99,1,T4\n", 3, "memory_mib", "1e99"),
    (NODES_HEADER + "n0,1000,1,1,T4\nn0,1000,1,1,T4\n", 3, "sn", "duplicate node"),
    (NODES_HEADER + ",1000,1,1,T4\n", 2, "sn", "must not be empty"),
    # a node's name as the API server has it: a DNS-1123 subdomain
    (NODES_HEADER + "n0,1000,1,1,T4\nNode_1,1000,1,1,T4\n", 3, "sn",
     'Invalid value: "Node_1": a lowercase RFC 1123 subdomain'),
    (NODES_HEADER + "n" * 254 + ",1000,1,1,T4\n", 2, "sn", "no more than 253 characters"),
    (NODES_HEADER + "n0,1000\n", 2, "memory_mib", "fewer fields"),
    (NODES_HEADER + "n0,1000,1,1,T4,x\n", 2, "", "more field"),
    (NODES_HEADER, None, "", "no nodes"),
    ("", 1, "", "empty file"),
    ("sn,cpu,memory_mib,gpu\nn,1,1,1\n", 1, "cpu_milli", "missing column"),
])
def test_node_csv_errors_name_file_line_column(tmp_path, text, line, column, problem):
    path = _write(tmp_path, "nodes.csv", text)
    with pytest.raises(G.CsvError) as exc:
        G.read_openb_nodes(path)
    e = exc.value
    assert isinstance(e, TensorschedError) and isinstance(e, ValueError)
    assert (e.path, e.line, e.column) == (path, line, column) and problem in e.problem
    assert str(e).startswith(path + (f":{line}" if line else "") + ": ")


@pytest.mark.parametrize("row, column, problem", [
    ("p0,1000,1024,1,abc,", "gpu_milli", "got 'abc'"),
    ("p0,1000,1024,1,-100,", "gpu_milli", "got -100"),
    ("p0,1000,1024,1,1001,", "gpu_milli", "0..1000"),
    ("p0,1000,1024,99,1000,", "num_gpu", "0..16"),
    ("p0,1000,1024,2,500,", "num_gpu", "exactly one GPU"),
    ("p0,1.5,1024,1,1000,", "cpu_milli", "got '1.5'"),
    # a pod's name as the API server has it: a DNS-1123 subdomain
    ("Pod_0,1000,1024,1,1000,", "name", 'Invalid value: "Pod_0": a lowercase RFC 1123 subdomain'),
    ("p0.,1000,1024,1,1000,", "name", "RFC 1123 subdomain"),
])
def test_pod_csv_errors_name_file_line_column(tmp_path, row, column, problem):
    path = _pods(tmp_path, ["ok,1000,1024,1,1000,", row])
    with pytest.raises(G.CsvError) as exc:
        R.read_openb_pods(path)
    assert (exc.value.line, exc.value.column) == (3, column) and problem in exc.value.problem


def test_trace_csv_pod_names_are_checked_as_the_api_server_does(tmp_path):
    # the Simulation's reader of the openb pod CSV names the file, line and column
    header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\n"
    path = _write(tmp_path, "trace.csv",
                  header + "ok,1000,1024,1,1000,0\nWeb_1,1000,1024,1,1000,1\n")
    with pytest.raises(G.CsvError) as exc:
        read_openb_trace(path)
    assert (exc.value.path, exc.value.line, exc.value.column) == (path, 3, "name")
    assert str(exc.value).startswith(f'{path}:3: name: Invalid value: "Web_1"')


def test_gpu_node_without_a_model_gets_no_model_label(tmp_path):
    # the model column is optional: a GPU node without one has no model
    # (replay's -1), never another row's model nor an IndexError
    nodes = _nodes(tmp_path, ["n0,32000,65536,4,T4", "n1,32000,65536,2,", "n2,32000,65536,0,"])
    labels = {o["metadata"]["name"]: o["metadata"]["labels"] for o in openb_node_objects(nodes)}
    assert labels["n0"][LABEL_GFD_PRODUCT] == "T4"
    assert LABEL_GFD_PRODUCT not in labels["n1"] and LABEL_GFD_PRODUCT not in labels["n2"]
    no_column = _write(tmp_path, "bare.csv", "sn,cpu_milli,memory_mib,gpu\nn0,32000,65536,4\n")
    (node,) = openb_node_objects(no_column)
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "4"
    assert LABEL_GFD_PRODUCT not in node["metadata"]["labels"]


@pytest.mark.timeout(120)
def test_simulate_takes_a_node_csv_without_models(tmp_path, capsys):
    nodes = _write(tmp_path, "bare.csv", "sn,cpu_milli,memory_mib,gpu\nn0,32000,65536,4\n")
    trace = _write(tmp_path, "trace.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,"
                   "creation_time\np0,1000,1024,1,500,0\n")
    out = tmp_path / "out"
    assert main(["simulate", "--nodes", nodes, "--trace", trace, "--backend", "numpy",
                 "--output", str(out)]) == 0
    assert "1 scheduled" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--nodes", "--pods"])
def test_replay_names_a_directory_given_for_a_csv(tmp_path, capsys, flag):
    folder = tmp_path / "csvs"
    folder.mkdir()
    paths = {"--nodes": _nodes(tmp_path), "--pods": _pods(tmp_path), flag: str(folder)}
    assert main(["replay", "--nodes", paths["--nodes"], "--pods", paths["--pods"],
                 "--policy", "FGD", "--backend", "numpy"]) == 2
    err = capsys.readouterr().err
    assert err == f"tensorsched: error: replay: {folder}: Is a directory\n"   # no [Errno 21]


@pytest.mark.timeout(120)
def test_replay_summary_labels_the_curve_points_it_shows(tmp_path, capsys):
    # the curve ends at 130%: --tune 2 showed its 130% point labelled 200%;
    # a level the demand never reached printed as nan%
    nodes, pods = _nodes(tmp_path), _pods(tmp_path)
    for tune, shown in (("2", "at 130% "), ("0.5", "at 100% demand not reached, at 50% ")):
        assert main(["replay", "--nodes", nodes, "--pods", pods, "--policy", "FGD",
                     "--backend", "numpy", "--tune", tune]) == 0
        err = capsys.readouterr().err
        assert shown in err and "at 200%" not in err and "nan" not in err


def test_header_only_csvs_refused_by_the_cli(tmp_path, capsys):
    nodes = _write(tmp_path, "n.csv", NODES_HEADER)
    pods = _pods(tmp_path)
    assert main(["replay", "--nodes", nodes, "--pods", pods, "--policy", "FGD"]) == 2
    err = capsys.readouterr().err
    assert nodes in err and "no nodes" in err and "nan" not in err
    assert main(["replay", "--nodes", _nodes(tmp_path), "--pods",
                 _write(tmp_path, "p.csv", PODS_HEADER), "--policy", "FGD"]) == 2
    assert "no pods" in capsys.readouterr().err


def test_csv_error_survives_a_sweep_worker(tmp_path):
    e = G.CsvError("f.csv", 3, "gpu", "bad")
    back = pickle.loads(pickle.dumps(e))
    assert str(back) == str(e) == "f.csv:3: gpu: bad"


# ------------------------------------------------------------------ case 3: hangs


@pytest.mark.timeout(30)
def test_trace_without_gpu_demand_is_refused_not_a_hang(tmp_path):
    pods = _pods(tmp_path, [f"p{i},1000,1024,0,0," for i in range(20)])
    nodes = G.read_openb_nodes(_nodes(tmp_path))
    trace = R.read_openb_pods(pods)
    with pytest.raises(ValueError, match="no pod asks for a GPU") as exc:
        R.replay(nodes, trace, "FGD")
    assert pods in str(exc.value)
    with pytest.raises(ValueError, match="no pod asks for a GPU"):
        R.draw_workload(trace, 6000, 1.3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="no pod asks for a GPU"):
        R.sweep(_nodes(tmp_path), [pods], ["FGD"], [1], workers=1)


@pytest.mark.timeout(30)
def test_negative_gpu_milli_is_refused_at_read_time(tmp_path):
    pods = _pods(tmp_path, [f"p{i},1000,1024,1,-100," for i in range(5)])
    with pytest.raises(G.CsvError, match="gpu_milli"):
        R.run_replay(_nodes(tmp_path), pods, "FGD")


@pytest.mark.timeout(30)
def test_draw_needing_too_many_pods_is_refused():
    rows = ["big,1000,1024,1,1,"] + [f"p{i},1000,1024,0,0," for i in range(999)]
    trace = R.TracePods([r.split(",")[0] for r in rows], np.full(1000, 1000, np.int64),
                        np.full(1000, 1024, np.int64), np.array([1] + [0] * 999, np.int64),
                        np.array([1] + [0] * 999, np.int64), [""] * 1000)
    with pytest.raises(ValueError, match="would take about"):
        R.draw_workload(trace, 6_000_000, 1.3, np.random.default_rng(0))


@pytest.mark.timeout(60)
def test_small_trace_replays(tmp_path):
    res, _ = R.run_replay(_nodes(tmp_path), _pods(tmp_path), "FGD", seed=1, backend="numpy")
    assert res.pods > 0 and res.total_gpus == 6


def test_cpu_only_cluster_is_refused(tmp_path):
    nodes = _nodes(tmp_path, ["n0,32000,65536,0,", "n1,32000,65536,0,"])
    with pytest.raises(ValueError, match="no node has a GPU"):
        R.run_replay(nodes, _pods(tmp_path), "FGD")


# ------------------------------------------------------------------ case 4: replay arguments


@pytest.mark.parametrize("tune", [float("nan"), float("inf"), -1, 0, 11, "1.3", True])
def test_tune_must_be_finite_and_positive(tmp_path, tune):
    nodes, pods = _nodes(tmp_path), _pods(tmp_path)
    with pytest.raises(ValueError, match="tune"):
        R.run_replay(nodes, pods, "FGD", tune=tune)
    with pytest.raises(ValueError, match="tune"):
        R.replay(G.read_openb_nodes(nodes), R.read_openb_pods(pods), "FGD", tune=tune)
    with pytest.raises(ValueError, match="tune"):
        R.sweep(nodes, [pods], ["FGD"], [1], tune=tune, workers=1)


@pytest.mark.timeout(10)
@pytest.mark.parametrize("text, problem", [
    ("0-99999999999", "more than 10000 seeds"),
    ("0-5000,6000-12000", "more than 10000 seeds"),
    ("abc", "expected a non-negative integer"),
    ("-5", "expected a non-negative integer"),
    ("5-", "expected a non-negative integer"),
    ("1-2-3", "expected a non-negative integer"),
    ("9-3", "runs backwards"),
    ("99999999999999999999999", "at most"),
    (",", "no seeds"),
])
def test_parse_seeds_refuses(text, problem):
    with pytest.raises(ValueError, match=problem):
        R.parse_seeds(text)


def test_parse_seeds_accepts():
    assert R.parse_seeds("42-44, 50") == [42, 43, 44, 50]
    assert len(R.parse_seeds("0-9999")) == 10000


def test_policy_seed_and_backend_validated(tmp_path):
    nodes, pods = _nodes(tmp_path), _pods(tmp_path)
    for kw, match in (({"policy": "Best"}, "unknown policy"),
                      ({"policy": "FGD", "seed": -1}, "seed"),
                      ({"policy": "FGD", "seed": 1.5}, "seed"),
                      ({"policy": "FGD", "backend": "gpu"}, "unknown backend")):
        with pytest.raises(ValueError, match=match):
            R.run_replay(nodes, pods, **kw)
    with pytest.raises(ValueError, match="unknown policy"):
        R.sweep(nodes, [pods], ["FGD", "Nope"], [1], workers=1)
    with pytest.raises(ValueError, match="no policies"):
        R.sweep(nodes, [pods], [], [1], workers=1)
    with pytest.raises(ValueError, match="more than|at most"):
        R.sweep(nodes, [pods], ["FGD"], range(R.MAX_SEEDS + 1), workers=1)


def test_results_csv_errors_name_file_line_column(tmp_path):
    bad = _write(tmp_path, "sweep.csv", "workload,sc_policy,metric," +
                 ",".join(str(k) for k in range(R.N_COLS)) + "\n" +
                 "w,06-FGD,alloc," + ",".join(["1.0"] * 5 + ["x"] + ["1.0"] * (R.N_COLS - 6))
                 + "\n")
    with pytest.raises(G.CsvError) as exc:
        R.read_sweep(bad)
    assert (exc.value.line, exc.value.column) == (2, "5")


def test_openb_json_annotation_roundtrip_still_valid():
    # the synthetic DGX annotation passes the stricter validation unchanged
    t = from_annotation(json.loads(json.dumps(gpu_node("x")["metadata"]["annotations"]
                                              [ANNO_NODE_TOPOLOGY])))
    assert t.islands == [0, 0, 0, 0, 1, 1, 1, 1]
