"""Pods with claims in compiled runs (the DynamicResources side).

Pods whose claims all come from the same ResourceClaimTemplates sign alike
(``sign``); the claims the resourceclaim controller made for them are
equal but for their names.  When those claims are counted claims
(``state.dra_counted``: each pod takes the first ``need`` free matching
devices of its node, node-local devices only), a compiled run can place
them: on each node, room for ``free // need`` more pods; claims the
compiled search allocates (``state.dra_searched``: ``matchAttribute`` /
``distinctAttribute`` included, node-local devices) get, per node, the
number of pods the search places there one after another.  The room is
written as a per-domain rule over one domain per node (``kernels.domain_rules``: the
run counts each placed pod on its node and the node fails once its count
reaches its room).  After the run, each placed pod's claims are allocated
on its node in placement order, with the allocations the allocator would
have made, committed and reserved for the pod, as its Reserve and PreBind
would have.
"""

from __future__ import annotations

import numpy as np

from tensorsched.framework.state.derived import StateKey
from tensorsched.framework.state.dra_counted import CountedClaims
from tensorsched.framework.state.dra_searched import SearchedClaims
from tensorsched.kernels.domain_rules import DomainRule

__all__ = ["template_signature", "RunPlan", "node_domains", "claims_like"]


def template_signature(pod) -> tuple | None:
    """What a pod's claims depend on when every one comes from a template
    and the pod's status names no claim yet (the controller makes them
    per pod, from the template): (namespace, (pod claim, template)...).
    None for any other pod with claims."""
    claims = pod.resource_claims
    if not claims:
        return None
    status = ((pod.obj or {}).get("status") or {}).get("resourceClaimStatuses")
    if status:
        return None
    out = []
    for pc in claims:
        if pc.claim_name or not pc.template_name:
            return None
        out.append((pc.name, pc.template_name))
    return (pod.namespace, tuple(out))


class RunPlan:
    """One run's claims: the first pod's claim records (the kind of claims
    the run allocates), how they are allocated on a node (``claims``:
    counted, or by the compiled search's picks; ``allocate(node)``), and
    the room for pods on all nodes together."""

    def __init__(self, pod_key: str, claims: CountedClaims | SearchedClaims, records: list,
                 room: int):
        self.pod_key = pod_key
        self.claims = claims
        self.records = records
        self.room = room


RUN_DOMAINS = StateKey("dra_run_domains", __name__,
                       "'rows' -> (domp1, count_dom) of the one-domain-per-node rule")


def node_domains(state) -> tuple[np.ndarray, np.ndarray]:
    """(domp1, count_dom) of the one-domain-per-node rule: [n_rows] int64,
    row + 1 (0 for an empty row) and row (-1), memoized per structure and
    read-only (so the run's domain grouping is memoized too)."""
    cache = state.derived.memo(RUN_DOMAINS, state.structure_tag())
    got = cache.get("rows")
    if got is None:
        valid = np.zeros(state.n_rows, np.bool_)
        valid[state.valid_rows()] = True
        rows = np.arange(state.n_rows, dtype=np.int64)
        domp1 = np.where(valid, rows + 1, 0)
        count_dom = np.where(valid, rows, -1)
        domp1.flags.writeable = False
        count_dom.flags.writeable = False
        got = cache["rows"] = (domp1, count_dom)
    return got


def room_rule(bit: int, state, room: np.ndarray) -> DomainRule:
    """The rule "a node fails once the run placed ``room[row]`` pods on
    it": the count starts at ``top - room`` and a node fails above
    ``top - 1`` (``top`` = the largest room)."""
    domp1, count_dom = node_domains(state)
    top = int(room.max()) if room.shape[0] else 0
    sums = (top - room).astype(np.int64)
    return DomainRule(bit=bit, domp1=domp1, count_dom=count_dom, sums=sums,
                      present=None, thresh=top - 1, track_min=False, fail_absent=True,
                      fail_above=True, fail_not_above=False, increment=True)


def claims_like(entries: list, records: list) -> bool:
    """Whether ``entries`` (a pod's resolved claims) are fresh claims of the
    same kind as ``records``: not allocated, reserved or in flight, and with
    equal requests, constraints and configs."""
    if len(entries) != len(records):
        return False
    for e, rec in zip(entries, records):
        r = e.record
        if e.allocation is not None or e.reserved_for or not e.generated:
            return False
        if r is not rec and (r.requests != rec.requests or r.constraints != rec.constraints
                             or r.config != rec.config):
            return False
    return True
