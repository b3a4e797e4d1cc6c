"""The Scheduler's stall stop in the batched openb engine
(``openb.batch.trace_batch``, ``kernels/batch/_queue.stalled``): with
``max_unsched`` below the longest backoff, pods that never fit can keep
moving each other between the unschedulable pool and backoffQ forever; a
simulated run stops once no pod was bound for ``stall_horizon()`` = 2 x
(max_unsched + backoff max) seconds of clock, and waits for the next
event.  A targeted case that once never returned and random traces under
small ``max_unsched`` values end as their ``Simulation`` does: the
bindings and departures in order and time, each pod's node and GPUs, the
curves, the clock at the end and the attempts counted."""
import functools

import numpy as np
import pytest
import test_batch_preempt
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.openb import simulate_trace
from test_batch_departures import assert_simulation, traced_clusters
from test_batch_preempt import DEFAULT, preempting_clusters, workload
from test_batch_preempt_grace import crowded_clusters

from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.topology.gpu import build_inventory
from tensorsched.topology.openb import batch as B


def _stalling_case():
    """One T4; p0 takes it for good at 2; p1..p5 never fit and, flushed
    from the pool after 4 s while still backing off (10 s at most), keep
    retrying each other at shifted times (p2, p5 deleted pending at 29, 25)."""
    inv = build_inventory(["n0"], [16000], [65536], [1], ["T4"])
    inf = np.inf
    tw = workload([f"p{j}" for j in range(6)], [1000] * 6, [1024] * 6, [(1, 1000)] * 6,
                  [2.0, 7.0, 9.0, 11.0, 14.0, 17.0], [inf, inf, 29.0, inf, inf, 25.0])
    return inv, tw


def assert_ends_as_simulation(res, inv, tw, max_unsched):
    assert_simulation(res, inv, tw, max_unsched=max_unsched)
    sim, _log, _gpus = simulate_trace(inv, tw, res.policy, res.seed,
                                      pod_max_in_unschedulable_seconds=max_unsched)
    s = sim.summary()
    assert res.end == s["time"], res.policy
    assert int(res.tries.sum()) == s["scheduled"] + s["failed_attempts"], res.policy


@pytest.mark.timeout(240)           # (a cold compile included; warm: well under a second)
@pytest.mark.parametrize("preempt", [None, [DEFAULT]])
def test_pods_that_keep_retrying_each_other_stop_as_the_simulation(preempt):
    """The case ran forever before the stall stop; the Simulation stops at
    57 (28 s after the last change that could bind a pod).  With
    DefaultPreemption and equal priorities nothing can be preempted: the
    same run."""
    inv, tw = _stalling_case()
    (res,) = B.trace_batch([inv], [tw], [(0, 0, "FGD", 0)], workers=1, max_unsched=4.0,
                           preempt=preempt)
    assert_ends_as_simulation(res, inv, tw, 4.0)
    assert res.end == 57.0
    assert res.tries.tolist() == [1, 7, 3, 7, 6, 1]


@pytest.mark.timeout(600)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=traced_clusters(), seed=st.integers(0, 2**20),
       max_unsched=st.sampled_from([0.5, 2.0, 4.0, 9.0]))
def test_small_max_unsched_runs_equal_their_simulations(case, seed, max_unsched):
    inv, tw = case
    jobs = [(0, 0, pol, seed) for pol in ("FGD", "Random")]
    for res in B.trace_batch([inv], [tw], jobs, workers=1, max_unsched=max_unsched):
        assert_ends_as_simulation(res, inv, tw, max_unsched)


@pytest.mark.timeout(600)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.one_of(preempting_clusters(), crowded_clusters()), seed=st.integers(0, 2**20),
       max_unsched=st.sampled_from([0.5, 2.0, 4.0]), grace=st.sampled_from([0.0, 3.0]))
def test_small_max_unsched_preempting_runs_equal_their_simulations(case, seed, max_unsched,
                                                                   grace):
    """DefaultPreemption (victims leaving at once or after a grace, which
    holds off the stall stop while they terminate)."""
    inv, tw = case
    jobs = [(0, 0, pol, seed) for pol in ("FGD", "Random")]
    got = B.trace_batch([inv], [tw], jobs, workers=1, preempt=[DEFAULT] * len(jobs),
                        max_unsched=max_unsched, termination_grace_seconds=grace)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(test_batch_preempt, "Simulation", functools.partial(
            Simulation, pod_max_in_unschedulable_seconds=max_unsched))
        for res in got:
            test_batch_preempt.assert_simulation(res, inv, tw, grace=grace)
