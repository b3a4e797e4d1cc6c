"""Strict decoding of the DRA kinds of ``resource.k8s.io/v1`` (Kubernetes
1.35) and of a pod's resource claims: :mod:`.strict_fields`' tables and
walker, with what DRA adds.

The loaders (``dra.load_*``) refuse a new DRA object with a field the API
does not have in the API server's words (``strict decoding error: unknown
field "spec.devices.requests[0].exactly.allocationmode"``) and remember a
stored one's for its warning line (``strict_fields``).  A ResourceSlice's
devices are looked into once per device shape (``dra``: the device but its
name, the key its parser memo computes anyway): :func:`slice_known_but_devices`
checks the rest of the slice.  A pod's claim entries are decoded with the
whole pod (``manifests.parse_pod``); :func:`pod_claim_unknown_fields` names
those of its claims alone.
"""

from __future__ import annotations

from .strict_fields import (
    KIND_STRUCTS,
    MAX_NAMED,
    STRUCTS,
    but,
    compiled,
    known,
    known_as,
    refuse_unknown_fields,
    unknown_fields,
    unknown_fields_message,
)

__all__ = [
    "STRUCTS",
    "KIND_STRUCTS",
    "MAX_NAMED",
    "known",
    "slice_known_but_devices",
    "unknown_fields",
    "unknown_fields_message",
    "refuse_unknown_fields",
    "pod_claim_unknown_fields",
]

# a ResourceSlice but its devices (checked one shape at a time, ``dra``)
_SLICE_BUT_DEVICES = but(compiled("ResourceSlice"), "spec",
                         but(compiled("ResourceSliceSpec"), "devices"))


def slice_known_but_devices(obj) -> bool:
    """:func:`known` for a ResourceSlice, its ``spec.devices`` entries left
    out (the caller checks each device shape once: ``known(d, "Device")``)."""
    return known_as(obj, _SLICE_BUT_DEVICES)


def pod_claim_unknown_fields(pod: dict) -> list[str]:
    """The unknown fields of a pod's ``spec.resourceClaims`` entries and of
    its containers' (and init containers') ``resources.claims`` entries."""
    spec = pod.get("spec") if isinstance(pod, dict) else None
    if not isinstance(spec, dict):
        return []
    out: list[str] = []
    claims = spec.get("resourceClaims")
    if isinstance(claims, list):
        for i, c in enumerate(claims):
            out += unknown_fields(c, "PodResourceClaim", f"spec.resourceClaims[{i}]")
    for group in ("initContainers", "containers"):
        containers = spec.get(group)
        if not isinstance(containers, list):
            continue
        for j, c in enumerate(containers):
            resources = c.get("resources") if isinstance(c, dict) else None
            refs = resources.get("claims") if isinstance(resources, dict) else None
            if not isinstance(refs, list):
                continue
            for k, ref in enumerate(refs):
                out += unknown_fields(ref, "ResourceClaim(core)",
                                      f"spec.{group}[{j}].resources.claims[{k}]")
    return out
