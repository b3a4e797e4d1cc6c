"""Parsing the Dynamic Resource Allocation kinds of ``resource.k8s.io/v1``:
DeviceClass, ResourceSlice, ResourceClaim and ResourceClaimTemplate, into the
records of :mod:`.dra_records`.

Structure is checked as for every kind (types, required fields, enum values,
quantities), each problem a :class:`ManifestError` naming the object and the
field.  A few things the API server would refuse but upstream's allocator
still meets and answers with its own error (a selector without ``cel``, a
constraint that sets nothing, an attribute without a value, an empty
``deviceClassName``) are kept, so that the allocator reports them as upstream
does (see ``state.dra_allocator``); objects read as a cluster (the
``load_*`` functions, ``OBJECT_KINDS``) also get the API server's checks
(:mod:`.dra_validation`), and its strict decoding first: a field the API
does not have refuses a new object and is warned of in a stored one
(:mod:`.dra_fields`).  Objects of another ``resource.k8s.io`` version
are not read (counted as ignored kinds).

Defaults applied as the API server does: a request's ``allocationMode`` is
``ExactCount`` with ``count: 1``; a toleration's ``operator`` is ``Equal``; a
pool's ``resourceSliceCount`` must be set (>= 1).
"""

from __future__ import annotations

import dataclasses

from fractions import Fraction

from tensorsched.framework.records.dra_records import (
    FIRST_AVAILABLE_MAX_SIZE,
    AllocatedConfig,
    AllocationResult,
    AttrValue,
    ConsumerRef,
    CounterConsumption,
    CounterSet,
    DeviceCapacity,
    DeviceClassRecord,
    DeviceConfig,
    DeviceConstraint,
    DeviceRecord,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceTaint,
    DeviceToleration,
    ExactRequest,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PoolRef,
    RequestPolicy,
    ResourceClaimRecord,
    ResourceClaimTemplateRecord,
    ResourceSliceRecord,
)
from .dra_device_status import check_device_statuses
from .dra_fields import known, refuse_unknown_fields, slice_known_but_devices
from .dra_validation import (
    RESERVED_FOR_MAX,
    check_claim_spec,
    check_claim_status,
    check_device,
    check_device_class,
    check_slice,
    check_template_metadata,
    driver_name_errors,
    field_problem,
    stored_object,
)
from .meta import (
    NameRules,
    ObjectContext,
    ObjectKind,
    check_annotations,
    dns1123_label_errors,
    identity,
    duplicate_value,
    invalid_value,
    join_path,
    qualified_name_errors,
    type_name,
    unsupported_value,
)
from .quantity import INT64_MAX, INT64_MIN, parse_quantity
from .semver import parse_semver

API_VERSION = "resource.k8s.io/v1"
ALLOCATION_MODES = ("ExactCount", "All")
DEVICE_TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")
TOLERATION_OPERATORS = ("Equal", "Exists")
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_ATTRIBUTE_FIELDS = ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")

__all__ = [
    "API_VERSION",
    "parse_device_class",
    "parse_resource_slice",
    "parse_resource_claim",
    "parse_resource_claim_template",
    "parse_allocation_result",
    "node_selector_matches",
    "OBJECT_KINDS",
]


def is_resource_v1(obj) -> bool:
    """Objects of ``resource.k8s.io/v1`` (or without an apiVersion) are read."""
    version = obj.get("apiVersion") if isinstance(obj, dict) else None
    return version in (None, "", API_VERSION)


_NOT_FALSE = "Invalid value: false: must be either unset or set to true"

#: ResourceSliceMaxDevices (resource.k8s.io/v1)
MAX_DEVICES_PER_SLICE = 128
#: Past this many devices a slice is refused as too many before its strict
#: decoding (which looks into every device: a million took ~16 s to refuse);
#: the API server's request size bound (3 MiB) never lets one that large in,
#: so no unknown field of such a slice could have been named first.
MAX_DECODED_DEVICES = 100_000
#: CELSelectorExpressionMaxLength: bytes of a selector's expression
CEL_SELECTOR_MAX_LENGTH = 10 * 1024

# --------------------------------------------------------------------------
# fields added after Kubernetes 1.35
#
# resource.k8s.io/v1 gained these fields after 1.35, each behind an alpha
# feature gate; tensorsched models 1.35's API, so an object that sets one is
# refused (the field named) rather than read as if it were not there.
# (field, upstream's feature gate) by where the field sits:
_LATER_SLICE_FIELDS = (("partitionTypeAttribute", "DRAPartitionableDevicesType"),
                       ("skipNodeOperations", "DRAOptionalNodeOperations"))
_LATER_DEVICE_FIELDS = (("nodeAllocatableResources", "DRANodeAllocatableResources"),)
_LATER_CONSUMPTION_FIELDS = (("compatibilityGroups", "DRADeviceCompatibilityGroups"),)
_LATER_REQUEST_FIELDS = (("derivedAttributes", "DRADerivedAttributes"),)
_LATER_RESULT_FIELDS = (("skipNodeOperations", "DRAOptionalNodeOperations"),)


def _refuse_later_fields(ctx: ObjectContext, value: dict, path: str, fields) -> None:
    """Refuse any of ``fields`` set in ``value`` (an empty list or map is
    as if unset, as upstream omits it)."""
    for field, gate in fields:
        v = value.get(field)
        if v is not None and v != [] and v != {}:
            ctx.fail(f"{path}.{field}",
                     f"not modelled: a field added to {API_VERSION} after Kubernetes 1.35 "
                     f"(feature gate {gate}); tensorsched reads 1.35's fields only, remove "
                     "it to load this object")


# --------------------------------------------------------------------------
# small parts


def _dns_label(ctx: ObjectContext, value: str, path: str) -> str:
    errs = dns1123_label_errors(value)
    if errs:
        ctx.fail(path, invalid_value(value, errs))
    return value


