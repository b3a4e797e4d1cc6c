"""PodGroup objects of kubernetes-sigs/scheduler-plugins
(``apiVersion: scheduling.x-k8s.io/v1alpha1``, ``kind: PodGroup``): the
gangs the Coscheduling plugin schedules.

Fields read: ``spec.minMember`` (a positive integer; required here: a group
without a quorum gangs nothing), ``spec.minResources`` (a ResourceList),
``spec.scheduleTimeoutSeconds`` (a non-negative integer; 0 or absent = the
plugin's ``permitWaitingTimeSeconds``), ``metadata.creationTimestamp``.
Status is not read.  A ``PodGroup`` of another API group (Volcano's
``scheduling.volcano.sh``...) is not this object: the loader counts it as
an ignored kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from .meta import canonical, identity

API_GROUP = "scheduling.x-k8s.io"
_INT32_MAX = (1 << 31) - 1


@dataclass
class PodGroup:
    """A PodGroup; ``min_resources`` in the state's units (cpu in
    millicores, anything else in whole units), None when unset."""

    namespace: str
    name: str
    min_member: int
    creation_ns: int | None = None
    timeout: float | None = None          # spec.scheduleTimeoutSeconds (None: unset or 0)
    min_resources: dict | None = None     # None: unset (upstream skips the check)
    obj: dict | None = None

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"


def is_coscheduling_pod_group(obj: dict) -> bool:
    """A PodGroup of scheduling.x-k8s.io (or one without apiVersion)."""
    api = obj.get("apiVersion")
    return api is None or (isinstance(api, str) and api.split("/")[0] == API_GROUP)


def _positive(ctx, value, path: str, lo: int) -> int | None:
    """An int32 >= lo, else a field-path error (booleans are not integers)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= _INT32_MAX:
        what = "a positive integer" if lo == 1 else "a non-negative integer"
        ctx.fail(path, f"must be {what}, got {value!r}")
    return value


def parse_pod_group(obj: dict, *, where: str | None = None) -> PodGroup:
    """A PodGroup object -> :class:`PodGroup`; ManifestError naming the
    field otherwise (``PodGroup ns/name: spec.minMember: ...``)."""
    ctx, meta, namespace, name = identity(obj, "PodGroup", True, where)
    spec = ctx.mapping(obj.get("spec"), "spec")
    min_member = _positive(ctx, spec.get("minMember"), "spec.minMember", 1)
    if min_member is None:
        ctx.fail("spec.minMember", "must be a positive integer, got nothing")
    timeout = _positive(ctx, spec.get("scheduleTimeoutSeconds"), "spec.scheduleTimeoutSeconds", 0)
    res = None
    if spec.get("minResources") is not None:
        res = canonical(ctx, ctx.quantity_map(spec["minResources"], "spec.minResources"),
                         "spec.minResources")
    return PodGroup(namespace, name, min_member,
                    ctx.timestamp(meta.get("creationTimestamp"), "metadata.creationTimestamp"),
                    float(timeout) if timeout else None, res, obj)
