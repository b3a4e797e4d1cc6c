"""Records of the Dynamic Resource Allocation kinds (``resource.k8s.io/v1``):
DeviceClass, ResourceSlice (and its devices), ResourceClaim,
ResourceClaimTemplate, and the AllocationResult the allocator writes.

Parsing and validation live in :mod:`.dra`; these classes only hold what was
read.  Quantities (capacities, counters, capacity requests) are exact
:class:`fractions.Fraction` values of the API's ``resource.Quantity``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

#: Upstream limits (k8s.io/api/resource/v1): most devices one claim may get,
#: most subrequests of a firstAvailable list.
ALLOCATION_RESULTS_MAX_SIZE = 32
FIRST_AVAILABLE_MAX_SIZE = 8

SCALAR_KINDS = ("int", "bool", "string", "version")
LIST_KINDS = ("ints", "bools", "strings", "versions")


@dataclass(frozen=True)
class AttrValue:
    """One device attribute: ``kind`` is the API field that was set (``int``,
    ``bool``, ``string``, ``version``, or a list kind ``ints`` ... ``versions``
    of DRAListTypeAttributes), ``"none"`` when the attribute object sets no
    value (API-invalid; the allocator refuses it where it is used).  List
    values are tuples."""

    kind: str
    value: object = None

    @property
    def is_list(self) -> bool:
        return self.kind in LIST_KINDS

    def as_set(self) -> frozenset | None:
        """The value as a set of (scalar kind, value), a scalar being a set of
        one; None for ``none`` or an empty list (no element to compare)."""
        if self.kind in SCALAR_KINDS:
            return frozenset(((self.kind, self.value),))
        if self.kind in LIST_KINDS and self.value:
            scalar = self.kind[:-1]
            return frozenset((scalar, v) for v in self.value)
        return None

    def to_dict(self) -> dict:
        if self.kind == "none":
            return {}
        return {self.kind: list(self.value) if self.is_list else self.value}


@dataclass(frozen=True)
class RequestPolicy:
    """A capacity's ``requestPolicy`` (DRAConsumableCapacity): ``default``,
    and either ``valid_values`` (sorted ascending) or a ``valid_range``
    (min, max or None, step or None)."""

    default: Fraction | None = None
    valid_values: tuple[Fraction, ...] | None = None
    range_min: Fraction | None = None
    range_max: Fraction | None = None
    range_step: Fraction | None = None

    @property
    def has_range(self) -> bool:
        return self.range_min is not None


@dataclass(frozen=True)
class DeviceCapacity:
    value: Fraction
    request_policy: RequestPolicy | None = None


@dataclass(frozen=True)
class CounterSet:
    name: str
    counters: dict[str, Fraction]


@dataclass(frozen=True)
class CounterConsumption:
    counter_set: str
    counters: dict[str, Fraction]


@dataclass(frozen=True)
class DeviceTaint:
    key: str
    value: str
    effect: str  # NoSchedule | NoExecute | None


@dataclass(frozen=True)
class DeviceToleration:
    key: str
    operator: str  # Equal | Exists
    value: str
    effect: str  # "" tolerates every effect
    toleration_seconds: int | None = None

    def tolerates(self, taint: DeviceTaint) -> bool:
        """resourceclaim.ToleratesTaint: the effect (when set), the key (when
        set) and, for Equal, the value must match."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value

    def to_dict(self) -> dict:
        out = {"operator": self.operator}
        if self.key:
            out["key"] = self.key
        if self.value:
            out["value"] = self.value
        if self.effect:
            out["effect"] = self.effect
        if self.toleration_seconds is not None:
            out["tolerationSeconds"] = self.toleration_seconds
        return out


@dataclass(frozen=True)
class NodeSelectorRequirement:
    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist | Gt | Lt
    values: tuple[str, ...]


@dataclass(frozen=True)
class NodeSelectorTerm:
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


@dataclass(frozen=True)
class NodeSelector:
    """A v1 NodeSelector: the terms are ORed; ``obj`` is the dict as written
    (an allocation's node selector is built from it)."""

    terms: tuple[NodeSelectorTerm, ...]
    obj: dict = field(repr=False, compare=False, default_factory=dict)


@dataclass(frozen=True)
class DeviceRecord:
    name: str
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    capacity: dict[str, DeviceCapacity] = field(default_factory=dict)
    consumes_counters: tuple[CounterConsumption, ...] = ()
    # per-device node selection (the slice sets perDeviceNodeSelection)
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool = False
    taints: tuple[DeviceTaint, ...] = ()
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    binds_to_node: bool = False
    allow_multiple_allocations: bool = False


@dataclass(frozen=True)
class PoolRef:
    name: str
    generation: int
    resource_slice_count: int


@dataclass
class ResourceSliceRecord:
    name: str
    driver: str
    pool: PoolRef
    node_name: str | None
    node_selector: NodeSelector | None
    all_nodes: bool
    per_device_node_selection: bool
    devices: tuple[DeviceRecord, ...]
    shared_counters: tuple[CounterSet, ...] = ()
    obj: dict = field(repr=False, default_factory=dict)