def _required(ctx: ObjectContext, value, path: str) -> str:
    """A string field the API requires (absent and empty alike: Go's zero
    value), in upstream's words."""
    text = ctx.string(value, path)
    if not text:
        ctx.fail(path, "Required value")
    return text


def _label(ctx: ObjectContext, value, path: str) -> str:
    """A DNS-label field (a device's or a request's name): absent or empty
    is an invalid label, as upstream reads Go's zero value."""
    return _dns_label(ctx, ctx.string(value, path), path)


def _given_name(ctx: ObjectContext, value, path: str) -> str:
    """An allocation result's request or device, a subrequest's name: not
    empty (an invalid DNS label, as upstream words it); its form is checked
    with the API server's checks (upstream's Go tests name them freely)."""
    text = ctx.string(value, path)
    return text if text else _dns_label(ctx, text, path)


def _driver_name(ctx: ObjectContext, value: str, path: str) -> str:
    """validateDriverName: a DNS subdomain (case aside) of at most 63 bytes."""
    errs = driver_name_errors(value)
    if errs:
        ctx.fail(path, field_problem(value, errs))
    return value


def _quantity(ctx: ObjectContext, value, path: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        ctx.fail(path, f"must be a quantity string, got {type_name(value)} {value!r}")
    try:
        return parse_quantity(value)
    except ValueError as exc:
        ctx.fail(path, str(exc))


def _quantity_map(ctx: ObjectContext, value, path: str, nested: bool) -> dict[str, Fraction]:
    """name -> quantity; ``nested`` maps are ``{name: {value: q}}`` (counters)."""
    out: dict[str, Fraction] = {}
    for k, v in ctx.mapping(value, path).items():
        if not isinstance(k, str) or not k:
            ctx.fail(path, f"names must be non-empty strings, got {k!r}")
        kpath = join_path(path, k)
        if nested:
            v = ctx.mapping(v, kpath)
            if v.get("value") is None:
                ctx.fail(join_path(kpath, "value"), "required")
            out[k] = _quantity(ctx, v.get("value"), join_path(kpath, "value"))
        else:
            out[k] = _quantity(ctx, v, kpath)
    return out


def _node_selector(ctx: ObjectContext, value, path: str) -> NodeSelector | None:
    if value is None:
        return None
    value = ctx.mapping(value, path)
    terms = []
    tpath = f"{path}.nodeSelectorTerms"
    for i, term in enumerate(ctx.list(value.get("nodeSelectorTerms"), tpath)):
        term = ctx.mapping(term, f"{tpath}[{i}]")
        parts = []
        for field_name in ("matchExpressions", "matchFields"):
            reqs = []
            rpath = f"{tpath}[{i}].{field_name}"
            for j, req in enumerate(ctx.list(term.get(field_name), rpath)):
                req = ctx.mapping(req, f"{rpath}[{j}]")
                key = ctx.string(req.get("key"), f"{rpath}[{j}].key", required=True)
                op = ctx.enum(
                    req.get("operator"), f"{rpath}[{j}].operator", NODE_SELECTOR_OPERATORS
                )
                vals = tuple(ctx.str_list(req.get("values"), f"{rpath}[{j}].values"))
                reqs.append(NodeSelectorRequirement(key, op, vals))
            parts.append(tuple(reqs))
        terms.append(NodeSelectorTerm(parts[0], parts[1]))
    return NodeSelector(tuple(terms), value)


def _requirement_matches(req: NodeSelectorRequirement, value: str | None) -> bool:
    op = req.operator
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    # Gt / Lt: one integer value on both sides, else no match
    if value is None or len(req.values) != 1:
        return False
    try:
        have, want = int(value), int(req.values[0])
    except ValueError:
        return False
    return have > want if op == "Gt" else have < want


def node_selector_matches(selector: NodeSelector, node_name: str, labels: dict) -> bool:
    """nodeaffinity.NodeSelector.Match: some term whose requirements all hold
    (a term without requirements matches nothing); ``matchFields`` know only
    ``metadata.name``."""
    for term in selector.terms:
        if not term.match_expressions and not term.match_fields:
            continue
        if all(_requirement_matches(r, labels.get(r.key)) for r in term.match_expressions) and all(
            r.key == "metadata.name" and _requirement_matches(r, node_name)
            for r in term.match_fields
        ):
            return True
    return False


def _taint_effect(ctx: ObjectContext, value, path: str, required: bool) -> str:
    """A taint's effect (required) or a toleration's (optional)."""
    effect = ctx.string(value, path)
    if not effect:
        if required:
            ctx.fail(path, "Required value")
        return ""
    if effect not in DEVICE_TAINT_EFFECTS:
        ctx.fail(path, unsupported_value(effect, sorted(DEVICE_TAINT_EFFECTS)))
    return effect


def _taint_key(ctx: ObjectContext, value, path: str) -> str:
    """A taint's key: a qualified name, so not empty (``ValidateLabelName``)."""
    key = ctx.string(value, path)
    if not key:
        ctx.fail(path, invalid_value(key, qualified_name_errors(key)))
    return key


def _tolerations(ctx: ObjectContext, value, path: str) -> tuple[DeviceToleration, ...]:
    out = []
    for i, t in enumerate(ctx.list(value, path)):
        tpath = f"{path}[{i}]"
        t = ctx.mapping(t, tpath)
        key = ctx.string(t.get("key"), f"{tpath}.key")
        op = ctx.string(t.get("operator"), f"{tpath}.operator") or "Equal"
        if op not in TOLERATION_OPERATORS:
            ctx.fail(f"{tpath}.operator", unsupported_value(op, TOLERATION_OPERATORS))
        val = ctx.string(t.get("value"), f"{tpath}.value")
        effect = _taint_effect(ctx, t.get("effect"), f"{tpath}.effect", required=False)
        # an empty key with Equal is allowed (upstream's validation checks a
        # key only when one is given): it tolerates every taint whose value
        # is the toleration's
        if op == "Exists" and val:
            ctx.fail(f"{tpath}.value", invalid_value(val, ["must be empty for operator `Exists`"]))
        seconds = None
        if t.get("tolerationSeconds") is not None:
            seconds = _int64(ctx, t.get("tolerationSeconds"), f"{tpath}.tolerationSeconds")
        out.append(DeviceToleration(key, op, val, effect, seconds))
    return tuple(out)


def _int64(ctx: ObjectContext, value, path: str, lo: int | None = None) -> int:
    """An int64 field (the API's ``int64``): an integer >= ``lo``, else
    ManifestError; past int64 the API server's decoder refuses it (nothing
    here saturates or wraps)."""
    value = ctx.integer(value, path, lo=lo)
    if not INT64_MIN <= value <= INT64_MAX:
        ctx.fail(path, f"must be in {INT64_MIN}..{INT64_MAX} (an int64), got {value}")
    return value


def _selectors(ctx: ObjectContext, value, path: str,
               stored: bool = False) -> tuple[str | None, ...]:
    """The selectors' expressions (None: a selector without ``cel``); one
    past 10 KiB is refused unless the object is ``stored``
    (``dra_validation.stored_object``: the limit is upstream's on create)."""
    out = []
    for i, sel in enumerate(ctx.list(value, path)):
        sel = ctx.mapping(sel, f"{path}[{i}]")
        cel = sel.get("cel")
        if cel is None:
            out.append(None)  # unknown selector type: the allocator refuses it
            continue
        cel = ctx.mapping(cel, f"{path}[{i}].cel")
        epath = f"{path}[{i}].cel.expression"
        expression = ctx.string(cel.get("expression"), epath, required=True)
        # upstream does not compile a longer one (Go's len: bytes)
        if not stored and len(expression) > CEL_SELECTOR_MAX_LENGTH // 4 and len(
                expression.encode("utf-8", "surrogatepass")) > CEL_SELECTOR_MAX_LENGTH:
            ctx.fail(epath, f"Too long: may not be more than {CEL_SELECTOR_MAX_LENGTH} bytes")
        out.append(expression)
    return tuple(out)


