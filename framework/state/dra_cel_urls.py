"""Kubernetes' URL CEL library for DRA selectors, on our values.

``url(s)`` / ``isURL(s)``: an absolute URI (``https://host:80/p?q#f``, or
an opaque one as ``mailto:x``) or an absolute path (``/p``), as Go's
``url.ParseRequestURI`` takes them (a relative reference such as
``../p`` is refused, and so is a port that is not digits); the parts:
``getScheme()``, ``getHost()`` (IPv6 in brackets, with the port),
``getHostname()`` (no brackets, no port), ``getPort()``,
``getEscapedPath()`` (escaped as Go escapes a path) and ``getQuery()``
(key -> every value, unescaped); a part that is absent is ``""`` (``{}``
for the query).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qs, quote, unquote

from .dra_cel_values import CelRuntimeError, type_name

__all__ = ["URL", "URL_FUNCTIONS", "URL_METHODS", "parse_request_uri"]

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")


@dataclass(frozen=True)
class URL:
    """CEL's ``net.URL`` (the parts Go's ``url.Parse`` finds)."""

    CEL_TYPE = "kubernetes.URL"
    scheme: str
    host: str
    path: str
    query: str
    opaque: str = ""


def _port_ok(host: str) -> bool:
    """Go's ``validOptionalPort`` on what follows the host's last ``:``."""
    if host.startswith("["):
        end = host.find("]")
        if end < 0:
            return False
        rest = host[end + 1:]
        return rest == "" or (rest.startswith(":") and (rest[1:] == "" or rest[1:].isdigit()))
    if ":" not in host:
        return True
    port = host[host.rfind(":") + 1:]
    return port == "" or (port.isascii() and port.isdigit())


def _parse(raw: str) -> URL:
    """``raw`` as ``url.ParseRequestURI`` accepts it (ValueError with Go's
    words where it does not)."""
    if raw == "":
        raise ValueError('parse "": empty url')
    if any(ord(c) < 0x20 or ord(c) == 0x7f for c in raw):
        raise ValueError(f'parse "{raw}": net/url: invalid control character in URL')
    text = raw.split("#", 1)[0]         # Parse, after ParseRequestURI, splits it off
    rest, _, query = text.partition("?")
    scheme = ""
    m = _SCHEME.match(rest)
    if m and rest[m.end():m.end() + 1] == ":":
        scheme, rest = m.group(0).lower(), rest[m.end() + 1:]
    elif rest[:1] != "/" and ":" in rest.split("/", 1)[0]:
        raise ValueError(f'parse "{raw}": first path segment in URL cannot contain colon')
    if not rest.startswith("/"):
        if scheme:
            return URL(scheme, "", "", query, opaque=rest)
        raise ValueError(f'parse "{raw}": invalid URI for request')
    host = ""
    if scheme and rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        rest = slash + path
        host = authority.rsplit("@", 1)[-1]
        if not _port_ok(host):
            port = host[host.rfind(":"):]
            raise ValueError(f'parse "{raw}": invalid port "{port}" after host')
    try:
        path = unquote(rest, errors="strict")
    except UnicodeDecodeError:
        raise ValueError(f'parse "{raw}": invalid URL escape') from None
    if re.search(r"%(?![0-9A-Fa-f]{2})", rest):
        bad = re.search(r"%.{0,2}", rest[rest.find("%"):]).group(0)
        raise ValueError(f'parse "{raw}": invalid URL escape "{bad}"')
    return URL(scheme, host, path, query)


def parse_request_uri(raw: str) -> URL:
    """Go's ``url.ParseRequestURI`` (ValueError with its error text)."""
    return _parse(raw)


def url(v) -> URL:
    if not isinstance(v, str):
        raise CelRuntimeError(f"no such overload: url({type_name(v)})")
    try:
        return _parse(v)
    except ValueError as exc:
        raise CelRuntimeError(f"URL parse error during conversion from string: {exc}") from None


def _is_url(v) -> bool:
    if not isinstance(v, str):
        raise CelRuntimeError(f"no such overload: isURL({type_name(v)})")
    try:
        _parse(v)
    except ValueError:
        return False
    return True


def _url(v, fn: str) -> URL:
    if not isinstance(v, URL):
        raise CelRuntimeError(f"no such overload: {type_name(v)}.{fn}")
    return v


def _hostname(u: URL) -> str:
    host = u.host
    if host.startswith("["):
        return host[1:host.find("]")]
    return host.rsplit(":", 1)[0] if ":" in host else host


def _port(u: URL) -> str:
    host = u.host
    if host.startswith("["):
        host = host[host.find("]") + 1:]
        return host[1:] if host.startswith(":") else ""
    return host.rsplit(":", 1)[1] if ":" in host else ""


def _query(u: URL) -> dict:
    parsed = parse_qs(u.query, keep_blank_values=True)
    return {k: tuple(v) for k, v in parsed.items()}


URL_FUNCTIONS = {"url": url, "isURL": _is_url}

URL_METHODS = {
    "getScheme": lambda v: _url(v, "getScheme").scheme,
    "getHost": lambda v: _url(v, "getHost").host,
    "getHostname": lambda v: _hostname(_url(v, "getHostname")),
    "getPort": lambda v: _port(_url(v, "getPort")),
    # Go escapes a path's characters but unreserved ones and $&+,/:;=@
    "getEscapedPath": lambda v: quote(_url(v, "getEscapedPath").path, safe="/$&+,:;=@"),
    "getQuery": lambda v: _query(_url(v, "getQuery")),
}
