"""cel-go's lists extension at version 3 (Kubernetes' base environment
from 1.34) for DRA selectors, on ``dra_cel``'s values (tuples for lists).

- ``l.slice(start, end)``: the elements ``start`` to ``end - 1``; negative
  indexes, ``start > end`` and ``end`` past the list are errors;
- ``l.flatten()`` / ``l.flatten(depth)``: nested lists spliced in, one
  level (or ``depth`` levels; a negative depth is an error);
- ``l.reverse()``, ``l.distinct()`` (first occurrences, heterogeneous
  equality: ``1`` and ``1.0`` are one element), ``lists.range(n)``
  (``0 .. n-1``, empty for ``n <= 0``);
- ``l.sort()`` and the macro ``l.sortBy(v, key)``: ascending by the
  element (by ``key``, evaluated with ``v`` bound to each element); the keys
  must be of one comparable type (int, uint, double, bool, string, bytes:
  ``1`` and ``1.0`` are two types here), else ``list elements must have the
  same type``; a first key of another type is ``list elements must be
  comparable``.  Ties keep their order (Go's sort is stable for the short
  lists a device has: it sorts up to 12 elements by insertion).
"""

from __future__ import annotations

from .dra_cel_values import COST_LIMIT, CelRuntimeError, CostLimitExceeded, cel_equal, type_name

__all__ = ["LISTS_EXT_METHODS", "LISTS_EXT_FUNCTIONS", "sort_by_keys"]


def _list(v, fn: str, *args) -> tuple:
    if not isinstance(v, (tuple, list)):
        sig = ", ".join(type_name(a) for a in args)
        raise CelRuntimeError(f"no such overload: {type_name(v)}.{fn}({sig})")
    return tuple(v)


def _int(v, fn: str, target) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise CelRuntimeError(f"no such overload: {type_name(target)}.{fn}({type_name(v)})")
    return v


def _slice(items, start, end):
    items = _list(items, "slice", start, end)
    a, b = _int(start, "slice", items), _int(end, "slice", items)
    if a < 0 or b < 0:
        raise CelRuntimeError(f"cannot slice({a}, {b}), negative indexes not supported")
    if a > b:
        raise CelRuntimeError(
            f"cannot slice({a}, {b}), start index must be less than or equal to end index")
    if len(items) < b:
        raise CelRuntimeError(f"cannot slice({a}, {b}), list is length {len(items)}")
    return items[a:b]


def _flat(items, depth: int) -> list:
    out: list = []
    for v in items:
        if isinstance(v, (tuple, list)) and depth > 0:
            out.extend(_flat(v, depth - 1))
        else:
            out.append(v)
    return out


def _flatten(items, *depth):
    items = _list(items, "flatten", *depth)
    n = _int(depth[0], "flatten", items) if depth else 1
    if n < 0:
        raise CelRuntimeError("level must be non-negative")
    return tuple(_flat(items, n))


def _distinct(items):
    out: list = []
    for v in _list(items, "distinct"):
        if not any(cel_equal(v, u) for u in out):
            out.append(v)
    return tuple(out)


def _range(n):
    if isinstance(n, bool) or not isinstance(n, int):
        raise CelRuntimeError(f"no such overload: lists.range({type_name(n)})")
    if n + 11 > COST_LIMIT:
        # its cost alone (n + 11, cel-go's tracker) passes the limit: the
        # evaluation ends here, before a list of that size is built
        raise CostLimitExceeded
    return tuple(range(n))


#: the element types ``sort`` orders (cel-go's comparable types we model)
_COMPARABLE = (bool, int, float, str, bytes)


def sort_by_keys(items, keys) -> tuple:
    """``items`` ordered by ``keys`` (cel-go's ``@sortByAssociatedKeys``)."""
    items, keys = tuple(items), tuple(keys)
    if len(items) != len(keys):
        raise CelRuntimeError(
            "@sortByAssociatedKeys() expected a list of the same size as the associated keys "
            f"list, but got {len(items)} and {len(keys)} elements respectively")
    if not items:
        return items
    first = type(keys[0])
    if not issubclass(first, _COMPARABLE):
        raise CelRuntimeError("list elements must be comparable")
    if any(type(k) is not first for k in keys):
        raise CelRuntimeError("list elements must have the same type")
    order = sorted(range(len(keys)), key=lambda i: keys[i])
    return tuple(items[i] for i in order)


def _sort(items):
    items = _list(items, "sort")
    return sort_by_keys(items, items)


LISTS_EXT_METHODS = {
    "slice": _slice,
    "flatten": _flatten,
    "reverse": lambda items: _list(items, "reverse")[::-1],
    "distinct": _distinct,
    "sort": _sort,
}
LISTS_EXT_FUNCTIONS = {"lists.range": _range}
