"""Bound pods whose claims the input does not show allocated hold their
devices all the same (``dra_bound.adopt_bound_pods`` at load), or the input
is refused naming the pod and the field."""

from __future__ import annotations

import pytest

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.framework.state.dra_claims import ClaimState
from tensorsched.generators import dra_clusters as DC


def _bound(name, node, claim_name=None):
    pod = DC.claim_pod(name, "one-gpu")
    pod["metadata"]["uid"] = f"uid-{name}"
    pod["spec"]["nodeName"] = node
    if claim_name:
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    return pod


def _claim(name, status=None):
    c = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": name, "namespace": "default"},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
             "deviceClassName": DC.GPU_CLASS, "count": 1}}]}}}
    if status:
        c["status"] = status
    return c


def test_a_bound_pods_template_claim_is_made_allocated_and_reserved():
    objs, _ = DC.dra(1, 0)
    bound = [_bound(f"run-{i}", "node-0") for i in range(7)]
    cluster = build_cluster(objs + bound)
    store = ClaimState.of(cluster.state)
    assert len(store.devices_in_use) == 7
    e = store.get("default", "run-0-gpu")
    assert e.allocation.results[0].pool == "node-0" and [r.name for r in e.reserved_for] == [
        "run-0"]
    out, _ = Scheduler(cluster, "numpy", 0).schedule_pending(
        [DC.claim_pod("a", "one-gpu"), DC.claim_pod("b", "one-gpu")])
    assert [b.node for b in out] == ["node-0", None]      # 8 GPUs, 7 held by bound pods
    cluster.state.remove_pod("default/run-3")             # its claim goes with it
    assert store.get("default", "run-3-gpu") is None and len(store.devices_in_use) == 7


def test_an_allocated_claim_gets_its_bound_pod_in_reserved_for():
    objs, _ = DC.dra(1, 0)
    held = _claim("held", {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": DC.DRIVER, "pool": "node-0", "device": "gpu-5"}]}}})
    cluster = build_cluster(objs + [held, _bound("run", "node-0", "held")])
    store = ClaimState.of(cluster.state)
    e = store.get("default", "held")
    assert [r.name for r in e.reserved_for] == ["run"]
    assert e.allocation.results[0].device == "gpu-5"      # kept as the input has it
    cluster.state.remove_pod("default/run")               # reserved for nobody: freed
    assert store.get("default", "held").allocation is None


@pytest.mark.parametrize("extra, field, words", [
    ([_bound("run", "node-0", "nope")], "spec.resourceClaims[0].resourceClaimName",
     "ResourceClaim default/nope is not in the input"),
    ([_bound(f"run-{i}", "node-0") for i in range(9)], "spec.resourceClaims",
     "cannot be allocated there: claim default/run-8-gpu, request gpu: 0 of 1 devices "
     "available (8 match the selectors, 8 in use)"),
])
def test_bound_pods_whose_claims_cannot_be_there_are_refused(extra, field, words):
    objs, _ = DC.dra(1, 0)
    with pytest.raises(ManifestError) as err:
        build_cluster(objs + extra)
    assert err.value.field == field and words in str(err.value)
