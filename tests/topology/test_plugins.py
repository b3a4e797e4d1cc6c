"""GPU plugins in scheduler profiles: GpuShareFit (filter, reserve),
GpuShareScore (the six openb policies), GpuTopologyScore; the GPU table
following the state; explain / schedule reporting; bench --workload gpu."""
import json

import numpy as np
import pytest
import yaml

from tensorsched.bench.workloads import run_workload
from tensorsched.cli import main
from tensorsched.framework.config.kube_config import DEFAULT_PLUGINS
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.plugins import default_registry, in_tree_registry
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.kernels.fused.ties import draw_index
from tensorsched.kernels.gpu import share as K
from tensorsched.topology.gpu_table import GpuTable, binding_gpus
from tensorsched.topology.plugins import GPU_PLUGINS
from tensorsched.generators.gpu_clusters import gpu_config, gpu_node

BACKENDS = ["numpy", "numba"]


def cfg(policy="FGD", topology=True, args=None):
    score = [{"name": "GpuShareScore"}] + ([{"name": "GpuTopologyScore"}] if topology else [])
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler", "plugins": {
                "filter": {"enabled": [{"name": "GpuShareFit"}]},
                "reserve": {"enabled": [{"name": "GpuShareFit"}]},
                "score": {"enabled": score}},
                "pluginConfig": [{"name": "GpuShareScore",
                                  "args": {"policy": policy, **(args or {})}}]}]}


def share(name, milli, cpu="1", created=0, model=None):
    p = pod_dict(name, cpu=cpu, memory="1Gi", created=created)
    p["metadata"]["annotations"] = {"alibabacloud.com/gpu-milli": str(milli)}
    if model:
        p["metadata"]["annotations"]["alibabacloud.com/gpu-card-model"] = model
    return p


def whole(name, n, created=0, place=None, node=None):
    p = pod_dict(name, cpu="2", memory="2Gi", created=created, extra={"nvidia.com/gpu": str(n)})
    if place:
        p["metadata"]["annotations"] = {"topology.tensorsched.io/gpu-placement": place}
    if node:
        p["spec"]["nodeName"] = node
    return p


def test_registered_but_not_default():
    reg = default_registry()
    for name in GPU_PLUGINS:
        assert name in reg and name not in in_tree_registry()
    assert not set(GPU_PLUGINS) & {n for n, _ in DEFAULT_PLUGINS}


@pytest.mark.parametrize("backend", BACKENDS)
def test_explain_unchanged_without_gpu_plugins(backend):
    cl = build_cluster([gpu_node("a")], None)
    out = explain_pod(cl, whole("p", 2), backend=backend)
    assert "gpus" not in out and out["selected"] == "a"


def openb_whole(name, n, created=0):
    p = pod_dict(name, cpu="2", memory="2Gi", created=created)
    p["metadata"]["annotations"] = {"alibabacloud.com/gpu-milli": "1000",
                                    "alibabacloud.com/gpu-count": str(n)}
    return p


