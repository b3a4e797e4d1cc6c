"""Node lifecycle as Kubernetes keeps it: cordon, uncordon and what a drain
leaves in place.

Cordon and uncordon: ``kubectl cordon`` sets ``spec.unschedulable`` and the
node lifecycle controller then adds the ``node.kubernetes.io/unschedulable``
NoSchedule taint (``uncordon``: clears the field, the controller removes the
taint).  A simulated cluster has no controller, so :func:`set_unschedulable`
does both at once, either way: a node is never left cordoned by one and
open by the other.  A new node from a template joins uncordoned
(:func:`uncordoned_record`), as cluster-autoscaler sanitizes its templates.

Drain: :func:`drain_exemption` is the one rule every drain uses (the
simulator's, a scenario's, ``capacity --drain``), after ``kubectl drain
--ignore-daemonsets``: a pod whose controller is a DaemonSet would be
recreated on the node at once, and a static pod (a mirror pod: the
``kubernetes.io/config.mirror`` annotation, or an owner reference to its
Node) belongs to the kubelet; both stay with their node.
"""

from __future__ import annotations

import copy
import dataclasses

from tensorsched.framework.records.records import NodeRecord, PodRecord, Taint

__all__ = ["UNSCHEDULABLE_TAINT", "MIRROR_ANNOTATION", "set_unschedulable",
           "uncordoned_record", "drain_exemption"]

#: The taint the node lifecycle controller keeps in step with spec.unschedulable.
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", value="",
                            effect="NoSchedule")
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


def _is_unschedulable_taint(taint) -> bool:
    if isinstance(taint, Taint):
        return taint.key == UNSCHEDULABLE_TAINT.key and taint.effect == "NoSchedule"
    return isinstance(taint, dict) and taint.get("key") == UNSCHEDULABLE_TAINT.key \
        and taint.get("effect") == "NoSchedule"


def set_unschedulable(node: dict, value: bool) -> dict:
    """A copy of the Node object ``node`` cordoned (``value`` True) or
    uncordoned: ``spec.unschedulable`` and the unschedulable taint set or
    cleared together.  ``node`` is not modified."""
    obj = copy.deepcopy(node)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    taints = [t for t in spec.get("taints") or () if not _is_unschedulable_taint(t)]
    if value:
        spec["unschedulable"] = True
        taints.append({"key": UNSCHEDULABLE_TAINT.key, "effect": UNSCHEDULABLE_TAINT.effect})
    else:
        spec.pop("unschedulable", None)
    if taints:
        spec["taints"] = taints
    else:
        spec.pop("taints", None)
    return obj


def uncordoned_record(node: NodeRecord) -> NodeRecord:
    """``node`` as a new node of its kind joins: not unschedulable, without
    the unschedulable taint (record and object alike)."""
    if not node.unschedulable and not any(_is_unschedulable_taint(t) for t in node.taints):
        return node
    return dataclasses.replace(
        node, unschedulable=False,
        taints=[t for t in node.taints if not _is_unschedulable_taint(t)],
        obj=set_unschedulable(node.obj, False) if node.obj else node.obj)


def drain_exemption(pod: PodRecord) -> str | None:
    """Why a drain leaves ``pod`` on its node (``"DaemonSet"`` or
    ``"static"``), or None when a drain evicts it."""
    meta = (pod.obj or {}).get("metadata") or {}
    annotations = meta.get("annotations") or {}
    if isinstance(annotations, dict) and MIRROR_ANNOTATION in annotations:
        return "static"
    for ref in meta.get("ownerReferences") or ():
        if not isinstance(ref, dict):
            continue
        if ref.get("kind") == "Node":
            return "static"
        if ref.get("controller") is True and ref.get("kind") == "DaemonSet":
            return "DaemonSet"
    return None
