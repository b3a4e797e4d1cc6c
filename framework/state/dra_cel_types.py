"""The static type check of DRA CEL selectors: what the API server's
checker refuses when a DeviceClass, claim or template is created.

Kubernetes declares ``device.driver`` a string, ``allowMultipleAllocations``
a bool, attribute values ``any`` (known only at run time) and capacity values
``kubernetes.Quantity``, and checks every call against the overloads its
libraries declare (``dra_cel`` evaluates them); cel-python has no checker.
:func:`check_types` infers the types an expression makes statically known
and refuses, with cel-go's words, locations and type names, what no overload
accepts there, a literal mixing types (the homogeneous-literal validator)
and a ``format`` call its validator refuses.
"""

from __future__ import annotations

import re

from .dra_cel import (
    CHAIN_RULES,
    MACROS,
    RELATIONS,
    CelError,
    Opaque,
    celpy_module,
    expand_binds,
    ident_name,
    is_two_variable,
    literal_value,
    parse_expression,
)
from .dra_cel_format import CLAUSE_TYPES, clause_error, parse_clauses
from .dra_cel_lists import SET_FUNCTIONS
from .dra_cel_named_formats import FORMAT_NAMES, FORMAT_TYPE

__all__ = ["TypeChecker", "check_types", "element_type", "type_family"]


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
_URL = "kubernetes.URL"
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
    **{name: [(_URL, (), "string")] for name in (
        "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath")},
    "getQuery": [(_URL, (), "map(string, list(string))")],
    "validate": [(FORMAT_TYPE, ("string",), "optional_type(list(string))")],
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
    "url": [(("string",), _URL)],
    "isURL": [(("string",), "bool")],
    **{name: [(("string",), "bool")] for name in ("isIP", "isCIDR", "ip.isCanonical")},
    "size": [((t,), "int") for t in ("string", "bytes", "list", "map")],
    "format.named": [(("string",), f"optional_type({FORMAT_TYPE})")],
    "lists.range": [(("int",), "list(int)")],
    **{f"format.{name}": [((), FORMAT_TYPE)] for name in FORMAT_NAMES},
}
_ARITHMETIC = {
    "addition_add": ("_+_", ("int", "uint", "double", "string", "bytes", "list")),
    "addition_sub": ("_-_", ("int", "uint", "double")),
    "multiplication_mul": ("_*_", ("int", "uint", "double")),
    "multiplication_div": ("_/_", ("int", "uint", "double")),
    "multiplication_mod": ("_%_", ("int", "uint")),
}
_ORDERED = ("int", "uint", "double", "string", "bytes", "bool", "timestamp", "duration")


def type_family(t: str) -> str:
    """A type's kind for overload matching: every map is a map, every list
    a list, every optional an optional."""
    return t.split("(", 1)[0] if t.startswith(("map(", "list(", "optional_type(")) else t


def element_type(t: str) -> str:
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
    if type_family(a) != type_family(b) or "(" not in a or "(" not in b:
        return False
    pa, pb = _params(a), _params(b)
    return len(pa) == len(pb) and all(_alike(x, y) for x, y in zip(pa, pb))


def _equivalent(a: str, b: str) -> bool:
    """cel-go's type equivalence, what its homogeneous-literal validator
    asks of a literal's entries: the same type, parameters too; ``any`` is
    a type of its own here (only this checker's unknown is alike to all)."""
    if a == b or _DYN in (a, b):
        return True
    if type_family(a) != type_family(b) or "(" not in a or "(" not in b:
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
    return _is_dyn(actual) or _is_dyn(expected) or type_family(actual) == type_family(expected)


#: cel-go's lists extension: method -> the argument counts it takes
_LIST_EXT_ARGS = {"slice": (2,), "flatten": (0, 1), "reverse": (0,), "distinct": (0,),
                  "sort": (0,)}
