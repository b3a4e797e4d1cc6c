"""CEL device selectors compiled into column predicates.

A DeviceClass or a request selects devices with CEL expressions over one
``device``: ``device.driver``, ``device.allowMultipleAllocations``,
``device.attributes["<domain>"].<id>`` and ``device.capacity["<domain>"].<id>``
(an unknown domain is an empty map; an unknown id is the runtime error ``no
such key``), with Kubernetes' CEL library: ``quantity()`` / ``isQuantity()`` and the
quantity methods (``compareTo``, ``isGreaterThan``, ``isLessThan``,
``isInteger``, ``asInteger``, ``asApproximateFloat``, ``sign``, ``add``,
``sub``), ``semver()`` / ``isSemver()`` with ``compareTo`` / ``isGreaterThan``
/ ``isLessThan`` / ``major`` / ``minor`` / ``patch``, the standard
``matches`` / ``startsWith`` / ``endsWith`` / ``contains``, the regex
library's ``find`` / ``findAll``, and the libraries the base environment
enables for stored selectors: cel-go's sets extension and two-variable
comprehensions, its lists extension (``slice``, ``flatten``, ``sort``,
``sortBy``, ``lists.range``, ...), Kubernetes' lists, IP, CIDR, URL and
named-format libraries, the strings extension's ``format`` and
``strings.quote`` (``dra_cel_lists``, ``dra_cel_lists_ext``,
``dra_cel_net``, ``dra_cel_urls``,
``dra_cel_named_formats``, ``dra_cel_format``, ``dra_cel_syntax``).

Expressions are parsed with cel-python (``celpy``).  The forms drivers and
users write are then evaluated for every device at once: each comparison,
``in``, string match or quantity/semver method call on one device value and
constants is evaluated once per *distinct value* of that attribute (the
device columns are dictionary-encoded, :class:`DeviceValues`) and gathered
to all devices with one NumPy index; ``&&``, ``||`` and ``!`` combine the
boolean columns with CEL's error rules (``false && error`` is false, ``true ||
error`` is true, otherwise the error wins).  Any other expression is
evaluated from cel-python's parse tree once per distinct tuple of the values it
reads (devices of one model share one evaluation), by closures compiled once
per expression (``dra_cel_fast``; the forms they do not cover by cel-python's
evaluator, under the runtime cost limit of ``dra_cel_cost``), its parts that
read no device once per expression (``dra_cel_hoist``).  Both paths give the same answers
(``tests/framework/state/test_dra_cel.py`` checks them against cel-python on
random devices).

Equality is heterogeneous, as in cel-go (``1 == "1"`` is false, not an
error); ordering needs operands of one type (``int`` and ``double`` compare
numerically).  A runtime error makes the expression's result an error for
that device; the allocator reports it as upstream does.

Kubernetes' base environment enables cel-go's optional library: its syntax
(``x.?f``, ``x[?k]``, ``[?x]``, ``{?k: v}``) is parsed with cel-python's
grammar plus the optional productions and its values evaluated by
``dra_cel_syntax`` (:class:`CelOptional`: ``dra_cel_values``); ``x.?f`` on one attribute or
capacity domain compiles to a column like ``x.f`` (an optional per distinct
value), with ``hasValue()``, ``value()`` and ``orValue(c)`` on it.

cel-python has no type checker; ``dra_cel_types.check_types`` stands in
for the API server's on load: with the device's declared types (``driver`` string,
``allowMultipleAllocations`` bool, capacity values ``kubernetes.Quantity``,
attribute values ``any``: any type to an overload, a type of its own to the
homogeneous-literal validator, so ``[attr, "x"]`` is refused) it refuses a
result that is not bool and operators or functions no overload takes
(``device.driver == 1``), with cel-go's words and type names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from tensorsched.framework.errors import TensorschedError
from tensorsched.framework.parsing.quantity import parse_quantity
from tensorsched.framework.parsing.semver import Semver, parse_semver

from .dra_cel_format import format_string, quote
from .dra_cel_lists import LIST_METHODS, SET_FUNCTIONS
from .dra_cel_lists_ext import LISTS_EXT_FUNCTIONS, LISTS_EXT_METHODS
from .dra_cel_named_formats import NAMED_FORMAT_FUNCTIONS, NAMED_FORMAT_METHODS
from .dra_cel_net import NET_FUNCTIONS, NET_METHODS
from .dra_cel_urls import URL_FUNCTIONS, URL_METHODS
from .dra_cel_values import (
    MACROS,
    NONE,
    TWO_VARIABLE_MACROS,
    CelOptional,
    CelRuntimeError,
    Quantity,
    cel_equal,
    type_name,
)
from .dra_cel_values import is_cel_number as _numeric

__all__ = [
    "CelError",
    "Quantity",
    "DeviceValues",
    "CompiledSelector",
    "compile_selector",
    "reference_matches",
    "BoolColumn",
    "CelOptional",
    "NONE",
]


#: the fields of CEL's ``device`` (upstream's declared device type)
DEVICE_FIELDS = ("driver", "attributes", "capacity", "allowMultipleAllocations")


class CelError(TensorschedError):
    """A CEL expression that does not compile (``compile_selector``)."""


#: a runtime error of one evaluation (becomes an error entry)
_EvalError = CelRuntimeError
_type_name = type_name
_ABSENT = object()  # a device value that is not there (no such key)


_ORDER = {
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
}


def cel_order(op: str, a, b) -> bool:
    if _numeric(a) and _numeric(b) or (type(a) is type(b) and isinstance(a, (bool, str))):
        c = (a > b) - (a < b)
        return _ORDER[op](c)
    raise _EvalError(f"no such overload: {_type_name(a)} {op} {_type_name(b)}")


def _string(v, fn: str) -> str:
    if not isinstance(v, str):
        raise _EvalError(f"no such overload: {_type_name(v)}.{fn}")
    return v


@lru_cache(maxsize=1024)
def _regex(pattern: str):
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise _EvalError(f"invalid regex {pattern!r}: {exc}") from None


def _compare_to(a, b) -> int:
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return a.compare(b)
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.compare(b)
    raise _EvalError(f"no such overload: {_type_name(a)}.compareTo({_type_name(b)})")


def _quantity_of(v, fn: str) -> Quantity:
    if not isinstance(v, Quantity):
        raise _EvalError(f"no such overload: {_type_name(v)}.{fn}")
    return v


def _semver_of(v, fn: str) -> Semver:
    if not isinstance(v, Semver):
        raise _EvalError(f"no such overload: {_type_name(v)}.{fn}")
    return v


def _addend(o, fn: str) -> Fraction:
    if isinstance(o, Quantity):
        return o.value
    if isinstance(o, int) and not isinstance(o, bool):
        return Fraction(o)
    raise _EvalError(f"no such overload: kubernetes.Quantity.{fn}({_type_name(o)})")


def _as_integer(q: Quantity) -> int:
    if q.value.denominator != 1 or not -(2**63) <= q.value < 2**63:
        raise _EvalError("cannot convert value to integer")
    return int(q.value)


def _is_valid(make, text) -> bool:
    if not isinstance(text, str):
        raise _EvalError(f"no such overload: {_type_name(text)}")
    try:
        make(text)
    except _EvalError:
        return False
    return True


def _make_quantity(text) -> Quantity:
    if not isinstance(text, str):
        raise _EvalError(f"no such overload: quantity({_type_name(text)})")
    try:
        return Quantity(parse_quantity(text))
    except ValueError as exc:
        raise _EvalError(f"quantities must match the regular expression: {exc}") from None


def _make_semver(text) -> Semver:
    if not isinstance(text, str):
        raise _EvalError(f"no such overload: semver({_type_name(text)})")
    try:
        return parse_semver(text)
    except ValueError as exc:
        raise _EvalError(f"could not parse semver: {exc}") from None


#: method name -> f(target, *args) on our values (the compiled path and the
#: cel-python library share these).
def _int(v, fn: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _EvalError(f"no such overload: {fn}({_type_name(v)})")
    return v


def _index_in(text: str, i: int, fn: str) -> int:
    if i < 0 or i > len(text):
        raise _EvalError(f"index out of range: {i}")
    return i


def _index_of(s, sub, *offset, last=False):
    fn = "lastIndexOf" if last else "indexOf"
    s, sub = _string(s, fn), _string(sub, fn)
    if not offset:
        return s.rfind(sub) if last else s.find(sub)
    i = _index_in(s, _int(offset[0], fn), fn)
    return s.rfind(sub, 0, i + len(sub)) if last else s.find(sub, i)


def _substring(s, start, *end):
    s = _string(s, "substring")
    a = _index_in(s, _int(start, "substring"), "substring")
    b = _index_in(s, _int(end[0], "substring"), "substring") if end else len(s)
    if a > b:
        raise _EvalError(f"invalid substring range. start: {a}, end: {b}")
    return s[a:b]


def _split(s, sep, *limit):
    s, sep = _string(s, "split"), _string(sep, "split")
    n = _int(limit[0], "split") if limit else -1
    if n == 0:
        return ()
    if sep == "":
        parts = list(s)
        if 0 < n < len(parts):
            parts = parts[:n - 1] + ["".join(parts[n - 1:])]
        return tuple(parts)
    return tuple(s.split(sep, n - 1) if n > 0 else s.split(sep))


def _replace(s, old, new, *limit):
    s, old, new = (_string(x, "replace") for x in (s, old, new))
    n = _int(limit[0], "replace") if limit else -1
    return s.replace(old, new) if n < 0 else s.replace(old, new, n)


def _join(items, *sep):
    if not isinstance(items, (tuple, list)):
        raise _EvalError(f"no such overload: {_type_name(items)}.join")
    return (_string(sep[0], "join") if sep else "").join(_string(x, "join") for x in items)


def _find(s, pattern) -> str:
    """Kubernetes' regex library: the leftmost match, "" when none."""
    m = _regex(_string(pattern, "find")).search(_string(s, "find"))
    return m.group(0) if m else ""


