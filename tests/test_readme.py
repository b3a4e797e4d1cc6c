"""The README's guide runs as printed: every ``$ tensorsched ...`` command of
its console blocks, from the repository root, prints what the README shows
(durations aside)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tensorsched.cli import main

ROOT = Path(__file__).resolve().parents[1]
DURATION = re.compile(r"\d+(\.\d+)?s\b")


def guide_commands() -> list[tuple[str, list[str]]]:
    """(command line, expected output lines) of each console block."""
    text = (ROOT / "README.md").read_text()
    out = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        lines = block.rstrip("\n").split("\n")
        cmd = []
        i = 0
        while True:
            line = lines[i].removeprefix("$ ").rstrip()
            i += 1
            cmd.append(line.removesuffix("\\").strip())
            if not line.endswith("\\"):
                break
        out.append((" ".join(cmd), lines[i:]))
    return out


CASES = guide_commands()


def test_the_guide_has_its_commands():
    # the cluster.yaml tour, the openb replay, then the DRA GPU cluster
    assert [c.split()[1] for c, _ in CASES] == ["explain", "schedule", "replay", "explain",
                                                "schedule", "capacity"]


@pytest.mark.parametrize("command, expected", CASES, ids=[c.split()[1] for c, _ in CASES])
def test_guide_command_prints_what_the_readme_shows(command, expected, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    argv = shlex.split(command)
    assert argv[0] == "tensorsched"
    assert main(argv[1:]) == 0
    got = capsys.readouterr()
    printed = (got.out + got.err).rstrip("\n").split("\n")
    mask = lambda lines: [DURATION.sub("<t>", x.rstrip()) for x in lines]  # noqa: E731
    assert mask(printed) == mask(expected)
