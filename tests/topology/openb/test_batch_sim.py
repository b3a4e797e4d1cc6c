"""``ts.simulate_batch``: the product of clusters, traces, configs and
seeds in one batched call, each run its Simulation's (bindings and
departures in order, nodes, GPUs, curves), a config with other score
weights included; a profile the kernel does not cover is refused naming
the plugin or field, before any run."""
import copy

import numpy as np
import pytest
from support.openb import openb_slice, simulate_trace

import tensorsched as ts
from tensorsched.framework.errors import ArgumentError
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import batch_sim as BS
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb import trace as T


def _weighted() -> dict:
    cfg = T.openb_config("BestFit", None, 3)
    cfg["profiles"][0]["plugins"]["score"]["enabled"][1]["weight"] = 2
    return cfg


def test_simulate_batch_runs_equal_their_simulations(tmp_path):
    nodes, pods = openb_slice(tmp_path, "default", 8, 60, leave_every=2)
    configs = ["FGD", "Random", _weighted()]
    runs = ts.simulate_batch(nodes, pods, configs, seeds=[4, 9], workers=1)
    assert [(r.cluster, r.trace, r.config, r.seed) for r in runs] == [
        (0, 0, k, s) for k in range(3) for s in (4, 9)]
    inv = R.read_openb_nodes(nodes)
    tw = B.trace_workload(T.read_openb_trace(pods))
    assert np.isfinite(tw.departure).any() and not np.isfinite(tw.departure).all()
    for res in runs:
        cfg = configs[res.config]
        _sim, log, gpus = simulate_trace(inv, tw, res.policy, res.seed,
                                         config=cfg if isinstance(cfg, dict) else None)
        assert [(t, p) for t, p, _n in log] == list(zip(res.log_t.tolist(),
                                                        res.log_pod.tolist())), res.policy
        assert {p: nd for _t, p, nd in log if p >= 0} == {
            j: int(nd) for j, nd in enumerate(res.node) if nd >= 0}
        assert all(gpus[f"default/{tw.pods.names[j]}"] == res.gpus[j]
                   for j in np.flatnonzero(res.node >= 0))
    assert runs[4].policy == "BestFit"
    res = runs[0]
    used, frag = res.at([-1.0, 1e12])
    assert used[0] == 0.0 and frag[0] == res.frag0
    stay = [j for j in np.flatnonzero(res.node >= 0) if not np.isfinite(tw.departure[j])]
    assert used[1] == sum(len(res.gpus[j]) * tw.pods.milli[j] for j in stay) > 0


def test_a_generic_trace_with_durations_equals_its_simulations(tmp_path):
    """A generic trace file (``read_trace``: pods leaving at a time or a
    duration after their binding) by path and as a Trace: each run is its
    Simulation's; a column the kernel does not take is refused by name."""
    nodes, pods = openb_slice(tmp_path, "default", 6, 40)
    tw = B.trace_workload(T.read_openb_trace(pods))
    arrival = np.floor(tw.arrival / 20000.0)
    stay = np.floor((tw.departure - tw.arrival) / 20000.0)
    rows = ["name,arrival,departure,duration,cpu,memory,annotations"]
    for j, name in enumerate(tw.pods.names):
        dep = f"{arrival[j] + stay[j]:g}" if j % 3 == 0 and np.isfinite(stay[j]) else ""
        dur = f"{stay[j]:g}" if j % 3 == 1 and np.isfinite(stay[j]) else ""
        num, milli = int(tw.pods.num[j]), int(tw.pods.milli[j])
        anno = f'"alibabacloud.com/gpu-milli={milli};alibabacloud.com/gpu-count={num}"' \
            if num and milli else ""
        rows.append(f"{name},{arrival[j]:g},{dep},{dur},{int(tw.pods.cpu[j])}m,"
                    f"{int(tw.pods.mem[j])}Mi,{anno}")
    path = tmp_path / "generic.csv"
    path.write_text("\n".join(rows) + "\n")
    runs = ts.simulate_batch(nodes, [str(path), ts.read_trace(str(path))], ["FGD", "BestFit"],
                             seeds=[2], workers=1)
    got = B.trace_workload(ts.read_trace(str(path)))
    assert np.isfinite(got.duration).any() and np.isfinite(got.departure).any()
    inv = R.read_openb_nodes(nodes)
    for res in runs:
        _sim, log, _gpus = simulate_trace(inv, got, res.policy, res.seed)
        assert [(t, p) for t, p, _n in log] == list(zip(res.log_t.tolist(),
                                                        res.log_pod.tolist())), res.policy
    assert any((r.tries > 1).any() for r in runs)
    timed = np.isfinite(got.duration) & (runs[0].node >= 0)
    assert timed.any() and set((-1 - np.flatnonzero(timed)).tolist()) <= set(
        runs[0].log_pod.tolist())
    (tmp_path / "ns.csv").write_text("name,arrival,duration,cpu,memory,namespace\n"
                                     "a,0,5,1,1Mi,x\n")
    with pytest.raises(BS.BatchInputError, match="column 'namespace'"):
        ts.simulate_batch(nodes, str(tmp_path / "ns.csv"))


def _config_with(**change) -> dict:
    cfg = copy.deepcopy(T.openb_config("FGD", None, 9))
    prof = cfg["profiles"][0]
    for point, plugins in change.items():
        prof["plugins"].setdefault(point, {}).setdefault("enabled", []).extend(plugins)
    return cfg


@pytest.mark.parametrize("config, match", [
    (_config_with(score=[{"name": "NodeResourcesBalancedAllocation", "weight": 1}]),
     "plugin NodeResourcesBalancedAllocation at score is not covered"),
    (_config_with(postFilter=[{"name": "Coscheduling"}]),
     "plugin Coscheduling at postFilter is not covered"),
    ({**T.openb_config("FGD"), "percentageOfNodesToScore": 50}, "percentageOfNodesToScore 50"),
    (T.openb_config("FGD", [{"cpu": 1, "gpuCount": 1, "gpuMilli": 500}]), "typicalPods given"),
])
def test_uncovered_profiles_are_refused_naming_the_plugin(tmp_path, config, match):
    nodes, pods = openb_slice(tmp_path, "default", 4, 10)
    with pytest.raises(BS.BatchProfileError, match=match):
        ts.simulate_batch(nodes, pods, ["FGD", config])


def test_bad_arguments_are_refused(tmp_path):
    nodes, pods = openb_slice(tmp_path, "default", 4, 10)
    with pytest.raises(ArgumentError, match="backend"):
        ts.simulate_batch(nodes, pods, backend="numpy")
    with pytest.raises(ArgumentError, match=r"configs\[0\]"):
        ts.simulate_batch(nodes, pods, ["Best"])
    with pytest.raises(ArgumentError, match=r"nodes\[0\]"):
        ts.simulate_batch(42, pods)
    with pytest.raises(ArgumentError, match="seeds"):
        ts.simulate_batch(nodes, pods, seeds=[])
