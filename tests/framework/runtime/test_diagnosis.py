"""``Framework.diagnosis`` explains rejected nodes per plugin over arrays;
it must give every node the status ``node_status`` gives it one by one,
and the FailedScheduling message and rejector set built from them."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from support import strategies as ST
from support.builders import node, pod
from support.golden import golden_profile_to_config

from tensorsched.framework.errors import ConfigError
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.runtime.status import Diagnosis, NodeStatuses
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.topology.openb.trace import openb_config

_SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


def _per_node(fw, ctx, result) -> dict:
    state = ctx.state
    out = {}
    for j in range(min(result.processed, result.rows.shape[0])):
        st = fw.node_status(ctx, result, j)
        if st is not None:
            out[state.node_name(int(result.rows[j]))] = st
    return out


def _old_message(n: int, statuses: dict) -> str:
    counts: dict[str, int] = {}
    for st in statuses.values():
        for r in st.reasons:
            counts[r] = counts.get(r, 0) + 1
    parts = sorted(f"{c} {r}" for r, c in counts.items())
    return f"0/{n} nodes are available:" + (f" {', '.join(parts)}." if parts else "")


def _check(cluster, pod, backend="numpy"):
    pod = cluster.resolve(pod)
    fw = cluster.framework_for(pod, backend)
    result = fw.run_cycle(cluster.state, pod, all_nodes=True)
    ctx = CycleContext(cluster.state, pod, fw)
    diag = fw.diagnosis(ctx, result)
    if not result.prefilter_status.ok:
        return
    want = _per_node(fw, ctx, result)
    assert dict(diag.node_statuses) == want
    assert len(diag.node_statuses) == len(want)
    assert diag.node_statuses.plugins() == {st.plugin for st in want.values() if st.plugin}
    assert diag.message() == _old_message(cluster.state.num_nodes, want)


@settings(max_examples=120, **_SETTINGS)
@given(ST.scenarios(3, 40))
def test_diagnosis_equals_per_node_status(scenario):
    objects, pod, profile, _seed = scenario
    config = golden_profile_to_config(profile) if profile is not None else None
    try:
        cluster = build_cluster(objects, config)
    except ConfigError:
        return
    _check(cluster, pod)


def test_gpu_share_fit_explains_arrays_as_per_node():
    """GpuShareFit's explain_many: no GPUs, wrong model, too little left."""
    nodes = []
    for i, (gpus, model) in enumerate([(0, None), (2, "A100"), (2, "V100"), (1, "V100"),
                                       (4, "V100")]):
        alloc = {"cpu": "64", "memory": "256Gi", "pods": "110"}
        labels = {"kubernetes.io/hostname": f"n{i}"}
        if gpus:
            alloc["nvidia.com/gpu"] = str(gpus)
            labels["nvidia.com/gpu.product"] = model
        nodes.append({"apiVersion": "v1", "kind": "Node",
                      "metadata": {"name": f"n{i}", "labels": labels},
                      "status": {"allocatable": alloc}})

    def gpu_pod(name, milli, count, model=None, node=None):
        ann = {"alibabacloud.com/gpu-milli": str(milli), "alibabacloud.com/gpu-count": str(count)}
        if model:
            ann["alibabacloud.com/gpu-card-model"] = model
        spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
        if node:
            spec["nodeName"] = node
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "annotations": ann},
                "spec": spec}

    bound = [gpu_pod(f"b{i}", 1000, 1, node="n4") for i in range(3)]
    cluster = build_cluster(nodes + bound, openb_config("BestFit"))
    for pod in (gpu_pod("p", 1000, 3, "V100"), gpu_pod("q", 700, 1), gpu_pod("r", 300, 1, "T4")):
        _check(cluster, pod)


ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"


def _term(labels: dict, key: str) -> dict:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key}


def _zoned(i: int, zone: str, cpu: str = "4") -> dict:
    return node(f"n{i}", cpu=cpu, labels={ZONE: zone, HOST: f"n{i}"})


def test_inter_pod_affinity_codes_mixed_with_another_filter():
    """InterPodAffinity's three reasons on different nodes (its codes
    counted, not sorted) beside NodeResourcesFit's: as per node."""
    nodes = [_zoned(0, "z0"), _zoned(1, "z0"), _zoned(2, "z0", cpu="1"),
             _zoned(3, "z1"), _zoned(4, "z2"), _zoned(5, "z1")]
    bound = [pod("a", on="n0", labels={"app": "a"}),
             pod("x", on="n1", labels={"app": "x"}, spec={"affinity": {"podAntiAffinity": {
                 "requiredDuringSchedulingIgnoredDuringExecution": [
                     _term({"app": "p"}, HOST)]}}})]
    cluster = build_cluster(nodes + bound)
    incoming = pod("p", cpu="2", labels={"app": "p"}, spec={"affinity": {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term({"app": "a"}, ZONE)]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term({"app": "a"}, HOST)]}}})
    _check(cluster, incoming)
    for backend in ("numpy", "numba"):
        _check(cluster, incoming, backend)


def test_one_plugin_rejecting_every_node():
    """The usual failure (every node rejected by one plugin's one reason)
    reads as per node, through each backend."""
    nodes = [_zoned(i, f"z{i % 2}") for i in range(8)]
    bound = [pod(f"b{i}", on=f"n{i}", labels={"app": "w"}) for i in range(8)]
    cluster = build_cluster(nodes + bound)
    anti = pod("w", labels={"app": "w"}, spec={"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [_term({"app": "w"}, HOST)]}}})
    for backend in ("numpy", "numba"):
        _check(cluster, anti, backend)
    _check(cluster, pod("big", cpu="64"))


def test_empty_statuses_read_as_an_empty_mapping():
    d = Diagnosis(num_all_nodes=3)
    assert isinstance(d.node_statuses, NodeStatuses) and dict(d.node_statuses) == {}
    assert d.message() == "0/3 nodes are available:"
