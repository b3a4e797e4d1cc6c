"""The field names of every struct of the DRA kinds of ``resource.k8s.io/v1``
(Kubernetes 1.35) and of a pod's resource claims, for strict decoding: a
field the API does not have is found here, as the API server's strict
decoder finds it (``kubectl``'s default ``--validate=strict``).

The API server matches a JSON key to a field by its exact spelling (case
counts: ``allocationmode`` is no ``allocationMode``), and with strict field
validation refuses an object that has a key no field takes, naming every
such key by its path: ``strict decoding error: unknown field
"spec.devices.requests[0].exactly.allocationmode"`` (list entries as
``[i]``, map entries as ``.key``; at most 100 named).

How tensorsched meets one (:func:`refuse_unknown_fields`,
:func:`unknown_field_warnings`): a new object (a manifest, no
``metadata.resourceVersion``, ``dra_validation.stored_object``) is refused
in those words; a stored object (a dump, perhaps from a newer API server
that has fields 1.35 lacks) is read without the field, with one warning
line per object naming the fields it carries that tensorsched does not
model (found when it is read, remembered for the warning).

Cost: the common case, nothing unknown, is one key-set comparison per
mapping (:func:`known`), no path built; paths are built only for an object
that has an unknown field.  A ResourceSlice's devices are looked into once
per device shape (``dra``: the device but its name, the key its parser
memo computes anyway).

The tables (:data:`STRUCTS`) are the structs' JSON field names, each with
what its value is: nothing to look into (a scalar, a list of scalars,
free-form data such as an opaque configuration's ``parameters``), a struct,
a list of structs or a map of structs.  The fields tensorsched refuses as
added after 1.35 (``dra._LATER_*``) are listed too: they are known to the
API (a newer one), and refused with their own words by the parser.
"""

from __future__ import annotations

from .dra_validation import stored_object
from .meta import ObjectContext, source_of

__all__ = [
    "STRUCTS",
    "KIND_STRUCTS",
    "known",
    "slice_known_but_devices",
    "unknown_fields",
    "unknown_fields_message",
    "refuse_unknown_fields",
    "pod_claim_unknown_fields",
    "refuse_unknown_pod_claim_fields",
    "unknown_field_warnings",
]

#: at most this many unknown fields named in one message (the decoder's cap)
MAX_NAMED = 100

# A field's value: None (nothing to look into), "Name" (struct Name),
# "[]Name" (a list of Name), "{}Name" (a map of string to Name).
_META = {
    "ObjectMeta": {
        "name": None, "generateName": None, "namespace": None, "selfLink": None,
        "uid": None, "resourceVersion": None, "generation": None,
        "creationTimestamp": None, "deletionTimestamp": None,
        "deletionGracePeriodSeconds": None, "labels": None, "annotations": None,
        "ownerReferences": "[]OwnerReference", "finalizers": None,
        "managedFields": "[]ManagedFieldsEntry",
    },
    "OwnerReference": {
        "apiVersion": None, "kind": None, "name": None, "uid": None, "controller": None,
        "blockOwnerDeletion": None,
    },
    # fieldsV1 is free-form (the managed fields' trie)
    "ManagedFieldsEntry": {
        "manager": None, "operation": None, "apiVersion": None, "time": None,
        "fieldsType": None, "fieldsV1": None, "subresource": None,
    },
    "Condition": {
        "type": None, "status": None, "observedGeneration": None,
        "lastTransitionTime": None, "reason": None, "message": None,
    },
    "NodeSelector": {"nodeSelectorTerms": "[]NodeSelectorTerm"},
    "NodeSelectorTerm": {
        "matchExpressions": "[]NodeSelectorRequirement",
        "matchFields": "[]NodeSelectorRequirement",
    },
    "NodeSelectorRequirement": {"key": None, "operator": None, "values": None},
}

