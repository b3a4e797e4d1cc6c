"""kernels/victims/device.py under the CUDA simulator: the pod tables
resident on the device follow the host table by the rows that changed (one
packed copy and a scatter kernel), and the search / search-and-pick over
them give the answers of ``search.select_victims`` (numpy) and
``pick.visit_and_pick``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda
from test_search import HAND, HAND_PODS, HAND_Q, HAND_Q4, victim_case

from tensorsched.kernels.victims import pick as VP
from tensorsched.kernels.victims import search as V

pytestmark = [pytest.mark.cudasim, needs_cuda]


def _stage(c, q):
    from tensorsched.kernels.victims.device import pack_stage
    return pack_stage(c, q)


def _mirror(pods, layout=1, stamps=None, stamp=1):
    from tensorsched.kernels.victims.device import DeviceVictims
    dev = DeviceVictims()
    n = pods.pod_count.shape[0]
    dev.sync_pods(pods, layout, np.ones(n, np.int64) if stamps is None else stamps, stamp)
    return dev


def _numpy(c, q, rows, prio, pods):
    res = V.select_victims("numpy", c, q, np.asarray(rows, np.int64), prio, pods)
    return res.stats.tolist(), res.victims.tolist()


def test_hand_search_and_dirty_rows():
    pods = V.VictimPods(*(a.copy() for a in HAND_PODS))
    dev = _mirror(pods)
    dc = _stage(HAND, HAND_Q4)
    rows = np.arange(7, dtype=np.int64)
    got = dev.search(dc, HAND, rows, 3)
    assert (got.stats.tolist(), got.victims.tolist()) == _numpy(HAND, HAND_Q4, rows, 3, pods)
    assert dev.full_uploads == 1 and dev.rows_uploaded == 7
    # Row 4 changes on the host (its second pod leaves): stamp 2 marks it;
    # only that row travels, and the search sees it.
    pods.pod_count[4] = 1
    pods.pod_prio[4, 1] = 0
    stamps = np.ones(7, np.int64)
    stamps[4] = 2
    dev.sync_pods(pods, 1, stamps, 2)
    assert dev.full_uploads == 1 and dev.rows_uploaded == 8
    got = dev.search(dc, HAND, rows, 3)
    assert (got.stats.tolist(), got.victims.tolist()) == _numpy(HAND, HAND_Q4, rows, 3, pods)
    # The same stamp again: nothing travels; a new layout: everything.
    dev.sync_pods(pods, 1, stamps, 2)
    assert dev.rows_uploaded == 8
    dev.sync_pods(pods, 2, stamps, 2)
    assert dev.full_uploads == 2 and dev.rows_uploaded == 15


def test_hand_search_and_pick_one_copy_back():
    dev = _mirror(HAND_PODS)
    dc = _stage(HAND, HAND_Q)
    rows = np.array([1, 2, 0, 3], np.int64)
    stats, victims = _numpy(HAND, HAND_Q, rows, 3, HAND_PODS)
    want = VP.visit_and_pick(np.array(stats, np.int64), 4)
    got = dev.search_and_pick(dc, HAND, rows, 3, 4)
    # Node 0 (position 2) is the one candidate: victim slot 1; every
    # position visited (no second candidate): calls 0 + 1 + 3 + 3.
    assert (got.visited, got.calls, got.chosen) == tuple(want) == (4, 7, 2)
    assert got.stats.tolist() == stats[2] and got.victims.tolist() == [1]
    assert dev.last_stats(4).tolist() == stats


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(victim_case(), st.integers(1, 4), st.data())
def test_random_device_tables_follow_the_host(case, cap, data):
    c, q, rows, prio, pods = case
    pods = V.VictimPods(*(a.copy() for a in pods))
    n = pods.pod_count.shape[0]
    dev = _mirror(pods)
    dc = _stage(c, q)
    rows = np.asarray(rows, np.int64)
    # Rewrite some rows on the host (priorities shuffled, a pod dropped).
    changed = data.draw(st.lists(st.integers(0, n - 1), max_size=n, unique=True))
    stamps = np.ones(n, np.int64)
    for i in changed:
        pods.pod_prio[i] = pods.pod_prio[i][::-1]
        pods.pod_count[i] = max(0, pods.pod_count[i] - 1)
        stamps[i] = 2
    dev.sync_pods(pods, 1, stamps, 2)
    got = dev.search(dc, c, rows, prio)
    want_stats, want_victims = _numpy(c, q, rows, prio, pods)
    assert (got.stats.tolist(), got.victims.tolist()) == (want_stats, want_victims)
    pk = dev.search_and_pick(dc, c, rows, prio, cap)
    want = VP.visit_and_pick(np.array(want_stats, np.int64), cap)
    assert (pk.visited, pk.calls, pk.chosen) == tuple(want)
    if want.chosen >= 0:
        nv = want_stats[want.chosen][V.STAT_N_VICTIMS]
        assert pk.victims.tolist() == want_victims[want.chosen][:nv]


def test_a_warm_search_and_pick_is_one_copy_each_way(monkeypatch):
    """Once the mirror and its scratch exist, a preemptor's search and pick
    whose visiting order is not a rotation of the last one sends it up in
    one copy into the kept buffer, allocates nothing and copies one buffer
    back; the victim kernel takes the stage packed (sixteen arguments)."""
    from numba import cuda

    from tensorsched.kernels.victims import _cuda as victims_cuda
    dev = _mirror(HAND_PODS)
    dc = _stage(HAND, HAND_Q)
    rows = np.array([1, 2, 0, 3], np.int64)
    first = dev.search_and_pick(dc, HAND, rows, 3, 4)
    device_type = type(cuda.device_array(1))
    seen = {"up": 0, "back": 0, "alloc": 0, "args": []}
    real = (device_type.copy_to_device, device_type.copy_to_host, cuda.to_device,
            cuda.device_array, victims_cuda.launch)

    def count(key, fn):
        def wrapped(*a, **k):
            seen[key] += 1
            return fn(*a, **k)
        return wrapped

    def launch(n_rows, *args):
        seen["args"].append(len(args) - 2 + len(args[3]) + len(args[6]))    # packs, tables
        return real[4](n_rows, *args)
    monkeypatch.setattr(device_type, "copy_to_device", count("up", real[0]))
    monkeypatch.setattr(device_type, "copy_to_host", count("back", real[1]))
    monkeypatch.setattr(cuda, "to_device", count("alloc", real[2]))
    monkeypatch.setattr(cuda, "device_array", count("alloc", real[3]))
    monkeypatch.setattr(victims_cuda, "launch", launch)
    again = dev.search_and_pick(dc, HAND, rows[::-1].copy(), 3, 4)
    assert (seen["up"], seen["back"], seen["alloc"]) == (1, 1, 0)
    assert seen["args"] == [16]
    assert first.chosen >= 0 and again.chosen >= 0


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(victim_case(), st.integers(1, 4), st.data())
def test_a_rotated_visiting_order_sends_nothing_and_answers_alike(case, cap, data):
    """A second search and pick over the same nodes from another offset (the
    next preemptor's visit) sends no bytes up, the first or another node
    set its order; every answer equals ``pick.visit_and_pick`` over the
    numpy search of that order."""
    c, q, rows, prio, pods = case
    dev = _mirror(pods)
    dc = _stage(c, q)
    rows = np.asarray(rows, np.int64)
    m = rows.shape[0]
    shift = data.draw(st.integers(0, max(m - 1, 0)))
    others = data.draw(st.permutations(rows.tolist()))
    for order, sends in ((rows, True), (np.roll(rows, -shift), False),
                         (np.array(others, np.int64), None)):
        up = dev.bytes_uploaded
        pk = dev.search_and_pick(dc, c, order, prio, cap)
        stats, victims = _numpy(c, q, order, prio, pods)
        want = VP.visit_and_pick(np.array(stats, np.int64), cap)
        assert (pk.visited, pk.calls, pk.chosen) == tuple(want)
        if want.chosen >= 0:
            assert pk.victims.tolist() == victims[want.chosen][:stats[want.chosen][
                V.STAT_N_VICTIMS]]
        sent = dev.bytes_uploaded - up
        if sends is None:       # another order: its rows, unless a rotation of ``rows``
            sends = not any(np.array_equal(np.roll(rows, -k), order) for k in range(m))
            assert (sent > 0) == sends
        elif sends:             # the first order whole (and the scratch's header)
            assert sent >= 8 * m
        else:                   # its rotation: nothing
            assert sent == 0


@given(n=st.integers(1, 12), r=st.integers(1, 5), data=st.data())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_allocatable_lowered_on_few_rows(n, r, data):
    """The stage's allocatable lowered by the nominated pods' requests on
    k rows equals ``allocatable - added`` on the host, and only the k
    packed rows travel up: (1 + R) x 8 bytes each, one copy, one launch."""
    from numba import cuda

    from tensorsched.kernels.fused.stage_args import DeviceStage
    alloc = np.array(data.draw(st.lists(st.lists(st.integers(0, 10**9), min_size=r,
                                                 max_size=r), min_size=n, max_size=n)),
                     np.int64)
    rows = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1))), np.int64)
    amounts = np.array(data.draw(st.lists(st.lists(st.integers(0, 10**6), min_size=r,
                                                   max_size=r), min_size=rows.shape[0],
                                          max_size=rows.shape[0])), np.int64)
    # the stage's column is a strided view of a wider pack, as the mirror's
    pack = np.zeros((n, r + 3), np.int64)
    pack[:, 1:1 + r] = alloc
    dev_pack = cuda.to_device(pack)
    stage = DeviceStage((dev_pack,), None, dev_pack[:, 1:1 + r])
    dev = _mirror(HAND_PODS)
    before = dev.counters()
    got = dev.allocatable_lowered(stage, rows, amounts).copy_to_host()
    want = alloc.copy()
    want[rows] -= amounts
    assert got.tolist() == want.tolist()
    after = dev.counters()
    assert after["copies"] - before["copies"] == 1
    assert after["bytes_uploaded"] - before["bytes_uploaded"] == 8 * (1 + r) * rows.shape[0]
    assert after["launches"] - before["launches"] == 1


def test_sync_pods_takes_its_rows_from_the_journal():
    """With the host table's ``SyncJournal`` the rows stamped since the last
    upload come from it (no pass over ``row_stamp``: ``journal_reads``);
    a journal that no longer reaches back falls back to the pass
    (``stamp_scans``); the device tables equal the host's either way."""
    from tensorsched.kernels.victims.sync_journal import SyncJournal
    pods = V.VictimPods(*(a.copy() for a in HAND_PODS))
    n = pods.pod_count.shape[0]
    journal = SyncJournal(limit=2)
    stamps = np.ones(n, np.int64)
    dev = _mirror(pods, stamps=stamps)
    pods.pod_count[4] = 1
    stamps[4] = 2
    journal.add(2, np.array([4]))
    dev.sync_pods(pods, 1, stamps, 2, journal)
    assert (dev.journal_reads, dev.stamp_scans, dev.rows_uploaded) == (1, 0, n + 1)
    for s, rows in ((3, [0]), (4, [5, 6])):         # sync 3 leaves the journal (limit 2)
        pods.pod_prio[rows] += 1
        stamps[rows] = s
        journal.add(s, np.array(rows))
    dev.sync_pods(pods, 1, stamps, 4, journal)
    # rows 0, 5 and 6 found by the pass: over a quarter of 7, all rows sent
    assert (dev.journal_reads, dev.stamp_scans, dev.rows_uploaded) == (1, 1, 2 * n + 1)
    for host, got in zip(pods[:6], dev._tables):
        assert got.copy_to_host().tolist() == np.asarray(host).tolist()


def test_a_keyed_visit_base_is_kept_without_reading_it():
    """``_visit_order`` with a ``VisitBase``: the same key keeps the base
    without comparing (``visit_keyed``, nothing sent); another key compares
    the base (``visit_compared``) and sends only the rows that differ; the
    device base rotated by the offset is the visiting order every time."""
    from tensorsched.kernels.victims.device import DeviceVictims, VisitBase
    dev = DeviceVictims()
    base = np.array([0, 2, 3, 5, 8, 9, 11, 12], np.int64)
    m = base.shape[0]

    def order(b, k, key):
        got, off = dev._visit_order(np.roll(b, -k), VisitBase(b, k, key))
        assert off == k
        host = got.copy_to_host()[:, 0]
        assert [int(host[(off + j) % m]) for j in range(m)] == np.roll(b, -k).tolist()
        return got
    first = order(base, 3, "a")
    assert dev.copies == 1
    for k in range(m):
        assert order(base, k, "a") is first
    assert dev.visit_keyed == m and dev.copies == 1 and dev.visit_compared == 0
    assert order(base.copy(), 5, None) is first         # no key: compared, the same
    assert dev.visit_compared == 1 and dev.copies == 1
    other = base.copy()
    other[6] = 10
    order(other, 2, "b")                                # compared, one row sent
    assert dev.visit_compared == 2 and dev.copies == 2 and dev.launches == 1
    order(other, 7, "b")
    assert dev.visit_keyed == m + 1 and dev.copies == 2
    order(base, 1, None)                                # back to ``base``: compared
    assert dev.visit_compared == 3
    dev._visit_order(np.roll(other, -4))                # no VisitBase: a new base sent
    assert dev.visit_searched == 1
    order(base, 0, "b")         # "b" named the base before: compared, not trusted
    assert dev.visit_compared == 4 and dev.visit_keyed == m + 1


def test_a_warm_sync_sends_its_rows_in_one_driver_copy(monkeypatch):
    """A sync that follows a few changed rows packs them in one compiled
    call into a kept pinned buffer and sends them with one driver copy of
    its prefix into a kept device buffer, then one scatter: no allocation,
    no device array copy or view; the device tables equal the host's, and
    again when a later sync sends fewer rows (the buffer's stale tail is
    not read)."""
    from numba import cuda
    from numba.cuda.cudadrv import driver
    # the hand table three times over: room for a few rows under a quarter
    pods = V.VictimPods(*(np.concatenate([a] * 3) for a in HAND_PODS[:6]),
                        HAND_PODS[6].copy())
    n = pods.pod_count.shape[0]
    stamps = np.ones(n, np.int64)
    dev = _mirror(pods, stamps=stamps)
    device_type = type(cuda.device_array(1))
    seen = {"driver": 0, "up": 0, "alloc": 0}
    real = (driver.host_to_device, device_type.copy_to_device, cuda.to_device,
            cuda.device_array, cuda.pinned_array)

    def count(key, fn):
        def wrapped(*a, **k):
            seen[key] += 1
            return fn(*a, **k)
        return wrapped
    monkeypatch.setattr(driver, "host_to_device", count("driver", real[0]))
    monkeypatch.setattr(device_type, "copy_to_device", count("up", real[1]))
    monkeypatch.setattr(cuda, "to_device", count("alloc", real[2]))
    monkeypatch.setattr(cuda, "device_array", count("alloc", real[3]))
    monkeypatch.setattr(cuda, "pinned_array", count("alloc", real[4]))
    for stamp, rows in ((2, [1]), (3, [4, 9, 20]), (4, [2, 16]), (5, [0])):
        pods.pod_prio[rows] += 7
        pods.pod_start[rows] -= 1
        pods.pod_count[rows[0]] = max(int(pods.pod_count[rows[0]]) - 1, 0)
        stamps[rows] = stamp
        before = (dev.launches, dev.copies)
        dev.sync_pods(pods, 1, stamps, stamp)
        assert (dev.launches - before[0], dev.copies - before[1]) == (1, 1)
        for host, got in zip(pods[:6], dev._tables):
            assert got.copy_to_host().tolist() == np.asarray(host).tolist()
    # the first warm sync made the kept buffers (one pinned, one device), room
    # for 16 rows: none since
    assert seen == {"driver": 4, "up": 0, "alloc": 2}
