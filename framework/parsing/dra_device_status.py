"""A ResourceClaim's ``status.devices`` (``AllocatedDeviceStatus``, written
by drivers) as the API server validates it: each entry names an allocated
device of the claim by valid names, at most once; its conditions are
metav1 Conditions (at most 8); its ``data`` a JSON object of at most 10 KiB;
its ``networkData`` an interface name of at most 256 bytes, a hardware
address of at most 128 bytes and at most 16 distinct IP addresses in CIDR
form, each in canonical form.

The scheduler reads none of it; a dump that carries a bad one is refused as
the API server would have refused it, naming the field, in upstream's words.
"""

from __future__ import annotations

import ipaddress
import json
import re

from .dra_validation import driver_name_errors, field_problem, pool_name_errors, uid_errors
from .meta import (
    ObjectContext,
    dns1123_label_errors,
    duplicate_value,
    invalid_value,
    qualified_name_errors,
    regex_error,
    unsupported_value,
)

__all__ = ["check_device_statuses", "interface_address_errors"]

CONDITIONS_MAX = 8                       # AllocatedDeviceStatusMaxConditions
DATA_MAX_LENGTH = 10 * 1024              # AllocatedDeviceStatusDataMaxLength (bytes of JSON)
IPS_MAX = 16                             # NetworkDeviceDataMaxIPs
INTERFACE_NAME_MAX_LENGTH = 256          # NetworkDeviceDataInterfaceNameMaxLength
HARDWARE_ADDRESS_MAX_LENGTH = 128        # NetworkDeviceDataHardwareAddressMaxLength
REASON_MAX_LENGTH = 1024                 # metav1 validation's maxReasonLen
MESSAGE_MAX_LENGTH = 32 * 1024           # metav1 validation's maxMessageLen

_CONDITION_STATUSES = ("False", "True", "Unknown")
_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_REASON_RE = re.compile(_REASON_FMT)
_REASON_MSG = regex_error(
    "a condition reason must start with alphabetic character, optionally followed by a "
    "string of alphanumeric characters or '_,:', and must end with an alphanumeric "
    "character or '_'", _REASON_FMT, "my_name", "MY_NAME", "MyName", "ReasonA,ReasonB",
    "ReasonA:ReasonB")
_CIDR_MSG = "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)"


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _too_long(ctx: ObjectContext, path: str, limit: int) -> None:
    ctx.fail(path, f"Too long: may not be more than {limit} bytes")


def _too_many(ctx: ObjectContext, path: str, items, limit: int) -> None:
    if len(items) > limit:
        ctx.fail(path, f"Too many: {len(items)}: must have at most {limit} items")


def device_id(driver: str, pool: str, device: str, share: str | None) -> str:
    """A device (and share) as upstream prints one: ``driver/pool/device``,
    ``/shareID`` after it when shared."""
    text = f"{driver}/{pool}/{device}"
    return f"{text}/{share}" if share else text


def _sloppy_ipv4(text: str) -> ipaddress.IPv4Address | None:
    """An IPv4 address as Go's sloppy parser reads one: four decimal octets,
    leading zeros allowed (``010`` is ten)."""
    parts = text.split(".")
    if len(parts) != 4 or not all(p.isascii() and p.isdigit() for p in parts):
        return None
    octets = [int(p) for p in parts]
    if any(o > 255 for o in octets):
        return None
    return ipaddress.IPv4Address(".".join(map(str, octets)))


def interface_address_errors(value: str) -> list[str]:
    """``IsValidInterfaceAddress``: an IP address and its prefix length
    (``10.1.2.3/24``, ``2001:db8::1/64``), written as upstream writes it
    back (no leading zeros, IPv6 in RFC 5952 form, an IPv4-mapped IPv6
    address as IPv4)."""
    addr, slash, prefix = value.partition("/")
    ip = None
    if slash and prefix.isascii() and prefix.isdigit() and "%" not in addr:
        if ":" in addr:
            try:
                ip = ipaddress.IPv6Address(addr)
            except ValueError:
                ip = None
            bits = 128
        else:
            ip = _sloppy_ipv4(addr)
            bits = 32
    if ip is None or int(prefix) > bits:
        return [_CIDR_MSG]
    size = int(prefix)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
        if size > 32:
            size -= 96
    canonical = f"{ip.compressed}/{size}"
    if value != canonical:
        return [f"must be in canonical form ({json.dumps(canonical)})"]
    return []


