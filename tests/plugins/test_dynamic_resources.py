"""DynamicResources end to end: a small DRA cluster through the Scheduler
(``schedule_pending``), preemption, pods leaving, runs, explain."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.backends import backend_params

from tensorsched.generators import dra_clusters as DC
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.preemption.host_search import Suspension
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.framework.state.dra_claims import ClaimState

BACKENDS = backend_params(("numpy", "numba"))


def _cluster(nodes: int, extra=()):
    objs, _ = DC.dra(nodes, 0)
    return build_cluster(objs + list(extra))


def _devices_by_node(store: ClaimState) -> dict:
    out: dict = {}
    for e in store.claims.values():
        if e.allocation is not None:
            for r in e.allocation.results:
                out.setdefault(r.pool, []).append(r.device)
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_gpu_once_then_cannot_allocate(backend):
    cluster = _cluster(2)
    _, pods = DC.dra(2, 20)
    out, _ = Scheduler(cluster, backend, 0).schedule_pending(pods)
    placed = [b for b in out if b.node]
    assert len(placed) == 16
    store = ClaimState.of(cluster.state)
    by_node = _devices_by_node(store)
    assert sorted(by_node) == ["node-0", "node-1"]
    for devs in by_node.values():
        assert sorted(devs) == sorted(f"gpu-{i}" for i in range(8))     # each GPU once
    assert len(store.devices_in_use) == 16 and not store.in_flight
    # each placed pod holds its own generated claim, reserved for it
    for b in placed:
        ns, name = b.pod.split("/")
        e = store.get(ns, f"{name}-gpu")
        assert e.allocation.results[0].pool == b.node
        assert [r.name for r in e.reserved_for] == [name]
    failed = [b for b in out if not b.node]
    assert len(failed) == 4
    assert "0/2 nodes are available: 2 cannot allocate all claims." in failed[0].message


def test_same_placements_on_numpy_and_numba():
    got = []
    for backend in ("numpy", "numba"):
        cluster = _cluster(3)
        _, pods = DC.dra(3, 30)
        out, _ = Scheduler(cluster, backend, 0).schedule_pending(pods)
        got.append(sorted((b.pod, b.node) for b in out))
    assert got[0] == got[1]


def test_pod_with_claims_on_a_cluster_without_dra_objects_is_not_placed():
    objs, _ = DC.dra(1, 0)
    plain = [o for o in objs if o["kind"] == "Node"]
    cluster = build_cluster(plain)
    out, _ = Scheduler(cluster, "numpy", 0).schedule_pending([DC.claim_pod("p", "one-gpu")])
    assert out[0].node is None
    assert "waiting for resource claim template default/one-gpu" in out[0].message


def test_a_named_claim_that_does_not_exist_is_not_placed():
    cluster = _cluster(1)
    pod = DC.claim_pod("p", "one-gpu")
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "nope"}]
    out, _ = Scheduler(cluster, "numpy", 0).schedule_pending([pod])
    assert out[0].node is None
    assert 'resourceclaim.resource.k8s.io "nope" not found' in out[0].message


def test_a_leaving_pod_frees_its_devices():
    cluster = _cluster(1)
    _, pods = DC.dra(1, 9)
    sched = Scheduler(cluster, "numpy", 0)
    out, _ = sched.schedule_pending(pods)
    assert sum(1 for b in out if b.node) == 8
    store = ClaimState.of(cluster.state)
    cluster.state.remove_pod("default/pod-3")          # deleted: its claim goes with it
    assert store.get("default", "pod-3-gpu") is None
    assert len(store.devices_in_use) == 7
    out, _ = sched.schedule_pending([DC.claim_pod("late", "one-gpu")])
    assert out[0].node == "node-0"
    assert store.get("default", "late-gpu").allocation.results[0].device == "gpu-3"


def test_update_pod_keeps_its_claims():
    cluster = _cluster(1)
    _, pods = DC.dra(1, 2)
    Scheduler(cluster, "numpy", 0).schedule_pending(pods)
    state = cluster.state
    store = ClaimState.of(state)
    rec = state.pods.record("default/pod-0")
    state.update_pod(rec, "node-0")
    e = store.get("default", "pod-0-gpu")
    assert e is not None and e.allocation is not None
    assert len(store.devices_in_use) == 2


def test_suspension_gives_every_claim_back():
    cluster = _cluster(1)
    _, pods = DC.dra(1, 4)
    Scheduler(cluster, "numpy", 0).schedule_pending(pods)
    store = ClaimState.of(cluster.state)
    before = {k: (e.allocation, list(e.reserved_for)) for k, e in store.claims.items()}
    held = Suspension(cluster.state)
    for k in ("default/pod-0", "default/pod-2"):
        held.remove(k)
    assert len(store.devices_in_use) == 2
    held.restore()
    after = {k: (e.allocation, list(e.reserved_for)) for k, e in store.claims.items()}
    assert after == before
    assert len(store.devices_in_use) == 4


@pytest.mark.parametrize("backend", BACKENDS)
def test_preemption_frees_devices_and_never_helps_the_impossible(backend):
    nine = DC.claim_template("nine-gpus", [{"name": "gpu", "exactly": {
        "deviceClassName": DC.GPU_CLASS, "allocationMode": "ExactCount", "count": 9}}])
    cluster = _cluster(1, [nine])
    _, pods = DC.dra(1, 8)
    sched = Scheduler(cluster, backend, 0)
    out, _ = sched.schedule_pending(pods)
    assert all(b.node for b in out)
    hi = DC.claim_pod("hi", "one-gpu")
    hi["spec"]["priority"] = 100
    big = DC.claim_pod("big", "nine-gpus")
    big["spec"]["priority"] = 100
    out, pre = sched.schedule_pending([big, hi])
    got = {b.pod: b for b in out}
    assert got["default/hi"].node == "node-0"
    assert len(got["default/hi"].victims) == 1
    assert got["default/big"].node is None and not got["default/big"].victims
    assert [p["preemptor"] for p in pre] == ["default/hi"]
    store = ClaimState.of(cluster.state)
    victim = got["default/hi"].victims[0].split("/")[1]
    assert store.get("default", f"{victim}-gpu") is None
    assert len(store.devices_in_use) == 8


def test_template_claim_pods_sign_by_their_templates():
    cluster = _cluster(1)
    fw = cluster.framework_for(parse_pod(DC.claim_pod("a", "one-gpu")), "numba")
    a = parse_pod(DC.claim_pod("a", "one-gpu"))
    b = parse_pod(DC.claim_pod("b", "one-gpu"))
    other = parse_pod(DC.claim_pod("c", "one-mig"))
    named = DC.claim_pod("d", "one-gpu")
    named["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
    listed = DC.claim_pod("e", "one-gpu")
    listed["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "e-gpu"}]}
    plain = parse_pod({**DC.claim_pod("f", "one-gpu"),
                       "spec": {"containers": [{"name": "c", "image": "x"}]}})
    assert fw.signature(a) is not None and fw.signature(a) == fw.signature(b)
    assert fw.signature(other) != fw.signature(a)
    # a claim named by the pod (maybe shared, maybe allocated) or one the
    # pod's status already names keeps the pod on its own
    assert fw.signature(parse_pod(named)) is None
    assert fw.signature(parse_pod(listed)) is None
    assert fw.signature(plain) is not None


def test_allocated_claims_of_bound_pods_count_as_in_use():
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "held", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                 "deviceClassName": DC.GPU_CLASS, "allocationMode": "ExactCount",
                 "count": 1}}]}},
             "status": {"allocation": {"devices": {"results": [
                 {"request": "gpu", "driver": DC.DRIVER, "pool": "node-0", "device": f"gpu-{i}"}
                 for i in range(7)]}},
                 "reservedFor": [{"resource": "pods", "name": "running", "uid": "u1"}]}}
    running = DC.claim_pod("running", "one-gpu")
    running["metadata"]["uid"] = "u1"
    running["spec"]["nodeName"] = "node-0"
    running["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "held"}]
    cluster = _cluster(1, [claim, running])
    store = ClaimState.of(cluster.state)
    assert len(store.devices_in_use) == 7
    out, _ = Scheduler(cluster, "numpy", 0).schedule_pending(
        [DC.claim_pod("a", "one-gpu"), DC.claim_pod("b", "one-gpu")])
    got = {b.pod: b for b in out}
    assert got["default/a"].node == "node-0"
    assert store.get("default", "a-gpu").allocation.results[0].device == "gpu-7"
    assert got["default/b"].node is None
    cluster.state.remove_pod("default/running")      # reserved for nobody: deallocated
    assert store.get("default", "held").allocation is None
    assert len(store.devices_in_use) == 1


def test_pairs_under_one_pcie_root_and_mig_devices():
    objs, pods = DC.dra_gpu(2, 0)
    cluster = build_cluster(objs)
    pair = DC.claim_pod("pair", "two-gpus-one-root")
    mig = DC.claim_pod("mig", "one-mig")
    out, _ = Scheduler(cluster, "numpy", 0).schedule_pending([pair, mig])
    assert all(b.node for b in out)
    store = ClaimState.of(cluster.state)
    e = store.get("default", "pair-gpu")
    devs = sorted(r.device for r in e.allocation.results)
    assert devs == ["gpu-0", "gpu-1"]                   # pci-0 holds gpu-0 and gpu-1
    m = store.get("default", "mig-gpu").allocation.results[0]
    assert m.pool == "node-1" and "mig-1g10gb" in m.device   # MIG devices on odd nodes only


def test_explain_names_the_plugin_and_reason():
    cluster = _cluster(1)
    _, pods = DC.dra(1, 8)
    Scheduler(cluster, "numpy", 0).schedule_pending(pods)
    record = explain_pod(cluster, DC.claim_pod("x", "one-gpu"))
    assert record["selected"] is None
    # which request failed on the node, and why
    assert record["filter"]["node-0"] == {
        "code": "UnschedulableAndUnresolvable", "plugin": "DynamicResources",
        "reasons": ["cannot allocate all claims: claim default/x-gpu, request gpu: 0 of 1 "
                    "devices available (8 match the selectors, 8 in use)"]}
    # explain leaves the cluster as it was: the claim its look generated is gone
    store = ClaimState.of(cluster.state)
    assert store.get("default", "x-gpu") is None and len(store.claims) == 8
    # a bound pod explained in place keeps its own claim
    record = explain_pod(cluster, cluster.state.pods.record("default/pod-0"))
    assert record["bound_node"] == "node-0"
    assert store.get("default", "pod-0-gpu").allocation is not None
    assert len(store.devices_in_use) == 8


def test_invalid_pod_claim_status_is_a_clear_rejection():
    cluster = _cluster(1)
    pod = copy.deepcopy(DC.claim_pod("p", "one-gpu"))
    pod["status"] = {"resourceClaimStatuses": [{"resourceClaimName": "x"}]}
    out, _ = Scheduler(cluster, "numpy", 0).schedule_pending([pod])
    assert out[0].node is None
    assert "status.resourceClaimStatuses[0].name: required" in out[0].message


@settings(max_examples=8, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(DC.DRA_GPU_TEMPLATES), st.booleans()),
                min_size=1, max_size=14), st.integers(0, 3))
def test_kept_feasibility_equals_a_fresh_pass(steps, probe_seed):
    """The per-kind feasibility Filter keeps (refreshed on touched nodes
    only) equals a fresh allocator pass after any placements and departures."""
    objs, _ = DC.dra_gpu(3, 0)
    cluster = build_cluster(objs)
    sched = Scheduler(cluster, "numpy", 0)
    state = cluster.state
    for i, (template, leave) in enumerate(steps):
        out, _ = sched.schedule_pending([DC.claim_pod(f"p{i}", template)])
        if leave and out[0].node:
            state.remove_pod(out[0].pod)
    fw = cluster.framework_for(parse_pod(DC.claim_pod("probe", "one-gpu")), "numpy")
    kept = fw.plugins["DynamicResources"]
    fresh = type(kept)(kept.args, None, kept.features)
    rows = state.valid_rows()
    for template in DC.DRA_GPU_TEMPLATES:
        pod = parse_pod(DC.claim_pod(f"probe-{template}-{probe_seed}", template))
        got = []
        for plugin in (kept, fresh):
            ctx = CycleContext(state, pod, fw)
            st_, _ = plugin.pre_filter(ctx)
            assert st_.ok
            got.append(plugin.filter(ctx, rows).tolist())
        assert got[0] == got[1], template


def test_simulation_departures_free_devices_for_later_arrivals():
    from tensorsched.framework.simulation.simulation import Simulation
    objs, _ = DC.dra(1, 0)
    sim = Simulation(objs, None, "numpy", 0, interval=None)
    sim.submit([DC.claim_pod(f"a{i}", "one-gpu") for i in range(8)], at=0.0, duration=60.0)
    sim.submit([DC.claim_pod(f"b{i}", "one-gpu") for i in range(8)], at=30.0)
    bound = []
    sim.on("Bound", lambda e: bound.append((e["pod"], e["node"])))
    sim.run()
    # the second wave waits until the first leaves at t=60, then gets all 8 GPUs
    assert sorted(p for p, _ in bound if p.startswith("default/b")) == \
        sorted(f"default/b{i}" for i in range(8))
    store = ClaimState.of(sim.cluster.state)
    assert all(store.get("default", f"a{i}-gpu") is None for i in range(8))
    assert len(store.devices_in_use) == 8


def _extended_cluster(devices: int):
    """One node without example.com/gpu in allocatable, a class serving it,
    ``devices`` devices there; a profile of DynamicResources alone (the
    NodeResourcesFit side of DRA extended resources is not modelled)."""
    from tensorsched.framework.plugins.dra_extended import CLAIM_ANNOTATION
    prof = {"schedulerName": "default-scheduler",
            "plugins": {"multiPoint": {"disabled": [{"name": "*"}],
                                       "enabled": [{"name": "PrioritySort"},
                                                   {"name": "DefaultBinder"},
                                                   {"name": "DynamicResources"}]}}}
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1",
              "kind": "KubeSchedulerConfiguration", "profiles": [prof]}
    objs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "w"}},
            {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
             "metadata": {"name": "gpu"}, "spec": {"extendedResourceName": "example.com/gpu"}},
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
             "metadata": {"name": "w-gpus"},
             "spec": {"driver": "d", "pool": {"name": "w", "generation": 0,
                                              "resourceSliceCount": 1},
                      "nodeName": "w", "devices": [{"name": f"g{i}"} for i in range(devices)]}}]
    return build_cluster(objs, config), CLAIM_ANNOTATION


def _gpu_pod(name: str, count: int):
    return parse_pod({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": name, "namespace": "default", "uid": f"u-{name}"},
                      "spec": {"containers": [{"name": "c", "resources": {
                          "requests": {"example.com/gpu": str(count)}}}]}})


@pytest.mark.parametrize("backend", BACKENDS)
def test_extended_resource_claim_is_made_only_with_the_gate_and_goes_with_the_pod(backend):
    from tensorsched.framework.plugins import dynamic_resources as dr
    cluster, annotation = _extended_cluster(3)
    store = ClaimState.of(cluster.state)
    pod = _gpu_pod("p", 2)
    fw = cluster.framework_for(pod, backend)
    plugin = fw.plugins[dr.NAME]
    # gate off (the default): the plugin has nothing to do for the pod
    assert plugin.sign(pod) == ()
    result = fw.run_cycle(cluster.state, pod, all_nodes=True)
    assert dr.NAME in result.skipped_filters and not store.claims
    # gate on: the node's devices serve the request; Unreserve drops the claim
    plugin.extended_resources = True
    assert plugin.sign(pod) is None
    result = fw.run_cycle(cluster.state, pod, all_nodes=True)
    assert dr.NAME not in result.skipped_filters and len(result.rows) == 1
    ctx = CycleContext(cluster.state, pod, fw)
    assert plugin.reserve(ctx, "w").ok and len(store.devices_in_use) == 2
    plugin.unreserve(ctx, "w")
    assert not store.claims and not store.devices_in_use
    # placed, the claim made for it holds the devices until the pod leaves
    out, _ = Scheduler(cluster, backend, 0).schedule_pending([pod])
    assert out[0].node == "w"
    (e,) = store.claims.values()
    assert e.record.name == "p-extended-resources-0"
    assert e.record.obj["metadata"]["annotations"] == {annotation: "true"}
    assert [r.name for r in e.reserved_for] == ["p"] and len(store.devices_in_use) == 2
    # a second pod asking for 2 finds only 1 device left
    out, _ = Scheduler(cluster, backend, 0).schedule_pending([_gpu_pod("q", 2)])
    assert out[0].node is None and "cannot allocate all claims" in out[0].message
    cluster.state.remove_pod("default/p")
    assert not store.claims and not store.devices_in_use


def _fit_cluster():
    """The default profile; node w lists no example.com/gpu (its 2 DRA
    devices serve it), node z lists it as 0, node p has 4 from a device
    plugin (and no DRA devices)."""
    def node(name, extra=None):
        alloc = {"cpu": "8", "memory": "16Gi", "pods": "110", **(extra or {})}
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                "status": {"allocatable": alloc, "capacity": alloc}}
    def slice_(name):
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-gpus"},
                "spec": {"driver": "d", "pool": {"name": name, "generation": 0,
                                                 "resourceSliceCount": 1},
                         "nodeName": name, "devices": [{"name": f"g{i}"} for i in range(2)]}}
    objs = [node("w"), node("z", {"example.com/gpu": "0"}), node("p", {"example.com/gpu": "4"}),
            {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
             "metadata": {"name": "gpu"}, "spec": {"extendedResourceName": "example.com/gpu"}},
            slice_("w"), slice_("z")]
    return build_cluster(objs)


@pytest.mark.parametrize("backend", BACKENDS)
def test_node_resources_fit_leaves_dra_served_resources_to_dra(backend):
    from tensorsched.framework.plugins import dynamic_resources as dr
    from tensorsched.framework.config import plugin_names as names
    cluster = _fit_cluster()
    pod = _gpu_pod("p1", 2)
    fw = cluster.framework_for(pod, backend)
    plugin = fw.plugins[dr.NAME]

    def reasons():
        ctx = CycleContext(cluster.state, pod, fw)
        result = fw.run_cycle(cluster.state, pod, all_nodes=True)
        out = {}
        for j, r in enumerate(result.rows.tolist()):
            st = fw.node_status(ctx, result, j)
            out[cluster.state.node_name(r)] = None if st is None else (st.plugin, st.reasons)
        return out

    # gate off: NodeResourcesFit counts the resource everywhere
    off = reasons()
    assert off["w"] == (names.NODE_RESOURCES_FIT, ("Insufficient example.com/gpu",))
    assert off["z"] == off["w"] and off["p"] is None
    # gate on: on w (not listed) DRA allocates it; z lists it (as 0), so
    # NodeResourcesFit still refuses there; p's device plugin serves it
    plugin.extended_resources = True
    on = reasons()
    assert on["w"] is None
    assert on["z"] == (names.NODE_RESOURCES_FIT, ("Insufficient example.com/gpu",))
    assert on["p"] is None
    out, _ = Scheduler(cluster, backend, 0).schedule_pending([_gpu_pod("p2", 3)])
    # 3 devices: more than w's 2 DRA devices, so only p's device plugin fits
    assert out[0].node == "p"


def _binding_cluster(timeout: str = "600s"):
    """One node whose one device needs the driver's "attached" condition
    (and fails on "failed"); DRADeviceBindingConditions on; a pod with a
    template claim for it."""
    from tensorsched.framework.plugins import dynamic_resources as dr
    from tensorsched.framework.state.dra_allocator import DraFeatures
    prof = {"schedulerName": "default-scheduler",
            "pluginConfig": [{"name": "DynamicResources",
                              "args": {"bindingTimeout": timeout}}]}
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1",
              "kind": "KubeSchedulerConfiguration", "profiles": [prof]}
    objs, _ = DC.dra(1, 0)
    for o in objs:
        if o["kind"] == "ResourceSlice":
            o["spec"]["devices"] = [dict(o["spec"]["devices"][0],
                                         bindingConditions=["attached"],
                                         bindingFailureConditions=["failed"])]
    cluster = build_cluster(objs, config)
    pod = parse_pod(DC.claim_pod("a", "one-gpu"))
    sched = Scheduler(cluster, "numpy", 0)
    plugin = cluster.framework_for(pod, "numpy").plugins[dr.NAME]
    plugin.features = DraFeatures.from_gates({"DRADeviceBindingConditions",
                                              "DRAResourceClaimDeviceStatus"})
    plugin.set_handle(sched)
    return cluster, sched, pod


def test_prebind_waits_for_binding_conditions_then_binds():
    cluster, sched, pod = _binding_cluster()
    store = ClaimState.of(cluster.state)
    sched.add_pod(pod)
    b = sched.schedule_one()
    assert b.node is None and "waiting on PreBind plugin DynamicResources" in b.message
    assert sched.waiting_pods() == ["default/a"]
    # assumed on its node meanwhile, the claim allocated and reserved
    assert "default/a" in cluster.state.pods
    e = store.get("default", "a-gpu")
    assert e.allocation is not None and [r.name for r in e.reserved_for] == ["a"]
    sched.advance(30.0)                         # nothing reported yet: still waiting
    assert sched.waiting_pods() == ["default/a"]
    with pytest.raises(Exception, match="not allocated"):
        store.report_conditions(e.key, (DC.DRIVER, "node-0", "gpu-7"), {"attached"})
    store.report_conditions(e.key, (DC.DRIVER, "node-0", "gpu-0"), {"attached"})
    sched.advance(1.0)
    assert not sched.waiting_pods()
    assert sched.outcomes["default/a"].node == "node-0"


@pytest.mark.parametrize("report,message", [({"failed"}, "binding failed"),
                                            (None, "device binding timeout")])
def test_prebind_fails_on_a_failure_condition_or_the_timeout(report, message):
    cluster, sched, pod = _binding_cluster("60s")
    store = ClaimState.of(cluster.state)
    sched.add_pod(pod)
    sched.schedule_one()
    if report is not None:
        store.report_conditions("default/a-gpu", (DC.DRIVER, "node-0", "gpu-0"), report)
        sched.advance(1.0)
    else:
        sched.advance(59.0)
        assert sched.waiting_pods() == ["default/a"]
        sched.advance(2.0)
    assert not sched.waiting_pods() and sched.bind_failures == 1
    got = sched.outcomes["default/a"]
    assert got.node is None and message in got.message
    assert "default/a" not in cluster.state.pods      # forgotten, requeued


def _pinned_to_a_cordoned_node(extra=()):
    """Two GPU nodes; claim ``held`` allocated gpu-0 of node-0, reserved for
    nobody; node-0 cordoned.  A pod naming the claim cannot go to node-0
    and the claim is not available elsewhere."""
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "held", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                 "deviceClassName": DC.GPU_CLASS, "count": 1}}]}},
             "status": {"allocation": {
                 "devices": {"results": [{"request": "gpu", "driver": DC.DRIVER,
                                          "pool": "node-0", "device": "gpu-0"}]},
                 "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                     {"key": "metadata.name", "operator": "In", "values": ["node-0"]}]}]}}}}
    objs, _ = DC.dra(2, 0)
    for o in objs:
        if o["kind"] == "Node" and o["metadata"]["name"] == "node-0":
            o["spec"] = {"unschedulable": True, "taints": [
                {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}
    pod = DC.claim_pod("p", "one-gpu")
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "held"}]
    return build_cluster(objs + [claim, *extra]), pod


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_claim_deallocated_by_post_filter_lets_the_pod_try_again(backend):
    """Upstream's PostFilter deallocates the claim (reserved for nobody, not
    available where the pod could go); the claim's update queues the pod,
    whose next attempt allocates it on the other node."""
    cluster, pod = _pinned_to_a_cordoned_node()
    out, _ = Scheduler(cluster, backend, 0).schedule_pending([pod])
    assert out[-1].node == "node-1"
    e = ClaimState.of(cluster.state).get("default", "held")
    assert e.allocation.results[0].pool == "node-1"
    assert [r.name for r in e.reserved_for] == ["p"]


def test_explain_leaves_a_claim_post_filter_deallocates_allocated():
    """explain runs PostFilter as a dry run: the claim keeps its allocation
    and its devices stay in use; the record and the message agree."""
    from tensorsched.framework.scheduler.explain import failed_scheduling_message

    cluster, pod = _pinned_to_a_cordoned_node()
    store = ClaimState.of(cluster.state)
    for _ in range(2):
        record = explain_pod(cluster, pod)
        assert record["selected"] is None
        assert record["filter"]["node-1"]["reasons"] == ["resourceclaim not available on the node"]
        e = store.get("default", "held")
        assert e.allocation is not None and e.allocation.results[0].pool == "node-0"
        assert store.devices_in_use == {(DC.DRIVER, "node-0", "gpu-0")}
    assert failed_scheduling_message(cluster, pod) == (
        "0/2 nodes are available: 1 node(s) were unschedulable, "
        "1 resourceclaim not available on the node.")


def test_explain_under_a_running_scheduler_moves_none_of_its_pods():
    """The deallocation explain's PostFilter makes is undone after it: no
    claim event reaches the running Scheduler's queue, whose pod waiting
    on devices stays unschedulable (not sent to backoff)."""
    many = DC.claim_template("many", [{"name": "gpu", "exactly": {
        "deviceClassName": DC.GPU_CLASS, "count": 64}}])
    cluster, pod = _pinned_to_a_cordoned_node([many])
    sched = Scheduler(cluster, "numpy", 0)
    sched.add_pod(parse_pod(DC.claim_pod("waiting", "many")))
    sched.schedule_one()
    assert "default/waiting" in sched.queue.unschedulable
    record = explain_pod(cluster, pod)
    assert record["selected"] is None
    assert "default/waiting" in sched.queue.unschedulable
    # a real deallocation (the pod scheduled) still queues it again
    sched.add_pod(parse_pod(pod))
    sched.schedule_one()
    assert "default/waiting" not in sched.queue.unschedulable


def test_explain_shows_the_devices_each_claim_would_get():
    """The record names the devices Reserve would take on the selected node;
    a pod without claims has no "claims" key; a pod that fits nowhere has
    None."""
    cluster = _cluster(1)
    Scheduler(cluster, "numpy", 0).schedule_pending(
        [DC.claim_pod(f"run-{i}", "one-gpu") for i in range(3)])
    record = explain_pod(cluster, DC.claim_pod("x", "one-gpu"))
    assert record["selected"] == "node-0"
    assert record["claims"] == {"default/x-gpu": [
        {"request": "gpu", "driver": DC.DRIVER, "pool": "node-0", "device": "gpu-3"}]}
    assert ClaimState.of(cluster.state).get("default", "x-gpu") is None   # not kept
    plain = DC.claim_pod("plain", "one-gpu")
    del plain["spec"]["resourceClaims"], plain["spec"]["containers"][0]["resources"]["claims"]
    assert "claims" not in explain_pod(cluster, plain)
    cluster, pod = _pinned_to_a_cordoned_node()
    assert explain_pod(cluster, pod)["claims"] is None