def _find_all(s, pattern, *limit) -> tuple:
    """Kubernetes' regex library: successive non-overlapping matches (at
    most ``limit`` when it is >= 0), an empty match right after the
    previous match left out, as Go's ``FindAllString`` has them."""
    text, rx = _string(s, "findAll"), _regex(_string(pattern, "findAll"))
    n = _int(limit[0], "findAll") if limit else -1
    out: list[str] = []
    pos, prev_end = 0, -1
    while pos <= len(text) and (n < 0 or len(out) < n):
        m = rx.search(text, pos)
        if m is None:
            break
        if m.start() == m.end() == prev_end:
            pos = m.end() + 1           # empty, right after a match: skipped
            continue
        out.append(m.group(0))
        prev_end = m.end()
        pos = m.end() if m.end() > m.start() else m.end() + 1
    return tuple(out)


def _ascii_case(s, fn: str, upper: bool) -> str:
    s = _string(s, fn)
    return "".join((c.upper() if upper else c.lower()) if c.isascii() else c for c in s)


def _char_at(s, i):
    s = _string(s, "charAt")
    i = _index_in(s, _int(i, "charAt"), "charAt")
    return s[i:i + 1]


def _optional(v, fn: str) -> CelOptional:
    if not isinstance(v, CelOptional):
        raise _EvalError(f"no such overload: {_type_name(v)}.{fn}")
    return v


