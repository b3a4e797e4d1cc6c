"""``tensorsched --help`` and ``--version`` answer at once: building the
parser imports neither NumPy, Numba, Arrow nor the scheduler and the
benchmark workloads; each command imports what it uses when it runs.
Checked on what a fresh interpreter has imported (not on a wall clock)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import tensorsched
from tensorsched.cli import main

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "numba", "pyarrow", "yaml", "tqdm", "tensorsched.bench.workloads",
         "tensorsched.framework.scheduler.scheduler", "tensorsched.framework.parsing.manifests",
         "tensorsched.topology.openb.replay")

PROBE = """
import json, sys
from tensorsched.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
print(json.dumps([m for m in {heavy!r} if m in sys.modules]), file=sys.stderr)
"""


def _imported_by(argv: list[str]) -> list[str]:
    run = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv, heavy=HEAVY)],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    return json.loads(run.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["simulate", "--help"],
                                  ["capacity", "--help"], ["sweep", "--help"],
                                  ["bench", "--help"]])
def test_help_and_version_import_nothing_heavy(argv):
    assert _imported_by(argv) == []


def test_a_command_imports_what_it_uses():
    # the probe itself is sound: explain loads manifests and the kernels,
    # not the benchmarks or the openb replay
    got = _imported_by(["explain", "--cluster", "data/examples/cluster.yaml", "--pod",
                        "data/examples/pod.yaml"])
    assert {"numpy", "yaml", "tensorsched.framework.parsing.manifests"} <= set(got)
    assert "tensorsched.bench.workloads" not in got
    assert "tensorsched.topology.openb.replay" not in got


def test_version_is_the_installed_one(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"tensorsched {version('tensorsched')}\n"
    assert tensorsched.__version__ == version("tensorsched")
