"""What one call costs in cel-go's units (``dra_cel_cost``): Kubernetes'
``library.CostEstimator.CallCost`` first, then the sets and lists
extensions' trackers, then cel-go's own size-dependent overloads; 1 for
anything else.  Sizes are cel-go's ``actualSize``: a string's code points,
a list's or map's entries, 1 for any other value."""

from __future__ import annotations

import math

from celpy.evaluation import CELEvalError

from .dra_cel_values import CelOptional

__all__ = ["CALL_COSTS", "LIST_CREATE", "MAP_CREATE", "call_cost", "operator_cost",
           "self_compare", "size_of"]

_TRAVERSAL = 0.1        # cel-go's StringTraversalCostFactor
_REGEX = 0.25           # RegexStringLengthCostFactor
#: cel-go's ListCreateBaseCost and MapCreateBaseCost
LIST_CREATE = 10
MAP_CREATE = 30


def size_of(v) -> int:
    """cel-go's ``actualSize``: code points, entries, else 1."""
    if isinstance(v, CelOptional):
        return size_of(v.value) if v.has_value else 1
    if isinstance(v, (str, bytes, list, tuple, dict)):
        return len(v)
    return 1


def _k8s_size(v) -> int:
    """Kubernetes' ``actualSize`` (an optional is not unwrapped)."""
    return len(v) if isinstance(v, (str, bytes, list, tuple, dict)) else 1


def _traversal(v) -> int:
    """Kubernetes' ``traversalCost``: a tenth of a string's bytes
    (rounded down), summed over lists and maps, 1 for anything else."""
    if isinstance(v, str):
        return int(len(v.encode("utf-8", "surrogatepass")) * _TRAVERSAL)
    if isinstance(v, bytes):
        return int(len(v) * _TRAVERSAL)
    if isinstance(v, (list, tuple)):
        return sum(_traversal(x) for x in v)
    if isinstance(v, dict):
        return sum(_traversal(k) + _traversal(x) for k, x in v.items())
    return 1


def _tenth(n: float) -> int:
    return math.ceil(n * _TRAVERSAL)


def self_compare(items) -> int:
    """The lists extension's O(n^2) tracker (sort, distinct, sortBy)."""
    n = len(items)
    factor = 2.0
    if n and isinstance(items[0], (str, bytes)):
        factor += _TRAVERSAL
    return int(n * n * factor) + 1 + LIST_CREATE


def _contains_ip(args) -> int:
    cost = math.ceil((_k8s_size(args[0]) * 2) * _TRAVERSAL)
    return cost + (_tenth(_k8s_size(args[1])) if isinstance(args[1], str) else 0)


def _contains_cidr(args) -> int:
    s = _k8s_size(args[0])
    cost = math.ceil((s + s) * _TRAVERSAL) + _tenth(s) + 1
    return cost + (_tenth(_k8s_size(args[1])) if isinstance(args[1], str) else 0)


def _regex_cost(text, pattern) -> int:
    return math.ceil((1.0 + size_of(text)) * _TRAVERSAL) * math.ceil(size_of(pattern) * _REGEX)


#: function or method name -> cost(args, result); ``args`` start with the
#: receiver of a method.  Kubernetes' estimator's entries, then the
#: extensions' trackers, then cel-go's own size-dependent overloads.
CALL_COSTS = {
    **{name: (lambda a, r: _traversal(a[0]) if a else 0)
       for name in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf")},
    **{name: (lambda a, r: _tenth(_k8s_size(a[0])))
       for name in ("url", "lowerAscii", "upperAscii", "substring", "trim", "cidr", "isIP",
                    "isCIDR", "quantity", "isQuantity")},
    **{name: (lambda a, r: math.ceil(_k8s_size(a[0]) * 2 * _TRAVERSAL))
       for name in ("replace", "split", "ip.isCanonical")},
    "join": lambda a, r: math.ceil(_k8s_size(r) * 2 * _TRAVERSAL),
    "find": lambda a, r: _regex_cost(a[0], a[1]),
    "findAll": lambda a, r: _regex_cost(a[0], a[1]),
    # ``ip()`` of a CIDR reads a field; ``ip(s)`` parses
    "ip": lambda a, r: _tenth(_k8s_size(a[0])) if isinstance(a[0], str) else 1,
    "containsIP": lambda a, r: _contains_ip(a),
    "containsCIDR": lambda a, r: _contains_cidr(a),
    # cel-go's sets extension
    "sets.contains": lambda a, r: 1 + int(size_of(a[0]) * size_of(a[1]) * 1.0),
    "sets.intersects": lambda a, r: 1 + int(size_of(a[0]) * size_of(a[1]) * 1.0),
    "sets.equivalent": lambda a, r: 1 + int(size_of(a[0]) * size_of(a[1]) * 2.0),
    # cel-go's lists extension (version 3)
    **{name: (lambda a, r: size_of(r) + 1 + LIST_CREATE)
       for name in ("slice", "lists.range", "reverse")},
    "flatten": lambda a, r: int((a[1] if len(a) > 1 else 1) * size_of(a[0])) + 1 + LIST_CREATE,
    "distinct": lambda a, r: self_compare(a[0]),
    "sort": lambda a, r: self_compare(a[0]),
    # cel-go's own
    "startsWith": lambda a, r: _tenth(size_of(a[0])),
    "endsWith": lambda a, r: _tenth(size_of(a[0])),
    "format": lambda a, r: _tenth(size_of(a[0])),
    "strings.quote": lambda a, r: _tenth(size_of(a[0])),
    "contains": lambda a, r: _tenth(size_of(a[0])) * _tenth(size_of(a[1])),
    "matches": lambda a, r: _regex_cost(a[0], a[1]),
    "string": lambda a, r: _tenth(size_of(a[0])) if isinstance(a[0], bytes) else 1,
    "bytes": lambda a, r: _tenth(size_of(a[0])) if isinstance(a[0], str) else 1,
}


def operator_cost(op: str, a, b) -> int:
    if op in ("==", "!="):
        return _tenth(min(size_of(a), size_of(b)))
    if op in ("<", "<=", ">", ">="):
        both = (isinstance(a, str) and isinstance(b, str)) or \
            (isinstance(a, bytes) and isinstance(b, bytes))
        return _tenth(min(size_of(a), size_of(b))) if both else 1
    if op == "in":
        return size_of(b) if isinstance(b, (list, tuple)) else 1
    if op == "+":
        both = (isinstance(a, str) and isinstance(b, str)) or \
            (isinstance(a, bytes) and isinstance(b, bytes))
        return _tenth(size_of(a) + size_of(b)) if both else 1
    return 1


def call_cost(name: str, args, result) -> int:
    """One call's cost (``args``: the receiver first for a method)."""
    fn = CALL_COSTS.get(name)
    if fn is not None and not any(isinstance(a, CELEvalError) for a in args):
        try:
            return fn(args, result)
        except (IndexError, TypeError):
            pass            # no overload takes these arguments: a nominal call
    return 1
