"""The batched engine's queue (``kernels.batch._queue``, run here as plain
Python): backoff as backoffQ computes it, backoffQ popped in (expiry,
push) order, and a short cluster story (a pod that fits nowhere waits,
a departure moves it back while it backs off, it retries at its expiry)
told in the Simulation's order, departures after a duration pushed at
the binding; the vector environment refuses
departures (it steps arrivals only)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.framework.scheduler.backoff_queue import BackoffQueue
from tensorsched.kernels.batch import _queue as Q


class _Pi:
    def __init__(self, attempts):
        self.attempts = attempts


@given(attempts=st.integers(1, 12), b0=st.sampled_from([0.5, 1.0, 3.0]),
       bmax=st.sampled_from([1.0, 10.0, 60.0]))
def test_backoff_equals_the_backoff_queue(attempts, b0, bmax):
    want = BackoffQueue(None, {}, b0, bmax).duration(_Pi(attempts))
    assert Q.backoff_seconds(attempts, b0, bmax) == want


@settings(max_examples=50)
@given(keys=st.lists(st.integers(0, 5), min_size=1, max_size=40))
def test_heap_pops_in_expiry_then_push_order(keys):
    n = len(keys)
    qi = np.zeros(Q.QI_N, np.int64)
    hk, hs, hp = np.zeros(n), np.zeros(n, np.int64), np.zeros(n, np.int64)
    for j, k in enumerate(keys):
        qi[Q.QI_SEQ] += 1
        Q.heap_push(hk, hs, hp, qi, float(k), j)
    got = [Q.heap_pop(hk, hs, hp, qi) for _ in range(n)]
    assert got == sorted(range(n), key=lambda j: (keys[j], j))


def _state(p):
    return (np.zeros(Q.QI_N, np.int64), np.zeros(Q.QF_N), np.zeros(p, np.int64),
            np.zeros(p, np.int64), np.zeros(p), np.zeros(2 * p, np.int64),
            np.zeros(2 * p, np.int64), np.zeros(2 * p), np.zeros(2 * p, np.int64),
            np.zeros(2 * p, np.int64), np.zeros(p), np.zeros(p, np.int64),
            np.zeros(p, np.int64))


def _story(arr, dep, dur, fails, rank=None):
    """Run the queue; ``fails(j, now)``: the attempt of pod j at ``now``
    fails; ``rank``: activeQ's order (None: first-in first-out)."""
    qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp = st_ = _state(arr.shape[0])
    rank = np.zeros(0, np.int64) if rank is None else np.asarray(rank, np.int64)
    ak = np.zeros(aq.shape[0], np.int64)
    Q.q_init(qi, qf, pst, patt, pts)
    story = []
    while True:
        kind = Q.q_next(arr, dep, 1.0, 10.0, 300.0, *st_, rank, ak)
        if kind == Q.DONE:
            break
        j = int(qi[Q.QI_POD])
        story.append((kind, j, float(qf[Q.QF_NOW]), int(qi[Q.QI_ATTEMPT])))
        if kind == Q.ATTEMPT:
            if fails(j, float(qf[Q.QF_NOW])):
                Q.q_failed(j, qi, qf, pst, pts, up)
            else:
                Q.q_bound(j, dur, qi, qf, pst, dk, ds, dp)
    return story, patt


def test_a_departure_moves_a_waiting_pod_back_through_its_backoff():
    # pod 0 binds at 0 and leaves at 3.5; pod 1 arrives at 3, fits nowhere
    # (attempt 1, backoff 1 s to 4.0): the departure at 3.5 sends it to
    # backoffQ, and it is retried at 4.0 before pod 2 arrives at 4.0
    arr = np.array([0.0, 3.0, 4.0])
    dep = np.array([3.5, math.inf, math.inf])
    story, patt = _story(arr, dep, dep[:0], lambda j, now: j == 1 and now < 4.0)
    assert [(k, j, t) for k, j, t, _a in story] == [
        (Q.ATTEMPT, 0, 0.0), (Q.ATTEMPT, 1, 3.0), (Q.DEPART, 0, 3.5), (Q.ATTEMPT, 1, 4.0),
        (Q.ATTEMPT, 2, 4.0)]
    assert [a for k, _j, _t, a in story if k == Q.ATTEMPT] == [0, 1, 2, 3]
    assert patt.tolist() == [1, 2, 1]


def test_a_duration_counts_from_the_binding_and_ties_go_in_push_order():
    # all three leave at 3.0, in the order their departures were pushed:
    # pod 0's at its binding (0.0, duration 3), pod 2's at its arrival
    # (1.0, absolute), pod 1's at its binding after the arrivals at 1.0
    # (duration 2); pod 3 arrives at 3.0 after them.  Pod 4 fails at 3.0
    # and waits (no departure is left to move it, no pop to flush it)
    inf = math.inf
    arr = np.array([0.0, 1.0, 1.0, 3.0, 3.0])
    dep = np.array([inf, inf, 3.0, inf, inf])
    dur = np.array([3.0, 2.0, inf, inf, inf])
    story, patt = _story(arr, dep, dur, lambda j, now: j == 4)
    assert [(k, j, t) for k, j, t, _a in story] == [
        (Q.ATTEMPT, 0, 0.0), (Q.ATTEMPT, 1, 1.0), (Q.ATTEMPT, 2, 1.0), (Q.DEPART, 0, 3.0),
        (Q.DEPART, 2, 3.0), (Q.DEPART, 1, 3.0), (Q.ATTEMPT, 3, 3.0), (Q.ATTEMPT, 4, 3.0)]
    assert patt.tolist() == [1, 1, 1, 1, 1]


