"""``framework.arguments``: each check returns the value in the form the
code uses and refuses a bad one with an ArgumentError that names the
function and the argument (``function: argument: problem``)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tensorsched.framework.arguments import MAX_SEED, Arguments, shown
from tensorsched.framework.errors import ArgumentError, TensorschedError
from tensorsched.kernels.backend_names import BACKENDS

A = Arguments("f")


def refused(call, *args, **kwargs) -> ArgumentError:
    with pytest.raises(ArgumentError) as info:
        call(*args, **kwargs)
    return info.value


def test_shown_cuts_a_long_repr_to_sixty_characters():
    assert shown("ab") == "'ab'"
    long = shown("x" * 100)
    assert len(long) == 60 and long.endswith("...") and long.startswith("'xxx")
    assert shown("x" * 58) == repr("x" * 58)          # exactly 60: kept whole


def test_an_error_names_the_function_and_the_argument():
    err = A.error("limit", "is bad")
    assert isinstance(err, ArgumentError) and isinstance(err, TensorschedError)
    assert isinstance(err, ValueError)
    assert (err.function, err.argument, err.problem) == ("f", "limit", "is bad")
    assert str(err) == "f: limit: is bad"


@settings(max_examples=30)
@given(st.integers(-5, 5), st.integers(-5, 5), st.integers(-10, 10))
def test_integer_accepts_exactly_the_bounded_range(lo, hi, v):
    if lo <= v <= hi:
        assert A.integer("n", v, lo, hi) == v
    else:
        err = refused(A.integer, "n", v, lo, hi)
        assert str(err) == f"f: n: must be an integer {lo}..{hi}, got {v}"


def test_integer_turns_a_numpy_integer_into_int_and_refuses_bools_and_floats():
    got = A.integer("n", np.int64(3), 1)
    assert got == 3 and type(got) is int
    assert "must be an integer >= 1, got True" in str(refused(A.integer, "n", True, 1))
    assert "must be an integer <= 4, got 2.0" in str(refused(A.integer, "n", 2.0, None, 4))
    assert "must be an integer, got '3'" in str(refused(A.integer, "n", "3"))


def test_integer_optional_passes_none_and_says_so_in_the_message():
    assert A.integer("n", None, 0, optional=True) is None
    assert str(refused(A.integer, "n", -1, 0, optional=True)) == \
        "f: n: must be an integer >= 0 or None, got -1"
    refused(A.integer, "n", None, 0)


def test_number_bounds_open_and_closed():
    assert A.number("x", 0, 0) == 0.0 and type(A.number("x", 1, 0)) is float
    err = refused(A.number, "x", 0, 0, above=True)
    assert "must be a finite number > 0, got 0" in str(err)
    assert A.number("x", 1, 0, 1, above=True) == 1.0
    err = refused(A.number, "x", 1.5, 0, 1, above=True, unit="seconds")
    assert "must be a finite number of seconds in (0, 1], got 1.5" in str(err)
    assert "in [0, 1]" in str(refused(A.number, "x", -0.1, 0, 1))
    assert "<= 2" in str(refused(A.number, "x", 3, None, 2))


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, True, "1", None, 10 ** 400])
def test_number_refuses_nan_infinity_bools_strings_and_overflow(value):
    err = refused(A.number, "x", value)
    assert str(err).startswith("f: x: must be a finite number, got ")


def test_number_allows_infinity_only_when_asked():
    assert A.number("x", math.inf, 0, infinite=True) == math.inf
    refused(A.number, "x", math.nan, infinite=True)
    assert A.number("x", None, optional=True) is None


def test_seed_is_an_int64_at_or_above_zero():
    assert A.seed(0) == 0 and A.seed(MAX_SEED) == MAX_SEED == 2 ** 63 - 1
    refused(A.seed, -1)
    err = refused(A.seed, MAX_SEED + 1, name="rng")
    assert err.argument == "rng"


def test_choice_and_backend():
    assert A.choice("mode", "a", ("a", "b")) == "a"
    assert str(refused(A.choice, "mode", "c", ("a", "b"))) == \
        "f: mode: must be one of a, b, got 'c'"
    refused(A.choice, "mode", 1, ("1",))
    for name in BACKENDS:
        assert A.backend(name) == name
    assert refused(A.backend, "fortran").argument == "backend"


def test_flag_accepts_only_bools():
    assert A.flag("quiet", True) is True and A.flag("quiet", False) is False
    for v in (0, 1, "true", None):
        assert "must be True or False" in str(refused(A.flag, "quiet", v))


def test_text_is_a_nonempty_string():
    assert A.text("name", "x") == "x"
    assert A.text("name", None, optional=True) is None
    for v in ("", None, b"x", 3):
        assert "must be a non-empty string" in str(refused(A.text, "name", v))


def test_path_accepts_pathlike_and_checks_existence(tmp_path):
    assert A.path("out", tmp_path) == str(tmp_path)
    assert A.path("out", "nowhere/at/all") == "nowhere/at/all"
    missing = tmp_path / "missing.yaml"
    err = refused(A.path, "cluster", missing, exists=True)
    assert str(err) == f"f: cluster: {str(missing)!r} does not exist"
    for v in ("", "a\0b", 3, None):
        assert "must be a path" in str(refused(A.path, "out", v))
    assert A.path("out", Path(tmp_path), exists=True) == str(tmp_path)


def test_sequence_reads_an_iterable_once_into_a_list():
    assert A.sequence("xs", (i for i in range(3)), int) == [0, 1, 2]
    assert A.sequence("xs", None, optional=True) is None
    for v in ("abc", b"ab", {"a": 1}, 5):
        assert "must be a list of items" in str(refused(A.sequence, "xs", v))
    err = refused(A.sequence, "paths", ["a", 2], str, "a path", "paths")
    assert (err.argument, err.problem) == ("paths[1]", "must be a path, got 2")
    assert "non-empty list of items, got []" in str(refused(A.sequence, "xs", [], nonempty=True))


def test_sequence_with_a_limit_never_lists_an_endless_generator():
    assert A.sequence("xs", iter(range(3)), int, limit=3) == [0, 1, 2]
    err = refused(A.sequence, "xs", itertools.count(), int, limit=5)
    assert (err.argument, err.problem) == ("xs", "at most 5 items, got more")
    assert "at most 2 items" in str(refused(A.sequence, "xs", [1, 2, 3], limit=2))


def test_items_reads_at_most_the_bound_plus_one_and_refuses_past_it():
    """A huge range is refused by its length, an endless generator after
    ``limit + 1`` items; the bound is the CLI's seeds in one sweep."""
    from tensorsched.framework.arguments import MAX_ITEMS
    from tensorsched.topology.openb.limits import MAX_SEEDS
    assert MAX_ITEMS == MAX_SEEDS
    assert A.items("seeds", range(3)) == [0, 1, 2] and A.items("seeds", 7) == [7]
    assert A.items("seeds", range(MAX_ITEMS)) == list(range(MAX_ITEMS))
    err = refused(A.items, "seeds", range(10**12))
    assert str(err) == f"f: seeds: at most {MAX_ITEMS} items, got {10**12}"
    assert refused(A.items, "seeds", range(10**30)).problem.endswith(f"got {10**30}")
    assert refused(A.items, "xs", np.zeros(6), limit=5).problem == "at most 5 items, got 6"
    assert refused(A.items, "xs", list(range(6)), limit=5).argument == "xs"
    endless = itertools.count()
    err = refused(A.items, "seeds", endless, limit=5)
    assert str(err) == "f: seeds: at most 5 items, got more"
    assert next(endless) == 6                     # read 0..5: the bound + 1, no more
    assert A.items("xs", (i for i in range(5)), limit=5) == [0, 1, 2, 3, 4]


def test_names_refuses_empty_names_by_index():
    assert A.names("nodes", ["a", "b"]) == ["a", "b"]
    assert A.names("nodes", None, optional=True) is None
    err = refused(A.names, "nodes", ["a", ""])
    assert err.argument == "nodes[1]" and "non-empty name" in err.problem
    assert refused(A.names, "nodes", ["a", 3]).argument == "nodes[1]"


def test_mapping_instance_and_callback():
    assert A.mapping("args", {"a": 1}) == {"a": 1}
    assert A.mapping("args", None, optional=True) is None
    assert "must be a mapping (dict), got [1]" in str(refused(A.mapping, "args", [1]))
    assert "must be a config" in str(refused(A.mapping, "args", 1, what="a config"))
    assert A.instance("n", 3, int, "an int") == 3
    assert A.instance("n", None, int, "an int", optional=True) is None
    assert str(refused(A.instance, "n", "3", int, "an int")) == "f: n: must be an int, got '3'"
    assert A.callback("cb", len) is len
    assert A.callback("cb", None, optional=True) is None
    assert "must be callable, got 3" in str(refused(A.callback, "cb", 3))
