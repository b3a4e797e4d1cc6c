"""CEL's set and list libraries for DRA selectors, on our values.

Kubernetes' base CEL environment (the one DRA's stored selectors compile
in) enables cel-go's sets extension and its own lists library:

- ``sets.contains(a, b)``: every element of ``b`` equals one of ``a``
  (true for an empty ``b``); ``sets.equivalent(a, b)``: each contains the
  other (sizes and duplicates do not matter); ``sets.intersects(a, b)``:
  some element of ``a`` equals one of ``b`` (false when either is empty).
  Equality is CEL's heterogeneous one (``1``, ``1u`` and ``1.0`` are equal).
- ``l.isSorted()``, ``l.sum()``, ``l.min()``, ``l.max()``,
  ``l.indexOf(x)``, ``l.lastIndexOf(x)`` on lists (the strings extension's
  ``indexOf`` / ``lastIndexOf`` on strings stay ``dra_cel``'s):
  ordering needs elements of one comparable type (numbers compare across
  int and double), ``sum`` of an empty list is ``0``, ``min`` / ``max`` of
  an empty list is an error, ``indexOf`` is ``-1`` when no element equals.

Values are ``dra_cel``'s (tuples for lists); a wrong argument type is the
runtime error ``no such overload`` (the API server's checker refuses what
it knows statically; an attribute value is known only at run time).
"""

from __future__ import annotations

from .dra_cel_values import CelRuntimeError, cel_equal, is_cel_number, type_name

__all__ = ["SET_FUNCTIONS", "LIST_METHODS"]


def _lists(fn: str, *values) -> None:
    if not all(isinstance(v, (tuple, list)) for v in values):
        names = ", ".join(type_name(v) for v in values)
        raise CelRuntimeError(f"no such overload: {fn}({names})")


def _contains(items, wanted) -> bool:
    return all(any(cel_equal(w, x) for x in items) for w in wanted)


def sets_contains(a, b) -> bool:
    _lists("sets.contains", a, b)
    return _contains(a, b)


def sets_equivalent(a, b) -> bool:
    _lists("sets.equivalent", a, b)
    return _contains(a, b) and _contains(b, a)


def sets_intersects(a, b) -> bool:
    _lists("sets.intersects", a, b)
    return any(any(cel_equal(x, y) for y in b) for x in a)


#: ``sets.<name>(a, b)``: global functions of cel-go's sets extension
SET_FUNCTIONS = {
    "sets.contains": sets_contains,
    "sets.equivalent": sets_equivalent,
    "sets.intersects": sets_intersects,
}

#: types whose values one list may order (numbers compare across kinds)
_ORDERED = (str, bytes, bool)


def _ordered(items, fn: str) -> list:
    """The elements of ``items`` when they are all one comparable type
    (int and double together), else ``no such overload``."""
    _lists(fn, items)
    items = list(items)
    if all(is_cel_number(x) for x in items):
        return items
    if items and isinstance(items[0], _ORDERED) and all(type(x) is type(items[0])
                                                         for x in items):
        return items
    kinds = sorted({type_name(x) for x in items})
    raise CelRuntimeError(f"no such overload: list({'|'.join(kinds)}).{fn}")


def _is_sorted(items) -> bool:
    v = _ordered(items, "isSorted")
    return all(not (b < a) for a, b in zip(v, v[1:]))


def _sum(items):
    v = _ordered(items, "sum")
    if v and not is_cel_number(v[0]):
        raise CelRuntimeError(f"no such overload: list({type_name(v[0])}).sum")
    total = sum(v, 0)
    return float(total) if any(isinstance(x, float) for x in v) else total


def _extreme(fn: str, pick):
    def extreme(items):
        v = _ordered(items, fn)
        if not v:
            raise CelRuntimeError(f"{fn} called on empty list")
        return pick(v)
    return extreme


def _list_index(items, x, last=False) -> int:
    _lists("lastIndexOf" if last else "indexOf", items)
    found = [i for i, y in enumerate(items) if cel_equal(x, y)]
    if not found:
        return -1
    return found[-1] if last else found[0]


#: receiver methods of Kubernetes' lists library: name -> f(list, *args);
#: ``indexOf`` / ``lastIndexOf`` are the list forms (``dra_cel`` sends the
#: string forms to the strings extension)
LIST_METHODS = {
    "isSorted": _is_sorted,
    "sum": _sum,
    "min": _extreme("min", min),
    "max": _extreme("max", max),
    "indexOf": _list_index,
    "lastIndexOf": lambda items, x: _list_index(items, x, last=True),
}
