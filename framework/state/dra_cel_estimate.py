"""The API server's static cost estimate of a DRA selector: cel-go's
``checker.Cost`` over our checked parse tree, with Kubernetes' call
estimates and the size bounds the DRA compiler declares for ``device``.

Upstream (``validateCELSelector``) refuses a selector whose worst-case
estimate exceeds ``CELSelectorExpressionMaxCost`` (1,000,000) with
``Forbidden: too complex, exceeds cost limit`` at its
``...cel.expression`` field.  The scheduler compiles the same expressions
without looking at the estimate: only validation refuses.

The estimate is a range of cost units, (min, max), each counted in
unsigned 64-bit arithmetic that saturates at 2**64 - 1 as cel-go's does.
The rules, in cel-go's words where they are cel-go's:

- a literal 0, an identifier 1, a field selection 1 plus 1 more when the
  selected-from value is a map or an object (``device``); a presence test
  (``has``) nothing of its own (Kubernetes turns that cost off);
- a list literal 10, a map literal 30, plus their entries;
- ``&&`` / ``||``: the left operand's min, both operands' max; ``c ? a :
  b``: ``c`` plus the union of ``a`` and ``b``;
- a call: its arguments (and receiver), plus the first estimate that
  applies: cel-go's lists and sets extensions' own estimators, Kubernetes'
  ``library.CostEstimator.EstimateCallCost``, cel-go's size-dependent
  built-ins (``==`` / ``!=`` and string ordering: a tenth of the smaller
  operand's size, at least 1 when that is not zero; string ``+`` a tenth
  of the sum; ``in`` a list its size; ``matches`` / ``contains`` /
  ``startsWith`` ...), else 1 (``dra_cel_call_estimates``).  With dynamic
  operands every overload the checker keeps counts: the union of their
  estimates;
- a comprehension as cel-go's macro expansion is estimated: its range,
  accumulator init and result once, the loop condition plus step times the
  range's size; ``cel.bind`` an empty range (10), its init and its body.

Sizes: a literal's own; a call's result size where an estimator gives
one; else what the size estimator tells from the value's path through
``device`` (``device.attributes[d].x`` at most 64 code points, a map of
attributes at most 32 entries, ...); else 1 for a scalar type (bool, int,
uint, double); else unknown, 0 to 2**64 - 1 (so that ``==`` between two
values of unknown size, e.g. two quantities, is priced at about 1.8e18).

Types are ``dra_cel_types``' (its checker infers what the API's
declarations make statically known); where it leaves a value dynamic that
cel-go's checker types, the estimate takes the union over the overloads a
dynamic value admits, whose max is never smaller.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import lark

from .dra_cel import (
    CHAIN_RULES,
    CelError,
    expand_binds,
    ident_name,
    literal_value,
    parse_expression,
)
from .dra_cel_call_estimates import (
    LIST_CREATE,
    MAP_CREATE,
    MAX_UINT64,
    ONE,
    TRAVERSAL,
    ZERO,
    Range,
    add,
    factor,
    function_cost,
    mul,
    size_or_unknown,
    sort_cost,
    union,
)
from .dra_cel_syntax import BindExpr, BindRead
from .dra_cel_types import TypeChecker, type_family
from .dra_cel_values import COST_LIMIT, TWO_VARIABLE_MACROS

__all__ = ["MAX_UINT64", "TOO_COMPLEX", "CostEstimate", "dra_max_cost", "dra_size_of",
           "estimate_cost", "exceeds_cost_limit"]


#: upstream's message for a selector over the limit (a ``field.Forbidden``)
TOO_COMPLEX = "Forbidden: too complex, exceeds cost limit"


@dataclass(frozen=True)
class CostEstimate:
    """cel-go's ``CostEstimate``: the least and the most cost units an
    evaluation may take."""

    min: int
    max: int


# --------------------------------------------------------------------------
# the DRA environment's size bounds (the compiler's DeclTypes)


@dataclass(frozen=True)
class _Decl:
    """A declared type as the size estimator walks it: its bound
    (``MaxElements``), its fields, its map key and element types."""

    max_elements: int = 0
    fields: tuple = ()
    key: _Decl | None = None
    elem: _Decl | None = None


# the API's limits (k8s.io/api/resource/v1)
_DOMAIN = _Decl(63)              # DeviceMaxDomainLength
_ID = _Decl(32)                  # DeviceMaxIDLength
_DRIVER = _Decl(63)              # DriverNameMaxLength
_ATTRIBUTE = _Decl(64)           # DeviceAttributeMaxValueLength (attribute values: any)
_QUANTITY = _Decl(0)             # apiserver's QuantityDeclType declares no bound
_MULTI_ALLOC = _Decl(1)          # allowMultipleAllocations: a bool bounded at 1
_PER_DEVICE = 32                 # ResourceSliceMaxAttributesAndCapacitiesPerDevice
_INNER_ATTRS = _Decl(_PER_DEVICE, key=_ID, elem=_ATTRIBUTE)
_OUTER_ATTRS = _Decl(_PER_DEVICE, key=_DOMAIN, elem=_INNER_ATTRS)
_INNER_CAPS = _Decl(_PER_DEVICE, key=_ID, elem=_QUANTITY)
_OUTER_CAPS = _Decl(_PER_DEVICE, key=_DOMAIN, elem=_INNER_CAPS)
_DEVICE = _Decl(0, fields=(("driver", _DRIVER), ("attributes", _OUTER_ATTRS),
                           ("capacity", _OUTER_CAPS),
                           ("allowMultipleAllocations", _MULTI_ALLOC)))


def dra_size_of(path: tuple) -> Range | None:
    """The DRA compiler's size estimator: the bound of the value at
    ``path`` (``("device", "attributes", "@values", "model")``), or None
    where it gives none.  A field name on a domain's attribute map is an
    attribute (every one bounded alike); anywhere else an unknown name has
    no bound."""
    if not path or path[0] != "device":
        return None
    node = _DEVICE
    for name in path[1:]:
        if name in ("@items", "@values"):
            if node.elem is None:
                return None
            node = node.elem
        elif name == "@keys":
            if node.key is None:
                return None
            node = node.key
        else:
            found = dict(node.fields).get(name)
            if found is None:
                if node.elem is _ATTRIBUTE:
                    node = _ATTRIBUTE
                    continue
                return None
            node = found
    return (0, node.max_elements)


# --------------------------------------------------------------------------
# the estimator


@dataclass
class _Info:
    """What the estimator knows of one estimated expression."""

    cost: Range
    type: str
    size: Range | None = None         # cel-go's computeSize, None: unknown
    path: tuple | None = None         # the field path from a variable
    entry: tuple | None = None        # (container kind, key size, value size)
    literal: object = None            # an int literal's value (the lists extension reads it)


@dataclass
class _Local:
    """A variable of a comprehension or bind: its type, path and sizes."""

    type: str
    path: tuple | None
    size: Range | None
    entry: tuple | None


_SCALARS = ("bool", "int", "uint", "double", "timestamp", "duration",
            "google.protobuf.Timestamp", "google.protobuf.Duration")
_DYNAMIC = ("dyn", "any")
#: the type conversions, each a function of its result type's name
_CONVERSIONS = ("int", "uint", "double", "string", "bytes", "bool")
_ORDERINGS = {"relation_lt", "relation_le", "relation_gt", "relation_ge"}
#: one-variable comprehension macros and their argument counts
_MACROS = {"all": (2,), "exists": (2,), "exists_one": (2,), "map": (2, 3), "filter": (2,)}
def _is_scalar(t: str) -> bool:
    if t.startswith("optional_type("):
        return _is_scalar(t[len("optional_type("):-1])
    return t in _SCALARS


def _unchain(node):
    while isinstance(node, lark.Tree) and not isinstance(node, (BindRead, BindExpr)) \
            and node.data in CHAIN_RULES and len(node.children) == 1:
        node = node.children[0]
    return node


class _Estimator:
    """cel-go's ``coster`` over cel-python's parse tree (binds expanded as
    ``dra_cel.expand_binds`` marks them)."""

    def __init__(self, text: str, variables: dict, size_of):
        self.checker = TypeChecker(text)
        self.variables = dict(variables)        # global name -> type
        self.size_of = size_of                  # path -> Range | None

    # ----------------------------------------------------------- helpers

    def _type(self, node, scope: dict) -> str:
        """``node``'s static type with the variables in scope.  The whole
        expression type-checked already: a refusal here comes of typing a
        part out of its context (the list of a ``format`` call, whose
        entries may mix types) and means only that the type is dynamic."""
        bound = {**self.variables, **{k: v.type for k, v in scope.items()}}
        try:
            return self.checker.type_of(node, bound)
        except CelError:
            return "dyn"

    def _finish(self, info: _Info, own: Range | None = None, local: _Local | None = None) -> _Info:
        """Settle ``info.size`` in cel-go's order: a computed size, the
        size estimator by path, a scalar type's 1, a variable's size."""
        if own is not None:
            info.size = own
            return info
        if info.path:
            est = self.size_of(info.path)
            if est is not None:
                info.size = est
                return info
        if _is_scalar(info.type):
            info.size = ONE
            return info
        if local is not None and local.size is not None:
            info.size = local.size
            return info
        info.size = None
        return info

    # ----------------------------------------------------------- dispatch

    def cost(self, node, scope: dict) -> _Info:
        node = _unchain(node)
        if isinstance(node, BindRead):
            return self._bind_read(node, scope)
        if isinstance(node, BindExpr):
            return self._bind(node, scope)
        if not isinstance(node, lark.Tree):
            return _Info(ZERO, "dyn")
        d, ch = node.data, node.children
        if d == "paren_expr":
            return self.cost(ch[0], scope)
        if d == "literal":
            return self._literal(node, scope)
        if d == "ident":
            return self._ident(str(ch[0]), node, scope)
        if d == "expr":
            return self._conditional(node, scope)
        if d in ("conditionalor", "conditionaland"):
            left, right = self.cost(ch[0], scope), self.cost(ch[1], scope)
            cost = (left.cost[0], add(left.cost, right.cost)[1])
            return self._finish(_Info(cost, "bool"))
        if d == "unary":
            return self._unary(node, scope)
        if d in ("relation", "addition", "multiplication"):
            return self._binary(node, scope)
        if d == "list_lit":
            return self._list(node, scope)
        if d == "map_lit":
            return self._map(node, scope)
        if d == "member_dot":
            return self._select(node, scope)
        if d in ("member_index", "member_index_opt", "member_dot_opt"):
            return self._index(node, scope)
        if d == "ident_arg":
            return self._function(node, scope)
        if d == "member_dot_arg":
            return self._method(node, scope)
        # anything else (not produced for a checked selector): its parts
        total = ZERO
        for c in ch:
            if isinstance(c, lark.Tree):
                total = add(total, self.cost(c, scope).cost)
        return _Info(total, self._type(node, scope))

    # ----------------------------------------------------------- leaves

    def _literal(self, node, scope) -> _Info:
        t = self._type(node, scope)
        token = node.children[0]
        value = None
        try:
            value = literal_value(token)
        except Exception:       # an opaque literal: its size is the token's
            value = None
        if isinstance(value, str):
            size = (len(value),) * 2
        elif isinstance(value, (bytes, bytearray)):
            size = (len(value),) * 2
        else:
            size = ONE
        literal = value if t == "int" and isinstance(value, int) \
            and not isinstance(value, bool) else None
        return _Info(ZERO, t, size=size, literal=literal)

    def _ident(self, name: str, node, scope) -> _Info:
        local = scope.get(name)
        if local is not None:
            info = _Info(ONE, local.type, path=local.path, entry=local.entry)
            return self._finish(info, local=local)
        t = self.variables.get(name, self._type(node, scope))
        return self._finish(_Info(ONE, t, path=(name,)))

    def _bind_read(self, node, scope) -> _Info:
        """A read of a ``cel.bind`` variable: 1, with its init's path and
        sizes (the init was charged once, at the bind)."""
        init = self.cost(node.children[0], scope)
        local = _Local(init.type, init.path, init.size, init.entry)
        info = _Info(ONE, init.type, path=init.path, entry=init.entry)
        return self._finish(info, local=local)

    def _bind(self, node, scope) -> _Info:
        init = self.cost(node.init, scope)
        body = self.cost(node.children[0], scope)
        cost = add(add((LIST_CREATE,) * 2, init.cost), body.cost)
        return self._finish(_Info(cost, body.type, entry=body.entry), own=body.size)

    # ----------------------------------------------------------- operators

    def _conditional(self, node, scope) -> _Info:
        c, a, b = (self.cost(x, scope) for x in node.children)
        cost = add(c.cost, union(a.cost, b.cost))
        size = union(size_or_unknown(a), size_or_unknown(b))
        entry = None
        if a.entry is not None and b.entry is not None:
            entry = (a.entry[0], union(a.entry[1], b.entry[1]), union(a.entry[2], b.entry[2]))
        t = self._type(node, scope)
        return self._finish(_Info(cost, t, entry=entry), own=size)

    def _unary(self, node, scope) -> _Info:
        op, operand = node.children
        inner = _unchain(operand)
        if op.data == "unary_neg" and isinstance(inner, lark.Tree) and inner.data == "literal":
            # cel-go's parser folds a negated number into the literal
            info = self.cost(inner, scope)
            return _Info(ZERO, info.type, size=ONE)
        arg = self.cost(operand, scope)
        t = "bool" if op.data == "unary_not" else arg.type
        return self._finish(_Info(add(arg.cost, ONE), t))

    def _binary(self, node, scope) -> _Info:
        op_node, rhs_node = node.children
        lhs = self.cost(op_node.children[0], scope)
        rhs = self.cost(rhs_node, scope)
        args = add(lhs.cost, rhs.cost)
        kind = op_node.data
        t = self._type(node, scope)
        if kind in ("relation_eq", "relation_ne"):
            return self._finish(_Info(add(args, self._equality(lhs, rhs)), "bool"))
        if kind in _ORDERINGS:
            families = self._families(lhs, rhs)
            if not families:        # both dynamic: every overload, strings' too
                own = union(self._equality(lhs, rhs), ONE)
            elif families <= {"string"} or families <= {"bytes"}:
                own = self._equality(lhs, rhs)
            else:
                own = ONE
            return self._finish(_Info(add(args, own), "bool"))
        if kind == "relation_in":
            candidates = []
            if rhs.type in _DYNAMIC or type_family(rhs.type) == "list":
                candidates.append(size_or_unknown(rhs))
            if rhs.type in _DYNAMIC or type_family(rhs.type) == "map":
                candidates.append(ONE)
            return self._finish(_Info(add(args, self._union_all(candidates)), "bool"))
        if kind == "addition_add":
            return self._plus(lhs, rhs, args, t)
        return self._finish(_Info(add(args, ONE), t))

    @staticmethod
    def _union_all(candidates) -> Range:
        if not candidates:
            return ONE
        out = candidates[0]
        for c in candidates[1:]:
            out = union(out, c)
        return out

    @staticmethod
    def _families(lhs: _Info, rhs: _Info) -> set:
        """The operands' statically known type families (the dynamic ones
        left out: the checker keeps every overload for those)."""
        return {type_family(lhs.type), type_family(rhs.type)} - set(_DYNAMIC)

    def _equality(self, lhs: _Info, rhs: _Info) -> Range:
        """cel-go's ``==`` (and string / bytes ordering): a tenth of the
        smaller of the two operands' max sizes; min 1 unless that is 0."""
        a, b = size_or_unknown(lhs), size_or_unknown(rhs)
        smallest = min(a[1], b[1])
        return factor((1 if smallest > 0 else 0, smallest), TRAVERSAL)

    def _plus(self, lhs: _Info, rhs: _Info, args: Range, t: str) -> _Info:
        a, b = size_or_unknown(lhs), size_or_unknown(rhs)
        size = add(a, b)
        entry = None
        if lhs.entry is not None and rhs.entry is not None:
            entry = (lhs.entry[0], union(lhs.entry[1], rhs.entry[1]),
                     union(lhs.entry[2], rhs.entry[2]))
        families = self._families(lhs, rhs)
        if not families:            # both dynamic: strings, bytes, lists, numbers
            own, sized = union(factor(size, TRAVERSAL), ONE), True
        elif families <= {"string"} or families <= {"bytes"}:
            own, sized = factor(size, TRAVERSAL), True
        elif families <= {"list"}:
            own, sized = ONE, True     # concatenation is O(1); its size is tracked
        else:
            own, sized = ONE, False
        info = _Info(add(args, own), t, entry=entry if sized else None)
        return self._finish(info, own=size if sized else None)

    # ----------------------------------------------------------- aggregates

    def _items(self, node):
        if not node.children:
            return []
        items = node.children[0].children
        return [i.children[0] if isinstance(i, lark.Tree) and i.data in ("opt_elem", "opt_key")
                else i for i in items]

    def _list(self, node, scope) -> _Info:
        items = self._items(node)
        total, item_size = ZERO, (MAX_UINT64, 0) if items else ZERO
        for item in items:
            info = self.cost(item, scope)
            total = add(total, info.cost)
            item_size = union(item_size, size_or_unknown(info))
        entry = ("list", ONE, item_size)
        info = _Info(add(total, (LIST_CREATE,) * 2), self._type(node, scope), entry=entry)
        return self._finish(info, own=(len(items),) * 2)

    def _map(self, node, scope) -> _Info:
        items = self._items(node)
        total = ZERO
        key_size = val_size = (MAX_UINT64, 0) if items else ZERO
        for key, value in zip(items[0::2], items[1::2]):
            k, v = self.cost(key, scope), self.cost(value, scope)
            total = add(add(total, k.cost), v.cost)
            key_size = union(key_size, size_or_unknown(k))
            val_size = union(val_size, size_or_unknown(v))
        entry = ("map", key_size, val_size)
        info = _Info(add(total, (MAP_CREATE,) * 2), self._type(node, scope), entry=entry)
        return self._finish(info, own=(len(items) // 2,) * 2)

    # ----------------------------------------------------------- selection

    def _select(self, node, scope) -> _Info:
        operand = self.cost(node.children[0], scope)
        field = str(node.children[1])
        cost = operand.cost
        family = type_family(operand.type)
        if family == "map" or operand.type.startswith("kubernetes.DRADevice"):
            cost = add(cost, ONE)
        path = (operand.path or ()) + (field,)
        return self._finish(_Info(cost, self._type(node, scope), path=path))

    def _index(self, node, scope) -> _Info:
        """``a[k]`` (cel-go's ``_[_]``), ``a[?k]`` and ``a.?f``: a call of
        cost 1; the plain index follows ``a``'s path into its items or
        values."""
        target = self.cost(node.children[0], scope)
        key = self.cost(node.children[1], scope) if isinstance(node.children[1], lark.Tree) \
            else _Info(ZERO, "string")
        cost = add(add(target.cost, key.cost), ONE)
        t = self._type(node, scope)
        if node.data != "member_index":
            return self._finish(_Info(cost, t))
        family = type_family(target.type)
        sub = "@items" if family == "list" else "@values"
        path = (target.path or ()) + (sub,)
        own = target.entry[2] if target.entry is not None else None
        return self._finish(_Info(cost, t, path=path), own=own)

    # ----------------------------------------------------------- calls

    def _function(self, node, scope) -> _Info:
        ch = node.children
        name = str(ch[0])
        arg_nodes = list(ch[1].children) if len(ch) > 1 else []
        if name == "has" and arg_nodes:
            tested = _unchain(arg_nodes[0])
            # the presence test: its operand, no cost of its own
            operand = tested.children[0] if isinstance(tested, lark.Tree) \
                and tested.data == "member_dot" else tested
            return _Info(self.cost(operand, scope).cost, "bool", size=ONE)
        args = [self.cost(a, scope) for a in arg_nodes]
        t = self._type(node, scope)
        if name in _CONVERSIONS and len(args) == 1:
            t = name            # the checker leaves conversions untyped; cel-go does not
        if name == "dyn" and len(args) == 1:
            a = args[0]
            return _Info(add(a.cost, ONE), t, size=a.size, entry=a.entry)
        return self._call(name, None, args, t)

    def _method(self, node, scope) -> _Info:
        ch = node.children
        method = str(ch[1])
        arg_nodes = list(ch[2].children) if len(ch) > 2 else []
        count = len(arg_nodes)
        if count in TWO_VARIABLE_MACROS.get(method, ()):
            return self._two_variable(node, method, arg_nodes, scope)
        if count in _MACROS.get(method, ()):
            return self._macro(node, method, arg_nodes, scope)
        if method in ("optMap", "optFlatMap") and count == 2:
            return self._opt_map(node, method, arg_nodes, scope)
        if method == "sortBy" and count == 2:
            return self._sort_by(node, arg_nodes, scope)
        target = self.cost(ch[0], scope)
        args = [self.cost(a, scope) for a in arg_nodes]
        return self._call(method, target, args, self._type(node, scope))

    def _call(self, name: str, target: _Info | None, args: list, t: str) -> _Info:
        """A call's estimate: its receiver and arguments plus the function's
        own (``_function_cost``), with its result size."""
        total = target.cost if target is not None else ZERO
        for a in args:
            total = add(total, a.cost)
        own, size = function_cost(name, target, args, self.size_of)
        info = _Info(add(total, own), t)
        return self._finish(info, own=size)

    # ----------------------------------------------------------- comprehensions

    def _range_locals(self, target: _Info, names, two: bool) -> dict:
        """cel-go's iteration variables: over a list its items (the index
        too with two variables), over a map its keys (and values)."""
        kind = target.entry[0] if target.entry is not None else (
            "list" if type_family(target.type) == "list" else "map"
            if type_family(target.type) == "map" else "dyn")
        first_t, second_t = self.checker.range_types(None, target.type) \
            if target.type not in _DYNAMIC else ("dyn", "dyn")
        base = target.path or ()
        entry = target.entry
        key_size = entry[1] if entry is not None else None
        val_size = entry[2] if entry is not None else None
        if two:
            key_sub = "@indices" if kind == "list" else "@keys"
            val_sub = "@items" if kind == "list" else "@values"
            return {names[0]: _Local(first_t, base + (key_sub,), key_size, None),
                    names[1]: _Local(second_t, base + (val_sub,), val_size, None)}
        if kind == "list":
            return {names[0]: _Local(second_t, base + ("@items",), val_size, None)}
        return {names[0]: _Local(first_t, base + ("@keys",), key_size, None)}

    def _loop(self, target: _Info, init: tuple, condition: Range, step: Range,
              result: Range, t: str, entry: tuple | None = None) -> _Info:
        """cel-go's ``costComprehension`` from its parts' costs: ``init``
        is (cost, kind of the accumulator's literal: 'scalar' / 'list' /
        'map')."""
        count = size_or_unknown(target)
        total = add(add(target.cost, init[0]), result)
        total = add(total, mul(count, add(step, condition)))
        own = ONE if init[1] == "scalar" else count
        return _Info(total, t, size=own, entry=entry if init[1] != "scalar" else None)

    def _macro(self, node, method, arg_nodes, scope) -> _Info:
        target = self.cost(node.children[0], scope)
        var = ident_name(arg_nodes[0])
        inner = {**scope, **self._range_locals(target, [var], two=False)}
        bodies = [self.cost(a, inner) for a in arg_nodes[1:]]
        t = self._type(node, scope)
        accu = ONE                                 # a read of the accumulator
        if method == "all":
            step = (accu[0], add(accu, bodies[0].cost)[1])
            return self._loop(target, (ZERO, "scalar"), (2, 2), step, accu, t)
        if method == "exists":
            step = (accu[0], add(accu, bodies[0].cost)[1])
            return self._loop(target, (ZERO, "scalar"), (3, 3), step, accu, t)
        if method == "exists_one":
            step = add(bodies[0].cost, union((2, 2), accu))
            return self._loop(target, (ZERO, "scalar"), ZERO, step, (2, 2), t)
        # map(x, f), map(x, p, f), filter(x, p): ``accu + [f]`` (12 + f),
        # under the filter ``p ? accu + [f] : accu``; the result's entries
        # are what was appended (or nothing: the empty list's 0)
        if method == "filter":
            appended = self._ident(var, None, inner)
            step = add(bodies[0].cost, union(add((12, 12), appended.cost), accu))
        elif len(bodies) == 2:
            appended = bodies[1]
            step = add(bodies[0].cost, union(add((12, 12), appended.cost), accu))
        else:
            appended = bodies[0]
            step = add((12, 12), appended.cost)
        entry = ("list", ONE, union(ZERO, size_or_unknown(appended)))
        return self._loop(target, ((LIST_CREATE,) * 2, "list"), ZERO, step, accu, t, entry)

    def _two_variable(self, node, method, arg_nodes, scope) -> _Info:
        target = self.cost(node.children[0], scope)
        names = [ident_name(a) for a in arg_nodes[:2]]
        inner = {**scope, **self._range_locals(target, names, two=True)}
        bodies = [self.cost(a, inner) for a in arg_nodes[2:]]
        t = self._type(node, scope)
        accu = ONE
        if method == "all":
            step = (accu[0], add(accu, bodies[0].cost)[1])
            return self._loop(target, (ZERO, "scalar"), (2, 2), step, accu, t)
        if method == "exists":
            step = (accu[0], add(accu, bodies[0].cost)[1])
            return self._loop(target, (ZERO, "scalar"), (3, 3), step, accu, t)
        if method in ("existsOne", "exists_one"):
            step = add(bodies[0].cost, union((2, 2), accu))
            return self._loop(target, (ZERO, "scalar"), ZERO, step, (2, 2), t)
        *keep, transform = bodies
        entry = None
        if method == "transformList":
            grow, init = add((12, 12), transform.cost), ((LIST_CREATE,) * 2, "list")
            entry = ("list", ONE, union(ZERO, size_or_unknown(transform)))
        elif method == "transformMap":
            grow, init = add((3, 3), transform.cost), ((MAP_CREATE,) * 2, "map")
        else:
            grow, init = add((2, 2), transform.cost), ((MAP_CREATE,) * 2, "map")
        step = add(keep[0].cost, union(grow, accu)) if keep else grow
        return self._loop(target, init, ZERO, step, accu, t, entry)

    def _opt_map(self, node, method, arg_nodes, scope) -> _Info:
        """cel-go's expansion ``x.hasValue() ? optional.of(cel.bind(v,
        x.value(), f)) : optional.none()`` (no ``optional.of`` for
        ``optFlatMap``)."""
        target = self.cost(node.children[0], scope)
        var = ident_name(arg_nodes[0])
        inner_t = target.type[len("optional_type("):-1] \
            if target.type.startswith("optional_type(") else "dyn"
        value = _Local(inner_t, None, ONE if _is_scalar(inner_t) else None, None)
        body = self.cost(arg_nodes[1], {**scope, var: value})
        has_value = add(target.cost, ONE)
        bind = add(add((LIST_CREATE,) * 2, add(target.cost, ONE)), body.cost)
        then = add(bind, ONE) if method == "optMap" else bind
        cost = add(has_value, union(then, ONE))
        return self._finish(_Info(cost, self._type(node, scope)))

    def _sort_by(self, node, arg_nodes, scope) -> _Info:
        """cel-go's expansion ``cel.bind(t, l, t.@sortByAssociatedKeys(
        t.map(v, key)))``: the bind, the map over ``t`` and the sort of
        the keys (the lists extension's O(n^2) estimate)."""
        target = self.cost(node.children[0], scope)
        read = _Info(ONE, target.type, size=target.size, path=target.path, entry=target.entry)
        var = ident_name(arg_nodes[0])
        inner = {**scope, **self._range_locals(read, [var], two=False)}
        key = self.cost(arg_nodes[1], inner)
        keys = self._loop(read, ((LIST_CREATE,) * 2, "list"), ZERO,
                          add((12, 12), key.cost), ONE, f"list({key.type})")
        n = size_or_unknown(keys)
        sort, _ = sort_cost(key.type, n)
        cost = add(add(add((LIST_CREATE,) * 2, target.cost), add(ONE, keys.cost)), sort)
        return _Info(cost, self._type(node, scope), size=size_or_unknown(target))


def estimate_cost(expression: str, variables: dict | None = None,
                  size_of=dra_size_of) -> CostEstimate:
    """cel-go's worst-case (and best-case) cost estimate of ``expression``
    as Kubernetes computes it: by default for a DRA selector (``device``
    declared, the DRA compiler's size bounds); ``variables`` (name -> type,
    in ``dra_cel_types``' spelling) and ``size_of`` (path -> (min, max)
    or None) describe another environment.  Call after the expression
    compiled and type-checked."""
    tree = expand_binds(parse_expression(expression))
    variables = {"device": "kubernetes.DRADevice"} if variables is None else variables
    info = _Estimator(expression, variables, size_of).cost(tree, {})
    return CostEstimate(*info.cost)


@lru_cache(maxsize=4096)
def dra_max_cost(expression: str) -> int:
    """The worst-case estimate of a DRA selector, memoized per distinct
    expression (the API server computes it on every create; a dump of many
    claims repeats a few expressions)."""
    return estimate_cost(expression).max


def exceeds_cost_limit(expression: str, limit: int = COST_LIMIT) -> bool:
    """Whether ``validateCELSelector`` refuses ``expression`` as too
    complex: its estimated worst-case cost exceeds ``limit``.  Call after
    the expression compiled and type-checked."""
    return dra_max_cost(expression) > limit
