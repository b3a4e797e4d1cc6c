"""``ts.simulate_batch`` on openb nodes with a scenario of node and Pod
steps and configs with DefaultPreemption at postFilter (the node-event
engine's cluster function preempting, ``kernels/batch/_openb_events``):
every run's changes in order and time (bindings, departures, evictions,
removals, deletions, preemptions), each pod's node and GPU indices, the
victims, the GPU allocation and fragmentation curves are its own
Simulation's given the scenario -- on random small clusters, traces of
unequal priorities and random node and Pod steps, and on targeted cases:
a nominated node deleted or cordoned before its pod binds, a drain after
a preemption."""
import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda
from test_sweep_openb_events import _node, _pod, _random_scenario

import tensorsched as ts
from tensorsched.experiments import simulate_run as run
from tensorsched.framework.simulation.scenario import load_scenario
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.kernels.batch.openb_events import WHY_PREEMPTED
from tensorsched.topology.gpu import read_openb_nodes
from tensorsched.topology.gpu_table import GpuTable
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import trace as T

POLICIES = ("FGD", "Random", "BestFit", "DotProd", "GpuPacking", "GpuClustering")
DEFAULT = (10, 100)
ASKS = ((1, 1000), (1, 500), (1, 300), (2, 1000), (0, 0), (4, 1000))


def preempt_config(policy: str, n: int, pct: int = 10, least: int = 100,
                   typical=None, preempt: bool = True) -> dict:
    """The experiment's openb profile (OpenbTieRank unless Random) plus
    DefaultPreemption at postFilter (``typical``: GpuShareScore's typical
    pods, the Simulation's; the batched call takes the trace's own);
    ``preempt`` False: the profile alone."""
    cfg = T.openb_config(policy, typical, None if policy == "Random" else n + 1)
    if not preempt:
        return cfg
    prof = cfg["profiles"][0]
    prof["plugins"]["postFilter"]["enabled"] = [{"name": "DefaultPreemption"}]
    if (pct, least) != DEFAULT:
        prof["pluginConfig"].append({"name": "DefaultPreemption", "args": {
            "minCandidateNodesPercentage": pct, "minCandidateNodesAbsolute": least}})
    return cfg


def simulate(nodes: str, trace, policy: str, seed: int, scenario, args=DEFAULT,
             end: float = 0.0, preempt: bool = True, grace: float = 0.0,
             max_unsched: float = B.DEFAULT_MAX_UNSCHED, summary: dict | None = None):
    """The Simulation: (its change log [(time, pod name, what)], each bound
    pod's (node, GPU indices, binding time), the victims, the sampled
    (time, GPU milli used, fragmented)).  ``grace``: the Scheduler's
    termination grace (a victim "preempted" in the log when it leaves the
    cluster, its grace over; one that leaves otherwise before, "left");
    ``max_unsched`` its pod_max_in_unschedulable_seconds; ``summary`` a
    dict updated with its ``summary()`` at the end."""
    tw = B.trace_workload(trace)
    typical = T.typical_of(tw.pods)
    inv = read_openb_nodes(nodes)
    n = inv.n_nodes
    tie = None if policy == "Random" else B.tie_of(n, seed)
    sim = Simulation(T.openb_node_objects(inv, tie),
                     preempt_config(policy, n, *args, typical=typical, preempt=preempt),
                     "numba", seed,
                     interval=5.0, metrics=T._sampled_metrics(typical),
                     registry=T.experiment_registry(), termination_grace_seconds=grace,
                     pod_max_in_unschedulable_seconds=max_unsched)
    sim.scenario(copy.deepcopy(scenario))
    log, got, victims = [], {}, []
    on_node = set()             # the pods bound now (a pending pod's leaving is no change)

    def name(e):
        return e["pod"].split("/", 1)[1]

    def bound(e):
        al = GpuTable.attached(sim.cluster.state).alloc.get(e["pod"])
        got[name(e)] = (e["node"], tuple(al.indices) if al is not None and al.indices else (),
                        float(e["time"]))
        log.append((float(e["time"]), name(e), "bound"))
        on_node.add(name(e))

    def left(what):
        def on(e):
            if what == "preempted":
                victims.append(name(e))
                if grace > 0:
                    return              # it stays, terminating
            if name(e) in on_node:
                on_node.discard(name(e))
                log.append((float(e["time"]), name(e), what))
        return on

    cycle = sim.scheduler.cycle
    due = cycle.terminate_due

    def terminate_due(now):
        # the victims whose grace ended leave the state here (no event)
        state = cycle.state
        remove = state.remove_pod

        def removed(key, *a, **kw):
            on_node.discard(key.split("/", 1)[1])
            log.append((float(now), key.split("/", 1)[1], "preempted"))
            return remove(key, *a, **kw)

        state.remove_pod = removed
        try:
            due(now)
        finally:
            del state.remove_pod

    cycle.terminate_due = terminate_due
    sim.on("Bound", bound)
    for ev, what in (("Departed", "left"), ("Evicted", "left"), ("Deleted", "left"),
                     ("Preempted", "preempted")):
        sim.on(ev, left(what))
    sim.submit(trace)
    t = 5.0
    while t <= end + 5.0:
        sim.run(until=t)
        t += 5.0
    sim.run()
    if summary is not None:
        summary.update(sim.summary())
    s = sim.timeseries()
    return log, got, victims, (s.column("time").to_numpy(),
                               s.column("gpu_used_milli").to_numpy(),
                               s.column("gpu_frag_milli").to_numpy())