def _opaque_configs(
    ctx: ObjectContext, value, path: str, with_requests: bool
) -> tuple[DeviceConfig, ...]:
    out = []
    for i, c in enumerate(ctx.list(value, path)):
        cpath = f"{path}[{i}]"
        c = ctx.mapping(c, cpath)
        opaque = c.get("opaque")
        if opaque is None:
            # the only configuration type
            ctx.fail(f"{cpath}.opaque", "Required value")
        opaque = ctx.mapping(opaque, f"{cpath}.opaque")
        driver = ctx.string(opaque.get("driver"), f"{cpath}.opaque.driver")
        if not driver:
            ctx.fail(f"{cpath}.opaque.driver", "Required value")
        requests = (
            tuple(ctx.str_list(c.get("requests"), f"{cpath}.requests")) if with_requests else ()
        )
        out.append(DeviceConfig(driver, opaque.get("parameters"), requests))
    return tuple(out)


# --------------------------------------------------------------------------
# DeviceClass


def parse_device_class(obj: dict, *, where: str | None = None) -> DeviceClassRecord:
    """A DeviceClass -> :class:`DeviceClassRecord` (selectors, config,
    extendedResourceName)."""
    ctx, _, _, name = identity(obj, "DeviceClass", False, where)
    spec = ctx.mapping(obj.get("spec"), "spec")
    ext = spec.get("extendedResourceName")
    return DeviceClassRecord(
        name=name,
        selectors=_selectors(ctx, spec.get("selectors"), "spec.selectors", stored_object(obj)),
        config=_opaque_configs(ctx, spec.get("config"), "spec.config", False),
        extended_resource_name=ctx.string(ext, "spec.extendedResourceName")
        if ext is not None
        else None,
        obj=obj,
    )


# --------------------------------------------------------------------------
# ResourceSlice


# Scalar attribute values already checked, by (field, type, value): devices
# of one model repeat the same few values, each checked once (bounded).
_SCALAR_ATTRIBUTES: dict = {}
_SCALAR_FIELDS = frozenset(("int", "bool", "string", "version"))


def _scalar_key(value):
    """The memo key of a one-field scalar attribute object, else None."""
    if type(value) is dict and len(value) == 1:
        ((kind, raw),) = value.items()
        if kind in _SCALAR_FIELDS and type(raw) in (str, int, bool):
            return (kind, type(raw), raw)
    return None


def _attribute(ctx: ObjectContext, value, path) -> AttrValue:
    """One attribute object, checked (``path`` may be a function giving
    the field's path: only an attribute not seen before needs it)."""
    key = _scalar_key(value)
    got = _SCALAR_ATTRIBUTES.get(key) if key is not None else None
    if got is None:
        got = _checked_attribute(ctx, value, path() if callable(path) else path)
        if key is not None:
            if len(_SCALAR_ATTRIBUTES) > 65536:
                _SCALAR_ATTRIBUTES.clear()
            _SCALAR_ATTRIBUTES[key] = got
    return got


