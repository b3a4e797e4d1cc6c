"""Profiles: several per configuration, selected by spec.schedulerName, each
with its own plugins, weights and percentageOfNodesToScore."""

from types import SimpleNamespace

from tensorsched.framework import explain
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.plugins import in_tree_registry
from tensorsched.framework.runtime.status import Code, Status
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.profiles import Profiles

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



# ``Profiles``: the scheduler's lookup of a pod's Framework ---------------

def test_profiles_give_each_pod_its_framework_once():
    profiles = Profiles(build_cluster(NODES, CONFIG), "numpy", SimpleNamespace())
    assert profiles.names == {"default-scheduler", "bin-packer"}
    default = profiles.of(SimpleNamespace(scheduler_name="default-scheduler"))
    packer = profiles.of(SimpleNamespace(scheduler_name="bin-packer"))
    assert default is not packer and default.profile.scheduler_name == "default-scheduler"
    assert profiles.of(SimpleNamespace(scheduler_name="bin-packer")) is packer
    assert profiles.queue_sort().name == "PrioritySort"
    assert profiles.plugin_of("NodeResourcesFit") is not None
    assert profiles.plugin_of("NoSuchPlugin") is None


class Hooked:
    """A PreEnqueue plugin that wants the handle and holds labelled pods."""

    name = "Hooked"

    def __init__(self, seen):
        self.seen = seen

    def set_handle(self, handle):
        self.seen.append(handle)

    def pre_enqueue(self, pod):
        return Status(Code.UNSCHEDULABLE, ("not yet",)) if pod.labels else Status.OK


def test_profiles_hand_the_handle_over_once_and_run_pre_enqueue():
    seen = []
    reg = in_tree_registry()
    reg.register("Hooked", lambda args, h: Hooked(seen), {"preEnqueue"})
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "default-scheduler",
                         "plugins": {"preEnqueue": {"enabled": [{"name": "Hooked"}]}}}]}
    handle = object()
    profiles = Profiles(build_cluster(NODES, cfg, reg), "numpy", handle)
    plain, labelled = parse_pod(pod_dict("a")), parse_pod(pod_dict("b", labels={"x": "1"}))
    profiles.of(plain)
    profiles.of(labelled)
    assert seen == [handle]
    # neither gates-only nor able to answer per pod (``lets_in``): always asked
    assert not profiles.gate_free(plain)
    assert profiles.pre_enqueue(plain).ok
    st = profiles.pre_enqueue(labelled)
    assert not st.ok and st.plugin == "Hooked" and st.reasons == ("not yet",)
