"""Preemption on the cuda backend (CUDA simulator): the victim search, the
visit and the pick run on the device over the pod table's device mirror,
which follows the cluster by the rows that change.  Whole scheduler runs
with several preemptors give the numba backend's bindings, victims and
messages; a preemption that finds no candidate gives its reasons."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda
from test_evaluator import CONFIG, _node, _pod, clusters

from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.kernels.fused import backends as fused_backends

pytestmark = [pytest.mark.cudasim, needs_cuda]


def _run(objs, pending, backend, seed=3):
    cluster = build_cluster(objs + pending, CONFIG)
    sched = Scheduler(cluster, backend, seed=seed)
    out = [(b.pod, b.node, b.nominated_node, list(b.victims), b.message)
           for b in sched.run(cluster.pending)]
    return out, cluster


HIGH = st.tuples(st.sampled_from([3, 7, 10]), st.sampled_from([200, 400, 600]))


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(clusters(max_nodes=3, max_pods=3), st.lists(HIGH, min_size=1, max_size=3))
def test_random_scheduler_runs_equal_numba(case, highs):
    objs, _pre = case
    pending = [_pod(f"high{j}", prio=p, cpu=cpu) for j, (p, cpu) in enumerate(highs)]
    want, _ = _run(objs, pending, "numba")
    got, _ = _run(objs, pending, "cuda")
    assert got == want


def test_mirror_uploads_the_rows_that_change():
    # Eight nodes of 1000m, three 300m low pods each; two 500m high pods:
    # the first evicts two low pods of a node, the second one more there
    # (one row changed between the two searches).
    objs = [_node(f"n{i}", 1000) for i in range(8)]
    objs += [_pod(f"low{i}-{k}", f"n{i}", prio=0, cpu=300, start=k) for i in range(8)
             for k in range(3)]
    pending = [_pod(f"high{j}", prio=100, cpu=500) for j in range(2)]
    want, _ = _run(objs, pending, "numba")
    got, cluster = _run(objs, pending, "cuda")
    assert got == want and all(b[1] == b[2] and b[3] for b in got)
    dev = cluster.pod_table().mirror
    # One full upload (the first search), then the one changed row, packed
    # and scattered on the device.
    assert dev.full_uploads == 1
    assert dev.rows_uploaded == 8 + 1


def test_no_candidate_reasons_equal_numba():
    # 400m nodes: without its 100m low pod the 600m preemptor still does
    # not fit; n1 holds only a pod of higher priority.
    objs = [_node("n0", 400), _node("n1", 400), _pod("low", "n0", prio=0, cpu=100),
            _pod("top", "n1", prio=50, cpu=100)]
    msgs = {}
    for backend in ("numba", "cuda"):
        cluster = build_cluster(objs, CONFIG)
        pod = cluster.resolve(_pod("high", prio=10, cpu=600))
        fw = cluster.framework_for(pod, backend)
        result = fw.run_cycle(cluster.state, pod, all_nodes=True)
        out = fw.run_post_filter(CycleContext(cluster.state, pod, fw), result,
                                 cluster.pod_table())
        assert out.nominated_node is None
        msgs[backend] = (out.message, out.filter_calls)
    assert msgs["cuda"] == msgs["numba"] == (
        "preemption: 0/2 nodes are available: 1 Insufficient cpu, "
        "1 No preemption victims found for incoming pod.", 1)


def test_explain_on_cuda():
    objs = [_node("n0", 500), _pod("low", "n0", prio=0, cpu=400)]
    r = explain(objs, _pod("high", prio=10, cpu=300), CONFIG, backend="cuda")
    assert r["backend"] == "cuda"
    assert r["preemption"] == {"nominated_node": "n0", "victims": ["default/low"]}


def test_auto_sends_the_victim_search_to_the_device(monkeypatch):
    # `auto` on a machine with a GPU: cycles on numba, the victim search on
    # cuda (the simulator stands for the device); same answers as numba,
    # and the search went through the pod table's device mirror.
    monkeypatch.setattr(fused_backends, "gpu_present", lambda: True)
    objs = [_node(f"n{i}", 1000) for i in range(4)]
    objs += [_pod(f"low{i}-{k}", f"n{i}", prio=0, cpu=300, start=k) for i in range(4)
             for k in range(3)]
    pending = [_pod(f"high{j}", prio=100, cpu=500) for j in range(2)]
    want, _ = _run(objs, pending, "numba")
    got, cluster = _run(objs, pending, "auto")
    assert got == want and all(b[3] for b in got)
    fw = cluster.framework_for(cluster.resolve(pending[0]), "auto")
    assert fw.backend_name == "numba" and fw.backend_for("victims") == "cuda"
    assert cluster.pod_table().mirror.full_uploads == 1
