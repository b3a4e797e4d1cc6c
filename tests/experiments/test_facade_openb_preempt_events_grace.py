"""DefaultPreemption with a termination grace above 0 on the openb
node-event engine (``ts.simulate_batch(..., scenario=S,
termination_grace_seconds=g)``, ``kernels/batch/_openb_events``): the
victims stay on their node, holding it, until their first eviction + g,
then leave as an assigned pod's deletion; a step that drains or removes
their node, a Pod delete or their own departure takes them first (their
termination then finds nothing); a preemptor whose nominated node holds a
lower-priority pod terminating by preemption does not preempt again (a
cordon keeps the nomination, a removal ends it); the clock stops at every
termination deadline, and no run stops stalled while a victim terminates.
Each run equals its ``Simulation(..., termination_grace_seconds=g)`` given
the scenario -- changes in order and time, each pod's node, GPU indices
and binding time, the victims, the curves, the attempts -- on random small
clusters under random node and Pod steps, and on targeted cases."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda
from test_facade_openb_preempt_events import (
    DEFAULT,
    POLICIES,
    _two_nodes,
    check,
    preempt_config,
    random_scenario,
    simulate,
    write_cluster,
)
from test_openb_preempt_deletes import ROWS as DELETE_ROWS
from test_openb_preempt_deletes import _facade_or_error, _steps, deletes_scenario
from test_sweep_openb_events import _node

import tensorsched as ts
from tensorsched.experiments import simulate_run as run
from tensorsched.framework.simulation.errors import SimulationError
from tensorsched.framework.simulation.scenario import load_scenario
from tensorsched.kernels.batch.openb_events import (
    WHY_DELETED,
    WHY_EVICTED,
    WHY_POD_DELETED,
    WHY_PREEMPTED,
)

GRACES = (0.5, 3.0, 45.0)
# a (priority 0, 6 cores: only n0) on n0; b (priority 5) on n1; h (100) at 10
# finds no room and preempts a on n0 (a's priority below b's): a terminates
# until 10 + g
ROWS = [("a", 0, 6, 1000, 0), ("b", 1, 1, 1000, 5), ("h", 10, 1, 1000, 100)]


def _pod_of(r, name: str) -> int:
    return r.pod_names.index(name)


def _leaves(r, name: str) -> list:
    """The times pod ``name`` left its node in run ``r``'s log."""
    j = _pod_of(r, name)
    return [t for t, k in zip(r.log_t.tolist(), r.log_pod.tolist()) if k == -1 - j]


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 4), n_pods=st.integers(4, 20),
       args=st.sampled_from([DEFAULT, DEFAULT, (50, 1)]), grace=st.sampled_from(GRACES))
def test_each_run_is_its_simulation_under_random_steps_with_a_grace(tmp_path, seed, n_nodes,
                                                                   n_pods, args, grace):
    rng = np.random.default_rng(seed)
    nodes, pods = write_cluster(tmp_path, rng, n_nodes, n_pods)
    check(nodes, pods, random_scenario(rng, n_nodes), POLICIES[seed % 3::3], [seed % 7], args,
          grace=grace)


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_pods=st.integers(6, 18),
       grace=st.sampled_from(GRACES))
def test_random_deletes_with_a_grace_raise_or_equal_each_simulation(tmp_path, seed, n_nodes,
                                                                   n_pods, grace):
    """Created pods of low priorities, deleted later, some while they
    terminate as victims: the batched call raises the first failing
    Simulation's error or every run is its Simulation's."""
    rng = np.random.default_rng(seed)
    nodes, pods = write_cluster(tmp_path, rng, n_nodes, n_pods)
    _facade_or_error(nodes, pods, deletes_scenario(rng, n_nodes), ["FGD", "BestFit"][seed % 2:],
                     [seed % 5], [(10, 100), (50, 1)][seed % 2], grace=grace)


def test_random_inputs_do_terminate_victims(tmp_path):
    """The generator's draws preempt with a grace, and victims are still
    terminating when a step drains or removes their node, or when they
    leave on their own, in some of them."""
    hits, otherwise = 0, 0
    for seed in range(8):
        rng = np.random.default_rng(seed)
        nodes, pods = write_cluster(tmp_path, rng, 2, 18)
        sc = random_scenario(rng, 2)
        (r,) = ts.simulate_batch(nodes, [pods], [preempt_config("FGD", 2)], [0], scenario=sc,
                                 workers=1, termination_grace_seconds=45.0)
        hits += int(r.preempted.any())
        otherwise += int((r.preempted & (r.why != WHY_PREEMPTED)).any())
    assert hits >= 5 and otherwise >= 1


@pytest.mark.parametrize("step,why", [({"drain": "n0"}, WHY_EVICTED),
                                      ({"removeNodes": ["n0"]}, WHY_DELETED)])
