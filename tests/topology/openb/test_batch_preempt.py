"""DefaultPreemption in the batched openb engine's queue
(``openb.batch.trace_batch`` with ``preempt``, ``ts.simulate_batch`` with a
config that has it): each run equals its ``Simulation`` under the openb
profile plus DefaultPreemption at postFilter, bit for bit -- the bindings,
departures and evictions in order and time, each pod's node and GPU
indices, the victims, the GPU allocation and fragmentation curves -- on
random small GPU clusters with whole-GPU and fractional pods of unequal
priorities, departures and several policies; and on targeted cases: a
whole-GPU pod evicting two shares of one GPU, a reprieved victim, the
nominated pod binding after its victims left, a lower-priority pod kept
off the nominated room."""
import copy

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import tensorsched as ts
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.gpu import ANNO_GPU_COUNT, ANNO_GPU_MILLI, ANNO_GPU_MODEL
from tensorsched.topology.gpu import build_inventory
from tensorsched.topology.gpu_table import GpuTable
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import batch_sim as BS
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb import trace as T

MODELS = ("A10", "T4")
DEFAULT = (10, 100)         # DefaultPreemption's default arguments


def preempt_config(policy: str, n: int, pct: int = 10, least: int = 100) -> dict:
    """The openb profile (``openb_config``, the tie rank unless Random)
    plus DefaultPreemption at postFilter."""
    cfg = T.openb_config(policy, None, None if policy == "Random" else n + 1)
    prof = cfg["profiles"][0]
    prof["plugins"]["postFilter"]["enabled"] = [{"name": "DefaultPreemption"}]
    if (pct, least) != DEFAULT:
        prof["pluginConfig"].append({"name": "DefaultPreemption", "args": {
            "minCandidateNodesPercentage": pct, "minCandidateNodesAbsolute": least}})
    return cfg


def simulate(inv, tw, policy: str, seed: int, pct: int = 10, least: int = 100,
             end: float = 0.0, grace: float = 0.0):
    """The Simulation a preempting run reproduces: (simulation, log, gpus,
    victims) -- ``log`` (time, pod bound j / left or evicted -1 - j, node),
    ``gpus`` each bound pod's GPU indices, ``victims`` the evicted pods
    (once per eviction).  ``grace``: the Scheduler's termination grace (a
    victim in ``log`` when it leaves the cluster, its grace over).
    Run to each sample time in turn up to ``end`` (which changes nothing
    that happens): a drive with nothing left to come in the agenda may run
    past a sample time before it samples."""
    pods = tw.pods
    n = inv.n_nodes
    typical = T.typical_of(pods)
    cfg = copy.deepcopy(preempt_config(policy, n, pct, least))
    cfg["profiles"][0]["pluginConfig"][0]["args"]["typicalPods"] = typical
    tie = None if policy == "Random" else B.tie_of(n, seed)
    annos = []
    for j in range(len(pods)):
        a = None
        if pods.num[j] and pods.milli[j]:
            a = [(ANNO_GPU_MILLI, str(int(pods.milli[j]))),
                 (ANNO_GPU_COUNT, str(int(pods.num[j])))]
            if pods.spec[j]:
                a.append((ANNO_GPU_MODEL, pods.spec[j]))
        annos.append(a)
    table = pa.table({
        "name": pa.array(pods.names), "arrival": pa.array(tw.arrival),
        "departure": pa.array([float(d) if np.isfinite(d) else None for d in tw.departure],
                              pa.float64()),
        "duration": pa.array([float(d) if np.isfinite(d) else None for d in tw.duration],
                             pa.float64()),
        "cpu": pa.array(pods.cpu), "memory": pa.array(pods.mem * 1048576),
        "annotations": pa.array(annos, pa.map_(pa.string(), pa.string())),
        "priority": pa.array(tw.priority, pa.int32())})
    sim = Simulation(T.openb_node_objects(inv, tie), cfg, "numba", seed, interval=5.0,
                     metrics=T._sampled_metrics(typical), registry=T.experiment_registry(),
                     termination_grace_seconds=grace)
    index = {name: i for i, name in enumerate(pods.names)}
    node_index = {name: i for i, name in enumerate(inv.names)}
    log, gpus, victims = [], {}, []

    def pod_of(e):
        return index[e["pod"].split("/", 1)[1]]

    def bound(e):
        a = GpuTable.attached(sim.cluster.state).alloc.get(e["pod"])
        gpus[pod_of(e)] = tuple(a.indices) if a is not None and a.indices else ()
        log.append((e["time"], pod_of(e), node_index[e["node"]]))

    def left(e):
        log.append((e["time"], -1 - pod_of(e), -1))

    def evicted(e):
        victims.append(pod_of(e))
        if grace <= 0:
            log.append((e["time"], -1 - pod_of(e), -1))

    cycle = sim.scheduler.cycle
    due = cycle.terminate_due

    def terminate_due(now):
        # the victims whose grace ended leave the state here (no event)
        state = cycle.state
        remove = state.remove_pod

        def removed(key, *a, **kw):
            log.append((now, -1 - index[key.split("/", 1)[1]], -1))
            return remove(key, *a, **kw)

        state.remove_pod = removed
        try:
            due(now)
        finally:
            del state.remove_pod

    cycle.terminate_due = terminate_due
    sim.on("Bound", bound)
    sim.on("Departed", left)
    sim.on("Preempted", evicted)
    sim.submit(table)
    t = 5.0
    while t <= end + 5.0:
        sim.run(until=t)
        t += 5.0
    sim.run()
    return sim, log, gpus, victims


