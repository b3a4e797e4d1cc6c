"""kernels/fused/run_sort_cuda.py: the device key kernel writes what the
numba twin writes (same source, same rounding), the order (CuPy's sort on a
device, the host sort on the simulator path) is the twin's, and the cuda
backend's sort path places a run as one cycle per pod does."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda
from support.kernel_inputs import DEFAULT_NORM, compiled, stage_case, state_of
from support.launch_guard import device_arrays_only  # noqa: F401 (autouse)

from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels import layout as L
from tensorsched.kernels.fused import filters, run_sort, scores
from tensorsched.kernels.fused import stage_args as SA
from tensorsched.kernels.fused.backends import kernel_args

# the tie rank wraps mod 2**64 by design (quiet on the simulator: kernels.mod64); any
# other RuntimeWarning fails
pytestmark = [pytest.mark.cudasim, needs_cuda,
              pytest.mark.filterwarnings("error::RuntimeWarning")]


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(stage_case(), st.integers(0, 2**64 - 1), st.integers(1, 12))
def test_device_keys_and_order_equal_the_numba_twin(case, seed, count):
    """The maxima reduced on the device, the keys, the pair and at-maximum
    counts, the order and the exact prefix: each the host twin's."""
    from numba import cuda

    from tensorsched.kernels.fused import run_sort_cuda as RC
    objs, pod, filter_flags, score_flags, strategy, _, _ = case
    state = state_of(objs)
    q = compiled(state, pod, filter_flags=filter_flags, score_flags=score_flags,
                 fit_strategy=strategy, shape=((0, 10), (50, 3), (100, 0)))
    cols, rows = state.columns(), state.valid_rows()
    n = cols.allocatable.shape[0]
    reasons = np.full(n, L.R_INVALID_ROW, np.int64)
    reasons[rows] = filters.node_reasons(cols, rows, q, xp=np)
    raw = np.zeros((n, L.N_BUILTIN_SCORES), np.int64)
    part = np.zeros((rows.shape[0], L.N_BUILTIN_SCORES), np.int64)
    scores.raw_scores(cols, rows, q, part, reasons[rows] == 0, xp=np)
    raw[rows] = part
    active = np.ones(L.N_BUILTIN_SCORES, bool)
    weights = np.array([1, 2, 3, 1, 2], np.int64)
    hi = run_sort.run_maxima(reasons, raw, rows, active, DEFAULT_NORM)
    width = run_sort.key_width(cols, rows, q, count)
    want_keys, want_lens = run_sort.keys_numba(kernel_args(cols, q), rows, width, seed,
                                               reasons, raw, active, DEFAULT_NORM, weights, hi)
    packs = tuple(cuda.to_device(a) for a in SA.pack_nodes(cols))
    qbuf = cuda.to_device(SA.pack_query(cols, q))
    d_rows, reasons_d, raw_d = (cuda.to_device(a) for a in (rows, reasons, raw))
    sparams_d = cuda.to_device(RC.slot_params(active, DEFAULT_NORM, weights, 0 * hi))
    RC.run_maxima(d_rows, reasons_d, raw_d, sparams_d)
    assert sparams_d.copy_to_host()[3].tolist() == hi.tolist()
    keys_d, lens_d, stats_d = RC.run_keys(d_rows, width, seed, packs, qbuf, reasons_d, raw_d,
                                          sparams_d, cols.requested.shape[1])
    stats = stats_d.copy_to_host()
    assert np.array_equal(lens_d.copy_to_host(), want_lens)
    assert np.array_equal(keys_d.copy_to_host(), want_keys)
    feasible = reasons[rows] == 0
    at_max = [int((feasible & (raw[rows, s] == hi[s])).sum()) if hi[s] else 0
              for s in range(hi.shape[0])]
    assert stats.tolist() == [int(want_lens.sum())] + at_max
    want = run_sort.order_by_sort(want_keys, want_lens, count)
    p = want.shape[0]
    flat_d = RC.flat_order(keys_d, p)
    assert np.array_equal(flat_d.copy_to_host() // width, want)
    exact = p
    if p:
        exact = run_sort.exact_prefix(want, want_lens, rows, reasons, raw, active, DEFAULT_NORM,
                                      hi)
        assert RC.exact_prefix(flat_d, p, width, lens_d, d_rows, raw_d, sparams_d,
                               stats[1:]) == exact
    # the whole path, the order taken at the host's bound min(count, M x W)
    # (infeasible pairs included) and cut after: the same prefix
    # (one buffer up: the slot parameters, the rows, the head; one back)
    bufs = RC.RunBuffers()
    lay = RC.run_layout(hi.shape[0], rows.shape[0], 0, min(count, rows.shape[0] * width))
    host, dev = bufs.run(lay.end)
    RC.fill_run(host, lay, active, DEFAULT_NORM, weights, rows)
    pos, _ = RC.sorted_positions(host, dev, lay, 0, None, count, width, reasons_d, raw_d,
                                 cols.requested.shape[1], seed, packs, qbuf, bufs)
    assert np.array_equal(pos, want[:exact])


def test_device_exact_prefix_equals_the_host_rule():
    """``run_sort``'s hand-made exact-prefix cases (slot 3's maximum 5 on
    row 1, then on rows 1 and 2) read on the device from flat key indices."""
    from numba import cuda

    from tensorsched.kernels.fused import run_sort_cuda as RC
    rows = np.array([0, 1, 2], np.int64)
    reasons = np.zeros(3, np.int64)
    active = np.ones(5, bool)
    norm = np.array([0, 0, 0, 1, 0])
    weights = np.ones(5, np.int64)
    lens = np.array([3, 1, 3], np.int64)
    width = 3
    raw1 = np.zeros((3, 5), np.int64)
    raw1[:, 3] = [2, 5, 0]
    raw2 = raw1.copy()
    raw2[2, 3] = 5
    cases = [(raw1, [1]), (raw1, [0, 2, 1]), (raw1, [1, 0, 0]), (raw1, [0, 1, 2, 2]),
             (raw2, [1, 0, 2, 0]), (raw2, [1, 2, 2, 2, 0]), (raw2, [2, 2, 0])]
    for raw, order in cases:
        order = np.array(order, np.int64)
        hi = run_sort.run_maxima(reasons, raw, rows, active, norm)
        want = run_sort.exact_prefix(order, lens, rows, reasons, raw, active, norm, hi)
        nth = [int((order[:t] == j).sum()) for t, j in enumerate(order)]
        flat = order * width + np.array(nth, np.int64)
        at_max = np.where(hi != 0, (raw == hi).sum(axis=0), 0)
        got = RC.exact_prefix(cuda.to_device(flat), order.shape[0], width,
                              cuda.to_device(lens), cuda.to_device(rows), cuda.to_device(raw),
                              cuda.to_device(RC.slot_params(active, norm, weights, hi)),
                              at_max)
        assert got == want, (order.tolist(), got, want)


def test_cuda_sort_path_places_as_one_by_one(monkeypatch):
    monkeypatch.setattr(run_sort, "ENABLED", True)
    prefer = [{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]
    objects = [node_dict(f"n{i}", cpu=str(1 + i % 3), memory="2Gi", pods=str(4 + i),
                         labels={"zone": f"z{i % 2}"}, taints=prefer if i % 3 == 0 else None)
               for i in range(5)]
    objects.append(pod_dict("used", cpu="700m", memory="300Mi", spec={"nodeName": "n1"}))
    run = [pod_dict(f"p{k}", cpu="250m", memory="200Mi", created=k) for k in range(24)]
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "percentageOfNodesToScore": 100}

    def play(backend, batch):
        sched = Scheduler(build_cluster(objects, cfg), backend, 9, batch=batch)
        log = [(b.pod, b.node) for b in sched.schedule_pending(run)[0]]
        return log, sched

    got, sched = play("cuda", True)
    want, _ = play("numpy", False)
    assert got == want
    (fw,) = sched.cluster.frameworks.values()
    assert fw.backend.sorted_runs == 1


def test_a_sorted_run_leaves_the_row_cache_on_the_device(monkeypatch):
    """During the cuda backend's sorted runs no device array of N rows
    comes back to the host: the reasons and raw scores by row stay there
    (the maxima, the counts and the exact prefix are read on the device);
    what comes back is one buffer of O(S) counts and the placements, plus,
    on the simulator path only, the keys for the host sort.  The placements are
    numba's and the one-by-one cycles'."""
    from numba import cuda

    from tensorsched.kernels.fused import run_sort_cuda as RC
    from tensorsched.kernels.fused.backends import CudaBackend
    monkeypatch.setattr(run_sort, "ENABLED", True)
    n_nodes = 37
    prefer = [{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]
    objects = [node_dict(f"n{i}", cpu=str(1 + i % 4), memory="4Gi", pods=str(3 + i % 5),
                         taints=prefer if i % 3 == 0 else None) for i in range(n_nodes)]
    run = [pod_dict(f"p{k}", cpu="300m", memory="100Mi", created=k) for k in range(90)]
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "percentageOfNodesToScore": 100}
    copies, keys, recording = [], [], []
    device_type = type(cuda.device_array(1, np.int64))
    real_copy, real_keys = device_type.copy_to_host, RC.run_keys
    real_sorted = CudaBackend.place_run_sorted

    def copy_to_host(self, *a, **k):
        if recording:
            copies.append((self, tuple(self.shape)))
        return real_copy(self, *a, **k)

    def run_keys(*a, **k):
        got = real_keys(*a, **k)
        keys.append(got[0])
        return got

    def place_run_sorted(self, *a, **k):
        recording.append(1)
        try:
            return real_sorted(self, *a, **k)
        finally:
            recording.clear()
    monkeypatch.setattr(device_type, "copy_to_host", copy_to_host)
    monkeypatch.setattr(RC, "run_keys", run_keys)
    monkeypatch.setattr(CudaBackend, "place_run_sorted", place_run_sorted)

    def play(backend, batch):
        sched = Scheduler(build_cluster(objects, cfg), backend, 4, batch=batch)
        return [(b.pod, b.node) for b in sched.schedule_pending(run)[0]], sched

    got, sched = play("cuda", True)
    (fw,) = sched.cluster.frameworks.values()
    assert fw.backend.sorted_runs >= 1 and keys
    n_slots = fw.n_slots
    for arr, shape in copies:
        if any(arr is k for k in keys):
            assert RC.cupy is None or RC.CUDA_SIMULATOR     # the simulator path's host sort
            continue
        assert shape[0] != n_nodes, shape
        assert int(np.prod(shape)) <= 1 + 3 * n_slots + len(run), shape
    monkeypatch.setattr(device_type, "copy_to_host", real_copy)
    assert got == play("numba", True)[0] == play("numpy", False)[0]


def test_a_sorted_run_copies_back_once(monkeypatch):
    """Each sorted run on the cuda backend copies one buffer back to the
    host (the counts, the exact prefix's and the placements together):
    nothing is read back before the sort or for the exact prefix.  The
    simulator path's host sort (``_host_sort``, the stand-in for CuPy's
    device sort) is set apart.  Runs with a normalized slot
    (TaintToleration: maxima and the exact prefix read), two runs; the
    placements are numba's and the one-by-one cycles'."""
    from numba import cuda

    from tensorsched.kernels.fused import run_sort_cuda as RC
    from tensorsched.kernels.fused.backends import CudaBackend
    monkeypatch.setattr(run_sort, "ENABLED", True)
    prefer = [{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]
    objects = [node_dict(f"n{i}", cpu=str(1 + i % 3), memory="4Gi", pods=str(2 + i % 4),
                         taints=prefer if i % 4 == 0 else None) for i in range(11)]
    # two runs of alike pods, one after the other
    run = [pod_dict(f"p{k}", cpu="400m" if k < 15 else "300m", memory="100Mi", created=k)
           for k in range(30)]
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "percentageOfNodesToScore": 100}
    device_type = type(cuda.device_array(1, np.int64))
    real_copy, real_sort = device_type.copy_to_host, RC._host_sort
    real_sorted = CudaBackend.place_run_sorted
    runs, state = [], {"run": None, "in_sort": False}

    def copy_to_host(self, *a, **k):
        if state["run"] is not None and not state["in_sort"]:
            state["run"].append(self.size)
        return real_copy(self, *a, **k)

    def host_sort(*a, **k):
        state["in_sort"] = True
        try:
            return real_sort(*a, **k)
        finally:
            state["in_sort"] = False

    def place_run_sorted(self, *a, **k):
        state["run"] = []
        try:
            got = real_sorted(self, *a, **k)
        finally:
            if got is not None:
                runs.append(state["run"])
            state["run"] = None
        return got
    monkeypatch.setattr(device_type, "copy_to_host", copy_to_host)
    monkeypatch.setattr(RC, "_host_sort", host_sort)
    monkeypatch.setattr(CudaBackend, "place_run_sorted", place_run_sorted)

    def play(backend, batch):
        sched = Scheduler(build_cluster(objects, cfg), backend, 5, batch=batch)
        return [(b.pod, b.node) for b in sched.schedule_pending(run)[0]], sched

    got, sched = play("cuda", True)
    (fw,) = sched.cluster.frameworks.values()
    assert runs and fw.backend.sorted_runs == len(runs)
    assert [len(r) for r in runs] == [1] * len(runs), runs
    monkeypatch.setattr(device_type, "copy_to_host", real_copy)
    assert got == play("numba", True)[0] == play("numpy", False)[0]


def test_a_warm_sorted_run_is_one_copy_each_way():
    """A sorted run on the cuda backend whose query's row cache is built
    copies one buffer up (the slot parameters, the run's rows, the rows the
    cache is behind on, the result head) and one back (the counts and the
    placements), and allocates no device array; after a node event the
    recompiled query's buffer adds one copy up.  Counted from outside the
    backend (``bench.gpu_sort_traffic``: Numba's copy methods wrapped, the
    simulator's host sort set apart), on runs whose rows are not every row
    (a node deleted) with TaintToleration's maximum read.  The placements
    are numba's and numpy's."""
    from tensorsched.bench.gpu_sort_traffic import sorted_run_traffic
    got = sorted_run_traffic(24, 12, 6)
    runs = got["runs"]
    assert len(runs) >= 6
    warm = [r for r in runs[1:] if not r["after_event"]]
    after = [r for r in runs[1:] if r["after_event"]]
    assert warm and after
    for r in warm:
        assert (r["uploads"], r["downloads"], r["allocations"]) == (1, 1, 0), r
        assert r["launches"] <= 4, r
    for r in after:
        assert (r["uploads"], r["downloads"]) == (2, 1), r
    assert got["bindings"] == sorted_run_traffic(24, 12, 6, "numba")["bindings"]
    assert got["bindings"] == sorted_run_traffic(24, 12, 6, "numpy")["bindings"]


def test_run_buffers_are_kept_and_grown_but_not_past_their_cap(monkeypatch):
    """``RunBuffers``: a buffer asked again at a size it holds is the same
    array (no allocation), a larger size grows it (doubling), and one past
    ``KEEP_MAX`` is made for that call alone."""
    from tensorsched.kernels.fused import run_sort_cuda as RC
    monkeypatch.setattr(RC.RunBuffers, "KEEP_MAX", 1000)
    bufs = RC.RunBuffers()
    keys, lens = bufs.keys(4, 5)
    assert keys.shape == (4, 5) and lens.shape == (4,) and bufs.allocations == 2
    again, _ = bufs.keys(3, 6)
    assert again.shape == (3, 6) and bufs.allocations == 2
    bufs.keys(10, 20)                   # 200 keys: grown (the lengths' 64 hold 10)
    assert bufs.allocations == 3
    bufs.keys(8, 20)
    assert bufs.allocations == 3
    huge, _ = bufs.keys(10, 200)        # 2,000 keys: past the cap, not kept
    assert huge.shape == (10, 200) and bufs.allocations == 4
    bufs.keys(10, 20)
    assert bufs.allocations == 4
    host, dev = bufs.run(100)
    assert host.shape[0] >= 100 and dev.shape[0] >= 100 and bufs.run(50)[1] is dev
