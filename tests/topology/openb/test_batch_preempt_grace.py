"""DefaultPreemption with a termination grace above 0 in the batched openb
engine (``openb.batch.trace_batch`` / ``ts.simulate_batch`` with
``termination_grace_seconds``): the victims stay on their node, holding
its resources, until their grace ends, then leave as an assigned pod's
deletion; a preemptor whose nominated node holds a lower-priority pod
terminating by preemption does not preempt again.  Each run equals its
``Simulation(..., termination_grace_seconds=g)`` bit for bit -- the
bindings, departures and terminations in order and time, each pod's node
and GPU indices, the victims, the GPU allocation and fragmentation curves
-- on random small GPU clusters of unequal priorities with departures,
several policies and graces (none, shorter and longer than the gaps
between arrivals); and on a targeted case where the grace changes the
run: the preemptor waits for its victim instead of preempting another
node's pod."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_batch_preempt import DEFAULT, assert_simulation, preempt_config, \
    preempting_clusters, workload

import tensorsched as ts
from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.gpu import build_inventory
from tensorsched.topology.openb import batch as B


@st.composite
def crowded_clusters(draw):
    """Few GPUs, GPU pods of rising and falling priorities coming faster
    than they leave: most runs preempt, victims often still terminating
    when the next preemptor comes."""
    n = draw(st.integers(1, 3))
    counts = draw(st.lists(st.sampled_from([1, 2]), min_size=n, max_size=n))
    inv = build_inventory([f"node-{i}" for i in range(n)], [16000] * n, [65536] * n, counts,
                          ["T4"] * n)
    p = draw(st.integers(3, 14))
    asks = draw(st.lists(st.sampled_from([(1, 1000), (1, 500), (1, 300), (2, 1000),
                                          (0, 0)]), min_size=p, max_size=p))
    asks[0] = (1, 1000)
    gaps = draw(st.lists(st.sampled_from([0, 1, 2, 5]), min_size=p, max_size=p))
    stays = draw(st.lists(st.sampled_from([None, None, 3, 8, 30]), min_size=p, max_size=p))
    prio = draw(st.lists(st.sampled_from([0, 5, 10, 100]), min_size=p, max_size=p))
    arrival = np.cumsum(np.array(gaps, np.float64))
    names = [f"pod-{(5 * j) % 17:02d}-{j}" for j in range(p)]
    tw = workload(names, [4000] * p, [1024] * p, asks, arrival,
                  [np.inf if s is None else a + s for a, s in zip(arrival, stays)], prio)
    return inv, tw


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.one_of(preempting_clusters(), crowded_clusters()), seed=st.integers(0, 2**20),
       policies=st.lists(st.sampled_from(POLICIES), min_size=2, max_size=2, unique=True),
       args=st.sampled_from([DEFAULT, DEFAULT, (50, 1)]),
       grace=st.sampled_from([0.0, 0.5, 3.0, 45.0]))
def test_graceful_preemption_equals_the_simulation(case, seed, policies, args, grace):
    inv, tw = case
    jobs = [(0, 0, pol, seed) for pol in policies]
    got = B.trace_batch([inv], [tw], jobs, workers=1, preempt=[args] * len(jobs),
                        termination_grace_seconds=grace)
    for res in got:
        assert_simulation(res, inv, tw, *args, grace=grace)


def _waiting_case():
    """n0 (8 cpu, one A10) holds a (priority 3, asking an A10); n1 (16 cpu,
    one T4) holds b (priority 1, asking a T4) and x (priority 5, 13 cpu,
    no GPU), x leaving at 4; c (priority 100, a whole GPU of any model and
    4 cpu) comes at 2."""
    inv = build_inventory(["n0", "n1"], [8000, 16000], [65536, 65536], [1, 1], ["A10", "T4"])
    tw = workload(["a", "b", "x", "c"], [2000, 2000, 13000, 4000], [1024] * 4,
                  [(1, 1000), (1, 1000), (0, 0), (1, 1000)], [0.0, 0.0, 0.0, 2.0],
                  [np.inf, np.inf, 4.0, np.inf], priority=[3, 1, 5, 100],
                  spec=["A10", "T4", "", ""])
    return inv, tw


def test_the_preemptor_waits_for_its_terminating_victim():
    """At 2, c's cheapest candidate is n0 (victim a: priority 3 below n1's
    {b, x}: 5): a is evicted.  Without a grace a leaves at once and c
    binds on n0 at 3 (its backoff).  With 10 s, a holds n0 until 12; x
    leaving at 4 retries c, and although n1 would now need only b
    (priority 1, the better candidate), c may not preempt: its nominated
    node holds a, terminating.  So b is never evicted and c binds on n0
    at 12, when a has gone."""
    inv, tw = _waiting_case()
    (now,) = B.trace_batch([inv], [tw], [(0, 0, "FGD", 3)], workers=1, preempt=[DEFAULT])
    assert_simulation(now, inv, tw)
    assert now.preempted.tolist() == [True, False, False, False]
    assert (now.node[3], now.bind[3]) == (0, 3.0)
    (late,) = B.trace_batch([inv], [tw], [(0, 0, "FGD", 3)], workers=1, preempt=[DEFAULT],
                            termination_grace_seconds=10.0)
    assert_simulation(late, inv, tw, grace=10.0)
    assert late.preempted.tolist() == [True, False, False, False]
    assert (late.node[3], late.bind[3]) == (0, 12.0)
    assert late.tries[3] >= 2
    # x leaves at 4; a holds n0's GPU until 12, then c binds there
    assert list(zip(late.log_t.tolist(), late.log_pod.tolist()))[3:] == [
        (4.0, -3), (12.0, -1), (12.0, 3)]


def test_simulate_batch_takes_the_grace():
    """``ts.simulate_batch(..., termination_grace_seconds=g)`` runs the
    batched engine with it (each run its Simulation's); a negative grace
    is refused by name."""
    inv, tw = _waiting_case()
    cfg = preempt_config("FGD", 2)
    (res,) = ts.simulate_batch(inv, tw, [cfg], seeds=[3], workers=1,
                               termination_grace_seconds=10.0)
    assert_simulation(res, inv, tw, grace=10.0)
    assert res.bind[3] == 12.0
    with pytest.raises(ts.TensorschedError, match="termination_grace_seconds"):
        ts.simulate_batch(inv, tw, [cfg], workers=1, termination_grace_seconds=-1.0)


@st.composite
def repicking_clusters(draw):
    """One or two single-GPU nodes filled by low-priority pods, then a
    burst of pods of rising priorities arriving within a second: each
    finds the GPUs held by victims still terminating (a long grace) and
    may evict one again."""
    n = draw(st.integers(1, 2))
    inv = build_inventory([f"node-{i}" for i in range(n)], [16000] * n, [65536] * n, [1] * n,
                          ["T4"] * n)
    k = draw(st.integers(2, 5))
    burst = draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]), min_size=k, max_size=k))
    prio = [0] * n + sorted(draw(st.lists(st.sampled_from([10, 20, 50, 100, 200]), min_size=k,
                                          max_size=k)))
    arrival = np.concatenate([np.zeros(n), 1.0 + np.cumsum(burst)])
    stays = draw(st.lists(st.sampled_from([np.inf, 2.0, 6.0]), min_size=n + k,
                          max_size=n + k))
    p = n + k
    tw = workload([f"pod-{j}" for j in range(p)], [4000] * p, [1024] * p, [(1, 1000)] * p,
                  arrival, [a + s for a, s in zip(arrival, stays)], prio)
    return inv, tw


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=repicking_clusters(), seed=st.integers(0, 2**20),
       grace=st.sampled_from([3.0, 30.0]))
def test_each_eviction_is_counted(case, seed, grace):
    """A terminating victim chosen again: ``evictions`` counts every
    eviction of each pod, the Simulation's Preempted events of it
    (``assert_simulation``), ``preempted`` still marks it once."""
    inv, tw = case
    got = B.trace_batch([inv], [tw], [(0, 0, "FGD", seed)], workers=1, preempt=[DEFAULT],
                        termination_grace_seconds=grace)
    for res in got:
        assert_simulation(res, inv, tw, grace=grace)
        assert res.preempted.tolist() == (res.evictions > 0).tolist()


def test_a_terminating_victim_evicted_twice():
    """One GPU: low (priority 0) holds it; h1 (100) at 1 evicts it and
    waits, nominated; h2 (200) at 1.5 does not fit (low still holds the
    GPU for its 10 s) and, nominated nowhere, evicts low again: 2
    evictions of one pod, both the Simulation's."""
    inv = build_inventory(["n0"], [16000], [65536], [1], ["T4"])
    tw = workload(["low", "h1", "h2"], [2000] * 3, [1024] * 3, [(1, 1000)] * 3,
                  [0.0, 1.0, 1.5], [np.inf] * 3, priority=[0, 100, 200])
    (res,) = B.trace_batch([inv], [tw], [(0, 0, "FGD", 1)], workers=1, preempt=[DEFAULT],
                           termination_grace_seconds=10.0)
    victims = assert_simulation(res, inv, tw, grace=10.0)
    assert victims == [0, 0]
    assert res.evictions.tolist() == [2, 0, 0]
    assert res.preempted.tolist() == [True, False, False]


def overcommit_case():
    """n0 (8 cpu) and n1 (4 cpu), two T4s each: a (priority 0, 6 cpu, a
    GPU) binds on n0, b (5, 3 cpu, a GPU) on n1; h (100, 3 cpu, half a
    GPU) at 10 finds no room and preempts a on n0 (its victim of the
    lowest priority), a terminating there until 20; x (0, no cpu, 0.3 of
    a GPU) at 11 counts h, nominated to n0, on n0 in its cycle: n0's free
    cpu is 2 - 3 = -1 core."""
    inv = build_inventory(["n0", "n1"], [8000, 4000], [65536, 65536], [2, 2], ["T4", "T4"])
    tw = workload(["a", "b", "h", "x"], [6000, 3000, 3000, 0], [1024] * 4,
                  [(1, 1000), (1, 1000), (1, 500), (1, 300)], [0.0, 1.0, 10.0, 11.0],
                  priority=[0, 5, 100, 0])
    return inv, tw


def test_a_node_a_nominated_pod_overcommits_scores_as_the_simulation():
    """x's cycle sees n0 with free cpu below 0 (h counted there while a
    still holds it): GpuShareScore scores such a node 0 under FGD,
    GpuPacking and GpuClustering (its kernels test the node's fit for a
    pod of no request first), so x binds on n1 there, as in the
    Simulation; on n0 (every row scored as if the cpu were not short)
    before.  Every policy, two seeds: each run its Simulation's."""
    inv, tw = overcommit_case()
    jobs = [(0, 0, pol, seed) for pol in POLICIES for seed in (0, 3)]
    got = B.trace_batch([inv], [tw], jobs, workers=1, preempt=[DEFAULT] * len(jobs),
                        termination_grace_seconds=10.0)
    for res in got:
        assert_simulation(res, inv, tw, grace=10.0)
        assert res.preempted.tolist() == [True, False, False, False], res.policy
        if res.policy in ("FGD", "GpuPacking", "GpuClustering"):
            assert res.node.tolist() == [0, 1, 0, 1], res.policy
