"""A profile that cannot see what the pods ask says so, naming the plugin
to enable: GPU annotations without GpuShareFit, extended resources no node
offers, requests nothing checks.  Counted alike from records and from a
trace's columns."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.profile_warnings import asks_of_pods, profile_warnings
from tensorsched.framework.simulation.trace import asks_of_trace, trace_from_table

GPU_ANNO = {"alibabacloud.com/gpu-milli": "500", "alibabacloud.com/gpu-count": "1"}
GPU_CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "default-scheduler", "plugins": {
                  "filter": {"enabled": [{"name": "GpuShareFit"}]},
                  "reserve": {"enabled": [{"name": "GpuShareFit"}]}}}]}


def _gpu_pod(name, **kw):
    p = pod_dict(name, **kw)
    p["metadata"]["annotations"] = dict(GPU_ANNO)
    return p


def _warnings(objects, config=None, pods=()):
    cl = build_cluster(objects, config)
    return profile_warnings(cl, asks_of_pods(list(cl.pending) + list(pods), cl.registry.asks()))


def _gpu_node(name):
    return node_dict(name, labels={"alibabacloud.com/gpu-count": "2"})


def test_gpu_annotations_without_the_gpu_plugins():
    got = _warnings([_gpu_node("n"), _gpu_pod("a"), _gpu_pod("b"), pod_dict("c")])
    assert got == ["warning: 2 pod(s) ask for GPUs in annotations (alibabacloud.com/gpu-milli, "
                   "alibabacloud.com/gpu-count, alibabacloud.com/gpu-card-model), which profile "
                   "default-scheduler does not read: they are placed as if they asked for none; "
                   "enable the GpuShareFit plugin (filter) in the profile"]
    assert _warnings([_gpu_node("n"), _gpu_pod("a")], GPU_CONFIG) == []
    assert _warnings([_gpu_node("n"), pod_dict("c")]) == []


def test_only_the_profiles_that_miss_the_plugin_are_named():
    config = {**GPU_CONFIG, "profiles": GPU_CONFIG["profiles"] + [{"schedulerName": "plain"}]}
    pods = [_gpu_pod("a"), _gpu_pod("b", spec={"schedulerName": "plain"})]
    got = _warnings([_gpu_node("n")] + pods, config)
    assert len(got) == 1 and "1 pod(s)" in got[0] and "profile plain does not read" in got[0]


@pytest.mark.parametrize("nodes, pod, config, expect", [
    ([node_dict("n")], pod_dict("p", extra={"example.com/foo": "2"}), None,
     "warning: 1 pod(s) request example.com/foo, which no node offers (status.allocatable): "
     "they fit nowhere"),
    ([node_dict("n", extra={"example.com/foo": "4"})],
     pod_dict("p", extra={"example.com/foo": "2"}), None, None),
    ([node_dict("n")], pod_dict("p", extra={"hugepages-2Mi": "4Mi"}), None,
     "request hugepages-2Mi, which no node offers"),
    ([node_dict("n", extra={"example.com/foo": "4"})],
     pod_dict("p", extra={"example.com/foo": "2"}),
     {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
      "profiles": [{"schedulerName": "default-scheduler",
                    "pluginConfig": [{"name": "NodeResourcesFit", "args": {
                        "ignoredResourceGroups": ["example.com"]}}]}]},
     "request example.com/foo, which profile default-scheduler's NodeResourcesFit args ignore"),
    ([node_dict("n")], pod_dict("p", cpu="1"),
     {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
      "profiles": [{"schedulerName": "default-scheduler", "plugins": {
          "filter": {"disabled": [{"name": "NodeResourcesFit"}]},
          "preFilter": {"disabled": [{"name": "NodeResourcesFit"}]}}}]},
     "profile default-scheduler does not enable NodeResourcesFit at filter: the requests of "
     "its pods (cpu, memory) are not checked against the nodes; enable the NodeResourcesFit "
     "plugin"),
])
def test_resources_no_node_offers_or_nothing_checks(nodes, pod, config, expect):
    got = _warnings(nodes + [pod], config)
    if expect is None:
        assert got == []
    else:
        assert len(got) == 1 and got[0].startswith("warning: ") and expect in got[0], got


def test_a_trace_counts_its_asks_as_its_records_do():
    pods_json = json.dumps({"metadata": {"annotations": GPU_ANNO},
                            "spec": {"containers": [{"name": "c", "resources": {
                                "requests": {"example.com/foo": "1"}}}]}})
    table = pa.table({
        "name": [f"p{i}" for i in range(6)], "arrival": [float(i) for i in range(6)],
        "scheduler_name": [None, "b", None, "b", None, None],
        "cpu": [100, 0, None, 200, 100, 100],
        "nvidia.com/gpu": [None, 1, None, None, 2, 0],
        "annotations": pa.array([list(GPU_ANNO.items()), None, [("x", "y")],
                                 [("alibabacloud.com/gpu-card-model", "V100")], None, []],
                                pa.map_(pa.string(), pa.string()))})
    cl = build_cluster([node_dict("n")], {**GPU_CONFIG, "profiles": GPU_CONFIG["profiles"]
                                          + [{"schedulerName": "b"}]})
    asks = cl.registry.asks()
    tr = trace_from_table(table)
    assert asks_of_trace(tr, asks) == asks_of_pods(tr.records(0, len(tr)), asks)
    got = profile_warnings(cl, asks_of_trace(tr, asks))
    assert [g.split(",")[0] for g in got] == [
        "warning: 1 pod(s) ask for GPUs in annotations (alibabacloud.com/gpu-milli",
        "warning: 1 pod(s) request nvidia.com/gpu",
        "warning: 1 pod(s) request nvidia.com/gpu"]
    # templates: each distinct template read once, its asks counted for every row
    tt = trace_from_table(pa.table({"name": ["a", "b", "c"], "arrival": [0.0, 1.0, 2.0],
                                    "template": [pods_json, pods_json, "{}"]}))
    assert asks_of_trace(tt, asks) == asks_of_pods(tt.records(0, 3), asks)