@pytest.mark.parametrize("backend", BACKENDS)
def test_filter_reasons_and_gpus_field(backend):
    nodes = [gpu_node("dgx"), node_dict("cpu-only", cpu="64", memory="256Gi"),
             node_dict("v100", cpu="64", memory="256Gi", extra={"nvidia.com/gpu": "2"},
                       labels={"nvidia.com/gpu.product": "V100"})]
    # shares on GPUs 0..6 of dgx (not counted by NodeResourcesFit: annotations only)
    busy = [dict(share(f"b{i}", 100), spec=dict(share(f"b{i}", 100)["spec"], nodeName="dgx"))
            for i in range(7)]
    cl = build_cluster(nodes + busy, cfg())
    t = GpuTable.of(cl.state)
    assert sorted(a.indices[0] for a in t.alloc.values()) == [0, 0, 0, 0, 0, 0, 0]
    # spread them over GPUs 0..6 by hand
    row = cl.state.node_rows["dgx"]
    for i in range(7):
        key = f"default/b{i}"
        info = t.pod_info(cl.state.pods[key].record)
        t.release(key)
        t.apply(key, row, info, 0, (i,), -1)
    out = explain_pod(cl, openb_whole("p", 2), backend=backend)
    assert out["filter"]["cpu-only"]["reasons"] == ["node(s) had no GPUs"]
    assert out["filter"]["dgx"] == {"code": "Unschedulable", "plugin": "GpuShareFit",
                                    "reasons": ["node(s) didn't have 2 free GPU(s)"]}
    assert out["selected"] == "v100"
    assert out["gpus"] == {"node": "v100", "indices": [0, 1], "milli": 1000}
    out = explain_pod(cl, share("s", 300, model="A100"), backend=backend)
    assert out["filter"]["v100"]["reasons"] == ["node(s) had no GPU of an allowed model"]
    assert out["gpus"]["node"] == "dgx" and out["gpus"]["milli"] == 300
    out = explain_pod(cl, share("s", 950), backend=backend)
    assert "dgx" not in out["filter"]          # GPU 7 is still whole
    out = explain_pod(cl, pod_dict("cpu"), backend=backend)
    assert out["gpus"] is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_island_and_numa_filter(backend):
    # dgx: GPUs 0-3 island 0 / NUMA 0, 4-7 island 1 / NUMA 1; take 1 and 5
    busy = [whole("b1", 1, node="dgx"), whole("b2", 1, node="dgx")]
    cl = build_cluster([gpu_node("dgx")] + busy, cfg())
    t = GpuTable.of(cl.state)
    t.release("default/b1")
    t.release("default/b2")
    row = cl.state.node_rows["dgx"]
    info = t.pod_info(cl.state.pods["default/b1"].record)
    t.apply("default/b1", row, info, 0, (1,), -1)
    t.apply("default/b2", row, info, 0, (5,), -1)
    out = explain_pod(cl, whole("p", 4, place="nvlink-island"), backend=backend)
    assert out["filter"]["dgx"]["reasons"] == [
        "node(s) couldn't fit the pod's GPUs in one NVLink island"]
    out = explain_pod(cl, whole("p", 3, place="nvlink-island"), backend=backend)
    assert out["gpus"]["indices"] == [0, 2, 3]
    # a pod asking 60 cpu on one NUMA node (64 each) fits; 70 does not
    p = whole("q", 2, place="single-numa-node")
    p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "60"
    assert explain_pod(cl, p, backend=backend)["selected"] == "dgx"
    p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "70"
    out = explain_pod(cl, p, backend=backend)
    assert out["filter"]["dgx"]["reasons"] == [
        "node(s) couldn't align the pod's GPUs, CPU and memory on a single NUMA node"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_topology_score_prefers_tightest(backend):
    from tensorsched.topology.node_topology import ANNO_NODE_TOPOLOGY
    # a: GPUs 2 and 6 used -> no island nor NUMA node has 4 free: 0
    # b: fresh DGX -> one island: 100
    # c: islands of 2, NUMA nodes of 4 -> 4 GPUs at best on one NUMA node: 50
    c = gpu_node("c")
    c["metadata"]["annotations"][ANNO_NODE_TOPOLOGY] = json.dumps(
        {"islands": [0, 0, 1, 1, 2, 2, 3, 3], "numa": [0, 0, 0, 0, 1, 1, 1, 1]})
    nodes = [gpu_node("a"), gpu_node("b"), c]
    cl = build_cluster(nodes + [whole("x", 1, node="a"), whole("y", 1, node="a")],
                       cfg(policy="Random"))
    t = GpuTable.of(cl.state)
    row = cl.state.node_rows["a"]
    for key, g in (("default/x", 2), ("default/y", 6)):
        info = t.pod_info(cl.state.pods[key].record)
        t.release(key)
        t.apply(key, row, info, 0, (g,), -1)
    out = explain_pod(cl, whole("p", 4), backend=backend)
    assert {n: s["GpuTopologyScore"] for n, s in out["scores"].items()} == {"a": 0, "b": 100,
                                                                           "c": 50}
    assert out["selected"] == "b"
    assert out["gpus"]["indices"] == [0, 1, 2, 3]
    # pods with fewer than 2 whole GPUs skip it
    out = explain_pod(cl, whole("p1", 1), backend=backend)
    assert "GpuTopologyScore" not in out["scores"]["a"]


@pytest.mark.parametrize("policy", list(K.POLICIES))
def test_policies_numpy_numba_same_placements(policy):
    rng = np.random.default_rng(3)
    nodes = [node_dict(f"n{i}", cpu="32", memory="128Gi",
                       extra={"nvidia.com/gpu": str(int(rng.choice([2, 4, 8])))},
                       labels={"nvidia.com/gpu.product": str(rng.choice(["A10", "T4"]))})
             for i in range(12)]
    pods = []
    for j in range(60):
        if rng.random() < 0.5:
            pods.append(share(f"s{j}", int(rng.choice([100, 250, 500, 900])), created=j,
                              cpu=str(int(rng.integers(1, 6)))))
        else:
            pods.append(whole(f"w{j}", int(rng.choice([1, 1, 2, 4])), created=j))
    res = []
    for backend in BACKENDS:
        cl = build_cluster(nodes + pods, cfg(policy=policy, topology=False))
        bs = Scheduler(cl, backend, 11).run(cl.pending)
        GpuTable.of(cl.state).check()
        res.append(([(b.pod, b.node) for b in bs], binding_gpus(cl.state)))
    assert res[0] == res[1]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("batch", [True, False])
def test_random_takes_its_seeded_draw_among_the_feasible_nodes(backend, batch):
    # Random (the openb simulator's RandomScore) picks one feasible node
    # uniformly at random per pod: the draw_index(seed, attempt)-th feasible
    # node in evaluation order (fewer than 100 nodes: all, in row order),
    # whatever the tie rule would take.
    nodes = [node_dict(f"n{i}", cpu="3", memory="16Gi", extra={"nvidia.com/gpu": "1"})
             for i in range(7)]
    pods = [share(f"s{j}", 200, cpu="1", created=j) for j in range(18)]
    cl = build_cluster(nodes + pods, cfg(policy="Random", topology=False))
    got = [(b.pod, b.node) for b in Scheduler(cl, backend, 5, batch=batch).run(cl.pending)]
    left = [3] * 7
    want = []
    for attempt, j in enumerate(range(18)):
        feasible = [i for i in range(7) if left[i] > 0]
        i = feasible[draw_index(5, attempt, len(feasible))]
        left[i] -= 1
        want.append((f"default/s{j}", f"n{i}"))
    assert got == want


@pytest.mark.parametrize("backend", BACKENDS)
def test_reserve_uses_policy_rule(backend):
    # BestFit/best-fit rule: the share goes to the GPU with the least free milli that fits
    nodes = [node_dict("n", cpu="32", memory="64Gi", extra={"nvidia.com/gpu": "4"})]
    cl = build_cluster(nodes, cfg(policy="BestFit", topology=False))
    sched = Scheduler(cl, backend, 0)
    for i, m in enumerate([600, 300, 800]):
        sched.schedule_one(cl.resolve(parse_pod(share(f"s{i}", m, created=i))))
    g = binding_gpus(cl.state)
    assert g["default/s0"]["indices"] == [0]       # all free: lowest index
    assert g["default/s1"]["indices"] == [0]       # 400 left on GPU 0 fits 300
    assert g["default/s2"]["indices"] == [1]
    # FGD: Reserve's pick is the kernel's best GPU for the share
    cl = build_cluster(nodes, cfg(policy="FGD", topology=False,
                                  args={"typicalPods": [{"cpu": 1000, "gpuCount": 1,
                                                         "gpuMilli": 500, "weight": 1}]}))
    sched = Scheduler(cl, backend, 0)
    sched.schedule_one(cl.resolve(parse_pod(share("f0", 500))))
    sched.schedule_one(cl.resolve(parse_pod(share("f1", 500, created=1))))
    g = binding_gpus(cl.state)
    # the second half-GPU completes GPU 0 (no fragment left for 500-milli pods)
    assert g["default/f0"]["indices"] == g["default/f1"]["indices"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_unreserve_on_bind_failure_releases(backend):
    cl = build_cluster([gpu_node("a")], cfg())
    sched = Scheduler(cl, backend, 0, binder=lambda pod, node: False)
    b = sched.schedule_one(cl.resolve(parse_pod(whole("p", 8))))
    assert b.node is None
    t = GpuTable.of(cl.state)
    t.check()
    assert not t.alloc and (t.left[0, :8] == 1000).all()


def test_table_follows_state_bound_pods_and_node_updates():
    p = whole("pinned", 2, node="a")
    p["metadata"]["annotations"] = {"alibabacloud.com/gpu-index": "5-6"}
    cl = build_cluster([gpu_node("a"), whole("other", 1, node="a"), p], cfg())
    t = GpuTable.of(cl.state)
    assert t.alloc["default/pinned"].indices == (5, 6)
    assert t.alloc["default/other"].indices == (0,)
    # node update keeps allocations
    from tensorsched.framework.parsing.manifests import parse_node
    cl.state.update_node(parse_node(gpu_node("a")))
    t = GpuTable.of(cl.state)
    assert t.alloc["default/pinned"].indices == (5, 6)
    t.check()
    # pod removal releases only its GPUs
    cl.state.remove_pod("default/pinned")
    assert "default/pinned" not in t.alloc and t.left[0, 5] == 1000 and t.left[0, 0] == 0
    t.check()
    # node removal drops the rest
    cl.state.remove_node("a")
    t = GpuTable.of(cl.state)
    assert not t.alloc and t.count[0] == 0


def test_over_allocation_is_refused():
    # bound pods asking more GPUs than the node has: the extra one holds none
    pods = [whole(f"b{i}", 4, node="a") for i in range(3)]
    cl = build_cluster([gpu_node("a")] + pods, cfg())
    t = GpuTable.of(cl.state)
    t.check()
    held = [a for a in t.alloc.values() if a.indices]
    assert len(held) == 2 and sum(a.unplaced for a in t.alloc.values()) == 1
    assert (t.left[0, :8] == 0).all()


def test_schedule_cli_reports_gpus(tmp_path):
    nodes = [gpu_node("a")]
    pods = [whole("w", 2), pod_dict("plain"), share("s", 250, created=1)]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(nodes + pods))
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg()))
    out = tmp_path / "out.json"
    assert main(["schedule", "--cluster", str(tmp_path / "cluster.yaml"), "--config",
                 str(tmp_path / "cfg.yaml"), "--output", str(out)]) == 0
    got = {b["pod"]: b for b in json.loads(out.read_text())["bindings"]}
    assert got["default/w"]["gpus"] == [0, 1]
    assert "gpus" not in got["default/plain"]
    assert len(got["default/s"]["gpus"]) == 1


