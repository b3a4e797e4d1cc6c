"""User plugins: array code and per-node scalar functions compiled into the
fused numba pass give the same answers on every backend."""

import importlib.util
from pathlib import Path

import pytest

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.plugins import in_tree_registry
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod

DATA = Path(__file__).resolve().parents[3] / "data" / "plugins"


def _module(name):
    spec = importlib.util.spec_from_file_location(name, DATA / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _config(name, args=None):
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "default-scheduler", "plugins": {
               "filter": {"enabled": [{"name": name}]},
               "score": {"enabled": [{"name": name, "weight": 5}]}}}]}
    if args is not None:
        cfg["profiles"][0]["pluginConfig"] = [{"name": name, "args": args}]
    return cfg


def _cluster(registry, cfg):
    nodes = [node_dict("a", cpu="4", labels={"topology.kubernetes.io/zone": "zone-a"}),
             node_dict("b", cpu="8", labels={"topology.kubernetes.io/zone": "zone-b"}),
             node_dict("c", cpu="2"),
             node_dict("d", cpu="16", labels={"topology.kubernetes.io/zone": "zone-a"})]
    bound = pod_dict("busy", cpu="3", spec={"nodeName": "a"})
    return build_cluster(nodes + [bound], cfg, registry)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_scalar_plugin_filters_and_scores(backend):
    mod = _module("headroom_scalar")
    reg = in_tree_registry()
    reg.register("CpuHeadroom", mod.new, {"filter", "score"})
    cluster = _cluster(reg, _config("CpuHeadroom"))
    out = explain_pod(cluster, pod_dict("p", cpu="800m"), backend=backend)
    # a: 4000 - 3000 - 800 = 200 fits, but 200*10 < 4000 -> rejected by the plugin;
    # c: 2000 - 800 = 1200 and 1200*10 >= 2000 -> kept
    assert out["filter"]["a"] == {"code": "Unschedulable", "plugin": "CpuHeadroom",
                                  "reasons": ["node(s) would keep less than 10% cpu headroom"]}
    assert set(out["feasible"]) == {"b", "c", "d"}
    # free cores b: (8000-800)//1000 = 7, c: 1, d: 15 -> normalized 100*7//15 = 46, 6, 100
    assert {n: s["CpuHeadroom"] for n, s in out["scores"].items()} == {"b": 46, "c": 6, "d": 100}
    assert out["selected"] == "d"


def test_scalar_plugin_is_fused_on_numba():
    mod = _module("headroom_scalar")
    reg = in_tree_registry()
    reg.register("CpuHeadroom", mod.new, {"filter", "score"})
    cluster = _cluster(reg, _config("CpuHeadroom"))
    fw = cluster.framework_for(parse_pod(pod_dict("p")), "numba")
    assert fw._scalar_in_kernel


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_array_plugin(backend):
    mod = _module("zone_array")
    reg = in_tree_registry()
    reg.register("ZoneSpreadHint", mod.new, {"filter", "score"})
    cluster = _cluster(reg, _config("ZoneSpreadHint", {"zone": "zone-b"}))
    out = explain_pod(cluster, pod_dict("p"), backend=backend)
    assert out["filter"]["c"]["reasons"] == ["node(s) had no zone label"]
    assert out["scores"]["b"]["ZoneSpreadHint"] == 100
    assert out["scores"]["a"]["ZoneSpreadHint"] == 0
    assert out["selected"] == "b"
