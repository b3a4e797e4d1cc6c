"""Kubernetes ``resource.Quantity`` values, parsed exactly.

Grammar (as documented for ``k8s.io/apimachinery/pkg/api/resource``)::

    quantity  ::= [sign] number [suffix]
    sign      ::= "+" | "-"
    number    ::= digits | digits "." digits | digits "." | "." digits
    suffix    ::= binarySI | decimalSI | decimalExponent
    binarySI  ::= Ki | Mi | Gi | Ti | Pi | Ei                  (powers of 1024)
    decimalSI ::= n | u | m | "" | k | M | G | T | P | E       (powers of 1000)
    decimalExponent ::= ("e" | "E") [sign] digits              (power of 10)

``"1E"`` is one exa (10^18); ``"1E3"`` is 1000 (an exponent).  Suffixes are
case-sensitive: ``"1K"``, ``"1ki"`` and ``"5Kb"`` are errors.

Values are kept as :class:`fractions.Fraction` so no precision is lost.  As
upstream's ``ParseQuantity`` does, a value finer than one nano-unit is rounded
*away from zero* to the next nano-unit (``"0.1n"`` -> ``1n``), and a binary-SI
value larger than 2^63-1 in magnitude is capped there (decimal values are not
capped by the parser; :func:`resource_value` refuses results that do not fit an
int64).

Rounding to integers follows ``Quantity.MilliValue()`` / ``Quantity.Value()``:
the ceiling for positive values.  For negative values upstream is not
consistent (the int64 fast path rounds away from zero, the big-decimal path
truncates then adds one); we round away from zero, the documented behaviour of
the common path.  Negative values never reach the scheduler: manifests refuse
negative resource quantities, as the API server does.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

__all__ = [
    "parse_quantity",
    "milli_value",
    "int_value",
    "round_up_to_milli",
    "resource_value",
    "INT64_MAX",
    "INT64_MIN",
]

INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)

_DECIMAL_SUFFIXES = {
    "n": -9, "u": -6, "m": -3, "": 0,
    "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18,
}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}

# sign, integer digits, optional fraction digits, then whatever is left (the suffix)
_NUMBER_RE = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)", re.DOTALL)
_EXPONENT_RE = re.compile(r"[eE]([+-]?[0-9]+)")

# Far beyond any representable int64 value (and any meaningful nano fraction),
# small enough that exact arithmetic stays cheap.
_MAX_ABS_EXPONENT = 1000
_MAX_LENGTH = 1000

_NANO = Fraction(1, 10**9)
_MILLI = Fraction(1, 1000)


def _round_away(q: Fraction, unit: Fraction) -> Fraction:
    """q rounded away from zero to a multiple of ``unit``."""
    steps = q / unit
    if steps.denominator == 1:
        return q
    magnitude = math.ceil(abs(steps))
    return unit * (magnitude if q > 0 else -magnitude)


def parse_quantity(value) -> Fraction:
    """Parse a quantity (string, int or float as YAML/JSON give them) exactly.

    Raises ``ValueError`` naming the offending text for anything that is not a
    quantity: ``""``, ``"abc"``, ``"1.2.3"``, ``"5Kb"``, ``"--1"``, booleans,
    ``None``, NaN, infinities.
    """
    if isinstance(value, Fraction):
        return value
    if isinstance(value, bool) or value is None:
        raise ValueError(f"quantity must be a string or a number, not {_type_name(value)}")
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"quantity {value!r} is not a finite number")
        # repr is the shortest text that round-trips: 0.1 -> "0.1", 1e-05 -> "1e-05",
        # i.e. what the JSON/YAML source most likely said.
        text = repr(value)
    elif isinstance(value, str):
        return _parse_text(value)  # manifests repeat the same few strings: cached
    else:
        raise ValueError(f"quantity must be a string or a number, not {_type_name(value)}")
    return _parse_text(text)


@lru_cache(maxsize=8192)
def _parse_text(text: str) -> Fraction:
    stripped = text.strip()  # Quantity.UnmarshalJSON trims surrounding spaces
    if not stripped:
        raise ValueError("quantity is empty")
    if len(stripped) > _MAX_LENGTH:
        raise ValueError(f"quantity is too long ({len(stripped)} characters)")

    match = _NUMBER_RE.fullmatch(stripped)
    sign, whole, frac, suffix = match.groups()  # the pattern always matches
    frac = frac or ""
    if not whole and not frac:
        raise ValueError(f"invalid quantity {text!r}: expected a number, e.g. '100m', '1.5Gi', '2e3'")

    mantissa = Fraction(int(whole or "0") * 10 ** len(frac) + int(frac or "0"), 10 ** len(frac))

    binary = False
    if suffix in _DECIMAL_SUFFIXES:
        amount = mantissa * Fraction(10) ** _DECIMAL_SUFFIXES[suffix]
    elif suffix in _BINARY_SUFFIXES:
        binary = True
        amount = mantissa * (1 << _BINARY_SUFFIXES[suffix])
    else:
        exp_match = _EXPONENT_RE.fullmatch(suffix)
        if exp_match is None:
            raise ValueError(
                f"invalid quantity {text!r}: unknown suffix {suffix!r} (expected one of "
                "n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent like e3)"
            )
        exponent = int(exp_match.group(1))
        if abs(exponent) > _MAX_ABS_EXPONENT:
            raise ValueError(f"invalid quantity {text!r}: exponent {exponent} is out of range")
        amount = mantissa * Fraction(10) ** exponent

    # Round the magnitude up to a whole number of nano-units (upstream: "if you
    # want some resources, you should get some resources").
    amount = _round_away(amount, _NANO)
    if binary and amount > INT64_MAX:
        amount = Fraction(INT64_MAX)
    return -amount if sign == "-" else amount


def _type_name(value) -> str:
    return "null" if value is None else type(value).__name__


def _scaled(q: Fraction, unit: Fraction) -> int:
    steps = q / unit
    if steps.denominator == 1:
        return int(steps)
    if steps > 0:
        return math.ceil(steps)
    return math.floor(steps)  # away from zero for negatives, see module docstring


def milli_value(q: Fraction) -> int:
    """``Quantity.MilliValue()``: ceil(q * 1000) for q >= 0 (away from zero below 0).

    Python ints do not overflow; callers that need an int64 check the range
    (:func:`resource_value` does).
    """
    return _scaled(Fraction(q), _MILLI)


@lru_cache(maxsize=8192)
def _milli_of_text(text: str) -> int:
    return milli_value(_parse_text(text))


def quantity_milli(value) -> int:
    """``milli_value(parse_quantity(value))``; manifests repeat the same few
    strings, whose answers are cached (a node's capacity and allocatable
    cost two lookups, not exact fraction arithmetic)."""
    if isinstance(value, str):
        return _milli_of_text(value)
    return milli_value(parse_quantity(value))


def int_value(q: Fraction) -> int:
    """``Quantity.Value()``: ceil(q) for q >= 0 (away from zero below 0)."""
    return _scaled(Fraction(q), Fraction(1))


def round_up_to_milli(q: Fraction) -> Fraction:
    """``Quantity.RoundUp(-3)``: what the API server does to every value of a
    ResourceList (requests, limits, overhead, capacity, allocatable) when it
    applies defaults; the magnitude is rounded up to a whole milli-unit."""
    return _round_away(Fraction(q), _MILLI)


def resource_value(resource_name: str, value) -> int:
    """A quantity in tensorsched's canonical integer unit for ``resource_name``:
    millicores for ``cpu``; whole units (bytes for memory, ephemeral-storage,
    hugepages-*) for everything else.

    ``value`` is anything :func:`parse_quantity` accepts (or a Fraction).
    Raises ``ValueError`` when the result does not fit an int64.
    """
    q = parse_quantity(value)
    out = milli_value(q) if resource_name == "cpu" else int_value(q)
    if not INT64_MIN <= out <= INT64_MAX:
        unit = "millicores" if resource_name == "cpu" else "units"
        raise ValueError(f"quantity {value!r} for {resource_name} is out of range ({out} {unit} does not fit int64)")
    return out
