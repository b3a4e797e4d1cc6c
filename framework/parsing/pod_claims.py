"""A pod's resource claims: ``spec.resourceClaims`` and the containers'
``resources.claims`` (Dynamic Resource Allocation), validated as the API
server validates them (``validatePodResourceClaims``).

A pod names each claim it uses once, under a name of its own (a DNS label):
either an existing ResourceClaim of its namespace (``resourceClaimName``) or
a ResourceClaimTemplate from which one claim per pod is generated
(``resourceClaimTemplateName``; the generated claim's name is recorded in
``status.resourceClaimStatuses``).  Containers refer to those names; a
reference to a name the pod does not list is invalid.

Before any of that, a new pod (no ``metadata.resourceVersion``) with a
field the API does not have, its claim entries' included, is refused as the
API server's strict decoding refuses it (``strict decoding error: unknown
field "spec.resourceClaims[0].resourceClaimname"``); a stored pod's are
warned of (``manifests.parse_pod``, :mod:`.strict_fields`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .meta import (
    DNS1123_LABEL_FMT,
    ObjectContext,
    dns1123_subdomain_errors,
    duplicate_value,
    invalid_value,
    join_path,
)

__all__ = ["PodClaim", "parse_pod_claims", "claim_statuses"]

_DNS1123_LABEL_RE = re.compile(DNS1123_LABEL_FMT)
_DNS1123_LABEL_MAX = 63
_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
              "or '-', and must start and end with an alphanumeric character")


@dataclass(frozen=True)
class PodClaim:
    """One entry of ``spec.resourceClaims``: exactly one of ``claim_name``
    and ``template_name`` is set (the other is "")."""

    name: str                  # the pod-local name containers refer to
    claim_name: str            # resourceClaimName
    template_name: str         # resourceClaimTemplateName


def _label_errors(value: str) -> list[str]:
    errs = []
    if len(value) > _DNS1123_LABEL_MAX:
        errs.append(f"must be no more than {_DNS1123_LABEL_MAX} characters")
    if not _DNS1123_LABEL_RE.fullmatch(value):
        errs.append(f"{_LABEL_MSG} (e.g. 'my-name',  or '123-abc', regex used for validation "
                    f"is '{DNS1123_LABEL_FMT}')")
    return errs


def parse_pod_claims(ctx: ObjectContext, spec: dict) -> tuple[PodClaim, ...]:
    """``spec.resourceClaims`` as :class:`PodClaim` records, after checking
    them and every container's ``resources.claims`` against them."""
    claims: list[PodClaim] = []
    names: set[str] = set()
    for i, raw in enumerate(ctx.list(spec.get("resourceClaims"), "spec.resourceClaims")):
        path = f"spec.resourceClaims[{i}]"
        raw = ctx.mapping(raw, path)
        # as upstream: required, then unique, then a DNS label
        name = ctx.string(raw.get("name"), f"{path}.name")
        if not name:
            ctx.fail(f"{path}.name", "Required value")
        if name in names:
            ctx.fail(f"{path}.name", duplicate_value(name))
        errs = _label_errors(name)
        if errs:
            ctx.fail(f"{path}.name", invalid_value(name, errs))
        names.add(name)
        claim = ctx.string(raw.get("resourceClaimName"), f"{path}.resourceClaimName")
        template = ctx.string(raw.get("resourceClaimTemplateName"),
                              f"{path}.resourceClaimTemplateName")
        if claim and template:
            ctx.fail(path, "at most one of `resourceClaimName` or `resourceClaimTemplateName` "
                     "may be specified")
        if not claim and not template:
            ctx.fail(path, "must specify one of: `resourceClaimName`, "
                     "`resourceClaimTemplateName`")
        field, value = (("resourceClaimName", claim) if claim
                        else ("resourceClaimTemplateName", template))
        errs = dns1123_subdomain_errors(value)
        if errs:
            ctx.fail(f"{path}.{field}", invalid_value(value, errs))
        claims.append(PodClaim(name, claim, template))
    for group in ("containers", "initContainers"):
        for j, c in enumerate(ctx.list(spec.get(group), f"spec.{group}")):
            _container_claims(ctx, c, f"spec.{group}[{j}]", names)
    return tuple(claims)


def _container_claims(ctx: ObjectContext, c, path: str, names: set[str]) -> None:
    """A container's ``resources.claims``: each names a claim of the pod
    (and optionally one of its requests, a DNS label), no name and request
    twice."""
    resources = ctx.mapping(ctx.mapping(c, path).get("resources"), f"{path}.resources")
    seen: set[str] = set()
    for k, ref in enumerate(ctx.list(resources.get("claims"), f"{path}.resources.claims")):
        rpath = f"{path}.resources.claims[{k}]"
        ref = ctx.mapping(ref, rpath)
        name = ctx.string(ref.get("name"), f"{rpath}.name")
        if not name:
            ctx.fail(rpath, "Required value")
        request = ctx.string(ref.get("request"), f"{rpath}.request")
        key = name
        if request:
            errs = _label_errors(request)
            if errs:
                ctx.fail(f"{rpath}.request", invalid_value(request, errs))
            key = f"{name}/{request}"
        if key in seen:
            ctx.fail(rpath, duplicate_value(key))
        seen.add(key)
        if name not in names:
            listed = ": " + ", ".join(sorted(names)) if names else " which is empty"
            ctx.fail(rpath, f"Not found: {json.dumps(name)}: must be one of the "
                     f"names in pod.spec.resourceClaims{listed}")


def claim_statuses(ctx: ObjectContext, status: dict) -> dict[str, str]:
    """``status.resourceClaimStatuses``: pod-local claim name -> the name of
    the claim generated for it ("" when none was needed)."""
    out: dict[str, str] = {}
    path = "status.resourceClaimStatuses"
    for i, raw in enumerate(ctx.list(status.get("resourceClaimStatuses"), path)):
        raw = ctx.mapping(raw, f"{path}[{i}]")
        name = ctx.string(raw.get("name"), f"{path}[{i}].name", required=True)
        out[name] = ctx.string(raw.get("resourceClaimName"),
                               join_path(f"{path}[{i}]", "resourceClaimName"))
    return out
