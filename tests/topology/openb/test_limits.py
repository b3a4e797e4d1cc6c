"""``topology.openb.limits``: seed lists as a sweep's command line writes
them (``42-51``, ``42,43``, a mix), refused with the offending part named;
and the module loads without NumPy (a command line checks its input with
it before loading the kernels)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from tensorsched.topology.openb.limits import MAX_SEED, MAX_SEEDS, parse_seeds


@pytest.mark.parametrize("text, seeds", [
    ("42", [42]), ("42-44", [42, 43, 44]), ("42,43,50", [42, 43, 50]),
    ("42-44, 50", [42, 43, 44, 50]), (" 7 - 8 ,", [7, 8]), ("5-5", [5]), ("0", [0]),
    (f"{MAX_SEED}", [MAX_SEED]), ("3,1,3", [3, 1, 3])])
def test_seed_lists(text, seeds):
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text, message", [
    ("", "no seeds in ''"), (" , ", "no seeds"),
    ("-1", "seeds '-1': expected a non-negative integer"),
    ("a-b", "seeds 'a-b': expected"), ("1-", "seeds '1-': expected"), ("1.5", "expected"),
    ("1-2-3", "expected"),
    ("9-3", "seed range '9-3' runs backwards"),
    (f"{MAX_SEED + 1}", "a seed must be at most"),
    (f"0-{MAX_SEEDS}", f"more than {MAX_SEEDS} seeds"),
    (f"0-{MAX_SEEDS - 1},5", f"more than {MAX_SEEDS} seeds"),
])
def test_bad_seed_lists_name_the_part(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        parse_seeds(text)


def test_a_huge_range_is_refused_before_any_list_is_built():
    with pytest.raises(ValueError, match="more than"):
        parse_seeds(f"0-{MAX_SEED}")


@settings(max_examples=30)
@given(st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 20)), min_size=1,
                max_size=5))
def test_ranges_expand_in_order(parts):
    text = ",".join(f"{lo}-{lo + k}" for lo, k in parts)
    want = [s for lo, k in parts for s in range(lo, lo + k + 1)]
    assert parse_seeds(text) == want


def test_the_module_loads_without_numpy():
    code = ("import sys; import tensorsched.topology.openb.limits; "
            "print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