def test_a_terminating_victim_leaves_with_its_drained_or_removed_node(tmp_path, step, why):
    """a terminates on n0 until 55; n0 drained (or removed) at 20: a leaves
    then, once, as the node's pods leave (its termination at 55 finds
    nothing: no second leave, no double free: the curves are the
    Simulation's); b (100 here) cannot be preempted; n0 uncordoned (or x0
    added) at 30: h binds there."""
    nodes, pods = _two_nodes(tmp_path, [ROWS[0], ("b", 1, 1, 1000, 100), ROWS[2]])
    back = {"uncordon": "n0"} if "drain" in step else {"create": _node("x0", 1)}
    sc = {"steps": [{"at": 20, **step}, {"at": 30, **back}]}
    for r in check(nodes, pods, sc, POLICIES, [0, 3], grace=45.0):
        a, h = _pod_of(r, "a"), _pod_of(r, "h")
        assert r.preempted.tolist() == [True, False, False], r.policy
        assert r.why[a] == why and _leaves(r, "a") == [20.0], r.policy
        assert r.bind[h] == 30.0 and r.node_names[int(r.node[h])] in ("n0", "x0"), r.policy


def test_a_pod_delete_of_a_terminating_victim(tmp_path):
    """c0 (created, priority 0) on n1 is h's victim at 10 (FGD, seed 0;
    other runs evict a on n0, as cheap): with a grace of 45 it terminates
    until 55, so its delete at 20 finds it (it leaves then,
    ``WHY_POD_DELETED``, h binds at 20, no termination after); a delete at
    60 finds it gone: the Simulation's NotFound, raised by the batched call
    (a note: it was preempted); with a grace of 3 already at 20."""
    nodes, pods = _two_nodes(tmp_path, DELETE_ROWS)
    hits = 0
    for r in check(nodes, pods, _steps(0, 20), POLICIES, [0, 2], grace=45.0):
        c0 = _pod_of(r, "c0")
        assert r.why[c0] == WHY_POD_DELETED and _leaves(r, "c0") == [20.0], r.policy
        assert r.bind[_pod_of(r, "h")] == 20.0, r.policy
        hits += int(r.preempted[c0])
    assert hits >= 1
    for at, grace in ((60, 45.0), (20, 3.0)):
        sc = _steps(0, at)
        want = f"Pod default/c0: not found (NotFound): no such pod pending or bound at {at}s"
        with pytest.raises(SimulationError) as sim_err:
            simulate(nodes, run.read_trace_file(pods), "FGD", 0, load_scenario(sc),
                     grace=grace)
        assert str(sim_err.value) == want
        with pytest.raises(SimulationError) as got:
            ts.simulate_batch(nodes, pods, [preempt_config("FGD", 2)], [0], scenario=sc,
                              workers=1, termination_grace_seconds=grace)
        assert type(got.value) is SimulationError and str(got.value) == want
        assert got.value.__notes__[0] == "the pod was preempted before its delete"


@pytest.mark.parametrize("grace", [3.0, 45.0])
def test_a_preemptor_waits_while_its_nominated_node_is_cordoned(tmp_path, grace):
    """n0 cordoned at 10.5, a still terminating there: h's retries fail
    (n0 cordoned, n1 holds b) and it may not preempt (its nominated node,
    cordoned or not, holds a, terminating below it), so b stays until a
    has gone at 10 + g; then h preempts b, which terminates in turn."""
    nodes, pods = _two_nodes(tmp_path, ROWS)
    sc = {"steps": [{"at": 10.5, "cordon": "n0"}, {"at": 200, "uncordon": "n0"}]}
    for r in check(nodes, pods, sc, POLICIES, [0, 3], grace=grace):
        assert r.preempted.tolist() == [True, True, False], r.policy
        assert _leaves(r, "a") == [10 + grace], r.policy
        (b_left,) = _leaves(r, "b")
        h = _pod_of(r, "h")
        assert b_left >= 10 + 2 * grace and r.bind[h] >= b_left, r.policy
        assert r.node_names[int(r.node[h])] == "n1", r.policy


def test_a_preemptor_whose_nominated_node_is_removed_preempts_again(tmp_path):
    """n0 (a terminating there) removed at 12: a leaves with it, h's
    nomination ends, and h, moved, preempts b on n1 (no wait) and binds
    there when b's grace ends."""
    nodes, pods = _two_nodes(tmp_path, ROWS)
    sc = {"steps": [{"at": 12, "removeNodes": ["n0"]}]}
    for r in check(nodes, pods, sc, POLICIES, [0, 3], grace=30.0):
        assert r.preempted.tolist() == [True, True, False], r.policy
        assert r.why[_pod_of(r, "a")] == WHY_DELETED and _leaves(r, "a") == [12.0]
        (b_left,) = _leaves(r, "b")
        assert 12.0 < b_left <= 12.0 + 30.0 + 10.0, r.policy      # (h's backoff)
        assert r.bind[_pod_of(r, "h")] == b_left, r.policy


