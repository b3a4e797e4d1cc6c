"""Profiles: several per configuration, selected by spec.schedulerName, each
with its own plugins, weights and percentageOfNodesToScore."""

from tensorsched.framework import explain
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster

CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "percentageOfNodesToScore": 50,
    "profiles": [
        {"schedulerName": "default-scheduler"},
        {"schedulerName": "bin-packer", "percentageOfNodesToScore": 10,
         "plugins": {"score": {"disabled": [{"name": "*"}],
                               "enabled": [{"name": "NodeResourcesFit", "weight": 7}]}},
         "pluginConfig": [{"name": "NodeResourcesFit", "args": {
             "scoringStrategy": {"type": "MostAllocated",
                                 "resources": [{"name": "cpu", "weight": 1}]}}}]},
    ],
}
NODES = [node_dict("small", cpu="2"), node_dict("big", cpu="16")]


def test_default_profile_spreads_and_packer_packs():
    spread = explain(NODES, pod_dict("a", cpu="1"), CONFIG)
    packed = explain(NODES, pod_dict("b", cpu="1", spec={"schedulerName": "bin-packer"}), CONFIG)
    assert spread["profile"] == "default-scheduler" and spread["selected"] == "big"
    assert packed["profile"] == "bin-packer" and packed["selected"] == "small"
    # MostAllocated on cpu only: small 1000 * 100 // 2000 = 50, big 1000 * 100 // 16000 = 6
    assert packed["scores"] == {"small": {"NodeResourcesFit": 50},
                                "big": {"NodeResourcesFit": 6}}
    assert packed["total"] == {"small": 350, "big": 42}


def test_percentage_of_nodes_to_score_profile_overrides_global():
    nodes = [node_dict(f"n{i}") for i in range(400)]
    cluster = build_cluster(nodes, CONFIG)
    default = cluster.framework_for(parse_pod(pod_dict("a")), "numpy")
    packer = cluster.framework_for(parse_pod(pod_dict("b", spec={"schedulerName": "bin-packer"})),
                                   "numpy")
    # 400 nodes: global 50 % -> 200 nodes; the profile's 10 % -> 40, raised to 100
    assert default.run_cycle(cluster.state, parse_pod(pod_dict("a"))).processed == 200
    pod_b = parse_pod(pod_dict("b", spec={"schedulerName": "bin-packer"}))
    assert packer.run_cycle(cluster.state, pod_b).processed == 100
