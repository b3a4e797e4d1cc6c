"""``ts.simulate_batch`` on openb nodes with a scenario of node and Pod
steps (``experiments.batch_facade``): every run's placements (node by
name), GPU indices, binding times, evictions, removals and deletions are
its own Simulation's given the scenario, under the experiment's profile
(policy names: OpenbTieRank's node order) and GpuShareScore alone; the
traces and steps the node-event engine does not cover are refused by
name before any run."""
import copy

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda
from test_sweep_batch import HEADER, _write, _write_generic
from test_sweep_openb_events import _node, _pod, _random_scenario

import tensorsched as ts
from tensorsched.experiments import batch_facade
from tensorsched.experiments import simulate_run as run
from tensorsched.framework.errors import ArgumentError
from tensorsched.framework.simulation.scenario import ScenarioError, load_scenario
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.kernels.batch.openb_events import WHY_DELETED, WHY_EVICTED, WHY_POD_DELETED
from tensorsched.topology.gpu import read_openb_nodes
from tensorsched.topology.gpu_table import GpuTable
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import trace as T
from tensorsched.topology.openb.batch_sim import BatchProfileError

POLICIES = ("FGD", "Random", "BestFit", "DotProd", "GpuPacking", "GpuClustering")


def _simulated(nodes: str, trace, policy: str, seed: int, scenario, tie: bool = False) -> dict:
    """The Simulation's outcome per pod name: (node, GPU indices, binding
    time) when bound, and how it left with its node (or by a step's
    delete: ``PodDeleted``); ``tie``: the experiment's profile
    (OpenbTieRank's labels ``batch.tie_of(n, seed)``)."""
    tw = B.trace_workload(trace)
    typical = T.typical_of(tw.pods)
    inv = read_openb_nodes(nodes)
    n = inv.n_nodes
    sim = Simulation(T.openb_node_objects(inv, B.tie_of(n, seed) if tie else None),
                     T.openb_config(policy, typical, n + 1 if tie else None), "numba", seed,
                     interval=60.0, registry=T.experiment_registry())
    sim.scenario(copy.deepcopy(scenario))
    created = {o["metadata"]["name"] for st in sim_steps(scenario) for o in st.objects
               if st.kind == "Pod"}
    got, gone = {}, {}

    def bound(e):
        gt = GpuTable.attached(sim.cluster.state)
        al = gt.alloc.get(e["pod"]) if gt is not None else None
        got[e["pod"].split("/", 1)[1]] = (e["node"], tuple(al.indices) if al is not None
                                          and al.indices else (), float(e["time"]))

    def left(e):
        name = e["pod"].split("/", 1)[1]
        if "node" in str(e.get("message", "")):         # with its node, not its own deletion
            gone[name] = e["event"]
        elif e["event"] == "Deleted" and name in created:
            gone[name] = "PodDeleted"
    sim.on("Bound", bound)
    sim.on("Evicted", left)
    sim.on("Deleted", left)
    sim.submit(trace)
    sim.run()
    return {"bound": got, "gone": gone}


def sim_steps(scenario) -> list:
    return load_scenario(copy.deepcopy(scenario)).steps if isinstance(scenario, dict) \
        else scenario.steps


def _batched(res) -> dict:
    got, gone = {}, {}
    for j, name in enumerate(res.pod_names):
        if res.node[j] >= 0:
            # a node added again under a removed name is ``<name>.<k>`` (no dots in these names)
            node = res.node_names[int(res.node[j])].split(".")[0]
            got[name] = (node, res.gpus[j], float(res.bind[j]))
        if res.why[j] == WHY_EVICTED:
            gone[name] = "Evicted"
        elif res.why[j] == WHY_DELETED:
            gone[name] = "Deleted"
        elif res.why[j] == WHY_POD_DELETED:
            gone[name] = "PodDeleted"
    return {"bound": got, "gone": gone}