def assert_simulation(res, inv, tw, pct=10, least=100, grace=0.0):
    """``res`` (a preempting run) is its Simulation's (module doc), under
    the termination grace ``grace``."""
    sim, log, gpus, victims = simulate(inv, tw, res.policy, res.seed, pct, least, res.end, grace)
    what = res.policy
    assert [(t, p) for t, p, _n in log] == list(zip(res.log_t.tolist(),
                                                    res.log_pod.tolist())), what
    node = np.full(len(tw.arrival), -1)
    for _t, p, nd in log:
        if p >= 0:
            node[p] = nd
    assert node.tolist() == res.node.tolist(), what
    assert [gpus.get(j, ()) for j in range(len(tw.arrival))] == [
        g if res.node[j] >= 0 else () for j, g in enumerate(res.gpus)], what
    assert sorted(set(victims)) == np.flatnonzero(res.preempted).tolist(), what
    # each pod's evictions: the Simulation's Preempted events of it
    assert np.bincount(np.asarray(victims, np.int64), minlength=len(tw.arrival)).tolist() \
        == res.evictions.tolist(), what
    ts_ = sim.timeseries()
    used, frag = res.at(ts_.column("time").to_numpy())
    np.testing.assert_array_equal(frag, ts_.column("gpu_frag_milli").to_numpy(), err_msg=what)
    np.testing.assert_array_equal(used, ts_.column("gpu_used_milli").to_numpy(), err_msg=what)
    return victims


def workload(names, cpu, mem, gpus, arrival, departure=None, priority=None, spec=None,
             duration=None):
    """A ``TraceWorkload`` of pods (``gpus``: (count, milli) each)."""
    p = len(names)
    pods = R.TracePods(list(names), np.asarray(cpu, np.int64), np.asarray(mem, np.int64),
                       np.array([g[0] for g in gpus], np.int64),
                       np.array([g[1] for g in gpus], np.int64),
                       list(spec) if spec is not None else [""] * p)
    dep = np.full(p, np.inf) if departure is None else np.asarray(departure, np.float64)
    prio = np.zeros(p, np.int64) if priority is None else np.asarray(priority, np.int64)
    keys = sorted(set(zip((-prio).tolist(), [0] * p)))
    rank = np.array([keys.index((-int(x), 0)) for x in prio], np.int64) if len(keys) > 1 \
        else None
    return B.TraceWorkload(pods, np.asarray(arrival, np.float64), dep, duration=duration,
                           rank=rank, priority=prio)


