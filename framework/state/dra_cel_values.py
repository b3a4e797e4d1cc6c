"""The values CEL's optional library and equality work on, shared by the
selector compiler (``dra_cel``) and the optional syntax's parser and
evaluator (``dra_cel_syntax``), which each read them: kept apart so that
neither module imports the other at load."""

from __future__ import annotations

__all__ = ["NONE", "CelOptional", "cel_equal", "is_cel_number"]


def is_cel_number(v) -> bool:
    """An int or a double in CEL's sense (a bool is neither)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def cel_equal(a, b) -> bool:
    """Heterogeneous equality (cel-go): numbers compare by value, lists
    element-wise, values of different types are unequal."""
    if is_cel_number(a) and is_cel_number(b):
        return a == b
    if isinstance(a, CelOptional) or isinstance(b, CelOptional):
        return a == b
    if type(a) is not type(b) and not (
        isinstance(a, (tuple, list)) and isinstance(b, (tuple, list))
    ):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(cel_equal(x, y) for x, y in zip(a, b))
    return a == b


class CelOptional:
    """CEL's ``optional_type(T)`` value: ``value`` when ``has_value``
    (``optional.of(v)``), else :data:`NONE` (``optional.none()``)."""

    __slots__ = ("value", "has_value")

    def __init__(self, *value):
        self.has_value = bool(value)
        self.value = value[0] if value else None

    def __eq__(self, other):
        if not isinstance(other, CelOptional):
            return NotImplemented
        if not (self.has_value and other.has_value):
            return self.has_value == other.has_value
        return cel_equal(self.value, other.value)

    def __hash__(self):
        return hash(("optional", self.has_value))

    def __repr__(self):
        return f"optional.of({self.value!r})" if self.has_value else "optional.none()"


#: ``optional.none()``
NONE = CelOptional()
