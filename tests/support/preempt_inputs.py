"""Random small inputs of sweeps where pods preempt (the node-local trace
kernel's DefaultPreemption tests): a manifest cluster (tainted and
unschedulable nodes, bound pods of priorities 0, 10 and 5000,
pending pods of priorities 0, 10 and 1000, some with preemptionPolicy
Never; PodDisruptionBudgets over their labels), a generic trace CSV with
priorities (the later half more often high: they arrive when the cluster
is full; departures at a time or a duration after the binding) and three configurations (NodeResourcesFit's
strategies, scores, percentageOfNodesToScore, DefaultPreemption's
minCandidateNodesPercentage / minCandidateNodesAbsolute)."""

from __future__ import annotations

import numpy as np
import yaml

from tensorsched.generators.clusters import node_dict, pod_dict

from .local_clusters import config

API = "kubescheduler.config.k8s.io/v1"


def _cluster(rng, n_nodes: int, n_bound: int) -> list:
    objs = []
    for i in range(n_nodes):
        objs.append(node_dict(
            f"n{i}", cpu=str(rng.choice(["1", "2", "4"])), memory=str(rng.choice(["2Gi", "4Gi"])),
            pods=str(int(rng.integers(2, 6))), labels={"zone": str(rng.choice(["a", "b"]))},
            taints=[{"key": "spot", "effect": str(rng.choice(["PreferNoSchedule", "NoSchedule"]))}]
            if i and rng.random() < 0.3 else None, unschedulable=bool(i and rng.random() < 0.15)))
    for k in range(n_bound):
        # possible victims too, or above every queued pod
        p = pod_dict(f"b{k}", cpu=str(rng.choice(["100m", "500m", "1"])), memory="256Mi",
                     priority=int(rng.choice([0, 10, 5000])),
                     labels={"app": str(rng.choice(["a", "b"]))})
        p["spec"]["nodeName"] = f"n{int(rng.integers(n_nodes))}"
        objs.append(p)
    for k in range(int(rng.integers(0, 4))):
        spec = {"preemptionPolicy": "Never"} if rng.random() < 0.4 else {}
        objs.append(pod_dict(f"w{k}", cpu=str(rng.choice(["300m", "1"])), memory="512Mi",
                             priority=int(rng.choice([0, 10, 1000])), spec=spec,
                             labels={"app": str(rng.choice(["a", "b"]))}))
    for k in range(int(rng.choice([0, 0, 1, 2]))):
        objs.append(_pdb(rng, k, n_bound))
    return objs


def _pdb(rng, k: int, n_bound: int) -> dict:
    """A PodDisruptionBudget over app a or b: minAvailable or maxUnavailable
    as a count or a percentage, or neither; sometimes a status with
    disruptionsAllowed and a disrupted bound pod."""
    spec = {"selector": {"matchLabels": {"app": str(rng.choice(["a", "b"]))}}}
    field = str(rng.choice(["minAvailable", "maxUnavailable", "none"]))
    if field != "none":
        spec[field] = (f"{int(rng.choice([0, 34, 50, 100]))}%" if rng.random() < 0.4
                       else int(rng.integers(0, 3)))
    obj = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": f"pdb{k}", "namespace": "default"}, "spec": spec}
    status = {}
    if rng.random() < 0.3:
        status["disruptionsAllowed"] = int(rng.integers(0, 3))
    if n_bound and rng.random() < 0.3:
        status["disruptedPods"] = {f"b{int(rng.integers(n_bound))}": "2026-01-01T00:00:00Z"}
    if status:
        obj["status"] = status
    return obj


def _trace(rng, n_pods: int) -> str:
    lines = ["name,arrival,departure,duration,cpu,memory,priority"]
    t = 0
    for j in range(n_pods):
        t += int(rng.choice([0, 0, 1, 3, 30, 400]))
        stay = int(rng.choice([-1, -1, 0, 2, 50, 700]))
        timed = stay >= 0 and rng.random() < 0.5
        dep = "" if stay < 0 or timed else str(t + stay)
        dur = str(stay) if timed else ""
        # later pods of higher priority: they arrive when the cluster is full
        prio = int(rng.choice([0, 0, 10, 1000] if j < n_pods // 2 else [0, 10, 1000, 1000]))
        lines.append(f"p{j},{t},{dep},{dur},{rng.choice(['100m', '500m', '1', '2'])},"
                     f"{rng.choice(['256Mi', '1Gi'])},{prio}")
    return "\n".join(lines) + "\n"


def _configs(rng, tmp) -> list[str]:
    paths = []
    for k in range(3):
        cfg = config(k, False, pct=int(rng.choice([100, 50])))
        cfg["profiles"][0]["pluginConfig"].append({"name": "DefaultPreemption", "args": {
            "apiVersion": API, "kind": "DefaultPreemptionArgs",
            "minCandidateNodesPercentage": int(rng.choice([0, 10, 50])),
            "minCandidateNodesAbsolute": int(rng.choice([1, 2, 100]))}})
        if rng.random() < 0.5:
            cfg["profiles"][0]["plugins"] = {"score": {"enabled": [
                {"name": "NodeResourcesBalancedAllocation", "weight": int(rng.integers(1, 4))},
                {"name": "TaintToleration", "weight": int(rng.integers(1, 4))}]}}
        path = tmp / f"cfg{k}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        paths.append(str(path))
    return paths


def write_inputs(tmp, seed: int, n_nodes: int, n_pods: int, n_bound: int) -> tuple:
    rng = np.random.default_rng(seed)
    cluster = tmp / f"cluster{seed}.yaml"
    cluster.write_text(yaml.safe_dump_all(_cluster(rng, n_nodes, n_bound)))
    trace = tmp / f"trace{seed}.csv"
    trace.write_text(_trace(rng, n_pods))
    return str(cluster), str(trace), _configs(rng, tmp)
