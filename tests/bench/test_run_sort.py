"""``python -m tensorsched.bench.run_sort`` at a tiny size: it writes its
record, the sort path placed the run, its placements open as one cycle per
pod does (the bench asserts it) and both paths are timed."""

import json

import pytest
from support.backends import needs_cuda

from tensorsched.bench import run_sort


def test_the_bench_records_the_sort_path_against_the_compiled_run(tmp_path):
    out = tmp_path / "r.json"
    run_sort.main(["--nodes", "30", "--pods", "200", "1300", "--check", "60",
                   "--output", str(out)])
    rec = json.loads(out.read_text())
    small, full = rec["runs"]
    assert rec["nodes"] == 30 and rec["backend"] == "numba" and rec["commit"]
    assert small["path"] == full["path"] == "sort"
    assert small["other_path"] == full["other_path"] == "compiled_run"
    assert small["placed"] == 200 and full["placed"] == 1200      # 30 nodes x 40 pods
    assert small["same_as_one_by_one_prefix"] == 60
    assert full["sort_cpu_seconds"] > 0 and full["compiled_run_cpu_seconds"] > 0
    assert full["same_node_counts"]         # a full cluster: 40 pods on every node


@pytest.mark.cudasim
@needs_cuda
@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_the_cuda_bench_checks_its_placements_against_numbas_sort_path(tmp_path):
    out = tmp_path / "r.json"
    run_sort.main(["--nodes", "6", "--pods", "30", "--check", "10", "--backend", "cuda",
                   "--output", str(out)])
    (got,) = json.loads(out.read_text())["runs"]
    assert got["path"] == "sort" and got["other"] == "sort path (numba)"
    assert got["other_path"] == "sort"
    assert got["same_placements"] and got["placed"] == 30
