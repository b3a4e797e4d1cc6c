"""Random small inputs of a default-profile sweep for the node-local
trace kernel's tests: a manifest cluster (taints, unschedulable nodes but
the first, labels, images, bound and pending pods), a generic trace CSV
(arrivals apart and together from time 1, departures at a time or after
a duration, pods too big to fit) and three configurations (the three NodeResourcesFit strategies,
BalancedAllocation's resources, score weights,
percentageOfNodesToScore); optionally bound and pending pods with
InterPodAffinity terms."""

from __future__ import annotations

import numpy as np
import yaml

from tensorsched.generators.clusters import node_dict, pod_dict

from .local_clusters import IMAGES, config


def _web_term(rng, key=None) -> dict:
    """A pod affinity term selecting app=web pods, in the owner's
    namespace, every namespace or the shop namespace by its name label."""
    term = {"topologyKey": key or str(rng.choice(["kubernetes.io/hostname", "zone"])),
            "labelSelector": {"matchLabels": {"app": "web"}}}
    ns = int(rng.integers(3))
    if ns == 1:
        term["namespaceSelector"] = {}
    elif ns == 2:
        term["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": "shop"}}
    return term


def _affinity(rng, hard_anti: bool) -> dict:
    """Terms on app=web pods: preferred affinity or anti-affinity, required
    affinity (hardPodAffinityWeight's part for the pods it selects), and,
    when ``hard_anti``, required anti-affinity per node."""
    pref = [{"weight": int(rng.integers(1, 101)), "podAffinityTerm": _web_term(rng)}]
    out: dict = {}
    kind = int(rng.integers(3))
    if kind == 0:
        out["podAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": pref}
    elif kind == 1:
        out["podAntiAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": pref}
    else:
        out["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            _web_term(rng)]}
    if hard_anti:
        out.setdefault("podAntiAffinity", {})[
            "requiredDuringSchedulingIgnoredDuringExecution"] = [
                _web_term(rng, "kubernetes.io/hostname")]
    return out


def _cluster(rng, n_nodes: int, bound: int, affinity: bool = False) -> list:
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
        if affinity:
            # the first node stays open to web pods (no required anti-affinity)
            node = int(rng.integers(n_nodes))
            p = pod_dict(f"b{k}", namespace=str(rng.choice(["default", "shop"])), cpu="100m",
                         memory="256Mi", labels={"app": str(rng.choice(["web", "db"]))},
                         spec={"affinity": _affinity(rng, node > 0 and rng.random() < 0.3)})
        p["spec"]["nodeName"] = f"n{node if affinity else int(rng.integers(n_nodes))}"
        objs.append(p)
    # pending pods of the manifests (they arrive at time 0, the trace later)
    for k in range(int(rng.integers(0, 3))):
        objs.append(pod_dict(f"w{k}", cpu=str(rng.choice(["300m", "1"])), memory="512Mi"))
    if affinity:
        # a web pod whose preferred anti-affinity selects itself (one of it:
        # the README example's pending pod); the trace's pods carry no labels
        objs.append(pod_dict("web", namespace="shop", cpu="200m", memory="256Mi",
                             labels={"app": "web"}, spec={"affinity": {"podAntiAffinity": {
                                 "preferredDuringSchedulingIgnoredDuringExecution": [
                                     {"weight": 100, "podAffinityTerm": _web_term(
                                         rng, "kubernetes.io/hostname")}]}}}))
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
                 durations: bool = False, priorities: bool = False,
                 affinity: bool = False) -> tuple:
    """The cluster, trace and configuration paths; ``durations``: some
    leaving pods leave a ``duration`` after their binding instead;
    ``priorities``: the trace's pods have priorities 0, 10 or 1000 and
    arrive from time 0 (with the manifests' pending pods, created before
    them), the configurations without DefaultPreemption; ``affinity``: the
    bound pods are web or db pods with InterPodAffinity terms on web pods,
    and a pending web pod's preferred anti-affinity selects itself."""
    rng = np.random.default_rng(seed)
    cluster = tmp / f"cluster{seed}.yaml"
    cluster.write_text(yaml.safe_dump_all(_cluster(rng, n_nodes, bound, affinity)))
    trace = tmp / f"trace{seed}.csv"
    trace.write_text(_trace(rng, n_pods, durations, priorities))
    return str(cluster), str(trace), _configs(rng, tmp, not priorities)
