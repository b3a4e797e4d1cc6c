"""Creation times read many at once (framework/parsing/stamps.py) and the
API server's shape read fast (meta.parse_utc_second): every value exactly
parse_timestamp's, anything else left to it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.framework.parsing.meta import _parse_any, parse_timestamp, parse_utc_second
from tensorsched.framework.parsing.stamps import utc_seconds

INT64 = (-(2**63), 2**63 - 1)


def _digits(n, top):
    """``n``-digit fields, mostly in range, sometimes past it or in another script."""
    return st.one_of(st.integers(0, top).map(lambda v: f"{v:0{n}d}"),
                     st.text("0123456789", min_size=n, max_size=n),
                     st.text("0123456789\u0663", min_size=n, max_size=n))


@st.composite
def stamps(draw):
    if draw(st.integers(0, 9)) == 0:            # anything at all
        return draw(st.text(max_size=24))
    year = draw(st.one_of(st.integers(1969, 2100).map(str), _digits(4, 9999)))
    parts = [year, draw(st.sampled_from("--/")), draw(_digits(2, 12)), "-",
             draw(_digits(2, 31)), draw(st.sampled_from("TTt ")), draw(_digits(2, 23)), ":",
             draw(_digits(2, 59)), draw(st.sampled_from("::-")), draw(_digits(2, 60)),
             draw(st.sampled_from(["Z", "Z", "Z", "z", "+01:00", ".5Z", "", "ZZ"]))]
    text = "".join(parts)
    return draw(st.sampled_from([text, text, " " + text, text[:-1], text + "\x00"]))


def _parsed(value):
    try:
        return _parse_any(value)
    except ValueError:
        return None


@settings(max_examples=300, deadline=None)
@given(stamps())
def test_one_at_a_time_is_parse_timestamps(value):
    fast = parse_utc_second(value)
    slow = _parsed(value)
    if fast is not None:
        assert fast == slow
    try:
        got = parse_timestamp(value)
    except ValueError as exc:
        got = str(exc)
    try:
        want = _parse_any(value)
    except ValueError as exc:
        want = str(exc)
    assert got == want


@settings(max_examples=200, deadline=None)
@given(st.lists(stamps(), max_size=30), st.booleans())
def test_many_at_once_are_parse_timestamps(values, in_order):
    if in_order:
        values = sorted(values)
    _check_many(values)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(stamps().filter(lambda v: len(v) == 20),
                          st.text("0123456789-:TZ\n\u0663", min_size=19, max_size=21)),
                max_size=20))
def test_twenty_characters_each_are_parse_timestamps(values):
    # the ASCII path (all 20 long): newlines inside or other lengths must not shift a row
    _check_many(values)


def _check_many(values):
    ns, ok = utc_seconds(values)
    assert ns.shape == ok.shape == (len(values),)
    for v, n, good in zip(values, ns.tolist(), ok.tolist()):
        want = _parsed(v)
        if good:
            assert n == want
        else:
            assert n == 0
            # only other shapes, invalid ones and ns past int64 are left out
            plain = (len(v) == 20 and v.endswith("Z") and v[16] == ":"
                     and v[17] in "012345" and v[18] in "0123456789")
            assert not plain or want is None or not INT64[0] <= want <= INT64[1] - 59 * 10**9


def test_the_api_servers_shape_is_read_at_once():
    values = [f"2026-01-01T{h:02d}:{m:02d}:{s:02d}Z" for h in (0, 23) for m in (0, 59)
              for s in (0, 30, 59)]
    ns, ok = utc_seconds(values + ["2026-01-01T00:00:00.5Z", "2026-02-30T00:00:00Z"])
    assert ok.tolist() == [True] * len(values) + [False, False]
    assert ns[: len(values)].tolist() == [parse_timestamp(v) for v in values]
    assert utc_seconds([])[0].shape == (0,)
    # numpy's str arrays drop trailing NULs: the length is checked apart
    assert utc_seconds(["2026-01-01T00:00:00Z\x00", "2026-01-01T00:00:0Z"])[1].tolist() == \
        [False, False]
    # lengths that add up, a newline inside: no row is shifted
    shifted = ["2026-01-01T00:00:00Z\n2026-01-01T00:00:05Z", "", "2026-01-01T00:00:0Z"]
    assert utc_seconds(shifted)[1].tolist() == [False, False, False]
    assert parse_utc_second("2024-02-29T23:59:59Z") == parse_timestamp("2024-02-29T23:59:59Z")
    assert parse_utc_second("2023-02-29T23:59:59Z") is None
