"""CEL's optional syntax and values for DRA selectors, on top of cel-python.

Kubernetes' base CEL environment enables cel-go's optional types (every
version of the library): ``x.?f`` and ``x[?k]`` (the value if the field,
key or index is there, else ``optional.none()``), ``{?k: v}`` and ``[?x]``
(an entry only when the optional ``v`` / ``x`` has a value),
``optional.of`` / ``optional.ofNonZeroValue`` / ``optional.none``, the
methods ``hasValue``, ``value``, ``or``, ``orValue``, the macros
``optMap`` / ``optFlatMap``, the list methods ``first`` / ``last`` and
``optional.unwrap`` / ``unwrapOpt``.  cel-python's grammar has none of
this, so expressions are parsed here with its grammar plus the optional
productions (``parse``) and evaluated by cel-python's evaluator with the
optional forms added (``OptionalEvaluator``, ``optional_functions``).

The rules, in cel-go's words where it has them:

- a selection or index on an optional value is optional itself ("viral"):
  on ``none`` it stays ``none``, on a value it yields the field, key or
  index if present, else ``none``; a plain ``.f`` / ``[k]`` after an
  optional one therefore never fails for a missing key;
- presence: a map has a key (an unknown attribute or capacity domain is an
  empty map, so it is always there, as upstream's device maps answer), a
  list an index ``0 <= i < size``; other values have no fields (``none``);
- ``value()`` on ``none`` is the runtime error ``optional.none()
  dereference`` (the device then does not match, with the error surfaced);
- ``or`` / ``orValue`` evaluate their argument only when the receiver is
  ``none``, and give a receiver that is not optional back unchanged;
- ``optional.ofNonZeroValue(x)`` is ``none`` for ``0``, ``0u``, ``0.0``,
  ``""``, ``b""``, ``false``, ``[]``, ``{}`` and ``null``.

This module needs cel-python and lark (the ``dra`` extra); ``dra_cel``
imports it when it first parses an expression.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import celpy
import lark
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError, Evaluator

from .dra_cel_lists_ext import sort_by_keys
from .dra_cel_named_formats import FORMAT_NAMES
from .dra_cel_values import NONE, CelOptional, CelRuntimeError

__all__ = ["parse", "tree_depth", "TooDeep", "MAX_TREE_DEPTH",
           "BindExpr", "BindRead", "OptionalEvaluator", "OptionalRunner", "optional_functions",
           "go_type", "macro_name",
           "OPTIONAL_GLOBALS", "OPTIONAL_MACROS", "NAMESPACED"]

#: the optional productions cel-go's parser has (``member "." "?" IDENT``,
#: ``member "[" "?" expr "]"``, ``?`` before a list element or a map key)
_OPTIONAL_GRAMMAR = r"""
%override member : member_dot | member_dot_arg | member_index | member_object | primary
                 | member_dot_opt | member_index_opt