@dataclass(frozen=True)
class DeviceConfig:
    """An opaque device configuration (``opaque.driver`` + ``parameters``)
    and, for a claim's config, the requests it applies to (empty = all)."""

    driver: str
    parameters: object
    requests: tuple[str, ...] = ()

    def opaque_dict(self) -> dict:
        return {"driver": self.driver, "parameters": self.parameters}


@dataclass
class DeviceClassRecord:
    name: str
    selectors: tuple[str | None, ...]  # CEL expressions; None = a selector without cel
    config: tuple[DeviceConfig, ...] = ()
    extended_resource_name: str | None = None
    obj: dict = field(repr=False, default_factory=dict)


@dataclass(frozen=True)
class ExactRequest:
    """``exactly`` of a request, or one ``firstAvailable`` subrequest (then
    ``name`` is the subrequest's name and ``admin_access`` is None)."""

    device_class_name: str
    selectors: tuple[str | None, ...] = ()
    allocation_mode: str = "ExactCount"  # ExactCount | All
    count: int = 1
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity_requests: dict[str, Fraction] | None = None
    name: str = ""


@dataclass(frozen=True)
class DeviceRequest:
    name: str
    exactly: ExactRequest | None = None
    first_available: tuple[ExactRequest, ...] = ()


@dataclass(frozen=True)
class DeviceConstraint:
    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    distinct_attribute: str | None = None


@dataclass(frozen=True)
class DeviceRequestAllocationResult:
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    share_id: str | None = None
    consumed_capacity: dict[str, Fraction] | None = None

    @property
    def device_id(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.device)

    def to_dict(self) -> dict:
        out = {
            "request": self.request,
            "driver": self.driver,
            "pool": self.pool,
            "device": self.device,
        }
        if self.admin_access is not None:
            out["adminAccess"] = self.admin_access
        if self.tolerations:
            out["tolerations"] = [t.to_dict() for t in self.tolerations]
        if self.binding_conditions:
            out["bindingConditions"] = list(self.binding_conditions)
        if self.binding_failure_conditions:
            out["bindingFailureConditions"] = list(self.binding_failure_conditions)
        if self.share_id is not None:
            out["shareID"] = self.share_id
        if self.consumed_capacity:
            out["consumedCapacity"] = {
                k: format_quantity(v) for k, v in self.consumed_capacity.items()
            }
        return out


@dataclass(frozen=True)
class AllocatedConfig:
    source: str  # FromClass | FromClaim
    requests: tuple[str, ...]
    config: DeviceConfig

    def to_dict(self) -> dict:
        out = {"source": self.source}
        if self.requests:
            out["requests"] = list(self.requests)
        out["opaque"] = self.config.opaque_dict()
        return out


@dataclass(frozen=True)
class AllocationResult:
    """A claim's ``status.allocation``: the devices, the configs that apply to
    them, and the nodes that can reach them (None = every node)."""

    results: tuple[DeviceRequestAllocationResult, ...]
    config: tuple[AllocatedConfig, ...] = ()
    node_selector: dict | None = None

    def to_dict(self) -> dict:
        devices: dict = {"results": [r.to_dict() for r in self.results]}
        if self.config:
            devices["config"] = [c.to_dict() for c in self.config]
        out: dict = {"devices": devices}
        if self.node_selector is not None:
            out["nodeSelector"] = self.node_selector
        return out


@dataclass(frozen=True)
class ConsumerRef:
    """One ``status.reservedFor`` entry."""

    resource: str
    name: str
    uid: str
    api_group: str = ""


@dataclass
class ResourceClaimRecord:
    namespace: str
    name: str
    uid: str
    requests: tuple[DeviceRequest, ...]
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[DeviceConfig, ...] = ()
    allocation: AllocationResult | None = None
    reserved_for: tuple[ConsumerRef, ...] = ()
    deleting: bool = False
    obj: dict = field(repr=False, default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class ResourceClaimTemplateRecord:
    namespace: str
    name: str
    spec: dict  # spec.spec: the ResourceClaimSpec as written
    claim: ResourceClaimRecord  # that spec, parsed (its name is the template's)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    obj: dict = field(repr=False, default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def instantiate(self, namespace: str, name: str, uid: str = "") -> ResourceClaimRecord:
        """The claim made from this template (requests, constraints and
        config shared, nothing allocated)."""
        c = self.claim
        obj = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"namespace": namespace, "name": name, **({"uid": uid} if uid else {})},
            "spec": self.spec,
        }
        return ResourceClaimRecord(
            namespace=namespace,
            name=name,
            uid=uid,
            requests=c.requests,
            constraints=c.constraints,
            config=c.config,
            obj=obj,
        )


def format_quantity(q: Fraction) -> str:
    """A Fraction as a canonical quantity string: whole numbers with the
    largest exact binary suffix (``4Gi``) or none, others in milli/nano units."""
    if q.denominator == 1:
        n = q.numerator
        if n != 0 and n % 1024 == 0:
            for suffix, power in (
                ("Ei", 60),
                ("Pi", 50),
                ("Ti", 40),
                ("Gi", 30),
                ("Mi", 20),
                ("Ki", 10),
            ):
                if n % (1 << power) == 0:
                    return f"{n >> power}{suffix}"
        return str(n)
    milli = q * 1000
    if milli.denominator == 1:
        return f"{milli.numerator}m"
    nano = q * 10**9
    return f"{-(-nano.numerator // nano.denominator)}n"
