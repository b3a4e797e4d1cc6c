"""Services, ReplicationControllers, ReplicaSets and StatefulSets: the
objects whose selectors give PodTopologySpread's default constraints their
label selector (upstream ``plugins/helper/spread.go`` ``DefaultSelector``).

Fields read: ``metadata.namespace`` / ``name``; a Service's
``spec.selector`` (a map; absent = selects no pod); a ReplicationController's
``spec.selector`` (a map; when empty the API server sets it to
``spec.template.metadata.labels``, applied here too); a ReplicaSet's or
StatefulSet's ``spec.selector`` (a LabelSelector).  Everything else (ports,
replicas, templates, status) is ignored.

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
* the result as compiled requirements (``pod_selectors``); ``()`` (no
  requirement) means the pod gets no default constraints.

The index is attached to a ClusterState by ``build_cluster`` (``attach``);
the plugin reads it with ``workloads_of(state)``.  Objects are not added or
removed after loading.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from .selectors import compile_selector

CONTROLLER_KINDS = ("ReplicationController", "ReplicaSet", "StatefulSet")
_SERVICE_KIND = "Service"
# (ownerReference apiVersion, kind) pairs DefaultSelector follows.
_OWNER_KINDS = {("v1", "ReplicationController"), ("apps/v1", "ReplicaSet"),
                ("apps/v1", "StatefulSet")}
_SET_OPS = ("In", "NotIn")
_EXISTS_OPS = ("Exists", "DoesNotExist")


@dataclass
class ServiceRecord:
    namespace: str
    name: str
    selector: dict[str, str] | None   # spec.selector; None when absent (selects no pod)
    obj: dict = field(repr=False, default_factory=dict)


@dataclass
class ControllerRecord:
    """A ReplicationController, ReplicaSet or StatefulSet."""

    kind: str
    namespace: str
    name: str
    # ReplicationController: the spec.selector map (defaulted from the
    # template's labels); ReplicaSet / StatefulSet: the LabelSelector dict
    # as written (None when absent).
    selector: dict | None
    obj: dict = field(repr=False, default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


# --------------------------------------------------------------------------
# parsing (called by manifests.parse_objects)


def parse_service(obj: dict, *, where: str | None = None) -> ServiceRecord:
    """A v1 Service -> :class:`ServiceRecord` (only ``spec.selector`` is read)."""
    from .manifests import _identity
    ctx, _, namespace, name = _identity(obj, _SERVICE_KIND, True, where)
    spec = ctx.mapping(obj.get("spec"), "spec")
    raw = spec.get("selector")
    selector = None if raw is None else ctx.str_map(raw, "spec.selector")
    return ServiceRecord(namespace=namespace, name=name, selector=selector, obj=obj)


def parse_replication_controller(obj: dict, *, where: str | None = None) -> ControllerRecord:
    """A v1 ReplicationController -> :class:`ControllerRecord`; an empty
    ``spec.selector`` takes ``spec.template.metadata.labels`` (API-server
    defaulting)."""
    from .manifests import _identity
    ctx, _, namespace, name = _identity(obj, "ReplicationController", True, where)
    spec = ctx.mapping(obj.get("spec"), "spec")
    selector = ctx.str_map(spec.get("selector"), "spec.selector")
    template = ctx.mapping(spec.get("template"), "spec.template")
    meta = ctx.mapping(template.get("metadata"), "spec.template.metadata")
    labels = ctx.str_map(meta.get("labels"), "spec.template.metadata.labels")
    if not selector:
        selector = dict(labels)
    return ControllerRecord("ReplicationController", namespace, name, selector, obj)


def _parse_selector_owner(kind: str, obj: dict, where: str | None) -> ControllerRecord:
    from .manifests import _identity, _validate_label_selector
    ctx, _, namespace, name = _identity(obj, kind, True, where)
    spec = ctx.mapping(obj.get("spec"), "spec")
    selector = _validate_label_selector(ctx, spec.get("selector"), "spec.selector")
    return ControllerRecord(kind, namespace, name, selector, obj)


def parse_replica_set(obj: dict, *, where: str | None = None) -> ControllerRecord:
    """An apps/v1 ReplicaSet -> :class:`ControllerRecord` (``spec.selector``)."""
    return _parse_selector_owner("ReplicaSet", obj, where)


def parse_stateful_set(obj: dict, *, where: str | None = None) -> ControllerRecord:
    """An apps/v1 StatefulSet -> :class:`ControllerRecord` (``spec.selector``)."""
    return _parse_selector_owner("StatefulSet", obj, where)


# --------------------------------------------------------------------------
# DefaultSelector


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


def controller_of(pod) -> tuple[str, str, str] | None:
    """(apiVersion, kind, name) of the pod's controller: the first
    ``metadata.ownerReferences`` entry with ``controller: true``."""
    meta = (getattr(pod, "obj", None) or {}).get("metadata")
    if not isinstance(meta, dict):
        return None
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return (ref.get("apiVersion") or "", ref.get("kind") or "", ref.get("name") or "")
    return None


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
        memo = pod.__dict__.get("_default_selector")
        if memo is not None and memo[0] == self.serial:
            return memo[1]
        merged: dict[str, str] = {}
        labels = pod.labels
        for sel in self.services.get(pod.namespace, ()):
            if all(labels.get(k) == v for k, v in sel.items()):
                merged.update(sel)
        extra: tuple = ()
        owner = controller_of(pod)
        if owner is not None and (owner[0], owner[1]) in _OWNER_KINDS:
            c = self.controllers.get((owner[1], pod.namespace, owner[2]))
            if c is not None:
                if c.kind == "ReplicationController":
                    merged.update(c.selector or {})
                else:
                    extra = _as_requirements(c.selector)
        reqs = tuple(sorted({(k, "In", (v,)) for k, v in merged.items()} | set(extra)))
        pod.__dict__["_default_selector"] = (self.serial, reqs)
        return reqs


EMPTY = WorkloadIndex()


def attach(state, index: WorkloadIndex) -> None:
    """Make ``index`` the workloads seen by plugins running on ``state``."""
    state.__dict__["_workloads"] = index


def workloads_of(state) -> WorkloadIndex:
    return state.__dict__.get("_workloads") or EMPTY


__all__ = ["ServiceRecord", "ControllerRecord", "WorkloadIndex", "parse_service",
           "parse_replication_controller", "parse_replica_set", "parse_stateful_set",
           "controller_of", "attach", "workloads_of"]


def loaders(out) -> dict:
    """``parse_objects`` entries (kind -> parser, bucket, key, label) for
    these kinds, filling ``out`` (a ``manifests.Objects``)."""
    key = lambda r: f"{r.namespace}/{r.name}"    # noqa: E731
    return {
        "Service": (parse_service, out.services, key, "Service {}"),
        "ReplicationController": (parse_replication_controller, out.replication_controllers,
                                  key, "ReplicationController {}"),
        "ReplicaSet": (parse_replica_set, out.replica_sets, key, "ReplicaSet {}"),
        "StatefulSet": (parse_stateful_set, out.stateful_sets, key, "StatefulSet {}"),
    }
