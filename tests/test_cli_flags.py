"""No flag of any command drops input: a flag that takes one value refuses
to be given twice (exit 2, naming it); the ones that take several
(``schedule --pods``, ``capacity --pod``/``--nodes``, ``replay --pods``, ...)
accumulate."""
from __future__ import annotations

import argparse

import pytest
import yaml

from tensorsched.cli import build_parser, main
from tensorsched.generators.clusters import node_dict, pod_dict

_SEVERAL = (argparse._AppendAction, argparse._ExtendAction)
_NO_VALUE = (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._HelpAction,
             argparse._VersionAction, argparse._CountAction, argparse._SubParsersAction)


def _commands():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def _single_valued():
    for name, cmd in sorted(_commands().items()):
        for action in cmd._actions:
            if action.option_strings and not isinstance(action, _SEVERAL + _NO_VALUE):
                yield name, action


def _a_value(action, tmp_path) -> str:
    """A value the flag's type accepts."""
    if action.choices:
        return str(list(action.choices)[0])
    for text in ("1", "42-43", "data/examples/cluster.yaml", "DRADeviceTaints=true",
                 str(tmp_path / "o.parquet"),
                 str(tmp_path / "o.json"), str(tmp_path / "odir"), "auto"):
        try:
            (action.type or str)(text)
        except (argparse.ArgumentTypeError, ValueError, TypeError):
            continue
        return text
    raise AssertionError(f"no value for {action.option_strings}")


def test_every_flag_is_single_or_accumulating():
    # plain argparse "store" keeps the last of repeated values: none is left
    kinds = {type(a).__name__ for _, a in _single_valued()}
    assert kinds == {"_StoreOnce"}


@pytest.mark.parametrize("command, flag", [(c, a.option_strings[-1])
                                           for c, a in _single_valued()])
def test_a_single_valued_flag_given_twice_is_refused(command, flag, tmp_path, capsys):
    action = next(a for a in _commands()[command]._actions if flag in a.option_strings)
    value = _a_value(action, tmp_path)
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args([command, flag, value, flag, value])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {'/'.join(action.option_strings)}: given more than once" in err


def _write(tmp_path, name, objs):
    p = tmp_path / name
    p.write_text(yaml.safe_dump_all(objs))
    return str(p)


def test_schedule_pods_given_twice_keeps_both_files(tmp_path, capsys):
    cluster = _write(tmp_path, "c.yaml", [node_dict("n", cpu="8")])
    a = _write(tmp_path, "a.yaml", [pod_dict("a")])
    b = _write(tmp_path, "b.yaml", [pod_dict("b")])
    assert main(["schedule", "--cluster", cluster, "--pods", a, "--pods", b]) == 0
    out = capsys.readouterr().out
    assert "default/a" in out and "default/b" in out


def test_capacity_drain_nodes_accumulate(tmp_path, capsys):
    cluster = _write(tmp_path, "c.yaml", [node_dict(n, cpu="8") for n in ("x", "y", "z")])
    assert main(["capacity", "--cluster", cluster, "--drain", "--nodes", "x",
                 "--nodes", "y", "--backend", "numpy"]) == 0
    out = capsys.readouterr().out
    assert "removable together (exact (every subset)): x, y" in out
    assert not any(line.startswith("z ") for line in out.splitlines())
    assert main(["capacity", "--cluster", cluster, "--drain", "--nodes", "x",
                 "--nodes", "nope", "--backend", "numpy"]) == 2
    assert "Node nope: not in the cluster" in capsys.readouterr().err


def test_replay_pods_accumulate():
    args = build_parser().parse_args(["replay", "--nodes", "n.csv", "--pods", "a.csv",
                                      "--pods", "b.csv", "c.csv", "--sweep"])
    assert args.pods == ["a.csv", "b.csv", "c.csv"]