@st.composite
def preempting_clusters(draw):
    n = draw(st.integers(1, 5))
    counts = draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=n, max_size=n))
    models = [draw(st.sampled_from(MODELS)) for _ in counts]
    cpu = draw(st.lists(st.sampled_from([8000, 32000]), min_size=n, max_size=n))
    mem = draw(st.lists(st.sampled_from([16384, 65536]), min_size=n, max_size=n))
    inv = build_inventory([f"node-{i}" for i in range(n)], cpu, mem, counts, models)
    p = draw(st.integers(2, 22))
    shapes = draw(st.lists(st.tuples(
        st.sampled_from([0, 1000, 4000]), st.sampled_from([0, 1024, 8192]),
        st.sampled_from([(0, 0), (1, 250), (1, 500), (1, 700), (1, 1000), (2, 1000),
                         (4, 1000)]),
        st.sampled_from(["", "", "A10"])), min_size=p, max_size=p))
    if not any(s[2][0] for s in shapes):      # the typical pods need GPU demand
        shapes[0] = (shapes[0][0], shapes[0][1], (1, 500), shapes[0][3])
    gaps = draw(st.lists(st.sampled_from([0, 1, 1, 3, 20]), min_size=p, max_size=p))
    stays = draw(st.lists(st.sampled_from([None, None, 2, 7, 40]), min_size=p, max_size=p))
    timed = draw(st.lists(st.booleans(), min_size=p, max_size=p))
    arrival = np.cumsum(np.array(gaps, np.float64))
    departure = [np.inf if s is None or d else a + s for a, s, d in zip(arrival, stays, timed)]
    duration = np.array([s if s is not None and d else np.inf for s, d in zip(stays, timed)],
                        np.float64)
    prio = draw(st.lists(st.sampled_from([0, 0, 5, 10, 100]), min_size=p, max_size=p))
    # names out of arrival order: the victims' key order is not the trace's
    names = [f"pod-{(7 * j) % 31:02d}-{j}" for j in range(p)]
    tw = workload(names, [s[0] for s in shapes], [s[1] for s in shapes],
                  [s[2] for s in shapes], arrival, departure, prio,
                  [s[3] if s[2][0] else "" for s in shapes], duration)
    return inv, tw


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=preempting_clusters(), seed=st.integers(0, 2**20),
       policies=st.lists(st.sampled_from(POLICIES), min_size=2, max_size=3, unique=True),
       args=st.sampled_from([DEFAULT, DEFAULT, (50, 1), (0, 2)]))
def test_preempting_traces_equal_their_simulations(case, seed, policies, args):
    inv, tw = case
    jobs = [(0, 0, pol, seed) for pol in policies]
    got = B.trace_batch([inv], [tw], jobs, workers=1, preempt=[args] * len(jobs))
    for res in got:
        assert_simulation(res, inv, tw, *args)


def _run(inv, tw, policy="FGD", seed=7, args=DEFAULT):
    (res,) = B.trace_batch([inv], [tw], [(0, 0, policy, seed)], workers=1, preempt=[args])
    assert_simulation(res, inv, tw, *args)
    return res


def test_random_traces_do_preempt():
    """The random inputs of the test above preempt: of 20 drawn (the same
    strategy, derandomized), at least a third evict pods under FGD."""
    evicted = []

    @settings(max_examples=20, deadline=None, derandomize=True, database=None,
              phases=[Phase.generate])
    @given(case=preempting_clusters())
    def draw(case):
        inv, tw = case
        (res,) = B.trace_batch([inv], [tw], [(0, 0, "FGD", 1)], workers=1, preempt=[DEFAULT])
        evicted.append(int(res.preempted.sum()))

    draw()
    assert len(evicted) == 20 and sum(k > 0 for k in evicted) >= 7, evicted


def test_a_whole_gpu_pod_evicts_two_shares_of_one_gpu_and_binds_there():
    """One node, one GPU shared by a and b (priority 0); c (priority 100)
    asks the whole GPU: both shares are evicted at once (in key order: a
    before b), c is nominated and binds on GPU 0 when its backoff ends; a
    pod of priority 50 arriving in between does not take the room the
    nomination holds."""
    inv = build_inventory(["n0"], [32000], [65536], [1], ["T4"])
    tw = workload(["b", "a", "c", "d"], [1000] * 4, [1024] * 4,
                  [(1, 500), (1, 500), (1, 1000), (1, 500)], [0.0, 1.0, 2.0, 2.5],
                  priority=[0, 0, 100, 50])
    res = _run(inv, tw)
    assert res.preempted.tolist() == [True, True, False, False]
    assert list(zip(res.log_t.tolist(), res.log_pod.tolist())) == [
        (0.0, 0), (1.0, 1), (2.0, -2), (2.0, -1), (3.0, 2)]
    assert res.gpus[2] == (0,) and res.node.tolist() == [0, 0, 0, -1]
    assert res.tries[3] >= 1