def _optional_value(v):
    o = _optional(v, "value")
    if not o.has_value:
        raise _EvalError("optional.none() dereference")
    return o.value


METHODS = {
    "matches": lambda s, p: (
        _regex(_string(p, "matches")).search(_string(s, "matches")) is not None
    ),
    "startsWith": lambda s, p: _string(s, "startsWith").startswith(_string(p, "startsWith")),
    "endsWith": lambda s, p: _string(s, "endsWith").endswith(_string(p, "endsWith")),
    "contains": lambda s, p: _string(p, "contains") in _string(s, "contains"),
    "compareTo": _compare_to,
    "isGreaterThan": lambda a, b: _compare_to(a, b) > 0,
    "isLessThan": lambda a, b: _compare_to(a, b) < 0,
    "isInteger": lambda q: _quantity_of(q, "isInteger").value.denominator == 1,
    "asInteger": lambda q: _as_integer(_quantity_of(q, "asInteger")),
    "asApproximateFloat": lambda q: float(_quantity_of(q, "asApproximateFloat").value),
    "sign": lambda q: (lambda v: (v > 0) - (v < 0))(_quantity_of(q, "sign").value),
    "add": lambda q, o: Quantity(_quantity_of(q, "add").value + _addend(o, "add")),
    "sub": lambda q, o: Quantity(_quantity_of(q, "sub").value - _addend(o, "sub")),
    "major": lambda v: _semver_of(v, "major").major,
    "minor": lambda v: _semver_of(v, "minor").minor,
    "patch": lambda v: _semver_of(v, "patch").patch,
    # the strings extension of Kubernetes' CEL environment (code points)
    "lowerAscii": lambda s: _ascii_case(s, "lowerAscii", False),
    "upperAscii": lambda s: _ascii_case(s, "upperAscii", True),
    "trim": lambda s: _string(s, "trim").strip(),
    "replace": _replace,
    "split": _split,
    "substring": _substring,
    # on a string the strings extension's, on a list the lists library's
    "indexOf": lambda s, sub, *o: (LIST_METHODS["indexOf"](s, sub, *o)
                                   if isinstance(s, (tuple, list)) else _index_of(s, sub, *o)),
    "lastIndexOf": lambda s, sub, *o: (LIST_METHODS["lastIndexOf"](s, sub, *o)
                                       if isinstance(s, (tuple, list))
                                       else _index_of(s, sub, *o, last=True)),
    # Kubernetes' lists library
    "isSorted": LIST_METHODS["isSorted"],
    "sum": LIST_METHODS["sum"],
    "min": LIST_METHODS["min"],
    "max": LIST_METHODS["max"],
    # cel-go's lists extension (version 3)
    **LISTS_EXT_METHODS,
    # Kubernetes' IP, CIDR and URL libraries
    **NET_METHODS,
    **URL_METHODS,
    # Kubernetes' named-format library (format.dns1123Label().validate(s))
    **NAMED_FORMAT_METHODS,
    "charAt": _char_at,
    # the strings extension at version 2 (format: dra_cel_format)
    "format": format_string,
    # Kubernetes' regex library
    "find": _find,
    "findAll": _find_all,
    "join": _join,
    # cel-go's optional library (orValue gives a receiver that is not
    # optional back unchanged, as cel-go's evaluation does)
    "hasValue": lambda v: _optional(v, "hasValue").has_value,
    "value": _optional_value,
    "orValue": lambda v, d: (v.value if v.has_value else d) if isinstance(v, CelOptional) else v,
}
FUNCTIONS = {
    "quantity": _make_quantity,
    "semver": _make_semver,
    "isQuantity": lambda t: _is_valid(_make_quantity, t),
    "isSemver": lambda t: _is_valid(_make_semver, t),
    # cel-go's sets extension
    **SET_FUNCTIONS,
    "strings.quote": quote,
    **NET_FUNCTIONS,
    **URL_FUNCTIONS,
    **NAMED_FORMAT_FUNCTIONS,
    **LISTS_EXT_FUNCTIONS,
}


# --------------------------------------------------------------------------
# parsing (cel-python's grammar) into a small tree we can compile


def celpy_module():
    try:
        import celpy
    except ImportError:  # pragma: no cover - a packaging problem, reported clearly
        raise CelError(
            "CEL device selectors need the cel-python package (pip install 'tensorsched[dra]')"
        ) from None
    return celpy


@lru_cache(maxsize=1)
def _environment():
    celpy = celpy_module()
    # the optional forms (cel-go's optional library) and the runtime cost
    # limit on cel-python: modules that need cel-python, so imported once it
    # is known to be there
    from .dra_cel_fast import FastRunner

    return celpy.Environment(runner_class=FastRunner)


def parse_expression(text: str):
    """cel-python's parse tree of ``text`` with the optional syntax
    (``dra_cel_syntax.parse``); celpy.CELParseError on a syntax error."""
    celpy_module()
    from .dra_cel_syntax import parse

    return parse(text)


CHAIN_RULES = {
    "expr",
    "conditionalor",
    "conditionaland",
    "relation",
    "addition",
    "multiplication",
    "unary",
    "member",
    "primary",
}
RELATIONS = {
    "relation_eq": "==",
    "relation_ne": "!=",
    "relation_lt": "<",
    "relation_le": "<=",
    "relation_gt": ">",
    "relation_ge": ">=",
    "relation_in": "in",
}


#: CEL's comprehension macros: ``dra_cel_values.MACROS``


#: functions whose result is not bounded by the expression's length
#: (``lists.range(n)``, ``s.replace("", long)``): never compiled into
#: columns, so that cel-python evaluates them under the runtime cost limit
#: (``dra_cel_cost``).  Every form compiled here reads values of at most
#: the API's sizes and constants of the expression's length: its cost
#: stays far below the limit, which it therefore never checks.
UNBOUNDED = ("lists.range", "replace")


