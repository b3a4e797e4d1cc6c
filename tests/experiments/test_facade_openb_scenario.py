"""``ts.simulate_batch`` on openb nodes with a scenario of node steps
(``experiments.batch_facade``): every run's placements (node by name), GPU
indices, binding times, evictions and removals are its own Simulation's
given the scenario; the configs, traces and steps the node-event engine
does not cover are refused by name before any run."""
import copy

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda
from test_sweep_batch import HEADER, _write, _write_generic
from test_sweep_openb_events import _node, _random_scenario

import tensorsched as ts
from tensorsched.experiments import batch_facade
from tensorsched.experiments import simulate_run as run
from tensorsched.framework.errors import ArgumentError
from tensorsched.framework.simulation.scenario import load_scenario
from tensorsched.kernels.batch.openb_events import WHY_DELETED, WHY_EVICTED
from tensorsched.topology.gpu_table import GpuTable
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import trace as T
from tensorsched.topology.openb.batch_sim import BatchProfileError

POLICIES = ("FGD", "Random", "BestFit", "DotProd", "GpuPacking", "GpuClustering")


def _simulated(nodes: str, trace, policy: str, seed: int, scenario) -> dict:
    """The Simulation's outcome per pod name: (node, GPU indices, binding
    time) when bound, and how it left with its node."""
    tw = B.trace_workload(trace)
    typical = T.typical_of(tw.pods)
    sim = run.build_simulation(run.cluster_objects(nodes=nodes), T.openb_config(policy, typical),
                               "numba", seed, interval=60.0, typical=typical)
    sim.scenario(copy.deepcopy(scenario))
    got, gone = {}, {}

    def bound(e):
        gt = GpuTable.attached(sim.cluster.state)
        al = gt.alloc.get(e["pod"]) if gt is not None else None
        got[e["pod"].split("/", 1)[1]] = (e["node"], tuple(al.indices) if al is not None
                                          and al.indices else (), float(e["time"]))

    def left(e):
        if "node" in str(e.get("message", "")):         # with its node, not its own deletion
            gone[e["pod"].split("/", 1)[1]] = e["event"]
    sim.on("Bound", bound)
    sim.on("Evicted", left)
    sim.on("Deleted", left)
    sim.submit(trace)
    sim.run()
    return {"bound": got, "gone": gone}


def _batched(res, names) -> dict:
    got, gone = {}, {}
    for j, name in enumerate(names):
        if res.node[j] >= 0:
            # a node added again under a removed name is ``<name>.<k>`` (no dots in these names)
            node = res.node_names[int(res.node[j])].split(".")[0]
            got[name] = (node, res.gpus[j], float(res.bind[j]))
        if res.why[j] == WHY_EVICTED:
            gone[name] = "Evicted"
        elif res.why[j] == WHY_DELETED:
            gone[name] = "Deleted"
    return {"bound": got, "gone": gone}


def _check(nodes, pods, scenario: dict, policies, seeds):
    trace = run.read_trace_file(pods)
    sc = load_scenario(scenario)
    configs = [T.openb_config(p) if p != "Random" else "Random" for p in policies]
    runs = ts.simulate_batch(nodes, [pods], configs, seeds, scenario=scenario, workers=1)
    assert [(r.cluster, r.trace, r.config, r.seed) for r in runs] == [
        (0, 0, k, s) for k in range(len(policies)) for s in seeds]
    names = B.trace_workload(trace).pods.names
    for r in runs:
        assert r.policy == policies[r.config]
        assert _batched(r, names) == _simulated(nodes, trace, r.policy, r.seed, sc), r.policy
        used, _frag = r.at([1e12])
        assert used[0] == sum(len(r.gpus[j]) * int(B.trace_workload(trace).pods.milli[j])
                              for j in range(len(names)) if r.node[j] >= 0
                              and r.why[j] == 0 and not _left(trace, r, j))
    return runs


def _left(trace, r, j) -> bool:
    tw = B.trace_workload(trace)
    return bool(np.isfinite(tw.departure[j]) or np.isfinite(tw.duration[j]))


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 4), n_pods=st.integers(1, 25),
       generic=st.booleans())
def test_each_run_is_its_simulation_under_random_node_steps(tmp_path, seed, n_nodes, n_pods,
                                                            generic):
    """Random node steps (adds, cordons, drains, removals) on random CSV
    clusters and traces; two policies per example, two seeds."""
    nodes, pods = (_write_generic if generic else _write)(tmp_path, seed, n_nodes, n_pods)
    if not B.trace_workload(run.read_trace_file(pods)).pods.gpu_total.any():
        return                                  # no GPU ask: the batched engine's input check
    scenario = _random_scenario(np.random.default_rng(seed), n_nodes)
    try:
        _check(nodes, pods, scenario, POLICIES[seed % 3::3], [0, 1 + seed % 5])
    except BatchProfileError:
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


def test_the_experiment_profile_with_a_scenario_is_refused_by_name(tmp_path):
    """A policy name (but Random) is the experiment's profile, OpenbTieRank
    included: refused naming the config; the same runs without a scenario
    still go to the experiment's batched kernel."""
    nodes, pods = _one(tmp_path)
    sc = {"steps": [{"at": 5, "cordon": "n0"}]}
    with pytest.raises(BatchProfileError, match=r"^configs\[1\]: OpenbTieRank"):
        ts.simulate_batch(nodes, pods, ["Random", "FGD"], scenario=sc)
    with pytest.raises(BatchProfileError, match=r"^configs\[0\]: OpenbTieRank"):
        ts.simulate_batch(nodes, pods, scenario=sc)
    assert ts.simulate_batch(nodes, pods, ["FGD"])[0].scheduled == 1


def test_refusals_name_the_input(tmp_path):
    nodes, pods = _one(tmp_path)
    cfg = T.openb_config("FGD")
    with pytest.raises(BatchProfileError, match=r"^scenario: steps\[0\]\.cordon"):
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
    """The cases this form added to the node events, on the device (the
    simulator) and the twin: the same runs."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,8000,16384,1,T4\n")
    (tmp_path / "p.csv").write_text(HEADER + "".join(
        f"p{k},1000,1024,1,{500 + 250 * (k % 3)},,LS,Running,{4 * k},{4 * k + 9},{4 * k}\n"
        for k in range(6)))
    sc = {"steps": [{"at": 5, "removeNodes": ["n0"]},
                    {"at": 9, "create": _node("t0", 2, taint="NoSchedule")},
                    {"at": 13, "create": _node("n0", 2)}, {"at": 14, "uncordon": "t0"}]}
    cfg = T.openb_config("FGD")
    twin, dev = (ts.simulate_batch(str(tmp_path / "n.csv"), str(tmp_path / "p.csv"),
                                   [cfg, "Random"], [0, 1], backend=b, scenario=sc)
                 for b in ("numba", "cuda"))
    assert any(r.scheduled for r in twin)
    for x, y in zip(twin, dev):
        assert x.node.tolist() == y.node.tolist() and x.gpus == y.gpus
        assert x.log_t.tolist() == y.log_t.tolist() and x.log_pod.tolist() == y.log_pod.tolist()
        assert x.log_frag.tolist() == y.log_frag.tolist() and x.why.tolist() == y.why.tolist()
