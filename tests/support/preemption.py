"""A cluster, profile and checks for preemption with host filters (victim searches on the state and on counts)."""

from __future__ import annotations

from hypothesis import strategies as st
from reference.oracle import (
    oracle_pick_one_node,
    oracle_select_victims_on_node,
    plugin_args,
    split_objects,
)

from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster

FILTERS = ["NodePorts", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity"]


PREEMPTION_CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler", "plugins": {
        "multiPoint": {"disabled": [{"name": "*"}]},
        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
        "bind": {"enabled": [{"name": "DefaultBinder"}]},
        "preFilter": {"enabled": [{"name": f} for f in FILTERS]},
        "filter": {"enabled": [{"name": f} for f in FILTERS]},
        "postFilter": {"enabled": [{"name": "DefaultPreemption"}]}}}],
}


#: NodeResourcesFit alone at PreFilter/Filter, DefaultPreemption at PostFilter
FIT_PREEMPTION_CONFIG = {
    **PREEMPTION_CONFIG,
    "profiles": [{"schedulerName": "default-scheduler", "plugins": {
        **PREEMPTION_CONFIG["profiles"][0]["plugins"],
        "preFilter": {"enabled": [{"name": "NodeResourcesFit"}]},
        "filter": {"enabled": [{"name": "NodeResourcesFit"}]}}}],
}


HOST = "kubernetes.io/hostname"


def preemption_pod(name, node=None, prio=0, cpu=100, app="a", start=None, port=None, spread=(),
         anti=None, aff=None):
    c = {"name": "c", "image": "pause",
         "resources": {"requests": {"cpu": f"{cpu}m", "memory": "1Mi"}}}
    if port:
        c["ports"] = [{"containerPort": port, "hostPort": port}]
    spec = {"containers": [c], "priority": prio}
    if node:
        spec["nodeName"] = node
    if spread:
        spec["topologySpreadConstraints"] = [
            {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": sel}}} for key, skew, sel in spread]
    affinity = {}
    if anti:
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": anti[1]}}, "topologyKey": anti[0]}]}
    if aff:
        affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": aff[1]}}, "topologyKey": aff[0]}]}
    if affinity:
        spec["affinity"] = affinity
    obj = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
           "spec": spec}
    if start is not None:
        obj["status"] = {"startTime": f"2024-01-01T00:00:{start:02d}Z"}
    return obj


def preemption_node(name, cpu, pods, zone):
    alloc = {"cpu": f"{cpu}m", "memory": "1Gi", "pods": str(pods)}
    labels = {HOST: name}
    if zone is not None:
        labels["zone"] = zone
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"capacity": dict(alloc), "allocatable": alloc}}


def drawn_node(draw, name, cpu, pods):
    """A hypothesis-drawn ``preemption_node``: a zone among three or none,
    a rack label half the time, a NoSchedule taint one time in six."""
    node = preemption_node(name, cpu, pods, draw(st.sampled_from(["z1", "z2", "z3", None])))
    if draw(st.booleans()):
        node["metadata"]["labels"]["rack"] = draw(st.sampled_from(["r1", "r2"]))
    if draw(st.integers(0, 5)) == 0:
        node["spec"] = {"taints": [{"key": "t", "value": "x", "effect": "NoSchedule"}]}
    return node


def _oracle(objs, pre):
    nodes, bound = split_objects(objs)
    pdbs = [o for o in objs if o["kind"] == "PodDisruptionBudget"]
    args = {f: plugin_args(f, None) for f in FILTERS}
    return {n["metadata"]["name"]: oracle_select_victims_on_node(
        pre, n, bound[n["metadata"]["name"]], FILTERS, args, pdbs, nodes, bound)
        for n in nodes}


def _ours(objs, pre, backend):
    cluster = build_cluster(objs, PREEMPTION_CONFIG)
    pod = cluster.resolve(pre)
    fw = cluster.framework_for(pod, backend)
    result = fw.run_cycle(cluster.state, pod, all_nodes=True)
    plugin = fw.plugins_at("postFilter")[0]
    ctx = CycleContext(cluster.state, pod, fw)
    rows = cluster.state.valid_rows()
    n = rows.shape[0]
    kw = dict(offset=0, num_cands=n, potential_rows=rows)
    dry = plugin.post_filter(ctx, result, cluster.pod_table(), dry_run_all=True, **kw)
    full = plugin.post_filter(ctx, result, cluster.pod_table(), **kw)
    return dry, full


def check_victims(objs, pre, backend):
    want = _oracle(objs, pre)
    dry, full = _ours(objs, pre, backend)
    got = {c.node: (c.victims, c.num_pdb_violations) for c in dry.candidates}
    exp = {n: (r["victims"], r["num_pdb_violations"]) for n, r in want.items()
           if r["status"] == "ok"}
    assert got == exp
    assert dry.filter_calls == sum(r["filter_calls"] for r in want.values())
    order = [c.node for c in dry.candidates]
    assert full.nominated_node == oracle_pick_one_node([(n, want[n]) for n in order])
    if full.nominated_node is not None:
        assert full.victims == want[full.nominated_node]["victims"]