class Opaque(Exception):
    """A form the column compiler does not know (cel-python evaluates it)."""


def literal_value(token):
    """A literal token's value (cel-python's own evaluation)."""
    import lark

    celpy = celpy_module()
    tree = lark.Tree("literal", [token])
    for name in (
        "primary",
        "member",
        "unary",
        "multiplication",
        "addition",
        "relation",
        "conditionaland",
        "conditionalor",
        "expr",
    ):
        tree = lark.Tree(name, [tree])
    value = _environment().program(tree).evaluate({})
    return _from_cel(value, celpy)


def _from_cel(value, celpy):
    t = celpy.celtypes
    if isinstance(value, t.BoolType):
        return bool(value)
    if isinstance(value, (t.IntType, t.UintType)):
        return int(value)
    if isinstance(value, t.DoubleType):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (bool, int, float)):
        return value
    if value is None:
        return None
    raise Opaque(type(value).__name__)


def _translate(node, bound: frozenset):
    """lark tree -> nested tuples (see ``_Compiler``); raises Opaque for
    forms outside the compiled subset, CelError for undeclared names."""
    import lark

    while isinstance(node, lark.Tree) and node.data in CHAIN_RULES and len(node.children) == 1:
        node = node.children[0]
    if not isinstance(node, lark.Tree):
        raise Opaque(str(node))
    d, ch = node.data, node.children
    if d == "conditionalor":
        return ("or", _translate(ch[0], bound), _translate(ch[1], bound))
    if d == "conditionaland":
        return ("and", _translate(ch[0], bound), _translate(ch[1], bound))
    if d == "relation":
        op_node, rhs = ch
        return (
            "cmp",
            RELATIONS[op_node.data],
            _translate(op_node.children[0], bound),
            _translate(rhs, bound),
        )
    if d == "unary":
        if ch[0].data == "unary_not":
            return ("not", _translate(ch[1], bound))
        raise Opaque("unary")
    if d == "literal":
        return ("lit", literal_value(ch[0]))
    if d == "paren_expr":
        return _translate(ch[0], bound)
    if d == "list_lit":
        items = ch[0].children if ch else []
        return ("list", tuple(_translate(i, bound) for i in items))
    if d == "ident":
        name = str(ch[0])
        if name == "device":
            return ("device",)
        if name in bound:
            raise Opaque("bound variable")
        raise CelError(
            f"compilation failed: ERROR: <input>:{ch[0].line}:{ch[0].column}: "
            f"undeclared reference to '{name}' (in container '')"
        )
    if d == "ident_arg":
        name = str(ch[0])
        if name in UNBOUNDED:
            # its cost grows with its argument: cel-python evaluates it, under
            # the runtime cost limit (every form compiled here is bounded by
            # the expression's length, far below the limit)
            raise Opaque(name)
        args = tuple(_translate(a, bound) for a in (ch[1].children if len(ch) > 1 else ()))
        if name in FUNCTIONS and not _takes(FUNCTIONS[name], len(args)):
            raise Opaque(name)
        return ("call", name, None, args)
    if d == "member_dot":
        target = _translate(ch[0], bound)
        field = str(ch[1])
        if target == ("device",):
            if field == "driver":
                return ("leaf", ("driver",))
            if field == "allowMultipleAllocations":
                return ("leaf", ("multi",))
            if field in ("attributes", "capacity"):
                return ("map", field)
            raise Opaque(f"device.{field}")
        if target[0] == "domain":
            return ("leaf", (target[1], f"{target[2]}/{field}"))
        raise Opaque("member")
    if d == "member_index":
        target = _translate(ch[0], bound)
        key = _translate(ch[1], bound)
        if key[0] != "lit" or not isinstance(key[1], str):
            raise Opaque("index")
        if target[0] == "map":
            return ("domain", "attr" if target[1] == "attributes" else "cap", key[1])
        if target[0] == "domain":
            return ("leaf", (target[1], f"{target[2]}/{key[1]}"))
        raise Opaque("index")
    if d in ("member_dot_opt", "member_index_opt"):
        # x.?f / x[?"f"] on one attribute or capacity domain: an optional
        # leaf (none where the device has no such value)
        target = _translate(ch[0], bound)
        if d == "member_dot_opt":
            field = str(ch[1])
        else:
            key = _translate(ch[1], bound)
            if key[0] != "lit" or not isinstance(key[1], str):
                raise Opaque("index")
            field = key[1]
        if target[0] == "domain":
            return ("optleaf", (target[1], f"{target[2]}/{field}"))
        raise Opaque("optional selection")
    if d == "member_dot_arg":
        target_node, method = ch[0], str(ch[1])
        args_node = ch[2] if len(ch) > 2 else None
        if method == "bind" and _is_ident(target_node, "cel") and args_node is not None:
            # cel.bind(name, init, body): fine for cel-python, not compiled here;
            # still check the body for undeclared names
            name = ident_name(args_node.children[0])
            for sub in args_node.children[1:]:
                _check_names(sub, bound | {name})
            raise Opaque("cel.bind")
        if method in MACROS or is_two_variable(method, args_node):
            raise Opaque(method)       # binds a variable: cel-python evaluates it
        target = _translate(target_node, bound)
        args = tuple(_translate(a, bound) for a in (args_node.children if args_node else ()))
        if method in UNBOUNDED or (method in METHODS
                                   and not _takes(METHODS[method], 1 + len(args))):
            raise Opaque(method)
        return ("call", method, target, args)
    raise Opaque(d)


