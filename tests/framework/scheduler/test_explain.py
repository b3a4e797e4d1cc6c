"""explain of a pod the cluster already holds: its own usage is left out for
the cycle and the state is exactly as before afterwards."""

import numpy as np

from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod, failed_scheduling_message


def test_bound_pod_explained_without_itself_and_state_restored(backend):
    running = pod_dict("web", cpu="3", spec={"nodeName": "n0"})
    other = pod_dict("db", cpu="1", spec={"nodeName": "n1"})
    cluster = build_cluster([node_dict("n0", cpu="4"), node_dict("n1", cpu="2"), running, other])
    state = cluster.state
    before = (state.requested.copy(), list(state.pods), [set(s) for s in state.pods_on_node])
    rec = explain_pod(cluster, running, backend=backend)
    assert rec["bound_node"] == "n0"
    # nodeName pins it to n0, where its own 3 cpu no longer count: 3 <= 4
    assert rec["feasible"] == ["n0"] and rec["selected"] == "n0"
    assert np.array_equal(state.requested, before[0])
    assert list(state.pods) == before[1]
    assert [set(s) for s in state.pods_on_node] == before[2]
    # a pending pod has no bound_node
    assert "bound_node" not in explain_pod(cluster, pod_dict("new", cpu="1"), backend=backend)


def test_failed_scheduling_message_agrees_with_the_record_of_a_bound_pod(backend):
    """Both leave the pod's own usage out: a bound pod that fills its node
    fits there (no message), as the record selects it; the state is as
    before; a pod not in the cluster still gets kube-scheduler's message."""
    running = pod_dict("web", cpu="3", spec={"nodeName": "n0"})
    cluster = build_cluster([node_dict("n0", cpu="4"), running])
    before = cluster.state.requested.copy()
    assert explain_pod(cluster, running, backend=backend)["selected"] == "n0"
    assert failed_scheduling_message(cluster, running, backend=backend) is None
    assert np.array_equal(cluster.state.requested, before)
    assert failed_scheduling_message(cluster, pod_dict("new", cpu="3"), backend=backend) == \
        "0/1 nodes are available: 1 Insufficient cpu."
