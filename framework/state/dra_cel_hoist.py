"""Subexpressions of a selector that read nothing of the device: evaluated
once per expression, not once per device.

A selector is evaluated by cel-python once per distinct tuple of the device
values it reads (``dra_cel.CompiledSelector``).  A subexpression that reads
neither ``device`` nor a comprehension variable bound outside it has one
value for every device (CEL's functions are pure): ``[1, 2, 3].all(x, x >
0)``, or a costly literal comprehension beside a device test.  Its value
and its cost units (``dra_cel_cost``: cel-go charges it on every
evaluation, so the runtime cost limit sees the same totals) are computed
the first time an evaluation reaches it and reused after: the evaluation
takes the stored value and charges the stored cost, in the place where
cel-go would have evaluated it (so ``&&`` / ``||`` / ``?:`` still skip it
where they skip it, and the limit trips at the same subexpression).

Only the maximal such subexpressions are kept, and not those that hold a
``cel.bind`` expansion (its reads are charged by the enclosing bind) or a
bare literal (nothing to save).
"""

from __future__ import annotations

import lark

from .dra_cel_syntax import BindExpr, BindRead
from .dra_cel_values import MACROS, TWO_VARIABLE_MACROS

__all__ = ["HoistedValues", "constant_roots"]

#: parse-tree rules whose node is one value-producing subexpression (the
#: rules that only carry an operator, an argument list or a literal token
#: are not)
_VALUE_RULES = frozenset({
    "expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication",
    "unary", "member", "primary", "member_dot", "member_dot_arg", "member_index",
    "member_dot_opt", "member_index_opt",
})
#: a name standing for "reads a bind variable": never hoisted
_BIND = "\0bind"
_DEVICE = "device"


def _variable_name(node) -> str | None:
    """A macro's variable argument (a bare identifier), else None."""
    while isinstance(node, lark.Tree) and len(node.children) == 1 and node.data != "ident":
        node = node.children[0]
    if isinstance(node, lark.Tree) and node.data == "ident":
        return str(node.children[0])
    return None


def _macro_split(node):
    """(target, variable names, bodies) of a comprehension macro call, else
    None."""
    if node.data != "member_dot_arg" or len(node.children) < 3:
        return None
    method = str(node.children[1])
    args = node.children[2].children
    if len(args) in TWO_VARIABLE_MACROS.get(method, ()):
        count = 2
    elif method in MACROS and args:
        count = 1
    else:
        return None
    names = [_variable_name(a) for a in args[:count]]
    if any(n is None for n in names):
        return None
    return node.children[0], frozenset(names), args[count:]


def _free_names(node, memo: dict) -> frozenset:
    """The identifiers ``node`` reads that it does not bind itself (``_BIND``
    for a ``cel.bind`` expansion or read anywhere in it)."""
    got = memo.get(id(node))
    if got is not None:
        return got
    if isinstance(node, (BindExpr, BindRead)):
        free = frozenset({_BIND})
    elif node.data == "ident":
        free = frozenset({str(node.children[0])})
    else:
        split = _macro_split(node)
        if split is not None:
            target, names, bodies = split
            free = _free_names(target, memo)
            for body in bodies:
                free = free | (_free_names(body, memo) - names)
        else:
            free = frozenset().union(
                *(_free_names(c, memo) for c in node.children if isinstance(c, lark.Tree)))
    memo[id(node)] = free
    return free


def _is_literal(node) -> bool:
    while isinstance(node, lark.Tree) and len(node.children) == 1 and node.data != "literal":
        node = node.children[0]
    return not isinstance(node, lark.Tree) or node.data == "literal"


def constant_roots(tree) -> list:
    """The maximal subexpressions of ``tree`` (cel-python's parse tree after
    ``expand_binds``) that read neither the device nor a variable bound
    outside them, nor a bind: their value is the same for every device."""
    memo: dict = {}
    roots: list = []

    def select(node, outer: frozenset) -> None:
        if not isinstance(node, lark.Tree):
            return
        free = _free_names(node, memo)
        if node.data in _VALUE_RULES and not (free & (outer | {_DEVICE, _BIND})):
            if not _is_literal(node):
                roots.append(node)
            return
        split = _macro_split(node)
        if split is not None:
            target, names, bodies = split
            select(target, outer)
            for body in bodies:
                select(body, outer | names)
            return
        for child in node.children:
            select(child, outer)

    select(tree, frozenset())
    return roots


class HoistedValues:
    """One expression's device-independent subexpressions and, once
    evaluated, their (value, cost units, whether the evaluation passed the
    limit it ran under)."""

    __slots__ = ("roots", "_memo")

    def __init__(self, tree):
        self.roots = frozenset(id(n) for n in constant_roots(tree))
        self._memo: dict = {}

    def get(self, tree, limit, evaluate):
        """(value, cost, exceeded) of the root ``tree``; ``evaluate(tree,
        limit)`` computes it the first time (or again when a larger limit
        asks what a smaller one cut short).  None: evaluate it in place
        (it raised something other than a CEL error)."""
        got = self._memo.get(id(tree))
        if got is None or (got[2] and got[3] < limit):
            got = evaluate(tree, limit)
            if got is None:
                return None
            self._memo[id(tree)] = got = (*got, limit)
        return got[:3]
