"""DefaultPreemption with a termination grace above 0 in the batched
node-local engines (``ts.simulate_batch(manifests, ...,
termination_grace_seconds=g)``: ``kernels/batch/_local_preempt.py`` and,
with a scenario's node and pod steps, ``_local_preempt_events.py``): the
victims stay on their node, holding its resources, until their first
eviction + g, then leave as an assigned pod's deletion; a preemptor whose
nominated node holds a lower-priority pod terminating by preemption does
not preempt again.  Each run equals its ``ts.Simulation(...,
termination_grace_seconds=g)`` fed the trace (and given the scenario):
every binding (pod, node, time) and every pod leaving its node (time) in
order, each pod's attempts and how many times it was preempted; on
random small manifest clusters (``support.preempt_inputs``, the scenarios
of ``test_sweep_preempt_events``) under graces 0.5, 3 and 45 s, and on
targeted cases: the preemptor waits for its victim instead of preempting
elsewhere, a terminating victim chosen again keeps its first deadline, a
victim departs, is drained, deleted with its node or by a Pod delete
while terminating, a nominated node cordoned or deleted while its
preemptor waits; and the CUDA forms under the simulator equal their
twins."""
from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sweep_preempt_events import _pod_steps

import tensorsched as ts
from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep_local as SL
from tensorsched.framework.simulation.scenario import load_scenario
from tensorsched.framework.capacity.batch_probe import BatchProfileError
from tensorsched.generators.clusters import node_dict, pod_dict

from support.local_scenarios import scenario_steps
from support.preempt_inputs import write_inputs

GRACES = [0.5, 3.0, 45.0]


def _truth(objs, cfg, trace, seed: int, grace: float, scenario=None) -> dict:
    """What the run's own Simulation does: ``log`` [(time, pod, node)] of
    each binding (node its name) and each bound pod leaving (node None),
    in order; ``tries`` / ``preempted`` per pod key."""
    sim = ts.Simulation(copy.deepcopy(objs), cfg, "numpy", seed,
                        termination_grace_seconds=grace)
    if scenario is not None:
        sim.scenario(copy.deepcopy(scenario))
    state = sim.cluster.state
    bound = set(state.pods.keys())
    log, tries, preempted = [], Counter(), Counter()

    def on_bound(e):
        log.append((sim.clock.now(), e["pod"], e["node"]))
        bound.add(e["pod"])
        tries[e["pod"]] += 1

    sim.scheduler.subscribe("Bound", on_bound)
    sim.scheduler.subscribe("FailedScheduling", lambda e: tries.update([e["pod"]]))
    sim.scheduler.subscribe("Preempted", lambda e: preempted.update([e["pod"]]))
    remove, update = state.remove_pod, state.update_pod
    updating = []

    def remove_pod(key):
        # a bound pod leaving (the nominated overlay's pods were never
        # bound; an update takes its pod out and back in)
        if key in bound and not updating:
            bound.discard(key)
            log.append((sim.clock.now(), key, None))
        return remove(key)

    def update_pod(*args, **kw):
        updating.append(1)
        try:
            return update(*args, **kw)
        finally:
            updating.pop()

    state.remove_pod, state.update_pod = remove_pod, update_pod
    sim.submit(trace)
    sim.run()
    return {"log": log, "tries": tries, "preempted": preempted}


def _kernel(r, setup) -> dict:
    """``_truth``'s view of a batched run ``r`` of ``setup``."""
    keys = [p.key for p in setup.prober.pods]
    every = keys + ([b.key for b in setup.prober.bound] if setup.preempt is not None else [])
    log = []
    for t, k in zip(r.log_t.tolist(), r.log_pod.tolist()):
        log.append((t, keys[k], r.node_names[r.node[k]]) if k >= 0 else (t, every[-1 - k], None))
    victim = [] if r.victim is None else r.victim.tolist()
    return {"log": log, "tries": Counter({k: n for k, n in zip(keys, r.tries.tolist()) if n}),
            "preempted": Counter({k: n for k, n in zip(every, victim) if n})}


def _by_time(log: list) -> list:
    """``log``'s entries in time order, those of one time sorted."""
    return sorted(log, key=lambda e: (e[0], e[1], e[2] or ""))


