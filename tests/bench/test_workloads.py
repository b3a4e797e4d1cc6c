"""``bench.workloads``: a benchmark record of a small workload.  The
warm-up is undone (the timed run places the pods as a fresh scheduler
does), progress is reported after each stage, the record carries the
figures the tables read, and an unknown workload is refused by name."""

from __future__ import annotations

import pytest

from tensorsched import synthetic
from tensorsched.bench import workloads as W
from tensorsched.bench.harness import placements_sha256
from tensorsched.framework.scheduler.cluster import build_cluster, pod_columns_from
from tensorsched.framework.scheduler.scheduler import Scheduler


@pytest.fixture(autouse=True)
def small_state_probe(monkeypatch):
    # the record's state_bytes_per_pod binds 20,000 pods; 200 tell the same here
    probe = W._state_bytes_per_pod
    monkeypatch.setattr(W, "_state_bytes_per_pod", lambda: probe(200))


def fresh_hash(workload, nodes, pods, seed=0):
    node_objs, pod_objs = synthetic.workload(workload, nodes, pods, seed)
    cluster = build_cluster(node_objs, synthetic.config(workload, 100))
    outcomes, _ = Scheduler(cluster, "numpy", seed).schedule_pending(
        pod_columns_from(pod_objs, cluster.resolve))
    return placements_sha256(outcomes), sum(o.node is not None for o in outcomes)


def test_a_record_places_as_a_fresh_scheduler():
    stages = []
    rec = W.run_workload("basic", 5, 30, "numpy", progress=stages.append)
    assert stages == list(W.BENCH_STAGES)
    want_hash, want_scheduled = fresh_hash("basic", 5, 30)
    assert rec["placements_sha256"] == want_hash and rec["scheduled"] == want_scheduled
    assert (rec["workload"], rec["nodes"], rec["pods"], rec["backend"]) == (
        "basic", 5, 30, "numpy")
    assert rec["pods_per_second"] > 0 and rec["cpu_seconds"] >= 0
    assert rec["state_bytes_per_pod"] > 0 and rec["seed"] == 0
    assert "requested_backend" not in rec


def test_without_batching_the_placements_are_the_same():
    a = W.run_workload("spread", 4, 12, "numpy", batch=False)
    b = W.run_workload("spread", 4, 12, "numpy", batch=True)
    assert a["placements_sha256"] == b["placements_sha256"]
    assert a["batch"] is False and a["compiled_runs"] == 0


def test_the_unschedulable_workload_times_its_first_failure():
    rec = W.run_workload("unschedulable", 3, 6, "numpy")
    assert rec["first_failure_us"] >= rec["first_failure_cycle_us"] >= 0
    assert rec["after_first_us_per_pod"] is not None


def test_an_unknown_workload_is_refused():
    with pytest.raises(ValueError, match="unknown workload 'nope'; choose one of basic"):
        W.run_workload("nope", 1, 1, "numpy")


def test_warm_ups_leave_the_cluster_as_loaded():
    node_objs, pod_objs = synthetic.workload("basic", 4, 4, 0)
    cluster = build_cluster(node_objs, synthetic.config("basic", 100))
    pending = pod_columns_from(pod_objs, cluster.resolve)
    fw = cluster.framework_for(pending[0], "numpy")
    before = dict(cluster.state.pods)
    W.warm_up(cluster, fw, pod_objs, 0, shaped=True)
    W.warm_up_run(cluster, fw, pending[0], 0)
    assert dict(cluster.state.pods) == before == {}
