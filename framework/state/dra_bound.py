"""Bound pods whose claims the input does not show allocated.

A running pod's claims are always allocated and reserved for it in a real
cluster (the scheduler did it before binding).  A cluster written by hand,
or a dump that left out ``kubectl get resourceclaims``, can hold a bound pod
whose template claim was never made, or whose claim is not allocated or not
reserved for it: its devices would then look free, and pending pods would
be given them.  ``adopt_bound_pods`` does at load what the resourceclaim
controller and the scheduler did for such a pod: the template claims are
made (``<pod>-<claim>``), the claims not allocated are allocated on the
pod's node (upstream's allocator, one call per pod, in input order) and
every claim is reserved for the pod.  A claim that does not exist and
cannot be made (a ``resourceClaimName`` missing from the input, a template
that is not there), or claims that cannot be allocated on the pod's node,
are a ManifestError naming the pod and the field.
"""

from __future__ import annotations

from tensorsched.framework.errors import ManifestError, TensorschedError
from tensorsched.framework.parsing.meta import ObjectContext, source_of
from tensorsched.framework.parsing.pod_claims import claim_statuses

from .dra_allocator import AllocationError, Allocator
from .dra_claims import ClaimState
from .dra_search import DraFeatures

__all__ = ["adopt_bound_pods"]


def _fail(pod, field: str, problem: str):
    raise ManifestError(f"Pod {pod.key}", field, problem, source_of(pod.obj))


def _entries(store: ClaimState, pod) -> list:
    """(index, entry) of the pod's claims, made from their templates where
    the input shows none."""
    statuses = None
    out = []
    for i, pc in enumerate(pod.resource_claims):
        field = f"spec.resourceClaims[{i}]"
        if pc.claim_name:
            e = store.get(pod.namespace, pc.claim_name)
            if e is None:
                _fail(pod, f"{field}.resourceClaimName",
                      f"the pod is bound to node {pod.node_name}, but ResourceClaim "
                      f"{pod.namespace}/{pc.claim_name} is not in the input")
            out.append((i, e))
            continue
        if statuses is None:
            try:
                statuses = claim_statuses(ObjectContext(f"Pod {pod.key}"),
                                          (pod.obj or {}).get("status") or {})
            except TensorschedError as exc:
                raise ManifestError(f"Pod {pod.key}", "status.resourceClaimStatuses",
                                    str(exc), source_of(pod.obj)) from None
        name = statuses.get(pc.name)
        if name == "":
            continue                    # nothing was made for it: not needed
        e = store.get(pod.namespace, name) if name else None
        if e is None and name:
            _fail(pod, "status.resourceClaimStatuses",
                  f"the pod is bound to node {pod.node_name}, but ResourceClaim "
                  f"{pod.namespace}/{name} is not in the input")
        if e is None:
            try:
                e = store.generate(pod, pc)
            except TensorschedError as exc:
                _fail(pod, f"{field}.resourceClaimTemplateName", str(exc))
        out.append((i, e))
    return out


def adopt_bound_pods(store: ClaimState, pods, features: DraFeatures | None = None) -> int:
    """Give each bound pod of ``pods`` (records, in input order) its claims
    as the control plane would have (see the module docstring); returns how
    many claims were allocated here.  ``features``: the allocator's
    (default :meth:`DraFeatures.default`)."""
    allocated = 0
    state = store.state
    for pod in pods:
        if not pod.node_name or not pod.resource_claims:
            continue
        entries = _entries(store, pod)
        todo = [e for _, e in entries if e.allocation is None]
        if todo:
            try:
                got = Allocator(
                    [e.record for e in todo], classes=store.classes,
                    devices=store.in_use.columns(), allocated=store.in_use.allocated_state(),
                    in_use_rows=store.in_use.in_use_rows(),
                    features=features or DraFeatures.default(),
                ).allocate(state.nodes[state.node_rows[pod.node_name]])
            except AllocationError as exc:
                got, why = None, str(exc)
            else:
                why = None
            if got is None:
                if why is None:
                    why = Allocator(
                        [e.record for e in todo], classes=store.classes,
                        devices=store.in_use.columns(),
                        allocated=store.in_use.allocated_state(),
                        features=features or DraFeatures.default(),
                    ).explain(state.nodes[state.node_rows[pod.node_name]]) or "cannot allocate all claims"
                _fail(pod, "spec.resourceClaims",
                      f"the pod is bound to node {pod.node_name}, but its claims are not "
                      f"allocated in the input and cannot be allocated there: {why}")
            for e, alloc in zip(todo, got):
                store.commit(e.key, alloc, None)
            allocated += len(todo)
        for _, e in entries:
            store.reserve(e.key, pod)
    return allocated
