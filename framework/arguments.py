"""The checks every public function runs on its arguments where they enter.

A function makes one ``Arguments("how_many_fit")`` and passes each argument
through the check of what it must be; a bad one raises
:class:`~tensorsched.framework.errors.ArgumentError` naming the function
and the argument as the signature spells it, in the CLI's words
(``how_many_fit: limit: must be an integer >= 1, got -1``), before any work
is done.  The checks return the value in the form the code uses (a list
for a sequence, ``str`` for a path, ``int`` for a NumPy integer) so a
generator is read once and a string is never iterated as a list.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterator, Mapping
from itertools import islice, repeat

from tensorsched.framework.errors import ArgumentError
from tensorsched.kernels.backend_names import BACKENDS

__all__ = ["Arguments", "MAX_ITEMS", "MAX_LISTED_PODS", "MAX_OBJECTS", "MAX_SEED", "shown"]

MAX_SEED = (1 << 63) - 1          # the CLI's --seed bound: any int64 >= 0
# ``items``' bound: the CLI's seeds in one sweep (topology/openb/limits.MAX_SEEDS,
# kept equal by a test; that module stays free of this one's imports)
MAX_ITEMS = 10_000
# A cluster's objects (build_cluster, Simulation, SchedulingEnv): Kubernetes'
# scalability bounds (5,000 nodes, 150,000 pods) keep a real dump far under a
# million objects; ten million is never one, and is refused having read no more
# (an endless generator of objects is never listed).
MAX_OBJECTS = 10_000_000
# The pod dicts one call lists (Simulation.submit's pods, a trace's templates,
# SchedulingEnv's pods): expand_workloads' bound (parsing/controllers.
# MAX_EXPANDED_PODS, kept equal by a test); more pods come as a trace, read
# row by row.
MAX_LISTED_PODS = 1_000_000


def shown(value) -> str:
    """``value`` as an error message shows it: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_integer(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _size(value) -> int:
    """``len(value)``, a range's too when it passes ``sys.maxsize`` (where
    ``len`` raises OverflowError)."""
    if isinstance(value, range):
        step = value.step
        return max(0, (value.stop - value.start + step - (1 if step > 0 else -1)) // step)
    return len(value)


class Arguments:
    """The argument checks of one public function (``function`` starts
    every message)."""

    def __init__(self, function: str):
        self.function = function

    def error(self, name: str, problem: str) -> ArgumentError:
        """The error about argument ``name`` (to raise)."""
        return ArgumentError(self.function, name, problem)

    def integer(self, name: str, value, lo: int | None = None, hi: int | None = None, *,
                optional: bool = False) -> int | None:
        """An integer (not a bool) in lo..hi; None passes when ``optional``."""
        if value is None and optional:
            return None
        bounds = (f"{lo}..{hi}" if lo is not None and hi is not None
                  else f">= {lo}" if lo is not None else f"<= {hi}" if hi is not None else "")
        want = f"an integer {bounds}".rstrip() + (" or None" if optional else "")
        if not _is_integer(value):
            raise self.error(name, f"must be {want}, got {shown(value)}")
        v = int(value)
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise self.error(name, f"must be {want}, got {v}")
        return v

    def number(self, name: str, value, lo: float | None = None, hi: float | None = None, *,
               above: bool = False, optional: bool = False, infinite: bool = False,
               unit: str = "") -> float | None:
        """A real number (not a bool) >= lo (> lo with ``above``) and <= hi,
        as a float; finite unless ``infinite`` (``inf`` for "never"); never
        NaN.  ``unit`` names it in the message (``"seconds"``)."""
        if value is None and optional:
            return None
        if lo is not None and hi is not None:
            bound = f" in {'(' if above else '['}{lo:g}, {hi:g}]"
        elif lo is not None:
            bound = f" {'>' if above else '>='} {lo:g}"
        else:
            bound = "" if hi is None else f" <= {hi:g}"
        want = (f"a {'' if infinite else 'finite '}number{' of ' + unit if unit else ''}"
                f"{bound}" + (" or None" if optional else ""))
        try:
            v = float(value) if _is_number(value) else math.nan
        except OverflowError:              # an int past a float's range
            v = math.nan
        out_of_range = (lo is not None and (v <= lo if above else v < lo)) or (
            hi is not None and v > hi)
        if math.isnan(v) or (math.isinf(v) and not infinite) or out_of_range:
            raise self.error(name, f"must be {want}, got {shown(value)}")
        return v

    def seed(self, value, name: str = "seed") -> int:
        """A seed: an integer 0..2**63-1 (as the CLI's ``--seed``)."""
        return self.integer(name, value, 0, MAX_SEED)

    def choice(self, name: str, value, choices) -> str:
        """One of the strings ``choices``."""
        if not isinstance(value, str) or value not in choices:
            raise self.error(name, f"must be one of {', '.join(choices)}, got {shown(value)}")
        return value

    def backend(self, value, name: str = "backend") -> str:
        """A kernel backend name (whether it can run here is the backend's
        own check, with its own message)."""
        return self.choice(name, value, BACKENDS)

    def flag(self, name: str, value) -> bool:
        """True or False (not 0, 1 or a string)."""
        if not isinstance(value, bool):
            raise self.error(name, f"must be True or False, got {shown(value)}")
        return value

    def text(self, name: str, value, *, optional: bool = False) -> str | None:
        """A non-empty string."""
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value:
            raise self.error(name, f"must be a non-empty string, got {shown(value)}")
        return value

    def path(self, name: str, value, *, exists: bool = False) -> str:
        """A file system path (a string or ``os.PathLike``), as a string;
        with ``exists`` it must name a file or directory that is there."""
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, str) or not value or "\0" in value:
            raise self.error(name, f"must be a path (a string or os.PathLike), got {shown(value)}")
        if exists and not os.path.exists(value):
            raise self.error(name, f"{value!r} does not exist")
        return value

    def sequence(self, name: str, value, kinds: type | tuple = object, item: str = "an item",
                 items: str = "items", *, optional: bool = False,
                 nonempty: bool = False, limit: int | None = None) -> list | None:
        """A list, tuple or other iterable of ``kinds`` (never a string,
        bytes or a mapping, which would be iterated by character or key),
        as a list; ``item`` and ``items`` name one and several in messages
        (``"a path"``, ``"paths"``).  ``limit``: more items are refused,
        having read at most ``limit + 1`` of them (an endless generator is
        never listed)."""
        if value is None and optional:
            return None
        if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
            raise self.error(name, f"must be a list of {items}, got {shown(value)}")
        if limit is None:
            got = list(value)
        else:
            got = list(islice(value, limit + 1))
            if len(got) > limit:
                raise self.error(name, f"at most {limit:,} {items}, got more")
        if nonempty and not got:
            raise self.error(name, f"must be a non-empty list of {items}, got []")
        # every value is an ``object``: no pass; else one C-level pass first
        if kinds is not object and not all(map(isinstance, got, repeat(kinds))):
            i, v = next((i, v) for i, v in enumerate(got) if not isinstance(v, kinds))
            raise self.error(f"{name}[{i}]", f"must be {item}, got {shown(v)}")
        return got

    def items(self, name: str, value, *, nonempty: bool = True,
              limit: int = MAX_ITEMS) -> list:
        """An argument that is one item or several (``simulate_batch``'s
        ``nodes``, ``traces``, ``configs``, ``seeds``), as a list: the items
        of a list, tuple, range, 1-D array or iterator (a generator is read
        once); anything else (a string, a path, a mapping, one object) is
        the one item.  ``nonempty``: no items is refused; more than
        ``limit`` is refused too, having read at most ``limit + 1`` of them
        (a ``range(10**12)`` or an endless generator is never listed)."""
        array = getattr(value, "ndim", None) == 1 and hasattr(value, "tolist")
        if isinstance(value, (list, tuple, range)) or array:
            count = _size(value)
            if count > limit:
                raise self.error(name, f"at most {limit} items, got {count}")
            got = list(value)              # an array's items: NumPy scalars
        elif isinstance(value, Iterator):
            got = list(islice(value, limit + 1))
            if len(got) > limit:
                raise self.error(name, f"at most {limit} items, got more")
        else:
            got = [value]
        if nonempty and not got:
            raise self.error(name, "empty: at least one")
        return got

    def names(self, name: str, value, *, optional: bool = False,
              nonempty: bool = False) -> list[str] | None:
        """A list of non-empty strings (object names)."""
        got = self.sequence(name, value, str, "a name (a string)", "names",
                            optional=optional, nonempty=nonempty)
        for i, v in enumerate(got or ()):
            if not v:
                raise self.error(f"{name}[{i}]", "must be a non-empty name, got ''")
        return got

    def mapping(self, name: str, value, *, optional: bool = False,
                what: str = "a mapping (dict)") -> Mapping | None:
        """A mapping (a dict or other ``Mapping``)."""
        if value is None and optional:
            return None
        if not isinstance(value, Mapping):
            raise self.error(name, f"must be {what}, got {shown(value)}")
        return value

    def instance(self, name: str, value, kinds: type | tuple, what: str, *,
                 optional: bool = False):
        """An instance of ``kinds`` (``what`` names it in the message)."""
        if value is None and optional:
            return None
        if not isinstance(value, kinds):
            raise self.error(name, f"must be {what}, got {shown(value)}")
        return value

    def callback(self, name: str, value, *, optional: bool = False):
        """A callable."""
        if value is None and optional:
            return None
        if not callable(value):
            raise self.error(name, f"must be callable, got {shown(value)}")
        return value