_SELECTION = {
    "DeviceSelector": {"cel": "CELDeviceSelector"},
    "CELDeviceSelector": {"expression": None},
    # DeviceConfiguration is inlined in the three configurations below;
    # ``parameters`` is free-form (the driver's)
    "OpaqueDeviceConfiguration": {"driver": None, "parameters": None},
    "DeviceClassConfiguration": {"opaque": "OpaqueDeviceConfiguration"},
    "DeviceClaimConfiguration": {"requests": None, "opaque": "OpaqueDeviceConfiguration"},
    "DeviceAllocationConfiguration": {
        "source": None, "requests": None, "opaque": "OpaqueDeviceConfiguration",
    },
    "DeviceToleration": {
        "key": None, "operator": None, "value": None, "effect": None,
        "tolerationSeconds": None,
    },
}

_SLICE = {
    "ResourceSlice": {
        "apiVersion": None, "kind": None, "metadata": "ObjectMeta",
        "spec": "ResourceSliceSpec",
    },
    "ResourceSliceSpec": {
        "driver": None, "pool": "ResourcePool", "nodeName": None,
        "nodeSelector": "NodeSelector", "allNodes": None, "devices": "[]Device",
        "perDeviceNodeSelection": None, "sharedCounters": "[]CounterSet",
        # after 1.35 (refused by the parser)
        "partitionTypeAttribute": None, "skipNodeOperations": None,
    },
    "ResourcePool": {"name": None, "generation": None, "resourceSliceCount": None},
    "CounterSet": {"name": None, "counters": "{}Counter"},
    "Counter": {"value": None},
    "Device": {
        "name": None, "attributes": "{}DeviceAttribute", "capacity": "{}DeviceCapacity",
        "consumesCounters": "[]DeviceCounterConsumption", "nodeName": None,
        "nodeSelector": "NodeSelector", "allNodes": None, "taints": "[]DeviceTaint",
        "bindsToNode": None, "bindingConditions": None, "bindingFailureConditions": None,
        "allowMultipleAllocations": None,
        # after 1.35 (refused by the parser)
        "nodeAllocatableResources": None,
    },
    # the list forms are behind DRAListTypeAttributes
    "DeviceAttribute": {
        "int": None, "bool": None, "string": None, "version": None,
        "ints": None, "bools": None, "strings": None, "versions": None,
    },
    "DeviceCapacity": {"value": None, "requestPolicy": "CapacityRequestPolicy"},
    "CapacityRequestPolicy": {
        "default": None, "validValues": None, "validRange": "CapacityRequestPolicyRange",
    },
    "CapacityRequestPolicyRange": {"min": None, "max": None, "step": None},
    "DeviceCounterConsumption": {
        "counterSet": None, "counters": "{}Counter",
        # after 1.35 (refused by the parser)
        "compatibilityGroups": None,
    },
    "DeviceTaint": {"key": None, "value": None, "effect": None, "timeAdded": None},
}

_CLASS = {
    "DeviceClass": {
        "apiVersion": None, "kind": None, "metadata": "ObjectMeta", "spec": "DeviceClassSpec",
    },
    "DeviceClassSpec": {
        "selectors": "[]DeviceSelector", "config": "[]DeviceClassConfiguration",
        "extendedResourceName": None,
    },
}