def test_the_reprieve_keeps_a_victim_the_pod_does_not_need():
    """Two whole GPUs held by a (priority 0) and b (priority 1); c
    (priority 10) needs one GPU: both are taken off, b (the more
    important) is put back first and the pod still fits, so only a is
    evicted and c takes a's GPU."""
    inv = build_inventory(["n0"], [32000], [65536], [2], ["T4"])
    tw = workload(["a", "b", "c"], [1000] * 3, [1024] * 3, [(1, 1000)] * 3, [0.0, 1.0, 2.0],
                  priority=[0, 1, 10])
    res = _run(inv, tw)
    assert res.preempted.tolist() == [True, False, False]
    assert res.gpus == [(0,), (1,), (0,)]


def test_the_pick_prefers_the_node_with_lower_priority_victims():
    """Two full nodes: the victim on node 1 has the lower priority, so c
    is nominated there (pickOneNodeForPreemption), whichever node the
    seeded offset visits first; a share-sized preemptor frees a share on
    its GPU and takes it."""
    inv = build_inventory(["n0", "n1"], [32000, 32000], [65536, 65536], [1, 1], ["T4", "T4"])
    tw = workload(["a", "b", "c"], [1000] * 3, [1024] * 3, [(1, 1000), (1, 1000), (1, 600)],
                  [0.0, 1.0, 2.0], priority=[5, 1, 10])
    for seed in (1, 2, 3, 4):
        res = _run(inv, tw, "DotProd", seed)
        where = res.node[1]
        assert res.preempted.tolist() == [False, True, False]
        assert res.node[2] == where and res.gpus[2] == (0,)


def test_simulate_batch_takes_default_preemption_in_the_config():
    """``ts.simulate_batch`` with the openb profile plus DefaultPreemption
    (its defaults and other arguments): each run is its Simulation's; a
    profile with another postFilter plugin is refused by name."""
    inv = build_inventory(["n0", "n1", "n2"], [16000] * 3, [65536] * 3, [2, 4, 1],
                          ["T4", "T4", "A10"])
    names = [f"p{j}" for j in range(12)]
    gpus = [(1, 500), (1, 1000), (2, 1000), (1, 250), (4, 1000), (1, 700)] * 2
    tw = workload(names, [2000] * 12, [2048] * 12, gpus, np.arange(12.0),
                  [np.inf, 30.0] * 6, priority=[0, 0, 3, 0, 9, 5, 0, 1, 9, 0, 20, 2])
    configs = [preempt_config("FGD", 3), preempt_config("BestFit", 3, 50, 1), "Random"]
    runs = ts.simulate_batch(inv, tw, configs, seeds=[2], workers=1)
    assert [r.preempted is None for r in runs] == [False, False, True]
    assert sum(int(r.preempted.sum()) for r in runs[:2]) > 0
    for res, args in zip(runs[:2], (DEFAULT, (50, 1))):
        assert_simulation(res, inv, tw, *args)
    # an engine without preemption (the node-event form's) refuses it by name
    with pytest.raises(BS.BatchProfileError, match="plugin DefaultPreemption at postFilter"):
        BS.batch_config(configs[0], "configs[0]")
    assert BS.batch_config(configs[1], "c", preemption=True).preempt == (50, 1)
    bad = preempt_config("FGD", 3)
    bad["profiles"][0]["plugins"]["postFilter"]["enabled"].append({"name": "Coscheduling"})
    with pytest.raises(BS.BatchProfileError, match="plugin Coscheduling at postFilter"):
        ts.simulate_batch(inv, tw, [bad], workers=1)


def test_trace_batch_refuses_bad_preemption_arguments():
    inv = build_inventory(["n0"], [8000], [8192], [1], ["T4"])
    tw = workload(["a"], [0], [0], [(1, 500)], [0.0])
    with pytest.raises(ValueError, match="preempt: one"):
        B.trace_batch([inv], [tw], [(0, 0, "FGD", 1)], preempt=[DEFAULT, DEFAULT])
    with pytest.raises(ValueError, match=r"preempt: \(101, 1\)"):
        B.trace_batch([inv], [tw], [(0, 0, "FGD", 1)], preempt=[(101, 1)])