def _check_conditions(ctx: ObjectContext, value, path: str) -> None:
    """metav1 Conditions: at most 8, types unique qualified names, a known
    status, a non-negative observedGeneration, a transition time, a reason
    of the condition-reason form (at most 1,024 bytes), a message of at
    most 32 KiB."""
    conditions = ctx.list(value, path)
    _too_many(ctx, path, conditions, CONDITIONS_MAX)
    seen = set()
    for i, c in enumerate(conditions):
        cpath = f"{path}[{i}]"
        c = ctx.mapping(c, cpath)
        kind = ctx.string(c.get("type"), f"{cpath}.type")
        if kind in seen:
            ctx.fail(f"{cpath}.type", duplicate_value(kind))
        seen.add(kind)
        errs = qualified_name_errors(kind)
        if errs:
            ctx.fail(f"{cpath}.type", invalid_value(kind, errs))
        status = ctx.string(c.get("status"), f"{cpath}.status")
        if status not in _CONDITION_STATUSES:
            ctx.fail(f"{cpath}.status", unsupported_value(status, _CONDITION_STATUSES))
        generation = c.get("observedGeneration")
        if generation is not None:
            generation = ctx.integer(generation, f"{cpath}.observedGeneration")
            if generation < 0:
                ctx.fail(f"{cpath}.observedGeneration", f"Invalid value: {generation}: must "
                         "be greater than or equal to zero")
        if not c.get("lastTransitionTime"):
            ctx.fail(f"{cpath}.lastTransitionTime", "Required value: must be set")
        reason = ctx.string(c.get("reason"), f"{cpath}.reason")
        if not reason:
            ctx.fail(f"{cpath}.reason", "Required value: must be set")
        if not _REASON_RE.fullmatch(reason):
            ctx.fail(f"{cpath}.reason", invalid_value(reason, [_REASON_MSG]))
        if _nbytes(reason) > REASON_MAX_LENGTH:
            _too_long(ctx, f"{cpath}.reason", REASON_MAX_LENGTH)
        message = ctx.string(c.get("message"), f"{cpath}.message")
        if _nbytes(message) > MESSAGE_MAX_LENGTH:
            _too_long(ctx, f"{cpath}.message", MESSAGE_MAX_LENGTH)


def _check_data(ctx: ObjectContext, data, path: str) -> None:
    """A device's ``data``: a JSON object of at most 10 KiB (null or absent
    is no data)."""
    if data is None:
        return
    size = _nbytes(json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=str))
    if size > DATA_MAX_LENGTH:
        _too_long(ctx, path, DATA_MAX_LENGTH)
    if not isinstance(data, dict):
        ctx.fail(path, 'Invalid value: "<value omitted>": must be a valid JSON object')


def _check_network_data(ctx: ObjectContext, value, path: str) -> None:
    if value is None:
        return
    network = ctx.mapping(value, path)
    name = ctx.string(network.get("interfaceName"), f"{path}.interfaceName")
    if _nbytes(name) > INTERFACE_NAME_MAX_LENGTH:
        _too_long(ctx, f"{path}.interfaceName", INTERFACE_NAME_MAX_LENGTH)
    address = ctx.string(network.get("hardwareAddress"), f"{path}.hardwareAddress")
    if _nbytes(address) > HARDWARE_ADDRESS_MAX_LENGTH:
        _too_long(ctx, f"{path}.hardwareAddress", HARDWARE_ADDRESS_MAX_LENGTH)
    ips = ctx.str_list(network.get("ips"), f"{path}.ips")
    _too_many(ctx, f"{path}.ips", ips, IPS_MAX)
    for i, ip in enumerate(ips):
        errs = interface_address_errors(ip)
        if errs:
            ctx.fail(f"{path}.ips[{i}]", invalid_value(ip, errs))
    seen = set()
    for i, ip in enumerate(ips):
        if ip in seen:
            ctx.fail(f"{path}.ips[{i}]", duplicate_value(ip))
        seen.add(ip)


def check_device_statuses(ctx: ObjectContext, value, allocation: dict | None) -> None:
    """``status.devices`` (a list or None) of a claim whose
    ``status.allocation`` is ``allocation`` (a mapping whose shape was
    parsed, or None)."""
    results = ((allocation or {}).get("devices") or {}).get("results") or ()
    allocated = {device_id(r["driver"], r["pool"], r["device"], r.get("shareID"))
                 for r in results}
    path = "status.devices"
    entries = ctx.list(value, path)
    ids = []
    for i, entry in enumerate(entries):
        epath = f"{path}[{i}]"
        entry = ctx.mapping(entry, epath)
        driver = ctx.string(entry.get("driver"), f"{epath}.driver")
        if not driver:
            ctx.fail(f"{epath}.driver", "Required value")
        errs = driver_name_errors(driver)
        if errs:
            ctx.fail(f"{epath}.driver", field_problem(driver, errs))
        pool = ctx.string(entry.get("pool"), f"{epath}.pool")
        if not pool:
            ctx.fail(f"{epath}.pool", "Required value")
        errs = pool_name_errors(pool)
        if errs:
            ctx.fail(f"{epath}.pool", field_problem(pool, errs))
        device = ctx.string(entry.get("device"), f"{epath}.device")
        errs = dns1123_label_errors(device)
        if errs:
            ctx.fail(f"{epath}.device", invalid_value(device, errs))
        share = entry.get("shareID")
        if share is not None:
            share = ctx.string(share, f"{epath}.shareID")
            errs = uid_errors(share)
            if errs:
                ctx.fail(f"{epath}.shareID", invalid_value(share, errs))
        ident = device_id(driver, pool, device, share)
        if ident not in allocated:
            ctx.fail(epath, f"Invalid value: {ident}: must be an allocated device in the claim")
        _check_conditions(ctx, entry.get("conditions"), f"{epath}.conditions")
        _check_data(ctx, entry.get("data"), f"{epath}.data")
        _check_network_data(ctx, entry.get("networkData"), f"{epath}.networkData")
        ids.append(ident)
    seen = set()
    for i, ident in enumerate(ids):
        if ident in seen:
            ctx.fail(f"{path}[{i}]", f"Duplicate value: {ident}")
        seen.add(ident)
