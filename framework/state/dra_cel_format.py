"""The strings extension's ``format`` and ``strings.quote`` (cel-go's
strings library at the version Kubernetes' base environment enables, 2),
on ``dra_cel``'s values.

``"<text>".format([args])`` substitutes the arguments in turn, printf-style:

- ``%s``: strings as they are, integers in decimal, doubles as Go's
  shortest form (``64.2``, ``3``, ``1e+08``), bools, ``null``, lists and
  maps written as CEL literals (their strings quoted, their doubles with 6
  decimals, map entries sorted by key);
- ``%d`` integers; ``%f`` doubles with ``.N`` decimals (6 by default) and
  thousands grouped as the en-US locale writes them (``1,234.500000``);
  ``%e`` doubles in scientific notation as that locale writes it
  (``2.718280 × 10⁰⁰``, narrow no-break spaces around the sign; always
  6 decimals, the precision read as a width: see ``_scientific``);
  infinities are ``∞`` / ``-∞`` and NaN ``NaN`` for both (a string
  ``"Infinity"``, ``"-Infinity"`` or ``"NaN"`` is taken for that double);
- ``%b`` integers (and bools) in binary, ``%o`` in octal, ``%x`` / ``%X``
  integers in hexadecimal and strings as the hexadecimal of their UTF-8
  bytes;
- ``%%`` a percent sign.

A clause that does not take its argument's type, a missing argument, an
unknown clause or a ``%`` at the end are runtime errors with cel-go's
words.  ``strings.quote(s)``: ``s`` in double quotes, CEL's escapes
written out.
"""

from __future__ import annotations

from decimal import Decimal

from .dra_cel_values import CelRuntimeError, type_name

__all__ = ["format_string", "quote", "parse_clauses", "clause_error", "CLAUSE_TYPES"]

#: the value types each clause takes (what the static check asks too)
CLAUSE_TYPES = {
    "s": ("string", "bytes", "int", "uint", "double", "bool", "null_type", "list", "map"),
    "d": ("int", "uint"),
    "f": ("double", "string"),
    "e": ("double", "string"),
    "b": ("int", "uint", "bool"),
    "x": ("int", "uint", "string", "bytes"),
    "X": ("int", "uint", "string", "bytes"),
    "o": ("int", "uint"),
}
#: cel-go's complaint per clause (``... was given <type>``)
_CLAUSE_ERRORS = {
    "s": "string clause can only be used on strings, bools, bytes, ints, doubles, maps, "
         "lists, types, durations, and timestamps",
    "d": "decimal clause can only be used on integers",
    "f": "fixed-point clause can only be used on doubles",
    "e": "scientific clause can only be used on doubles",
    "b": "only integers and bools can be formatted as binary",
    "x": "only integers, byte buffers, and strings can be formatted as hex",
    "o": "octal clause can only be used on integers",
}
_SPECIAL = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def clause_error(clause: str, given: str) -> str:
    """cel-go's message for a clause given a value of type ``given``."""
    return f"{_CLAUSE_ERRORS[clause.lower()]}, was given {given}"


def _go_shortest(x: float) -> str:
    """Go's ``strconv.FormatFloat(x, 'g', -1, 64)``: the shortest digits,
    exponent form below 1e-4 and from 1e+06 up (exponent of two digits)."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "+Inf" if x > 0 else "-Inf"
    if x == 0:
        return "-0" if str(x).startswith("-") else "0"
    sign, digits, exp = Decimal(repr(x)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + exp                  # where the decimal point goes
    e = point - 1
    out = "-" if sign else ""
    if e < -4 or e >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{out}{mantissa}e{'-' if e < 0 else '+'}{abs(e):02d}"
    if point <= 0:
        return f"{out}0.{'0' * -point}{text}"
    if point >= len(text):
        return f"{out}{text}{'0' * (point - len(text))}"
    return f"{out}{text[:point]}.{text[point:]}"


def _grouped(text: str) -> str:
    """Thousands grouped with commas in the integer part (en-US)."""
    sign = "-" if text.startswith("-") else ""
    whole, _, frac = text.lstrip("-").partition(".")
    groups = []
    while len(whole) > 3:
        groups.insert(0, whole[-3:])
        whole = whole[:-3]
    groups.insert(0, whole)
    return sign + ",".join(groups) + ("." + frac if frac else "")


def _double_of(v, clause: str) -> float:
    if isinstance(v, float):
        return v
    if isinstance(v, str) and v in _SPECIAL:
        return _SPECIAL[v]
    raise CelRuntimeError(f"error during formatting: {clause_error(clause, type_name(v))}")


def _fixed(v, precision: int) -> str:
    x = _double_of(v, "f")
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "∞" if x > 0 else "-∞"
    return _grouped(f"{x:.{precision}f}")


def _scientific(v, precision: int) -> str:
    """``%e``: always 6 decimals; the clause's precision (6 by default) is
    handed to the locale printer as a *width* (cel-go writes ``%<p>e``), so
    a shorter result is padded on the left with spaces to ``precision``
    characters (``"%e"`` of infinity is ``"     ∞"``; ``%.0e`` reads as the
    zero flag, no width)."""
    x = _double_of(v, "e")
    if x != x:
        text = "NaN"
    elif x in (float("inf"), float("-inf")):
        text = "∞" if x > 0 else "-∞"
    else:
        mantissa, _, exponent = f"{x:.6e}".partition("e")
        power = int(exponent)
        digits = f"{'-' if power < 0 else ''}{abs(power):02d}".translate(_SUPERSCRIPT)
        text = f"{mantissa}\u202f×\u202f10{digits}"
    return text.rjust(precision)


def _quoted(v, text: str) -> str:
    """A member of a list or map as a CEL literal writes it."""
    if isinstance(v, str):
        return _go_quote(text)
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return _go_quote(text)
    return text


def _go_quote(s: str) -> str:
    """Go's ``%q`` of a string (its escapes; printable characters kept)."""
    out = []
    for c in s:
        if c in ('"', "\\"):
            out.append("\\" + c)
        elif c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif c.isprintable():
            out.append(c)
        elif ord(c) < 0x10000:
            out.append(f"\\u{ord(c):04x}" if ord(c) > 0xff else f"\\x{ord(c):02x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return '"' + "".join(out) + '"'


_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
            "\v": "\\v"}