def _check(nodes, pods, scenario: dict, policies, seeds, tie: bool = False):
    """Each run of ``policies`` x ``seeds`` is its Simulation's; ``tie``:
    the policies by name (the experiment's profile, OpenbTieRank but for
    Random), else ``trace.openb_config(policy)`` (GpuShareScore alone)."""
    trace = run.read_trace_file(pods)
    sc = load_scenario(scenario)
    configs = [p if tie or p == "Random" else T.openb_config(p) for p in policies]
    runs = ts.simulate_batch(nodes, [pods], configs, seeds, scenario=scenario, workers=1)
    assert [(r.cluster, r.trace, r.config, r.seed) for r in runs] == [
        (0, 0, k, s) for k in range(len(policies)) for s in seeds]
    trace_names = B.trace_workload(trace).pods.names
    for r in runs:
        assert r.policy == policies[r.config]
        assert sorted(r.pod_names) == sorted(list(trace_names) + [
            o["metadata"]["name"] for st in sc.steps if st.kind == "Pod"
            and st.action == "create" for o in st.objects])
        assert _batched(r) == _simulated(nodes, trace, r.policy, r.seed, sc,
                                         tie and r.policy != "Random"), r.policy
    return runs


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 4), n_pods=st.integers(1, 25),
       generic=st.booleans())
def test_each_run_is_its_simulation_under_random_node_and_pod_steps(tmp_path, seed, n_nodes,
                                                                    n_pods, generic):
    """Random node steps (adds, some with a tie label, cordons, drains,
    removals) and, on odd seeds, Pod creates and deletes, on random CSV
    clusters and traces; two policies per example by name (the
    experiment's profile: OpenbTieRank) or by config (GpuShareScore
    alone), in turn, two seeds."""
    nodes, pods = (_write_generic if generic else _write)(tmp_path, seed, n_nodes, n_pods)
    if not B.trace_workload(run.read_trace_file(pods)).pods.gpu_total.any():
        return                                  # no GPU ask: the batched engine's input check
    scenario = _random_scenario(np.random.default_rng(seed), n_nodes, pods=seed % 2 == 1)
    try:
        _check(nodes, pods, scenario, POLICIES[seed % 3::3], [0, 1 + seed % 5],
               tie=seed % 4 < 2)
    except (BatchProfileError, ScenarioError):
        pass                                    # (the generator's rare refusals)


def test_a_removed_node_reused_row_is_named_by_the_added_node(tmp_path):
    """n1 removed at 10 with its pods, x0 added at 20 on its row: the pods
    arriving after are named on x0, the deleted ones on n1."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                                    "n0,8000,16384,1,T4\nn1,8000,16384,2,T4\n")
    (tmp_path / "p.csv").write_text(HEADER + "".join(
        f"p{k},1000,1024,1,1000,,LS,Running,{k},,{k}\n" for k in range(3)) + "".join(
        f"q{k},1000,1024,1,1000,,LS,Running,{30 + k},,{30 + k}\n" for k in range(2)))
    runs = _check(str(tmp_path / "n.csv"), str(tmp_path / "p.csv"),
                  {"steps": [{"at": 10, "removeNodes": ["n1"]},
                             {"at": 20, "create": _node("x0", 2)}]}, POLICIES, [0, 3])
    for r in runs:
        assert r.node_names == ["n0", "n1", "x0"]
        assert {r.node_names[int(r.node[j])] for j in (3, 4)} == {"x0"}
        assert int((r.why == WHY_DELETED).sum()) == 2


def test_a_node_added_again_is_named_apart(tmp_path):
    """n1 removed at 10, added again at 20 (``n1.1``): the pods arriving
    after bind on the new one, in the Simulation's row."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                                    "n0,8000,16384,1,T4\nn1,8000,16384,1,T4\n")
    (tmp_path / "p.csv").write_text(HEADER + "".join(
        f"p{k},1000,1024,1,1000,,LS,Running,{k},,{k}\n" for k in range(2)) + "".join(
        f"q{k},1000,1024,1,500,,LS,Running,{30 + k},,{30 + k}\n" for k in range(3)))
    runs = _check(str(tmp_path / "n.csv"), str(tmp_path / "p.csv"),
                  {"steps": [{"at": 10, "removeNodes": ["n1"]},
                             {"at": 20, "create": _node("n1", 2)}]}, POLICIES, [1])
    for r in runs:
        assert r.node_names == ["n0", "n1", "n1.1"]
        assert {r.node_names[int(r.node[j])] for j in (2, 3, 4)} == {"n1.1"}


