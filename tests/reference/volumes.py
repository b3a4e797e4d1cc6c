"""Scalar oracle of VolumeBinding's volume matching: one node at a time,
one volume at a time, as upstream's ``FindMatchingVolume`` reads them.

Inputs are plain dicts: a volume ``{"name", "capacity", "class", "mode",
"access", "phase", "claim_ref" (namespace, name) or None, "labels",
"affinity": {label key: [values]} or None}`` (one term of In
requirements), a claim ``{"key" (namespace, name), "request", "class",
"mode", "access"}``, node labels ``{key: value}``.
"""

from __future__ import annotations


def affinity_ok(pv: dict, labels: dict) -> bool:
    aff = pv["affinity"]
    if aff is None:
        return True
    return all(labels.get(k) in vals for k, vals in aff.items())


def find_matching_volume(claim: dict, pvs: list[dict], labels: dict, excluded: set):
    """The volume ``claim`` takes on a node with ``labels`` (or None)."""
    smallest = None
    for pv in sorted(pvs, key=lambda p: (p["capacity"], p["name"])):
        if pv["name"] in excluded or pv["class"] != claim["class"]:
            continue
        ref = pv["claim_ref"]
        if ref is not None and tuple(ref) != tuple(claim["key"]):
            continue
        if pv["capacity"] < claim["request"] or pv["mode"] != claim["mode"]:
            continue
        ok = affinity_ok(pv, labels)
        if ref is not None:                 # pre-bound to this claim: decides alone
            return pv["name"] if ok else None
        if pv["phase"] != "Available" or not ok:
            continue
        if not set(claim["access"]) <= set(pv["access"]):
            continue
        if smallest is None:
            smallest = pv
    return None if smallest is None else smallest["name"]


def match_claims_on_node(claims: list[dict], pvs: list[dict], labels: dict) -> list:
    """The volume each claim (smallest request first) takes on the node."""
    excluded: set = set()
    out = []
    for claim in sorted(claims, key=lambda c: c["request"]):
        got = find_matching_volume(claim, pvs, labels, excluded)
        if got is not None:
            excluded.add(got)
        out.append(got)
    return out
