"""resource.Quantity grammar and rounding (framework/quantity.py)."""

from fractions import Fraction

import pytest

from tensorsched.framework.parsing.quantity import (
    INT64_MAX,
    int_value,
    milli_value,
    parse_quantity,
    resource_value,
    round_up_to_milli,
)

F = Fraction


@pytest.mark.parametrize(
    "text, expected",
    [
        # plain numbers, sign, decimal point forms
        ("0", F(0)),
        ("1", F(1)),
        ("+1", F(1)),
        ("-1", F(-1)),
        ("007", F(7)),
        ("1.5", F(3, 2)),
        (".5", F(1, 2)),
        ("5.", F(5)),
        ("-0.25", F(-1, 4)),
        # decimal SI
        ("1n", F(1, 10**9)),
        ("1u", F(1, 10**6)),
        ("100m", F(1, 10)),
        ("1k", F(1000)),
        ("1M", F(10**6)),
        ("2G", F(2 * 10**9)),
        ("1T", F(10**12)),
        ("1P", F(10**15)),
        ("1E", F(10**18)),          # E alone is exa, not an exponent
        ("1.5k", F(1500)),
        # binary SI
        ("1Ki", F(1024)),
        ("1Mi", F(2**20)),
        ("1.5Gi", F(3 * 2**29)),
        ("1Ti", F(2**40)),
        ("1Pi", F(2**50)),
        ("1Ei", F(2**60)),
        ("0.5Ki", F(512)),
        # decimal exponent
        ("1e3", F(1000)),
        ("1E3", F(1000)),           # E followed by digits is an exponent
        ("1e+3", F(1000)),
        ("1.5E-2", F(3, 200)),
        ("12e-3", F(12, 1000)),
        ("-2e1", F(-20)),
        ("1e0", F(1)),
        # whitespace around a JSON value is trimmed upstream
        (" 250m ", F(1, 4)),
    ],
)
def test_parse_valid(text, expected):
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "value, expected",
    [(1, F(1)), (0, F(0)), (0.5, F(1, 2)), (0.1, F(1, 10)), (1e-05, F(1, 100000)),
     (2.5e9, F(2_500_000_000)), (-3, F(-3))],
)
def test_parse_numbers_from_yaml_json(value, expected):
    # YAML gives 1 and 0.5 for unquoted numbers; 0.1 must be exactly one tenth
    assert parse_quantity(value) == expected


def test_parse_fraction_passthrough():
    assert parse_quantity(F(3, 2)) == F(3, 2)


@pytest.mark.parametrize(
    "bad",
    ["abc", "1.2.3", "5Kb", "", "   ", "--1", "++1", "-", "+", ".", "1e", "1e+", "1K", "1ki",
     "1mi", "1 Gi", "1Gi ", "Gi", "1ee3", "1e3.5", "1Mi3", "0x10", "1,5", "1_000", "١"],
)
def test_parse_invalid(bad):
    if bad == "1Gi ":  # trailing space is trimmed (UnmarshalJSON does strings.TrimSpace)
        assert parse_quantity(bad) == 2**30
        return
    with pytest.raises(ValueError) as info:
        parse_quantity(bad)
    if bad.strip():
        assert repr(bad) in str(info.value)


@pytest.mark.parametrize("bad", [None, True, False, float("nan"), float("inf"), [1], {"a": 1}])
def test_parse_invalid_types(bad):
    with pytest.raises(ValueError):
        parse_quantity(bad)


def test_exponent_out_of_range_is_an_error_not_a_hang():
    with pytest.raises(ValueError, match="out of range"):
        parse_quantity("1e999999999")


def test_sub_nano_rounds_away_from_zero():
    # upstream rounds the magnitude up to the next nano-unit
    assert parse_quantity("0.1n") == F(1, 10**9)
    assert parse_quantity("1.5n") == F(2, 10**9)
    assert parse_quantity("-0.1n") == F(-1, 10**9)
    assert parse_quantity("1e-12") == F(1, 10**9)
    assert parse_quantity("0e-12") == 0


def test_binary_capped_at_int64_max():
    assert parse_quantity("8Ei") == INT64_MAX          # 2^63 does not fit
    assert parse_quantity("-16Ei") == -INT64_MAX
    assert parse_quantity("7Ei") == 7 * 2**60          # fits, unchanged
    # decimal values are not capped by the parser
    assert parse_quantity("10E") == 10**19


@pytest.mark.parametrize(
    "text, milli, whole",
    [
        ("100m", 100, 1),        # Value() of 0.1 rounds up to 1
        ("1", 1000, 1),
        ("1.5", 1500, 2),
        ("0.5m", 1, 1),          # MilliValue() rounds up: ceil(0.5) = 1
        ("1n", 1, 1),
        ("1001m", 1001, 2),
        ("1Ki", 1024000, 1024),
        ("0", 0, 0),
        ("1.0001", 1001, 2),     # ceil(1000.1) = 1001
    ],
)
def test_milli_and_int_value_round_up(text, milli, whole):
    q = parse_quantity(text)
    assert milli_value(q) == milli
    assert int_value(q) == whole


def test_negative_values_round_away_from_zero():
    # int64Amount.AsScaledInt64: "rounding away from zero"
    assert milli_value(parse_quantity("-1.5m")) == -2
    assert int_value(parse_quantity("-0.1")) == -1
    assert int_value(parse_quantity("-2")) == -2
    assert milli_value(parse_quantity("-100m")) == -100


def test_round_up_to_milli():
    assert round_up_to_milli(F(1, 10**9)) == F(1, 1000)
    assert round_up_to_milli(F(1500, 1000)) == F(3, 2)
    assert round_up_to_milli(F(-1, 10**6)) == F(-1, 1000)
    assert round_up_to_milli(F(0)) == 0


@pytest.mark.parametrize(
    "name, value, expected",
    [
        ("cpu", "250m", 250),
        ("cpu", 2, 2000),
        ("cpu", 0.5, 500),
        ("cpu", "0.1m", 1),
        ("memory", "1Gi", 2**30),
        ("memory", "1G", 10**9),
        ("memory", "128974848", 128974848),
        ("memory", "129e6", 129_000_000),
        ("memory", "123Mi", 123 * 2**20),
        ("memory", "0.5", 1),              # bytes round up
        ("ephemeral-storage", "10Gi", 10 * 2**30),
        ("hugepages-2Mi", "4Mi", 4 * 2**20),
        ("nvidia.com/gpu", 4, 4),
        ("pods", "110", 110),
    ],
)
def test_resource_value(name, value, expected):
    assert resource_value(name, value) == expected


def test_resource_value_out_of_int64():
    with pytest.raises(ValueError, match="int64"):
        resource_value("memory", "10E")          # 1e19 bytes
    with pytest.raises(ValueError, match="int64"):
        resource_value("cpu", "9223372036854776")  # * 1000 overflows
    assert resource_value("memory", "8Ei") == INT64_MAX  # capped binary value fits


def test_resource_value_bad_input_is_value_error():
    with pytest.raises(ValueError, match="abc"):
        resource_value("cpu", "abc")
