"""A pod's resource claims for one scheduling cycle of DynamicResources.

``resolve`` finds the pod's claims in the claim state (the reasons one
cannot be used are upstream's PreEnqueue / PreFilter messages),
``generate`` is the simulated resourceclaim controller for template
claims, ``check_requests`` the PreFilter check of the device classes, and
``Cycle`` what PreFilter found for the pod (upstream's stateData), which
Filter, Score, Reserve and PreBind read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.errors import StateError, TensorschedError
from tensorsched.framework.parsing.meta import ObjectContext
from tensorsched.framework.parsing.pod_claims import claim_statuses
from tensorsched.framework.runtime.status import Code, Status
from tensorsched.framework.state.dra_claims import ClaimEntry, ClaimState

from . import dra_extended as ext

NAME = names.DYNAMIC_RESOURCES


def unresolvable(message: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,), NAME)


def error(message: str) -> Status:
    return Status(Code.ERROR, (message,), NAME)


class ClaimProblem(Exception):
    """A claim of the pod cannot be used now (the status's message)."""


@dataclass
class Cycle:
    """What PreFilter found for one pod (upstream's stateData)."""

    claims: list                        # ClaimEntry per resolved pod claim, pod order
    pins: list                          # allocation node selector per claim (None: any)
    pending: list                       # indexes of claims to allocate
    allocator: object = None
    allocator_error: str | None = None
    version: int = -1                   # DevicesInUse.version the allocator saw
    unavailable: set = field(default_factory=set)
    statuses: dict = field(default_factory=dict)   # node row -> rejection Status
    results: dict = field(default_factory=dict)    # node row -> [AllocationResult]
    failed_binding: set = field(default_factory=set)  # claims failed / timed out
    spec_key: tuple | None = None
    # DRA extended resources: the pod's DRA-served requests, and per set of
    # them a node lacks, the cycle that also allocates the claim made for
    # them (``created``: that claim's entry, not in the store before PreBind)
    extended: list = field(default_factory=list)
    by_lack: dict = field(default_factory=dict)
    created: object = None


def cycle_of(cyc: Cycle, pod, lack: tuple) -> Cycle:
    """The cycle for nodes lacking the extended requests ``lack``
    (indexes into ``cyc.extended``): ``cyc`` itself when none, else
    one that also allocates the claim made for them.  Statuses and
    unavailable claims are shared with ``cyc``."""
    if not lack:
        return cyc
    sub = cyc.by_lack.get(lack)
    if sub is None:
        rec = ext.claim_record(pod, [cyc.extended[k] for k in lack])
        entry = ClaimEntry(rec, owner=(pod.name, pod.uid), generated=True)
        n = len(cyc.claims)
        sub = Cycle(cyc.claims + [entry], cyc.pins + [None], cyc.pending + [n],
                     unavailable=cyc.unavailable, statuses=cyc.statuses,
                     failed_binding=cyc.failed_binding, created=entry)
        cyc.by_lack[lack] = sub
    return sub

def cycle_at(cyc: Cycle, pod, node) -> Cycle:
    """The cycle that answers for ``node``."""
    if not cyc.extended:
        return cyc
    return cycle_of(cyc, pod, ext.lacking(node, cyc.extended))


def claims_of(state) -> ClaimState:
    """The state's ClaimState (attached on first use)."""
    got = ClaimState.attached(state)
    if got is None:
        got = ClaimState.of(state)
    return got

def resolve(store: ClaimState, pod) -> list:
    """The pod's claims in pod order (claims not needed are left out);
    ClaimProblem when one cannot be used."""
    statuses = None
    out = []
    for pc in pod.resource_claims:
        must_own = False
        if pc.claim_name:
            name = pc.claim_name
        else:
            if statuses is None:
                ctx = ObjectContext(f"Pod {pod.key}")
                try:
                    statuses = claim_statuses(ctx, (pod.obj or {}).get("status") or {})
                except TensorschedError as exc:
                    raise ClaimProblem(str(exc)) from None
            if pc.name in statuses:
                name = statuses[pc.name]
                if not name:
                    continue        # nothing was generated for it: not needed
            elif (pod.key, pc.name) in store.generated:
                name = store.generated[(pod.key, pc.name)]
            else:
                raise ClaimProblem(f'pod "{pod.key}": ResourceClaim not created yet')
            must_own = True
        entry = store.get(pod.namespace, name)
        if entry is None:
            raise ClaimProblem(f'resourceclaim.resource.k8s.io "{name}" not found')
        if entry.record.deleting:
            raise ClaimProblem(f'resourceclaim "{name}" is being deleted')
        if must_own and (entry.owner is None or entry.owner[0] != pod.name
                         or (entry.owner[1] and pod.uid and entry.owner[1] != pod.uid)):
            raise ClaimProblem(f"ResourceClaim {entry.key} was not created for Pod "
                                f"{pod.key} (Pod is not owner)")
        out.append(entry)
    return out

def generate(store: ClaimState, pod) -> Status | None:
    """The simulated resourceclaim controller: template claims of the
    pod not generated yet are made now."""
    statuses = ((pod.obj or {}).get("status") or {}).get("resourceClaimStatuses") or []
    named = {s.get("name") for s in statuses if isinstance(s, dict)}
    for pc in pod.resource_claims:
        if pc.template_name and pc.name not in named:
            try:
                store.generate(pod, pc)
            except StateError as exc:
                return unresolvable(str(exc))
    return None


def check_requests(store: ClaimState, e, features) -> Status | None:
    """The claim's requests name device classes that exist (subrequests
    only with DRAPrioritizedList); the first refusal, or None."""
    for req in e.record.requests:
        if not req.first_available:
            cls = req.exactly.device_class_name if req.exactly is not None else ""
            st = check_class(store, cls, req.name)
        elif not features.prioritized_list:
            st = unresolvable(f"resource claim {e.key}, request {req.name}: has "
                               "subrequests, but the DRAPrioritizedList feature is disabled")
        else:
            st = None
            for sub in req.first_available:
                st = check_class(store, sub.device_class_name,
                                       f"{req.name}/{sub.name}")
                if st is not None:
                    break
        if st is not None:
            return st
    return None

def check_class(store: ClaimState, cls: str, request: str) -> Status | None:
    if not cls:
        return error(f"request {request}: unsupported request type")
    if cls not in store.classes:
        return unresolvable(f"request {request}: device class {cls} does not exist")
    return None
