"""The runtime cost limit of DRA selectors, counted as cel-go counts it.

Upstream compiles every selector with a runtime cost limit of
``CELSelectorExpressionMaxCost`` (1,000,000) units; cel-go's cost tracker
adds each step's cost while the expression runs and aborts the evaluation
with ``operation cancelled: actual cost limit exceeded`` the moment the
total passes the limit (a device whose selector fails so is a CEL runtime
error for the allocator, as any other).  The units (``cel-go``'s
``interpreter/runtimecost.go`` with Kubernetes' ``library.CostEstimator``
consulted first, presence tests free):

- a literal 0; an identifier 1; each field selection or index 1 (one
  more for a selection on something that is not a variable, a field or a
  conditional: a call's result, a literal); in a branch of ``c ? a : b``
  a variable read is free;
- ``&&``, ``||``, ``!``... : ``&&`` / ``||`` / ``?:`` nothing (their
  operands as evaluated, left to right, stopping as cel-go stops), every
  other operator or function call 1, except: ``==`` / ``!=`` and string or
  bytes ordering ``ceil(0.1 * min(size))``; string ``+``
  ``ceil(0.1 * (m + n))``; ``in`` a list its size; ``startsWith`` /
  ``endsWith`` / ``format`` / ``strings.quote`` ``ceil(0.1 * size)``;
  ``contains`` and the method ``s.matches(re)`` the products cel-go
  charges (the global ``matches(s, re)`` 1, as its overload); Kubernetes'
  libraries as its estimator charges them (``dra_cel_call_costs``); the sets and
  lists extensions as their trackers do;
- a list literal 10, a map literal 30;
- a comprehension its range, then per element what cel-go's expansion
  evaluates (``all``: 2 for the loop condition, 1 plus the predicate for
  the step, checked again before each further element and stopping at
  the first false; ``exists``: 3 and stopping at the first true; ``map`` /
  ``filter`` / ``transformList``: the appended element's 12 or 13;
  ``transformMap``: 3; ...) and 1 for the result (2 for ``exists_one``).

Sizes are cel-go's: a string's code points, a list's or map's entries, 1
for anything else.  The macros other libraries add cost as cel-go's
expansions do: ``cel.bind(x, init, body)`` 10 for its empty range,
``init`` once, ``body`` with 1 per read of ``x``; ``x.optMap(v, f)``
``x`` twice when it has a value (``hasValue()``, then ``value()`` bound to
``v``); ``l.sortBy(v, key)`` a bind, a ``map`` and the sort's tracker;
``or`` / ``orValue`` nothing of their own (cel-go plans them as steps no
cost case names).  Where an
error cuts an evaluation short the units cel-go would still count after it
(it finishes a comprehension's loop) are not counted: the error is the
answer either way.  An error in a comprehension's predicate or transform is
that step's value, folded into the result as cel-go folds it (``[1,
2].all(x, x / 0 > 1) || true`` is true).
"""

from __future__ import annotations

import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError

from .dra_cel_syntax import (
    OPTIONAL_MACROS,
    BindExpr,
    BindRead,
    OptionalEvaluator,
    OptionalRunner,
    go_type,
    macro_name,
)
from .dra_cel_hoist import HoistedValues
from .dra_cel_call_costs import LIST_CREATE, MAP_CREATE, call_cost, operator_cost, self_compare
from .dra_cel_values import COST_LIMIT, TWO_VARIABLE_MACROS, CelOptional, CostLimitExceeded

__all__ = ["COST_LIMIT", "LIMIT_EXCEEDED", "MACRO_ARITIES", "OPERATOR_SYMBOLS", "UNCHARGED_CALLS",
           "CostLimitExceeded", "CostEvaluator", "CostRunner", "CostTracker", "cel_and", "cel_or",
           "is_attribute", "is_variable", "logical_operand", "predicate_value", "unwrap_chain"]

#: cel-go's error when the limit is passed
LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"



class CostTracker:
    """The running cost; nothing is charged while ``quiet`` (a ``cel.bind``
    variable's read, charged 1 however its substituted init evaluates)."""

    __slots__ = ("cost", "limit", "quiet")

    def __init__(self, limit: int):
        self.cost = 0
        self.limit = limit
        self.quiet = 0

    def add(self, n: int) -> None:
        if self.quiet:
            return
        self.cost += n
        if self.cost > self.limit:
            raise CostLimitExceeded