member_dot_opt   : member "." "?" IDENT
member_index_opt : member "[" "?" expr "]"
%override list_lit : "[" [list_elems] "]"
list_elems       : list_elem ("," list_elem)*
?list_elem       : expr | "?" expr -> opt_elem
%override mapinits : map_key ":" expr ("," map_key ":" expr)*
?map_key         : expr | "?" expr -> opt_key
"""

#: The deepest parse tree an expression may have.  The compiler, type
#: checker, cost estimator and cel-python's evaluator walk the tree by
#: recursion, a few Python frames a level: past about 400 levels they
#: exhaust Python's stack (a bare RecursionError, at load or in the
#: middle of a scheduling cycle).  300 levels hold 25 repetitions of every
#: recursive rule nested in one another (parentheses, calls, macros, list
#: and map literals, about 11 levels each), twice what the CEL spec asks
#: an implementation to support (12); cel-go refuses past 250 nested
#: expressions likewise ("expression recursion limit exceeded").
MAX_TREE_DEPTH = 300


class TooDeep(CELParseError):
    """An expression whose parse tree is deeper than ``MAX_TREE_DEPTH``."""


#: ``optional.<name>(...)``: the library's global functions
OPTIONAL_GLOBALS = ("of", "ofNonZeroValue", "none", "unwrap")
#: namespaced global functions: namespace -> names (``sets.contains``: the
#: sets extension's)
NAMESPACED = {"optional": OPTIONAL_GLOBALS, "sets": ("contains", "equivalent", "intersects"),
              "strings": ("quote",), "ip": ("isCanonical",),
              "format": ("named", *FORMAT_NAMES), "lists": ("range",)}
#: receiver macros of the library (their first argument names a variable)
OPTIONAL_MACROS = ("optMap", "optFlatMap")


def _bool_literal(token: lark.Token) -> lark.Token:
    """``true`` / ``false`` are literals, not identifiers (cel-python's
    rule), keeping their position for the type checker's messages."""
    if token.value in ("true", "false"):
        return lark.Token.new_borrow_pos("BOOL_LIT", token.value, token)
    return token


@lru_cache(maxsize=1)
def _parser() -> lark.Lark:
    grammar = (Path(celpy.__file__).parent / "cel.lark").read_text()
    return lark.Lark(grammar + _OPTIONAL_GRAMMAR, parser="lalr", start="expr",
                     g_regex_flags=re.M,
                     lexer_callbacks={"IDENT": _bool_literal},
                     propagate_positions=True, maybe_placeholders=False, priority="invert")


def parse(text: str) -> lark.Tree:
    """``text`` as cel-python's parse tree, the optional forms as nodes of
    their own (``member_dot_opt``, ``member_index_opt``, ``opt_elem`` in a
    ``list_elems``, ``opt_key`` in ``mapinits``) and ``optional.of(x)`` as
    the global call ``ident_arg("optional.of", ...)`` (``sets.contains(a, b)``
    likewise, ``NAMESPACED``); CELParseError (with
    cel-python's message) on a syntax error."""
    try:
        tree = _parser().parse(text)
    except (lark.exceptions.UnexpectedToken, lark.exceptions.UnexpectedCharacters) as ex:
        raise CELParseError(ex.get_context(text), *ex.args, line=ex.line,
                            column=ex.column) from None
    except (lark.exceptions.LexError, lark.exceptions.ParseError) as ex:
        raise CELParseError(ex.args[0].splitlines()[0], *ex.args) from None
    depth = tree_depth(tree)
    if depth > MAX_TREE_DEPTH:
        raise TooDeep(f"expression recursion limit exceeded: nested {depth} levels deep, "
                      f"at most {MAX_TREE_DEPTH}")
    return _normalize(tree)


def tree_depth(tree: lark.Tree) -> int:
    """The levels of ``tree`` (a leaf under the root: 2), counted without
    recursion (the tree may be deeper than Python's stack)."""
    best, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        best = max(best, depth)
        if isinstance(node, lark.Tree):
            stack.extend((c, depth + 1) for c in node.children)
    return best


def _normalize(node):
    """Plain list literals keep cel-python's ``exprlist``; the library's
    global functions become global calls."""
    if not isinstance(node, lark.Tree):
        return node
    children = [_normalize(c) for c in node.children]
    if node.data == "list_elems" and not any(
            isinstance(c, lark.Tree) and c.data == "opt_elem" for c in children):
        return lark.Tree("exprlist", children, node.meta)
    if node.data == "member_dot_arg":
        target = children[0]
        while (isinstance(target, lark.Tree) and target.data in ("member", "primary")
               and len(target.children) == 1):
            target = target.children[0]
        if (isinstance(target, lark.Tree) and target.data == "ident"
                and str(children[1]) in NAMESPACED.get(str(target.children[0]), ())):
            tok = children[1]
            name = lark.Token("IDENT", f"{target.children[0]}.{tok}", tok.start_pos, tok.line,
                              tok.column, tok.end_line, tok.end_column, tok.end_pos)
            call = lark.Tree("ident_arg", [name, *children[2:]], node.meta)
            return lark.Tree("primary", [call], node.meta)
    return lark.Tree(node.data, children, node.meta)


