"""DRA selectors evaluated by closures instead of cel-python's tree walk,
with the same answers and the same cost units.

cel-python evaluates by visiting its parse tree node by node (a dozen
one-child grammar nodes around every identifier), which costs tens of
microseconds per cost unit: an expression under the runtime cost limit
(1,000,000 units, ``dra_cel_cost``) could take many seconds on one device.
Here the tree is compiled once per expression into nested Python closures
for the forms that carry a long evaluation: literals, variables, ``&&`` /
``||`` / ``!`` / ``?:``, the operators, field selection and indexing, list
literals, and the one-variable comprehensions (``all``, ``exists``,
``exists_one``, ``map``, ``filter``).  Each closure does what
``CostEvaluator`` (over ``OptionalEvaluator`` and cel-python's
``Evaluator``) does for its node: it calls the same function
implementations, builds the same errors and charges the same units to the
same tracker, so the limit trips where it trips there.

Every other node (function and method calls, map literals, the optional
forms, ``has()``, binds, two-variable comprehensions) is evaluated by a
``CostEvaluator`` over that subtree with the variables in scope; a
device-independent subexpression takes its stored value
(``dra_cel_hoist``).  Where a closure meets a value whose handling it does
not repeat (a field selected from something that is not a map), the
evaluation starts again from the beginning on ``CostEvaluator`` alone:
evaluation has no effects, so only the time is lost.
"""

from __future__ import annotations

import operator

import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError

from .dra_cel_call_costs import LIST_CREATE, operator_cost
from .dra_cel_cost import (
    MACRO_ARITIES,
    OPERATOR_SYMBOLS,
    UNCHARGED_CALLS,
    CostEvaluator,
    CostRunner,
    cel_and,
    is_attribute,
    is_variable,
    logical_operand,
    cel_or,
    CostTracker,
    predicate_value,
    unwrap_chain,
)
from .dra_cel_hoist import HoistedValues
from .dra_cel_syntax import BindExpr, BindRead, go_type, macro_name, qualify_if_present
from .dra_cel_values import TWO_VARIABLE_MACROS, CelOptional, CostLimitExceeded

__all__ = ["FastRunner", "compile_closures"]


class _Again(Exception):
    """A value the closures do not handle: evaluate again on
    ``CostEvaluator``."""


IntType = celtypes.IntType
_new_int = int.__new__
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
#: int64 operators computed natively when both operands are ints (``/`` and
#: ``%`` are left to cel-python: truncation and the zero divisor); every
#: one of them costs 1 unit for two ints (``operator_cost``)
_INT_OPS = {"_+_": operator.add, "_-_": operator.sub, "_*_": operator.mul,
            "_<_": operator.lt, "_<=_": operator.le, "_>_": operator.gt, "_>=_": operator.ge,
            "_==_": operator.eq, "_!=_": operator.ne}
_TRUE, _FALSE = celtypes.BoolType(True), celtypes.BoolType(False)
_ONE_CHILD = ("expr", "conditionalor", "conditionaland", "relation", "addition",
              "multiplication", "unary", "member")
_OPS = {"relation_lt": "_<_", "relation_le": "_<=_", "relation_ge": "_>=_",
        "relation_gt": "_>_", "relation_eq": "_==_", "relation_ne": "_!=_",
        "relation_in": "_in_", "addition_add": "_+_", "addition_sub": "_-_",
        "multiplication_div": "_/_", "multiplication_mul": "_*_",
        "multiplication_mod": "_%_"}
_UNARY = {"unary_not": "!_", "unary_neg": "-_"}
#: the Python exceptions cel-python turns into a CEL error per operator
#: family (beyond TypeError), with its message
_CAUGHT = {
    "relation": (),
    "addition": (((ValueError, OverflowError), "return error for overflow"),),
    "multiplication": ((ZeroDivisionError, "modulus or divide by zero"),
                       ((ValueError, OverflowError), "return error for overflow")),
}