#: methods of cel-go's optional library: name -> (receiver kind, arguments)
_OPTIONAL_METHODS = {"hasValue": 0, "value": 0, "orValue": 1, "or": 1}
#: comprehension macros whose body is a condition: the operator it feeds
_CONDITION_MACROS = {"all": "_&&_", "exists": "_||_", "exists_one": "_?_:_",
                     "filter": "_?_:_"}


class TypeChecker:
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

        while isinstance(node, lark.Tree) and node.data in CHAIN_RULES and len(node.children) == 1:
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

        while isinstance(node, lark.Tree) and node.data in CHAIN_RULES and len(node.children) == 1:
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
        if type_family(target) == "map":
            return _map_value(target)
        if not _is_dyn(target):
            self._error(self._position(node),
                        f"type '{target}' does not support field selection")
        return _DYN

    def _index(self, node, target: str, key: str) -> str:
        family = type_family(target)
        if family == "map":
            params = _params(target)
            if params and not _alike(params[0], key):
                self._refuse(self._operator_pos(node.children[0], "["), "_[_]", (target, key))
            return _map_value(target)
        if family == "list":
            if not _fits(key, "int"):
                self._refuse(self._operator_pos(node.children[0], "["), "_[_]", (target, key))
            return element_type(target)
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
        family = type_family(t)
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
        if name in SET_FUNCTIONS and not _alike(element_type(args[0]), element_type(args[1])):
            # list(T), list(T): one element type for both
            self._refuse(pos, name, args)
        return result

    def _unwrap_list(self, pos, name, t, receiver) -> str:
        element, optional = _unwrap_optional(element_type(t))
        if not _is_dyn(t) and (type_family(t) != "list" or not (optional or _is_dyn(element))):
            if receiver is None:
                self._refuse(pos, name, (t,))
            self._refuse(pos, name, (), t)
        return f"list({element})"

    def _macro(self, node, method: str, bound) -> str:
        target_node, args = node.children[0], node.children[2].children
        target = self.type_of(target_node, bound)
        var = ident_name(args[0])
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
        element = self.range_types(target_node, target)[1 if type_family(target) == "list" else 0]
        body = self.type_of(args[1], {**bound, var: element})
        if method == "sortBy":
            # the keys: one comparable type (cel-go's @sortByAssociatedKeys)
            if type_family(target) == "map" or (not _is_dyn(body) and body not in _ORDERED):
                self._refuse(pos, "@sortByAssociatedKeys", (f"list({body})",), target)
            return target if type_family(target) == "list" else f"list({_DYN})"
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

    def range_types(self, target_node, target: str) -> tuple[str, str]:
        """A comprehension range's two variables' types: (int, T) over
        ``list(T)``, (K, V) over ``map(K, V)``, dyn over a dynamic value;
        cel-go's error over anything else."""
        family = type_family(target)
        if family == "list":
            return "int", element_type(target)
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
        first, second = self.range_types(target_node, target)
        scope = {**bound, ident_name(args[0]): first, ident_name(args[1]): second}
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
            if not (_is_dyn(result) or type_family(result) == "map"):
                self._refuse(pos, "cel.@mapInsert", (f"map({_DYN}, {_DYN})", result))
            out = result if result.startswith("map(") else f"map({_DYN}, {_DYN})"
        if keep and not _fits(keep[0], "bool"):
            self._refuse(pos, "_?_:_", (keep[0], out, out))
        return out

    def _binary(self, op_node, rhs, bound) -> str:
        lhs = op_node.children[0]
        a, b = self.type_of(lhs, bound), self.type_of(rhs, bound)
        kind = op_node.data
        if kind in RELATIONS.keys():
            op = RELATIONS[kind]
            pos = self._operator_pos(lhs, op)
            if op == "in":
                e = element_type(b)
                if (not _is_dyn(b) and type_family(b) not in ("list", "map")) or (
                        not _is_dyn(a) and not _is_dyn(e) and a != e
                        and not (a in _NUMERIC and e in _NUMERIC)):
                    self._refuse(pos, "@in", (a, b))
                return "bool"
            if op in ("==", "!="):
                if (not _is_dyn(a) and not _is_dyn(b) and "null_type" not in (a, b)
                        and type_family(a) != type_family(b)
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
        if any(type_family(t) not in allowed for t in known) or (
                len(known) == 2 and type_family(a) != type_family(b)):
            self._refuse(pos, name, (a, b))
        return known[0] if known else _DYN

    def _method(self, node, bound) -> str:
        target_node, method = node.children[0], str(node.children[1])
        arg_nodes = node.children[2].children if len(node.children) > 2 else ()
        if method in MACROS and len(arg_nodes) == 2:
            return self._macro(node, method, bound)
        if method == "format" and len(arg_nodes) == 1:
            return self._format(node, bound)
        if is_two_variable(method, node.children[2] if len(node.children) > 2 else None):
            return self._two_variable_macro(node, method, bound)
        receiver = self.type_of(target_node, bound)
        args = [self.type_of(a, bound) for a in arg_nodes]
        pos = self._operator_pos(target_node, "." + method) + 1
        if method in _OPTIONAL_METHODS and len(args) == _OPTIONAL_METHODS[method]:
            return self._optional_method(pos, method, receiver, args)
        if method in ("first", "last") and not args and (
                type_family(receiver) == "list" or _is_dyn(receiver)):
            return _optional_of(element_type(receiver))
        if method == "unwrapOpt" and not args:
            return self._unwrap_list(pos, method, receiver, receiver)
        if method in _LIST_EXT_ARGS and len(args) in _LIST_EXT_ARGS[method]:
            return self._list_ext(pos, method, receiver, args)
        if method in ("sum", "min", "max") and not args:
            # the lists library: a list's element type (numbers for sum)
            allowed = _NUMERIC if method == "sum" else _ORDERED
            element = element_type(receiver)
            if not (_is_dyn(receiver) or type_family(receiver) == "list"
                    and (_is_dyn(element) or element in allowed)):
                self._refuse(pos, method, args, receiver)
            return element
        overloads = _METHOD_TYPES.get(method)
        if overloads is None:
            return _DYN
        return self._resolve(pos, method, args, receiver, overloads)

    def _list_ext(self, pos, method, receiver, args) -> str:
        """cel-go's lists extension: ``slice(int, int)``, ``flatten()`` /
        ``flatten(int)``, ``reverse()``, ``distinct()``, ``sort()`` (of a
        comparable element type) on a list."""
        element = element_type(receiver)
        if not (_is_dyn(receiver) or type_family(receiver) == "list") \
                or any(not _fits(a, "int") for a in args) \
                or (method == "sort" and not _is_dyn(element) and element not in _ORDERED):
            self._refuse(pos, method, args, receiver)
        if method == "flatten":
            if args:
                return f"list({_DYN})"
            inner = element_type(element) if type_family(element) == "list" else _DYN
            if not (_is_dyn(element) or type_family(element) == "list"):
                self._refuse(pos, method, args, receiver)
            return f"list({inner})"
        return receiver if type_family(receiver) == "list" else f"list({_DYN})"

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

    while isinstance(node, lark.Tree) and node.data in CHAIN_RULES and len(node.children) == 1:
        node = node.children[0]
    if isinstance(node, lark.Tree) and node.data in ("list_lit", "map_lit"):
        return node
    return None


def _string_literal(node) -> str | None:
    """The value of a plain string literal, else None."""
    import lark

    while isinstance(node, lark.Tree) and node.data in CHAIN_RULES and len(node.children) == 1:
        node = node.children[0]
    if (isinstance(node, lark.Tree) and node.data == "literal"
            and node.children[0].type in ("STRING_LIT", "MLSTRING_LIT")):
        try:
            value = literal_value(node.children[0])
        except Opaque:
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
        tree = expand_binds(parse_expression(text))
    except celpy_module().CELParseError:
        return  # a syntax error is compile_selector's to report
    result = TypeChecker(text).type_of(tree, {})
    if result not in ("bool", _DYN, _ANY):
        raise CelError(f"must evaluate to bool or the unknown type, not {_type_string(result)}")