def batched(res) -> tuple:
    """``simulate``'s outcome from a batched run."""
    p = len(res.pod_names)
    log = []
    for t, k in zip(res.log_t.tolist(), res.log_pod.tolist()):
        if k >= p:
            continue            # a node event
        j = k if k >= 0 else -1 - k
        what = "bound" if k >= 0 else "preempted" if res.why[j] == WHY_PREEMPTED else "left"
        log.append((float(t), res.pod_names[j], what))
    got = {}
    for j, nm in enumerate(res.pod_names):
        if res.node[j] >= 0:
            got[nm] = (res.node_names[int(res.node[j])].split(".")[0], res.gpus[j],
                       float(res.bind[j]))
    victims = [res.pod_names[j] for j in np.flatnonzero(res.preempted)]
    return log, got, victims


def check(nodes: str, pods: str, scenario: dict, policies, seeds, args=DEFAULT,
          backend: str = "numba", preempt: bool = True, grace: float = 0.0,
          max_unsched: float = B.DEFAULT_MAX_UNSCHED) -> list:
    """Each run of ``policies`` x ``seeds`` (DefaultPreemption with
    ``args``; ``preempt`` False: without; ``grace`` the termination grace,
    ``max_unsched`` pod_max_in_unschedulable_seconds) is its Simulation's
    (module doc; its attempts in all too); the runs."""
    trace = run.read_trace_file(pods)
    n = read_openb_nodes(nodes).n_nodes
    configs = [preempt_config(p, n, *args, preempt=preempt) for p in policies]
    runs = ts.simulate_batch(nodes, [pods], configs, seeds, scenario=scenario, workers=1,
                             backend=backend, termination_grace_seconds=grace,
                             max_unsched=max_unsched)
    for r in runs:
        pol = policies[r.config]
        summary = {}
        log, got, victims, (times, used, frag) = simulate(nodes, trace, pol, r.seed,
                                                          load_scenario(scenario), args, r.end,
                                                          preempt, grace, max_unsched, summary)
        assert int(r.tries.sum()) == summary["scheduled"] + summary["failed_attempts"], pol
        b_log, b_got, b_victims = batched(r)
        # (with or without DefaultPreemption: a drained or removed node's
        # pods leave in key order, as the Simulation logs them)
        assert b_log == log, pol
        assert b_got == got, pol
        # (with a grace a terminating pod may be evicted again: ``preempted``
        # marks it once, ``evictions`` counts each Preempted event)
        assert sorted(b_victims) == sorted(set(victims)), pol
        counts = r.evictions if r.evictions is not None else np.zeros(len(r.pod_names))
        assert {nm: int(c) for nm, c in zip(r.pod_names, counts) if c} == \
            {nm: victims.count(nm) for nm in set(victims)}, pol
        u, f = r.at(times)
        np.testing.assert_array_equal(u, used, err_msg=pol)
        np.testing.assert_array_equal(f, frag, err_msg=pol)
    return runs