class _Compiler:
    """Builds the closures of one expression; each takes (env, tracker):
    ``env`` the variables in scope by name (``device`` and the
    comprehension variables), ``tracker`` the evaluation's cost."""

    def __init__(self, activation, hoisted: HoistedValues):
        self.activation = activation
        self.hoisted = hoisted
        self.helper = CostEvaluator(ast=None, activation=activation, tracker=CostTracker(0))

    # ------------------------------------------------------------ dispatch

    def compile(self, node, scope: frozenset, free: bool = False):
        if id(node) in self.hoisted.roots:
            return self.stored(node)
        if isinstance(node, (BindExpr, BindRead)) or not isinstance(node, lark.Tree):
            return self.in_place(node)
        d, ch = node.data, node.children
        if d in _ONE_CHILD and len(ch) == 1:
            inner = self.compile(ch[0], scope, free)
            if d == "addition" and not _never_plain_list(ch[0]):
                # ``OptionalEvaluator.addition`` turns a Python list (``[1] *
                # false``, a function's) into a CEL list at every addition,
                # the one-operand ones included
                return _as_cel_list(inner)
            return inner
        if d == "primary":
            return self.primary(node, scope, free)
        if d in ("relation", "addition", "multiplication") and len(ch) == 2:
            return self.binary(node, scope)
        if d == "unary" and len(ch) == 2:
            return self.unary(node, scope)
        if d in ("conditionaland", "conditionalor") and len(ch) == 2:
            return self.logical(node, scope)
        if d == "expr" and len(ch) == 3:
            return self.conditional(node, scope)
        if d == "member_dot":
            return self.member_dot(node, scope)
        if d == "member_index":
            return self.member_index(node, scope)
        if d == "member_dot_arg":
            return self.macro(node, scope)
        return self.in_place(node)

    # ------------------------------------------------------------ the escapes

    def in_place(self, node):
        """``CostEvaluator`` over ``node`` with the variables in scope."""
        activation, hoisted = self.activation, self.hoisted

        def run(env, tracker):
            ev = CostEvaluator(ast=node, activation=activation, tracker=tracker, hoisted=hoisted)
            try:
                return ev.evaluate(env)
            except CELEvalError as exc:
                return exc
        return run

    def stored(self, node):
        """A device-independent subexpression's stored value and cost."""
        hoisted, standalone = self.hoisted, self.standalone

        def run(env, tracker):
            got = hoisted.get(node, tracker.limit, standalone)
            if got is None or (got[2] and tracker.quiet):
                raise _Again
            tracker.add(got[1])
            return got[0]
        return run

    def standalone(self, node, limit):
        """``CostEvaluator.standalone`` by closures: (value, cost,
        exceeded) of ``node`` on its own; None: it raised a non-CEL
        error."""
        run = _Compiler(self.activation, _NOTHING_HOISTED).compile(node, frozenset())
        tracker = CostTracker(limit)
        try:
            return run({}, tracker), tracker.cost, False
        except CostLimitExceeded:
            return None, limit + 1, True
        except _Again:
            return self.helper.standalone(node, limit)
        except Exception:               # noqa: BLE001 - re-raised where it is evaluated
            return None

    # ------------------------------------------------------------ primaries

    def primary(self, node, scope, free):
        child = node.children[0]
        kind = child.data if isinstance(child, lark.Tree) else None
        if kind == "literal":
            value = self.helper.visit(node)
            if isinstance(value, CELEvalError):
                return self.in_place(node)
            return lambda env, tracker: value
        if kind == "ident":
            name = str(child.children[0])
            if name not in scope and name != "device":
                return self.in_place(node)
            charge = 0 if free else 1

            def ident(env, tracker):
                try:
                    value = env[name]
                except KeyError:
                    raise _Again from None
                tracker.add(charge)
                return value
            return ident
        if kind == "paren_expr":
            return self.compile(child.children[0], scope)
        if kind == "list_lit" and child.children and isinstance(child.children[0], lark.Tree) \
                and child.children[0].data == "exprlist":
            items = [self.compile(c, scope) for c in child.children[0].children]

            def make_list(env, tracker):
                values = [f(env, tracker) for f in items]
                tracker.add(LIST_CREATE)
                for v in values:
                    if isinstance(v, CELEvalError):
                        return v
                return celtypes.ListType(values)
            return make_list
        return self.in_place(node)

    # ------------------------------------------------------------ operators

    def binary(self, node, scope):
        op_node, right_node = node.children
        left = self.compile(op_node.children[0], scope)
        right = self.compile(right_node, scope)
        func = self.activation.resolve_function(_OPS[op_node.data])
        symbol, caught, family = OPERATOR_SYMBOLS[op_node.data], _CAUGHT[node.data], node.data
        rule = op_node.data

        native = _INT_OPS.get(_OPS[op_node.data])

        def run(env, tracker):
            a = left(env, tracker)
            b = right(env, tracker)
            if native is not None and type(a) is IntType and type(b) is IntType:
                # int64 arithmetic that stays in range and int comparisons,
                # without cel-python's per-call wrappers (the functions'
                # answers for two ints; out of range: its function, its error)
                r = native(int(a), int(b))
                if r is True or r is False:
                    tracker.add(1)              # operator_cost of two ints
                    return _TRUE if r else _FALSE
                if _INT64_MIN <= r <= _INT64_MAX:
                    tracker.add(1)
                    return _new_int(IntType, r)      # IntType(r), already in range
            try:
                value = func(a, b)
            except TypeError as ex:
                value = CELEvalError(
                    f"found no matching overload for {rule!r} applied to '({type(a)}, {type(b)})'",
                    ex.__class__, ex.args, tree=node)
                value.__cause__ = ex
            except Exception as ex:  # noqa: BLE001 - the families cel-python turns into errors
                for kinds, message in caught:
                    if isinstance(ex, kinds):
                        value = CELEvalError(message, ex.__class__, ex.args, tree=node)
                        value.__cause__ = ex
                        break
                else:
                    raise
            if family == "addition" and type(value) is list:
                value = celtypes.ListType(value)
            tracker.add(operator_cost(symbol, a, b))
            return value
        return run

    def unary(self, node, scope):
        op_node, operand_node = node.children
        operand = self.compile(operand_node, scope)
        func = self.activation.resolve_function(_UNARY[op_node.data])
        literal = unwrap_chain(operand_node)
        folded = op_node.data == "unary_neg" and isinstance(literal, lark.Tree) \
            and literal.data == "primary" and isinstance(literal.children[0], lark.Tree) \
            and literal.children[0].data == "literal"
        charge, rule = 0 if folded else 1, op_node.data

        def run(env, tracker):
            v = operand(env, tracker)
            try:
                value = func(v)
            except TypeError as ex:
                value = CELEvalError(
                    f"found no matching overload for {rule!r} applied to '({type(v)})'",
                    ex.__class__, ex.args, tree=node)
                value.__cause__ = ex
            except ValueError as ex:
                value = CELEvalError("return error for overflow", ex.__class__, ex.args,
                                     tree=node)
                value.__cause__ = ex
            tracker.add(charge)
            return value
        return run

    def logical(self, node, scope):
        left = self.compile(node.children[0], scope)
        right = self.compile(node.children[1], scope)
        if node.data == "conditionaland":
            def run(env, tracker):
                a = logical_operand(left(env, tracker), "_&&_")
                if isinstance(a, celtypes.BoolType) and not a:
                    return a
                return cel_and(a, logical_operand(right(env, tracker), "_&&_"))
        else:
            def run(env, tracker):
                a = logical_operand(left(env, tracker), "_||_")
                if isinstance(a, celtypes.BoolType) and a:
                    return a
                return cel_or(a, logical_operand(right(env, tracker), "_||_"))
        return run

    def conditional(self, node, scope):
        cond_node, then_node, else_node = node.children
        cond = self.compile(cond_node, scope)
        # a variable read as a branch is free (``CostEvaluator.expr``)
        then = self.compile(then_node, scope, free=is_variable(unwrap_chain(then_node)))
        other = self.compile(else_node, scope, free=is_variable(unwrap_chain(else_node)))
        func = self.activation.resolve_function("_?_:_")

        def run(env, tracker):
            c = cond(env, tracker)
            a = b = celtypes.BoolType(False)
            if c:
                a = then(env, tracker)
            else:
                b = other(env, tracker)
            try:
                return func(c, a, b)
            except TypeError as ex:
                value = CELEvalError(
                    f"found no matching overload for _?_:_ applied to "
                    f"'({type(c)}, {type(a)}, {type(b)})'", ex.__class__, ex.args, tree=node)
                value.__cause__ = ex
                return value
        return run

    # ------------------------------------------------------------ selections

    def member_dot(self, node, scope):
        target_node, name = node.children
        target = self.compile(target_node, scope)
        charge = 1 if is_attribute(target_node) else 2
        field, key = str(name), celtypes.StringType(str(name))

        def run(env, tracker):
            t = target(env, tracker)
            if isinstance(t, CelOptional):
                value = qualify_if_present(t, key)
            elif isinstance(t, celtypes.MapType):
                try:
                    value = t[field]
                except KeyError:
                    value = CELEvalError(f"no such member in mapping: {field!r}", KeyError, None,
                                         tree=node)
            elif isinstance(t, CELEvalError):
                value = t
            else:
                raise _Again
            tracker.add(charge)
            return value
        return run

    def member_index(self, node, scope):
        target_node, index_node = node.children
        target = self.compile(target_node, scope)
        index = self.compile(index_node, scope)
        func = self.activation.resolve_function("_[_]")
        charge = 1 if is_attribute(target_node) else 2

        def run(env, tracker):
            m = target(env, tracker)
            i = index(env, tracker)
            try:
                value = func(m, i)
            except TypeError as ex:
                value = CELEvalError(
                    f"found no matching overload for _[_] applied to '({type(m)}, {type(i)})'",
                    ex.__class__, ex.args, tree=node)
                value.__cause__ = ex
            except KeyError as ex:
                value = CELEvalError("no such key", ex.__class__, ex.args, tree=node)
                value.__cause__ = ex
            except IndexError as ex:
                value = CELEvalError("invalid_argument", ex.__class__, ex.args, tree=node)
                value.__cause__ = ex
            tracker.add(charge)
            return value
        return run

    # ------------------------------------------------------------ comprehensions

    def macro(self, node, scope):
        """The one-variable comprehensions as ``CostEvaluator._fold``
        evaluates them; any other call in place."""
        method = str(node.children[1])
        args = node.children[2].children if len(node.children) > 2 else []
        if method in UNCHARGED_CALLS or len(args) != 2 or 2 not in MACRO_ARITIES.get(method, ()) \
                or 2 in TWO_VARIABLE_MACROS.get(method, ()):
            return self.in_place(node)
        name = macro_name(args[0])
        target = self.compile(node.children[0], scope)
        body = self.compile(args[1], scope | {name})
        fold = _FOLDS[method]

        def run(env, tracker):
            t = target(env, tracker)
            if isinstance(t, CELEvalError):
                return t
            if not isinstance(t, (celtypes.ListType, celtypes.MapType)):
                return CELEvalError(f"got '{go_type(t)}', expected iterable type")
            saved = env.get(name, _ABSENT)
            try:
                return fold(list(t), env, tracker, name, body)
            finally:
                if saved is _ABSENT:
                    env.pop(name, None)
                else:
                    env[name] = saved
        return run


