"""Pod priority and preemption policy, resolved as the Priority admission
plugin does (plugin/pkg/admission/priority) for objects loaded from files.

priority: ``spec.priority`` when set; else the value of the PriorityClass
named by ``spec.priorityClassName``; else the value of the globalDefault
PriorityClass; else 0.  An unknown priorityClassName is a ManifestError
naming the pod and the field.  The two built-in system classes exist
without being loaded, as in every cluster.

preemptionPolicy: ``spec.preemptionPolicy`` when written; else the policy of
the class that gave the priority; else PreemptLowerPriority.
"""

from __future__ import annotations

from tensorsched.framework.errors import ManifestError

from .meta import source_of
from tensorsched.framework.records.records import MemoKey, PodRecord, PriorityClassRecord
from .volumes import carry_pod_volumes

SYSTEM_CLASSES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
PREEMPT_LOWER = "PreemptLowerPriority"
NEVER = "Never"


RESOLVED = MemoKey("resolved", __name__,
                   "(key, priority, policy): the class of copies resolved alike")


class PriorityResolver:
    """PriorityClasses by name plus the global default (the first loaded
    class with globalDefault: true, as the admission plugin lists them)."""

    def __init__(self, classes: list[PriorityClassRecord] = ()):
        self.classes = {c.name: c for c in classes}
        self.default = next((c for c in classes if c.global_default), None)

    def resolve(self, pod: PodRecord) -> PodRecord:
        """The pod with ``priority`` and ``preemption_policy`` resolved."""
        spec = (pod.obj or {}).get("spec") or {}
        policy_written = bool(spec.get("preemptionPolicy"))
        cls = None
        if pod.priority_class_name:
            cls = self.classes.get(pod.priority_class_name)
            if cls is None and pod.priority_class_name not in SYSTEM_CLASSES:
                raise ManifestError(f"Pod {pod.key}", "spec.priorityClassName",
                                    f"no PriorityClass named {pod.priority_class_name!r}",
                                    source_of(pod.obj))
        elif pod.priority is None:
            cls = self.default
        priority = pod.priority
        if priority is None:
            if cls is not None:
                priority = cls.value
            elif pod.priority_class_name in SYSTEM_CLASSES:
                priority = SYSTEM_CLASSES[pod.priority_class_name]
            else:
                priority = 0
        policy = pod.preemption_policy
        if not policy_written:
            policy = cls.preemption_policy if cls is not None else PREEMPT_LOWER
        if priority == pod.priority and policy == pod.preemption_policy:
            return pod
        # A shallow copy with the two fields set (``dataclasses.replace``
        # re-runs every field's init: ten times the cost, per pending pod).
        out = object.__new__(type(pod))
        out.__dict__.update(pod.__dict__)
        out.priority = priority
        out.preemption_policy = policy
        # Copies resolved alike from one memo (pods of one table group) share
        # theirs, kept inside it: derived values are made once per group.
        out.pod_class = pod.pod_class.variant((RESOLVED, priority, policy))
        carry_pod_volumes(pod.memo, out.memo)       # parsed with the pod, same spec
        return out


def pod_priority(pod: PodRecord) -> int:
    """The (resolved) priority; 0 for a pod without one."""
    return pod.priority if pod.priority is not None else 0