def write_cluster(tmp_path, rng, n_nodes: int, n_pods: int) -> tuple:
    """A node CSV (1-4 GPUs a node, T4 or V100M16) and a generic trace of
    GPU-share and whole-GPU pods of priorities 0, 5 and 100, some leaving at
    a time, some a duration after their binding, dense enough to contend."""
    lines = ["sn,cpu_milli,memory_mib,gpu,model"]
    for i in range(n_nodes):
        lines.append(f"n{i},{int(rng.choice([8000, 32000]))},"
                     f"{int(rng.choice([16384, 65536]))},{int(rng.choice([1, 2, 4]))},"
                     f"{rng.choice(['T4', 'V100M16'])}")
    (tmp_path / "n.csv").write_text("\n".join(lines) + "\n")
    lines = ["name,arrival,departure,duration,cpu,memory,annotations,priority"]
    t = 0
    for j in range(n_pods):
        t += int(rng.choice([0, 1, 1, 3, 30]))
        num, milli = ASKS[int(rng.integers(len(ASKS)))]
        if j == 0:
            num, milli = 1, 500         # the typical pods need GPU demand
        stay = int(rng.choice([5, 60, 700, -1, -1]))
        how = rng.choice(["departure", "duration"]) if stay >= 0 else ""
        dep = str(t + stay) if how == "departure" else ""
        dur = str(stay) if how == "duration" else ""
        anno = f'"alibabacloud.com/gpu-milli={milli};alibabacloud.com/gpu-count={num}"' \
            if num else ""
        # names out of arrival order: the victims' key order is not the trace's
        lines.append(f"p{(7 * j) % 31:02d}x{j},{t},{dep},{dur},"
                     f"{int(rng.choice([0, 1000, 4000]))}m,{int(rng.choice([0, 2048]))}Mi,"
                     f"{anno},{int(rng.choice([0, 0, 5, 100]))}")
    (tmp_path / "p.csv").write_text("\n".join(lines) + "\n")
    return str(tmp_path / "n.csv"), str(tmp_path / "p.csv")


def random_scenario(rng, n_nodes: int) -> dict:
    """``_random_scenario``'s node and Pod steps, a created pod that a step
    deletes at the top priority (no pod outranks it: nothing preempts it
    before its delete)."""
    sc = _random_scenario(rng, n_nodes, pods=True)
    deleted = {s["delete"]["name"] for s in sc["steps"]
               if "delete" in s and s["delete"]["kind"] == "Pod"}
    for s in sc["steps"]:
        o = s.get("create")
        if o is not None and o["kind"] == "Pod" and o["metadata"]["name"] in deleted:
            o["spec"]["priority"] = 1000
    return sc


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 4), n_pods=st.integers(4, 22),
       args=st.sampled_from([DEFAULT, DEFAULT, (50, 1), (0, 2)]))
def test_each_run_is_its_simulation_under_random_steps_with_preemption(tmp_path, seed, n_nodes,
                                                                       n_pods, args):
    rng = np.random.default_rng(seed)
    nodes, pods = write_cluster(tmp_path, rng, n_nodes, n_pods)
    check(nodes, pods, random_scenario(rng, n_nodes), POLICIES[seed % 3::3], [seed % 7], args)


def test_random_inputs_do_preempt(tmp_path):
    """The generator's draws preempt (most of them), through every kind of
    step."""
    hits = 0
    for seed in range(8):
        rng = np.random.default_rng(seed)
        nodes, pods = write_cluster(tmp_path, rng, 2, 18)
        sc = random_scenario(rng, 2)
        runs = ts.simulate_batch(nodes, [pods], [preempt_config("FGD", 2)], [0], scenario=sc,
                                 workers=1)
        hits += int(runs[0].preempted.any())
    assert hits >= 5


