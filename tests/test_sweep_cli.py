"""sweep_cli: ``tensorsched sweep``'s argument types and the flag
combinations refused before any input is read or run started."""

from __future__ import annotations

import csv

import pyarrow as pa
import pytest

from tensorsched.cli_args import Parser
from tensorsched.framework.errors import TensorschedError
from tensorsched.sweep_cli import _write_csv, add_parser


@pytest.fixture
def files(tmp_path):
    trace = tmp_path / "pods.csv"
    nodes = tmp_path / "nodes.csv"
    trace.write_text("x\n")
    nodes.write_text("x\n")
    return tmp_path, str(trace), str(nodes)


def _parse(argv):
    p = Parser(prog="tensorsched")
    add_parser(p.add_subparsers(dest="command"))
    return p.parse_args(["sweep", *argv])


def _refused(capsys, argv, what):
    with pytest.raises(SystemExit) as exc:
        _parse(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert what in err and err.count("\n") == 1


def test_seeds_and_output_are_parsed(files):
    tmp, trace, nodes = files
    a = _parse(["--trace", trace, "--nodes", nodes, "--seeds", "1-3,7",
                "--output", str(tmp / "r.parquet")])
    assert a.seeds == [1, 2, 3, 7] and a.trace == [trace] and a.backend == "numba"


def test_bad_values_are_one_line_naming_the_flag(files, capsys):
    tmp, trace, nodes = files
    base = ["--trace", trace, "--nodes", nodes]
    _refused(capsys, [*base, "--output", str(tmp / "r.csv")], "expected a .parquet file name")
    _refused(capsys, [*base, "--output", str(tmp / "r.parquet"), "--seeds", "x"], "--seeds")
    _refused(capsys, [*base, "--output", str(tmp / "r.parquet"), "--workers", "0"], "--workers")
    _refused(capsys, ["--trace", str(tmp / "missing.csv"), "--nodes", nodes,
                      "--output", str(tmp / "r.parquet")], "does not exist")
    _refused(capsys, ["--trace", trace, "--nodes", nodes, "--cluster", nodes,
                      "--output", str(tmp / "r.parquet")], "not allowed with")


@pytest.mark.parametrize("extra,message", [
    (["--experiment", "--until", "5"], "--until does not apply"),
    (["--tune", "1.2"], "--tune goes with --experiment"),
    (["--metric", "no_such_column"], "--metric 'no_such_column'"),
])
def test_incompatible_flags_are_refused_before_any_run(files, extra, message):
    tmp, trace, nodes = files
    out = tmp / "r.parquet"
    a = _parse(["--trace", trace, "--nodes", nodes, "--output", str(out), *extra])
    with pytest.raises(TensorschedError, match=message):
        a.func(a)
    assert not out.exists()


def test_policy_needs_nodes(files):
    tmp, trace, nodes = files
    a = _parse(["--trace", trace, "--cluster", nodes, "--policy", "FGD",
                "--output", str(tmp / "r.parquet")])
    with pytest.raises(TensorschedError, match="--policy goes with --nodes"):
        a.func(a)


def test_comparison_csv_writes_nulls_as_empty(tmp_path):
    t = pa.table({"config": ["a", "b"], "scheduled": [3, None]})
    path = _write_csv(t, str(tmp_path / "c.csv"))
    with open(path, newline="") as f:
        assert list(csv.reader(f)) == [["config", "scheduled"], ["a", "3"], ["b", ""]]
