"""Services, ReplicationControllers, ReplicaSets and StatefulSets: the
objects whose selectors give PodTopologySpread's default constraints their
label selector (upstream ``plugins/helper/spread.go`` ``DefaultSelector``;
``state.workload_index`` builds it from these records).

Fields read: ``metadata.namespace`` / ``name``; a Service's
``spec.selector`` (a map; absent = selects no pod); a ReplicationController's
``spec.selector`` (a map; when empty the API server sets it to
``spec.template.metadata.labels``, applied here too); a ReplicaSet's or
StatefulSet's ``spec.selector`` (a LabelSelector).  Everything else (ports,
replicas, templates, status) is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .meta import ObjectKind, check_labels, identity, validate_label_selector

CONTROLLER_KINDS = ("ReplicationController", "ReplicaSet", "StatefulSet")
_SERVICE_KIND = "Service"
# (ownerReference apiVersion, kind) pairs DefaultSelector follows.
OWNER_KINDS = {("v1", "ReplicationController"), ("apps/v1", "ReplicaSet"),
               ("apps/v1", "StatefulSet")}


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
    ctx, _, namespace, name = identity(obj, _SERVICE_KIND, True, where)
    spec = ctx.mapping(obj.get("spec"), "spec")
    raw = spec.get("selector")
    selector = None if raw is None else ctx.str_map(raw, "spec.selector")
    if selector:
        check_labels(ctx, selector, "spec.selector")
    return ServiceRecord(namespace=namespace, name=name, selector=selector, obj=obj)


def parse_replication_controller(obj: dict, *, where: str | None = None) -> ControllerRecord:
    """A v1 ReplicationController -> :class:`ControllerRecord`; an empty
    ``spec.selector`` takes ``spec.template.metadata.labels`` (API-server
    defaulting)."""
    ctx, _, namespace, name = identity(obj, "ReplicationController", True, where)
    spec = ctx.mapping(obj.get("spec"), "spec")
    selector = ctx.str_map(spec.get("selector"), "spec.selector")
    check_labels(ctx, selector, "spec.selector")
    template = ctx.mapping(spec.get("template"), "spec.template")
    meta = ctx.mapping(template.get("metadata"), "spec.template.metadata")
    labels = ctx.str_map(meta.get("labels"), "spec.template.metadata.labels")
    check_labels(ctx, labels, "spec.template.metadata.labels")
    if not selector:
        selector = dict(labels)
    return ControllerRecord("ReplicationController", namespace, name, selector, obj)


def _parse_selector_owner(kind: str, obj: dict, where: str | None) -> ControllerRecord:
    ctx, _, namespace, name = identity(obj, kind, True, where)
    spec = ctx.mapping(obj.get("spec"), "spec")
    # In/NotIn without values is tolerated here: the workload index drops
    # such a selector as the scheduler's DefaultSelector does when
    # LabelSelectorAsSelector fails (every other rule is enforced).
    selector = validate_label_selector(ctx, spec.get("selector"), "spec.selector",
                                       values_required=False)
    return ControllerRecord(kind, namespace, name, selector, obj)


def parse_replica_set(obj: dict, *, where: str | None = None) -> ControllerRecord:
    """An apps/v1 ReplicaSet -> :class:`ControllerRecord` (``spec.selector``)."""
    return _parse_selector_owner("ReplicaSet", obj, where)


def parse_stateful_set(obj: dict, *, where: str | None = None) -> ControllerRecord:
    """An apps/v1 StatefulSet -> :class:`ControllerRecord` (``spec.selector``)."""
    return _parse_selector_owner("StatefulSet", obj, where)


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


__all__ = ["ServiceRecord", "ControllerRecord", "parse_service",
           "parse_replication_controller", "parse_replica_set", "parse_stateful_set",
           "controller_of", "OWNER_KINDS", "OBJECT_KINDS"]


def _namespaced_key(r) -> str:
    return f"{r.namespace}/{r.name}"


#: ``parse_objects`` entries, with the ``Objects`` field each fills.
OBJECT_KINDS = (
    (ObjectKind("Service", parse_service, _namespaced_key, "Service {}"), "services"),
    (ObjectKind("ReplicationController", parse_replication_controller, _namespaced_key,
                "ReplicationController {}"), "replication_controllers"),
    (ObjectKind("ReplicaSet", parse_replica_set, _namespaced_key, "ReplicaSet {}"),
     "replica_sets"),
    (ObjectKind("StatefulSet", parse_stateful_set, _namespaced_key, "StatefulSet {}"),
     "stateful_sets"),
)
