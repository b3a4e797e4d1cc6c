"""``bench.workloads`` on the cuda backend (Numba's CUDA simulator in CI, the
device on a GPU machine): a one-at-a-time record counts the backend's
launches and copies of the timed run, one launch a cycle and no
row cache rows copied back; records of other backends carry no counters."""

from __future__ import annotations

import pytest
from support.backends import needs_cuda

from tensorsched.bench import workloads as W


@pytest.fixture(autouse=True)
def small_state_probe(monkeypatch):
    # the record's state_bytes_per_pod binds 20,000 pods; 20 tell the same here
    probe = W._state_bytes_per_pod
    monkeypatch.setattr(W, "_state_bytes_per_pod", lambda: probe(20))


@pytest.mark.cudasim
@needs_cuda
def test_a_no_batch_record_counts_one_launch_a_cycle_and_no_rows_back():
    pods = 6
    rec = W.run_workload("basic", 4, pods, "cuda", batch=False)
    got = rec["device_counters"]
    assert rec["scheduled"] == pods and set(got) == set(W.DEVICE_COUNTERS)
    assert 0 < got["launches"] <= pods and got["rows_downloaded"] == 0, got
    # one staged copy a cycle: the row the last placement wrote (warmed up
    # before the timed run: no full upload in it)
    assert got["copies"] <= pods and got["rows_uploaded"] <= pods, got
    assert 0 < got["bytes_uploaded"] <= 1000 * pods, got
    assert rec["placements_sha256"] == W.run_workload("basic", 4, pods, "numba",
                                                      batch=False)["placements_sha256"]


@pytest.mark.cudasim
@needs_cuda
def test_a_device_run_record_counts_the_rows_its_pods_recomputed():
    """antiaffinity by hostname in device runs: the record's counters say
    how many pods the runs placed, that each run's first pod rescanned every
    node and that the others re-tested fewer rows than the nodes."""
    nodes, pods = 30, 12
    rec = W.run_workload("antiaffinity", nodes, pods, "cuda")
    got = rec["device_counters"]
    assert got["run_pods"] == pods and 1 <= got["run_full_scans"] < pods, got
    assert got["run_rows_recomputed"] < nodes * pods / 4, got
    assert rec["placements_sha256"] == W.run_workload("antiaffinity", nodes, pods,
                                                      "numba")["placements_sha256"]


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_records_off_the_device_carry_no_counters(backend):
    assert "device_counters" not in W.run_workload("basic", 3, 2, backend, batch=False)
