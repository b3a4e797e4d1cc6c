"""In a simulation, claims move with their pods: a StatefulSet pod whose
claim was provisioned in one zone comes back to that zone after it is
deleted, and a snapshot replays the same bindings."""

from __future__ import annotations

from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.framework.state.volumes import volume_catalog

ZONE = "topology.kubernetes.io/zone"


def _objects():
    nodes = [{"kind": "Node", "metadata": {"name": n, "labels": {ZONE: z}},
              "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}}
             for n, z in (("a1", "a"), ("b1", "b"), ("b2", "b"), ("c1", "c"))]
    cls = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
           "metadata": {"name": "zonal"}, "provisioner": "pd.csi.storage.gke.io",
           "volumeBindingMode": "WaitForFirstConsumer"}
    pvc = {"kind": "PersistentVolumeClaim", "metadata": {"name": "data-db-0", "uid": "u0"},
           "spec": {"storageClassName": "zonal",
                    "resources": {"requests": {"storage": "1Gi"}}}}
    return nodes + [cls, pvc]


def _pod():
    return {"kind": "Pod", "metadata": {"name": "db-0"}, "spec": {
        "containers": [{"name": "c", "image": "db",
                        "resources": {"requests": {"cpu": "1"}}}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}]}}


def _zones(sim):
    got = []
    sim.on("Bound", lambda e: got.append(e["node"]))
    return got


def test_pod_comes_back_to_its_volume_zone():
    sim = Simulation(_objects(), backend="numpy", interval=None)
    nodes = _zones(sim)
    sim.submit(_pod(), at=0)
    for k in range(1, 6):
        sim.delete("default/db-0", at=10 * k)
        sim.submit(_pod(), at=10 * k + 1)
    sim.run()
    zone = {"a1": "a", "b1": "b", "b2": "b", "c1": "c"}
    assert len(nodes) == 6 and len({zone[n] for n in nodes}) == 1
    cat = volume_catalog(sim.cluster.state)
    pv = cat.pvs[cat.claims["default/data-db-0"].volume_name]
    assert pv.labels[ZONE] == zone[nodes[0]]
    again = Simulation.restore(sim.snapshot())
    cat2 = volume_catalog(again.cluster.state)
    assert cat2.claims["default/data-db-0"].volume_name == pv.name