def test_a_removed_nominated_nodes_name_still_counts(tmp_path):
    """h (100) preempts a on n0 at 10; n0 is removed at 20 (h's
    nomination ends, its status still names n0) and added again at 21,
    where q (60) binds and r (150, only n0 fits it) makes q a victim at
    21.5.  At 22 h fails and may not preempt: the node named n0 holds q,
    terminating below it (b on n1, 50, would be the cheaper victim); b is
    evicted only at 66.5, when q has gone and r took n0."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                                    "n0,8000,16384,1,T4\nn1,4000,16384,1,T4\n")
    anno = '"alibabacloud.com/gpu-milli=1000;alibabacloud.com/gpu-count=1"'
    rows = [("a", 0, "", 6, 0), ("z", 1, 20.2, 1, 200), ("h", 10, "", 1, 100),
            ("b", 20.3, "", 1, 50), ("q", 21, "", 6, 60), ("r", 21.5, "", 6, 150)]
    (tmp_path / "p.csv").write_text(
        "name,arrival,departure,duration,cpu,memory,annotations,priority\n" + "".join(
            f"{nm},{t},{dep},,{c},1024Mi,{anno},{pr}\n" for nm, t, dep, c, pr in rows))
    sc = {"steps": [{"at": 20, "removeNodes": ["n0"]},
                    {"at": 21, "create": _node("n0", 1, cpu="8")}]}
    for r in check(str(tmp_path / "n.csv"), str(tmp_path / "p.csv"), sc, POLICIES, [0, 3],
                   grace=45.0):
        assert r.preempted.tolist() == [True, False, False, True, True, False], r.policy
        assert _leaves(r, "b") == [111.5] and r.bind[_pod_of(r, "h")] == 111.5, r.policy


def test_no_stall_stop_while_a_victim_terminates(tmp_path):
    """max_unsched 0.5 s: the stall horizon is 2 x (0.5 + 10) = 21 s, but a
    terminates until 55 (h's only wakeup): the run goes on, h binds on n0
    at 55, as in the Simulation (without the rule it would stop first)."""
    nodes, pods = _two_nodes(tmp_path, ROWS)
    sc = {"steps": [{"at": 5, "cordon": "n1"}]}
    for r in check(nodes, pods, sc, POLICIES, [0, 3], grace=45.0, max_unsched=0.5):
        assert r.bind[_pod_of(r, "h")] == 55.0 and r.end >= 55.0, r.policy


def test_the_clock_stops_at_every_termination_deadline(tmp_path):
    """a (0) on n0 is m's (50) victim at 10, until 20; h (100) at 12 finds
    n0 still held and evicts a again (its deadline stays 20; the second,
    22, is a time the clock stops at); a leaves at 20, h binds on n0 and m,
    flushed from the pool after max_unsched 0.5 s, is attempted again at
    22 -- the attempts equal the Simulation's."""
    rows = [("a", 0, 6, 1000, 0), ("b", 1, 1, 1000, 60), ("m", 10, 1, 1000, 50),
            ("h", 12, 1, 1000, 100)]
    nodes, pods = _two_nodes(tmp_path, rows)
    sc = {"steps": [{"at": 100, "cordon": "n1"}]}
    for r in check(nodes, pods, sc, POLICIES, [0, 3], grace=10.0, max_unsched=0.5):
        assert r.preempted.tolist() == [True, False, False, False], r.policy
        assert _leaves(r, "a") == [20.0] and r.bind[_pod_of(r, "h")] == 20.0, r.policy
        assert r.tries[_pod_of(r, "m")] >= 3, r.policy


def test_a_grace_of_zero_is_the_engine_of_before(tmp_path):
    """``termination_grace_seconds=0`` and no argument give the same bits;
    a grace below 0 or not finite is refused by name."""
    rng = np.random.default_rng(5)
    nodes, pods = write_cluster(tmp_path, rng, 3, 18)
    sc = random_scenario(rng, 3)
    cfgs = [preempt_config("FGD", 3), preempt_config("Random", 3, 50, 1)]
    for x, y in zip(ts.simulate_batch(nodes, [pods], cfgs, [0, 1], scenario=sc, workers=1),
                    ts.simulate_batch(nodes, [pods], cfgs, [0, 1], scenario=sc, workers=1,
                                      termination_grace_seconds=0.0)):
        for f in ("node", "bind", "tries", "why", "log_t", "log_pod", "log_frag", "preempted",
                  "evictions"):
            np.testing.assert_array_equal(getattr(x, f), getattr(y, f), err_msg=f)
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ts.TensorschedError, match="termination_grace_seconds"):
            ts.simulate_batch(nodes, [pods], cfgs, [0], scenario=sc, workers=1,
                              termination_grace_seconds=bad)


