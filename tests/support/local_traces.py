"""Random small inputs of a default-profile sweep for the node-local
trace kernel's tests: a manifest cluster (taints, unschedulable nodes but
the first, labels, images, bound and pending pods), a generic trace CSV
(arrivals apart and together from time 1, departures at a time or after
a duration, pods too big to fit) and three configurations (the three NodeResourcesFit strategies,
BalancedAllocation's resources, score weights,
percentageOfNodesToScore)."""

from __future__ import annotations

import numpy as np
import yaml

from tensorsched.generators.clusters import node_dict, pod_dict

from .local_clusters import IMAGES, config


def _cluster(rng, n_nodes: int, bound: int) -> list:
    objs = []
    for i in range(n_nodes):
        objs.append(node_dict(
            f"n{i}", cpu=str(rng.choice(["1", "2", "4"])), memory=str(rng.choice(["2Gi", "4Gi"])),
            pods=str(int(rng.integers(2, 7))), labels={"zone": str(rng.choice(["a", "b"]))},
            taints=[{"key": "spot", "effect": str(rng.choice(["PreferNoSchedule", "NoSchedule"]))}]
            if i and rng.random() < 0.4 else None, unschedulable=bool(i and rng.random() < 0.15),
            images=[{"names": [IMAGES[0]], "sizeBytes": 300 << 20}] if rng.random() < 0.4
            else None))
    for k in range(bound):
        p = pod_dict(f"b{k}", cpu="100m", memory="256Mi")
        p["spec"]["nodeName"] = f"n{int(rng.integers(n_nodes))}"
        objs.append(p)
    # pending pods of the manifests (they arrive at time 0, the trace later)
    for k in range(int(rng.integers(0, 3))):
        objs.append(pod_dict(f"w{k}", cpu=str(rng.choice(["300m", "1"])), memory="512Mi"))
    return objs


def _trace(rng, n_pods: int, durations: bool = False, priorities: bool = False) -> str:
    lines = ["name,arrival,departure,cpu,memory" + (",duration" if durations else "")
             + (",priority" if priorities else "")]
    t = 0 if priorities else 1
    for j in range(n_pods):
        t += int(rng.choice([0, 0, 1, 5, 30, 400]))
        stay = int(rng.choice([-1, -1, 0, 2, 50, 700]))
        dep = "" if stay < 0 else str(t + stay)
        row = (f"p{j},{t},{dep},{rng.choice(['100m', '500m', '1', '3'])},"
               f"{rng.choice(['256Mi', '1Gi', '3Gi'])}")
        if durations:
            # about half of the leaving pods leave ``stay`` seconds after binding
            timed = stay >= 0 and rng.random() < 0.5
            row = (f"p{j},{t},{'' if timed else dep},{row.split(',', 3)[3]},"
                   f"{stay if timed else ''}")
        if priorities:
            row += f",{rng.choice([0, 0, 10, 1000])}"
        lines.append(row)
    return "\n".join(lines) + "\n"


def _configs(rng, tmp, preemption: bool = True) -> list[str]:
    paths = []
    for k in range(3):
        cfg = config(k, bool(rng.integers(2)), pct=int(rng.choice([100, 50])))
        if rng.random() < 0.5:
            cfg["profiles"][0]["plugins"] = {"score": {"enabled": [
                {"name": "NodeResourcesBalancedAllocation", "weight": int(rng.integers(1, 4))},
                {"name": "TaintToleration", "weight": int(rng.integers(1, 4))}]}}
        if not preemption:
            cfg["profiles"][0].setdefault("plugins", {})["postFilter"] = {
                "disabled": [{"name": "DefaultPreemption"}]}
        path = tmp / f"cfg{k}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        paths.append(str(path))
    return paths


def write_inputs(tmp, seed: int, n_nodes: int, n_pods: int, bound: int = 0,
                 durations: bool = False, priorities: bool = False) -> tuple:
    """The cluster, trace and configuration paths; ``durations``: some
    leaving pods leave a ``duration`` after their binding instead;
    ``priorities``: the trace's pods have priorities 0, 10 or 1000 and
    arrive from time 0 (with the manifests' pending pods, created before
    them), the configurations without DefaultPreemption."""
    rng = np.random.default_rng(seed)
    cluster = tmp / f"cluster{seed}.yaml"
    cluster.write_text(yaml.safe_dump_all(_cluster(rng, n_nodes, bound)))
    trace = tmp / f"trace{seed}.csv"
    trace.write_text(_trace(rng, n_pods, durations, priorities))
    return str(cluster), str(trace), _configs(rng, tmp, not priorities)