def _member(v) -> str:
    """A list or map member: its own clause (doubles with 6 decimals)."""
    if isinstance(v, float):
        text = f"{v:.6f}" if v == v and v not in (float("inf"), float("-inf")) \
            else _go_shortest(v)
    else:
        text = _as_string(v)
    return _quoted(v, text)


def _as_string(v) -> str:
    """The ``%s`` clause."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _go_shortest(v)
    if isinstance(v, str):
        return v
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if v is None:
        return "null"
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_member(x) for x in v) + "]"
    if isinstance(v, dict):
        pairs = []
        for k, x in v.items():
            if not isinstance(k, (str, bool, int)):
                raise CelRuntimeError("error during formatting: no formatting function for "
                                      f"map key of type {type_name(k)}")
            pairs.append((_quoted(k, _as_string(k)), _member(x)))
        pairs.sort(key=lambda p: p[0])
        return "{" + ", ".join(f"{k}:{x}" for k, x in pairs) + "}"
    raise CelRuntimeError(f"error during formatting: {clause_error('s', type_name(v))}")


def _integer(v, clause: str) -> int:
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    raise CelRuntimeError(f"error during formatting: {clause_error(clause, type_name(v))}")


def _go_int(n: int, base: str) -> str:
    digits = format(abs(n), base)
    return ("-" if n < 0 else "") + digits


def _clause(clause: str, precision, v) -> str:
    if clause == "s":
        return _as_string(v)
    if clause == "d":
        return str(_integer(v, "d"))
    if clause == "f":
        return _fixed(v, 6 if precision is None else precision)
    if clause == "e":
        return _scientific(v, 6 if precision is None else precision)
    if clause == "b":
        if isinstance(v, bool):
            return "1" if v else "0"
        return _go_int(_integer(v, "b"), "b")
    if clause == "o":
        return _go_int(_integer(v, "o"), "o")
    # x / X
    if isinstance(v, (str, bytes)):
        data = v.encode() if isinstance(v, str) else v
        text = data.hex()
    else:
        text = _go_int(_integer(v, "x"), "x")
    return text.upper() if clause == "X" else text


def parse_clauses(text: str):
    """The clauses of a format string in order: (clause, precision or
    None), or the parse error's message (a string)."""
    out, i = [], 0
    while i < len(text):
        if text[i] != "%":
            i += 1
            continue
        if text[i + 1:i + 2] == "%":
            i += 2
            continue
        if i + 1 >= len(text):
            return out, "unexpected end of string"
        j, precision = i + 1, None
        if text[j] == ".":
            k = j + 1
            while k < len(text) and text[k].isascii() and text[k].isdigit():
                k += 1
            if k >= len(text):
                return out, ("could not parse formatting clause: error while parsing precision: "
                             "could not find end of precision specifier")
            precision = int(text[j + 1:k] or "0")
            j = k
        clause = text[j]
        if clause not in CLAUSE_TYPES:
            return out, (f'could not parse formatting clause: unrecognized formatting clause '
                         f'"{clause}"')
        out.append((clause, precision, i, j + 1))
        i = j + 1
    return out, None


def format_string(text, args) -> str:
    """``text.format(args)`` (module doc); CelRuntimeError as cel-go."""
    if not isinstance(text, str) or not isinstance(args, (tuple, list)):
        raise CelRuntimeError(f"no such overload: {type_name(text)}.format({type_name(args)})")
    out, i, n = [], 0, 0
    while i < len(text):
        c = text[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        if text[i + 1:i + 2] == "%":
            out.append("%")
            i += 2
            continue
        if n >= len(args):
            raise CelRuntimeError(f"index {n} out of range")
        clauses, error = parse_clauses(text[i:])
        if not clauses:
            raise CelRuntimeError(error)
        clause, precision, _start, end = clauses[0]
        out.append(_clause(clause, precision, args[n]))
        n += 1
        i += end
    return "".join(out)


def quote(s) -> str:
    """``strings.quote(s)``: CEL's escapes written out, in double quotes."""
    if not isinstance(s, str):
        raise CelRuntimeError(f"no such overload: strings.quote({type_name(s)})")
    table = {**_ESCAPES, "\\": "\\\\", '"': '\\"'}
    return '"' + "".join(table.get(c, c) for c in s) + '"'

