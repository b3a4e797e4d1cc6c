"""Kubernetes' IP and CIDR CEL libraries for DRA selectors, on our values.

``ip("10.0.0.1")`` / ``isIP(s)`` / ``ip.isCanonical(s)`` and, on an
address, ``family()`` (4 or 6), ``isUnspecified()``, ``isLoopback()``,
``isLinkLocalMulticast()``, ``isLinkLocalUnicast()``,
``isGlobalUnicast()``; ``cidr("10.0.0.0/8")`` / ``isCIDR(s)`` and, on a
network, ``containsIP(ip or string)``, ``containsCIDR(cidr or string)``,
``ip()`` (its address as written), ``masked()``, ``prefixLength()``;
``string(x)`` of either.  Parsing follows Go's ``net/netip`` as the
library uses it: no zones (``fe80::1%eth0``), no IPv4-mapped IPv6
addresses, no leading zeros in IPv4 octets; a CIDR may have bits set after
its prefix (``masked()`` clears them).  Addresses and networks are equal
when their values are.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from .dra_cel_values import CelRuntimeError, type_name

__all__ = ["IPAddr", "CIDR", "NET_FUNCTIONS", "NET_METHODS"]


@dataclass(frozen=True)
class IPAddr:
    """CEL's ``net.IP``."""

    CEL_TYPE = "net.IP"
    addr: ipaddress.IPv4Address | ipaddress.IPv6Address

    def __str__(self) -> str:
        return str(self.addr)


@dataclass(frozen=True)
class CIDR:
    """CEL's ``net.CIDR``: an address and a prefix length (bits after the
    prefix kept as written)."""

    CEL_TYPE = "net.CIDR"
    addr: ipaddress.IPv4Address | ipaddress.IPv6Address
    bits: int

    def network(self):
        return ipaddress.ip_network(f"{self.addr}/{self.bits}", strict=False)

    def __str__(self) -> str:
        return f"{self.addr}/{self.bits}"


def _parse_addr(raw: str):
    """An address as ``net/netip`` parses it, with the library's refusals
    (messages of its own words); ValueError when refused."""
    if "%" in raw:
        try:
            ipaddress.ip_address(raw.split("%", 1)[0])
        except ValueError:
            pass
        else:
            raise ValueError(f"IP address {_go_quoted(raw)} with zone value is not allowed")
    try:
        addr = ipaddress.ip_address(raw)
    except ValueError:
        raise ValueError(f"IP Address {_go_quoted(raw)} parse error during conversion from "
                         f"string: ParseAddr({_go_quoted(raw)}): invalid IP address") from None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise ValueError(f"IPv4-mapped IPv6 address {_go_quoted(raw)} is not allowed")
    return addr


def _go_quoted(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _string(v, fn: str) -> str:
    if not isinstance(v, str):
        raise CelRuntimeError(f"no such overload: {fn}({type_name(v)})")
    return v


def ip(v):
    """``ip(string)`` (an address), or ``cidr.ip()`` (its address)."""
    if isinstance(v, CIDR):
        return IPAddr(v.addr)
    try:
        return IPAddr(_parse_addr(_string(v, "ip")))
    except ValueError as exc:
        raise CelRuntimeError(str(exc)) from None


def _parse_cidr(raw: str) -> CIDR:
    addr_text, slash, bits_text = raw.partition("/")
    error = ValueError(f"network address parse error during conversion from string: "
                       f"network address parse error during conversion from string: "
                       f"netip.ParsePrefix({_go_quoted(raw)}): invalid prefix")
    if not slash or not bits_text.isdigit() or (len(bits_text) > 1 and bits_text[0] == "0"):
        raise error
    try:
        addr = ipaddress.ip_address(addr_text)
    except ValueError:
        raise error from None
    if "%" in addr_text:
        raise error
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise ValueError(f"network address parse error during conversion from string: "
                         f"IPv4-mapped IPv6 address {_go_quoted(raw)} is not allowed")
    bits = int(bits_text)
    if bits > addr.max_prefixlen:
        raise error
    return CIDR(addr, bits)


def cidr(v) -> CIDR:
    try:
        return _parse_cidr(_string(v, "cidr"))
    except ValueError as exc:
        raise CelRuntimeError(str(exc)) from None


def _valid(parse, fn: str):
    def valid(v) -> bool:
        try:
            parse(_string(v, fn))
        except ValueError:
            return False
        return True
    return valid


def _is_canonical(v) -> bool:
    try:
        addr = _parse_addr(_string(v, "ip.isCanonical"))
    except ValueError as exc:
        raise CelRuntimeError(str(exc)) from None
    return str(addr) == v


def _address(v, fn: str):
    if not isinstance(v, IPAddr):
        raise CelRuntimeError(f"no such overload: {type_name(v)}.{fn}")
    return v.addr


def _network(v, fn: str) -> CIDR:
    if not isinstance(v, CIDR):
        raise CelRuntimeError(f"no such overload: {type_name(v)}.{fn}")
    return v


def _is_global_unicast(a) -> bool:
    """Go's ``Addr.IsGlobalUnicast`` (private and ULA addresses count)."""
    if a.version == 4 and str(a) in ("0.0.0.0", "255.255.255.255"):
        return False
    return not (a.is_unspecified or a.is_loopback or a.is_multicast or _link_local_unicast(a))


def _link_local_unicast(a) -> bool:
    if a.version == 4:
        return a in ipaddress.ip_network("169.254.0.0/16")
    return a in ipaddress.ip_network("fe80::/10")


def _link_local_multicast(a) -> bool:
    if a.version == 4:
        return a in ipaddress.ip_network("224.0.0.0/24")
    return (int(a) >> 112) & 0xff0f == 0xff02


def _contains_ip(net, other) -> bool:
    n = _network(net, "containsIP")
    addr = ip(other).addr if isinstance(other, str) else _address(other, "containsIP")
    return addr.version == n.addr.version and addr in n.network()


def _contains_cidr(net, other) -> bool:
    n = _network(net, "containsCIDR")
    o = cidr(other) if isinstance(other, str) else _network(other, "containsCIDR")
    if o.addr.version != n.addr.version:
        return False
    inner = ipaddress.ip_network(f"{o.addr}/{n.bits}", strict=False)
    return inner == n.network() and n.bits <= o.bits


#: global functions of the two libraries (``ip`` doubles as the method)
NET_FUNCTIONS = {
    "ip": ip,
    "cidr": cidr,
    "isIP": _valid(_parse_addr, "isIP"),
    "isCIDR": _valid(_parse_cidr, "isCIDR"),
    "ip.isCanonical": _is_canonical,
}

#: receiver methods: name -> f(value, *args)
NET_METHODS = {
    "family": lambda v: _address(v, "family").version,
    "isUnspecified": lambda v: _address(v, "isUnspecified").is_unspecified,
    "isLoopback": lambda v: _address(v, "isLoopback").is_loopback,
    "isLinkLocalMulticast": lambda v: _link_local_multicast(_address(v, "isLinkLocalMulticast")),
    "isLinkLocalUnicast": lambda v: _link_local_unicast(_address(v, "isLinkLocalUnicast")),
    "isGlobalUnicast": lambda v: _is_global_unicast(_address(v, "isGlobalUnicast")),
    "containsIP": _contains_ip,
    "containsCIDR": _contains_cidr,
    "ip": ip,
    "masked": lambda v: CIDR(_network(v, "masked").network().network_address,
                             _network(v, "masked").bits),
    "prefixLength": lambda v: _network(v, "prefixLength").bits,
}
