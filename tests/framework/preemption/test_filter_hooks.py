"""Preemption for a pod asking a DRA-served extended resource
(DRAExtendedResource): NodeResourcesFit leaves the resource to
DynamicResources on nodes whose allocatable does not list it, in the victim
search too, and a victim frees what upstream's dry run frees (its named
claims, not the claim made for its extended resources).  Every backend
against the scalar reference ``reference.dra_preemption`` on random
clusters, the scheduler loop end to end, and the state left as it was."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference.dra_preemption import Bound, Node, oracle_dra_victims, oracle_pick_one_node
from support.backends import backend_params, needs_cuda

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.preemption.evaluator import fits_on_row
from tensorsched.framework.preemption.host_search import active_host_filters
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.framework.state.dra_claims import ClaimState

RES = "example.com/gpu"
FILTERS = ["NodeResourcesFit", "DynamicResources"]
CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler", "plugins": {
        "multiPoint": {"disabled": [{"name": "*"}]},
        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
        "bind": {"enabled": [{"name": "DefaultBinder"}]},
        "preFilter": {"enabled": [{"name": f} for f in FILTERS]},
        "filter": {"enabled": [{"name": f} for f in FILTERS]},
        "reserve": {"enabled": [{"name": "DynamicResources"}]},
        "preBind": {"enabled": [{"name": "DynamicResources"}]},
        "postFilter": {"enabled": [{"name": "DefaultPreemption"}]}}}],
}
CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
         "metadata": {"name": "gpu"}, "spec": {"extendedResourceName": RES}}


def _node_obj(n: Node) -> list:
    alloc = {"cpu": f"{n.cpu}m", "memory": "1Gi", "pods": str(n.pods)}
    if n.listed is not None:
        alloc[RES] = str(n.listed)
    out = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n.name},
            "status": {"allocatable": alloc, "capacity": dict(alloc)}}]
    if n.devices:
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                    "metadata": {"name": f"{n.name}-gpus"},
                    "spec": {"driver": "d", "pool": {"name": n.name, "generation": 0,
                                                     "resourceSliceCount": 1},
                             "nodeName": n.name,
                             "devices": [{"name": f"g{i}"} for i in range(n.devices)]}})
    return out


def _claim(name, pod: Bound, requests, devices, extended: bool) -> dict:
    meta = {"name": name, "namespace": "default", "uid": f"u-{name}"}
    if extended:
        meta["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "true"}
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": pod.name,
                                    "uid": f"u-{pod.name}", "controller": True}]
    results = [{"request": req, "driver": "d", "pool": pod.node, "device": dev}
               for req, dev in zip(requests, devices)]
    spec_reqs = [{"name": req, "exactly": {"deviceClassName": "gpu",
                                           "allocationMode": "ExactCount", "count": 1}}
                 for req in dict.fromkeys(requests)]
    if extended:
        spec_reqs = [{"name": requests[0], "exactly": {
            "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": len(devices)}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
            "spec": {"devices": {"requests": spec_reqs}},
            "status": {"allocation": {"devices": {"results": results}},
                       "reservedFor": [{"resource": "pods", "name": pod.name,
                                        "uid": f"u-{pod.name}"}]}}


def _bound_objs(b: Bound, node: Node, first_device: int) -> list:
    """The pod and its claims; devices from ``first_device`` on."""
    c = {"name": "c", "image": "pause",
         "resources": {"requests": {"cpu": f"{b.cpu}m", "memory": "1Mi"}}}
    if b.ext:
        c["resources"]["requests"][RES] = str(b.ext)
    spec = {"containers": [c], "priority": b.prio, "nodeName": b.node}
    out = []
    dev = first_device
    if b.claim:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": f"{b.name}-c"}]
        c["resources"]["claims"] = [{"name": "gpu"}]
        out.append(_claim(f"{b.name}-c", b, ["gpu"], [f"g{dev}"], False))
        dev += 1
    if b.dra_served(node):
        out.append(_claim(f"{b.name}-extended-resources-0", b, ["container-0-request-0"] * b.ext,
                          [f"g{dev + i}" for i in range(b.ext)], True))
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": b.name, "namespace": "default", "uid": f"u-{b.name}"},
           "spec": spec, "status": {"startTime": f"2024-01-01T00:00:{b.start:02d}Z"}}
    return [pod] + out


@st.composite
def clusters(draw, max_nodes=4, max_pods=4):
    nodes, bound = [], []
    for i in range(draw(st.integers(1, max_nodes))):
        listed = draw(st.sampled_from([None, None, 0, 1, 3]))
        n = Node(f"n{i}", draw(st.sampled_from([600, 1000])), listed,
                 draw(st.integers(0, 3)), draw(st.sampled_from([3, 110])))
        nodes.append(n)
        cpu_left, dev_left, ext_left = n.cpu, n.devices, n.listed or 0
        for k in range(draw(st.integers(0, min(max_pods, n.pods)))):
            cpu = draw(st.sampled_from([100, 200, 300]))
            if cpu > cpu_left:
                continue
            claim = draw(st.booleans()) and dev_left > 0
            dev_left -= int(claim)
            ext = draw(st.integers(0, 2))
            ext = min(ext, dev_left) if not n.listed else min(ext, ext_left)
            if not n.listed:
                dev_left -= ext
            else:
                ext_left -= ext
            cpu_left -= cpu
            bound.append(Bound(f"p{i}-{k}", n.name, draw(st.sampled_from([-5, 0, 3, 7])), cpu,
                               ext, claim, draw(st.integers(0, 5))))
    pre = (draw(st.sampled_from([0, 3, 10])), draw(st.sampled_from([100, 400, 800])),
           draw(st.integers(1, 2)))
    return nodes, bound, pre


def _objects(nodes, bound) -> list:
    objs = [CLASS]
    by_name = {n.name: n for n in nodes}
    used = {n.name: 0 for n in nodes}
    for n in nodes:
        objs += _node_obj(n)
    for b in bound:
        objs += _bound_objs(b, by_name[b.node], used[b.node])
        used[b.node] += int(b.claim) + (b.ext if b.dra_served(by_name[b.node]) else 0)
    return objs


def _preemptor(pre) -> dict:
    prio, cpu, ext = pre
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "preemptor", "namespace": "default", "uid": "u-preemptor"},
            "spec": {"priority": prio, "containers": [{"name": "c", "image": "pause", "resources": {
                "requests": {"cpu": f"{cpu}m", "memory": "1Mi", RES: str(ext)}}}]}}


def _cluster(nodes, bound, backend, pod_obj):
    cluster = build_cluster(_objects(nodes, bound), CONFIG)
    pod = cluster.resolve(pod_obj)
    fw = cluster.framework_for(pod, backend)
    fw.plugins[names.DYNAMIC_RESOURCES].extended_resources = True
    return cluster, pod, fw


def _claims_now(state) -> dict:
    store = ClaimState.of(state)
    return ({k: (e.allocation, [r.name for r in e.reserved_for]) for k, e in store.claims.items()},
            set(store.devices_in_use))


def _check(nodes, bound, pre, backend):
    want = {n.name: oracle_dra_victims(*pre, n, [b for b in bound if b.node == n.name])
            for n in nodes}
    cluster, pod, fw = _cluster(nodes, bound, backend, _preemptor(pre))
    before = _claims_now(cluster.state)
    result = fw.run_cycle(cluster.state, pod, all_nodes=True)
    plugin = fw.plugins_at("postFilter")[0]
    ctx = CycleContext(cluster.state, pod, fw)
    rows = cluster.state.valid_rows()
    kw = dict(offset=0, num_cands=rows.shape[0], potential_rows=rows)
    dry = plugin.post_filter(ctx, result, cluster.pod_table(), dry_run_all=True, **kw)
    full = plugin.post_filter(ctx, result, cluster.pod_table(), **kw)
    got = {c.node: c.victims for c in dry.candidates}
    assert got == {n: r["victims"] for n, r in want.items() if r["status"] == "ok"}
    assert dry.filter_calls == sum(r["filter_calls"] for r in want.values())
    order = [c.node for c in dry.candidates]
    assert full.nominated_node == oracle_pick_one_node([(n, want[n]) for n in order])
    if full.nominated_node is not None:
        assert full.victims == want[full.nominated_node]["victims"]
    # the search put every claim back as it was
    assert _claims_now(cluster.state) == before


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(clusters())
def test_victims_of_a_dra_extended_resource_pod_match_the_reference(case):
    nodes, bound, pre = case
    for backend in ("numpy", "numba"):
        _check(nodes, bound, pre, backend)


@pytest.mark.cudasim
@needs_cuda
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(clusters(max_nodes=3, max_pods=3))
def test_victims_of_a_dra_extended_resource_pod_on_cuda(case):
    nodes, bound, pre = case
    _check(nodes, bound, pre, "cuda")


@pytest.mark.parametrize("backend", backend_params())
def test_nodes_of_every_kind_match_the_reference(backend):
    # n0: DRA devices serve the resource (not listed); n1: a device plugin
    # lists 3; n2 lists 0 (NodeResourcesFit refuses it whatever goes)
    nodes = [Node("n0", 1000, None, 2), Node("n1", 1000, 3, 0), Node("n2", 1000, 0, 2)]
    bound = [Bound("a", "n0", 0, 100, 0, True, 1), Bound("b", "n0", 0, 100, 1, False, 2),
             Bound("c", "n1", 0, 100, 3, False, 3), Bound("d", "n2", 0, 100, 0, True, 4)]
    _check(nodes, bound, (10, 100, 1), backend)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_victim_named_claim_frees_its_device_its_extended_claim_does_not(backend):
    # n0: 2 DRA devices, one held by lo-claim's named claim, one by
    # lo-ext's extended-resource claim; the preemptor asks 1 device
    n0 = Node("n0", 1000, None, 2)
    lo_claim = Bound("lo-claim", "n0", 0, 100, 0, True, 1)
    lo_ext = Bound("lo-ext", "n0", 0, 100, 1, False, 2)
    cluster, pod, _ = _cluster([n0], [lo_claim, lo_ext], backend, _preemptor((10, 100, 1)))
    sched = Scheduler(cluster, backend, 0)
    out, pre = sched.schedule_pending([_preemptor((10, 100, 1))])
    # only the named claim's device can be freed by the dry run: lo-claim goes
    assert [p["preemptor"] for p in pre] == ["default/preemptor"]
    assert out[0].victims == ["default/lo-claim"]
    assert out[0].node == "n0"
    store = ClaimState.of(cluster.state)
    assert store.get("default", "lo-claim-c").allocation is None
    assert store.get("default", "lo-ext-extended-resources-0").allocation is not None
    assert store.get("default", "preemptor-extended-resources-0").allocation is not None


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_only_an_extended_claim_in_the_way_means_no_candidate(backend):
    n0 = Node("n0", 1000, None, 1)
    lo = Bound("lo", "n0", 0, 100, 1, False, 1)
    cluster, _, _ = _cluster([n0], [lo], backend, _preemptor((10, 100, 1)))
    out, pre = Scheduler(cluster, backend, 0).schedule_pending([_preemptor((10, 100, 1))])
    assert out[0].node is None and not pre
    assert out[0].message.endswith(
        "preemption: 0/1 nodes are available: 1 cannot allocate all claims.")


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_the_nominated_node_check_leaves_the_resource_to_dra(backend):
    nodes = [Node("n0", 1000, None, 2), Node("n1", 1000, 0, 2)]
    cluster, pod, fw = _cluster(nodes, [], backend, _preemptor((10, 100, 1)))
    result = fw.run_cycle(cluster.state, pod, all_nodes=True)
    ctx = CycleContext(cluster.state, pod, fw)
    host = active_host_filters(fw, ctx, result.skipped_filters)
    assert [p.name for p in host] == [names.DYNAMIC_RESOURCES]
    rows = cluster.state.node_rows
    # n0 lists no example.com/gpu: its free devices serve it; n1 lists 0
    assert fits_on_row(cluster.state, result.query, rows["n0"], host, ctx)
    assert not fits_on_row(cluster.state, result.query, rows["n1"], host, ctx)
    # without the host filters' say NodeResourcesFit counts it on n0 too
    assert not fits_on_row(cluster.state, result.query, rows["n0"])
