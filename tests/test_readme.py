"""The README's commands run as printed, from the repository root.

- every ``$ tensorsched ...`` command of its ``console`` blocks prints
  what the README shows (durations aside);
- every ``tensorsched`` command of its ``bash`` blocks runs and ends with
  status 0 on the sample data it names (``data/examples/``, ``data/openb/``);
  the other commands of those blocks (``pip install``, ``lint-imports``,
  ``pytest``) are this CI's own steps;
- a ``bash`` block whose first line is ``# synopsis`` shows the forms of a
  command (``[ ]`` optional, ``a|b`` one of, ``( | )`` alternatives, names
  to fill in): each line, with its optional parts all given and all left
  out and its names filled in from ``data/examples/``, is accepted by the
  command's parser (every flag exists, required ones are there, values
  are of their type).
"""

from __future__ import annotations

import glob
import re
import shlex
from pathlib import Path

import pytest

from tensorsched.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DURATION = re.compile(r"\d+(\.\d+)?s\b")


def guide_commands() -> list[tuple[str, list[str]]]:
    """(command line, expected output lines) of each console block."""
    out = []
    for block in re.findall(r"```console\n(.*?)```", README, re.S):
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


def bash_blocks() -> list[tuple[bool, list[str]]]:
    """(is a synopsis, its command lines with continuations joined) of each
    bash block."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", README, re.S):
        text = block.replace("\\\n", " ")
        lines = [x.strip() for x in text.split("\n") if x.strip()]
        synopsis = lines[0].startswith("# synopsis")
        out.append((synopsis, [x for x in lines if not x.startswith("#")]))
    return out


def _argv_of(line: str) -> list[list[str]]:
    """The ``tensorsched`` commands of a shell line (``a && b``), the
    comment cut off, each without the program name; globs expanded as a
    shell would."""
    words = shlex.split(line, comments=True)
    commands, current = [], []
    for w in words + ["&&"]:
        if w in ("&&", ";"):
            if current and current[0] == "tensorsched":
                commands.append(current[1:])
            current = []
        elif "*" in w:
            current.extend(sorted(glob.glob(w, root_dir=ROOT)) or [w])
        else:
            current.append(w)
    return commands


# Names a synopsis leaves to the reader, filled in with sample data so its
# parser sees real files (a name not here is taken as written).
FILL = {
    "PATH": "data/examples/cluster.yaml", "cluster/": "data/examples/cluster.yaml", "P": "FGD",
    "pod.yaml": "data/examples/pod.yaml", "a.yaml": "data/examples/pod.yaml",
    "b.yaml": "data/examples/pod.yaml", "sched.yaml": "data/examples/scheduler-config.yaml",
    "A.yaml": "data/examples/spread.yaml", "B.yaml": "data/examples/pack.yaml",
    "steps.yaml": "data/examples/steps.yaml", "trace.parquet": "data/examples/trace.csv",
    "a.parquet": "data/examples/trace.csv", "DIR": "data/examples/", "N": "2", "S": "600",
    "CSV": "data/openb/csv/openb_node_list_gpu_node.csv", "PNG": "/tmp/plot.png",
    "ADDRESS": "ray://head:10001", "node.yaml": "data/examples/cluster.yaml",
    "other.yaml": "data/examples/cluster.yaml",
}


def synopsis_forms(line: str) -> list[list[str]]:
    """The argument lists of a synopsis line: optional parts all given, then
    all left out; first alternatives; names filled in."""
    line = line.split(" # ")[0]
    forms = []
    for keep in (True, False):
        text = line
        while True:           # innermost [ ] and ( | ) first
            new = re.sub(r"\[([^\[\]]*)\]",
                         lambda m: m.group(1).split(" | ")[0] if keep else "", text)
            new = re.sub(r"\(([^()]*)\)", lambda m: m.group(1).split(" | ")[0], new)
            if new == text:
                break
            text = new
        words = []
        for w in shlex.split(text):
            if w == "...":
                continue
            if "|" in w and not w.startswith("--"):
                w = w.split("|")[0]
            words.append(FILL.get(w, w))
        [argv] = _argv_of(shlex.join(words))
        forms.append(argv)
    return forms


CASES = guide_commands()
EXAMPLES = [argv for synopsis, lines in bash_blocks() if not synopsis
            for line in lines for argv in _argv_of(line)]
SYNOPSES = [form for synopsis, lines in bash_blocks() if synopsis
            for line in lines for form in synopsis_forms(line)]


def test_the_guide_has_its_commands():
    # the cluster.yaml tour (a web replica, then the db pod on its zonal
    # volume), the openb replay, then the DRA GPU cluster
    assert [c.split()[1] for c, _ in CASES] == ["explain", "explain", "schedule", "replay",
                                                "explain", "schedule", "capacity"]


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


def test_the_bash_blocks_hold_examples_and_synopses():
    """What the tests below run: the examples of the first block, the
    Simulation and the Sweeps sections, and every synopsis line."""
    assert [a[0] for a in EXAMPLES] == ["schedule", "simulate", "simulate", "sweep", "sweep",
                                        "replay"]
    assert {a[0] for a in SYNOPSES} == {"capacity", "simulate", "sweep", "explain", "schedule",
                                        "bench", "replay"}
    assert all("/shared/" not in w for a in EXAMPLES + SYNOPSES for w in a)


@pytest.mark.parametrize("argv", EXAMPLES, ids=[" ".join(a[:3]) for a in EXAMPLES])
def test_bash_example_runs_as_printed(argv, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert main(argv) == 0, capsys.readouterr().err[-2000:]
    out = capsys.readouterr().out
    if argv[0] == "sweep" and "--cluster" in argv:
        # the comparison the README quotes after the block
        quoted = re.search(r"```text\n(mean_cpu_alloc_pct.*?)```", README, re.S).group(1)
        assert quoted.strip() in out


@pytest.mark.parametrize("argv", SYNOPSES, ids=[" ".join(a[:2]) for a in SYNOPSES])
def test_synopsis_is_accepted_by_the_parser(argv, monkeypatch):
    monkeypatch.chdir(ROOT)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"tensorsched {shlex.join(argv)}: refused by the parser (status {exc.code})")
    assert args.command == argv[0]
