"""DRA extended resources (the DRAExtendedResource feature): a container
asks for an extended resource (``resources.requests``) that a DeviceClass
serves, either by its ``spec.extendedResourceName`` or by the implicit name
``deviceclass.resource.kubernetes.io/<class>``.  On a node that does not
offer the resource itself (allocatable absent or 0) DRA devices of that
class satisfy it, through one claim the scheduler makes for the pod:
``<pod>-extended-resources-``, annotated as such, owned by the pod, one
ExactCount request per (container, resource) named
``container-<i>-request-<j>`` (``j`` over the container's DRA-served
resources in name order), count = the requested quantity.

This module only reads pods and classes and builds that claim; the
DynamicResources plugin decides per node whether it is needed.
"""

from __future__ import annotations

from dataclasses import dataclass

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.dra import parse_resource_claim
from tensorsched.framework.parsing.meta import join_path
from tensorsched.framework.parsing.quantity import int_value, parse_quantity

IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


@dataclass(frozen=True)
class ExtendedRequest:
    """One container's request for a DRA-served extended resource."""

    container: int          # index in spec.containers
    resource: str           # the extended resource name as the pod wrote it
    device_class: str       # the DeviceClass serving it
    count: int              # devices asked for (Quantity.Value of the request)


def resource_classes(classes) -> dict[str, str]:
    """Extended resource name -> DeviceClass name, for ``classes`` (a
    mapping name -> DeviceClassRecord).  The implicit name of every class,
    and each explicit ``extendedResourceName``; when several classes name
    the same resource the first by name serves it (a fixed choice, so
    every run agrees)."""
    out: dict[str, str] = {}
    for name in sorted(classes):
        out.setdefault(IMPLICIT_PREFIX + name, name)
        ext = classes[name].extended_resource_name
        if ext:
            out.setdefault(ext, name)
    return out


def may_request(pod) -> bool:
    """Whether some container of ``pod`` requests a resource with a domain
    prefix (every extended resource has one): such a pod may need DRA
    devices, whatever the classes are."""
    for c in (((pod.obj or {}).get("spec") or {}).get("containers") or []):
        reqs = ((c or {}).get("resources") or {}).get("requests") or {}
        if any("/" in str(k) for k in reqs):
            return True
    return False


def extended_requests(pod, served: dict[str, str]) -> list[ExtendedRequest]:
    """The pod's container requests that DeviceClasses serve, in container
    order and, within a container, in resource-name order; requests of 0
    ask for nothing and are left out."""
    out = []
    containers = ((pod.obj or {}).get("spec") or {}).get("containers") or []
    for i, c in enumerate(containers):
        reqs = ((c or {}).get("resources") or {}).get("requests") or {}
        for res in sorted(reqs):
            cls = served.get(res)
            if cls is None:
                continue
            try:
                count = int_value(parse_quantity(reqs[res]))
            except ValueError as exc:
                # parse_pod refuses this; a record built another way
                # still gets the project's error, naming the pod and field
                raise ManifestError(f"Pod {pod.key}", join_path(
                    f"spec.containers[{i}].resources.requests", res), str(exc)) from None
            if count > 0:
                out.append(ExtendedRequest(i, res, cls, count))
    return out


def lacking(node, requests: list[ExtendedRequest]) -> tuple[int, ...]:
    """Indexes of ``requests`` the node does not offer itself (allocatable
    absent or 0): those DRA devices must serve there."""
    alloc = node.allocatable
    return tuple(k for k, r in enumerate(requests) if alloc.get(r.resource, 0) <= 0)


def claim_record(pod, requests: list[ExtendedRequest]):
    """The ResourceClaimRecord the scheduler makes for ``pod`` to serve
    ``requests`` (see the module doc)."""
    specs = []
    per_container: dict[int, int] = {}
    for r in requests:
        j = per_container.get(r.container, 0)
        per_container[r.container] = j + 1
        specs.append({"name": f"container-{r.container}-request-{j}",
                      "exactly": {"deviceClassName": r.device_class,
                                  "allocationMode": "ExactCount", "count": r.count}})
    owner = {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid,
             "controller": True}
    prefix = f"{pod.name}-extended-resources-"
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": prefix + "0", "generateName": prefix,
                        "namespace": pod.namespace,
                        "annotations": {CLAIM_ANNOTATION: "true"},
                        "ownerReferences": [owner]},
           "spec": {"devices": {"requests": specs}}}
    return parse_resource_claim(obj)


def is_extended_claim(record) -> bool:
    """Whether ``record`` is a claim the scheduler made for extended
    resources."""
    ann = ((record.obj or {}).get("metadata") or {}).get("annotations") or {}
    return ann.get(CLAIM_ANNOTATION) == "true"
