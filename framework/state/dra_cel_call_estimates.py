"""What one call adds to a static cost estimate (``dra_cel_estimate``),
in cel-go's order: its lists and sets extensions' own estimators, then
Kubernetes' ``library.CostEstimator.EstimateCallCost``, then cel-go's
size-dependent built-ins, else 1; with the call's result size where an
estimator gives one.  The static twin of ``dra_cel_call_costs``.

Costs and sizes are ranges (min, max) in unsigned 64-bit arithmetic that
saturates at 2**64 - 1 as cel-go's does.  ``target`` and ``args`` are the
estimator's records of the receiver and arguments: their static ``type``
(``dra_cel_types``' spelling), ``size`` (None: unknown), field ``path``
and, for an int literal, its value (``literal``).
"""

from __future__ import annotations

import math

from .dra_cel_types import element_type, type_family

__all__ = ["LIST_CREATE", "MAP_CREATE", "MAX_UINT64", "ONE", "UNKNOWN", "ZERO", "TRAVERSAL",
           "Range", "add", "allocating", "factor", "function_cost", "mul", "size_or_unknown",
           "sort_cost", "union"]


#: cel-go's saturation value (``math.MaxUint64``)
MAX_UINT64 = 2**64 - 1

TRAVERSAL = 0.1             # common.StringTraversalCostFactor
_REGEX = 0.25               # common.RegexStringLengthCostFactor
LIST_CREATE = 10            # common.ListCreateBaseCost
MAP_CREATE = 30             # common.MapCreateBaseCost
_DOUBLE_2_64 = math.ldexp(1.0, 64)


#: a size or cost range: (min, max)
Range = tuple


def add(a: Range, b: Range) -> Range:
    return (min(a[0] + b[0], MAX_UINT64), min(a[1] + b[1], MAX_UINT64))


def mul(a: Range, b: Range) -> Range:
    return (min(a[0] * b[0], MAX_UINT64), min(a[1] * b[1], MAX_UINT64))


def union(a: Range, b: Range) -> Range:
    return (min(a[0], b[0]), max(a[1], b[1]))


def _factor1(x: int, f: float) -> int:
    """cel-go's ``multiplyByCostFactor``: ``ceil(x * f)`` in float64,
    saturated."""
    xf = float(x)
    if xf > 0 and f > 0 and xf > MAX_UINT64 / f:
        return MAX_UINT64
    c = math.ceil(xf * f)
    return MAX_UINT64 if c >= _DOUBLE_2_64 else int(c)


def factor(a: Range, f: float) -> Range:
    return (_factor1(a[0], f), _factor1(a[1], f))


UNKNOWN: Range = (0, MAX_UINT64)
ONE: Range = (1, 1)
ZERO: Range = (0, 0)


def size_or_unknown(info) -> Range:
    """A value's size, 0 to 2**64 - 1 when unknown (cel-go's
    ``sizeOrUnknown``)."""
    return info.size if info.size is not None else UNKNOWN


#: Kubernetes' nominal calls (IP and CIDR accessors, quantity and semver
#: methods)
_K8S_NOMINAL = ("masked", "prefixLength", "family", "isUnspecified", "isLoopback",
                "isLinkLocalMulticast", "isLinkLocalUnicast", "sign", "asInteger",
                "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan",
                "compareTo", "add", "sub")
_STRINGY = ("string", "bytes")
_DYNAMIC = ("dyn", "any")


def function_cost(name: str, target, args: list, size_of) -> tuple:
    """(cost, result size or None) of the call itself, in cel-go's
    order: the extensions' estimators, Kubernetes', cel-go's own."""
    sz = size_or_unknown
    # cel-go's sets extension
    if name in ("sets.contains", "sets.intersects", "sets.equivalent") and len(args) == 2:
        f = 2.0 if name == "sets.equivalent" else 1.0
        return add(factor(mul(sz(args[0]), sz(args[1])), f), ONE), None
    # cel-go's lists extension (version 3)
    if target is not None and type_family(target.type) in ("list", "dyn", "any"):
        listed = _list_ext(name, target, args)
        if listed is not None:
            return listed
    if name == "lists.range" and target is None and len(args) == 1:
        n = args[0].literal if args[0].literal is not None else MAX_UINT64
        return allocating(1.0, (max(n, 0),) * 2)
    k8s = _kubernetes(name, target, args, size_of)
    if k8s is not None:
        return k8s
    return _builtin(name, target, args)