def expand_binds(tree):
    """``cel.bind(x, init, body)`` (cel-go's bindings extension, which
    Kubernetes enables) -> ``body`` with ``(init)`` for every ``x``; neither
    cel-python nor our compiler knows the macro.  The expansion and the
    reads are marked (``BindExpr``, ``BindRead``) for the cost tracker."""
    import copy

    import lark

    from .dra_cel_syntax import BindExpr, BindRead

    def rebuild(node, children):
        new = type(node)(node.data, children, node.meta)
        if isinstance(node, BindExpr):
            new.init = node.init
        return new

    def substitute(node, name, init):
        if not isinstance(node, lark.Tree):
            return node
        if (
            node.data == "primary"
            and len(node.children) == 1
            and isinstance(node.children[0], lark.Tree)
            and node.children[0].data == "ident"
            and str(node.children[0].children[0]) == name
        ):
            return BindRead("primary", [lark.Tree("paren_expr", [copy.deepcopy(init)])])
        new = rebuild(node, [substitute(c, name, init) for c in node.children])
        if isinstance(node, BindExpr):
            new.init = substitute(node.init, name, init)   # an inner bind's init reads x too
        return new

    def visit(node):
        if not isinstance(node, lark.Tree):
            return node
        node = rebuild(node, [visit(c) for c in node.children])
        if (
            node.data == "member_dot_arg"
            and str(node.children[1]) == "bind"
            and _is_ident(node.children[0], "cel")
            and len(node.children) > 2
            and len(node.children[2].children) == 3
        ):
            var, init, body = node.children[2].children
            expanded = BindExpr(
                "primary", [lark.Tree("paren_expr", [substitute(body, ident_name(var), init)])]
            )
            expanded.init = init
            return expanded
        return node

    return visit(tree)


def is_two_variable(method: str, args_node) -> bool:
    """Whether ``x.method(args)`` is one of cel-go's two-variable
    comprehensions (``all(i, v, p)``, ``transformMap(k, v, f, t)``, ...)."""
    return args_node is not None and len(args_node.children) in \
        TWO_VARIABLE_MACROS.get(method, ())


def _is_ident(node, name: str) -> bool:
    import lark

    while isinstance(node, lark.Tree) and node.data in CHAIN_RULES and len(node.children) == 1:
        node = node.children[0]
    return isinstance(node, lark.Tree) and node.data == "ident" and str(node.children[0]) == name


def ident_name(node) -> str:
    import lark

    while isinstance(node, lark.Tree) and len(node.children) == 1 and node.data != "ident":
        node = node.children[0]
    return str(node.children[0]) if isinstance(node, lark.Tree) else str(node)


def _macro_variable(method: str, node) -> str:
    """A comprehension macro's variable: a simple name, else the compile
    error cel-go's parser reports."""
    import lark

    inner = node
    while isinstance(inner, lark.Tree) and len(inner.children) == 1 and inner.data != "ident":
        inner = inner.children[0]
    if isinstance(inner, lark.Tree) and inner.data == "ident":
        return str(inner.children[0])
    message = (f"{method}() variable name must be a simple identifier"
               if method in ("optMap", "optFlatMap") else "argument must be a simple name")
    start = getattr(node.meta, "line", None)
    where = f"{start}:{node.meta.column}" if start is not None else "1:1"
    raise CelError(f"compilation failed: ERROR: <input>:{where}: {message}")


def _takes(fn, count: int) -> bool:
    """Whether ``fn`` takes ``count`` positional arguments (a call with
    another count is left to cel-python, whose answer is no overload)."""
    import inspect

    try:
        inspect.signature(fn).bind(*range(count))
    except TypeError:
        return False
    return True


def _check_names(node, bound) -> None:
    """Undeclared identifiers anywhere in ``node`` are compile errors
    (comprehension variables of macros are allowed)."""
    import lark

    if not isinstance(node, lark.Tree):
        return
    if node.data == "ident":
        name = str(node.children[0])
        if name not in bound and name != "device":
            tok = node.children[0]
            raise CelError(
                f"compilation failed: ERROR: <input>:{tok.line}:{tok.column}: "
                f"undeclared reference to '{name}' (in container '')"
            )
        return
    if node.data == "member_dot_arg" and len(node.children) > 2:
        method = str(node.children[1])
        args = node.children[2].children
        if is_two_variable(method, node.children[2]):
            names = [_macro_variable(method, a) for a in args[:2]]
            _check_names(node.children[0], bound)
            for a in args[2:]:
                _check_names(a, bound | set(names))
            return
        if method in MACROS and args:
            var = _macro_variable(method, args[0])
            _check_names(node.children[0], bound)
            for a in args[1:]:
                _check_names(a, bound | {var})
            return
        if method == "bind" and _is_ident(node.children[0], "cel") and args:
            var = ident_name(args[0])
            for a in args[1:]:
                _check_names(a, bound | {var})
            return
    if node.data == "member_dot" and _is_ident(node.children[0], "cel"):
        return
    if (node.data in ("member_dot", "member_dot_opt") and "device" not in bound
            and _is_ident(node.children[0], "device")):
        tok = node.children[1]
        if str(tok) not in DEVICE_FIELDS:
            # the device is a declared object type: its fields are known
            raise CelError(
                f"compilation failed: ERROR: <input>:{tok.line}:{tok.column}: "
                f"undefined field '{tok}'"
            )
    for c in node.children:
        _check_names(c, bound)


# --------------------------------------------------------------------------
# device values, dictionary-encoded