OPERATOR_SYMBOLS = {"relation_lt": "<", "relation_le": "<=", "relation_gt": ">",
              "relation_ge": ">=", "relation_eq": "==", "relation_ne": "!=",
              "relation_in": "in", "addition_add": "+", "addition_sub": "-",
              "multiplication_mul": "*", "multiplication_div": "/",
              "multiplication_mod": "%"}
_CHAIN = ("expr", "conditionalor", "conditionaland", "relation", "addition",
          "multiplication", "unary", "member")
_SELECTS = ("member_dot", "member_index", "member_dot_opt", "member_index_opt")
#: one-variable comprehension macros: name -> the argument counts they take
MACRO_ARITIES = {"all": (2,), "exists": (2,), "exists_one": (2,), "map": (2, 3), "filter": (2,)}
#: calls that are not charged as a call (``or`` / ``orValue``: cel-go's
#: steps for them are no call; the macros: charged as their expansions)
UNCHARGED_CALLS = ("or", "orValue", "sortBy", *OPTIONAL_MACROS)
#: functions called in the global form that cost 1 whatever their
#: arguments: ``dyn``, and ``matches(s, re)``, whose overload (``matches``)
#: no cost case of cel-go's tracker or Kubernetes' estimator names (only
#: the method's, ``matches_string``, is charged the regex product)
_NOMINAL_GLOBALS = ("dyn", "matches")


def unwrap_chain(node):
    """Through the grammar's one-child rules and parentheses (not into a
    ``cel.bind`` variable's read: a variable)."""
    while isinstance(node, lark.Tree) and not isinstance(node, BindRead):
        if node.data in _CHAIN and len(node.children) == 1:
            node = node.children[0]
        elif node.data == "primary" and isinstance(node.children[0], lark.Tree) \
                and node.children[0].data == "paren_expr":
            node = node.children[0].children[0]
        else:
            break
    return node


def is_variable(node) -> bool:
    return isinstance(node, BindRead) or (
        isinstance(node, lark.Tree) and node.data == "primary"
        and isinstance(node.children[0], lark.Tree) and node.children[0].data == "ident")


def is_attribute(node) -> bool:
    """A variable, a selection chain on one, or a conditional: what cel-go
    plans as an attribute a further selection extends."""
    node = unwrap_chain(node)
    return is_variable(node) or (isinstance(node, lark.Tree) and (
        node.data in _SELECTS or (node.data == "expr" and len(node.children) == 3)))


def _pairs(target):
    """(index, value) of a list, (key, value) of a map, as cel-go's
    two-variable comprehensions range over them."""
    if isinstance(target, celtypes.MapType):
        return list(target.items())
    return [(celtypes.IntType(i), v) for i, v in enumerate(target)]


def predicate_value(v, macro: str):
    """A predicate's value: a bool, an error (kept), else no such overload."""
    if isinstance(v, (celtypes.BoolType, CELEvalError)):
        return v
    return CELEvalError(f"no such overload: {macro} predicate of type {go_type(v)}")


def cel_and(a, b):
    """cel-go's ``&&`` of two evaluated terms (false wins over an error)."""
    for v in (a, b):
        if isinstance(v, celtypes.BoolType) and not v:
            return celtypes.BoolType(False)
    for v in (a, b):
        if not isinstance(v, celtypes.BoolType):
            return v
    return celtypes.BoolType(True)


def cel_or(a, b):
    for v in (a, b):
        if isinstance(v, celtypes.BoolType) and v:
            return celtypes.BoolType(True)
    for v in (a, b):
        if not isinstance(v, celtypes.BoolType):
            return v
    return celtypes.BoolType(False)


def logical_operand(v, op: str):
    """A logical operand that is neither a bool nor an error: cel-go's
    ``no such overload``."""
    if isinstance(v, (celtypes.BoolType, CELEvalError)):
        return v
    return CELEvalError("no such overload")


