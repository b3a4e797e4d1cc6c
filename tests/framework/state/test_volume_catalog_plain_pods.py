"""The volume catalog (``state.volumes.VolumeCatalog``) hears of a pod whose
manifest lists no volumes without parsing it (``pod_volumes`` not asked,
no memo entry made: a preemptor's victims and its bind, one after another
of one template); pods with claims among them are followed as before."""

from __future__ import annotations

from tensorsched.framework.parsing import volumes as PV
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.state import volumes as SV
from tensorsched.framework.state.volumes import volume_catalog


def _node(name):
    return {"kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}


def _pod(name, claim=None):
    spec = {"containers": [{"name": "c", "image": "pause",
                            "resources": {"requests": {"cpu": "100m"}}}]}
    if claim is not None:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _play():
    cluster = build_cluster([_node("n0"), _node("n1")])
    state = cluster.state
    cat = volume_catalog(state)
    pods = [cluster.resolve(_pod(f"p{k}", claim="data" if k % 3 == 1 else None))
            for k in range(6)]
    for k, p in enumerate(pods):
        state.add_pod(p, f"n{k % 2}")
    for p in pods[0:3]:             # p4 (a claim) and p3, p5 stay
        state.remove_pod(p.key)
    return cat, pods


def test_pods_without_volumes_are_not_parsed(monkeypatch):
    asked = []
    real = SV.pod_volumes

    def counted(pod):
        asked.append(pod.key)
        return real(pod)
    monkeypatch.setattr(SV, "pod_volumes", counted)
    cat, pods = _play()
    # only the pods with a claim (p1, p4) were asked
    assert set(asked) == {"default/p1", "default/p4"}
    assert {row: sorted(on) for row, on in cat.row_pods.items() if on} == {0: ["default/p4"]}
    # the plain pods' class memo names no pod but the one it was parsed with
    # (no entry made per pod heard of)
    for p in pods:
        if not p.obj["spec"].get("volumes"):
            got = p.pod_class.memo.get(PV._POD_VOLUMES_MEMO)
            assert got is None or got == (p.name, ())