_CLAIM = {
    "ResourceClaim": {
        "apiVersion": None, "kind": None, "metadata": "ObjectMeta",
        "spec": "ResourceClaimSpec", "status": "ResourceClaimStatus",
    },
    "ResourceClaimTemplate": {
        "apiVersion": None, "kind": None, "metadata": "ObjectMeta",
        "spec": "ResourceClaimTemplateSpec",
    },
    "ResourceClaimTemplateSpec": {"metadata": "ObjectMeta", "spec": "ResourceClaimSpec"},
    "ResourceClaimSpec": {"devices": "DeviceClaim"},
    "DeviceClaim": {
        "requests": "[]DeviceRequest", "constraints": "[]DeviceConstraint",
        "config": "[]DeviceClaimConfiguration",
    },
    "DeviceRequest": {
        "name": None, "exactly": "ExactDeviceRequest", "firstAvailable": "[]DeviceSubRequest",
    },
    "ExactDeviceRequest": {
        "deviceClassName": None, "selectors": "[]DeviceSelector", "allocationMode": None,
        "count": None, "adminAccess": None, "tolerations": "[]DeviceToleration",
        "capacity": "CapacityRequirements",
        # after 1.35 (refused by the parser)
        "derivedAttributes": None,
    },
    "DeviceSubRequest": {
        "name": None, "deviceClassName": None, "selectors": "[]DeviceSelector",
        "allocationMode": None, "count": None, "tolerations": "[]DeviceToleration",
        "capacity": "CapacityRequirements",
        # after 1.35 (refused by the parser)
        "derivedAttributes": None,
    },
    "CapacityRequirements": {"requests": None},
    "DeviceConstraint": {"requests": None, "matchAttribute": None, "distinctAttribute": None},
    "ResourceClaimStatus": {
        "allocation": "AllocationResult", "reservedFor": "[]ResourceClaimConsumerReference",
        "devices": "[]AllocatedDeviceStatus",
    },
    "ResourceClaimConsumerReference": {
        "apiGroup": None, "resource": None, "name": None, "uid": None,
    },
    "AllocationResult": {
        "devices": "DeviceAllocationResult", "nodeSelector": "NodeSelector",
        "allocationTimestamp": None,
    },
    "DeviceAllocationResult": {
        "results": "[]DeviceRequestAllocationResult",
        "config": "[]DeviceAllocationConfiguration",
    },
    "DeviceRequestAllocationResult": {
        "request": None, "driver": None, "pool": None, "device": None, "adminAccess": None,
        "tolerations": "[]DeviceToleration", "bindingConditions": None,
        "bindingFailureConditions": None, "shareID": None, "consumedCapacity": None,
        # after 1.35 (refused by the parser)
        "skipNodeOperations": None,
    },
    # ``data`` is free-form (the driver's)
    "AllocatedDeviceStatus": {
        "driver": None, "pool": None, "device": None, "shareID": None,
        "conditions": "[]Condition", "data": None, "networkData": "NetworkDeviceData",
    },
    "NetworkDeviceData": {"interfaceName": None, "ips": None, "hardwareAddress": None},
}

# core/v1: a pod's claims and a container's references to them
_POD = {
    "PodResourceClaim": {
        "name": None, "resourceClaimName": None, "resourceClaimTemplateName": None,
    },
    "ResourceClaim(core)": {"name": None, "request": None},
}

#: struct name -> {JSON field name: its value} (see above)
STRUCTS: dict[str, dict[str, str | None]] = {
    **_META, **_SELECTION, **_SLICE, **_CLASS, **_CLAIM, **_POD,
}

