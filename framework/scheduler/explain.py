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
[GPU indices], "milli": per-GPU milli-GPU} (what Reserve would pick) or null;
for a pod with ResourceClaims, "claims": {claim: [allocation results]} (the
devices each claim holds or Reserve would take on the selected node) or null.

Every node is evaluated (percentageOfNodesToScore does not apply) and every
feasible node is scored, even a lone one.
"""

from __future__ import annotations

from contextlib import contextmanager

from tensorsched.framework.arguments import Arguments
from tensorsched.framework.preemption.host_search import Suspension
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.state import dra_claims
from tensorsched.framework.state.dra_claims import ClaimState

from .cluster import Cluster, build_cluster, check_cluster_inputs, check_feature_gates, check_pod


def explain_pod(cluster: Cluster, pod, backend: str = "numpy", seed: int = 0) -> dict:
    """The decision record of ``pod`` (a PodRecord or a Pod dict) on ``cluster``.

    A pod the cluster already holds (a running pod, as ``kubectl get pod -o
    yaml`` prints it) is explained without its own usage: it is taken off
    its node for the cycle and put back exactly, and the record says where
    it is bound (``"bound_node"``)."""
    args = Arguments("explain_pod")
    args.instance("cluster", cluster, Cluster, "a Cluster (build_cluster)")
    check_pod(args, pod)
    backend, seed = args.backend(backend), args.seed(seed)
    pod = cluster.resolve(pod)
    fw = cluster.framework_for(pod, backend)
    with _claims_as_they_were(cluster.state), \
            _without_own_usage(cluster.state, pod) as bound_node:
        record = _explain(cluster, fw, pod, seed)
    if bound_node is not None:
        record["bound_node"] = bound_node
    return record


@contextmanager
def _claims_as_they_were(state):
    """The ResourceClaims that a look at a pod generated from its templates
    (PreFilter instantiates them) forgotten after the block, and the claims
    there were as they were (DynamicResources' PostFilter deallocates one
    that is not available where the pod could go): explaining leaves the
    cluster as it was."""
    claims = ClaimState.attached(state)
    keep = set(claims.claims) if claims is not None else ()
    snap = dra_claims.snapshot(claims) if claims is not None else None
    try:
        yield
    finally:
        got = ClaimState.attached(state)
        if got is not None:
            got.forget_generated(keep)
            if snap is not None:
                dra_claims.restore(got, snap)


@contextmanager
def _without_own_usage(state, pod):
    """The pod taken off its node for the block, put back exactly after it;
    yields that node (None for a pod the cluster does not hold).  A bound
    pod is never scheduled again upstream; asking where it would land is
    cluster-autoscaler's drain question, which it answers the same way:
    the pod removed from its node, then the filters run."""
    if pod.key not in state.pods:
        yield None
        return
    held = Suspension(state)
    bound_node = state.node_name(state.pods.row_of(pod.key))
    held.remove(pod.key)
    try:
        yield bound_node
    finally:
        held.restore()


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
    if fw.requested_backend != fw.backend_name:
        # ``auto``: "backend" is the one that ran
        record["requested_backend"] = fw.requested_backend
    # Plugins that report more (GpuShareFit: "gpus") add their fields; a
    # profile without such plugins keeps the record above unchanged.
    for p in fw.plugins.values():
        fields = getattr(p, "explain_fields", None)
        if fields is not None:
            record.update(fields(ctx, selected))
    return record




def explain(objects, pod, config=None, backend: str = "numpy", seed: int = 0, *,
            feature_gates=None) -> dict:
    """``explain`` as a function: ``objects`` are Kubernetes object dicts
    (Nodes, Pods bound with spec.nodeName, ...), ``pod`` the pod to place
    (dict), ``config`` a KubeSchedulerConfiguration dict (None = defaults),
    ``feature_gates`` gate name -> on (``build_cluster``'s)."""
    args = Arguments("explain")
    objects = check_cluster_inputs(args, objects, config)
    check_pod(args, pod)
    backend, seed = args.backend(backend), args.seed(seed)
    feature_gates = check_feature_gates(args, feature_gates, config)
    cluster = build_cluster(objects, config, feature_gates=feature_gates)
    return explain_pod(cluster, pod, backend=backend, seed=seed)


def failed_scheduling_message(cluster: Cluster, pod, backend: str = "numpy") -> str | None:
    """kube-scheduler's FailedScheduling text for a pod that fits nowhere
    (None when it fits); a pod the cluster holds is evaluated without its
    own usage, as ``explain_pod`` does, so the two agree."""
    pod = cluster.resolve(pod)
    fw = cluster.framework_for(pod, backend)
    with _claims_as_they_were(cluster.state), _without_own_usage(cluster.state, pod):
        result = fw.run_cycle(cluster.state, pod, all_nodes=True)
        if result.selected_row >= 0:
            return None
        return fw.diagnosis(CycleContext(cluster.state, pod, fw), result).message()