_ABSENT = object()


def _never_plain_list(node) -> bool:
    """Whether ``node`` is a variable, a literal or a parenthesized
    expression (whose own addition converts): never a Python list."""
    node = unwrap_chain(node)
    return isinstance(node, lark.Tree) and node.data == "primary" and not isinstance(
        node, (BindExpr, BindRead)) and isinstance(node.children[0], lark.Tree) \
        and node.children[0].data in ("ident", "literal", "list_lit", "map_lit")


def _as_cel_list(inner):
    def run(env, tracker):
        value = inner(env, tracker)
        return celtypes.ListType(value) if type(value) is list else value
    return run


class _NoRoots:
    roots = frozenset()


_NOTHING_HOISTED = _NoRoots()


def _all_exists(stop: bool, method: str):
    def fold(items, env, tracker, name, body):
        add = tracker.add
        accu = celtypes.BoolType(not stop)
        for item in items:
            add(3 if stop else 2)               # the loop condition
            if isinstance(accu, celtypes.BoolType) and bool(accu) == stop:
                break
            add(1)
            env[name] = item
            p = predicate_value(body(env, tracker), method)
            accu = cel_or(accu, p) if stop else cel_and(accu, p)
        add(1)
        return accu
    return fold


def _exists_one(items, env, tracker, name, body):
    accu = celtypes.IntType(0)
    for item in items:
        env[name] = item
        p = predicate_value(body(env, tracker), "exists_one")
        if isinstance(p, CELEvalError):
            accu = p if not isinstance(accu, CELEvalError) else accu
        elif p:
            tracker.add(2)
            if not isinstance(accu, CELEvalError):
                accu = celtypes.IntType(accu + 1)
    tracker.add(2)
    return accu if isinstance(accu, CELEvalError) else celtypes.BoolType(accu == 1)