def test_nodes_added_with_taints(tmp_path):
    """A NoSchedule / NoExecute tainted node takes no pod, through its
    uncordon; a PreferNoSchedule one does."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,8000,16384,1,T4\n")
    (tmp_path / "p.csv").write_text(HEADER + "".join(
        f"p{k},1000,1024,1,1000,,LS,Running,{k},,{k}\n" for k in range(4)))
    runs = _check(str(tmp_path / "n.csv"), str(tmp_path / "p.csv"),
                  {"steps": [{"at": 1, "create": _node("t0", 2, taint="NoSchedule")},
                             {"at": 1, "create": _node("t1", 2, taint="NoExecute")},
                             {"at": 5, "uncordon": ["t0", "t1"]},
                             {"at": 9, "create": _node("t2", 1, taint="PreferNoSchedule")}]},
                  POLICIES, [2])
    for r in runs:
        assert sorted(r.node_names[int(x)] for x in r.node if x >= 0) == ["n0", "t2"]


def test_a_drain_and_its_uncordon(tmp_path):
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,8000,16384,1,T4\n")
    (tmp_path / "p.csv").write_text(HEADER + "a,1000,1024,1,1000,,LS,Running,0,,0\n"
                                    "b,1000,1024,1,1000,,LS,Running,20,,20\n"
                                    "c,0,0,0,0,,LS,Running,0,50,0\n")
    runs = _check(str(tmp_path / "n.csv"), str(tmp_path / "p.csv"),
                  {"steps": [{"at": 10, "drain": "n0"}, {"at": 100, "uncordon": "n0"}]},
                  POLICIES, [0])
    for r in runs:
        assert int((r.why == WHY_EVICTED).sum()) == 2 and r.bind[2] == 100.0  # b: arrival order


def _one(tmp_path):
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,8000,16384,1,T4\n")
    (tmp_path / "p.csv").write_text(HEADER + "a,1000,1024,1,1000,,LS,Running,0,,0\n")
    return str(tmp_path / "n.csv"), str(tmp_path / "p.csv")


def test_the_experiment_profile_ranks_an_added_node_by_its_label(tmp_path):
    """Policy names are the experiment's profile (OpenbTieRank): x0 (label
    7) and x1 (no label: rank 0) join at 5, alike and empty; b (at 10)
    ties on them and takes x0 under every tie-ranked policy; n0 removed
    and added again at 20 with label 9 (``n0.1``) ranks by it."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,8000,16384,1,T4\n")
    (tmp_path / "p.csv").write_text(HEADER + "a,1000,1024,1,1000,,LS,Running,0,,0\n"
                                    "b,1000,1024,1,1000,,LS,Running,10,,10\n"
                                    "c,1000,1024,1,500,,LS,Running,30,,30\n")
    sc = {"steps": [{"at": 5, "create": _node("x1", 2)},
                    {"at": 5, "create": _node("x0", 2, tie="7")},
                    {"at": 20, "removeNodes": ["n0"]},
                    {"at": 20, "create": _node("n0", 2, tie="9")}]}
    runs = _check(str(tmp_path / "n.csv"), str(tmp_path / "p.csv"), sc, POLICIES, [0, 1, 2],
                  tie=True)
    for r in runs:
        if r.policy != "Random":
            assert [r.node_names[int(x)] for x in r.node[:2]] == ["n0", "x0"], r.policy