def _checked_attribute(ctx: ObjectContext, value, path: str) -> AttrValue:
    value = ctx.mapping(value, path)
    set_fields = [f for f in _ATTRIBUTE_FIELDS if value.get(f) is not None]
    if len(set_fields) > 1:
        shown = {f: value[f] for f in set_fields}
        ctx.fail(path, invalid_value(shown, ["exactly one value must be specified"]))
    if not set_fields:
        return AttrValue("none")
    kind = set_fields[0]
    raw = value[kind]
    fpath = f"{path}.{kind}"
    scalar = kind.rstrip("s") if kind in ("ints", "bools", "strings", "versions") else kind
    items = ctx.list(raw, fpath) if kind != scalar else [raw]
    checked = []
    for i, v in enumerate(items):
        ipath = fpath if kind == scalar else f"{fpath}[{i}]"
        if scalar == "int":
            checked.append(_int64(ctx, v, ipath))
        elif scalar == "bool":
            checked.append(ctx.boolean(v, ipath))
        else:
            checked.append(ctx.string(v, ipath))
        if scalar == "version" and not _is_semver(checked[-1]):
            ctx.fail(ipath, invalid_value(
                checked[-1], ["must be a string compatible with semver.org spec 2.0.0"]))
    return AttrValue(kind, checked[0] if kind == scalar else tuple(checked))


def _is_semver(text: str) -> bool:
    try:
        parse_semver(text)
    except ValueError:
        return False
    return True


def _request_policy(ctx: ObjectContext, value, path: str) -> RequestPolicy | None:
    if value is None:
        return None
    value = ctx.mapping(value, path)
    default = (
        _quantity(ctx, value["default"], f"{path}.default")
        if value.get("default") is not None
        else None
    )
    valid_values = None
    if value.get("validValues") is not None:
        valid_values = tuple(
            sorted(
                _quantity(ctx, v, f"{path}.validValues[{i}]")
                for i, v in enumerate(ctx.list(value["validValues"], f"{path}.validValues"))
            )
        )
    lo = hi = step = None
    if value.get("validRange") is not None:
        rng = ctx.mapping(value["validRange"], f"{path}.validRange")
        if rng.get("min") is None:
            ctx.fail(f"{path}.validRange.min", "required")
        lo = _quantity(ctx, rng["min"], f"{path}.validRange.min")
        if rng.get("max") is not None:
            hi = _quantity(ctx, rng["max"], f"{path}.validRange.max")
        if rng.get("step") is not None:
            step = _quantity(ctx, rng["step"], f"{path}.validRange.step")
    if valid_values is not None and lo is not None:
        ctx.fail(path, 'Forbidden: exactly one policy can be specified, cannot specify '
                 '"validValues" and "validRange" at the same time')
    return RequestPolicy(default, valid_values, lo, hi, step)


# Devices checked already, by everything but their name: a driver publishes
# the same few device shapes on every node (bounded).
_DEVICE_SHAPES: dict = {}
# The shapes (``_shape``) of devices with no field the API lacks (bounded).
_KNOWN_SHAPES: set = set()


def clear_parse_memos() -> None:
    """Forget the checked scalar attribute values and device shapes (a
    benchmark's passes each start from empty memos)."""
    _SCALAR_ATTRIBUTES.clear()
    _DEVICE_SHAPES.clear()
    _KNOWN_SHAPES.clear()


def _shape(d: dict) -> str:
    """A device but its name, as a memo key: equal keys, equal devices but
    for the name."""
    return repr([(k, v) for k, v in d.items() if k != "name"])


def _device_shapes(raw_devices) -> list:
    """The ``_shape`` of every plain-dict device in ``raw_devices`` (None
    for anything else), when it is a list."""
    if type(raw_devices) is not list:
        return []
    return [_shape(d) if type(d) is dict else None for d in raw_devices]


def _slice_known(obj: dict, shapes: list) -> bool:
    """``dra_fields.known`` of a ResourceSlice, each device shape
    (``shapes``, of its ``spec.devices``) looked into once."""
    devices = obj["spec"]["devices"] if shapes else ()
    ok = slice_known_but_devices(obj)
    for d, shape in zip(devices, shapes):
        if not ok:
            break
        if shape is None or shape not in _KNOWN_SHAPES:
            ok = known(d, "Device")
            if ok and shape is not None:
                if len(_KNOWN_SHAPES) > 65536:
                    _KNOWN_SHAPES.clear()
                _KNOWN_SHAPES.add(shape)
    return ok


def _device_of_shape(
    ctx: ObjectContext, d, path: str, per_device: bool, strict: bool, shape: str | None = None
) -> DeviceRecord:
    """``_device`` (and with ``strict`` the API server's checks,
    ``dra_validation.check_device``), checking each distinct shape (the
    device but its name; ``shape``: its ``_shape`` when known) once: the
    name is checked on its own and the rest is the record of the first
    device of that shape (an object that fails is never kept)."""
    if type(d) is not dict:
        return _device(ctx, d, path, per_device, strict)
    key = (per_device, strict, shape if shape is not None else _shape(d))
    got = _DEVICE_SHAPES.get(key)
    if got is None:
        got = _device(ctx, d, path, per_device, strict)
        if len(_DEVICE_SHAPES) > 65536:
            _DEVICE_SHAPES.clear()
        _DEVICE_SHAPES[key] = got
        return got
    name = _label(ctx, d.get("name"), f"{path}.name")
    return got if got.name == name else dataclasses.replace(got, name=name)