class BindExpr(lark.Tree):
    """``cel.bind(x, init, body)`` once expanded: ``body`` with each read of
    ``x`` a :class:`BindRead`; ``init`` kept for its cost (cel-go evaluates
    it once, eagerly)."""

    init = None


class BindRead(lark.Tree):
    """A read of a ``cel.bind`` variable: ``(init)`` in its place."""


# --------------------------------------------------------------------------
# evaluation


def _index(key):
    """A list index from a CEL value (int, uint or an integral double)."""
    if isinstance(key, celtypes.BoolType):
        return None
    if isinstance(key, int):
        return int(key)
    if isinstance(key, float) and float(key).is_integer():
        return int(key)
    return None


def qualify_if_present(obj, key):
    """``obj[?key]`` / ``obj.?key`` (see the module doc)."""
    if isinstance(obj, CELEvalError):
        return obj
    if isinstance(key, CELEvalError):
        return key
    if isinstance(obj, CelOptional):
        if not obj.has_value:
            return obj
        obj = obj.value
    if isinstance(obj, celtypes.MapType):
        try:
            return CelOptional(obj[key])
        except (KeyError, TypeError):
            return NONE
    if isinstance(obj, celtypes.ListType):
        i = _index(key)
        if i is None:
            name = type(key).__name__
            return CELEvalError(f"unsupported index type '{_CEL_NAMES.get(name, name)}' in list")
        return CelOptional(obj[i]) if 0 <= i < len(obj) else NONE
    return NONE


def _is_zero(v) -> bool:
    if v is None:
        return True
    if isinstance(v, (celtypes.BoolType, bool)):
        return not v
    if isinstance(v, (int, float, str, bytes, list, tuple, dict)):
        return not v
    return False       # quantities, semvers: no zero value


def _optional_of(v):
    return v if isinstance(v, CELEvalError) else CelOptional(v)


def _optional_non_zero(v):
    if isinstance(v, CELEvalError):
        return v
    return NONE if _is_zero(v) else CelOptional(v)


_CEL_NAMES = {"BoolType": "bool", "IntType": "int", "UintType": "uint", "DoubleType": "double",
              "StringType": "string", "BytesType": "bytes", "ListType": "list", "MapType": "map",
              "CelOptional": "optional_type", "Quantity": "kubernetes.Quantity",
              "Semver": "kubernetes.Semver", "NoneType": "null_type"}


def _no_overload(fn: str, v) -> CELEvalError:
    name = type(v).__name__
    return CELEvalError(f"no such overload: {_CEL_NAMES.get(name, name)}.{fn}")


def _value(o):
    if isinstance(o, CELEvalError):
        return o
    if not isinstance(o, CelOptional):
        return _no_overload("value", o)
    return o.value if o.has_value else CELEvalError("optional.none() dereference")


def _has_value(o):
    if isinstance(o, CELEvalError):
        return o
    if not isinstance(o, CelOptional):
        return _no_overload("hasValue", o)
    return celtypes.BoolType(o.has_value)


def _end(which: int):
    def end(items):
        if isinstance(items, CELEvalError):
            return items
        if not isinstance(items, (celtypes.ListType, list, tuple)):
            return _no_overload("first" if which == 0 else "last", items)
        return CelOptional(items[which]) if len(items) else NONE
    return end


def _unwrap(items):
    if isinstance(items, CELEvalError):
        return items
    if not isinstance(items, (celtypes.ListType, list, tuple)):
        return _no_overload("optional.unwrap", items)
    out = []
    for v in items:
        if not isinstance(v, CelOptional):
            return CELEvalError(f"value {v} is not optional")
        if v.has_value:
            out.append(v.value)
    return celtypes.ListType(out)