def test_a_zero_duration_leaves_before_the_next_event():
    # pod 0 binds at 0 and leaves at once (duration 0), after the pods
    # already in activeQ at 0 are attempted (the scheduler runs them first)
    inf = math.inf
    arr = np.array([0.0, 0.0, 5.0])
    dep = np.full(3, inf)
    dur = np.array([0.0, inf, inf])
    story, _ = _story(arr, dep, dur, lambda j, now: False)
    assert [(k, j, t) for k, j, t, _a in story] == [
        (Q.ATTEMPT, 0, 0.0), (Q.ATTEMPT, 1, 0.0), (Q.DEPART, 0, 0.0), (Q.ATTEMPT, 2, 5.0)]


def test_active_q_pops_by_rank_then_push_order():
    # pods 0..3 arrive at 0 with ranks 2, 0, 1, 0: popped 1, 3, 2, 0; pod 1
    # fails and waits; pod 3 leaves at 5 (duration 5) and moves it back
    # (its backoff over) into activeQ beside pod 4 arriving at 5 with rank
    # 1: pod 1 (rank 0) goes first though pushed before it
    inf = math.inf
    arr = np.array([0.0, 0.0, 0.0, 0.0, 5.0])
    dep = np.full(5, inf)
    dur = np.array([inf, inf, inf, 5.0, inf])
    story, patt = _story(arr, dep, dur, lambda j, now: j == 1 and now < 5.0,
                         rank=[2, 0, 1, 0, 1])
    assert [(k, j, t) for k, j, t, _a in story] == [
        (Q.ATTEMPT, 1, 0.0), (Q.ATTEMPT, 3, 0.0), (Q.ATTEMPT, 2, 0.0), (Q.ATTEMPT, 0, 0.0),
        (Q.DEPART, 3, 5.0), (Q.ATTEMPT, 1, 5.0), (Q.ATTEMPT, 4, 5.0)]
    assert patt.tolist() == [1, 2, 1, 1, 1]


@settings(max_examples=50)
@given(keys=st.lists(st.integers(0, 3), min_size=1, max_size=40))
def test_active_q_heap_pops_in_key_order(keys):
    n = len(keys)
    qi = np.zeros(Q.QI_N, np.int64)
    ak, aq = np.zeros(n, np.int64), np.zeros(n, np.int64)
    for j, k in enumerate(keys):
        Q.key_push(ak, aq, qi, (k << 32) | j, j)
    got = [Q.key_pop(ak, aq, qi) for _ in range(n)]
    assert got == sorted(range(n), key=lambda j: (keys[j], j))


def test_the_vector_environment_runs_departures():
    # one pod on a one-GPU node, leaving at 5 s: placed by the step, then
    # gone through the queue before the run ends; the GPU is free again
    from tensorsched.kernels.batch import arrays as BA
    from tensorsched.kernels.batch import env_step
    sets = BA.node_sets([{"gpu_count": [1], "model": [0], "cpu_cap": [1000],
                          "mem_cap": [1000], "pods_cap": [10]}])
    one = np.ones((1, 1), np.int64)
    a = BA.BatchArrays(**sets, n_classes=np.array([1]), c_cpu=one, c_mem=one, c_cpu_nz=one,
                       c_num=one, c_milli=one * 500, c_mask=0 * one, n_typical=np.array([1]),
                       tp_cpu=one, tp_num=one, tp_milli=one * 500, tp_mask=0 * one,
                       tp_freq=np.ones((1, 1)), run_set=np.array([0]),
                       run_workload=np.array([0]), policy=np.array([5]), sel=np.array([0]),
                       seed_mix=np.array([1], np.uint64), gpu_weight=np.array([1]),
                       static_total=np.zeros((1, 1), np.int64), ev_off=np.array([0]),
                       ev_len=np.array([1]), cls=np.array([0]), u=np.zeros(1),
                       depart=np.array([5.0]))
    a.check()
    env = env_step.EnvBatch(a, np.ones(3))
    env.step(np.ones(1, bool), np.zeros(1, np.int64))
    assert env.ist[0, :3].tolist() == [0, 0, 0] and env.feas[0, 0] == 1
    env.step(np.zeros(1, bool), np.zeros(1, np.int64))
    assert env.out_node[0] == 0 and env.ist[0, 2] == 1       # bound, then nothing left
    assert env.fst[0, 1] == 0.0 and env.gpu_left[0, 0, 0] == 1000