def _device(ctx: ObjectContext, d, path: str, per_device: bool, strict: bool) -> DeviceRecord:
    d = ctx.mapping(d, path)
    name = _label(ctx, d.get("name"), f"{path}.name")
    _refuse_later_fields(ctx, d, path, _LATER_DEVICE_FIELDS)
    attributes = {}
    for k, v in ctx.mapping(d.get("attributes"), f"{path}.attributes").items():
        attributes[k] = _attribute(ctx, v, lambda k=k: join_path(f"{path}.attributes", k))
    capacity = {}
    for k, v in ctx.mapping(d.get("capacity"), f"{path}.capacity").items():
        cpath = join_path(f"{path}.capacity", k)
        v = ctx.mapping(v, cpath)
        if v.get("value") is None:
            ctx.fail(f"{cpath}.value", "required")
        capacity[k] = DeviceCapacity(
            _quantity(ctx, v["value"], f"{cpath}.value"),
            _request_policy(ctx, v.get("requestPolicy"), f"{cpath}.requestPolicy"),
        )
    consumes = []
    for i, c in enumerate(ctx.list(d.get("consumesCounters"), f"{path}.consumesCounters")):
        cpath = f"{path}.consumesCounters[{i}]"
        c = ctx.mapping(c, cpath)
        _refuse_later_fields(ctx, c, cpath, _LATER_CONSUMPTION_FIELDS)
        consumes.append(
            CounterConsumption(
                _required(ctx, c.get("counterSet"), f"{cpath}.counterSet"),
                _quantity_map(ctx, c.get("counters"), f"{cpath}.counters", nested=True),
            )
        )
    taints = []
    for i, t in enumerate(ctx.list(d.get("taints"), f"{path}.taints")):
        tpath = f"{path}.taints[{i}]"
        t = ctx.mapping(t, tpath)
        taints.append(
            DeviceTaint(
                _taint_key(ctx, t.get("key"), f"{tpath}.key"),
                ctx.string(t.get("value"), f"{tpath}.value"),
                _taint_effect(ctx, t.get("effect"), f"{tpath}.effect", required=True),
            )
        )
    node_name = d.get("nodeName")
    node_selector = _node_selector(ctx, d.get("nodeSelector"), f"{path}.nodeSelector")
    all_nodes = ctx.boolean(d.get("allNodes"), f"{path}.allNodes")
    if node_name is not None:
        node_name = ctx.string(node_name, f"{path}.nodeName")
    # upstream's order and words: the fields, then how many are set
    if per_device:
        chosen = []
        if node_name is not None:
            if not node_name:
                ctx.fail(f"{path}.nodeName", 'Invalid value: "": must not be empty')
            chosen.append("`nodeName`")
        if node_selector is not None:
            chosen.append("`nodeSelector`")
        if d.get("allNodes") is not None:
            if not all_nodes:
                ctx.fail(f"{path}.allNodes", _NOT_FALSE)
            chosen.append("`allNodes`")
        rule = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
                "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")
        if not chosen:
            ctx.fail(path, f"Required value: {rule}")
        if len(chosen) > 1:
            ctx.fail(path, f'Invalid value: "{{{", ".join(chosen)}}}": {rule}')
    elif node_name is not None or node_selector is not None or d.get("allNodes") is not None:
        ctx.fail(path, "Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can "
                 "only be set if `perDeviceNodeSelection` is set to true in the "
                 "ResourceSlice spec")
    if strict:
        check_device(ctx, d, path, per_device)
    return DeviceRecord(
        name=name,
        attributes=attributes,
        capacity=capacity,
        consumes_counters=tuple(consumes),
        node_name=node_name,
        node_selector=node_selector,
        all_nodes=all_nodes,
        taints=tuple(taints),
        binding_conditions=tuple(
            ctx.str_list(d.get("bindingConditions"), f"{path}.bindingConditions")
        ),
        binding_failure_conditions=tuple(
            ctx.str_list(d.get("bindingFailureConditions"), f"{path}.bindingFailureConditions")
        ),
        binds_to_node=ctx.boolean(d.get("bindsToNode"), f"{path}.bindsToNode"),
        allow_multiple_allocations=ctx.boolean(
            d.get("allowMultipleAllocations"), f"{path}.allowMultipleAllocations"
        ),
    )


def parse_resource_slice(obj: dict, *, where: str | None = None) -> ResourceSliceRecord:
    """A ResourceSlice -> :class:`ResourceSliceRecord`.

    Exactly one of ``nodeName``, ``nodeSelector``, ``allNodes``,
    ``perDeviceNodeSelection`` must be set, as the API requires."""
    return _parse_resource_slice(obj, where, strict=False)


