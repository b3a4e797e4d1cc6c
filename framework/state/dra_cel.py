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
comprehensions, Kubernetes' lists, IP and CIDR libraries, the strings
extension's ``format`` and ``strings.quote`` (``dra_cel_lists``,
``dra_cel_net``, ``dra_cel_format``, ``dra_cel_syntax``).

Expressions are parsed with cel-python (``celpy``).  The forms drivers and
users write are then evaluated for every device at once: each comparison,
``in``, string match or quantity/semver method call on one device value and
constants is evaluated once per *distinct value* of that attribute (the
device columns are dictionary-encoded, :class:`DeviceValues`) and gathered
to all devices with one NumPy index; ``&&``, ``||`` and ``!`` combine the
boolean columns with CEL's error rules (``false && error`` is false, ``true ||
error`` is true, otherwise the error wins).  Any other expression is
evaluated by cel-python itself once per distinct tuple of the values it reads
(devices of one model share one evaluation).  Both paths give the same answers
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

cel-python has no type checker; :func:`check_types` stands in for the API
server's on load: with the device's declared types (``driver`` string,
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

from .dra_cel_format import CLAUSE_TYPES, clause_error, format_string, parse_clauses, quote
from .dra_cel_lists import LIST_METHODS, SET_FUNCTIONS
from .dra_cel_net import NET_FUNCTIONS, NET_METHODS
from .dra_cel_values import (
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
    "check_types",
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
    # Kubernetes' IP and CIDR libraries
    **NET_METHODS,
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
}


# --------------------------------------------------------------------------
# parsing (cel-python's grammar) into a small tree we can compile


def _celpy():
    try:
        import celpy
    except ImportError:  # pragma: no cover - a packaging problem, reported clearly
        raise CelError(
            "CEL device selectors need the cel-python package (pip install 'tensorsched[dra]')"
        ) from None
    return celpy


@lru_cache(maxsize=1)
def _environment():
    celpy = _celpy()
    # the optional forms (cel-go's optional library) on cel-python: a module
    # that needs cel-python, so imported once it is known to be there
    from .dra_cel_syntax import OptionalRunner

    return celpy.Environment(runner_class=OptionalRunner)


def _parse(text: str):
    """cel-python's parse tree of ``text`` with the optional syntax
    (``dra_cel_syntax.parse``); celpy.CELParseError on a syntax error."""
    _celpy()
    from .dra_cel_syntax import parse

    return parse(text)


_CHAIN = {
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
_REL = {
    "relation_eq": "==",
    "relation_ne": "!=",
    "relation_lt": "<",
    "relation_le": "<=",
    "relation_gt": ">",
    "relation_ge": ">=",
    "relation_in": "in",
}


#: CEL's comprehension macros (``list.exists(x, ...)``): their first
#: argument names a variable
_MACROS = ("all", "exists", "exists_one", "map", "filter", "optMap", "optFlatMap")


class _Opaque(Exception):
    """A form the column compiler does not know (cel-python evaluates it)."""


def _literal(token):
    """A literal token's value (cel-python's own evaluation)."""
    import lark

    celpy = _celpy()
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
    raise _Opaque(type(value).__name__)


def _translate(node, bound: frozenset):
    """lark tree -> nested tuples (see ``_Compiler``); raises _Opaque for
    forms outside the compiled subset, CelError for undeclared names."""
    import lark

    while isinstance(node, lark.Tree) and node.data in _CHAIN and len(node.children) == 1:
        node = node.children[0]
    if not isinstance(node, lark.Tree):
        raise _Opaque(str(node))
    d, ch = node.data, node.children
    if d == "conditionalor":
        return ("or", _translate(ch[0], bound), _translate(ch[1], bound))
    if d == "conditionaland":
        return ("and", _translate(ch[0], bound), _translate(ch[1], bound))
    if d == "relation":
        op_node, rhs = ch
        return (
            "cmp",
            _REL[op_node.data],
            _translate(op_node.children[0], bound),
            _translate(rhs, bound),
        )
    if d == "unary":
        if ch[0].data == "unary_not":
            return ("not", _translate(ch[1], bound))
        raise _Opaque("unary")
    if d == "literal":
        return ("lit", _literal(ch[0]))
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
            raise _Opaque("bound variable")
        raise CelError(
            f"compilation failed: ERROR: <input>:{ch[0].line}:{ch[0].column}: "
            f"undeclared reference to '{name}' (in container '')"
        )
    if d == "ident_arg":
        name = str(ch[0])
        args = tuple(_translate(a, bound) for a in (ch[1].children if len(ch) > 1 else ()))
        if name in FUNCTIONS and not _takes(FUNCTIONS[name], len(args)):
            raise _Opaque(name)
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
            raise _Opaque(f"device.{field}")
        if target[0] == "domain":
            return ("leaf", (target[1], f"{target[2]}/{field}"))
        raise _Opaque("member")
    if d == "member_index":
        target = _translate(ch[0], bound)
        key = _translate(ch[1], bound)
        if key[0] != "lit" or not isinstance(key[1], str):
            raise _Opaque("index")
        if target[0] == "map":
            return ("domain", "attr" if target[1] == "attributes" else "cap", key[1])
        if target[0] == "domain":
            return ("leaf", (target[1], f"{target[2]}/{key[1]}"))
        raise _Opaque("index")
    if d in ("member_dot_opt", "member_index_opt"):
        # x.?f / x[?"f"] on one attribute or capacity domain: an optional
        # leaf (none where the device has no such value)
        target = _translate(ch[0], bound)
        if d == "member_dot_opt":
            field = str(ch[1])
        else:
            key = _translate(ch[1], bound)
            if key[0] != "lit" or not isinstance(key[1], str):
                raise _Opaque("index")
            field = key[1]
        if target[0] == "domain":
            return ("optleaf", (target[1], f"{target[2]}/{field}"))
        raise _Opaque("optional selection")
    if d == "member_dot_arg":
        target_node, method = ch[0], str(ch[1])
        args_node = ch[2] if len(ch) > 2 else None
        if method == "bind" and _is_ident(target_node, "cel") and args_node is not None:
            # cel.bind(name, init, body): fine for cel-python, not compiled here;
            # still check the body for undeclared names
            name = _ident_name(args_node.children[0])
            for sub in args_node.children[1:]:
                _check_names(sub, bound | {name})
            raise _Opaque("cel.bind")
        if method in _MACROS or _two_variable(method, args_node):
            raise _Opaque(method)       # binds a variable: cel-python evaluates it
        target = _translate(target_node, bound)
        args = tuple(_translate(a, bound) for a in (args_node.children if args_node else ()))
        if method in METHODS and not _takes(METHODS[method], 1 + len(args)):
            raise _Opaque(method)
        return ("call", method, target, args)
    raise _Opaque(d)


def _expand_binds(tree):
    """``cel.bind(x, init, body)`` (cel-go's bindings extension, which
    Kubernetes enables) -> ``body`` with ``(init)`` for every ``x``; neither
    cel-python nor our compiler knows the macro."""
    import copy

    import lark

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
            return lark.Tree("primary", [lark.Tree("paren_expr", [copy.deepcopy(init)])])
        return lark.Tree(node.data, [substitute(c, name, init) for c in node.children], node.meta)

    def visit(node):
        if not isinstance(node, lark.Tree):
            return node
        node = lark.Tree(node.data, [visit(c) for c in node.children], node.meta)
        if (
            node.data == "member_dot_arg"
            and str(node.children[1]) == "bind"
            and _is_ident(node.children[0], "cel")
            and len(node.children) > 2
            and len(node.children[2].children) == 3
        ):
            var, init, body = node.children[2].children
            return lark.Tree(
                "primary", [lark.Tree("paren_expr", [substitute(body, _ident_name(var), init)])]
            )
        return node

    return visit(tree)


def _two_variable(method: str, args_node) -> bool:
    """Whether ``x.method(args)`` is one of cel-go's two-variable
    comprehensions (``all(i, v, p)``, ``transformMap(k, v, f, t)``, ...)."""
    return args_node is not None and len(args_node.children) in \
        TWO_VARIABLE_MACROS.get(method, ())


def _is_ident(node, name: str) -> bool:
    import lark

    while isinstance(node, lark.Tree) and node.data in _CHAIN and len(node.children) == 1:
        node = node.children[0]
    return isinstance(node, lark.Tree) and node.data == "ident" and str(node.children[0]) == name


def _ident_name(node) -> str:
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
        if _two_variable(method, node.children[2]):
            names = [_macro_variable(method, a) for a in args[:2]]
            _check_names(node.children[0], bound)
            for a in args[2:]:
                _check_names(a, bound | set(names))
            return
        if method in _MACROS and args:
            var = _macro_variable(method, args[0])
            _check_names(node.children[0], bound)
            for a in args[1:]:
                _check_names(a, bound | {var})
            return
        if method == "bind" and _is_ident(node.children[0], "cel") and args:
            var = _ident_name(args[0])
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
        raise _Opaque(kind)

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
        raise _Opaque(kind)

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
    celpy = _celpy()
    env = _environment()
    try:
        tree = _parse(expression)
    except celpy.CELParseError as exc:
        raise CelError(f"compilation failed: ERROR: <input>: Syntax error: {exc}") from None
    _check_names(tree, frozenset())
    tree = _expand_binds(tree)
    program = env.program(tree, functions=_celpy_functions())
    try:
        ours = _translate(tree, frozenset())
        if ours[0] == "lit" and not isinstance(ours[1], bool):
            raise CelError(f"must evaluate to bool or the unknown type, not {_type_name(ours[1])}")
        _Evaluator(DeviceValues(0, {}, None)).boolean(ours)  # raises _Opaque early
    except _Opaque:
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
            except (_Opaque, CelError):
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
    celpy = _celpy()
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
            except _Opaque as exc:
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
        if hasattr(type(v), "CEL_TYPE"):
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
    celpy = _celpy()
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
    celpy = _celpy()
    driver, multi, attrs, caps = device
    try:
        result = program.evaluate(_activation(driver, multi, attrs, caps))
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


# --------------------------------------------------------------------------
# static types (what the API server's type checker refuses on create)
#
# Kubernetes declares ``device.driver`` a string, ``allowMultipleAllocations``
# a bool, attribute values dynamic (known only at run time) and capacity
# values quantities, and checks every call against the overloads it knows.
# cel-python has no checker, so a selector such as ``device.driver == 1`` would
# otherwise load and match no device.  The check below infers the types the
# expression makes statically known and refuses only what no overload accepts
# there; anything it cannot type is ``dyn`` and passes, as in cel-go.

#: what this checker cannot type (cel-go's ``dyn``, or a type it does not
#: infer): alike to anything, never refused
_DYN = "dyn"
#: the declared type of attribute values (Kubernetes declares them
#: ``google.protobuf.Any``, which cel-go's errors spell ``any``): dynamic for
#: overloads, but a type of its own in a list or map literal
_ANY = "any"
#: Kubernetes' object types, as cel-go names them
_QUANTITY = "kubernetes.Quantity"
_SEMVER = "kubernetes.Semver"
_DEVICE = "kubernetes.DRADevice"
_IP = "net.IP"
_CIDR = "net.CIDR"
_NUMERIC = ("int", "uint", "double")
#: the device's maps: the API's declared types, in cel-go's spelling
_ATTRS = f"map(string, map(string, {_ANY}))"
_CAPS = f"map(string, map(string, {_QUANTITY}))"
_ATTR_DOMAIN = f"map(string, {_ANY})"
_CAP_DOMAIN = f"map(string, {_QUANTITY})"
_LITERAL_TYPES = {
    "INT_LIT": "int",
    "UINT_LIT": "uint",
    "FLOAT_LIT": "double",
    "STRING_LIT": "string",
    "MLSTRING_LIT": "string",
    "BYTES_LIT": "bytes",
    "MLBYTES_LIT": "bytes",
    "BOOL_LIT": "bool",
    "NULL_LIT": "null_type",
}
#: receiver methods: name -> overloads (receiver, argument types, result)
_METHOD_TYPES = {
    "matches": [("string", ("string",), "bool")],
    "startsWith": [("string", ("string",), "bool")],
    "endsWith": [("string", ("string",), "bool")],
    "contains": [("string", ("string",), "bool")],
    "size": [(t, (), "int") for t in ("string", "bytes", "list", "map")],
    "lowerAscii": [("string", (), "string")],
    "upperAscii": [("string", (), "string")],
    "trim": [("string", (), "string")],
    "replace": [("string", ("string", "string"), "string"),
                ("string", ("string", "string", "int"), "string")],
    "split": [("string", ("string",), "list"), ("string", ("string", "int"), "list")],
    "substring": [("string", ("int",), "string"), ("string", ("int", "int"), "string")],
    # strings extension on strings; Kubernetes' lists library on lists
    "indexOf": [("string", ("string",), "int"), ("string", ("string", "int"), "int"),
                ("list", (_DYN,), "int")],
    "lastIndexOf": [("string", ("string",), "int"), ("string", ("string", "int"), "int"),
                    ("list", (_DYN,), "int")],
    "charAt": [("string", ("int",), "string")],
    "find": [("string", ("string",), "string")],
    # Kubernetes' IP and CIDR libraries
    "family": [(_IP, (), "int")],
    **{name: [(_IP, (), "bool")] for name in (
        "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
        "isGlobalUnicast")},
    "containsIP": [(_CIDR, ("string",), "bool"), (_CIDR, (_IP,), "bool")],
    "containsCIDR": [(_CIDR, ("string",), "bool"), (_CIDR, (_CIDR,), "bool")],
    "ip": [(_CIDR, (), _IP)],
    "masked": [(_CIDR, (), _CIDR)],
    "prefixLength": [(_CIDR, (), "int")],
    "format": [("string", ("list",), "string")],
    "findAll": [("string", ("string",), "list(string)"),
                ("string", ("string", "int"), "list(string)")],
    "isSorted": [("list", (), "bool")],
    "join": [("list", (), "string"), ("list", ("string",), "string")],
    "compareTo": [(_QUANTITY, (_QUANTITY,), "int"), (_SEMVER, (_SEMVER,), "int")],
    "isGreaterThan": [(_QUANTITY, (_QUANTITY,), "bool"), (_SEMVER, (_SEMVER,), "bool")],
    "isLessThan": [(_QUANTITY, (_QUANTITY,), "bool"), (_SEMVER, (_SEMVER,), "bool")],
    "isInteger": [(_QUANTITY, (), "bool")],
    "asInteger": [(_QUANTITY, (), "int")],
    "asApproximateFloat": [(_QUANTITY, (), "double")],
    "sign": [(_QUANTITY, (), "int")],
    "add": [(_QUANTITY, (_QUANTITY,), _QUANTITY), (_QUANTITY, ("int",), _QUANTITY)],
    "sub": [(_QUANTITY, (_QUANTITY,), _QUANTITY), (_QUANTITY, ("int",), _QUANTITY)],
    "major": [(_SEMVER, (), "int")],
    "minor": [(_SEMVER, (), "int")],
    "patch": [(_SEMVER, (), "int")],
}
#: global functions: name -> overloads (argument types, result)
_FUNCTION_TYPES = {
    "quantity": [(("string",), _QUANTITY)],
    "isQuantity": [(("string",), "bool")],
    "semver": [(("string",), _SEMVER), (("string", "bool"), _SEMVER)],
    "isSemver": [(("string",), "bool"), (("string", "bool"), "bool")],
    **{name: [(("list", "list"), "bool")] for name in SET_FUNCTIONS},
    "strings.quote": [(("string",), "string")],
    "ip": [(("string",), _IP)],
    "cidr": [(("string",), _CIDR)],
    **{name: [(("string",), "bool")] for name in ("isIP", "isCIDR", "ip.isCanonical")},
    "size": [((t,), "int") for t in ("string", "bytes", "list", "map")],
}
_ARITHMETIC = {
    "addition_add": ("_+_", ("int", "uint", "double", "string", "bytes", "list")),
    "addition_sub": ("_-_", ("int", "uint", "double")),
    "multiplication_mul": ("_*_", ("int", "uint", "double")),
    "multiplication_div": ("_/_", ("int", "uint", "double")),
    "multiplication_mod": ("_%_", ("int", "uint")),
}
_ORDERED = ("int", "uint", "double", "string", "bytes", "bool", "timestamp", "duration")


def _family(t: str) -> str:
    """A type's kind for overload matching: every map is a map, every list
    a list, every optional an optional."""
    return t.split("(", 1)[0] if t.startswith(("map(", "list(", "optional_type(")) else t


def _element(t: str) -> str:
    """The element type of ``list(T)``, else dyn."""
    return t[5:-1] if t.startswith("list(") else _DYN


def _optional_of(t: str) -> str:
    return f"optional_type({t})"


def _unwrap_optional(t: str) -> tuple[str, bool]:
    """(T, True) for ``optional_type(T)``, else (t, False)."""
    if t.startswith("optional_type("):
        return t[len("optional_type("):-1], True
    return t, False


def _is_dyn(t: str) -> bool:
    """Whether cel-go's checker takes ``t`` for any type (``dyn``, and
    ``any``: the attribute values) when it resolves overloads."""
    return t in (_DYN, _ANY)


def _map_value(t: str) -> str:
    """The value type of a map type (dyn when not spelled out)."""
    params = _params(t) if t.startswith("map(") else []
    return params[1] if len(params) == 2 else _DYN


def _params(t: str) -> list[str]:
    """The parameters of ``name(A, B)`` (nested ones kept whole)."""
    inner = t[t.index("(") + 1:-1] if "(" in t else ""
    out, depth, start = [], 0, 0
    for i, c in enumerate(inner):
        depth += (c == "(") - (c == ")")
        if c == "," and depth == 0:
            out.append(inner[start:i].strip())
            start = i + 1
    if inner:
        out.append(inner[start:].strip())
    return out


def _alike(a: str, b: str) -> bool:
    """Whether two static types may be one type: equal where both are known
    (dyn, this checker's unknown, is alike to anything)."""
    if a == b or _is_dyn(a) or _is_dyn(b):
        return True
    if _family(a) != _family(b) or "(" not in a or "(" not in b:
        return False
    pa, pb = _params(a), _params(b)
    return len(pa) == len(pb) and all(_alike(x, y) for x, y in zip(pa, pb))


def _equivalent(a: str, b: str) -> bool:
    """cel-go's type equivalence, what its homogeneous-literal validator
    asks of a literal's entries: the same type, parameters too; ``any`` is
    a type of its own here (only this checker's unknown is alike to all)."""
    if a == b or _DYN in (a, b):
        return True
    if _family(a) != _family(b) or "(" not in a or "(" not in b:
        return False
    pa, pb = _params(a), _params(b)
    return len(pa) == len(pb) and all(_equivalent(x, y) for x, y in zip(pa, pb))


def _spelled(message: str) -> str:
    """A checker message with its types as cel-go's errors print them
    (its type formatter writes the null type ``null``)."""
    return re.sub(r"\bnull_type\b", "null", message)


def _type_string(t: str) -> str:
    """A type as cel-go's ``Type.String()`` writes it (the result-type
    message): ``any`` is the message type ``google.protobuf.Any``."""
    return re.sub(r"\bany\b", "google.protobuf.Any", t)


def _fits(actual: str, expected: str) -> bool:
    return _is_dyn(actual) or _is_dyn(expected) or _family(actual) == _family(expected)


#: methods of cel-go's optional library: name -> (receiver kind, arguments)
_OPTIONAL_METHODS = {"hasValue": 0, "value": 0, "orValue": 1, "or": 1}
#: comprehension macros whose body is a condition: the operator it feeds
_CONDITION_MACROS = {"all": "_&&_", "exists": "_||_", "exists_one": "_?_:_",
                     "filter": "_?_:_"}


class _TypeChecker:
    """Infers static types over cel-python's parse tree of ``text``; raises
    CelError with cel-go's wording where no overload accepts the operands.
    ``bound`` maps the variables in scope (macro variables) to their types."""

    def __init__(self, text: str):
        self.text = text

    def _where(self, pos: int) -> str:
        line = self.text.count("\n", 0, pos) + 1
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return f"<input>:{line}:{column}"

    def _error(self, pos: int, message: str) -> None:
        raise CelError(f"compilation failed: ERROR: {self._where(pos)}: {_spelled(message)}")

    def _refuse(self, pos: int, name: str, args, receiver=None) -> None:
        sig = "(" + ", ".join(args) + ")"
        if receiver is not None:
            sig = f"{receiver}.{sig}"
        self._error(pos, f"found no matching overload for '{name}' applied to '{sig}'")

    def _operator_pos(self, lhs, op: str) -> int:
        """Where ``op`` follows the operand ``lhs`` (cel-go points at it)."""
        start = getattr(lhs.meta, "end_pos", 0) if isinstance(lhs, _tree_class()) else 0
        found = self.text.find(op, start)
        return found if found >= 0 else start

    def _position(self, node) -> int:
        """Where cel-go locates an expression: a selection at its ``.``, a
        call at its ``(``, anything else where it starts."""
        import lark

        while isinstance(node, lark.Tree) and node.data in _CHAIN and len(node.children) == 1:
            node = node.children[0]
        if not isinstance(node, lark.Tree):
            return 0
        if node.data in ("member_dot", "member_dot_opt"):
            return self.text.rfind(".", 0, node.children[1].start_pos)
        if node.data == "member_dot_arg":
            return self.text.find("(", node.children[1].end_pos)
        return getattr(node.meta, "start_pos", 0)

    def type_of(self, node, bound: dict) -> str:
        import lark

        while isinstance(node, lark.Tree) and node.data in _CHAIN and len(node.children) == 1:
            node = node.children[0]
        if not isinstance(node, lark.Tree):
            return _DYN
        d, ch = node.data, node.children
        if d == "literal":
            return _LITERAL_TYPES.get(ch[0].type, _DYN)
        if d == "paren_expr":
            return self.type_of(ch[0], bound)
        if d == "ident":
            name = str(ch[0])
            if name in bound:
                return bound[name]
            return _DEVICE if name == "device" else _DYN
        if d == "expr":                               # c ? a : b
            cond, a, b = (self.type_of(c, bound) for c in ch)
            if not _fits(cond, "bool"):
                self._refuse(self._operator_pos(ch[0], "?"), "_?_:_", (cond, a, b))
            return a if a == b else _DYN
        if d in ("conditionalor", "conditionaland"):
            op = "_||_" if d == "conditionalor" else "_&&_"
            types = [self.type_of(c, bound) for c in ch]
            if not all(_fits(t, "bool") for t in types):
                self._refuse(self._operator_pos(ch[0], op[1:3]), op, types)
            return "bool"
        if d == "unary":
            t = self.type_of(ch[1], bound)
            if ch[0].data == "unary_not":
                if not _fits(t, "bool"):
                    self._refuse(node.meta.start_pos, "!_", (t,))
                return "bool"
            if not _is_dyn(t) and t not in ("int", "double"):
                self._refuse(node.meta.start_pos, "-_", (t,))
            return t
        if d in ("relation", "addition", "multiplication"):
            return self._binary(ch[0], ch[1], bound)
        if d == "list_lit":
            return self._list(ch[0].children if ch else (), bound)
        if d == "map_lit":
            return self._map(ch[0].children if ch else (), bound)
        if d in ("member_dot", "member_dot_opt"):
            target, optional = _unwrap_optional(self.type_of(ch[0], bound))
            result = self._select(node, target, str(ch[1]))
            return _optional_of(result) if optional or d == "member_dot_opt" else result
        if d in ("member_index", "member_index_opt"):
            target, optional = _unwrap_optional(self.type_of(ch[0], bound))
            key = self.type_of(ch[1], bound)
            result = self._index(node, target, key)
            return _optional_of(result) if optional or d == "member_index_opt" else result
        if d == "ident_arg":
            return self._function(node, bound)
        if d == "member_dot_arg":
            return self._method(node, bound)
        for c in ch:
            self.type_of(c, bound)
        return _DYN

    def _select(self, node, target: str, field: str) -> str:
        if target == _DEVICE:
            return {"driver": "string", "allowMultipleAllocations": "bool",
                    "attributes": _ATTRS, "capacity": _CAPS}.get(field, _DYN)
        if _family(target) == "map":
            return _map_value(target)
        if not _is_dyn(target):
            self._error(self._position(node),
                        f"type '{target}' does not support field selection")
        return _DYN

    def _index(self, node, target: str, key: str) -> str:
        family = _family(target)
        if family == "map":
            params = _params(target)
            if params and not _alike(params[0], key):
                self._refuse(self._operator_pos(node.children[0], "["), "_[_]", (target, key))
            return _map_value(target)
        if family == "list":
            if not _fits(key, "int"):
                self._refuse(self._operator_pos(node.children[0], "["), "_[_]", (target, key))
            return _element(target)
        if not _is_dyn(target) and target != _DEVICE:
            self._refuse(self._operator_pos(node.children[0], "["), "_[_]", (target, key))
        return _DYN

    def _homogeneous(self, nodes, types, exempt=False) -> str:
        """The one element type of a literal's entries (dyn when unknown);
        cel-go's validator refuses a literal mixing known types, ``any`` (an
        attribute value) beside any other type too, except in the
        arguments of ``format`` (``exempt``: there mixed entries are dyn)."""
        known = [(n, t) for n, t in zip(nodes, types) if t != _DYN]
        if not known:
            return _DYN
        first = known[0][1]
        for n, t in known[1:]:
            if not _equivalent(t, first):
                if exempt:
                    return _DYN
                self._error(self._position(n), f"expected type '{first}' but found '{t}'")
        return first if len(known) == len(types) else _DYN

    def _entry_type(self, node, bound, exempt: bool) -> str:
        """An entry's type; a list or map literal inside an exempt one is
        exempt too (cel-go looks through literals for the ``format`` call)."""
        literal = _aggregate(node)
        if exempt and literal is not None:
            children = literal.children[0].children if literal.children else ()
            if literal.data == "list_lit":
                return self._list(children, bound, exempt=True)
            return self._map(children, bound, exempt=True)
        return self.type_of(node, bound)

    def _unwrap_entry(self, node, t: str) -> str:
        """The type of a ``?x`` entry's value (``x`` must be optional)."""
        inner, optional = _unwrap_optional(t)
        if not optional and not _is_dyn(t):
            self._error(self._position(node),
                        f"expected type '{_optional_of(t)}' but found '{t}'")
        return inner

    def _list(self, items, bound, exempt=False) -> str:
        import lark

        nodes, types = [], []
        for item in items:
            if isinstance(item, lark.Tree) and item.data == "opt_elem":
                item = item.children[0]
                t = self._unwrap_entry(item, self.type_of(item, bound))
            else:
                t = self._entry_type(item, bound, exempt)
            nodes.append(item)
            types.append(t)
        return f"list({self._homogeneous(nodes, types, exempt)})"

    def _map(self, items, bound, exempt=False) -> str:
        import lark

        keys, key_types, values, value_types = [], [], [], []
        for key, value in zip(items[0::2], items[1::2]):
            optional = isinstance(key, lark.Tree) and key.data == "opt_key"
            if optional:
                key = key.children[0]
            keys.append(key)
            key_types.append(self.type_of(key, bound))
            t = self._entry_type(value, bound, exempt and not optional)
            values.append(value)
            value_types.append(self._unwrap_entry(value, t) if optional else t)
        k = self._homogeneous(keys, key_types, exempt)
        v = self._homogeneous(values, value_types, exempt)
        return f"map({k}, {v})"

    def _format(self, node, bound) -> str:
        """``"...".format([...])``: the list literal's entries exempt from
        the homogeneous check; with a literal format string and a list
        literal, cel-go's format validator: the clauses parse, each takes
        its argument's type (an attribute value, ``any``, is refused), no
        argument is left over."""
        target_node, arg_node = node.children[0], node.children[2].children[0]
        receiver = self.type_of(target_node, bound)
        arg = self._entry_type(arg_node, bound, exempt=True)
        pos = self._operator_pos(target_node, ".format") + 1
        result = self._resolve(pos, "format", [arg], receiver, _METHOD_TYPES["format"])
        text, items = _string_literal(target_node), _aggregate(arg_node)
        if text is None or items is None or items.data != "list_lit":
            return result
        elements = items.children[0].children if items.children else ()
        clauses, error = parse_clauses(text)
        for n, (clause, _precision, _start, _end) in enumerate(clauses):
            if n >= len(elements):
                self._error(self._position(node), f"index {n} out of range")
            self._format_argument(clause, elements[n], bound)
        if error is not None:
            self._error(self._position(node), error)
        if len(elements) > len(clauses):
            self._error(self._position(node), "too many arguments supplied to string.format "
                        f"(expected {len(clauses)}, got {len(elements)})")
        return result

    def _format_argument(self, clause: str, element, bound) -> None:
        """Whether ``element`` suits ``clause`` (lists and maps for ``%s``
        element by element), as cel-go's format validator asks."""
        t = self._entry_type(element, bound, exempt=True)
        family = _family(t)
        allowed = CLAUSE_TYPES[clause]
        if t != _DYN and family not in allowed:
            given = {"any": "google.protobuf.Any"}.get(family, family)
            self._error(self._position(element), clause_error(clause, given))
        literal = _aggregate(element)
        if clause == "s" and literal is not None and literal.children:
            for child in literal.children[0].children:
                if isinstance(child, _tree_class()) and child.data in ("opt_elem", "opt_key"):
                    child = child.children[0]
                self._format_argument("s", child, bound)

    def _function(self, node, bound) -> str:
        ch = node.children
        name = str(ch[0])
        if name == "has":
            return "bool"
        arg_nodes = ch[1].children if len(ch) > 1 else ()
        args = [self.type_of(a, bound) for a in arg_nodes]
        pos = node.meta.start_pos
        if name in ("optional.of", "optional.ofNonZeroValue") and len(args) == 1:
            return _optional_of(args[0])
        if name == "optional.none" and not args:
            return _optional_of(_DYN)
        if name == "optional.unwrap" and len(args) == 1:
            return self._unwrap_list(pos, name, args[0], None)
        overloads = _FUNCTION_TYPES.get(name)
        if overloads is None:
            return _DYN
        if "." in name:
            # ``sets.contains(...)`` parses as a call on ``sets``: cel-go
            # locates it at its ``(``
            pos = self.text.find("(", pos)
        result = self._resolve(pos, name, args, None, [(None, a, r) for a, r in overloads])
        if name in SET_FUNCTIONS and not _alike(_element(args[0]), _element(args[1])):
            # list(T), list(T): one element type for both
            self._refuse(pos, name, args)
        return result

    def _unwrap_list(self, pos, name, t, receiver) -> str:
        element, optional = _unwrap_optional(_element(t))
        if not _is_dyn(t) and (_family(t) != "list" or not (optional or _is_dyn(element))):
            if receiver is None:
                self._refuse(pos, name, (t,))
            self._refuse(pos, name, (), t)
        return f"list({element})"

    def _macro(self, node, method: str, bound) -> str:
        target_node, args = node.children[0], node.children[2].children
        target = self.type_of(target_node, bound)
        var = _ident_name(args[0])
        pos = self._position(node)
        if method in ("optMap", "optFlatMap"):
            inner, optional = _unwrap_optional(target)
            if not optional and not _is_dyn(target):
                self._refuse(pos, "hasValue", (), target)
            body = self.type_of(args[1], {**bound, var: inner})
            if method == "optMap":
                return _optional_of(body)
            if _unwrap_optional(body)[1] or _is_dyn(body):
                return body if not _is_dyn(body) else _optional_of(_DYN)
            self._refuse(pos, "_?_:_", ("bool", body, _optional_of(_DYN)))
        element = self._range(target_node, target)[1 if _family(target) == "list" else 0]
        body = self.type_of(args[1], {**bound, var: element})
        op = _CONDITION_MACROS.get(method)
        if op is not None and not _fits(body, "bool"):
            if op == "_?_:_":
                rest = ("int", "int") if method == "exists_one" else (f"list({element})",) * 2
                self._refuse(pos, op, (body, *rest))
            self._refuse(pos, op, ("bool", body))
        if method == "map":
            return f"list({body})"
        if method == "filter":
            return f"list({element})"
        return "bool"

    def _range(self, target_node, target: str) -> tuple[str, str]:
        """A comprehension range's two variables' types: (int, T) over
        ``list(T)``, (K, V) over ``map(K, V)``, dyn over a dynamic value;
        cel-go's error over anything else."""
        family = _family(target)
        if family == "list":
            return "int", _element(target)
        if family == "map":
            params = _params(target) if target.startswith("map(") else []
            return tuple(params) if len(params) == 2 else (_DYN, _DYN)
        if _is_dyn(target):
            return _DYN, _DYN
        self._error(self._position(target_node),
                    f"expression of type '{target}' cannot be range of a comprehension "
                    "(must be list, map, or dynamic)")

    def _two_variable_macro(self, node, method: str, bound) -> str:
        """``all(i, v, p)`` and its kin: the variables typed from the range,
        a predicate or filter bool, the transforms' result types."""
        target_node, args = node.children[0], node.children[2].children
        target = self.type_of(target_node, bound)
        first, second = self._range(target_node, target)
        scope = {**bound, _ident_name(args[0]): first, _ident_name(args[1]): second}
        bodies = [self.type_of(a, scope) for a in args[2:]]
        pos = self._position(node)
        if method in ("all", "exists"):
            if not _fits(bodies[0], "bool"):
                self._refuse(pos, "_&&_" if method == "all" else "_||_", ("bool", bodies[0]))
            return "bool"
        if method in ("existsOne", "exists_one"):
            if not _fits(bodies[0], "bool"):
                self._refuse(pos, "_?_:_", (bodies[0], "int", "int"))
            return "bool"
        *keep, result = bodies
        if method == "transformList":
            out = f"list({result})"
        elif method == "transformMap":
            out = f"map({first}, {result})"
        else:
            if not (_is_dyn(result) or _family(result) == "map"):
                self._refuse(pos, "cel.@mapInsert", (f"map({_DYN}, {_DYN})", result))
            out = result if result.startswith("map(") else f"map({_DYN}, {_DYN})"
        if keep and not _fits(keep[0], "bool"):
            self._refuse(pos, "_?_:_", (keep[0], out, out))
        return out

    def _binary(self, op_node, rhs, bound) -> str:
        lhs = op_node.children[0]
        a, b = self.type_of(lhs, bound), self.type_of(rhs, bound)
        kind = op_node.data
        if kind in _REL.keys():
            op = _REL[kind]
            pos = self._operator_pos(lhs, op)
            if op == "in":
                e = _element(b)
                if (not _is_dyn(b) and _family(b) not in ("list", "map")) or (
                        not _is_dyn(a) and not _is_dyn(e) and a != e
                        and not (a in _NUMERIC and e in _NUMERIC)):
                    self._refuse(pos, "@in", (a, b))
                return "bool"
            if op in ("==", "!="):
                if (not _is_dyn(a) and not _is_dyn(b) and "null_type" not in (a, b)
                        and _family(a) != _family(b)
                        and not (a in _NUMERIC and b in _NUMERIC)):
                    self._refuse(pos, f"_{op}_", (a, b))
                return "bool"
            known = [t for t in (a, b) if not _is_dyn(t)]
            if (any(t not in _ORDERED for t in known)
                    or (len(known) == 2 and a != b
                        and not (a in _NUMERIC and b in _NUMERIC))):
                self._refuse(pos, f"_{op}_", (a, b))
            return "bool"
        name, allowed = _ARITHMETIC[kind]
        pos = self._operator_pos(lhs, name[1])
        known = [t for t in (a, b) if not _is_dyn(t)]
        if any(_family(t) not in allowed for t in known) or (
                len(known) == 2 and _family(a) != _family(b)):
            self._refuse(pos, name, (a, b))
        return known[0] if known else _DYN

    def _method(self, node, bound) -> str:
        target_node, method = node.children[0], str(node.children[1])
        arg_nodes = node.children[2].children if len(node.children) > 2 else ()
        if method in _MACROS and len(arg_nodes) == 2:
            return self._macro(node, method, bound)
        if method == "format" and len(arg_nodes) == 1:
            return self._format(node, bound)
        if _two_variable(method, node.children[2] if len(node.children) > 2 else None):
            return self._two_variable_macro(node, method, bound)
        receiver = self.type_of(target_node, bound)
        args = [self.type_of(a, bound) for a in arg_nodes]
        pos = self._operator_pos(target_node, "." + method) + 1
        if method in _OPTIONAL_METHODS and len(args) == _OPTIONAL_METHODS[method]:
            return self._optional_method(pos, method, receiver, args)
        if method in ("first", "last") and not args and (
                _family(receiver) == "list" or _is_dyn(receiver)):
            return _optional_of(_element(receiver))
        if method == "unwrapOpt" and not args:
            return self._unwrap_list(pos, method, receiver, receiver)
        if method in ("sum", "min", "max") and not args:
            # the lists library: a list's element type (numbers for sum)
            allowed = _NUMERIC if method == "sum" else _ORDERED
            element = _element(receiver)
            if not (_is_dyn(receiver) or _family(receiver) == "list"
                    and (_is_dyn(element) or element in allowed)):
                self._refuse(pos, method, args, receiver)
            return element
        overloads = _METHOD_TYPES.get(method)
        if overloads is None:
            return _DYN
        return self._resolve(pos, method, args, receiver, overloads)

    def _optional_method(self, pos, method, receiver, args) -> str:
        inner, optional = _unwrap_optional(receiver)
        if not optional and not _is_dyn(receiver):
            self._refuse(pos, method, args, receiver)
        if method == "hasValue":
            return "bool"
        if method == "value":
            return inner
        (arg,) = args
        if method == "or":
            other, arg_optional = _unwrap_optional(arg)
            if not arg_optional and not _is_dyn(arg) or not _fits(other, inner):
                self._refuse(pos, method, args, receiver)
            return receiver if other == inner else _optional_of(_DYN)
        if not _fits(arg, inner):
            self._refuse(pos, method, args, receiver)
        return inner if inner != _DYN else _DYN

    def _resolve(self, pos, name, args, receiver, overloads) -> str:
        results = {
            result
            for recv, params, result in overloads
            if len(params) == len(args)
            and (recv is None or _fits(receiver, recv))
            and all(_fits(a, p) for a, p in zip(args, params))
        }
        if not results:
            self._refuse(pos, name, args, receiver)
        return results.pop() if len(results) == 1 else _DYN


def _aggregate(node):
    """``node`` when it is a list or map literal (through the grammar's
    one-child chain), else None."""
    import lark

    while isinstance(node, lark.Tree) and node.data in _CHAIN and len(node.children) == 1:
        node = node.children[0]
    if isinstance(node, lark.Tree) and node.data in ("list_lit", "map_lit"):
        return node
    return None


def _string_literal(node) -> str | None:
    """The value of a plain string literal, else None."""
    import lark

    while isinstance(node, lark.Tree) and node.data in _CHAIN and len(node.children) == 1:
        node = node.children[0]
    if (isinstance(node, lark.Tree) and node.data == "literal"
            and node.children[0].type in ("STRING_LIT", "MLSTRING_LIT")):
        try:
            value = _literal(node.children[0])
        except _Opaque:
            return None
        return value if isinstance(value, str) else None
    return None


def _tree_class():
    import lark

    return lark.Tree


def check_types(expression: str) -> None:
    """Refuse what Kubernetes' type checker refuses on create, for the types
    this expression makes statically known: a result that is not bool, an
    operator or function no overload of which takes the operands (e.g.
    ``device.driver == 1``, ``device.capacity["d"].memory > 1``,
    ``device.driver.isGreaterThan(quantity("1"))``).  Attribute values are
    ``any`` (their type is known only at run time): any overload takes
    them, but a list or map literal may not mix one with another type.
    CelError (cel-go's wording) when refused; call after
    :func:`compile_selector` accepted ``expression``."""
    text = expression
    try:
        tree = _expand_binds(_parse(text))
    except _celpy().CELParseError:
        return  # a syntax error is compile_selector's to report
    result = _TypeChecker(text).type_of(tree, {})
    if result not in ("bool", _DYN, _ANY):
        raise CelError(f"must evaluate to bool or the unknown type, not {_type_string(result)}")