class DeviceValues:
    """What CEL reads of D devices, dictionary-encoded per leaf.

    ``leaf(key)`` -> (ids int32[D], values list): ``key`` is ``("driver",)``,
    ``("multi",)``, ``("attr", "<domain>/<id>")`` or ``("cap", "<domain>/<id>")``;
    ``values[ids[d]]`` is device d's value (CEL form: int, bool, str,
    :class:`Semver`, :class:`Quantity`, tuple for list attributes), id -1 when
    the device has none.  ``rows(d)`` -> (driver, multi, attrs, caps) of
    device d for cel-python (attrs / caps: {domain: {id: value}})."""

    def __init__(self, n: int, leaves: dict, record):
        self.n = n
        self._leaves = leaves
        self._record = record

    def leaf(self, key) -> tuple[np.ndarray, list]:
        got = self._leaves.get(key)
        if got is None:
            return np.full(self.n, -1, np.int32), []
        return got

    def keys(self):
        return self._leaves.keys()

    def device(self, d: int):
        return self._record(d)


@dataclass
class BoolColumn:
    """A CEL boolean per device: ``value`` bool[D] where ``error`` is -1,
    else ``error`` int32[D] indexes ``messages``."""

    value: np.ndarray
    error: np.ndarray
    messages: list


def _combine(op: str, a: BoolColumn, b: BoolColumn) -> BoolColumn:
    # messages are merged (b's indices shifted past a's)
    msgs = a.messages + b.messages
    b_err = np.where(b.error >= 0, b.error + len(a.messages), -1).astype(np.int32)
    a_ok, b_ok = a.error < 0, b_err < 0
    if op == "and":
        decided = (a_ok & ~a.value) | (b_ok & ~b.value)
        value = a.value & b.value & a_ok & b_ok
        default = False
    else:
        decided = (a_ok & a.value) | (b_ok & b.value)
        value = (a.value & a_ok) | (b.value & b_ok)
        default = True
    error = np.where(decided, -1, np.where(~a_ok, a.error, b_err)).astype(np.int32)
    value = np.where(decided, default, value)
    return BoolColumn(value & (error < 0), error, msgs)


# --------------------------------------------------------------------------
# compiled selectors


@dataclass
class CompiledSelector:
    """One selector expression: ``evaluate(values)`` -> :class:`BoolColumn`."""

    expression: str
    tree: object | None  # our tuple tree (None: cel-python evaluates it)
    program: object  # cel-python program (fallback and reference)
    leaves: tuple  # leaf keys the expression reads (fallback grouping)

    @property
    def compiled(self) -> bool:
        return self.tree is not None

    def evaluate(self, values: DeviceValues) -> BoolColumn:
        if self.tree is not None:
            col = _Evaluator(values).boolean(self.tree)
            return col
        return self._evaluate_grouped(values)

    def _evaluate_grouped(self, values: DeviceValues) -> BoolColumn:
        """cel-python once per distinct tuple of the leaves read (all leaves
        when the expression's reads are not known)."""
        n = values.n
        keys = self.leaves if self.leaves is not None else tuple(sorted(values.keys()))
        if n == 0:
            return BoolColumn(np.zeros(0, bool), np.zeros(0, np.int32), [])
        if keys:
            ids = np.stack([values.leaf(k)[0] for k in keys], axis=1)
            uniq, first, inverse = np.unique(ids, axis=0, return_index=True, return_inverse=True)
            reps = first
        else:
            reps = np.zeros(1, np.int64)
            inverse = np.zeros(n, np.int64)
        inverse = inverse.reshape(-1)
        val = np.zeros(len(reps), bool)
        err = np.full(len(reps), -1, np.int32)
        msgs: list[str] = []
        for i, d in enumerate(reps):
            try:
                val[i] = _run_program(self.program, values.device(int(d)))
            except _EvalError as exc:
                err[i] = len(msgs)
                msgs.append(str(exc))
        return BoolColumn(val[inverse], err[inverse], msgs)


class _Evaluator:
    """Evaluates our tuple tree over all devices (see module docstring)."""

    def __init__(self, values: DeviceValues):
        self.values = values
        self.n = values.n

    def const(self, node):
        """A device-independent subtree's value (raises _EvalError)."""
        kind = node[0]
        if kind == "lit":
            return node[1]
        if kind == "list":
            return tuple(self.const(x) for x in node[1])
        if kind == "call" and node[2] is None and node[1] in FUNCTIONS:
            return FUNCTIONS[node[1]](*[self.const(a) for a in node[3]])
        raise Opaque(kind)

    def unary(self, node):
        """(ids, f) for a node that reads exactly one leaf: f maps a leaf value
        to this node's value (raising _EvalError)."""
        kind = node[0]
        if kind == "leaf":
            key = node[1]
            ident = key[1].split("/", 1)[1] if len(key) > 1 else key[0]

            def get(v, ident=ident):
                if v is _ABSENT:
                    raise _EvalError(f"no such key: {ident}")
                return v

            return key, get
        if kind == "optleaf":
            return node[1], lambda v: NONE if v is _ABSENT else CelOptional(v)
        if kind == "call" and node[2] is not None and node[1] in METHODS:
            key, inner = self.unary(node[2])
            args = [self.const(a) for a in node[3]]
            fn = METHODS[node[1]]
            return key, lambda v: fn(inner(v), *args)
        if kind == "call" and node[2] is None and node[1] in FUNCTIONS:
            # a global function of one device value and constants
            # (``sets.contains(attr, ["a"])``, ``quantity(attr)``)
            reading = [i for i, a in enumerate(node[3]) if _reads_device(a)]
            if len(reading) == 1:
                (at,) = reading
                key, inner = self.unary(node[3][at])
                args = [None if i == at else self.const(a) for i, a in enumerate(node[3])]
                fn = FUNCTIONS[node[1]]

                def call(v, at=at, args=args, fn=fn, inner=inner):
                    return fn(*args[:at], inner(v), *args[at + 1:])

                return key, call
        if kind == "cmp":
            op, lhs, rhs = node[1], node[2], node[3]
            if _reads_device(lhs) and not _reads_device(rhs):
                key, inner = self.unary(lhs)
                c = self.const(rhs)
                return key, _cmp_fn(op, inner, c, left=True)
            if _reads_device(rhs) and not _reads_device(lhs):
                key, inner = self.unary(rhs)
                c = self.const(lhs)
                return key, _cmp_fn(op, inner, c, left=False)
        raise Opaque(kind)

    def boolean(self, node) -> BoolColumn:
        kind = node[0]
        if kind in ("and", "or"):
            return _combine(kind, self.boolean(node[1]), self.boolean(node[2]))
        if kind == "not":
            col = self.boolean(node[1])
            return BoolColumn(~col.value & (col.error < 0), col.error, col.messages)
        if not _reads_device(node):
            try:
                v = self.const(node)
                if not isinstance(v, bool):
                    raise _EvalError(
                        f"CEL result of type {_type_name(v)} could not be converted to bool"
                    )
                return BoolColumn(np.full(self.n, v), np.full(self.n, -1, np.int32), [])
            except _EvalError as exc:
                return BoolColumn(np.zeros(self.n, bool), np.zeros(self.n, np.int32), [str(exc)])
        key, fn = self.unary(node)
        ids, table = self.values.leaf(key)
        # one evaluation per distinct value, then one gather (slot 0 = absent)
        val = np.zeros(len(table) + 1, bool)
        err = np.full(len(table) + 1, -1, np.int32)
        msgs: list[str] = []
        for i, v in enumerate([_ABSENT, *table]):
            try:
                r = fn(v)
                if not isinstance(r, bool):
                    raise _EvalError(f"no such overload: expected bool, got {_type_name(r)}")
                val[i] = r
            except _EvalError as exc:
                err[i] = len(msgs)
                msgs.append(str(exc))
        pos = ids.astype(np.int64) + 1
        return BoolColumn(val[pos], err[pos], msgs)