def _two_nodes(tmp_path, rows: list) -> tuple:
    """n0 (8 cores) and n1 (4 cores), 1 T4 GPU each, and a generic trace
    of ``rows`` (name, arrival, cores, GPU milli, priority)."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                                    "n0,8000,16384,1,T4\nn1,4000,16384,1,T4\n")
    anno = '"alibabacloud.com/gpu-milli={};alibabacloud.com/gpu-count=1"'
    (tmp_path / "p.csv").write_text(
        "name,arrival,departure,duration,cpu,memory,annotations,priority\n" + "".join(
            f"{nm},{t},,,{c},1024Mi,{anno.format(m)},{pr}\n" for nm, t, c, m, pr in rows))
    return str(tmp_path / "n.csv"), str(tmp_path / "p.csv")


# a (low, 6 cores: only n0) on n0, b (high) on n1; h (high) preempts a on
# n0 at 10 and backs off to 11; m (middle, at 10.2) finds n0 taken by h's
# nomination
ROWS = [("a", 0, 6, 1000, 0), ("b", 1, 1, 1000, 100), ("h", 10, 1, 1000, 100),
        ("m", 10.2, 1, 1000, 50)]


def _names(r, which) -> list:
    return [r.pod_names[j] for j in np.flatnonzero(which)]


def test_a_nominated_node_deleted_before_its_pod_binds(tmp_path):
    """n0 removed at 10.5 (h's nomination there ends) and x0 added: h
    (backing off to 11, before m's 11.2) binds on x0; m waits."""
    nodes, pods = _two_nodes(tmp_path, ROWS)
    sc = {"steps": [{"at": 10.5, "removeNodes": ["n0"]},
                    {"at": 10.5, "create": _node("x0", 1)}]}
    for r in check(nodes, pods, sc, POLICIES, [0, 3]):
        assert _names(r, r.preempted) == ["a"], r.policy
        assert r.node_names[int(r.node[2])] == "x0" and r.bind[2] == 11.0
        assert r.node[3] < 0


def test_a_nominated_node_cordoned_keeps_the_nomination(tmp_path):
    """n0 cordoned at 10.5: m, moved by the Node/Update, still fails (n0
    cordoned, n1 full, nothing below it to preempt), h fails at 11 (no
    candidate: n0 is UnschedulableAndUnresolvable); uncordoned at 20 h
    (first in activeQ) binds on n0."""
    nodes, pods = _two_nodes(tmp_path, ROWS)
    sc = {"steps": [{"at": 10.5, "cordon": "n0"}, {"at": 20, "uncordon": "n0"}]}
    for r in check(nodes, pods, sc, POLICIES, [0, 3]):
        assert _names(r, r.preempted) == ["a"], r.policy
        assert r.node_names[int(r.node[2])] == "n0" and r.bind[2] == 20.0
        assert r.node[3] < 0


def test_a_drain_after_a_preemption(tmp_path):
    """h binds on n0 after preempting a; n0 drained at 15 evicts h (the
    nominator forgot it at its binding), m then preempts nothing (b is
    above it) and waits; n0 uncordoned at 30: h gone, m binds there."""
    nodes, pods = _two_nodes(tmp_path, ROWS)
    sc = {"steps": [{"at": 15, "drain": "n0"}, {"at": 30, "uncordon": "n0"}]}
    for r in check(nodes, pods, sc, POLICIES, [1], args=(50, 1)):
        assert _names(r, r.preempted) == ["a"]
        assert r.why[2] != 0 and r.bind[3] == 30.0


@pytest.mark.parametrize("step", [{"drain": "n0"}, {"drain": "n1"}, {"delete": {
    "kind": "Node", "name": "n0"}}, {"delete": {"kind": "Node", "name": "n1"}}])
@pytest.mark.parametrize("preempt", [False, True])
def test_a_nodes_pods_leave_in_key_order(tmp_path, step, preempt):
    """Pods named against their arrival order (zz, mm, aa, kk) leave a
    drained or deleted node in key order, with DefaultPreemption or
    without, as the Simulation logs them (the run's order would differ)."""
    rows = [(nm, t, "1000m", 250, 0) for t, nm in enumerate(["zz", "mm", "aa", "kk"])]
    nodes, pods = _two_nodes(tmp_path, rows)
    runs = check(nodes, pods, {"steps": [{"at": 10, **step}]}, POLICIES, [0, 3],
                 preempt=preempt)
    # (some runs leave two or more pods on the node: their order is checked)
    assert any(int((r.why != 0).sum()) >= 2 for r in runs)


@pytest.mark.cudasim
@needs_cuda
def test_cuda_form_preempts_as_the_twin(tmp_path):
    """The device form (the simulator) and the twin give the same runs,
    preempting through node deletes, cordons, drains and Pod steps."""
    nodes, pods = _two_nodes(tmp_path, ROWS + [("z", 12, 1, 500, 0)])
    sc = {"steps": [{"at": 10.5, "removeNodes": ["n0"]},
                    {"at": 10.5, "create": _node("x0", 1)}, {"at": 13, "drain": "n1"},
                    {"at": 14, "create": _pod("c0", 1, 500, priority=1000)},
                    {"at": 16, "delete": {"kind": "Pod", "name": "c0"}},
                    {"at": 20, "uncordon": "n1"}]}
    cfgs = [preempt_config("FGD", 2), preempt_config("Random", 2, 50, 1), "BestFit"]
    twin, dev = (ts.simulate_batch(nodes, pods, cfgs, [0, 1], backend=b, scenario=sc)
                 for b in ("numba", "cuda"))
    assert any(r.preempted is not None and r.preempted.any() for r in twin)
    for x, y in zip(twin, dev):
        assert x.node.tolist() == y.node.tolist() and x.gpus == y.gpus
        assert x.log_t.tolist() == y.log_t.tolist() and x.log_pod.tolist() == y.log_pod.tolist()
        assert x.log_frag.tolist() == y.log_frag.tolist() and x.why.tolist() == y.why.tolist()

