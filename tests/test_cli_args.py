"""cli_args: the argparse types (ranges, finite numbers, writable outputs,
existing paths) and the Parser's one-line refusals, a flag given twice
among them."""

from __future__ import annotations

import argparse

import pytest

from tensorsched.cli_args import (
    SEED,
    Help,
    Parser,
    existing_path,
    int_in,
    output_file,
    positive_float,
)


def test_int_in_checks_type_and_range():
    check = int_in(1, 10)
    assert check("1") == 1 and check("10") == 10
    for bad, msg in (("0", "must be 1..10, got 0"), ("11", "got 11"), ("x", "not an integer: 'x'")):
        with pytest.raises(argparse.ArgumentTypeError, match=msg):
            check(bad)
    with pytest.raises(argparse.ArgumentTypeError, match=">= 0"):
        int_in(0)("-1")
    assert SEED(str((1 << 63) - 1)) == (1 << 63) - 1
    with pytest.raises(argparse.ArgumentTypeError):
        SEED(str(1 << 63))


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "abc"])
def test_positive_float_refuses(bad):
    with pytest.raises(argparse.ArgumentTypeError, match=f"'{bad}'"):
        positive_float(bad)
    assert positive_float("0.5") == 0.5


def test_output_file_and_existing_path(tmp_path):
    target = str(tmp_path / "out.json")
    assert output_file(target) == target
    with pytest.raises(argparse.ArgumentTypeError, match="is a directory"):
        output_file(str(tmp_path))
    with pytest.raises(argparse.ArgumentTypeError, match="does not exist"):
        output_file(str(tmp_path / "missing" / "out.json"))
    assert existing_path(str(tmp_path)) == str(tmp_path)
    with pytest.raises(argparse.ArgumentTypeError, match="does not exist"):
        existing_path(target)


def _parser():
    p = Parser(prog="tool", formatter_class=Help)
    p.add_argument("--n", type=int_in(1, 5), default=2, help="how many")
    p.add_argument("--tag", action="append", default=[])
    return p


def test_parser_refuses_a_single_valued_flag_twice_in_one_line(capsys):
    p = _parser()
    assert p.parse_args(["--n", "3", "--tag", "a", "--tag", "b"]).tag == ["a", "b"]
    assert p.parse_args(["--n", "3"]).n == 3            # a fresh parse forgets the last
    with pytest.raises(SystemExit) as exc:
        p.parse_args(["--n", "3", "--n", "4"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--n" in err and "more than once" in err and "tool --help" in err


def test_bad_value_is_one_line_naming_the_flag(capsys):
    with pytest.raises(SystemExit) as exc:
        _parser().parse_args(["--n", "9"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--n" in err and "must be 1..5, got 9" in err


def test_help_shows_defaults_but_not_empty_ones():
    text = _parser().format_help()
    assert "how many (default: 2)" in text