def _parse_resource_slice(obj: dict, where: str | None, strict: bool) -> ResourceSliceRecord:
    ctx, _, _, name = identity(obj, "ResourceSlice", False, where)
    shapes = []
    raw_spec = obj.get("spec")
    raw = raw_spec.get("devices") if type(raw_spec) is dict else None
    if type(raw) is list and len(raw) > MAX_DECODED_DEVICES:
        ctx.fail("spec.devices",
                 f"Too many: {len(raw)}: must have at most {MAX_DEVICES_PER_SLICE} items")
    if strict:
        # strict decoding first, as the API server (each device shape once)
        shapes = _device_shapes(raw_spec.get("devices") if type(raw_spec) is dict else None)
        refuse_unknown_fields(ctx, obj, "ResourceSlice", _slice_known(obj, shapes))
    spec = ctx.mapping(obj.get("spec"), "spec")
    _refuse_later_fields(ctx, spec, "spec", _LATER_SLICE_FIELDS)
    driver = _driver_name(
        ctx, _required(ctx, spec.get("driver"), "spec.driver"), "spec.driver"
    )
    if spec.get("pool") is None:
        ctx.fail("spec.pool", "required")
    pool = ctx.mapping(spec.get("pool"), "spec.pool")
    pool_name = ctx.string(pool.get("name"), "spec.pool.name")
    if not pool_name:
        ctx.fail("spec.pool.name", "Required value")
    generation = _int64(ctx, pool.get("generation", 0), "spec.pool.generation")
    if generation < 0:
        ctx.fail("spec.pool.generation",
                 f"Invalid value: {generation}: must be greater than or equal to zero")
    # an absent count is the API's zero
    slice_count = _int64(ctx, pool.get("resourceSliceCount", 0), "spec.pool.resourceSliceCount")
    if slice_count <= 0:
        ctx.fail("spec.pool.resourceSliceCount",
                 f"Invalid value: {slice_count}: must be greater than zero")
    pool_ref = PoolRef(pool_name, generation, slice_count)
    node_name = spec.get("nodeName")
    if node_name is not None:
        node_name = ctx.string(node_name, "spec.nodeName")
        if not node_name:
            ctx.fail("spec.nodeName", 'Invalid value: "": must be either unset or set to a '
                     "non-empty string")
    node_selector = _node_selector(ctx, spec.get("nodeSelector"), "spec.nodeSelector")
    all_nodes = ctx.boolean(spec.get("allNodes"), "spec.allNodes")
    per_device = ctx.boolean(spec.get("perDeviceNodeSelection"), "spec.perDeviceNodeSelection")
    chosen = [f"`{k}`" for k, v in (("nodeName", node_name), ("nodeSelector", node_selector))
              if v is not None]
    for key, value in (("allNodes", all_nodes), ("perDeviceNodeSelection", per_device)):
        if spec.get(key) is not None:
            if not value:
                ctx.fail(f"spec.{key}", _NOT_FALSE)
            chosen.append(f"`{key}`")
    rule = ("exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
            "is required")
    if not chosen:
        ctx.fail("spec", f"Required value: {rule}")
    if len(chosen) > 1:
        ctx.fail("spec", f'Invalid value: "{{{", ".join(chosen)}}}": {rule}, but multiple '
                 "fields are set")
    raw_devices = ctx.list(spec.get("devices"), "spec.devices")
    if len(raw_devices) > MAX_DEVICES_PER_SLICE:
        ctx.fail(
            "spec.devices",
            f"Too many: {len(raw_devices)}: must have at most {MAX_DEVICES_PER_SLICE} items",
        )
    devices = tuple(
        _device_of_shape(ctx, d, f"spec.devices[{i}]", per_device, strict,
                         shapes[i] if shapes else None)
        for i, d in enumerate(raw_devices)
    )
    counters = []
    for i, cs in enumerate(ctx.list(spec.get("sharedCounters"), "spec.sharedCounters")):
        cpath = f"spec.sharedCounters[{i}]"
        cs = ctx.mapping(cs, cpath)
        counters.append(
            CounterSet(
                _required(ctx, cs.get("name"), f"{cpath}.name"),
                _quantity_map(ctx, cs.get("counters"), f"{cpath}.counters", nested=True),
            )
        )
    if strict:
        check_slice(ctx, spec, devices)
    return ResourceSliceRecord(
        name=name,
        driver=driver,
        pool=pool_ref,
        node_name=node_name,
        node_selector=node_selector,
        all_nodes=all_nodes,
        per_device_node_selection=per_device,
        devices=devices,
        shared_counters=tuple(counters),
        obj=obj,
    )


# --------------------------------------------------------------------------
# ResourceClaim / ResourceClaimTemplate


def _exact(ctx: ObjectContext, value, path: str, sub: bool, stored: bool) -> ExactRequest:
    value = ctx.mapping(value, path)
    _refuse_later_fields(ctx, value, path, _LATER_REQUEST_FIELDS)
    # a subrequest's name is held to the DNS-label rule with the API
    # server's checks only: upstream's allocator tests use "subReq-0"
    name = _given_name(ctx, value.get("name"), f"{path}.name") if sub else ""
    mode = ctx.string(value.get("allocationMode"), f"{path}.allocationMode") or "ExactCount"
    if mode not in ALLOCATION_MODES:
        ctx.fail(f"{path}.allocationMode", unsupported_value(mode, sorted(ALLOCATION_MODES)))
    count = value.get("count")
    if count is None:
        count = 1 if mode == "ExactCount" else 0
    else:
        count = _int64(ctx, count, f"{path}.count")
        if mode == "ExactCount" and count <= 0:
            ctx.fail(f"{path}.count", f"Invalid value: {count}: must be greater than zero")
    admin = None
    if not sub and value.get("adminAccess") is not None:
        admin = ctx.boolean(value.get("adminAccess"), f"{path}.adminAccess")
    capacity = None
    if value.get("capacity") is not None:
        cap = ctx.mapping(value.get("capacity"), f"{path}.capacity")
        capacity = _quantity_map(
            ctx, cap.get("requests"), f"{path}.capacity.requests", nested=False
        )
    return ExactRequest(
        device_class_name=ctx.string(value.get("deviceClassName"), f"{path}.deviceClassName"),
        selectors=_selectors(ctx, value.get("selectors"), f"{path}.selectors", stored),
        allocation_mode=mode,
        count=count,
        admin_access=admin,
        tolerations=_tolerations(ctx, value.get("tolerations"), f"{path}.tolerations"),
        capacity_requests=capacity,
        name=name,
    )