class CostEvaluator(OptionalEvaluator):
    """``OptionalEvaluator`` charging each step to a shared tracker, with
    ``&&`` / ``||`` and the comprehensions evaluated as cel-go evaluates
    them (left to right, stopping where it stops)."""

    def __init__(self, *args, tracker: CostTracker, hoisted: HoistedValues | None = None,
                 **kwargs):
        super().__init__(*args, **kwargs)
        self.tracker = tracker
        self.hoisted = hoisted          # the expression's device-independent parts
        self._values: dict = {}
        self._spent: dict = {}          # node -> the cost its last evaluation charged
        self._free: set = set()

    def sub_evaluator(self, ast):
        sub = CostEvaluator(ast=ast, activation=self.activation, tracker=self.tracker,
                            hoisted=self.hoisted)
        sub._free = self._free
        return sub

    # ------------------------------------------------------------ the hook

    def _visit_tree(self, tree):
        hoisted = self.hoisted
        if hoisted is not None and id(tree) in hoisted.roots and id(tree) not in self._free:
            got = self._hoisted(tree)
            if got is not None:
                return got
        if isinstance(tree, BindRead):
            # the variable's read: 1, whatever its substituted init costs
            self.tracker.quiet += 1
            try:
                value = super()._visit_tree(tree)
            finally:
                self.tracker.quiet -= 1
            if id(tree) not in self._free:
                self.tracker.add(1)
            self._values[id(tree)] = value
            return value
        if isinstance(tree, BindExpr) and not self.tracker.quiet:
            # cel-go's expansion: an empty range (a list literal), the init
            # evaluated once, then the body
            self.tracker.add(LIST_CREATE)
            self.visit(tree.init)
        before = self.tracker.cost
        value = super()._visit_tree(tree)
        self._values[id(tree)] = value
        if id(tree) not in self._free:
            self._charge(tree, value)
        self._spent[id(tree)] = self.tracker.cost - before
        return value

    def _hoisted(self, tree):
        """A device-independent subexpression's stored value, its stored
        cost charged here (``dra_cel_hoist``); None: evaluate it here."""
        tracker = self.tracker
        got = self.hoisted.get(tree, tracker.limit, self.standalone)
        if got is None:
            return None
        value, cost, exceeded = got
        if exceeded and tracker.quiet:
            return None                 # a bind's read: evaluated uncharged, in place
        tracker.add(cost)               # raises CostLimitExceeded where cel-go stops
        self._values[id(tree)] = value
        self._spent[id(tree)] = cost
        return value

    def standalone(self, tree, limit):
        """(value, cost, exceeded) of ``tree`` evaluated on its own (it
        reads no variable); None when it raised a non-CEL error."""
        tracker = CostTracker(limit)
        evaluator = CostEvaluator(ast=tree, activation=self.activation, tracker=tracker)
        try:
            value = evaluator.visit(tree)
        except CostLimitExceeded:
            return None, limit + 1, True
        except CELEvalError as exc:
            value = exc
        except Exception:               # noqa: BLE001 - re-raised where it is evaluated
            return None
        return value, tracker.cost, False

    def _value(self, node):
        return self._values.get(id(node))

    def _charge(self, tree, value) -> None:
        d, ch = tree.data, tree.children
        add = self.tracker.add
        if d == "primary":
            child = ch[0]
            if child.data == "ident":
                add(1)
            elif child.data == "list_lit":
                add(LIST_CREATE)
            elif child.data == "map_lit":
                add(MAP_CREATE)
            elif child.data == "ident_arg":
                name = str(child.children[0])
                if name == "has":
                    return
                args = [self._value(a) for a in child.children[1].children] \
                    if len(child.children) > 1 else []
                add(1 if name in _NOMINAL_GLOBALS else call_cost(name, args, value))
        elif d in _SELECTS:
            # a selection on a call's result or a literal: the relative
            # attribute cel-go builds costs one more
            add(1 if is_attribute(ch[0]) else 2)
        elif d == "member_dot_arg":
            method = str(ch[1])
            if method in UNCHARGED_CALLS or self._is_macro(tree):
                return
            args = [self._value(ch[0])]
            if len(ch) > 2:
                args += [self._value(a) for a in ch[2].children]
            add(call_cost(method, args, value))
        elif d in ("relation", "addition", "multiplication") and len(ch) == 2:
            op = OPERATOR_SYMBOLS[ch[0].data]
            add(operator_cost(op, self._value(ch[0].children[0]), self._value(ch[1])))
        elif d == "unary" and len(ch) == 2:
            literal = unwrap_chain(ch[1])
            folded = ch[0].data == "unary_neg" and isinstance(literal, lark.Tree) \
                and literal.data == "primary" and literal.children[0].data == "literal"
            add(0 if folded else 1)

    @staticmethod
    def _is_macro(tree) -> bool:
        method = str(tree.children[1])
        count = len(tree.children[2].children) if len(tree.children) > 2 else 0
        return (count in MACRO_ARITIES.get(method, ())
                or count in TWO_VARIABLE_MACROS.get(method, ()))

    # ------------------------------------------------------------ cel-go's order

    def conditionalor(self, tree):
        if len(tree.children) == 1:
            return super().conditionalor(tree)
        left = logical_operand(self.visit(tree.children[0]), "_||_")
        if isinstance(left, celtypes.BoolType) and left:
            return left
        return cel_or(left, logical_operand(self.visit(tree.children[1]), "_||_"))

    def conditionaland(self, tree):
        if len(tree.children) == 1:
            return super().conditionaland(tree)
        left = logical_operand(self.visit(tree.children[0]), "_&&_")
        if isinstance(left, celtypes.BoolType) and not left:
            return left
        return cel_and(left, logical_operand(self.visit(tree.children[1]), "_&&_"))

    def expr(self, tree):
        if len(tree.children) != 3:
            return super().expr(tree)
        # a variable read as a branch of the conditional is free (cel-go
        # resolves the branch's attribute without observing it)
        free = [id(unwrap_chain(b)) for b in tree.children[1:] if is_variable(unwrap_chain(b))]
        self._free.update(free)
        try:
            return super().expr(tree)
        finally:
            self._free.difference_update(free)

    def primary(self, tree):
        child = tree.children[0]
        if isinstance(child, lark.Tree) and child.data == "ident_arg" \
                and str(child.children[0]) == "has" and len(child.children) > 1:
            # presence tests are free (Kubernetes turns their cost off): the
            # tested selection's own unit is not charged
            tested = unwrap_chain(child.children[1].children[0])
            self._free.add(id(tested))
            try:
                return super().primary(tree)
            finally:
                self._free.discard(id(tested))
        return super().primary(tree)

    # ------------------------------------------------------------ comprehensions

    def member_dot_arg(self, tree):
        method = str(tree.children[1])
        args = tree.children[2].children if len(tree.children) > 2 else []
        if args and self._is_macro(tree) and method not in UNCHARGED_CALLS:
            return self._fold(tree, method)
        value = super().member_dot_arg(tree)
        if method in OPTIONAL_MACROS and len(args) == 2:
            self._charge_opt_map(tree, method)
        elif method == "sortBy" and len(args) == 2:
            self._charge_sort_by(tree)
        return value

    def _charge_opt_map(self, tree, method: str) -> None:
        """cel-go's expansion of ``x.optMap(v, f)``: ``x.hasValue() ?
        optional.of(cel.bind(v, x.value(), f)) : optional.none()`` (no
        ``optional.of`` for ``optFlatMap``): ``x`` evaluated twice when it
        has a value; ``f`` was charged as evaluated."""
        target = self._values.get(id(tree.children[0]))
        if not isinstance(target, CelOptional):
            return
        add = self.tracker.add
        add(1)                                          # hasValue()
        if target.has_value:
            twice = self._spent.get(id(tree.children[0]), 0)
            add((method == "optMap") + LIST_CREATE + twice + 1)
        else:
            add(1)                                      # optional.none()

    def _charge_sort_by(self, tree) -> None:
        """cel-go's expansion of ``l.sortBy(v, key)``: ``cel.bind(t, l,
        t.@sortByAssociatedKeys(t.map(v, key)))`` (the keys were charged as
        evaluated)."""
        target = self._values.get(id(tree.children[0]))
        keys = getattr(self, "sort_keys", None)
        if not isinstance(target, celtypes.ListType) or keys is None or len(keys) != len(target):
            return
        n = len(target)
        # the bind's range and read, the map's range read, init, steps and
        # result, then the sort's own tracker
        self.tracker.add(LIST_CREATE + 1 + 1 + LIST_CREATE + 12 * n + 1 + self_compare(keys))

    def _fold(self, tree, method: str):
        """A comprehension as cel-go's expansion evaluates it (module doc)."""
        args = tree.children[2].children
        two = len(args) in TWO_VARIABLE_MACROS.get(method, ()) and \
            not len(args) in MACRO_ARITIES.get(method, ())
        target = self.visit(tree.children[0])
        if isinstance(target, CELEvalError):
            return target
        if not isinstance(target, (celtypes.ListType, celtypes.MapType)):
            return CELEvalError(f"got '{go_type(target)}', expected iterable type")
        names = [macro_name(a) for a in args[:2 if two else 1]]
        bodies = [self.sub_evaluator(a) for a in args[len(names):]]
        items = _pairs(target) if two else [(x,) for x in target]
        add = self.tracker.add

        def run(body, item):
            # an error is the step's value (cel-go folds it into the
            # accumulator: ``error || true`` is still true), not the end
            # of the whole evaluation
            try:
                return body.evaluate(dict(zip(names, item)))
            except CELEvalError as exc:
                return exc

        if method in ("all", "exists"):
            stop = method == "exists"               # the value that ends the loop
            accu = celtypes.BoolType(not stop)
            for item in items:
                add(3 if stop else 2)               # the loop condition
                if isinstance(accu, celtypes.BoolType) and bool(accu) == stop:
                    break
                add(1)
                p = predicate_value(run(bodies[0], item), method)
                accu = cel_or(accu, p) if stop else cel_and(accu, p)
            add(1)
            return accu
        if method in ("exists_one", "existsOne"):
            accu = celtypes.IntType(0)
            for item in items:
                p = predicate_value(run(bodies[0], item), method)
                if isinstance(p, CELEvalError):
                    accu = p if not isinstance(accu, CELEvalError) else accu
                elif p:
                    add(2)
                    if not isinstance(accu, CELEvalError):
                        accu = celtypes.IntType(accu + 1)
            add(2)
            return accu if isinstance(accu, CELEvalError) else celtypes.BoolType(accu == 1)
        # map, filter, transformList, transformMap, transformMapEntry
        *keep, transform = bodies
        if method == "filter":
            keep, transform = [transform], None
        to_map = method in ("transformMap", "transformMapEntry")
        add(MAP_CREATE if to_map else LIST_CREATE)
        out = celtypes.MapType() if to_map else celtypes.ListType()
        error = None
        for item in items:
            if keep:
                p = predicate_value(run(keep[0], item), method)
                if isinstance(p, CELEvalError):
                    error = error or p
                    continue
                if not p:
                    continue
            if transform is None:                   # filter: accu + [x]
                add(1 + 1 + LIST_CREATE + 1)
                value = item[-1]
            else:
                value = run(transform, item)
                add({"transformMap": 3, "transformMapEntry": 2}.get(method, 12))
            if error is not None:
                continue
            if isinstance(value, CELEvalError):
                error = value
            elif method == "transformMap":
                out[item[0]] = value
            elif method == "transformMapEntry":
                if not isinstance(value, celtypes.MapType):
                    error = CELEvalError(
                        f"no such overload: cel.@mapInsert(map, {go_type(value)})")
                    continue
                for key, v in value.items():
                    if key in out:
                        error = CELEvalError(f"insert failed: key {key} already exists")
                        break
                    out[key] = v
            else:
                out.append(value)
        add(1)
        return error if error is not None else out


class CostRunner(OptionalRunner):
    """cel-python's runner with a fresh cost tracker per evaluation;
    ``evaluate`` raises :class:`CostLimitExceeded` past ``limit``."""

    limit = COST_LIMIT

    def evaluate(self, context):
        return self._run(context, self.limit)[0]

    def cost(self, context) -> int:
        """The cost of one evaluation, without a limit (cel-go's
        ``ActualCost``)."""
        return self._run(context, float("inf"))[1]

    def _hoisted_values(self) -> HoistedValues:
        """The expression's device-independent parts, kept with its program
        (``compile_selector`` keeps one program per expression)."""
        hoisted = self.__dict__.get("_hoisted")
        if hoisted is None:
            hoisted = self._hoisted = HoistedValues(self.ast)
        return hoisted

    def _run(self, context, limit):
        tracker = CostTracker(limit)
        evaluator = CostEvaluator(ast=self.ast, activation=self.new_activation(), tracker=tracker,
                                  hoisted=self._hoisted_values())
        try:
            value = evaluator.evaluate(context)
        except CELEvalError as exc:
            value = exc
        return value, tracker.cost