def assert_runs(objs, cfgs, trace_path: str, seeds, grace: float, scenario=None,
                backend: str = "numba") -> list:
    """Every run of ``ts.simulate_batch`` over ``cfgs`` x ``seeds`` under
    ``grace`` equals its Simulation's; returns the runs (``None`` when the
    batched engine refuses the inputs)."""
    trace = run.read_trace_file(trace_path)
    sc = None if scenario is None else load_scenario(copy.deepcopy(scenario))
    try:
        got = ts.simulate_batch(objs, [trace_path], cfgs, seeds=list(seeds), scenario=scenario,
                                termination_grace_seconds=grace, backend=backend)
    except BatchProfileError:
        return None
    for r in got:
        cfg = cfgs[r.config]
        setup = SL.trace_setup(copy.deepcopy(objs), copy.deepcopy(cfg), trace, sc)
        want = _truth(objs, cfg, trace, r.seed, grace, scenario)
        if setup.preempt is None:
            # no pod could preempt: the manifests' bound pods are the
            # nodes' totals, their leaving not in the run's log
            queued = {p.key for p in setup.prober.pods}
            want["log"] = [e for e in want["log"] if e[1] in queued]
        seen = _kernel(r, setup)
        if scenario is not None:
            # a node's pods leave with it in the kernel's key order (the
            # queue's, then the manifests' bound pods), the Simulation's
            # in its own: the same pods at the same time
            seen["log"], want["log"] = _by_time(seen["log"]), _by_time(want["log"])
        assert seen == want, (r.config, r.seed)
    return got


def _configs(paths) -> list:
    return [yaml.safe_load(Path(p).read_text()) for p in paths]


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 4), n_pods=st.integers(2, 24),
       n_bound=st.integers(0, 2), grace=st.sampled_from(GRACES))
def test_graceful_preemption_equals_each_simulation(tmp_path, seed, n_nodes, n_pods, n_bound,
                                                    grace):
    cluster, trace, cfgs = write_inputs(tmp_path, seed, n_nodes, n_pods, n_bound)
    objs = list(yaml.safe_load_all(Path(cluster).read_text()))
    assert_runs(objs, _configs(cfgs[:2]), trace, [0, 1 + seed % 5], grace)


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_pods=st.integers(2, 20),
       n_bound=st.integers(0, 3), n_steps=st.integers(1, 4), n_created=st.integers(0, 3),
       grace=st.sampled_from(GRACES))
def test_graceful_preemption_with_node_events_equals_each_simulation(
        tmp_path, seed, n_nodes, n_pods, n_bound, n_steps, n_created, grace):
    cluster, trace, cfgs = write_inputs(tmp_path, seed, n_nodes, n_pods, n_bound)
    rng = np.random.default_rng(seed + 7919)
    steps = scenario_steps(rng, n_nodes, n_steps)
    steps += _pod_steps(rng, steps, cluster, n_created)
    objs = list(yaml.safe_load_all(Path(cluster).read_text()))
    assert_runs(objs, _configs(cfgs[:1]), trace, [0, 1 + seed % 5], grace, {"steps": steps})


def _bound(name: str, node: str, cpu: str, prio: int) -> dict:
    p = pod_dict(name, cpu=cpu, memory="256Mi", priority=prio)
    p["spec"]["nodeName"] = node
    return p


def _trace(tmp_path, text: str) -> str:
    tr = tmp_path / "t.csv"
    tr.write_text(text)
    return str(tr)


def _one(tmp_path, objs, trace: str, grace: float, steps=None, seeds=(0,)):
    got = assert_runs(objs, [None], _trace(tmp_path, trace), seeds, grace,
                      None if steps is None else {"steps": steps})
    assert got is not None
    return got[0]


def _at(r, name: str, trace: str) -> int:
    return [row.split(",")[0] for row in trace.splitlines()[1:]].index(name)


WAIT = ("name,arrival,departure,cpu,priority\n"
        "x,0,4,1,5\nc,2,,2,100\n")


def _waiting_objs() -> list:
    """n0 (2 cpu) full of a (priority 3); n1 (3 cpu) holds b (1) and y
    (5), 1 cpu each; the trace's x (5, 1 cpu) takes n1's last cpu and
    leaves at 4; c (100, 2 cpu) comes at 2: n0's victim {a} (top
    priority 3) beats n1's {x, b} (5)."""
    return [node_dict("n0", cpu="2", memory="4Gi"), node_dict("n1", cpu="3", memory="4Gi"),
            _bound("a", "n0", "2", 3), _bound("b", "n1", "1", 1), _bound("y", "n1", "1", 5)]


@pytest.mark.parametrize("grace", [0.0, 10.0])
def test_the_preemptor_waits_for_its_terminating_victim(tmp_path, grace):
    """a is evicted at 2.  Without a grace it leaves at once and c binds
    on n0 at 3 (its backoff).  With 10 s a holds n0 until 12; x leaving
    at 4 retries c, and although n1 would now need only b (priority 1,
    the better candidate), c may not preempt: its nominated node holds a,
    terminating.  So b stays and c binds on n0 at 12."""
    r = _one(tmp_path, _waiting_objs(), WAIT, grace)
    c = _at(r, "c", WAIT)
    assert r.node_names[r.node[c]] == "n0"
    assert r.victim.tolist() == [0, 0, 1, 0, 0]          # x, c; a, b, y
    assert r.bind[c] == (12.0 if grace else 3.0)
    if grace:
        assert r.tries[c] >= 2
        assert (12.0, -3) in zip(r.log_t.tolist(), r.log_pod.tolist())   # a leaves at 12


