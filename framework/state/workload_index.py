"""PodTopologySpread's ``DefaultSelector``: the loaded Services and
controllers (``parsing.workloads`` records) by namespace and name.

``WorkloadIndex.default_selector(pod)`` is the selector of the default
constraints of ``pod``, as upstream builds it:

* the selector maps of the Services of the pod's namespace whose selector
  matches the pod's labels, merged (a Service without a selector matches
  nothing);
* then the pod's controller (the first ``metadata.ownerReferences`` entry
  with ``controller: true``) when it is a ``v1`` ReplicationController
  (its map is merged in, its values win) or an ``apps/v1`` ReplicaSet or
  StatefulSet (its selector's requirements are added; a null selector, or
  one that apimachinery would reject, adds nothing), looked up by name in
  the pod's namespace;
* the result as compiled requirements (``parsing.selectors``); ``()`` (no
  requirement) means the pod gets no default constraints.

``build_cluster`` sets a state's ``workloads``; objects are not added or
removed after loading.
"""

from __future__ import annotations

import itertools

from tensorsched.framework.parsing.selectors import compile_selector
from tensorsched.framework.parsing.workloads import OWNER_KINDS, ControllerRecord, controller_of
from tensorsched.framework.records.records import MemoKey

_SET_OPS = ("In", "NotIn")
_EXISTS_OPS = ("Exists", "DoesNotExist")


def _as_requirements(sel: dict | None) -> tuple:
    """The requirements ``metav1.LabelSelectorAsSelector(sel)`` yields, or
    ``()`` when it yields none: a null selector (``labels.Nothing()`` has no
    requirements to add) or one it rejects (In / NotIn without values,
    Exists / DoesNotExist with values, an unknown operator)."""
    if sel is None:
        return ()
    for e in sel.get("matchExpressions") or ():
        op, values = e.get("operator"), e.get("values") or ()
        if (op in _SET_OPS and not values) or (op in _EXISTS_OPS and values) or (
                op not in _SET_OPS + _EXISTS_OPS):
            return ()
    return compile_selector(sel)


DEFAULT_SELECTOR = MemoKey("default_selector", __name__,
                           "(index serial, compiled DefaultSelector requirements)")


class WorkloadIndex:
    """The loaded Services and controllers, by namespace / name."""

    _serials = itertools.count(1)

    def __init__(self, services=(), controllers=()):
        self.serial = next(WorkloadIndex._serials)     # names this index in pod memos
        self.services: dict[str, list[dict[str, str]]] = {}
        for s in services:
            if s.selector is not None:
                self.services.setdefault(s.namespace, []).append(dict(s.selector))
        self.controllers: dict[tuple[str, str, str], ControllerRecord] = {
            (c.kind, c.namespace, c.name): c for c in controllers}

    @classmethod
    def from_objects(cls, objs) -> "WorkloadIndex":
        """From a ``manifests.Objects`` (its services and controllers)."""
        return cls(getattr(objs, "services", ()),
                   [*getattr(objs, "replication_controllers", ()),
                    *getattr(objs, "replica_sets", ()),
                    *getattr(objs, "stateful_sets", ())])

    def __bool__(self) -> bool:
        return bool(self.services or self.controllers)

    def default_selector(self, pod) -> tuple:
        """Compiled requirements of ``DefaultSelector(pod)`` (memoized on
        the record per index); ``()`` when there are none."""
        memo = pod.memo.get(DEFAULT_SELECTOR)
        if memo is not None and memo[0] == self.serial:
            return memo[1]
        merged: dict[str, str] = {}
        labels = pod.labels
        for sel in self.services.get(pod.namespace, ()):
            if all(labels.get(k) == v for k, v in sel.items()):
                merged.update(sel)
        extra: tuple = ()
        owner = controller_of(pod)
        if owner is not None and (owner[0], owner[1]) in OWNER_KINDS:
            c = self.controllers.get((owner[1], pod.namespace, owner[2]))
            if c is not None:
                if c.kind == "ReplicationController":
                    merged.update(c.selector or {})
                else:
                    extra = _as_requirements(c.selector)
        reqs = tuple(sorted({(k, "In", (v,)) for k, v in merged.items()} | set(extra)))
        pod.memo[DEFAULT_SELECTOR] = (self.serial, reqs)
        return reqs
