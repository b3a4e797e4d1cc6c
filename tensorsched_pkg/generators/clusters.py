"""Built-in, seeded synthetic clusters and workloads (no files needed).

``basic`` mirrors kube-scheduler's scheduler_perf SchedulingBasic: identical
nodes (4 cpu, 32Gi memory, 110 pods) and pods requesting 100m cpu and 500Mi
memory.  ``sample`` is a small mixed cluster for the README's first command:
zones, a tainted node, an unschedulable node, a GPU node, pods with
selectors, affinities, tolerations and priorities.  ``pod_to_pod`` and
``preemption`` are the other scheduler_perf-like workloads of ``tensorsched
bench``; the GPU workload is ``gpu_clusters.gpu``.
"""

from __future__ import annotations

import datetime

import numpy as np

from tensorsched.framework.arguments import Arguments

MAX_NODES = 10_000_000           # ``tensorsched bench --nodes``'s bounds
MAX_PODS = 100_000_000


def check_sizes(function: str, nodes, pods, seed) -> tuple[int, int, int]:
    """A generator's (nodes, pods, seed), checked in the name of ``function``."""
    args = Arguments(function)
    return (args.integer("nodes", nodes, 1, MAX_NODES), args.integer("pods", pods, 0, MAX_PODS),
            args.seed(seed))


def node_dict(name: str, cpu: str = "4", memory: str = "32Gi", pods: str = "110",
              labels: dict | None = None, taints: list | None = None,
              extra: dict | None = None, unschedulable: bool = False,
              images: list | None = None) -> dict:
    alloc = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    obj = {"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                 **(labels or {})}},
           "spec": {}, "status": {"capacity": dict(alloc), "allocatable": alloc}}
    if taints:
        obj["spec"]["taints"] = taints
    if unschedulable:
        obj["spec"]["unschedulable"] = True
    if images:
        obj["status"]["images"] = images
    return obj


def pod_dict(name: str, namespace: str = "default", cpu: str | None = "100m",
             memory: str | None = "500Mi", priority: int | None = None,
             created: int = 0, spec: dict | None = None, labels: dict | None = None,
             extra: dict | None = None, image: str = "registry.k8s.io/pause:3.10") -> dict:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    requests.update(extra or {})
    container = {"name": "pause", "image": image, "resources": {"requests": requests}}
    obj = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": namespace, "labels": labels or {},
                        "creationTimestamp": _timestamp(created)},
           "spec": {"containers": [container], **(spec or {})}}
    if priority is not None:
        obj["spec"]["priority"] = priority
    return obj


_EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def _timestamp(seconds: int) -> str:
    return (_EPOCH + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def basic(nodes: int, pods: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """SchedulingBasic: (node dicts, pending pod dicts)."""
    nodes, pods, seed = check_sizes("synthetic.basic", nodes, pods, seed)
    del seed   # identical nodes and pods; the seed only breaks ties
    node_objs = [node_dict(f"node-{i}", labels={"topology.kubernetes.io/zone": f"zone-{i % 3}"})
                 for i in range(nodes)]
    pod_objs = [pod_dict(f"pod-{i}", created=i) for i in range(pods)]
    return node_objs, pod_objs


def sample(seed: int = 0, nodes: int = 12, pods: int = 40) -> tuple[list[dict], list[dict]]:
    """A small mixed cluster and workload exercising every built-in plugin."""
    nodes, pods, seed = check_sizes("synthetic.sample", nodes, pods, seed)
    rng = np.random.default_rng(seed)
    node_objs = []
    for i in range(nodes):
        zone = f"zone-{'abc'[i % 3]}"
        cpu = str(int(rng.choice([2, 4, 8])))
        mem = f"{int(rng.choice([8, 16, 32]))}Gi"
        taints, extra, unsched = None, None, False
        if i == 1:
            taints = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
        if i == 2:
            taints = [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]
        if i == 3:
            unsched = True
        if i == 4:
            extra = {"nvidia.com/gpu": "4"}
        images = [{"names": ["docker.io/library/nginx:1.27"], "sizeBytes": 190 * 2**20}] \
            if i % 2 == 0 else None
        node_objs.append(node_dict(f"node-{i}", cpu=cpu, memory=mem,
                                   labels={"topology.kubernetes.io/zone": zone,
                                           "node.example.com/generation": str(i % 4)},
                                   taints=taints, extra=extra, unschedulable=unsched,
                                   images=images))
    pod_objs = []
    for i in range(pods):
        kind = i % 8
        spec: dict = {}
        extra = None
        image = "registry.k8s.io/pause:3.10"
        cpu = f"{int(rng.integers(1, 16)) * 100}m"
        mem = f"{int(rng.integers(1, 16)) * 256}Mi"
        if kind == 1:
            spec["nodeSelector"] = {"topology.kubernetes.io/zone": "zone-b"}
        elif kind == 2:
            spec["tolerations"] = [{"key": "dedicated", "operator": "Equal",
                                    "value": "batch", "effect": "NoSchedule"}]
        elif kind == 3:
            spec["affinity"] = {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "node.example.com/generation",
                                           "operator": "Gt", "values": ["1"]}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 50, "preference": {"matchExpressions": [
                        {"key": "topology.kubernetes.io/zone", "operator": "In",
                         "values": ["zone-a"]}]}}]}}
        elif kind == 4:
            extra = {"nvidia.com/gpu": "1"}
        elif kind == 5:
            image = "docker.io/library/nginx:1.27"
        elif kind == 6:
            cpu = "6"     # large: fits only on the 8-cpu nodes, or nowhere
        pod_objs.append(pod_dict(f"web-{i}", namespace="shop" if i % 2 else "default",
                                 cpu=cpu, memory=mem, priority=int(rng.choice([0, 0, 100])),
                                 created=i, spec=spec, extra=extra, image=image))
    return node_objs, pod_objs


# ---------------------------------------------------------------------------
# Pod-to-pod workloads, after scheduler_perf's TopologySpreading,
# SchedulingPodAntiAffinity, SchedulingPodAffinity and
# SchedulingPreferredPodAffinity (test/integration/scheduler_perf): nodes in
# 3 zones; ``init`` pods placed first (part of the workload's state), then
# the measured pods.  Approximations: the init pods are scheduled by the
# same scheduler (not created bound), and one namespace is used.
# ---------------------------------------------------------------------------

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def _affinity_pod(name: str, created: int, labels: dict, spec: dict) -> dict:
    return pod_dict(name, created=created, labels=labels, spec=spec)