def allocating(weight: float, size: Range) -> tuple:
    """The lists extension's allocating call: the result's size times
    ``weight``, 1 for the call, 10 for the new list."""
    cost = add(add(factor(size, weight), ONE), (LIST_CREATE,) * 2)
    return cost, size


def _list_ext(name, target, args):
    sz = size_or_unknown(target)
    if name == "slice" and len(args) == 2:
        start = args[0].literal if args[0].literal is not None else 0
        end = args[1].literal if args[1].literal is not None else sz[1]
        n = (max(end, 0) - max(start, 0)) % (MAX_UINT64 + 1)   # Go's unsigned wrap
        return allocating(1.0, (n, n))
    if name == "reverse" and not args and target.type != "string":
        return allocating(1.0, sz)
    if name == "flatten" and len(args) <= 1:
        depth = 1
        if args:
            depth = args[0].literal if args[0].literal is not None else MAX_UINT64
        return allocating(float(max(depth, 0)), sz)
    if name == "distinct" and not args:
        return allocating(2.0, mul(sz, sz))
    if name == "sort" and not args:
        return sort_cost(element_type(target.type), sz)
    return None


def sort_cost(element: str, size: Range) -> tuple:
    """The lists extension's O(n^2) sort of ``size`` elements of type
    ``element``: 2 per comparison, 2.1 for strings and bytes; a dynamic
    element type admits every comparable type's overload (their union)."""
    cost, size = allocating(2.0 + (TRAVERSAL if element in _STRINGY else 0.0), mul(size, size))
    if element in _DYNAMIC:
        cost = union(cost, allocating(2.0 + TRAVERSAL, size)[0])
    return cost, size


def _element_size(target, size_of) -> tuple:
    """Kubernetes' ``listElementNode``: (element type, its size) of a
    list, by the list's path; None when the type has no parameter."""
    if type_family(target.type) != "list":
        return None
    element = element_type(target.type)     # a bare ``list`` is cel-go's list(dyn)
    path = target.path + ("@items",) if target.path else None
    size = size_of(path) if path else None
    return element, size if size is not None else UNKNOWN