def optional_functions(index) -> dict:
    """The library's functions for cel-python (``index``: the ``_[_]``
    implementation to keep for values that are not optional)."""

    def index_or_optional(obj, key):
        if isinstance(obj, CelOptional):
            return qualify_if_present(obj, key)
        return index(obj, key)

    return {
        "_[_]": index_or_optional,
        "optional.of": _optional_of,
        "optional.ofNonZeroValue": _optional_non_zero,
        "optional.none": lambda: NONE,
        "optional.unwrap": _unwrap,
        "unwrapOpt": _unwrap,
        "value": _value,
        "hasValue": _has_value,
        "first": _end(0),
        "last": _end(-1),
    }


#: CEL's comprehension macros (their range must be a list or a map)
_COMPREHENSIONS = ("all", "exists", "exists_one", "map", "filter")


_GO_TYPES = {"BoolType": "types.Bool", "IntType": "types.Int", "UintType": "types.Uint",
             "DoubleType": "types.Double", "StringType": "types.String",
             "BytesType": "types.Bytes", "Quantity": "cel.Quantity", "Semver": "cel.Semver",
             "CelOptional": "*types.Optional", "NoneType": "types.Null"}


def macro_name(node) -> str:
    """A macro variable's name (the names were checked on compile)."""
    while isinstance(node, lark.Tree) and node.data != "ident":
        node = node.children[0]
    return str(node.children[0])


def go_type(v) -> str:
    """cel-go's name of a value's Go type, as its messages print it."""
    name = type(v).__name__
    return _GO_TYPES.get(name, name)