def _claim_spec(ctx: ObjectContext, spec, path: str, stored: bool) -> dict:
    """ResourceClaimRecord kwargs from a ResourceClaimSpec (``stored``: of
    a stored object, ``dra_validation.stored_object``)."""
    spec = ctx.mapping(spec, path)
    devices = ctx.mapping(spec.get("devices"), f"{path}.devices")
    dpath = f"{path}.devices"
    requests = []
    names = set()
    for i, r in enumerate(ctx.list(devices.get("requests"), f"{dpath}.requests")):
        rpath = f"{dpath}.requests[{i}]"
        r = ctx.mapping(r, rpath)
        name = _label(ctx, r.get("name"), f"{rpath}.name")
        if name in names:
            ctx.fail(rpath, duplicate_value(name))
        names.add(name)
        # as upstream counts them: ``exactly`` when given, ``firstAvailable``
        # when it has an entry (``firstAvailable: []`` is as if unset)
        subs = ctx.list(r.get("firstAvailable"), f"{rpath}.firstAvailable")
        has_exact, has_first = r.get("exactly") is not None, bool(subs)
        if has_exact and has_first:
            ctx.fail(rpath, "Invalid value: null: exactly one of `exactly` or `firstAvailable` "
                     "is required, but multiple fields are set")
        if not has_exact and not has_first:
            ctx.fail(rpath, "Required value: exactly one of `exactly` or `firstAvailable` is "
                     "required")
        if has_exact:
            requests.append(
                DeviceRequest(name, exactly=_exact(ctx, r["exactly"], f"{rpath}.exactly", False,
                                                   stored))
            )
            continue
        if len(subs) > FIRST_AVAILABLE_MAX_SIZE:
            ctx.fail(f"{rpath}.firstAvailable", f"Too many: {len(subs)}: must have at most "
                     f"{FIRST_AVAILABLE_MAX_SIZE} items")
        requests.append(
            DeviceRequest(
                name,
                first_available=tuple(
                    _exact(ctx, s, f"{rpath}.firstAvailable[{j}]", True, stored)
                    for j, s in enumerate(subs)
                ),
            )
        )
    constraints = []
    for i, c in enumerate(ctx.list(devices.get("constraints"), f"{dpath}.constraints")):
        cpath = f"{dpath}.constraints[{i}]"
        c = ctx.mapping(c, cpath)
        # both may be given, as upstream's API takes it: matchAttribute is
        # the one checked and applied
        match = c.get("matchAttribute")
        distinct = c.get("distinctAttribute")
        constraints.append(
            DeviceConstraint(
                tuple(ctx.str_list(c.get("requests"), f"{cpath}.requests")),
                ctx.string(match, f"{cpath}.matchAttribute") if match is not None else None,
                ctx.string(distinct, f"{cpath}.distinctAttribute")
                if distinct is not None
                else None,
            )
        )
    return dict(
        requests=tuple(requests),
        constraints=tuple(constraints),
        config=_opaque_configs(ctx, devices.get("config"), f"{dpath}.config", True),
    )


def parse_allocation_result(ctx: ObjectContext, value, path: str) -> AllocationResult:
    """A claim's ``status.allocation``."""
    value = ctx.mapping(value, path)
    devices = ctx.mapping(value.get("devices"), f"{path}.devices")
    results = []
    for i, r in enumerate(ctx.list(devices.get("results"), f"{path}.devices.results")):
        rpath = f"{path}.devices.results[{i}]"
        r = ctx.mapping(r, rpath)
        _refuse_later_fields(ctx, r, rpath, _LATER_RESULT_FIELDS)
        consumed = r.get("consumedCapacity")
        results.append(
            DeviceRequestAllocationResult(
                request=_given_name(ctx, r.get("request"), f"{rpath}.request"),
                driver=_required(ctx, r.get("driver"), f"{rpath}.driver"),
                pool=_required(ctx, r.get("pool"), f"{rpath}.pool"),
                device=_given_name(ctx, r.get("device"), f"{rpath}.device"),
                admin_access=ctx.boolean(r["adminAccess"], f"{rpath}.adminAccess")
                if r.get("adminAccess") is not None
                else None,
                tolerations=_tolerations(ctx, r.get("tolerations"), f"{rpath}.tolerations"),
                binding_conditions=tuple(
                    ctx.str_list(r.get("bindingConditions"), f"{rpath}.bindingConditions")
                ),
                binding_failure_conditions=tuple(
                    ctx.str_list(
                        r.get("bindingFailureConditions"), f"{rpath}.bindingFailureConditions"
                    )
                ),
                share_id=ctx.string(r.get("shareID"), f"{rpath}.shareID")
                if r.get("shareID") is not None
                else None,
                consumed_capacity=_quantity_map(
                    ctx, consumed, f"{rpath}.consumedCapacity", nested=False
                )
                if consumed is not None
                else None,
            )
        )
    configs = []
    for i, c in enumerate(ctx.list(devices.get("config"), f"{path}.devices.config")):
        cpath = f"{path}.devices.config[{i}]"
        c = ctx.mapping(c, cpath)
        source = ctx.string(c.get("source"), f"{cpath}.source")
        if not source:
            ctx.fail(f"{cpath}.source", "Required value")
        if source not in ("FromClaim", "FromClass"):
            ctx.fail(f"{cpath}.source", unsupported_value(source, ("FromClaim", "FromClass")))
        (cfg,) = (
            _opaque_configs(ctx, [c], f"{path}.devices.config", True)
            if c.get("opaque") is not None
            else ctx.fail(f"{cpath}.opaque", "Required value")
        )
        configs.append(AllocatedConfig(source, cfg.requests, cfg))
    node_selector = value.get("nodeSelector")
    if node_selector is not None:
        _node_selector(ctx, node_selector, f"{path}.nodeSelector")
    return AllocationResult(tuple(results), tuple(configs), node_selector)


def parse_resource_claim(obj: dict, *, where: str | None = None) -> ResourceClaimRecord:
    """A ResourceClaim -> :class:`ResourceClaimRecord` (spec, and from the
    status the allocation and ``reservedFor``)."""
    ctx, meta, namespace, name = identity(obj, "ResourceClaim", True, where)
    status = ctx.mapping(obj.get("status"), "status")
    # upstream's order: the consumers (their count before their fields),
    # then the allocation
    reserved_raw = ctx.list(status.get("reservedFor"), "status.reservedFor")
    if len(reserved_raw) > RESERVED_FOR_MAX:
        ctx.fail("status.reservedFor", f"Too many: {len(reserved_raw)}: must have at most "
                 f"{RESERVED_FOR_MAX} items")
    reserved = []
    for i, ref in enumerate(reserved_raw):
        rpath = f"status.reservedFor[{i}]"
        ref = ctx.mapping(ref, rpath)
        reserved.append(
            ConsumerRef(
                _required(ctx, ref.get("resource"), f"{rpath}.resource"),
                _required(ctx, ref.get("name"), f"{rpath}.name"),
                _required(ctx, ref.get("uid"), f"{rpath}.uid"),
                ctx.string(ref.get("apiGroup"), f"{rpath}.apiGroup"),
            )
        )
    allocation = None
    if status.get("allocation") is not None:
        allocation = parse_allocation_result(ctx, status["allocation"], "status.allocation")
    return ResourceClaimRecord(
        namespace=namespace,
        name=name,
        uid=ctx.string(meta.get("uid"), "metadata.uid"),
        **_claim_spec(ctx, obj.get("spec"), "spec", stored_object(obj)),
        allocation=allocation,
        reserved_for=tuple(reserved),
        deleting=meta.get("deletionTimestamp") is not None,
        obj=obj,
    )