def _subnodes(node):
    """The child nodes of a tuple-tree node (a leaf's key is not a node)."""
    if node[0] in ("leaf", "optleaf", "lit", "domain", "map", "device"):
        return
    for c in node[1:]:
        if isinstance(c, tuple) and c and isinstance(c[0], str):
            yield c
        elif isinstance(c, tuple):
            yield from (x for x in c if isinstance(x, tuple))


def _reads_device(node) -> bool:
    if node[0] in ("leaf", "optleaf", "device", "map", "domain"):
        return True
    return any(_reads_device(c) for c in _subnodes(node))


def _member(a, b) -> bool:
    """``a in b`` for a list ``b``, with heterogeneous equality."""
    if not isinstance(b, (tuple, list)):
        raise _EvalError(f"no such overload: {_type_name(a)} in {_type_name(b)}")
    return any(cel_equal(a, x) for x in b)


def _cmp_fn(op: str, inner, c, left: bool):
    def f(v):
        v = inner(v)
        a, b = (v, c) if left else (c, v)
        if op == "==":
            return cel_equal(a, b)
        if op == "!=":
            return not cel_equal(a, b)
        if op == "in":
            return _member(a, b)
        return cel_order(op, a, b)

    return f


def _leaves_of(node, out: set) -> bool:
    """Collect the leaf keys a tuple tree reads; False when it reads the
    device in a way we cannot name (then every leaf is relevant)."""
    if node[0] in ("leaf", "optleaf"):
        out.add(node[1])
        return True
    if node[0] in ("device", "map", "domain"):
        return False
    return all([_leaves_of(c, out) for c in _subnodes(node)])


@lru_cache(maxsize=4096)
def compile_selector(expression: str) -> CompiledSelector:
    """Parse and check ``expression``; CelError (upstream's wording) when it
    does not compile."""
    celpy = celpy_module()
    env = _environment()
    from .dra_cel_syntax import TooDeep

    try:
        tree = parse_expression(expression)
    except TooDeep as exc:      # no syntax error: a bound of the walkers after the parser
        raise CelError(f"compilation failed: ERROR: <input>: {exc}") from None
    except celpy.CELParseError as exc:
        raise CelError(f"compilation failed: ERROR: <input>: Syntax error: {exc}") from None
    _check_names(tree, frozenset())
    tree = expand_binds(tree)
    program = env.program(tree, functions=_celpy_functions())
    try:
        ours = _translate(tree, frozenset())
        if ours[0] == "lit" and not isinstance(ours[1], bool):
            raise CelError(f"must evaluate to bool or the unknown type, not {_type_name(ours[1])}")
        _Evaluator(DeviceValues(0, {}, None)).boolean(ours)  # raises Opaque early
    except Opaque:
        ours = None
    leaves: set = set()
    known = _leaves_of(ours, leaves) if ours is not None else _tree_leaves(tree, leaves)
    return CompiledSelector(expression, ours, program, tuple(sorted(leaves)) if known else None)


def _tree_leaves(tree, out: set) -> bool:
    """The leaves an expression cel-python evaluates reads, when every
    device access in it has the plain form (else False: all leaves)."""
    import lark

    ok = True

    def visit(node):
        nonlocal ok
        if not isinstance(node, lark.Tree):
            return
        if node.data in ("member_dot", "member_index", "member_dot_opt", "member_index_opt"):
            try:
                t = _translate(node, frozenset())
                if t[0] in ("leaf", "optleaf"):
                    out.add(t[1])
                    return
            except (Opaque, CelError):
                pass
        if node.data == "ident" and str(node.children[0]) == "device":
            ok = False
        for c in node.children:
            visit(c)

    visit(tree)
    return ok


# --------------------------------------------------------------------------
# cel-python evaluation (fallback and reference)


