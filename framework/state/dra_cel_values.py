"""The values CEL works on beside cel-python's (optionals, quantities),
their equality and type names, and the runtime error of one evaluation,
shared by the selector compiler (``dra_cel``), the optional syntax's parser
and evaluator (``dra_cel_syntax``) and the extension libraries
(``dra_cel_lists``), which each read them: kept apart so that none of those
modules imports another at load."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from tensorsched.framework.parsing.semver import Semver

__all__ = ["NONE", "MACROS", "TWO_VARIABLE_MACROS", "COST_LIMIT", "CelOptional", "CelRuntimeError",
           "CostLimitExceeded", "Quantity", "cel_equal", "is_cel_number", "type_name"]


#: CEL's comprehension macros (``list.exists(x, ...)``): their first
#: argument names a variable
MACROS = ("all", "exists", "exists_one", "map", "filter", "optMap", "optFlatMap", "sortBy")

#: cel-go's two-variable comprehensions (Kubernetes' base environment from
#: 1.32): macro -> the argument counts it takes (two variables first)
TWO_VARIABLE_MACROS = {"all": (3,), "exists": (3,), "existsOne": (3,), "exists_one": (3,),
                       "transformList": (3, 4), "transformMap": (3, 4),
                       "transformMapEntry": (3, 4)}


class CelRuntimeError(Exception):
    """A runtime error of one evaluation (an error entry for the device)."""


#: ``resourceapi.CELSelectorExpressionMaxCost``: the runtime cost limit of a
#: selector's evaluation (``dra_cel_cost``)
COST_LIMIT = 1_000_000


class CostLimitExceeded(BaseException):
    """An evaluation passed the cost limit.  cel-go panics there: no CEL
    error value, nothing absorbs it (a BaseException, so that no handler of
    ordinary errors on the way does)."""


@dataclass(frozen=True)
class Quantity:
    """A ``resource.Quantity`` value in CEL (exact)."""

    value: Fraction

    def compare(self, other: Quantity) -> int:
        return (self.value > other.value) - (self.value < other.value)


def is_cel_number(v) -> bool:
    """An int or a double in CEL's sense (a bool is neither)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def cel_equal(a, b) -> bool:
    """Heterogeneous equality (cel-go): numbers compare by value, lists
    element-wise, maps key by key, values of different types are unequal."""
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
    if isinstance(a, dict):
        # maps: the same keys, each key's values equal
        return len(a) == len(b) and all(
            any(cel_equal(k, j) and cel_equal(v, b[j]) for j in b) for k, v in a.items())
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


def type_name(v) -> str:
    """A value's CEL type name, as runtime errors print it (a library's
    value class names its own, ``CEL_TYPE``)."""
    named = getattr(type(v), "CEL_TYPE", None)
    if named is not None:
        return named
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "double"
    if isinstance(v, str):
        return "string"
    if isinstance(v, Semver):
        return "kubernetes.Semver"
    if isinstance(v, Quantity):
        return "kubernetes.Quantity"
    if isinstance(v, (tuple, list)):
        return "list"
    if isinstance(v, dict):
        return "map"
    if isinstance(v, CelOptional):
        return "optional_type"
    if v is None:
        return "null_type"
    return type(v).__name__