def parse_resource_claim_template(
    obj: dict, *, where: str | None = None
) -> ResourceClaimTemplateRecord:
    """A ResourceClaimTemplate -> :class:`ResourceClaimTemplateRecord`
    (``spec.spec`` is the claim spec; ``spec.metadata`` labels and
    annotations go to the claims made from it)."""
    ctx, _, namespace, name = identity(obj, "ResourceClaimTemplate", True, where)
    spec = ctx.mapping(obj.get("spec"), "spec")
    claim_spec = ctx.mapping(spec.get("spec"), "spec.spec")
    meta = ctx.mapping(spec.get("metadata"), "spec.metadata")
    claim = ResourceClaimRecord(
        namespace=namespace, name=name, uid="",
        **_claim_spec(ctx, claim_spec, "spec.spec", stored_object(obj))
    )
    annotations = ctx.str_map(meta.get("annotations"), "spec.metadata.annotations")
    check_annotations(ctx, annotations, "spec.metadata.annotations")
    return ResourceClaimTemplateRecord(
        namespace=namespace,
        name=name,
        spec=claim_spec,
        claim=claim,
        labels=ctx.str_map(meta.get("labels"), "spec.metadata.labels"),
        annotations=annotations,
        obj=obj,
    )


def _namespaced_key(r) -> str:
    return f"{r.namespace}/{r.name}"


# --------------------------------------------------------------------------
# the API server's checks on objects read from dumps
#
# The parse_* functions above keep a few shapes the API server refuses,
# because upstream's allocator tests build such objects and assert how the
# allocator meets them (the goldens).  Objects read as a cluster (the
# ``OBJECT_KINDS`` loaders below) come from a real API server or are written
# by hand: those shapes are refused there, with the API server's wording;
# before them, a new object with a field the API does not have is refused
# as the API server's strict decoding refuses it (``dra_fields``).


def load_device_class(obj: dict, *, where: str | None = None) -> DeviceClassRecord:
    """``parse_device_class`` with the API server's checks (see above)."""
    ctx = identity(obj, "DeviceClass", False, where)[0]
    refuse_unknown_fields(ctx, obj, "DeviceClass")
    rec = parse_device_class(obj, where=where)
    check_device_class(ctx, obj.get("spec") or {}, stored_object(obj))
    return rec


def load_resource_slice(obj: dict, *, where: str | None = None) -> ResourceSliceRecord:
    """``parse_resource_slice`` with the API server's checks (see above;
    those on a device are made once per device shape, as the parser's)."""
    return _parse_resource_slice(obj, where, strict=True)


def load_resource_claim(obj: dict, *, where: str | None = None) -> ResourceClaimRecord:
    """``parse_resource_claim`` with the API server's checks (see above)."""
    ctx = identity(obj, "ResourceClaim", True, where)[0]
    refuse_unknown_fields(ctx, obj, "ResourceClaim")
    rec = parse_resource_claim(obj, where=where)
    stored = stored_object(obj)
    spec = obj.get("spec") or {}
    check_claim_spec(ctx, spec, "spec", stored)
    status = obj.get("status") or {}
    # upstream's plugin tests write device statuses by hand (conditions
    # without a transition time): with their harness's name rules off they
    # are not checked, as the allocation results' names
    devices = (lambda: check_device_statuses(ctx, status.get("devices"),
                                             status.get("allocation"))
               ) if NameRules.enforced else None
    check_claim_status(ctx, spec, status, stored, devices)
    return rec


def load_resource_claim_template(
    obj: dict, *, where: str | None = None
) -> ResourceClaimTemplateRecord:
    """``parse_resource_claim_template`` with the API server's checks."""
    ctx = identity(obj, "ResourceClaimTemplate", True, where)[0]
    refuse_unknown_fields(ctx, obj, "ResourceClaimTemplate")
    rec = parse_resource_claim_template(obj, where=where)
    spec = obj.get("spec") or {}
    check_template_metadata(ctx, spec.get("metadata") or {})
    check_claim_spec(ctx, spec.get("spec") or {}, "spec.spec", stored_object(obj))
    return rec


#: ``parse_objects`` entries, with the ``Objects`` field each fills.
OBJECT_KINDS = (
    (
        ObjectKind(
            "DeviceClass",
            load_device_class,
            lambda r: r.name,
            "DeviceClass {}",
            accepts=is_resource_v1,
            reads=API_VERSION,
        ),
        "device_classes",
    ),
    (
        ObjectKind(
            "ResourceSlice",
            load_resource_slice,
            lambda r: r.name,
            "ResourceSlice {}",
            accepts=is_resource_v1,
            reads=API_VERSION,
        ),
        "resource_slices",
    ),
    (
        ObjectKind(
            "ResourceClaim",
            load_resource_claim,
            _namespaced_key,
            "ResourceClaim {}",
            accepts=is_resource_v1,
            reads=API_VERSION,
        ),
        "resource_claims",
    ),
    (
        ObjectKind(
            "ResourceClaimTemplate",
            load_resource_claim_template,
            _namespaced_key,
            "ResourceClaimTemplate {}",
            accepts=is_resource_v1,
            reads=API_VERSION,
        ),
        "resource_claim_templates",
    ),
)