class OptionalEvaluator(Evaluator):
    """cel-python's evaluator with the optional forms (see the module doc),
    and comprehensions refused over values that are neither lists nor maps
    (cel-python would iterate a string's characters)."""

    def member_dot_opt(self, tree):
        target = self.visit(tree.children[0])
        return qualify_if_present(target, celtypes.StringType(str(tree.children[1])))

    def member_index_opt(self, tree):
        target = self.visit(tree.children[0])
        if isinstance(target, CELEvalError):
            return target
        return qualify_if_present(target, self.visit(tree.children[1]))

    def member_dot(self, tree):
        member_tree, name = tree.children
        target = self.visit(member_tree)
        if isinstance(target, CelOptional):
            return qualify_if_present(target, celtypes.StringType(str(name)))
        if isinstance(target, celtypes.MapType):
            try:
                return target[str(name)]
            except KeyError:
                return CELEvalError(f"no such member in mapping: {str(name)!r}", KeyError, None,
                                    tree=tree)
        if isinstance(target, CELEvalError):
            return target
        return super().member_dot(tree)

    def addition(self, tree):
        """``+`` of two lists is a CEL list (Python's ``+`` gives a plain
        list, which no function takes)."""
        value = super().addition(tree)
        return celtypes.ListType(value) if type(value) is list else value

    def sub_evaluator(self, ast):
        """Macro bodies are evaluated with the optional forms too."""
        return OptionalEvaluator(ast=ast, activation=self.activation)

    def member_dot_arg(self, tree):
        # the comprehensions, one- and two-variable, are evaluated as cel-go
        # evaluates them by ``dra_cel_cost.CostEvaluator``
        method = str(tree.children[1])
        if method == "min":
            # Kubernetes' lists library (cel-python's own min is another)
            target = self.visit(tree.children[0])
            if isinstance(target, CELEvalError):
                return target
            args = [self.visit(a) for a in tree.children[2].children] \
                if len(tree.children) > 2 else []
            return self.method_eval(target, tree.children[1], args)
        if method in ("or", "orValue") and len(tree.children) > 2 \
                and len(tree.children[2].children) == 1:
            lhs = self.visit(tree.children[0])
            if not isinstance(lhs, CelOptional):
                return lhs          # cel-go gives back a receiver that is not optional
            if lhs.has_value:
                return lhs if method == "or" else lhs.value
            rhs = self.visit(tree.children[2].children[0])
            if method == "or" and not isinstance(rhs, (CelOptional, CELEvalError)):
                return _no_overload("or", rhs)
            return rhs
        if method in OPTIONAL_MACROS and len(tree.children) > 2 \
                and len(tree.children[2].children) == 2:
            target = self.visit(tree.children[0])
            if isinstance(target, CELEvalError):
                return target
            if not isinstance(target, CelOptional):
                return _no_overload("hasValue", target)
            if not target.has_value:
                return NONE
            result = self.build_macro_eval(tree)(target.value)
            if method == "optMap" or isinstance(result, CELEvalError):
                return _optional_of(result)
            if not isinstance(result, CelOptional):
                return _no_overload("optFlatMap", result)
            return result
        if method == "sortBy" and len(tree.children) > 2 \
                and len(tree.children[2].children) == 2:
            return self._sort_by(tree)
        if method in _COMPREHENSIONS and len(tree.children) > 2:
            target = self.visit(tree.children[0])
            if not isinstance(target, (celtypes.ListType, celtypes.MapType, CELEvalError)):
                # cel-python would walk a string's characters; cel-go refuses
                return CELEvalError(f"got '{go_type(target)}', expected iterable type")
        return super().member_dot_arg(tree)

    def _sort_by(self, tree):
        """``l.sortBy(v, key)`` (cel-go's lists extension): ``l`` ordered by
        ``key`` evaluated with ``v`` bound to each element."""
        target = self.visit(tree.children[0])
        if isinstance(target, CELEvalError):
            return target
        if not isinstance(target, celtypes.ListType):
            return CELEvalError(f"got '{go_type(target)}', expected iterable type")
        var_node, key_node = tree.children[2].children
        name, body = macro_name(var_node), self.sub_evaluator(key_node)
        keys = []
        for item in target:
            key = body.evaluate({name: item})
            if isinstance(key, CELEvalError):
                return key
            keys.append(key)
        self.sort_keys = keys           # read by the cost tracker
        try:
            return celtypes.ListType(sort_by_keys(target, keys))
        except CelRuntimeError as exc:
            return CELEvalError(str(exc))

    def list_elems(self, tree):
        out = []
        for child in tree.children:
            optional = isinstance(child, lark.Tree) and child.data == "opt_elem"
            v = self.visit(child.children[0] if optional else child)
            if isinstance(v, CELEvalError):
                return v
            if not optional:
                out.append(v)
            elif not isinstance(v, CelOptional):
                return CELEvalError(
                    f"cannot initialize optional list element from non-optional value {v}")
            elif v.has_value:
                out.append(v.value)
        return celtypes.ListType(out)

    def mapinits(self, tree):
        if not any(isinstance(c, lark.Tree) and c.data == "opt_key" for c in tree.children):
            return super().mapinits(tree)
        out = celtypes.MapType()
        items = tree.children
        for key_node, value_node in zip(items[0::2], items[1::2]):
            optional = isinstance(key_node, lark.Tree) and key_node.data == "opt_key"
            key = self.visit(key_node.children[0] if optional else key_node)
            value = self.visit(value_node)
            for v in (key, value):
                if isinstance(v, CELEvalError):
                    return v
            if optional:
                if not isinstance(value, CelOptional):
                    return CELEvalError(
                        f"cannot initialize optional entry '{key}' from non-optional value "
                        f"{value}")
                if not value.has_value:
                    continue
                value = value.value
            if key in out:
                return CELEvalError(f"Failed with repeated key: {key}")
            out[key] = value
        return out


class OptionalRunner(celpy.InterpretedRunner):
    """cel-python's interpreted runner with ``OptionalEvaluator``."""

    def evaluate(self, context):
        return OptionalEvaluator(ast=self.ast, activation=self.new_activation()).evaluate(context)
