"""DynamicResources' PostFilter in the default profile, for pods without
claims: what it adds to the FailedScheduling message, as Kubernetes 1.35
writes it.

Its PostFilter reads the state its PreFilter wrote this cycle.  A pod that
reached that PreFilter and has no claim gets Unschedulable "no new claims
to deallocate", which RunPostFilterPlugins joins ahead of
DefaultPreemption's reason ("... 2 Insufficient cpu. no new claims to
deallocate, preemption: 0/3 nodes are available: ...", as clusters report
it).  A pod that an earlier PreFilter rejected never wrote that state: the
read fails with "not found", an Error that ends the PostFilter plugins, so
DefaultPreemption is not asked and the message closes with the error's
text ("0/1 nodes are available: pod has unbound immediate
PersistentVolumeClaims. not found").
"""

from __future__ import annotations

import pytest
from support.backends import backend_params

from tensorsched.framework.capacity.batch_messages import FailureKeys
from tensorsched.framework.plugins import dynamic_resources as dr
from tensorsched.framework.runtime.status import Code, Status
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict

_IMMEDIATE = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
              "metadata": {"name": "now"}, "provisioner": "pd.csi.storage.gke.io",
              "volumeBindingMode": "Immediate"}
_UNBOUND = {"kind": "PersistentVolumeClaim",
            "metadata": {"name": "late", "namespace": "default", "uid": "uid-late"},
            "spec": {"storageClassName": "now", "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}}


def _cordoned(name: str) -> dict:
    node = node_dict(name, cpu="8")
    node["spec"] = {"unschedulable": True}
    return node


@pytest.mark.parametrize("backend", backend_params(("numpy", "numba")))
def test_a_pod_without_claims_is_told_no_new_claims_to_deallocate(backend):
    """Two nodes too small, one cordoned (preemption cannot help there), a
    lower-priority pod that frees too little: both PostFilter reasons, in
    profile order."""
    cluster = build_cluster([node_dict("n0", cpu="2"), node_dict("n1", cpu="2"),
                             _cordoned("n2")])
    sched = Scheduler(cluster, backend, batch=False)
    low = cluster.resolve(pod_dict("low", cpu="500m", priority=0))
    cluster.state.add_pod(low, "n0")
    out, preemptions = sched.schedule_pending([pod_dict("big", cpu="3", priority=10)])
    assert out[0].node is None and not preemptions
    # DefaultPreemption's own reasons after it (its victim search's), as before
    assert out[0].message == (
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: "
        "1 Insufficient cpu, 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling.")


@pytest.mark.parametrize("backend", backend_params(("numpy", "numba")))
def test_a_prefilter_rejection_before_it_ends_post_filter_with_not_found(backend):
    """VolumeBinding's PreFilter (ahead of DynamicResources) rejects: the
    plugin's state was never written, its Error ends the PostFilter phase
    and DefaultPreemption, which could have evicted the low pod, is not
    asked."""
    cluster = build_cluster([node_dict("n0", cpu="1"), _IMMEDIATE, _UNBOUND])
    sched = Scheduler(cluster, backend, batch=False)
    low = cluster.resolve(pod_dict("low", cpu="1", priority=0))
    cluster.state.add_pod(low, "n0")
    pod = pod_dict("db", cpu="1", priority=10)
    pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "late"}}]
    out, preemptions = sched.schedule_pending([pod])
    assert out[0].node is None and not preemptions and out[0].nominated_node is None
    assert out[0].message == ("0/1 nodes are available: pod has unbound immediate "
                              "PersistentVolumeClaims. not found")
    assert "default/low" in cluster.state.pods


def test_prefilter_reached_follows_the_profile_order():
    cluster = build_cluster([node_dict("n0", cpu="1")])
    fw = cluster.framework_for(cluster.resolve(pod_dict("p", cpu="2")), "numpy")
    profile = fw.profile
    order = profile.names("preFilter")
    assert dr.NAME in order
    before = order[order.index(dr.NAME) - 1]
    assert dr.prefilter_reached(profile, Status.OK)
    assert dr.prefilter_reached(profile, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                                ("x",), dr.NAME))
    assert not dr.prefilter_reached(profile, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                                    ("x",), before))


def test_the_batched_messages_hold_the_same_post_filter_reasons():
    """The batched capacity kernel's message text (``FailureKeys``) joins
    the PostFilter reasons in the same order as the Scheduler's cycle."""
    cluster = build_cluster([node_dict("n0", cpu="1"), node_dict("n1", cpu="1")])
    rec = cluster.resolve(pod_dict("big", cpu="2"))
    fw = cluster.framework_for(rec, "numpy")
    keys = FailureKeys(fw, cluster.state, [rec])
    post = fw.profile.names("postFilter")
    assert post.index(dr.NAME) < post.index("DefaultPreemption")
    assert keys._post == [dr.NAME, "DefaultPreemption"] and keys._dra_state
