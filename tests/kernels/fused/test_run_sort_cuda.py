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

from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels import layout as L
from tensorsched.kernels.fused import filters, run_sort, scores
from tensorsched.kernels.fused import stage_args as SA
from tensorsched.kernels.fused.backends import kernel_args

# the simulator runs the tie rank's wrapping hash as NumPy scalars, which warn
pytestmark = [pytest.mark.cudasim, needs_cuda,
              pytest.mark.filterwarnings("ignore:overflow encountered in scalar:RuntimeWarning")]


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(stage_case(), st.integers(0, 2**64 - 1), st.integers(1, 12))
def test_device_keys_and_order_equal_the_numba_twin(case, seed, count):
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
    keys_d, lens = RC.run_keys(rows, width, seed, packs, qbuf, cuda.to_device(reasons),
                               cuda.to_device(raw),
                               RC.slot_params(active, DEFAULT_NORM, weights, hi),
                               cols.requested.shape[1])
    assert np.array_equal(lens, want_lens)
    assert np.array_equal(keys_d.copy_to_host(), want_keys)
    assert np.array_equal(RC.order_positions(keys_d, lens, count),
                          run_sort.order_by_sort(want_keys, want_lens, count))


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
