"""``parsing.semver``: semver 2.0.0 versions parse (and refuse what the
grammar refuses) and order by precedence, build metadata ignored."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings, strategies as st

from tensorsched.framework.parsing.semver import Semver, parse_semver


def test_fields_and_text_round_trip():
    v = parse_semver("1.22.3-rc.1+build.5")
    assert (v.major, v.minor, v.patch, v.pre, v.build) == (1, 22, 3, ("rc", 1), "build.5")
    assert str(v) == "1.22.3-rc.1+build.5"
    assert str(parse_semver("0.0.0")) == "0.0.0"


@pytest.mark.parametrize("text", ["1.2", "1.2.3.4", "01.2.3", "1.02.3", "1.2.03", "v1.2.3",
                                  "1.2.3-", "1.2.3-01", "1.2.3+", "1.2.3-a..b", " 1.2.3", "",
                                  "1.2.3-a_b"])
def test_invalid_versions_are_refused(text):
    with pytest.raises(ValueError, match="invalid semantic version"):
        parse_semver(text)


def test_a_non_string_is_refused():
    with pytest.raises(ValueError):
        parse_semver(123)


def test_precedence_is_the_specs_example_order():
    # semver.org 2.0.0, item 11
    order = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
             "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0"]
    versions = [parse_semver(t) for t in order]
    assert sorted(reversed(versions)) == versions
    for a, b in itertools.combinations(versions, 2):
        assert a < b and b > a and a.compare(b) == -1 and b.compare(a) == 1


def test_build_metadata_is_ignored_in_equality_and_hash():
    a, b = parse_semver("1.0.0+one"), parse_semver("1.0.0+two")
    assert a == b and hash(a) == hash(b) and a.compare(b) == 0 and not a < b
    assert a != "1.0.0" and (a == 1) is False


def test_a_numeric_identifier_sorts_before_an_alphanumeric_one():
    assert parse_semver("1.0.0-9") < parse_semver("1.0.0-a") < parse_semver("1.0.0-a1")
    assert parse_semver("1.0.0-2") < parse_semver("1.0.0-10")          # numbers, not text
    assert parse_semver("1.0.0-0a").pre == ("0a",)


def test_comparing_with_something_else_is_a_type_error():
    with pytest.raises(TypeError):
        parse_semver("1.0.0") < "1.0.1"


@settings(max_examples=30)
@given(st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30)),
       st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30)))
def test_releases_order_as_their_number_tuples(x, y):
    a, b = parse_semver("%d.%d.%d" % x), parse_semver("%d.%d.%d" % y)
    assert (a < b) == (x < y) and (a == b) == (x == y)
    assert a == Semver(*x)


@pytest.mark.parametrize("text", ["1\u0660.0.0", "\u0661.0.0", "1.\u0662.3", "1.2.\u0663",
                                  "1.2.3-1\u0661", "1.2.3-\u0661a", "1.2.3+\u0661",
                                  "1.2.3-\uff11"])
def test_non_ascii_digits_are_refused(text):
    # semver's digits are ASCII only: Arabic-Indic or full-width digits are not 0-9
    with pytest.raises(ValueError, match="invalid semantic version"):
        parse_semver(text)