def test_a_rank_label_the_kernel_does_not_rank_is_refused_by_name(tmp_path):
    """An added node's tie label that is not an integer 0..2**24 - 1: a
    tie-ranked config is refused naming the step, the node and the label
    (``ScenarioError``: bad input, as the Simulation's OpenbTieRank
    refuses it); GpuShareScore alone (OpenbTieRank absent: the label
    unread) runs."""
    nodes, pods = _one(tmp_path)
    sc = {"steps": [{"at": 1, "create": _node("x0", 1, tie="high")}]}
    with pytest.raises(ScenarioError, match=r"^scenario: steps\[0\]\.create: Node x0: "
                       r"metadata\.labels\[\"openb\.tensorsched\.io/tie\"\]: .*'high'"):
        ts.simulate_batch(nodes, pods, ["Random", "FGD"], scenario=sc)
    assert ts.simulate_batch(nodes, pods, [T.openb_config("FGD"), "Random"],
                             scenario=sc)[0].scheduled == 1


def test_created_pods_bind_leave_and_are_deleted(tmp_path):
    """c0 (created at 2, 1 GPU) binds on n0's free GPU; a (trace, at 5)
    waits until c0's delete at 20 frees it (a Pod/Delete moves it); c1
    (created at 3, pending: no GPU) is deleted at 10 and never binds; c2
    (created at 40 with a 15 s duration) binds and leaves."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,8000,16384,2,T4\n")
    (tmp_path / "p.csv").write_text(HEADER + "z,1000,1024,1,1000,,LS,Running,0,,0\n"
                                    "a,1000,1024,1,1000,,LS,Running,5,,5\n")
    sc = {"steps": [{"at": 2, "create": _pod("c0")}, {"at": 3, "create": _pod("c1", 2)},
                    {"at": 10, "delete": {"kind": "Pod", "name": "c1"}},
                    {"at": 20, "delete": {"kind": "Pod", "name": "c0"}},
                    {"at": 40, "create": _pod("c2", 1, 500), "duration": 15}]}
    for tie in (False, True):
        runs = _check(str(tmp_path / "n.csv"), str(tmp_path / "p.csv"), sc, POLICIES, [0, 5],
                      tie=tie)
        for r in runs:
            assert r.pod_names == ["z", "c0", "c1", "a", "c2"]
            assert r.bind[1] == 2.0 and r.bind[3] == 20.0 and r.node[2] < 0
            assert r.why.tolist() == [0, WHY_POD_DELETED, WHY_POD_DELETED, 0, 0]
            used, _frag = r.at([1e12])
            assert used[0] == 2000          # z and a; c2 left at 55


def test_refused_pod_steps_name_their_field(tmp_path):
    nodes, pods = _one(tmp_path)
    bad = [_pod("x"), _pod("y"), _pod("z"), _pod("a")]
    bad[0]["metadata"]["namespace"] = "other"
    bad[1]["spec"]["tolerations"] = [{"operator": "Exists"}]
    bad[2]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    for o in bad:
        with pytest.raises(BatchProfileError, match=r"^scenario: steps\[0\]\.create \(create "
                                                    r"Pod\)"):
            ts.simulate_batch(nodes, pods, ["FGD"], scenario={"steps": [{"at": 1, "create": o}]})
    # a pod deleted and created again (its first lifetime's departure must not
    # end the second: the per-run Simulation's rule) is refused by name
    again = [{"at": 1, "create": _pod("d"), "duration": 50},
             {"at": 10, "delete": {"kind": "Pod", "name": "d"}},
             {"at": 20, "create": _pod("d")}]
    with pytest.raises(BatchProfileError, match=r"^scenario: steps\[2\]\.create \(create "
                                                r"Pod\): pod default/d named as another pod "
                                                r"\(or created again\)"):
        ts.simulate_batch(nodes, pods, ["FGD"], scenario={"steps": again})
    # (a delete after the pod may have left runs: its run raises the
    # Simulation's error where it had: test_openb_preempt_deletes)
    # a trace pod is not submitted when the Simulation takes the scenario:
    # its NotFound, bad input
    with pytest.raises(ScenarioError, match=r"^scenario: steps\[0\]\.delete: pod "
                                            r"default/a not found"):
        ts.simulate_batch(nodes, pods, ["FGD"], scenario={"steps": [
            {"at": 5, "delete": {"kind": "Pod", "name": "a"}}]})


def test_refusals_name_the_input(tmp_path):
    nodes, pods = _one(tmp_path)
    cfg = T.openb_config("FGD")
    with pytest.raises(ScenarioError, match=r"^scenario: steps\[0\]\.cordon: node 'x' is not "
                                            r"in the cluster"):
        ts.simulate_batch(nodes, pods, [cfg], scenario={"steps": [{"at": 1, "cordon": "x"}]})
    with pytest.raises(ArgumentError, match=r"traces\[0\]"):
        ts.simulate_batch(nodes, [B.trace_workload(run.read_trace_file(pods))], [cfg],
                          scenario={"steps": [{"at": 1, "cordon": "n0"}]})
    with pytest.raises(ArgumentError, match="backend"):
        ts.simulate_batch(nodes, pods, [cfg], backend="numpy",
                          scenario={"steps": [{"at": 1, "cordon": "n0"}]})


def test_scenario_by_path_and_object_give_the_same_runs(tmp_path):
    nodes, pods = _one(tmp_path)
    steps = {"steps": [{"at": 1, "create": _node("x0", 2)}, {"at": 2, "drain": "n0"}]}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(steps))
    cfg = T.openb_config("BestFit")
    a = batch_facade.simulate_batch(nodes, pods, [cfg], scenario=str(path))[0]
    b = batch_facade.simulate_batch(nodes, pods, [cfg], scenario=load_scenario(steps))[0]
    assert a.node.tolist() == b.node.tolist() and a.log_t.tolist() == b.log_t.tolist()
    assert a.node_names[int(a.node[0])] == "n0" and a.why[0] == WHY_EVICTED


@pytest.mark.cudasim
@needs_cuda
def test_cuda_form_equals_the_twin_with_no_node_left_taints_and_a_name_added_again(tmp_path):
    """The cases this form added to the node events, a created pod deleted
    and the experiment's profile (BestFit by name: OpenbTieRank), on the
    device (the simulator) and the twin: the same runs."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,8000,16384,1,T4\n")
    (tmp_path / "p.csv").write_text(HEADER + "".join(
        f"p{k},1000,1024,1,{500 + 250 * (k % 3)},,LS,Running,{4 * k},{4 * k + 9},{4 * k}\n"
        for k in range(6)))
    sc = {"steps": [{"at": 5, "removeNodes": ["n0"]},
                    {"at": 9, "create": _node("t0", 2, taint="NoSchedule")},
                    {"at": 13, "create": _node("n0", 2, tie="4")}, {"at": 14, "uncordon": "t0"},
                    {"at": 14, "create": _pod("c0", 1, 500)},
                    {"at": 20, "delete": {"kind": "Pod", "name": "c0"}}]}
    cfg = T.openb_config("FGD")
    twin, dev = (ts.simulate_batch(str(tmp_path / "n.csv"), str(tmp_path / "p.csv"),
                                   [cfg, "Random", "BestFit"], [0, 1], backend=b, scenario=sc)
                 for b in ("numba", "cuda"))
    assert any(r.scheduled for r in twin)
    for x, y in zip(twin, dev):
        assert x.node.tolist() == y.node.tolist() and x.gpus == y.gpus
        assert x.log_t.tolist() == y.log_t.tolist() and x.log_pod.tolist() == y.log_pod.tolist()
        assert x.log_frag.tolist() == y.log_frag.tolist() and x.why.tolist() == y.why.tolist()
