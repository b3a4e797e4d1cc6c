"""VolumeBinding's volume matching for every node at once against the scalar
oracle (tests/reference/volumes.py), on random volumes, claims and nodes;
and ``kernels.volumes.match_claims`` on random arrays against a per-node
loop."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from reference.volumes import match_claims_on_node
from support.parity import SETTINGS

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.kernels.volumes import match_claims

ZONE = "topology.kubernetes.io/zone"
ZONES = ("a", "b", "c")
CLASSES = ("fast", "slow")
MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany")

node_st = st.fixed_dictionaries({"zone": st.sampled_from(ZONES + (None,))})
claim_st = st.fixed_dictionaries({
    "request": st.integers(1, 8), "class": st.sampled_from(CLASSES),
    "mode": st.sampled_from(("Filesystem", "Block")),
    "access": st.lists(st.sampled_from(MODES), max_size=2, unique=True)})
pv_st = st.fixed_dictionaries({
    "capacity": st.integers(1, 8), "class": st.sampled_from(CLASSES),
    "mode": st.sampled_from(("Filesystem", "Block")),
    "access": st.lists(st.sampled_from(MODES), max_size=3, unique=True),
    "phase": st.sampled_from(("Available", "Available", "Bound", "Released")),
    "ref": st.one_of(st.none(), st.integers(0, 3)),
    "zones": st.one_of(st.none(), st.lists(st.sampled_from(ZONES), min_size=1, max_size=2,
                                           unique=True))})


def _objects(nodes, claims, pvs):
    objs = [{"kind": "StorageClass", "apiVersion": "storage.k8s.io/v1",
             "metadata": {"name": c}, "volumeBindingMode": "WaitForFirstConsumer"}
            for c in CLASSES]
    for i, n in enumerate(nodes):
        labels = {ZONE: n["zone"]} if n["zone"] else {}
        objs.append({"kind": "Node", "metadata": {"name": f"n{i}", "labels": labels}})
    for i, c in enumerate(claims):
        objs.append({"kind": "PersistentVolumeClaim", "metadata": {"name": f"c{i}"},
                     "spec": {"storageClassName": c["class"], "volumeMode": c["mode"],
                              "accessModes": c["access"],
                              "resources": {"requests": {"storage": f"{c['request']}Gi"}}}})
    for j, p in enumerate(pvs):
        spec = {"storageClassName": p["class"], "volumeMode": p["mode"],
                "accessModes": p["access"], "capacity": {"storage": f"{p['capacity']}Gi"}}
        if p["ref"] is not None and p["ref"] < len(claims):
            spec["claimRef"] = {"namespace": "default", "name": f"c{p['ref']}"}
        if p["zones"]:
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": ZONE, "operator": "In", "values": p["zones"]}]}]}}
        objs.append({"kind": "PersistentVolume", "metadata": {"name": f"pv{j}"}, "spec": spec,
                     "status": {"phase": p["phase"]}})
    return objs


def _oracle_pvs(claims, pvs):
    out = []
    for j, p in enumerate(pvs):
        ref = ("default", f"c{p['ref']}") if p["ref"] is not None and p["ref"] < len(claims) \
            else None
        out.append({"name": f"pv{j}", "capacity": p["capacity"], "class": p["class"],
                    "mode": p["mode"], "access": p["access"], "phase": p["phase"],
                    "claim_ref": ref, "labels": {},
                    "affinity": {ZONE: p["zones"]} if p["zones"] else None})
    return out


@settings(max_examples=60, **SETTINGS)
@given(st.lists(node_st, min_size=1, max_size=6), st.lists(claim_st, min_size=1, max_size=3),
       st.lists(pv_st, max_size=8))
def test_matching_equals_scalar_oracle(nodes, claims, pvs):
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1",
              "kind": "KubeSchedulerConfiguration"}
    cluster = build_cluster(_objects(nodes, claims, pvs), config)
    pod = cluster.resolve({"kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "containers": [], "volumes": [{"name": f"v{i}", "persistentVolumeClaim": {
            "claimName": f"c{i}"}} for i in range(len(claims))]}})
    fw = cluster.framework_for(pod, "numpy")
    plugin = fw.plugins[names.VOLUME_BINDING]
    ctx = CycleContext(cluster.state, pod, fw)
    assert plugin.pre_filter(ctx)[0].ok
    plugin._node_codes(ctx)
    plan = ctx.data[plugin.name]["plan"]
    oracle_claims = [{"key": ("default", f"c{i}"), "request": c["request"], "class": c["class"],
                      "mode": c["mode"], "access": c["access"]} for i, c in enumerate(claims)]
    opvs = _oracle_pvs(claims, pvs)
    for i, n in enumerate(nodes):
        labels = {ZONE: n["zone"]} if n["zone"] else {}
        want = match_claims_on_node(oracle_claims, opvs, labels)
        col = int(np.flatnonzero(plan.rows == cluster.state.node_rows[f"n{i}"])[0])
        got = [plan.pvs[int(plan.chosen[k, col])].name if plan.chosen[k, col] >= 0 else None
               for k in range(len(plan.claims))]
        assert got == want, (i, labels)


@settings(max_examples=80, **SETTINGS)
@given(st.integers(0, 4), st.integers(0, 6), st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_match_claims_kernel_equals_node_loop(c_n, p_n, m, seed):
    rng = np.random.default_rng(seed)
    fits = rng.random((c_n, p_n)) < 0.5
    affinity = rng.random((p_n, m)) < 0.6
    prebound = np.full(c_n, -1, np.int64)
    for c in range(c_n):
        if p_n and rng.random() < 0.3:
            p = int(rng.integers(p_n))
            if p not in prebound:
                prebound[c] = p
                fits[:, p] = False
    got = match_claims(fits, prebound, affinity)
    for node in range(m):
        taken: set = set()
        for c in range(c_n):
            p = int(prebound[c])
            if p >= 0 and p not in taken:
                pick = p if affinity[p, node] else -1
            else:
                pick = next((q for q in range(p_n) if fits[c, q] and affinity[q, node]
                             and q not in taken), -1)
            assert got[c, node] == pick
            if pick >= 0:
                taken.add(pick)
