"""Random small clusters for the batched node-local engine's tests: nodes
with taints (NoSchedule, PreferNoSchedule), zone labels, unschedulable
ones, images and an extended resource; bound pods; pending pods of a few
classes (tolerations, node selectors, required and preferred node
affinity, the extended resource, images); a configuration with one of
NodeResourcesFit's three strategies and BalancedAllocation's resources.
``affinity_bound_pods`` / ``affinity_pending``: bound pods carrying
InterPodAffinity terms (required and preferred, affinity and
anti-affinity, across namespaces) and pending pods some of those terms
select, whose own terms select only bound pods (labels no pending pod
has): the batch's InterPodAffinity answers stay constants."""

from __future__ import annotations

import copy

from hypothesis import strategies as st

from tensorsched.framework.parsing.manifests import parse_objects
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict

EXT = "example.com/foo"
IMAGES = ("registry.example/app:1", "registry.example/db:2")
API = "kubescheduler.config.k8s.io/v1"

STRATEGIES = (
    {"type": "LeastAllocated"},
    {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 2},
                                            {"name": "memory", "weight": 1},
                                            {"name": EXT, "weight": 3}]},
    {"type": "RequestedToCapacityRatio",
     "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
     "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10},
                                            {"utilization": 60, "score": 3},
                                            {"utilization": 100, "score": 0}]}},
)


def config(strategy: int = 0, balanced_ext: bool = False, pct: int | None = 100) -> dict:
    fit = {"apiVersion": API, "kind": "NodeResourcesFitArgs",
           "scoringStrategy": STRATEGIES[strategy]}
    bal = {"apiVersion": API, "kind": "NodeResourcesBalancedAllocationArgs",
           "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
           + ([{"name": EXT, "weight": 1}] if balanced_ext else [])}
    cfg = {"apiVersion": API, "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "default-scheduler",
                         "pluginConfig": [{"name": "NodeResourcesFit", "args": fit},
                                          {"name": "NodeResourcesBalancedAllocation",
                                           "args": bal}]}]}
    if pct is not None:
        cfg["percentageOfNodesToScore"] = pct
    return cfg


@st.composite
def nodes(draw, min_size=1, max_size=7, prefix="n"):
    out = []
    for i in range(draw(st.integers(min_size, max_size))):
        taints = []
        t = draw(st.sampled_from(["", "", "", "hard", "soft", "both"]))
        if t in ("hard", "both"):
            taints.append({"key": "dedicated", "value": "x", "effect": "NoSchedule"})
        if t in ("soft", "both"):
            taints.append({"key": "spot", "effect": "PreferNoSchedule"})
        images = [{"names": [im], "sizeBytes": draw(st.sampled_from([50, 300, 900])) << 20}
                  for im in IMAGES if draw(st.booleans())]
        out.append(node_dict(
            f"{prefix}{i}", cpu=draw(st.sampled_from(["1", "2", "4"])),
            memory=draw(st.sampled_from(["2Gi", "4Gi", "8Gi"])),
            pods=str(draw(st.integers(2, 6))),
            labels={"zone": draw(st.sampled_from(["a", "b", "c"])),
                    "tier": draw(st.sampled_from(["1", "5", "9"]))},
            taints=taints or None, extra={EXT: str(draw(st.integers(0, 3)))},
            unschedulable=draw(st.integers(0, 7)) == 0, images=images or None))
    return out


@st.composite
def pod_class(draw):
    spec: dict = {}
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    if draw(st.integers(0, 3)) == 0:
        spec["nodeSelector"] = {"zone": draw(st.sampled_from(["a", "b"]))}
    aff: dict = {}
    if draw(st.integers(0, 3)) == 0:
        aff["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["2"]}]}]}
    if draw(st.booleans()):
        aff["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": draw(st.integers(1, 100)), "preference": {"matchExpressions": [
                {"key": "zone", "operator": "In", "values": [draw(st.sampled_from("abc"))]}]}}]
    if aff:
        spec["affinity"] = {"nodeAffinity": aff}
    return dict(cpu=draw(st.sampled_from(["0", "100m", "300m", "700m"])),
                memory=draw(st.sampled_from(["0", "256Mi", "1Gi"])),
                extra={EXT: "1"} if draw(st.integers(0, 3)) == 0 else None,
                image=draw(st.sampled_from(IMAGES + ("registry.k8s.io/pause:3.10",))),
                spec=spec)


def make_pod(name: str, cls: dict) -> dict:
    kw = copy.deepcopy(cls)
    cpu = None if kw["cpu"] == "0" else kw.pop("cpu")
    mem = None if kw["memory"] == "0" else kw.pop("memory")
    kw.pop("cpu", None)
    kw.pop("memory", None)
    return pod_dict(name, cpu=cpu, memory=mem, **kw)


@st.composite
def workloads(draw, max_pods=12):
    classes = draw(st.lists(pod_class(), min_size=1, max_size=3))
    picks = draw(st.lists(st.integers(0, len(classes) - 1), min_size=1, max_size=max_pods))
    return [make_pod(f"w{k}", classes[c]) for k, c in enumerate(picks)]


