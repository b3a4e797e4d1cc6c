"""The victim search on counts on the device (CUDA simulator): when
PodTopologySpread and/or InterPodAffinity are the only host filters, the
cuda backend searches every node of the visiting order on counts (one
thread per node, ``victims._counts_cuda``), then visits and picks on the
device, one copy back.  DefaultPreemption's answer (nominated node,
victims, message, Filter calls) equals the numba visit's on counts
(``visit.visit_candidates``), on random clusters with spread constraints,
required affinity / anti-affinity terms, bound pods' anti-affinity,
terminating pods, PDBs and host ports, any offset and candidate count; and
the device path is the one that ran."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda
from support.preemption import PREEMPTION_CONFIG, preemption_node, preemption_pod
from test_victims_affinity_on_counts import CONFIG_IPA_FIRST
from test_victims_affinity_on_counts import cases as affinity_cases
from test_visit import cases as visit_cases

from tensorsched.bench.preemption import build, run_preemption
from tensorsched.framework.preemption.probe_tables import ProbeTables
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.kernels.victims import _counts_cuda
from tensorsched.kernels.victims.device import DeviceVictims

pytestmark = [pytest.mark.cudasim, needs_cuda]


def _preempt(objs, pre, backend, offset, cands, config=PREEMPTION_CONFIG):
    """(answer, the device mirror's counters or None)."""
    cluster = build_cluster(objs, config)
    pod = cluster.resolve(pre)
    fw = cluster.framework_for(pod, backend)
    result = fw.run_cycle(cluster.state, pod, all_nodes=True)
    table = cluster.pod_table()
    out = fw.plugins_at("postFilter")[0].post_filter(
        CycleContext(cluster.state, pod, fw), result, table, offset=offset, num_cands=cands)
    mirror = table.mirror
    return ((out.nominated_node, out.victims, out.message, out.filter_calls),
            None if mirror is None else mirror.counters(), out.host_filters)


SEEN = {"on_counts": 0, "found": 0}


def _check(objs, pre, offset, cands, config=PREEMPTION_CONFIG):
    want, _, _ = _preempt(objs, pre, "numba", offset, cands, config)
    got, counters, host = _preempt(objs, pre, "cuda", offset, cands, config)
    assert got == want
    names = {p.name for p in host}      # known when a node was found
    if names and names <= {"PodTopologySpread", "InterPodAffinity"}:
        assert counters["counts_searches"] == 1
    if counters is not None and counters["counts_searches"]:
        # searched on counts on the device: one search (its kernel and the
        # pick), one copy back when a node was found, two without (the
        # reasons)
        assert counters["counts_searches"] == 1
        assert counters["copies_back"] == (1 if got[0] is not None else 2)
        SEEN["on_counts"] += 1
        SEEN["found"] += got[0] is not None


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(visit_cases())
def _on_counts_equal_numba_visit(case):
    objs, pre, offset, cands = case
    _check(objs, pre, offset, cands)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(affinity_cases())
def _on_counts_affinity_equal_numba_visit(case):
    objs, pre, ipa_first = case
    n = sum(1 for o in objs if o["kind"] == "Node")
    for offset, cands in ((0, n), (n - 1, 1)):
        _check(objs, pre, offset, cands, CONFIG_IPA_FIRST if ipa_first else PREEMPTION_CONFIG)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(visit_cases(), st.sampled_from([-5, 0, 3]), st.sampled_from([300, 500, 900]))
def _on_counts_without_a_node_equal_numba_visit(case, prio, cpu):
    """Lower-priority, larger preemptors: many searches find no node, and the
    reasons (built-in bits, the host filters' kinds, no victims) come back
    from the device's codes."""
    objs, pre, offset, cands = case
    pre["spec"]["priority"] = prio
    pre["spec"]["containers"][0]["resources"]["requests"]["cpu"] = f"{cpu}m"
    _check(objs, pre, offset, cands)


def test_device_on_counts_equals_numba_visit_on_random_cases():
    """The three property checks above (random visiting cases, affinity
    cases, lower-priority larger preemptors), run here in one test so the
    tally below counts them whatever worker runs it: the device's answer is
    numba's, and the random cases went through the device search on counts
    often, with and without a node found."""
    SEEN.update(on_counts=0, found=0)
    _on_counts_equal_numba_visit()
    _on_counts_affinity_equal_numba_visit()
    _on_counts_without_a_node_equal_numba_visit()
    assert SEEN["on_counts"] >= 60 and 10 <= SEEN["found"] <= SEEN["on_counts"] - 10, SEEN


# Two zones; the preemptor (priority 5, anti-affinity against app=a by
# zone) finds an app=a pod of priority 9 in z1 on n0 (not a victim), and
# in z2 n2 holds only priority-9 pods.  n0: removing its lower pods leaves
# the priority-9 app=a pod: InterPodAffinity (anti-affinity) rejects.  n1
# (z1): the same zone's pod on n0 stays: rejected alike.  n2: no victims.
# Every reason comes back from the device's codes as numba gives them.
NO_NODE = [preemption_node("n0", 400, 5, "z1"), preemption_node("n1", 400, 5, "z1"),
           preemption_node("n2", 400, 5, "z2"),
           preemption_pod("keep", "n0", prio=9, cpu=100, app="a"),
           preemption_pod("low0", "n0", prio=0, cpu=250, app="b"),
           preemption_pod("low1", "n1", prio=0, cpu=350, app="b"),
           preemption_pod("top2", "n2", prio=9, cpu=350, app="b")]


def test_no_node_reasons_from_the_device():
    pre = preemption_pod("preemptor", prio=5, cpu=200, app="b", anti=("zone", "a"))
    want, _, _ = _preempt(NO_NODE, pre, "numba", 0, 3)
    got, counters, host = _preempt(NO_NODE, pre, "cuda", 0, 3)
    assert got == want
    assert want[0] is None and "node(s) didn't satisfy existing pods anti-affinity rules" \
        not in want[2]
    assert "didn't match pod anti-affinity rules" in want[2], want
    assert counters["counts_searches"] == 1 and counters["copies_back"] == 2


@pytest.mark.parametrize("variant", ["spread", "antiaffinity"])
def test_preemption_workloads_equal_numba_through_the_scheduler(variant):
    """The preemption-spread / -antiaffinity workloads (every node full of
    low pods, preemptors one after another): each preemptor is searched on
    counts on the device, the resident tables following the evictions by
    their changed rows; same placements and victims as numba."""
    want = run_preemption(12, 5, "numba", variant=variant)
    got = run_preemption(12, 5, "cuda", variant=variant)
    assert got["placements_sha256"] == want["placements_sha256"]
    assert got["preemptions"] == want["preemptions"] == 5
    counted = got["victim_device_counters"]
    assert counted["counts_searches"] == 5
    # a preemptor: the counts kernel and the pick, plus the scatters of the
    # rows the previous one's evictions changed (pod, index and probe
    # tables); one copy back each
    assert counted["copies_back"] == 5
    assert 10 <= counted["launches"] <= 5 * 6
    assert counted["full_uploads"] == 0


def test_resident_tables_send_the_rows_that_changed():
    """``DeviceVictims._resident``: the first call sends the table, a later
    one the rows that differ (one packed copy, one scatter), none when
    nothing changed, all in one copy past a quarter; the device copy equals
    the host's each time."""
    dev = DeviceVictims()
    host = np.arange(40 * 3, dtype=np.int64).reshape(40, 3)
    got = dev._resident("t", host)
    assert (dev.copies, dev.bytes_uploaded, dev.launches) == (1, host.nbytes, 0)
    host[[3, 17], 1] = -5
    got = dev._resident("t", host)
    assert (dev.copies, dev.bytes_uploaded - host.nbytes, dev.launches) == (2, 2 * 4 * 8, 1)
    assert got.copy_to_host().tolist() == host.tolist()
    dev._resident("t", host)
    assert (dev.copies, dev.launches) == (2, 1)
    host[:20] += 1
    got = dev._resident("t", host)
    assert (dev.copies, dev.launches) == (3, 1)
    assert got.copy_to_host().tolist() == host.tolist()


def test_a_rotated_visiting_order_sends_only_its_offset():
    """``DeviceVictims._visit_order``: the same nodes from another offset
    send nothing (the kept base and the offset); other nodes become the
    base (one copy)."""
    dev = DeviceVictims()
    base = np.array([4, 9, 2, 7, 0], np.int64)
    got, off = dev._visit_order(base)
    assert off == 0 and dev.copies == 1
    for k in range(5):
        again, off = dev._visit_order(np.roll(base, -k))
        assert off == k and again is got and dev.copies == 1
        assert [int(got[(off + j) % 5, 0]) for j in range(5)] == np.roll(base, -k).tolist()
    other, off = dev._visit_order(np.array([4, 9, 7, 2, 0], np.int64))
    assert off == 0 and dev.copies == 2
    assert other.copy_to_host()[:, 0].tolist() == [4, 9, 7, 2, 0]


@pytest.mark.parametrize("variant", ["spread", "antiaffinity"])
def test_one_bound_pod_moved_reads_and_sends_its_rows_only(variant):
    """Between two preemptors' searches on counts one bound pod leaves a
    node: the kept probe tables (``PodTable.probe_tables``) re-read only
    the domains that pod's removal moved (one per DomainSums column: its
    node's hostname and zone domains), no node row, and the device gets
    exactly the rows that changed, none of N; the tables then equal
    tables built afresh, and so does the device's copy."""

    cluster, pending = build(12, 1, 100, variant)
    pod = pending[0]
    fw = cluster.framework_for(pod, "cuda")
    table = cluster.pod_table()

    def search():
        result = fw.run_cycle(cluster.state, pod, seed=0, want_scores=False)
        out = fw.run_post_filter(CycleContext(cluster.state, pod, fw), result, table, seed=0)
        return out.nominated_node

    fresh = []
    update = ProbeTables.update

    def checked(self, n, node_cols, dom_cols):     # every update against a fresh build
        update(self, n, node_cols, dom_cols)
        if self is table.probe_tables:
            other = ProbeTables()
            update(other, n, node_cols, dom_cols)
            fresh.append((other.nodes.copy(), other.doms.copy()))
    ProbeTables.update = checked
    try:
        assert search() is not None
        tables, mirror = table.probe_tables, table.mirror
        nodes0, doms0 = tables.nodes.copy(), tables.doms.copy()
        read0, sent0 = tables.rows_read, mirror.probe_rows_uploaded
        cluster.state.remove_pod("default/low-5-15")  # matched by every probe
        assert search() is not None
    finally:
        ProbeTables.update = update
    changed = sorted(set(np.flatnonzero((tables.doms != doms0).any(axis=1)).tolist()))
    assert tables.nodes.tolist() == nodes0.tolist() and tables.nodes_changed.tolist() == []
    assert tables.doms_changed.tolist() == changed and 1 <= len(changed) <= 2
    dom_sums = 2 if variant == "spread" else 1      # hostname and zone; hostname
    assert tables.rows_read - read0 == dom_sums
    assert mirror.probe_rows_uploaded - sent0 == len(changed)
    for (want_nodes, want_doms), _ in zip(fresh[-1:], range(1)):
        assert tables.nodes.tolist() == want_nodes.tolist()
        assert tables.doms.tolist() == want_doms.tolist()
        assert mirror._kept["probe_doms"][2].copy_to_host().tolist() == want_doms.tolist()
        assert mirror._kept["probe_nodes"][2].copy_to_host().tolist() == want_nodes.tolist()


def test_the_per_preemptor_inputs_go_up_into_the_kept_buffer_whole(monkeypatch):
    """Preemptors searched on counts on the device: each one's inputs (the
    offset, the fit columns, the conditions' scalars and class matches) go
    up by one copy into the kept buffer, and the kernel gets that buffer
    itself (it reads the inputs through their header), not a device view
    made per preemptor; the placements are numba's."""
    launch, seen = _counts_cuda.launch, []

    def kept(*args):
        seen.append(args[11])           # ``per``
        return launch(*args)
    monkeypatch.setattr(_counts_cuda, "launch", kept)
    got = run_preemption(24, 4, "cuda", variant="spread")
    assert got["placements_sha256"] == run_preemption(24, 4, "numba",
                                                      variant="spread")["placements_sha256"]
    assert len(seen) >= 4 and all(per is seen[0] for per in seen)
