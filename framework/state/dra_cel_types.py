"""Static types of DRA CEL selectors: what the API server's type checker
refuses on create (``device.driver == 1``, a result that is not bool),
for the types an expression makes statically known.  cel-python, which
evaluates the selectors (:mod:`dra_cel`), has no checker."""

from __future__ import annotations

from .dra_cel import (
    _CHAIN,
    _MACROS,
    _REL,
    CelError,
    _celpy,
    _desugar_optional,
    _environment,
    _expand_binds,
    _ident_name,
)

__all__ = ["check_types"]


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

_DYN = "dyn"
_NUMERIC = ("int", "uint", "double")
#: the device's maps: the API's declared types, in cel-go's spelling
_ATTRS = "map(string, map(string, dyn))"
_CAPS = "map(string, map(string, quantity))"
_ATTR_DOMAIN = "map(string, dyn)"
_CAP_DOMAIN = "map(string, quantity)"
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
    "join": [("list", (), "string"), ("list", ("string",), "string")],
    "compareTo": [("quantity", ("quantity",), "int"), ("semver", ("semver",), "int")],
    "isGreaterThan": [("quantity", ("quantity",), "bool"), ("semver", ("semver",), "bool")],
    "isLessThan": [("quantity", ("quantity",), "bool"), ("semver", ("semver",), "bool")],
    "isInteger": [("quantity", (), "bool")],
    "asInteger": [("quantity", (), "int")],
    "asApproximateFloat": [("quantity", (), "double")],
    "sign": [("quantity", (), "int")],
    "add": [("quantity", ("quantity",), "quantity"), ("quantity", ("int",), "quantity")],
    "sub": [("quantity", ("quantity",), "quantity"), ("quantity", ("int",), "quantity")],
    "major": [("semver", (), "int")],
    "minor": [("semver", (), "int")],
    "patch": [("semver", (), "int")],
}
#: global functions: name -> overloads (argument types, result)
_FUNCTION_TYPES = {
    "quantity": [(("string",), "quantity")],
    "isQuantity": [(("string",), "bool")],
    "semver": [(("string",), "semver"), (("string", "bool"), "semver")],
    "isSemver": [(("string",), "bool"), (("string", "bool"), "bool")],
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
    a list."""
    return t.split("(", 1)[0] if t.startswith(("map(", "list(")) else t


def _element(t: str) -> str:
    """The element type of ``list(T)``, else dyn."""
    return t[5:-1] if t.startswith("list(") else _DYN


def _fits(actual: str, expected: str) -> bool:
    return actual == _DYN or expected == _DYN or _family(actual) == _family(expected)


class _TypeChecker:
    """Infers static types over cel-python's parse tree of ``text``; raises
    CelError with cel-go's wording where no overload accepts the operands."""

    def __init__(self, text: str):
        self.text = text

    def _where(self, pos: int) -> str:
        line = self.text.count("\n", 0, pos) + 1
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return f"<input>:{line}:{column}"

    def _refuse(self, pos: int, name: str, args, receiver=None) -> None:
        sig = "(" + ", ".join(args) + ")"
        if receiver is not None:
            sig = f"{receiver}.{sig}"
        raise CelError(
            f"compilation failed: ERROR: {self._where(pos)}: "
            f"found no matching overload for '{name}' applied to '{sig}'"
        )

    def _operator_pos(self, lhs, op: str) -> int:
        """Where ``op`` follows the operand ``lhs`` (cel-go points at it)."""
        start = getattr(lhs.meta, "end_pos", 0) if isinstance(lhs, _tree_class()) else 0
        found = self.text.find(op, start)
        return found if found >= 0 else start

    def type_of(self, node, bound: frozenset) -> str:
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
            return "device" if name == "device" and name not in bound else _DYN
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
            if t != _DYN and t not in ("int", "double"):
                self._refuse(node.meta.start_pos, "-_", (t,))
            return t
        if d in ("relation", "addition", "multiplication"):
            return self._binary(ch[0], ch[1], bound)
        if d == "list_lit":
            items = {self.type_of(item, bound) for item in (ch[0].children if ch else ())}
            # a literal of one element type is typed by it, else list(dyn)
            return f"list({items.pop() if len(items) == 1 else _DYN})"
        if d == "map_lit":
            for item in ch[0].children if ch else ():
                self.type_of(item, bound)
            return "map(dyn, dyn)"
        if d == "member_dot":
            target = self.type_of(ch[0], bound)
            field = str(ch[1])
            if target == "device":
                return {"driver": "string", "allowMultipleAllocations": "bool",
                        "attributes": _ATTRS, "capacity": _CAPS}.get(field, _DYN)
            return {_ATTR_DOMAIN: _DYN, _CAP_DOMAIN: "quantity"}.get(target, _DYN)
        if d == "member_index":
            target = self.type_of(ch[0], bound)
            self.type_of(ch[1], bound)
            return {_ATTRS: _ATTR_DOMAIN, _CAPS: _CAP_DOMAIN,
                    _CAP_DOMAIN: "quantity"}.get(target, _DYN)
        if d == "ident_arg":
            name = str(ch[0])
            if name == "has":
                return "bool"
            args = [self.type_of(a, bound) for a in (ch[1].children if len(ch) > 1 else ())]
            overloads = _FUNCTION_TYPES.get(name)
            if overloads is None:
                return _DYN
            return self._resolve(node.meta.start_pos, name, args, None,
                                 [(None, a, r) for a, r in overloads])
        if d == "member_dot_arg":
            return self._method(node, bound)
        for c in ch:
            self.type_of(c, bound)
        return _DYN

    def _binary(self, op_node, rhs, bound) -> str:
        lhs = op_node.children[0]
        a, b = self.type_of(lhs, bound), self.type_of(rhs, bound)
        kind = op_node.data
        if kind in _REL.keys():
            op = _REL[kind]
            pos = self._operator_pos(lhs, op)
            if op == "in":
                e = _element(b)
                if (b != _DYN and _family(b) not in ("list", "map")) or (
                        _DYN not in (a, e) and a != e
                        and not (a in _NUMERIC and e in _NUMERIC)):
                    self._refuse(pos, "@in", (a, b))
                return "bool"
            if op in ("==", "!="):
                if (_DYN not in (a, b) and "null_type" not in (a, b)
                        and _family(a) != _family(b)
                        and not (a in _NUMERIC and b in _NUMERIC)):
                    self._refuse(pos, f"_{op}_", (a, b))
                return "bool"
            known = [t for t in (a, b) if t != _DYN]
            if (any(t not in _ORDERED for t in known)
                    or (len(known) == 2 and a != b
                        and not (a in _NUMERIC and b in _NUMERIC))):
                self._refuse(pos, f"_{op}_", (a, b))
            return "bool"
        name, allowed = _ARITHMETIC[kind]
        pos = self._operator_pos(lhs, name[1])
        known = [t for t in (a, b) if t != _DYN]
        if any(_family(t) not in allowed for t in known) or (
                len(known) == 2 and _family(a) != _family(b)):
            self._refuse(pos, name, (a, b))
        return known[0] if known else _DYN

    def _method(self, node, bound) -> str:
        target_node, method = node.children[0], str(node.children[1])
        arg_nodes = node.children[2].children if len(node.children) > 2 else ()
        if method in _MACROS and arg_nodes:
            self.type_of(target_node, bound)
            inner = bound | {_ident_name(arg_nodes[0])}
            for a in arg_nodes[1:]:
                self.type_of(a, inner)
            return "list" if method in ("map", "filter") else "bool"
        receiver = self.type_of(target_node, bound)
        args = [self.type_of(a, bound) for a in arg_nodes]
        overloads = _METHOD_TYPES.get(method)
        if overloads is None:
            return _DYN
        pos = self._operator_pos(target_node, "." + method) + 1
        return self._resolve(pos, method, args, receiver, overloads)

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


def _tree_class():
    import lark

    return lark.Tree


def check_types(expression: str) -> None:
    """Refuse what Kubernetes' type checker refuses on create, for the types
    this expression makes statically known: a result that is not bool, an
    operator or function no overload of which takes the operands (e.g.
    ``device.driver == 1``, ``device.capacity["d"].memory > 1``,
    ``device.driver.isGreaterThan(quantity("1"))``).  Attribute values are
    dynamic (their type is known only at run time) and never refused.
    CelError (cel-go's wording) when refused; call after
    :func:`compile_selector` accepted ``expression``."""
    text = _desugar_optional(expression)
    try:
        tree = _expand_binds(_environment().compile(text))
    except _celpy().CELParseError:
        return  # a syntax error is compile_selector's to report
    result = _TypeChecker(text).type_of(tree, frozenset())
    if result not in ("bool", _DYN):
        raise CelError(f"must evaluate to bool or the unknown type, not {result}")
