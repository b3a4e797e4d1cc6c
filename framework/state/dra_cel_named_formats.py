"""Kubernetes' named-format CEL library (``library.Format``, in the base
environment from 1.31) for DRA selectors, on ``dra_cel``'s values.

``format.named(name)`` is ``optional.of`` the format of that name, else
``optional.none()``; ``format.<name>()`` is the format itself.
``f.validate(s)`` is ``optional.none()`` when ``s`` is valid, else
``optional.of`` the list of problems, in apimachinery's words.  The formats:

- ``dns1123Label``, ``dns1123Subdomain``, ``dns1035Label``: the object-name
  rules (``NameIsDNSLabel`` and its kin, ``framework.parsing.meta``);
  their ``...Prefix`` forms check a ``generateName`` prefix: a trailing
  ``-`` is masked as upstream masks it (the last *two* characters become
  ``a``) before the same check;
- ``qualifiedName`` (a label key) and ``labelValue``;
- ``uri``: Go's ``url.ParseRequestURI`` (its error text is the problem);
- ``uuid`` (8-4-4-4-12 hex digits, any case, each dash optional):
  ``does not match the UUID format``; ``byte`` (standard base64 with its
  padding, not empty): ``invalid base64``; ``date`` (``YYYY-MM-DD``, a day
  the month has): ``invalid date``; ``datetime`` (such a date, ``T``, then
  ``hh:mm:ss``, optional fraction, ``Z`` or ``±hh:mm``; hours to 23,
  minutes and seconds to 59; case-insensitive): ``invalid datetime``.

Two formats are equal when they are the same format; any other equality
is false (heterogeneous equality).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from tensorsched.framework.parsing.meta import (
    dns1035_label_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)

from .dra_cel_urls import parse_request_uri
from .dra_cel_values import NONE, CelOptional, CelRuntimeError, type_name

__all__ = ["NamedFormat", "FORMAT_NAMES", "NAMED_FORMAT_FUNCTIONS", "NAMED_FORMAT_METHODS",
           "FORMAT_TYPE"]

#: the CEL type of a format, as cel-go's messages name it
FORMAT_TYPE = "kubernetes.NamedFormat"


@dataclass(frozen=True)
class NamedFormat:
    """One named format: ``errors(s)`` -> the problems of ``s`` (empty
    when valid).  Equal by name."""

    CEL_TYPE = FORMAT_TYPE
    name: str
    errors: Callable[[str], list] = field(compare=False, repr=False)


def _mask_trailing_dash(s: str) -> str:
    """apimachinery's ``maskTrailingDash``: a name of two or more
    characters ending in ``-`` loses its last two characters and gains
    ``a`` (a generateName prefix, checked as a name)."""
    return s[:-2] + "a" if len(s) > 1 and s.endswith("-") else s


def _prefix(rule):
    return lambda s: rule(_mask_trailing_dash(s))


def _uri(s: str) -> list:
    try:
        parse_request_uri(s)
    except ValueError as exc:
        return [str(exc)]
    return []


# Go's ``$`` ends the text only: ``\Z``
_UUID = re.compile(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z")
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|"
                     r"[A-Za-z0-9+/]{4})\Z")
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})\Z")
_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))\Z")
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _is_date(s: str) -> bool:
    """Go's ``time.Parse("2006-01-02", s)`` succeeds: four-digit year, a
    month 01-12 and a day that month has (February 29 in leap years)."""
    m = _DATE.match(s)
    if m is None:
        return False
    year, month, day = (int(g) for g in m.groups())
    if not 1 <= month <= 12:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= day <= _DAYS[month - 1] + (month == 2 and leap)


def _is_datetime(s: str) -> bool:
    """kube-openapi's ``IsDateTime``: lower-cased, split at ``t``; the
    first piece a date, the second a time of day (string comparisons of
    its hour, minute and second with 23, 59, 59)."""
    parts = s.lower().split("t")
    if len(s) < 4 or len(parts) < 2 or not _is_date(parts[0]):
        return False
    m = _TIME.match(parts[1])
    return m is not None and m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59"


def _check(test, message: str):
    return lambda s: [] if test(s) else [message]


_FORMATS = {
    "dns1123Label": NamedFormat("DNS1123Label", dns1123_label_errors),
    "dns1123Subdomain": NamedFormat("DNS1123Subdomain", dns1123_subdomain_errors),
    "dns1035Label": NamedFormat("DNS1035Label", dns1035_label_errors),
    "qualifiedName": NamedFormat("QualifiedName", qualified_name_errors),
    "dns1123LabelPrefix": NamedFormat("DNS1123LabelPrefix", _prefix(dns1123_label_errors)),
    "dns1123SubdomainPrefix": NamedFormat("DNS1123SubdomainPrefix",
                                          _prefix(dns1123_subdomain_errors)),
    "dns1035LabelPrefix": NamedFormat("DNS1035LabelPrefix", _prefix(dns1035_label_errors)),
    "labelValue": NamedFormat("LabelValue", label_value_errors),
    "uri": NamedFormat("URI", _uri),
    "uuid": NamedFormat("uuid", _check(_UUID.match, "does not match the UUID format")),
    "byte": NamedFormat("byte", _check(_BASE64.match, "invalid base64")),
    "date": NamedFormat("date", _check(_is_date, "invalid date")),
    "datetime": NamedFormat("datetime", _check(_is_datetime, "invalid datetime")),
}
#: the names ``format.<name>()`` and ``format.named("<name>")`` know
FORMAT_NAMES = tuple(_FORMATS)


def _named(name):
    if not isinstance(name, str):
        raise CelRuntimeError(f"no such overload: format.named({type_name(name)})")
    f = _FORMATS.get(name)
    return NONE if f is None else CelOptional(f)


def _validate(f, s):
    if not isinstance(f, NamedFormat) or not isinstance(s, str):
        raise CelRuntimeError(f"no such overload: {type_name(f)}.validate({type_name(s)})")
    problems = f.errors(s)
    return CelOptional(tuple(problems)) if problems else NONE


NAMED_FORMAT_FUNCTIONS = {
    "format.named": _named,
    **{f"format.{name}": (lambda f=f: f) for name, f in _FORMATS.items()},
}
NAMED_FORMAT_METHODS = {"validate": _validate}
