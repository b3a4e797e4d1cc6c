"""``bench`` sizes past the machine's memory: refused before anything is
built, one line naming the flag and the estimate, exit status 2."""

from __future__ import annotations

import pytest

from tensorsched.bench import sizes, workloads
from tensorsched.cli import main
from tensorsched.framework.errors import TensorschedError

GIB = 2**30


@pytest.fixture
def nothing_built(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the workload was built")
    monkeypatch.setattr(workloads, "run_workload", refuse)


@pytest.mark.parametrize("argv, flag", [
    (["--nodes", "10", "--pods", "5000000"], "--pods 5000000"),
    (["--nodes", "2000000", "--pods", "10"], "--nodes 2000000"),
    (["--workload", "dra", "--nodes", "200000", "--pods", "10"], "--nodes 200000"),
])
def test_a_size_past_the_memory_is_one_line_naming_the_flag(argv, flag, monkeypatch,
                                                            capsys, nothing_built):
    monkeypatch.setattr(sizes, "available_memory_bytes", lambda: 2 * GIB)
    assert main(["bench", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("tensorsched: error: bench --workload ")
    assert f": {flag} with " in err and "GiB" in err
    assert "more than the 2.0 GiB of memory available" in err


def test_the_estimate_is_per_node_and_per_pod():
    node_b, pod_b = sizes.bytes_per_row("basic")
    # a manifest is kilobytes; a row of the columns some hundreds of bytes
    assert 500 < node_b < 100_000 and 500 < pod_b < 100_000
    need = 1000 * node_b + 1000 * pod_b
    sizes.check_bench_size("basic", 1000, 1000, available=need)
    with pytest.raises(TensorschedError, match="--nodes 1001 with --pods 1000"):
        sizes.check_bench_size("basic", 1001, 1000, available=need)
    # the DRA workloads' nodes carry their ResourceSlices
    assert sizes.bytes_per_row("dra")[0] > node_b


def test_the_memory_figure_is_the_machines():
    got = sizes.available_memory_bytes()
    assert got is None or got > 0