def _kubernetes(name, target, args, size_of):
    """``library.CostEstimator.EstimateCallCost``; None where it gives
    no estimate (then cel-go's own applies)."""
    sz = size_or_unknown
    if name in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf") \
            and target is not None:
        element = _element_size(target, size_of)
        if element is not None:
            each = ONE
            if element[0] in _STRINGY:
                each = add(each, factor(element[1], TRAVERSAL))
            return mul(sz(target), each), None
        return factor(sz(target), TRAVERSAL), None
    if name == "url" and len(args) == 1:
        return factor(sz(args[0]), TRAVERSAL), None
    if name in ("lowerAscii", "upperAscii", "substring", "trim") and target is not None:
        s = sz(target)
        return factor(s, TRAVERSAL), s
    if name == "replace" and target is not None and len(args) >= 2:
        return factor(sz(target), 2 * TRAVERSAL), _replace_size(
            sz(target), sz(args[0]), sz(args[1]))
    if name == "split" and target is not None:
        s = sz(target)
        most = s[1]
        if len(args) > 1 and args[1].literal is not None:
            most = max(args[1].literal, 0)
        return factor(s, 2 * TRAVERSAL), (0, most)
    if name == "join" and target is not None:
        listed = sz(target)
        size = ZERO
        element = _element_size(target, size_of)
        if element is not None:
            size = mul(listed, element[1])
        if args:
            seps = (max(listed[0] - 1, 0), max(listed[1] - 1, 0))
            size = add(size, mul(sz(args[0]), seps))
        return factor(size, TRAVERSAL), size
    if name in ("find", "findAll") and target is not None and args:
        s = sz(target)
        text = factor(add(s, ONE), TRAVERSAL)
        regex = factor(sz(args[0]), _REGEX)
        return mul(text, regex), (0, s[1])
    if name in ("cidr", "isIP", "isCIDR", "quantity", "isQuantity") \
            and target is not None and args:
        # only as a method: called as the global functions they are,
        # Kubernetes gives no estimate and cel-go's 1 applies
        return factor(sz(args[0]), TRAVERSAL), None
    if name == "ip" and target is not None:
        if args:
            return factor(sz(args[0]), TRAVERSAL), None
        return ONE, None           # a CIDR's address: a field read
    if name == "ip.isCanonical" and target is not None and args:
        return factor(sz(args[0]), 2 * TRAVERSAL), None
    if name in _K8S_NOMINAL:
        return ONE, None
    if name in ("containsIP", "containsCIDR") and target is not None and args:
        ip = (4, 16)                # an IPv4 or IPv6 address's bytes
        cost = factor(add(ip, ip), TRAVERSAL)
        if name == "containsCIDR":
            cost = add(add(cost, factor(ip, TRAVERSAL)), ONE)
        with_string = add(cost, factor(sz(args[0]), TRAVERSAL))
        t = args[0].type
        if t == "string":
            return with_string, None
        if t in _DYNAMIC:
            return union(cost, with_string), None
        return cost, None
    return None


def _replace_size(s: Range, old: Range, new: Range) -> Range:
    """Kubernetes' bound on ``s.replace(old, new)``'s length."""
    lo_count = hi_count = 0
    retained_lo = retained_hi = 0
    if old[0] == 0:
        hi_count = s[1] + 1 if s[1] < MAX_UINT64 else s[1]
        retained_hi = s[1]
    elif new[1] <= old[0]:
        retained_hi = s[1]
    else:
        hi_count = math.ceil(s[1] / old[0])
    if old[1] == 0:
        lo_count = s[0] + 1 if s[0] < MAX_UINT64 else s[0]
        retained_lo = s[0]
    elif old[1] <= new[0]:
        retained_lo = s[0]
    else:
        lo_count = math.ceil(s[0] / old[1])
    return add(mul((lo_count, hi_count), new), (retained_lo, retained_hi))


def _builtin(name, target, args):
    """cel-go's size-dependent built-ins, else 1."""
    sz = size_or_unknown
    if name == "format" and target is not None:
        return factor(sz(target), TRAVERSAL), None
    if name in ("string", "bytes") and target is None and len(args) == 1:
        a = args[0]
        s = sz(a)
        source = "bytes" if name == "string" else "string"
        if name == "string":
            size = (s[0] // 4, s[1])
        else:
            size = (s[0], min(s[1] * 4, MAX_UINT64))
        own = factor(s, TRAVERSAL)
        if a.type == source:
            return own, size
        if a.type in _DYNAMIC:      # every conversion's overload: the union
            return union(own, ONE), size
        return ONE, None
    if name == "strings.quote" and len(args) == 1:
        s = sz(args[0])
        return factor(s, TRAVERSAL), (s[0] + 2, min(s[1] * 2 + 2, MAX_UINT64))
    if name in ("startsWith", "endsWith") and target is not None and len(args) == 1:
        return factor(sz(args[0]), TRAVERSAL), None
    if name == "matches" and target is not None and len(args) == 1:
        # the method only: the global ``matches(s, re)`` is another overload,
        # which cel-go's estimator leaves at 1
        cost = factor(add(sz(target), ONE), TRAVERSAL)
        return mul(cost, factor(sz(args[0]), _REGEX)), None
    if name == "contains" and target is not None and len(args) == 1:
        return mul(factor(sz(target), TRAVERSAL), factor(sz(args[0]), TRAVERSAL)), None
    return ONE, None
