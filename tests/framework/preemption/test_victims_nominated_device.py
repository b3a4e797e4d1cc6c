"""The victim search on the device counts the pods nominated to a node as
upstream does (the nominated pods of priority >= the preemptor's, in the
node's requests), whichever backend runs the cycle: numba reads the
nominator's overlay (``PodTable.node_columns``), cuda the state with the
nominated pods added, and ``auto`` with a GPU the overlay on the host while
the search runs on the device over the state's mirror (allocatable lowered
by the overlay's additions: ``evaluator.nominated_allocatable``).  Same
bindings, nominations and victims on every backend, and those of upstream's
rule worked out by hand."""

from __future__ import annotations

import pytest
from support.backends import needs_cuda
from support.preemption import FIT_PREEMPTION_CONFIG

from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels.fused import backends as fused_backends

pytestmark = [pytest.mark.cudasim, needs_cuda]

CFG = FIT_PREEMPTION_CONFIG


def _bound(name, cpu, node, start):
    d = pod_dict(name, cpu=cpu, spec={"nodeName": node})
    d["status"] = {"startTime": f"2024-01-01T00:00:{start:02d}Z"}
    return d


def _play(backend, objs, arrivals, monkeypatch, cfg=CFG):
    """Bindings of ``arrivals`` [(pod dict)] scheduled one after another
    (30 s grace: the first preemptor's victim is still terminating and the
    preemptor still nominated when the next one comes), and which backend
    ran the cycle and the victim search."""
    with monkeypatch.context() as m:
        if backend == "auto":
            m.setattr(fused_backends, "gpu_present", lambda: True)
        sched = Scheduler(build_cluster(objs, cfg), backend, 0, termination_grace_seconds=30)
        out = []
        for d in arrivals:
            sched.add_pod(d)
            b = sched.schedule_one()
            out.append((b.pod, b.node, b.nominated_node, list(b.victims)))
        (fw,) = sched.cluster.frameworks.values()
        return out, (fw.backend_name, fw.backend_for("victims"))


# One node n0 of 1000m: low-a 600m (started first, so more important) and
# low-b 300m, both priority 0.
#
# high (priority 100, 600m): fits nowhere (900m used).  Its victim search on
# n0 removes both low pods (0m used, 600m fits), then reprieves the most
# important first: low-a back gives 600 + 600 > 1000, a victim; low-b back
# gives 300 + 600 <= 1000, reprieved.  Victims [low-a]; high is nominated to
# n0 and waits for low-a's 30 s grace.
#
# mid (priority 50, 300m): high (100 >= 50) is nominated to n0, so upstream
# counts its 600m on n0 in mid's Filter and victim search.  Filter: 900 +
# 600 + 300 > 1000.  Search: both low pods removed, 0 + 600 (high) + 300 =
# 900 fits; reprieve low-a: 600 + 600 + 300 > 1000, a victim; low-b: 300 +
# 600 + 300 > 1000, a victim.  Victims [low-a, low-b].  (Without high counted
# low-a would be reprieved, 600 + 300 <= 1000, and the victims only [low-b].)
N0 = [node_dict("n0", cpu="1"), _bound("low-a", "600m", "n0", 0),
      _bound("low-b", "300m", "n0", 1)]
ARRIVALS = [pod_dict("high", cpu="600m", priority=100),
            pod_dict("mid", cpu="300m", priority=50)]
WANT = [("default/high", None, "n0", ["default/low-a"]),
        ("default/mid", None, "n0", ["default/low-a", "default/low-b"])]

# Two nodes of 1000m: n0 as above but low-a started at 3 and low-b at 4 (low-a
# still the more important), n1 with low-c (900m, priority 0, started at 0).
#
# high: n0 gives victims [low-a], n1 [low-c]: no PDBs, the same highest victim
# priority (0), the same sum of (priority + 2^31) and count; the latest
# earliest start of the highest-priority victims wins: low-a (3) against
# low-c (0), so n0, victims [low-a].
#
# mid: counting high on n0, n0 gives [low-a, low-b] (as above) and n1 [low-c]
# (0 + 300 fits, low-c back: 900 + 300 > 1000); the smaller sum of (priority
# + 2^31), one victim against two, picks n1.  (Without high counted, n0
# would give [low-b], a tie with n1 up to the earliest start, 4 against 0:
# n0.)
N1 = [node_dict("n0", cpu="1"), _bound("low-a", "600m", "n0", 3),
      _bound("low-b", "300m", "n0", 4), node_dict("n1", cpu="1"),
      _bound("low-c", "900m", "n1", 0)]