@pytest.mark.cudasim
@needs_cuda
def test_cuda_form_terminates_as_the_twin(tmp_path):
    """The device form (the simulator) and the twin give the same runs
    with a grace: victims terminating through a cordon, a drain, a
    removal and a Pod delete."""
    nodes, pods = _two_nodes(tmp_path, DELETE_ROWS + [("m", 11, 1, 500, 50)])
    sc = _steps(0, 12.5)
    sc["steps"] += [{"at": 12, "cordon": "n0"}, {"at": 16, "drain": "n1"},
                    {"at": 17, "uncordon": "n1"}, {"at": 19, "removeNodes": ["n0"]}]
    sc["steps"].sort(key=lambda s: s["at"])
    cfgs = [preempt_config("FGD", 2), preempt_config("Random", 2, 50, 1)]
    twin, dev = (ts.simulate_batch(nodes, pods, cfgs, [0], backend=b, scenario=sc,
                                   termination_grace_seconds=3.0) for b in ("numba", "cuda"))
    # a terminated on n0, c0 deleted by its step while terminating
    assert {WHY_PREEMPTED, WHY_POD_DELETED} <= set(twin[0].why[twin[0].preempted].tolist())
    for x, y in zip(twin, dev):
        for f in ("node", "bind", "tries", "why", "log_t", "log_pod", "log_frag", "preempted",
                  "evictions"):
            np.testing.assert_array_equal(getattr(x, f), getattr(y, f), err_msg=f)


def _overcommit_cluster(tmp_path) -> tuple:
    """``test_batch_preempt_grace.overcommit_case`` as files: n0 (8
    cores) and n1 (4 cores), two T4s each; a (0, 6 cores, a GPU), b (5, 3
    cores, a GPU), h (100, 3 cores, half a GPU) at 10 preempting a on n0,
    x (0, no cpu, 0.3 of a GPU) at 11 counting h on n0 (free cpu -1
    core)."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                                    "n0,8000,16384,2,T4\nn1,4000,16384,2,T4\n")
    anno = '"alibabacloud.com/gpu-milli={};alibabacloud.com/gpu-count=1"'
    rows = [("a", 0, 6000, 1000, 0), ("b", 1, 3000, 1000, 5), ("h", 10, 3000, 500, 100),
            ("x", 11, 0, 300, 0)]
    (tmp_path / "p.csv").write_text(
        "name,arrival,departure,duration,cpu,memory,annotations,priority\n" + "".join(
            f"{nm},{t},,,{c}m,1024Mi,{anno.format(m)},{pr}\n" for nm, t, c, m, pr in rows))
    return str(tmp_path / "n.csv"), str(tmp_path / "p.csv")


def test_a_node_a_nominated_pod_overcommits_scores_as_the_simulation(tmp_path):
    """x's cycle sees n0 with free cpu below 0 (h counted there while a
    terminates): GpuShareScore scores it 0 (FGD, GpuPacking,
    GpuClustering), so x binds on n1, as in the Simulation; every policy
    under a scenario (a cordon of n1 after x binds) equals its
    Simulation."""
    nodes, pods = _overcommit_cluster(tmp_path)
    sc = {"steps": [{"at": 12, "cordon": "n1"}, {"at": 13, "uncordon": "n1"}]}
    for r in check(nodes, pods, sc, POLICIES, [0, 3], grace=10.0):
        assert r.preempted.tolist() == [True, False, False, False], r.policy
        if r.policy in ("FGD", "GpuPacking", "GpuClustering"):
            assert r.node_names[int(r.node[_pod_of(r, "x")])] == "n1", r.policy


@pytest.mark.cudasim
@needs_cuda
def test_cuda_forms_score_an_overcommitted_node_as_the_twin(tmp_path):
    """The device forms (the simulator) of both openb engines on the
    over-committed node: the twin's runs (FGD and GpuPacking)."""
    nodes, pods = _overcommit_cluster(tmp_path)
    cfgs = [preempt_config("FGD", 2), preempt_config("GpuPacking", 2)]
    for sc in (None, {"steps": [{"at": 12, "cordon": "n1"}]}):
        twin, dev = (ts.simulate_batch(nodes, pods, cfgs, [0], backend=b, scenario=sc,
                                       termination_grace_seconds=10.0)
                     for b in ("numba", "cuda"))
        for x, y in zip(twin, dev):
            assert x.node.tolist() == [0, 1, 0, 1] and x.gpus == y.gpus
            for f in ("node", "bind", "tries", "log_t", "log_pod", "log_frag", "preempted"):
                np.testing.assert_array_equal(getattr(x, f), getattr(y, f), err_msg=f)
            if sc is not None:
                np.testing.assert_array_equal(x.why, y.why)
