"""NodeVolumeLimits' attached-volume counts kept per node (``state.volume_counts``)
equal recounting every node's pods from scratch after any sequence of pods
bound and removed, claims bound, provisioned and unreserved; and the plugin
reading them rejects exactly the nodes the limit says."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.state.volume_counts import volume_ids
from tensorsched.framework.state.volumes import volume_catalog

DRIVER = "pd.csi.storage.gke.io"
NODES = ("n0", "n1", "n2")
CLAIMS = ("c0", "c1", "c2", "c3")


def _node(name):
    return {"kind": "Node", "metadata": {"name": name, "labels": {
        "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": "z"}},
        "status": {"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "110"}}}


def _objects(limit=3):
    out = [_node(n) for n in NODES]
    out += [{"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": n},
             "spec": {"drivers": [{"name": DRIVER, "nodeID": n,
                                   "allocatable": {"count": limit}}]}} for n in NODES[:2]]
    out.append({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": "wffc"}, "provisioner": DRIVER,
                "volumeBindingMode": "WaitForFirstConsumer"})
    for i in range(3):
        out.append({"kind": "PersistentVolume", "metadata": {"name": f"pv{i}"}, "spec": {
            "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
            "storageClassName": "wffc", "csi": {"driver": DRIVER, "volumeHandle": f"h{i}"}},
            "status": {"phase": "Available"}})
    for c in CLAIMS:
        out.append({"kind": "PersistentVolumeClaim",
                    "metadata": {"name": c, "namespace": "ns", "uid": f"uid-{c}"},
                    "spec": {"storageClassName": "wffc", "accessModes": ["ReadWriteOnce"],
                             "resources": {"requests": {"storage": "5Gi"}}}})
    return out


def _pod(i, claims, ebs=False):
    vols = [{"name": f"v{j}", "persistentVolumeClaim": {"claimName": c}}
            for j, c in enumerate(claims)]
    if ebs:
        vols.append({"name": "ebs", "awsElasticBlockStore": {"volumeID": f"vol-{i % 2}"}})
    return {"kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "image": "i"}], "volumes": vols}}


def _recount(state, cat):
    """(row -> set of unique names, driver -> row -> count), from scratch."""
    names, drivers = {}, {}
    for row in cat.row_pods:
        got = {}
        for p in cat.pods_on_row(row).values():
            got.update(volume_ids(cat, p))
        if got:
            names[row] = set(got)
            for d in got.values():
                drivers.setdefault(d, {})
                drivers[d][row] = drivers[d].get(row, 0) + 1
    return names, drivers


def _kept(cat):
    c = cat.attach_counts
    holders = {}
    for row, refs in c.refs.items():
        for name in refs:
            holders.setdefault(name, set()).add(row)
    assert holders == c.holders
    return {r: set(refs) for r, refs in c.refs.items()}, c.drivers


OPS = st.lists(st.tuples(
    st.sampled_from(("add", "remove", "bind", "provision", "unreserve", "commit")),
    st.integers(0, 5),                                   # pod
    st.integers(0, len(NODES) - 1),                      # node
    st.lists(st.sampled_from(CLAIMS), max_size=2, unique=True),
    st.booleans(), st.integers(0, 2)), max_size=25)


@settings(max_examples=40, deadline=None)
@given(OPS)
def test_kept_counts_equal_recounting(ops):
    cluster = build_cluster(_objects())
    state, cat = cluster.state, volume_catalog(cluster.state)
    cat.attach_counts.ensure()          # kept from here on, never recounted
    claims_of: dict[int, list] = {}
    for op, i, n, claims, ebs, pv in ops:
        key = f"ns/p{i}"
        if op == "add" and key not in state.pods:
            claims_of[i] = claims
            state.add_pod(cluster.resolve(_pod(i, claims, ebs)), NODES[n])
        elif op == "remove" and key in state.pods:
            state.remove_pod(key)
        elif op in ("bind", "provision") and claims:
            claim = cat.claim("ns", claims[0])
            if claim.volume_name:
                continue
            if op == "bind":
                if cat.pvs[f"pv{pv}"].claim_ref is None:
                    cat.bind(key, claim, f"pv{pv}")
            else:
                cat.provision(key, claim, state.node_rows[NODES[n]], ())
        elif op == "unreserve":
            cat.unreserve(key)
        elif op == "commit":
            cat.commit(key)
        assert _kept(cat) == _recount(state, cat)


def test_filter_reads_the_kept_counts():
    """Limit 3 on n0 and n1 (n2 has no CSINode, no limit).  Two pods on n0
    attach pv0, pv1 and the unbound claim c2: a pod whose volume is already
    attached there adds nothing and fits; one with a new volume (c3) makes
    4 > 3 and is rejected there, until a pod leaves."""
    cluster = build_cluster(_objects(limit=3))
    state, cat = cluster.state, volume_catalog(cluster.state)
    cat.bind("x", cat.claim("ns", "c0"), "pv0")
    cat.bind("x", cat.claim("ns", "c1"), "pv1")
    cat.commit("x")
    state.add_pod(cluster.resolve(_pod(0, ["c0", "c1"])), "n0")
    state.add_pod(cluster.resolve(_pod(1, ["c2"])), "n0")
    assert not cat.attach_counts.active     # nobody asked yet

    def fits(claims):
        pod = cluster.resolve(_pod(9, claims))
        fw = cluster.framework_for(pod, "numpy")
        plugin = fw.plugins["NodeVolumeLimits"]
        ctx = CycleContext(state, pod, fw)
        assert plugin.pre_filter(ctx)[0].ok
        rows = np.array([state.node_rows[n] for n in NODES], np.int64)
        return dict(zip(NODES, plugin.filter(ctx, rows).tolist()))

    # pv0 is attached on n0: nothing new there, it fits
    assert fits(["c0"]) == {"n0": True, "n1": True, "n2": True}
    assert len(cat.attach_counts.attached(state.node_rows["n0"])) == 3
    # c3 is new on n0: 3 + 1 > 3
    assert fits(["c3"]) == {"n0": False, "n1": True, "n2": True}
    # the bound pod leaves: room again
    state.remove_pod("ns/p1")
    assert fits(["c3"]) == {"n0": True, "n1": True, "n2": True}