def _map_filter(keep: bool):
    def fold(items, env, tracker, name, body):
        add = tracker.add
        add(LIST_CREATE)
        out = celtypes.ListType()
        error = None
        for item in items:
            env[name] = item
            if keep:
                p = predicate_value(body(env, tracker), "filter")
                if isinstance(p, CELEvalError):
                    error = error or p
                    continue
                if not p:
                    continue
                add(1 + 1 + LIST_CREATE + 1)    # accu + [x]
                value = item
            else:
                value = body(env, tracker)
                add(12)
            if error is not None:
                continue
            if isinstance(value, CELEvalError):
                error = value
            else:
                out.append(value)
        add(1)
        return error if error is not None else out
    return fold


_FOLDS = {"all": _all_exists(False, "all"), "exists": _all_exists(True, "exists"),
          "exists_one": _exists_one, "map": _map_filter(False), "filter": _map_filter(True)}


def compile_closures(ast, activation, hoisted: HoistedValues):
    """The closure of the whole expression: (env, tracker) -> value."""
    return _Compiler(activation, hoisted).compile(ast, frozenset())


class FastRunner(CostRunner):
    """``CostRunner`` evaluating by closures (module doc); ``closures =
    False`` evaluates on ``CostEvaluator`` alone (the reference)."""

    closures = True

    def _run(self, context, limit):
        if self.closures:
            state = self.__dict__.get("_closure")
            if state is None:
                hoisted = self._hoisted_values()
                state = self._closure = compile_closures(self.ast, self.new_activation(),
                                                         hoisted)
            tracker = CostTracker(limit)
            try:
                return state(dict(context or {}), tracker), tracker.cost
            except _Again:
                pass
        return super()._run(context, limit)