def pod_to_pod(workload: str, nodes: int, pods: int, seed: int = 0):
    """(node dicts, pending pod dicts) for spread | antiaffinity | affinity |
    preferred-affinity | replicaset (the init pods come first in the pending
    list; replicaset's ReplicaSet object comes after the nodes)."""
    nodes, pods, seed = check_sizes("synthetic.pod_to_pod", nodes, pods, seed)
    del seed
    node_objs = [node_dict(f"node-{i}", labels={ZONE: f"zone-{i % 3}"}) for i in range(nodes)]
    out = []
    if workload == "spread":
        sel = {"matchLabels": {"color": "blue"}}
        spec = {"topologySpreadConstraints": [
            {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": sel}]}
        for i in range(pods):
            out.append(_affinity_pod(f"spread-{i}", i, {"color": "blue"}, spec))
    elif workload == "antiaffinity":
        term = {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": HOST}
        spec = {"affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
        for i in range(pods):
            out.append(_affinity_pod(f"anti-{i}", i, {"color": "green"}, spec))
    elif workload == "affinity":
        term = {"labelSelector": {"matchLabels": {"color": "blue"}}, "topologyKey": ZONE}
        spec = {"affinity": {"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
        for i in range(pods):
            out.append(_affinity_pod(f"aff-{i}", i, {"color": "blue"}, spec))
    elif workload == "replicaset":
        # a ReplicaSet's pods: no constraints of their own, so the System
        # default spread constraints (ScheduleAnyway, hostname and zone) score
        node_objs.append({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                          "metadata": {"name": "web", "namespace": "default"},
                          "spec": {"selector": {"matchLabels": {"app": "web"}}}})
        owner = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                  "uid": "uid-web", "controller": True}]
        for i in range(pods):
            pod = _affinity_pod(f"web-{i}", i, {"app": "web"}, {})
            pod["metadata"]["ownerReferences"] = owner
            out.append(pod)
    elif workload == "preferred-affinity":
        term = {"labelSelector": {"matchLabels": {"color": "red"}}, "topologyKey": HOST}
        spec = {"affinity": {"podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": term}]}}}
        for i in range(pods):
            out.append(_affinity_pod(f"pref-{i}", i, {"color": "red"}, spec))
    else:
        raise ValueError(f"unknown workload {workload!r}")
    return node_objs, out


def unschedulable(nodes: int, pods: int, seed: int = 0):
    """(cluster object dicts, pending pod dicts): ``nodes`` basic nodes each
    holding one bound pod of the ``antiaffinity`` workload (labelled
    color: green, required anti-affinity against that label by hostname),
    then ``pods`` more alike pending: the cluster is full for them, so every
    one fits nowhere (InterPodAffinity rejects every node) and, their
    priority equal to the bound ones', DefaultPreemption finds no victims.
    What a queue of pods that cannot fit costs after the first one failed."""
    nodes, pods, seed = check_sizes("synthetic.unschedulable", nodes, pods, seed)
    del seed
    term = {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": HOST}
    spec = {"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
    objs = [node_dict(f"node-{i}", labels={ZONE: f"zone-{i % 3}"}) for i in range(nodes)]
    for i in range(nodes):
        pod = _affinity_pod(f"anti-bound-{i}", 0, {"color": "green"},
                            dict(spec, nodeName=f"node-{i}"))
        pod["status"] = {"phase": "Running", "startTime": _timestamp(i)}
        objs.append(pod)
    out = [_affinity_pod(f"anti-{j}", j, {"color": "green"}, spec) for j in range(pods)]
    return objs, out


# ---------------------------------------------------------------------------
# Preemption workloads (scheduler_perf's preemption test): every node filled
# with LOW_PER_NODE low-priority pods (130m cpu, 1Gi; 3.9 cpu used, 100m
# free), then high-priority pods (500m cpu, 1Gi) that each need four victims.
# "spread": low pods and preemptors carry app: web and every preemptor has
# two DoNotSchedule spread constraints on it (zone and hostname, maxSkew 1);
# "antiaffinity": two low pods per node (slots ANTI_BATCH_SLOTS) carry
# tier: batch and every preemptor a required anti-affinity against it by
# hostname.
# ---------------------------------------------------------------------------

LOW_PER_NODE = 30
LOW_PRIORITY = 0
HIGH_PRIORITY = 1000
SPREAD_LABELS = {"app": "web"}
SPREAD_CONSTRAINTS = [
    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
     "labelSelector": {"matchLabels": SPREAD_LABELS}},
    {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
     "labelSelector": {"matchLabels": SPREAD_LABELS}},
]
ANTI_LABELS = {"tier": "batch"}
ANTI_BATCH_SLOTS = (0, 15)
ANTI_AFFINITY = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": ANTI_LABELS}, "topologyKey": HOST}]}}
PREEMPTION_VARIANTS = ("", "spread", "antiaffinity")


def preemption_templates(variant: str = "") -> tuple[dict, dict | None, dict]:
    """(low pod, batch pod or None, high pod) dicts of a preemption variant."""
    if variant not in PREEMPTION_VARIANTS:
        raise ValueError(f"unknown preemption variant {variant!r}")
    labels = dict(SPREAD_LABELS) if variant == "spread" else None
    high_spec = {"topologySpreadConstraints": SPREAD_CONSTRAINTS} if variant == "spread" else None
    low = pod_dict("low", cpu="130m", memory="1Gi", priority=LOW_PRIORITY, labels=labels)
    batch = None
    if variant == "antiaffinity":
        high_spec = {"affinity": ANTI_AFFINITY}
        batch = pod_dict("batch", cpu="130m", memory="1Gi", priority=LOW_PRIORITY,
                         labels=dict(ANTI_LABELS))
    high = pod_dict("high", cpu="500m", memory="1Gi", priority=HIGH_PRIORITY, labels=labels,
                    spec=high_spec)
    return low, batch, high


def low_pod_start_seconds(node: int, slot: int, nodes: int) -> int:
    """Start time of low pod ``slot`` on node ``node`` (all distinct)."""
    return slot * nodes + node


def preemption(nodes: int, pods: int, seed: int = 0, variant: str = ""):
    """(node dicts, pod dicts): the low pods bound (``spec.nodeName``, a
    ``status.startTime`` each) followed by the pending high-priority pods."""
    nodes, pods, seed = check_sizes("synthetic.preemption", nodes, pods, seed)
    del seed
    low, batch, high = preemption_templates(variant)
    node_objs = [node_dict(f"node-{i}", labels={ZONE: f"zone-{i % 3}"}) for i in range(nodes)]
    out = []
    for i in range(nodes):
        for k in range(LOW_PER_NODE):
            base = batch if batch is not None and k in ANTI_BATCH_SLOTS else low
            name = f"low-{i}-{k}"
            meta = dict(base["metadata"], name=name, uid=name)
            spec = dict(base["spec"], nodeName=f"node-{i}")
            status = {"phase": "Running",
                      "startTime": _timestamp(low_pod_start_seconds(i, k, nodes))}
            out.append(dict(base, metadata=meta, spec=spec, status=status))
    for j in range(pods):
        out.append(dict(high, metadata=dict(high["metadata"], name=f"high-{j}", uid=f"high-{j}",
                                            creationTimestamp=_timestamp(j))))
    return node_objs, out


VOLUME_ZONES = 3


def statefulsets(nodes: int, pods: int, seed: int = 0, volumes: bool = True):
    """(cluster object dicts, pending pod dicts): ``nodes`` basic nodes in
    three zones and one StatefulSet per zone (``pods`` in all, split evenly,
    basic requests).  With ``volumes`` every pod mounts its own claim
    ``data-<pod>`` of its zone's StorageClass (WaitForFirstConsumer, a CSI
    provisioner, allowedTopologies = the zone), so it can only go to its
    zone and its claim is provisioned there; the StorageClasses and claims
    come first among the cluster objects.  Without, the same pods with no
    volumes (what the volume plugins cost is the difference)."""
    del seed
    objs = [node_dict(f"node-{i}", labels={ZONE: f"zone-{i % VOLUME_ZONES}"})
            for i in range(nodes)]
    out = []
    for j in range(pods):
        z = j % VOLUME_ZONES
        name = f"db-{z}-{j // VOLUME_ZONES}"
        spec = None
        if volumes:
            spec = {"volumes": [{"name": "data",
                                 "persistentVolumeClaim": {"claimName": f"data-{name}"}}]}
            objs.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                         "metadata": {"name": f"data-{name}", "namespace": "default",
                                      "uid": f"uid-data-{name}"},
                         "spec": {"storageClassName": f"zonal-{z}",
                                  "accessModes": ["ReadWriteOnce"],
                                  "resources": {"requests": {"storage": "10Gi"}}}})
        out.append(pod_dict(name, created=j, labels={"app": f"db-{z}"}, spec=spec))
    if volumes:
        objs[nodes:nodes] = [
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
             "metadata": {"name": f"zonal-{z}"}, "provisioner": "ebs.csi.aws.com",
             "volumeBindingMode": "WaitForFirstConsumer",
             "allowedTopologies": [{"matchLabelExpressions": [
                 {"key": ZONE, "values": [f"zone-{z}"]}]}]}
            for z in range(VOLUME_ZONES)]
    return objs, out
