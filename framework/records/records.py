"""Validated, normalized views of Kubernetes objects.

``manifests.parse_node`` / ``parse_pod`` / ... turn an object dict into one of
these records once; the state and the query compiler read only records, never
raw dicts.  Quantities are already integers in canonical units: cpu in
millicores, memory and storage in bytes, everything else in whole units.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, eq=False)
class MemoKey:
    """The name of one value kept in a ``PodClass.memo``, declared once as
    a module constant beside the code that derives it: ``owner`` is that
    module (its ``__name__``), ``holds`` what the value is.  Keys compare
    by identity; a key of several parts is a tuple that starts with one."""

    name: str
    owner: str
    holds: str

    def __repr__(self) -> str:
        return f"MemoKey({self.name!r}, owner={self.owner})"


class PodClass:
    """What alike pods share: their records are equal but for the per-pod
    fields, so whatever is derived from one pod's spec holds for all, and
    a run or block of them is planned once.  Its identity is the class
    (the queue, the bound-pod table and ``PodColumns`` key on it).

    ``memo``: values derived from the spec, by ``MemoKey``."""

    __slots__ = ("memo",)

    def __init__(self) -> None:
        self.memo: dict = {}

    def variant(self, key: tuple) -> PodClass:
        """The class of these pods changed alike in one way (``key``: a
        tuple starting with the ``MemoKey`` of the change, then its values),
        made once and kept in this class's memo: copies changed alike
        share a class again."""
        got = self.memo.get(key)
        if got is None:
            got = self.memo[key] = PodClass()
        return got

    def __repr__(self) -> str:
        return f"<PodClass {id(self):#x}: {len(self.memo)} memo entries>"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str          # NoSchedule | PreferNoSchedule | NoExecute


@dataclass(frozen=True)
class Toleration:
    key: str             # "" with operator Exists tolerates every taint
    operator: str        # Equal | Exists ("" is normalized to Equal)
    value: str
    effect: str          # "" tolerates every effect


@dataclass(frozen=True)
class HostPort:
    protocol: str        # TCP | UDP | SCTP (default TCP)
    host_ip: str         # "0.0.0.0" when unset
    port: int            # > 0


@dataclass(frozen=True)
class NodeImage:
    names: tuple[str, ...]
    size_bytes: int


@dataclass
class NodeRecord:
    name: str
    labels: dict[str, str]
    unschedulable: bool
    taints: list[Taint]
    allocatable: dict[str, int]      # status.allocatable (capacity when absent)
    capacity: dict[str, int]
    images: list[NodeImage]
    obj: dict = field(repr=False, default_factory=dict)


@dataclass
class PodRecord:
    namespace: str
    name: str
    uid: str
    node_name: str                   # spec.nodeName, "" when unbound
    scheduler_name: str              # default "default-scheduler"
    priority: int | None             # spec.priority as written (None if absent)
    priority_class_name: str
    preemption_policy: str           # PreemptLowerPriority | Never
    labels: dict[str, str]
    creation_ns: int                 # metadata.creationTimestamp, ns since epoch (0 absent)
    start_ns: int | None             # status.startTime, ns since epoch
    deleting: bool                   # metadata.deletionTimestamp set
    phase: str
    requests: dict[str, int]         # effective pod request (containers, init
                                     # containers, sidecars, overhead), canonical units
    nonzero_cpu: int                 # same aggregation, missing cpu request = 100m
    nonzero_memory: int              # same aggregation, missing memory = 200Mi
    tolerations: list[Toleration]
    node_selector: dict[str, str]
    node_affinity: dict | None       # spec.affinity.nodeAffinity, validated, as written
    pod_affinity: dict | None        # spec.affinity.podAffinity (not yet scheduled on)
    pod_anti_affinity: dict | None
    topology_spread: list[dict]      # spec.topologySpreadConstraints as written
    host_ports: list[HostPort]       # ports with hostPort > 0 of containers and restartable init containers
    images: list[str]                # images of containers then init containers
    has_restartable_init: bool
    scheduling_gates: list[str]
    obj: dict = field(repr=False, default_factory=dict)
    # spec.resourceClaims (``pod_claims.PodClaim``), validated with the
    # containers' resources.claims; () for most pods (records built without
    # it read the class default).
    resource_claims: tuple = ()
    # The pod's class (``PodClass``): records of one class (pods of one
    # template: ``pod_templates``, ``pod_tables``) are equal but for the
    # per-pod fields (name, uid, creation_ns, start_ns, node_name, phase,
    # deleting, obj); pods as columns, runs and blocks are classed by it.
    # A copy (``dataclasses.replace``) starts a class of its own.
    pod_class: PodClass = field(default_factory=PodClass, init=False, repr=False,
                                compare=False)

    # ``namespace/name``, the pod's identity everywhere in tensorsched: made
    # once (the queue, the state and the outcomes all read it per pod); the
    # fast constructors that set ``__dict__`` directly set it too.
    key: str = field(default="", init=False, repr=False)

    def __post_init__(self) -> None:
        self.key = f"{self.namespace}/{self.name}"

    @property
    def memo(self) -> dict:
        """Values derived from the pod's spec alone, shared by its class
        (``PodClass.memo``, by declared ``MemoKey``)."""
        return self.pod_class.memo


@dataclass
class PriorityClassRecord:
    name: str
    value: int
    global_default: bool
    preemption_policy: str
    obj: dict = field(repr=False, default_factory=dict)


@dataclass
class PodDisruptionBudgetRecord:
    namespace: str
    name: str
    selector: dict | None            # spec.selector (LabelSelector) as written
    min_available: int | str | None
    max_unavailable: int | str | None
    disruptions_allowed: int | None  # status.disruptionsAllowed when present
    disrupted_pods: tuple[str, ...]  # status.disruptedPods names
    obj: dict = field(repr=False, default_factory=dict)


@dataclass
class NamespaceRecord:
    name: str
    labels: dict[str, str]           # metadata.labels + kubernetes.io/metadata.name
    obj: dict = field(repr=False, default_factory=dict)