def test_a_victim_chosen_again_keeps_its_first_deadline(tmp_path):
    """n0 (2 cpu) holds v (0) and u (50), 1 cpu each.  h1 (100, 1 cpu) at
    1 evicts v (deadline 11); h2 (1000, 2 cpu) at 4 evicts v again and u
    (deadline 14), ending h1's nomination.  v leaves at 11 (not 14), u at
    14, h2 binds then; h1 stays pending (h2's nomination holds n0)."""
    objs = [node_dict("n0", cpu="2", memory="4Gi"), _bound("v", "n0", "1", 0),
            _bound("u", "n0", "1", 50)]
    trace = "name,arrival,cpu,priority\nh1,1,1,100\nh2,4,2,1000\n"
    r = _one(tmp_path, objs, trace, 10.0, seeds=(0, 3))
    assert r.victim.tolist() == [0, 0, 2, 1]
    assert list(zip(r.log_t.tolist(), r.log_pod.tolist())) == [(11.0, -3), (14.0, -4),
                                                                (14.0, 1)]
    assert r.node.tolist() == [-1, 0]


def test_a_victim_departing_while_terminating_leaves_once(tmp_path):
    """v (trace, priority 0) fills n0 and departs at 5; hi (1000) preempts
    it at 3 with 10 s of grace: v leaves at its departure, not at 13, and
    hi binds then."""
    objs = [node_dict("n0", cpu="2", memory="4Gi")]
    trace = "name,arrival,departure,cpu,priority\nv,0,5,2,0\nhi,3,,2,1000\n"
    r = _one(tmp_path, objs, trace, 10.0)
    assert r.victim.tolist() == [1, 0]
    assert list(zip(r.log_t.tolist(), r.log_pod.tolist())) == [(0.0, 0), (5.0, -1), (5.0, 1)]


def _full_pair() -> list:
    # n0 full of low (0), n1 of top (5000): hi (1000, 2 cpu) at 5 preempts low
    return [node_dict("n0", cpu="2", memory="4Gi"), node_dict("n1", cpu="2", memory="4Gi"),
            _bound("low", "n0", "2", 0), _bound("top", "n1", "2", 5000)]


HI = "name,arrival,cpu,priority\nhi,5,2,1000\n"


@pytest.mark.parametrize("step,why", [
    ({"at": 10, "drain": "n0"}, 3),
    ({"at": 10, "delete": {"kind": "Node", "name": "n0"}}, 2),
    ({"at": 10, "removeNodes": ["n0"]}, 2),
    ({"at": 10, "delete": {"kind": "Pod", "name": "low"}}, 2)])
def test_a_step_takes_a_terminating_victim_once(tmp_path, step, why):
    """low, terminating from 5 (grace 30), leaves at 10 with the step (a
    drain, its node's deletion, a Pod delete: no NotFound), not again at
    35; hi then binds where the Simulation binds it."""
    steps = [step, {"at": 20, "create": node_dict("c", cpu="2", memory="4Gi")}]
    r = _one(tmp_path, _full_pair(), HI, 30.0, steps, seeds=(0, 2))
    assert r.victim.tolist() == [0, 1, 0] and r.why.tolist() == [0, why, 0]
    assert [(t, k) for t, k in zip(r.log_t.tolist(), r.log_pod.tolist()) if k == -2] == [
        (10.0, -2)]
    assert r.node[0] >= 0 and r.bind[0] >= 10.0


def test_a_cordoned_nominated_node_keeps_its_waiting_preemptor_out(tmp_path):
    """hi preempts low on n0 at 5 (grace 30); n0 is cordoned at 10 while
    low terminates: hi waits (low is still on its nominated node), low
    leaves at 35, hi fails on the cordoned n0 and binds when it is
    uncordoned at 50."""
    steps = [{"at": 10, "cordon": "n0"}, {"at": 50, "uncordon": "n0"}]
    r = _one(tmp_path, _full_pair(), HI, 30.0, steps, seeds=(0, 2))
    assert r.victim.tolist() == [0, 1, 0]
    assert (35.0, -2) in zip(r.log_t.tolist(), r.log_pod.tolist())
    assert r.node_names[r.node[0]] == "n0" and r.bind[0] == 50.0


def test_a_deleted_nominated_node_frees_its_waiting_preemptor(tmp_path):
    """n0 (with low, terminating) is deleted at 10 and c created: hi's
    nomination died with n0, it binds on c."""
    steps = [{"at": 10, "delete": {"kind": "Node", "name": "n0"}},
             {"at": 10, "create": node_dict("c", cpu="2", memory="4Gi")}]
    r = _one(tmp_path, _full_pair(), HI, 30.0, steps)
    assert r.node_names[r.node[0]] == "c" and r.bind[0] >= 10.0
