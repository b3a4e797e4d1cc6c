"""``explain``: one pod's full decision record, the JSON other tools read.

{"pod", "profile", "backend", "nodes_evaluated", "feasible": [names],
 "filter": {node: {"code", "plugin", "reasons"}} (rejected nodes only),
 "scores": {node: {plugin: normalized score}}, "total": {node: weighted
 total}, "selected": node or null,
 "preemption": null when the pod fits, else {"nominated_node": node or null,
 "victims": ["ns/name", ...]} (DefaultPreemption's dry run: nothing is deleted)}
plus "weights": {plugin: weight} of the plugins that scored, "bound_node"
when the pod is already bound in the cluster (explained without its own
usage), and, only when the profile enables GpuShareFit, "gpus": {"node", "indices":
[GPU indices], "milli": per-GPU milli-GPU} (what Reserve would pick) or null.

Every node is evaluated (percentageOfNodesToScore does not apply) and every
feasible node is scored, even a lone one.
"""

from __future__ import annotations

from tensorsched.framework.preemption.host_search import Suspension
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.state.dra_claims import ClaimState

from .cluster import Cluster, build_cluster


def explain_pod(cluster: Cluster, pod, backend: str = "numpy", seed: int = 0) -> dict:
    """The decision record of ``pod`` (a PodRecord or a Pod dict) on ``cluster``.

    A pod the cluster already holds (a running pod, as ``kubectl get pod -o
    yaml`` prints it) is explained without its own usage: it is taken off
    its node for the cycle and put back exactly, and the record says where
    it is bound (``"bound_node"``)."""
    pod = cluster.resolve(pod)
    fw = cluster.framework_for(pod, backend)
    state = cluster.state
    claims = ClaimState.attached(state)
    keep = set(claims.claims) if claims is not None else None
    try:
        return _explain_in_place(cluster, fw, pod, seed)
    finally:
        # the claims a template pod's look generated go again: explain
        # leaves the cluster as it was
        got = ClaimState.attached(state)
        if got is not None:
            got.forget_generated(keep or ())


def _explain_in_place(cluster: Cluster, fw, pod, seed: int) -> dict:
    state = cluster.state
    if pod.key not in state.pods:
        return _explain(cluster, fw, pod, seed)
    held = Suspension(state)
    bound_node = state.node_name(state.pods.row_of(pod.key))
    held.remove(pod.key)
    try:
        record = _explain(cluster, fw, pod, seed)
    finally:
        held.restore()
    record["bound_node"] = bound_node
    return record


def _explain(cluster: Cluster, fw, pod, seed: int) -> dict:
    state = cluster.state
    result = fw.run_cycle(state, pod, seed=seed, attempt=0, all_nodes=True)
    ctx = CycleContext(state, pod, fw)
    feasible, rejected, scores, total = [], {}, {}, {}
    for j, row in enumerate(result.rows):
        name = state.node_name(int(row))
        st = fw.node_status(ctx, result, j)
        if st is not None:
            rejected[name] = {"code": st.code.wire_name, "plugin": st.plugin,
                              "reasons": list(st.reasons)}
            continue
        feasible.append(name)
        scores[name] = {p.name: int(result.scores[j, p.score_slot])
                        for p in result.active_score_plugins}
        total[name] = int(result.total[j])
    selected = state.node_name(result.selected_row) if result.selected_row >= 0 else None
    preemption = None
    if selected is None:
        outcome = fw.run_post_filter(ctx, result, cluster.pod_table(), seed=seed)
        preemption = {"nominated_node": outcome.nominated_node if outcome else None,
                      "victims": list(outcome.victims) if outcome else []}
    record = {
        "pod": pod.key, "profile": fw.profile.scheduler_name, "backend": fw.backend_name,
        "nodes_evaluated": int(result.rows.shape[0]), "feasible": feasible,
        "filter": rejected, "scores": scores, "total": total, "selected": selected,
        "preemption": preemption,
        "weights": {p.name: int(w) for p, w in fw.score_refs
                    if any(p is q for q in result.active_score_plugins)},
    }
    # Plugins that report more (GpuShareFit: "gpus") add their fields; a
    # profile without such plugins keeps the record above unchanged.
    for p in fw.plugins.values():
        fields = getattr(p, "explain_fields", None)
        if fields is not None:
            record.update(fields(ctx, selected))
    return record




def explain(objects, pod, config=None, backend: str = "numpy", seed: int = 0) -> dict:
    """``explain`` as a function: ``objects`` are Kubernetes object dicts
    (Nodes, Pods bound with spec.nodeName, ...), ``pod`` the pod to place
    (dict), ``config`` a KubeSchedulerConfiguration dict (None = defaults)."""
    cluster = build_cluster(objects, config)
    return explain_pod(cluster, pod, backend=backend, seed=seed)


def failed_scheduling_message(cluster: Cluster, pod, backend: str = "numpy") -> str | None:
    """kube-scheduler's FailedScheduling text for a pod that fits nowhere
    (None when it fits)."""
    pod = cluster.resolve(pod)
    fw = cluster.framework_for(pod, backend)
    result = fw.run_cycle(cluster.state, pod, all_nodes=True)
    if result.selected_row >= 0:
        return None
    return fw.diagnosis(CycleContext(cluster.state, pod, fw), result).message()