@lru_cache(maxsize=1)
def _celpy_functions():
    celpy = celpy_module()
    t = celpy.celtypes

    def native(v):
        if isinstance(v, CelOptional):
            return CelOptional(native(v.value)) if v.has_value else v
        if isinstance(v, t.MapType):
            return {native(k): native(x) for k, x in v.items()}
        if hasattr(type(v), "CEL_TYPE"):
            return v                    # a library's value (net.IP, net.CIDR)
        return (
            _from_cel(v, celpy)
            if not isinstance(v, (Quantity, Semver, t.ListType, tuple))
            else (tuple(native(x) for x in v) if isinstance(v, (t.ListType, tuple)) else v)
        )

    def wrap(fn, to_bool=False):
        def call(*args):
            for a in args:
                if isinstance(a, celpy.CELEvalError):
                    return a  # errors propagate through calls
            try:
                r = fn(*[native(a) for a in args])
            except _EvalError as exc:
                return celpy.CELEvalError(str(exc))  # an error value: && / || may absorb it
            except Opaque as exc:
                return celpy.CELEvalError(f"no such overload for {exc}")
            return _to_cel(r, celpy)

        return call

    funcs = {name: wrap(fn) for name, fn in METHODS.items()}
    funcs.update({name: wrap(fn) for name, fn in FUNCTIONS.items()})
    funcs["_==_"] = wrap(cel_equal)
    funcs["_!=_"] = wrap(lambda a, b: not cel_equal(a, b))
    in_list = wrap(lambda a, b: _member(a, b))

    def member(a, b):
        # ``key in map`` asks for the key (device.attributes, one domain's map)
        if isinstance(b, t.MapType) and not isinstance(a, celpy.CELEvalError):
            if not isinstance(a, str):
                return t.BoolType(False)
            return t.BoolType(any(str(k) == str(a) for k in b.keys()))
        return in_list(a, b)

    funcs["_in_"] = member
    to_string = celpy.evaluation.base_functions["string"]

    def string(v):
        # string(ip) / string(cidr): the libraries' overloads
        if getattr(type(v), "CEL_TYPE", None) in ("net.IP", "net.CIDR"):
            return t.StringType(str(v))
        return to_string(v)

    funcs["string"] = string
    for op, name in (("<", "_<_"), ("<=", "_<=_"), (">", "_>_"), (">=", "_>=_")):
        funcs[name] = wrap(lambda a, b, op=op: cel_order(op, a, b))
    from .dra_cel_syntax import optional_functions    # cel-python is there (see above)

    funcs.update(optional_functions(celpy.evaluation.base_functions["_[_]"]))
    return funcs


def _to_cel(v, celpy):
    t = celpy.celtypes
    if isinstance(v, bool):
        return t.BoolType(v)
    if isinstance(v, int):
        return t.IntType(v)
    if isinstance(v, float):
        return t.DoubleType(v)
    if isinstance(v, str):
        return t.StringType(v)
    if isinstance(v, (tuple, list)):
        return t.ListType([_to_cel(x, celpy) for x in v])
    if isinstance(v, dict):
        return t.MapType({_to_cel(k, celpy): _to_cel(x, celpy) for k, x in v.items()})
    if isinstance(v, CelOptional) and v.has_value:
        return CelOptional(_to_cel(v.value, celpy))
    return v  # Quantity, Semver: opaque to cel-python, handled by our functions


def _activation(driver: str, multi: bool, attrs: dict, caps: dict):
    celpy = celpy_module()
    t = celpy.celtypes

    class DomainMap(t.MapType):
        def __getitem__(self, key):
            try:
                return super().__getitem__(key)
            except KeyError:
                return t.MapType({})

    def inner(m):
        return t.MapType({t.StringType(k): _to_cel(v, celpy) for k, v in m.items()})

    return {
        "device": t.MapType(
            {
                t.StringType("driver"): t.StringType(driver),
                t.StringType("allowMultipleAllocations"): t.BoolType(multi),
                t.StringType("attributes"): DomainMap(
                    {t.StringType(k): inner(v) for k, v in attrs.items()}
                ),
                t.StringType("capacity"): DomainMap(
                    {t.StringType(k): inner(v) for k, v in caps.items()}
                ),
            }
        )
    }


def _run_program(program, device) -> bool:
    """Evaluate with cel-python; True/False, or _EvalError."""
    celpy = celpy_module()
    from .dra_cel_cost import LIMIT_EXCEEDED, CostLimitExceeded

    driver, multi, attrs, caps = device
    try:
        result = program.evaluate(_activation(driver, multi, attrs, caps))
    except CostLimitExceeded:
        raise _EvalError(LIMIT_EXCEEDED) from None
    except celpy.CELEvalError as exc:
        raise _EvalError(_celpy_message(exc)) from None
    except (TypeError, ValueError, KeyError, ArithmeticError) as exc:
        raise _EvalError(str(exc)) from None
    if isinstance(result, celpy.CELEvalError):
        raise _EvalError(_celpy_message(result))
    if not isinstance(result, celpy.celtypes.BoolType):
        raise _EvalError(
            f"CEL result of type {type(result).__name__} could not be converted to bool"
        )
    return bool(result)


def _celpy_message(exc) -> str:
    args = getattr(exc, "args", ())
    text = str(args[0] if args else exc).split(" (in activation", 1)[0]
    m = re.match(r"no such member in mapping: '(.*)'", str(text))
    if m:
        return f"no such key: {m.group(1)}"
    return str(text)


def reference_matches(expression: str, driver: str, multi: bool, attrs: dict, caps: dict) -> bool:
    """cel-python's own answer for one device (raises ValueError on a
    runtime error): the oracle of the column compiler's tests."""
    sel = compile_selector(expression)
    try:
        return _run_program(sel.program, (driver, multi, attrs, caps))
    except _EvalError as exc:
        raise ValueError(str(exc)) from None