#: the struct of each kind's object
KIND_STRUCTS = {kind: kind for kind in
                ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate")}

_STRUCT, _LIST, _MAP = range(3)


class _Struct:
    """A struct of STRUCTS, compiled: ``fields`` (name -> None, or (shape,
    the field's _Struct)), ``keys`` (its field names) and ``children``
    (``(name, shape, _Struct)`` of the fields that hold structs)."""

    __slots__ = ("fields", "keys", "children")

    def __init__(self):
        self.fields: dict = {}
        self.keys: frozenset = frozenset()
        self.children: tuple = ()


def _compile(structs: dict) -> dict[str, _Struct]:
    out = {name: _Struct() for name in structs}
    for name, fields in structs.items():
        s = out[name]
        for field, value in fields.items():
            if value is None:
                s.fields[field] = None
            elif value.startswith("[]"):
                s.fields[field] = (_LIST, out[value[2:]])
            elif value.startswith("{}"):
                s.fields[field] = (_MAP, out[value[2:]])
            else:
                s.fields[field] = (_STRUCT, out[value])
        s.keys = frozenset(s.fields)
        s.children = tuple((f, *v) for f, v in s.fields.items() if v is not None)
    return out


_COMPILED = _compile(STRUCTS)


def _known(value: dict, s: _Struct) -> bool:
    """Whether every key of ``value`` (a mapping of struct ``s``) and of its
    nested structs is a field: the common case, answered without building
    any path (a key-set comparison per mapping)."""
    if not value.keys() <= s.keys:
        return False
    for field, shape, sub in s.children:
        v = value.get(field)
        if v is None:
            continue
        if shape == _STRUCT:
            if isinstance(v, dict) and not _known(v, sub):
                return False
        elif shape == _LIST:
            if isinstance(v, list):
                for item in v:
                    if isinstance(item, dict) and not _known(item, sub):
                        return False
        elif isinstance(v, dict):
            if sub.children:
                for item in v.values():
                    if isinstance(item, dict) and not _known(item, sub):
                        return False
            else:
                keys = sub.keys
                for item in v.values():
                    if isinstance(item, dict) and not item.keys() <= keys:
                        return False
    return True


def _walk(value: dict, s: _Struct, path: str, out: list) -> None:
    """Append to ``out`` the path of every key of ``value`` (a mapping of
    struct ``s``) and of its nested structs that no field takes, in
    document order.  Values of the wrong type are passed by (the parser
    names them)."""
    prefix = f"{path}." if path else ""
    fields = s.fields
    for key, v in value.items():
        child = fields.get(key, fields) if type(key) is str else fields
        if child is fields:
            out.append(f"{prefix}{key}")
            continue
        if child is None or v is None:
            continue
        shape, sub = child
        if shape == _STRUCT:
            if isinstance(v, dict):
                _walk(v, sub, f"{prefix}{key}", out)
        elif shape == _LIST:
            if isinstance(v, list):
                for i, item in enumerate(v):
                    if isinstance(item, dict):
                        _walk(item, sub, f"{prefix}{key}[{i}]", out)
        elif isinstance(v, dict):
            for k, item in v.items():
                if isinstance(item, dict):
                    _walk(item, sub, f"{prefix}{key}.{k}", out)


def _but(s: _Struct, field: str, inner: _Struct | None = None) -> _Struct:
    """``s`` whose ``field`` is not looked into (``inner``: is that struct
    instead)."""
    out = _Struct()
    out.fields, out.keys = s.fields, s.keys
    children = []
    for f, shape, sub in s.children:
        if f != field:
            children.append((f, shape, sub))
        elif inner is not None:
            children.append((f, shape, inner))
    out.children = tuple(children)
    return out


# a ResourceSlice but its devices (checked one shape at a time, ``dra``)
_SLICE_BUT_DEVICES = _but(_COMPILED["ResourceSlice"], "spec",
                          _but(_COMPILED["ResourceSliceSpec"], "devices"))


def known(value, struct: str) -> bool:
    """Whether ``value`` (an object of struct ``struct``) has no key the
    API lacks (:func:`unknown_fields` empty), answered cheaply."""
    return not isinstance(value, dict) or _known(value, _COMPILED[struct])


def slice_known_but_devices(obj) -> bool:
    """:func:`known` for a ResourceSlice, its ``spec.devices`` entries left
    out (the caller checks each device shape once: ``known(d, "Device")``)."""
    return not isinstance(obj, dict) or _known(obj, _SLICE_BUT_DEVICES)


def _unknown(value: dict, s: _Struct, path: str, out: list) -> None:
    """``_walk``, after the cheap ``_known`` says there is something to find."""
    if not _known(value, s):
        _walk(value, s, path, out)


def unknown_fields(value, struct: str, path: str = "") -> list[str]:
    """The paths of the keys in ``value`` (an object of struct ``struct``,
    e.g. ``"ResourceClaim"``, found at ``path``) that the API has no field
    for, in document order; [] when ``value`` is not a mapping."""
    out: list[str] = []
    if isinstance(value, dict):
        _unknown(value, _COMPILED[struct], path, out)
    return out


def unknown_fields_message(paths) -> str:
    """The API server's words for ``paths`` (at most :data:`MAX_NAMED`)."""
    return "strict decoding error: " + ", ".join(
        f'unknown field "{p}"' for p in list(paths)[:MAX_NAMED])


# Stored objects read with fields the API lacks: id(obj) -> (obj, their
# paths), for the warnings (bounded; the object kept so an id is not reused).
_STORED_UNKNOWN: dict[int, tuple[dict, list[str]]] = {}


def refuse_unknown_fields(ctx: ObjectContext, obj: dict, kind: str,
                          clean: bool | None = None) -> None:
    """Refuse a new object (a manifest: no ``metadata.resourceVersion``) of
    DRA kind ``kind`` that has a field the API does not have, as the API
    server's strict decoding does; a stored object's such fields are
    remembered for :func:`unknown_field_warnings`.  ``clean``: the
    caller's :func:`known` of ``obj`` when it has it (None: asked here)."""
    struct = KIND_STRUCTS[kind]
    if clean is None:
        clean = known(obj, struct)
    if clean:
        return
    paths = unknown_fields(obj, struct)
    if not stored_object(obj):
        ctx.fail("", unknown_fields_message(paths))
    if len(_STORED_UNKNOWN) > 65536:
        _STORED_UNKNOWN.clear()
    _STORED_UNKNOWN[id(obj)] = (obj, paths)


def _remembered(obj) -> list[str]:
    """The unknown fields :func:`refuse_unknown_fields` found in stored
    ``obj`` ([] when none)."""
    got = _STORED_UNKNOWN.get(id(obj))
    return got[1] if got is not None and got[0] is obj else []


def pod_claim_unknown_fields(pod: dict) -> list[str]:
    """The unknown fields of a pod's ``spec.resourceClaims`` entries and of
    its containers' (and init containers') ``resources.claims`` entries."""
    spec = pod.get("spec") if isinstance(pod, dict) else None
    if not isinstance(spec, dict):
        return []
    out: list[str] = []
    claims = spec.get("resourceClaims")
    if isinstance(claims, list):
        fields = _COMPILED["PodResourceClaim"]
        for i, c in enumerate(claims):
            if isinstance(c, dict):
                _unknown(c, fields, f"spec.resourceClaims[{i}]", out)
    fields = _COMPILED["ResourceClaim(core)"]
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
                if isinstance(ref, dict):
                    _unknown(ref, fields, f"spec.{group}[{j}].resources.claims[{k}]", out)
    return out


def refuse_unknown_pod_claim_fields(ctx: ObjectContext, pod: dict) -> None:
    """:func:`refuse_unknown_fields` for a Pod's claims (the entries of
    ``spec.resourceClaims`` and of the containers' ``resources.claims``)."""
    if stored_object(pod):
        return
    paths = pod_claim_unknown_fields(pod)
    if paths:
        ctx.fail("", unknown_fields_message(paths))


def _warning(label: str, obj, paths: list[str]) -> str:
    source = source_of(obj)
    where = f"{source}: {label}" if source and source != label else label
    noun = "field" if len(paths) == 1 else "fields"
    named = ", ".join(f'"{p}"' for p in paths[:MAX_NAMED])
    return (f"warning: {where}: unknown {noun} {named}: tensorsched does not model "
            f"{'it' if len(paths) == 1 else 'them'} (a stored object, perhaps from a newer "
            "API server); read without")


def unknown_field_warnings(objects) -> list[str]:
    """One warning line per stored object of ``objects`` (a
    ``manifests.Objects``) that carries fields the API (1.35's) does not
    have: the DRA objects (as their loaders found them) and the pods'
    claims.  New objects with such fields were refused when read."""
    lines = []
    for kind, records in (("DeviceClass", objects.device_classes),
                          ("ResourceSlice", objects.resource_slices),
                          ("ResourceClaim", objects.resource_claims),
                          ("ResourceClaimTemplate", objects.resource_claim_templates)):
        if not _STORED_UNKNOWN:
            break
        for r in records:
            paths = _remembered(r.obj)      # found when read (the loaders)
            if paths:
                key = f"{r.namespace}/{r.name}" if hasattr(r, "namespace") else r.name
                lines.append(_warning(f"{kind} {key}", r.obj, paths))
    for pod in objects.pods:
        # a pod without claims has no claim references either (each names
        # one of the pod's claims, else it was refused)
        if not pod.resource_claims or not stored_object(pod.obj):
            continue
        paths = pod_claim_unknown_fields(pod.obj)
        if paths:
            lines.append(_warning(f"Pod {pod.key}", pod.obj, paths))
    return lines
