"""PodRecord / NodeRecord builders for tests that feed the state directly."""

from __future__ import annotations

from tensorsched.framework.records.records import HostPort, NodeRecord, PodRecord
from tensorsched.kernels import layout as L

Mi = 1024 * 1024
Gi = 1024 * Mi


def node(name, cpu=4000, mem=8 * Gi, pods=110, labels=None, taints=(), images=(),
         unschedulable=False, extra=None) -> NodeRecord:
    alloc = {"cpu": cpu, "memory": mem, "pods": pods, **(extra or {})}
    return NodeRecord(name=name, labels=dict(labels or {}), unschedulable=unschedulable,
                      taints=list(taints), allocatable=alloc, capacity=dict(alloc),
                      images=list(images), obj={"metadata": {"name": name}})


def pod(name, node_name="", cpu=100, mem=128 * Mi, ns="default", ports=(), extra=None,
        labels=None, priority=None) -> PodRecord:
    requests = {"cpu": cpu, "memory": mem, **(extra or {})}
    return PodRecord(
        namespace=ns, name=name, uid=f"uid-{ns}-{name}", node_name=node_name,
        scheduler_name="default-scheduler", priority=priority, priority_class_name="",
        preemption_policy="PreemptLowerPriority", labels=dict(labels or {}), creation_ns=0,
        start_ns=None, deleting=False, phase="Running", requests=requests,
        nonzero_cpu=cpu or L.DEFAULT_MILLI_CPU_REQUEST,
        nonzero_memory=mem or L.DEFAULT_MEMORY_REQUEST,
        tolerations=[], node_selector={}, node_affinity=None, pod_affinity=None,
        pod_anti_affinity=None, topology_spread=[],
        host_ports=[HostPort(*p) if isinstance(p, tuple) else HostPort("TCP", "0.0.0.0", p)
                    for p in ports],
        images=[], has_restartable_init=False, scheduling_gates=[],
        obj={"metadata": {"name": name, "namespace": ns}})
