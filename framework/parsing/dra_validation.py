"""The API server's checks on the DRA kinds of ``resource.k8s.io/v1``
(``pkg/apis/resource/validation``) for objects read as a cluster: names,
limits, uniqueness and the rules between fields that :mod:`.dra`'s parsers
leave out, because upstream's allocator tests build objects without the API
server and the allocator answers some of those shapes itself.

Each check fails on the first problem, a :class:`ManifestError` naming the
object and the field, in upstream's words (``Too many: 129: must have at
most 128 items``, ``Invalid value: "gpu-mem": ...``, ``Required value``).
A bad map key (an attribute, capacity or counter name) is reported at the
map's path with the part at fault as the invalid value (the domain or the
identifier of a qualified name), a name past its length as ``Too long``; a
repeated list entry at the entry (``spec.devices[1]: Duplicate value:
"gpu-0"``), values quoted as Go quotes them.

The limits are upstream's constants; the name of each is in its comment.

Create-only checks.  Upstream holds a few rules only to an object being
created (or a field being changed), never again to one it has stored: the
10 KiB limit of opaque parameters (introduced in 1.32, stored parameters
kept), a selector's length and cost limits (a stored expression was valid
when written), ``adminAccess`` only in a labelled namespace.  An object read
with ``metadata.resourceVersion`` set is a stored object (a cluster dump:
the API server writes that field when it stores an object and refuses a
create that carries one), so those checks are not made on it; any other
object is a new one (a manifest), and they are (:func:`stored_object`).

Gates.  The wording of a few checks follows feature gates upstream reads in
its validation (a constraint with neither attribute names
``matchAttribute`` unless DRAConsumableCapacity is on): the gates in force
while objects are read are :func:`gates_in_force`'s, Kubernetes 1.35's
defaults otherwise.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import math
import re
from fractions import Fraction

from tensorsched.framework.records.dra_records import format_quantity

from .meta import (
    NameRules,
    ObjectContext,
    check_labels,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    duplicate_value,
    invalid_value,
    join_path,
    label_value_errors,
    qualified_name_errors,
)
from .node_selectors import check_node_selector
from .quantity import INT64_MAX, parse_quantity

__all__ = [
    "gates_in_force",
    "gate_on",
    "stored_object",
    "driver_name_errors",
    "field_problem",
    "pool_name_errors",
    "uid_errors",
    "device_attribute_name_errors",
    "check_device",
    "check_slice",
    "check_claim_spec",
    "check_claim_status",
    "check_device_class",
    "check_template_metadata",
]

DRIVER_NAME_MAX_LENGTH = 63              # DriverNameMaxLength (= DeviceMaxDomainLength)
DEVICE_ID_MAX_LENGTH = 32                # DeviceMaxIDLength
POOL_NAME_MAX_LENGTH = 253               # PoolNameMaxLength
MAX_DEVICES_WITH_ADVANCED_FEATURES = 64  # ResourceSliceMaxDevicesWithAdvancedFeatures
MAX_ATTRIBUTES_AND_CAPACITIES = 32       # ResourceSliceMaxAttributesAndCapacitiesPerDevice
MAX_ATTRIBUTE_VALUES = 48                # ResourceSliceMaxAttributeValuesPerDevice
ATTRIBUTE_VALUE_MAX_LENGTH = 64          # DeviceAttributeMaxValueLength
TAINTS_MAX = 16                          # DeviceTaintsMaxLength
TOLERATIONS_MAX = 16                     # DeviceTolerationsMaxLength
BINDING_CONDITIONS_MAX = 4               # BindingConditionsMaxSize, BindingFailureConditionsMaxSize
COUNTER_SETS_MAX = 8                     # ResourceSliceMaxCounterSets
COUNTERS_PER_SET_MAX = 32                # ResourceSliceMaxCountersPerCounterSet
CONSUMPTIONS_PER_DEVICE_MAX = 2          # ResourceSliceMaxDeviceCounterConsumptionsPerDevice
COUNTERS_PER_CONSUMPTION_MAX = 32        # ResourceSliceMaxCountersPerDeviceCounterConsumption
VALID_VALUES_MAX = 10                    # CapacityRequestPolicyDiscreteMaxOptions
REQUESTS_MAX = 32                        # DeviceRequestsMaxSize (= AllocationResultsMaxSize)
CONSTRAINTS_MAX = 32                     # DeviceConstraintsMaxSize
CONFIG_MAX = 32                          # DeviceConfigMaxSize (a class's and a claim's)
SELECTORS_MAX = 32                       # DeviceSelectorsMaxSize
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024  # OpaqueParametersMaxLength (bytes of JSON)
RESERVED_FOR_MAX = 256                   # ResourceClaimReservedForMaxSize

_C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER_RE = re.compile(_C_IDENTIFIER_FMT)
_C_IDENTIFIER_MSG = (
    "a valid C identifier must start with alphabetic character or '_', followed by a "
    "string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or "
    f"'MyName', regex used for validation is '{_C_IDENTIFIER_FMT}')"
)
_REQUEST_REF_MSG = (
    "must be the name of a request in the claim or the name of a request and a "
    "subrequest separated by '/'"
)


# --------------------------------------------------------------------------
# gates and stored objects

#: the names of the feature gates on while objects are read (upstream's
#: validation reads a few); empty: Kubernetes 1.35's defaults for those
#: read here (DRAConsumableCapacity off)
_GATES: contextvars.ContextVar[frozenset] = contextvars.ContextVar(
    "dra_validation_gates", default=frozenset())


@contextlib.contextmanager
def gates_in_force(gates):
    """Read objects inside with the feature gates ``gates`` (names of the
    gates on; None: 1.35's defaults) as the API server's checks see them."""
    token = _GATES.set(frozenset(gates or ()))
    try:
        yield
    finally:
        _GATES.reset(token)


def gate_on(name: str) -> bool:
    """Whether feature gate ``name`` is on for the objects being read."""
    return name in _GATES.get()


def stored_object(obj) -> bool:
    """An object the API server had stored (a dump's object): one with
    ``metadata.resourceVersion`` set, which a create may not carry.  The
    create-only checks (see the module's notes) pass it by."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return isinstance(meta, dict) and bool(meta.get("resourceVersion"))


def _nbytes(text: str) -> int:
    """Go's ``len``: bytes in UTF-8."""
    return len(text.encode("utf-8", "surrogatepass"))


def _too_many(ctx: ObjectContext, path: str, items, limit: int) -> None:
    if len(items) > limit:
        ctx.fail(path, f"Too many: {len(items)}: must have at most {limit} items")


def _too_long(ctx: ObjectContext, path: str, limit: int) -> None:
    ctx.fail(path, f"Too long: may not be more than {limit} bytes")


def _checked_list(ctx: ObjectContext, items, path: str, limit: int) -> list:
    """``items`` (a list or None) of at most ``limit``."""
    items = items or []
    _too_many(ctx, path, items, limit)
    return items


TOO_LONG = "Too long: "


def field_problem(value: str, errs) -> str:
    """The first of ``errs`` as field.Error's text: a "Too long: ..." entry
    as it is; a ``(value, message)`` pair (a problem of a part of
    ``value``, as the domain of a qualified name) for that part; else
    ``Invalid value: "value": ...`` with the messages about that value."""
    first = errs[0]
    if isinstance(first, str) and first.startswith(TOO_LONG):
        return first
    shown = first[0] if isinstance(first, tuple) else value
    msgs = []
    for e in errs:
        v, m = e if isinstance(e, tuple) else (value, e)
        if v == shown and not m.startswith(TOO_LONG):
            msgs.append(m)
    return invalid_value(shown, msgs)


def _check(ctx: ObjectContext, path: str, value: str, errs) -> None:
    if errs:
        ctx.fail(path, field_problem(value, errs))


# --------------------------------------------------------------------------
# names


@functools.lru_cache(maxsize=4096)
def driver_name_errors(name: str) -> tuple[str, ...]:
    """A driver name (``ValidateCSIDriverName``): at most 63 bytes, a DNS
    subdomain once lowercased."""
    errs = []
    if _nbytes(name) > DRIVER_NAME_MAX_LENGTH:
        errs.append(f"{TOO_LONG}may not be more than {DRIVER_NAME_MAX_LENGTH} bytes")
    return (*errs, *dns1123_subdomain_errors(name.lower()))


def _c_identifier_errors(ident: str) -> list:
    errs: list = []
    if _nbytes(ident) > DEVICE_ID_MAX_LENGTH:
        errs.append(f"{TOO_LONG}may not be more than {DEVICE_ID_MAX_LENGTH} bytes")
    if not _C_IDENTIFIER_RE.fullmatch(ident):
        errs.append((ident, _C_IDENTIFIER_MSG))
    return errs


@functools.lru_cache(maxsize=65536)
def device_attribute_name_errors(name: str, fully: bool = False) -> tuple:
    """An attribute's or a capacity's name (``QualifiedName``): a C
    identifier of at most 32 bytes, optionally after a domain (a driver
    name) and a slash; ``fully``: the domain is required
    (``FullyQualifiedName``, a constraint's attribute).  The problems as
    :func:`field_problem` takes them, each naming the part it is about.
    Cached: a cluster repeats its names."""
    parts = name.split("/")
    if len(parts) > 2:
        return ((name, "must not contain more than one slash"),)
    if len(parts) == 1:
        errs = _c_identifier_errors(name)
        if fully:
            errs.append((name, "a fully qualified name must be a domain and a name "
                               "separated by a slash"))
        return tuple(errs)
    domain, ident = parts
    errs = ([("", "the domain must not be empty")] if not domain
            else [e if e.startswith(TOO_LONG) else (domain, e)
                  for e in driver_name_errors(domain)])
    errs += [("", "the name must not be empty")] if not ident else _c_identifier_errors(ident)
    return tuple(errs)


def pool_name_errors(name: str) -> list[str]:
    """``validatePoolName``: at most 253 bytes, DNS subdomains separated by
    slashes."""
    errs = []
    if _nbytes(name) > POOL_NAME_MAX_LENGTH:
        errs.append(f"{TOO_LONG}may not be more than {POOL_NAME_MAX_LENGTH} bytes")
    for part in name.split("/"):
        errs += dns1123_subdomain_errors(part)
    return errs


_UUID_RE = re.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HEX_UUID_RE = re.compile("[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-"
                          "[0-9A-Fa-f]{12}")


def _uuid_syntax_error(uid: str) -> str | None:
    """What google/uuid's ``Validate`` says of ``uid`` (None: a UUID in one
    of the forms it reads: plain, ``urn:uuid:``, braced, 32 hex digits)."""
    n = len(uid.encode("utf-8", "surrogatepass"))
    if n == 36 + 9:
        if uid[:9].lower() != "urn:uuid:":
            return f"invalid urn prefix: {json.dumps(uid[:9], ensure_ascii=False)}"
        uid = uid[9:]
    elif n == 36 + 2:
        if not (uid.startswith("{") and uid.endswith("}")):
            return "invalid bracketed UUID format"
        uid = uid[1:-1]
    elif n == 32:
        return None if re.fullmatch("[0-9A-Fa-f]{32}", uid) else "invalid UUID format"
    elif n != 36:
        return f"invalid UUID length: {n}"
    return None if _HEX_UUID_RE.fullmatch(uid) else "invalid UUID format"


def uid_errors(uid: str) -> list[str]:
    """``validateUID``: a UUID in RFC 4122's normalized form (36 characters,
    lowercase hexadecimal)."""
    if _UUID_RE.fullmatch(uid):
        return []
    problem = _uuid_syntax_error(uid)
    if problem is not None:
        return [f"error validating uid: {problem}"]
    return ["uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` "
            "with lowercase hexadecimal characters"]


def _check_key_names(ctx: ObjectContext, mapping: dict, path: str, rule) -> None:
    """Each key of ``mapping`` held to ``rule`` (name -> problems)."""
    for key in mapping:
        errs = rule(key)
        if errs:
            ctx.fail(path, field_problem(key, errs))


# --------------------------------------------------------------------------
# ResourceSlice


def _check_attribute(ctx: ObjectContext, value: dict, base: str, key: str) -> None:
    """Attribute ``key`` of the attributes at ``base`` (its shape parsed
    already): exactly one value, strings and versions at most 64 bytes, a
    list not empty."""
    if len(value) == 1:
        # the common form, one scalar (16 characters are at most 64 bytes,
        # 64 ASCII characters 64 bytes)
        for kind, raw in value.items():
            if kind == "int" or kind == "bool":
                return
            if (kind == "string" or kind == "version") and (
                    len(raw) <= 16 or (len(raw) <= ATTRIBUTE_VALUE_MAX_LENGTH and raw.isascii())
                    or _nbytes(raw) <= ATTRIBUTE_VALUE_MAX_LENGTH):
                return
    path = join_path(base, key)
    kinds = [k for k, v in value.items() if v is not None]
    if not kinds:
        ctx.fail(path, 'Invalid value: "": exactly one value must be specified')
    kind = kinds[0]
    raw = value[kind]
    if kind in ("ints", "bools", "strings", "versions") and not raw:
        ctx.fail(f"{path}.{kind}", "Invalid value: []: must not be empty if specified")
    if kind in ("string", "version"):
        raw = [raw]
    elif kind not in ("strings", "versions"):
        return
    for i, text in enumerate(raw):
        if _nbytes(text) > ATTRIBUTE_VALUE_MAX_LENGTH:
            where = f"{path}.{kind}" if kind in ("string", "version") else f"{path}.{kind}[{i}]"
            _too_long(ctx, where, ATTRIBUTE_VALUE_MAX_LENGTH)


def _check_request_policy(ctx: ObjectContext, capacity: Fraction, policy: dict,
                          path: str) -> None:
    """``validateRequestPolicy`` for a capacity of ``capacity`` units (the
    policy's shape and quantities parsed already)."""
    cap = format_quantity(capacity)
    raw_default = policy.get("default")
    default = parse_quantity(raw_default) if raw_default is not None else None
    raw_values = policy.get("validValues") or []
    if raw_values:
        if default is None:
            ctx.fail(f"{path}.default", "Required value: required when validValues is defined")
        vpath = f"{path}.validValues"
        values = [parse_quantity(v) for v in raw_values]
        for i in range(len(values) - 1):
            if values[i] > values[i + 1]:
                ctx.fail(f"{vpath}[{i + 1}]", invalid_value(
                    str(raw_values[i + 1]), ["values must be sorted in ascending order"]))
        _too_many(ctx, vpath, values, VALID_VALUES_MAX)
        for i, v in enumerate(values):
            if v > capacity:
                ctx.fail(f"{vpath}[{i}]", invalid_value(
                    str(raw_values[i]), [f"option is larger than capacity value: {cap}"]))
        # upstream tells options apart by their integer value, rounded up
        # (Quantity.Value(), DRAFractionalCapacityRange off): 5 and 5.0 are
        # one option
        seen = set()
        for i, v in enumerate(values):
            key = math.ceil(v)
            if key in seen:
                ctx.fail(f"{vpath}[{i}]", duplicate_value(str(key)))
            seen.add(key)
        if default not in values:
            ctx.fail(vpath, invalid_value(str(raw_default), [
                "default value is not valid according to the requestPolicy"]))
        return
    rng = policy.get("validRange")
    if rng is None:
        return
    if default is None:
        ctx.fail(f"{path}.default", "Required value: required when validRange is defined")
    rpath = f"{path}.validRange"
    lo = parse_quantity(rng["min"])
    if lo > capacity:
        ctx.fail(f"{rpath}.min", invalid_value(
            str(rng["min"]), [f"min is larger than capacity value: {cap}"]))
    # the default's problems are reported at the bound it breaks (1.35)
    if default < lo:
        ctx.fail(f"{rpath}.min", invalid_value(
            str(raw_default), [f"default is less than min: {rng['min']}"]))
    hi = parse_quantity(rng["max"]) if rng.get("max") is not None else None
    if hi is not None:
        if lo > hi:
            ctx.fail(f"{rpath}.max", invalid_value(
                str(rng["min"]), [f"min is larger than max: {rng['max']}"]))
        if hi > capacity:
            ctx.fail(f"{rpath}.max", invalid_value(
                str(rng["max"]), [f"max is larger than capacity value: {cap}"]))
        if default > hi:
            ctx.fail(f"{rpath}.max", invalid_value(
                str(raw_default), [f"default is more than max: {rng['max']}"]))
    if rng.get("step") is None:
        return
    step = parse_quantity(rng["step"])
    if step <= 0:
        ctx.fail(f"{rpath}.step", invalid_value(str(rng["step"]), ["must be greater than zero"]))
    if lo + step > capacity:
        ctx.fail(f"{rpath}.step", invalid_value(str(rng["step"]), [
            f"one step {format_quantity(lo + step)} is larger than capacity value: {cap}"]))
    # the step arithmetic reads each value as an int64 (Quantity.Value()):
    # upstream refuses first what that cannot read (a negative value reads
    # back with either sign, one past int64 wraps), in this order
    bounds = (("default", raw_default, default), ("min", rng["min"], lo),
              ("max", rng.get("max"), hi), ("step", rng["step"], step))
    for name, raw, value in bounds:
        if value is None:
            continue
        if value < 0:
            ctx.fail(f"{rpath}.{name}", invalid_value(
                str(raw), ["must be greater than or equal to 0"]))
        if value > INT64_MAX:
            ctx.fail(f"{rpath}.{name}", invalid_value(
                str(raw), [f"must not be larger than {INT64_MAX}"]))
    # whole units, each value rounded up (DRAFractionalCapacityRange off:
    # 250m from 200m in steps of 100m is 1 from 1 in steps of 1, accepted)
    whole_step, whole_lo = math.ceil(step), math.ceil(lo)
    for raw, value in ((raw_default, default), (rng.get("max"), hi)):
        if value is not None and (math.ceil(value) - whole_lo) % whole_step:
            ctx.fail(f"{rpath}.step", invalid_value(str(raw), [
                f"value is not a multiple of a given step ({rng['step']}) from ({rng['min']})"]))


def _check_counter_names(ctx: ObjectContext, counters: dict, path: str, limit: int) -> None:
    if not counters:
        ctx.fail(path, "Required value")
    _too_many(ctx, path, counters, limit)
    _check_key_names(ctx, counters, path, dns1123_label_errors)


def _check_counter_set_name(ctx: ObjectContext, name: str, path: str) -> None:
    _check(ctx, path, name, dns1123_label_errors(name))


def _check_counter_sets(ctx: ObjectContext, items: list, path: str, name_key: str,
                        counters_max: int) -> None:
    """A list of counter sets (a slice's ``sharedCounters``, named by
    ``name``) or of their consumptions (a device's ``consumesCounters``,
    naming one by ``counterSet``): each name a DNS label, unique in the
    list, its counters named and at most ``counters_max``."""
    seen = set()
    for i, item in enumerate(items):
        ipath = f"{path}[{i}]"
        name = item[name_key]
        _check_counter_set_name(ctx, name, f"{ipath}.{name_key}")
        _check_counter_names(ctx, item.get("counters") or {}, f"{ipath}.counters",
                             counters_max)
        if name in seen:
            ctx.fail(ipath, duplicate_value(name))
        seen.add(name)


def _check_binding_conditions(ctx: ObjectContext, d: dict, path: str) -> None:
    """``validateDeviceBindingParameters`` in its order: each list's size
    and names, the conditions' duplicates, each failure condition's
    duplicate and overlap, then each list's need of the other."""
    conditions = d.get("bindingConditions") or []
    failures = d.get("bindingFailureConditions") or []
    for field, items in (("bindingConditions", conditions),
                         ("bindingFailureConditions", failures)):
        fpath = f"{path}.{field}"
        _too_many(ctx, fpath, items, BINDING_CONDITIONS_MAX)
        for i, c in enumerate(items):
            _check(ctx, f"{fpath}[{i}]", c, qualified_name_errors(c))
    seen = set()
    for i, c in enumerate(conditions):
        if c in seen:
            ctx.fail(f"{path}.bindingConditions[{i}]", duplicate_value(c))
        seen.add(c)
    seen = set()
    for i, c in enumerate(failures):
        if c in seen:
            ctx.fail(f"{path}.bindingFailureConditions[{i}]", duplicate_value(c))
        seen.add(c)
        if c in conditions:
            ctx.fail(f"{path}.bindingFailureConditions[{i}]", invalid_value(
                c, ["bindingFailureConditions must not overlap with bindingConditions"]))
    if failures and not conditions:
        ctx.fail(f"{path}.bindingConditions", "Invalid value: null: bindingConditions are "
                 "required to use bindingFailureConditions")
    if conditions and not failures:
        ctx.fail(f"{path}.bindingFailureConditions", "Invalid value: null: "
                 "bindingFailureConditions are required to use bindingConditions")


_LIST_KINDS = ("bools", "ints", "strings", "versions")


def _attribute_value_count(attributes: dict) -> int:
    """Values of a device's attributes (``numEntriesDeviceAttribute``): one
    a scalar (or an attribute without a list value), each item of its
    lists for a list attribute.  Written for the common one-field scalar:
    a device's shape pays about a microsecond."""
    total = len(attributes)
    for value in attributes.values():
        if len(value) == 1:
            for kind in value:
                if kind in _LIST_KINDS:
                    total += max(len(value[kind] or ()), 1) - 1
        else:
            items = sum(len(value.get(k) or ()) for k in _LIST_KINDS)
            total += max(items, 1) - 1
    return total


def check_device(ctx: ObjectContext, d: dict, path: str, per_device: bool) -> None:
    """``validateDevice`` on device ``d`` (a mapping whose shape
    ``dra._device`` parsed), but its name (checked by the parser) and the
    exactly-one node selection (also the parser's)."""
    attributes = d.get("attributes") or {}
    capacity = d.get("capacity") or {}
    total = len(attributes) + len(capacity)
    if total > MAX_ATTRIBUTES_AND_CAPACITIES:
        ctx.fail(path, f"Invalid value: {total}: the total number of attributes and "
                 f"capacities must not exceed {MAX_ATTRIBUTES_AND_CAPACITIES}")
    values = _attribute_value_count(attributes)
    if values > MAX_ATTRIBUTE_VALUES:
        ctx.fail(path, f"Invalid value: {values}: the total number of attribute values must "
                 f"not exceed {MAX_ATTRIBUTE_VALUES}")
    _check_key_names(ctx, attributes, f"{path}.attributes", device_attribute_name_errors)
    base = f"{path}.attributes"
    for key, value in attributes.items():
        _check_attribute(ctx, value, base, key)
    _check_key_names(ctx, capacity, f"{path}.capacity", device_attribute_name_errors)
    shared = d.get("allowMultipleAllocations") is True
    for key, value in capacity.items():
        policy = value.get("requestPolicy")
        if policy is None:
            continue
        ppath = join_path(f"{path}.capacity", key) + ".requestPolicy"
        if not shared:
            ctx.fail(ppath, "Forbidden: allowMultipleAllocations must be true")
        _check_request_policy(ctx, parse_quantity(value["value"]), policy, ppath)
    for i, t in enumerate(_checked_list(ctx, d.get("taints"), f"{path}.taints", TAINTS_MAX)):
        tpath = f"{path}.taints[{i}]"
        _check(ctx, f"{tpath}.key", t["key"], qualified_name_errors(t["key"]))
        if t.get("value"):
            _check(ctx, f"{tpath}.value", t["value"], label_value_errors(t["value"]))
    consumes = _checked_list(ctx, d.get("consumesCounters"), f"{path}.consumesCounters",
                             CONSUMPTIONS_PER_DEVICE_MAX)
    _check_counter_sets(ctx, consumes, f"{path}.consumesCounters", "counterSet",
                        COUNTERS_PER_CONSUMPTION_MAX)
    if per_device:
        if d.get("nodeName") is not None:
            _check(ctx, f"{path}.nodeName", d["nodeName"],
                   dns1123_subdomain_errors(d["nodeName"]))
        if d.get("nodeSelector") is not None:
            check_node_selector(ctx, d["nodeSelector"], f"{path}.nodeSelector", True)
    if d.get("bindingConditions") or d.get("bindingFailureConditions"):
        _check_binding_conditions(ctx, d, path)


def check_slice(ctx: ObjectContext, spec: dict, devices) -> None:
    """``validateResourceSliceSpec`` but what the parser and
    :func:`check_device` check: the pool's name, the node's name, the node
    selector (exactly one term), devices or counter sets (not both), the
    lower device limit when a device has taints, consumes counters or has a
    list attribute, device names unique, the counter sets.  ``spec`` parsed
    already (with the node selection's rules); ``devices`` its
    DeviceRecords."""
    pool = spec["pool"]["name"]
    _check(ctx, "spec.pool.name", pool, pool_name_errors(pool))
    if spec.get("nodeName") is not None:
        _check(ctx, "spec.nodeName", spec["nodeName"],
               dns1123_subdomain_errors(spec["nodeName"]))
    if spec.get("nodeSelector") is not None:
        terms = check_node_selector(ctx, spec["nodeSelector"], "spec.nodeSelector", True)
        if len(terms) != 1:
            ctx.fail("spec.nodeSelector.nodeSelectorTerms", f"Invalid value: {len(terms)} "
                     "terms: must have exactly one node selector term")
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        ctx.fail("spec", 'Invalid value: "": only one of `sharedCounters` or `devices` '
                 "is allowed")
    # the lower limit once a device has taints, consumes counters or has an
    # attribute of list type
    if len(devices) > MAX_DEVICES_WITH_ADVANCED_FEATURES and any(
            d.taints or d.consumes_counters
            or any(a.kind in _LIST_KINDS for a in d.attributes.values()) for d in devices):
        _too_many(ctx, "spec.devices", devices, MAX_DEVICES_WITH_ADVANCED_FEATURES)
    if len({d.name for d in devices}) != len(devices):
        seen = set()
        for i, d in enumerate(devices):
            if d.name in seen:
                ctx.fail(f"spec.devices[{i}]", duplicate_value(d.name))
            seen.add(d.name)
    counter_sets = spec.get("sharedCounters") or []
    _too_many(ctx, "spec.sharedCounters", counter_sets, COUNTER_SETS_MAX)
    _check_counter_sets(ctx, counter_sets, "spec.sharedCounters", "name", COUNTERS_PER_SET_MAX)


# --------------------------------------------------------------------------
# DeviceClass and configuration


def _check_selectors(ctx: ObjectContext, selectors, path: str) -> None:
    """At most 32 selectors, each with ``cel`` (its expression's length is
    the parser's check)."""
    selectors = selectors or []
    _too_many(ctx, path, selectors, SELECTORS_MAX)
    for i, sel in enumerate(selectors):
        if sel.get("cel") is None:
            ctx.fail(f"{path}[{i}].cel", "Required value")


def _check_opaque(ctx: ObjectContext, config: dict, path: str, stored: bool) -> None:
    """A configuration's ``opaque`` (required by the parser): its driver's
    name, and parameters that are a JSON object, of at most 10 KiB unless
    the object is ``stored`` (a create-only limit, see the module's notes)."""
    opaque = config["opaque"]
    driver = opaque["driver"]
    _check(ctx, f"{path}.opaque.driver", driver, list(driver_name_errors(driver)))
    params = opaque.get("parameters")
    ppath = f"{path}.opaque.parameters"
    if params is None:
        ctx.fail(ppath, "Required value")
    if not isinstance(params, dict):
        ctx.fail(ppath, 'Invalid value: "<value omitted>": must be a valid JSON object')
    if stored:
        return
    size = _nbytes(json.dumps(params, separators=(",", ":"), ensure_ascii=False, default=str))
    if size > OPAQUE_PARAMETERS_MAX_LENGTH:
        _too_long(ctx, ppath, OPAQUE_PARAMETERS_MAX_LENGTH)


def _extended_resource_name_ok(name: str) -> bool:
    """``IsExtendedResourceName``: a domain-prefixed name outside
    ``kubernetes.io/``, not starting with ``requests.``, that is still a
    qualified name with ``requests.`` before it (as quota names it)."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)


def check_device_class(ctx: ObjectContext, spec: dict, stored: bool = False) -> None:
    """``validateDeviceClassSpec``: selectors, configuration, the extended
    resource name (``spec`` parsed already; ``stored``: a stored object's,
    see :func:`stored_object`)."""
    _check_selectors(ctx, spec.get("selectors"), "spec.selectors")
    configs = spec.get("config") or []
    _too_many(ctx, "spec.config", configs, CONFIG_MAX)
    for i, c in enumerate(configs):
        _check_opaque(ctx, c, f"spec.config[{i}]", stored)
    ext = spec.get("extendedResourceName")
    if ext is not None and not _extended_resource_name_ok(ext):
        ctx.fail("spec.extendedResourceName",
                 invalid_value(ext, ["must be a valid extended resource name"]))


# --------------------------------------------------------------------------
# ResourceClaim / ResourceClaimTemplate


def _check_tolerations(ctx: ObjectContext, tolerations, path: str) -> None:
    tolerations = tolerations or []
    _too_many(ctx, path, tolerations, TOLERATIONS_MAX)
    for i, t in enumerate(tolerations):
        tpath = f"{path}[{i}]"
        key = t.get("key") or ""
        if key:
            _check(ctx, f"{tpath}.key", key, qualified_name_errors(key))
        if (t.get("operator") or "Equal") == "Equal":
            value = t.get("value") or ""
            _check(ctx, f"{tpath}.value", value, label_value_errors(value))


def _check_exact(ctx: ObjectContext, raw: dict, path: str) -> None:
    """An ``exactly`` request or a subrequest (its shape parsed already)."""
    if raw.get("allocationMode") == "All" and raw.get("count"):
        ctx.fail(f"{path}.count", f"Invalid value: {raw['count']}: must not be specified when "
                 "allocationMode is 'All'")
    cls = raw.get("deviceClassName")
    if not cls:
        ctx.fail(f"{path}.deviceClassName", "Required value")
    _check(ctx, f"{path}.deviceClassName", cls, dns1123_subdomain_errors(cls))
    _check_selectors(ctx, raw.get("selectors"), f"{path}.selectors")
    _check_tolerations(ctx, raw.get("tolerations"), f"{path}.tolerations")
    requests = (raw.get("capacity") or {}).get("requests") or {}
    _check_key_names(ctx, requests, f"{path}.capacity.requests", device_attribute_name_errors)


def _check_request_ref(ctx: ObjectContext, name: str, path: str, known: dict) -> None:
    """``validateRequestNameRef``: ``name`` a request (a DNS label) of the
    claim, or a request and one of its subrequests separated by ``/``.
    ``known``: request -> its subrequests (None for an ``exactly`` request)."""
    segments = name.split("/")
    if len(segments) > 2:
        ctx.fail(path, invalid_value(name, [_REQUEST_REF_MSG]))
    for segment in segments:
        _check(ctx, path, segment, dns1123_label_errors(segment))
    if segments[0] not in known or (
            len(segments) == 2 and segments[1] not in (known[segments[0]] or ())):
        ctx.fail(path, invalid_value(name, [_REQUEST_REF_MSG]))


def _check_request_refs(ctx: ObjectContext, names, path: str, known: dict) -> None:
    """At most 32 ``names``, distinct, each a request of the claim."""
    names = names or []
    _too_many(ctx, path, names, REQUESTS_MAX)
    seen = set()
    for j, name in enumerate(names):
        _check_request_ref(ctx, name, f"{path}[{j}]", known)
        if name in seen:
            ctx.fail(f"{path}[{j}]", duplicate_value(name))
        seen.add(name)


def _request_names(devices: dict) -> dict:
    """request name -> the names of its subrequests (None for ``exactly``)."""
    return {r["name"]: ({s["name"] for s in r["firstAvailable"]}
                        if r.get("exactly") is None else None)
            for r in devices.get("requests") or ()}


def check_claim_spec(ctx: ObjectContext, spec: dict, path: str, stored: bool = False) -> None:
    """``validateDeviceClaim`` but what the parser checks: at most 32
    requests, each request and subrequest's class, selectors, tolerations
    and count; subrequest names unique DNS labels; at most 32 constraints,
    naming requests of the claim and a fully qualified attribute; at most 32
    configurations, naming requests of the claim, with their opaque
    parameters.  ``spec`` parsed already (its shape is sound); ``stored``: a
    stored object's (:func:`stored_object`)."""
    dpath = f"{path}.devices"
    devices = spec.get("devices") or {}
    requests = devices.get("requests") or []
    _too_many(ctx, f"{dpath}.requests", requests, REQUESTS_MAX)
    for i, r in enumerate(requests):
        rpath = f"{dpath}.requests[{i}]"
        if r.get("exactly") is not None:
            _check_exact(ctx, r["exactly"], f"{rpath}.exactly")
            continue
        subs = set()
        for j, sub in enumerate(r.get("firstAvailable") or ()):
            spath = f"{rpath}.firstAvailable[{j}]"
            _check(ctx, f"{spath}.name", sub["name"], dns1123_label_errors(sub["name"]))
            if sub["name"] in subs:
                ctx.fail(spath, duplicate_value(sub["name"]))
            subs.add(sub["name"])
            _check_exact(ctx, sub, spath)
    known = _request_names(devices)
    constraints = devices.get("constraints") or []
    _too_many(ctx, f"{dpath}.constraints", constraints, CONSTRAINTS_MAX)
    for i, c in enumerate(constraints):
        cpath = f"{dpath}.constraints[{i}]"
        _check_request_refs(ctx, c.get("requests"), f"{cpath}.requests", known)
        key = "matchAttribute" if c.get("matchAttribute") is not None else "distinctAttribute"
        if c.get(key) is None:
            # upstream names distinctAttribute only while DRAConsumableCapacity
            # is on (distinctAttribute itself is read here whatever the gates)
            if gate_on("DRAConsumableCapacity"):
                ctx.fail(cpath, 'Required value: exactly one of "matchAttribute" or '
                         '"distinctAttribute" is required, but multiple fields are set')
            ctx.fail(f"{cpath}.matchAttribute", "Required value")
        _check(ctx, f"{cpath}.{key}", c[key], list(device_attribute_name_errors(c[key], True)))
    configs = devices.get("config") or []
    _too_many(ctx, f"{dpath}.config", configs, CONFIG_MAX)
    for i, c in enumerate(configs):
        cpath = f"{dpath}.config[{i}]"
        _check_request_refs(ctx, c.get("requests"), f"{cpath}.requests", known)
        _check_opaque(ctx, c, cpath, stored)


def check_claim_status(ctx: ObjectContext, spec: dict, status: dict, stored: bool = False,
                       device_statuses=None) -> None:
    """A claim's status as the API server takes it, in the order upstream
    reports its problems (``validateResourceClaimStatusUpdate``): at most
    256 consumers in ``reservedFor`` with distinct uids (each one's fields
    required by the parser); then ``status.devices`` (``device_statuses``,
    a callable, when given); then no consumer without an allocation; then
    the allocation: at most 32 results, each naming a request of the claim,
    a driver, a pool and a device by valid names, with valid binding
    conditions and tolerations and a share by a normalized UUID (the
    results unchecked while ``NameRules.enforced`` is off, as for upstream's
    tests), at most 64 configurations (the class's and the claim's), each
    naming requests of the claim, with their opaque parameters (their size
    not held to a ``stored`` claim, see :func:`stored_object`), a valid node
    selector."""
    reserved = status.get("reservedFor") or []
    _too_many(ctx, "status.reservedFor", reserved, RESERVED_FOR_MAX)
    uids = set()
    for i, ref in enumerate(reserved):
        if ref["uid"] in uids:
            ctx.fail(f"status.reservedFor[{i}]", duplicate_value(ref["uid"]))
        uids.add(ref["uid"])
    if device_statuses is not None:
        device_statuses()
    allocation = status.get("allocation")
    if reserved and allocation is None:
        ctx.fail("status.reservedFor", "Forbidden: may not be specified when `allocated` is "
                 "not set")
    if allocation is None:
        return
    known = _request_names((spec or {}).get("devices") or {})
    rpath = "status.allocation.devices.results"
    results = (allocation.get("devices") or {}).get("results") or []
    _too_many(ctx, rpath, results, REQUESTS_MAX)
    # upstream's plugin tests allocate claims by hand, naming requests
    # their claims lack: with the name rules off (their harness) the
    # results' names are not held to the claim
    for i, r in enumerate(results if NameRules.enforced else ()):
        path = f"{rpath}[{i}]"
        _check_request_ref(ctx, r["request"], f"{path}.request", known)
        _check(ctx, f"{path}.driver", r["driver"], list(driver_name_errors(r["driver"])))
        _check(ctx, f"{path}.pool", r["pool"], pool_name_errors(r["pool"]))
        _check(ctx, f"{path}.device", r["device"], dns1123_label_errors(r["device"]))
        if r.get("bindingConditions") or r.get("bindingFailureConditions"):
            _check_binding_conditions(ctx, r, path)
        _check_tolerations(ctx, r.get("tolerations"), f"{path}.tolerations")
        if r.get("shareID") is not None:
            _check(ctx, f"{path}.shareID", r["shareID"], uid_errors(r["shareID"]))
    configs = (allocation.get("devices") or {}).get("config") or []
    _too_many(ctx, "status.allocation.devices.config", configs, 2 * CONFIG_MAX)
    for i, c in enumerate(configs):
        cpath = f"status.allocation.devices.config[{i}]"
        _check_request_refs(ctx, c.get("requests"), f"{cpath}.requests", known)
        _check_opaque(ctx, c, cpath, stored)
    if allocation.get("nodeSelector") is not None:
        check_node_selector(ctx, allocation["nodeSelector"],
                            "status.allocation.nodeSelector", True)


def check_template_metadata(ctx: ObjectContext, meta: dict) -> None:
    """A template's ``spec.metadata`` labels (``ValidateTemplateObjectMeta``;
    the parser checks its annotations)."""
    check_labels(ctx, meta.get("labels") or {}, "spec.metadata.labels")