WANT1 = [("default/high", None, "n0", ["default/low-a"]),
         ("default/mid", None, "n1", ["default/low-c"])]


@pytest.mark.parametrize("backend", ["numba", "cuda", "auto"])
def test_a_pod_nominated_to_the_node_counts_in_the_device_search(backend, monkeypatch):
    got, ran = _play(backend, N0, ARRIVALS, monkeypatch)
    assert got == WANT
    assert ran == {"numba": ("numba", "numba"), "cuda": ("cuda", "cuda"),
                   "auto": ("numba", "cuda")}[backend]


@pytest.mark.parametrize("backend", ["numba", "cuda", "auto"])
def test_the_nominated_pod_moves_the_pick_alike_on_every_backend(backend, monkeypatch):
    got, _ = _play(backend, N1, ARRIVALS, monkeypatch)
    assert got == WANT1


# With a host filter active (PodTopologySpread: mid spreads over hostnames,
# maxSkew 5, counting pods labelled app=web, none of which exist), the
# search is the device pre-pass plus the host search (``_dry_run``); the
# constraint never binds, so the answers are the first case's.  (The
# pre-pass only narrows the rows the exact host search visits, which reads
# the overlay itself: this guards the pre-pass reading the lowered
# allocatable, it did not fail before.)
SPREAD_CFG = {**CFG, "profiles": [{
    "schedulerName": "default-scheduler", "plugins": {
        **CFG["profiles"][0]["plugins"],
        "preFilter": {"enabled": [{"name": "NodeResourcesFit"},
                                  {"name": "PodTopologySpread"}]},
        "filter": {"enabled": [{"name": "NodeResourcesFit"},
                               {"name": "PodTopologySpread"}]}}}]}
SPREAD = {"topologySpreadConstraints": [{
    "maxSkew": 5, "topologyKey": "kubernetes.io/hostname",
    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}]}


@pytest.mark.parametrize("backend", ["numba", "cuda", "auto"])
def test_the_host_filter_path_counts_the_nominated_pod(backend, monkeypatch):
    mid = pod_dict("mid", cpu="300m", priority=50, spec=SPREAD)
    got, _ = _play(backend, N0, [ARRIVALS[0], mid], monkeypatch, SPREAD_CFG)
    assert got == WANT


def _mid_bytes_up(fillers, monkeypatch):
    """(bindings, bytes the device victim search sent up for mid's attempt,
    node count, resource count) on N0 plus ``fillers`` nodes of 100m that
    fit neither pod and hold no pod (visited, no victims), on ``auto``."""
    objs = N0 + [node_dict(f"f{i}", cpu="100m") for i in range(fillers)]
    with monkeypatch.context() as m:
        m.setattr(fused_backends, "gpu_present", lambda: True)
        sched = Scheduler(build_cluster(objs, CFG), "auto", 0, termination_grace_seconds=30)
        out = []
        sched.add_pod(ARRIVALS[0])
        b = sched.schedule_one()
        out.append((b.pod, b.node, b.nominated_node, list(b.victims)))
        mirror = sched.cluster.pod_table().mirror
        up = mirror.bytes_uploaded
        sched.add_pod(ARRIVALS[1])
        b = sched.schedule_one()
        out.append((b.pod, b.node, b.nominated_node, list(b.victims)))
        st = sched.cluster.state
        return out, mirror.bytes_uploaded - up, st.num_nodes, len(st.resources)


def test_a_warm_search_sends_the_nominated_rows_not_the_column(monkeypatch):
    """mid's search on ``auto`` (high nominated to n0) sends up only what
    does not grow with the cluster: the nominated row of allocatable
    lowered on the device, the pod-table row that changed; its visiting
    order (the same nodes as high's from another seeded offset) stays
    resident, its offset a launch argument; never the order (8 bytes a
    node) nor the whole lowered allocatable [N, R].  Same answers at both
    sizes."""
    small, up_small, n_small, r = _mid_bytes_up(40, monkeypatch)
    big, up_big, n_big, _ = _mid_bytes_up(160, monkeypatch)
    assert small == big == WANT
    assert up_small == up_big
    assert up_big < 8 * n_small