def bound_pods(draw, node_objs, max_pods=6):
    out = []
    for k in range(draw(st.integers(0, max_pods))):
        node = node_objs[draw(st.integers(0, len(node_objs) - 1))]["metadata"]["name"]
        p = pod_dict(f"b{k}", cpu=draw(st.sampled_from(["100m", "500m"])), memory="256Mi")
        p["spec"]["nodeName"] = node
        out.append(p)
    return out


def scheduler_placements(objects, cfg, pending, seed=0, backend="numpy"):
    """{pod key: node or None} of ``schedule_pending`` on a fresh cluster."""
    cl = build_cluster(copy.deepcopy(list(objects)), cfg)
    sched = Scheduler(cl, backend, seed, batch=True)
    bindings, _ = sched.schedule_pending(parse_objects(copy.deepcopy(pending)).pods)
    return {b.pod: b.node for b in bindings}


def scheduler_bindings(objects, cfg, pending, seed=0, backend="numpy"):
    """[(pod key, node or None, message)] of ``schedule_pending`` on a fresh
    cluster, in the order of the outcomes."""
    cl = build_cluster(copy.deepcopy(list(objects)), cfg)
    sched = Scheduler(cl, backend, seed, batch=True)
    bindings, _ = sched.schedule_pending(parse_objects(copy.deepcopy(pending)).pods)
    return [(b.pod, b.node, b.message if b.node is None else "") for b in bindings]


TOPOLOGY_KEYS = ("kubernetes.io/hostname", "zone")
NAMESPACES = ("default", "shop")


def _term(draw, values):
    """A pod affinity term selecting ``app`` in one of ``values``, in the
    owner's namespace, a list, every namespace ({}), or one by its name
    label."""
    term = {"topologyKey": draw(st.sampled_from(TOPOLOGY_KEYS)),
            "labelSelector": {"matchExpressions": [
                {"key": "app", "operator": "In",
                 "values": draw(st.lists(st.sampled_from(values), min_size=1, max_size=2,
                                         unique=True))}]}}
    ns = draw(st.sampled_from(["own", "list", "all", "selector"]))
    if ns == "list":
        term["namespaces"] = draw(st.lists(st.sampled_from(NAMESPACES), min_size=1,
                                           unique=True))
    elif ns == "all":
        term["namespaceSelector"] = {}
    elif ns == "selector":
        term["namespaceSelector"] = {"matchLabels": {
            "kubernetes.io/metadata.name": draw(st.sampled_from(NAMESPACES))}}
    return term


def _affinity(draw, values, kinds):
    """podAffinity / podAntiAffinity with terms of ``kinds`` (some of
    req_aff, req_anti, pref_aff, pref_anti) selecting ``values``."""
    out: dict = {}
    for kind in kinds:
        if not draw(st.booleans()):
            continue
        group = out.setdefault("podAffinity" if kind.endswith("aff") else "podAntiAffinity",
                               {})
        if kind.startswith("req"):
            group["requiredDuringSchedulingIgnoredDuringExecution"] = [_term(draw, values)]
        else:
            group["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": draw(st.integers(1, 100)), "podAffinityTerm": _term(draw, values)}]
    return out


def affinity_bound_pods(draw, node_objs, max_pods=6):
    """Bound pods labelled app=web or db in either namespace, some with
    terms selecting web / api / db pods (pending pods are web or api)."""
    out = []
    for k in range(draw(st.integers(1, max_pods))):
        node = node_objs[draw(st.integers(0, len(node_objs) - 1))]["metadata"]["name"]
        aff = _affinity(draw, ("web", "api", "db"),
                        ("req_aff", "req_anti", "pref_aff", "pref_anti"))
        p = pod_dict(f"b{k}", namespace=draw(st.sampled_from(NAMESPACES)),
                     cpu=draw(st.sampled_from(["100m", "500m"])), memory="256Mi",
                     labels={"app": draw(st.sampled_from(["web", "db"]))},
                     spec={"affinity": aff} if aff else None)
        p["spec"]["nodeName"] = node
        out.append(p)
    return out


@st.composite
def affinity_pending(draw, max_pods=8, max_classes=3):
    """Pending pods of a few classes labelled app=web or api (or none) in
    either namespace; a class's own terms select db pods only."""
    classes = []
    for _ in range(draw(st.integers(1, max_classes))):
        aff = _affinity(draw, ("db",), ("req_aff", "req_anti", "pref_aff", "pref_anti"))
        classes.append(dict(namespace=draw(st.sampled_from(NAMESPACES)),
                            labels={"app": draw(st.sampled_from(["web", "api"]))}
                            if draw(st.integers(0, 3)) else None,
                            cpu=draw(st.sampled_from(["100m", "300m", "700m"])),
                            spec={"affinity": aff} if aff else None))
    picks = draw(st.lists(st.integers(0, len(classes) - 1), min_size=1, max_size=max_pods))
    return [pod_dict(f"w{k}", memory="256Mi", **classes[c]) for k, c in enumerate(picks)]