def test_schedule_cli_unchanged_without_gpu_plugins(tmp_path):
    nodes = [gpu_node("a")]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(nodes + [whole("w", 2)]))
    out = tmp_path / "out.json"
    assert main(["schedule", "--cluster", str(tmp_path / "cluster.yaml"), "--output",
                 str(out)]) == 0
    assert json.loads(out.read_text())["bindings"] == [{"pod": "default/w", "node": "a"}]


def test_bench_gpu_workload_backends_agree():
    recs = [run_workload("gpu", 60, 200, b) for b in BACKENDS]
    assert recs[0]["placements_sha256"] == recs[1]["placements_sha256"]
    assert recs[0]["gpu_placements_sha256"] == recs[1]["gpu_placements_sha256"]
    assert recs[0]["scheduled"] > 0
    basic = run_workload("basic", 10, 10, "numpy")
    assert set(basic) <= set(recs[0])


def test_gpu_config_is_valid():
    from tensorsched.framework.config.kube_config import load_config
    reg = default_registry()
    c = load_config(gpu_config(), reg.plugin_points())
    prof = c.profiles[0]
    assert "GpuShareFit" in [r.name for r in prof.plugins["reserve"]]
    assert "GpuTopologyScore" in [r.name for r in prof.plugins["preScore"]]
